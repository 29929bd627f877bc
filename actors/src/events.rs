//! What a decision emits, stored in the same write as its change (see `storage::events`):
//! the audit records the request asked for ([`Ctx::notes`], completed with what only the
//! decision knows), its domain events (a stable name and the object, for webhooks), and the
//! mail it sends. A refused decision writes nothing, so it emits nothing; the caller records
//! the refusal itself ([`crate::Actors::record`]).
use chrono::{DateTime, Utc};
use storage::{
    AuditEvent, Event, Invitation, Member, Organization, Payload, Session, Team, User, UserId,
};

/// What a request adds to the decision it asks for: the audit records to keep with it and
/// the mail to send once it is stored. Empty: the decision emits only its domain events.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    pub notes: Vec<Note>,
    /// Messages (the mail consumer's payloads) to send once the change is stored.
    pub mail: Vec<serde_json::Value>,
}

impl Ctx {
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty() && self.mail.is_empty()
    }

    pub fn note(mut self, note: Note) -> Self {
        self.notes.push(note);
        self
    }

    pub fn mail(mut self, mail: serde_json::Value) -> Self {
        self.mail.push(mail);
        self
    }
}

/// In a request's mail, stands for the id of the invitation the decision made (or sent again).
pub const INVITATION_ID: &str = "@@invitation.id@@";
/// In a request's mail, stands for that invitation's role.
pub const INVITATION_ROLE: &str = "@@invitation.role@@";

/// A mail value with the decision's invitation put in for [`INVITATION_ID`] and
/// [`INVITATION_ROLE`].
pub fn fill_mail(mail: &serde_json::Value, invitation: Option<&Invitation>) -> serde_json::Value {
    let Some(i) = invitation else {
        return mail.clone();
    };
    let text = mail
        .to_string()
        .replace(INVITATION_ID, &i.id.0)
        .replace(INVITATION_ROLE, &json_inner(&i.role));
    serde_json::from_str(&text).unwrap_or_else(|_| mail.clone())
}

/// `s` as it appears inside a JSON string.
fn json_inner(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// An audit record as the request described it; the decision fills in what only it knows
/// (see [`Fill`]) and the time, and keeps it `keep_for_secs`.
#[derive(Debug, Clone)]
pub struct Note {
    pub record: AuditEvent,
    pub fill: Vec<Fill>,
    pub keep_for_secs: u64,
    /// Kept only when the decision says this happened (a social sign-in creating the user…).
    pub when: When,
}

/// Parts of an audit record only the decision knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// `target` := the member the decision was about.
    TargetMember,
    /// `user` := that member's user.
    UserOfMember,
    /// detail `role` := that member's role.
    MemberRole,
    /// `target` := the session made or ended.
    TargetSession,
    /// `target` := the invitation.
    TargetInvitation,
    /// `target` := the organization's slug.
    TargetSlug,
    /// detail `sessionsRevoked` := whether the decision revoked the user's sessions.
    SessionsRevoked,
    /// `target` := the user's new address, detail `from` := the one it replaced.
    EmailChange,
    /// `actor` and `user` := the user the decision was about (one it created or found).
    OwnUser,
}

/// When a note is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// The decision created the user.
    Created,
    /// The decision linked an account to an existing user.
    Linked,
    /// The decision replaced the user's email with the provider's.
    EmailReplaced,
    /// The decision added a member (accepting an invitation).
    MemberAdded,
}

/// What a decision tells its notes.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    pub member: Option<&'a Member>,
    pub session: Option<&'a Session>,
    pub invitation: Option<&'a Invitation>,
    pub org: Option<&'a Organization>,
    pub happened: &'a [When],
    pub sessions_revoked: Option<bool>,
    /// The user's address before and after the decision.
    pub email_change: Option<(&'a str, &'a str)>,
    /// The user the decision was about.
    pub user: Option<&'a UserId>,
}

