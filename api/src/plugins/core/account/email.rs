//! Changing the email address: at once for an unverified address, after confirmation from the
//! current address for a verified one.
use crate::dto::{StatusResponse, Text};
use crate::error::{ApiResult, Code};
use crate::mail::MailKind;
use crate::plugins::{email_field, text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::UserPatch;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

/// Email operations (tag Account).
pub struct EmailApi;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ChangeEmailBody {
    new_email: Text,
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
}

#[OpenApi(tag = "Tag::Account")]
impl EmailApi {
    /// Change the email address
    ///
    /// Unverified address: changed at once (and a verification mailed to the new one).
    /// Verified address: a confirmation link goes to the current address; the change applies
    /// when it is followed.
    #[oai(path = "/change-email", method = "post", operation_id = "changeEmail")]
    async fn change_email(
        &self,
        state: Data<&AppState>,
        req: &poem::Request,
        auth: Principal,
        body: Json<ChangeEmailBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        if !state.config.account.change_email_enabled {
            return Err(Code::ChangeEmailDisabled.into());
        }
        state.sessions.require_fresh(&auth.session)?;
        let user = auth.user.clone();
        let new_email = email_field(&body.0.new_email.0, "newEmail")?;
        let cb = state
            .origins
            .redirect_target(text(&body.0.callback_url), Code::InvalidCallbackurl)?;
        let cb = cb.as_deref();
        if new_email == user.email {
            return Err(Code::EmailIsTheSame.into());
        }
        if state.reader.get_user_by_email(&new_email).await?.is_some() {
            return Err(Code::CouldntUpdateYourEmail.into());
        }
        // The new address is mailed (now, or after the confirmation): within its limit.
        state
            .limiter
            .limit_mail(req, &new_email, state.clock.now(), &state.audit)
            .await?;
        if user.email_verified {
            if !state.mail.enabled() {
                return Err(Code::VerificationEmailNotEnabled.into());
            }
            let ev = auth
                .event(crate::audit::action::EMAIL_CHANGE_REQUESTED)
                .target(new_email.clone());
            state
                .account_mail
                .mail_email_change(&user, &new_email, false, cb, state.audit.noted(ev))
                .await?;
            return Ok(Json(StatusResponse { status: true }));
        }
        let ev = auth
            .event(crate::audit::action::EMAIL_CHANGED)
            .target(new_email.clone())
            .detail("from", user.email.clone());
        // The new address's verification link goes with the change.
        let mut proof = user.clone();
        proof.email = new_email.clone();
        let mail: Vec<_> = state
            .mail
            .enabled()
            .then(|| {
                state.account_mail.verification_mail(
                    &proof,
                    MailKind::VerifyEmail,
                    &new_email,
                    None,
                    cb,
                )
            })
            .into_iter()
            .collect();
        let changed = state
            .actors
            .user(user.id.clone())
            .with(state.mail.mailing(state.audit.noted(ev), &mail))
            .update_user(UserPatch {
                email: Some(new_email.clone()),
                email_verified: Some(false),
                ..UserPatch::default()
            })
            .await?;
        // As 1.7: the session cookie is issued again, carrying the changed user.
        state
            .sessions
            .reissue_session(&auth, &changed, Some(auth.session.clone()));
        state.mail.deliver(&mail).await;
        Ok(Json(StatusResponse { status: true }))
    }
}
