//! The fan-out (step 1 of the module): each domain event read from the stream becomes a
//! stored delivery for every endpoint that wants it, handed to this process's sender.
use super::*;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The order of a new delivery among its endpoint's: the event's time (µs × 1000), but after
/// every delivery this process made before — events of one aggregate are read in order by
/// one process at a time, so equal times keep their order.
fn next_seq(at: DateTime<Utc>) -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let want = at.timestamp_micros().saturating_mul(1000);
    let prev = LAST
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
            Some(want.max(last + 1))
        })
        .unwrap_or(want);
    want.max(prev + 1)
}

/// How long the fan-out waits for its deliveries' first tries before it stores them (see
/// `fan_out`).
const FIRST_WAIT: Duration = Duration::from_secs(1);

/// A delivery without its maker's lease: due for any process's round.
fn unleased(d: WebhookDelivery) -> WebhookDelivery {
    WebhookDelivery {
        holder: None,
        lease_until: None,
        ..d
    }
}

/// The fan-out consumer (see the module).
pub(super) struct FanOut(pub(super) Webhooks);

#[async_trait::async_trait]
impl Consume for FanOut {
    async fn handle(&self, events: &[Delivery]) -> usize {
        self.0.yield_to_requests().await;
        match self.0.fan_out(events).await {
            Ok(()) => events.len(),
            Err(e) => {
                tracing::warn!(error = %e, "webhooks: storing deliveries failed; they are made on the next read");
                0
            }
        }
    }
}

