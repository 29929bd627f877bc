//! Passwords: request a reset (forget-password and its current name), follow and use the reset
//! link, change the password, set one (server only). Tokens are issued and consumed by the
//! user's actor; only the newest reset link works.
use super::*;
use crate::audit::{action, Event, Origin};
use crate::dto::{StatusResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::{MailJob, MailKind};
use crate::plugins::{email_field, text, Tag};
use crate::session::{Authed, Principal, ResolveOptions};
use crate::AppState;
use actors::{PasswordChange, RESET_PASSWORD_PREFIX};
use chrono::Duration;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

/// Password operations (tag Account).
pub struct PasswordApi;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ForgetPasswordBody {
    email: Text,
    /// Where the reset link finally leads (with `?token=`); trusted origin or relative path.
    #[oai(validator(max_length = 2048))]
    redirect_to: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ResetPasswordBody {
    new_password: Text,
    token: Option<Text>,
}

/// `reset-password`'s answer: 1.7's `{status}`, and whether the account's sessions ended (a
/// Gatehouse addition, so a page can say what happened).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ResetPasswordResponse {
    status: bool,
    /// Every session of the account was signed out (`account.revoke_sessions_on_password_reset`,
    /// on by default; always for an address not verified before the reset).
    sessions_revoked: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ChangePasswordBody {
    new_password: Text,
    current_password: Text,
    revoke_other_sessions: Option<bool>,
}

#[derive(Debug, Object)]
struct ChangePasswordResponse {
    /// The new session's token when other sessions were revoked, else `null`.
    token: Option<String>,
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SetPasswordBody {
    new_password: Text,
    /// The user whose password to set (or the user of the session cookie sent along).
    user_id: Option<Text>,
}

#[OpenApi(tag = "Tag::Account")]
impl PasswordApi {
    /// Request a password reset
    ///
    /// Mails a reset link (valid one hour) if the address belongs to a user. Known and unknown
    /// addresses get the same answer after the same work.
    #[oai(
        path = "/forget-password",
        method = "post",
        operation_id = "forgetPassword"
    )]
    async fn forget_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<ForgetPasswordBody>,
    ) -> ApiResult<Json<ResetRequested>> {
        request_reset(&state, req, body.0).await
    }

    /// Request a password reset (current clients' name)
    ///
    /// The same as `forget-password`.
    #[oai(
        path = "/request-password-reset",
        method = "post",
        operation_id = "requestPasswordReset"
    )]
    async fn request_password_reset(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<ForgetPasswordBody>,
    ) -> ApiResult<Json<ResetRequested>> {
        request_reset(&state, req, body.0).await
    }

    /// Follow a password-reset link
    ///
    /// Redirects to `callbackURL?token=…` when the token is valid, else to
    /// `callbackURL?error=INVALID_TOKEN`.
    #[oai(
        path = "/reset-password/:token",
        method = "get",
        operation_id = "resetPasswordCallback"
    )]
    async fn reset_password_callback(
        &self,
        state: Data<&AppState>,
        token: Path<String>,
        #[oai(name = "callbackURL")] callback_url: Query<String>,
    ) -> ApiResult<RedirectOr<StatusResponse>> {
        let cb = state
            .origins
            .redirect_target(Some(&callback_url.0), Code::InvalidCallbackurl)?
            .unwrap_or_else(|| "/".to_owned());
        let valid = state
            .reader
            .get_verification(&format!("{RESET_PASSWORD_PREFIX}{}", token.0))
            .await?
            .is_some_and(|v| v.expires_at > state.clock.now());
        let target = if valid {
            state.links.with_query(&cb, "token", &token.0)
        } else {
            state.links.with_query(&cb, "error", "INVALID_TOKEN")
        };
        Ok(RedirectOr::Redirect(target))
    }

    /// Reset the password
    ///
    /// With the token from the reset link (body or query): sets the new password, creating the
    /// password credential when the user had none, and (by default) signs the account out
    /// everywhere. The token works exactly once.
    #[oai(
        path = "/reset-password",
        method = "post",
        operation_id = "resetPassword"
    )]
    async fn reset_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        #[oai(name = "token")] query_token: Query<Option<String>>,
        body: Json<ResetPasswordBody>,
    ) -> ApiResult<Json<ResetPasswordResponse>> {
        let token = text(&body.0.token)
            .map(str::to_owned)
            .or(query_token.0)
            .ok_or(Code::InvalidToken)?;
        state
            .passwords
            .check_password_length(&body.0.new_password.0)?;
        // An unknown token costs no hashing; the user's actor consumes it (once).
        let owner = state
            .reader
            .get_verification(&format!("{RESET_PASSWORD_PREFIX}{token}"))
            .await?
            .filter(|v| v.expires_at > state.clock.now())
            .map(|v| storage::UserId(v.value))
            .ok_or(Code::InvalidToken)?;
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let ev = Event::new(action::PASSWORD_RESET, &Origin::of(req))
            .own(&owner)
            .fill(actors::Fill::SessionsRevoked);
        let outcome = state
            .actors
            .user(owner.clone())
            .with(state.audit.noted(ev))
            .reset_password(
                &token,
                &hash,
                state.config.account.revoke_sessions_on_password_reset,
            )
            .await?;
        if outcome.sessions_revoked {
            state.sessions.note_revocation(&owner);
        }
        tracing::info!(user = %owner, "password reset");
        Ok(Json(ResetPasswordResponse {
            status: true,
            sessions_revoked: outcome.sessions_revoked,
        }))
    }

    /// Check the caller's password
    ///
    /// `{status: true}` when `password` is the signed-in user's password; 400
    /// `INVALID_PASSWORD` otherwise (also for a user without one, after the same work).
    #[oai(
        path = "/verify-password",
        method = "post",
        operation_id = "verifyPassword"
    )]
    async fn verify_password(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<VerifyPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let password = body.0.password.0;
        let ok = match state.passwords.credential_hash(&auth.user).await? {
            Some(hash) => state.hasher.verify(password, hash).await,
            None => state.hasher.verify_dummy(password).await,
        }
        .map_err(ApiError::internal)?;
        if !ok {
            return Err(Code::InvalidPassword.into());
        }
        Ok(Json(StatusResponse { status: true }))
    }

    /// Change the password
    ///
    /// Needs the current password. With `revokeOtherSessions`, every session is deleted and a
    /// new one issued (its token is answered and set as the cookie).
    #[oai(
        path = "/change-password",
        method = "post",
        operation_id = "changePassword"
    )]
    async fn change_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        auth: Principal,
        body: Json<ChangePasswordBody>,
    ) -> ApiResult<Json<ChangePasswordResponse>> {
        let ev = auth.event(action::PASSWORD_CHANGED);
        let Principal { user, .. } = auth;
        state
            .passwords
            .check_password_length(&body.0.new_password.0)?;
        let current = state
            .passwords
            .credential_hash(&user)
            .await?
            .ok_or(Code::CredentialAccountNotFound)?;
        let ok = state
            .hasher
            .verify(body.0.current_password.0, current.clone())
            .await
            .map_err(ApiError::internal)?;
        if !ok {
            state.audit.record_refusal(ev, Code::InvalidPassword).await;
            return Err(Code::InvalidPassword.into());
        }
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let revoke = body.0.revoke_other_sessions.unwrap_or(false);
        let new_session = revoke.then(|| actors::NewSession {
            ip_address: crate::http::client_ip(req),
            user_agent: crate::http::user_agent(req),
            dont_remember: false,
            ..Default::default()
        });
        // One message: the password (only if it is still the one just verified), and with
        // revokeOtherSessions every session revoked and a new one made.
        let ev = ev.detail("sessionsRevoked", revoke.to_string());
        let fresh = state
            .actors
            .user(user.id.clone())
            .with(state.audit.noted(ev.clone()))
            .change_password(&current, &hash, new_session)
            .await
            .map_err(ApiError::from);
        let fresh = state.audit.audited(ev, fresh).await?;
        let token = match fresh {
            Some(session) => {
                state.sessions.note_revocation(&user.id);
                let authed = Authed {
                    session,
                    user: user.clone(),
                };
                cookies.push(state.sessions.session_cookies(&authed, false));
                Some(authed.session.token)
            }
            None => None,
        };
        Ok(Json(ChangePasswordResponse {
            token,
            user: UserDto::from(&user),
        }))
    }

    /// Set a password (server only)
    ///
    /// For a user without one (e.g. signed up with a social provider). Needs the server
    /// credential `Authorization: Bearer <server_key>`; without a configured key the route does
    /// not exist (404), with a wrong one it answers 401.
    #[oai(path = "/set-password", method = "post", operation_id = "setPassword")]
    async fn set_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        match state.sessions.server_call(req) {
            None => return Err(Code::NotFound.into()),
            Some(false) => return Err(Code::Unauthorized.into()),
            Some(true) => {}
        }
        let user = match text(&body.0.user_id) {
            Some(id) => {
                state
                    .reader
                    .get_user(&storage::UserId(id.to_owned()))
                    .await?
            }
            None => state
                .sessions
                .resolve_session(req, cookies, ResolveOptions::default())
                .await?
                .map(|a| a.user),
        }
        .ok_or(Code::UserNotFound)?;
        state
            .passwords
            .check_password_length(&body.0.new_password.0)?;
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let ev = Event::new(action::PASSWORD_SET, &Origin::of(req)).user(&user.id);
        let set = state
            .actors
            .user(user.id.clone())
            .with(state.audit.noted(ev.clone()))
            .set_password(&hash, PasswordChange::OnlyIfNone)
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, set).await?;
        Ok(Json(StatusResponse { status: true }))
    }
}

