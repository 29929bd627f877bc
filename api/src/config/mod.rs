//! Configuration in layers: built-in defaults → TOML file (`--config PATH`) → `GATEHOUSE_…`
//! environment variables. Every field can be set from the environment: nested keys are joined
//! with `__` (e.g. `GATEHOUSE_SESSION__EXPIRES_IN=3600`).
//!
//! The settings are in one file per part: `store.rs` (SQLite or ScyllaDB), `social.rs`
//! (providers), `limits.rs` (rate limits, the audit log, the HTTP server, limits, actors),
//! `organization.rs` (organizations, the admin plugin, JWT), `mail.rs` (mail, email
//! verification, account flows), `session.rs` (sessions, passwords, logs); this one holds
//! the whole [`Config`], secrets, and the loading in layers.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod api_key;
mod by_mail;
mod limits;
mod mail;
mod organization;
mod session;
mod social;
mod store;
#[cfg(test)]
mod tests;
mod two_factor;
mod ui;
mod webhooks;

pub use api_key::*;
pub use by_mail::*;
pub use limits::*;
pub use mail::*;
pub use organization::*;
pub use session::*;
pub use social::*;
pub use store::*;
pub use two_factor::*;
pub use ui::*;
pub use webhooks::*;

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
    /// The two-factor plugin: TOTP, codes by mail, backup codes, trusted devices.
    pub two_factor: TwoFactorConfig,
    /// The email-OTP plugin: sign-in, verification and password reset by a mailed code.
    pub email_otp: EmailOtpConfig,
    /// The magic-link plugin: sign-in by a mailed link.
    pub magic_link: MagicLinkConfig,
    /// The api-key plugin: keys for tenants' servers and scripts.
    pub api_key: ApiKeyConfig,
    /// Webhooks: events delivered to the endpoints organizations and administrators register.
    pub webhooks: WebhooksConfig,
    /// The hosted pages as the tenant's own: name, logo, colour, help, home.
    pub ui: UiConfig,
    /// Where the data lives: `sqlite` (a file in `data_dir`; one machine) or `scylla` (a
    /// ScyllaDB or Cassandra cluster shared by any number of Gatehouse processes).
    pub store: StoreKind,
    pub scylla: ScyllaConfig,
    /// Social sign-in providers by id (`[social.github]`, `GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID`);
    /// see README, "Social sign-in".
    pub social: BTreeMap<String, SocialProviderConfig>,
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
            two_factor: TwoFactorConfig::default(),
            email_otp: EmailOtpConfig::default(),
            magic_link: MagicLinkConfig::default(),
            api_key: ApiKeyConfig::default(),
            webhooks: WebhooksConfig::default(),
            ui: UiConfig::default(),
            store: StoreKind::Sqlite,
            scylla: ScyllaConfig::default(),
            social: BTreeMap::new(),
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

/// The crash tests' failpoint (`storage::failpoint`): not a setting.
const FAILPOINT_ENV: &str = "GATEHOUSE_FAILPOINT";
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

    /// The name the pages and mail use: `ui.app_name`, else `mail.app_name`.
    pub fn app_name(&self) -> &str {
        match self.ui.app_name.trim() {
            "" => &self.mail.app_name,
            name => name,
        }
    }

    /// Once the listener is bound: a derived base URL takes the port really chosen (`:0`).
    pub fn bound_to(&mut self, local: std::net::SocketAddr) {
        if self.base_url_derived {
            self.base_url = base_url_for(&local.to_string());
        }
    }

    /// The origins trusted besides `base_url`'s: `trusted_origins`, and when the base URL was
    /// derived from a loopback listen address (`http://localhost:P`), the other spellings of
    /// that address (`http://127.0.0.1:P`, `http://[::1]:P`): the start line prints one of
    /// them, and a page opened there must be able to talk to its own server.
    pub fn origins_besides_base(&self) -> Vec<String> {
        let mut out = self.trusted_origins.clone();
        if self.base_url_derived {
            if let Some(rest) = self.base_url.strip_prefix("http://localhost:") {
                if rest.parse::<u16>().is_ok() {
                    out.push(format!("http://127.0.0.1:{rest}"));
                    out.push(format!("http://[::1]:{rest}"));
                }
            }
        }
        out
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
        if self.email_otp.expires_in == 0 || self.magic_link.expires_in == 0 {
            return bad("email_otp.expires_in and magic_link.expires_in must be positive".into());
        }
        if let Err(e) = self.ui.check(&self.base_url, &self.trusted_origins) {
            return bad(e);
        }
        if let Err(e) = self.api_key.check() {
            return bad(e);
        }
        if let Err(e) = self.webhooks.check() {
            return bad(e);
        }
        if self.email_otp.allowed_attempts == 0 {
            return bad("email_otp.allowed_attempts must be at least 1".into());
        }
        for (id, p) in &self.social {
            if crate::plugins::social::providers::catalog::find(id).is_none() {
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
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && k != CONFIG_ENV && k != FAILPOINT_ENV)
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
        // A TOML list (`[1, 1, 2, 5]`).
        if raw.trim().starts_with('[') {
            if let Some(v) = toml::from_str::<toml::Table>(&format!("v = {raw}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
            {
                candidates.push(v);
            }
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
