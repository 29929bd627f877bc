//! Webhooks: an endpoint's row and its deliveries' rows, each a JSON document beside the
//! columns that are queried (scope; an endpoint's order; whether and when a delivery is due,
//! and who holds it).
use super::*;
use crate::webhooks::*;
use crate::*;
use rusqlite::params;

fn doc<T: serde::Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(internal)
}

fn webhook_of(text: String) -> rusqlite::Result<Webhook> {
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn webhook_row(r: &Row) -> rusqlite::Result<Webhook> {
    webhook_of(r.get(0)?)
}

/// A delivery from its document and its body (a column of its own since schema 15, whose
/// migration moved older rows' bodies there), with the queried columns (which writes keep
/// current) over it.
fn delivery_row(r: &Row) -> rusqlite::Result<WebhookDelivery> {
    let text: String = r.get(0)?;
    let mut d: WebhookDelivery = serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })?;
    d.status = match r.get::<_, String>(1)?.as_str() {
        "pending" => DeliveryStatus::Pending,
        "succeeded" => DeliveryStatus::Succeeded,
        _ => DeliveryStatus::Failed,
    };
    d.next_at = ts_opt(r.get(2)?)?;
    d.holder = r.get(3)?;
    d.lease_until = ts_opt(r.get(4)?)?;
    if let Some(body) = r.get(5)? {
        d.body = body;
    }
    Ok(d)
}

const DELIVERY_COLS: &str = "doc, status, next_at, holder, lease_until, body";

/// A delivery's row as written: its document (without the body, which has a column of its
/// own, written once: a settled delivery's document is its attempts and state) and the
/// columns that are queried, made by the caller (so that the JSON is not built on the
/// writer's thread).
struct Columns {
    id: String,
    doc: String,
    status: &'static str,
    next_at: Option<i64>,
    holder: Option<String>,
    lease_until: Option<i64>,
}

impl Columns {
    /// The row of `d`, and its body.
    fn of(mut d: WebhookDelivery) -> StoreResult<(Self, String)> {
        let body = std::mem::take(&mut d.body);
        let row = Self {
            doc: doc(&d)?,
            status: d.status.as_str(),
            next_at: ms_opt(&d.next_at),
            lease_until: ms_opt(&d.lease_until),
            holder: d.holder,
            id: d.id,
        };
        Ok((row, body))
    }

    /// The row of `d` settled: held by no one.
    fn settled(d: &WebhookDelivery) -> StoreResult<Self> {
        let mut d = d.clone();
        d.holder = None;
        d.lease_until = None;
        Ok(Self::of(d)?.0)
    }
}

