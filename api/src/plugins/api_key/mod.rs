//! The api-key plugin's routes (@better-auth/api-key 1.7): keys a user makes for their
//! scripts, or an organization's keys made by members allowed `apiKey:*`, and the server's
//! own calls (`Authorization: Bearer <server_key>`) that may set quotas, rate limits and
//! permissions. A request carrying a key in `x-api-key` acts as its maker (`service.rs`);
//! each change and each use of a key is written once by the maker's actor
//! (`actors/src/user/api_keys.rs`).
mod dto;
mod service;

pub use service::{accepts_keys, hash_key, ApiKeys, Inner as ApiKeysInner};

/// The api-key plugin's operations.
pub type Apis = ApiKeyApi;

pub fn apis() -> Apis {
    ApiKeyApi
}

use crate::audit::{action, Event, Origin};
use crate::dto::Authed;
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::admin::dto::SortDirectionParam as SortDirection;
use crate::plugins::Tag;
use crate::session::ResolveOptions;
use crate::AppState;
use dto::*;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::OpenApi;
use std::sync::Arc;
use storage::{ApiKey, ApiKeyId, OrgId, UserId};

pub struct ApiKeyApi;

/// Who asks: a signed-in person (a session, never a key) or the server (its key).
struct Caller {
    user: Option<Authed>,
    server: bool,
}

impl Caller {
    async fn of(state: &AppState, req: &Request, cookies: &PendingCookies) -> ApiResult<Self> {
        let server = state.sessions.server_call_ok(req);
        let opts = ResolveOptions {
            disable_cookie_cache: true,
            disable_refresh: false,
        };
        let user = state.sessions.resolve_session(req, cookies, opts).await?;
        Ok(Self { user, server })
    }

    /// The user acted for: the session's, or with the server key the body's `userId`
    /// (which must be the session's when both are there).
    fn user_id(&self, asked: Option<&str>) -> ApiResult<UserId> {
        match (&self.user, asked, self.server) {
            (Some(a), None, _) => Ok(a.user.id.clone()),
            (Some(a), Some(id), true) if id == a.user.id.0 => Ok(a.user.id.clone()),
            (None, Some(id), true) => Ok(UserId(id.to_owned())),
            _ => Err(Code::UnauthorizedSession.into()),
        }
    }
}

/// Whether `user` may `act` on `org`'s keys (`apiKey:<act>` in their roles): their standing
/// in `org` if so.
async fn org_may(
    state: &AppState,
    user: &UserId,
    org: &OrgId,
    act: &str,
) -> ApiResult<actors::Standing> {
    let standing = state.actors.standing(org, user).await.map_err(|e| {
        ApiError::from(e)
            .recode(Code::NotAMember, Code::NotMemberOfKeyOrganization)
            .recode(Code::OrganizationNotFound, Code::NotMemberOfKeyOrganization)
    })?;
    let wanted: policy::Permissions = [("apiKey".to_owned(), [act.to_owned()].into())].into();
    if standing.allows_all(&wanted)? {
        Ok(standing)
    } else {
        Err(Code::InsufficientApiKeyPermissions.into())
    }
}

/// The key `id` if `user` may `act` on it: their own, or their organization's with
/// `apiKey:<act>`. Any other answers `KEY_NOT_FOUND`.
async fn key_for(state: &AppState, user: &UserId, id: &str, act: &str) -> ApiResult<ApiKey> {
    let k = state
        .reader
        .get_api_key(&ApiKeyId(id.to_owned()))
        .await?
        .ok_or(Code::ApiKeyNotFound)?;
    match &k.organization_id {
        Some(org) => {
            org_may(state, user, org, act).await?;
        }
        None if &k.user_id != user => return Err(Code::ApiKeyNotFound.into()),
        None => {}
    }
    Ok(k)
}

/// `expiresIn` (seconds) checked against the configured bounds.
fn expiry(state: &AppState, seconds: i64) -> ApiResult<chrono::DateTime<chrono::Utc>> {
    let cfg = &state.config.api_key;
    if cfg.disable_custom_expiry {
        return Err(Code::CustomExpiryDisabled.into());
    }
    let days = seconds as f64 / 86_400.0;
    if seconds < 1 || days < cfg.min_expires_in_days as f64 {
        return Err(Code::ExpiresInTooSmall.into());
    }
    if days > cfg.max_expires_in_days as f64 {
        return Err(Code::ExpiresInTooLarge.into());
    }
    Ok(state.clock.now() + chrono::Duration::seconds(seconds))
}