impl Note {
    fn complete(&self, f: &Facts<'_>, now: DateTime<Utc>) -> Option<AuditEvent> {
        if self.when != When::Always && !f.happened.contains(&self.when) {
            return None;
        }
        let mut r = self.record.clone();
        r.at = now;
        for fill in &self.fill {
            match fill {
                Fill::TargetMember => r.target = f.member.map(|m| m.id.0.clone()).or(r.target),
                Fill::UserOfMember => r.user_id = f.member.map(|m| m.user_id.clone()).or(r.user_id),
                Fill::MemberRole => {
                    if let Some(m) = f.member {
                        r.details.insert("role".into(), m.role.clone());
                    }
                }
                Fill::TargetSession => r.target = f.session.map(|s| s.id.0.clone()).or(r.target),
                Fill::TargetInvitation => {
                    r.target = f.invitation.map(|i| i.id.0.clone()).or(r.target)
                }
                Fill::TargetSlug => r.target = f.org.map(|o| o.slug.clone()).or(r.target),
                Fill::OwnUser => {
                    if let Some(u) = f.user {
                        r.actor_id = Some(u.clone());
                        r.user_id = Some(u.clone());
                    }
                }
                Fill::EmailChange => {
                    if let Some((from, to)) = f.email_change {
                        r.target = Some(to.to_owned());
                        r.details.insert("from".into(), from.to_owned());
                    }
                }
                Fill::SessionsRevoked => {
                    if let Some(v) = f.sessions_revoked {
                        r.details.insert("sessionsRevoked".into(), v.to_string());
                    }
                }
            }
        }
        Some(r)
    }
}

/// The events of one write of a decision, built up and handed to the store.
pub(crate) struct Emit {
    aggregate: String,
    now: DateTime<Utc>,
    events: Vec<Event>,
}

impl Emit {
    pub(crate) fn user(id: &UserId, now: DateTime<Utc>) -> Self {
        Self::of(format!("user:{id}"), now)
    }

    pub(crate) fn org(id: &storage::OrgId, now: DateTime<Utc>) -> Self {
        Self::of(format!("org:{id}"), now)
    }

    pub(crate) fn of(aggregate: String, now: DateTime<Utc>) -> Self {
        Self {
            aggregate,
            now,
            events: Vec::new(),
        }
    }

    /// A domain event: `name` and the object, written as JSON once, here.
    pub(crate) fn domain(mut self, name: &str, data: impl serde::Serialize) -> Self {
        self.events.push(Event::new(
            self.aggregate.clone(),
            self.now,
            Payload::Domain {
                name: name.to_owned(),
                data: storage::Json::of(&data),
            },
        ));
        self
    }

    /// The request's notes (completed with `facts`) and mail.
    pub(crate) fn request(mut self, ctx: &Ctx, facts: &Facts<'_>) -> Self {
        for n in &ctx.notes {
            if let Some(record) = n.complete(facts, self.now) {
                self.events.push(Event::audit(
                    self.aggregate.clone(),
                    record,
                    n.keep_for_secs,
                ));
            }
        }
        for m in &ctx.mail {
            self.events.push(Event::new(
                self.aggregate.clone(),
                self.now,
                Payload::Mail {
                    data: fill_mail(m, facts.invitation),
                },
            ));
        }
        self
    }

    pub(crate) fn done(self) -> Vec<Event> {
        self.events
    }
}

