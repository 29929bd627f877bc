//! The audit log: `audit_events`, read through an index per filter (time, actor, subject
//! user, organization), each ordered by (at, id), in a file of its own beside the database
//! (`<file>-audit`, attached as `audit`); and `audit_recent` in the main file, where events
//! are appended in their decision's transaction and wait, indexed by time only, until they
//! are moved under those indexes in batches ([`SqliteStore::settle_audit`]). An event appended
//! alone wrote a page of each of the three indexes; moved in a batch, the events of one actor,
//! user or organization share their pages. The move writes the audit file on a connection and
//! a thread of their own ([`copy`], [`file_thread`]), beside the main file's writer, which then
//! only deletes the copied rows: the index pages no longer pass through the main file's log,
//! nor hold its writer.
//!
//! An event is in `audit_recent`, in `audit_events`, or for a moment in both (copied, not yet
//! deleted): reads ask both tables in one statement and skip a recent event the indexed table
//! holds. One statement takes the main file's snapshot before the audit file's (SQLite begins
//! them in the order of the files: main, then those attached), so an event deleted from
//! `audit_recent` in the first is in the second.
use super::*;
use crate::audit::audit_cursor;
use rusqlite::types::Value;

pub(super) const AUDIT_COLS: &str =
    "id, at, action, outcome, reason, actor_id, user_id, organization_id, \
                          target, ip_address, user_agent, request_id, details";

fn audit_row(r: &Row) -> rusqlite::Result<(AuditEvent, String, String)> {
    Ok((
        AuditEvent {
            id: r.get(0)?,
            at: ts(r.get(1)?)?,
            action: r.get(2)?,
            outcome: AuditOutcome::Success,
            reason: r.get(4)?,
            actor_id: r.get::<_, Option<String>>(5)?.map(UserId),
            user_id: r.get::<_, Option<String>>(6)?.map(UserId),
            organization_id: r.get::<_, Option<String>>(7)?.map(OrgId),
            target: r.get(8)?,
            ip_address: r.get(9)?,
            user_agent: r.get(10)?,
            request_id: r.get(11)?,
            details: Default::default(),
        },
        r.get(3)?,
        r.get(12)?,
    ))
}

/// How many old events one purge statement deletes (the writer is released in between).
const PURGE_BATCH: i64 = 5000;

/// How many events this process appends before it moves them, and the most moved in one
/// copy (by default). A move writes each index page it touches once, however many of the
/// batch's events it holds, so larger batches cost less per event. Measured under
/// organization writes (bench/README, 2026-11-29), when the move still ran on the main file's
/// writer: moving cost the writes 30 % of their throughput at 256 events a move, 16 % at 1 024
/// and 13 % at 8 000; 512 gave 5–10 % more writes than 256 with the same p99, 1 024 10 % more
/// but a p99 40 % higher. In the audit file the writer waits for none of it.
pub(super) const SETTLE_BATCH: usize = 512;

/// The longest an event this process appended waits before it is moved (checked when the
/// process appends; every purge moves everything).
const SETTLE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// What this process appended since it last moved events (see [`SqliteStore::settle_audit`]).
#[derive(Default)]
pub(super) struct Staged {
    count: usize,
    since: Option<std::time::Instant>,
}

/// The audit log's file beside the database file `db`.
pub(super) fn file_of(db: &Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-audit");
    name.into()
}

/// Attaches the audit log's file as `audit` (with `conn`'s flags: created by a connection that
/// may create, read-only on a read-only one), with a small page cache of its own (256 KiB: a
/// reader lists the log now and then, and would otherwise keep up to 2 MB of it).
pub(super) fn attach(conn: &Connection, file: &Path) -> StoreResult<()> {
    let name = file
        .to_str()
        .ok_or_else(|| internal(format!("not a UTF-8 file name: {}", file.display())))?;
    conn.execute("ATTACH DATABASE ?1 AS audit", [name])
        .and_then(|_| conn.execute_batch("PRAGMA audit.cache_size = -256"))
        .map_err(|e| {
            StoreError::Unavailable(format!(
                "the audit log's file {} cannot be opened: {e}",
                file.display()
            ))
        })
        .map(drop)
}