fn check_name(state: &AppState, name: &str) -> ApiResult<()> {
    let cfg = &state.config.api_key;
    let n = name.chars().count();
    if n < cfg.min_name_length || n > cfg.max_name_length {
        return Err(Code::InvalidNameLength.into());
    }
    Ok(())
}

/// Both or neither of a refill's amount and interval, each positive.
fn check_refill(amount: Option<i64>, interval: Option<i64>) -> ApiResult<()> {
    match (amount, interval) {
        (Some(_), None) => Err(Code::RefillAmountWithoutInterval.into()),
        (None, Some(_)) => Err(Code::RefillIntervalWithoutAmount.into()),
        (Some(a), Some(i)) if a < 1 || i < 1 => Err(ApiError::validation(
            false,
            vec!["refillAmount and refillInterval: positive".into()],
        )),
        _ => Ok(()),
    }
}

fn check_counts(remaining: Option<i64>, window: Option<i64>, max: Option<i64>) -> ApiResult<()> {
    if remaining.is_some_and(|r| r < 0) {
        return Err(Code::InvalidRemaining.into());
    }
    if window.is_some_and(|w| w < 1) || max.is_some_and(|m| m < 1) {
        return Err(ApiError::validation(
            false,
            vec!["rateLimitTimeWindow and rateLimitMax: positive".into()],
        ));
    }
    Ok(())
}

fn event(req: &Request, act: &'static str, user: &UserId, key: &ApiKeyId) -> Event {
    Event::new(act, &Origin::of(req))
        .own(user)
        .detail("apiKey", key.0.as_str())
}

