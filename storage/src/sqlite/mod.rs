//! The embedded backend: one SQLite file (WAL) in the data directory.
//!
//! SQLite calls block, so they run off tokio's async workers — with one exception: a read that
//! looks rows up by key runs at once on the calling task when a read connection is free
//! ([`SqliteStore::point_read`]: a few index probes cost less than the trip to another thread
//! and back); other reads run on one reader thread per read connection (`reads.rs`). Writes
//! go through one connection, owned by one thread that runs them in turn (SQLite has a single
//! writer anyway; a queue orders them instead of letting them fail with SQLITE_BUSY); writes
//! that queued up behind one another commit together (see `writer.rs`). Reads use a small pool
//! of read connections, which WAL lets run beside the writer; each keeps its read snapshot
//! from one read to the next while nothing commits (`snapshot.rs`).
//!
//! Files: `schema.rs` (migrations), `rows.rs` (columns and row mappers), `writer.rs` (the
//! writer thread), `reads.rs` (the reader threads), `snapshot.rs` (the read connections' kept
//! snapshots), `known.rs` (sessions answered again while no commit could have changed them),
//! `checkpoint.rs` (checkpoints off the writer's thread), `tx.rs` (savepoints),
//! `health.rs` (the readiness probe), then one file per storage trait: `users.rs` (users and
//! accounts), `sessions.rs`, `verifications.rs`, `organizations.rs`, `keys.rs`, `audit.rs`
//! (the audit log, whose indexed events live in a file of their own, `<file>-audit`, written on
//! a connection of its own).
mod api_keys;
mod audit;
mod checkpoint;
mod health;
mod invitations;
mod keys;
mod known;
mod members;
mod organizations;
mod passkeys;
mod rate_limits;
mod reads;
mod roles;
mod rows;
mod scan;
mod schema;
mod sessions;
mod snapshot;
mod stream;
mod teams;
mod two_factor;
mod tx;
mod users;
mod verifications;
mod webhooks;
mod writer;

use crate::*;
use health::probe_write;
use rows::*;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row};
use schema::migrate;
use snapshot::{Reader, Snapshots, WalHeader};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use stream::always;
use tx::{atomically, control, Savepoint};
use writer::writer_thread;

const READERS: usize = 4;

/// The most writes committed together: bounds how long the first write of a group waits for
/// the others (each a few index probes and row writes, well under a millisecond).
const GROUP_MAX: usize = 64;

/// Delivers a write's answer once its transaction ended: `Ok` when it committed, else the
/// error that ended it.
type Deliver = Box<dyn FnOnce(StoreResult<()>) + Send>;

/// A write, run on the writer thread with its connection; it hands back the delivery of its
/// answer.
struct WriteJob {
    run: Box<dyn FnOnce(&mut Connection) -> Deliver + Send>,
    /// Runs outside any transaction of the writer's and never with other writes (it manages
    /// its own transaction, as the health probe does).
    alone: bool,
}

struct Inner {
    /// The writer thread's queue: it owns the one write connection and runs the writes one
    /// after another, so a write that waits is taken the moment the one before it ends — no
    /// thread has to be woken to take a mutex between two writes, as with a connection behind
    /// a mutex shared by the blocking pool's threads. The thread ends when the store is dropped.
    writer: std::sync::mpsc::Sender<WriteJob>,
    readers: Vec<Mutex<Reader>>,
    /// Lets the readers keep their snapshot between reads (see `snapshot.rs`).
    snapshots: Snapshots,
    /// Sessions answered again without a read while no commit changed them (see `known.rs`).
    known: Option<Arc<known::Known>>,
    /// Also the number of reads so far (each read takes the next reader).
    next_reader: AtomicUsize,
    /// The queue of the reader threads (see `reads.rs`).
    read_jobs: std::sync::mpsc::Sender<reads::ReadJob>,
    writes: AtomicUsize,
    /// Transactions the writer thread committed for groups of writes.
    commits: Arc<AtomicUsize>,
    /// The checkpoints run off the writer's thread (see `checkpoint.rs`), when they are.
    checkpoints: Option<Arc<checkpoint::Shared>>,
    /// The audit log's appended events not yet moved under its indexes (see `audit.rs`): how
    /// many this process appended since it last moved them, how many it moves at once, and
    /// whether a move is under way.
    audit_staged: Mutex<audit::Staged>,
    /// The thread that owns the connection writing the audit log's own file (see `audit.rs`).
    audit_file: std::sync::mpsc::Sender<audit::FileJob>,
    audit_batch: AtomicUsize,
    audit_settling: std::sync::atomic::AtomicBool,
    /// A move was asked for since the running one began (it goes again: see `audit_appended`).
    audit_again: std::sync::atomic::AtomicBool,
    /// Held by a move of the audit log's events and by a purge, so that a purge never sees an
    /// event of this process in both tables (copied, not yet deleted) and counts it twice.
    audit_moving: tokio::sync::Mutex<()>,
}

