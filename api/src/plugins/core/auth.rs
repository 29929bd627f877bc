//! Sign-up, sign-in and sign-out with email and password.
use crate::audit::{action, Event, Origin};
use crate::dto::{SuccessResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::MailKind;
use crate::plugins::{normalize_email, Tag};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use storage::{Account, User, UserId, CREDENTIAL_PROVIDER};

pub struct AuthApi;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SignUpBody {
    /// At most 256 characters.
    #[oai(validator(max_length = 256))]
    name: Text,
    email: Text,
    password: Text,
    /// An image URL; at most 2048 characters.
    #[oai(validator(max_length = 2048))]
    image: Option<Text>,
    /// Where the client goes after verifying the email; a trusted origin or a relative path.
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
    /// `false`: a browser-session cookie and a shorter session.
    remember_me: Option<bool>,
    /// Refused (400 `FIELD_NOT_ALLOWED`): administrators set roles.
    role: Option<serde_json::Value>,
    /// Refused (400 `FIELD_NOT_ALLOWED`): administrators ban.
    banned: Option<serde_json::Value>,
    /// Refused (400 `FIELD_NOT_ALLOWED`).
    ban_reason: Option<serde_json::Value>,
    /// Refused (400 `FIELD_NOT_ALLOWED`).
    ban_expires: Option<serde_json::Value>,
}

impl SignUpBody {
    /// The first field a user may not set about themselves.
    fn refused_field(&self) -> Option<&'static str> {
        [
            ("role", self.role.is_some()),
            ("banned", self.banned.is_some()),
            ("banReason", self.ban_reason.is_some()),
            ("banExpires", self.ban_expires.is_some()),
        ]
        .into_iter()
        .find_map(|(name, set)| set.then_some(name))
    }
}

#[derive(Debug, Object)]
struct SignUpResponse {
    /// The new session's token (also set as the session cookie).
    token: Option<String>,
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SignInBody {
    email: Text,
    password: Text,
    /// Returned as `url` with `redirect: true`; a trusted origin or a relative path.
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
    /// Default `true`. `false`: a browser-session cookie and a 1-day session.
    remember_me: Option<bool>,
}

#[derive(ApiResponse)]
enum SignInAnswer {
    /// Signed in. With a `callbackURL`, it is also the `Location` header (as 1.7 sends it).
    #[oai(status = 200)]
    Ok(
        Json<SignInResponse>,
        #[oai(header = "Location")] Option<String>,
    ),
}

#[derive(Debug, Object)]
struct SignInResponse {
    /// `true` when a `callbackURL` was given: the client should go to `url`.
    redirect: bool,
    token: String,
    url: Option<String>,
    user: UserDto,
}

#[OpenApi(tag = "Tag::Auth")]
impl AuthApi {
    /// Sign up with email and password
    ///
    /// Creates the user with a password credential and signs them in: answers the session token
    /// and the user, and sets the session cookie. An email in use answers 422
    /// `USER_ALREADY_EXISTS`.
    #[oai(path = "/sign-up/email", method = "post", operation_id = "signUpEmail")]
    async fn sign_up_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SignUpBody>,
    ) -> ApiResult<Json<SignUpResponse>> {
        let body = body.0;
        if let Some(field) = body.refused_field() {
            return Err(ApiError::with_message(
                Code::FieldNotAllowed,
                format!("{field} is not allowed to be set"),
            ));
        }
        let email = crate::plugins::email_field(&body.email.0, "email")?;
        state.passwords.check_password_length(&body.password.0)?;
        let cb = state.origins.redirect_target(
            body.callback_url.as_ref().map(|t| t.0.as_str()),
            Code::InvalidCallbackurl,
        )?;
        if state.reader.get_user_by_email(&email).await?.is_some() {
            return Err(Code::UserAlreadyExists.into());
        }
        let hash = state
            .hasher
            .hash(body.password.0)
            .await
            .map_err(ApiError::internal)?;
        let now = state.clock.now();
        let user = User::new(&email, body.name.0, body.image.map(|t| t.0), now);
        let account = Account::credential(&user.id, hash, now);
        let origin = Origin::of(req);
        let ctx = state.audit.noted(
            Event::new(action::SIGN_UP, &origin)
                .own(&user.id)
                .detail("method", "email"),
        );
        let ev = &state.config.email_verification;
        let mail: Vec<_> = ((ev.send_on_sign_up || ev.require_email_verification)
            && state.mail.enabled())
        .then(|| {
            state.account_mail.verification_mail(
                &user,
                MailKind::VerifyEmail,
                &user.email,
                None,
                cb.as_deref(),
            )
        })
        .into_iter()
        .collect();
        // The store's unique email decides a race between two sign-ups of one address.
        state
            .actors
            .sign_up(&user, &account, &state.mail.mailing(ctx, &mail))
            .await?;
        tracing::info!(user = %user.id, "user signed up");
        state.mail.deliver(&mail).await;
        if ev.require_email_verification {
            // No session until the address is verified.
            return Ok(Json(SignUpResponse {
                token: None,
                user: UserDto::from(&user),
            }));
        }
        let authed = state
            .sessions
            .start_session(
                req,
                cookies,
                user,
                body.remember_me.unwrap_or(true),
                actors::Ctx::default(),
            )
            .await?;
        Ok(Json(SignUpResponse {
            token: Some(authed.session.token.clone()),
            user: UserDto::from(&authed.user),
        }))
    }

