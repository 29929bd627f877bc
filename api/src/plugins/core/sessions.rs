//! Reading, listing and revoking sessions.
use crate::audit::action;
use crate::dto::{JsonBytes, Nullable, SessionDto, SessionWithUser, StatusResponse, Text};
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::Tag;
use crate::session::{Principal, ResolveOptions};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

pub struct SessionApi;

#[derive(ApiResponse)]
enum GetSessionResponse {
    /// The session and its user, or `null` when there is no valid session.
    #[oai(status = 200)]
    Ok(
        JsonBytes<Nullable<SessionWithUser>>,
        #[oai(header = "Cache-Control")] String,
        /// With a session (and the jwt plugin on): a fresh JWT for the user.
        #[oai(header = "set-auth-jwt")]
        Option<String>,
        /// `set-auth-jwt` when one is sent, so browser scripts on other origins may read it.
        #[oai(header = "access-control-expose-headers")]
        Option<String>,
    ),
}

#[derive(Debug, Object)]
struct RevokeSessionBody {
    /// The token of one of the caller's sessions (as `list-sessions` shows it).
    token: Text,
}

#[OpenApi(tag = "Tag::Sessions")]
impl SessionApi {
    /// Get the current session
    ///
    /// Answers `{session, user}` or `null`. A session whose last update is older than the update
    /// age is extended (and its cookie re-set); an expired one is deleted and its cookies
    /// cleared. `disableCookieCache` bypasses the cookie cache; `disableRefresh` never extends.
    #[oai(path = "/get-session", method = "get", operation_id = "getSession")]
    async fn get_session(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        #[oai(name = "disableCookieCache")] disable_cookie_cache: Query<Option<bool>>,
        #[oai(name = "disableRefresh")] disable_refresh: Query<Option<bool>>,
    ) -> ApiResult<GetSessionResponse> {
        let opts = ResolveOptions {
            disable_cookie_cache: disable_cookie_cache.0.unwrap_or(false),
            disable_refresh: disable_refresh.0.unwrap_or(false),
        };
        let state: &AppState = state.0;
        let jwt_of = |user| async move {
            // Best effort: a session is answered even when no token can be made.
            if state.jwt.enabled() && state.config.jwt.set_auth_jwt_header {
                state
                    .jwt
                    .user_jwt(&state.actors, user, state.clock.now())
                    .await
                    .ok()
            } else {
                None
            }
        };
        let (body, jwt) = match state
            .config
            .session
            .cookie_cache
            .enabled
            .then(|| state.sessions.cookie_hit(req))
            .flatten()
            .filter(|_| !opts.disable_cookie_cache)
        {
            // The cookie cache's cookie, verified before: its answer as written then.
            Some(hit) => (hit.answer.clone(), jwt_of(&hit.authed.user).await),
            None => match state.sessions.resolve_session(req, cookies, opts).await? {
                Some(a) => (SessionWithUser::answer(&a), jwt_of(&a.user).await),
                None => (JsonBytes::new(&Nullable(None)), None),
            },
        };
        Ok(GetSessionResponse::Ok(
            body,
            "no-store".into(),
            jwt.clone(),
            jwt.map(|_| "set-auth-jwt".into()),
        ))
    }

    /// List the caller's sessions
    ///
    /// Every unexpired session of the signed-in user, oldest first.
    #[oai(path = "/list-sessions", method = "get", operation_id = "listSessions")]
    async fn list_sessions(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<SessionDto>>> {
        let now = state.clock.now();
        let sessions = state.reader.list_sessions(&auth.user.id).await?;
        Ok(Json(
            sessions
                .iter()
                .filter(|s| s.expires_at > now)
                .map(SessionDto::from)
                .collect(),
        ))
    }

    /// Revoke one of the caller's sessions
    ///
    /// A token that is not one of the caller's sessions answers 400 `SESSION_NOT_FOUND`.
    /// Revoking the current session also clears its cookies.
    #[oai(
        path = "/revoke-session",
        method = "post",
        operation_id = "revokeSession"
    )]
    async fn revoke_session(
        &self,
        state: Data<&AppState>,
        cookies: &PendingCookies,
        auth: Principal,
        body: Json<RevokeSessionBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let user = &auth.user.id;
        // The audit event names the session by its id (the actor fills it), never its token.
        let ev = auth
            .event(action::SESSION_REVOKED)
            .detail("scope", "one")
            .fill(actors::Fill::TargetSession);
        let revoked = state
            .actors
            .user(user.clone())
            .with(state.audit.noted(ev))
            .revoke_session(&body.0.token.0)
            .await?;
        if !revoked {
            return Err(Code::SessionNotFound.into());
        }
        state.sessions.note_revocation(user);
        if body.0.token.0 == auth.session.token {
            cookies.push(state.cookies.clear_all());
        }
        Ok(Json(StatusResponse { status: true }))
    }

    /// Revoke all of the caller's sessions
    ///
    /// Including the current one, whose cookies are cleared.
    #[oai(
        path = "/revoke-sessions",
        method = "post",
        operation_id = "revokeSessions"
    )]
    async fn revoke_sessions(
        &self,
        state: Data<&AppState>,
        cookies: &PendingCookies,
        auth: Principal,
    ) -> ApiResult<Json<StatusResponse>> {
        let user = &auth.user.id;
        let ev = auth.event(action::SESSION_REVOKED).detail("scope", "all");
        state
            .actors
            .user(user.clone())
            .with(state.audit.noted(ev))
            .revoke_sessions(None)
            .await?;
        state.sessions.note_revocation(user);
        cookies.push(state.cookies.clear_all());
        Ok(Json(StatusResponse { status: true }))
    }

    /// Revoke the caller's other sessions
    ///
    /// Every session of the signed-in user but the current one.
    #[oai(
        path = "/revoke-other-sessions",
        method = "post",
        operation_id = "revokeOtherSessions"
    )]
    async fn revoke_other_sessions(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<StatusResponse>> {
        let user = &auth.user.id;
        let ev = auth
            .event(action::SESSION_REVOKED)
            .detail("scope", "others");
        state
            .actors
            .user(user.clone())
            .with(state.audit.noted(ev))
            .revoke_sessions(Some(&auth.session.token))
            .await?;
        state.sessions.note_revocation(user);
        Ok(Json(StatusResponse { status: true }))
    }
}
