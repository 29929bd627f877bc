//! Configuration in layers: built-in defaults → TOML file (`--config PATH`) → `GATEHOUSE_…`
//! environment variables. Every field can be set from the environment: nested keys are joined
//! with `__` (e.g. `GATEHOUSE_SESSION__EXPIRES_IN=3600`).
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A secret value: never printed by `Debug` or `Display`, and redacted when serialized. Any
/// scalar is taken as its text (`password = 12345678` in TOML is the string "12345678"), so no
/// type error can ever quote a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Secret;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
        }
        d.deserialize_any(Text)
    }
}

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the server listens on.
    pub listen: String,
    /// Where `GET /metrics` (Prometheus) is served: an address apart from `listen`, for the
    /// monitoring network only; empty (the default) serves no metrics.
    pub metrics_listen: String,
    /// Public URL of the server (scheme, host, port); `https` turns on `Secure` cookies.
    /// Unset: derived from `listen` (`http://localhost:<port>` for a loopback or wildcard
    /// address).
    pub base_url: String,
    /// `base_url` was derived from `listen`, not given.
    #[serde(skip)]
    pub base_url_derived: bool,
    /// Where the SQLite file, the generated secret (and later the outbox) live.
    pub data_dir: PathBuf,
    /// HMAC key for cookies; at least 32 bytes. Generated into the data dir when absent.
    pub secret: Option<Secret>,
    /// Origins allowed besides the base URL's own; `*` wildcards allowed (`https://*.example.com`).
    pub trusted_origins: Vec<String>,
    /// Cookie name prefix; `better-auth` keeps an existing app's cookie names.
    pub cookie_prefix: String,
    /// Bearer key for server-only calls (`Authorization: Bearer …`); absent: such calls refused.
    pub server_key: Option<Secret>,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Behind a reverse proxy: take the client address from `X-Forwarded-For` / `X-Real-IP`,
    /// when the connection comes from one of `trusted_proxies`.
    pub trust_proxy: bool,
    /// The proxies (CIDR blocks or addresses) whose `X-Forwarded-For` is believed with
    /// `trust_proxy`: the client is the right-most address in it that is not one of them.
    pub trusted_proxies: Vec<String>,
    pub session: SessionConfig,
    pub password: PasswordConfig,
    pub limits: LimitsConfig,
    pub actors: ActorsConfig,
    pub log: LogConfig,
    pub mail: MailConfig,
    pub email_verification: EmailVerificationConfig,
    pub account: AccountConfig,
    pub organization: OrganizationConfig,
    pub admin: AdminConfig,
    pub jwt: JwtConfig,
    pub server: ServerConfig,
    pub rate_limit: RateLimitConfig,
    pub audit: AuditConfig,
    /// Where the data lives: `sqlite` (a file in `data_dir`; one machine) or `scylla` (a
    /// ScyllaDB or Cassandra cluster shared by any number of Gatehouse processes).
    pub store: StoreKind,
    pub scylla: ScyllaConfig,
    /// Social sign-in providers by id (`[social.github]`, `GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID`);
    /// see README, "Social sign-in".
    pub social: BTreeMap<String, SocialProviderConfig>,
}

/// One social provider's client registration and options.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocialProviderConfig {
    /// `false` keeps the section but turns the provider off.
    pub enabled: bool,
    /// The client id (TikTok: the client key).
    pub client_id: String,
    /// The client secret. Apple: either a client-secret JWT made elsewhere, or (better) the
    /// key material below, from which Gatehouse signs a fresh one for each token request.
    pub client_secret: Option<Secret>,
    /// Apple: the team id (the secret's `iss`).
    pub team_id: Option<String>,
    /// Apple: the key id of the private key (the secret's `kid`). Microsoft: the SHA-1
    /// thumbprint of the certificate whose key is `private_key` (40 hex digits).
    pub key_id: Option<String>,
    /// Apple: the ES256 private key (PKCS#8 PEM, the `.p8` file's text). Microsoft: the RSA
    /// key of a certificate credential (PEM), which signs a client assertion
    /// (`private_key_jwt`) instead of sending a `client_secret`.
    pub private_key: Option<Secret>,
    /// Scopes added to the provider's defaults.
    pub scopes: Vec<String>,
    /// Send only `scopes`, not the provider's defaults.
    pub disable_default_scope: bool,
    /// The redirect URI registered at the provider; default `{base_url}/api/auth/callback/{id}`.
    pub redirect_uri: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub user_info_endpoint: Option<String>,
    /// The provider's second call: GitHub's e-mail list, Facebook's `debug_token`, X's
    /// confirmed-email query, Microsoft's Graph photo.
    #[serde(alias = "emails_endpoint")]
    pub extra_endpoint: Option<String>,
    /// OIDC providers: the expected issuer and the key set of id tokens.
    pub issuer: Option<String>,
    pub jwks_uri: Option<String>,
    /// Microsoft: the tenant (`common`, `organizations`, `consumers` or an id).
    pub tenant_id: Option<String>,
    /// `prompt` on the authorize URL (e.g. `select_account`).
    pub prompt: Option<String>,
    /// No new users through this provider.
    pub disable_sign_up: bool,
    /// New users only when the sign-in asked for it (`requestSignUp`).
    pub disable_implicit_sign_up: bool,
    /// Link to an existing user with the same email even when the provider did not verify it.
    pub trusted: bool,
    /// Refuse id-token sign-in and linking (`idToken` in the body) for this provider.
    pub disable_id_token_sign_in: bool,
    /// No session until the user's address is verified (users and accounts are still made
    /// and linked; a verification mail goes out on sign-up), as
    /// `email_verification.require_email_verification` for this provider only.
    pub require_email_verification: bool,
    /// Google: the Workspace domain (`hd`) users must belong to; `*` any Workspace domain.
    /// Sent on the authorize URL and required in the id token.
    pub hd: Option<String>,
    /// Each sign-in through this provider writes its name, image and email over the user's
    /// (the email only when no other user has it; placeholder addresses never).
    pub override_user_info_on_sign_in: bool,
}

