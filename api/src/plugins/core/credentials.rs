//! The email-and-password service: a new user with their password, and a password checked
//! for a sign-in (the limits on wrong passwords, the same work for unknown addresses, the
//! refusal of an unverified address) — what `auth.rs`'s handlers ask before a session starts.
use super::AccountMail;
use crate::audit::{action, Audit, Event, Origin};
use crate::crypto::PasswordHasher;
use crate::delivery::Mail;
use crate::error::{ApiError, ApiResult, Code};
use crate::mail::MailKind;
use crate::rate_limit::Limiter;
use prometheus::IntCounterVec;
use std::sync::Arc;
use storage::{Account, Clock, User, UserId, CREDENTIAL_PROVIDER};

/// The credentials service. Cheap to clone.
#[derive(Clone)]
pub struct Credentials(Arc<Inner>);

/// What the credentials service uses.
pub struct Inner {
    pub actors: actors::Actors,
    pub hasher: PasswordHasher,
    pub limiter: Arc<Limiter>,
    pub audit: Audit,
    pub mail: Mail,
    pub account_mail: AccountMail,
    pub clock: Arc<dyn Clock>,
    /// `gatehouse_sign_ins_total` by outcome.
    pub sign_ins: IntCounterVec,
    /// Mail the verification link on sign-up (`email_verification.send_on_sign_up`).
    pub send_on_sign_up: bool,
    /// No session before the address is verified
    /// (`email_verification.require_email_verification`).
    pub require_verification: bool,
}

/// A sign-up as asked, its address normalized and its password within bounds.
pub(crate) struct SignUp {
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub password: String,
}

impl Credentials {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    /// Whether a new user gets a session at once (else after verifying their address).
    pub(crate) fn session_on_sign_up(&self) -> bool {
        !self.0.require_verification
    }

    /// The new user and their password, stored in one decision with the verification mail
    /// (when it is sent on sign-up or required); the mail is sent once stored.
    pub(crate) async fn sign_up(
        &self,
        origin: &Origin,
        asked: SignUp,
        callback: Option<&str>,
    ) -> ApiResult<User> {
        let s = &self.0;
        let reader = s.actors.reader();
        if reader.get_user_by_email(&asked.email).await?.is_some() {
            return Err(Code::UserAlreadyExists.into());
        }
        let hash = s
            .hasher
            .hash(asked.password)
            .await
            .map_err(ApiError::internal)?;
        let now = s.clock.now();
        let user = User::new(&asked.email, asked.name, asked.image, now);
        let account = Account::credential(&user.id, hash, now);
        let ctx = s.audit.noted(
            Event::new(action::SIGN_UP, origin)
                .own(&user.id)
                .detail("method", "email"),
        );
        let mail: Vec<_> = ((s.send_on_sign_up || s.require_verification) && s.mail.enabled())
            .then(|| {
                s.account_mail.verification_mail(
                    &user,
                    MailKind::VerifyEmail,
                    &user.email,
                    None,
                    callback,
                )
            })
            .into_iter()
            .collect();
        // The store's unique email decides a race between two sign-ups of one address.
        s.actors
            .sign_up(&user, Some(&account), &s.mail.mailing(ctx, &mail))
            .await?;
        tracing::info!(user = %user.id, "user signed up");
        s.mail.deliver(&mail).await;
        Ok(user)
    }

    /// The user whose address and password these are, once their address may sign in.
    /// Refused: too many wrong passwords (before any hashing), a wrong password or an unknown
    /// address (the same reads and hashing for both, so neither the answer nor its timing
    /// tells them apart), an unverified address when verification is required (its link is
    /// mailed again, within the recipient's mail limit). Every refusal is audited and counted.
    pub(crate) async fn check_password(
        &self,
        req: &poem::Request,
        email: &str,
        password: String,
        callback: Option<&str>,
    ) -> ApiResult<User> {
        let s = &self.0;
        let client = crate::http::client_addr(req);
        let outcome = |o: &str| s.sign_ins.with_label_values(&[o]).inc();
        let origin = Origin::of(req);
        let attempt = || {
            Event::new(action::SIGN_IN, &origin)
                .target(email.to_owned())
                .detail("method", "email")
        };
        if let Err(e) = s
            .limiter
            .sign_in_allowed(email, client, s.clock.now())
            .await
        {
            outcome("limited");
            s.audit.record_refusal(attempt(), e.code).await;
            return Err(e);
        }
        let reader = s.actors.reader();
        let user = reader.get_user_by_email(email).await?;
        // An unknown address looks up the accounts of a fresh id and verifies against a dummy
        // hash.
        let probe = user
            .as_ref()
            .map_or_else(UserId::generate, |u| u.id.clone());
        let hash = reader
            .list_accounts(&probe)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .and_then(|a| a.password);
        let ok = match hash {
            Some(h) => s.hasher.verify(password, h).await,
            None => s.hasher.verify_dummy(password).await,
        }
        .map_err(ApiError::internal)?;
        let known = user.as_ref().map(|u| u.id.clone());
        let (true, Some(user)) = (ok, user) else {
            tracing::info!("sign-in refused: invalid email or password");
            outcome("invalid");
            s.limiter.sign_in_failed(email, client, s.clock.now()).await;
            let ev = match &known {
                Some(id) => attempt().own(id),
                None => attempt(),
            };
            s.audit
                .record_refusal(ev, Code::InvalidEmailOrPassword)
                .await;
            return Err(Code::InvalidEmailOrPassword.into());
        };
        if s.require_verification && !user.email_verified {
            let may_mail = s
                .limiter
                .limit_mail(req, &user.email, s.clock.now(), &s.audit)
                .await
                .is_ok();
            if s.mail.enabled() && may_mail {
                s.account_mail
                    .send_verification(&user, MailKind::VerifyEmail, &user.email, callback)
                    .await?;
            }
            outcome("unverified");
            s.audit
                .record_refusal(attempt().own(&user.id), Code::EmailNotVerified)
                .await;
            return Err(Code::EmailNotVerified.into());
        }
        Ok(user)
    }

    /// Counts a sign-in that ended with a session.
    pub(crate) fn signed_in(&self) {
        self.0.sign_ins.with_label_values(&["success"]).inc();
    }
}
