//! Read connections that keep their snapshot from one read to the next while nothing commits.
//!
//! A connection in autocommit mode begins and ends a read transaction around every statement,
//! and each begin takes a read lock in the write-ahead log's index (an `fcntl` on the `-shm`
//! file, under a mutex that every connection of the process to that file shares): under
//! get-session load, half of SQLite's time. A [`Reader`] instead leaves its transaction open
//! after a read, and the next read runs in it when no transaction committed since — which it
//! checks without a lock by reading the WAL index header (the first thing SQLite itself looks
//! at: every commit of any connection, in this process or another, rewrites it; walformat
//! §2.1) where SQLite maps the `-shm` file ([`WalHeader`]). When the header moved, or the snapshot is
//! older than [`MAX_AGE`], the transaction ends and the read begins a new one. So a read sees
//! every commit that ended before it began, as in autocommit.
//!
//! An open snapshot keeps a checkpoint from copying the log's later frames into the database
//! and the log from starting over: a reader ends its snapshot after a read during which a
//! commit landed, and a sweeper thread ends the ones left open on idle readers once they are
//! [`MAX_AGE`] old.
//!
//! The mapping is checked when the store opens (a commit must move the header it shows);
//! where it cannot be made or does not move, readers run in autocommit mode as before.
use super::{control, StoreResult};
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError, Weak};
use std::time::{Duration, Instant};

/// How long a read snapshot may serve reads. A few thousand reads a second per connection under
/// load: the lock is taken once for dozens of them, and another process's checkpoint never
/// waits longer than this (plus a sweep) for this process's readers.
pub(super) const MAX_AGE: Duration = Duration::from_millis(2);

/// Frames in the log from which readers keep no snapshot until a checkpoint has copied them all
/// into the database: a kept snapshot holds a read mark, which limits how far a checkpoint may
/// go (or, at mark 0, stops it), and a checkpoint runs at 1 000 frames (the checkpoint
/// thread's, `checkpoint.rs`, or SQLite's automatic one). From here on, reads take their lock
/// per statement as in autocommit, so the checkpoint waits for no kept snapshot — of this
/// process or of another — and the log starts over as it would without them.
pub(super) const DUE_FRAMES: u32 = 750;

/// Whether the log holds frames a checkpoint should copy (see [`DUE_FRAMES`]).
pub(super) fn checkpoint_due(h: &Header) -> bool {
    let (max_frame, backfilled) = (h[4], h[12]);
    max_frame >= DUE_FRAMES && backfilled < max_frame
}

/// What a reader watches: one copy of the WAL index header (48 bytes, 12 words; walformat
/// §2.1), which every commit rewrites, then the checkpoint's progress (`nBackfill`, the word
/// after the header's two copies), which a checkpoint moves. A snapshot that began before a
/// checkpoint may hold a read mark that keeps the log from starting over; one begun after a
/// complete checkpoint reads the database file alone and holds none.
pub(super) type Header = [u32; 13];

/// The WAL index header of one database, as SQLite itself maps it.
///
/// The mapping is SQLite's own, reached through a connection kept for it, never a file
/// descriptor of ours: POSIX record locks belong to the process and closing *any* descriptor
/// of a file drops every lock the process holds on it. Mapping the `-shm` file through a
/// descriptor opened and closed here dropped SQLite's lock that says "this process uses the
/// index" (the DMS lock), so the next process to open the database took itself for the first
/// one, cut the `-shm` file short and rebuilt the index under this process's feet (the
/// command line run while the server ran did, at each start; the commit counter restarted).
pub(super) struct WalHeader {
    /// Its first 100 bytes: the header's two copies and the checkpoint's progress. Valid while
    /// `_conn` is open (SQLite unmaps the index when the process's last connection to it closes).
    words: std::ptr::NonNull<u32>,
    /// Kept open (and so attached to the index) for `words`; never used otherwise.
    _conn: Mutex<Connection>,
}

// SAFETY: `words` is only read, through volatile loads, from any thread (SQLite writes the
// bytes from its own threads and processes: that is what is watched); the connection is only
// kept, behind a mutex.
unsafe impl Send for WalHeader {}
unsafe impl Sync for WalHeader {}

/// The size SQLite maps the WAL index in (`WALINDEX_PGSZ`); the header is in the first one.
const INDEX_REGION: i32 = 32 * 1024;

