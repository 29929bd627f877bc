//! The webhooks plugin (a Gatehouse extension): endpoints an organization's owners and admins
//! (or custom roles granted `webhook:*`) register under `/organization/webhook/`, and the
//! server's own endpoints for administrators under `/admin/webhook/`, to which the domain
//! events of the stream are delivered, signed as Standard Webhooks (`service/`), only to
//! public addresses unless allowed (`net.rs`).
mod dto;
pub mod net;
mod service;

pub use service::{new_secret, sign, Running, WebhookMetrics, Webhooks};

/// The webhooks plugin's operations.
pub type Apis = (OrgWebhookApi, AdminWebhookApi);

pub fn apis() -> Apis {
    (OrgWebhookApi, AdminWebhookApi)
}

use crate::audit::{action, Event, Origin};
use crate::error::{ApiResult, Code};
use crate::plugins::admin::AdminCaller;
use crate::plugins::Tag;
use crate::session::Principal;
use crate::AppState;
use dto::*;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::OpenApi;
use storage::{OrgId, UserId, Webhook, GLOBAL_SCOPE};

pub struct OrgWebhookApi;
pub struct AdminWebhookApi;

/// Every event name an endpoint may ask for (patterns: `member.*`, `*`).
pub const EVENTS: &[&str] = &[
    "user.created",
    "user.updated",
    "user.deleted",
    "session.created",
    "session.revoked",
    "organization.created",
    "organization.updated",
    "organization.deleted",
    "member.added",
    "member.removed",
    "member.role_changed",
    "invitation.created",
    "invitation.accepted",
    "invitation.rejected",
    "invitation.canceled",
    "team.created",
    "team.updated",
    "team.deleted",
    "team.member_added",
    "team.member_removed",
    "role.created",
    "role.updated",
    "role.deleted",
    "two_factor.enabled",
    "two_factor.disabled",
    "two_factor.backup_codes_regenerated",
    "passkey.registered",
    "passkey.renamed",
    "passkey.deleted",
    "api_key.created",
    "api_key.updated",
    "api_key.deleted",
    "api_key.used",
];

/// The endpoints one request acts on: an organization's (by a member allowed to) or the
/// server's own (by an administrator), and who acts, for the audit log.
struct Scoped {
    scope: String,
    org: Option<OrgId>,
    actor: Option<UserId>,
    origin: Origin,
}

impl Scoped {
    async fn org(
        state: &AppState,
        auth: &Principal,
        org: Option<&str>,
        act: &str,
    ) -> ApiResult<Self> {
        let org = auth.org_id(org.filter(|o| !o.is_empty()))?;
        let wanted: policy::Permissions = [("webhook".to_owned(), [act.to_owned()].into())].into();
        if !state
            .actors
            .standing(&org, &auth.user.id)
            .await?
            .allows_all(&wanted)?
        {
            return Err(Code::NotAllowedToManageWebhooks.into());
        }
        Ok(Self {
            scope: format!("org:{}", org.0),
            org: Some(org),
            actor: Some(auth.user.id.clone()),
            origin: auth.origin.clone(),
        })
    }

    fn admin(state: &AppState, who: &AdminCaller) -> ApiResult<Self> {
        state
            .actors
            .admin_authorize(&who.caller, actors::AdminAction::ManageWebhooks)?;
        Ok(Self {
            scope: GLOBAL_SCOPE.into(),
            org: None,
            actor: match &who.caller {
                actors::Caller::User(u) => Some(u.id.clone()),
                actors::Caller::Server => None,
            },
            origin: who.origin.clone(),
        })
    }

    /// The audit record of `act` on endpoint `id`.
    fn note(&self, act: &'static str, id: &str) -> Event {
        let mut ev = Event::new(act, &self.origin).target(id);
        if let Some(a) = &self.actor {
            ev = ev.actor(a);
        } else {
            ev = ev.detail("by", "server");
        }
        if let Some(o) = &self.org {
            ev = ev.org(o);
        }
        ev
    }

