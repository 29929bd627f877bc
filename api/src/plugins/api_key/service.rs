//! The api-key plugin's service: making keys, finding a key by the SHA-256 of what a request
//! sent (a keyed lookup: keys are long random strings, so a fast hash is right and a lookup
//! tells nothing about any other key), each use taken through the maker's actor, and the
//! request's principal made of a key.
//!
//! Keys without a quota or rate limit are read once a second at most per process (their
//! uses write nothing but, once a minute, `lastRequest`): a key disabled or deleted in
//! another process stops working here within a second; in this process at once. An unknown
//! key is remembered as unknown for that second too, so a refusal takes the same time whether
//! a key exists or not.
use crate::audit::{action, Audit, Event, Origin};
use crate::client::{client_ip, user_agent};
use crate::config::ApiKeyConfig;
use crate::dto::Authed;
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use poem::Request;
use rand::Rng;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storage::{ApiKey, Clock, Session, SessionId, User};

/// How long a process trusts what it read of an unlimited key.
const CACHE_FOR: Duration = Duration::from_secs(1);
/// Keys kept in the cache at most (it is emptied when full: a cold read costs one lookup).
const CACHE_MAX: usize = 10_000;

/// The api-key service. Cheap to clone.
#[derive(Clone)]
pub struct ApiKeys(Arc<Inner>);

pub struct Inner {
    pub config: ApiKeyConfig,
    /// How long a session lives, seconds (a key without expiry answers a session this long).
    pub session_expires_in: u64,
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub audit: Audit,
    /// Requests made with a key, by outcome (`ok` or the refusal's code).
    pub requests: prometheus::IntCounterVec,
    /// What this process read lately, by the hash of a key: the key and its maker, or
    /// `None` for a hash no key has (so an unknown key is answered as fast as a known one).
    pub cache: Mutex<HashMap<String, (Found, Instant)>>,
}

/// A lookup's answer: the key and its maker, or nothing.
pub type Found = Option<(ApiKey, User)>;

impl std::ops::Deref for ApiKeys {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// What the key-management routes and the sensitive ones answer to a key: each needs a
/// person's session (a key cannot make, see or change keys, passwords, second factors,
/// passkeys, sessions or linked accounts).
const NOT_FOR_KEYS: &[&str] = &[
    "/api-key/",
    "/change-password",
    "/set-password",
    "/delete-user",
    "/change-email",
    "/email-otp/request-email-change",
    "/email-otp/change-email",
    "/link-social",
    "/unlink-account",
    "/get-access-token",
    "/refresh-token",
    "/account-info",
    "/revoke-session",
    "/revoke-sessions",
    "/revoke-other-sessions",
    "/update-session",
    "/sign-out",
    "/two-factor/",
    "/passkey/",
    "/organization/set-active",
    "/organization/set-active-team",
    "/admin/impersonate-user",
    "/admin/stop-impersonating",
    "/organization/webhook/",
    "/admin/webhook/",
];

/// The organization routes that are about the maker rather than one organization: an
/// organization's key may not call them (it would see or change the maker's other
/// organizations and invitations).
const NOT_FOR_ORGANIZATION_KEYS: &[&str] = &[
    "/organization/create",
    "/organization/list",
    "/organization/leave",
    "/organization/accept-invitation",
    "/organization/reject-invitation",
    "/organization/list-user-invitations",
    "/organization/list-user-teams",
];

/// Whether a request on `path` (under the base path) may act through a key; an
/// organization's key acts on that organization's routes only.
pub fn accepts_keys(path: &str, org_key: bool) -> bool {
    let path = path.strip_prefix(crate::BASE_PATH).unwrap_or(path);
    if NOT_FOR_KEYS
        .iter()
        .any(|p| path == *p || (p.ends_with('/') && path.starts_with(p)))
    {
        return false;
    }
    !org_key
        || path == "/get-session"
        || (path.starts_with("/organization/") && !NOT_FOR_ORGANIZATION_KEYS.contains(&path))
}

/// The SHA-256 of a key as stored: base64url without padding.
pub fn hash_key(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(key.as_bytes()))
}

impl ApiKeys {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    /// A new key: `prefix` and `key_length` random letters (a–z, A–Z: 64 of them hold
    /// 365 bits).
    pub fn generate(&self, prefix: Option<&str>) -> String {
        const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut rng = rand::thread_rng();
        let body: String = (0..self.config.key_length)
            .map(|_| LETTERS[rng.gen_range(0..LETTERS.len())] as char)
            .collect();
        format!("{}{body}", prefix.unwrap_or(""))
    }

