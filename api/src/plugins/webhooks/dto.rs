//! The webhooks plugin's bodies and answers (Gatehouse extensions: better-auth has none).
use crate::dto::iso;
use poem_openapi::Object;
use storage::{Webhook, WebhookDelivery};

/// An endpoint, without its secret (shown once, when made or rotated).
#[derive(Debug, Clone, Object)]
#[oai(rename = "Webhook", rename_all = "camelCase")]
pub struct WebhookDto {
    pub id: String,
    /// The organization it belongs to (`null`: the server's own, for administrators).
    pub organization_id: Option<String>,
    pub url: String,
    /// Event names or patterns (`member.*`, `*`).
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// `failing` when the server disabled it after deliveries failed in a row.
    pub disabled_reason: Option<String>,
    /// Deliveries that failed for good one after another.
    pub failures_in_row: u32,
    /// Until when the secret a rotation replaced still signs beside the new one.
    pub previous_secret_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Webhook> for WebhookDto {
    fn from(w: &Webhook) -> Self {
        Self {
            id: w.id.clone(),
            organization_id: w.scope.strip_prefix("org:").map(str::to_owned),
            url: w.url.clone(),
            events: w.events.clone(),
            description: w.description.clone(),
            enabled: w.enabled,
            disabled_reason: w.disabled_reason.clone(),
            failures_in_row: w.failures_in_row,
            previous_secret_until: w.previous_until.as_ref().map(iso),
            created_at: iso(&w.created_at),
            updated_at: iso(&w.updated_at),
        }
    }
}

/// An endpoint with its signing secret: the only time the secret is shown.
#[derive(Debug, Clone, Object)]
#[oai(rename = "WebhookWithSecret", rename_all = "camelCase")]
pub struct WebhookWithSecret {
    #[oai(flatten)]
    pub webhook: WebhookDto,
    /// `whsec_…`: verify each delivery's `webhook-signature` with it (Standard Webhooks).
    pub secret: String,
}

#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct CreateWebhookBody {
    /// The organization (default: the active one). Ignored on `/admin/webhook/create`.
    pub organization_id: Option<String>,
    /// `https://…` (or `http://` when the server allows it).
    #[oai(validator(max_length = 2048))]
    pub url: String,
    /// Event names or patterns (`member.*`, `*`).
    #[oai(validator(min_items = 1, max_items = 64))]
    pub events: Vec<String>,
    #[oai(validator(max_length = 500))]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct UpdateWebhookBody {
    pub organization_id: Option<String>,
    pub webhook_id: String,
    #[oai(validator(max_length = 2048))]
    pub url: Option<String>,
    #[oai(validator(min_items = 1, max_items = 64))]
    pub events: Option<Vec<String>>,
    #[oai(validator(max_length = 500))]
    pub description: Option<String>,
    /// Turning an endpoint back on clears its failure count.
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct WebhookIdBody {
    pub organization_id: Option<String>,
    pub webhook_id: String,
}

#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct RedeliverBody {
    pub organization_id: Option<String>,
    pub delivery_id: String,
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "WebhookAttempt", rename_all = "camelCase")]
pub struct AttemptDto {
    pub at: String,
    /// The endpoint's status code, when it answered.
    pub status_code: Option<u16>,
    /// Why there was no answer (timeout, refused address, connection error).
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// One event for one endpoint, with its attempts (oldest first).
#[derive(Debug, Clone, Object)]
#[oai(rename = "WebhookDelivery", rename_all = "camelCase")]
pub struct DeliveryDto {
    /// The `webhook-id` header: the same on every attempt.
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    /// The event's name (`member.added`…).
    #[oai(rename = "type")]
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub created_at: String,
    /// When it is tried next (pending only).
    pub next_attempt_at: Option<String>,
    pub attempts: Vec<AttemptDto>,
    /// The body as sent.
    pub payload: serde_json::Value,
}

impl From<&WebhookDelivery> for DeliveryDto {
    fn from(d: &WebhookDelivery) -> Self {
        Self {
            id: d.id.clone(),
            webhook_id: d.webhook_id.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.clone(),
            status: d.status.as_str().to_owned(),
            created_at: iso(&d.created_at),
            next_attempt_at: d.next_at.as_ref().map(iso),
            attempts: d
                .attempts
                .iter()
                .map(|a| AttemptDto {
                    at: iso(&a.at),
                    status_code: a.status_code,
                    error: a.error.clone(),
                    duration_ms: a.duration_ms,
                })
                .collect(),
            payload: serde_json::from_str(&d.body).unwrap_or(serde_json::Value::Null),
        }
    }
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "WebhookDeliveries", rename_all = "camelCase")]
pub struct DeliveriesPage {
    /// Newest first.
    pub deliveries: Vec<DeliveryDto>,
    /// Pass as `cursor` for older ones (`null`: no more).
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Object)]
pub struct Success {
    pub success: bool,
}