    /// The audit record of a change of endpoint `id`, as events to store with it.
    fn events(&self, state: &AppState, act: &'static str, id: &str) -> Vec<storage::Event> {
        let ctx = state.audit.noted(self.note(act, id));
        state
            .actors
            .events_of(&service::aggregate(&self.scope), &ctx)
    }

    /// Endpoint `id` if it is in this scope (else `WEBHOOK_NOT_FOUND`).
    async fn find(&self, state: &AppState, id: &str) -> ApiResult<Webhook> {
        state
            .webhooks
            .store
            .get_webhook(id)
            .await?
            .filter(|w| w.scope == self.scope)
            .ok_or_else(|| Code::WebhookNotFound.into())
    }
}

fn check_events(events: &[String]) -> ApiResult<Vec<String>> {
    let known = |e: &str| {
        e == "*"
            || EVENTS.contains(&e)
            || e.strip_suffix(".*").is_some_and(|prefix| {
                EVENTS
                    .iter()
                    .any(|n| n.strip_prefix(prefix).is_some_and(|r| r.starts_with('.')))
            })
    };
    let mut out: Vec<String> = events.iter().map(|e| e.trim().to_owned()).collect();
    if out.is_empty() || !out.iter().all(|e| known(e)) {
        return Err(Code::InvalidWebhookEvents.into());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A URL an endpoint may have (see `net`): 400 with the reason otherwise.
async fn check_url(state: &AppState, raw: &str) -> ApiResult<String> {
    let cfg = &state.config.webhooks;
    let url = net::check_url(raw, cfg.allow_http).map_err(|why| {
        let mut e = crate::error::ApiError::new(Code::InvalidWebhookUrl);
        e.message = format!("Invalid endpoint URL: {why}").into();
        e
    })?;
    if !cfg.allow_private_addresses && net::check_host(&url).await.is_err() {
        return Err(Code::WebhookUrlNotAllowed.into());
    }
    Ok(url.to_string())
}

fn description(d: Option<String>) -> Option<String> {
    d.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty())
}

async fn create(
    state: &AppState,
    s: Scoped,
    body: CreateWebhookBody,
) -> ApiResult<WebhookWithSecret> {
    let url = check_url(state, &body.url).await?;
    let events = check_events(&body.events)?;
    let hooks = &state.webhooks;
    if hooks.store.list_webhooks(&s.scope).await?.len() >= state.config.webhooks.max_endpoints {
        return Err(Code::TooManyWebhooks.into());
    }
    let secret = new_secret();
    let mut w = Webhook::new(
        storage::random_string(24),
        s.scope.clone(),
        url,
        events,
        hooks.seal(&secret),
        state.clock.now(),
    );
    w.description = description(body.description);
    hooks
        .store
        .create_webhook(&w, &s.events(state, action::WEBHOOK_CREATED, &w.id))
        .await?;
    Ok(WebhookWithSecret {
        webhook: WebhookDto::from(&w),
        secret,
    })
}

async fn list(state: &AppState, s: Scoped) -> ApiResult<Vec<WebhookDto>> {
    let all = state.webhooks.store.list_webhooks(&s.scope).await?;
    Ok(all.iter().map(WebhookDto::from).collect())
}

/// Writes `change` of endpoint `id` of this scope (see [`Webhooks::edit`]), with its audit
/// record.
async fn change(
    state: &AppState,
    s: &Scoped,
    id: &str,
    act: &'static str,
    change: impl Fn(&mut Webhook),
) -> ApiResult<Webhook> {
    let edited = state.webhooks.edit(id, |old| {
        // Another scope's endpoint is left as it is, and not found.
        (old.scope == s.scope).then(|| {
            let mut w = old.clone();
            change(&mut w);
            (w, s.events(state, act, id))
        })
    });
    match edited.await {
        Ok(Some(w)) if w.scope == s.scope => Ok(w),
        Ok(_) => Err(Code::WebhookNotFound.into()),
        Err(storage::StoreError::ConcurrentModification) => Err(Code::ServiceUnavailable.into()),
        Err(e) => Err(e.into()),
    }
}

async fn update(state: &AppState, s: Scoped, body: UpdateWebhookBody) -> ApiResult<WebhookDto> {
    let url = match &body.url {
        Some(u) => Some(check_url(state, u).await?),
        None => None,
    };
    let events = body.events.as_deref().map(check_events).transpose()?;
    let description = body.description.map(|d| description(Some(d)));
    let w = change(state, &s, &body.webhook_id, action::WEBHOOK_UPDATED, |w| {
        if let Some(u) = &url {
            w.url = u.clone();
        }
        if let Some(e) = &events {
            w.events = e.clone();
        }
        if let Some(d) = &description {
            w.description = d.clone();
        }
        if let Some(on) = body.enabled {
            if on && !w.enabled {
                w.failures_in_row = 0;
                w.disabled_reason = None;
            }
            w.enabled = on;
        }
    })
    .await?;
    Ok(WebhookDto::from(&w))
}

async fn rotate(state: &AppState, s: Scoped, id: &str) -> ApiResult<WebhookWithSecret> {
    let secret = new_secret();
    let sealed = state.webhooks.seal(&secret);
    let until = state.clock.now()
        + chrono::Duration::seconds(state.config.webhooks.rotation_overlap_secs as i64);
    let overlap = state.config.webhooks.rotation_overlap_secs > 0;
    let w = change(state, &s, id, action::WEBHOOK_SECRET_ROTATED, |w| {
        w.previous_secret = overlap.then(|| w.secret.clone());
        w.previous_until = overlap.then_some(until);
        w.secret = sealed.clone();
    })
    .await?;
    Ok(WebhookWithSecret {
        webhook: WebhookDto::from(&w),
        secret,
    })
}

async fn delete(state: &AppState, s: Scoped, id: &str) -> ApiResult<Success> {
    s.find(state, id).await?;
    let gone = state
        .webhooks
        .store
        .delete_webhook(id, &s.events(state, action::WEBHOOK_DELETED, id))
        .await?;
    if !gone {
        return Err(Code::WebhookNotFound.into());
    }
    Ok(Success { success: true })
}

async fn deliveries(
    state: &AppState,
    s: Scoped,
    webhook_id: &str,
    cursor: Option<String>,
    limit: Option<u32>,
) -> ApiResult<DeliveriesPage> {
    s.find(state, webhook_id).await?;
    let limit = limit.unwrap_or(50).clamp(1, 200);
    let before = match cursor.filter(|c| !c.is_empty()) {
        Some(c) => Some(c.parse::<i64>().map_err(|_| {
            crate::error::ApiError::validation(false, vec!["cursor: not a cursor".into()])
        })?),
        None => None,
    };
    let list = state
        .webhooks
        .store
        .list_deliveries(webhook_id, before, limit)
        .await?;
    let next_cursor = (list.len() == limit as usize)
        .then(|| list.last().map(|d| d.seq.to_string()))
        .flatten();
    Ok(DeliveriesPage {
        deliveries: list.iter().map(DeliveryDto::from).collect(),
        next_cursor,
    })
}

async fn redeliver(state: &AppState, s: Scoped, delivery_id: &str) -> ApiResult<DeliveryDto> {
    let hooks = &state.webhooks;
    let d = hooks
        .store
        .get_delivery(delivery_id)
        .await?
        .filter(|d| d.scope == s.scope)
        .ok_or(Code::WebhookDeliveryNotFound)?;
    let now = state.clock.now();
    if !hooks.store.redeliver(&d.id, now).await? {
        return Err(Code::WebhookDeliveryPending.into());
    }
    // No endpoint changes: its record is stored on its own.
    let note = s.note(action::WEBHOOK_REDELIVERED, &d.webhook_id);
    state.audit.record(state.audit.noted(note)).await;
    hooks.wake.notify_one();
    // As the store now holds it (see `WebhookStore::redeliver`).
    let mut d = d;
    d.status = storage::DeliveryStatus::Pending;
    d.next_at = Some(now);
    d.tries = 0;
    Ok(DeliveryDto::from(&d))
}

#[OpenApi(prefix_path = "/organization/webhook", tag = "Tag::Webhooks")]
impl OrgWebhookApi {
    /// Register a webhook endpoint
    ///
    /// Events of the organization (`events`: names or patterns such as `member.*`, or `*`)
    /// are delivered to `url`, signed with the returned `secret` (shown this once) as
    /// Standard Webhooks. Needs `webhook:create` (owners and admins). `url` must be `https`
    /// and public unless the server allows otherwise.
    #[oai(
        path = "/create",
        method = "post",
        operation_id = "createOrganizationWebhook"
    )]
    async fn create(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<CreateWebhookBody>,
    ) -> ApiResult<Json<WebhookWithSecret>> {
        let s = Scoped::org(&state, &auth, body.organization_id.as_deref(), "create").await?;
        Ok(Json(create(&state, s, body.0).await?))
    }

    /// List the organization's webhook endpoints
    ///
    /// Needs `webhook:read`.
    #[oai(
        path = "/list",
        method = "get",
        operation_id = "listOrganizationWebhooks"
    )]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<WebhookDto>>> {
        let s = Scoped::org(&state, &auth, organization_id.0.as_deref(), "read").await?;
        Ok(Json(list(&state, s).await?))
    }

    /// Change a webhook endpoint
    ///
    /// Its `url`, `events`, `description`, or `enabled` (turning it on again clears its
    /// failure count). Needs `webhook:update`.
    #[oai(
        path = "/update",
        method = "post",
        operation_id = "updateOrganizationWebhook"
    )]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<UpdateWebhookBody>,
    ) -> ApiResult<Json<WebhookDto>> {
        let s = Scoped::org(&state, &auth, body.organization_id.as_deref(), "update").await?;
        Ok(Json(update(&state, s, body.0).await?))
    }

    /// Rotate a webhook endpoint's secret
    ///
    /// Answers the new secret (shown this once); deliveries carry signatures of both secrets
    /// for `webhooks.rotation_overlap_secs` (a day by default). Needs `webhook:update`.
    #[oai(
        path = "/rotate-secret",
        method = "post",
        operation_id = "rotateOrganizationWebhookSecret"
    )]
    async fn rotate(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<WebhookIdBody>,
    ) -> ApiResult<Json<WebhookWithSecret>> {
        let s = Scoped::org(&state, &auth, body.organization_id.as_deref(), "update").await?;
        Ok(Json(rotate(&state, s, &body.webhook_id).await?))
    }

    /// Delete a webhook endpoint
    ///
    /// With its deliveries. Needs `webhook:delete`.
    #[oai(
        path = "/delete",
        method = "post",
        operation_id = "deleteOrganizationWebhook"
    )]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<WebhookIdBody>,
    ) -> ApiResult<Json<Success>> {
        let s = Scoped::org(&state, &auth, body.organization_id.as_deref(), "delete").await?;
        Ok(Json(delete(&state, s, &body.webhook_id).await?))
    }

    /// List a webhook endpoint's deliveries
    ///
    /// Newest first, each with its attempts (time, status code or error, duration) and the
    /// body sent; older ones with `cursor` (the previous page's `nextCursor`). Needs
    /// `webhook:read`.
    #[oai(
        path = "/deliveries",
        method = "get",
        operation_id = "listOrganizationWebhookDeliveries"
    )]
    async fn deliveries(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        #[oai(name = "webhookId")] webhook_id: Query<String>,
        cursor: Query<Option<String>>,
        #[oai(validator(minimum(value = "1"), maximum(value = "200")))] limit: Query<Option<u32>>,
    ) -> ApiResult<Json<DeliveriesPage>> {
        let s = Scoped::org(&state, &auth, organization_id.0.as_deref(), "read").await?;
        Ok(Json(
            deliveries(&state, s, &webhook_id.0, cursor.0, limit.0).await?,
        ))
    }

    /// Deliver again
    ///
    /// Sends a delivery that succeeded or failed once more (same `webhook-id`, a new series
    /// of attempts). Needs `webhook:update`.
    #[oai(
        path = "/redeliver",
        method = "post",
        operation_id = "redeliverOrganizationWebhook"
    )]
    async fn redeliver(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<RedeliverBody>,
    ) -> ApiResult<Json<DeliveryDto>> {
        let s = Scoped::org(&state, &auth, body.organization_id.as_deref(), "update").await?;
        Ok(Json(redeliver(&state, s, &body.delivery_id).await?))
    }
}

