//! The email-OTP plugin's routes (better-auth's `emailOTP`): a six-digit code by mail to sign
//! in (signing up a new address unless `email_otp.disable_sign_up`), to verify the address,
//! or to reset the password. The codes are in `service.rs`; a sign-in by code proves the
//! mailbox (`core/mailbox.rs`).
mod change;
mod service;

pub use service::{EmailOtp, Inner as EmailOtpInner, Purpose};

/// The email-OTP plugin's operations.
pub type Apis = (EmailOtpApi, change::ChangeEmailOtpApi);

pub fn apis() -> Apis {
    (EmailOtpApi, change::ChangeEmailOtpApi)
}

use crate::audit::{action, Event, Origin};
use crate::dto::{Text, UserDto};
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::core::mailbox::{self, MailSignedIn, NewUser};
use crate::plugins::{text, Tag};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, Union};
use service::Use;

pub struct EmailOtpApi;

#[derive(Debug, Object)]
#[oai(rename = "SendVerificationOtpBody")]
struct SendBody {
    email: Text,
    #[oai(rename = "type")]
    purpose: Purpose,
}

#[derive(Debug, Object)]
#[oai(rename = "CheckVerificationOtpBody")]
struct CheckBody {
    email: Text,
    #[oai(rename = "type")]
    purpose: Purpose,
    #[oai(validator(max_length = 64))]
    otp: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailOtpSuccess")]
pub(super) struct Success {
    pub(super) success: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "SignInEmailOtpBody", rename_all = "camelCase")]
struct SignInBody {
    email: Text,
    #[oai(validator(max_length = 64))]
    otp: Text,
    /// The name of a user this sign-in signs up (an address without an account).
    #[oai(validator(max_length = 256))]
    name: Option<Text>,
    #[oai(validator(max_length = 2048))]
    image: Option<Text>,
}

#[derive(Debug, Union)]
#[oai(one_of, rename = "SignInEmailOtpResult")]
enum SignInResult {
    SignedIn(Box<SignedIn>),
    TwoFactor(TwoFactorRedirect),
}

#[derive(Debug, Object)]
#[oai(rename = "EmailOtpSignedIn")]
struct SignedIn {
    token: String,
    user: UserDto,
}

/// The sign-in waits for its second factor (the `two_factor` cookie is set).
#[derive(Debug, Object)]
#[oai(rename = "EmailOtpTwoFactorRedirect", rename_all = "camelCase")]
struct TwoFactorRedirect {
    two_factor_redirect: bool,
    two_factor_methods: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "VerifyEmailOtpBody")]
struct VerifyEmailBody {
    email: Text,
    #[oai(validator(max_length = 64))]
    otp: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "VerifyEmailOtpResponse")]
struct VerifyEmailResponse {
    status: bool,
    /// The new session's token with `email_verification.auto_sign_in_after_verification`.
    token: Option<String>,
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailOtpResetRequestBody")]
struct ResetRequestBody {
    email: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailOtpResetPasswordBody")]
struct ResetPasswordBody {
    email: Text,
    #[oai(validator(max_length = 64))]
    otp: Text,
    password: Text,
}

/// The address of a request body: `INVALID_EMAIL` unless it is one.
pub(super) fn address(raw: &Text) -> ApiResult<String> {
    crate::plugins::normalize_email(&raw.0).ok_or_else(|| Code::InvalidEmail.into())
}

/// Answers at once and mails a code after the answer, the same for every address (see
/// `service.rs`); counted against the recipient's mail limit whether it exists or not.
async fn ask_code(
    state: &AppState,
    req: &Request,
    email: &str,
    purpose: Purpose,
) -> ApiResult<Json<Success>> {
    if !state.mail.enabled() {
        return Err(Code::MailNotConfigured.into());
    }
    if purpose == Purpose::ChangeEmail {
        // Asked for with `/email-otp/request-email-change` only (it names the new address).
        return Err(Code::InvalidOtpType.into());
    }
    state
        .limiter
        .limit_mail(req, email, state.clock.now(), &state.audit)
        .await?;
    let sign_up = !state.email_otp.config().disable_sign_up;
    state
        .email_otp
        .send_later(purpose, email.to_owned(), move |user| async move {
            match (purpose, user) {
                (_, Some(u)) => Some(u.name),
                (Purpose::SignIn, None) if sign_up => Some(String::new()),
                _ => None,
            }
        });
    Ok(Json(Success { success: true }))
}

#[OpenApi(tag = "Tag::EmailOtp")]
impl EmailOtpApi {
    /// Mail a code
    ///
    /// Mails a six-digit code for `type`: `sign-in` (to any address unless sign-up by code is
    /// off), `email-verification` and `forget-password` (to an address with an account). The
    /// answer is the same, and as fast, for every address; the code works
    /// `email_otp.expires_in` seconds, `email_otp.allowed_attempts` tries, once.
    #[oai(
        path = "/email-otp/send-verification-otp",
        method = "post",
        operation_id = "sendVerificationOtp"
    )]
    async fn send_verification_otp(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<SendBody>,
    ) -> ApiResult<Json<Success>> {
        let email = address(&body.0.email)?;
        ask_code(&state, req, &email, body.0.purpose).await
    }

