//! Codes by mail. One code per address and purpose lives at a time, as a single-use row
//! `email-otp:{purpose}:{email}` holding a keyed hash of the code (never the code); a new code
//! replaces it. Every try claims one of the code's numbered try rows
//! (`email-otp-try:{row id}:{n}`, written only if absent, so every process sees it and
//! concurrent tries never share one) before the code is compared in constant time; with every
//! try taken the code answers `TOO_MANY_ATTEMPTS` until it expires. Using a code takes its
//! row: of concurrent uses, one wins.
//!
//! Asking for a code answers at once, the same for every address: looking the address up,
//! storing the code and mailing it happen after the answer (its mail stored with an event
//! before it is sent, so the mail consumer delivers it if this process cannot).
use crate::config::EmailOtpConfig;
use crate::crypto::Signer;
use crate::delivery::Mail;
use crate::error::{ApiResult, Code};
use crate::mail::{MailJob, MailKind};
use poem_openapi::Enum;
use std::sync::Arc;
use storage::{Clock, Verification, VerificationId};

const PREFIX: &str = "email-otp:";

/// What a code is for (better-auth's `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "EmailOtpType", rename_all = "kebab-case")]
pub enum Purpose {
    SignIn,
    EmailVerification,
    ForgetPassword,
    ChangeEmail,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Self::SignIn => "sign-in",
            Self::EmailVerification => "email-verification",
            Self::ForgetPassword => "forget-password",
            Self::ChangeEmail => "change-email",
        }
    }

    /// The words the mail uses for it.
    fn words(self) -> &'static str {
        match self {
            Self::SignIn => "sign-in",
            Self::EmailVerification => "verification",
            Self::ForgetPassword => "password reset",
            Self::ChangeEmail => "email change",
        }
    }
}

/// The email-OTP service. Cheap to clone.
#[derive(Clone)]
pub struct EmailOtp(Arc<Inner>);

pub struct Inner {
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: Signer,
    pub mail: Mail,
    pub config: EmailOtpConfig,
}

/// Whether a right code is used up (a sign-in, a reset) or only checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Take,
    Check,
}

impl EmailOtp {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    pub fn config(&self) -> &EmailOtpConfig {
        &self.0.config
    }

    fn identifier(p: Purpose, email: &str) -> String {
        format!("{PREFIX}{}:{email}", p.name())
    }

    fn digest(&self, row: &VerificationId, code: &str) -> String {
        self.0
            .signer
            .signature(&format!("{PREFIX}{}:{}", row.0, code.trim()))
    }

    /// Mails a new code for `email` after the answer (see the module); `send` decides, once
    /// the address is looked up, whether one is sent and to whom it speaks (the user's name).
    pub fn send_later<F, Fut>(&self, p: Purpose, email: String, send: F)
    where
        F: FnOnce(Option<storage::User>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Option<String>> + Send,
    {
        let this = self.clone();
        self.0.mail.after_answer("email OTP", async move {
            let user = this.0.actors.reader().get_user_by_email(&email).await?;
            if let Some(name) = send(user).await {
                this.send_now(p, &email, &name).await?;
            }
            Ok(())
        });
    }

    /// Stores a new code in place of any and mails it.
    pub async fn send_now(&self, p: Purpose, email: &str, name: &str) -> ApiResult<()> {
        self.send_to(p, email, email, name).await
    }

    /// As [`EmailOtp::send_now`], for a code kept under `key` (an email change's code is the
    /// user's and the new address's: `{user id}:{new address}`) and mailed to `to`.
    pub async fn send_to(&self, p: Purpose, key: &str, to: &str, name: &str) -> ApiResult<()> {
        let code = format!("{:06}", rand::random::<u32>() % 1_000_000);
        let now = self.0.clock.now();
        let id = VerificationId::generate();
        let row = Verification {
            value: self.digest(&id, &code),
            id,
            identifier: Self::identifier(p, key),
            expires_at: now + chrono::Duration::seconds(self.0.config.expires_in as i64),
            created_at: now,
            updated_at: now,
        };
        // Another code asked for at the same moment may take the place first: then once more.
        for _ in 0..2 {
            self.0.actors.take_state(&row.identifier).await?;
            match self.0.actors.put_state(&row).await {
                Err(actors::ActorError::Conflict(_)) => continue,
                other => {
                    other?;
                    break;
                }
            }
        }
        let minutes = (self.0.config.expires_in.div_ceil(60)).to_string();
        let job = MailJob::new(
            MailKind::EmailOtp,
            to,
            String::new(),
            &[
                ("name", name),
                ("code", &code),
                ("purpose", p.words()),
                ("minutes", &minutes),
            ],
        );
        self.0.mail.mail_alone(&[job]).await
    }

    /// Checks (or uses) the code kept under `key` (the address; see [`EmailOtp::send_to`]):
    /// `INVALID_OTP` when it is not the current one, `OTP_EXPIRED`, `TOO_MANY_ATTEMPTS` past
    /// the allowed tries.
    pub async fn verify(&self, p: Purpose, key: &str, code: &str, how: Use) -> ApiResult<()> {
        let identifier = Self::identifier(p, key);
        let now = self.0.clock.now();
        let Some(row) = self.0.actors.reader().get_verification(&identifier).await? else {
            return Err(Code::InvalidOtp.into());
        };
        if row.expires_at <= now {
            self.take_row(&identifier, &row.id).await?;
            return Err(Code::OtpExpired.into());
        }
        if !self.claim_try(&row).await? {
            return Err(Code::OtpTooManyAttempts.into());
        }
        let given = self.digest(&row.id, code);
        if !crate::crypto::same_bytes(given.as_bytes(), row.value.as_bytes()) {
            return Err(Code::InvalidOtp.into());
        }
        if how == Use::Check {
            return Ok(());
        }
        match self.take_row(&identifier, &row.id).await? {
            true => Ok(()),
            false => Err(Code::InvalidOtp.into()),
        }
    }

    /// Counts a try of the code `row`: one of its `allowed_attempts` numbered slots, each a
    /// row written only if absent (so of concurrent tries, in one process or several, each
    /// slot goes to one); `false` when every slot is taken.
    async fn claim_try(&self, row: &Verification) -> ApiResult<bool> {
        let now = self.0.clock.now();
        for n in 1..=self.0.config.allowed_attempts {
            let slot = Verification {
                id: VerificationId::generate(),
                identifier: format!("email-otp-try:{}:{n}", row.id.0),
                // Not empty: a partitioned store keeps a lookup by value.
                value: row.id.0.clone(),
                expires_at: row.expires_at,
                created_at: now,
                updated_at: now,
            };
            match self.0.actors.put_state(&slot).await {
                Ok(()) => return Ok(true),
                Err(actors::ActorError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// Takes the code row `id` (once: of concurrent takers, one gets it); a newer code that
    /// took its place meanwhile stays.
    async fn take_row(&self, identifier: &str, id: &VerificationId) -> ApiResult<bool> {
        match self.0.actors.take_state(identifier).await? {
            Some(taken) if taken.id == *id => Ok(true),
            Some(newer) => {
                let _ = self.0.actors.put_state(&newer).await;
                Ok(false)
            }
            None => Ok(false),
        }
    }
}
