//! The embedded backend: one SQLite file (WAL) in the data directory.
//!
//! SQLite calls block, so every query runs on tokio's blocking pool, never on an async worker.
//! Writes go through one connection, owned by one thread that runs them in turn (SQLite has a
//! single writer anyway; a queue orders them instead of letting them fail with SQLITE_BUSY);
//! reads use a small pool of read connections, which WAL lets run beside the writer.
//!
//! Files: `schema.rs` (migrations), `rows.rs` (columns and row mappers), then one file per
//! storage trait: `users.rs` (users and accounts), `sessions.rs`, `verifications.rs`,
//! `organizations.rs`, `keys.rs`.
mod audit;
mod invitations;
mod keys;
mod members;
mod organizations;
mod rate_limits;
mod roles;
mod rows;
mod scan;
mod schema;
mod sessions;
mod teams;
mod users;
mod verifications;

use crate::*;
use rows::*;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row};
use schema::migrate;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const READERS: usize = 4;

/// A write, run on the writer thread with its connection.
type WriteJob = Box<dyn FnOnce(&mut Connection) + Send>;

struct Inner {
    /// The writer thread's queue: it owns the one write connection and runs the writes one
    /// after another, so a write that waits is taken the moment the one before it ends — no
    /// thread has to be woken to take a mutex between two writes, as with a connection behind
    /// a mutex shared by the blocking pool's threads. The thread ends when the store is dropped.
    writer: std::sync::mpsc::Sender<WriteJob>,
    readers: Vec<Mutex<Connection>>,
    /// Also the number of reads so far (each read takes the next reader).
    next_reader: AtomicUsize,
    writes: AtomicUsize,
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
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
    )
    .map_err(map_err)?;
    Ok(conn)
}

/// Takes and releases the write lock: fails on a read-only file or folder (SQLite otherwise
/// opens such a file read-only without a word, and every later write fails). Only on a file
/// at this build's schema version (both callers checked it).
fn probe_write(conn: &Connection) -> rusqlite::Result<()> {
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
            Some("the file is read-only".into()),
        ));
    }
    // A write that is rolled back: the header is rewritten in the journal, never applied.
    let wrote = conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; PRAGMA user_version = {};",
        schema::VERSION
    ));
    // Whatever failed, the connection leaves no transaction open.
    let ended = if conn.is_autocommit() {
        Ok(())
    } else {
        conn.execute_batch("ROLLBACK")
    };
    wrote.and(ended)
}

#[async_trait]
impl HealthStore for SqliteStore {
    async fn check_health(&self) -> StoreResult<()> {
        self.on_writer(|conn| {
            let at = schema::current(conn)?;
            if at > schema::VERSION {
                return Err(schema::newer(at));
            }
            if at < schema::VERSION {
                return Err(StoreError::Internal(format!(
                    "the database is at schema version {at}, this Gatehouse needs {}",
                    schema::VERSION
                )));
            }
            probe_write(conn)
                .map_err(|e| StoreError::Unavailable(format!("the database is not writable: {e}")))
        })
        .await
    }
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
        migrate(&mut writer)?;
        probe_write(&writer).map_err(|e| {
            StoreError::Unavailable(format!(
                "the database {} is not writable: {e}",
                path.display()
            ))
        })?;
        let readers = (0..READERS)
            .map(|_| {
                open(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map(Mutex::new)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let (jobs, queue) = std::sync::mpsc::channel::<WriteJob>();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                for job in queue {
                    // A write that panicked (a bug) must not end the thread, nor leave its
                    // transaction open for the next one.
                    let ran =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut writer)));
                    if ran.is_err() && !writer.is_autocommit() {
                        let _ = writer.execute_batch("ROLLBACK");
                    }
                }
            })
            .map_err(internal)?;
        Ok(Self {
            inner: Arc::new(Inner {
                writer: jobs,
                readers,
                next_reader: AtomicUsize::new(0),
                writes: AtomicUsize::new(0),
            }),
        })
    }

    /// How many reads and writes this store has served: lets tests check that two paths do
    /// the same store work (e.g. sign-in of an unknown user and of a wrong password).
    pub fn op_counts(&self) -> (usize, usize) {
        (
            self.inner.next_reader.load(Ordering::Relaxed),
            self.inner.writes.load(Ordering::Relaxed),
        )
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

    /// Runs `f` on the writer thread (see [`Inner::writer`]) and waits for its answer.
    async fn on_writer<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: WriteJob = Box::new(move |conn| {
            let _ = tx.send(f(conn));
        });
        let gone = || StoreError::Unavailable("the SQLite writer thread stopped".into());
        self.inner.writer.send(job).map_err(|_| gone())?;
        // No answer: the write panicked (a bug; the thread rolled its transaction back).
        rx.await
            .map_err(|_| StoreError::Internal("a SQLite write panicked".into()))?
    }

    /// A read that looks rows up by key (a few index probes): run at once on the calling task
    /// when a reader connection is free — a trip to the blocking pool and back (two thread
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
            if let Ok(conn) = self.inner.readers[(start + i) % n].try_lock() {
                let started = crate::observe::start();
                let r = f(&conn);
                crate::observe::done("sqlite", "read", started, r.is_ok());
                return r;
            }
        }
        self.read(f).await
    }

    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let started = crate::observe::start();
        let r = tokio::task::spawn_blocking(move || {
            let n = inner.readers.len();
            let start = inner.next_reader.fetch_add(1, Ordering::Relaxed);
            // Take a free reader if there is one, else wait for the round-robin choice.
            for i in 0..n {
                if let Ok(conn) = inner.readers[(start + i) % n].try_lock() {
                    return f(&conn);
                }
            }
            let conn = inner.readers[start % n].lock().map_err(internal)?;
            f(&conn)
        })
        .await
        .map_err(internal)
        .and_then(|r| r);
        crate::observe::done("sqlite", "read", started, r.is_ok());
        r
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
    conn.execute(
        "UPDATE users SET version = version + 1 WHERE id = ?1",
        [user],
    )
    .map_err(map_err)?;
    Ok(())
}

