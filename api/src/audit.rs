//! The audit log's API side: the events routes record (one line each, after the operation, with
//! its outcome) and where a request came from. Events name users, organizations and ids, never
//! a token, password or secret; what a route records is listed in README, "Audit log".
pub use crate::client::Origin;
use crate::error::{ApiResult, Code};
use poem::http::HeaderValue;
use std::sync::{Arc, Mutex};
use storage::{AuditEvent, AuditOutcome, OrgId, UserId};
use tokio::sync::{mpsc, watch};

/// The actions recorded, one constant each (the `action` of an event).
pub mod action {
    pub const SIGN_UP: &str = "user.sign-up";
    pub const SIGN_IN: &str = "user.sign-in";
    pub const SIGN_OUT: &str = "user.sign-out";
    pub const SESSION_REVOKED: &str = "session.revoked";
    pub const PASSWORD_CHANGED: &str = "password.changed";
    pub const PASSWORD_RESET: &str = "password.reset";
    pub const PASSWORD_SET: &str = "password.set";
    pub const EMAIL_CHANGE_REQUESTED: &str = "email.change-requested";
    pub const EMAIL_CHANGED: &str = "email.changed";
    pub const EMAIL_VERIFIED: &str = "email.verified";
    pub const ACCOUNT_LINKED: &str = "account.linked";
    pub const ACCOUNT_UNLINKED: &str = "account.unlinked";
    pub const USER_DELETED: &str = "user.deleted";
    pub const ORGANIZATION_CREATED: &str = "organization.created";
    pub const ORGANIZATION_UPDATED: &str = "organization.updated";
    pub const ORGANIZATION_DELETED: &str = "organization.deleted";
    pub const MEMBER_ADDED: &str = "member.added";
    pub const MEMBER_REMOVED: &str = "member.removed";
    pub const MEMBER_ROLE_CHANGED: &str = "member.role-changed";
    pub const INVITATION_CREATED: &str = "invitation.created";
    pub const INVITATION_ACCEPTED: &str = "invitation.accepted";
    pub const INVITATION_REJECTED: &str = "invitation.rejected";
    pub const INVITATION_CANCELED: &str = "invitation.canceled";
    pub const ROLE_CREATED: &str = "role.created";
    pub const ROLE_UPDATED: &str = "role.updated";
    pub const ROLE_DELETED: &str = "role.deleted";
    pub const RATE_LIMITED: &str = "rate-limit.hit";
    pub const ADMIN_USER_CREATED: &str = "admin.user-created";
    pub const ADMIN_USER_UPDATED: &str = "admin.user-updated";
    pub const ADMIN_ROLE_SET: &str = "admin.role-set";
    pub const ADMIN_USER_BANNED: &str = "admin.user-banned";
    pub const ADMIN_USER_UNBANNED: &str = "admin.user-unbanned";
    pub const ADMIN_SESSIONS_REVOKED: &str = "admin.sessions-revoked";
    pub const ADMIN_USER_REMOVED: &str = "admin.user-removed";
    pub const ADMIN_PASSWORD_SET: &str = "admin.password-set";
    pub const ADMIN_IMPERSONATION_STARTED: &str = "admin.impersonation-started";
    pub const ADMIN_IMPERSONATION_STOPPED: &str = "admin.impersonation-stopped";
    pub const ADMIN_TWO_FACTOR_DISABLED: &str = "admin.two-factor-disabled";
    pub const TWO_FACTOR_ENROLLED: &str = "two-factor.enrolled";
    pub const TWO_FACTOR_DISABLED: &str = "two-factor.disabled";
    pub const TWO_FACTOR_BACKUP_CODES: &str = "two-factor.backup-codes-regenerated";
    pub const TWO_FACTOR_CHALLENGE: &str = "two-factor.challenge";
    pub const TWO_FACTOR_DEVICE_TRUSTED: &str = "two-factor.device-trusted";
    pub const PASSKEY_REGISTERED: &str = "passkey.registered";
    pub const PASSKEY_SIGN_IN: &str = "passkey.sign-in";
    pub const PASSKEY_RENAMED: &str = "passkey.renamed";
    pub const PASSKEY_DELETED: &str = "passkey.deleted";
    /// An assertion whose signature counter went back: the authenticator may be cloned.
    pub const PASSKEY_CLONE_SUSPECTED: &str = "passkey.clone-suspected";
    pub const API_KEY_CREATED: &str = "api-key.created";
    pub const API_KEY_UPDATED: &str = "api-key.updated";
    pub const API_KEY_DELETED: &str = "api-key.deleted";
    /// A key's first use (later uses are counted in metrics, not kept one by one).
    pub const API_KEY_FIRST_USE: &str = "api-key.first-use";
    /// A request with a key that was refused (unknown, disabled, expired, used up, limited).
    pub const API_KEY_REFUSED: &str = "api-key.refused";
    pub const WEBHOOK_CREATED: &str = "webhook.created";
    pub const WEBHOOK_UPDATED: &str = "webhook.updated";
    pub const WEBHOOK_SECRET_ROTATED: &str = "webhook.secret-rotated";
    pub const WEBHOOK_DELETED: &str = "webhook.deleted";
    pub const WEBHOOK_REDELIVERED: &str = "webhook.redelivered";
    /// The server disabled an endpoint whose deliveries kept failing.
    pub const WEBHOOK_DISABLED: &str = "webhook.disabled";

