//! Failpoints for the crash tests: `GATEHOUSE_FAILPOINT=<name>` makes the process abort at the
//! named point (as `kill -9` would: no destructor, no flush), so a test can check that what a
//! decision stored survives a process dying right after it. Read once; unset in production.
use std::sync::OnceLock;

/// Whether the failpoint `name` is armed.
pub fn hit(name: &str) -> bool {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| std::env::var("GATEHOUSE_FAILPOINT").ok())
        .as_deref()
        == Some(name)
}
