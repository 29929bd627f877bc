//! The audit log: `audit_events`, read through an index per filter (time, actor, subject
//! user, organization), each ordered by (at, id); and `audit_recent`, where events are
//! appended and wait, indexed by time only, until they are moved under those indexes in
//! batches ([`settle`]). An event appended alone wrote a page of each of the three indexes;
//! moved in a batch, the events of one actor, user or organization share their pages. Reads
//! ask both tables in one statement (one snapshot: each event is in exactly one of them), and
//! the unmoved part stays small (at most a second of one process's events, or a batch).
use super::*;
use crate::audit::audit_cursor;
use rusqlite::types::Value;

const AUDIT_COLS: &str = "id, at, action, outcome, reason, actor_id, user_id, organization_id, \
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
/// write (by default). A move writes each index page it touches once, however many of the
/// batch's events it holds, and holds the writer meanwhile, so larger batches cost less per
/// event and more to the writes queued behind them. Measured under organization writes
/// (bench/README, 2026-11-29): moving the events cost the writes 30 % of their throughput at
/// 256 events a move, 16 % at 1 024 and 13 % at 8 000; 512 gave 5–10 % more writes than 256
/// with the same p99, 1 024 10 % more but a p99 40 % higher.
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

/// Moves up to `batch` of the oldest events of `audit_recent` under `audit_events`' indexes,
/// in time order, in one transaction (a reader sees each event in exactly one table);
/// answers how many.
fn settle(c: &mut Connection, batch: usize) -> StoreResult<usize> {
    let tx = Savepoint::new(c)?;
    let upto: Option<i64> = tx
        .prepare_cached(
            "SELECT max(rowid) FROM (SELECT rowid FROM audit_recent ORDER BY rowid LIMIT ?1)",
        )
        .map_err(map_err)?
        .query_row([batch as i64], |r| r.get(0))
        .map_err(map_err)?;
    let Some(upto) = upto else {
        return Ok(0);
    };
    // `OR IGNORE`: an event already under the indexes (appending refuses that, so only by a
    // bug) must not keep every later event from moving.
    tx.exec(
        &format!(
            "INSERT OR IGNORE INTO audit_events ({AUDIT_COLS}) \
             SELECT {AUDIT_COLS} FROM audit_recent WHERE rowid <= ?1 ORDER BY at, id"
        ),
        [upto],
    )
    .map_err(map_err)?;
    let moved = tx
        .exec("DELETE FROM audit_recent WHERE rowid <= ?1", [upto])
        .map_err(map_err)?;
    tx.commit()?;
    Ok(moved)
}

/// Appends one event to `audit_recent` (inside the caller's transaction), with its `details`
/// as JSON: `Conflict` when the log has it already.
pub(super) fn insert_recent(c: &Connection, e: &AuditEvent, details: &str) -> StoreResult<()> {
    let added = c
        .prepare_cached(&format!(
            "INSERT INTO audit_recent ({AUDIT_COLS}) \
             SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13 WHERE NOT EXISTS \
             (SELECT 1 FROM audit_events WHERE at = ?2 AND id = ?1)"
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
    if added == 0 {
        return Err(StoreError::Conflict("audit event"));
    }
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
    /// batch per write, so that no write holds the writer long.
    async fn settle_audit(&self) -> StoreResult<usize> {
        let chunk = self.inner.audit_batch.load(Ordering::Relaxed);
        let mut total = 0;
        loop {
            let moved = self.write(move |c| settle(c, chunk)).await?;
            total += moved;
            if moved < chunk {
                return Ok(total);
            }
        }
    }
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
            // The same filter on both tables: an event is in exactly one of them.
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
            let mut sql = format!(
                "SELECT {AUDIT_COLS} FROM audit_events WHERE {filter} \
                 UNION ALL SELECT {AUDIT_COLS} FROM audit_recent WHERE {filter}"
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
        for table in ["audit_recent", "audit_events"] {
            let sql = format!(
                "DELETE FROM {table} WHERE rowid IN \
                 (SELECT rowid FROM {table} WHERE at < ?1 LIMIT ?2)"
            );
            loop {
                let sql = sql.clone();
                let n = self
                    .write(move |c| {
                        c.exec(&sql, rusqlite::params![before, PURGE_BATCH])
                            .map_err(map_err)
                    })
                    .await?;
                total += n as u64;
                if (n as i64) < PURGE_BATCH {
                    break;
                }
            }
        }
        // Housekeeping also moves what a quiet process left unmoved.
        self.settle_audit().await?;
        Ok(total)
    }
}