/// The connection that writes the audit log's file (moves and purges): the main file `db`,
/// with the audit file attached and its schema made when missing.
pub(super) fn mover(db: &Path) -> StoreResult<Connection> {
    let conn = open(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let file = file_of(db);
    attach(&conn, &file)?;
    // Small page caches (SQLite's default is 2 MB a file): this connection reads the main
    // file's few recent rows, and writes the audit file's last index pages, a move at a time.
    conn.execute_batch(super::schema::AUDIT_FILE_SCHEMA)
        .and_then(|()| {
            conn.execute_batch("PRAGMA main.cache_size = -128; PRAGMA audit.cache_size = -1024;")
        })
        .map_err(|e| {
            StoreError::Unavailable(format!(
                "the audit log's file {} is not writable: {e}",
                file.display()
            ))
        })?;
    Ok(conn)
}

/// Copies up to `batch` of the oldest events of `audit_recent` under `audit_events`' indexes
/// (the audit file), in time order, in one transaction that writes only the audit file (its
/// reads of the main file share one snapshot); answers how many it read and the row number of
/// the last, up to which the main file's writer then deletes them.
fn copy(c: &mut Connection, batch: usize) -> StoreResult<(usize, Option<i64>)> {
    let tx = c.transaction().map_err(map_err)?;
    let (read, upto): (i64, Option<i64>) = tx
        .prepare_cached(
            "SELECT count(*), max(seq) FROM \
             (SELECT seq FROM main.audit_recent ORDER BY seq LIMIT ?1)",
        )
        .map_err(map_err)?
        .query_row([batch as i64], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(map_err)?;
    if let Some(upto) = upto {
        // `OR IGNORE`: an event under the indexes already (another process copied it and has
        // not deleted it yet, or this one crashed in between) is there once.
        tx.exec(
            &format!(
                "INSERT OR IGNORE INTO audit.audit_events ({AUDIT_COLS}) \
                 SELECT {AUDIT_COLS} FROM main.audit_recent WHERE seq <= ?1 ORDER BY at, id"
            ),
            [upto],
        )
        .map_err(map_err)?;
    }
    tx.commit().map_err(map_err)?;
    Ok((usize::try_from(read).unwrap_or(0), upto))
}

/// Appends one event to `audit_recent` (inside the caller's transaction), with its `details`
/// as JSON: `Conflict` when `audit_recent` has it already (the writer's connection does not
/// see the audit file: an append through [`AuditStore::append_audit_batch`] asks it first;
/// a decision's events are new).
pub(super) fn insert_recent(c: &Connection, e: &AuditEvent, details: &str) -> StoreResult<()> {
    c.prepare_cached(&format!(
        "INSERT INTO audit_recent ({AUDIT_COLS}) \
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
    ))
    .map_err(map_err)?
    .execute(rusqlite::params![
        e.id,
        ms(&e.at),
        e.action,
        e.outcome.as_str(),
        e.reason,
        e.actor_id.as_ref().map(|u| &u.0),
        e.user_id.as_ref().map(|u| &u.0),
        e.organization_id.as_ref().map(|o| &o.0),
        e.target,
        e.ip_address,
        e.user_agent,
        e.request_id,
        details,
    ])
    .map_err(unique("audit event"))?;
    Ok(())
}

impl SqliteStore {
    /// How many events this process appends to the audit log before it moves them under the
    /// indexes (default [`SETTLE_BATCH`]); tests set a few, so that a log lies in both tables.
    pub fn set_audit_batch(&self, events: usize) {
        self.inner
            .audit_batch
            .store(events.max(1), Ordering::Relaxed);
    }

    /// Counts `n` events appended; whether it is time to move them.
    fn staged(&self, n: usize) -> bool {
        let batch = self.inner.audit_batch.load(Ordering::Relaxed);
        let Ok(mut s) = self.inner.audit_staged.lock() else {
            return true;
        };
        s.count += n;
        let since = *s.since.get_or_insert_with(std::time::Instant::now);
        if s.count >= batch || since.elapsed() >= SETTLE_AFTER {
            *s = Staged::default();
            return true;
        }
        false
    }

    /// Counts `n` events appended (by any write of this process); moves the unmoved ones
    /// under the indexes, behind the caller's back, when it is time (see [`SqliteStore::staged`]).
    pub(super) fn audit_appended(&self, n: usize) {
        if !self.staged(n) {
            return;
        }
        // Asked for: a move running now may have read `audit_recent` for the last time
        // before these events came, so it goes again when it ends.
        self.inner.audit_again.store(true, Ordering::Release);
        if self.inner.audit_settling.swap(true, Ordering::AcqRel) {
            return;
        }
        // Moved behind the caller's back: the caller's event is stored already.
        let store = self.clone();
        tokio::spawn(async move {
            loop {
                store.inner.audit_again.store(false, Ordering::Release);
                if let Err(e) = store.settle_audit().await {
                    tracing::warn!(error = %e, "moving audit events under their indexes failed");
                }
                store.inner.audit_settling.store(false, Ordering::Release);
                // Asked again during the move, and no other move took over: once more.
                if !store.inner.audit_again.load(Ordering::Acquire)
                    || store.inner.audit_settling.swap(true, Ordering::AcqRel)
                {
                    return;
                }
            }
        });
    }

    /// Moves every event of `audit_recent` (appended by any process) under the indexes, a
    /// batch at a time: copied on the audit file's connection, then deleted by the writer (a
    /// short write of the main file's). One move or purge at a time in this process.
    async fn settle_audit(&self) -> StoreResult<usize> {
        let _moving = self.inner.audit_moving.lock().await;
        self.move_audit().await
    }

    /// [`SqliteStore::settle_audit`], its caller holding `audit_moving`.
    async fn move_audit(&self) -> StoreResult<usize> {
        let chunk = self.inner.audit_batch.load(Ordering::Relaxed);
        let mut total = 0;
        loop {
            let (read, upto) = self.on_audit_file(move |c| copy(c, chunk)).await?;
            if let Some(upto) = upto {
                total += self
                    .write(move |c| {
                        c.exec("DELETE FROM audit_recent WHERE seq <= ?1", [upto])
                            .map_err(map_err)
                    })
                    .await?;
            }
            if read < chunk {
                return Ok(total);
            }
        }
    }

    /// Runs `f` on the connection that writes the audit log's file, on its thread.
    async fn on_audit_file<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let job = |tx: tokio::sync::oneshot::Sender<_>| -> FileJob {
            Box::new(move |c: &mut Connection| {
                let _ = tx.send(f(c));
            })
        };
        let started = crate::observe::start();
        let gone = || StoreError::Unavailable("the audit log's file thread stopped".into());
        let panicked = "a write of the audit log's file panicked";
        let r = on_thread(&self.inner.audit_file, job, gone, panicked).await;
        crate::observe::done("sqlite", "write", started, r.is_ok());
        r
    }
}

/// A job for the audit log's file thread (see [`file_thread`]).
pub(super) type FileJob = Box<dyn FnOnce(&mut Connection) + Send>;

/// Starts the thread that owns the connection writing the audit log's file and runs its jobs
/// (moves and purges) one after another. A thread of its own, as the writer has: a move holds
/// no reader thread while it writes, and one thread's allocator pages hold its page cache. It ends when the store is dropped.
pub(super) fn file_thread(mut conn: Connection) -> StoreResult<std::sync::mpsc::Sender<FileJob>> {
    let (jobs, queue) = std::sync::mpsc::channel::<FileJob>();
    std::thread::Builder::new()
        .name("sqlite-audit".into())
        .spawn(move || {
            while let Ok(job) = queue.recv() {
                // A panic (a bug) drops its answer's sender: the caller hears of it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut conn)));
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
        })
        .map_err(internal)?;
    Ok(jobs)
}

#[async_trait]
impl AuditStore for SqliteStore {
    async fn append_audit(
        &self,
        event: &AuditEvent,
        keep_for: std::time::Duration,
    ) -> StoreResult<()> {
        self.append_audit_batch(std::slice::from_ref(event), keep_for)
            .await
    }

    /// Appends to `audit_recent`: only its `(at, id)` index grows, at its end, a page the
    /// events of one commit share. An event already in the log (either table) is refused.
    async fn append_audit_batch(
        &self,
        events: &[AuditEvent],
        _keep_for: std::time::Duration,
    ) -> StoreResult<()> {
        let rows = events
            .iter()
            .map(|e| {
                Ok((
                    e.clone(),
                    serde_json::to_string(&e.details).map_err(internal)?,
                ))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let n = rows.len();
        // The writer's connection sees only `audit_recent`: an event already moved is refused
        // here (one appended twice at once is refused by `audit_recent`'s unique index).
        let keys: Vec<(i64, String)> = events.iter().map(|e| (ms(&e.at), e.id.clone())).collect();
        let logged = self
            .read(move |c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT EXISTS (SELECT 1 FROM main.audit_recent WHERE at = ?1 AND id = ?2) \
                         OR EXISTS (SELECT 1 FROM audit.audit_events WHERE at = ?1 AND id = ?2)",
                    )
                    .map_err(map_err)?;
                for (at, id) in &keys {
                    let there: bool = stmt
                        .query_row(rusqlite::params![at, id], |r| r.get(0))
                        .map_err(map_err)?;
                    if there {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await?;
        if logged {
            return Err(StoreError::Conflict("audit event"));
        }
        self.write(move |c| {
            let tx = Savepoint::new(c)?;
            for (e, details) in &rows {
                insert_recent(&tx, e, details)?;
            }
            tx.commit()
        })
        .await?;
        self.audit_appended(n);
        Ok(())
    }

    async fn list_audit(&self, q: &AuditQuery) -> StoreResult<Page<AuditEvent>> {
        let q = q.clone();
        let position = q.position()?;
        self.read(move |c| {
            // The same filter on both tables.
            let mut filter = String::from("at >= ? AND at < ?");
            let mut args: Vec<Value> = vec![ms(&q.since).into(), ms(&q.until).into()];
            if let Some(o) = &q.organization {
                filter.push_str(" AND organization_id = ?");
                args.push(o.0.clone().into());
            }
            if let Some(u) = &q.user {
                filter.push_str(" AND (actor_id = ? OR user_id = ?)");
                args.push(u.0.clone().into());
                args.push(u.0.clone().into());
            }
            if let Some(a) = &q.action {
                filter.push_str(" AND (action = ? OR substr(action, 1, ?) = ?)");
                args.push(a.clone().into());
                args.push((a.chars().count() as i64 + 1).into());
                args.push(format!("{a}.").into());
            }
            if let Some(o) = q.outcome {
                filter.push_str(" AND outcome = ?");
                args.push(o.as_str().to_owned().into());
            }
            if let Some((at, id)) = position {
                filter.push_str(if q.oldest_first {
                    " AND (at, id) > (?, ?)"
                } else {
                    " AND (at, id) < (?, ?)"
                });
                args.push(at.into());
                args.push(id.into());
            }
            // A recent event copied under the indexes and not deleted yet is listed once.
            let mut sql = format!(
                "SELECT {AUDIT_COLS} FROM audit.audit_events WHERE {filter} \
                 UNION ALL SELECT {AUDIT_COLS} FROM main.audit_recent r WHERE {filter} \
                 AND NOT EXISTS (SELECT 1 FROM audit.audit_events e \
                 WHERE e.at = r.at AND e.id = r.id)"
            );
            args.extend(args.clone());
            sql.push_str(if q.oldest_first {
                " ORDER BY at, id LIMIT ?"
            } else {
                " ORDER BY at DESC, id DESC LIMIT ?"
            });
            args.push((i64::from(q.limit) + 1).into());
            let mut stmt = c.prepare_cached(&sql).map_err(map_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args), audit_row)
                .map_err(map_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(map_err)?;
            let items = rows
                .into_iter()
                .map(|(mut e, outcome, details)| {
                    e.outcome = AuditOutcome::parse(&outcome)?;
                    e.details = serde_json::from_str(&details).map_err(internal)?;
                    Ok(e)
                })
                .collect::<StoreResult<Vec<_>>>()?;
            Ok(Page::from_overfetch(items, q.limit, audit_cursor))
        })
        .await
    }

    async fn purge_audit(&self, before: DateTime<Utc>) -> StoreResult<u64> {
        let before = ms(&before);
        let mut total = 0u64;
        // No move of this process between the two tables (an event copied under the indexes
        // and not yet deleted from `audit_recent` would be counted twice); what is unmoved is
        // moved first (housekeeping: a quiet process may have left some), so the file's pass
        // purges most of it. Another process's move may still come in between: its events are
        // purged all the same, and the count can then name one of them twice.
        let _moving = self.inner.audit_moving.lock().await;
        self.move_audit().await?;
        // Each table on the connection that writes its file.
        for table in ["main.audit_recent", "audit.audit_events"] {
            let sql = format!(
                "DELETE FROM {table} WHERE rowid IN \
                 (SELECT rowid FROM {table} WHERE at < ?1 LIMIT ?2)"
            );
            loop {
                let sql = sql.clone();
                let purge = move |c: &mut Connection| {
                    c.exec(&sql, rusqlite::params![before, PURGE_BATCH])
                        .map_err(map_err)
                };
                let n = if table.starts_with("main.") {
                    self.write(purge).await?
                } else {
                    self.on_audit_file(purge).await?
                };
                total += n as u64;
                if (n as i64) < PURGE_BATCH {
                    break;
                }
            }
        }
        Ok(total)
    }
}
