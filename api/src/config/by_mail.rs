//! Sign-in by mail: codes (`[email_otp]`) and links (`[magic_link]`).
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmailOtpConfig {
    /// How long a mailed code works, seconds (5 minutes).
    pub expires_in: u64,
    /// Wrong tries a code takes; the next try answers 403 `TOO_MANY_ATTEMPTS` and the code is
    /// dead (a new one must be asked for).
    pub allowed_attempts: u32,
    /// `/sign-in/email-otp` signs in existing users only: an unknown address is not signed
    /// up (and is mailed no code).
    pub disable_sign_up: bool,
    /// `/email-otp/request-email-change` and `/email-otp/change-email`: a signed-in user
    /// changes their address by a code mailed to the new one (off by default, as in 1.7).
    pub change_email: bool,
    /// The change also needs an `email-verification` code mailed to the current address.
    pub change_email_verify_current: bool,
}

impl Default for EmailOtpConfig {
    fn default() -> Self {
        Self {
            expires_in: 300,
            allowed_attempts: 3,
            disable_sign_up: false,
            change_email: false,
            change_email_verify_current: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MagicLinkConfig {
    /// How long a mailed sign-in link works, seconds (5 minutes).
    pub expires_in: u64,
    /// A link signs in existing users only: an unknown address is not signed up (and is
    /// mailed no link).
    pub disable_sign_up: bool,
}

impl Default for MagicLinkConfig {
    fn default() -> Self {
        Self {
            expires_in: 300,
            disable_sign_up: false,
        }
    }
}