/// Domain events' objects: the fields an API client sees (camelCase), without tokens or
/// hashes; borrowed from the entity and written straight to JSON (see [`storage::Json`]).
pub(crate) mod data {
    use super::*;
    use serde::Serialize;
    use storage::{ApiKey, InvitationId, MemberId, OrgId, SessionId, TeamId};

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct UserData<'a> {
        id: &'a UserId,
        email: &'a str,
        email_verified: bool,
        name: &'a str,
        image: &'a Option<String>,
        role: &'a Option<String>,
        banned: bool,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        two_factor_enabled: bool,
    }

    pub(crate) fn user(u: &User) -> UserData<'_> {
        UserData {
            id: &u.id,
            email: &u.email,
            email_verified: u.email_verified,
            name: &u.name,
            image: &u.image,
            role: &u.role,
            banned: u.banned,
            created_at: u.created_at,
            updated_at: u.updated_at,
            two_factor_enabled: u.two_factor_enabled,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct SessionData<'a> {
        id: &'a SessionId,
        user_id: &'a UserId,
        expires_at: DateTime<Utc>,
        ip_address: &'a Option<String>,
        user_agent: &'a Option<String>,
        created_at: DateTime<Utc>,
        impersonated_by: &'a Option<UserId>,
    }

    /// A session without its token.
    pub(crate) fn session(s: &Session) -> SessionData<'_> {
        SessionData {
            id: &s.id,
            user_id: &s.user_id,
            expires_at: s.expires_at,
            ip_address: &s.ip_address,
            user_agent: &s.user_agent,
            created_at: s.created_at,
            impersonated_by: &s.impersonated_by,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct ApiKeyData<'a> {
        id: &'a storage::ApiKeyId,
        name: &'a Option<String>,
        start: &'a Option<String>,
        prefix: &'a Option<String>,
        user_id: &'a UserId,
        reference_id: &'a str,
        enabled: bool,
        expires_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
    }

    /// An API key without its hash: what the key's listing shows.
    pub(crate) fn api_key(k: &ApiKey) -> ApiKeyData<'_> {
        ApiKeyData {
            id: &k.id,
            name: &k.name,
            start: &k.start,
            prefix: &k.prefix,
            user_id: &k.user_id,
            reference_id: k.reference_id(),
            enabled: k.enabled,
            expires_at: k.expires_at,
            created_at: k.created_at,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct OrgData<'a> {
        id: &'a OrgId,
        name: &'a str,
        slug: &'a str,
        logo: &'a Option<String>,
        metadata: &'a Option<String>,
        created_at: DateTime<Utc>,
    }

    pub(crate) fn org(o: &Organization) -> OrgData<'_> {
        OrgData {
            id: &o.id,
            name: &o.name,
            slug: &o.slug,
            logo: &o.logo,
            metadata: &o.metadata,
            created_at: o.created_at,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct MemberData<'a> {
        id: &'a MemberId,
        organization_id: &'a OrgId,
        user_id: &'a UserId,
        role: &'a str,
        team_id: &'a Option<TeamId>,
        created_at: DateTime<Utc>,
    }

    pub(crate) fn member(m: &Member) -> MemberData<'_> {
        MemberData {
            id: &m.id,
            organization_id: &m.organization_id,
            user_id: &m.user_id,
            role: &m.role,
            team_id: &m.team_id,
            created_at: m.created_at,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct InvitationData<'a> {
        id: &'a InvitationId,
        organization_id: &'a OrgId,
        email: &'a str,
        role: &'a str,
        status: &'static str,
        team_id: &'a Option<TeamId>,
        inviter_id: &'a UserId,
        expires_at: DateTime<Utc>,
    }

    pub(crate) fn invitation(i: &Invitation) -> InvitationData<'_> {
        InvitationData {
            id: &i.id,
            organization_id: &i.organization_id,
            email: &i.email,
            role: &i.role,
            status: i.status.as_str(),
            team_id: &i.team_id,
            inviter_id: &i.inviter_id,
            expires_at: i.expires_at,
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct TeamData<'a> {
        id: &'a TeamId,
        name: &'a str,
        organization_id: &'a OrgId,
        created_at: DateTime<Utc>,
    }

    pub(crate) fn team(t: &Team) -> TeamData<'_> {
        TeamData {
            id: &t.id,
            name: &t.name,
            organization_id: &t.organization_id,
            created_at: t.created_at,
        }
    }
}
