//! Gatehouse's HTTP API: better-auth's routes under `/api/auth`, the server's configuration,
//! and how the pieces (store, actors, hashing, cookies) are wired into one application.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod config;
pub mod crypto;
pub mod dto;
pub mod error;
pub mod http;
pub mod mail;
pub mod routes;
pub mod session;

use config::{Config, Secret};
use poem::{Endpoint, EndpointExt, Route};
use poem_openapi::OpenApiService;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, DynStore};

pub const BASE_PATH: &str = "/api/auth";

/// Everything a request handler may use. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub store: DynStore,
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: crypto::Signer,
    pub hasher: crypto::PasswordHasher,
    pub origins: http::TrustedOrigins,
    pub cookies: http::CookieNames,
    pub revocations: session::Revocations,
    pub mailer: mail::Mailer,
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
    #[error("organization roles: {0}")]
    Roles(String),
}

/// Every group of operations, one per OpenAPI tag.
pub type Apis = (
    routes::AuthApi,
    routes::SessionApi,
    routes::UserApi,
    routes::AccountApi,
    routes::OrganizationApi,
    routes::TeamApi,
    routes::MetaApi,
);

/// The OpenAPI service with every operation; also what `gatehouse openapi` prints.
pub fn openapi_service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(
        (
            routes::AuthApi,
            routes::SessionApi,
            routes::UserApi,
            routes::AccountApi,
            routes::OrganizationApi,
            routes::TeamApi,
            routes::MetaApi,
        ),
        "Gatehouse",
        env!("CARGO_PKG_VERSION"),
    )
    .description(
        "Authentication, account and organization server speaking better-auth's HTTP API. \
         Errors are `{code, message}` JSON bodies.",
    )
    .server(BASE_PATH)
}

/// The OpenAPI document as committed in `openapi/openapi.json`.
pub fn openapi_json() -> String {
    openapi_service().spec()
}

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

impl AppState {
    /// Opens the store in the data dir, starts the actors, and prepares everything else.
    pub async fn start(config: Config, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| StartError::DataDir(config.data_dir.display().to_string(), e))?;
        let secret = load_secret(&config)?;
        let store: DynStore = Arc::new(
            storage::sqlite::SqliteStore::open(config.data_dir.join("gatehouse.db")).await?,
        );
        let actor_config = actors::ActorConfig {
            idle_timeout: Duration::from_millis(config.actors.idle_timeout_ms),
            call_timeout: Duration::from_millis(config.actors.call_timeout_ms),
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
                require_verified_email: config
                    .organization
                    .require_email_verification_on_invitation,
                global_roles: config
                    .organization
                    .roles
                    .iter()
                    .map(|(name, perms)| {
                        let perms = perms
                            .iter()
                            .map(|(res, acts)| (res.clone(), acts.iter().cloned().collect()))
                            .collect();
                        (name.clone(), perms)
                    })
                    .collect(),
            },
        };
        // Configured roles are checked once here, not on every organization's first use.
        policy::Policy::new("config", &actor_config.org.global_roles, &[])
            .await
            .map_err(|e| StartError::Roles(e.to_string()))?;
        let actors = actors::Actors::start(store.clone(), clock.clone(), actor_config).await?;
        let hasher = crypto::PasswordHasher::new(&config.password)?;
        let mailer = mail::Mailer::from_config(&config.mail, &config.data_dir)?;
        Ok(Self(Arc::new(Inner {
            origins: http::TrustedOrigins::new(&config.base_url, &config.trusted_origins),
            cookies: http::CookieNames::new(&config.cookie_prefix, config.is_https()),
            signer: crypto::Signer::new(secret.expose()),
            revocations: session::Revocations::default(),
            mailer,
            hasher,
            actors,
            store,
            clock,
            config,
        })))
    }

    /// The whole HTTP application.
    pub fn endpoint(&self) -> impl Endpoint + 'static {
        let api = openapi_service();
        let spec = api.spec_endpoint();
        let reference = api.scalar();
        Route::new()
            .at(format!("{BASE_PATH}/openapi.json"), spec)
            .nest(format!("{BASE_PATH}/reference"), reference)
            .nest(BASE_PATH, api)
            .around(http::middleware)
            .data(self.clone())
    }

    /// Deletes expired sessions and verification values now and then (housekeeping only:
    /// every read checks expiry itself).
    pub fn spawn_housekeeping(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let state = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let now = state.clock.now();
                if let Err(e) = state.store.purge_expired_sessions(now).await {
                    tracing::warn!(error = %e, "purging expired sessions failed");
                }
                if let Err(e) = state.store.purge_expired_verifications(now).await {
                    tracing::warn!(error = %e, "purging expired verifications failed");
                }
            }
        })
    }
}