    /// Check a code
    ///
    /// Whether the code is the current one for the address and purpose, without using it (a
    /// check counts as a try). A right code of an address without an account answers
    /// `USER_NOT_FOUND`.
    #[oai(
        path = "/email-otp/check-verification-otp",
        method = "post",
        operation_id = "checkVerificationOtp"
    )]
    async fn check_verification_otp(
        &self,
        state: Data<&AppState>,
        body: Json<CheckBody>,
    ) -> ApiResult<Json<Success>> {
        let email = address(&body.0.email)?;
        state
            .email_otp
            .verify(body.0.purpose, &email, &body.0.otp.0, Use::Check)
            .await?;
        if state.reader.get_user_by_email(&email).await?.is_none() {
            return Err(Code::UserNotFound.into());
        }
        Ok(Json(Success { success: true }))
    }

    /// Sign in with a code
    ///
    /// Uses a `sign-in` code: signs the user in (an unknown address is signed up, verified,
    /// with `name` and `image`, unless `email_otp.disable_sign_up`). On an unverified account
    /// the code is the first proof of the mailbox: the address becomes verified, the password
    /// set before is removed and every other session ends. A user with two-factor sign-in on
    /// gets `twoFactorRedirect` instead of a session.
    #[oai(
        path = "/sign-in/email-otp",
        method = "post",
        operation_id = "signInEmailOtp"
    )]
    async fn sign_in_email_otp(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SignInBody>,
    ) -> ApiResult<Json<SignInResult>> {
        let body = body.0;
        let email = address(&body.email)?;
        state
            .email_otp
            .verify(Purpose::SignIn, &email, &body.otp.0, Use::Take)
            .await?;
        let new = NewUser {
            name: text(&body.name).unwrap_or(""),
            image: text(&body.image),
            allowed: !state.email_otp.config().disable_sign_up,
        };
        let user = mailbox::user_for(&state, req, &email, new, "email-otp").await?;
        Ok(Json(
            match mailbox::sign_in(&state, req, cookies, user, "email-otp").await? {
                MailSignedIn::Session { authed, .. } => {
                    SignInResult::SignedIn(Box::new(SignedIn {
                        token: authed.session.token.clone(),
                        user: UserDto::from(&authed.user),
                    }))
                }
                MailSignedIn::SecondFactor(methods) => SignInResult::TwoFactor(TwoFactorRedirect {
                    two_factor_redirect: true,
                    two_factor_methods: methods,
                }),
            },
        ))
    }

    /// Verify the address with a code
    ///
    /// Uses an `email-verification` code: the address becomes verified (signing nobody out);
    /// with `email_verification.auto_sign_in_after_verification` it also signs in.
    #[oai(
        path = "/email-otp/verify-email",
        method = "post",
        operation_id = "verifyEmailOtp"
    )]
    async fn verify_email_otp(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<VerifyEmailBody>,
    ) -> ApiResult<Json<VerifyEmailResponse>> {
        let email = address(&body.0.email)?;
        state
            .email_otp
            .verify(Purpose::EmailVerification, &email, &body.0.otp.0, Use::Take)
            .await?;
        let user = state
            .reader
            .get_user_by_email(&email)
            .await?
            .ok_or(Code::UserNotFound)?;
        // Used in the account's own session, or elsewhere (a password set before is then
        // unproven: see `actors::UNPROVEN_PASSWORD_PREFIX`).
        let own = state
            .sessions
            .resolve_session(req, cookies, crate::session::ResolveOptions::default())
            .await?
            .is_some_and(|me| me.user.id == user.id);
        let ev = Event::new(action::EMAIL_VERIFIED, &Origin::of(req))
            .user(&user.id)
            .target(email)
            .detail("method", "email-otp")
            .fill(actors::Fill::SessionsRevoked);
        let (user, _) = state
            .actors
            .user(user.id.clone())
            .with(state.audit.noted(ev))
            .verify_email(!own, false)
            .await?;
        let token = if state
            .config
            .email_verification
            .auto_sign_in_after_verification
        {
            let authed = state
                .sessions
                .start_session(req, cookies, user.clone(), true, actors::Ctx::default())
                .await?;
            Some(authed.session.token)
        } else {
            None
        };
        Ok(Json(VerifyEmailResponse {
            status: true,
            token,
            user: UserDto::from(&user),
        }))
    }

    /// Mail a password-reset code
    ///
    /// Mails a `forget-password` code to an address with an account; the same answer, as
    /// fast, for every address.
    #[oai(
        path = "/email-otp/request-password-reset",
        method = "post",
        operation_id = "requestPasswordResetEmailOtp"
    )]
    async fn request_password_reset(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<ResetRequestBody>,
    ) -> ApiResult<Json<Success>> {
        let email = address(&body.0.email)?;
        ask_code(&state, req, &email, Purpose::ForgetPassword).await
    }

    /// Mail a password-reset code (deprecated name)
    ///
    /// The older path of `/email-otp/request-password-reset`.
    #[oai(
        path = "/forget-password/email-otp",
        method = "post",
        operation_id = "forgetPasswordEmailOtp",
        deprecated
    )]
    async fn forget_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<ResetRequestBody>,
    ) -> ApiResult<Json<Success>> {
        let email = address(&body.0.email)?;
        ask_code(&state, req, &email, Purpose::ForgetPassword).await
    }

    /// Reset the password with a code
    ///
    /// Uses a `forget-password` code and sets the new password, as a reset by link does: the
    /// address becomes verified, and the account is signed out everywhere (always when it
    /// was unverified; else per `account.revoke_sessions_on_password_reset`).
    #[oai(
        path = "/email-otp/reset-password",
        method = "post",
        operation_id = "resetPasswordEmailOtp"
    )]
    async fn reset_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<ResetPasswordBody>,
    ) -> ApiResult<Json<Success>> {
        let body = body.0;
        let email = address(&body.email)?;
        state.passwords.check_password_length(&body.password.0)?;
        state
            .email_otp
            .verify(Purpose::ForgetPassword, &email, &body.otp.0, Use::Take)
            .await?;
        let user = state
            .reader
            .get_user_by_email(&email)
            .await?
            .ok_or(Code::UserNotFound)?;
        let hash = state
            .hasher
            .hash(body.password.0)
            .await
            .map_err(crate::error::ApiError::internal)?;
        // The code was the proof: the reset goes the way of a link's, by a token that lives
        // for this call only.
        let token = storage::random_string(24);
        let handle = state.actors.user(user.id.clone());
        handle
            .issue_reset_token(&token, chrono::Duration::seconds(60))
            .await?;
        let ev = Event::new(action::PASSWORD_RESET, &Origin::of(req))
            .own(&user.id)
            .detail("method", "email-otp")
            .fill(actors::Fill::SessionsRevoked);
        let outcome = handle
            .with(state.audit.noted(ev))
            .reset_password(
                &token,
                &hash,
                state.config.account.revoke_sessions_on_password_reset,
            )
            .await?;
        if outcome.sessions_revoked {
            state.sessions.note_revocation(&user.id);
        }
        Ok(Json(Success { success: true }))
    }
}
