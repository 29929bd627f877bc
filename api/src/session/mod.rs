//! Who is calling: the session cookie → signed token → session (+ optional cookie cache),
//! with refresh, expiry and the cookies that go with them. Used by `get-session` directly and
//! by every authenticated route through the [`Auth`] extractor.
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{client_ip, user_agent};
use crate::http::{raw_cookies, request_cookie, PendingCookies};
use crate::AppState;
use actors::NewSession;
use base64::Engine;
use chrono::{DateTime, Utc};
use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, RwLock};
use storage::{Session, User, UserId};

pub use crate::dto::Authed;
pub use principal::*;

mod principal;

#[derive(Debug, Clone, Copy, Default)]
pub struct ResolveOptions {
    pub disable_cookie_cache: bool,
    pub disable_refresh: bool,
}

/// What the signed cookie cache carries.
#[derive(Serialize, Deserialize)]
struct CachedSession {
    session: Session,
    user: User,
    /// When this cache entry stops being trusted (ms since the epoch).
    expires: i64,
    /// When it was written (ms), compared with the user's last revocation.
    issued: i64,
}

/// Per-user time of the last revocation, so a cookie cache written before it is not trusted
/// (revocation wins at once in this process, and within the cache max-age across processes).
#[derive(Default)]
pub struct Revocations(Mutex<HashMap<UserId, DateTime<Utc>>>);

impl Revocations {
    pub fn record(&self, user: &UserId, now: DateTime<Utc>, keep_for: chrono::Duration) {
        if let Ok(mut m) = self.0.lock() {
            if m.len() > 10_000 {
                m.retain(|_, t| *t + keep_for > now);
            }
            m.insert(user.clone(), now);
        }
    }

    fn revoked_since(&self, user: &UserId, issued: DateTime<Utc>) -> bool {
        self.0
            .lock()
            .map(|m| m.get(user).is_some_and(|t| *t >= issued))
            .unwrap_or(true)
    }
}

/// Cookie-cache cookies verified lately, so the same cookie is not verified again: a browser
/// sends one `session_data` cookie on every request until it is re-issued, and checking it —
/// percent-decoding, two HMACs, base64, JSON, then writing the answer — was most of a cached
/// get-session. Keyed by the cookie's value exactly as sent, with the session-token cookie it
/// came with (the same bytes verify the same way). A hit is checked as a verified cookie is —
/// its own expiry, the session's, and the user's last revocation in this process — so nothing
/// about what is trusted changes; only the work of deriving it again is saved. At most
/// [`VERIFIED_COOKIES`] are kept (about 3 KB each: the cookie, the session and user, the
/// answer); the table is emptied when full.
pub struct VerifiedCookies {
    /// By a keyed hash of the cookie (so the table hashes its keys no further).
    hits: RwLock<HashMap<u64, Arc<CookieHit>, std::hash::BuildHasherDefault<KeyedHash>>>,
    /// Keys the table by the cookie's last characters (its signature).
    hasher: std::collections::hash_map::RandomState,
}

/// A key that is a keyed hash already, taken as it is.
#[derive(Default)]
struct KeyedHash(u64);

impl std::hash::Hasher for KeyedHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The most verified cookies kept (per process).
pub const VERIFIED_COOKIES: usize = 4096;

/// A verified cookie-cache cookie and what it holds.
pub struct CookieHit {
    data_cookie: Box<str>,
    token_cookie: Box<str>,
    pub authed: Authed,
    expires: i64,
    issued: DateTime<Utc>,
    /// get-session's answer for it, written once.
    pub answer: crate::dto::JsonBytes<crate::dto::Nullable<crate::dto::SessionWithUser>>,
}

