//! Gatehouse's HTTP API: better-auth's routes under `/api/auth`, the server's configuration,
//! and how the pieces (store, actors, hashing, cookies) are wired into one application.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod audit;
pub mod client;
pub mod config;
pub mod crypto;
pub mod delivery;
pub mod dto;
pub mod error;
pub mod http;
pub mod links;
pub mod mail;
pub mod metrics;
pub mod openapi;
pub mod passwords;
pub mod payload_errors;
pub mod plugins;
pub mod rate_limit;
pub mod seed;
pub mod server;
pub mod session;
pub mod ui;

use plugins::jwt::keys as jwt;
use plugins::social::providers as social;

use config::{Config, Secret};
use poem::{Endpoint, EndpointExt, Route};
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, DynStore};

pub const BASE_PATH: &str = "/api/auth";

/// How long the event stream keeps domain and mail events (its consumers read them sooner).
pub const EVENTS_KEPT_DAYS: i64 = 7;

/// Everything a request handler may use. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    /// The store, read-only: writes go through `actors`.
    pub reader: actors::Reader,
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: crypto::Signer,
    pub hasher: crypto::PasswordHasher,
    pub origins: http::TrustedOrigins,
    pub cookies: http::CookieNames,
    /// Who is calling, and the cookies of sessions (see [`session::Sessions`]).
    pub sessions: session::Sessions,
    /// Password rules and checks.
    pub passwords: passwords::Passwords,
    /// The account flows' mail.
    pub account_mail: plugins::core::AccountMail,
    /// New users with a password, and passwords checked for a sign-in.
    pub credentials: plugins::core::Credentials,
    /// The organization plugin's workflows and reads beside its actors.
    pub orgs: plugins::organization::Orgs,
    /// What requests keep in the audit log (see [`audit`]).
    pub audit: audit::Audit,
    /// Sends what decisions stored (see [`delivery`]).
    pub mail: delivery::Mail,
    /// Links on the base URL.
    pub links: links::Links,
    /// Delivers stored mail its request did not (see [`delivery`]).
    pub mail_consumer: actors::consumers::ConsumerHandle,
    /// Counts domain events (`metrics::EventCounter`).
    pub events_consumer: actors::consumers::ConsumerHandle,
    /// Drops this process's organization views that other processes changed (when the view
    /// cache is on).
    pub views_consumer: Option<actors::consumers::ConsumerHandle>,
    /// The social plugin's flows, with the configured providers.
    pub social_flow: plugins::social::SocialFlow,
    /// The two-factor plugin: secrets, codes, the sign-in challenge, trusted devices.
    pub two_factor: plugins::two_factor::TwoFactorFlow,
    /// The passkey plugin: the relying party and its ceremonies.
    pub passkeys: plugins::passkey::PasskeyFlow,
    /// The email-OTP plugin: codes by mail.
    pub email_otp: plugins::email_otp::EmailOtp,
    /// The magic-link plugin: sign-in links by mail.
    pub magic_links: plugins::magic_link::MagicLinks,
    /// Webhooks: endpoints, the deliveries' fan-out and sender.
    pub webhooks: plugins::webhooks::Webhooks,
    /// The fan-out that stores a delivery for each event an endpoint wants, and the sender
    /// (when `webhooks.enabled`).
    pub webhooks_running: Option<Arc<plugins::webhooks::Running>>,
    pub jwt: jwt::Jwt,
    pub role_catalog: RoleCatalog,
    pub limiter: Arc<rate_limit::Limiter>,
    /// `trusted_proxies`, parsed.
    pub proxies: Vec<rate_limit::Cidr>,
    pub metrics: metrics::Metrics,
}