impl WalHeader {
    /// Attaches a new read-only connection to the index of the database `db` (in WAL mode) and
    /// points at the header; `None` when SQLite has no such mapping to give.
    pub(super) fn map(db: &Path) -> Option<Self> {
        use rusqlite::{ffi, OpenFlags};
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        // A read maps the index (region 0, which holds the header).
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
            .ok()?;
        let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
        let mut region: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `handle` is the open connection's; the file control writes the main
        // database's `sqlite3_file` into `file`, whose methods are SQLite's VFS's. `xShmMap`
        // without extending returns the region already mapped for the connection (or null).
        let mapped = unsafe {
            let rc = ffi::sqlite3_file_control(
                conn.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_FILE_POINTER,
                (&mut file as *mut *mut ffi::sqlite3_file).cast(),
            );
            if rc != ffi::SQLITE_OK || file.is_null() || (*file).pMethods.is_null() {
                return None;
            }
            let methods = &*(*file).pMethods;
            let shm_map = methods.xShmMap.filter(|_| methods.iVersion >= 2)?;
            shm_map(file, 0, INDEX_REGION, 0, &mut region)
        };
        if mapped != ffi::SQLITE_OK {
            return None;
        }
        let words = std::ptr::NonNull::new(region.cast::<u32>())?;
        Some(Self {
            words,
            _conn: Mutex::new(conn),
        })
    }

    /// The header as it is now, or `None` while a writer is between its two copies (they
    /// differ then; SQLite writes the second first, the reader reads the first first).
    pub(super) fn read(&self) -> Option<Header> {
        let words = self.words.as_ptr();
        // SAFETY: `words` points at the index's first region (32 KiB, page-aligned), mapped
        // while `_conn` is open; every `at` below is under 25.
        let word = |at: usize| unsafe { std::ptr::read_volatile(words.add(at)) };
        fence(Ordering::SeqCst);
        let mut h: Header = [0; 13];
        for (i, w) in h.iter_mut().take(12).enumerate() {
            *w = word(i);
        }
        fence(Ordering::SeqCst);
        if (0..12).any(|i| word(12 + i) != h[i]) {
            return None;
        }
        h[12] = word(24);
        Some(h)
    }
}

/// A read connection and the snapshot it holds, if any.
pub(super) struct Reader {
    conn: Connection,
    held: Option<Held>,
}

struct Held {
    /// The WAL index header read before the snapshot began: the snapshot is at least as new.
    header: Header,
    since: Instant,
}

impl Reader {
    pub(super) fn new(conn: Connection) -> Self {
        Self { conn, held: None }
    }

    /// Runs the read `f`, in the held snapshot if nothing committed since it began (see the
    /// module's comment), else in a new one; without one when `snapshots` are off. A snapshot
    /// left open wakes the sweeper.
    pub(super) fn run<T>(
        &mut self,
        snapshots: &Snapshots,
        f: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let Some(header) = snapshots.header.as_ref() else {
            return f(&self.conn);
        };
        #[cfg(test)]
        if snapshots.off.load(Ordering::Relaxed) {
            self.end();
            return f(&self.conn);
        }
        // `None` while a writer is between the header's copies, or while a checkpoint is due:
        // then no snapshot is kept.
        let now = header.read().filter(|h| !checkpoint_due(h));
        if let Some(held) = &self.held {
            if snapshots.moved(now, held) || snapshots.too_old(held) || self.conn.is_autocommit() {
                self.end();
            }
        }
        if self.held.is_none() {
            if let Some(header) = now {
                if control(&self.conn, "BEGIN").is_ok() {
                    self.held = Some(Held {
                        header,
                        since: Instant::now(),
                    });
                }
            }
        }
        let r = f(&self.conn);
        if let Some(held) = &self.held {
            // A commit landed during the read: the snapshot serves no other.
            let after = header.read().filter(|h| !checkpoint_due(h));
            if r.is_err() || snapshots.moved(after, held) {
                self.end();
            } else {
                snapshots.left_open();
            }
        }
        r
    }

    /// Whether a snapshot is open.
    pub(super) fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// Ends the snapshot if it is older than its owner allows.
    fn end_if_too_old(&mut self, snapshots: &Snapshots) {
        if self.held.as_ref().is_some_and(|h| snapshots.too_old(h)) {
            self.end();
        }
    }

