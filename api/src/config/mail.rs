//! Mail, email verification and the account flows.
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MailConfig {
    /// `outbox` (files in `<data_dir>/outbox/`, the default), `smtp`, or `none` (no mail:
    /// flows that need it answer an error).
    pub transport: MailTransport,
    /// Sender, e.g. `Acme <no-reply@acme.example>`.
    pub from: String,
    /// Shown in messages as `{{app_name}}`.
    pub app_name: String,
    /// A folder of template overrides: `<kind>.subject`, `<kind>.txt`, `<kind>.html`.
    pub templates_dir: Option<PathBuf>,
    /// Time limit of one SMTP delivery attempt, milliseconds.
    pub send_timeout_ms: u64,
    /// A stored message its request did not deliver (the process died, the send failed) is
    /// delivered by the mail consumer once it is this old, seconds (at least the longest SMTP
    /// delivery, so a slow one in progress is not sent twice).
    pub redeliver_after_secs: u64,
    pub smtp: SmtpConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    /// Each message a JSON file in `<data_dir>/outbox/`.
    Outbox,
    /// Delivered through `[mail.smtp]`.
    Smtp,
    /// No mail.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    /// Plain text; only for a trusted relay on the same host or network.
    None,
    /// STARTTLS, required (port 587).
    Starttls,
    /// Implicit TLS (port 465).
    Tls,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// Further attempts after a transient failure.
    pub retries: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmailVerificationConfig {
    /// Mail a verification link when a user signs up with email and password.
    pub send_on_sign_up: bool,
    /// Refuse sign-in (403 `EMAIL_NOT_VERIFIED`) until the email is verified; a new link is
    /// mailed on each refused attempt.
    pub require_email_verification: bool,
    /// Following the link also signs the user in.
    pub auto_sign_in_after_verification: bool,
    /// Lifetime of a verification link, seconds.
    pub expires_in: u64,
    /// A verification link followed without the account's session (another browser, a phone)
    /// also ends the account's earlier sessions. Off by default (as 1.7): opening the mail
    /// on another device is ordinary, and a code or link sign-in is the proof that ends a
    /// pre-registrant's sessions and password (see README, "Proof of the mailbox").
    pub revoke_sessions_on_foreign_link: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccountConfig {
    pub change_email_enabled: bool,
    pub delete_user_enabled: bool,
    /// Let a user unlink their last account (leaving no way to sign in).
    pub allow_unlinking_all: bool,
    /// A password reset signs the user out everywhere (on by default: a reset after a
    /// compromise must end the intruder's sessions; 1.7's default is off).
    pub revoke_sessions_on_password_reset: bool,
    /// A sign-in may link a provider account to the user with the same (verified) email.
    pub implicit_linking: bool,
    /// link-social may link an account whose email differs from the user's.
    pub allow_different_emails: bool,
    /// A sign-in through a linked account stores the tokens the provider returned.
    pub update_account_on_sign_in: bool,
    /// Calls to a social provider give up after this long, milliseconds.
    pub provider_timeout_ms: u64,
}

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            transport: MailTransport::Outbox,
            from: "Gatehouse <no-reply@localhost>".into(),
            app_name: "Gatehouse".into(),
            templates_dir: None,
            send_timeout_ms: 10_000,
            redeliver_after_secs: 60,
            smtp: SmtpConfig::default(),
        }
    }
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            host: "localhost".into(),
            port: 587,
            security: SmtpSecurity::Starttls,
            username: None,
            password: None,
            retries: 3,
        }
    }
}

impl Default for EmailVerificationConfig {
    fn default() -> Self {
        Self {
            send_on_sign_up: false,
            require_email_verification: false,
            auto_sign_in_after_verification: false,
            expires_in: 3600,
            revoke_sessions_on_foreign_link: false,
        }
    }
}

impl Default for AccountConfig {
    fn default() -> Self {
        Self {
            change_email_enabled: true,
            delete_user_enabled: true,
            allow_unlinking_all: false,
            revoke_sessions_on_password_reset: true,
            implicit_linking: true,
            allow_different_emails: false,
            update_account_on_sign_in: true,
            provider_timeout_ms: 10_000,
        }
    }
}
