//! The admin plugin's routes under `/admin/`: users, roles, bans, sessions, impersonation.
//! Handlers parse and answer; who may do what is decided by the actors (the admin policy).
mod audit;
pub(crate) mod dto;
mod sessions;
mod users;

pub use audit::AuditApi;

/// The admin plugin's operations (with the audit log's routes).
pub type Apis = (AdminApi, AdminSessionApi, AuditApi);

pub fn apis() -> Apis {
    (AdminApi, AdminSessionApi, AuditApi)
}

use crate::audit::Event;
use crate::error::{ApiError, Code};
use crate::http::PendingCookies;
use crate::session::{Authed, ResolveOptions, API_KEY_SCHEME, SESSION_SCHEME};
use actors::Caller;
use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use storage::UserId;

pub struct AdminApi;

/// The admin plugin's operations on sessions.
pub struct AdminSessionApi;

pub const SERVER_KEY_SCHEME: &str = "serverKey";

/// Who calls an admin route: the server credential (`Authorization: Bearer <server_key>`), or
/// a signed-in user whose role is read from the store for this request (never from the cookie
/// cache). Anything else is 401 `UNAUTHORIZED`.
pub struct AdminCaller {
    pub caller: Caller,
    /// The caller's session, when a user calls.
    pub session: Option<Authed>,
    pub cookies: PendingCookies,
    /// Where the request came from (for audit events).
    pub origin: crate::audit::Origin,
}

impl<'a> ApiExtractor<'a> for AdminCaller {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        crate::session::Principal::register(registry);
        registry.create_security_scheme(
            SERVER_KEY_SCHEME,
            MetaSecurityScheme {
                ty: "http",
                description: Some(
                    "The server credential `Authorization: Bearer <server_key>` (from the \
                     configuration): tools and back ends, allowed every admin operation.",
                ),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec![SESSION_SCHEME, API_KEY_SCHEME, SERVER_KEY_SCHEME]
    }

    async fn from_request(
        req: &'a Request,
        _body: &mut RequestBody,
        _opts: ExtractParamOptions<()>,
    ) -> poem::Result<Self> {
        let (state, cookies) = crate::session::request_context(req)?;
        let cookies = cookies.clone();
        let bearer = req
            .headers()
            .contains_key(poem::http::header::AUTHORIZATION);
        if bearer {
            return match state.sessions.server_call(req) {
                Some(true) => Ok(Self {
                    caller: Caller::Server,
                    session: None,
                    cookies,
                    origin: crate::audit::Origin::of(req),
                }),
                _ => Err(ApiError::new(Code::Unauthorized).into()),
            };
        }
        let opts = ResolveOptions {
            disable_cookie_cache: true,
            disable_refresh: false,
        };
        match state.sessions.resolve_session(req, &cookies, opts).await? {
            Some(a) => Ok(Self {
                caller: Caller::User(a.user.clone()),
                session: Some(a),
                cookies,
                origin: crate::audit::Origin::of(req),
            }),
            None => Err(ApiError::new(Code::Unauthorized).into()),
        }
    }
}

impl AdminCaller {
    /// An admin event about `target`: the calling admin is the actor (the server key is
    /// noted as `by: server`).
    fn event(&self, action: &'static str, target: &UserId) -> Event {
        self.event_about(action, Some(target))
    }

    fn event_about(&self, action: &'static str, target: Option<&UserId>) -> Event {
        let ev = Event::new(action, &self.origin);
        let ev = match target {
            Some(t) => ev.user(t),
            None => ev,
        };
        match (&self.caller, &self.session) {
            (Caller::Server, _) => ev.detail("by", "server"),
            (Caller::User(u), s) => ev
                .actor(&u.id)
                .impersonated_by(s.as_ref().and_then(|a| a.session.impersonated_by.as_ref())),
        }
    }

    fn caller_id(&self) -> Option<&str> {
        match &self.caller {
            Caller::Server => None,
            Caller::User(u) => Some(&u.id.0),
        }
    }
}
