//! Sessions this process read, answered again without a read while every commit since is known
//! to leave them as they were.
//!
//! Every commit to the file, by any connection of any process, adds one to the WAL index
//! header's change counter (`iChange`, walformat §2.1; `snapshot.rs` maps the header). The
//! writer thread accounts for the commits: after each of its jobs it reads the counter, then
//! asks its connection whether another connection committed meanwhile (`PRAGMA
//! data_version`), and publishes two numbers — `last`, the counter it accounted for, and
//! `since`, the counter at the latest commit that may have changed a session: one of its own
//! that wrote to `sessions` or `users` (an update hook on its connection tells it; a deleted
//! user takes its sessions with it), or any other connection's (whatever it wrote; then `since`
//! is the counter read after the question, so it covers every commit the answer counted).
//!
//! A session read is tagged with the counter read before it (the read sees every commit up to
//! it). It is answered from here while the counter still equals `last` (every commit so far is
//! accounted for) and its tag is not older than `since`; otherwise it is read again. So a
//! session revoked by any process is never answered from here once the revocation committed:
//! this process's commit moves `since` before its caller hears of it, another process's moves
//! the counter past `last` until the writer has accounted for it. While this process writes
//! nothing, another process's commits keep the counter past `last` and the sessions are read
//! as before, until the writer next writes or has been idle for a moment.
//!
//! Under organization writes (members, events, audit: no session changes) the session of each
//! request is no longer a read in a new read transaction (the log moved since the last one):
//! ×1.05–1.32 organization writes a second, get-session without the cookie cache ×1.16–1.26
//! (bench/README, twenty-seventh sitting).
//!
//! `get_session_with_user` (get-session with the cookie cache disabled) is answered from here
//! too when the entry was read with its user: `users` is among the tables watched.
use super::snapshot::WalHeader;
use crate::{Session, User};
use rusqlite::hooks::Action;
use rusqlite::Connection;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SHARDS: usize = 16;

/// Sessions held at most per shard: 4 096 in all (a few hundred bytes each).
const PER_SHARD: usize = 256;

/// The word of the WAL index header that counts commits.
const CHANGE_COUNTER: usize = 2;

/// How long an entry answers at most. Tags are compared as 32-bit counters, which wrap: an
/// entry much older than `since` would compare as newer after 2^31 commits (weeks at
/// thousands of commits a second); a minute is far from that.
const HELD_FOR: Duration = Duration::from_secs(60);

pub(super) struct Known {
    header: WalHeader,
    /// `last << 32 | since` (see the module's comment), written by the writer thread only.
    state: AtomicU64,
    /// Set by the writer connection's update hook when a row of `sessions` or `users` changed.
    touched: Arc<AtomicBool>,
    /// The writer connection's `data_version` when last asked.
    version: AtomicI64,
    hasher: RandomState,
    shards: Vec<Mutex<HashMap<String, Entry>>>,
}

/// A session as read with the counter `tag` at `at`, and its user when it was read with it
/// (`Some`).
struct Entry {
    session: Session,
    user: Option<Option<User>>,
    tag: u32,
    at: Instant,
}

impl Entry {
    fn valid(&self, since: u32) -> bool {
        answers(self.tag, self.at, since)
    }
}

/// Whether an entry tagged `tag`, filled at `at`, answers while `since` is published.
fn answers(tag: u32, at: Instant, since: u32) -> bool {
    at_or_after(tag, since) && at.elapsed() < HELD_FOR
}

/// Whether counter `a` is at or after `b` (the counter wraps).
fn at_or_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

impl Known {
    /// Watches the writer connection `writer`; `None` without a mapped header (then every
    /// session is read).
    pub(super) fn new(header: Option<WalHeader>, writer: &Connection) -> Option<Self> {
        let header = header?;
        let touched = Arc::new(AtomicBool::new(false));
        let hook = touched.clone();
        writer.update_hook(Some(move |_: Action, _: &str, table: &str, _: i64| {
            if matches!(table, "sessions" | "users") {
                hook.store(true, Ordering::Relaxed);
            }
        }));
        let known = Self {
            header,
            state: AtomicU64::new(0),
            touched,
            version: AtomicI64::new(i64::MIN),
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        };
        known.after_writes(writer);
        Some(known)
    }

    fn counter(&self) -> Option<u32> {
        self.header.read().map(|h| h[CHANGE_COUNTER])
    }

    fn shard(&self, token: &str) -> &Mutex<HashMap<String, Entry>> {
        &self.shards[self.hasher.hash_one(token) as usize % SHARDS]
    }

