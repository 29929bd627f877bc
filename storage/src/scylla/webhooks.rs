//! Webhooks: an endpoint's row (a JSON document, LWT on its version) listed by scope; a
//! delivery's document in its endpoint's partition (newest first) and its id's row, both
//! expiring after [`KEEP_SECS`]; a pending delivery also has a row in one of [`DUE_SHARDS`]
//! due partitions (by endpoint) with its lease, taken and let go by LWT on the holder and
//! the lease's end, and removed once the delivery is done.
use super::stream::Probe;
use super::*;
use crate::events::shard_of;
use crate::webhooks::*;
use crate::*;
use async_trait::async_trait;

/// How long deliveries are kept.
const KEEP_SECS: i32 = 30 * 86_400;
/// Tries of a redelivery while a settle lets its due row go (50 ms apart).
const REDELIVER_WAITS: usize = 20;
/// Partitions of pending deliveries (an endpoint's are in one).
const DUE_SHARDS: u32 = 8;

fn json<T: serde::Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(stream::internal)
}

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(stream::internal)
}

fn due_shard(webhook_id: &str) -> i32 {
    shard_of(webhook_id, DUE_SHARDS) as i32
}

/// A row of `webhook_due`.
struct Due {
    id: String,
    webhook_id: String,
    seq: i64,
    created_at: i64,
    next_at: i64,
    holder: String,
    lease_until: i64,
}

impl ScyllaStore {
    /// Writes one delivery unless it is stored already: whether it was written.
    async fn enqueue_delivery(&self, d: &WebhookDelivery) -> StoreResult<bool> {
        let known = self
            .row(
                &format!(
                    "SELECT seq FROM {} WHERE id = ?",
                    self.t("webhook_delivery_ids")
                ),
                vec![text(&d.id)],
            )
            .await?
            .is_some();
        if known {
            return Ok(false);
        }
        // Made again after a crash, it is the same delivery written over itself; one that
        // ended at its first try is due no more.
        let mut writes = vec![
            self.doc_insert(d)?,
            (
                format!(
                    "INSERT INTO {} (id, webhook_id, seq) VALUES (?, ?, ?) USING TTL ?",
                    self.t("webhook_delivery_ids")
                ),
                vec![text(&d.id), text(&d.webhook_id), big(d.seq), int(KEEP_SECS)],
            ),
        ];
        if d.status == DeliveryStatus::Pending {
            writes.push(self.due_insert(d, false));
        }
        self.batch(writes).await?;
        Ok(true)
    }

    /// The write of a delivery's document (expiring after [`KEEP_SECS`]).
    fn doc_insert(&self, d: &WebhookDelivery) -> StoreResult<(String, Vec<V>)> {
        Ok((
            format!(
                "INSERT INTO {} (webhook_id, seq, id, doc) VALUES (?, ?, ?, ?) USING TTL ?",
                self.t("webhook_deliveries")
            ),
            vec![
                text(&d.webhook_id),
                big(d.seq),
                text(&d.id),
                text(&json(d)?),
                int(KEEP_SECS),
            ],
        ))
    }

    async fn write_delivery_doc(&self, d: &WebhookDelivery) -> StoreResult<()> {
        let (cql, values) = self.doc_insert(d)?;
        self.exec(&cql, values).await.map(drop)
    }