/// The SQLite store. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(e.to_string())
}

fn map_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
        {
            StoreError::Unavailable(e.to_string())
        }
        // The disk is full or failing (or the file may not grow): nothing was written, and the
        // caller may try again once there is room; reads go on.
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DiskFull | ErrorCode::SystemIoFailure) =>
        {
            StoreError::Unavailable(e.to_string())
        }
        _ => internal(e),
    }
}

/// Maps a UNIQUE violation to `Conflict(what)`, anything else as usual.
fn unique(what: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation
                && f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            StoreError::Conflict(what)
        }
        _ => map_err(e),
    }
}

fn ms(t: &DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn ms_opt(t: &Option<DateTime<Utc>>) -> Option<i64> {
    t.as_ref().map(ms)
}

fn ts(v: i64) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(v).ok_or(rusqlite::Error::IntegralValueOutOfRange(0, v))
}

fn ts_opt(v: Option<i64>) -> rusqlite::Result<Option<DateTime<Utc>>> {
    v.map(ts).transpose()
}

/// Statements kept prepared per connection. Enough for every statement the store runs (each
/// prepared statement is a few KiB): rusqlite's default of 16 made busy connections prepare
/// some statements again and again.
const STATEMENT_CACHE: usize = 128;

/// Process-wide SQLite settings, made once before the first connection opens: no memory
/// statistics (they put a global mutex around every allocation SQLite makes, which readers on
/// several threads then wait for).
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` is called before `sqlite3_initialize` here (no connection is
        // open yet in this process); called later it only answers `SQLITE_MISUSE`, which leaves
        // the statistics on and changes nothing else.
        unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                std::ffi::c_int::from(0u8),
            );
        }
    });
}

fn open(path: &Path, flags: OpenFlags) -> StoreResult<Connection> {
    configure_sqlite();
    let conn = Connection::open_with_flags(path, flags).map_err(map_err)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(map_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // The query planner's stability guarantee: a statement's plan never depends on the values
    // bound to it. Without it SQLite marks a statement whose `LIMIT ?` it could read as a
    // number to be prepared again whenever that parameter is bound — on every run.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(map_err)?;
    // Temporary files in memory: the writer's groups nest a savepoint per write, whose
    // journal would otherwise be a file created and deleted for each group.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
         PRAGMA temp_store = MEMORY;",
    )
    .map_err(map_err)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path))
            .await
            .map_err(internal)?
    }

    fn open_blocking(path: &Path) -> StoreResult<Self> {
        let mut writer = open(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Nothing is made beside a file a newer Gatehouse wrote.
        schema::refuse_newer(&writer)?;
        let mut audit_file = audit::mover(path)?;
        migrate(&mut writer, &mut audit_file)?;
        // The write probe is also the commit that shows whether the mapped WAL index header
        // moves with commits (see `snapshot.rs`).
        let header = WalHeader::map(path);
        let before = header.as_ref().and_then(WalHeader::read);
        probe_write(&writer).map_err(|e| {
            StoreError::Unavailable(format!(
                "the database {} is not writable: {e}",
                path.display()
            ))
        })?;
        let readers = (0..READERS)
            .map(|_| {
                let c = open(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                audit::attach(&c, &audit::file_of(path))?;
                Ok(Mutex::new(Reader::new(c)))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        // One mapping (SQLite's, through one connection) for the readers, the checkpoints and
        // the sessions held.
        let header = watched_header(path, header, before).map(Arc::new);
        let known = header
            .clone()
            .map(|h| Arc::new(known::Known::new(h, &writer)));
        let known_by_writer = known.clone();
        let shared = Arc::new(checkpoint::Shared::default());
        let checkpoints = match (
            &header,
            open(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
        ) {
            (Some(h), Ok(conn)) => {
                checkpoint::Checkpoints::start(&writer, conn, h.clone(), &shared)
            }
            _ => None,
        };
        let counts = checkpoints.as_ref().map(|_| shared);
        let (jobs, queue) = std::sync::mpsc::channel::<WriteJob>();
        let commits = Arc::new(AtomicUsize::new(0));
        let counted = commits.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                writer_thread(
                    writer,
                    &queue,
                    &counted,
                    checkpoints.as_ref(),
                    known_by_writer.as_deref(),
                )
            })
            .map_err(internal)?;
        let inner = Arc::new(Inner {
            writer: jobs,
            readers,
            snapshots: Snapshots::new(header, snapshot::MAX_AGE),
            known,
            next_reader: AtomicUsize::new(0),
            read_jobs: reads::start(READERS).map_err(internal)?,
            writes: AtomicUsize::new(0),
            commits,
            checkpoints: counts,
            audit_staged: Mutex::default(),
            audit_file: audit::file_thread(audit_file)?,
            audit_batch: AtomicUsize::new(audit::SETTLE_BATCH),
            audit_settling: Default::default(),
            audit_again: Default::default(),
            audit_moving: Default::default(),
        });
        if inner.snapshots.on() {
            Snapshots::start_sweeper(&inner, |i| (&i.snapshots, &i.readers)).map_err(internal)?;
        }
        Ok(Self { inner })
    }

    /// How many reads and writes this store has served: lets tests check that two paths do
    /// the same store work (e.g. sign-in of an unknown user and of a wrong password).
    pub fn op_counts(&self) -> (usize, usize) {
        (
            self.inner.next_reader.load(Ordering::Relaxed),
            self.inner.writes.load(Ordering::Relaxed),
        )
    }

    /// How many transactions the writer thread committed for groups of writes.
    pub fn group_commits(&self) -> usize {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// How many checkpoints ran on the checkpoint thread, and how many the writer ran itself
    /// (see `checkpoint.rs`); `None` when SQLite's automatic checkpoint runs them.
    pub fn checkpoints(&self) -> Option<(usize, usize)> {
        self.inner.checkpoints.as_ref().map(|c| c.counts())
    }

    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        self.inner.writes.fetch_add(1, Ordering::Relaxed);
        let started = crate::observe::start();
        let r = self.on_writer(f).await;
        crate::observe::done("sqlite", "write", started, r.is_ok());
        r
    }

    /// Runs `f` on the writer thread (see [`Inner::writer`]), in a transaction it may share
    /// with other writes, and waits for its answer, given once that transaction committed.
    async fn on_writer<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        self.submit(false, f)?.await
    }

    /// Queues `f` for the writer thread; `alone`: see [`WriteJob::alone`]. The answer comes
    /// from the returned future.
    fn submit<T, F>(
        &self,
        alone: bool,
        f: F,
    ) -> StoreResult<impl std::future::Future<Output = StoreResult<T>>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let run = Box::new(move |conn: &mut Connection| -> Deliver {
            let r = f(conn);
            Box::new(move |ended: StoreResult<()>| {
                let _ = tx.send(r.and_then(|v| ended.map(|()| v)));
            })
        });
        let gone = || StoreError::Unavailable("the SQLite writer thread stopped".into());
        self.inner
            .writer
            .send(WriteJob { run, alone })
            .map_err(|_| gone())?;
        // No answer: the write panicked (a bug; the thread rolled it back).
        Ok(async move {
            rx.await
                .map_err(|_| StoreError::Internal("a SQLite write panicked".into()))?
        })
    }

    /// A read that looks rows up by key (a few index probes): run at once on the calling task
    /// when a reader connection is free — a trip to a reader thread and back (two thread
    /// switches) costs more than the read — else as [`SqliteStore::read`]. Never for reads
    /// whose size the caller does not bound.
    async fn point_read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let n = self.inner.readers.len();
        let start = self.inner.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            if let Ok(mut reader) = self.inner.readers[(start + i) % n].try_lock() {
                let started = crate::observe::start();
                let r = reader.run(&self.inner.snapshots, f);
                crate::observe::done("sqlite", "read", started, r.is_ok());
                return r;
            }
        }
        self.read(f).await
    }

    /// A read on one of the reader threads (`reads.rs`), taking a free read connection, or
    /// waiting for the round-robin choice when the calling tasks hold them all.
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let started = crate::observe::start();
        let job = |tx: tokio::sync::oneshot::Sender<_>| -> reads::ReadJob {
            Box::new(move || {
                let n = inner.readers.len();
                let start = inner.next_reader.fetch_add(1, Ordering::Relaxed);
                let free = (0..n).find_map(|i| inner.readers[(start + i) % n].try_lock().ok());
                let r = match free {
                    Some(mut reader) => reader.run(&inner.snapshots, f),
                    None => match inner.readers[start % n].lock() {
                        Ok(mut reader) => reader.run(&inner.snapshots, f),
                        Err(e) => Err(internal(e)),
                    },
                };
                let _ = tx.send(r);
            })
        };
        let gone = || internal("the SQLite reader threads ended");
        let r = on_thread(&self.inner.read_jobs, job, gone, "a SQLite read panicked").await;
        crate::observe::done("sqlite", "read", started, r.is_ok());
        r
    }
}

/// Hands a job (made around the sender of its answer) to a thread's queue and waits for that
/// answer: `gone()` when the thread has ended, `Internal(panicked)` when the job dropped its
/// answer unsent (it panicked).
async fn on_thread<J, T>(
    queue: &std::sync::mpsc::Sender<J>,
    job: impl FnOnce(tokio::sync::oneshot::Sender<StoreResult<T>>) -> J,
    gone: impl FnOnce() -> StoreError,
    panicked: &str,
) -> StoreResult<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    match queue.send(job(tx)) {
        Ok(()) => rx.await.unwrap_or_else(|_| Err(internal(panicked))),
        Err(_) => Err(gone()),
    }
}

/// `header` (the WAL index header of the database at `path`, mapped, read as `before` a
/// commit), when that commit moved it: else `None`, and reads keep no snapshot.
fn watched_header(
    path: &Path,
    header: Option<WalHeader>,
    before: Option<snapshot::Header>,
) -> Option<WalHeader> {
    let header = header?;
    let moved = before.is_some() && header.read() != before;
    if !moved {
        tracing::warn!(
            path = %path.display(),
            "the SQLite WAL index header did not move with a commit: reads begin a snapshot each"
        );
        return None;
    }
    Some(header)
}

/// `execute` through the connection's statement cache: a write's statement is parsed once per
/// connection, not on every call (parsing was a tenth of the writer thread's time under
/// organization writes). Used for every statement whose text is fixed or built from constants.
trait Exec {
    fn exec<P: rusqlite::Params>(&self, sql: &str, p: P) -> rusqlite::Result<usize>;
}

impl Exec for Connection {
    fn exec<P: rusqlite::Params>(&self, sql: &str, p: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(p)
    }
}

/// One row by a query, or `None`.
fn one<T>(
    conn: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
    f: fn(&Row) -> rusqlite::Result<T>,
) -> StoreResult<Option<T>> {
    conn.prepare_cached(sql)
        .map_err(map_err)?
        .query_row(p, f)
        .optional()
        .map_err(map_err)
}

/// All rows of a query.
fn all<T>(
    conn: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
    f: fn(&Row) -> rusqlite::Result<T>,
) -> StoreResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
    let rows = stmt.query_map(p, f).map_err(map_err)?;
    rows.collect::<rusqlite::Result<Vec<T>>>().map_err(map_err)
}

/// `NotFound` when a write touched no row.
fn touched(n: usize) -> StoreResult<()> {
    if n == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}

/// The version a record carrying `version` was decided on.
fn version_before(version: u64) -> StoreResult<u64> {
    version
        .checked_sub(1)
        .ok_or_else(|| StoreError::Internal("a changed record's version is 0".into()))
}

/// Moves a user's version (its accounts or memberships changed).
fn bump_user(conn: &Connection, user: &str) -> StoreResult<()> {
    conn.exec(
        "UPDATE users SET version = version + 1 WHERE id = ?1",
        [user],
    )
    .map_err(map_err)?;
    Ok(())
}

/// After a guarded user write touched no row: the user moved on, or is gone.
fn user_moved_or_gone(conn: &Connection, user: &str) -> StoreResult<StoreError> {
    moved_or_gone(conn, "users", "id", user)
}

/// Ends a versioned UPDATE of the row `id` of `table` that left its unique column `column` out
/// and returned the stored value (`stored`; `None`: no row at that version, see
/// [`moved_or_gone`]): sets the column to `wanted` only when it changed — an UPDATE that sets a
/// column rewrites its index entry even when the value stays (one more page in the log).
fn set_unique_if_changed(
    conn: &Connection,
    table: &str,
    column: &'static str,
    id: &str,
    stored: Option<String>,
    wanted: &str,
) -> StoreResult<()> {
    match stored {
        None => Err(moved_or_gone(conn, table, "id", id)?),
        Some(s) if s != wanted => conn
            .exec(
                &format!("UPDATE {table} SET {column} = ?2 WHERE id = ?1"),
                rusqlite::params![id, wanted],
            )
            .map(drop)
            .map_err(unique(column)),
        Some(_) => Ok(()),
    }
}

/// After a compare-and-set on the row of `table` whose `key` column is `value` touched no
/// row: it moved on to another version, or it is gone (see [`StoreError::missed`]).
fn moved_or_gone(
    conn: &Connection,
    table: &str,
    key: &str,
    value: &str,
) -> StoreResult<StoreError> {
    let exists: Option<i64> = conn
        .prepare_cached(&format!("SELECT 1 FROM {table} WHERE {key} = ?1"))
        .map_err(map_err)?
        .query_row([value], |r| r.get(0))
        .optional()
        .map_err(map_err)?;
    Ok(StoreError::missed(exists.is_some()))
}

#[cfg(test)]
mod tests;
