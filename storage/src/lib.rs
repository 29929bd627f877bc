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

mod clock;
mod entities;
mod ids;
pub mod sqlite;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub use clock::{Clock, ManualClock, SystemClock};
pub use entities::*;
pub use ids::*;

/// The one error type of every storage trait.
#[derive(Debug, thiserror::Error)]
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

/// Users, keyed by id, with a unique (lowercased) email.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Creates the user, and with it its first account (e.g. the password credential), as one
    /// unit: either both exist afterwards or neither. `Conflict("email")` when the email is taken.
    async fn create_user(&self, user: &User, account: Option<&Account>) -> StoreResult<()>;
    async fn get_user(&self, id: &UserId) -> StoreResult<Option<User>>;
    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<User>>;
    /// Replaces the mutable fields of an existing user; `NotFound` if it is gone,
    /// `Conflict("email")` if a changed email is taken.
    async fn update_user(&self, user: &User) -> StoreResult<()>;
    /// Deletes the user and everything that belongs to it: sessions, accounts, memberships,
    /// team memberships, and verification values whose value is the user id (pending reset
    /// and delete tokens). `NotFound` if it did not exist.
    async fn delete_user(&self, id: &UserId) -> StoreResult<()>;
}

/// Linked accounts (the password credential and social providers).
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// `Conflict("account")` when (provider_id, account_id) is linked already.
    async fn create_account(&self, account: &Account) -> StoreResult<()>;
    async fn list_accounts(&self, user_id: &UserId) -> StoreResult<Vec<Account>>;
    async fn get_account_by_provider(
        &self,
        provider_id: &str,
        account_id: &str,
    ) -> StoreResult<Option<Account>>;
    /// Replaces the mutable fields (tokens, password, scope); `NotFound` if it is gone.
    async fn update_account(&self, account: &Account) -> StoreResult<()>;
    async fn delete_account(&self, id: &AccountId) -> StoreResult<()>;
}

/// Sessions, keyed by token, listed per user.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// `Conflict("token")` if the token exists (never expected: tokens are random).
    async fn create_session(&self, session: &Session) -> StoreResult<()>;
    async fn get_session(&self, token: &str) -> StoreResult<Option<Session>>;
    async fn list_sessions(&self, user_id: &UserId) -> StoreResult<Vec<Session>>;
    /// Updates an existing session only: a session deleted meanwhile is never written back
    /// (`NotFound`), so a revocation cannot be undone by a concurrent refresh.
    async fn update_session(&self, session: &Session) -> StoreResult<()>;
    /// Returns whether a session was deleted.
    async fn delete_session(&self, token: &str) -> StoreResult<bool>;
    /// Deletes every session of the user except `keep` (if given); returns how many.
    async fn delete_user_sessions(&self, user_id: &UserId, keep: Option<&str>) -> StoreResult<u64>;
    /// Removes sessions that expired before `now` (housekeeping; a TTL does it in ScyllaDB).
    async fn purge_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// Single-use verification values (reset tokens, delete tokens, OAuth state…).
