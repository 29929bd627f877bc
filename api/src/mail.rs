//! Outgoing email: the templates of every message kind and two transports — an outbox in the
//! data directory (the default, so every flow works without a mail server) and SMTP (`lettre`).
//!
//! A decision stores the mail it sends as a [`MailJob`] with its change; `delivery` sends it
//! after the answer (SMTP in a background task with a time limit and retries of transient
//! failures; the outbox file before the request answers, so tools and tests can read it right
//! after) and, should the process die first, the mail consumer sends it later.
use crate::config::{MailConfig, MailTransport, SmtpSecurity};
use chrono::Utc;
use lettre::message::{header::ContentType, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kinds of message Gatehouse sends; each has a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MailKind {
    VerifyEmail,
    ResetPassword,
    ChangeEmailConfirmation,
    DeleteAccount,
    Invitation,
    /// A sign-in's second factor by mail (`{{code}}`; no link).
    TwoFactorOtp,
    /// A code to sign in, verify the address or reset the password (`{{code}}`, and
    /// `{{purpose}}`: `sign-in`, `verification`, `password reset`, `email change`).
    EmailOtp,
    /// A link that signs in (`{{link}}`).
    MagicLink,
}

impl MailKind {
    pub const ALL: [MailKind; 8] = [
        Self::VerifyEmail,
        Self::ResetPassword,
        Self::ChangeEmailConfirmation,
        Self::DeleteAccount,
        Self::Invitation,
        Self::TwoFactorOtp,
        Self::EmailOtp,
        Self::MagicLink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::VerifyEmail => "verify-email",
            Self::ResetPassword => "reset-password",
            Self::ChangeEmailConfirmation => "change-email-confirmation",
            Self::DeleteAccount => "delete-account",
            Self::Invitation => "invitation",
            Self::TwoFactorOtp => "two-factor-otp",
            Self::EmailOtp => "email-otp",
            Self::MagicLink => "magic-link",
        }
    }

    fn builtin(self) -> Template {
        let code = match self {
            Self::TwoFactorOtp => Some((
                "{{code}} is your {{app_name}} sign-in code",
                "Your code to finish signing in to {{app_name}} as {{email}} is",
                "It works once, for 5 minutes. If you did not just sign in, someone knows your \
                 password: change it.",
            )),
            Self::EmailOtp => Some((
                "{{code}} is your {{app_name}} {{purpose}} code",
                "Your {{purpose}} code for {{app_name}} ({{email}}) is",
                "It works once, for {{minutes}} minutes. If you did not ask for it, ignore this \
                 message: nothing happens without the code.",
            )),
            _ => None,
        };
        if let Some((subject, intro, after)) = code {
            return Template {
                subject: subject.into(),
                text: format!(
                    "Hello {{{{name}}}},\n\n{intro} {{{{code}}}}.\n\n{after}\n\n— {{{{app_name}}}}\n"
                ),
                html: format!(
                    "<!DOCTYPE html><html><body style=\"font-family:system-ui,sans-serif\">\
                     <p>Hello {{{{name}}}},</p><p>{intro}</p>\
                     <p style=\"font-size:1.6em;letter-spacing:.2em\"><b>{{{{code}}}}</b></p>\
                     <p>{after}</p><p>— {{{{app_name}}}}</p></body></html>"
                ),
            };
        }
        let (subject, intro, action) = match self {
            Self::VerifyEmail => (
                "Verify your email address for {{app_name}}",
                "Please confirm that {{email}} is your email address.",
                "Verify email",
            ),
            Self::ResetPassword => (
                "Reset your {{app_name}} password",
                "Someone asked to reset the password of the account {{email}}. If it was you, \
                 choose a new password within the hour; otherwise ignore this message.",
                "Reset password",
            ),
            Self::ChangeEmailConfirmation => (
                "Confirm the new email address of your {{app_name}} account",
                "Someone asked to change the email address of your account from {{email}} to \
                 {{new_email}}. If it was you, confirm the change; otherwise ignore this message.",
                "Confirm change",
            ),
            Self::Invitation => (
                "{{inviter}} invited you to {{organization}} on {{app_name}}",
                "{{inviter}} invited {{email}} to join {{organization}} as {{role}}. The \
                 invitation is valid for 48 hours; ignore this message if you do not want to join.",
                "Accept the invitation",
            ),
            Self::DeleteAccount => (
                "Confirm the deletion of your {{app_name}} account",
                "Someone asked to delete the account {{email}}. This cannot be undone. If it was \
                 you, confirm; otherwise ignore this message.",
                "Delete my account",
            ),
            Self::MagicLink => (
                "Sign in to {{app_name}}",
                "Someone asked to sign in to {{app_name}} as {{email}}. If it was you, follow \
                 the link within {{minutes}} minutes (it works once); otherwise ignore this \
                 message.",
                "Sign in",
            ),
            Self::TwoFactorOtp | Self::EmailOtp => ("", "", ""),
        };
        Template {
            subject: subject.into(),
            text: format!(
                "Hello {{{{name}}}},\n\n{intro}\n\n{action}: {{{{link}}}}\n\n— {{{{app_name}}}}\n"
            ),
            html: format!(
                "<!DOCTYPE html><html><body style=\"font-family:system-ui,sans-serif\">\
                 <p>Hello {{{{name}}}},</p><p>{intro}</p>\
                 <p><a href=\"{{{{link}}}}\">{action}</a></p>\
                 <p style=\"color:#666\">Or open this link: {{{{link}}}}</p>\
                 <p>— {{{{app_name}}}}</p></body></html>"
            ),
        }
    }
}

