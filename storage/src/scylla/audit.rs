//! The audit log, in three tables written together (a logged batch, with the retention as
//! TTL): `audit_by_time` partitioned by hour, `audit_by_user` and `audit_by_org` by (key, day).
//! A read walks the query's time range one bucket after another (a few at once), newest
//! first or oldest first, and filters what the partition key cannot (action, a user within
//! an organization) as it goes.
use super::*;
use crate::audit::{audit_cursor, AuditEvent, AuditOutcome, AuditQuery, AuditStore};
use crate::*;
use async_trait::async_trait;
use chrono::{Duration as ChronoDuration, TimeZone};

const COLS: &str = "at, id, action, outcome, reason, actor_id, user_id, organization_id, \
                    target, ip_address, user_agent, request_id, details";

/// How many buckets are read at once.
const FAN_OUT: usize = 12;
/// How many buckets one read walks at most (30 days of hours, two years of days): a page that
/// reaches it before it is full comes back short, with a cursor where the walk stopped.
const WALK: i64 = 720;

/// The table an access path reads, and its partition key besides the bucket.
#[derive(Clone, Copy)]
enum Path<'a> {
    Time,
    User(&'a str),
    Org(&'a str),
}

impl Path<'_> {
    fn table(self) -> &'static str {
        match self {
            Self::Time => "audit_by_time",
            Self::User(_) => "audit_by_user",
            Self::Org(_) => "audit_by_org",
        }
    }
    fn key(self) -> Option<String> {
        match self {
            Self::Time => None,
            Self::User(k) | Self::Org(k) => Some(k.to_owned()),
        }
    }
    /// Hours for the global table (busy), days for one user's or organization's.
    fn bucket_len(self) -> ChronoDuration {
        match self {
            Self::Time => ChronoDuration::hours(1),
            _ => ChronoDuration::days(1),
        }
    }
    fn bucket(self, at: &DateTime<Utc>) -> String {
        match self {
            Self::Time => at.format("%Y%m%d%H").to_string(),
            _ => at.format("%Y%m%d").to_string(),
        }
    }
    /// The start of the bucket `at` is in.
    fn floor(self, at: &DateTime<Utc>) -> DateTime<Utc> {
        let len = self.bucket_len().num_milliseconds();
        let ms = at.timestamp_millis().div_euclid(len) * len;
        Utc.timestamp_millis_opt(ms).single().unwrap_or(*at)
    }
}

fn event_of(r: &Row) -> StoreResult<AuditEvent> {
    let c = Cols(r);
    Ok(AuditEvent {
        at: c.ts(0)?,
        id: c.text(1)?,
        action: c.text(2)?,
        outcome: AuditOutcome::parse(&c.text(3)?)?,
        reason: c.otext(4),
        actor_id: c.otext(5).map(UserId),
        user_id: c.otext(6).map(UserId),
        organization_id: c.otext(7).map(OrgId),
        target: c.otext(8),
        ip_address: c.otext(9),
        user_agent: c.otext(10),
        request_id: c.otext(11),
        details: match c.otext(12) {
            Some(d) => serde_json::from_str(&d).map_err(|e| StoreError::Internal(e.to_string()))?,
            None => Default::default(),
        },
    })
}

impl ScyllaStore {
    /// The writes of one event: a row in each table it is read from (with the retention as
    /// TTL), for one logged batch.
    pub(crate) fn audit_writes(
        &self,
        e: &AuditEvent,
        keep_for: std::time::Duration,
    ) -> StoreResult<Vec<(String, Vec<V>)>> {
        let details =
            serde_json::to_string(&e.details).map_err(|e| StoreError::Internal(e.to_string()))?;
        let ttl = int(keep_for.as_secs().clamp(1, 630_720_000) as i32);
        let row = |key: Option<&str>, path: Path<'_>| {
            let mut values = Vec::with_capacity(16);
            let mut cols = String::new();
            if let Some(k) = key {
                cols.push_str("key, ");
                values.push(text(k));
            }
            values.extend([
                text(&path.bucket(&e.at)),
                ms(&e.at),
                text(&e.id),
                text(&e.action),
                text(e.outcome.as_str()),
                otext(e.reason.as_deref()),
                otext(e.actor_id.as_ref().map(|u| u.0.as_str())),
                otext(e.user_id.as_ref().map(|u| u.0.as_str())),
                otext(e.organization_id.as_ref().map(|o| o.0.as_str())),
                otext(e.target.as_deref()),
                otext(e.ip_address.as_deref()),
                otext(e.user_agent.as_deref()),
                otext(e.request_id.as_deref()),
                text(&details),
                ttl.clone(),
            ]);
            let marks = vec!["?"; values.len() - 1].join(", ");
            (
                format!(
                    "INSERT INTO {} ({cols}bucket, {COLS}) VALUES ({marks}) USING TTL ?",
                    self.t(path.table())
                ),
                values,
            )
        };
        let mut writes = vec![row(None, Path::Time)];
        let mut users: Vec<&str> = Vec::new();
        for u in [&e.actor_id, &e.user_id].into_iter().flatten() {
            if !users.contains(&u.0.as_str()) {
                users.push(&u.0);
            }
        }
        for u in users {
            writes.push(row(Some(u), Path::User(u)));
        }
        if let Some(o) = &e.organization_id {
            writes.push(row(Some(&o.0), Path::Org(&o.0)));
        }
        Ok(writes)
    }

    /// Up to `limit` events of one bucket past `pos` (or from the range's end), in `q`'s order.
    async fn audit_slice(
        &self,
        path: Path<'_>,
        bucket: &str,
        q: &AuditQuery,
        pos: Option<&(i64, String)>,
        limit: usize,
    ) -> StoreResult<Vec<AuditEvent>> {
        let mut cql = format!("SELECT {COLS} FROM {} WHERE ", self.t(path.table()));
        let mut values = Vec::new();
        if let Some(k) = path.key() {
            cql.push_str("key = ? AND ");
            values.push(text(&k));
        }
        cql.push_str("bucket = ?");
        values.push(text(bucket));
        let (cmp, bound) = if q.oldest_first {
            (">", ">=")
        } else {
            ("<", "<")
        };
        match pos {
            Some((at, id)) => {
                cql.push_str(&format!(" AND (at, id) {cmp} (?, ?)"));
                values.push(big(*at));
                values.push(text(id));
            }
            None => {
                cql.push_str(&format!(" AND at {bound} ?"));
                values.push(ms(if q.oldest_first { &q.since } else { &q.until }));
            }
        }
        cql.push_str(if q.oldest_first {
            " ORDER BY at ASC, id ASC LIMIT ?"
        } else {
            " ORDER BY at DESC, id DESC LIMIT ?"
        });
        values.push(int(limit.min(10_000) as i32));
        self.rows(&cql, values)
            .await?
            .iter()
            .map(event_of)
            .collect()
    }
}