/// The roles valid in every organization (built-in, then configured) with what each grants,
/// and what only owners hold: the permission catalogue's data, fixed at start.
#[derive(Debug, Clone, Default)]
pub struct RoleCatalog {
    pub roles: Vec<(String, policy::Permissions)>,
    pub owner_only: policy::Permissions,
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("data directory {0}: {1}")]
    DataDir(String, std::io::Error),
    #[error("secret: {0}")]
    Secret(String),
    #[error("storage: {0}")]
    Storage(#[from] storage::StoreError),
    #[error("actors: {0}")]
    Actors(#[from] actors::ActorError),
    #[error("password hashing: {0}")]
    Hash(#[from] crypto::HashError),
    #[error("mail: {0}")]
    Mail(#[from] mail::MailError),
    #[error("social sign-in: {0}")]
    Social(String),
    #[error("organization roles: {0}")]
    Roles(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("jwt: {0}")]
    Jwt(#[from] jwt::JwtError),
}

/// Every plugin's operations (see [`plugins`]).
pub use plugins::Apis;

use openapi::api_paths;
pub use openapi::{openapi_json, openapi_service};

/// Uses the configured secret, or the one kept in the data dir, or generates and keeps one.
fn load_secret(config: &Config) -> Result<Secret, StartError> {
    if let Some(s) = &config.secret {
        return Ok(s.clone());
    }
    let path = config.data_dir.join("secret");
    match std::fs::read_to_string(&path) {
        Ok(s) if s.trim().len() >= 32 => return Ok(Secret::new(s.trim())),
        Ok(_) => {
            return Err(StartError::Secret(format!(
                "{} holds fewer than 32 bytes",
                path.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(StartError::Secret(format!("{}: {e}", path.display()))),
    }
    let secret = storage::random_string(64);
    write_private(&path, &secret)
        .map_err(|e| StartError::Secret(format!("{}: {e}", path.display())))?;
    tracing::warn!(
        path = %path.display(),
        "no secret configured: generated one and kept it in the data directory; set \
         GATEHOUSE_SECRET (at least 32 bytes) in production so every instance shares it"
    );
    Ok(Secret::new(secret))
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?.write_all(contents.as_bytes())
}

/// The configured store: the SQLite file in the data dir (created and migrated as needed), or
/// the ScyllaDB keyspace (which must have been migrated with `gatehouse migrate`).
pub async fn open_store(config: &Config) -> Result<DynStore, StartError> {
    Ok(match config.store {
        config::StoreKind::Sqlite => {
            std::fs::create_dir_all(&config.data_dir)
                .map_err(|e| StartError::DataDir(config.data_dir.display().to_string(), e))?;
            Arc::new(
                storage::sqlite::SqliteStore::open(config.data_dir.join("gatehouse.db")).await?,
            )
        }
        config::StoreKind::Scylla => {
            let opts = config
                .scylla
                .options()
                .map_err(|e| StartError::Config(e.to_string()))?;
            Arc::new(storage::scylla::ScyllaStore::connect(&opts).await?)
        }
    })
}

/// Creates or updates the configured store's schema (`gatehouse migrate`); says what it did.
pub async fn migrate(config: &Config) -> Result<String, StartError> {
    match config.store {
        config::StoreKind::Sqlite => {
            open_store(config).await?;
            Ok(format!(
                "SQLite store {} is at the current schema",
                config.data_dir.join("gatehouse.db").display()
            ))
        }
        config::StoreKind::Scylla => {
            let opts = config
                .scylla
                .options()
                .map_err(|e| StartError::Config(e.to_string()))?;
            let store = storage::scylla::ScyllaStore::migrate(&opts).await?;
            Ok(format!(
                "ScyllaDB keyspace {} is at schema version {}",
                opts.keyspace,
                store.schema_version().await?
            ))
        }
    }
}

/// The actors' settings, from the configuration.
fn actor_config(config: &Config) -> actors::ActorConfig {
    let perms = |roles: &std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, Vec<String>>,
    >| {
        roles
            .iter()
            .map(|(name, perms)| {
                let perms = perms
                    .iter()
                    .map(|(res, acts)| (res.clone(), acts.iter().cloned().collect()))
                    .collect();
                (name.clone(), perms)
            })
            .collect()
    };
    actors::ActorConfig {
        idle_timeout: Duration::from_millis(config.actors.idle_timeout_ms),
        call_timeout: Duration::from_millis(config.actors.call_timeout_ms),
        max_pending: config.actors.max_pending.max(1),
        sessions: actors::SessionPolicy {
            expires_in: chrono::Duration::seconds(config.session.expires_in as i64),
            update_age: chrono::Duration::seconds(config.session.update_age as i64),
            dont_remember_expires_in: chrono::Duration::seconds(
                config.session.dont_remember_expires_in as i64,
            ),
        },
        org: actors::OrgConfig {
            membership_limit: config.limits.membership_limit,
            invitation_expires_in: chrono::Duration::seconds(
                config.limits.invitation_expires_in as i64,
            ),
            require_verified_email: config.organization.require_email_verification_on_invitation,
            invitations_per_day: config.limits.invitations_per_organization_per_day,
            invitations_per_inviter_per_day: config.limits.invitations_per_inviter_per_day,
            global_roles: perms(&config.organization.roles),
        },
        admin: policy::AdminRoles {
            roles: perms(&config.admin.roles),
            admin_roles: config.admin.admin_roles.clone(),
            admin_user_ids: config.admin.admin_user_ids.clone(),
        },
        view_cache: actors::CacheConfig {
            ttl: Duration::from_millis(config.organization.view_cache.ttl_ms),
            max_entries: config.organization.view_cache.max_entries,
        },
        user_cache: actors::CacheConfig {
            ttl: Duration::from_millis(config.session.user_cache.ttl_ms),
            max_entries: config.session.user_cache.max_entries,
        },
    }
}

/// What the configuration alone makes, checked before anything is created.
pub struct Prepared {
    actor_config: actors::ActorConfig,
    hasher: crypto::PasswordHasher,
    mailer: mail::Mailer,
    role_catalog: RoleCatalog,
    limiter: rate_limit::Limiter,
    proxies: Vec<rate_limit::Cidr>,
    metrics: metrics::Metrics,
}

/// Checks everything that can be checked from the configuration alone — roles, hashing
/// cost, mail, social providers, JWT settings — without creating anything (no data dir, no
/// secret, no database): `serve` runs it before it touches the disk, `gatehouse config` too.
/// What it made is used by the start that follows.
pub async fn preflight(config: &Config) -> Result<Prepared, StartError> {
    let ac = actor_config(config);
    policy::AdminPolicy::new(&ac.admin)
        .await
        .map_err(|e| StartError::Roles(format!("admin roles: {e}")))?;
    let global = policy::Policy::new("config", &ac.org.global_roles, &[])
        .await
        .map_err(|e| StartError::Roles(e.to_string()))?;
    let role_catalog = policy::BUILTIN_ROLES
        .iter()
        .map(|r| r.to_string())
        .chain(ac.org.global_roles.iter().map(|(name, _)| name.clone()))
        .map(|role| {
            let perms = global.permissions_of(&role)?.into_owned();
            Ok((role, perms))
        })
        .collect::<Result<Vec<_>, policy::PolicyError>>()
        .map(|roles| RoleCatalog {
            roles,
            owner_only: global.owner_only().clone(),
        })
        .map_err(|e| StartError::Roles(e.to_string()))?;
    let metrics = metrics::Metrics::new().map_err(|e| StartError::Config(e.to_string()))?;
    let hasher = crypto::PasswordHasher::new(&config.password)?
        .with_metrics(metrics.hash_queue.clone(), metrics.hash_seconds.clone());
    let mailer = mail::Mailer::from_config(&config.mail, &config.data_dir)?
        .named(config.app_name())
        .with_metrics(metrics.mails.clone());
    let proxies = config
        .trusted_proxies
        .iter()
        .map(|p| rate_limit::Cidr::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StartError::Config(format!("trusted_proxies: {e}")))?;
    let limiter = rate_limit::Limiter::new(
        &config.rate_limit,
        Arc::new(storage::MemoryRateLimits::default()),
        &api_paths(),
    )
    .map_err(StartError::Config)?
    .with_metrics(metrics.rate_limited.clone());
    // Provider and JWT settings do not depend on the secret's value: any will do here.
    let probe = "p".repeat(32);
    social::Social::from_config(config, &probe).map_err(StartError::Social)?;
    jwt::Jwt::new(&config.jwt, &config.base_url, &probe)?;
    if config.data_dir.exists() && !config.data_dir.is_dir() {
        return Err(StartError::DataDir(
            config.data_dir.display().to_string(),
            std::io::Error::other("not a directory"),
        ));
    }
    Ok(Prepared {
        actor_config: ac,
        hasher,
        mailer,
        role_catalog,
        limiter,
        proxies,
        metrics,
    })
}

/// Creates and removes a file in the data dir: a read-only one is refused at start, not
/// found out by the first write.
pub fn check_data_dir_writable(dir: &Path) -> Result<(), StartError> {
    let probe = dir.join(format!(".write-check-{}", storage::random_lower_alnum(12)));
    let fail = |e: std::io::Error| StartError::DataDir(dir.display().to_string(), e);
    std::fs::write(&probe, b"").map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)
}

impl AppState {
    /// Checks the configuration, opens the configured store, starts the actors, and prepares
    /// everything else.
    pub async fn start(config: Config, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        let prepared = preflight(&config).await?;
        let store = open_store(&config).await?;
        Self::assemble(config, clock, store, prepared).await
    }

    /// Like [`AppState::start`], on a store the caller opened.
    pub async fn start_with_store(
        config: Config,
        clock: Arc<dyn Clock>,
        store: DynStore,
    ) -> Result<Self, StartError> {
        let prepared = preflight(&config).await?;
        Self::assemble(config, clock, store, prepared).await
    }

    async fn assemble(
        config: Config,
        clock: Arc<dyn Clock>,
        store: DynStore,
        prepared: Prepared,
    ) -> Result<Self, StartError> {
        let Prepared {
            actor_config,
            hasher,
            mailer,
            role_catalog,
            limiter,
            proxies,
            metrics,
        } = prepared;
        let limiter = Arc::new(limiter.with_store(store.clone()));
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| StartError::DataDir(config.data_dir.display().to_string(), e))?;
        check_data_dir_writable(&config.data_dir)?;
        store.check_health().await?;
        let secret = load_secret(&config)?;
        let actors = actors::Actors::start(store.clone(), clock.clone(), actor_config).await?;
        let social =
            social::Social::from_config(&config, secret.expose()).map_err(StartError::Social)?;
        let jwt = jwt::Jwt::new(&config.jwt, &config.base_url, secret.expose())?;
        let mailer = Arc::new(mailer);
        let redeliver_after = Duration::from_secs(config.mail.redeliver_after_secs);
        let mail_consumer = actors::consumers::spawn(
            store.clone(),
            clock.clone(),
            storage::random_string(16),
            delivery::MailConsumer::spec(redeliver_after),
            Arc::new(delivery::MailConsumer::new(
                mailer.clone(),
                &actors,
                clock.clone(),
                redeliver_after,
            )),
        );
        let events_consumer = actors::consumers::spawn(
            store.clone(),
            clock.clone(),
            storage::random_string(16),
            actors::consumers::ConsumerSpec {
                name: "metrics".into(),
                topic: storage::Topic::Domain,
                batch: 500,
                poll: Duration::from_secs(2),
                lease: Duration::from_secs(30),
                shared: true,
                names_only: true,
            },
            Arc::new(metrics::EventCounter(metrics.events.clone())),
        );
        let webhooks = plugins::webhooks::Webhooks::new(
            config.webhooks.clone(),
            store.clone(),
            clock.clone(),
            secret.expose(),
            plugins::webhooks::WebhookMetrics {
                attempts: metrics.webhook_attempts.clone(),
                lag: metrics.webhook_lag.clone(),
            },
        );
        let webhooks_running = webhooks.start().map(Arc::new);
        let views_consumer = actors
            .caches_enabled()
            .then(|| actors.spawn_cache_invalidation(Duration::from_millis(200)));
        if jwt.enabled() {
            jwt.ensure_keys(&actors, &actors.reader(), clock.now())
                .await?;
        }
        let signer = crypto::Signer::new(secret.expose());
        let links = links::Links::new(&config.base_url);
        let mail = delivery::Mail::new(mailer.clone(), actors.clone());
        let account_mail = plugins::core::AccountMail::new(
            signer.clone(),
            clock.clone(),
            links.clone(),
            mail.clone(),
            actors.clone(),
            config.email_verification.expires_in,
        );
        let shared_config = Arc::new(config.clone());
        let cookies = http::CookieNames::new(&config.cookie_prefix, config.is_https());
        let audit = audit::Audit::new(
            &config.audit,
            actors.clone(),
            metrics.audit_failures.clone(),
        );
        let keys = plugins::api_key::ApiKeys::new(plugins::api_key::ApiKeysInner {
            config: config.api_key.clone(),
            session_expires_in: config.session.expires_in,
            actors: actors.clone(),
            clock: clock.clone(),
            audit: audit.clone(),
            requests: metrics.api_key_requests.clone(),
            cache: Default::default(),
        });
        let sessions = session::Sessions::new(
            shared_config.clone(),
            &actors,
            clock.clone(),
            signer.clone(),
            cookies.clone(),
            keys,
        );
        let two_factor =
            plugins::two_factor::TwoFactorFlow::new(plugins::two_factor::TwoFactorInner {
                actors: actors.clone(),
                clock: clock.clone(),
                signer: signer.clone(),
                sealer: crypto::Sealer::new(secret.expose(), "gatehouse totp secrets v1", "gt1."),
                cookies: cookies.clone(),
                config: config.two_factor.clone(),
                app_name: config.app_name().to_owned(),
                mail: mail.clone(),
            });
        let passkeys = plugins::passkey::PasskeyFlow::new(
            actors.clone(),
            clock.clone(),
            signer.clone(),
            cookies.clone(),
            &config.base_url,
            &config.origins_besides_base(),
            config.app_name(),
        )
        .map_err(StartError::Config)?;
        let email_otp = plugins::email_otp::EmailOtp::new(plugins::email_otp::EmailOtpInner {
            actors: actors.clone(),
            clock: clock.clone(),
            signer: signer.clone(),
            mail: mail.clone(),
            config: config.email_otp.clone(),
        });
        let magic_links = plugins::magic_link::MagicLinks::new(plugins::magic_link::Inner {
            actors: actors.clone(),
            clock: clock.clone(),
            signer: signer.clone(),
            mail: mail.clone(),
            links: links.clone(),
            config: config.magic_link.clone(),
        });
        let credentials = plugins::core::Credentials::new(plugins::core::CredentialsInner {
            actors: actors.clone(),
            hasher: hasher.clone(),
            limiter: limiter.clone(),
            audit: audit.clone(),
            mail: mail.clone(),
            account_mail: account_mail.clone(),
            clock: clock.clone(),
            sign_ins: metrics.sign_ins.clone(),
            send_on_sign_up: config.email_verification.send_on_sign_up,
            require_verification: config.email_verification.require_email_verification,
        });
        let social_flow = plugins::social::SocialFlow::new(plugins::social::SocialFlowInner {
            config: shared_config,
            social,
            audit: audit.clone(),
            sessions: sessions.clone(),
            mail: mail.clone(),
            account_mail: account_mail.clone(),
            links: links.clone(),
            cookies: cookies.clone(),
            origins: http::TrustedOrigins::new(&config.base_url, &config.origins_besides_base()),
            signer: signer.clone(),
            clock: clock.clone(),
            actors: actors.clone(),
            reader: actors.reader(),
            two_factor: two_factor.clone(),
        });
        Ok(Self(Arc::new(Inner {
            jwt,
            social_flow,
            two_factor,
            passkeys,
            email_otp,
            magic_links,
            webhooks,
            webhooks_running,
            origins: http::TrustedOrigins::new(&config.base_url, &config.origins_besides_base()),
            cookies,
            signer,
            sessions,
            passwords: passwords::Passwords::new(&config.password, hasher.clone(), actors.reader()),
            orgs: plugins::organization::Orgs::new(
                &actors,
                clock.clone(),
                &config.organization,
                &config.base_url,
            ),
            audit,
            mail,
            links,
            account_mail,
            credentials,
            mail_consumer,
            events_consumer,
            views_consumer,
            hasher,
            reader: actors.reader(),
            actors,
            clock,
            config,
            role_catalog,
            limiter,
            proxies,
            metrics,
        })))
    }

    /// Waits for the work requests left for after their answers: mail (see
    /// [`delivery::Mail::after_answer`]) and refusals' audit records
    /// ([`audit::Audit::record_after`]).
    pub async fn settled(&self) {
        self.mail.settled().await;
        self.audit.flushed().await;
    }

    /// The whole HTTP application.
    pub fn endpoint(&self) -> impl Endpoint + 'static {
        let api = openapi_service();
        let doc = bytes::Bytes::from(openapi_json());
        // Scalar's page (3.5 MB: its script inlined) is made on its first request, not kept by
        // every server that never serves it; it embeds the document verbatim: swap in the
        // served one.
        let page = Arc::new(std::sync::OnceLock::<bytes::Bytes>::new());
        let served = doc.clone();
        let reference = poem::endpoint::make_sync(move |_| {
            let page = page.get_or_init(|| {
                let api = openapi_service();
                let doc = String::from_utf8_lossy(&served);
                api.scalar_html().replacen(&api.spec(), &doc, 1).into()
            });
            poem::Response::builder()
                .content_type("text/html; charset=utf-8")
                .body(page.clone())
        });
        let spec = poem::endpoint::make_sync(move |_| {
            poem::Response::builder()
                .content_type("application/json; charset=utf-8")
                .body(doc.clone())
        });
        Route::new()
            .at(format!("{BASE_PATH}/openapi.json"), spec)
            .at(format!("{BASE_PATH}/reference"), reference)
            .at("/health/live", poem::get(plugins::core::meta::live))
            .at("/health/ready", poem::get(plugins::core::meta::ready))
            .nest(BASE_PATH, api)
            .at("/", ui::Ui)
            .at("/*path", ui::Ui)
            .around(http::middleware)
            .data(self.clone())
    }

    /// `GET /metrics` in Prometheus' text format, for the separate `metrics_listen` address
    /// (never the public one).
    pub fn metrics_endpoint(&self) -> impl Endpoint + 'static {
        let state = self.clone();
        Route::new().at(
            "/metrics",
            poem::get(poem::endpoint::make_sync(move |_| {
                let (users, orgs) = state.actors.live_actors_by_kind();
                let live = &state.metrics.actors;
                live.with_label_values(&["user"]).set(users as i64);
                live.with_label_values(&["organization"]).set(orgs as i64);
                poem::Response::builder()
                    .content_type("text/plain; version=0.0.4; charset=utf-8")
                    .body(state.metrics.render())
            })),
        )
    }

    /// Deletes expired sessions, verification values and ended rate-limit windows now and
    /// then (housekeeping only: every read checks expiry itself).
    pub fn spawn_housekeeping(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let state = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if let Err(e) = state.actors.purge_expired(state.clock.now()).await {
                    tracing::warn!(error = %e, "purging expired sessions and tokens failed");
                }
                if let Err(e) = state.limiter.purge(state.clock.now()).await {
                    tracing::warn!(error = %e, "purging ended rate-limit windows failed");
                }
                let kept = chrono::Duration::days(i64::from(state.config.audit.retention_days));
                if let Err(e) = state.actors.purge_audit(state.clock.now() - kept).await {
                    tracing::warn!(error = %e, "purging old audit events failed");
                }
                // The stream's domain and mail events are kept a week (on ScyllaDB their TTL).
                let stream = state.clock.now() - chrono::Duration::days(EVENTS_KEPT_DAYS);
                if let Err(e) = state.actors.store().purge_events(stream).await {
                    tracing::warn!(error = %e, "purging old stream events failed");
                }
                // Finished webhook deliveries (on ScyllaDB they expire after 30 days).
                let days = i64::try_from(state.config.webhooks.keep_days).unwrap_or(i64::MAX);
                let before = state.clock.now() - chrono::Duration::days(days.min(36_500));
                if let Err(e) = state.actors.store().purge_deliveries(before).await {
                    tracing::warn!(error = %e, "purging old webhook deliveries failed");
                }
            }
        })
    }
}
