//! The magic-link plugin's routes (better-auth's `magicLink`): a link by mail that signs in
//! (signing up a new address unless `magic_link.disable_sign_up`). The link's token is
//! stored as a keyed hash in a single-use row `magic-link:{hash}` with the address and the
//! name asked for; following the link takes the row (of concurrent follows, one signs in)
//! and proves the mailbox (`core/mailbox.rs`). Asking for a link answers at once, the same
//! for every address; the lookup, the row and the mail happen after the answer.
use crate::config::MagicLinkConfig;
use crate::crypto::Signer;
use crate::delivery::Mail;
use crate::dto::{SessionDto, Text, UserDto};
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::links::Links;
use crate::mail::{MailJob, MailKind};
use crate::plugins::core::mailbox::{self, MailSignedIn, NewUser};
use crate::plugins::{email_field, text, Tag};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Union};
use std::sync::Arc;
use storage::{Clock, Verification, VerificationId};

const PREFIX: &str = "magic-link:";

/// The magic-link plugin's operations.
pub type Apis = MagicLinkApi;

pub fn apis() -> Apis {
    MagicLinkApi
}

/// The magic-link service. Cheap to clone.
#[derive(Clone)]
pub struct MagicLinks(Arc<Inner>);

pub struct Inner {
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: Signer,
    pub mail: Mail,
    pub links: Links,
    pub config: MagicLinkConfig,
}

/// What a link's row holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    email: String,
    name: String,
}

impl MagicLinks {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    fn identifier(&self, token: &str) -> String {
        format!(
            "{PREFIX}{}",
            self.0.signer.signature(&format!("{PREFIX}{token}"))
        )
    }

    /// After the answer: a link to `email` when it has an account or may sign up.
    fn send_later(&self, email: String, name: String, query: String) {
        let this = self.clone();
        self.0.mail.after_answer("magic link", async move {
            this.send_now(email, name, &query).await
        });
    }

    async fn send_now(&self, email: String, name: String, query: &str) -> ApiResult<()> {
        let user = self.0.actors.reader().get_user_by_email(&email).await?;
        if user.is_none() && self.0.config.disable_sign_up {
            return Ok(());
        }
        let token = storage::random_string(32);
        let now = self.0.clock.now();
        let to = user.as_ref().map_or(name.clone(), |u| u.name.clone());
        let pending = serde_json::to_string(&Pending {
            email: email.clone(),
            name,
        })
        .map_err(crate::error::ApiError::internal)?;
        self.0
            .actors
            .put_state(&Verification {
                id: VerificationId::generate(),
                identifier: self.identifier(&token),
                value: pending,
                expires_at: now + chrono::Duration::seconds(self.0.config.expires_in as i64),
                created_at: now,
                updated_at: now,
            })
            .await?;
        let link = format!(
            "{}?token={token}{query}",
            self.0.links.api_url("/magic-link/verify")
        );
        let minutes = self.0.config.expires_in.div_ceil(60).to_string();
        let job = MailJob::new(
            MailKind::MagicLink,
            &email,
            link,
            &[("name", &to), ("minutes", &minutes)],
        );
        self.0.mail.mail_alone(&[job]).await
    }

    /// Takes the link's row: the address and name, or the error for `?error=`.
    async fn take(&self, token: &str) -> Result<Pending, &'static str> {
        let row = match self.0.actors.take_state(&self.identifier(token)).await {
            Ok(Some(row)) => row,
            Ok(None) => return Err("INVALID_TOKEN"),
            Err(e) => {
                tracing::warn!(error = ?e, "magic link not read");
                return Err("INVALID_TOKEN");
            }
        };
        if row.expires_at <= self.0.clock.now() {
            return Err("EXPIRED_TOKEN");
        }
        serde_json::from_str(&row.value).map_err(|_| "INVALID_TOKEN")
    }
}

pub struct MagicLinkApi;

#[derive(Debug, Object)]
#[oai(rename = "SignInMagicLinkBody", rename_all = "camelCase")]
struct SignInBody {
    email: Text,
    /// The name of a user this link signs up.
    #[oai(validator(max_length = 256))]
    name: Option<Text>,
    /// Where the link leads once signed in (a trusted origin or a relative path).
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
    /// Where it leads when it signed a new user up (else `callbackURL`).
    #[oai(rename = "newUserCallbackURL", validator(max_length = 2048))]
    new_user_callback_url: Option<Text>,
    /// Where it leads on an error, with `?error=` (else `callbackURL`).
    #[oai(rename = "errorCallbackURL", validator(max_length = 2048))]
    error_callback_url: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename = "MagicLinkSent")]
struct Sent {
    status: bool,
}

