//! Deleting the account: with the password or a fresh session; by a mailed, single-use link when
//! a mail sender is configured (the link's token is consumed and the user deleted in one turn of
//! the user's actor).
use super::*;
use crate::audit::{action, Event, Origin};
use crate::dto::Text;
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::{MailJob, MailKind};
use crate::plugins::{text, Tag};
use crate::session::{Principal, ResolveOptions};
use crate::AppState;
use chrono::Duration;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::User;

/// Deletion operations (tag Account).
pub struct DeletionApi;

#[derive(Debug, Object)]
struct DeleteUserBody {
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
    password: Option<Text>,
    token: Option<Text>,
}

#[derive(Debug, Object)]
struct DeleteUserResponse {
    success: bool,
    message: String,
}

#[OpenApi(tag = "Tag::Account")]
impl DeletionApi {
    /// Delete the account
    ///
    /// With `password`, it must match; without, the session must be fresh. With a mail sender
    /// configured a confirmation link is mailed ('Verification email sent'); otherwise the user
    /// is deleted at once with sessions, accounts and memberships, and the cookies cleared.
    #[oai(path = "/delete-user", method = "post", operation_id = "deleteUser")]
    async fn delete_user(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        auth: Principal,
        body: Json<DeleteUserBody>,
    ) -> ApiResult<Json<DeleteUserResponse>> {
        if !state.config.account.delete_user_enabled {
            return Err(Code::DeleteUserDisabled.into());
        }
        let ev = auth.event(action::USER_DELETED);
        let Principal { user, session, .. } = auth;
        let cb = state
            .origins
            .redirect_target(text(&body.0.callback_url), Code::InvalidCallbackurl)?;
        let cb = cb.as_deref();
        if let Some(pw) = text(&body.0.password) {
            match state.passwords.check_password(&user, pw).await? {
                None => return Err(Code::CredentialAccountNotFound.into()),
                Some(false) => return Err(Code::InvalidPassword.into()),
                Some(true) => {}
            }
        } else {
            let fresh = state.config.session.fresh_age;
            if fresh > 0 && session.created_at + Duration::seconds(fresh as i64) < state.clock.now()
            {
                return Err(Code::SessionExpired.into());
            }
        }
        if let Some(token) = text(&body.0.token) {
            // Only the caller's own token (the actor checks it points at them).
            let ev = ev.detail("confirmed", "token").target(user.email.clone());
            state
                .actors
                .user(user.id.clone())
                .with(state.audit.noted(ev))
                .delete_with_token(&format!("delete-account-{token}"))
                .await?;
            return deleted(&state, cookies, &user).await;
        }
        if state.mail.enabled() {
            state
                .limiter
                .limit_mail(req, &user.email, state.clock.now(), &state.audit)
                .await?;
            let token = storage::random_lower_alnum(32);
            // As 1.7: without a callbackURL the link leads back to the app's root.
            let link = format!(
                "{}?token={token}&callbackURL={}",
                state.links.api_url("/delete-user/callback"),
                percent_encoding::utf8_percent_encode(
                    cb.unwrap_or("/"),
                    crate::http::URI_COMPONENT
                )
            );
            let job = MailJob::new(
                MailKind::DeleteAccount,
                &user.email,
                link,
                &[("name", &user.name)],
            );
            state
                .account_mail
                .create_token(
                    &format!("delete-account-{token}"),
                    &user,
                    state.config.limits.delete_account_token_expires_in,
                    state
                        .mail
                        .mailing(actors::Ctx::default(), std::slice::from_ref(&job)),
                )
                .await?;
            state.mail.deliver(&[job]).await;
            return Ok(Json(DeleteUserResponse {
                success: true,
                message: "Verification email sent".into(),
            }));
        }
        delete_now(&state, cookies, &user, ev).await
    }

    /// Confirm the account deletion
    ///
    /// Follows the mailed link **in the browser of the account it was mailed to**: only with
    /// that user's own session does it delete the user (once; the token is single use), clear
    /// the cookies, and redirect to `callbackURL` or answer `{success, message}`. Without a
    /// session (a mail scanner prefetching the link, someone it was forwarded to) it answers
    /// 404 `FAILED_TO_GET_USER_INFO`; a token that is not this user's, used or expired, 404
    /// `INVALID_TOKEN` — and nothing is deleted or consumed.
    #[oai(
        path = "/delete-user/callback",
        method = "get",
        operation_id = "deleteUserCallback"
    )]
    async fn delete_user_callback(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        token: Query<String>,
        #[oai(name = "callbackURL")] callback_url: Query<Option<String>>,
    ) -> ApiResult<RedirectOr<DeleteUserResponse>> {
        if !state.config.account.delete_user_enabled {
            return Err(Code::DeleteUserDisabled.into());
        }
        let cb = state
            .origins
            .redirect_target(callback_url.0.as_deref(), Code::InvalidCallbackurl)?;
        let Some(authed) = state
            .sessions
            .resolve_session(req, cookies, ResolveOptions::default())
            .await?
        else {
            return Err(Code::DeletionNeedsSession.into());
        };
        let user = authed.user;
        let identifier = format!("delete-account-{}", token.0);
        let now = state.clock.now();
        let mine = state
            .reader
            .get_verification(&identifier)
            .await?
            .is_some_and(|v| v.expires_at > now && v.value == user.id.0);
        if !mine {
            return Err(Code::DeletionTokenInvalid.into());
        }
        let ev = Event::new(action::USER_DELETED, &Origin::of(req))
            .own(&user.id)
            .detail("confirmed", "link")
            .target(user.email.clone());
        // Consumed and checked again in the user's actor: of concurrent uses one deletes.
        match state
            .actors
            .user(user.id.clone())
            .with(state.audit.noted(ev))
            .delete_with_token(&identifier)
            .await
        {
            Ok(()) => {}
            Err(actors::ActorError::Refused(actors::Rule::InvalidToken)) => {
                return Err(Code::DeletionTokenInvalid.into())
            }
            Err(e) => return Err(e.into()),
        }
        let done = deleted(&state, cookies, &user).await?;
        match cb {
            Some(c) => Ok(RedirectOr::Redirect(state.links.absolute(&c))),
            None => Ok(RedirectOr::Ok(done)),
        }
    }
}

async fn delete_now(
    state: &AppState,
    cookies: &PendingCookies,
    user: &User,
    ev: Event,
) -> ApiResult<Json<DeleteUserResponse>> {
    state
        .actors
        .user(user.id.clone())
        .with(state.audit.noted(ev.target(user.email.clone())))
        .delete_user()
        .await?;
    deleted(state, cookies, user).await
}

/// After `user` was deleted: their cached sessions stop counting, the cookies go.
async fn deleted(
    state: &AppState,
    cookies: &PendingCookies,
    user: &User,
) -> ApiResult<Json<DeleteUserResponse>> {
    state.sessions.note_revocation(&user.id);
    cookies.push(state.cookies.clear_all());
    tracing::info!(user = %user.id, "user deleted");
    Ok(Json(DeleteUserResponse {
        success: true,
        message: "User deleted".into(),
    }))
}
