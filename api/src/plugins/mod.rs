//! The HTTP operations, a folder per plugin as better-auth splits them: `core` (email and
//! password, sessions, the user and the account flows), `organization`, `admin` (with the audit
//! log), `social` (providers, their flows and tokens), `jwt`, `two_factor`, `passkey`, `email_otp`,
//! `magic_link`, `api_key`, `webhooks`. Each plugin's `mod.rs` names its
//! operations (`Apis`), one `…Api` per OpenAPI tag; a new plugin is a folder and a line in
//! [`Apis`]. Handlers are thin: parse, one call to an actor or the store, a DTO.
pub mod admin;
pub mod api_key;
pub mod core;
pub mod email_otp;
pub mod jwt;
pub mod magic_link;
pub mod organization;
pub mod passkey;
pub mod social;
pub mod two_factor;
pub mod webhooks;

pub use self::core::meta::{error_page, MetaApi};
pub(crate) use organization::TeamDto;

/// Every plugin's operations.
pub type Apis = (
    self::core::Apis,
    organization::Apis,
    social::Apis,
    admin::Apis,
    jwt::Apis,
    two_factor::Apis,
    passkey::Apis,
    email_otp::Apis,
    magic_link::Apis,
    api_key::Apis,
    webhooks::Apis,
);

/// Every plugin's operations, for the OpenAPI service.
pub fn apis() -> Apis {
    (
        self::core::apis(),
        organization::apis(),
        social::apis(),
        admin::apis(),
        jwt::apis(),
        two_factor::apis(),
        passkey::apis(),
        email_otp::apis(),
        magic_link::apis(),
        api_key::apis(),
        webhooks::apis(),
    )
}

use poem_openapi::Tags;

#[derive(Tags)]
pub enum Tag {
    /// Sign up, sign in and sign out with email and password.
    Auth,
    /// Reading, listing and revoking sessions.
    Sessions,
    /// The signed-in user's profile.
    User,
    /// Email verification, passwords, email change, account deletion, linked accounts.
    Account,
    /// Sign-in and account linking through social providers (OAuth 2.0 / OpenID Connect).
    Social,
    /// Organizations and their members.
    Organization,
    /// Administration of users and sessions (the admin plugin).
    Admin,
    /// JSON Web Tokens for the signed-in user and the keys that verify them.
    Jwt,
    /// Two-factor sign-in: an authenticator app (TOTP), backup codes, trusted devices.
    TwoFactor,
    /// Passkeys (WebAuthn): registering them, signing in with one, managing them.
    Passkey,
    /// Codes by mail: sign-in (and sign-up), email verification, password reset.
    EmailOtp,
    /// Links by mail that sign in (and sign up).
    MagicLink,
    /// API keys for servers and scripts: a user's own, an organization's.
    ApiKey,
    /// Webhooks (a Gatehouse extension): endpoints that hear of sign-ups, members, sessions…
    Webhooks,
    /// Health and the error page.
    Meta,
}

/// The string of an optional body field.
fn text(t: &Option<crate::dto::Text>) -> Option<&str> {
    t.as_ref().map(|t| t.0.as_str())
}

/// A body field that must be an email address: its normalized form, or 400
/// `VALIDATION_ERROR` naming the field (as 1.7's schema validation answers).
pub(crate) fn email_field(raw: &str, field: &str) -> crate::error::ApiResult<String> {
    normalize_email(raw).ok_or_else(|| {
        // 1.7's message names the field the same way.
        let mut e = crate::error::ApiError::validation(
            false,
            vec![format!("{field}: invalid email address")],
        );
        e.message = format!("[body.{field}] Invalid email address").into();
        e
    })
}

/// Lowercased email if it is a plausible address (RFC 5321 sizes, one `@`, a dotted domain of
/// letters, digits and hyphens, no spaces or control characters); `None` otherwise.
pub fn normalize_email(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    if email.len() > 254 {
        return None;
    }
    let (local, domain) = email.split_once('@')?;
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && labels.last().is_some_and(|tld| tld.len() >= 2);
    (local_ok && domain_ok).then_some(email)
}

#[cfg(test)]
mod tests {
    use super::normalize_email;

    #[test]
    fn emails() {
        assert_eq!(
            normalize_email(" Ann@Example.COM ").as_deref(),
            Some("ann@example.com")
        );
        assert!(normalize_email("a.b+tag@sub.example.org").is_some());
        for bad in [
            "",
            "a",
            "a@",
            "@b.com",
            "a@b",
            "a@@b.com",
            "a b@c.com",
            "a@b..com",
            "a@-b.com",
            ".a@b.com",
            "a@b.c",
            "a\nb@c.com",
        ] {
            assert_eq!(normalize_email(bad), None, "{bad:?}");
        }
    }
}