    /// Sign in with email and password
    ///
    /// An unknown email and a wrong password both answer 401 `INVALID_EMAIL_OR_PASSWORD` after
    /// the same work, so the answer and its timing do not reveal which accounts exist.
    #[oai(path = "/sign-in/email", method = "post", operation_id = "signInEmail")]
    async fn sign_in_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SignInBody>,
    ) -> ApiResult<SignInAnswer> {
        let body = body.0;
        let email = normalize_email(&body.email.0).ok_or(Code::InvalidEmail)?;
        let cb = state.origins.redirect_target(
            body.callback_url.as_ref().map(|t| t.0.as_str()),
            Code::InvalidCallbackurl,
        )?;
        // Too many wrong passwords for this account (from this client, or from everywhere):
        // refused before any hashing, for known and unknown addresses alike.
        let client = crate::http::client_addr(req);
        let outcome = |o: &str| state.metrics.sign_ins.with_label_values(&[o]).inc();
        let origin = Origin::of(req);
        let attempt = || {
            Event::new(action::SIGN_IN, &origin)
                .target(email.clone())
                .detail("method", "email")
        };
        if let Err(e) = state
            .limiter
            .sign_in_allowed(&email, client, state.clock.now())
            .await
        {
            outcome("limited");
            state.audit.record_refusal(attempt(), e.code).await;
            return Err(e);
        }
        let user = state.reader.get_user_by_email(&email).await?;
        // The same reads and the same hashing whether or not the address has an account, so
        // neither the answer nor its timing tells them apart: an unknown address looks up the
        // accounts of a fresh id and verifies against a dummy hash.
        let probe = user
            .as_ref()
            .map_or_else(UserId::generate, |u| u.id.clone());
        let hash = state
            .reader
            .list_accounts(&probe)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .and_then(|a| a.password);
        let ok = match hash {
            Some(h) => state.hasher.verify(body.password.0, h).await,
            None => state.hasher.verify_dummy(body.password.0).await,
        }
        .map_err(ApiError::internal)?;
        let known = user.as_ref().map(|u| u.id.clone());
        let (true, Some(user)) = (ok, user) else {
            tracing::info!("sign-in refused: invalid email or password");
            outcome("invalid");
            state
                .limiter
                .sign_in_failed(&email, client, state.clock.now())
                .await;
            let ev = match &known {
                Some(id) => attempt().own(id),
                None => attempt(),
            };
            state
                .audit
                .record_refusal(ev, Code::InvalidEmailOrPassword)
                .await;
            return Err(Code::InvalidEmailOrPassword.into());
        };
        if state.config.email_verification.require_email_verification && !user.email_verified {
            // Each refused sign-in mails the link again, within the recipient's mail limit.
            let may_mail = state
                .limiter
                .limit_mail(req, &user.email, state.clock.now(), &state.audit)
                .await
                .is_ok();
            if state.mail.enabled() && may_mail {
                state
                    .account_mail
                    .send_verification(&user, MailKind::VerifyEmail, &user.email, cb.as_deref())
                    .await?;
            }
            outcome("unverified");
            state
                .audit
                .record_refusal(attempt().own(&user.id), Code::EmailNotVerified)
                .await;
            return Err(Code::EmailNotVerified.into());
        }
        let ev = attempt().own(&user.id);
        let started = state
            .sessions
            .start_session(
                req,
                cookies,
                user,
                body.remember_me.unwrap_or(true),
                state
                    .audit
                    .noted(ev.clone().fill(actors::Fill::TargetSession)),
            )
            .await;
        let authed = state.audit.audited(ev, started).await?;
        outcome("success");
        tracing::info!(user = %authed.user.id, "user signed in");
        Ok(SignInAnswer::Ok(
            Json(SignInResponse {
                redirect: cb.is_some(),
                token: authed.session.token.clone(),
                url: cb.clone(),
                user: UserDto::from(&authed.user),
            }),
            cb,
        ))
    }

    /// Sign out
    ///
    /// Deletes the current session and clears the session cookies; without a (validly signed)
    /// session cookie there is nothing to delete and it answers the same (as 1.7).
    #[oai(path = "/sign-out", method = "post", operation_id = "signOut")]
    async fn sign_out(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
    ) -> ApiResult<Json<SuccessResponse>> {
        cookies.push(state.cookies.clear_all());
        let Some(token) = state.sessions.signed_token(req) else {
            return Ok(Json(SuccessResponse { success: true }));
        };
        if let Some(session) = state.reader.get_session(&token).await? {
            let ev = Event::new(action::SIGN_OUT, &Origin::of(req))
                .own(&session.user_id)
                .target(session.id.0.clone())
                .impersonated_by(session.impersonated_by.as_ref());
            state
                .actors
                .user(session.user_id.clone())
                .with(state.audit.noted(ev))
                .revoke_known_session(&session)
                .await?;
            state.sessions.note_revocation(&session.user_id);
        }
        Ok(Json(SuccessResponse { success: true }))
    }
}
