//! A user's ways to sign in: the password (changed, set, reset with a mailed token), the
//! single-use tokens mailed links carry, and unlinking accounts (never the last one).
use super::*;

impl UserActor {
    /// Replaces the password, only if the credential still holds `current_hash` (the one the
    /// caller verified: a concurrent change makes this one fail); with `new_session`, every
    /// session is revoked and a new one made — all in one turn.
    pub(super) async fn change_password(
        &self,
        user: &UserId,
        current_hash: &str,
        new_hash: String,
        new_session: Option<NewSession>,
        ctx: &Ctx,
    ) -> Result<Option<Session>, ActorError> {
        let store = &self.shared.store;
        let Some(mut account) = store
            .list_accounts(user)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .filter(|a| a.password.as_deref() == Some(current_hash))
        else {
            return Err(ActorError::Refused(Rule::InvalidPassword));
        };
        let events = self.request(user, ctx, &Facts::default());
        account.password = Some(new_hash);
        account.updated_at = self.now();
        // Only if the password is still the one checked: another process may have changed it
        // since (then the current password given is not current any more).
        match store
            .replace_password(&account, current_hash, &events)
            .await
        {
            Ok(()) => {}
            Err(storage::StoreError::ConcurrentModification | storage::StoreError::NotFound) => {
                return Err(ActorError::Refused(Rule::InvalidPassword))
            }
            Err(e) => return Err(e.into()),
        }
        // As every new password: the outstanding reset links (issued for the old one) end.
        store
            .delete_verifications_of(&user.0, RESET_PASSWORD_PREFIX)
            .await?;
        match new_session {
            Some(new) => {
                self.revoke_sessions(user, None, &Ctx::default()).await?;
                Ok(Some(self.create_session(user, new, &Ctx::default()).await?))
            }
            None => Ok(None),
        }
    }

    /// `events` are stored with the credential's change.
    pub(super) async fn set_password(
        &self,
        id: &UserId,
        hash: String,
        how: PasswordChange,
        events: &[storage::Event],
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let now = self.now();
        let existing = store
            .list_accounts(id)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER);
        match (existing, how) {
            (Some(a), PasswordChange::OnlyIfNone) if a.password.is_some() => {
                return Err(ActorError::Refused(Rule::HasPassword))
            }
            (Some(mut a), _) => {
                a.password = Some(hash);
                a.updated_at = now;
                store.update_account(&a, events).await?;
            }
            (None, PasswordChange::OnlyIfExists) => {
                return Err(ActorError::Refused(Rule::AccountNotFound))
            }
            (None, _) => {
                store.get_user(id).await?.ok_or(ActorError::NotFound)?;
                store
                    .create_account(&Account::credential(id, hash, now), events)
                    .await?;
            }
        }
        // A new password ends every outstanding reset link (issued for the old one).
        store
            .delete_verifications_of(&id.0, RESET_PASSWORD_PREFIX)
            .await?;
        Ok(())
    }

    /// A new password-reset token; every older one of the user stops working (only the newest
    /// mailed link resets). Serialized here, so two concurrent requests leave one valid token.
    /// The mailed link (the request's mail) is stored with the token.
    pub(super) async fn issue_reset_token(
        &self,
        user: &UserId,
        token: String,
        lifetime: chrono::Duration,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        store
            .delete_verifications_of(&user.0, RESET_PASSWORD_PREFIX)
            .await?;
        self.issue_token(
            user,
            format!("{RESET_PASSWORD_PREFIX}{token}"),
            lifetime,
            ctx,
        )
        .await
    }

    /// Stores a single-use token `identifier` pointing at this user (delete-account links,
    /// email-change confirmations).
    pub(super) async fn issue_token(
        &self,
        user: &UserId,
        identifier: String,
        lifetime: chrono::Duration,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let now = self.now();
        let events = self.request(user, ctx, &Facts::default());
        self.shared
            .store
            .create_verification(
                &Verification {
                    id: VerificationId::generate(),
                    identifier,
                    value: user.0.clone(),
                    expires_at: now + lifetime,
                    created_at: now,
                    updated_at: now,
                },
                &events,
            )
            .await?;
        Ok(())
    }

    /// Consumes a single-use token of this user: `InvalidToken` when it is unknown, used,
    /// expired or another user's.
    pub(super) async fn take_token(
        &self,
        user: &UserId,
        identifier: &str,
    ) -> Result<(), ActorError> {
        let invalid = || ActorError::Refused(Rule::InvalidToken);
        let v = self
            .shared
            .store
            .consume_verification(identifier)
            .await?
            .ok_or_else(invalid)?;
        if v.value != user.0 || v.expires_at <= self.now() {
            return Err(invalid());
        }
        Ok(())
    }

    /// Consumes the reset token (once, even under concurrent use) and sets the password
    /// (creating the credential if there is none). Following a mailed link proves the mailbox:
    /// an unverified address becomes verified, and since whoever signed up with it before
    /// need not be its owner, every session is revoked then, whatever `revoke_sessions` says.
    pub(super) async fn reset_password(
        &self,
        user: &UserId,
        token: &str,
        hash: String,
        revoke_sessions: bool,
        ctx: &Ctx,
    ) -> Result<ResetOutcome, ActorError> {
        let store = &self.shared.store;
        self.take_token(user, &format!("{RESET_PASSWORD_PREFIX}{token}"))
            .await?;
        let u = store
            .get_user(user)
            .await?
            .ok_or(ActorError::Refused(Rule::InvalidToken))?;
        let unproven = !u.email_verified;
        let sessions_revoked = revoke_sessions || unproven;
        let events = self.request(
            user,
            ctx,
            &Facts {
                sessions_revoked: Some(sessions_revoked),
                ..Facts::default()
            },
        );
        self.set_password(user, hash, PasswordChange::Upsert, &events)
            .await?;
        // The mailbox's owner chose this password.
        self.password_proven(user).await?;
        if unproven {
            self.update_user(
                user,
                UserPatch {
                    email_verified: Some(true),
                    ..UserPatch::default()
                },
                &Ctx::default(),
            )
            .await?;
        }
        if sessions_revoked {
            self.revoke_sessions(user, None, &Ctx::default()).await?;
        }
        Ok(ResetOutcome { sessions_revoked })
    }

    pub(super) async fn unlink_account(
        &self,
        id: &UserId,
        provider_id: Option<&str>,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let events = self.request(id, ctx, &Facts::default());
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            let accounts = store.list_accounts(id).await?;
            let target = accounts
                .iter()
                .find(|a| {
                    provider_id.is_none_or(|p| a.provider_id == p)
                        && account_id.is_none_or(|want| {
                            a.id.0 == want || (provider_id.is_some() && a.account_id == want)
                        })
                })
                .ok_or(ActorError::Refused(Rule::AccountNotFound))?;
            // A passkey is a way to sign in too.
            if accounts.len() <= 1
                && !allow_unlinking_all
                && store.list_passkeys(id).await?.is_empty()
            {
                return Err(ActorError::Refused(Rule::LastAccount));
            }
            // Decided on the user's version: an unlink (or link) made meanwhile, here or in
            // another process, makes this one decide again.
            match store
                .delete_account(id, &target.id, user.version, &events)
                .await
            {
                Err(storage::StoreError::ConcurrentModification) => continue,
                other => return Ok(other?),
            }
        }
        Err(contended())
    }
}

