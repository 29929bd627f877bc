//! The event stream (see `crate::events`): `events`, one row per domain or mail event in
//! commit order (`seq`: SQLite has one writer, so a row is never committed after a larger
//! `seq`), and `event_consumers`, each consumer's lease and progress. A write's events are
//! inserted inside the write's own savepoint ([`with_events`]): the change and its events are
//! kept together or not at all. Audit records go to `audit_recent` in the same savepoint.
use super::*;
use crate::events::{Delivery, Event, EventStore, Lease, Payload, Read, Topic};
use rusqlite::params;

/// An event as it is inserted, its JSON made before the write goes to the writer thread (which
/// every write of the process waits for).
pub(super) enum Row {
    /// An audit record, and its details as JSON.
    Audit(Box<AuditEvent>, String),
    Stream {
        id: String,
        at: i64,
        topic: &'static str,
        aggregate: String,
        body: String,
    },
}

/// The rows of `events`.
pub(super) fn rows(events: &[Event]) -> StoreResult<Vec<Row>> {
    events
        .iter()
        .map(|e| {
            Ok(match &e.payload {
                Payload::Audit { record, .. } => {
                    let details = serde_json::to_string(&record.details).map_err(internal)?;
                    Row::Audit(record.clone(), details)
                }
                other => Row::Stream {
                    id: e.id.clone(),
                    at: ms(&e.at),
                    topic: other.topic().map_or("", Topic::as_str),
                    aggregate: e.aggregate.clone(),
                    body: serde_json::to_string(e).map_err(internal)?,
                },
            })
        })
        .collect()
}

/// Runs `change`, then writes `events` if `keep(&answer)` — all inside one savepoint, so a
/// failure of either leaves neither. No events: `change` alone.
pub(super) fn with_events<T>(
    c: &mut Connection,
    events: &[Row],
    keep: impl FnOnce(&T) -> bool,
    change: impl FnOnce(&mut Connection) -> StoreResult<T>,
) -> StoreResult<T> {
    if events.is_empty() {
        return change(c);
    }
    // What the change wrote goes with the events it could not be stored with.
    atomically(c, |c| {
        let v = change(c)?;
        if keep(&v) {
            emit(c, events)?;
        }
        Ok(v)
    })
}

/// Inserts `events`: audit records into the audit log, the others into the stream.
pub(super) fn emit(c: &Connection, events: &[Row]) -> StoreResult<()> {
    for e in events {
        match e {
            Row::Audit(record, details) => super::audit::insert_recent(c, record, details)?,
            Row::Stream {
                id,
                at,
                topic,
                aggregate,
                body,
            } => {
                c.exec(
                    "INSERT INTO events (id, at, topic, aggregate, body) VALUES (?1,?2,?3,?4,?5)",
                    params![id, at, topic, aggregate, body],
                )
                .map_err(map_err)?;
            }
        }
    }
    Ok(())
}

/// How many audit records are among `events` (the audit log moves them in batches).
pub(super) fn audits(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.payload, Payload::Audit { .. }))
        .count()
}

impl SqliteStore {
    /// A write whose answer is kept with `events` (see [`with_events`]).
    pub(super) async fn write_with<T, F>(
        &self,
        events: &[Event],
        keep: fn(&T) -> bool,
        change: F,
    ) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let audited = audits(events);
        let events = rows(events)?;
        let r = self
            .write(move |c| with_events(c, &events, keep, change))
            .await?;
        if audited > 0 && keep(&r) {
            self.audit_appended(audited);
        }
        Ok(r)
    }
}

/// Keeps the events of every successful write.
pub(super) fn always<T>(_: &T) -> bool {
    true
}