/// After a guarded user write touched no row: the user moved on, or is gone.
fn user_moved_or_gone(conn: &Connection, user: &str) -> StoreResult<StoreError> {
    let exists: Option<i64> = conn
        .query_row("SELECT 1 FROM users WHERE id = ?1", [user], |r| r.get(0))
        .optional()
        .map_err(map_err)?;
    Ok(if exists.is_some() {
        StoreError::ConcurrentModification
    } else {
        StoreError::NotFound
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// A write that panics midway through its transaction is answered with an error; the
    /// writer thread rolls it back and runs the next write, which sees nothing of it.
    #[tokio::test]
    async fn the_writer_thread_outlives_a_write_that_panics() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("t.db")).await.unwrap();
        store
            .write(|c| {
                c.execute_batch("CREATE TABLE t (a INTEGER)")
                    .map_err(map_err)?;
                Ok(())
            })
            .await
            .unwrap();
        let r: StoreResult<()> = store
            .write(|c| {
                c.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
                    .map_err(map_err)?;
                panic!("a bug in a write");
            })
            .await;
        assert!(matches!(r, Err(StoreError::Internal(_))), "{r:?}");
        let n: i64 = store
            .write(|c| {
                c.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (2); COMMIT")
                    .map_err(map_err)?;
                c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                    .map_err(map_err)
            })
            .await
            .unwrap();
        assert_eq!(n, 1);
    }

    /// A cached statement is prepared once, whatever values its `LIMIT` and `OFFSET` take (no
    /// re-prepare per run), and SQLite keeps no memory statistics (no global allocation lock).
    #[test]
    fn statements_stay_prepared_and_allocations_take_no_global_lock() {
        let dir = tempfile::tempdir().unwrap();
        let c = open(&dir.path().join("t.db"), OpenFlags::default()).unwrap();
        c.execute_batch(
            "CREATE TABLE t (a INTEGER PRIMARY KEY); \
             INSERT INTO t VALUES (1), (2), (3), (4), (5), (6);",
        )
        .unwrap();
        for (limit, offset, expected) in [
            (2, 0, vec![1, 2]),
            (3, 2, vec![3, 4, 5]),
            (5, 4, vec![5, 6]),
        ] {
            let mut st = c
                .prepare_cached("SELECT a FROM t ORDER BY a LIMIT ?1 OFFSET ?2")
                .unwrap();
            let got: Vec<i64> = st
                .query_map([limit, offset], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(got, expected);
            assert_eq!(st.get_status(StatementStatus::RePrepare), 0);
        }
        // SAFETY: a read of a counter SQLite keeps for the process.
        assert_eq!(unsafe { rusqlite::ffi::sqlite3_memory_used() }, 0);
    }
}
