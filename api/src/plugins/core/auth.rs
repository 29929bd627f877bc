//! Sign-up, sign-in and sign-out with email and password.
use super::credentials::SignUp;
use crate::audit::{action, Event, Origin};
use crate::dto::{SuccessResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::{normalize_email, Tag};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Union};

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
    /// Signed in; or, for a user with two-factor sign-in on (from a browser not trusted to
    /// skip it), no session yet: `twoFactorRedirect` and the `two_factor` cookie, for
    /// `/two-factor/verify-totp` or `/two-factor/verify-backup-code`. With a `callbackURL`,
    /// a sign-in is also the `Location` header (as 1.7 sends it).
    #[oai(status = 200)]
    Ok(
        Json<SignInResult>,
        #[oai(header = "Location")] Option<String>,
    ),
}

#[derive(Debug, Union)]
#[oai(one_of)]
enum SignInResult {
    SignedIn(Box<SignInResponse>),
    TwoFactor(TwoFactorRedirect),
}

/// A sign-in that waits for its second factor.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct TwoFactorRedirect {
    two_factor_redirect: bool,
    /// How the second factor can be given: `totp` (an authenticator app); backup codes always.
    two_factor_methods: Vec<String>,
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
        let user = state
            .credentials
            .sign_up(
                &Origin::of(req),
                SignUp {
                    email,
                    name: body.name.0,
                    image: body.image.map(|t| t.0),
                    password: body.password.0,
                },
                cb.as_deref(),
            )
            .await?;
        if !state.credentials.session_on_sign_up() {
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
        let user = state
            .credentials
            .check_password(req, &email, body.password.0, cb.as_deref())
            .await?;
        let remember_me = body.remember_me.unwrap_or(true);
        if state.two_factor.needed(req, &user, cookies).await? {
            let methods = state.two_factor.begin(&user, remember_me, cookies).await?;
            return Ok(SignInAnswer::Ok(
                Json(SignInResult::TwoFactor(TwoFactorRedirect {
                    two_factor_redirect: true,
                    two_factor_methods: methods,
                })),
                None,
            ));
        }
        let ev = Event::new(action::SIGN_IN, &Origin::of(req))
            .target(email.clone())
            .detail("method", "email")
            .own(&user.id);
        let started = state
            .sessions
            .start_session(
                req,
                cookies,
                user,
                remember_me,
                state
                    .audit
                    .noted(ev.clone().fill(actors::Fill::TargetSession)),
            )
            .await;
        let authed = state.audit.audited(ev, started).await?;
        state.credentials.signed_in();
        tracing::info!(user = %authed.user.id, "user signed in");
        Ok(SignInAnswer::Ok(
            Json(SignInResult::SignedIn(Box::new(SignInResponse {
                redirect: cb.is_some(),
                token: authed.session.token.clone(),
                url: cb.clone(),
                user: UserDto::from(&authed.user),
            }))),
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
