//! Rate limits, the audit log and the HTTP server's connection limits.
use super::*;

/// Request limits (see README, "Rate limits"): per client address and path, per account for
/// failed sign-ins, per recipient for mail.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Where the counters of the named rules, failed sign-ins and mail live: `"store"` (the
    /// configured store, so several processes on it share their limits) or `"memory"` (this
    /// process's; with N processes the limits are N times as high). The general rule always
    /// counts in memory: it guards the process that serves the request.
    pub storage: RateLimitStorage,
    /// The window of the general rule (every route under `/api/auth` no other rule names),
    /// seconds.
    pub window: u64,
    /// Requests per client address in that window.
    pub max: u32,
    /// Rules by path under `/api/auth` (`/sign-in/*` ends with a wildcard); the most
    /// specific match wins. Replaces the built-in rules of the same path.
    pub rules: BTreeMap<String, RateRule>,
    /// IPv6 clients are counted by this prefix of their address (one host has a /64).
    pub ipv6_prefix: u8,
    /// Failed sign-ins one account may take from one client address per window before that
    /// address is refused for it.
    pub sign_in_failures_per_client: u32,
    /// Failed sign-ins one account may take from all addresses together per window before
    /// every sign-in to it is refused until the window ends.
    pub sign_in_failures_per_account: u32,
    /// The window of both sign-in failure counts, seconds.
    pub sign_in_failure_window: u64,
    /// Mails one address may be sent per window (verification, reset, email change,
    /// deletion, invitations), whoever asks.
    pub mail_per_recipient: u32,
    /// Of those, how many one client address may ask for: one client alone cannot use up an
    /// address's whole allowance (and so keep its owner's reset mail away).
    pub mail_per_recipient_per_client: u32,
    /// That window, seconds.
    pub mail_window: u64,
}

/// Where rate-limit counters live (`rate_limit.storage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateLimitStorage {
    Store,
    Memory,
}

/// One rate-limit rule: at most `max` requests per client address per `window` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateRule {
    pub window: u64,
    pub max: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            storage: RateLimitStorage::Store,
            window: 10,
            max: 100,
            rules: BTreeMap::new(),
            ipv6_prefix: 64,
            sign_in_failures_per_client: 10,
            sign_in_failures_per_account: 50,
            sign_in_failure_window: 900,
            mail_per_recipient: 10,
            mail_per_recipient_per_client: 3,
            mail_window: 3600,
        }
    }
}

/// The audit log of security events (see README, "Audit log").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// `false`: no events are recorded (the read routes answer an empty log).
    pub enabled: bool,
    /// How long events are kept, days (1–3650): older ones are purged (SQLite) or expire by
    /// themselves (ScyllaDB's TTL). Reads never reach further back.
    pub retention_days: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            retention_days: 90,
        }
    }
}

impl AuditConfig {
    pub fn retention(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.retention_days) * 86_400)
    }

    /// The oldest instant still kept at `now`: reads never reach further back.
    pub fn oldest_kept(&self, now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
        now - chrono::Duration::days(i64::from(self.retention_days))
    }
}

/// Connection limits of the HTTP server (see `api/src/server.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// A request's headers must arrive within this, counted from when the connection starts
    /// waiting for them, milliseconds.
    pub header_read_timeout_ms: u64,
    /// A request's body must arrive within this once its headers have, milliseconds (408).
    pub body_read_timeout_ms: u64,
    /// A connection with no request in flight and no traffic for this long is closed,
    /// milliseconds.
    pub keep_alive_timeout_ms: u64,
    /// Connections open at once; at the cap the server stops accepting until one closes.
    /// Lowered at start to what the open-files limit allows.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes; larger ones get 431.
    pub max_header_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            keep_alive_timeout_ms: 5_000,
            max_connections: 10_000,
            max_header_bytes: 16_384,
        }
    }
}
