//! Webhooks: endpoints a tenant registers (an organization's, or the server's own for
//! administrators) and the deliveries of domain events to them. A delivery is stored before it
//! is sent and leased by the process sending it, so that several processes share a backlog
//! without sending one attempt twice at once, and a process that dies leaves nothing lost.
use crate::{Event, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The scope of the server's own endpoints (every event); an organization's is `org:{id}`.
pub const GLOBAL_SCOPE: &str = "global";

/// An endpoint events are delivered to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    /// `org:{id}` or [`GLOBAL_SCOPE`].
    pub scope: String,
    pub url: String,
    /// Event names or patterns (`member.*`, `*`).
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// The signing secret (`whsec_…`), sealed.
    pub secret: String,
    /// The secret a rotation replaced, sealed, still signing until `previous_until`.
    pub previous_secret: Option<String>,
    pub previous_until: Option<DateTime<Utc>>,
    /// Deliveries that failed for good one after another (reset by a success).
    pub failures_in_row: u32,
    /// Why the server disabled it (`failing`), if it did.
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub version: u64,
}

impl Webhook {
    /// A new, enabled endpoint (version 1).
    pub fn new(
        id: String,
        scope: String,
        url: String,
        events: Vec<String>,
        secret: String,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id,
            scope,
            url,
            events,
            description: None,
            enabled: true,
            secret,
            previous_secret: None,
            previous_until: None,
            failures_in_row: 0,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
            version: 1,
        }
    }

    /// Whether the endpoint takes events named `name`.
    pub fn wants(&self, name: &str) -> bool {
        self.enabled
            && self.events.iter().any(|p| {
                p == "*"
                    || p == name
                    || p.strip_suffix(".*").is_some_and(|prefix| {
                        name.strip_prefix(prefix)
                            .is_some_and(|rest| rest.starts_with('.'))
                    })
            })
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    Pending,
    Succeeded,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }
}

/// One try to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub at: DateTime<Utc>,
    /// The endpoint's status code, when it answered.
    pub status_code: Option<u16>,
    /// What went wrong when it did not answer (timeout, refused address…).
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// The most attempts a delivery keeps (the oldest go first).
pub const ATTEMPTS_KEPT: usize = 30;

/// One event for one endpoint: its body is fixed when it is made (what is signed), its id
/// (`webhook-id`) is the same on every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    /// `msg_…`, derived from the event and the endpoint: making it twice stores it once.
    pub id: String,
    pub webhook_id: String,
    /// The endpoint's scope.
    pub scope: String,
    pub event_id: String,
    pub event_type: String,
    /// The JSON body, as sent (a store may keep it beside the document: then the document
    /// leaves it out).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// Order among the endpoint's deliveries (the event's time in microseconds, then its
    /// place in its write).
    pub seq: i64,
    pub created_at: DateTime<Utc>,
    pub status: DeliveryStatus,
    pub attempts: Vec<Attempt>,
    /// Failed attempts since it was made or last redelivered (what the next retry's delay
    /// follows).
    #[serde(default)]
    pub tries: u32,
    /// When it is next tried (pending only).
    pub next_at: Option<DateTime<Utc>>,
    /// The process sending it, and until when (pending only).
    pub holder: Option<String>,
    pub lease_until: Option<DateTime<Utc>>,
}

impl WebhookDelivery {
    /// The id of an event's delivery to an endpoint: the same whenever it is made — the
    /// event's time (so that new ids follow each other in a store's index) and a hash of the
    /// event and the endpoint.
    pub fn id_for(event_id: &str, at: DateTime<Utc>, webhook_id: &str) -> String {
        use sha2::{Digest, Sha256};
        let h = Sha256::digest(format!("{event_id}:{webhook_id}").as_bytes());
        let hex: String = h.iter().take(10).map(|b| format!("{b:02x}")).collect();
        format!("msg_{:012x}{hex}", at.timestamp_millis().max(0))
    }

    /// Records `attempt`, keeping the last [`ATTEMPTS_KEPT`].
    pub fn push_attempt(&mut self, attempt: Attempt) {
        self.attempts.push(attempt);
        let extra = self.attempts.len().saturating_sub(ATTEMPTS_KEPT);
        self.attempts.drain(..extra);
    }
}