    /// Every action, for the documentation and the read routes' filter.
    pub const ALL: &[&str] = &[
        SIGN_UP,
        SIGN_IN,
        SIGN_OUT,
        SESSION_REVOKED,
        PASSWORD_CHANGED,
        PASSWORD_RESET,
        PASSWORD_SET,
        EMAIL_CHANGE_REQUESTED,
        EMAIL_CHANGED,
        EMAIL_VERIFIED,
        ACCOUNT_LINKED,
        ACCOUNT_UNLINKED,
        USER_DELETED,
        ORGANIZATION_CREATED,
        ORGANIZATION_UPDATED,
        ORGANIZATION_DELETED,
        MEMBER_ADDED,
        MEMBER_REMOVED,
        MEMBER_ROLE_CHANGED,
        INVITATION_CREATED,
        INVITATION_ACCEPTED,
        INVITATION_REJECTED,
        INVITATION_CANCELED,
        ROLE_CREATED,
        ROLE_UPDATED,
        ROLE_DELETED,
        RATE_LIMITED,
        ADMIN_USER_CREATED,
        ADMIN_USER_UPDATED,
        ADMIN_ROLE_SET,
        ADMIN_USER_BANNED,
        ADMIN_USER_UNBANNED,
        ADMIN_SESSIONS_REVOKED,
        ADMIN_USER_REMOVED,
        ADMIN_PASSWORD_SET,
        ADMIN_IMPERSONATION_STARTED,
        ADMIN_IMPERSONATION_STOPPED,
        ADMIN_TWO_FACTOR_DISABLED,
        TWO_FACTOR_ENROLLED,
        TWO_FACTOR_DISABLED,
        TWO_FACTOR_BACKUP_CODES,
        TWO_FACTOR_CHALLENGE,
        TWO_FACTOR_DEVICE_TRUSTED,
        PASSKEY_REGISTERED,
        PASSKEY_SIGN_IN,
        PASSKEY_RENAMED,
        PASSKEY_DELETED,
        PASSKEY_CLONE_SUSPECTED,
        API_KEY_CREATED,
        API_KEY_UPDATED,
        API_KEY_DELETED,
        API_KEY_FIRST_USE,
        API_KEY_REFUSED,
        WEBHOOK_CREATED,
        WEBHOOK_UPDATED,
        WEBHOOK_SECRET_ROTATED,
        WEBHOOK_DELETED,
        WEBHOOK_REDELIVERED,
        WEBHOOK_DISABLED,
    ];
}

/// An audit record being described. The decision it describes keeps it in its own write
/// ([`Audit::noting`] makes the request's context of it); a refusal is recorded on its own
/// ([`Audit::record_refusal`]).
#[derive(Debug, Clone)]
pub struct Event {
    record: AuditEvent,
    fill: Vec<actors::Fill>,
    when: actors::When,
}