/// A message to send, as a decision stores it with its change (the mail consumer's payload):
/// everything to render it later. It holds the link, so it is never delivered to webhooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MailJob {
    /// Random: the message is sent once under this id ([`crate::AppState::deliver`]).
    pub id: String,
    pub kind: MailKind,
    pub to: String,
    pub link: String,
    /// Template values (`name`, `new_email`…).
    pub vars: Vec<(String, String)>,
}

impl MailJob {
    pub fn new(kind: MailKind, to: &str, link: String, vars: &[(&str, &str)]) -> Self {
        Self {
            id: storage::random_string(20),
            kind,
            to: to.to_owned(),
            link,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// The job as a mail event's payload.
    pub fn value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[derive(Debug, Clone)]
struct Template {
    subject: String,
    text: String,
    html: String,
}

/// A rendered message.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mail {
    pub kind: MailKind,
    pub to: String,
    pub from: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// The link the message asks the recipient to follow.
    pub link: String,
    pub created_at: String,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("invalid mail configuration: {0}")]
    Config(String),
    #[error("cannot read template {0}: {1}")]
    Template(PathBuf, std::io::Error),
    #[error("cannot write to the outbox: {0}")]
    Outbox(std::io::Error),
    #[error("invalid recipient address")]
    Address,
    #[error("building the message failed: {0}")]
    Build(String),
}

enum Transport {
    Disabled,
    Outbox(PathBuf),
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

pub struct Mailer {
    transport: Transport,
    templates: Vec<(MailKind, Template)>,
    from: Mailbox,
    app_name: String,
    timeout: Duration,
    retries: u32,
    /// Mails by kind and outcome (see [`Mailer::with_metrics`]).
    outcomes: Option<prometheus::IntCounterVec>,
}

impl Mailer {
    /// Counts each mail by kind and outcome (`written`, `sent`, `failed`) in `outcomes`.
    pub fn with_metrics(mut self, outcomes: prometheus::IntCounterVec) -> Self {
        self.outcomes = Some(outcomes);
        self
    }

