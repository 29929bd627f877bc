//! Checkpoints off the writer's thread.
//!
//! With SQLite's automatic checkpoint, the connection whose commit takes the log past 1 000
//! frames copies them into the database file (and syncs it) before its commit returns: here
//! the writer thread, which every write of the process waits for. But a checkpoint needs no
//! write lock: any connection may run one beside the writer. So the writer's automatic
//! checkpoint is off, and after each commit the writer looks at the log's size in the mapped
//! WAL index header (walformat §2.1: the last frame, and how far a checkpoint copied) and,
//! from [`THREAD_FRAMES`] frames on, wakes a thread with a connection of its own that runs a
//! `PASSIVE` checkpoint (never waiting for a lock, never taking the writer's); also when the
//! writer has been idle a while with a log from which readers keep no snapshot
//! ([`Checkpoints::idle`]).
//!
//! The log starts over (is written again from its first frame, so its file stops growing) when
//! a write transaction begins while every frame is copied. The thread's checkpoint leaves the
//! frames committed while it copied; once it is done, the writer copies those itself, a few
//! pages, so that its next write starts the log over. Should the thread fall behind (the log
//! at [`WRITER_FRAMES`]), the writer waits for it a while and then copies the rest itself, as
//! SQLite would have done.
//!
//! Where the header cannot be mapped, the writer keeps SQLite's automatic checkpoint.
use super::snapshot::WalHeader;
use rusqlite::Connection;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Frames in the log (not yet copied) from which the thread is asked to copy them: SQLite's
/// own automatic checkpoint size.
pub(super) const THREAD_FRAMES: u32 = 1000;

/// Frames in the log from which the writer copies them itself, once it waited [`WAIT`] for
/// the thread: bounds the log's file (about 16 MB of 4 KiB pages) whatever the thread does.
pub(super) const WRITER_FRAMES: u32 = 4000;

/// How long the writer has had nothing to do when it looks whether the log should be copied
/// anyway (see [`Checkpoints::idle`]).
pub(super) const IDLE: Duration = Duration::from_millis(20);

/// How long the writer waits for a running checkpoint of the thread's before it copies.
const WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    /// The writer asked for a checkpoint the thread has not begun.
    asked: bool,
    /// Asked for and not finished.
    busy: bool,
    /// The thread finished one since the writer last looked.
    finished: bool,
    /// The writer is gone: the thread ends.
    stop: bool,
}

/// What the writer and the checkpoint thread share, and how many checkpoints each ran.
#[derive(Default)]
pub(super) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    by_thread: AtomicUsize,
    by_writer: AtomicUsize,
}

impl Shared {
    /// How many checkpoints the thread ran, and how many the writer ran itself.
    pub(super) fn counts(&self) -> (usize, usize) {
        (
            self.by_thread.load(Ordering::Relaxed),
            self.by_writer.load(Ordering::Relaxed),
        )
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few flags, consistent after every statement: a panic elsewhere
        // leaves nothing half-done in it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How many commits in a row the writer copies the frames of the last one, after the thread's
/// checkpoint, until the log starts over (see [`Checkpoints::after_commit`]).
const RESTART_TRIES: u8 = 8;

/// The writer's side: owned by the writer thread; the checkpoint thread ends with it.
pub(super) struct Checkpoints {
    header: Arc<WalHeader>,
    shared: Arc<Shared>,
    /// After the writer copied the log up to this frame, hoping its next write starts the log
    /// over, and how many more times it tries.
    restart: std::cell::Cell<Option<(u32, u8)>>,
}

impl Checkpoints {
    /// Starts the checkpoint thread with its own connection (`conn`), and turns the
    /// writer's automatic checkpoint off; it watches the log through `header`. `None`, leaving
    /// the automatic checkpoint on, when the thread cannot start.
    pub(super) fn start(
        writer: &Connection,
        conn: Connection,
        header: Arc<WalHeader>,
        shared: &Arc<Shared>,
    ) -> Option<Self> {
        let on_thread = shared.clone();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&conn, &on_thread))
            .ok()?;
        let this = Self {
            header,
            shared: shared.clone(),
            restart: std::cell::Cell::new(None),
        };
        if writer.pragma_update(None, "wal_autocheckpoint", 0).is_err() {
            // Dropped: the thread ends, and SQLite checkpoints as before.
            return None;
        }
        Some(this)
    }