impl Event {
    pub fn new(action: &'static str, origin: &Origin) -> Self {
        let text = |v: &Option<HeaderValue>, max: usize| {
            v.as_ref()
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(max).collect::<String>())
        };
        // Stamped with the server's clock when it is stored.
        let mut e = AuditEvent::new(action, chrono::DateTime::UNIX_EPOCH);
        e.ip_address = origin.ip.map(|ip| ip.to_string());
        e.user_agent = text(&origin.user_agent, 512);
        e.request_id = text(&origin.request_id, 128);
        Self {
            record: e,
            fill: Vec::new(),
            when: actors::When::Always,
        }
    }

    /// Who acted.
    pub fn actor(mut self, id: &UserId) -> Self {
        self.record.actor_id = Some(id.clone());
        self
    }

    /// The user the event is about.
    pub fn user(mut self, id: &UserId) -> Self {
        self.record.user_id = Some(id.clone());
        self
    }

    /// The user acting on their own account: actor and subject.
    pub fn own(self, id: &UserId) -> Self {
        self.actor(id).user(id)
    }

    pub fn org(mut self, id: &OrgId) -> Self {
        self.record.organization_id = Some(id.clone());
        self
    }

    pub fn target(mut self, t: impl Into<String>) -> Self {
        self.record.target = Some(t.into());
        self
    }

    pub fn detail(mut self, key: &str, value: impl Into<String>) -> Self {
        self.record.details.insert(key.to_owned(), value.into());
        self
    }

    /// What the decision fills in (the member, session… it was about).
    pub fn fill(mut self, f: actors::Fill) -> Self {
        self.fill.push(f);
        self
    }

    /// Kept only if the decision did this (a social sign-in creating the user…).
    pub fn when(mut self, w: actors::When) -> Self {
        self.when = w;
        self
    }

    /// Failed, for the reason `code` names.
    pub fn failed(mut self, code: Code) -> Self {
        self.record.outcome = AuditOutcome::Failure;
        self.record.reason = Some(code.code().to_owned());
        self
    }

    /// Failed, for a reason that is not one of the API's codes (a social sign-in's redirect
    /// error, as `account_not_linked`).
    pub fn failed_because(mut self, reason: &str) -> Self {
        self.record.outcome = AuditOutcome::Failure;
        self.record.reason = Some(reason.to_owned());
        self
    }

    /// The session acting is an impersonation: whose.
    pub fn impersonated_by(self, admin: Option<&UserId>) -> Self {
        match admin {
            Some(a) => self.detail("impersonatedBy", a.0.clone()),
            None => self,
        }
    }

    fn note(self, keep_for_secs: u64) -> actors::Note {
        actors::Note {
            record: self.record,
            fill: self.fill,
            keep_for_secs,
            when: self.when,
        }
    }
}

/// The audit service: what a request asks its decision to keep, and refusals recorded on
/// their own. Cheap to clone.
#[derive(Clone)]
pub struct Audit {
    enabled: bool,
    keep_for_secs: u64,
    actors: actors::Actors,
    failures: prometheus::IntCounter,
    later: Arc<Later>,
}

/// Records a request leaves for after its answer (refusals): a bounded queue one task drains,
/// many requests' records in one store write. A refusal is answered without waiting for its
/// record — in the same time whatever the record holds (an existing key's refusal names its
/// user: on ScyllaDB one more row), and without a store write per refused request.
struct Later {
    queue: mpsc::Sender<(u64, Vec<storage::Event>)>,
    /// The last number handed to a queued batch of records; numbers go into the queue in order.
    queued: Mutex<u64>,
    /// The number of the last batch stored (or given up).
    stored: watch::Receiver<u64>,
}

/// Requests' records queued at most (a flood of refusals waits for room, it does not grow
/// memory).
const LATER_QUEUE: usize = 4096;
/// Queued requests' records stored in one write at most.
const LATER_BATCH: usize = 64;

impl Audit {
    pub fn new(
        config: &crate::config::AuditConfig,
        actors: actors::Actors,
        failures: prometheus::IntCounter,
    ) -> Self {
        let (queue, rx) = mpsc::channel(LATER_QUEUE);
        let (stored_tx, stored) = watch::channel(0);
        tokio::spawn(drain(rx, actors.clone(), failures.clone(), stored_tx));
        Self {
            enabled: config.enabled,
            keep_for_secs: config.retention().as_secs(),
            actors,
            failures,
            later: Arc::new(Later {
                queue,
                queued: Mutex::new(0),
                stored,
            }),
        }
    }

