//! The audit log: security events, append-only, read newest (or oldest) first by time range,
//! user, organization and action. Events never hold a secret, token or password: the API
//! decides what goes in, the store keeps it as given.
use crate::ids::{OrgId, UserId};
use crate::{Page, StoreError, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One security event (as JSON: camelCase, as the API answers it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    /// Random; with `at`, the event's place in the log (and its cursor).
    pub id: String,
    pub at: DateTime<Utc>,
    /// What happened, `noun.verb` in lowercase (`user.sign-in`, `member.role-changed`).
    pub action: String,
    pub outcome: AuditOutcome,
    /// Why it failed (an error code), when it did.
    pub reason: Option<String>,
    /// Who acted: the signed-in user, the user signing in; `None` for the server key or an
    /// anonymous client.
    pub actor_id: Option<UserId>,
    /// The user the event is about, when it is about one (the actor for their own account).
    pub user_id: Option<UserId>,
    pub organization_id: Option<OrgId>,
    /// What else it is about: a member, invitation, session or role id, a provider, the address
    /// a refused sign-in was tried for.
    pub target: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
    /// More facts (a role, a count, who impersonates), never secrets.
    pub details: BTreeMap<String, String>,
}

impl AuditEvent {
    /// A successful `action` at `at`, with a fresh id and nothing else known yet.
    pub fn new(action: &str, at: DateTime<Utc>) -> Self {
        Self {
            id: crate::random_string(20),
            at,
            action: action.to_owned(),
            outcome: AuditOutcome::Success,
            reason: None,
            actor_id: None,
            user_id: None,
            organization_id: None,
            target: None,
            ip_address: None,
            user_agent: None,
            request_id: None,
            details: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditOutcome {
    Success,
    Failure,
}

impl AuditOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
        }
    }

    pub fn parse(s: &str) -> StoreResult<Self> {
        match s {
            "success" => Ok(Self::Success),
            "failure" => Ok(Self::Failure),
            _ => Err(StoreError::Internal(format!("not an audit outcome: {s:?}"))),
        }
    }
}

/// Which events to read: those in `[since, until)`, of one user (as actor or subject), of one
/// organization, of one action (`member` also matches `member.added`) and/or of one outcome,
/// one page at a time. The range must be bounded: a partitioned backend reads one time bucket after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub user: Option<UserId>,
    pub organization: Option<OrgId>,
    pub action: Option<String>,
    pub outcome: Option<AuditOutcome>,
    /// The cursor a previous page returned.
    pub after: Option<String>,
    pub limit: u32,
    /// Oldest first (an export); newest first otherwise.
    pub oldest_first: bool,
}

impl AuditQuery {
    /// Everything in `[since, until)`, newest first, `limit` per page.
    pub fn range(since: DateTime<Utc>, until: DateTime<Utc>, limit: u32) -> Self {
        Self {
            since,
            until,
            user: None,
            organization: None,
            action: None,
            outcome: None,
            after: None,
            limit,
            oldest_first: false,
        }
    }

    /// Whether `e` is one this query asks for (every filter; the cursor aside).
    pub fn matches(&self, e: &AuditEvent) -> bool {
        e.at >= self.since
            && e.at < self.until
            && self
                .user
                .as_ref()
                .is_none_or(|u| e.actor_id.as_ref() == Some(u) || e.user_id.as_ref() == Some(u))
            && self
                .organization
                .as_ref()
                .is_none_or(|o| e.organization_id.as_ref() == Some(o))
            && self
                .action
                .as_deref()
                .is_none_or(|a| action_matches(a, &e.action))
            && self.outcome.is_none_or(|o| e.outcome == o)
    }

    /// The (milliseconds, id) the page starts after, if a cursor was given.
    pub fn position(&self) -> StoreResult<Option<(i64, String)>> {
        self.after.as_deref().map(parse_audit_cursor).transpose()
    }
}

/// `filter` is the action or one of its leading `.`-separated parts.
pub fn action_matches(filter: &str, action: &str) -> bool {
    action == filter
        || action
            .strip_prefix(filter)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The cursor of the page that follows `e`.
pub fn audit_cursor(e: &AuditEvent) -> String {
    format!("{}.{}", e.at.timestamp_millis(), e.id)
}

/// The (milliseconds, id) an [`audit_cursor`] holds.
pub fn parse_audit_cursor(cursor: &str) -> StoreResult<(i64, String)> {
    cursor
        .split_once('.')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_owned())))
        .filter(|(_, id)| !id.is_empty())
        .ok_or_else(|| StoreError::Internal(format!("not an audit cursor: {cursor:?}")))
}

/// The log of security events.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends an event, kept at least `keep_for` (a backend that expires rows itself, as
    /// ScyllaDB with a TTL, drops it then; others wait for [`AuditStore::purge_audit`]).
    async fn append_audit(
        &self,
        event: &AuditEvent,
        keep_for: std::time::Duration,
    ) -> StoreResult<()>;
    /// Appends several events at once: what a busy server's audit writer hands over. In one
    /// transaction where the backend has them (all kept or none); otherwise side by side (a
    /// failure may leave some of them written).
    async fn append_audit_batch(
        &self,
        events: &[AuditEvent],
        keep_for: std::time::Duration,
    ) -> StoreResult<()> {
        for e in events {
            self.append_audit(e, keep_for).await?;
        }
        Ok(())
    }
    /// One page of the events `q` asks for, in time order (then by id), and the cursor of the
    /// next page. Events appended meanwhile never make a page repeat or skip one.
    async fn list_audit(&self, q: &AuditQuery) -> StoreResult<Page<AuditEvent>>;
    /// Deletes events from before `before`; returns how many. A backend that expires rows
    /// itself does nothing here.
    async fn purge_audit(&self, before: DateTime<Utc>) -> StoreResult<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_filters_match_whole_parts() {
        assert!(action_matches("member", "member.added"));
        assert!(action_matches("member.added", "member.added"));
        assert!(!action_matches("member", "members.added"));
        assert!(!action_matches("member.add", "member.added"));
        assert!(action_matches("user", "user.sign-in"));
    }

    #[test]
    fn cursors_round_trip() {
        let mut e = AuditEvent::new(
            "user.sign-in",
            DateTime::from_timestamp_millis(1_700_000_000_123).unwrap(),
        );
        e.id = "abc".into();
        assert_eq!(
            parse_audit_cursor(&audit_cursor(&e)).unwrap(),
            (1_700_000_000_123, "abc".into())
        );
        assert!(parse_audit_cursor("x.y").is_err());
        assert!(parse_audit_cursor("12.").is_err());
        assert!(parse_audit_cursor("12").is_err());
    }
}