    pub fn from_config(cfg: &MailConfig, data_dir: &Path) -> Result<Self, MailError> {
        let from: Mailbox = cfg
            .from
            .parse()
            .map_err(|e| MailError::Config(format!("mail.from {:?}: {e}", cfg.from)))?;
        let timeout = Duration::from_millis(cfg.send_timeout_ms.max(1));
        // Nothing is created here (the outbox folder appears with its first message), so a
        // configuration can be checked before anything exists on disk.
        let transport = match cfg.transport {
            MailTransport::None => Transport::Disabled,
            MailTransport::Outbox => Transport::Outbox(data_dir.join("outbox")),
            MailTransport::Smtp => Transport::Smtp(smtp_transport(cfg, timeout)?),
        };
        let mut templates = Vec::new();
        for kind in MailKind::ALL {
            let mut t = kind.builtin();
            if let Some(dir) = &cfg.templates_dir {
                for (ext, slot) in [
                    ("subject", &mut t.subject),
                    ("txt", &mut t.text),
                    ("html", &mut t.html),
                ] {
                    let path = dir.join(format!("{}.{ext}", kind.name()));
                    match std::fs::read_to_string(&path) {
                        Ok(s) => {
                            *slot = if ext == "subject" {
                                s.trim().to_owned()
                            } else {
                                s
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(MailError::Template(path, e)),
                    }
                }
            }
            templates.push((kind, t));
        }
        Ok(Self {
            transport,
            templates,
            from,
            app_name: cfg.app_name.clone(),
            timeout,
            retries: cfg.smtp.retries,
            outcomes: None,
        })
    }

    /// Signs the mail with `app_name` (`{{app_name}}`: `ui.app_name` when set).
    pub fn named(mut self, app_name: &str) -> Self {
        app_name.clone_into(&mut self.app_name);
        self
    }

    /// Whether any sender is configured (`mail.transport` is not `none`).
    pub fn enabled(&self) -> bool {
        !matches!(self.transport, Transport::Disabled)
    }

    /// Whether sending waits on a server (SMTP), so a request should not wait for it.
    pub fn is_remote(&self) -> bool {
        matches!(self.transport, Transport::Smtp(_))
    }

    /// The longest a delivery can take (every attempt timing out, with the pauses between).
    pub fn longest_delivery(&self) -> Duration {
        let pauses: u64 = (1..=self.retries).map(|a| 500u64 << a.min(6)).sum();
        self.timeout * (self.retries + 1) + Duration::from_millis(pauses)
    }

    /// Renders `job` and delivers it, waiting until it is written (outbox) or accepted by the
    /// SMTP server (with the configured retries): `Ok` only then.
    pub async fn deliver(&self, job: &MailJob) -> Result<(), MailError> {
        let vars: Vec<(&str, &str)> = job
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mail = self.render(job.kind, &job.to, &job.link, &vars)?;
        let count = count_into(self.outcomes.clone(), job.kind);
        match &self.transport {
            Transport::Disabled => Ok(()),
            Transport::Outbox(dir) => {
                let written = write_outbox(dir, &mail).await;
                count(if written.is_ok() { "written" } else { "failed" });
                written
            }
            Transport::Smtp(smtp) => {
                let message = build_message(&self.from, &mail)?;
                let sent =
                    deliver(smtp.clone(), message, mail.kind, self.timeout, self.retries).await;
                count(if sent { "sent" } else { "failed" });
                if sent {
                    Ok(())
                } else {
                    Err(MailError::Build("not accepted by the SMTP server".into()))
                }
            }
        }
    }

    fn render(
        &self,
        kind: MailKind,
        to: &str,
        link: &str,
        vars: &[(&str, &str)],
    ) -> Result<Mail, MailError> {
        let t = self
            .templates
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .ok_or_else(|| MailError::Build("no template".into()))?;
        let mut all: Vec<(&str, &str)> =
            vec![("app_name", &self.app_name), ("link", link), ("email", to)];
        all.extend_from_slice(vars);
        let fill = |s: &str, escape: bool| fill_template(s, &all, escape);
        Ok(Mail {
            kind,
            to: to.to_owned(),
            from: self.from.to_string(),
            subject: fill(&t.subject, false).replace(['\r', '\n'], " "),
            text: fill(&t.text, false),
            html: fill(&t.html, true),
            link: link.to_owned(),
            created_at: crate::dto::iso(&Utc::now()),
        })
    }
}

/// Replaces each `{{name}}` of the template once, in one pass: a value is never read as a
/// template itself, so a user-chosen name such as `{{link}}` stays text. Later entries of `vars`
/// win (explicit values override the defaults); unknown placeholders are left as they are.
fn fill_template(template: &str, vars: &[(&str, &str)], escape: bool) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let value = after.find("}}").and_then(|end| {
            let key = &after[..end];
            vars.iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (end, *v))
        });
        match value {
            Some((end, v)) => {
                if escape {
                    out.push_str(&html_escape(v));
                } else {
                    out.push_str(v);
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

fn smtp_transport(
    cfg: &MailConfig,
    timeout: Duration,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
    let s = &cfg.smtp;
    let tls_params = || {
        TlsParameters::new(s.host.clone()).map_err(|e| MailError::Config(format!("smtp tls: {e}")))
    };
    let tls = match s.security {
        SmtpSecurity::None => Tls::None,
        SmtpSecurity::Starttls => Tls::Required(tls_params()?),
        SmtpSecurity::Tls => Tls::Wrapper(tls_params()?),
    };
    let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(s.host.clone())
        .port(s.port)
        .tls(tls)
        .timeout(Some(timeout));
    if let (Some(user), Some(pass)) = (&s.username, &s.password) {
        b = b.credentials(Credentials::new(user.clone(), pass.expose().to_owned()));
    }
    Ok(b.build())
}

fn build_message(from: &Mailbox, mail: &Mail) -> Result<lettre::Message, MailError> {
    let to: Mailbox = mail.to.parse().map_err(|_| MailError::Address)?;
    lettre::Message::builder()
        .from(from.clone())
        .to(to)
        .subject(mail.subject.clone())
        .multipart(
            MultiPart::alternative()
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_PLAIN)
                        .body(mail.text.clone()),
                )
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_HTML)
                        .body(mail.html.clone()),
                ),
        )
        .map_err(|e| MailError::Build(e.to_string()))
}

/// Counts one outcome of a mail of `kind` (when metrics are on).
fn count_into(outcomes: Option<prometheus::IntCounterVec>, kind: MailKind) -> impl Fn(&str) {
    move |outcome| {
        if let Some(c) = &outcomes {
            c.with_label_values(&[kind.name(), outcome]).inc();
        }
    }
}

/// Sends with a time limit per attempt; transient failures are retried with backoff. Answers
/// whether the message was accepted.
async fn deliver(
    smtp: AsyncSmtpTransport<Tokio1Executor>,
    message: lettre::Message,
    kind: MailKind,
    timeout: Duration,
    retries: u32,
) -> bool {
    for attempt in 0..=retries {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 << attempt.min(6))).await;
        }
        match tokio::time::timeout(timeout, smtp.send(message.clone())).await {
            Ok(Ok(_)) => {
                tracing::info!(kind = kind.name(), "mail sent");
                return true;
            }
            Ok(Err(e)) if !e.is_transient() && !e.is_timeout() => {
                tracing::error!(kind = kind.name(), error = %e, "mail rejected; not retrying");
                return false;
            }
            Ok(Err(e)) => {
                tracing::warn!(kind = kind.name(), attempt, error = %e, "mail sending failed")
            }
            Err(_) => tracing::warn!(kind = kind.name(), attempt, "mail sending timed out"),
        }
    }
    tracing::error!(kind = kind.name(), "mail not sent after retries");
    false
}

