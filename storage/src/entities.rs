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
    /// Bumped by every change of the user's row, accounts and memberships; writes that decide
    /// on the user (its profile, unlinking the last account, creating one more organization)
    /// compare-and-set it, so decisions made in several processes cannot interleave.
    #[serde(default)]
    pub version: u64,
    /// Two-factor plugin: a confirmed second factor is asked at sign-in.
    #[serde(default)]
    pub two_factor_enabled: bool,
}

impl User {
    /// A new user (unverified, default role, not banned); `email` is lowercased.
    pub fn new(email: &str, name: String, image: Option<String>, now: DateTime<Utc>) -> Self {
        Self {
            id: UserId::generate(),
            email: email.to_lowercase(),
            email_verified: false,
            name,
            image,
            role: None,
            banned: false,
            ban_reason: None,
            ban_expires: None,
            created_at: now,
            updated_at: now,
            version: 0,
            two_factor_enabled: false,
        }
    }
}

/// A user's second factor (two-factor plugin), at most one per user: the TOTP secret, sealed
/// by the server, and the unused backup codes, hashed. Whether it is asked at sign-in is the
/// user's `two_factor_enabled` (set once a first code confirmed it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TwoFactor {
    pub user_id: UserId,
    /// The TOTP secret, sealed (never stored in the clear).
    pub secret: String,
    /// Hashes of the backup codes not used yet.
    pub backup_codes: Vec<String>,
    /// The last TOTP time step a code was accepted for: a code is used once.
    pub last_step: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Bumped by every write; writes compare-and-set it.
    pub version: u64,
}

impl std::fmt::Debug for TwoFactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoFactor")
            .field("user_id", &self.user_id)
            .field("backup_codes", &self.backup_codes.len())
            .field("last_step", &self.last_step)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A passkey (passkey plugin): a WebAuthn credential a user signs in with. Everything a
/// relying party needs to check its next assertion is in `credential`; the other fields are
/// what the account page and better-auth's client show.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passkey {
    pub id: PasskeyId,
    pub user_id: UserId,
    pub name: Option<String>,
    /// The credential's id, base64url without padding: unique among all users.
    pub credential_id: String,
    /// The COSE public key, base64.
    pub public_key: String,
    /// The relying party's record of the credential (JSON), its counter included.
    pub credential: String,
    /// The authenticator's signature counter as last seen (0: it keeps none).
    pub counter: u32,
    /// `singleDevice` or `multiDevice` (synced).
    pub device_type: String,
    pub backed_up: bool,
    /// Comma-separated transports (`internal,hybrid`), as the browser gave them.
    pub transports: String,
    pub aaguid: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    /// Bumped by every write; writes compare-and-set it.
    pub version: u64,
}

impl std::fmt::Debug for Passkey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkey")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("counter", &self.counter)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// An API key (api-key plugin): a long random secret a tenant's server or script sends
/// instead of a session. Only its SHA-256 is stored; `start` (its first characters) is what
/// lists show. A key acts as `user_id`; an organization's key (`organization_id`) acts as
/// its maker within that organization only, and never beyond its `permissions`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: ApiKeyId,
    /// better-auth's configuration id (`default`).
    pub config_id: String,
    pub name: Option<String>,
    pub start: Option<String>,
    pub prefix: Option<String>,
    /// SHA-256 of the key, base64url without padding: unique.
    pub key_hash: String,
    /// Who made the key, and whom it acts as.
    pub user_id: UserId,
    /// The owning organization; `None` for the user's own key.
    pub organization_id: Option<OrgId>,
    pub enabled: bool,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When the key was last used (the rate limit's window starts from it).
    pub last_request: Option<DateTime<Utc>>,
    /// Requests in the current rate-limit window.
    pub request_count: i64,
    /// Uses left (`None`: unlimited).
    pub remaining: Option<i64>,
    pub refill_amount: Option<i64>,
    /// Milliseconds between refills of `remaining` to `refill_amount`.
    pub refill_interval: Option<i64>,
    pub last_refill_at: Option<DateTime<Utc>>,
    pub rate_limit_enabled: bool,
    /// The rate limit's window, in milliseconds.
    pub rate_limit_time_window: Option<i64>,
    pub rate_limit_max: Option<i64>,
    /// `{resource: [action]}` as JSON.
    pub permissions: Option<String>,
    /// The caller's object, as JSON.
    pub metadata: Option<String>,
    /// Bumped by every write; writes compare-and-set it.
    pub version: u64,
}

impl ApiKey {
    /// What the key belongs to: its organization, else its user (better-auth's
    /// `referenceId`).
    pub fn reference_id(&self) -> &str {
        match &self.organization_id {
            Some(o) => &o.0,
            None => &self.user_id.0,
        }
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("organization_id", &self.organization_id)
            .field("start", &self.start)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
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

impl Account {
    /// The stored `scope` as a list (comma-joined as better-auth stores it; spaces tolerated).
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .unwrap_or_default()
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The password credential of `user` with the argon2id hash `password`.
    pub fn credential(user: &UserId, password: String, now: DateTime<Utc>) -> Self {
        Self {
            id: AccountId::generate(),
            user_id: user.clone(),
            provider_id: CREDENTIAL_PROVIDER.into(),
            account_id: user.0.clone(),
            password: Some(password),
            access_token: None,
            refresh_token: None,
            id_token: None,
            access_token_expires_at: None,
            refresh_token_expires_at: None,
            scope: None,
            created_at: now,
            updated_at: now,
        }
    }
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

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// The built-in role counted in [`Organization::owner_count`].
pub const OWNER_ROLE: &str = "owner";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Organization {
    pub id: OrgId,
    pub name: String,
    pub slug: String,
    pub logo: Option<String>,
    /// A JSON object, stored as text.
    pub metadata: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Bumped by every change of the organization or of anything in it (members,
    /// invitations, teams, roles). Writers compare-and-set it, so changes decided in several
    /// processes cannot interleave: a decision made on an older version is refused.
    pub version: u64,
    /// Members, and members holding [`OWNER_ROLE`], as of `version`: the membership limit and
    /// the last-owner rule are checked against them.
    pub member_count: u32,
    pub owner_count: u32,
    /// Bumped when a custom role changes: a policy built at another value is stale.
    pub roles_version: u64,
}

impl Organization {
    /// A new organization with its creator as the one member (`creator_is_owner` counts them).
    pub fn new(
        name: String,
        slug: String,
        logo: Option<String>,
        metadata: Option<String>,
        creator_is_owner: bool,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: OrgId::generate(),
            name,
            slug,
            logo,
            metadata,
            created_at: now,
            version: 0,
            member_count: 1,
            owner_count: u32::from(creator_is_owner),
            roles_version: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: MemberId,
    pub organization_id: OrgId,
    pub user_id: UserId,
    /// One or several comma-separated roles.
    pub role: String,
    pub team_id: Option<TeamId>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Team {
    pub id: TeamId,
    pub name: String,
    pub organization_id: OrgId,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMember {
    pub id: TeamMemberId,
    pub team_id: TeamId,
    pub user_id: UserId,
    pub created_at: DateTime<Utc>,
}

/// A custom role of one organization: `permission` is a JSON object
/// `{resource: [action, …]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationRole {
    pub id: RoleId,
    pub organization_id: OrgId,
    pub role: String,
    pub permission: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
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
