//! Changing the address by a code (better-auth's `emailOTP` with `changeEmail`; off unless
//! `email_otp.change_email`): a signed-in user asks for a code to the new address (with
//! `email_otp.change_email_verify_current`, proving the current one first by its
//! `email-verification` code), then gives it back from a fresh session: the address changes,
//! verified, and the session is replaced by a new one.
use super::service::Use;
use super::{address, Purpose, Success};
use crate::audit::{action, Event, Origin};
use crate::dto::Text;
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::{ActorError, Rule, UserPatch};
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

pub struct ChangeEmailOtpApi;

#[derive(Debug, Object)]
#[oai(rename = "RequestEmailChangeOtpBody", rename_all = "camelCase")]
struct RequestBody {
    new_email: Text,
    /// The current address's `email-verification` code (with
    /// `email_otp.change_email_verify_current`).
    #[oai(validator(max_length = 64))]
    otp: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename = "ChangeEmailOtpBody", rename_all = "camelCase")]
struct ChangeBody {
    new_email: Text,
    #[oai(validator(max_length = 64))]
    otp: Text,
}

/// Where the code of a change of `user` to `new_email` is kept.
fn key(user: &storage::UserId, new_email: &str) -> String {
    format!("{user}:{new_email}")
}

#[OpenApi(tag = "Tag::EmailOtp")]
impl ChangeEmailOtpApi {
    /// Ask for a code to change the address
    ///
    /// Signed in: mails a `change-email` code to `newEmail` (an address in use by another
    /// account gets none, and the answer is the same). With
    /// `email_otp.change_email_verify_current`, `otp` must be the current address's
    /// `email-verification` code (it is used). Off unless `email_otp.change_email`.
    #[oai(
        path = "/email-otp/request-email-change",
        method = "post",
        operation_id = "requestEmailChangeEmailOtp"
    )]
    async fn request_email_change(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: Principal,
        body: Json<RequestBody>,
    ) -> ApiResult<Json<Success>> {
        let cfg = state.email_otp.config();
        if !cfg.change_email {
            return Err(Code::ChangeEmailOtpDisabled.into());
        }
        if !state.mail.enabled() {
            return Err(Code::MailNotConfigured.into());
        }
        let new_email = address(&body.0.new_email)?;
        let user = auth.user.clone();
        if new_email == user.email {
            return Err(Code::EmailIsTheSame.into());
        }
        if cfg.change_email_verify_current {
            let otp = text(&body.0.otp).ok_or(Code::CurrentEmailOtpRequired)?;
            state
                .email_otp
                .verify(Purpose::EmailVerification, &user.email, otp, Use::Take)
                .await?;
        }
        state
            .limiter
            .limit_mail(req, &new_email, state.clock.now(), &state.audit)
            .await?;
        let state = state.clone();
        state
            .mail
            .clone()
            .after_answer("email change code", async move {
                if state.reader.get_user_by_email(&new_email).await?.is_some() {
                    return Ok(());
                }
                state
                    .email_otp
                    .send_to(
                        Purpose::ChangeEmail,
                        &key(&user.id, &new_email),
                        &new_email,
                        &user.name,
                    )
                    .await
            });
        Ok(Json(Success { success: true }))
    }

    /// Change the address with a code
    ///
    /// From a fresh session (`SESSION_NOT_FRESH` after `session.fresh_age`): uses the code
    /// mailed to `newEmail`, makes it the account's address (verified) and replaces the
    /// session with a new one. An address taken meanwhile → 422 `USER_ALREADY_EXISTS`.
    #[oai(
        path = "/email-otp/change-email",
        method = "post",
        operation_id = "changeEmailEmailOtp"
    )]
    async fn change_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        auth: Principal,
        body: Json<ChangeBody>,
    ) -> ApiResult<Json<Success>> {
        if !state.email_otp.config().change_email {
            return Err(Code::ChangeEmailOtpDisabled.into());
        }
        state.sessions.require_fresh(&auth.session)?;
        let new_email = address(&body.0.new_email)?;
        let user = auth.user.clone();
        if new_email == user.email {
            return Err(Code::EmailIsTheSame.into());
        }
        state
            .email_otp
            .verify(
                Purpose::ChangeEmail,
                &key(&user.id, &new_email),
                &body.0.otp.0,
                Use::Take,
            )
            .await?;
        let ev = Event::new(action::EMAIL_CHANGED, &Origin::of(req))
            .own(&user.id)
            .target(new_email.clone())
            .detail("method", "email-otp");
        let changed = state
            .actors
            .user(user.id.clone())
            .with(state.audit.noted(ev))
            .update_user(UserPatch {
                email: Some(new_email),
                email_verified: Some(true),
                ..UserPatch::default()
            })
            .await
            .map_err(|e| match e {
                ActorError::Refused(Rule::UserExists) | ActorError::Conflict(_) => {
                    Code::UserAlreadyExists.into()
                }
                other => crate::error::ApiError::from(other),
            })?;
        let authed = crate::dto::Authed {
            session: auth.session.clone(),
            user: auth.user.clone(),
        };
        state
            .sessions
            .rotate(req, cookies, &authed, changed)
            .await?;
        Ok(Json(Success { success: true }))
    }
}
