//! Rate-limit counters: windows keyed by a string (`"ip:/sign-in/*:203.0.113.7"`), each
//! counting hits until it ends. The trait is what the HTTP layer asks. The embedded default
//! keeps the counters in this process's memory (bounded, expired windows swept as it goes),
//! which is exact for one process; both store backends implement the same trait on their
//! tables, so that the limits of several processes on one store add up instead of
//! multiplying (`rate_limit.storage = "store"`).
use crate::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// A window's count after a hit (or as it stands), and when the window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    pub count: u32,
    pub resets_at: DateTime<Utc>,
}

/// Counters of hits per key and window.
///
/// A key's window opens at its first hit (a backend may instead align windows to the clock:
/// the `window`-long slot that holds the hit) and ends at most `window` later; the next hit
/// after it opens a new one. Every caller of one key passes the same `window`. Counts are
/// exact up to `cap`: a backend may stop counting there and answer any number above `cap`
/// for a window that holds more (a limit of `max` asks with a cap of `max + 1`). Of N
/// concurrent hits past a limit, at most the limit's number see a count within it.
#[async_trait]
pub trait RateLimitStore: Send + Sync {
    /// Counts one hit on `key` and answers its window's count with this hit.
    async fn hit(
        &self,
        key: &str,
        window: Duration,
        cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount>;

    /// The count of `key`'s window at `now`, without counting (0 when none is open).
    async fn count(
        &self,
        key: &str,
        window: Duration,
        cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount>;

    /// Housekeeping: forgets the windows that ended by `now` (how many, where the backend
    /// can tell; windows that expire by themselves count as none).
    async fn purge_rate_limits(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// How a key is written to a store: its SHA-256 (hex, first 16 bytes). Keys hold addresses
/// and email addresses; the tables hold neither, and every key has one short length.
pub fn stored_key(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

const SHARDS: usize = 16;

/// The embedded counters: sharded maps (one lock per shard, held for a lookup), swept of ended
/// windows whenever a shard grows past its bound, so memory follows the live keys only.
pub struct MemoryRateLimits {
    shards: Vec<Mutex<Shard>>,
    max_keys_per_shard: usize,
}

#[derive(Default)]
struct Shard {
    windows: HashMap<String, (u32, DateTime<Utc>)>,
}

impl Default for MemoryRateLimits {
    fn default() -> Self {
        Self::new(1 << 20)
    }
}

impl MemoryRateLimits {
    /// Counters for at most about `max_keys` live keys: past that, the windows that end
    /// soonest are dropped first (a flood of new keys cannot grow memory without bound).
    pub fn new(max_keys: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            max_keys_per_shard: (max_keys / SHARDS).max(16),
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        // FNV-1a: cheap, and the shard only spreads lock contention.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        &self.shards[(h as usize) % SHARDS]
    }

    /// How many keys have an open window (for tests and metrics).
    pub fn live_keys(&self, now: DateTime<Utc>) -> usize {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .map(|s| s.windows.values().filter(|(_, end)| *end > now).count())
                    .unwrap_or(0)
            })
            .sum()
    }
}

impl Shard {
    fn sweep(&mut self, now: DateTime<Utc>, bound: usize) {
        self.windows.retain(|_, (_, end)| *end > now);
        if self.windows.len() >= bound {
            // Still full of live windows: drop the half that ends soonest.
            let mut ends: Vec<DateTime<Utc>> = self.windows.values().map(|(_, e)| *e).collect();
            ends.sort_unstable();
            let cut = ends[ends.len() / 2];
            self.windows.retain(|_, (_, end)| *end > cut);
        }
    }
}

fn poisoned() -> crate::StoreError {
    crate::StoreError::Internal("rate-limit counters: a lock was poisoned".into())
}

#[async_trait]
impl RateLimitStore for MemoryRateLimits {
    async fn hit(
        &self,
        key: &str,
        window: Duration,
        _cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let mut shard = self.shard(key).lock().map_err(|_| poisoned())?;
        if let Some((count, end)) = shard.windows.get_mut(key) {
            if *end > now {
                *count = count.saturating_add(1);
                return Ok(WindowCount {
                    count: *count,
                    resets_at: *end,
                });
            }
            *count = 1;
            *end = now + window;
            return Ok(WindowCount {
                count: 1,
                resets_at: *end,
            });
        }
        if shard.windows.len() >= self.max_keys_per_shard {
            shard.sweep(now, self.max_keys_per_shard);
        }
        let end = now + window;
        shard.windows.insert(key.to_owned(), (1, end));
        Ok(WindowCount {
            count: 1,
            resets_at: end,
        })
    }

    async fn count(
        &self,
        key: &str,
        _window: Duration,
        _cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let shard = self.shard(key).lock().map_err(|_| poisoned())?;
        Ok(match shard.windows.get(key) {
            Some((count, end)) if *end > now => WindowCount {
                count: *count,
                resets_at: *end,
            },
            _ => WindowCount {
                count: 0,
                resets_at: now,
            },
        })
    }

    async fn purge_rate_limits(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        let mut purged = 0;
        for shard in &self.shards {
            let mut shard = shard.lock().map_err(|_| poisoned())?;
            let before = shard.windows.len();
            shard.windows.retain(|_, (_, end)| *end > now);
            purged += (before - shard.windows.len()) as u64;
        }
        Ok(purged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[tokio::test]
    async fn windows_count_then_reset() {
        let m = MemoryRateLimits::default();
        let w = Duration::seconds(10);
        for i in 1..=3 {
            assert_eq!(m.hit("k", w, 9, t(i)).await.unwrap().count, i as u32);
        }
        assert_eq!(m.count("k", w, 9, t(5)).await.unwrap().count, 3);
        assert_eq!(m.hit("k", w, 9, t(5)).await.unwrap().resets_at, t(11));
        // The window started at the first hit (t=1) ends at t=11.
        assert_eq!(m.hit("k", w, 9, t(11)).await.unwrap().count, 1);
        assert_eq!(m.count("other", w, 9, t(11)).await.unwrap().count, 0);
    }

    #[tokio::test]
    async fn memory_stays_bounded_under_a_flood_of_keys() {
        let m = MemoryRateLimits::new(16 * 64);
        for i in 0..100_000 {
            m.hit(&format!("k{i}"), Duration::seconds(60), 9, t(i / 1000))
                .await
                .unwrap();
        }
        assert!(m.live_keys(t(100)) <= 16 * 64, "{}", m.live_keys(t(100)));
    }

    #[tokio::test]
    async fn concurrent_hits_are_all_counted() {
        let m = std::sync::Arc::new(MemoryRateLimits::default());
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move { m.hit("k", Duration::seconds(10), 60, t(0)).await })
            })
            .collect();
        let mut counts: Vec<u32> = Vec::new();
        for task in tasks {
            counts.push(task.await.unwrap().unwrap().count);
        }
        counts.sort_unstable();
        assert_eq!(counts, (1..=50).collect::<Vec<u32>>());
    }
}