    /// The key the request carries in the configured header, if any.
    pub fn sent<'a>(&self, req: &'a Request) -> Option<&'a str> {
        req.headers()
            .get(self.config.header.as_str())
            .map(|v| v.to_str().unwrap_or(""))
    }

    /// Forgets what this process read of `key` (after a change made here).
    pub fn forget(&self, key: &ApiKey) {
        if let Ok(mut c) = self.cache.lock() {
            c.remove(&key.key_hash);
        }
    }

    /// The stored key (and its maker) whose hash is `hash`; from the cache when read
    /// within the last second (an unknown hash too).
    async fn lookup(&self, hash: &str) -> ApiResult<Found> {
        if let Ok(c) = self.cache.lock() {
            if let Some((found, at)) = c.get(hash) {
                if at.elapsed() < CACHE_FOR {
                    return Ok(found.clone());
                }
            }
        }
        let reader = self.actors.reader();
        let found = match reader.find_api_key(hash).await? {
            Some(k) => reader.get_user(&k.user_id).await?.map(|u| (k, u)),
            None => None,
        };
        self.keep(hash, found.clone());
        Ok(found)
    }

    fn keep(&self, hash: &str, found: Found) {
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= CACHE_MAX {
                c.clear();
            }
            c.insert(hash.to_owned(), (found, Instant::now()));
        }
    }

    /// One use of the key `raw`: the key after it and its maker, or the refusal (recorded
    /// in the audit log and counted).
    pub async fn use_key(&self, req: &Request, raw: &str) -> ApiResult<(ApiKey, User)> {
        let origin = Origin::of(req);
        let r = self.try_use(raw, &origin).await;
        let outcome = match &r {
            Ok(_) => "ok",
            Err((e, _)) => e.code.code(),
        };
        self.requests.with_label_values(&[outcome]).inc();
        match r {
            Ok(found) => Ok(found),
            Err((e, known)) => {
                if e.code.status().is_client_error() {
                    let mut ev = Event::new(action::API_KEY_REFUSED, &origin);
                    if let Some(k) = &known {
                        ev = ev.own(&k.user_id).detail("apiKey", k.id.0.as_str());
                    }
                    self.audit.record_refusal(ev, e.code).await;
                }
                Err(e)
            }
        }
    }

    async fn try_use(
        &self,
        raw: &str,
        origin: &Origin,
    ) -> Result<(ApiKey, User), (ApiError, Option<ApiKey>)> {
        if raw.len() < self.config.key_length {
            return Err((Code::MalformedApiKey.into(), None));
        }
        let hash = hash_key(raw);
        let (k, user) = self
            .lookup(&hash)
            .await
            .map_err(|e| (e, None))?
            .ok_or((Code::InvalidApiKey.into(), None))?;
        let now = self.clock.now();
        if user.banned && user.ban_expires.is_none_or(|t| t > now) {
            return Err((Code::ApiKeyUserBanned.into(), Some(k)));
        }
        // An unlimited key read lately: checked here, written only when its last use is
        // old news.
        // A refusal read from the copy stands for its second (a key enabled or refilled in
        // another process works here within it; in this one at once).
        match actors::take_use(&k, now) {
            Err(rule) => return Err((actors::ActorError::Refused(rule).into(), Some(k))),
            Ok(None) => return Ok((k, user)),
            Ok(Some(_)) => {}
        }
        let mut handle = self.actors.user(k.user_id.clone());
        if k.last_request.is_none() {
            let ev = Event::new(action::API_KEY_FIRST_USE, origin)
                .own(&k.user_id)
                .detail("apiKey", k.id.0.as_str());
            handle = handle.with(self.audit.noted(ev));
        }
        match handle.use_api_key(&k.id).await {
            Ok(used) => {
                self.keep(&hash, Some((used.clone(), user.clone())));
                Ok((used, user))
            }
            Err(e) => {
                self.forget(&k);
                let e = ApiError::from(e);
                // Deleted meanwhile: the key is no more.
                let e = e.recode(Code::ApiKeyNotFound, Code::InvalidApiKey);
                Err((e, Some(k)))
            }
        }
    }

    /// The session a request made with a key acts through: the key's, for this request only
    /// (no cookie is set, none is read). Refused on routes that need a person's session.
    pub async fn principal(
        &self,
        req: &Request,
        pending: &PendingCookies,
        raw: &str,
    ) -> ApiResult<(Authed, ApiKey)> {
        pending.refuse_all();
        let path = req.uri().path();
        // Refused before the key is looked at: a route a key may not call costs it no use.
        if !accepts_keys(path, false) {
            return Err(Code::ApiKeyNotAccepted.into());
        }
        let (k, user) = self.use_key(req, raw).await?;
        if k.organization_id.is_some() && !accepts_keys(path, true) {
            return Err(Code::OrgApiKeyOutsideOrganization.into());
        }
        let now = self.clock.now();
        let expires_at = k
            .expires_at
            .unwrap_or(now + chrono::Duration::seconds(self.session_expires_in as i64));
        let authed = Authed {
            session: Session {
                id: SessionId(k.id.0.clone()),
                token: raw.to_owned(),
                user_id: user.id.clone(),
                expires_at,
                ip_address: client_ip(req),
                user_agent: user_agent(req),
                created_at: now,
                updated_at: now,
                active_organization_id: k.organization_id.clone(),
                active_team_id: None,
                impersonated_by: None,
            },
            user,
        };
        Ok((authed, k))
    }
}