#[OpenApi(prefix_path = "/api-key", tag = "Tag::ApiKey")]
impl ApiKeyApi {
    /// Create an API key
    ///
    /// The key in full, this once (only its SHA-256 is kept), with its record. From a
    /// session: the caller's own key, or with `organizationId` the organization's (members
    /// allowed `apiKey:create`; its permissions default to the maker's and may not exceed
    /// them). With the server key: any user's (`userId`), with quotas, rate limits and
    /// permissions; from a session those are refused with `SERVER_ONLY_PROPERTY`.
    #[oai(path = "/create", method = "post", operation_id = "createApiKey")]
    async fn create(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<CreateBody>,
    ) -> ApiResult<Json<CreatedApiKey>> {
        let b = body.0;
        let state = state.0;
        let cfg = &state.config.api_key;
        let caller = Caller::of(state, req, cookies).await?;
        if !caller.server && b.sets_server_only() {
            return Err(Code::ServerOnlyProperty.into());
        }
        if !caller.server && b.permissions.is_some() && b.organization_id.is_none() {
            return Err(Code::ServerOnlyProperty.into());
        }
        if !caller.server && b.user_id.is_some() {
            return Err(Code::UnauthorizedSession.into());
        }
        let user = caller.user_id(b.user_id.as_deref())?;
        let org = b.organization_id.clone().map(OrgId);
        let mut permissions = b.permissions.as_ref().map(permissions_of);
        if let Some(org) = &org {
            let standing = org_may(state, &user, org, "create").await?;
            let held = standing.permissions()?;
            let asked = match &b.permissions {
                Some(p) => org_permissions_of(p)?,
                None => held.clone(),
            };
            if !policy::is_subset(&asked, &held) {
                return Err(Code::InsufficientApiKeyPermissions.into());
            }
            permissions = Some(asked);
        }
        let metadata = match b.metadata.value() {
            Some(_) if !cfg.enable_metadata => return Err(Code::MetadataDisabled.into()),
            Some(m) => Some(metadata_text(m)?),
            None => None,
        };
        check_refill(b.refill_amount, b.refill_interval)?;
        check_counts(
            b.remaining.value().copied(),
            b.rate_limit_time_window,
            b.rate_limit_max,
        )?;
        let expires_at = match b.expires_in.value() {
            Some(s) => Some(expiry(state, *s)?),
            None => cfg
                .default_expires_in_days
                .map(|d| state.clock.now() + chrono::Duration::days(d as i64)),
        };
        if let Some(p) = &b.prefix {
            let n = p.chars().count();
            if n < cfg.min_prefix_length || n > cfg.max_prefix_length {
                return Err(Code::InvalidPrefixLength.into());
            }
            if !crate::config::valid_prefix(p) {
                return Err(ApiError::validation(
                    false,
                    vec!["prefix: letters, digits, _ and - only".into()],
                ));
            }
        }
        match &b.name {
            Some(n) => check_name(state, n)?,
            None if cfg.require_name => return Err(Code::ApiKeyNameRequired.into()),
            None => {}
        }
        let prefix = b.prefix.clone().or_else(|| cfg.default_prefix.clone());
        let key = state.sessions.keys.generate(prefix.as_deref());
        let now = state.clock.now();
        let record = ApiKey {
            id: ApiKeyId::generate(),
            config_id: "default".into(),
            name: b.name,
            start: (cfg.start_length > 0).then(|| key.chars().take(cfg.start_length).collect()),
            prefix,
            key_hash: hash_key(&key),
            user_id: user.clone(),
            organization_id: org,
            enabled: true,
            expires_at,
            created_at: now,
            updated_at: now,
            last_request: None,
            request_count: 0,
            remaining: b.remaining.value().copied().or(b.refill_amount),
            refill_amount: b.refill_amount,
            refill_interval: b.refill_interval,
            last_refill_at: None,
            rate_limit_enabled: b.rate_limit_enabled.unwrap_or(cfg.rate_limit.enabled),
            rate_limit_time_window: Some(
                b.rate_limit_time_window
                    .unwrap_or(cfg.rate_limit.time_window_ms),
            ),
            rate_limit_max: Some(b.rate_limit_max.unwrap_or(cfg.rate_limit.max_requests)),
            permissions: permissions
                .map(|p| serde_json::to_string(&p))
                .transpose()
                .map_err(|e| ApiError::internal(e.to_string()))?,
            metadata,
            version: 1,
        };
        let ev = event(req, action::API_KEY_CREATED, &user, &record.id);
        let created = state
            .actors
            .user(user)
            .with(state.audit.noted(ev))
            .create_api_key(record)
            .await
            .map_err(|e| match e {
                // No such user (the server's `userId`, or one deleted meanwhile).
                actors::ActorError::NotFound => ApiError::new(Code::UserNotFound),
                e => ApiError::from(e),
            })?;
        // Remembered as unknown if it was tried before it existed (it was not: it is new).
        state.sessions.keys.forget(&created);
        Ok(Json(CreatedApiKey {
            key,
            record: ApiKeyDto::from(&created),
        }))
    }

    /// Get an API key
    ///
    /// One of the caller's keys, or of their organization's (`apiKey:read`); never the key
    /// itself. `KEY_NOT_FOUND` for any other id.
    #[oai(path = "/get", method = "get", operation_id = "getApiKey")]
    async fn get(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        id: Query<String>,
        #[oai(name = "configId")] _config_id: Query<Option<String>>,
    ) -> ApiResult<Json<ApiKeyDto>> {
        let user = signed_in(&state, req, cookies).await?;
        let k = key_for(&state, &user, &id.0, "read").await?;
        Ok(Json(ApiKeyDto::from(&k)))
    }