    /// The request's context for a decision that keeps these audit records (none when the
    /// audit log is off).
    pub fn noting(&self, events: impl IntoIterator<Item = Event>) -> actors::Ctx {
        let mut ctx = actors::Ctx::default();
        if self.enabled {
            let keep = self.keep_for_secs;
            ctx.notes = events.into_iter().map(|e| e.note(keep)).collect();
        }
        ctx
    }

    /// What a social sign-in keeps besides the sign-in itself, each when its decision did it:
    /// the user created, the account linked to the user with its email, the user's address
    /// replaced by the provider's.
    pub fn social_notes(&self, origin: &Origin, provider: &str) -> actors::Ctx {
        use actors::{Fill, When};
        self.noting([
            Event::new(action::SIGN_UP, origin)
                .detail("method", "social")
                .detail("provider", provider)
                .fill(Fill::OwnUser)
                .when(When::Created),
            Event::new(action::ACCOUNT_LINKED, origin)
                .target(provider)
                .detail("implicit", "true")
                .fill(Fill::OwnUser)
                .when(When::Linked),
            Event::new(action::EMAIL_CHANGED, origin)
                .detail("provider", provider)
                .fill(Fill::OwnUser)
                .fill(Fill::EmailChange)
                .when(When::EmailReplaced),
        ])
    }

    /// The request's context for a decision that keeps this audit record.
    pub fn noted(&self, ev: Event) -> actors::Ctx {
        self.noting([ev])
    }

    /// Records a refusal (when the audit log is on): a refused decision writes nothing, so
    /// its record is stored on its own, after the answer ([`Audit::record_after`]).
    pub async fn record_refusal(&self, ev: Event, code: Code) {
        self.record_after(self.noted(ev.failed(code))).await;
    }

    /// Stores records that go with no change after the request's answer (stamped now): the
    /// request waits only when the queue is full. A store that fails to take them is logged
    /// and counted, never turned into a failure of the request; a process killed before they
    /// are stored loses them (they describe refusals: nothing was changed).
    pub async fn record_after(&self, ctx: actors::Ctx) {
        if ctx.is_empty() {
            return;
        }
        let events = self.actors.events_of("server", &ctx);
        let Ok(permit) = self.later.queue.reserve().await else {
            return;
        };
        let Ok(mut queued) = self.later.queued.lock() else {
            return;
        };
        *queued += 1;
        permit.send((*queued, events));
    }

    /// Waits until the records queued by [`Audit::record_after`] before this call are stored
    /// (a read of the audit log sees this process's refusals; a graceful stop).
    pub async fn flushed(&self) {
        let Ok(queued) = self.later.queued.lock().map(|q| *q) else {
            return;
        };
        let mut stored = self.later.stored.clone();
        let _ = stored.wait_for(|s| *s >= queued).await;
    }

    /// Stores records (and mail) that go with no change; see [`Audit::record_refusal`].
    pub async fn record(&self, ctx: actors::Ctx) {
        if ctx.is_empty() {
            return;
        }
        if let Err(err) = self.actors.record(&ctx).await {
            self.failures.inc();
            tracing::warn!(error = %err, "could not record an audit event");
        }
    }

    /// Hands `result` back; a failure is recorded as `ev`, refused with its code (the
    /// success's record was kept by the decision, from the request's context).
    pub async fn audited<T>(&self, ev: Event, result: ApiResult<T>) -> ApiResult<T> {
        if let Err(e) = &result {
            self.record_refusal(ev, e.code).await;
        }
        result
    }
}

/// Stores what [`Audit::record_after`] queued, the records of up to [`LATER_BATCH`] requests a
/// write, until the service is dropped.
async fn drain(
    mut rx: mpsc::Receiver<(u64, Vec<storage::Event>)>,
    actors: actors::Actors,
    failures: prometheus::IntCounter,
    stored: watch::Sender<u64>,
) {
    let mut batch = Vec::with_capacity(LATER_BATCH);
    while rx.recv_many(&mut batch, LATER_BATCH).await > 0 {
        let last = batch.last().map_or(0, |(n, _)| *n);
        let events: Vec<storage::Event> = batch.drain(..).flat_map(|(_, e)| e).collect();
        if let Err(err) = actors.append(&events).await {
            failures.inc();
            tracing::warn!(error = %err, records = events.len(), "could not record audit events");
        }
        stored.send_replace(last);
    }
}
