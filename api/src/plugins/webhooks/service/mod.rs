//! Delivering events to endpoints, off every request path:
//!
//! 1. **Fan-out**: a consumer of the event stream (shared: one process per shard, progress in
//!    the store) turns each domain event into a stored delivery for every endpoint that wants
//!    it — the organization's endpoints for its events, the server's own for every event. A
//!    delivery's id comes from the event and the endpoint, so reading an event twice (after a
//!    crash) stores it once. Its first try is made before it is stored (a second of waiting
//!    at most; what is still being sent then is stored leased and settled when it ends): one
//!    write for most deliveries instead of a leased row and its settling. The events count as
//!    read only once the rows are stored, so a crash before sends them again (at least once).
//! 2. **Sending**: each process leases due deliveries from the store (a lease per delivery;
//!    an endpoint another process is sending to is left to it, so an endpoint that keeps up
//!    gets its events in order), signs them (Standard Webhooks), sends them with bounded
//!    concurrency and a timeout, and settles each: succeeded, retried after
//!    `webhooks.retry_delays`, or failed. A process killed mid-way leaves leases that run out;
//!    another process (or it, restarted) sends those deliveries then.
use super::net;
use crate::config::WebhooksConfig;
use crate::crypto::Sealer;
use actors::consumers::{Consume, ConsumerSpec};
use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::{
    Attempt, Clock, Delivery, DeliveryStatus, DynStore, Payload, Topic, Webhook, WebhookDelivery,
    GLOBAL_SCOPE,
};
use tokio::sync::{Notify, Semaphore};

mod fan_out;
mod thread;
pub use thread::Running;

/// Bytes of an endpoint's answer read (the rest is dropped).
const BODY_READ: usize = 4 * 1024;
/// Deliveries leased at once, per concurrent sender.
const CLAIM_PER_SENDER: u32 = 4;
/// Batches the fan-out may have in flight at once.
const HANDED_BATCHES: usize = 4;

