//! Organizations, the admin plugin and JWT.
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrganizationConfig {
    /// The role of an organization's creator.
    pub creator_role: String,
    /// Extra roles valid in every organization: `{name: {resource: [action, …]}}`.
    pub roles: std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<String>>>,
    /// The link an invitation mail carries; `{id}` is the invitation id, `{email}` the invited
    /// address (URL-encoded: the hosted page prefills it for sign-in or sign-up), `{base_url}`
    /// the server's. Point it at the app's accept page.
    pub invitation_link: String,
    /// Only a verified address may accept or reject an invitation. Off by default, as in
    /// better-auth: the invitation's id (only in the mail) is the proof; turn it on when
    /// invitation links may travel beyond the invitee's mailbox.
    pub require_email_verification_on_invitation: bool,
    /// Allow removing an organization's last team.
    pub allow_removing_all_teams: bool,
    /// A new organization gets a team named after it, with its creator in it (the session's
    /// active team), as better-auth's teams do.
    pub default_team: bool,
    /// What `get-full-organization` and `list-members` read, kept in memory.
    pub view_cache: ViewCacheConfig,
}

/// Each process keeps the organizations it recently read (the organization, members with their
/// users, invitations, teams). A change made through this process is seen by its next read;
/// one made by another process sharing the store is seen within `ttl_ms`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ViewCacheConfig {
    /// Milliseconds a cached organization is trusted: the bound on how late a change made by
    /// another process shows here (0: no cache, every read asks the store).
    pub ttl_ms: u64,
    /// Organizations kept at most (each one complete: an organization with more members than
    /// `limits.membership_limit` is never cached).
    pub max_entries: usize,
}

impl Default for ViewCacheConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 1000,
            max_entries: 1024,
        }
    }
}

impl Default for OrganizationConfig {
    fn default() -> Self {
        Self {
            creator_role: "owner".into(),
            roles: Default::default(),
            invitation_link: "{base_url}/accept-invitation/{id}?email={email}".into(),
            require_email_verification_on_invitation: false,
            allow_removing_all_teams: false,
            default_team: true,
            view_cache: ViewCacheConfig::default(),
        }
    }
}

/// The admin plugin: global roles, who is an administrator, impersonation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Roles whose holders are administrators (impersonating them needs
    /// `user:impersonate-admins`). Each must be `admin` or a role of `roles`.
    pub admin_roles: Vec<String>,
    /// Users who hold every admin permission, whatever their role.
    pub admin_user_ids: Vec<String>,
    /// Lifetime of an impersonation session, in seconds (never extended).
    pub impersonation_session_duration: u64,
    /// Roles besides the built-in `admin` and `user` (a role named so replaces the built-in
    /// one): `{name: {user: [action, …], session: [action, …]}}`.
    pub roles: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            admin_roles: vec!["admin".into()],
            admin_user_ids: Vec::new(),
            impersonation_session_duration: 3600,
            roles: BTreeMap::new(),
        }
    }
}

/// JSON Web Tokens for the signed-in user (`/token`, `set-auth-jwt`) and the keys that verify
/// them (`/jwks`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtConfig {
    pub enabled: bool,
    /// `EdDSA` (Ed25519, the default), `ES256` or `RS256`: the algorithm of new keys.
    pub algorithm: String,
    /// Token lifetime in seconds.
    pub expiration: u64,
    /// `iss`; the base URL when unset.
    pub issuer: Option<String>,
    /// `aud`; the base URL when unset.
    pub audience: Option<String>,
    /// Send a fresh token in the `set-auth-jwt` header of every `get-session` with a session.
    pub set_auth_jwt_header: bool,
}

impl Default for JwtConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            algorithm: "EdDSA".into(),
            expiration: 900,
            issuer: None,
            audience: None,
            set_auth_jwt_header: true,
        }
    }
}