impl Default for SocialProviderConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            client_id: String::new(),
            client_secret: None,
            team_id: None,
            key_id: None,
            private_key: None,
            scopes: Vec::new(),
            disable_default_scope: false,
            redirect_uri: None,
            authorization_endpoint: None,
            token_endpoint: None,
            user_info_endpoint: None,
            extra_endpoint: None,
            issuer: None,
            jwks_uri: None,
            tenant_id: None,
            prompt: None,
            disable_sign_up: false,
            disable_implicit_sign_up: false,
            trusted: false,
            disable_id_token_sign_in: false,
            require_email_verification: false,
            hd: None,
            override_user_info_on_sign_in: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Sqlite,
    Scylla,
}

/// The ScyllaDB backend (`store = "scylla"`); see README, "Running on ScyllaDB".
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScyllaConfig {
    /// Contact points, `host:port`, comma-separated (the driver discovers the other nodes).
    pub uri: String,
    pub keyspace: String,
    /// The keyspace's replication as a CQL map, used when `gatehouse migrate` creates it.
    pub replication: String,
    /// The datacenter this process runs in: its nodes are preferred, and `LOCAL_*`
    /// consistency levels count replicas there.
    pub local_datacenter: Option<String>,
    /// Reads and plain writes (`LOCAL_QUORUM`: a majority of the local replicas).
    pub consistency: String,
    /// Lightweight transactions (`LOCAL_SERIAL`, or `SERIAL` across datacenters).
    pub serial_consistency: String,
    /// One request's time limit, milliseconds.
    pub request_timeout_ms: u64,
    /// Connecting to a node, milliseconds.
    pub connect_timeout_ms: u64,
}

impl Default for ScyllaConfig {
    fn default() -> Self {
        Self {
            uri: String::new(),
            keyspace: "gatehouse".into(),
            replication: "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}".into(),
            local_datacenter: None,
            consistency: "LOCAL_QUORUM".into(),
            serial_consistency: "LOCAL_SERIAL".into(),
            request_timeout_ms: 5_000,
            connect_timeout_ms: 5_000,
        }
    }
}

impl ScyllaConfig {
    /// The backend's options, or what is wrong with them.
    pub fn options(&self) -> Result<storage::scylla::ScyllaOptions, ConfigError> {
        use storage::scylla::{consistency_named, serial_consistency_named, ScyllaOptions};
        let bad = |m: String| ConfigError::Invalid(m);
        let nodes: Vec<String> = self
            .uri
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if nodes.is_empty() {
            return Err(bad(
                "store = \"scylla\" needs scylla.uri (host:port[,host:port…])".into(),
            ));
        }
        if let Some(n) = nodes.iter().find(|n| !n.contains(':')) {
            return Err(bad(format!("scylla.uri: {n:?} is not host:port")));
        }
        let keyspace_ok = !self.keyspace.is_empty()
            && self.keyspace.len() <= 48
            && self.keyspace.starts_with(|c: char| c.is_ascii_alphabetic())
            && self
                .keyspace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !keyspace_ok {
            return Err(bad(format!(
                "scylla.keyspace {:?}: a letter, then letters, digits or _ (48 at most)",
                self.keyspace
            )));
        }
        let r = self.replication.trim();
        if !(r.starts_with('{') && r.ends_with('}')) || r.contains(';') {
            return Err(bad(format!(
                "scylla.replication {:?} must be a CQL map, e.g. \
                 {{'class': 'NetworkTopologyStrategy', 'dc1': 3}}",
                self.replication
            )));
        }
        let mut opts = ScyllaOptions::new(nodes, &self.keyspace);
        opts.replication = r.to_owned();
        opts.local_datacenter = self.local_datacenter.clone().filter(|d| !d.is_empty());
        opts.consistency = consistency_named(&self.consistency)
            .ok_or_else(|| bad(format!("scylla.consistency {:?} unknown", self.consistency)))?;
        opts.serial_consistency =
            serial_consistency_named(&self.serial_consistency).ok_or_else(|| {
                bad(format!(
                    "scylla.serial_consistency {:?}: SERIAL or LOCAL_SERIAL",
                    self.serial_consistency
                ))
            })?;
        if self.request_timeout_ms == 0 || self.connect_timeout_ms == 0 {
            return Err(bad("scylla timeouts must be positive".into()));
        }
        opts.request_timeout = std::time::Duration::from_millis(self.request_timeout_ms);
        opts.connect_timeout = std::time::Duration::from_millis(self.connect_timeout_ms);
        Ok(opts)
    }
}

