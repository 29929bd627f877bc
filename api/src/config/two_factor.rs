//! The two-factor plugin (`[two_factor]`).
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TwoFactorConfig {
    /// The issuer authenticator apps show for the account (`otpauth://` URI); empty: the mail's
    /// `app_name`. A request's `issuer` overrides it.
    pub issuer: String,
    /// How long a sign-in waits for its second factor, seconds (10 minutes).
    pub challenge_expires_in: u64,
    /// Wrong codes a sign-in's challenge takes before it is dead (a new sign-in starts anew).
    pub max_attempts: u32,
    /// Wrong codes in a row (any challenge) after which the user's second factor is refused
    /// for `lock_secs`.
    pub lock_after: u32,
    pub lock_secs: u64,
    /// How long a trusted device skips the second factor, days (renewed on each use).
    pub trust_device_days: u32,
}

impl Default for TwoFactorConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            challenge_expires_in: 600,
            max_attempts: 5,
            lock_after: 10,
            lock_secs: 900,
            trust_device_days: 30,
        }
    }
}