/// Outbox files sort in the order they were written: the time to the nanosecond, then a
/// counter for messages of one process within the same tick.
static OUTBOX_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

async fn write_outbox(dir: &Path, mail: &Mail) -> Result<(), MailError> {
    let seq = OUTBOX_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(
        "{}-{seq:08}-{}-{}.json",
        Utc::now().format("%Y%m%dT%H%M%S%.9fZ"),
        mail.kind.name(),
        storage::random_lower_alnum(6)
    );
    let path = dir.join(name);
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(MailError::Outbox)?;
    let json = serde_json::to_vec_pretty(mail).map_err(|e| MailError::Build(e.to_string()))?;
    // Write then rename, so a reader never sees half a file.
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, json)
        .await
        .map_err(MailError::Outbox)?;
    tokio::fs::rename(&tmp, &path)
        .await
        .map_err(MailError::Outbox)?;
    // Where to find it, never its link: a link holds a single-use token, and logs are kept and
    // read more widely than the outbox.
    tracing::info!(kind = mail.kind.name(), file = %path.display(), "mail written to outbox");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fill_template;

    #[test]
    fn values_are_filled_once_and_escaped_in_html() {
        let vars = [
            ("link", "https://x.example/a?b=1&c=2"),
            ("organization", "<b>{{link}}</b> & co"),
            ("name", "Ann"),
            ("name", "Bob"),
        ];
        let t = "Hi {{name}}, join {{organization}}: {{link}} {{unknown}} {{";
        assert_eq!(
            fill_template(t, &vars, false),
            "Hi Bob, join <b>{{link}}</b> & co: https://x.example/a?b=1&c=2 {{unknown}} {{"
        );
        assert_eq!(
            fill_template("<a href=\"{{link}}\">{{organization}}</a>", &vars, true),
            "<a href=\"https://x.example/a?b=1&amp;c=2\">&lt;b&gt;{{link}}&lt;/b&gt; &amp; co</a>"
        );
    }
}
