//! A sign-in by a code or a link sent to the user's address (email-OTP and magic-link
//! plugins): it proves the mailbox. On an address not yet verified (or verified while a
//! password no proof followed stood) that proof is the first one, so whatever was set up
//! before it — possibly by someone who registered another's address — is undone in the same
//! turn: the address becomes verified, a password set before it is removed (the owner sets one
//! later) and every earlier session ends. The markers of unproven passwords live here too.
use super::*;

/// What a sign-in by mail did.
#[derive(Debug, Clone)]
pub struct MailSignIn {
    pub user: User,
    /// `None` when the caller asked for none (the second factor comes first).
    pub session: Option<Session>,
    /// The address was unverified (or its password unproven): it is verified now, the password
    /// is gone, every earlier session ended.
    pub first_proof: bool,
}

impl UserActor {
    pub(super) async fn sign_in_by_mail(
        &self,
        id: &UserId,
        new: Option<NewSession>,
        ctx: &Ctx,
    ) -> Result<MailSignIn, ActorError> {
        self.check_not_banned(id).await?;
        let store = &self.shared.store;
        let user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
        // Unverified, or verified by a link someone opened while a password set before stood
        // (`UNPROVEN_PASSWORD_PREFIX`): this is the owner's first proof.
        let first_proof = !user.email_verified || self.password_unproven(id).await?;
        let user = if first_proof {
            // The request's records go with the session when there is one.
            let none = Ctx::default();
            self.first_proof(id, if new.is_none() { ctx } else { &none })
                .await?
        } else {
            user
        };
        let session = match new {
            Some(new) => Some(self.create_session(id, new, ctx).await?),
            None => None,
        };
        Ok(MailSignIn {
            user,
            session,
            first_proof,
        })
    }

    /// Verifies the address, removes the password set before this proof, ends every session.
    async fn first_proof(&self, id: &UserId, ctx: &Ctx) -> Result<User, ActorError> {
        let store = &self.shared.store;
        let facts = Facts {
            sessions_revoked: Some(true),
            ..Facts::default()
        };
        let user = self
            .change_user(
                id,
                UserPatch {
                    email_verified: Some(true),
                    ..UserPatch::default()
                },
                ctx,
                Some(true),
            )
            .await?;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let current = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            let Some(credential) = store
                .list_accounts(id)
                .await?
                .into_iter()
                .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            else {
                break;
            };
            let events = Emit::user(id, self.now())
                .request(&Ctx::default(), &facts)
                .done();
            match store
                .delete_account(id, &credential.id, current.version, &events)
                .await
            {
                Err(storage::StoreError::ConcurrentModification) => continue,
                other => {
                    other?;
                    break;
                }
            }
        }
        self.revoke_sessions(id, None, &Ctx::default()).await?;
        self.password_proven(id).await?;
        Ok(user)
    }

    pub(super) async fn has_password(&self, id: &UserId) -> Result<bool, ActorError> {
        Ok(self
            .shared
            .store
            .list_accounts(id)
            .await?
            .iter()
            .any(|a| a.provider_id == CREDENTIAL_PROVIDER && a.password.is_some()))
    }

    /// See [`UNPROVEN_PASSWORD_PREFIX`].
    pub(super) async fn mark_password_unproven(&self, id: &UserId) -> Result<(), ActorError> {
        let now = self.now();
        let marker = Verification {
            id: VerificationId::generate(),
            identifier: format!("{UNPROVEN_PASSWORD_PREFIX}{id}"),
            value: id.0.clone(),
            // Until a proof removes it (the user's deletion removes it with the user's rows).
            expires_at: now + chrono::Duration::days(3650),
            created_at: now,
            updated_at: now,
        };
        match self.shared.store.create_verification(&marker, &[]).await {
            Ok(()) | Err(storage::StoreError::Conflict(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The owner proved the mailbox: the password (set now, or none) is theirs.
    pub(super) async fn password_proven(&self, id: &UserId) -> Result<(), ActorError> {
        self.shared
            .store
            .delete_verifications_of(&id.0, UNPROVEN_PASSWORD_PREFIX)
            .await?;
        Ok(())
    }

    pub(super) async fn password_unproven(&self, id: &UserId) -> Result<bool, ActorError> {
        Ok(self
            .shared
            .store
            .get_verification(&format!("{UNPROVEN_PASSWORD_PREFIX}{id}"))
            .await?
            .is_some())
    }
}

impl UserHandle {
    /// Signs the user in by a code or link their mailbox received (see the module): with a
    /// new session unless `new` is `None`. `Banned` for a banned user.
    pub async fn sign_in_by_mail(&self, new: Option<NewSession>) -> Result<MailSignIn, ActorError> {
        self.call(|reply| UserMsg::SignInByMail {
            new: new.clone(),
            reply,
        })
        .await
    }
}
