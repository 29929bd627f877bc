//! Account lifecycle: email verification, password reset/change/set, change email, delete
//! account, linked accounts. Every state change goes through the user's actor; single-use
//! tokens are consumed atomically by the store.
//!
//! Files: `verification.rs`, `password.rs`, `email.rs`, `deletion.rs`, `linked.rs`; this one
//! holds what they share (mailed links, sealed verification tokens, the server credential).
mod deletion;
mod email;
mod linked;
mod password;
mod verification;

pub use deletion::DeletionApi;
pub use email::EmailApi;
pub use linked::LinkedAccountApi;
pub use password::PasswordApi;
pub use verification::VerificationApi;

use crate::error::ApiResult;
use crate::mail::{MailJob, MailKind};
use chrono::Duration;
use poem_openapi::payload::Json;
use poem_openapi::ApiResponse;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use storage::User;

pub(super) const VERIFY_PURPOSE: &str = "verify-email";

/// What an email-verification token carries (sealed with the server secret).
#[derive(Serialize, Deserialize)]
pub(super) struct EmailClaims {
    pub(super) email: String,
    #[serde(rename = "updateTo", skip_serializing_if = "Option::is_none")]
    pub(super) update_to: Option<String>,
    /// Expiry, seconds since the epoch.
    pub(super) exp: i64,
    /// With `updateTo`: the id of the stored single-use confirmation (`change-email:{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) jti: Option<String>,
    /// With `updateTo`: the old address confirmed already; this link, mailed to the new
    /// address, proves it and applies the change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) confirmed: bool,
}

/// A change of address awaiting confirmation: the new address and its confirmation's id.
pub(crate) struct PendingChange<'a> {
    pub(super) new_email: &'a str,
    pub(super) id: &'a str,
    /// The old address confirmed it: this link goes to the new address.
    pub(super) confirmed: bool,
}

#[derive(ApiResponse)]
pub(super) enum RedirectOr<T: poem_openapi::types::ToJSON + Send + Sync> {
    /// The result, when no callback URL was given.
    #[oai(status = 200)]
    Ok(Json<T>),
    /// Redirect to the callback URL (with `?error=` on failure).
    #[oai(status = 302)]
    Redirect(#[oai(header = "Location")] String),
}

/// The account flows' mail: verification links (sealed tokens), email-change steps with their
/// stored token. Cheap to clone.
#[derive(Clone)]
pub struct AccountMail {
    signer: crate::crypto::Signer,
    clock: Arc<dyn storage::Clock>,
    links: crate::links::Links,
    mail: crate::delivery::Mail,
    actors: actors::Actors,
    /// How long a verification link lasts, seconds.
    expires_in: u64,
}

impl AccountMail {
    pub fn new(
        signer: crate::crypto::Signer,
        clock: Arc<dyn storage::Clock>,
        links: crate::links::Links,
        mail: crate::delivery::Mail,
        actors: actors::Actors,
        expires_in: u64,
    ) -> Self {
        Self {
            signer,
            clock,
            links,
            mail,
            actors,
            expires_in,
        }
    }

    /// The mail of a verification link for `email` (optionally confirming a pending change).
    pub(crate) fn verification_mail(
        &self,
        user: &User,
        kind: MailKind,
        to: &str,
        change: Option<PendingChange<'_>>,
        callback: Option<&str>,
    ) -> MailJob {
        let exp = self.clock.now() + Duration::seconds(self.expires_in as i64);
        let update_to = change.as_ref().map(|c| c.new_email);
        let token = self.signer.seal(
            VERIFY_PURPOSE,
            &EmailClaims {
                email: user.email.clone(),
                update_to: update_to.map(str::to_owned),
                exp: exp.timestamp(),
                jti: change.as_ref().map(|c| c.id.to_owned()),
                confirmed: change.as_ref().is_some_and(|c| c.confirmed),
            },
        );
        // As 1.7: without a callbackURL the link leads back to the app's root.
        let link = format!(
            "{}?token={token}&callbackURL={}",
            self.links.api_url("/verify-email"),
            percent_encoding::utf8_percent_encode(
                callback.unwrap_or("/"),
                crate::http::URI_COMPONENT
            )
        );
        let vars = [
            ("name", user.name.as_str()),
            ("new_email", update_to.unwrap_or("")),
        ];
        MailJob::new(kind, to, link, &vars)
    }

    /// Mails a verification link, on its own (nothing else is stored with it).
    pub(crate) async fn send_verification(
        &self,
        user: &User,
        kind: MailKind,
        to: &str,
        callback: Option<&str>,
    ) -> ApiResult<()> {
        let job = self.verification_mail(user, kind, to, None, callback);
        self.mail.mail_alone(&[job]).await
    }

    /// Stores a single-use token `identifier` pointing at the user (through their actor).
    /// Mails one step of a change of `user`'s address to `new_email`, with its single-use
    /// token stored: the confirmation to the current address, or (`confirmed`) the proof to
    /// the new one.
    /// `ctx`: the audit records kept with the stored token.
    pub(super) async fn mail_email_change(
        &self,
        user: &User,
        new_email: &str,
        confirmed: bool,
        callback: Option<&str>,
        ctx: actors::Ctx,
    ) -> ApiResult<()> {
        let id = storage::random_string(32);
        let (kind, to) = if confirmed {
            (MailKind::VerifyEmail, new_email)
        } else {
            (MailKind::ChangeEmailConfirmation, user.email.as_str())
        };
        let change = PendingChange {
            new_email,
            id: &id,
            confirmed,
        };
        let job = self.verification_mail(user, kind, to, Some(change), callback);
        self.create_token(
            &format!("{}{id}", actors::CHANGE_EMAIL_PREFIX),
            user,
            self.expires_in,
            self.mail.mailing(ctx, std::slice::from_ref(&job)),
        )
        .await?;
        self.mail.deliver(&[job]).await;
        Ok(())
    }

    /// Stores a single-use token `identifier` pointing at the user (through their actor),
    /// with what `ctx` keeps and sends.
    pub(super) async fn create_token(
        &self,
        identifier: &str,
        user: &User,
        lifetime: u64,
        ctx: actors::Ctx,
    ) -> ApiResult<()> {
        self.actors
            .user(user.id.clone())
            .with(ctx)
            .issue_token(identifier, Duration::seconds(lifetime as i64))
            .await?;
        Ok(())
    }
}
