//! Gatehouse storage: the entities, one async trait per aggregate, and the backends.
//!
//! Every method maps to a few keyed queries so that the same trait can be served by the embedded
//! SQLite backend and by a partitioned store (ScyllaDB) without cross-partition transactions.
//! Invariants that must hold across server processes (unique email/slug/account, single-use
//! tokens, no resurrection of a deleted session) are enforced here, by the store, and pinned by
//! the contract suite in `tests/contract/`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod audit;
mod clock;
mod entities;
pub mod events;
pub mod failpoint;
mod ids;
pub mod observe;
mod query;
pub mod rate_limit;
pub mod scylla;
pub mod sqlite;
pub mod transfer;
pub mod webhooks;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub use audit::{AuditEvent, AuditOutcome, AuditQuery, AuditStore};
pub use clock::{Clock, ManualClock, SystemClock};
pub use entities::*;
pub use events::{Delivery, Event, EventStore, Json, Lease, Payload, Read, Topic};
pub use ids::*;
pub use query::{FieldValue, FilterOp, SearchOp, UserField, UserList, UserQuery};
pub use rate_limit::{stored_key, MemoryRateLimits, RateLimitStore, WindowCount};
pub use webhooks::{Attempt, DeliveryStatus, Webhook, WebhookDelivery, WebhookStore, GLOBAL_SCOPE};

/// The one error type of every storage trait (`Clone`: one failed write that served several
/// callers answers each of them).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The record a write or a required read refers to does not exist (any more).
    #[error("not found")]
    NotFound,
    /// A uniqueness claim lost: the email, slug, account or identifier is taken.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    /// A conditional write saw another state than expected (e.g. an invitation no longer pending).
    #[error("concurrent modification")]
    ConcurrentModification,
    /// The backend cannot be reached or is overloaded; the caller may retry.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Anything else: a bug or corrupted data. Logged, never shown to clients.
    #[error("storage internal error: {0}")]
    Internal(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// What a compare-and-set that changed nothing means: the record moved on to another
    /// version (`still_there`), or it is gone.
    pub fn missed(still_there: bool) -> Self {
        if still_there {
            Self::ConcurrentModification
        } else {
            Self::NotFound
        }
    }
}

/// Users, keyed by id, with a unique (lowercased) email.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Creates the user with its first account (e.g. the password credential):
    /// `Conflict("email")` when the email is taken, `Conflict("account")` when the account is
    /// linked already. Claims (email, then account) come first and the user row last, so the
    /// user is visible only once everything it needs is written; a failed create releases its
    /// claims, and a crash may leave a claim pointing at no user, which reads as absent and a
    /// later claim takes over.
    async fn create_user(
        &self,
        user: &User,
        account: Option<&Account>,
        events: &[Event],
    ) -> StoreResult<()>;
    async fn get_user(&self, id: &UserId) -> StoreResult<Option<User>>;
    /// The users of `ids` that exist, in no particular order (a list's members, at once).
    async fn get_users(&self, ids: &[UserId]) -> StoreResult<Vec<User>>;
    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<User>>;
    /// Replaces the mutable fields of an existing user, only if it is at version
    /// `user.version - 1` (`ConcurrentModification` otherwise); `NotFound` if it is gone,
    /// `Conflict("email")` if a changed email is taken.
    async fn update_user(&self, user: &User, events: &[Event]) -> StoreResult<()>;
    /// Deletes the user (`NotFound` if it did not exist): from then on it reads as absent, and
    /// so does everything that belongs to it — sessions, accounts, memberships, team
    /// memberships, and verification values whose value is the user id (pending reset and
    /// delete tokens) — which are removed before the call returns, idempotently (through each
    /// organization's version for memberships). After a crash in between, rows of a user that
    /// is gone are never served: readers check the user (a session of a deleted user does not
    /// resolve).
    async fn delete_user(&self, id: &UserId, events: &[Event]) -> StoreResult<()>;
}