/// Request limits (see README, "Rate limits"): per client address and path, per account for
/// failed sign-ins, per recipient for mail.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Where the counters of the named rules, failed sign-ins and mail live: `"store"` (the
    /// configured store, so several processes on it share their limits) or `"memory"` (this
    /// process's; with N processes the limits are N times as high). The general rule always
    /// counts in memory: it guards the process that serves the request.
    pub storage: RateLimitStorage,
    /// The window of the general rule (every route under `/api/auth` no other rule names),
    /// seconds.
    pub window: u64,
    /// Requests per client address in that window.
    pub max: u32,
    /// Rules by path under `/api/auth` (`/sign-in/*` ends with a wildcard); the most
    /// specific match wins. Replaces the built-in rules of the same path.
    pub rules: BTreeMap<String, RateRule>,
    /// IPv6 clients are counted by this prefix of their address (one host has a /64).
    pub ipv6_prefix: u8,
    /// Failed sign-ins one account may take from one client address per window before that
    /// address is refused for it.
    pub sign_in_failures_per_client: u32,
    /// Failed sign-ins one account may take from all addresses together per window before
    /// every sign-in to it is refused until the window ends.
    pub sign_in_failures_per_account: u32,
    /// The window of both sign-in failure counts, seconds.
    pub sign_in_failure_window: u64,
    /// Mails one address may be sent per window (verification, reset, email change,
    /// deletion, invitations), whoever asks.
    pub mail_per_recipient: u32,
    /// Of those, how many one client address may ask for: one client alone cannot use up an
    /// address's whole allowance (and so keep its owner's reset mail away).
    pub mail_per_recipient_per_client: u32,
    /// That window, seconds.
    pub mail_window: u64,
}

/// Where rate-limit counters live (`rate_limit.storage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateLimitStorage {
    Store,
    Memory,
}

/// One rate-limit rule: at most `max` requests per client address per `window` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateRule {
    pub window: u64,
    pub max: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            storage: RateLimitStorage::Store,
            window: 10,
            max: 100,
            rules: BTreeMap::new(),
            ipv6_prefix: 64,
            sign_in_failures_per_client: 10,
            sign_in_failures_per_account: 50,
            sign_in_failure_window: 900,
            mail_per_recipient: 10,
            mail_per_recipient_per_client: 3,
            mail_window: 3600,
        }
    }
}

/// The audit log of security events (see README, "Audit log").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// `false`: no events are recorded (the read routes answer an empty log).
    pub enabled: bool,
    /// How long events are kept, days (1–3650): older ones are purged (SQLite) or expire by
    /// themselves (ScyllaDB's TTL). Reads never reach further back.
    pub retention_days: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            retention_days: 90,
        }
    }
}

impl AuditConfig {
    pub fn retention(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.retention_days) * 86_400)
    }

    /// The oldest instant still kept at `now`: reads never reach further back.
    pub fn oldest_kept(&self, now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
        now - chrono::Duration::days(i64::from(self.retention_days))
    }
}

/// Connection limits of the HTTP server (see `api/src/server.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// A request's headers must arrive within this, counted from when the connection starts
    /// waiting for them, milliseconds.
    pub header_read_timeout_ms: u64,
    /// A request's body must arrive within this once its headers have, milliseconds (408).
    pub body_read_timeout_ms: u64,
    /// A connection with no request in flight and no traffic for this long is closed,
    /// milliseconds.
    pub keep_alive_timeout_ms: u64,
    /// Connections open at once; at the cap the server stops accepting until one closes.
    /// Lowered at start to what the open-files limit allows.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes; larger ones get 431.
    pub max_header_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            keep_alive_timeout_ms: 5_000,
            max_connections: 10_000,
            max_header_bytes: 16_384,
        }
    }
}

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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MailConfig {
    /// `outbox` (files in `<data_dir>/outbox/`, the default), `smtp`, or `none` (no mail:
    /// flows that need it answer an error).
    pub transport: MailTransport,
    /// Sender, e.g. `Acme <no-reply@acme.example>`.
    pub from: String,
    /// Shown in messages as `{{app_name}}`.
    pub app_name: String,
    /// A folder of template overrides: `<kind>.subject`, `<kind>.txt`, `<kind>.html`.
    pub templates_dir: Option<PathBuf>,
    /// Time limit of one SMTP delivery attempt, milliseconds.
    pub send_timeout_ms: u64,
    /// A stored message its request did not deliver (the process died, the send failed) is
    /// delivered by the mail consumer once it is this old, seconds (at least the longest SMTP
    /// delivery, so a slow one in progress is not sent twice).
    pub redeliver_after_secs: u64,
    pub smtp: SmtpConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    /// Each message a JSON file in `<data_dir>/outbox/`.
    Outbox,
    /// Delivered through `[mail.smtp]`.
    Smtp,
    /// No mail.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    /// Plain text; only for a trusted relay on the same host or network.
    None,
    /// STARTTLS, required (port 587).
    Starttls,
    /// Implicit TLS (port 465).
    Tls,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// Further attempts after a transient failure.
    pub retries: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmailVerificationConfig {
    /// Mail a verification link when a user signs up with email and password.
    pub send_on_sign_up: bool,
    /// Refuse sign-in (403 `EMAIL_NOT_VERIFIED`) until the email is verified; a new link is
    /// mailed on each refused attempt.
    pub require_email_verification: bool,
    /// Following the link also signs the user in.
    pub auto_sign_in_after_verification: bool,
    /// Lifetime of a verification link, seconds.
    pub expires_in: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccountConfig {
    pub change_email_enabled: bool,
    pub delete_user_enabled: bool,
    /// Let a user unlink their last account (leaving no way to sign in).
    pub allow_unlinking_all: bool,
    /// A password reset signs the user out everywhere.
    pub revoke_sessions_on_password_reset: bool,
    /// A sign-in may link a provider account to the user with the same (verified) email.
    pub implicit_linking: bool,
    /// link-social may link an account whose email differs from the user's.
    pub allow_different_emails: bool,
    /// A sign-in through a linked account stores the tokens the provider returned.
    pub update_account_on_sign_in: bool,
    /// Calls to a social provider give up after this long, milliseconds.
    pub provider_timeout_ms: u64,
}

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            transport: MailTransport::Outbox,
            from: "Gatehouse <no-reply@localhost>".into(),
            app_name: "Gatehouse".into(),
            templates_dir: None,
            send_timeout_ms: 10_000,
            redeliver_after_secs: 60,
            smtp: SmtpConfig::default(),
        }
    }
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            host: "localhost".into(),
            port: 587,
            security: SmtpSecurity::Starttls,
            username: None,
            password: None,
            retries: 3,
        }
    }
}

