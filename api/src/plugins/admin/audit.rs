//! Reading the audit log: everything for the server key and admins (`audit-log:list`), one
//! organization's events for those of its members who may update it (owners and admins).
use super::AdminCaller;
use crate::dto::iso;
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::Tag;
use crate::session::Principal;
use crate::AppState;
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Enum, Object, OpenApi};
use std::collections::BTreeMap;
use storage::{AuditEvent, AuditOutcome, AuditQuery, OrgId, UserId};

pub struct AuditApi;

/// One security event.
#[derive(Debug, Object)]
#[oai(rename = "AuditEvent", rename_all = "camelCase")]
struct AuditEventDto {
    id: String,
    /// ISO 8601 date-time.
    at: String,
    /// `user.sign-in`, `member.role-changed`… (README, "Audit log", lists them).
    action: String,
    outcome: OutcomeParam,
    /// The error code of a failure.
    reason: Option<String>,
    /// Who acted (absent: the server key or an anonymous client).
    actor_id: Option<String>,
    /// The user the event is about.
    user_id: Option<String>,
    organization_id: Option<String>,
    /// What else it is about: a member, invitation, session or role id, a provider, an address.
    target: Option<String>,
    ip_address: Option<String>,
    user_agent: Option<String>,
    request_id: Option<String>,
    details: BTreeMap<String, String>,
}

impl From<AuditEvent> for AuditEventDto {
    fn from(e: AuditEvent) -> Self {
        Self {
            at: iso(&e.at),
            id: e.id,
            action: e.action,
            outcome: match e.outcome {
                AuditOutcome::Success => OutcomeParam::Success,
                AuditOutcome::Failure => OutcomeParam::Failure,
            },
            reason: e.reason,
            actor_id: e.actor_id.map(|u| u.0),
            user_id: e.user_id.map(|u| u.0),
            organization_id: e.organization_id.map(|o| o.0),
            target: e.target,
            ip_address: e.ip_address,
            user_agent: e.user_agent,
            request_id: e.request_id,
            details: e.details,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "AuditOutcome", rename_all = "lowercase")]
enum OutcomeParam {
    Success,
    Failure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "AuditOrder", rename_all = "lowercase")]
enum OrderParam {
    Newest,
    Oldest,
}

#[derive(Debug, Object)]
#[oai(rename = "AuditLogPage", rename_all = "camelCase")]
struct AuditPage {
    events: Vec<AuditEventDto>,
    /// Pass as `cursor` for the next page; absent on the last one.
    next_cursor: Option<String>,
}

/// The filters both routes take.
struct Filters {
    user: Option<String>,
    action: Option<String>,
    outcome: Option<OutcomeParam>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
    order: Option<OrderParam>,
}

const DEFAULT_LIMIT: u32 = 100;

fn invalid(what: String) -> ApiError {
    ApiError::validation(true, vec![what])
}

fn instant(v: &Option<String>, name: &str) -> ApiResult<Option<DateTime<Utc>>> {
    v.as_deref()
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| invalid(format!("{name}: an ISO 8601 date-time is expected")))
        })
        .transpose()
}

/// The page `f` asks for (of `org` when given), within the retention.
async fn audit_page(
    state: &AppState,
    f: Filters,
    org: Option<OrgId>,
) -> ApiResult<Json<AuditPage>> {
    if let Some(a) = f.action.as_deref() {
        let known = crate::audit::action::ALL
            .iter()
            .any(|k| storage::audit::action_matches(a, k));
        if !known {
            return Err(invalid(format!("action: no event is called {a:?}")));
        }
    }
    if let Some(c) = f.cursor.as_deref() {
        storage::audit::parse_audit_cursor(c)
            .map_err(|_| invalid("cursor: not one this route answered".into()))?;
    }
    let now = state.clock.now();
    let floor = state.config.audit.oldest_kept(now);
    let since = instant(&f.since, "since")?.unwrap_or(floor).max(floor);
    let until = instant(&f.until, "until")?
        .unwrap_or(now + chrono::Duration::seconds(1))
        .min(now + chrono::Duration::days(1));
    let limit = f.limit.unwrap_or(DEFAULT_LIMIT);
    if since >= until {
        return Ok(Json(AuditPage {
            events: Vec::new(),
            next_cursor: None,
        }));
    }
    let q = AuditQuery {
        since,
        until,
        user: f.user.filter(|u| !u.is_empty()).map(UserId),
        organization: org,
        action: f.action,
        outcome: f.outcome.map(|o| match o {
            OutcomeParam::Success => AuditOutcome::Success,
            OutcomeParam::Failure => AuditOutcome::Failure,
        }),
        after: f.cursor,
        limit,
        oldest_first: f.order == Some(OrderParam::Oldest),
    };
    // This process's refusals, recorded after their answers, are in what it reads.
    state.audit.flushed().await;
    let page = state.reader.list_audit(&q).await?;
    Ok(Json(AuditPage {
        events: page.items.into_iter().map(AuditEventDto::from).collect(),
        next_cursor: page.next,
    }))
}