/// Linked accounts (the password credential and social providers).
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// `Conflict("account")` when (provider_id, account_id) is linked already. Moves the user's
    /// version.
    async fn create_account(&self, account: &Account, events: &[Event]) -> StoreResult<()>;
    async fn list_accounts(&self, user_id: &UserId) -> StoreResult<Vec<Account>>;
    async fn get_account_by_provider(
        &self,
        provider_id: &str,
        account_id: &str,
    ) -> StoreResult<Option<Account>>;
    /// Replaces the mutable fields (tokens, password, scope); `NotFound` if it is gone.
    async fn update_account(&self, account: &Account, events: &[Event]) -> StoreResult<()>;
    /// Sets the account's password to `account.password` only if the stored one is still
    /// `previous` (the one the caller checked): a compare-and-set that holds across processes.
    /// `ConcurrentModification` when it changed meanwhile, `NotFound` when the account is gone.
    async fn replace_password(
        &self,
        account: &Account,
        previous: &str,
        events: &[Event],
    ) -> StoreResult<()>;
    /// Unlinks an account of `user`, only if the user is at version `expected` (the version the
    /// "not the last account" decision was made on): `ConcurrentModification` otherwise.
    async fn delete_account(
        &self,
        user: &UserId,
        id: &AccountId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()>;
}

/// Sessions, keyed by token, listed per user.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// `Conflict("token")` if the token exists (never expected: tokens are random).
    async fn create_session(&self, session: &Session, events: &[Event]) -> StoreResult<()>;
    async fn get_session(&self, token: &str) -> StoreResult<Option<Session>>;
    /// The session and its user (`None`: the user is gone), in one round trip where the
    /// backend can: what every authenticated request reads.
    async fn get_session_with_user(
        &self,
        token: &str,
    ) -> StoreResult<Option<(Session, Option<User>)>>;
    async fn list_sessions(&self, user_id: &UserId) -> StoreResult<Vec<Session>>;
    /// Updates an existing session only: a session deleted meanwhile is never written back
    /// (`NotFound`), so a revocation cannot be undone by a concurrent refresh.
    async fn update_session(&self, session: &Session) -> StoreResult<()>;
    /// Returns whether a session was deleted.
    async fn delete_session(&self, token: &str, events: &[Event]) -> StoreResult<bool>;
    /// Deletes every session of the user that exists when the call starts, except `keep` (if
    /// given); returns how many. One created concurrently may survive it.
    async fn delete_user_sessions(
        &self,
        user_id: &UserId,
        keep: Option<&str>,
        events: &[Event],
    ) -> StoreResult<u64>;
    /// Removes sessions that expired before `now`; returns how many. A backend that expires
    /// rows itself (TTL, as ScyllaDB) does nothing here. Until then a read may return an
    /// expired session: callers check `expires_at`.
    async fn purge_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// Single-use verification values (reset tokens, delete tokens, OAuth state…).