#[derive(ApiResponse)]
enum VerifyAnswer {
    /// Without a `callbackURL`: the session (or the second-factor step) as JSON.
    #[oai(status = 200)]
    Ok(Json<Box<VerifyResult>>),
    /// With one: to it (signed in), to the hosted second-factor step, or to the error
    /// target with `?error=` (`INVALID_TOKEN`, `EXPIRED_TOKEN`, `new_user_signup_disabled`).
    #[oai(status = 302)]
    Redirect(#[oai(header = "Location")] String),
}

#[derive(Debug, Union)]
#[oai(one_of, rename = "MagicLinkVerifyResult")]
enum VerifyResult {
    SignedIn(Box<SignedIn>),
    TwoFactor(TwoFactorRedirect),
}

#[derive(Debug, Object)]
#[oai(rename = "MagicLinkSignedIn")]
struct SignedIn {
    token: String,
    user: UserDto,
    session: SessionDto,
}

#[derive(Debug, Object)]
#[oai(rename = "MagicLinkTwoFactorRedirect", rename_all = "camelCase")]
struct TwoFactorRedirect {
    two_factor_redirect: bool,
    two_factor_methods: Vec<String>,
}

/// The redirect target `raw` names: a trusted origin or a relative path, else 403
/// `INVALID_CALLBACK_URL`.
fn target(state: &AppState, raw: Option<&str>) -> ApiResult<Option<String>> {
    state.origins.redirect_target(raw, Code::InvalidCallbackurl)
}

#[OpenApi(tag = "Tag::MagicLink")]
impl MagicLinkApi {
    /// Mail a sign-in link
    ///
    /// Mails a link that signs in (an address without an account is signed up, with `name`,
    /// unless `magic_link.disable_sign_up`). It works once, for `magic_link.expires_in`
    /// seconds. The answer is the same, and as fast, for every address.
    #[oai(
        path = "/sign-in/magic-link",
        method = "post",
        operation_id = "signInMagicLink"
    )]
    async fn sign_in_magic_link(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<SignInBody>,
    ) -> ApiResult<Json<Sent>> {
        let body = body.0;
        let email = email_field(&body.email.0, "email")?;
        let mut query = String::new();
        let callback = target(&state, text(&body.callback_url))?;
        for (key, value) in [
            ("callbackURL", Some(callback.unwrap_or_else(|| "/".into()))),
            (
                "newUserCallbackURL",
                target(&state, text(&body.new_user_callback_url))?,
            ),
            (
                "errorCallbackURL",
                target(&state, text(&body.error_callback_url))?,
            ),
        ] {
            if let Some(v) = value {
                let v = percent_encoding::utf8_percent_encode(&v, crate::http::URI_COMPONENT);
                query.push_str(&format!("&{key}={v}"));
            }
        }
        if !state.mail.enabled() {
            return Err(Code::MailNotConfigured.into());
        }
        state
            .limiter
            .limit_mail(req, &email, state.clock.now(), &state.audit)
            .await?;
        let name = text(&body.name).unwrap_or("").to_owned();
        state.magic_links.send_later(email, name, query);
        Ok(Json(Sent { status: true }))
    }

    /// Follow a sign-in link
    ///
    /// Takes the link's token (it works once) and signs in: on an unverified account the link
    /// is the first proof of the mailbox (the address becomes verified, the password set
    /// before is removed, every other session ends). A user with two-factor sign-in on is
    /// sent to the hosted second step (`/two-factor`).
    #[oai(
        path = "/magic-link/verify",
        method = "get",
        operation_id = "magicLinkVerify"
    )]
    #[allow(clippy::too_many_arguments)] // one per query parameter
    async fn verify(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        token: Query<String>,
        #[oai(name = "callbackURL")] callback_url: Query<Option<String>>,
        #[oai(name = "newUserCallbackURL")] new_user_callback_url: Query<Option<String>>,
        #[oai(name = "errorCallbackURL")] error_callback_url: Query<Option<String>>,
    ) -> ApiResult<VerifyAnswer> {
        let callback = target(&state, callback_url.0.as_deref())?;
        let new_user = target(&state, new_user_callback_url.0.as_deref())?;
        let error_to = target(&state, error_callback_url.0.as_deref())?
            .or_else(|| callback.clone())
            .unwrap_or_else(|| "/".into());
        let failed = |code: &str| {
            Ok(VerifyAnswer::Redirect(
                state.links.with_query(&error_to, "error", code),
            ))
        };
        let pending = match state.magic_links.take(&token.0).await {
            Ok(p) => p,
            Err(code) => return failed(code),
        };
        let new = NewUser {
            name: &pending.name,
            image: None,
            allowed: !state.magic_links.0.config.disable_sign_up,
        };
        let user = match mailbox::user_for(&state, req, &pending.email, new, "magic-link").await {
            Ok(u) => u,
            Err(e) if e.code == Code::UserNotFound => return failed("new_user_signup_disabled"),
            Err(e) => return Err(e),
        };
        let signed = match mailbox::sign_in(&state, req, cookies, user, "magic-link").await {
            Ok(s) => s,
            Err(e) if e.code == Code::BannedUser => return failed("banned"),
            Err(e) => return Err(e),
        };
        Ok(match (signed, callback) {
            (MailSignedIn::Session { created, .. }, Some(cb)) => {
                let to = match (created, new_user) {
                    (true, Some(n)) => n,
                    _ => cb,
                };
                VerifyAnswer::Redirect(state.links.absolute(&to))
            }
            (MailSignedIn::Session { authed, .. }, None) => {
                VerifyAnswer::Ok(Json(Box::new(VerifyResult::SignedIn(Box::new(SignedIn {
                    token: authed.session.token.clone(),
                    user: UserDto::from(&authed.user),
                    session: SessionDto::from(&authed.session),
                })))))
            }
            (MailSignedIn::SecondFactor(methods), Some(cb)) => {
                let page = state
                    .links
                    .with_query("/two-factor", "methods", &methods.join(","));
                VerifyAnswer::Redirect(state.links.with_query(&page, "redirectTo", &cb))
            }
            (MailSignedIn::SecondFactor(methods), None) => {
                VerifyAnswer::Ok(Json(Box::new(VerifyResult::TwoFactor(TwoFactorRedirect {
                    two_factor_redirect: true,
                    two_factor_methods: methods,
                }))))
            }
        })
    }
}
