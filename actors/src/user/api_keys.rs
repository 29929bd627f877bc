//! The API keys a user made (api-key plugin): creating, changing, deleting, and each use of
//! a key — its quota (`remaining`, refilled on its interval) and its rate limit taken once,
//! compare-and-set on the key's version, so that concurrent uses on several processes pass
//! exactly as many times as allowed. The caller checks who may act on a key.
use super::*;
use storage::{ApiKey, ApiKeyId, StoreError};

/// A change of a key, applied to the key as stored (again after a concurrent change).
pub type KeyEdit = Arc<dyn Fn(&mut ApiKey) + Send + Sync>;

/// Unlimited keys record their last use at most this often (a write per request otherwise).
const LAST_REQUEST_GRAIN_MS: i64 = 60_000;

pub(crate) enum ApiKeyMsg {
    Create(Box<ApiKey>, Reply<ApiKey>),
    Change {
        id: ApiKeyId,
        edit: KeyEdit,
        reply: Reply<ApiKey>,
    },
    Delete {
        id: ApiKeyId,
        reply: Reply<ApiKey>,
    },
    Use {
        id: ApiKeyId,
        reply: Reply<ApiKey>,
    },
}

/// What a use makes of `k` at `now`: the key to write (`None`: nothing to write), or the
/// rule that refuses it. Written once: the caller compare-and-sets it.
pub fn take_use(k: &ApiKey, now: DateTime<Utc>) -> Result<Option<ApiKey>, Rule> {
    if !k.enabled {
        return Err(Rule::ApiKeyDisabled);
    }
    if k.expires_at.is_some_and(|t| t <= now) {
        return Err(Rule::ApiKeyExpired);
    }
    let mut next = k.clone();
    let mut write = false;
    if let Some(mut left) = k.remaining {
        if let (Some(amount), Some(every)) = (k.refill_amount, k.refill_interval) {
            let since = k.last_refill_at.unwrap_or(k.created_at);
            if (now - since).num_milliseconds() > every {
                left = amount;
                next.last_refill_at = Some(now);
            }
        }
        if left <= 0 {
            return Err(Rule::ApiKeyUsageExceeded);
        }
        next.remaining = Some(left - 1);
        write = true;
    }
    if let (true, Some(window), Some(max)) = (
        k.rate_limit_enabled,
        k.rate_limit_time_window,
        k.rate_limit_max,
    ) {
        match k.last_request {
            Some(last) if (now - last).num_milliseconds() <= window => {
                if k.request_count >= max {
                    let wait = window - (now - last).num_milliseconds();
                    return Err(Rule::ApiKeyRateLimited { retry_in_ms: wait });
                }
                next.request_count = k.request_count + 1;
            }
            _ => next.request_count = 1,
        }
        write = true;
    }
    let stale = k
        .last_request
        .is_none_or(|t| (now - t).num_milliseconds() >= LAST_REQUEST_GRAIN_MS);
    next.last_request = Some(now);
    if !write && !stale {
        return Ok(None);
    }
    next.updated_at = now;
    next.version = k.version + 1;
    Ok(Some(next))
}

impl UserActor {
    pub(super) async fn api_keys(&self, id: &UserId, msg: ApiKeyMsg, ctx: &Ctx) {
        match msg {
            ApiKeyMsg::Create(k, reply) => {
                let _ = reply.send(self.create_api_key(id, *k, ctx).await);
            }
            ApiKeyMsg::Change {
                id: key,
                edit,
                reply,
            } => {
                let _ = reply.send(self.change_api_key(id, &key, edit, ctx).await);
            }
            ApiKeyMsg::Delete { id: key, reply } => {
                let _ = reply.send(self.delete_api_key(id, &key, ctx).await);
            }
            ApiKeyMsg::Use { id: key, reply } => {
                let _ = reply.send(self.use_api_key(id, &key, ctx).await);
            }
        }
    }

    fn api_key_events(
        &self,
        id: &UserId,
        k: &ApiKey,
        name: &str,
        ctx: &Ctx,
    ) -> Vec<storage::Event> {
        Emit::user(id, self.now())
            .domain(name, data::api_key(k))
            .request(ctx, &Facts::default())
            .done()
    }

