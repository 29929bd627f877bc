//! The user's passkeys (passkey plugin): registering, a use (its new signature counter),
//! renaming, deleting. The caller checks a WebAuthn ceremony (it holds the relying party);
//! here each change is written once, compare-and-set, and deleting the last way to sign in
//! (no account and no other passkey) is refused on the user's version, as unlinking is.
use super::*;
use storage::{Passkey, PasskeyId, StoreError};

pub(crate) enum PasskeyMsg {
    Register(Passkey, Reply<Passkey>),
    Use {
        used: Passkey,
        expected: u64,
        reply: Reply<Passkey>,
    },
    Rename {
        id: PasskeyId,
        name: String,
        reply: Reply<Passkey>,
    },
    Delete {
        id: PasskeyId,
        reply: Reply<Passkey>,
    },
}

impl UserActor {
    pub(super) async fn passkeys(&self, id: &UserId, msg: PasskeyMsg, ctx: &Ctx) {
        match msg {
            PasskeyMsg::Register(p, reply) => {
                let _ = reply.send(self.register_passkey(id, p, ctx).await);
            }
            PasskeyMsg::Use {
                used,
                expected,
                reply,
            } => {
                let _ = reply.send(self.use_passkey(id, used, expected, ctx).await);
            }
            PasskeyMsg::Rename {
                id: pk,
                name,
                reply,
            } => {
                let _ = reply.send(self.rename_passkey(id, &pk, &name, ctx).await);
            }
            PasskeyMsg::Delete { id: pk, reply } => {
                let _ = reply.send(self.delete_passkey(id, &pk, ctx).await);
            }
        }
    }

    fn passkey_events(
        &self,
        id: &UserId,
        p: &Passkey,
        name: &str,
        ctx: &Ctx,
    ) -> Vec<storage::Event> {
        Emit::user(id, self.now())
            .domain(
                name,
                serde_json::json!({ "userId": id, "passkeyId": p.id, "name": p.name }),
            )
            .request(ctx, &Facts::default())
            .done()
    }

    async fn register_passkey(
        &self,
        id: &UserId,
        p: Passkey,
        ctx: &Ctx,
    ) -> Result<Passkey, ActorError> {
        let events = self.passkey_events(id, &p, "passkey.registered", ctx);
        match self.shared.store.create_passkey(&p, &events).await {
            Ok(()) => Ok(p),
            Err(StoreError::Conflict(_)) => Err(ActorError::Refused(Rule::PasskeyRegistered)),
            Err(StoreError::NotFound) => Err(ActorError::NotFound),
            Err(e) => Err(e.into()),
        }
    }

    /// A use checked against the passkey at version `expected`: written only over that one
    /// (two assertions raced on one passkey: one counts, the other is refused).
    async fn use_passkey(
        &self,
        id: &UserId,
        mut used: Passkey,
        expected: u64,
        ctx: &Ctx,
    ) -> Result<Passkey, ActorError> {
        if &used.user_id != id {
            return Err(ActorError::Refused(Rule::PasskeyNotFound));
        }
        used.version = expected + 1;
        used.updated_at = self.now();
        used.last_used_at = Some(self.now());
        let events = self.request(id, ctx, &Facts::default());
        match self
            .shared
            .store
            .update_passkey(&used, expected, &events)
            .await
        {
            Ok(()) => Ok(used),
            Err(StoreError::ConcurrentModification) => {
                Err(ActorError::Refused(Rule::PasskeyUsedMeanwhile))
            }
            Err(StoreError::NotFound) => Err(ActorError::Refused(Rule::PasskeyNotFound)),
            Err(e) => Err(e.into()),
        }
    }

    async fn rename_passkey(
        &self,
        id: &UserId,
        pk: &PasskeyId,
        name: &str,
        ctx: &Ctx,
    ) -> Result<Passkey, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut p = store
                .list_passkeys(id)
                .await?
                .into_iter()
                .find(|p| &p.id == pk)
                .ok_or(ActorError::Refused(Rule::PasskeyNotFound))?;
            let expected = p.version;
            p.name = Some(name.to_owned());
            p.version += 1;
            p.updated_at = self.now();
            let events = self.passkey_events(id, &p, "passkey.renamed", ctx);
            if let Some(done) = settled(store.update_passkey(&p, expected, &events).await, p) {
                return done;
            }
        }
        Err(contended())
    }

    async fn delete_passkey(
        &self,
        id: &UserId,
        pk: &PasskeyId,
        ctx: &Ctx,
    ) -> Result<Passkey, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            let passkeys = store.list_passkeys(id).await?;
            let p = passkeys
                .iter()
                .find(|p| &p.id == pk)
                .cloned()
                .ok_or(ActorError::Refused(Rule::PasskeyNotFound))?;
            if passkeys.len() <= 1 && store.list_accounts(id).await?.is_empty() {
                return Err(ActorError::Refused(Rule::LastSignInMethod));
            }
            let events = self.passkey_events(id, &p, "passkey.deleted", ctx);
            let r = store.delete_passkey(id, pk, user.version, &events).await;
            if let Some(done) = settled(r, p) {
                return done;
            }
        }
        Err(contended())
    }
}

/// A compare-and-set write's outcome: `None` when another change came first (decide again).
fn settled(r: Result<(), StoreError>, p: Passkey) -> Option<Result<Passkey, ActorError>> {
    match r {
        Ok(()) => Some(Ok(p)),
        Err(StoreError::ConcurrentModification) => None,
        Err(StoreError::NotFound) => Some(Err(ActorError::Refused(Rule::PasskeyNotFound))),
        Err(e) => Some(Err(e.into())),
    }
}

impl UserHandle {
    /// Registers a passkey checked by the caller: `PasskeyRegistered` when its credential is
    /// registered already.
    pub async fn register_passkey(&self, p: Passkey) -> Result<Passkey, ActorError> {
        self.call(|reply| UserMsg::Passkey(PasskeyMsg::Register(p.clone(), reply)))
            .await
    }

    /// Records a use of a passkey (its new counter and flags in `used`) checked against the
    /// passkey at version `expected`: `PasskeyUsedMeanwhile` when it moved.
    pub async fn use_passkey(&self, used: Passkey, expected: u64) -> Result<Passkey, ActorError> {
        self.call(|reply| {
            UserMsg::Passkey(PasskeyMsg::Use {
                used: used.clone(),
                expected,
                reply,
            })
        })
        .await
    }

    pub async fn rename_passkey(&self, id: PasskeyId, name: String) -> Result<Passkey, ActorError> {
        self.call(|reply| {
            UserMsg::Passkey(PasskeyMsg::Rename {
                id: id.clone(),
                name: name.clone(),
                reply,
            })
        })
        .await
    }

    /// Deletes one of the user's passkeys: `LastSignInMethod` when it is the only way left
    /// to sign in.
    pub async fn delete_passkey(&self, id: PasskeyId) -> Result<Passkey, ActorError> {
        self.call(|reply| {
            UserMsg::Passkey(PasskeyMsg::Delete {
                id: id.clone(),
                reply,
            })
        })
        .await
    }
}