impl UserHandle {
    /// Stores a new password hash on the credential account (see [`PasswordChange`]).
    pub async fn set_password(&self, hash: &str, how: PasswordChange) -> Result<(), ActorError> {
        self.call(|r| UserMsg::SetPassword(hash.to_owned(), how, r))
            .await
    }

    /// Unlinks an account, refusing the last one unless `allow_unlinking_all`.
    pub async fn unlink_account(
        &self,
        provider_id: Option<&str>,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::UnlinkAccount {
            provider_id: provider_id.map(str::to_owned),
            account_id: account_id.map(str::to_owned),
            allow_unlinking_all,
            reply,
        })
        .await
    }

    /// Stores a single-use token `identifier` pointing at this user, valid for `lifetime`.
    pub async fn issue_token(
        &self,
        identifier: &str,
        lifetime: chrono::Duration,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::IssueToken {
            identifier: identifier.to_owned(),
            lifetime,
            reply,
        })
        .await
    }

    /// Consumes this user's single-use token `identifier` and deletes the user, in one turn;
    /// `Refused(InvalidToken)` when the token is not (or no longer) valid for them.
    pub async fn delete_with_token(&self, identifier: &str) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::DeleteWithToken {
            identifier: identifier.to_owned(),
            reply,
        })
        .await
    }

    /// Changes the password if the credential still holds `current_hash`; with `new_session`,
    /// revokes every session and answers a new one.
    pub async fn change_password(
        &self,
        current_hash: &str,
        new_hash: &str,
        new_session: Option<NewSession>,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::ChangePassword {
            current_hash: current_hash.to_owned(),
            new_hash: new_hash.to_owned(),
            new_session: new_session.clone(),
            reply,
        })
        .await
    }

    /// Stores `token` as the user's password-reset token, with the mail that carries its link
    /// (the request's); older ones of this user stop working.
    pub async fn issue_reset_token(
        &self,
        token: &str,
        lifetime: chrono::Duration,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::IssueResetToken {
            token: token.to_owned(),
            lifetime,
            reply,
        })
        .await
    }

    /// Resets the password with a mailed token (see the actor method for what else it does).
    /// `Refused(InvalidToken)` when the token is unknown, used, expired or another user's.
    pub async fn reset_password(
        &self,
        token: &str,
        hash: &str,
        revoke_sessions: bool,
    ) -> Result<ResetOutcome, ActorError> {
        self.call(|reply| UserMsg::ResetPassword {
            token: token.to_owned(),
            hash: hash.to_owned(),
            revoke_sessions,
            reply,
        })
        .await
    }
}