/// Writes every column of `row` over its row (`extra` narrows which row); rows written.
fn write_delivery(c: &Connection, row: &Columns, extra: &str, holder: &str) -> StoreResult<usize> {
    c.exec(
        &format!(
            "UPDATE webhook_deliveries SET doc = ?2, status = ?3, next_at = ?4, holder = ?5, \
             lease_until = ?6 WHERE id = ?1 {extra}"
        ),
        params![
            row.id,
            row.doc,
            row.status,
            row.next_at,
            row.holder,
            row.lease_until,
            holder
        ],
    )
    .map_err(map_err)
}

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn create_webhook(&self, w: &Webhook, events: &[Event]) -> StoreResult<()> {
        let (id, scope, created, version, text) = (
            w.id.clone(),
            w.scope.clone(),
            ms(&w.created_at),
            w.version as i64,
            doc(w)?,
        );
        self.write_with(events, always, move |c| {
            c.exec(
                "INSERT INTO webhooks (id, scope, created_at, version, doc) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, scope, created, version, text],
            )
            .map_err(unique("webhook"))?;
            Ok(())
        })
        .await
    }

    async fn get_webhook(&self, id: &str) -> StoreResult<Option<Webhook>> {
        let id = id.to_owned();
        self.point_read(move |c| {
            one(
                c,
                "SELECT doc FROM webhooks WHERE id = ?1",
                [id],
                webhook_row,
            )
        })
        .await
    }

    async fn list_webhooks(&self, scope: &str) -> StoreResult<Vec<Webhook>> {
        let scope = scope.to_owned();
        self.point_read(move |c| {
            all(
                c,
                "SELECT doc FROM webhooks WHERE scope = ?1 ORDER BY created_at, id",
                [scope],
                webhook_row,
            )
        })
        .await
    }

    async fn update_webhook(
        &self,
        w: &Webhook,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let (id, version, text) = (w.id.clone(), w.version as i64, doc(w)?);
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
                    "UPDATE webhooks SET version = ?2, doc = ?3 WHERE id = ?1 AND version = ?4",
                    params![id, version, text, expected as i64],
                )
                .map_err(map_err)?;
            if n == 1 {
                return Ok(());
            }
            Err(moved_or_gone(c, "webhooks", "id", &id)?)
        })
        .await
    }

    async fn delete_webhook(&self, id: &str, events: &[Event]) -> StoreResult<bool> {
        let id = id.to_owned();
        self.write_with(
            events,
            |gone: &bool| *gone,
            move |c| {
                c.exec(
                    "DELETE FROM webhook_deliveries WHERE webhook_id = ?1",
                    [&id],
                )
                .map_err(map_err)?;
                Ok(c.exec("DELETE FROM webhooks WHERE id = ?1", [&id])
                    .map_err(map_err)?
                    == 1)
            },
        )
        .await
    }

    async fn enqueue_deliveries(&self, d: &[WebhookDelivery]) -> StoreResult<Vec<bool>> {
        if d.is_empty() {
            return Ok(vec![]);
        }
        let rows = d
            .iter()
            .map(|d| {
                Ok((
                    d.webhook_id.clone(),
                    d.seq,
                    ms(&d.created_at),
                    Columns::of(d.clone())?,
                ))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        self.write(move |c| {
            rows.iter()
                .map(|(webhook, seq, created, (row, body))| {
                    let n = c
                        .exec(
                            "INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, seq, \
                             created_at, status, next_at, holder, lease_until, doc, body) \
                             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 \
                             WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ?2)",
                            params![
                                row.id,
                                webhook,
                                seq,
                                created,
                                row.status,
                                row.next_at,
                                row.holder,
                                row.lease_until,
                                row.doc,
                                body
                            ],
                        )
                        .map_err(map_err)?;
                    Ok(n == 1)
                })
                .collect()
        })
        .await
    }

    async fn claim_deliveries(
        &self,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let (holder, now, until) = (holder.to_owned(), ms(&now), until);
        self.write(move |c| {
            // Endpoints another holder is sending to (their deliveries wait for it).
            let busy: std::collections::HashSet<String> = all(
                c,
                "SELECT webhook_id FROM webhook_deliveries INDEXED BY webhook_deliveries_leased \
                 WHERE status = 'pending' AND holder IS NOT NULL AND lease_until >= ?1 \
                 AND holder != ?2",
                params![now, holder],
                |r| r.get(0),
            )?
            .into_iter()
            .collect();
            // The due ones (by the pending rows' index on their time), oldest first, until
            // `limit` are free.
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {DELIVERY_COLS}, webhook_id FROM webhook_deliveries \
                     INDEXED BY webhook_deliveries_due \
                     WHERE status = 'pending' AND next_at <= ?1 \
                     AND (lease_until IS NULL OR lease_until < ?1) ORDER BY seq LIMIT ?2"
                ))
                .map_err(map_err)?;
            // Room for some of busy endpoints among them.
            let read = i64::from(limit).saturating_mul(4).saturating_add(64);
            let mut rows = stmt.query(params![now, read]).map_err(map_err)?;
            let mut due = Vec::new();
            while let Some(r) = rows.next().map_err(map_err)? {
                if due.len() >= limit as usize {
                    break;
                }
                let endpoint: String = r.get(6).map_err(map_err)?;
                if busy.contains(&endpoint) {
                    continue;
                }
                due.push(delivery_row(r).map_err(map_err)?);
            }
            drop(rows);
            drop(stmt);
            for d in &mut due {
                d.holder = Some(holder.clone());
                d.lease_until = Some(until);
                c.exec(
                    "UPDATE webhook_deliveries SET holder = ?2, lease_until = ?3 WHERE id = ?1",
                    params![d.id, holder, ms(&until)],
                )
                .map_err(map_err)?;
            }
            Ok(due)
        })
        .await
    }

    async fn settle_deliveries(
        &self,
        ds: &[WebhookDelivery],
        holder: &str,
    ) -> StoreResult<Vec<bool>> {
        if ds.is_empty() {
            return Ok(vec![]);
        }
        let holder = holder.to_owned();
        let rows = ds
            .iter()
            .map(Columns::settled)
            .collect::<StoreResult<Vec<_>>>()?;
        self.write(move |c| {
            rows.iter()
                .map(|row| Ok(write_delivery(c, row, "AND holder = ?7", &holder)? == 1))
                .collect()
        })
        .await
    }

    async fn get_delivery(&self, id: &str) -> StoreResult<Option<WebhookDelivery>> {
        let id = id.to_owned();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE id = ?1"),
                [id],
                delivery_row,
            )
        })
        .await
    }

    async fn list_deliveries(
        &self,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let webhook_id = webhook_id.to_owned();
        self.point_read(move |c| {
            all(
                c,
                &format!(
                    "SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE webhook_id = ?1 \
                     AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
                ),
                params![webhook_id, before.unwrap_or(i64::MAX), limit],
                delivery_row,
            )
        })
        .await
    }

    async fn redeliver(&self, id: &str, now: DateTime<Utc>) -> StoreResult<bool> {
        let id = id.to_owned();
        self.write(move |c| {
            let Some(mut d) = one(
                c,
                &format!(
                    "SELECT {DELIVERY_COLS} FROM webhook_deliveries \
                     WHERE id = ?1 AND status != 'pending'"
                ),
                [&id],
                delivery_row,
            )?
            else {
                return Ok(false);
            };
            d.status = DeliveryStatus::Pending;
            d.next_at = Some(now);
            d.tries = 0;
            d.holder = None;
            d.lease_until = None;
            let (row, _) = Columns::of(d)?;
            Ok(write_delivery(c, &row, "AND status != 'pending' AND ?7 = ?7", "")? == 1)
        })
        .await
    }

    async fn oldest_pending_delivery(&self) -> StoreResult<Option<DateTime<Utc>>> {
        self.point_read(|c| {
            let t: Option<Option<i64>> = one(
                c,
                "SELECT MIN(created_at) FROM webhook_deliveries WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )?;
            t.flatten().map(|v| ts(v).map_err(map_err)).transpose()
        })
        .await
    }

    async fn purge_deliveries(&self, before: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            Ok(c.exec(
                "DELETE FROM webhook_deliveries WHERE status != 'pending' AND created_at < ?1",
                [ms(&before)],
            )
            .map_err(map_err)? as u64)
        })
        .await
    }
}