    /// List API keys
    ///
    /// The caller's own keys, or with `organizationId` that organization's
    /// (`apiKey:read`), oldest first; `limit`/`offset` page them, `sortBy` (`createdAt`,
    /// `name`, `expiresAt`, `lastRequest`) and `sortDirection` order them.
    #[oai(path = "/list", method = "get", operation_id = "listApiKeys")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        limit: Query<Option<usize>>,
        offset: Query<Option<usize>>,
        #[oai(name = "sortBy")] sort_by: Query<Option<String>>,
        #[oai(name = "sortDirection")] sort_direction: Query<Option<SortDirection>>,
        #[oai(name = "configId")] _config_id: Query<Option<String>>,
    ) -> ApiResult<Json<ApiKeyList>> {
        let user = signed_in(&state, req, cookies).await?;
        let reference = match &organization_id.0 {
            Some(org) => {
                let org = OrgId(org.clone());
                org_may(&state, &user, &org, "read").await?;
                org.0
            }
            None => user.0.clone(),
        };
        let mut keys = state.reader.list_api_keys(&reference).await?;
        match sort_by.0.as_deref() {
            Some("name") => keys.sort_by(|a, b| a.name.cmp(&b.name)),
            Some("expiresAt") => keys.sort_by_key(|k| k.expires_at),
            Some("lastRequest") => keys.sort_by_key(|k| k.last_request),
            Some("updatedAt") => keys.sort_by_key(|k| k.updated_at),
            _ => {}
        }
        if matches!(sort_direction.0, Some(SortDirection::Desc)) {
            keys.reverse();
        }
        let total = keys.len();
        let page = keys
            .iter()
            .skip(offset.0.unwrap_or(0))
            .take(limit.0.unwrap_or(usize::MAX))
            .map(ApiKeyDto::from)
            .collect();
        Ok(Json(ApiKeyList {
            api_keys: page,
            total,
            limit: limit.0,
            offset: offset.0,
        }))
    }

    /// Update an API key
    ///
    /// Name, `enabled` and `expiresIn` (`null`: never) from a session, on the caller's own
    /// keys or their organization's (`apiKey:update`); quotas, rate limits and permissions
    /// with the server key only (`SERVER_ONLY_PROPERTY`). `NO_VALUES_TO_UPDATE` when nothing
    /// is asked.
    #[oai(path = "/update", method = "post", operation_id = "updateApiKey")]
    async fn update(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<UpdateBody>,
    ) -> ApiResult<Json<ApiKeyDto>> {
        let b = body.0;
        let state = state.0;
        let caller = Caller::of(state, req, cookies).await?;
        if !caller.server && (b.sets_server_only() || b.user_id.is_some()) {
            return Err(if b.user_id.is_some() {
                Code::UnauthorizedSession.into()
            } else {
                Code::ServerOnlyProperty.into()
            });
        }
        let user = caller.user_id(b.user_id.as_deref())?;
        let k = key_for(state, &user, &b.key_id, "update").await?;
        if let Some(n) = &b.name {
            check_name(state, n)?;
        }
        let expires_at = match &b.expires_in {
            MaybeUndefined::Value(s) => Some(Some(expiry(state, *s)?)),
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Undefined => None,
        };
        let metadata = match (&b.metadata, state.config.api_key.enable_metadata) {
            (MaybeUndefined::Value(m), true) => Some(Some(metadata_text(m)?)),
            (MaybeUndefined::Null, true) => Some(None),
            _ => None,
        };
        if b.refill_amount.is_some() || b.refill_interval.is_some() {
            check_refill(b.refill_amount, b.refill_interval)?;
        }
        check_counts(
            b.remaining.value().copied(),
            b.rate_limit_time_window,
            b.rate_limit_max,
        )?;
        let permissions = match (&b.permissions, &k.organization_id) {
            (Some(p), Some(_)) => Some(serde_json::to_string(&org_permissions_of(p)?)),
            (Some(p), None) => Some(serde_json::to_string(&permissions_of(p))),
            (None, _) => None,
        }
        .transpose()
        .map_err(|e| ApiError::internal(e.to_string()))?;
        let nothing = b.name.is_none()
            && b.enabled.is_none()
            && expires_at.is_none()
            && metadata.is_none()
            && permissions.is_none()
            && !b.sets_server_only();
        if nothing {
            return Err(Code::NoValuesToUpdate.into());
        }
        let edit: actors::KeyEdit = Arc::new(move |k: &mut ApiKey| {
            if let Some(n) = &b.name {
                k.name = Some(n.clone());
            }
            if let Some(e) = b.enabled {
                k.enabled = e;
            }
            if let Some(e) = expires_at {
                k.expires_at = e;
            }
            if let Some(m) = &metadata {
                k.metadata = m.clone();
            }
            if let Some(p) = &permissions {
                k.permissions = Some(p.clone());
            }
            match &b.remaining {
                MaybeUndefined::Value(r) => k.remaining = Some(*r),
                MaybeUndefined::Null => k.remaining = None,
                MaybeUndefined::Undefined => {}
            }
            if b.refill_amount.is_some() {
                k.refill_amount = b.refill_amount;
                k.refill_interval = b.refill_interval;
            }
            if let Some(e) = b.rate_limit_enabled {
                k.rate_limit_enabled = e;
            }
            if let Some(w) = b.rate_limit_time_window {
                k.rate_limit_time_window = Some(w);
            }
            if let Some(m) = b.rate_limit_max {
                k.rate_limit_max = Some(m);
            }
        });
        let ev = event(req, action::API_KEY_UPDATED, &user, &k.id);
        let updated = state
            .actors
            .user(k.user_id.clone())
            .with(state.audit.noted(ev))
            .change_api_key(&k.id, edit)
            .await?;
        state.sessions.keys.forget(&updated);
        Ok(Json(ApiKeyDto::from(&updated)))
    }

    /// Delete an API key
    ///
    /// One of the caller's keys, or their organization's (`apiKey:delete`). It stops
    /// working at once in this process and within a second in every other.
    #[oai(path = "/delete", method = "post", operation_id = "deleteApiKey")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<KeyIdBody>,
    ) -> ApiResult<Json<Success>> {
        let user = signed_in(&state, req, cookies).await?;
        let k = key_for(&state, &user, &body.0.key_id, "delete").await?;
        let ev = event(req, action::API_KEY_DELETED, &user, &k.id);
        let gone = state
            .actors
            .user(k.user_id.clone())
            .with(state.audit.noted(ev))
            .delete_api_key(&k.id)
            .await?;
        state.sessions.keys.forget(&gone);
        Ok(Json(Success { success: true }))
    }

    /// Verify an API key (server key only)
    ///
    /// Whether `key` works now (counting this as one of its uses, as a request with it
    /// would), and, with `permissions`, whether the key holds every one of them: `{valid,
    /// error: {message, code}, key}` — 200 either way. Needs `Authorization: Bearer
    /// <server_key>`.
    #[oai(path = "/verify", method = "post", operation_id = "verifyApiKey")]
    async fn verify(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<VerifyBody>,
    ) -> ApiResult<Json<Verified>> {
        if !state.sessions.server_call_ok(req) {
            return Err(Code::Unauthorized.into());
        }
        let b = body.0;
        let refused = |e: ApiError| Verified {
            valid: false,
            error: Some(VerifyError {
                message: e.message.to_string(),
                code: e.code.code().to_owned(),
            }),
            key: None,
        };
        let (k, _) = match state.sessions.keys.use_key(req, &b.key).await {
            Ok(found) => found,
            Err(e) if e.code.status().is_client_error() => return Ok(Json(refused(e))),
            Err(e) => return Err(e),
        };
        if let Some(asked) = &b.permissions {
            let held: policy::Permissions = k
                .permissions
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok())
                .unwrap_or_default();
            if !policy::is_subset(&permissions_of(asked), &held) {
                return Ok(Json(refused(Code::ApiKeyNotFound.into())));
            }
        }
        Ok(Json(Verified {
            valid: true,
            error: None,
            key: Some(ApiKeyDto::from(&k)),
        }))
    }

    /// Delete every expired API key (server key only)
    ///
    /// Housekeeping for the server (`Authorization: Bearer <server_key>`): expired keys
    /// stop working by themselves; this removes their records.
    #[oai(
        path = "/delete-all-expired-api-keys",
        method = "post",
        operation_id = "deleteAllExpiredApiKeys"
    )]
    async fn delete_all_expired(
        &self,
        state: Data<&AppState>,
        req: &Request,
    ) -> ApiResult<Json<DeletedExpired>> {
        if !state.sessions.server_call_ok(req) {
            return Err(Code::Unauthorized.into());
        }
        let deleted = state
            .actors
            .delete_expired_api_keys(state.clock.now())
            .await?;
        Ok(Json(DeletedExpired {
            success: true,
            error: None,
            deleted,
        }))
    }
}

#[derive(Debug, poem_openapi::Object)]
#[oai(rename = "ApiKeySuccess")]
struct Success {
    success: bool,
}

/// The signed-in person's id (a session, never a key: `UNAUTHORIZED_SESSION` otherwise).
async fn signed_in(state: &AppState, req: &Request, cookies: &PendingCookies) -> ApiResult<UserId> {
    match Caller::of(state, req, cookies).await?.user {
        Some(a) => Ok(a.user.id),
        None => Err(Code::UnauthorizedSession.into()),
    }
}