    fn due_insert(&self, d: &WebhookDelivery, if_not_exists: bool) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (shard, id, webhook_id, seq, created_at, next_at, holder, \
                 lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?){}",
                self.t("webhook_due"),
                if if_not_exists { " IF NOT EXISTS" } else { "" }
            ),
            vec![
                int(due_shard(&d.webhook_id)),
                text(&d.id),
                text(&d.webhook_id),
                big(d.seq),
                ms(&d.created_at),
                big(d.next_at.map_or(0, |t| t.timestamp_millis())),
                text(d.holder.as_deref().unwrap_or_default()),
                big(d.lease_until.map_or(0, |t| t.timestamp_millis())),
            ],
        )
    }

    async fn due_rows(&self, shard: u32) -> StoreResult<Vec<Due>> {
        let rows = self
            .rows(
                &format!(
                    "SELECT id, webhook_id, seq, created_at, next_at, holder, lease_until \
                     FROM {} WHERE shard = ?",
                    self.t("webhook_due")
                ),
                vec![int(shard as i32)],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let c = Cols(r);
                Ok(Due {
                    id: c.text(0)?,
                    webhook_id: c.text(1)?,
                    seq: c.big(2),
                    created_at: c.big(3),
                    next_at: c.big(4),
                    holder: c.otext(5).unwrap_or_default(),
                    lease_until: c.big(6),
                })
            })
            .collect()
    }

    async fn delivery_doc(
        &self,
        webhook_id: &str,
        seq: i64,
        id: &str,
    ) -> StoreResult<Option<WebhookDelivery>> {
        self.row(
            &format!(
                "SELECT doc FROM {} WHERE webhook_id = ? AND seq = ? AND id = ?",
                self.t("webhook_deliveries")
            ),
            vec![text(webhook_id), big(seq), text(id)],
        )
        .await?
        .map(|r| parse(&Cols(&r).text(0)?))
        .transpose()
    }

    async fn write_webhook(
        &self,
        w: &Webhook,
        expected: Option<u64>,
        decision: Option<stream::Decision>,
    ) -> StoreResult<bool> {
        let mut writes = vec![match expected {
            None => (
                format!(
                    "INSERT INTO {} (id, scope, version, doc) VALUES (?, ?, ?, ?) IF NOT EXISTS",
                    self.t("webhooks")
                ),
                vec![
                    text(&w.id),
                    text(&w.scope),
                    big(w.version as i64),
                    text(&json(w)?),
                ],
            ),
            Some(v) => (
                format!(
                    "UPDATE {} SET version = ?, doc = ? WHERE id = ? IF version = ?",
                    self.t("webhooks")
                ),
                vec![
                    big(w.version as i64),
                    text(&json(w)?),
                    text(&w.id),
                    big(v as i64),
                ],
            ),
        }];
        writes.extend(decision.map(|d| d.stamp(self, "webhooks", ("id", &w.id), w.version)));
        self.batch_lwt(writes).await
    }
}

impl ScyllaStore {
    /// One delivery settled (see `settle_deliveries`).
    async fn settle_one(&self, d: &WebhookDelivery, holder: &str) -> StoreResult<bool> {
        let Some(until) = d.lease_until else {
            return Ok(false);
        };
        let mut doc = d.clone();
        doc.holder = None;
        doc.lease_until = None;
        // The document first: a crash before the lease is let go sends it again (at least
        // once), never leaves it undelivered.
        self.write_delivery_doc(&doc).await?;
        let key = vec![
            int(due_shard(&d.webhook_id)),
            text(&d.id),
            text(holder),
            ms(&until),
        ];
        if doc.status == DeliveryStatus::Pending {
            let mut values = vec![big(doc.next_at.map_or(0, |t| t.timestamp_millis()))];
            values.extend(key);
            self.lwt(
                &format!(
                    "UPDATE {} SET next_at = ?, holder = '', lease_until = 0 \
                     WHERE shard = ? AND id = ? IF holder = ? AND lease_until = ?",
                    self.t("webhook_due")
                ),
                values,
            )
            .await
        } else {
            self.lwt(
                &format!(
                    "DELETE FROM {} WHERE shard = ? AND id = ? IF holder = ? AND lease_until = ?",
                    self.t("webhook_due")
                ),
                key,
            )
            .await
        }
    }
}

#[async_trait]
impl WebhookStore for ScyllaStore {
    async fn create_webhook(&self, w: &Webhook, events: &[Event]) -> StoreResult<()> {
        let (id, version) = (w.id.clone(), w.version);
        self.decide(
            events,
            |_| Probe::WebhookDecision { id, version },
            always,
            |d| async move {
                // The listing's row first: a failed insert leaves one the listing skips.
                self.exec(
                    &format!(
                        "INSERT INTO {} (scope, id) VALUES (?, ?)",
                        self.t("webhooks_by_scope")
                    ),
                    vec![text(&w.scope), text(&w.id)],
                )
                .await?;
                if self.write_webhook(w, None, d).await? {
                    Ok(())
                } else {
                    Err(StoreError::Conflict("webhook"))
                }
            },
        )
        .await
    }