/// Endpoints and deliveries (see the module).
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// A new endpoint (`Conflict("webhook")` when its id is taken).
    async fn create_webhook(&self, w: &Webhook, events: &[Event]) -> StoreResult<()>;
    async fn get_webhook(&self, id: &str) -> StoreResult<Option<Webhook>>;
    /// The endpoints of `scope`, oldest first.
    async fn list_webhooks(&self, scope: &str) -> StoreResult<Vec<Webhook>>;
    /// Writes `w` over the stored one at version `expected` (`ConcurrentModification` when it
    /// moved, `NotFound` when it is gone).
    async fn update_webhook(&self, w: &Webhook, expected: u64, events: &[Event])
        -> StoreResult<()>;
    /// Removes an endpoint and its deliveries; `false` when there was none.
    async fn delete_webhook(&self, id: &str, events: &[Event]) -> StoreResult<bool>;
    /// Stores the deliveries not stored yet (by id), with their lease if they carry one (the
    /// process that makes them sends them at once), or already settled (succeeded or failed,
    /// or waiting for a retry: the first try made before the delivery was stored): for each,
    /// whether it was new.
    async fn enqueue_deliveries(&self, d: &[WebhookDelivery]) -> StoreResult<Vec<bool>>;
    /// Leases to `holder` until `until` up to `limit` pending deliveries due by `now` whose
    /// lease is free, oldest first, skipping endpoints another holder is sending to.
    async fn claim_deliveries(
        &self,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> StoreResult<Vec<WebhookDelivery>>;
    /// Writes deliveries after their attempts (status, attempts, next time; the lease let go),
    /// each only while `holder` still holds it: for each, whether it was written (`false`:
    /// its lease was lost to another holder, nothing written). Each is given as it was leased
    /// (`holder` and `lease_until` as the claim or the fan-out set them): a store may check
    /// the lease by them (ScyllaDB's compare-and-set does).
    async fn settle_deliveries(
        &self,
        ds: &[WebhookDelivery],
        holder: &str,
    ) -> StoreResult<Vec<bool>>;
    async fn get_delivery(&self, id: &str) -> StoreResult<Option<WebhookDelivery>>;
    /// An endpoint's deliveries, newest first, older than `before` (a `seq`) when given.
    async fn list_deliveries(
        &self,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<WebhookDelivery>>;
    /// Makes a finished delivery pending again, due at `now`; `false` when it is not found or
    /// still pending.
    async fn redeliver(&self, id: &str, now: DateTime<Utc>) -> StoreResult<bool>;
    /// When the oldest pending delivery was made (`None`: none pending).
    async fn oldest_pending_delivery(&self) -> StoreResult<Option<DateTime<Utc>>>;
    /// Deletes finished deliveries made before `before` (a backend that expires them itself
    /// does nothing); how many.
    async fn purge_deliveries(&self, before: DateTime<Utc>) -> StoreResult<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(events: &[&str]) -> Webhook {
        Webhook::new(
            "w".into(),
            GLOBAL_SCOPE.into(),
            "https://example.com".into(),
            events.iter().map(|s| s.to_string()).collect(),
            String::new(),
            Utc::now(),
        )
    }

    #[test]
    fn patterns() {
        assert!(hook(&["*"]).wants("user.created"));
        assert!(hook(&["member.*"]).wants("member.role_changed"));
        assert!(!hook(&["member.*"]).wants("members.x"));
        assert!(!hook(&["member.*"]).wants("member"));
        assert!(hook(&["user.created"]).wants("user.created"));
        assert!(!hook(&["user.created"]).wants("user.deleted"));
        let mut off = hook(&["*"]);
        off.enabled = false;
        assert!(!off.wants("user.created"));
    }

    #[test]
    fn delivery_ids_are_stable() {
        let t = Utc::now();
        let a = WebhookDelivery::id_for("e1", t, "w1");
        assert_eq!(a, WebhookDelivery::id_for("e1", t, "w1"));
        assert_ne!(a, WebhookDelivery::id_for("e1", t, "w2"));
        assert!(a.starts_with("msg_") && a.len() == 36, "{a}");
        // Later events' ids sort after earlier ones'.
        let later = WebhookDelivery::id_for("e0", t + chrono::Duration::milliseconds(1), "w1");
        assert!(later > a);
    }
}