#[async_trait]
pub trait VerificationStore: Send + Sync {
    /// `Conflict("identifier")` when the identifier exists.
    async fn create_verification(&self, v: &Verification) -> StoreResult<()>;
    async fn get_verification(&self, identifier: &str) -> StoreResult<Option<Verification>>;
    /// Atomically deletes and returns the value: of N concurrent consumers exactly one gets it.
    async fn consume_verification(&self, identifier: &str) -> StoreResult<Option<Verification>>;
    async fn delete_verification(&self, identifier: &str) -> StoreResult<bool>;
    async fn purge_expired_verifications(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// Organizations with their members, invitations, teams and custom roles.
#[async_trait]
pub trait OrganizationStore: Send + Sync {
    /// Creates the organization with its first member; `Conflict("slug")` when taken.
    async fn create_organization(&self, org: &Organization, owner: &Member) -> StoreResult<()>;
    async fn get_organization(&self, id: &OrgId) -> StoreResult<Option<Organization>>;
    async fn get_organization_by_slug(&self, slug: &str) -> StoreResult<Option<Organization>>;
    /// `NotFound` if gone, `Conflict("slug")` if a new slug is taken.
    async fn update_organization(&self, org: &Organization) -> StoreResult<()>;
    /// Deletes the organization with its members, invitations, teams and roles.
    async fn delete_organization(&self, id: &OrgId) -> StoreResult<()>;
    async fn list_user_organizations(&self, user_id: &UserId) -> StoreResult<Vec<Organization>>;

    /// `Conflict("member")` when the user is a member already.
    async fn create_member(&self, member: &Member) -> StoreResult<()>;
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>>;
    async fn get_member_by_id(&self, id: &MemberId) -> StoreResult<Option<Member>>;
    async fn list_members(&self, org: &OrgId, limit: u32, offset: u32) -> StoreResult<Vec<Member>>;
    async fn count_members(&self, org: &OrgId) -> StoreResult<u64>;
    async fn update_member_role(&self, id: &MemberId, role: &str) -> StoreResult<()>;
    async fn delete_member(&self, id: &MemberId) -> StoreResult<()>;

    async fn create_invitation(&self, inv: &Invitation) -> StoreResult<()>;
    async fn get_invitation(&self, id: &InvitationId) -> StoreResult<Option<Invitation>>;
    async fn list_invitations(&self, org: &OrgId) -> StoreResult<Vec<Invitation>>;
    async fn list_invitations_by_email(&self, email: &str) -> StoreResult<Vec<Invitation>>;
    /// Moves the invitation from `from` to `to` only if it is still in `from`:
    /// `ConcurrentModification` otherwise, `NotFound` if it does not exist.
    async fn transition_invitation(
        &self,
        id: &InvitationId,
        from: InvitationStatus,
        to: InvitationStatus,
    ) -> StoreResult<()>;

    /// `Conflict("team")` when the organization has a team of that name.
    async fn create_team(&self, team: &Team) -> StoreResult<()>;
    async fn get_team(&self, id: &TeamId) -> StoreResult<Option<Team>>;
    async fn list_teams(&self, org: &OrgId) -> StoreResult<Vec<Team>>;
    async fn update_team(&self, team: &Team) -> StoreResult<()>;
    async fn delete_team(&self, id: &TeamId) -> StoreResult<()>;
    async fn add_team_member(&self, tm: &TeamMember) -> StoreResult<()>;
    async fn remove_team_member(&self, team: &TeamId, user: &UserId) -> StoreResult<bool>;
    async fn list_team_members(&self, team: &TeamId) -> StoreResult<Vec<TeamMember>>;
    async fn list_user_teams(&self, user: &UserId) -> StoreResult<Vec<Team>>;

    /// `Conflict("role")` when the organization has a role of that name.
    async fn create_role(&self, role: &OrganizationRole) -> StoreResult<()>;
    async fn get_role(&self, org: &OrgId, name: &str) -> StoreResult<Option<OrganizationRole>>;
    async fn list_roles(&self, org: &OrgId) -> StoreResult<Vec<OrganizationRole>>;
    async fn update_role(&self, role: &OrganizationRole) -> StoreResult<()>;
    async fn delete_role(&self, id: &RoleId) -> StoreResult<()>;
}

/// Signing key pairs (JWT/JWKS).
#[async_trait]
pub trait KeyPairStore: Send + Sync {
    async fn create_key_pair(&self, kp: &KeyPair) -> StoreResult<()>;
    async fn list_key_pairs(&self) -> StoreResult<Vec<KeyPair>>;
}

/// Everything the server needs from a backend.
pub trait Store:
    UserStore + AccountStore + SessionStore + VerificationStore + OrganizationStore + KeyPairStore
{
}
impl<T> Store for T where
    T: UserStore
        + AccountStore
        + SessionStore
        + VerificationStore
        + OrganizationStore
        + KeyPairStore
{
}

pub type DynStore = Arc<dyn Store>;