#[async_trait]
pub trait VerificationStore: Send + Sync {
    /// `Conflict("identifier")` when the identifier exists.
    async fn create_verification(&self, v: &Verification, events: &[Event]) -> StoreResult<()>;
    async fn get_verification(&self, identifier: &str) -> StoreResult<Option<Verification>>;
    /// Atomically deletes and returns the value: of N concurrent consumers exactly one gets it.
    async fn consume_verification(&self, identifier: &str) -> StoreResult<Option<Verification>>;
    async fn delete_verification(&self, identifier: &str) -> StoreResult<bool>;
    /// Deletes every value of one owner (`value`, a user id) whose identifier starts with
    /// `prefix` (e.g. all of a user's pending `reset-password:` tokens); returns how many. A
    /// partitioned backend keeps a lookup by value for it.
    async fn delete_verifications_of(&self, value: &str, prefix: &str) -> StoreResult<u64>;
    /// As [`SessionStore::purge_expired_sessions`], for single-use values.
    async fn purge_expired_verifications(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// One change inside an organization. Changes are applied only through
/// [`OrganizationStore::change_organization`], under the organization's version, so the
/// invariants an organization actor checks (last owner, membership limit, role in use, last
/// team) hold against every other process's changes too. The changes of one unit apply in
/// order, each seeing the ones before it (a team created, then a member added to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrgChange {
    /// `Conflict("member")` when the user is a member already. Moves the user's version.
    AddMember(Member),
    SetMemberRole {
        member: MemberId,
        role: String,
    },
    /// Also removes the member from the organization's teams, and the organization (with its
    /// team) from the removed user's sessions that had it active.
    RemoveMember(MemberId),
    Invite(Invitation),
    /// Only if the invitation is still in `from`: `Conflict("invitation")` otherwise.
    TransitionInvitation {
        id: InvitationId,
        from: InvitationStatus,
        to: InvitationStatus,
    },
    /// `Conflict("team")` when the organization has a team of that name.
    CreateTeam(Team),
    UpdateTeam(Team),
    /// Members and sessions that pointed at the team lose it.
    DeleteTeam(TeamId),
    /// `Conflict("team member")` when the user is in the team already.
    AddTeamMember(TeamMember),
    /// `NotFound` when the user is not in the team.
    RemoveTeamMember {
        team: TeamId,
        user: UserId,
    },
    /// `Conflict("role")` when the organization has a role of that name.
    CreateRole(OrganizationRole),
    UpdateRole(OrganizationRole),
    DeleteRole(RoleId),
}

/// Organizations: the row every change inside one is decided on (see [`OrgChange`]).
#[async_trait]
pub trait OrganizationStore: Send + Sync {
    /// Claims the slug first (`Conflict("slug")` when taken), then writes the organization (at
    /// version 0, with its counters as given) with its first member; the organization is visible
    /// once the call returns. With `creator_version`, only if the member's user is still at that
    /// version (the per-user organization limit was decided on it): `ConcurrentModification`
    /// otherwise, and nothing is visible. The member's user version moves. A crash between the
    /// claim and the row may leave a slug claim pointing at no organization; it reads as absent
    /// and a later create takes it over.
    async fn create_organization(
        &self,
        org: &Organization,
        owner: &Member,
        creator_version: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()>;
    async fn get_organization(&self, id: &OrgId) -> StoreResult<Option<Organization>>;
    async fn get_organization_by_slug(&self, slug: &str) -> StoreResult<Option<Organization>>;
    /// Writes `next` as the organization's row (settings, counters, roles version) and applies
    /// `changes`, as one unit, only if the stored row is at version `next.version - 1`:
    /// `ConcurrentModification` when it moved on (reload and decide again), `NotFound` when
    /// the organization is gone, `Conflict("slug")` when a new slug is taken, and a change's own
    /// error when one cannot apply (nothing is written then). What other keys point at (the
    /// user's list of organizations, invitations by email, sessions' active organization) is
    /// brought in line after the unit, idempotently, before the call returns.
    async fn change_organization(
        &self,
        next: &Organization,
        changes: &[OrgChange],
        events: &[Event],
    ) -> StoreResult<()>;
    /// Deletes the organization, only if it is at version `expected`
    /// (`ConcurrentModification` otherwise): from then on it and everything in it (members,
    /// invitations, teams, roles) read as absent and it cannot change. Its slug is freed and
    /// what pointed at it (lookups, members' sessions' active organization) is removed before
    /// the call returns; after a crash in between, lookups that point at it read as nothing.
    async fn delete_organization(
        &self,
        id: &OrgId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()>;
    async fn list_user_organizations(&self, user_id: &UserId) -> StoreResult<Vec<Organization>>;
    /// How many organizations the user is a member of, counting a creation or join by another
    /// process that is under way (so a decision made on the user's version, as the
    /// per-user organization limit is, sees it). May count one that is about to fail.
    async fn count_user_organizations(&self, user: &UserId) -> StoreResult<u64>;
}

/// One page of a list, in the list's order, and the cursor of the next page (`None`: the last
/// one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

impl<T> Page<T> {
    /// A page from up to `limit + 1` items read in order: the extra one only says that there
    /// is a next page, which starts after the cursor of the page's last item.
    pub(crate) fn from_overfetch(
        mut items: Vec<T>,
        limit: u32,
        cursor: impl Fn(&T) -> String,
    ) -> Self {
        let next = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(cursor)
        } else {
            None
        };
        Page { items, next }
    }
}

/// How many rows a store reads per page when a caller wants more than one page.
pub const PAGE_SIZE: u32 = 500;

/// The members of an organization (written through [`OrgChange`]s).
#[async_trait]
pub trait MemberStore: Send + Sync {
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>>;
    /// A member of `org` by its id (an id of another organization is not found).
    async fn get_member_by_id(&self, org: &OrgId, id: &MemberId) -> StoreResult<Option<Member>>;
    /// Up to `limit` members, oldest first (by creation time, then id), after the cursor a
    /// previous page returned (`None`: from the start). Members added meanwhile never make a
    /// page repeat or skip one that existed when the first page was read.
    async fn list_members(
        &self,
        org: &OrgId,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Member>>;
    async fn count_members(&self, org: &OrgId) -> StoreResult<u64>;
    /// What an organization's pages show, read at once (one round trip where the backend
    /// can): `None` when there is no such organization.
    async fn organization_view(
        &self,
        org: &OrgId,
        q: &ViewQuery,
    ) -> StoreResult<Option<OrganizationView>>;

    /// Every member, oldest first.
    async fn list_all_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        self.list_members_window(org, 0, u32::MAX).await
    }

