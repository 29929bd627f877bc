//! The records of spec §3, plus the admin fields. Storage records, never HTTP DTOs.
use crate::ids::*;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The provider id of the email + password credential.
pub const CREDENTIAL_PROVIDER: &str = "credential";

/// Serializable so a signed cookie cache can carry it (never the account or its secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: UserId,
    /// Always stored lowercased.
    pub email: String,
    pub email_verified: bool,
    pub name: String,
    pub image: Option<String>,
    /// Admin plugin: global role(s), comma-separated; `None` means the default `user`.
    pub role: Option<String>,
    pub banned: bool,
    pub ban_reason: Option<String>,
    pub ban_expires: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Clone, PartialEq, Eq)]
pub struct Account {
    pub id: AccountId,
    pub user_id: UserId,
    pub provider_id: String,
    pub account_id: String,
    /// argon2id PHC string for the credential account.
    pub password: Option<String>,
    pub access_token: Option<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub access_token_expires_at: Option<DateTime<Utc>>,
    pub refresh_token_expires_at: Option<DateTime<Utc>>,
    /// Comma-separated scopes.
    pub scope: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

// Secrets (password hash, tokens) never reach logs through `Debug`.
impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("provider_id", &self.provider_id)
            .field("account_id", &self.account_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    pub token: String,
    pub user_id: UserId,
    pub expires_at: DateTime<Utc>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub active_organization_id: Option<OrgId>,
    pub active_team_id: Option<TeamId>,
    /// Admin plugin: the admin who impersonates the user through this session.
    pub impersonated_by: Option<UserId>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Verification {
    pub id: VerificationId,
    /// e.g. `reset-password:{token}`, `delete-account-{token}`.
    pub identifier: String,
    pub value: String,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl std::fmt::Debug for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verification")
            .field("id", &self.id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Organization {
    pub id: OrgId,
    pub name: String,
    pub slug: String,
    pub logo: Option<String>,
    /// A JSON object, stored as text.
    pub metadata: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: MemberId,
    pub organization_id: OrgId,
    pub user_id: UserId,
    /// One or several comma-separated roles.
    pub role: String,
    pub team_id: Option<TeamId>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvitationStatus {
    Pending,
    Accepted,
    Rejected,
    Canceled,
}

impl InvitationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Rejected => "rejected",
            Self::Canceled => "canceled",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "accepted" => Self::Accepted,
            "rejected" => Self::Rejected,
            "canceled" => Self::Canceled,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    pub id: InvitationId,
    pub organization_id: OrgId,
    /// Lowercased.
    pub email: String,
    pub role: String,
    pub status: InvitationStatus,
    pub team_id: Option<TeamId>,
    pub inviter_id: UserId,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub id: TeamId,
    pub name: String,
    pub organization_id: OrgId,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamMember {
    pub id: TeamMemberId,
    pub team_id: TeamId,
    pub user_id: UserId,
    pub created_at: DateTime<Utc>,
}

/// A custom role of one organization: `permission` is a JSON object
/// `{resource: [action, …]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationRole {
    pub id: RoleId,
    pub organization_id: OrgId,
    pub role: String,
    pub permission: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Clone, PartialEq, Eq)]
pub struct KeyPair {
    pub id: KeyPairId,
    pub public_key: String,
    /// Encrypted at rest by the caller.
    pub private_key: String,
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("id", &self.id)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}
