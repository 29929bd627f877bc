//! Sessions this process read, answered again without a read while no commit since can have
//! changed them.
//!
//! The writer thread accounts for the commits to the file. After each of its jobs or groups
//! (and when idle for a moment) it reads the WAL index header (12 words, walformat §2.1), then
//! asks its connection whether another connection committed since it last asked (`PRAGMA
//! data_version`), and publishes the header it accounted for with an *epoch*:
//! - nobody else committed: that header, and the epoch one up if its own writes changed a row of
//!   `sessions` or `users` (an update hook on its connection tells it; a deleted user takes its
//!   sessions along), else the same epoch;
//! - another connection committed (whatever it wrote): the header read again, epoch one up.
//!
//! A session read is tagged with the epoch published before it began, and is answered from here
//! while its tag is still the published epoch **and** the live header equals the published one
//! word for word. Any commit rewrites the header (its frame count, the log's running checksum,
//! the commit counter); a log that starts over gets new salts; so the header never comes back
//! to a value it had unless the log holds the same frames, and a commit nobody accounted for
//! yet always misses. No counter is compared for order, so nothing wraps or restarts under it.
//!
//! So a session revoked by any process is never answered from here once the revocation
//! committed: this process's commit moves the epoch before its caller hears of it, another
//! process's changes the header until the writer has accounted for it (then the epoch moves).
//! While another process writes and this one does not, sessions are read as before, until the
//! writer has been idle for a moment.
//!
//! Under organization writes (members, events, audit: no session changes) the session of each
//! request is no longer a read in a new read transaction (the log moved since the last one);
//! `get_session_with_user` (get-session with the cookie cache disabled) is answered from here
//! too when the entry was read with its user.
use super::snapshot::WalHeader;
use crate::{Session, User};
use rusqlite::hooks::Action;
use rusqlite::Connection;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;

/// Sessions held at most per shard: 4 096 in all (a few hundred bytes each).
const PER_SHARD: usize = 256;

/// The WAL index header's words (its first copy).
type Words = [u32; 12];

pub(super) struct Known {
    header: Arc<WalHeader>,
    /// What the writer accounted for last (`None` header: nothing answers).
    published: Mutex<Published>,
    /// Set by the writer connection's update hook when a row of `sessions` or `users` changed.
    touched: Arc<AtomicBool>,
    /// The writer connection's `data_version` when last asked.
    version: AtomicI64,
    hasher: RandomState,
    shards: Vec<Mutex<HashMap<String, Entry>>>,
}

#[derive(Clone, Copy)]
struct Published {
    header: Option<Words>,
    epoch: u64,
}

/// A session as read under epoch `tag`, and its user when it was read with it (`Some`).
struct Entry {
    session: Session,
    user: Option<Option<User>>,
    tag: u64,
}

impl Known {
    /// Watches the writer connection `writer` and the database's `header`.
    pub(super) fn new(header: Arc<WalHeader>, writer: &Connection) -> Self {
        let touched = Arc::new(AtomicBool::new(false));
        let hook = touched.clone();
        writer.update_hook(Some(move |_: Action, _: &str, table: &str, _: i64| {
            if matches!(table, "sessions" | "users") {
                hook.store(true, Ordering::Relaxed);
            }
        }));
        let known = Self {
            header,
            published: Mutex::new(Published {
                header: None,
                epoch: 0,
            }),
            touched,
            version: AtomicI64::new(i64::MIN),
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        };
        known.after_writes(writer);
        known
    }

    fn live(&self) -> Option<Words> {
        let h = self.header.read()?;
        let mut words = [0; 12];
        words.copy_from_slice(&h[..12]);
        Some(words)
    }

    fn published(&self) -> Option<Published> {
        self.published.lock().ok().map(|p| *p)
    }

    fn shard(&self, token: &str) -> &Mutex<HashMap<String, Entry>> {
        &self.shards[self.hasher.hash_one(token) as usize % SHARDS]
    }

    /// The session of `token` as a read now would find it, when held; else the tag for
    /// [`Known::fill`] after the read (`None`: do not keep what it finds).
    pub(super) fn get(&self, token: &str) -> Result<Session, Option<u64>> {
        self.find(token, |e| Some(e.session.clone()))
    }

    /// [`Known::get`] for the session and its user, as one read of both would find them.
    pub(super) fn get_with_user(
        &self,
        token: &str,
    ) -> Result<(Session, Option<User>), Option<u64>> {
        self.find(token, |e| Some((e.session.clone(), e.user.clone()?)))
    }

    fn find<T>(
        &self,
        token: &str,
        take: impl FnOnce(&Entry) -> Option<T>,
    ) -> Result<T, Option<u64>> {
        let Some(p) = self.published() else {
            return Err(None);
        };
        if p.header.is_some() && self.live() == p.header {
            if let Ok(shard) = self.shard(token).lock() {
                if let Some(found) = shard.get(token).filter(|e| e.tag == p.epoch).and_then(take) {
                    return Ok(found);
                }
            }
        }
        Err(Some(p.epoch))
    }

    /// Keeps `session` (and its `user`, when read with it), read after [`Known::get`] gave
    /// `tag`.
    pub(super) fn fill(&self, session: &Session, user: Option<Option<&User>>, tag: u64) {
        let Some(epoch) = self.published().map(|p| p.epoch) else {
            return;
        };
        if tag != epoch {
            return;
        }
        let Ok(mut shard) = self.shard(&session.token).lock() else {
            return;
        };
        if shard.len() >= PER_SHARD && !shard.contains_key(&session.token) {
            shard.retain(|_, e| e.tag == epoch);
            if shard.len() >= PER_SHARD {
                shard.clear();
            }
        }
        let entry = Entry {
            session: session.clone(),
            user: user.map(|u| u.cloned()),
            tag,
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
        // `None` while another connection is between the header's two copies.
        let counted = self.live();
        let version = writer
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut q| q.query_row([], |r| r.get::<_, i64>(0)))
            .ok();
        let others = match version {
            Some(v) => self.version.swap(v, Ordering::Relaxed) != v,
            None => {
                self.version.store(i64::MIN, Ordering::Relaxed);
                true
            }
        };
        let Ok(mut p) = self.published.lock() else {
            return;
        };
        if others {
            // Whatever another connection wrote counts as a session change; the header read
            // after the question covers every commit it counted.
            p.header = if version.is_some() { self.live() } else { None };
            p.epoch += 1;
        } else {
            p.header = counted;
            if touched || counted.is_none() {
                p.epoch += 1;
            }
        }
    }
}