    /// `limit` members after the first `offset`, oldest first: `limit`/`offset` paging (as the
    /// HTTP API has it) over cursor pages.
    async fn list_members_window(
        &self,
        org: &OrgId,
        offset: u32,
        limit: u32,
    ) -> StoreResult<Vec<Member>> {
        let (mut skip, mut out, mut after) = (offset as usize, Vec::new(), None::<String>);
        while out.len() < limit as usize {
            let want = (skip + limit as usize - out.len()).min(PAGE_SIZE as usize) as u32;
            let page = self.list_members(org, after.as_deref(), want).await?;
            let n = page.items.len();
            let drop = skip.min(n);
            skip -= drop;
            let room = limit as usize - out.len();
            out.extend(page.items.into_iter().skip(drop).take(room));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        Ok(out)
    }
}

/// What [`MemberStore::organization_view`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewQuery {
    /// Whose membership is looked up ([`OrganizationView::viewer`]).
    pub viewer: UserId,
    /// The window of members, oldest first: `limit` after the first `offset`.
    pub offset: u32,
    pub limit: u32,
    /// Invitations and teams too.
    pub details: bool,
}

/// An organization as its pages show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationView {
    pub organization: Organization,
    /// The viewer's own membership (`None`: not a member).
    pub viewer: Option<Member>,
    /// The window of members with their users (`None`: a user gone meanwhile).
    pub members: Vec<(Member, Option<User>)>,
    pub total_members: u64,
    /// With `details`: every invitation, oldest first.
    pub invitations: Vec<Invitation>,
    /// With `details`: every team, oldest first, with how many members it has.
    pub teams: Vec<(Team, u32)>,
}

/// Each member with its user (`None`: not among `users`).
pub fn with_users(members: Vec<Member>, users: Vec<User>) -> Vec<(Member, Option<User>)> {
    let mut users: std::collections::HashMap<UserId, User> =
        users.into_iter().map(|u| (u.id.clone(), u)).collect();
    members
        .into_iter()
        .map(|m| {
            let u = users.remove(&m.user_id);
            (m, u)
        })
        .collect()
}

/// [`MemberStore::organization_view`] from single reads, for a backend without a cheaper way:
/// the reads that do not depend on each other run side by side.
pub async fn compose_organization_view<S>(
    s: &S,
    org: &OrgId,
    q: &ViewQuery,
) -> StoreResult<Option<OrganizationView>>
where
    S: OrganizationStore + MemberStore + UserStore + InvitationStore + TeamStore + ?Sized,
{
    let (organization, viewer, members, total) = futures::try_join!(
        s.get_organization(org),
        s.get_member(org, &q.viewer),
        s.list_members_window(org, q.offset, q.limit),
        s.count_members(org),
    )?;
    let Some(organization) = organization else {
        return Ok(None);
    };
    let ids: Vec<UserId> = members.iter().map(|m| m.user_id.clone()).collect();
    let details = async {
        if !q.details {
            return Ok((Vec::new(), Vec::new()));
        }
        let (invitations, teams) = futures::try_join!(s.list_invitations(org), s.list_teams(org))?;
        let counts =
            futures::future::try_join_all(teams.iter().map(|t| s.list_team_members(t))).await?;
        let teams = teams
            .into_iter()
            .zip(counts)
            .map(|(t, m)| (t, m.len() as u32))
            .collect();
        StoreResult::Ok((invitations, teams))
    };
    let (users, (invitations, teams)) = futures::try_join!(s.get_users(&ids), details)?;
    Ok(Some(OrganizationView {
        organization,
        viewer,
        members: with_users(members, users),
        total_members: total,
        invitations,
        teams,
    }))
}

/// The cursor of the page that follows `m` (creation time in milliseconds, then id).
pub(crate) fn member_cursor(m: &Member) -> String {
    format!("{}.{}", m.created_at.timestamp_millis(), m.id.0)
}

/// The (milliseconds, id) a [`member_cursor`] holds.
pub(crate) fn parse_member_cursor(cursor: &str) -> StoreResult<(i64, String)> {
    cursor
        .split_once('.')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_owned())))
        .ok_or_else(|| StoreError::Internal(format!("not a member cursor: {cursor:?}")))
}

