//! A per-process cache of what the store holds, never stale after a change made in this
//! process and at most `ttl` old after one made elsewhere (the organization views of `views`,
//! the users of sessions). Its callers keep the rules:
//!
//! - every change drops the entries it touches before its caller sees the answer (and again
//!   once it landed: a caller that gave up waiting is not told, the change may still land);
//! - a read that began before a drop and ends after it does not fill: [`TtlCache::lookup`]
//!   hands a ticket (the number of drops so far) that [`TtlCache::fill`] checks;
//! - another process's changes are dropped when its events are read (`consumers`), and in any
//!   case once an entry is `ttl` old.
//!
//! At most `max_entries` entries: a full cache forgets what expired, then its oldest quarter.
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a cache behaves (see the module documentation).
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// How old an entry may be when read (zero: no cache).
    pub ttl: Duration,
    /// Entries held at most (zero: no cache).
    pub max_entries: usize,
}

/// The users of sessions this process resolved (see `Reader::session_with_user`).
pub(crate) type UserCache = TtlCache<storage::UserId, std::sync::Arc<storage::User>>;

/// What [`TtlCache::lookup`] found.
pub(crate) enum Found<V> {
    Hit(V),
    /// Not cached: read the store, then [`TtlCache::fill`] with this ticket.
    Miss(u64),
    /// The cache is off (zero `ttl` or `max_entries`): read the store.
    Off,
}

struct Inner<K, V> {
    drops: u64,
    entries: HashMap<K, (Instant, V)>,
}

pub(crate) struct TtlCache<K, V> {
    ttl: Duration,
    max_entries: usize,
    inner: Mutex<Inner<K, V>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    pub(crate) fn new(config: &CacheConfig) -> Self {
        Self {
            ttl: config.ttl,
            max_entries: config.max_entries,
            inner: Mutex::new(Inner {
                drops: 0,
                entries: HashMap::new(),
            }),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        !self.ttl.is_zero() && self.max_entries > 0
    }

    pub(crate) fn lookup(&self, key: &K) -> Found<V> {
        if !self.enabled() {
            return Found::Off;
        }
        let Ok(inner) = self.inner.lock() else {
            return Found::Off;
        };
        match inner.entries.get(key) {
            Some((at, v)) if at.elapsed() < self.ttl => Found::Hit(v.clone()),
            _ => Found::Miss(inner.drops),
        }
    }

    /// Caches `value` (read after a [`Found::Miss`] that gave `ticket`) unless a drop happened
    /// since.
    pub(crate) fn fill(&self, key: &K, ticket: u64, value: V) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.drops != ticket {
            return;
        }
        if inner.entries.len() >= self.max_entries && !inner.entries.contains_key(key) {
            let ttl = self.ttl;
            inner.entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if inner.entries.len() >= self.max_entries {
                // Full of fresh entries: the oldest quarter goes (at least one), so a full
                // cache is not searched again on the next fill.
                let mut ages: Vec<(Instant, K)> = inner
                    .entries
                    .iter()
                    .map(|(k, (at, _))| (*at, k.clone()))
                    .collect();
                let n = (ages.len() / 4).max(1);
                ages.select_nth_unstable_by_key(n - 1, |(at, _)| *at);
                for (_, k) in &ages[..n] {
                    inner.entries.remove(k);
                }
            }
        }
        inner.entries.insert(key.clone(), (Instant::now(), value));
    }

    /// After a change of what `key` names.
    pub(crate) fn drop_key(&self, key: &K) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.drops += 1;
            inner.entries.remove(key);
        }
    }

    /// After a change that may show in any entry.
    pub(crate) fn drop_all(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.drops += 1;
            inner.entries.clear();
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().map(|i| i.entries.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(ttl_ms: u64, max_entries: usize) -> CacheConfig {
        CacheConfig {
            ttl: Duration::from_millis(ttl_ms),
            max_entries,
        }
    }

    fn miss(c: &TtlCache<u32, u32>, k: u32) -> u64 {
        match c.lookup(&k) {
            Found::Miss(t) => t,
            _ => panic!("not a miss"),
        }
    }

    #[test]
    fn a_read_that_began_before_a_drop_does_not_fill() {
        let c = TtlCache::new(&config(60_000, 8));
        for change in [
            Box::new(|c: &TtlCache<u32, u32>| c.drop_key(&1)) as Box<dyn Fn(&TtlCache<u32, u32>)>,
            Box::new(|c: &TtlCache<u32, u32>| c.drop_key(&2)),
            Box::new(|c: &TtlCache<u32, u32>| c.drop_all()),
        ] {
            let t = miss(&c, 1);
            change(&c);
            c.fill(&1, t, 10);
            assert!(matches!(c.lookup(&1), Found::Miss(_)));
        }
        let t = miss(&c, 1);
        c.fill(&1, t, 10);
        assert!(matches!(c.lookup(&1), Found::Hit(10)));
        c.drop_key(&1);
        assert!(matches!(c.lookup(&1), Found::Miss(_)));
    }

    #[test]
    fn entries_expire_are_bounded_and_zero_is_off() {
        let c = TtlCache::new(&config(300, 2));
        for k in 0..3 {
            let t = miss(&c, k);
            c.fill(&k, t, k);
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(c.len(), 2);
        assert!(matches!(c.lookup(&0), Found::Miss(_)), "the oldest went");
        assert!(matches!(c.lookup(&2), Found::Hit(2)));
        std::thread::sleep(Duration::from_millis(350));
        assert!(matches!(c.lookup(&2), Found::Miss(_)));
        let off: TtlCache<u32, u32> = TtlCache::new(&config(0, 8));
        assert!(matches!(off.lookup(&1), Found::Off));
        let off: TtlCache<u32, u32> = TtlCache::new(&config(1000, 0));
        assert!(matches!(off.lookup(&1), Found::Off));
    }
}
