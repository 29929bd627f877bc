//! The audit log: one table, read through an index per filter (time, actor, subject user,
//! organization), each ordered by (at, id).
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
        self.write(move |c| {
            let tx = c.savepoint().map_err(map_err)?;
            {
                let mut st = tx
                    .prepare_cached(&format!(
                        "INSERT INTO audit_events ({AUDIT_COLS}) \
                         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
                    ))
                    .map_err(map_err)?;
                for (e, details) in rows {
                    st.execute(rusqlite::params![
                        e.id,
                        ms(&e.at),
                        e.action,
                        e.outcome.as_str(),
                        e.reason,
                        e.actor_id.map(|u| u.0),
                        e.user_id.map(|u| u.0),
                        e.organization_id.map(|o| o.0),
                        e.target,
                        e.ip_address,
                        e.user_agent,
                        e.request_id,
                        details,
                    ])
                    .map_err(unique("audit event"))?;
                }
            }
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn list_audit(&self, q: &AuditQuery) -> StoreResult<Page<AuditEvent>> {
        let q = q.clone();
        let position = q.position()?;
        self.read(move |c| {
            let mut sql = format!("SELECT {AUDIT_COLS} FROM audit_events WHERE at >= ? AND at < ?");
            let mut args: Vec<Value> = vec![ms(&q.since).into(), ms(&q.until).into()];
            if let Some(o) = &q.organization {
                sql.push_str(" AND organization_id = ?");
                args.push(o.0.clone().into());
            }
            if let Some(u) = &q.user {
                sql.push_str(" AND (actor_id = ? OR user_id = ?)");
                args.push(u.0.clone().into());
                args.push(u.0.clone().into());
            }
            if let Some(a) = &q.action {
                sql.push_str(" AND (action = ? OR substr(action, 1, ?) = ?)");
                args.push(a.clone().into());
                args.push((a.chars().count() as i64 + 1).into());
                args.push(format!("{a}.").into());
            }
            if let Some(o) = q.outcome {
                sql.push_str(" AND outcome = ?");
                args.push(o.as_str().to_owned().into());
            }
            if let Some((at, id)) = position {
                sql.push_str(if q.oldest_first {
                    " AND (at, id) > (?, ?)"
                } else {
                    " AND (at, id) < (?, ?)"
                });
                args.push(at.into());
                args.push(id.into());
            }
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
        loop {
            let n = self
                .write(move |c| {
                    c.execute(
                        "DELETE FROM audit_events WHERE rowid IN \
                         (SELECT rowid FROM audit_events WHERE at < ?1 LIMIT ?2)",
                        rusqlite::params![before, PURGE_BATCH],
                    )
                    .map_err(map_err)
                })
                .await?;
            total += n as u64;
            if (n as i64) < PURGE_BATCH {
                return Ok(total);
            }
        }
    }
}