/// The page after `after` of members already in cursor order.
pub(crate) fn page_of_members(
    sorted: Vec<Member>,
    after: Option<&str>,
    limit: u32,
) -> StoreResult<Page<Member>> {
    let from = match after {
        None => 0,
        Some(c) => {
            let (ms, id) = parse_member_cursor(c)?;
            sorted.partition_point(|m| {
                (m.created_at.timestamp_millis(), m.id.0.as_str()) <= (ms, id.as_str())
            })
        }
    };
    let items = sorted
        .into_iter()
        .skip(from)
        .take(limit as usize + 1)
        .collect();
    Ok(Page::from_overfetch(items, limit, member_cursor))
}

/// Invitations (written through [`OrgChange`]s).
#[async_trait]
pub trait InvitationStore: Send + Sync {
    /// By id alone (the accept and reject routes only have that): a partitioned backend keeps a
    /// lookup from the id to its organization.
    async fn get_invitation(&self, id: &InvitationId) -> StoreResult<Option<Invitation>>;
    async fn list_invitations(&self, org: &OrgId) -> StoreResult<Vec<Invitation>>;
    async fn list_invitations_by_email(&self, email: &str) -> StoreResult<Vec<Invitation>>;
}

/// Teams and their members (written through [`OrgChange`]s).
#[async_trait]
pub trait TeamStore: Send + Sync {
    /// By id alone (routes name a team by its id): a partitioned backend keeps a lookup from
    /// the id to its organization.
    async fn get_team(&self, id: &TeamId) -> StoreResult<Option<Team>>;
    async fn list_teams(&self, org: &OrgId) -> StoreResult<Vec<Team>>;
    async fn list_team_members(&self, team: &Team) -> StoreResult<Vec<TeamMember>>;
    async fn list_user_teams(&self, user: &UserId) -> StoreResult<Vec<Team>>;
}

/// Custom roles of organizations (written through [`OrgChange`]s).
#[async_trait]
pub trait RoleStore: Send + Sync {
    async fn get_role(&self, org: &OrgId, name: &str) -> StoreResult<Option<OrganizationRole>>;
    async fn list_roles(&self, org: &OrgId) -> StoreResult<Vec<OrganizationRole>>;
}