impl Default for EmailVerificationConfig {
    fn default() -> Self {
        Self {
            send_on_sign_up: false,
            require_email_verification: false,
            auto_sign_in_after_verification: false,
            expires_in: 3600,
        }
    }
}

impl Default for AccountConfig {
    fn default() -> Self {
        Self {
            change_email_enabled: true,
            delete_user_enabled: true,
            allow_unlinking_all: false,
            revoke_sessions_on_password_reset: false,
            implicit_linking: true,
            allow_different_emails: false,
            update_account_on_sign_in: true,
            provider_timeout_ms: 10_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Session lifetime, seconds (7 days).
    pub expires_in: u64,
    /// A session is extended when its last update is older than this, seconds (1 day).
    pub update_age: u64,
    /// Sensitive actions need a session younger than this, seconds (1 day); 0 = off.
    pub fresh_age: u64,
    /// Lifetime of a `rememberMe: false` session, seconds (1 day).
    pub dont_remember_expires_in: u64,
    pub cookie_cache: CookieCacheConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CookieCacheConfig {
    /// Off by default, as in better-auth.
    pub enabled: bool,
    /// Seconds a cached session is trusted without asking the store (5 minutes).
    pub max_age: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasswordConfig {
    pub min_length: usize,
    pub max_length: usize,
    /// argon2id memory cost, KiB.
    pub argon2_memory_kib: u32,
    pub argon2_iterations: u32,
    pub argon2_parallelism: u32,
    /// Hashes computed at once; more wait (0 = one per CPU core).
    pub max_concurrent_hashes: usize,
    /// How much lower the hashing threads' priority is than the server's (added to its nice
    /// value, 0–19, at most 19; Linux): above 0 they yield their core to the threads that
    /// answer requests when both want it, and use every core otherwise — session reads stay
    /// fast during a burst of sign-ins, which take longer then.
    pub hash_thread_nice: i32,
    /// Hashing threads in the idle scheduling class (`SCHED_IDLE`, Linux): they run only on a
    /// core no other thread wants, and a request thread that wakes takes the core from them at
    /// once — where a high nice value still lets a hash hold the core for a while. Off: the
    /// nice value alone decides.
    pub hash_thread_idle: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Reset-password token lifetime, seconds.
    pub reset_password_token_expires_in: u64,
    /// Delete-account token lifetime, seconds.
    pub delete_account_token_expires_in: u64,
    /// Email verification token lifetime, seconds.
    pub verification_token_expires_in: u64,
    /// Invitation lifetime, seconds.
    pub invitation_expires_in: u64,
    /// Members per organization.
    pub membership_limit: u32,
    /// Invitations an organization may send per 24 hours (0: no cap).
    pub invitations_per_organization_per_day: u32,
    /// Invitations one member may send per 24 hours (0: no cap).
    pub invitations_per_inviter_per_day: u32,
    /// Organizations a user may create (absent: unlimited).
    pub organization_limit: Option<u32>,
    /// OAuth state lifetime, seconds.
    pub state_expires_in: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActorsConfig {
    /// An actor with no message for this long stops, milliseconds.
    pub idle_timeout_ms: u64,
    /// How long a request waits for an actor to take it, milliseconds; a request not started
    /// by then is never applied (503).
    pub call_timeout_ms: u64,
    /// Requests that may wait for one user's or organization's actor; more get 503 at once.
    pub max_pending: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `tracing` filter, e.g. `info` or `gatehouse=debug,info`; `RUST_LOG` wins when set.
    pub level: String,
    /// `text` or `json`.
    pub format: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3000".into(),
            metrics_listen: String::new(),
            base_url: "http://localhost:3000".into(),
            base_url_derived: false,
            data_dir: PathBuf::from("./data"),
            secret: None,
            trusted_origins: Vec::new(),
            cookie_prefix: "gatehouse".into(),
            server_key: None,
            max_body_bytes: 1024 * 1024,
            trust_proxy: false,
            trusted_proxies: vec!["127.0.0.1/32".into(), "::1/128".into()],
            session: SessionConfig::default(),
            password: PasswordConfig::default(),
            limits: LimitsConfig::default(),
            actors: ActorsConfig::default(),
            log: LogConfig::default(),
            mail: MailConfig::default(),
            email_verification: EmailVerificationConfig::default(),
            account: AccountConfig::default(),
            organization: OrganizationConfig::default(),
            admin: AdminConfig::default(),
            jwt: JwtConfig::default(),
            server: ServerConfig::default(),
            rate_limit: RateLimitConfig::default(),
            audit: AuditConfig::default(),
            store: StoreKind::Sqlite,
            scylla: ScyllaConfig::default(),
            social: BTreeMap::new(),
        }
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            expires_in: 7 * 86400,
            update_age: 86400,
            fresh_age: 86400,
            dont_remember_expires_in: 86400,
            cookie_cache: CookieCacheConfig::default(),
        }
    }
}

impl Default for CookieCacheConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_age: 300,
        }
    }
}

impl Default for PasswordConfig {
    fn default() -> Self {
        Self {
            min_length: 8,
            max_length: 128,
            argon2_memory_kib: 19456,
            argon2_iterations: 2,
            argon2_parallelism: 1,
            max_concurrent_hashes: 0,
            hash_thread_nice: 19,
            hash_thread_idle: true,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            reset_password_token_expires_in: 3600,
            delete_account_token_expires_in: 86400,
            verification_token_expires_in: 3600,
            invitation_expires_in: 172800,
            membership_limit: 100,
            invitations_per_organization_per_day: 100,
            invitations_per_inviter_per_day: 50,
            organization_limit: None,
            state_expires_in: 600,
        }
    }
}

