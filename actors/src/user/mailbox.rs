//! A sign-in by a code or a link sent to the user's address (email-OTP and magic-link
//! plugins): it proves the mailbox. On an address not yet verified that proof is the first
//! one, so whatever was set up before it — possibly by someone who registered another's
//! address — is undone in the same turn: the address becomes verified, a password set before
//! it is removed (the owner sets one later) and every earlier session ends.
use super::*;

/// What a sign-in by mail did.
#[derive(Debug, Clone)]
pub struct MailSignIn {
    pub user: User,
    /// `None` when the caller asked for none (the second factor comes first).
    pub session: Option<Session>,
    /// The address was unverified: it is now, its password is gone, its sessions ended.
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
        let first_proof = !user.email_verified;
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
        Ok(user)
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