#[async_trait]
impl EventStore for SqliteStore {
    async fn append_events(&self, events: &[Event]) -> StoreResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.write_with(events, always, |_| Ok(())).await
    }

    /// One shard: a single writer orders every event already.
    fn event_shards(&self) -> u32 {
        1
    }

    async fn claim_events(&self, lease: &Lease) -> StoreResult<Option<Option<String>>> {
        let l = lease.clone();
        self.write(move |c| {
            c.exec(
                "INSERT INTO event_consumers (consumer, shard, holder, lease_until) \
                 VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (consumer, shard) DO UPDATE SET holder = ?3, lease_until = ?4 \
                 WHERE holder = ?3 OR lease_until <= ?5 OR holder IS NULL",
                params![l.consumer, l.shard, l.holder, ms(&l.until), ms(&l.now)],
            )
            .map_err(map_err)?;
            let row: Option<(Option<String>, Option<String>)> = c
                .prepare_cached(
                    "SELECT holder, position FROM event_consumers WHERE consumer = ?1 AND shard = ?2",
                )
                .map_err(map_err)?
                .query_row(params![l.consumer, l.shard], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(map_err)?;
            Ok(match row {
                Some((Some(holder), position)) if holder == l.holder => Some(position),
                _ => None,
            })
        })
        .await
    }

    async fn read_events(
        &self,
        topic: Topic,
        _shard: u32,
        after: Option<&str>,
        limit: u32,
        _now: DateTime<Utc>,
    ) -> StoreResult<Read> {
        self.read_stream(topic, after, limit, |body| serde_json::from_str(body))
            .await
    }

    async fn read_event_names(
        &self,
        topic: Topic,
        _shard: u32,
        after: Option<&str>,
        limit: u32,
        _now: DateTime<Utc>,
    ) -> StoreResult<Read> {
        self.read_stream(topic, after, limit, crate::events::event_without_data)
            .await
    }

    async fn event_head(&self, topic: Topic, _shard: u32) -> StoreResult<Option<String>> {
        self.read(move |c| {
            let seq: Option<i64> = c
                .prepare_cached("SELECT max(seq) FROM events WHERE topic = ?1")
                .map_err(map_err)?
                .query_row([topic.as_str()], |r| r.get(0))
                .map_err(map_err)?;
            Ok(seq.map(|s| s.to_string()))
        })
        .await
    }

    async fn advance_events(&self, lease: &Lease, position: &str) -> StoreResult<bool> {
        let (l, p) = (lease.clone(), position.to_owned());
        self.write(move |c| {
            let n = c
                .exec(
                    "UPDATE event_consumers SET position = ?4 \
                     WHERE consumer = ?1 AND shard = ?2 AND holder = ?3",
                    params![l.consumer, l.shard, l.holder, p],
                )
                .map_err(map_err)?;
            Ok(n > 0)
        })
        .await
    }

    async fn purge_events(&self, before: DateTime<Utc>) -> StoreResult<u64> {
        let before = ms(&before);
        let mut total = 0u64;
        loop {
            let n = self
                .write(move |c| {
                    c.exec(
                        // Oldest first, by `seq`, up to the first event that is kept (times
                        // follow `seq` closely enough, and no index on `at` is needed).
                        "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE seq < \
                         COALESCE((SELECT seq FROM events WHERE at >= ?1 ORDER BY seq LIMIT 1), \
                         9223372036854775807) ORDER BY seq LIMIT 5000)",
                        [before],
                    )
                    .map_err(map_err)
                })
                .await?;
            total += n as u64;
            if n < 5000 {
                return Ok(total);
            }
        }
    }
}

impl SqliteStore {
    /// Events of `topic` after `after`, each parsed by `parse` (whole, or without its object).
    async fn read_stream(
        &self,
        topic: Topic,
        after: Option<&str>,
        limit: u32,
        parse: fn(&str) -> serde_json::Result<Event>,
    ) -> StoreResult<Read> {
        let after: i64 = match after {
            None => 0,
            Some(p) => p
                .parse()
                .map_err(|_| StoreError::Internal(format!("not an event position: {p:?}")))?,
        };
        self.read(move |c| {
            let rows = all(
                c,
                "SELECT seq, body FROM events WHERE topic = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                params![topic.as_str(), after, i64::from(limit)],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )?;
            let events = rows
                .into_iter()
                .map(|(seq, body)| {
                    Ok(Delivery {
                        position: seq.to_string(),
                        event: parse(&body).map_err(internal)?,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            let upto = events.last().map(|d| d.position.clone());
            Ok(Read { events, upto })
        })
        .await
    }
}