#[derive(Debug, Object)]
struct VerifyPasswordBody {
    password: Text,
}

/// The answer to a reset request, the same whether or not the address has an account.
#[derive(Debug, Object)]
struct ResetRequested {
    status: bool,
    message: String,
}

async fn request_reset(
    state: &AppState,
    req: &Request,
    body: ForgetPasswordBody,
) -> ApiResult<Json<ResetRequested>> {
    if !state.mail.enabled() {
        return Err(Code::ResetPasswordDisabled.into());
    }
    let email = email_field(&body.email.0, "email")?;
    let redirect = state
        .origins
        .redirect_target(text(&body.redirect_to), Code::InvalidRedirecturl)?;
    // Counted for every address asked about, known or not: the limit tells nothing.
    state
        .limiter
        .limit_mail(req, &email, state.clock.now(), &state.audit)
        .await?;
    // After the answer, the same for every address (see `Mail::after_answer`).
    let redirect = redirect.unwrap_or_else(|| "/".to_owned());
    let state = state.clone();
    state
        .mail
        .clone()
        .after_answer("password reset", async move {
            let Some(user) = state.reader.get_user_by_email(&email).await? else {
                return Ok(());
            };
            let lifetime =
                Duration::seconds(state.config.limits.reset_password_token_expires_in as i64);
            let token = storage::random_string(24);
            let link = format!(
                "{}?callbackURL={}",
                state.links.api_url(&format!("/reset-password/{token}")),
                percent_encoding::utf8_percent_encode(&redirect, crate::http::URI_COMPONENT)
            );
            let job = MailJob::new(
                MailKind::ResetPassword,
                &user.email,
                link,
                &[("name", &user.name)],
            );
            // Through the user's actor: the new token (with its mail) replaces every older one.
            state
                .actors
                .user(user.id.clone())
                .with(
                    state
                        .mail
                        .mailing(actors::Ctx::default(), std::slice::from_ref(&job)),
                )
                .issue_reset_token(&token, lifetime)
                .await?;
            state.mail.deliver(&[job]).await;
            Ok(())
        });
    Ok(Json(ResetRequested {
        status: true,
        message: "If this email exists in our system, check your email for the reset link".into(),
    }))
}