    /// After a write transaction ended: asks the thread to copy the log when it is due,
    /// copies what remains of it once the thread is done, or all of it when the thread fell
    /// behind.
    ///
    /// The log starts over only if, when a write begins, every frame is copied and no reader
    /// (of any process) still reads frames of it — one that began before the last copy may.
    /// So when the first write after the writer's copy did not start the log over, the writer
    /// copies again (that write's few frames) after each of the next few commits.
    pub(super) fn after_commit(&self, writer: &Connection) {
        let Some(h) = self.header.read() else {
            // Between the header's two copies: another process commits right now, and the
            // next commit looks again.
            return;
        };
        let (frames, copied) = (h[4], h[12]);
        let mut s = self.shared.state();
        if s.busy {
            if frames < WRITER_FRAMES {
                return;
            }
            s = match self.shared.changed.wait_timeout_while(s, WAIT, |s| s.busy) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        let tries = match (std::mem::take(&mut s.finished), self.restart.get()) {
            (true, _) => RESTART_TRIES,
            // The log started over (or another process copied it all): done.
            (false, Some((upto, _))) if frames <= upto || frames == copied => 0,
            (false, Some((_, tries))) => tries,
            (false, None) => 0,
        };
        if frames > copied && (tries > 0 || frames >= WRITER_FRAMES) {
            drop(s);
            passive(writer);
            self.shared.by_writer.fetch_add(1, Ordering::Relaxed);
            self.restart.set(Some((frames, tries.saturating_sub(1))));
            return;
        }
        self.restart.set(None);
        if frames.saturating_sub(copied) >= THREAD_FRAMES {
            self.ask(&mut s);
        }
    }

    /// The writer had nothing to do for [`IDLE`]: when the log holds frames from which readers
    /// keep no snapshot (`snapshot::checkpoint_due`, from 750 frames), the thread copies them
    /// now. Otherwise a burst of writes that ends between that and [`THREAD_FRAMES`] would
    /// leave every read taking its lock per statement until writes come again.
    pub(super) fn idle(&self) {
        let Some(h) = self.header.read() else {
            return;
        };
        if super::snapshot::checkpoint_due(&h) {
            self.ask(&mut self.shared.state());
        }
    }

    /// Asks the thread for a checkpoint, unless one is asked for or running.
    fn ask(&self, s: &mut State) {
        if !s.busy {
            s.asked = true;
            s.busy = true;
            self.shared.changed.notify_all();
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.shared.state().stop = true;
        self.shared.changed.notify_all();
    }
}

/// A checkpoint that waits for no lock: copies every frame no reader still needs.
fn passive(conn: &Connection) {
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        // Another checkpoint runs (another process's): the log is copied anyway.
        tracing::debug!(error = %e, "a SQLite checkpoint did not run");
    }
}

/// The checkpoint thread: runs a checkpoint each time the writer asks, until the writer ends.
fn run(conn: &Connection, shared: &Shared) {
    loop {
        {
            let mut s = shared.state();
            while !s.asked && !s.stop {
                s = match shared.changed.wait(s) {
                    Ok(s) => s,
                    Err(p) => p.into_inner(),
                };
            }
            if s.stop {
                return;
            }
            s.asked = false;
        }
        passive(conn);
        shared.by_thread.fetch_add(1, Ordering::Relaxed);
        let mut s = shared.state();
        s.busy = false;
        s.finished = true;
        shared.changed.notify_all();
    }
}
