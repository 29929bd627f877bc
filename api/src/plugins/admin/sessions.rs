//! The admin plugin's operations on sessions and sign-in: list, revoke, impersonate and stop, turn
//! a user's two-factor sign-in off.
use super::dto::*;
use super::{AdminCaller, AdminSessionApi};
use crate::audit::{action, Event};
use crate::dto::{SessionDto, SessionWithUser, SuccessResponse, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{client_ip, request_cookie, user_agent};
use crate::plugins::Tag;
use crate::session::Authed;
use crate::AppState;
use actors::NewSession;
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::OpenApi;

#[OpenApi(prefix_path = "/admin", tag = "Tag::Admin")]
impl AdminSessionApi {
    /// List a user's sessions
    ///
    /// Every unexpired session of the user (none for an unknown id). Needs `session:list`.
    #[oai(
        path = "/list-user-sessions",
        method = "post",
        operation_id = "adminListUserSessions"
    )]
    async fn list_user_sessions(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SessionsResponse>> {
        let sessions = state
            .actors
            .admin_list_sessions(&who.caller, &user_id(&body.0.user_id))
            .await?;
        Ok(Json(SessionsResponse {
            sessions: sessions.iter().map(SessionDto::from).collect(),
        }))
    }

    /// Revoke one session
    ///
    /// By its token, whoever's it is; an unknown token is no error. Needs `session:revoke`.
    #[oai(
        path = "/revoke-user-session",
        method = "post",
        operation_id = "adminRevokeUserSession"
    )]
    async fn revoke_user_session(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<SessionTokenBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        // Named by its id in the event, never by its token.
        let known = state.reader.get_session(&body.0.session_token.0).await?;
        let ev = who
            .event_about(
                action::ADMIN_SESSIONS_REVOKED,
                known.as_ref().map(|s| &s.user_id),
            )
            .detail("scope", "one")
            .fill(actors::Fill::TargetSession);
        let owner = state
            .actors
            .admin_revoke_session(
                &who.caller,
                &body.0.session_token.0,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let owner = state.audit.audited(ev, owner).await?;
        if let Some(owner) = owner {
            state.sessions.note_revocation(&owner);
        }
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Revoke every session of a user
    ///
    /// Needs `session:revoke`.
    #[oai(
        path = "/revoke-user-sessions",
        method = "post",
        operation_id = "adminRevokeUserSessions"
    )]
    async fn revoke_user_sessions(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        let target = user_id(&body.0.user_id);
        let ev = who
            .event(action::ADMIN_SESSIONS_REVOKED, &target)
            .detail("scope", "all");
        let revoked = state
            .actors
            .admin_revoke_sessions(&who.caller, &target, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, revoked).await?;
        state.sessions.note_revocation(&target);
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Turn off a user's two-factor sign-in
    ///
    /// A Gatehouse extension, for a user who lost their authenticator and backup codes: their
    /// second factor, backup codes and trusted browsers go. Needs `user:update`.
    #[oai(
        path = "/disable-two-factor",
        method = "post",
        operation_id = "adminDisableTwoFactor"
    )]
    async fn disable_two_factor(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        let target = user_id(&body.0.user_id);
        let ev = who.event(action::ADMIN_TWO_FACTOR_DISABLED, &target);
        let done = state
            .actors
            .admin_disable_two_factor(&who.caller, &target, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, done).await?;
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Impersonate a user
    ///
    /// Signs the calling admin in as the user: a session marked `impersonatedBy`, lasting
    /// `admin.impersonation_session_duration` and never extended. The admin's own session is
    /// kept in the `admin_session` cookie for `stop-impersonating`. Impersonating an
    /// administrator needs `user:impersonate-admins`. Needs `user:impersonate`.
    #[oai(
        path = "/impersonate-user",
        method = "post",
        operation_id = "adminImpersonateUser"
    )]
    async fn impersonate_user(
        &self,
        state: Data<&AppState>,
        req: &Request,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SessionWithUser>> {
        let new = NewSession {
            ip_address: client_ip(req),
            user_agent: user_agent(req),
            ..NewSession::default()
        };
        let lifetime = chrono::Duration::seconds(
            state
                .config
                .admin
                .impersonation_session_duration
                .min(i64::MAX as u64) as i64,
        );
        let target = user_id(&body.0.user_id);
        let ev = who
            .event(action::ADMIN_IMPERSONATION_STARTED, &target)
            .fill(actors::Fill::TargetSession);
        let started = state
            .actors
            .admin_impersonate(
                &who.caller,
                &target,
                new,
                lifetime,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let (session, user) = state.audit.audited(ev, started).await?;
        let n = &state.cookies;
        if let Some(admin) = &who.session {
            // As 1.7: the configured session lifetime (the admin's session may end sooner;
            // then the cookie names a session that no longer resolves).
            who.cookies.push(Some(n.set(
                &n.admin_session,
                &state.signer.sign(&admin.session.token),
                Some(state.config.session.expires_in),
            )));
        }
        let authed = Authed { session, user };
        if !state.config.session.cookie_cache.enabled {
            // No cached copy of the admin's session may outlive the switch.
            who.cookies.push(Some(n.set(&n.session_data, "", Some(0))));
        }
        who.cookies
            .push(state.sessions.session_cookies(&authed, true));
        tracing::info!(admin = ?who.caller_id(), user = %authed.user.id, "impersonation started");
        Ok(Json(SessionWithUser {
            session: SessionDto::from(&authed.session),
            user: UserDto::from(&authed.user),
        }))
    }

    /// Stop impersonating
    ///
    /// Ends the impersonation session and restores the admin's own session from the
    /// `admin_session` cookie; answers it. 400 `NOT_IMPERSONATING` from a session that is not
    /// an impersonation.
    #[oai(
        path = "/stop-impersonating",
        method = "post",
        operation_id = "adminStopImpersonating"
    )]
    async fn stop_impersonating(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: crate::session::Principal,
    ) -> ApiResult<Json<SessionWithUser>> {
        let Some(admin_id) = auth.session.impersonated_by.clone() else {
            return Err(Code::NotImpersonating.into());
        };
        let admin_token = request_cookie(req, &state.cookies.admin_session)
            .and_then(|raw| state.signer.unsign(&raw).map(str::to_owned))
            .ok_or(Code::AdminSessionNotFound)?;
        let admin_session = state
            .reader
            .get_session(&admin_token)
            .await?
            .filter(|s| s.user_id == admin_id && s.expires_at > state.clock.now())
            .ok_or(Code::AdminSessionNotFound)?;
        let admin = state
            .reader
            .get_user(&admin_id)
            .await?
            .ok_or(Code::AdminSessionNotFound)?;
        let ev = Event::new(action::ADMIN_IMPERSONATION_STOPPED, &auth.origin)
            .actor(&admin_id)
            .user(&auth.user.id)
            .target(auth.session.id.0.clone());
        state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev))
            .revoke_known_session(&auth.session)
            .await?;
        state.sessions.note_revocation(&auth.user.id);
        let authed = Authed {
            session: admin_session,
            user: admin,
        };
        let n = &state.cookies;
        auth.cookies.push([
            n.set(&n.dont_remember, "", Some(0)),
            n.set(&n.admin_session, "", Some(0)),
        ]);
        auth.cookies
            .push(state.sessions.session_cookies(&authed, false));
        Ok(Json(SessionWithUser {
            session: SessionDto::from(&authed.session),
            user: UserDto::from(&authed.user),
        }))
    }
}
