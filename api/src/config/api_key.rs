//! API keys (`[api_key]`): what a new key looks like, its default limits, the header.
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The header a request carries its key in (`x-api-key`); such a request acts as the
    /// key's user on every route that takes a session, except the sensitive ones.
    pub header: String,
    /// Random letters in a new key (after its prefix).
    pub key_length: usize,
    /// The prefix of keys made without one (none by default).
    pub default_prefix: Option<String>,
    /// How many first characters of a key are kept to show it (`start`).
    pub start_length: usize,
    pub min_name_length: usize,
    pub max_name_length: usize,
    pub min_prefix_length: usize,
    pub max_prefix_length: usize,
    /// A key must be given a name.
    pub require_name: bool,
    /// Keys may carry `metadata` (off by default, as in 1.7: `METADATA_DISABLED`).
    pub enable_metadata: bool,
    /// The rate limit of a new key: `max_requests` per `time_window_ms` (1.7's default: 10 a
    /// day). The server key may set another per key, or none.
    pub rate_limit: ApiKeyRateLimit,
    /// Expiry of new keys, days: the default (none: keys do not expire unless asked) and the
    /// bounds of `expiresIn`.
    pub default_expires_in_days: Option<u64>,
    pub min_expires_in_days: u64,
    pub max_expires_in_days: u64,
    /// `expiresIn` may not be chosen by the caller.
    pub disable_custom_expiry: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiKeyRateLimit {
    pub enabled: bool,
    pub time_window_ms: i64,
    pub max_requests: i64,
}

impl Default for ApiKeyRateLimit {
    fn default() -> Self {
        Self {
            enabled: true,
            time_window_ms: 86_400_000,
            max_requests: 10,
        }
    }
}

impl Default for ApiKeyConfig {
    fn default() -> Self {
        Self {
            header: "x-api-key".into(),
            key_length: 64,
            default_prefix: None,
            start_length: 6,
            min_name_length: 1,
            max_name_length: 32,
            min_prefix_length: 1,
            max_prefix_length: 32,
            require_name: false,
            enable_metadata: false,
            rate_limit: ApiKeyRateLimit::default(),
            default_expires_in_days: None,
            min_expires_in_days: 1,
            max_expires_in_days: 365,
            disable_custom_expiry: false,
        }
    }
}

impl ApiKeyConfig {
    pub(super) fn check(&self) -> Result<(), String> {
        let header_ok = !self.header.is_empty()
            && self
                .header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !header_ok {
            return Err(format!(
                "api_key.header {:?} must be a header name (letters, digits, - and _)",
                self.header
            ));
        }
        if self.key_length < 32 {
            return Err("api_key.key_length must be at least 32".into());
        }
        if self.min_expires_in_days > self.max_expires_in_days
            || self.min_name_length > self.max_name_length
            || self.min_prefix_length > self.max_prefix_length
        {
            return Err("api_key: a minimum is above its maximum".into());
        }
        if self.rate_limit.time_window_ms <= 0 || self.rate_limit.max_requests <= 0 {
            return Err(
                "api_key.rate_limit: time_window_ms and max_requests must be positive".into(),
            );
        }
        if let Some(p) = &self.default_prefix {
            if !valid_prefix(p) {
                return Err(format!(
                    "api_key.default_prefix {p:?}: letters, digits, _ and - only"
                ));
            }
        }
        Ok(())
    }
}

/// A key prefix: letters, digits, `_` and `-` (as 1.7 accepts).
pub fn valid_prefix(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