    /// The session of `token` as a read now would find it, when held; else the tag for
    /// [`Known::fill`] after the read (`None`: do not keep what it finds).
    pub(super) fn get(&self, token: &str) -> Result<Session, Option<u32>> {
        self.find(token, |e| Some(e.session.clone()))
    }

    /// [`Known::get`] for the session and its user, as one read of both would find them.
    pub(super) fn get_with_user(
        &self,
        token: &str,
    ) -> Result<(Session, Option<User>), Option<u32>> {
        self.find(token, |e| Some((e.session.clone(), e.user.clone()?)))
    }

    fn find<T>(
        &self,
        token: &str,
        take: impl FnOnce(&Entry) -> Option<T>,
    ) -> Result<T, Option<u32>> {
        let state = self.state.load(Ordering::Acquire);
        let (last, since) = ((state >> 32) as u32, state as u32);
        let now = self.counter();
        if now == Some(last) {
            if let Ok(shard) = self.shard(token).lock() {
                if let Some(found) = shard.get(token).filter(|e| e.valid(since)).and_then(take) {
                    return Ok(found);
                }
            }
        }
        Err(now)
    }

    /// Keeps `session` (and its `user`, when read with it), read after [`Known::get`] gave
    /// `tag`.
    pub(super) fn fill(&self, session: &Session, user: Option<Option<&User>>, tag: u32) {
        let since = self.state.load(Ordering::Acquire) as u32;
        if !at_or_after(tag, since) {
            return;
        }
        let Ok(mut shard) = self.shard(&session.token).lock() else {
            return;
        };
        if shard.len() >= PER_SHARD && !shard.contains_key(&session.token) {
            shard.retain(|_, e| e.valid(since));
            if shard.len() >= PER_SHARD {
                shard.clear();
            }
        }
        let entry = Entry {
            session: session.clone(),
            user: user.map(|u| u.cloned()),
            tag,
            at: Instant::now(),
        };
        shard.insert(session.token.clone(), entry);
    }

    /// Drops what is held for `token`: a read found no session for it.
    pub(super) fn forget(&self, token: &str) {
        if let Ok(mut shard) = self.shard(token).lock() {
            shard.remove(token);
        }
    }

    /// The writer thread, after each of its jobs or groups (and when idle), before it answers
    /// them: accounts for the commits so far (see the module's comment).
    pub(super) fn after_writes(&self, writer: &Connection) {
        let touched = self.touched.swap(false, Ordering::AcqRel);
        // Unreadable while another connection is between the header's two copies.
        let Some(counted) = self.counter() else {
            return self.forget_all();
        };
        let version = match writer
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut q| q.query_row([], |r| r.get::<_, i64>(0)))
        {
            Ok(v) => v,
            Err(_) => return self.forget_all(),
        };
        if self.version.swap(version, Ordering::Relaxed) != version {
            // Another connection committed: whatever it wrote counts as a session change.
            return self.forget_all();
        }
        let since = if touched {
            counted
        } else {
            self.state.load(Ordering::Relaxed) as u32
        };
        self.publish(counted, since);
    }

    /// Every session held so far is read again: `since` = `last` = the counter read now, which
    /// covers every commit `data_version` counted so far. When it cannot be read, the next
    /// accounting forgets them (until then the counter is past `last`: the commit that makes
    /// it unreadable is another connection's, after `last`).
    fn forget_all(&self) {
        for _ in 0..64 {
            if let Some(c) = self.counter() {
                return self.publish(c, c);
            }
            std::thread::yield_now();
        }
        self.version.store(i64::MIN, Ordering::Relaxed);
    }

    fn publish(&self, last: u32, since: u32) {
        self.state
            .store(u64::from(last) << 32 | u64::from(since), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_answers_while_young_and_not_older_than_since() {
        let now = Instant::now();
        assert!(answers(7, now, 7));
        assert!(answers(8, now, 7));
        assert!(!answers(6, now, 7));
        // Across the counter's wrap.
        assert!(answers(2, now, u32::MAX - 1));
        assert!(!answers(u32::MAX - 1, now, 2));
        // 2^31 commits behind compares as ahead: only the age bound stops it.
        let ancient = 7u32.wrapping_sub(1 << 31).wrapping_sub(1);
        assert!(at_or_after(ancient, 7));
        let old = now.checked_sub(HELD_FOR + Duration::from_secs(1)).unwrap();
        assert!(!answers(ancient, old, 7));
        assert!(!answers(8, old, 7));
    }
}