    async fn create_api_key(
        &self,
        id: &UserId,
        k: ApiKey,
        ctx: &Ctx,
    ) -> Result<ApiKey, ActorError> {
        if &k.user_id != id {
            return Err(ActorError::Refused(Rule::ApiKeyNotFound));
        }
        let events = self.api_key_events(id, &k, "api_key.created", ctx);
        match self.shared.store.create_api_key(&k, &events).await {
            Ok(()) => Ok(k),
            Err(StoreError::NotFound) => Err(ActorError::NotFound),
            Err(e) => Err(e.into()),
        }
    }

    /// The key `key` as stored, if this user made it.
    async fn own_key(&self, id: &UserId, key: &ApiKeyId) -> Result<ApiKey, ActorError> {
        self.shared
            .store
            .get_api_key(key)
            .await?
            .filter(|k| &k.user_id == id)
            .ok_or(ActorError::Refused(Rule::ApiKeyNotFound))
    }

    async fn change_api_key(
        &self,
        id: &UserId,
        key: &ApiKeyId,
        edit: KeyEdit,
        ctx: &Ctx,
    ) -> Result<ApiKey, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let k = self.own_key(id, key).await?;
            let mut next = k.clone();
            edit(&mut next);
            next.version = k.version + 1;
            next.updated_at = self.now();
            let events = self.api_key_events(id, &next, "api_key.updated", ctx);
            if let Some(done) = settled(store.update_api_key(&next, k.version, &events).await, next)
            {
                return done;
            }
        }
        Err(contended())
    }

    async fn delete_api_key(
        &self,
        id: &UserId,
        key: &ApiKeyId,
        ctx: &Ctx,
    ) -> Result<ApiKey, ActorError> {
        let k = self.own_key(id, key).await?;
        let events = self.api_key_events(id, &k, "api_key.deleted", ctx);
        if self.shared.store.delete_api_key(key, &events).await? {
            Ok(k)
        } else {
            Err(ActorError::Refused(Rule::ApiKeyNotFound))
        }
    }

    async fn use_api_key(
        &self,
        id: &UserId,
        key: &ApiKeyId,
        ctx: &Ctx,
    ) -> Result<ApiKey, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let k = self.own_key(id, key).await?;
            let Some(next) = take_use(&k, self.now()).map_err(ActorError::Refused)? else {
                return Ok(k);
            };
            // Only the first use is an event (the audit log's "used for the first time").
            let events = if k.last_request.is_none() {
                self.api_key_events(id, &next, "api_key.used", ctx)
            } else {
                Vec::new()
            };
            if let Some(done) = settled(store.update_api_key(&next, k.version, &events).await, next)
            {
                return done;
            }
        }
        Err(contended())
    }
}

/// A compare-and-set write's outcome: `None` when another change came first (decide again).
fn settled(r: Result<(), StoreError>, k: ApiKey) -> Option<Result<ApiKey, ActorError>> {
    match r {
        Ok(()) => Some(Ok(k)),
        Err(StoreError::ConcurrentModification) => None,
        Err(StoreError::NotFound) => Some(Err(ActorError::Refused(Rule::ApiKeyNotFound))),
        Err(e) => Some(Err(e.into())),
    }
}

impl UserHandle {
    /// Stores a new key this user made (`NotFound` when the user is gone).
    pub async fn create_api_key(&self, k: ApiKey) -> Result<ApiKey, ActorError> {
        self.call(|reply| UserMsg::ApiKey(ApiKeyMsg::Create(Box::new(k.clone()), reply)))
            .await
    }

    /// Applies `edit` to a key this user made (`ApiKeyNotFound` for any other).
    pub async fn change_api_key(&self, id: &ApiKeyId, edit: KeyEdit) -> Result<ApiKey, ActorError> {
        self.call(|reply| {
            UserMsg::ApiKey(ApiKeyMsg::Change {
                id: id.clone(),
                edit: edit.clone(),
                reply,
            })
        })
        .await
    }

    /// Deletes a key this user made.
    pub async fn delete_api_key(&self, id: &ApiKeyId) -> Result<ApiKey, ActorError> {
        self.call(|reply| {
            UserMsg::ApiKey(ApiKeyMsg::Delete {
                id: id.clone(),
                reply,
            })
        })
        .await
    }

    /// One use of a key this user made: refused when it is disabled, expired, used up or
    /// over its rate limit; else the key after the use.
    pub async fn use_api_key(&self, id: &ApiKeyId) -> Result<ApiKey, ActorError> {
        self.call(|reply| {
            UserMsg::ApiKey(ApiKeyMsg::Use {
                id: id.clone(),
                reply,
            })
        })
        .await
    }
}