#[OpenApi(prefix_path = "/admin/webhook", tag = "Tag::Webhooks")]
impl AdminWebhookApi {
    /// Register a server webhook endpoint
    ///
    /// Every event (users, sessions, every organization's) that `events` names is delivered
    /// to `url`. Needs `webhook:manage` (the `admin` role) or the server key.
    #[oai(path = "/create", method = "post", operation_id = "adminCreateWebhook")]
    async fn create(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<CreateWebhookBody>,
    ) -> ApiResult<Json<WebhookWithSecret>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(create(&state, s, body.0).await?))
    }

    /// List the server's webhook endpoints
    #[oai(path = "/list", method = "get", operation_id = "adminListWebhooks")]
    async fn list(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
    ) -> ApiResult<Json<Vec<WebhookDto>>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(list(&state, s).await?))
    }

    /// Change a server webhook endpoint
    #[oai(path = "/update", method = "post", operation_id = "adminUpdateWebhook")]
    async fn update(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UpdateWebhookBody>,
    ) -> ApiResult<Json<WebhookDto>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(update(&state, s, body.0).await?))
    }

    /// Rotate a server webhook endpoint's secret
    #[oai(
        path = "/rotate-secret",
        method = "post",
        operation_id = "adminRotateWebhookSecret"
    )]
    async fn rotate(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<WebhookIdBody>,
    ) -> ApiResult<Json<WebhookWithSecret>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(rotate(&state, s, &body.webhook_id).await?))
    }

    /// Delete a server webhook endpoint
    #[oai(path = "/delete", method = "post", operation_id = "adminDeleteWebhook")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<WebhookIdBody>,
    ) -> ApiResult<Json<Success>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(delete(&state, s, &body.webhook_id).await?))
    }

    /// List a server webhook endpoint's deliveries
    #[oai(
        path = "/deliveries",
        method = "get",
        operation_id = "adminListWebhookDeliveries"
    )]
    async fn deliveries(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        #[oai(name = "webhookId")] webhook_id: Query<String>,
        cursor: Query<Option<String>>,
        #[oai(validator(minimum(value = "1"), maximum(value = "200")))] limit: Query<Option<u32>>,
    ) -> ApiResult<Json<DeliveriesPage>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(
            deliveries(&state, s, &webhook_id.0, cursor.0, limit.0).await?,
        ))
    }

    /// Deliver again (server endpoint)
    #[oai(
        path = "/redeliver",
        method = "post",
        operation_id = "adminRedeliverWebhook"
    )]
    async fn redeliver(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<RedeliverBody>,
    ) -> ApiResult<Json<DeliveryDto>> {
        let s = Scoped::admin(&state, &who)?;
        Ok(Json(redeliver(&state, s, &body.delivery_id).await?))
    }
}