impl Default for ActorsConfig {
    fn default() -> Self {
        Self {
            idle_timeout_ms: 60_000,
            call_timeout_ms: 10_000,
            max_pending: 256,
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            format: "text".into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

const ENV_PREFIX: &str = "GATEHOUSE_";
/// Names the configuration file (like `--config`); not a setting itself.
pub const CONFIG_ENV: &str = "GATEHOUSE_CONFIG";
/// Keys whose values are secrets: never quoted in an error, whatever the layer.
const SECRET_KEYS: [&str; 5] = [
    "secret",
    "server_key",
    "password",
    "client_secret",
    "private_key",
];

/// A loaded configuration and what was worth a warning while loading it (unknown
/// `GATEHOUSE_*` variables, a `base_url` that cannot reach this server), to be logged once
/// logging is set up.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
}

impl Config {
    /// Defaults, then the TOML file if given, then the environment. Unknown keys in the file
    /// are an error; unknown `GATEHOUSE_*` variables only a warning (a Kubernetes Service named
    /// `gatehouse` injects `GATEHOUSE_PORT`, `GATEHOUSE_SERVICE_HOST`, …). Environment values
    /// are read as the type of the setting they name, so `GATEHOUSE_MAIL__SMTP__PASSWORD=1234`
    /// is the text "1234". Without a `base_url` in either layer, it is derived from `listen`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, ConfigError> {
        let defaults = toml::Value::try_from(Config::default())
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let mut merged = defaults.clone();
        let mut base_url_given = false;
        // The default has no secret; `Secret` serializes redacted, so never merge it back.
        if let Some(file) = file {
            let text =
                std::fs::read_to_string(file).map_err(|e| ConfigError::Read(file.into(), e))?;
            let value: toml::Value = toml::from_str(&text)
                .map_err(|e| ConfigError::Invalid(file_error(file, &text, &e)))?;
            base_url_given |= value.get("base_url").is_some();
            merge(&mut merged, value);
        }
        let (env, warnings) = env_layer(&defaults, env)?;
        base_url_given |= env.get("base_url").is_some();
        merge(&mut merged, env);
        let mut config: Config = merged
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid(e.to_string()))?;
        config.validate()?;
        if !base_url_given {
            config.base_url = base_url_for(&config.listen);
            config.base_url_derived = true;
        }
        let mut loaded = Loaded { config, warnings };
        if let Some(w) = loaded.config.base_url_mismatch() {
            loaded.warnings.push(w);
        }
        Ok(loaded)
    }

    /// Once the listener is bound: a derived base URL takes the port really chosen (`:0`).
    pub fn bound_to(&mut self, local: std::net::SocketAddr) {
        if self.base_url_derived {
            self.base_url = base_url_for(&local.to_string());
        }
    }

    /// A warning when `base_url` names this machine on another port than the one listened
    /// on: the links in mails and the trusted origin would then miss this server.
    pub fn base_url_mismatch(&self) -> Option<String> {
        let url = url::Url::parse(&self.base_url).ok()?;
        let listen_port = split_host_port(&self.listen)?.1;
        let local = match url.host()? {
            url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        };
        let port = url.port_or_known_default()?;
        (listen_port != 0 && local && port != listen_port).then(|| {
            format!(
                "base_url {} points at port {port} of this machine but the server listens on \
                 port {listen_port}: mailed links and the trusted origin will miss it (set \
                 GATEHOUSE_BASE_URL, or leave it unset to derive it from listen)",
                self.base_url
            )
        })
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if split_host_port(&self.listen).is_none() {
            return bad(format!(
                "listen {:?} must be host:port (e.g. 127.0.0.1:3000, 0.0.0.0:8080, [::]:3000)",
                self.listen
            ));
        }
        let url = match url::Url::parse(&self.base_url) {
            Ok(u) => u,
            Err(e) => return bad(format!("base_url {:?}: {e}", self.base_url)),
        };
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return bad(format!(
                "base_url {:?} must be an http(s) URL",
                self.base_url
            ));
        }
        for (id, p) in &self.social {
            if crate::social::catalog::find(id).is_none() {
                return bad(format!("social.{id}: no such provider"));
            }
            if p.enabled && p.client_id.trim().is_empty() {
                return bad(format!("social.{id}.client_id is required"));
            }
            let endpoints = [
                &p.authorization_endpoint,
                &p.token_endpoint,
                &p.user_info_endpoint,
                &p.extra_endpoint,
                &p.jwks_uri,
                &p.redirect_uri,
            ];
            for e in endpoints.into_iter().flatten() {
                if !url::Url::parse(e).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
                    return bad(format!("social.{id}: {e:?} is not an http(s) URL"));
                }
            }
        }
        if let Some(s) = &self.secret {
            if s.expose().len() < 32 {
                return bad("secret must be at least 32 bytes long".into());
            }
        }
        if let Some(k) = &self.server_key {
            if k.expose().len() < 32 {
                return bad("server_key must be at least 32 bytes long".into());
            }
        }
        if self.password.min_length == 0 || self.password.min_length > self.password.max_length {
            return bad("password.min_length must be between 1 and password.max_length".into());
        }
        if self.cookie_prefix.is_empty()
            || !self
                .cookie_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return bad("cookie_prefix must be non-empty [A-Za-z0-9._-]".into());
        }
        if self.session.expires_in == 0 {
            return bad("session.expires_in must be positive".into());
        }
        let s = &self.server;
        if s.header_read_timeout_ms == 0
            || s.body_read_timeout_ms == 0
            || s.keep_alive_timeout_ms == 0
            || s.max_connections == 0
        {
            return bad("server timeouts and max_connections must be positive".into());
        }
        if s.max_header_bytes < 8192 {
            return bad("server.max_header_bytes must be at least 8192".into());
        }
        if self.store == StoreKind::Scylla {
            self.scylla.options()?;
        }
        if !(1..=3650).contains(&self.audit.retention_days) {
            return bad("audit.retention_days must be between 1 and 3650".into());
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return bad("log.format must be text or json".into());
        }
        Ok(())
    }

    pub fn is_https(&self) -> bool {
        self.base_url.starts_with("https://")
    }
}