/// Second factors (two-factor plugin), one per user.
#[async_trait]
pub trait TwoFactorStore: Send + Sync {
    async fn get_two_factor(&self, user: &UserId) -> StoreResult<Option<TwoFactor>>;
    /// Writes `tf`: with `expected` `None` a new one (`Conflict("two factor")` when the user
    /// has one), else only over the stored one at version `expected` (`ConcurrentModification`
    /// when it moved, `NotFound` when there is none). `tf.version` is stored as given.
    async fn put_two_factor(
        &self,
        tf: &TwoFactor,
        expected: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()>;
    /// Removes the user's second factor; `false` when there was none.
    async fn delete_two_factor(&self, user: &UserId, events: &[Event]) -> StoreResult<bool>;
    /// A sign-in's second step: the factor as the code's use left it (over the stored one at
    /// the given version, as [`put_two_factor`](Self::put_two_factor); `None` for a code by
    /// mail when the user has no factor row), the challenge taken (the verification
    /// `challenge`, whose value must be the session's user), the new session and `events` —
    /// on SQLite one transaction, on ScyllaDB the challenge first (put back when the factor's
    /// write fails). Errors: the factor moved (`ConcurrentModification`) or is gone
    /// (`NotFound`, also when the user is), the challenge gone or another user's
    /// (`Conflict("challenge")`); then nothing of it was written (a code is never spent on a
    /// challenge found gone).
    async fn finish_second_step(&self, step: &SecondStep<'_>) -> StoreResult<()>;
}

/// What [`TwoFactorStore::finish_second_step`] writes.
pub struct SecondStep<'a> {
    /// The factor after the code's use, and the version it was read at.
    pub factor: Option<(&'a TwoFactor, u64)>,
    /// The challenge's verification identifier.
    pub challenge: &'a str,
    pub session: &'a Session,
    pub events: &'a [Event],
}

/// Passkeys (passkey plugin): WebAuthn credentials, several per user, each credential id
/// registered once.
#[async_trait]
pub trait PasskeyStore: Send + Sync {
    /// A new passkey: `Conflict("passkey")` when its credential is registered already (to
    /// anyone), `NotFound` when the user is gone.
    async fn create_passkey(&self, p: &Passkey, events: &[Event]) -> StoreResult<()>;
    /// The user's passkeys, oldest first.
    async fn list_passkeys(&self, user: &UserId) -> StoreResult<Vec<Passkey>>;
    async fn get_passkey_by_credential(&self, credential_id: &str) -> StoreResult<Option<Passkey>>;
    /// Writes `p` over the stored one at version `expected` (`ConcurrentModification` when it
    /// moved, `NotFound` when it is gone). `p.version` is stored as given.
    async fn update_passkey(&self, p: &Passkey, expected: u64, events: &[Event])
        -> StoreResult<()>;
    /// Removes a passkey of `user`, decided on the user's version `expected` (which it moves,
    /// as unlinking an account does: "not the last way to sign in" holds across processes):
    /// `ConcurrentModification` when it moved, `NotFound` when there is no such passkey.
    async fn delete_passkey(
        &self,
        user: &UserId,
        id: &PasskeyId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()>;
}

/// API keys (api-key plugin), found by the hash of the key and listed by what owns them.
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// A new key: `Conflict("api key")` when its id or hash is stored already, `NotFound`
    /// when its user is gone.
    async fn create_api_key(&self, k: &ApiKey, events: &[Event]) -> StoreResult<()>;
    async fn get_api_key(&self, id: &ApiKeyId) -> StoreResult<Option<ApiKey>>;
    /// The key whose SHA-256 is `key_hash`.
    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<ApiKey>>;
    /// The keys of `reference` (an organization's id: its keys; a user's id: that user's own
    /// keys), oldest first.
    async fn list_api_keys(&self, reference: &str) -> StoreResult<Vec<ApiKey>>;
    /// Writes `k` over the stored one at version `expected` (`ConcurrentModification` when it
    /// moved, `NotFound` when it is gone). `k.version` is stored as given.
    async fn update_api_key(&self, k: &ApiKey, expected: u64, events: &[Event]) -> StoreResult<()>;
    /// Removes a key; `false` when there was none.
    async fn delete_api_key(&self, id: &ApiKeyId, events: &[Event]) -> StoreResult<bool>;
    /// Removes every key expired by `now`; how many. Housekeeping, not a request path (the
    /// partitioned backend scans for it).
    async fn delete_expired_api_keys(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// Signing key pairs (JWT/JWKS).
#[async_trait]
pub trait KeyPairStore: Send + Sync {
    async fn create_key_pair(&self, kp: &KeyPair) -> StoreResult<()>;
    async fn list_key_pairs(&self) -> StoreResult<Vec<KeyPair>>;
}

/// Whole-store iteration, for export and administration: never on a request path (a
/// partitioned backend scans every node for it). Pages come in the backend's own stable order.
#[async_trait]
pub trait ScanStore: Send + Sync {
    async fn scan_users(&self, after: Option<&str>, limit: u32) -> StoreResult<Page<User>>;
    async fn scan_organizations(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Organization>>;
    /// The single-use values (pending reset, verification, email-change and sign-in links and
    /// codes), expired ones included where the backend still holds them.
    async fn scan_verifications(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Verification>>;

    /// The admin's listing of users (see [`UserQuery`]). By default every user is scanned and
    /// the query applied in memory; a backend that can do better answers it itself.
    async fn list_users(&self, q: &UserQuery) -> StoreResult<UserList> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.scan_users(after.as_deref(), 1000).await?;
            all.extend(page.items.into_iter().filter(|u| q.matches(u)));
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        Ok(q.apply(all))
    }
}

/// Whether the backend can serve: reachable, at this build's schema, accepting writes.
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// `Ok` when the store is reachable, at this build's schema version and (where the
    /// backend can tell cheaply) writable; else an error saying which.
    async fn check_health(&self) -> StoreResult<()>;
}

/// Everything the server needs from a backend.
pub trait Store:
    HealthStore
    + UserStore
    + AccountStore
    + SessionStore
    + VerificationStore
    + OrganizationStore
    + MemberStore
    + InvitationStore
    + TeamStore
    + RoleStore
    + KeyPairStore
    + TwoFactorStore
    + PasskeyStore
    + ApiKeyStore
    + WebhookStore
    + ScanStore
    + AuditStore
    + EventStore
    + RateLimitStore
{
}
impl<T> Store for T where
    T: HealthStore
        + UserStore
        + AccountStore
        + SessionStore
        + VerificationStore
        + OrganizationStore
        + MemberStore
        + InvitationStore
        + TeamStore
        + RoleStore
        + KeyPairStore
        + TwoFactorStore
        + PasskeyStore
        + ApiKeyStore
        + WebhookStore
        + ScanStore
        + AuditStore
        + EventStore
        + RateLimitStore
{
}

pub type DynStore = Arc<dyn Store>;