impl Default for VerifiedCookies {
    fn default() -> Self {
        Self {
            hits: RwLock::default(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl VerifiedCookies {
    /// How many verified cookies are kept now.
    pub fn len(&self) -> usize {
        self.hits.read().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn key(&self, data_cookie: &str) -> u64 {
        let b = data_cookie.as_bytes();
        self.hasher.hash_one(&b[b.len().saturating_sub(48)..])
    }

    fn get(&self, data_cookie: &str, token_cookie: &str) -> Option<Arc<CookieHit>> {
        let hit = self
            .hits
            .read()
            .ok()?
            .get(&self.key(data_cookie))
            .cloned()?;
        let same = |a: &str, b: &str| crate::crypto::same_bytes(a.as_bytes(), b.as_bytes());
        (same(&hit.data_cookie, data_cookie) && same(&hit.token_cookie, token_cookie))
            .then_some(hit)
    }

    fn put(&self, hit: CookieHit) {
        let key = self.key(&hit.data_cookie);
        if let Ok(mut m) = self.hits.write() {
            if m.len() >= VERIFIED_COOKIES {
                m.clear();
            }
            m.insert(key, Arc::new(hit));
        }
    }
}

/// The sessions service: who is calling (the session cookie, the cookie cache and what it
/// trusts, refreshes and revocations), the cookies that go with a session, new sessions, and
/// the server credential. Cheap to clone.
#[derive(Clone)]
pub struct Sessions(Arc<SessionsInner>);

pub struct SessionsInner {
    config: Arc<crate::config::Config>,
    reader: actors::Reader,
    actors: actors::Actors,
    clock: Arc<dyn storage::Clock>,
    signer: crate::crypto::Signer,
    cookies: crate::http::CookieNames,
    revocations: Revocations,
    /// Cookie-cache cookies verified lately (see [`VerifiedCookies`]).
    pub verified: VerifiedCookies,
    /// API keys: a request carrying one acts through it (see `plugins::api_key`).
    pub keys: crate::plugins::api_key::ApiKeys,
}

impl std::ops::Deref for Sessions {
    type Target = SessionsInner;
    fn deref(&self) -> &SessionsInner {
        &self.0
    }
}

impl Sessions {
    pub fn new(
        config: Arc<crate::config::Config>,
        actors: &actors::Actors,
        clock: Arc<dyn storage::Clock>,
        signer: crate::crypto::Signer,
        cookies: crate::http::CookieNames,
        keys: crate::plugins::api_key::ApiKeys,
    ) -> Self {
        Self(Arc::new(SessionsInner {
            config,
            reader: actors.reader(),
            actors: actors.clone(),
            clock,
            signer,
            cookies,
            revocations: Revocations::default(),
            verified: VerifiedCookies::default(),
            keys,
        }))
    }

    /// Creates a session through the user's actor and queues its cookies; `ctx`: the audit
    /// records kept with it.
    pub(crate) async fn start_session(
        &self,
        req: &Request,
        cookies: &PendingCookies,
        user: User,
        remember_me: bool,
        ctx: actors::Ctx,
    ) -> ApiResult<Authed> {
        let new = Self::new_session(req, remember_me);
        let session = self
            .actors
            .user(user.id.clone())
            .with(ctx)
            .create_session(new)
            .await?;
        // A ban that had ended was lifted on the way: answer the user as it now is.
        let user = match user.banned {
            true => self.reader.get_user(&user.id).await?.unwrap_or(user),
            false => user,
        };
        Ok(self.started(cookies, user, session, remember_me))
    }

    /// A session just started for `user`: its cookies set.
    pub(crate) fn started(
        &self,
        cookies: &PendingCookies,
        user: User,
        session: Session,
        remember_me: bool,
    ) -> Authed {
        let authed = Authed { session, user };
        cookies.push(self.session_cookies(&authed, !remember_me));
        authed
    }

    /// A new session in place of the caller's `old` one, after a change a session made before
    /// must not outlive (the second factor, the email address); an administrator's
    /// impersonation keeps its own session.
    pub(crate) async fn rotate(
        &self,
        req: &Request,
        cookies: &PendingCookies,
        old: &Authed,
        user: User,
    ) -> ApiResult<Authed> {
        if old.session.impersonated_by.is_some() {
            return Ok(Authed {
                session: old.session.clone(),
                user,
            });
        }
        let new = self
            .start_session(
                req,
                cookies,
                user,
                !self.dont_remember(req),
                Default::default(),
            )
            .await?;
        self.actors
            .user(old.user.id.clone())
            .revoke_known_session(&old.session)
            .await?;
        Ok(new)
    }

    /// What a session made for this request records.
    pub(crate) fn new_session(req: &Request, remember_me: bool) -> NewSession {
        NewSession {
            ip_address: client_ip(req),
            user_agent: user_agent(req),
            dont_remember: !remember_me,
            ..Default::default()
        }
    }

    /// The session token from a correctly signed session cookie, if any.
    pub fn signed_token(&self, req: &Request) -> Option<String> {
        let raw = request_cookie(req, &self.cookies.session_token)?;
        self.signer.unsign(&raw).map(str::to_owned)
    }

    pub(crate) fn dont_remember(&self, req: &Request) -> bool {
        request_cookie(req, &self.cookies.dont_remember)
            .is_some_and(|raw| self.signer.unsign(&raw) == Some("true"))
    }

    /// The `Set-Cookie` values for a new or refreshed session.
    pub fn session_cookies(&self, authed: &Authed, dont_remember: bool) -> Vec<String> {
        let n = &self.cookies;
        // As 1.7: the configured lifetime, not what is left of it (which a clock tick makes
        // one second short).
        let max_age = (!dont_remember).then_some(self.config.session.expires_in);
        let mut out = vec![n.set(
            &n.session_token,
            &self.signer.sign(&authed.session.token),
            max_age,
        )];
        if dont_remember {
            out.push(n.set(&n.dont_remember, &self.signer.sign("true"), None));
        }
        out.extend(self.cache_cookie(authed));
        out
    }

    /// The signed `session_data` cookie when the cookie cache is on and it fits in 4093 chars.
    pub fn cache_cookie(&self, authed: &Authed) -> Option<String> {
        let cfg = &self.config.session.cookie_cache;
        if !cfg.enabled {
            return None;
        }
        let now = self.clock.now();
        let entry = CachedSession {
            session: authed.session.clone(),
            user: authed.user.clone(),
            expires: (now + chrono::Duration::seconds(cfg.max_age as i64)).timestamp_millis(),
            issued: now.timestamp_millis(),
        };
        let json = serde_json::to_vec(&entry).ok()?;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        let n = &self.cookies;
        let cookie = n.set(
            &n.session_data,
            &self.signer.sign(&payload),
            Some(cfg.max_age),
        );
        let value_len = cookie.split(';').next().map_or(0, str::len);
        (value_len <= 4093).then_some(cookie)
    }

    /// The cookie cache's session from a cookie verified before (see [`VerifiedCookies`]),
    /// when it is still to be trusted.
    pub fn cookie_hit(&self, req: &Request) -> Option<Arc<CookieHit>> {
        let [data, token] = raw_cookies(
            req,
            [&self.cookies.session_data, &self.cookies.session_token],
        );
        let hit = self.verified.get(data?, token?)?;
        let now = self.clock.now();
        (hit.expires > now.timestamp_millis()
            && hit.authed.session.expires_at > now
            && !self
                .revocations
                .revoked_since(&hit.authed.user.id, hit.issued))
        .then_some(hit)
    }

    fn cached_session(&self, req: &Request, token: &str) -> Option<Authed> {
        let raw = request_cookie(req, &self.cookies.session_data)?;
        let payload = self.signer.unsign(&raw)?;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?;
        let entry: CachedSession = serde_json::from_slice(&json).ok()?;
        let now = self.clock.now();
        let issued = DateTime::from_timestamp_millis(entry.issued)?;
        let same_token: bool =
            subtle::ConstantTimeEq::ct_eq(entry.session.token.as_bytes(), token.as_bytes()).into();
        if !same_token
            || entry.expires <= now.timestamp_millis()
            || entry.session.expires_at <= now
            || self.revocations.revoked_since(&entry.user.id, issued)
        {
            return None;
        }
        let authed = Authed {
            session: entry.session,
            user: entry.user,
        };
        if let [Some(data), Some(token)] = raw_cookies(
            req,
            [&self.cookies.session_data, &self.cookies.session_token],
        ) {
            self.verified.put(CookieHit {
                data_cookie: data.into(),
                token_cookie: token.into(),
                answer: crate::dto::SessionWithUser::answer(&authed),
                authed: authed.clone(),
                expires: entry.expires,
                issued,
            });
        }
        Some(authed)
    }

    /// Resolves the caller's session. Cookies to set (refresh) or clear (a dead session) are
    /// queued on `pending`. A missing or tampered cookie is simply no session.
    pub async fn resolve_session(
        &self,
        req: &Request,
        pending: &PendingCookies,
        opts: ResolveOptions,
    ) -> ApiResult<Option<Authed>> {
        if let Some(raw) = self.keys.sent(req) {
            return Ok(Some(self.keys.principal(req, pending, raw).await?.0));
        }
        let cache = self.config.session.cookie_cache.enabled && !opts.disable_cookie_cache;
        if cache {
            if let Some(hit) = self.cookie_hit(req) {
                return Ok(Some(hit.authed.clone()));
            }
        }
        let Some(token) = self.signed_token(req) else {
            return Ok(None);
        };
        if cache {
            if let Some(hit) = self.cached_session(req, &token) {
                return Ok(Some(hit));
            }
        }
        let now = self.clock.now();
        let Some((session, user)) = self
            .reader
            .session_with_user(&token, opts.disable_cookie_cache)
            .await?
        else {
            pending.push(self.cookies.clear_all());
            return Ok(None);
        };
        if session.expires_at <= now {
            // Deleted through the owner's actor, like every session change (as read here).
            self.actors
                .user(session.user_id.clone())
                .revoke_known_session(&session)
                .await?;
            pending.push(self.cookies.clear_all());
            return Ok(None);
        }
        let Some(user) = user else {
            pending.push(self.cookies.clear_all());
            return Ok(None);
        };
        // A ban revokes every session through the user's actor; a session written meanwhile
        // by another process never serves a banned user either.
        if user.banned && user.ban_expires.is_none_or(|t| t > now) {
            self.actors
                .user(user.id.clone())
                .revoke_known_session(&session)
                .await?;
            pending.push(self.cookies.clear_all());
            return Ok(None);
        }
        let dont_remember = self.dont_remember(req);
        let update_age = chrono::Duration::seconds(self.config.session.update_age as i64);
        let mut authed = Authed { session, user };
        let due = authed.session.updated_at + update_age <= now;
        if due && !dont_remember && !opts.disable_refresh {
            match self
                .actors
                .user(authed.user.id.clone())
                .refresh_session(&authed.session, false)
                .await?
            {
                Some(s) => {
                    authed.session = s;
                    pending.push(self.session_cookies(&authed, false));
                    return Ok(Some(authed));
                }
                None => {
                    pending.push(self.cookies.clear_all());
                    return Ok(None);
                }
            }
        }
        if self.config.session.cookie_cache.enabled {
            pending.push(self.cache_cookie(&authed));
        }
        Ok(Some(authed))
    }

    /// Sets (or clears) the caller's active organization; the session's cookies are re-issued
    /// (as 1.7 does), so the cookie cache does not lag behind.
    pub async fn set_active_org(
        &self,
        auth: &Principal,
        org: Option<storage::OrgId>,
    ) -> ApiResult<()> {
        let session = self
            .actors
            .user(auth.user.id.clone())
            .set_active_organization(&auth.session.token, org)
            .await?;
        self.reissue_session(auth, &auth.user, session);
        Ok(())
    }

    /// Sets (or clears) the caller's active team; see [`Sessions::set_active_org`].
    pub async fn set_active_team(
        &self,
        auth: &Principal,
        team: Option<storage::TeamId>,
    ) -> ApiResult<()> {
        let session = self
            .actors
            .user(auth.user.id.clone())
            .set_active_team(&auth.session.token, team)
            .await?;
        self.reissue_session(auth, &auth.user, session);
        Ok(())
    }

    /// Re-issues every cookie of the caller's session after a change of it or of its user
    /// (a fresh `Max-Age`, and the cookie cache in step).
    pub(crate) fn reissue_session(&self, auth: &Principal, user: &User, session: Option<Session>) {
        if let Some(session) = session {
            let authed = Authed {
                session,
                user: user.clone(),
            };
            auth.cookies
                .push(self.session_cookies(&authed, auth.dont_remember));
        }
    }

    /// With the cookie cache on, re-issues the cached session after a change of it.
    pub(crate) fn reissue_cache(
        &self,
        cookies: &PendingCookies,
        user: &User,
        session: Option<Session>,
    ) {
        if let Some(session) = session {
            cookies.push(self.cache_cookie(&Authed {
                session,
                user: user.clone(),
            }));
        }
    }

    /// Remembers that `user`'s sessions were revoked now (see [`Revocations`]).
    pub fn note_revocation(&self, user: &UserId) {
        let keep = chrono::Duration::seconds(self.config.session.cookie_cache.max_age as i64);
        self.revocations.record(user, self.clock.now(), keep);
    }

    /// Whether the request carries a valid server credential.
    pub(crate) fn server_call_ok(&self, req: &Request) -> bool {
        self.server_call(req) == Some(true)
    }

    /// Whether the request carries the server credential (`Authorization: Bearer <server_key>`),
    /// compared in constant time. `None` when no server key is configured.
    pub(crate) fn server_call(&self, req: &Request) -> Option<bool> {
        let key = self.config.server_key.as_ref()?;
        let sent = req
            .headers()
            .get(poem::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        Some(subtle::ConstantTimeEq::ct_eq(sent.as_bytes(), key.expose().as_bytes()).into())
    }

    /// Sensitive actions need a session younger than `fresh_age` (when it is non-zero).
    pub fn require_fresh(&self, session: &Session) -> ApiResult<()> {
        let fresh = self.config.session.fresh_age;
        if fresh > 0
            && session.created_at + chrono::Duration::seconds(fresh as i64) < self.clock.now()
        {
            return Err(ApiError::new(Code::SessionNotFresh));
        }
        Ok(())
    }
}