/// One endpoint's deliveries being sent: as they were given (see `start_sends`), and the task
/// that answers them tried.
type Sending = (Vec<WebhookDelivery>, tokio::task::JoinHandle<Option<Tried>>);
/// An endpoint (as read) and its deliveries tried, each with its outcome (`succeeded`,
/// `retried`, `failed`).
type Tried = (Option<Webhook>, Vec<(WebhookDelivery, &'static str)>);

/// Tried deliveries apart from their outcomes: the deliveries, in order, and each endpoint's
/// outcomes in the same order (as [`Webhooks::count`] takes them).
fn split(tried: Vec<Tried>) -> (Vec<WebhookDelivery>, Rounds) {
    let mut all = Vec::new();
    let mut rounds = Vec::with_capacity(tried.len());
    for (hook, list) in tried {
        let mut outcomes = Vec::with_capacity(list.len());
        for (d, outcome) in list {
            all.push(d);
            outcomes.push(outcome);
        }
        rounds.push((hook, outcomes));
    }
    (all, rounds)
}

/// Each endpoint (as read) with its deliveries' outcomes, in order.
type Rounds = Vec<(Option<Webhook>, Vec<&'static str>)>;

/// Counters of deliveries.
#[derive(Clone)]
pub struct WebhookMetrics {
    /// Attempts by outcome: `succeeded`, `retried`, `failed`.
    pub attempts: prometheus::IntCounterVec,
    /// Seconds since the oldest pending delivery was made.
    pub lag: prometheus::IntGauge,
}

/// The webhooks service: secrets, the fan-out consumer, the sender. Cheap to clone.
#[derive(Clone)]
pub struct Webhooks(Arc<Inner>);

pub struct Inner {
    pub config: WebhooksConfig,
    pub store: DynStore,
    clock: Arc<dyn Clock>,
    sealer: Sealer,
    metrics: WebhookMetrics,
    /// This process, as a lease holder.
    holder: String,
    pub wake: Notify,
    client: reqwest::Client,
    /// Batches the fan-out hands to the sender at once (see `fan_out`).
    handed: Arc<Semaphore>,
    keys: Keys,
}

impl std::ops::Deref for Webhooks {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// A new signing secret: `whsec_` and 24 random bytes in base64.
pub fn new_secret() -> String {
    let bytes: [u8; 24] = rand::random();
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The Standard Webhooks signature of a message: `v1,` and the base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}` under the secret's bytes.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    sign_with(&key_of(secret)?, id, timestamp, body)
}

/// The signing key of a `whsec_…` secret (its base64 part decoded).
fn key_of(secret: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_")?)
        .ok()
}

/// [`sign`] with the key already decoded.
fn sign_with(key: &[u8], id: &str, timestamp: i64, body: &str) -> Option<String> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    Some(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// Signing keys by the sealed secret they were opened from: opening (an AEAD) and decoding
/// once per secret instead of once per attempt. A rotation seals a new secret, so an entry
/// never goes stale; the map is emptied when it grows past [`KEYS_KEPT`].
#[derive(Default)]
struct Keys(std::sync::Mutex<HashMap<String, Arc<Vec<u8>>>>);

/// Signing keys kept in memory at most (see [`Keys`]).
const KEYS_KEPT: usize = 4096;

impl Webhooks {
    /// The service of this process; secrets are sealed under `server_secret`.
    pub fn new(
        config: WebhooksConfig,
        store: DynStore,
        clock: Arc<dyn Clock>,
        server_secret: &str,
        metrics: WebhookMetrics,
    ) -> Self {
        Self(Arc::new(Inner {
            client: Self::client(&config),
            config,
            store,
            clock,
            sealer: Sealer::new(server_secret, "gatehouse webhook secrets v1", "gw1."),
            metrics,
            holder: storage::random_string(16),
            wake: Notify::new(),
            handed: Arc::new(Semaphore::new(HANDED_BATCHES)),
            keys: Keys::default(),
        }))
    }

    /// The HTTP client deliveries go through: no redirects, the timeout, and (unless private
    /// addresses are allowed) a resolver that refuses names resolving to them.
    fn client(config: &WebhooksConfig) -> reqwest::Client {
        let b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_millis(config.timeout_ms))
            .connect_timeout(Duration::from_millis(config.timeout_ms))
            .user_agent(concat!("Gatehouse-Webhooks/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(Duration::from_secs(30));
        let b = if config.allow_private_addresses {
            b
        } else {
            b.dns_resolver(Arc::new(net::PublicOnly))
        };
        b.build().unwrap_or_default()
    }

    pub fn seal(&self, secret: &str) -> String {
        self.sealer.seal(secret)
    }

    /// The keys an endpoint signs with now: its secret's, and during a rotation the one it
    /// replaced.
    fn keys(&self, w: &Webhook, now: DateTime<Utc>) -> Vec<Arc<Vec<u8>>> {
        let mut out: Vec<Arc<Vec<u8>>> = self.key(&w.secret).into_iter().collect();
        if w.previous_until.is_some_and(|u| u > now) {
            out.extend(w.previous_secret.as_deref().and_then(|s| self.key(s)));
        }
        out
    }

    /// The signing key of a sealed secret (see [`Keys`]); `None` when it cannot be opened.
    fn key(&self, sealed: &str) -> Option<Arc<Vec<u8>>> {
        let kept = || self.keys.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = kept().get(sealed) {
            return Some(k.clone());
        }
        let key = Arc::new(key_of(&self.sealer.open(sealed)?)?);
        let mut keys = kept();
        if keys.len() >= KEYS_KEPT {
            keys.clear();
        }
        keys.insert(sealed.to_owned(), key.clone());
        Some(key)
    }

    /// How long one try may take, with its bookkeeping.
    fn per_try(&self) -> Duration {
        Duration::from_millis(self.config.timeout_ms) + Duration::from_secs(1)
    }

    /// One round: lease what is due and deliver it. How many were sent.
    pub async fn round(&self) -> storage::StoreResult<usize> {
        self.yield_to_requests().await;
        let now = self.clock.now();
        let limit = (self.config.concurrency as u32).saturating_mul(CLAIM_PER_SENDER);
        // Long enough for several deliveries to one endpoint in turn; a sender stops before
        // a try its lease would not cover (see `send_all`).
        let lease = now
            + chrono::Duration::from_std(self.per_try() * (CLAIM_PER_SENDER + 1))
                .unwrap_or(chrono::Duration::minutes(5));
        let due = self
            .store
            .claim_deliveries(&self.holder, now, lease, limit)
            .await?;
        self.deliver(due, HashMap::new()).await
    }

    /// Sends leased deliveries — each endpoint's in order, endpoints side by side up to the
    /// concurrency — and settles them in one write. How many were tried. `read` holds
    /// endpoints as read a moment ago (by the fan-out that made these deliveries): those are
    /// not read again.
    async fn deliver(
        &self,
        due: Vec<WebhookDelivery>,
        read: HashMap<String, Webhook>,
    ) -> storage::StoreResult<usize> {
        let mut tried = Vec::new();
        for (_, task) in self.start_sends(due, read, false) {
            if let Ok(Some(t)) = task.await {
                tried.push(t);
            }
        }
        self.settle(tried).await
    }

    /// Starts sending leased deliveries, a task per endpoint (its deliveries in order; the
    /// tasks side by side up to the concurrency): each with the endpoint's deliveries as
    /// given when `keep` (else none).
    fn start_sends(
        &self,
        due: Vec<WebhookDelivery>,
        mut read: HashMap<String, Webhook>,
        keep: bool,
    ) -> Vec<Sending> {
        let mut by_endpoint: Vec<(String, Vec<WebhookDelivery>)> = Vec::new();
        for d in due {
            match by_endpoint.iter_mut().find(|(w, _)| *w == d.webhook_id) {
                Some((_, list)) => list.push(d),
                None => by_endpoint.push((d.webhook_id.clone(), vec![d])),
            }
        }
        let gate = Arc::new(Semaphore::new(self.config.concurrency));
        let mut tasks = Vec::new();
        for (endpoint, list) in by_endpoint {
            let (me, gate) = (self.clone(), gate.clone());
            let known = read.remove(&endpoint);
            let given = if keep { list.clone() } else { Vec::new() };
            tasks.push((
                given,
                tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await.ok()?;
                    match me.send_all(&endpoint, known, list).await {
                        Ok(tried) => Some(tried),
                        Err(e) => {
                            tracing::warn!(error = %e, "webhook deliveries: reading an endpoint failed");
                            None
                        }
                    }
                }),
            ));
        }
        tasks
    }

    /// Settles tried deliveries in one write (what was not settled comes again once its
    /// lease ends), then counts their outcomes. How many.
    async fn settle(&self, tried: Vec<Tried>) -> storage::StoreResult<usize> {
        // As leased: the store settles each only while this lease holds (and lets it go as
        // it does).
        let (all, rounds) = split(tried);
        let n = all.len();
        let settled = self.store.settle_deliveries(&all, &self.holder).await?;
        self.count(rounds, settled).await;
        Ok(n)
    }

    /// Counts tried deliveries' outcomes (`rounds`: each endpoint's, in order) that were
    /// written (`written`, in the same order: `false` for one whose lease was lost to another
    /// process, or made before: its outcome is that one's), and keeps each endpoint's
    /// failures in a row.
    async fn count(&self, rounds: Rounds, written: Vec<bool>) {
        let mut written = written.into_iter();
        for (hook, outcomes) in rounds {
            let mut ended = Vec::new();
            for outcome in outcomes {
                if written.next() != Some(true) {
                    continue;
                }
                self.metrics.attempts.with_label_values(&[outcome]).inc();
                if outcome != "retried" {
                    ended.push(outcome == "succeeded");
                }
            }
            if let Some(w) = hook.filter(|w| w.enabled) {
                self.count_outcomes(&w, &ended).await;
            }
        }
    }

    /// Sends one endpoint's leased deliveries in order: the endpoint as read (`known`, or
    /// read now), and each delivery as it is to be settled with its outcome (`succeeded`,
    /// `retried`, `failed`).
    async fn send_all(
        &self,
        endpoint: &str,
        known: Option<Webhook>,
        list: Vec<WebhookDelivery>,
    ) -> storage::StoreResult<Tried> {
        let hook = match known {
            Some(w) => Some(w),
            None => self.store.get_webhook(endpoint).await?,
        };
        let mut out = Vec::with_capacity(list.len());
        let per_try = chrono::Duration::from_std(self.per_try()).unwrap_or(chrono::Duration::MAX);
        for mut d in list {
            let now = self.clock.now();
            // Never past the lease: the rest come again once it ends (to this process or
            // another), never sent by two at once.
            if d.lease_until.is_some_and(|until| now + per_try > until) {
                break;
            }
            let attempt = match &hook {
                None => refusal(now, "the endpoint was deleted"),
                Some(w) if !w.enabled => refusal(now, "the endpoint is disabled"),
                Some(w) => self.attempt(w, &d).await,
            };
            let ok = attempt.status_code.is_some_and(|c| (200..300).contains(&c));
            let ended = self.clock.now();
            d.push_attempt(attempt);
            let outcome = if ok {
                d.status = DeliveryStatus::Succeeded;
                d.next_at = None;
                "succeeded"
            } else if hook.as_ref().is_some_and(|w| w.enabled)
                && (d.tries as usize) < self.config.retry_delays.len()
            {
                let wait = self.config.retry_delays[d.tries as usize];
                d.tries += 1;
                d.next_at =
                    Some(ended + chrono::Duration::seconds(wait.min(i64::MAX as u64) as i64));
                "retried"
            } else {
                d.tries += 1;
                d.status = DeliveryStatus::Failed;
                d.next_at = None;
                "failed"
            };
            out.push((d, outcome));
        }
        Ok((hook, out))
    }

    /// Keeps the endpoint's count of deliveries failed in a row over a round's outcomes (in
    /// order; `true` succeeded), and disables it when that reaches `webhooks.disable_after`.
    /// One write at most; none (and no read) when all succeeded and none had failed before,
    /// as `w` was read this round — the common case.
    async fn count_outcomes(&self, w: &Webhook, outcomes: &[bool]) {
        if outcomes.is_empty() || (w.failures_in_row == 0 && outcomes.iter().all(|ok| *ok)) {
            return;
        }
        let limit = self.config.disable_after;
        let counted = self
            .edit(&w.id, |old| {
                let mut next = old.clone();
                for ok in outcomes {
                    if !next.enabled {
                        break;
                    }
                    if *ok {
                        next.failures_in_row = 0;
                    } else {
                        next.failures_in_row += 1;
                        if limit > 0 && next.failures_in_row >= limit {
                            next.enabled = false;
                            next.disabled_reason = Some("failing".into());
                        }
                    }
                }
                if next.failures_in_row == old.failures_in_row && next.enabled == old.enabled {
                    return None;
                }
                let events = if old.enabled && !next.enabled {
                    let mut ev = storage::AuditEvent::new(
                        crate::audit::action::WEBHOOK_DISABLED,
                        self.clock.now(),
                    );
                    ev.target = Some(old.id.clone());
                    ev.organization_id = old
                        .scope
                        .strip_prefix("org:")
                        .map(|o| storage::OrgId(o.into()));
                    ev.details
                        .insert("failedInRow".into(), next.failures_in_row.to_string());
                    vec![storage::Event::audit(
                        aggregate(&old.scope),
                        ev,
                        90 * 86_400,
                    )]
                } else {
                    vec![]
                };
                Some((next, events))
            })
            .await;
        if let Ok(Some(now)) = counted {
            if w.enabled && !now.enabled {
                tracing::warn!(webhook = %w.id, "webhook endpoint disabled: its deliveries keep failing");
            }
        }
    }

    /// Writes an edit of endpoint `id` by compare-and-set: `edit` sees the stored endpoint
    /// and answers the new one with the events to store with it, or `None` (nothing to
    /// write); when another write came first it is read and edited again (5 times at most,
    /// then `ConcurrentModification`). The endpoint as it now is (`None`: there is none).
    pub async fn edit(
        &self,
        id: &str,
        edit: impl Fn(&Webhook) -> Option<(Webhook, Vec<storage::Event>)>,
    ) -> storage::StoreResult<Option<Webhook>> {
        for _ in 0..5 {
            let Some(old) = self.store.get_webhook(id).await? else {
                return Ok(None);
            };
            let Some((mut next, events)) = edit(&old) else {
                return Ok(Some(old));
            };
            next.version = old.version + 1;
            next.updated_at = self.clock.now();
            match self.store.update_webhook(&next, old.version, &events).await {
                Ok(()) => return Ok(Some(next)),
                Err(storage::StoreError::ConcurrentModification) => continue,
                Err(storage::StoreError::NotFound) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Err(storage::StoreError::ConcurrentModification)
    }

    /// One try: sign, send, read a little of the answer.
    async fn attempt(&self, w: &Webhook, d: &WebhookDelivery) -> Attempt {
        let now = self.clock.now();
        let started = Instant::now();
        let ts = now.timestamp();
        let signatures: Vec<String> = self
            .keys(w, now)
            .iter()
            .filter_map(|k| sign_with(k, &d.id, ts, &d.body))
            .collect();
        if signatures.is_empty() {
            return refusal(
                now,
                "the endpoint's secret cannot be read (was the server secret changed?)",
            );
        }
        if let Err(why) = net::check_literal(&w.url, self.config.allow_private_addresses) {
            return refusal(now, why);
        }
        let sent = self
            .client
            .post(&w.url)
            .header("content-type", "application/json")
            .header("webhook-id", &d.id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signatures.join(" "))
            .body(d.body.clone())
            .send()
            .await;
        let (status_code, error) = match sent {
            Ok(mut resp) => {
                let code = resp.status().as_u16();
                let mut read = 0usize;
                while read < BODY_READ {
                    match resp.chunk().await {
                        Ok(Some(c)) => read += c.len(),
                        _ => break,
                    }
                }
                (Some(code), None)
            }
            Err(e) => (None, Some(describe(&e, self.config.timeout_ms))),
        };
        Attempt {
            at: now,
            status_code,
            error,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// An attempt that was not made, and why.
fn refusal(at: DateTime<Utc>, why: &str) -> Attempt {
    Attempt {
        at,
        status_code: None,
        error: Some(why.to_owned()),
        duration_ms: 0,
    }
}

/// An error of a send in words (never the URL's query or anything the endpoint answered).
fn describe(e: &reqwest::Error, timeout_ms: u64) -> String {
    if e.is_timeout() {
        return format!("no answer within {timeout_ms} ms");
    }
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    let text = root.to_string();
    if text.contains(net::REFUSED) {
        return net::REFUSED.to_owned();
    }
    if e.is_connect() {
        return format!("could not connect: {text}");
    }
    format!("request failed: {text}")
}

/// The stream aggregate of a scope's own events (audit records about its endpoints).
pub fn aggregate(scope: &str) -> String {
    if scope == GLOBAL_SCOPE {
        "server".into()
    } else {
        scope.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example (secret, id, timestamp, body and
    /// the signature it gives).
    #[test]
    fn signs_as_the_specification() {
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert_eq!(sign("nope", "a", 1, "b"), None);
        assert!(new_secret().starts_with("whsec_"));
        assert!(sign(&new_secret(), "a", 1, "b").is_some());
    }
}