    fn end(&mut self) {
        self.held = None;
        if !self.conn.is_autocommit() && control(&self.conn, "COMMIT").is_err() {
            // A read transaction holds no change: ending it cannot lose anything.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// What the store's readers share to keep snapshots: the mapped header, and the sweeper.
pub(super) struct Snapshots {
    header: Option<Arc<WalHeader>>,
    max_age: Duration,
    sweeper: OnceLock<std::thread::Thread>,
    /// The sweeper found no snapshot open and sleeps until a read leaves one.
    sweeper_idle: AtomicBool,
    /// Tests: snapshots end only on errors (no header compared, no age), to show that the
    /// tests of reads after another connection's commits fail without the checks.
    #[cfg(test)]
    pub(super) blind: AtomicBool,
    /// Tests: keep no snapshot (as before there were kept snapshots).
    #[cfg(test)]
    pub(super) off: AtomicBool,
}

impl Snapshots {
    pub(super) fn new(header: Option<Arc<WalHeader>>, max_age: Duration) -> Self {
        Self {
            header,
            max_age,
            sweeper: OnceLock::new(),
            sweeper_idle: AtomicBool::new(true),
            #[cfg(test)]
            blind: AtomicBool::new(false),
            #[cfg(test)]
            off: AtomicBool::new(false),
        }
    }

    /// Tests: the watched words as they are now.
    #[cfg(test)]
    pub(super) fn watched(&self) -> Option<Header> {
        self.header.as_ref()?.read()
    }

    /// Whether reads keep snapshots (the header is mapped and moves with commits).
    pub(super) fn on(&self) -> bool {
        self.header.is_some()
    }

    /// Whether a transaction committed since `held` began (`now`: the header read now).
    fn moved(&self, now: Option<Header>, held: &Held) -> bool {
        #[cfg(test)]
        if self.blind.load(Ordering::Relaxed) {
            return false;
        }
        now != Some(held.header)
    }

    fn too_old(&self, held: &Held) -> bool {
        #[cfg(test)]
        if self.blind.load(Ordering::Relaxed) {
            return false;
        }
        held.since.elapsed() >= self.max_age
    }

    /// After a read that left a snapshot open: wakes the sweeper if it sleeps.
    fn left_open(&self) {
        if self.sweeper_idle.swap(false, Ordering::AcqRel) {
            if let Some(t) = self.sweeper.get() {
                t.unpark();
            }
        }
    }

    /// Starts the sweeper thread for the readers of `owner`; it ends soon after the owner.
    pub(super) fn start_sweeper<O: Send + Sync + 'static>(
        owner: &Arc<O>,
        parts: fn(&O) -> (&Snapshots, &[Mutex<Reader>]),
    ) -> std::io::Result<()> {
        let weak = Arc::downgrade(owner);
        let thread = std::thread::Builder::new()
            .name("sqlite-snapshots".into())
            .spawn(move || sweep(&weak, parts))?;
        let _ = parts(owner).0.sweeper.set(thread.thread().clone());
        Ok(())
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        // The sweeper may sleep: wake it to find its owner gone.
        if let Some(t) = self.sweeper.get() {
            t.unpark();
        }
    }
}

/// Ends the snapshots that idle readers hold once they are [`Snapshots::max_age`] old; sleeps
/// while none is open.
fn sweep<O>(owner: &Weak<O>, parts: fn(&O) -> (&Snapshots, &[Mutex<Reader>])) {
    loop {
        let Some(o) = owner.upgrade() else { return };
        let (snapshots, readers) = parts(&o);
        let pause = snapshots.max_age;
        // Idle first, then look: a read that leaves a snapshot open after the look wakes us.
        snapshots.sweeper_idle.store(true, Ordering::Release);
        let mut open = false;
        for r in readers {
            match r.try_lock() {
                Ok(mut r) => {
                    r.end_if_too_old(snapshots);
                    open |= r.holds();
                }
                // In use: it may leave a snapshot open.
                Err(TryLockError::WouldBlock) => open = true,
                // A read panicked with it: nobody reads with it again, and it must not keep
                // the log from being checkpointed.
                Err(TryLockError::Poisoned(p)) => p.into_inner().end(),
            }
        }
        if open {
            snapshots.sweeper_idle.store(false, Ordering::Release);
        }
        drop(o);
        if open {
            std::thread::sleep(pause);
        } else {
            std::thread::park();
        }
    }
}