    async fn get_webhook(&self, id: &str) -> StoreResult<Option<Webhook>> {
        self.row(
            &format!("SELECT doc FROM {} WHERE id = ?", self.t("webhooks")),
            vec![text(id)],
        )
        .await?
        .map(|r| parse(&Cols(&r).text(0)?))
        .transpose()
    }

    async fn list_webhooks(&self, scope: &str) -> StoreResult<Vec<Webhook>> {
        let ids = self
            .rows(
                &format!(
                    "SELECT id FROM {} WHERE scope = ?",
                    self.t("webhooks_by_scope")
                ),
                vec![text(scope)],
            )
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for r in &ids {
            if let Some(w) = self.get_webhook(&Cols(r).text(0)?).await? {
                if w.scope == scope {
                    out.push(w);
                }
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    async fn update_webhook(
        &self,
        w: &Webhook,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let (id, version) = (w.id.clone(), w.version);
        self.decide(
            events,
            |_| Probe::WebhookDecision { id, version },
            always,
            |d| async move {
                if self.write_webhook(w, Some(expected), d).await? {
                    return Ok(());
                }
                Err(StoreError::missed(self.get_webhook(&w.id).await?.is_some()))
            },
        )
        .await
    }

    async fn delete_webhook(&self, id: &str, events: &[Event]) -> StoreResult<bool> {
        let key = id.to_owned();
        self.decide(
            events,
            |_| Probe::WebhookGone { id: key },
            |gone: &bool| *gone,
            |_| async move {
                let Some(w) = self.get_webhook(id).await? else {
                    return Ok(false);
                };
                let gone = self
                    .lwt(
                        &format!("DELETE FROM {} WHERE id = ? IF EXISTS", self.t("webhooks")),
                        vec![text(id)],
                    )
                    .await?;
                if gone {
                    self.batch(vec![
                        (
                            format!(
                                "DELETE FROM {} WHERE scope = ? AND id = ?",
                                self.t("webhooks_by_scope")
                            ),
                            vec![text(&w.scope), text(id)],
                        ),
                        (
                            format!(
                                "DELETE FROM {} WHERE webhook_id = ?",
                                self.t("webhook_deliveries")
                            ),
                            vec![text(id)],
                        ),
                    ])
                    .await?;
                }
                Ok(gone)
            },
        )
        .await
    }

    async fn enqueue_deliveries(&self, ds: &[WebhookDelivery]) -> StoreResult<Vec<bool>> {
        // Each endpoint is looked up once; the deliveries are written side by side (one
        // partition each), not one after another.
        let mut endpoints: Vec<&str> = ds.iter().map(|d| d.webhook_id.as_str()).collect();
        endpoints.sort_unstable();
        endpoints.dedup();
        let found = side_by_side(&endpoints, |id| self.get_webhook(id)).await?;
        let live: std::collections::HashSet<String> =
            found.into_iter().flatten().map(|w| w.id).collect();
        // A delivery given twice is stored once, as its first; none of an endpoint gone.
        let mut seen = std::collections::HashSet::new();
        let todo: Vec<(&WebhookDelivery, bool)> = ds
            .iter()
            .map(|d| {
                (
                    d,
                    seen.insert(d.id.as_str()) && live.contains(&d.webhook_id),
                )
            })
            .collect();
        side_by_side(&todo, |&(d, write)| async move {
            match write {
                true => self.enqueue_delivery(d).await,
                false => Ok(false),
            }
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
        let now_ms = now.timestamp_millis();
        let mut due = Vec::new();
        for shard in 0..DUE_SHARDS {
            let rows = self.due_rows(shard).await?;
            let busy: std::collections::HashSet<String> = rows
                .iter()
                .filter(|r| !r.holder.is_empty() && r.holder != holder && r.lease_until >= now_ms)
                .map(|r| r.webhook_id.clone())
                .collect();
            due.extend(rows.into_iter().filter(|r| {
                r.next_at <= now_ms
                    && (r.holder.is_empty() || r.lease_until < now_ms)
                    && !busy.contains(&r.webhook_id)
            }));
        }
        due.sort_by_key(|r| r.seq);
        let mut out = Vec::new();
        for r in due {
            if out.len() >= limit as usize {
                break;
            }
            let taken = self
                .lwt(
                    &format!(
                        "UPDATE {} SET holder = ?, lease_until = ? WHERE shard = ? AND id = ? \
                         IF holder = ? AND lease_until = ?",
                        self.t("webhook_due")
                    ),
                    vec![
                        text(holder),
                        ms(&until),
                        int(due_shard(&r.webhook_id)),
                        text(&r.id),
                        text(&r.holder),
                        big(r.lease_until),
                    ],
                )
                .await?;
            if !taken {
                continue;
            }
            let Some(mut d) = self.delivery_doc(&r.webhook_id, r.seq, &r.id).await? else {
                // Its endpoint is gone (or the row expired): nothing to send.
                self.exec(
                    &format!(
                        "DELETE FROM {} WHERE shard = ? AND id = ?",
                        self.t("webhook_due")
                    ),
                    vec![int(due_shard(&r.webhook_id)), text(&r.id)],
                )
                .await?;
                continue;
            };
            d.status = DeliveryStatus::Pending;
            d.next_at = DateTime::from_timestamp_millis(r.next_at);
            d.holder = Some(holder.to_owned());
            d.lease_until = Some(until);
            out.push(d);
        }
        Ok(out)
    }

    async fn settle_deliveries(
        &self,
        ds: &[WebhookDelivery],
        holder: &str,
    ) -> StoreResult<Vec<bool>> {
        let mut out = Vec::with_capacity(ds.len());
        for d in ds {
            out.push(self.settle_one(d, holder).await?);
        }
        Ok(out)
    }

    async fn get_delivery(&self, id: &str) -> StoreResult<Option<WebhookDelivery>> {
        let Some(r) = self
            .row(
                &format!(
                    "SELECT webhook_id, seq FROM {} WHERE id = ?",
                    self.t("webhook_delivery_ids")
                ),
                vec![text(id)],
            )
            .await?
        else {
            return Ok(None);
        };
        let c = Cols(&r);
        self.delivery_doc(&c.text(0)?, c.big(1), id).await
    }

    async fn list_deliveries(
        &self,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let rows = self
            .rows(
                &format!(
                    "SELECT doc FROM {} WHERE webhook_id = ? AND seq < ? LIMIT ?",
                    self.t("webhook_deliveries")
                ),
                vec![
                    text(webhook_id),
                    big(before.unwrap_or(i64::MAX)),
                    int(limit.min(i32::MAX as u32) as i32),
                ],
            )
            .await?;
        rows.iter().map(|r| parse(&Cols(r).text(0)?)).collect()
    }

    async fn redeliver(&self, id: &str, now: DateTime<Utc>) -> StoreResult<bool> {
        let Some(mut d) = self.get_delivery(id).await? else {
            return Ok(false);
        };
        if d.status == DeliveryStatus::Pending {
            return Ok(false);
        }
        d.status = DeliveryStatus::Pending;
        d.next_at = Some(now);
        d.tries = 0;
        // A settle writes the document first and lets the due row go after it: a delivery
        // that reads as settled may still have its row for a moment. Waited for (a second at
        // most); a row that stays is a delivery pending again (redelivered by someone else).
        for attempt in 1..=REDELIVER_WAITS {
            let (cql, values) = self.due_insert(&d, true);
            if self.lwt(&cql, values).await? {
                self.write_delivery_doc(&d).await?;
                return Ok(true);
            }
            if attempt < REDELIVER_WAITS {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        Ok(false)
    }

    async fn oldest_pending_delivery(&self) -> StoreResult<Option<DateTime<Utc>>> {
        let mut oldest: Option<i64> = None;
        for shard in 0..DUE_SHARDS {
            for r in self.due_rows(shard).await? {
                oldest = Some(oldest.map_or(r.created_at, |o| o.min(r.created_at)));
            }
        }
        Ok(oldest.and_then(DateTime::from_timestamp_millis))
    }

    async fn purge_deliveries(&self, _before: DateTime<Utc>) -> StoreResult<u64> {
        // Deliveries expire on their own (KEEP_SECS).
        Ok(0)
    }
}