#[async_trait]
impl AuditStore for ScyllaStore {
    /// Each event is its own logged batch (three partitions of three tables); several are
    /// written side by side.
    async fn append_audit_batch(
        &self,
        events: &[AuditEvent],
        keep_for: std::time::Duration,
    ) -> StoreResult<()> {
        futures::future::try_join_all(events.iter().map(|e| self.append_audit(e, keep_for)))
            .await
            .map(|_| ())
    }

    async fn append_audit(&self, e: &AuditEvent, keep_for: std::time::Duration) -> StoreResult<()> {
        let writes = self.audit_writes(e, keep_for)?;
        self.batch(writes).await
    }

    async fn list_audit(&self, q: &AuditQuery) -> StoreResult<Page<AuditEvent>> {
        let path = match (&q.organization, &q.user) {
            (Some(o), _) => Path::Org(&o.0),
            (None, Some(u)) => Path::User(&u.0),
            (None, None) => Path::Time,
        };
        let mut pos = q.position()?;
        // The part of the range still to read: a cursor narrows it.
        let (mut from, mut to) = (q.since, q.until);
        if let Some(at) = pos
            .as_ref()
            .and_then(|(ms, _)| DateTime::from_timestamp_millis(*ms))
        {
            if q.oldest_first {
                from = from.max(at);
            } else {
                to = to.min(at + ChronoDuration::milliseconds(1));
            }
        }
        if from >= to {
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        }
        let step = path.bucket_len();
        let (first, last) = (
            path.floor(&from),
            path.floor(&(to - ChronoDuration::milliseconds(1))),
        );
        let count = (last - first).num_milliseconds() / step.num_milliseconds() + 1;
        let walked = count.min(WALK);
        // In reading order: newest first from the last bucket, or oldest first from the first.
        let starts: Vec<DateTime<Utc>> = (0..walked)
            .map(|i| match q.oldest_first {
                true => first + step * i as i32,
                false => last - step * i as i32,
            })
            .collect();
        let buckets: Vec<String> = starts.iter().map(|s| path.bucket(s)).collect();
        let want = q.limit as usize + 1;
        let mut out = Vec::new();
        for chunk in buckets.chunks(FAN_OUT) {
            let firsts = futures::future::try_join_all(
                chunk
                    .iter()
                    .map(|b| self.audit_slice(path, b, q, pos.as_ref(), want)),
            )
            .await?;
            for (bucket, mut rows) in chunk.iter().zip(firsts) {
                loop {
                    let full = rows.len() >= want;
                    for e in rows {
                        let before = e.at < q.since;
                        let beyond = e.at >= q.until;
                        if (q.oldest_first && beyond) || (!q.oldest_first && before) {
                            return Ok(Page::from_overfetch(out, q.limit, audit_cursor));
                        }
                        pos = Some((e.at.timestamp_millis(), e.id.clone()));
                        if q.matches(&e) {
                            out.push(e);
                            if out.len() == want {
                                return Ok(Page::from_overfetch(out, q.limit, audit_cursor));
                            }
                        }
                    }
                    if !full {
                        break;
                    }
                    rows = self
                        .audit_slice(path, bucket, q, pos.as_ref(), want)
                        .await?;
                }
            }
        }
        if walked < count {
            // The walk stopped before the range's end: the next page starts past the buckets
            // read (a position just beyond them; ids are alphanumeric, `~` sorts after them).
            let edge = match (q.oldest_first, starts.last()) {
                (true, Some(s)) => *s + step - ChronoDuration::milliseconds(1),
                (false, Some(s)) => *s - ChronoDuration::milliseconds(1),
                (_, None) => return Ok(Page::from_overfetch(out, q.limit, audit_cursor)),
            };
            return Ok(Page {
                items: out,
                next: Some(format!("{}.~", edge.timestamp_millis())),
            });
        }
        Ok(Page::from_overfetch(out, q.limit, audit_cursor))
    }

    async fn purge_audit(&self, _before: DateTime<Utc>) -> StoreResult<u64> {
        // Every row carries the retention as its TTL.
        Ok(0)
    }
}