/// Turns `GATEHOUSE_A__B=v` into `{a: {b: v}}`, each value read as the type of the setting it
/// names: the first of text, integer, boolean, float or comma-separated list that the setting
/// accepts. A variable naming no setting is a warning; a value the setting cannot take is an
/// error that names the variable and what it expects, never the value.
fn env_layer(
    defaults: &toml::Value,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(toml::Value, Vec<String>), ConfigError> {
    let mut root = toml::Value::Table(toml::Table::new());
    let mut warnings = Vec::new();
    let mut vars: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && k != CONFIG_ENV)
        .collect();
    vars.sort();
    for (key, raw) in vars {
        let rest = &key[ENV_PREFIX.len()..];
        let path: Vec<String> = rest.split("__").map(|p| p.to_ascii_lowercase()).collect();
        if path.iter().any(String::is_empty) {
            warnings.push(format!("ignoring {key}: not a setting"));
            continue;
        }
        let accepts = |v: &toml::Value| -> Result<(), String> {
            let mut probe = defaults.clone();
            insert(&mut probe, &path, v.clone());
            probe
                .try_into::<Config>()
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let text = toml::Value::String(raw.clone());
        let first = match accepts(&text) {
            Ok(()) => {
                insert(&mut root, &path, text);
                continue;
            }
            Err(e) => e,
        };
        if first.contains("unknown field") {
            warnings.push(format!("ignoring {key}: no such setting"));
            continue;
        }
        let mut candidates = Vec::new();
        if let Ok(i) = raw.trim().parse::<i64>() {
            candidates.push(toml::Value::Integer(i));
        }
        if let Ok(b) = raw.trim().parse::<bool>() {
            candidates.push(toml::Value::Boolean(b));
        }
        if let Ok(f) = raw.trim().parse::<f64>() {
            candidates.push(toml::Value::Float(f));
        }
        candidates.push(toml::Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.to_owned()))
                .collect(),
        ));
        match candidates.into_iter().find(|v| accepts(v).is_ok()) {
            Some(v) => insert(&mut root, &path, v),
            None => {
                let expected = first
                    .split_once("expected ")
                    .map(|(_, e)| e.lines().next().unwrap_or_default().trim().to_owned())
                    .unwrap_or_else(|| "another kind of value".into());
                let expected = match expected.trim_end_matches('`') {
                    "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => {
                        "a whole number".to_owned()
                    }
                    "a boolean" => "true or false".to_owned(),
                    _ => expected,
                };
                return Err(ConfigError::Invalid(format!(
                    "{key}: invalid value, expected {expected}"
                )));
            }
        }
    }
    Ok((root, warnings))
}

