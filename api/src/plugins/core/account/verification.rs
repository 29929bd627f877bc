//! Email verification: mail a link, follow it. Following a link verifies the address (and, with
//! `email_verification.revoke_sessions_on_foreign_link`, opened without the account's session,
//! revokes the sessions made before it); a link that confirms an email change is applied once,
//! by the signed-in owner.
use super::*;
use crate::audit::{action, Event, Origin};
use crate::dto::{StatusResponse, Text, UserDto};
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::MailKind;
use crate::plugins::{email_field, text, Tag};
use crate::session::ResolveOptions;
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

/// Verification operations (tag Account).
pub struct VerificationApi;

#[derive(Debug, Object)]
struct SendVerificationBody {
    email: Text,
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
}

#[derive(Debug, Object)]
struct VerifyEmailResponse {
    status: bool,
    user: Option<UserDto>,
}

#[OpenApi(tag = "Tag::Account")]
impl VerificationApi {
    /// Send a verification email
    ///
    /// Mails a verification link to the address if it belongs to an unverified user. Without a
    /// session the answer is the same for unknown and verified addresses, so it reveals no
    /// accounts; signed in, the address must be the caller's (400 `EMAIL_MISMATCH`) and not
    /// verified yet (400 `EMAIL_ALREADY_VERIFIED`).
    #[oai(
        path = "/send-verification-email",
        method = "post",
        operation_id = "sendVerificationEmail"
    )]
    async fn send_verification_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SendVerificationBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        if !state.mail.enabled() {
            return Err(Code::VerificationEmailNotEnabled.into());
        }
        let email = email_field(&body.0.email.0, "email")?;
        let cb = state
            .origins
            .redirect_target(text(&body.0.callback_url), Code::InvalidCallbackurl)?;
        if let Some(me) = state
            .sessions
            .resolve_session(req, cookies, ResolveOptions::default())
            .await?
        {
            if me.user.email != email {
                return Err(Code::EmailMismatch.into());
            }
            if me.user.email_verified {
                return Err(Code::EmailAlreadyVerified.into());
            }
        }
        // Counted for every address asked about, known or not: the limit tells nothing.
        state
            .limiter
            .limit_mail(req, &email, state.clock.now(), &state.audit)
            .await?;
        // After the answer, the same for every address (see `Mail::after_answer`).
        let state = state.clone();
        state.mail.clone().after_answer("verification", async move {
            if let Some(user) = state.reader.get_user_by_email(&email).await? {
                if !user.email_verified {
                    state
                        .account_mail
                        .send_verification(&user, MailKind::VerifyEmail, &user.email, cb.as_deref())
                        .await?;
                }
            }
            Ok(())
        });
        Ok(Json(StatusResponse { status: true }))
    }

    /// Verify an email address
    ///
    /// Follows the mailed link. On success: redirect to `callbackURL`, or `{status, user}`.
    /// On failure: redirect to `callbackURL?error=token_expired|invalid_token|user_not_found|
    /// unauthorized`, or a 400 error without a callback. A token with `updateTo` (a confirmed
    /// email change) needs the user's session and applies the change.
    #[oai(path = "/verify-email", method = "get", operation_id = "verifyEmail")]
    async fn verify_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        token: Query<String>,
        #[oai(name = "callbackURL")] callback_url: Query<Option<String>>,
    ) -> ApiResult<RedirectOr<VerifyEmailResponse>> {
        let cb = state
            .origins
            .redirect_target(callback_url.0.as_deref(), Code::InvalidCallbackurl)?;
        // As 1.7: every failure is 401 with its code, or the callback with `?error=<CODE>`.
        let fail = |code: Code| -> ApiResult<RedirectOr<VerifyEmailResponse>> {
            match &cb {
                Some(c) => Ok(RedirectOr::Redirect(state.links.with_query(
                    c,
                    "error",
                    code.code(),
                ))),
                None => Err(code.into()),
            }
        };
        let Some(claims) = state.signer.open::<EmailClaims>(VERIFY_PURPOSE, &token.0) else {
            return fail(Code::InvalidIdToken);
        };
        if claims.exp <= state.clock.now().timestamp() {
            return fail(Code::VerifyTokenExpired);
        }
        let Some(user) = state.reader.get_user_by_email(&claims.email).await? else {
            return fail(Code::VerifyUserNotFound);
        };
        let actor = state.actors.user(user.id.clone());
        let session = state
            .sessions
            .resolve_session(req, cookies, ResolveOptions::default())
            .await?;
        let own_session = session.as_ref().map(|a| &a.user.id) == Some(&user.id);
        // A confirmed change of address answers the user; a verification, as 1.7, `user: null`.
        let (user, answer_user) = if let Some(new_email) = claims.update_to {
            // Confirming a change of address: only the signed-in owner may apply it, once.
            if !own_session {
                return fail(Code::Unauthorized);
            }
            let Some(id) = claims.jti.as_deref() else {
                return fail(Code::InvalidIdToken);
            };
            // As 1.7, two steps: the old address confirms (this link, mailed there), then a
            // link mailed to the new address proves it and switches (verified).
            let apply = claims.confirmed;
            let ctx = state.audit.noting(apply.then(|| {
                Event::new(action::EMAIL_CHANGED, &Origin::of(req))
                    .own(&user.id)
                    .target(new_email.clone())
                    .detail("from", claims.email.clone())
            }));
            let user = match actor
                .clone()
                .with(ctx)
                .confirm_email_change(id, &new_email, apply)
                .await
            {
                Ok(u) => u,
                Err(actors::ActorError::Refused(actors::Rule::InvalidToken)) => {
                    return fail(Code::InvalidIdToken)
                }
                Err(e) => return Err(e.into()),
            };
            if apply {
                // As 1.7: the session cookie is issued again, carrying the new address.
                if let Some(mut authed) = session.clone() {
                    authed.user = user.clone();
                    cookies.push(
                        state
                            .sessions
                            .session_cookies(&authed, state.sessions.dont_remember(req)),
                    );
                }
            } else {
                state
                    .account_mail
                    .mail_email_change(
                        &user,
                        &new_email,
                        true,
                        cb.as_deref(),
                        actors::Ctx::default(),
                    )
                    .await?;
            }
            (user, apply)
        } else if user.email_verified {
            (user, false)
        } else {
            // Whoever follows the link verifies the address. Opened on another device it
            // revokes nothing unless configured to: a code or link sign-in is the proof that
            // ends a pre-registrant's sessions.
            let ev = Event::new(action::EMAIL_VERIFIED, &Origin::of(req))
                .user(&user.id)
                .target(user.email.clone())
                .fill(actors::Fill::SessionsRevoked);
            let ev = match own_session {
                true => ev.actor(&user.id),
                false => ev,
            };
            let (verified, revoked) = actor
                .with(state.audit.noted(ev))
                .verify_email(
                    !own_session,
                    !own_session
                        && state
                            .config
                            .email_verification
                            .revoke_sessions_on_foreign_link,
                )
                .await?;
            if revoked {
                state.sessions.note_revocation(&verified.id);
            }
            if state
                .config
                .email_verification
                .auto_sign_in_after_verification
            {
                state
                    .sessions
                    .start_session(req, cookies, verified.clone(), true, actors::Ctx::default())
                    .await?;
            }
            (verified, false)
        };
        if let Some(c) = cb {
            return Ok(RedirectOr::Redirect(state.links.absolute(&c)));
        }
        Ok(RedirectOr::Ok(Json(VerifyEmailResponse {
            status: true,
            user: answer_user.then(|| UserDto::from(&user)),
        })))
    }
}
