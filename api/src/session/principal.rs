//! The [`Principal`] extractor: who is calling, as a handler parameter — a session from the
//! session cookie (or the cookie cache), or an API key acting as its maker — and the security
//! schemes it declares in the OpenAPI document.
use super::*;
/// Who is calling, as a handler parameter: a signed-in user (401 `UNAUTHORIZED` otherwise),
/// with their session and the request's pending cookies (so a change of the session can
/// re-issue them). Organization handlers act as [`Principal::acting`]; the organization's actor
/// resolves the acting member and decides what they may do.
pub struct Principal {
    pub user: User,
    pub session: Session,
    pub cookies: PendingCookies,
    /// The session is a `rememberMe: false` one (its cookies stay browser-session cookies).
    pub dont_remember: bool,
    /// Where the request came from (for audit events).
    pub origin: crate::audit::Origin,
    /// The organization's API key the request acts through, if it does (a user's own key
    /// acts as the user, as a session would).
    pub org_key: Option<OrgKey>,
}

/// An organization's key acting: its organization, and the permissions it was given.
#[derive(Clone)]
pub struct OrgKey {
    pub org: storage::OrgId,
    pub permissions: Arc<policy::Permissions>,
}

impl Principal {
    /// The caller as an organization actor sees them.
    pub fn acting(&self) -> actors::Acting {
        match &self.org_key {
            Some(k) => actors::Acting::Key {
                user: self.user.id.clone(),
                org: k.org.clone(),
                permissions: k.permissions.clone(),
            },
            None => actors::Acting::User(self.user.id.clone()),
        }
    }

    /// The organization named by `id`, or the session's active one
    /// (`NO_ACTIVE_ORGANIZATION` when there is none). An organization's key names its own
    /// organization, and no other.
    pub fn org_id(&self, id: Option<&str>) -> ApiResult<storage::OrgId> {
        if let Some(k) = &self.org_key {
            return match id {
                Some(id) if id != k.org.0 => Err(Code::OrgApiKeyOutsideOrganization.into()),
                _ => Ok(k.org.clone()),
            };
        }
        match id {
            Some(id) => Ok(storage::OrgId(id.to_owned())),
            None => self
                .session
                .active_organization_id
                .clone()
                .ok_or_else(|| Code::NoActiveOrganization.into()),
        }
    }
}

pub const SESSION_SCHEME: &str = "sessionCookie";
pub const API_KEY_SCHEME: &str = "apiKey";

/// What every extractor needs from a request: the application, and the cookies the response
/// will set (the cookie middleware put them there).
pub(crate) fn request_context(req: &Request) -> Result<(&AppState, &PendingCookies), ApiError> {
    let state = req
        .data::<AppState>()
        .ok_or_else(|| ApiError::internal("app state missing"))?;
    let pending = req
        .extensions()
        .get::<PendingCookies>()
        .ok_or_else(|| ApiError::internal("cookie middleware missing"))?;
    Ok((state, pending))
}

impl<'a> ApiExtractor<'a> for Principal {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        registry.create_security_scheme(
            SESSION_SCHEME,
            MetaSecurityScheme {
                ty: "apiKey",
                description: Some(
                    "The signed session cookie `<prefix>.session_token` set by sign-in and \
                     sign-up (`__Secure-` prefixed on https; prefix `gatehouse` by default).",
                ),
                name: Some("gatehouse.session_token"),
                key_in: Some("cookie"),
                scheme: None,
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
        registry.create_security_scheme(
            API_KEY_SCHEME,
            MetaSecurityScheme {
                ty: "apiKey",
                description: Some(
                    "An API key (`POST /api-key/create`) in the `x-api-key` header (the name is \
                     `api_key.header`): the request acts as the key's maker, except on routes \
                     that need a person's session.",
                ),
                name: Some("x-api-key"),
                key_in: Some("header"),
                scheme: None,
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec![SESSION_SCHEME, API_KEY_SCHEME]
    }

    async fn from_request(
        req: &'a Request,
        _body: &mut RequestBody,
        _opts: ExtractParamOptions<()>,
    ) -> poem::Result<Self> {
        let (state, pending) = request_context(req)?;
        if let Some(raw) = state.sessions.keys.sent(req) {
            let (a, key) = state.sessions.keys.principal(req, pending, raw).await?;
            let org_key = match key.organization_id {
                Some(org) => Some(OrgKey {
                    org,
                    permissions: Arc::new(
                        key.permissions
                            .as_deref()
                            .and_then(|p| serde_json::from_str(p).ok())
                            .unwrap_or_default(),
                    ),
                }),
                None => None,
            };
            return Ok(Principal {
                user: a.user,
                session: a.session,
                cookies: pending.clone(),
                dont_remember: false,
                origin: crate::audit::Origin::of(req),
                org_key,
            });
        }
        match state
            .sessions
            .resolve_session(req, pending, ResolveOptions::default())
            .await?
        {
            Some(a) => Ok(Principal {
                user: a.user,
                session: a.session,
                cookies: pending.clone(),
                dont_remember: state.sessions.dont_remember(req),
                origin: crate::audit::Origin::of(req),
                org_key: None,
            }),
            None => Err(ApiError::new(Code::Unauthorized).into()),
        }
    }
}

impl Principal {
    /// An event of this signed-in user (the actor; also the subject until told otherwise).
    pub fn event(&self, action: &'static str) -> crate::audit::Event {
        crate::audit::Event::new(action, &self.origin)
            .own(&self.user.id)
            .impersonated_by(self.session.impersonated_by.as_ref())
    }
}