impl Webhooks {
    async fn fan_out(&self, events: &[Delivery]) -> storage::StoreResult<()> {
        let mut endpoints: HashMap<String, Vec<Webhook>> = HashMap::new();
        let mut users: HashMap<String, Option<Raw>> = HashMap::new();
        let mut out = Vec::new();
        for d in events {
            let Payload::Domain { name, data } = &d.event.payload else {
                continue;
            };
            let mut scopes = vec![GLOBAL_SCOPE.to_owned()];
            if d.event.aggregate.starts_with("org:") {
                scopes.push(d.event.aggregate.clone());
            }
            let mut body: Option<String> = None;
            for scope in scopes {
                if !endpoints.contains_key(&scope) {
                    let list = self.store.list_webhooks(&scope).await?;
                    endpoints.insert(scope.clone(), list);
                }
                for w in endpoints.get(&scope).into_iter().flatten() {
                    // An endpoint hears of what happened after it was made.
                    if !w.wants(name) || d.event.at < w.created_at {
                        continue;
                    }
                    if body.is_none() {
                        body = Some(self.body(name, d.event.at, data, &mut users).await?);
                    }
                    let Some(body) = body.clone() else { continue };
                    out.push(WebhookDelivery {
                        id: WebhookDelivery::id_for(&d.event.id, d.event.at, &w.id),
                        webhook_id: w.id.clone(),
                        scope: w.scope.clone(),
                        event_id: d.event.id.clone(),
                        event_type: name.clone(),
                        body,
                        seq: next_seq(d.event.at),
                        created_at: d.event.at,
                        status: DeliveryStatus::Pending,
                        attempts: vec![],
                        tries: 0,
                        next_at: Some(d.event.at),
                        holder: None,
                        lease_until: None,
                    });
                }
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        // Leased to this process, which sends them at once; a bounded number of batches at a
        // time, the fan-out waiting for room.
        let permit = self.handed.clone().acquire_owned().await.ok();
        let most = {
            let mut per: HashMap<&str, u32> = HashMap::new();
            for d in &out {
                *per.entry(d.webhook_id.as_str()).or_default() += 1;
            }
            per.into_values().max().unwrap_or(1)
        };
        let until = self.clock.now()
            + chrono::Duration::from_std(self.per_try() * (most + 1) + FIRST_WAIT)
                .unwrap_or(chrono::Duration::minutes(5));
        for d in &mut out {
            d.holder = Some(self.holder.clone());
            d.lease_until = Some(until);
        }
        // The endpoints as this batch read them: the sender need not read them again.
        let read: HashMap<String, Webhook> = endpoints
            .into_values()
            .flatten()
            .map(|w| (w.id.clone(), w))
            .collect();
        // First tries before the rows: a delivery whose first try ends within `FIRST_WAIT`
        // is stored as it ended (one write, no lease to let go); the others are stored leased
        // and settled when their tries end. The events are not done until the rows are
        // stored: a process that dies before sends them again after its restart (at least
        // once), and while it holds the stream's shard no other process makes them.
        let deadline = tokio::time::Instant::now() + FIRST_WAIT;
        let mut rows: Vec<WebhookDelivery> = Vec::with_capacity(out.len());
        let mut tried: Vec<Tried> = Vec::new();
        let mut running = Vec::new();
        for (given, mut task) in self.start_sends(out, read, true) {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(Ok(Some((hook, list)))) => {
                    // Any not tried (a lease too short for them all): due at once.
                    rows.extend(
                        given
                            .into_iter()
                            .filter(|g| list.iter().all(|(d, _)| d.id != g.id))
                            .map(unleased),
                    );
                    tried.push((hook, list));
                }
                // Its task failed: due at once, for a round of any process.
                Ok(_) => rows.extend(given.into_iter().map(unleased)),
                Err(_) => {
                    rows.extend(given);
                    running.push(task);
                }
            }
        }
        let (done, rounds) = split(tried);
        rows.extend(done.iter().cloned().map(unleased));
        let new = self.store.enqueue_deliveries(&rows).await?;
        let new: HashMap<&str, bool> = rows.iter().map(|d| d.id.as_str()).zip(new).collect();
        let written = done
            .iter()
            .map(|d| new.get(d.id.as_str()).copied().unwrap_or(false))
            .collect();
        self.count(rounds, written).await;
        if !running.is_empty() {
            let me = self.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let mut tried = Vec::new();
                for task in running {
                    if let Ok(Some(t)) = task.await {
                        tried.push(t);
                    }
                }
                if let Err(e) = me.settle(tried).await {
                    tracing::warn!(error = %e, "webhook deliveries: settling failed; they are sent again once their lease ends");
                }
            });
        }
        Ok(())
    }

    /// The body of an event: `{type, timestamp, data}`, `data` copied as the event stored it;
    /// a member's event carries its user (`data.user`), put in beside the other keys, whose
    /// values stay text.
    async fn body(
        &self,
        name: &str,
        at: DateTime<Utc>,
        data: &storage::Json,
        users: &mut HashMap<String, Option<Raw>>,
    ) -> storage::StoreResult<String> {
        let timestamp = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        if !name.starts_with("member.") {
            return body_text(name, timestamp, data);
        }
        let Ok(mut keys) = serde_json::from_str::<BTreeMap<String, &RawValue>>(data.get()) else {
            return body_text(name, timestamp, data);
        };
        let uid = keys
            .get("userId")
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok());
        if let Some(uid) = uid {
            if !users.contains_key(&uid) {
                let user = self.store.get_user(&storage::UserId(uid.clone())).await?;
                let brief = user
                    .map(|u| {
                        serde_json::value::to_raw_value(&UserBrief {
                            id: &u.id.0,
                            email: &u.email,
                            name: &u.name,
                            image: &u.image,
                        })
                    })
                    .transpose()
                    .map_err(|e| storage::StoreError::Internal(e.to_string()))?;
                users.insert(uid.clone(), brief);
            }
            if let Some(Some(u)) = users.get(&uid) {
                keys.insert("user".into(), &**u);
            }
        }
        body_text(name, timestamp, keys)
    }
}

/// A JSON value kept as text.
type Raw = Box<RawValue>;

/// A member's user, as a member event's body carries it.
#[derive(serde::Serialize)]
struct UserBrief<'a> {
    id: &'a str,
    email: &'a str,
    name: &'a str,
    image: &'a Option<String>,
}

/// `{type, timestamp, data}` as text.
fn body_text(
    name: &str,
    timestamp: String,
    data: impl serde::Serialize,
) -> storage::StoreResult<String> {
    #[derive(serde::Serialize)]
    struct Body<'a, D> {
        #[serde(rename = "type")]
        kind: &'a str,
        timestamp: String,
        data: D,
    }
    serde_json::to_string(&Body {
        kind: name,
        timestamp,
        data,
    })
    .map_err(|e| storage::StoreError::Internal(e.to_string()))
}