#[OpenApi(tag = "Tag::Admin")]
impl AuditApi {
    /// Read the audit log
    ///
    /// Security events, newest first (`order=oldest` for oldest first), `limit` a page (default
    /// 100, at most 1000), the next page from `nextCursor`. Filters: `userId` (as actor or
    /// subject), `organizationId`, `action` (`member` matches `member.added`…), `outcome`,
    /// `since` / `until` (ISO 8601; never further back than the retention). Needs
    /// `audit-log:list` (the `admin` role) or the server key.
    #[oai(
        path = "/admin/audit-log",
        method = "get",
        operation_id = "adminAuditLog"
    )]
    #[allow(clippy::too_many_arguments)]
    async fn admin_audit_log(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        #[oai(name = "userId")] user_id: Query<Option<String>>,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        action: Query<Option<String>>,
        outcome: Query<Option<OutcomeParam>>,
        since: Query<Option<String>>,
        until: Query<Option<String>>,
        #[oai(validator(minimum(value = "1"), maximum(value = "1000")))] limit: Query<Option<u32>>,
        cursor: Query<Option<String>>,
        order: Query<Option<OrderParam>>,
    ) -> ApiResult<Json<AuditPage>> {
        state
            .actors
            .admin_authorize(&who.caller, actors::AdminAction::ReadAuditLog)?;
        let f = Filters {
            user: user_id.0,
            action: action.0,
            outcome: outcome.0,
            since: since.0,
            until: until.0,
            limit: limit.0,
            cursor: cursor.0,
            order: order.0,
        };
        let org = organization_id.0.filter(|o| !o.is_empty()).map(OrgId);
        audit_page(&state, f, org).await
    }

    /// Read an organization's audit log
    ///
    /// The organization's events (the active one unless `organizationId` is given), with the
    /// filters and paging of `/admin/audit-log`. Needs `organization:update` in it (owners and
    /// admins): 403 `YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG` otherwise.
    #[oai(
        path = "/organization/audit-log",
        method = "get",
        operation_id = "organizationAuditLog"
    )]
    #[allow(clippy::too_many_arguments)]
    async fn organization_audit_log(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        #[oai(name = "userId")] user_id: Query<Option<String>>,
        action: Query<Option<String>>,
        outcome: Query<Option<OutcomeParam>>,
        since: Query<Option<String>>,
        until: Query<Option<String>>,
        #[oai(validator(minimum(value = "1"), maximum(value = "1000")))] limit: Query<Option<u32>>,
        cursor: Query<Option<String>>,
        order: Query<Option<OrderParam>>,
    ) -> ApiResult<Json<AuditPage>> {
        let org = auth.org_id(organization_id.0.as_deref().filter(|o| !o.is_empty()))?;
        let perms: policy::Permissions =
            [("organization".to_owned(), ["update".to_owned()].into())].into();
        let allowed = state
            .actors
            .standing(&org, &auth.user.id)
            .await?
            .allows_all(&perms)?;
        if !allowed {
            return Err(Code::NotAllowedToReadAuditLog.into());
        }
        let f = Filters {
            user: user_id.0,
            action: action.0,
            outcome: outcome.0,
            since: since.0,
            until: until.0,
            limit: limit.0,
            cursor: cursor.0,
            order: order.0,
        };
        audit_page(&state, f, Some(org)).await
    }
}
