//! Sessions and their cookie cache, password hashing, limits, actors and logs.
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Session lifetime, seconds (7 days).
    pub expires_in: u64,
    /// A session is extended when its last update is older than this, seconds (1 day).
    pub update_age: u64,
    /// Sensitive actions need a session younger than this, seconds (1 day); 0 = off.
    pub fresh_age: u64,
    /// Lifetime of a `rememberMe: false` session, seconds (1 day).
    pub dont_remember_expires_in: u64,
    pub cookie_cache: CookieCacheConfig,
    pub user_cache: UserCacheConfig,
}

/// Each process keeps the users of the sessions it resolved lately, so resolving a session
/// again reads only the session (always from the store: a revoked session is gone at once).
/// A change of the user made through this process is seen by its next read; one made by
/// another process sharing the store when this process reads its event (within a fraction
/// of a second) and at the latest after `ttl_ms`. Routes that ask for a fresh session
/// (`disableCookieCache`, sensitive changes) and the admin routes read the user from the
/// store. The member an organization route answers with shows its user from this cache too.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserCacheConfig {
    /// Milliseconds a cached user is trusted at most (0: no cache, every session resolution
    /// reads its user).
    pub ttl_ms: u64,
    /// Users kept at most.
    pub max_entries: usize,
}

impl Default for UserCacheConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 1000,
            max_entries: 10_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CookieCacheConfig {
    /// Off by default, as in better-auth.
    pub enabled: bool,
    /// Seconds a cached session is trusted without asking the store (5 minutes).
    pub max_age: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasswordConfig {
    pub min_length: usize,
    pub max_length: usize,
    /// argon2id memory cost, KiB.
    pub argon2_memory_kib: u32,
    pub argon2_iterations: u32,
    pub argon2_parallelism: u32,
    /// Hashes computed at once; more wait (0 = one per CPU core).
    pub max_concurrent_hashes: usize,
    /// How much lower the hashing threads' priority is than the server's (added to its nice
    /// value, 0–19, at most 19; Linux): above 0 they yield their core to the threads that
    /// answer requests when both want it, and use every core otherwise — session reads stay
    /// fast during a burst of sign-ins, which take longer then.
    pub hash_thread_nice: i32,
    /// Hashing threads in the idle scheduling class (`SCHED_IDLE`, Linux): they run only on a
    /// core no other thread wants, and a request thread that wakes takes the core from them at
    /// once — where a high nice value still lets a hash hold the core for a while. Off: the
    /// nice value alone decides.
    pub hash_thread_idle: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Reset-password token lifetime, seconds.
    pub reset_password_token_expires_in: u64,
    /// Delete-account token lifetime, seconds.
    pub delete_account_token_expires_in: u64,
    /// Email verification token lifetime, seconds.
    pub verification_token_expires_in: u64,
    /// Invitation lifetime, seconds.
    pub invitation_expires_in: u64,
    /// Members per organization.
    pub membership_limit: u32,
    /// Invitations an organization may send per 24 hours (0: no cap).
    pub invitations_per_organization_per_day: u32,
    /// Invitations one member may send per 24 hours (0: no cap).
    pub invitations_per_inviter_per_day: u32,
    /// Organizations a user may create (absent: unlimited).
    pub organization_limit: Option<u32>,
    /// OAuth state lifetime, seconds.
    pub state_expires_in: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActorsConfig {
    /// An actor with no message for this long stops, milliseconds.
    pub idle_timeout_ms: u64,
    /// How long a request waits for an actor to take it, milliseconds; a request not started
    /// by then is never applied (503).
    pub call_timeout_ms: u64,
    /// Requests that may wait for one user's or organization's actor; more get 503 at once.
    pub max_pending: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `tracing` filter, e.g. `info` or `gatehouse=debug,info`; `RUST_LOG` wins when set.
    pub level: String,
    /// `text` or `json`.
    pub format: String,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            expires_in: 7 * 86400,
            update_age: 86400,
            fresh_age: 86400,
            dont_remember_expires_in: 86400,
            cookie_cache: CookieCacheConfig::default(),
            user_cache: UserCacheConfig::default(),
        }
    }
}

impl Default for CookieCacheConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_age: 300,
        }
    }
}

impl Default for PasswordConfig {
    fn default() -> Self {
        Self {
            min_length: 8,
            max_length: 128,
            argon2_memory_kib: 19456,
            argon2_iterations: 2,
            argon2_parallelism: 1,
            max_concurrent_hashes: 0,
            hash_thread_nice: 19,
            hash_thread_idle: true,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            reset_password_token_expires_in: 3600,
            delete_account_token_expires_in: 86400,
            verification_token_expires_in: 3600,
            invitation_expires_in: 172800,
            membership_limit: 100,
            invitations_per_organization_per_day: 100,
            invitations_per_inviter_per_day: 50,
            organization_limit: None,
            state_expires_in: 600,
        }
    }
}

impl Default for ActorsConfig {
    fn default() -> Self {
        Self {
            idle_timeout_ms: 60_000,
            call_timeout_ms: 10_000,
            max_pending: 256,
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            format: "text".into(),
        }
    }
}