/// Sets `path` in `root` to `value`, making tables on the way (replacing non-tables).
fn insert(root: &mut toml::Value, path: &[String], value: toml::Value) {
    let Some((leaf, parents)) = path.split_last() else {
        return;
    };
    let mut table = root;
    for part in parents {
        if !table.is_table() {
            *table = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(t) = table else {
            return;
        };
        table = t
            .entry(part.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
    if !table.is_table() {
        *table = toml::Value::Table(toml::Table::new());
    }
    if let toml::Value::Table(t) = table {
        t.insert(leaf.clone(), value);
    }
}

/// A TOML syntax error in the file, with the offending line shown unless that line sets a
/// secret (then only the line and column).
fn file_error(file: &Path, text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return format!("{}: {e}", file.display());
    };
    let before = &text[..span.start.min(text.len())];
    let line_no = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or_default();
    let key = line
        .split('=')
        .next()
        .unwrap_or_default()
        .trim()
        .trim_matches('"')
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if SECRET_KEYS.contains(&key.as_str()) {
        format!(
            "{}: line {line_no}, column {column}: {} (the line sets a secret and is not shown)",
            file.display(),
            e.message()
        )
    } else {
        format!("{}: {e}", file.display())
    }
}

/// `host:port` of a listen address (`[::1]:3000` too).
fn split_host_port(listen: &str) -> Option<(&str, u16)> {
    let (host, port) = listen.rsplit_once(':')?;
    let port = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then_some((host, port))
}

/// The base URL a listen address implies: `http://localhost:<port>` for loopback and
/// wildcard addresses, `http://<host>:<port>` otherwise.
fn base_url_for(listen: &str) -> String {
    let Some((host, port)) = split_host_port(listen) else {
        return "http://localhost:3000".into();
    };
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
    if local {
        format!("http://localhost:{port}")
    } else if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}

fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) if existing.is_table() && v.is_table() => merge(existing, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_then_file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.toml");
        std::fs::write(
            &file,
            "listen = \"0.0.0.0:9\"\ncookie_prefix = \"file\"\n[session]\nexpires_in = 10\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&file),
            env(&[
                ("GATEHOUSE_COOKIE_PREFIX", "better-auth"),
                (
                    "GATEHOUSE_TRUSTED_ORIGINS",
                    "https://a.example, https://*.b.example",
                ),
                ("GATEHOUSE_SESSION__UPDATE_AGE", "5"),
                ("GATEHOUSE_SECRET", "0123456789012345678901234567890123"),
                ("OTHER", "x"),
            ]),
        )
        .unwrap()
        .config;
        assert_eq!(c.listen, "0.0.0.0:9");
        assert_eq!(c.cookie_prefix, "better-auth");
        assert_eq!(c.session.expires_in, 10);
        assert_eq!(c.session.update_age, 5);
        assert_eq!(c.session.fresh_age, 86400);
        assert_eq!(
            c.trusted_origins,
            vec!["https://a.example", "https://*.b.example"]
        );
        assert_eq!(c.secret.as_ref().unwrap().expose().len(), 34);
        assert_eq!(format!("{:?}", c.secret), "Some(***)");
    }

    #[test]
    fn short_secret_and_unknown_keys_are_refused() {
        assert!(Config::load(None, env(&[("GATEHOUSE_SECRET", "short")])).is_err());
        assert!(Config::load(None, env(&[("GATEHOUSE_BASE_URL", "ftp://x")])).is_err());
        let c = Config::load(None, env(&[])).unwrap().config;
        assert_eq!(c.base_url, "http://localhost:3000");
        assert_eq!(c.password.min_length, 8);
        assert_eq!(c.password.max_length, 128);
    }

    #[test]
    fn the_scylla_store_from_the_environment() {
        let c = Config::load(
            None,
            env(&[
                ("GATEHOUSE_STORE", "scylla"),
                ("GATEHOUSE_SCYLLA__URI", "10.0.0.1:9042, 10.0.0.2:9042"),
                ("GATEHOUSE_SCYLLA__LOCAL_DATACENTER", "dc1"),
                ("GATEHOUSE_SCYLLA__CONSISTENCY", "quorum"),
            ]),
        )
        .unwrap()
        .config;
        assert_eq!(c.store, StoreKind::Scylla);
        let o = c.scylla.options().unwrap();
        assert_eq!(o.nodes, vec!["10.0.0.1:9042", "10.0.0.2:9042"]);
        assert_eq!(o.keyspace, "gatehouse");
        assert_eq!(o.local_datacenter.as_deref(), Some("dc1"));
        assert_eq!(o.consistency, storage::scylla::Consistency::Quorum);
        assert_eq!(
            o.serial_consistency,
            storage::scylla::SerialConsistency::LocalSerial
        );
        assert_eq!(
            Config::load(None, env(&[])).unwrap().config.store,
            StoreKind::Sqlite
        );
        for bad in [
            vec![("GATEHOUSE_STORE", "scylla")],
            vec![("GATEHOUSE_STORE", "mysql")],
            vec![
                ("GATEHOUSE_STORE", "scylla"),
                ("GATEHOUSE_SCYLLA__URI", "a:1"),
                ("GATEHOUSE_SCYLLA__KEYSPACE", "x;drop"),
            ],
            vec![
                ("GATEHOUSE_STORE", "scylla"),
                ("GATEHOUSE_SCYLLA__URI", "a:1"),
                ("GATEHOUSE_SCYLLA__REPLICATION", "{'x': 1}; DROP"),
            ],
            vec![
                ("GATEHOUSE_STORE", "scylla"),
                ("GATEHOUSE_SCYLLA__URI", "a:1"),
                ("GATEHOUSE_SCYLLA__SERIAL_CONSISTENCY", "ONE"),
            ],
        ] {
            assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn social_providers_from_the_environment() {
        let c = Config::load(
            None,
            env(&[
                ("GATEHOUSE_SOCIAL__DISCORD__CLIENT_ID", "1234567890"),
                ("GATEHOUSE_SOCIAL__DISCORD__CLIENT_SECRET", "s3cr3t"),
                ("GATEHOUSE_SOCIAL__DISCORD__SCOPES", "guilds, connections"),
                ("GATEHOUSE_SOCIAL__DISCORD__TRUSTED", "true"),
                (
                    "GATEHOUSE_SOCIAL__GITHUB__TOKEN_ENDPOINT",
                    "http://127.0.0.1:9/token",
                ),
                ("GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID", "gh"),
            ]),
        )
        .unwrap()
        .config;
        let d = &c.social["discord"];
        assert_eq!(d.client_id, "1234567890", "a numeric id stays a string");
        assert_eq!(d.scopes, ["guilds", "connections"]);
        assert!(d.trusted);
        assert_eq!(
            c.social["github"].token_endpoint.as_deref(),
            Some("http://127.0.0.1:9/token")
        );
        let shown = toml::to_string(&c).unwrap();
        assert!(!shown.contains("s3cr3t"), "secrets are redacted");
        for bad in [
            vec![("GATEHOUSE_SOCIAL__MYSPACE__CLIENT_ID", "x")],
            vec![("GATEHOUSE_SOCIAL__GITHUB__CLIENT_SECRET", "x")],
            vec![
                ("GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID", "x"),
                (
                    "GATEHOUSE_SOCIAL__GITHUB__TOKEN_ENDPOINT",
                    "file:///etc/passwd",
                ),
            ],
        ] {
            assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stray_variables_warn_and_the_config_variable_is_not_a_setting() {
        let loaded = Config::load(
            None,
            env(&[
                // What a Kubernetes Service named `gatehouse` injects.
                ("GATEHOUSE_PORT", "tcp://10.0.0.7:3000"),
                ("GATEHOUSE_SERVICE_HOST", "10.0.0.7"),
                ("GATEHOUSE_PORT_3000_TCP_ADDR", "10.0.0.7"),
                ("GATEHOUSE_SESION__EXPIRES_IN", "5"),
                ("GATEHOUSE_CONFIG", "/etc/gatehouse.toml"),
                ("GATEHOUSE_SESSION__EXPIRES_IN", "60"),
            ]),
        )
        .unwrap();
        assert_eq!(loaded.config.session.expires_in, 60);
        let w = loaded.warnings.join("\n");
        for var in [
            "GATEHOUSE_PORT:",
            "GATEHOUSE_SERVICE_HOST",
            "GATEHOUSE_PORT_3000_TCP_ADDR",
            "GATEHOUSE_SESION__EXPIRES_IN",
        ] {
            assert!(w.contains(var), "{var} not warned about: {w}");
        }
        assert!(!w.contains("GATEHOUSE_CONFIG"), "{w}");
        assert!(!w.contains("10.0.0.7"), "values are not repeated: {w}");
    }

    #[test]
    fn environment_values_take_the_type_of_their_setting_and_are_never_echoed() {
        let c = Config::load(
            None,
            env(&[
                ("GATEHOUSE_MAIL__SMTP__PASSWORD", "12345678"),
                ("GATEHOUSE_MAIL__SMTP__USERNAME", "4711"),
                ("GATEHOUSE_MAIL__SMTP__PORT", "2525"),
                (
                    "GATEHOUSE_SERVER_KEY",
                    "12345678901234567890123456789012345",
                ),
                ("GATEHOUSE_COOKIE_PREFIX", "true"),
                ("GATEHOUSE_TRUST_PROXY", "true"),
                ("GATEHOUSE_LIMITS__ORGANIZATION_LIMIT", "3"),
                ("GATEHOUSE_ADMIN__ADMIN_ROLES", "admin, superadmin"),
            ]),
        )
        .unwrap()
        .config;
        assert_eq!(c.mail.smtp.password.as_ref().unwrap().expose(), "12345678");
        assert_eq!(c.mail.smtp.username.as_deref(), Some("4711"));
        assert_eq!(c.mail.smtp.port, 2525);
        assert_eq!(c.cookie_prefix, "true");
        assert!(c.trust_proxy);
        assert_eq!(c.limits.organization_limit, Some(3));
        assert_eq!(c.admin.admin_roles, ["admin", "superadmin"]);
        for (key, value) in [
            ("GATEHOUSE_SESSION__EXPIRES_IN", "s3cr3t-looking"),
            ("GATEHOUSE_MAIL__TRANSPORT", "smpt-hunter2"),
            ("GATEHOUSE_TRUST_PROXY", "hunter2"),
        ] {
            let err = Config::load(None, env(&[(key, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
            assert!(!err.contains(value), "the value is echoed: {err}");
            assert!(err.contains("expected"), "{err}");
        }
    }

    #[test]
    fn secrets_in_the_file_are_text_and_never_quoted_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.toml");
        std::fs::write(&file, "[mail.smtp]\npassword = 12345678\n").unwrap();
        let c = Config::load(Some(&file), env(&[])).unwrap().config;
        assert_eq!(c.mail.smtp.password.unwrap().expose(), "12345678");
        std::fs::write(&file, "secret = \"hunter2hunter2hunter2hunter2hunter2\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        // Other lines are shown as they are, which helps.
        std::fs::write(&file, "listen = \"127.0.0.1:3000\"\ncookie_prefix = 'x\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(err.contains("cookie_prefix = 'x"), "{err}");
    }

    #[test]
    fn base_url_follows_listen_unless_given() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs)).unwrap();
        assert_eq!(load(&[]).config.base_url, "http://localhost:3000");
        let l = load(&[("GATEHOUSE_LISTEN", "0.0.0.0:8080")]);
        assert_eq!(l.config.base_url, "http://localhost:8080");
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let l = load(&[("GATEHOUSE_LISTEN", "192.168.1.5:4000")]);
        assert_eq!(l.config.base_url, "http://192.168.1.5:4000");
        let l = load(&[("GATEHOUSE_LISTEN", "[::1]:4000")]);
        assert_eq!(l.config.base_url, "http://localhost:4000");
        // Given and pointing elsewhere on this machine: kept, with a warning.
        let l = load(&[
            ("GATEHOUSE_LISTEN", "127.0.0.1:8080"),
            ("GATEHOUSE_BASE_URL", "http://localhost:3000"),
        ]);
        assert_eq!(l.config.base_url, "http://localhost:3000");
        assert!(
            l.warnings.iter().any(|w| w.contains("port 3000")),
            "{:?}",
            l.warnings
        );
        // A public URL (behind a proxy) is not this machine's port: no warning.
        let l = load(&[
            ("GATEHOUSE_LISTEN", "127.0.0.1:8080"),
            ("GATEHOUSE_BASE_URL", "https://auth.example.com"),
        ]);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        // `:0`: the port chosen at bind time.
        let mut c = load(&[("GATEHOUSE_LISTEN", "127.0.0.1:0")]).config;
        c.bound_to("127.0.0.1:41234".parse().unwrap());
        assert_eq!(c.base_url, "http://localhost:41234");
        let mut c = load(&[
            ("GATEHOUSE_LISTEN", "127.0.0.1:0"),
            ("GATEHOUSE_BASE_URL", "http://localhost:3000"),
        ])
        .config;
        c.bound_to("127.0.0.1:41234".parse().unwrap());
        assert_eq!(c.base_url, "http://localhost:3000");
    }

    #[test]
    fn what_serve_would_refuse_is_refused_at_load() {
        for bad in [
            vec![("GATEHOUSE_LISTEN", "localhost")],
            vec![("GATEHOUSE_LISTEN", "127.0.0.1:99999")],
            vec![("GATEHOUSE_MAIL__TRANSPORT", "smpt")],
        ] {
            assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
        }
    }
}
