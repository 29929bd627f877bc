//! The `gatehouse` server binary.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clap::{Parser, Subcommand};
use gatehouse_api::audit::{action, Event, Origin};
use gatehouse_api::config::Config;
use gatehouse_api::{server, AppState};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Gatehouse: an authentication, account and organization server speaking better-auth's API.
///
/// Configuration comes from built-in defaults, then the TOML file given with --config, then
/// GATEHOUSE_* environment variables (GATEHOUSE_LISTEN, GATEHOUSE_BASE_URL, GATEHOUSE_DATA_DIR,
/// GATEHOUSE_SECRET, GATEHOUSE_TRUSTED_ORIGINS, GATEHOUSE_COOKIE_PREFIX, and any nested key as
/// GATEHOUSE_SECTION__KEY, e.g. GATEHOUSE_SESSION__EXPIRES_IN=3600). See README.md.
#[derive(Parser)]
#[command(name = "gatehouse", version)]
struct Cli {
    /// A TOML configuration file (or the GATEHOUSE_CONFIG variable).
    #[arg(long, global = true, value_name = "PATH", env = "GATEHOUSE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (the default).
    Serve,
    /// Print the OpenAPI document to stdout.
    Openapi,
    /// Print the effective configuration as TOML (secrets redacted).
    Config,
    /// Create or update the store's schema (the ScyllaDB keyspace and tables; the SQLite file
    /// migrates itself), then exit. Run it once per deployment, before the servers start.
    Migrate,
    /// Write everything in the configured store as JSON lines (users with their accounts and
    /// live sessions, organizations with everything in them, key pairs, pending links) — e.g.
    /// to move from SQLite to ScyllaDB. The dump holds password hashes, session tokens and
    /// pending links: keep it as safe as the database.
    Export {
        /// Write here (created, readable by the owner only) instead of standard output.
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Read a dump made by `export` into the configured store, which must be empty (and, on
    /// ScyllaDB, migrated).
    Import {
        /// Read from here instead of standard input.
        #[arg(long, value_name = "PATH")]
        input: Option<PathBuf>,
    },
    /// Users, on the configured store (whether the server runs or not): e.g. the first admin.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// The JWT signing keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Fill the configured store with test data for scale runs: users `<prefix><n>@seed.example`
    /// (verified, all with one password, with live sessions) and organizations with members,
    /// written through the storage traits (no SQL), many at once. Not for production stores.
    Seed {
        #[arg(long, default_value_t = 1000)]
        users: u64,
        /// Live sessions per user.
        #[arg(long, default_value_t = 1)]
        sessions: u32,
        #[arg(long, default_value_t = 0)]
        organizations: u64,
        /// Members of each organization besides its owner.
        #[arg(long, default_value_t = 0)]
        members: u32,
        #[arg(long, default_value = "user")]
        prefix: String,
        /// Every seeded user's password.
        #[arg(long, default_value = "seed-password-1")]
        password: String,
        /// Writes in flight at once.
        #[arg(long, default_value_t = 64)]
        parallel: usize,
    },
    /// The audit log of security events.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Write the events from `--since` (to `--until`, default now) as JSON lines, oldest
    /// first, to standard output (or `--output`).
    Export {
        /// An ISO 8601 date-time (`2026-11-01T00:00:00Z`), or a time back from now: `90m`,
        /// `24h`, `7d`. Never further back than `audit.retention_days`.
        #[arg(long)]
        since: String,
        /// As `--since`; default: now.
        #[arg(long)]
        until: Option<String>,
        /// Write here (created, readable by the owner only) instead of standard output.
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a user with a password. The password is read from standard input (one line)
    /// with --password-stdin; otherwise one is generated and printed once.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        /// A role (or comma-separated roles), e.g. `admin`.
        #[arg(long)]
        role: Option<String>,
        #[arg(long)]
        password_stdin: bool,
        /// Mark the email as verified.
        #[arg(long)]
        verified: bool,
    },
    /// Set the global role(s) of the user with this email.
    SetRole { email: String, role: String },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Add a new signing key: it signs from now on (every server picks it up within 30 s);
    /// older keys stay in the JWKS until the tokens they signed have expired.
    Rotate,
}

/// mimalloc: glibc's allocator made threads wait on its arena locks under load (a tenth of the
/// server's samples in `perf` during organization reads).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_t` (mimalloc.h of the libmimalloc-sys the lock file pins): arenas are
/// committed as they are used, not all at once, and freed memory goes back to the system at
/// once ([`PURGE_DELAY_MS`]) — peak RSS stays where glibc's was.
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// Freed memory goes back to the system at once. The trade (bench/README): given back at once,
/// a page used again costs a page fault, zeroing and a TLB flush on the other core (3 faults
/// per organization write, 1.4 per get-session on the CQL store); kept 100 ms, reads and writes
/// went 5–15 % faster but the process held about 16 MB more between bursts.
/// `MIMALLOC_PURGE_DELAY=<ms>` in the environment chooses the other side.
const PURGE_DELAY_MS: std::ffi::c_long = 0;

fn main() -> ExitCode {
    // SAFETY: options are set before any other thread exists (mimalloc's options are not
    // thread-safe to set), with values mimalloc documents for them; the same holds for the
    // signal disposition.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
        // A file that may not grow (a size limit: `ulimit -f`) is a failed write the store
        // reports (503, reads go on), not a signal that ends the process — as PostgreSQL does.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = Cli::parse();
    if let Some(Command::Openapi) = cli.command {
        println!("{}", gatehouse_api::openapi_json());
        return ExitCode::SUCCESS;
    }
    let loaded = match Config::load(cli.config.as_deref(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gatehouse: {e}");
            return ExitCode::from(2);
        }
    };
    let config = loaded.config;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gatehouse: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if matches!(cli.command, Some(Command::Config)) {
        for w in &loaded.warnings {
            eprintln!("gatehouse: warning: {w}");
        }
        // What `serve` would refuse is refused here too.
        if let Err(e) = runtime.block_on(gatehouse_api::preflight(&config)) {
            eprintln!("gatehouse: {e}");
            return ExitCode::from(2);
        }
        return match toml::to_string_pretty(&config) {
            Ok(s) => {
                print!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("gatehouse: {e}");
                ExitCode::FAILURE
            }
        };
    }
    init_logging(&config);
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let done = match cli.command {
        Some(Command::Migrate) => runtime
            .block_on(gatehouse_api::migrate(&config))
            .map_err(Into::into),
        Some(Command::Export { output }) => runtime.block_on(export(&config, output)),
        Some(Command::Import { input }) => runtime.block_on(import(&config, input)),
        Some(Command::User { command }) => runtime.block_on(user_command(config, command)),
        Some(Command::Keys {
            command: KeysCommand::Rotate,
        }) => runtime.block_on(rotate_keys(config)),
        Some(Command::Seed {
            users,
            sessions,
            organizations,
            members,
            prefix,
            password,
            parallel,
        }) => {
            let plan = gatehouse_api::seed::Plan {
                users,
                sessions_per_user: sessions,
                organizations,
                members_per_organization: members,
                prefix,
                parallel,
            };
            runtime.block_on(seed(&config, plan, password))
        }
        Some(Command::Audit {
            command:
                AuditCommand::Export {
                    since,
                    until,
                    output,
                },
        }) => runtime.block_on(audit_export(&config, &since, until.as_deref(), output)),
        _ => {
            return match runtime.block_on(serve(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(error = %e, "gatehouse stopped with an error");
                    eprintln!("gatehouse: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    };
    match done {
        // What was done goes to stderr: stdout may be the dump.
        Ok(said) => {
            eprintln!("{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gatehouse: {e}");
            ExitCode::FAILURE
        }
    }
}

type CommandResult = Result<String, Box<dyn std::error::Error>>;

/// A new file readable by its owner only (a dump or an export holds what the store holds).
fn create_private(path: &std::path::Path) -> Result<std::fs::File, String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

async fn export(config: &Config, output: Option<PathBuf>) -> CommandResult {
    let store = gatehouse_api::open_store(config).await?;
    let counts = match output {
        Some(path) => {
            let mut out = std::io::BufWriter::new(create_private(&path)?);
            storage::transfer::export(&*store, &mut out).await?
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            storage::transfer::export(&*store, &mut out).await?
        }
    };
    Ok(format!("exported {counts}"))
}

async fn seed(config: &Config, plan: gatehouse_api::seed::Plan, password: String) -> CommandResult {
    if !plan
        .prefix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("--prefix: letters, digits, - and _ only".into());
    }
    let hasher = gatehouse_api::crypto::PasswordHasher::new(&config.password)?;
    let hash = hasher.hash(password).await?;
    let store = gatehouse_api::open_store(config).await?;
    let started = std::time::Instant::now();
    let done = gatehouse_api::seed::seed(&store, &plan, &hash, chrono::Utc::now()).await?;
    Ok(format!(
        "seeded {done} in {:.1} s",
        started.elapsed().as_secs_f64()
    ))
}

/// `spec` as an instant: an ISO 8601 date-time, or `<n>m`, `<n>h`, `<n>d` back from `now`.
fn instant(
    spec: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(spec) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let bad = || format!("{spec:?}: an ISO 8601 date-time or a time back like 90m, 24h, 7d");
    let (n, unit) = spec.split_at(spec.len().saturating_sub(1));
    let n: i64 = n.parse().map_err(|_| bad())?;
    let back = match unit {
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    now.checked_sub_signed(back).ok_or_else(bad)
}

async fn audit_export(
    config: &Config,
    since: &str,
    until: Option<&str>,
    output: Option<PathBuf>,
) -> CommandResult {
    use std::io::Write;
    let now = chrono::Utc::now();
    let since = instant(since, now)?.max(config.audit.oldest_kept(now));
    let until = match until {
        Some(u) => instant(u, now)?,
        None => now + chrono::Duration::seconds(1),
    };
    let store = gatehouse_api::open_store(config).await?;
    let mut out: Box<dyn Write> = match output {
        Some(path) => Box::new(std::io::BufWriter::new(create_private(&path)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut q = storage::AuditQuery::range(since, until, 1000);
    q.oldest_first = true;
    let mut n = 0u64;
    if since < until {
        loop {
            let page = store.list_audit(&q).await?;
            for e in &page.items {
                serde_json::to_writer(&mut out, e)?;
                out.write_all(b"\n")?;
                n += 1;
            }
            match page.next {
                Some(c) => q.after = Some(c),
                None => break,
            }
        }
    }
    out.flush()?;
    Ok(format!("exported {n} audit events"))
}

async fn import(config: &Config, input: Option<PathBuf>) -> CommandResult {
    let store = gatehouse_api::open_store(config).await?;
    let counts = match input {
        Some(path) => {
            let file = std::fs::File::open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            storage::transfer::import(&*store, std::io::BufReader::new(file)).await?
        }
        None => storage::transfer::import(&*store, std::io::stdin().lock()).await?,
    };
    Ok(format!("imported {counts}"))
}

/// The application on the configured store, for a command: writes go through the same actors
/// (and their compare-and-set on the store) as a running server's.
async fn app(config: Config) -> Result<AppState, Box<dyn std::error::Error>> {
    Ok(AppState::start(config, Arc::new(storage::SystemClock)).await?)
}

async fn user_command(config: Config, command: UserCommand) -> CommandResult {
    let state = app(config).await?;
    let server = actors::Caller::Server;
    let said = match command {
        UserCommand::Create {
            email,
            name,
            role,
            password_stdin,
            verified,
        } => {
            let email = gatehouse_api::plugins::normalize_email(&email)
                .ok_or_else(|| format!("not an email address: {email:?}"))?;
            let role = role
                .map(|r| policy::normalize_roles(&r))
                .transpose()
                .map_err(|e| format!("role: {e}"))?;
            let (password, generated) = if password_stdin {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
                (line.trim_end_matches(['\r', '\n']).to_owned(), false)
            } else {
                (
                    gatehouse_api::plugins::social::providers::random_token(24),
                    true,
                )
            };
            state
                .passwords
                .check_password_length(&password)
                .map_err(|e| e.to_string())?;
            let now = state.clock.now();
            let mut user = storage::User::new(&email, name, None, now);
            user.email_verified = verified;
            let hash = state.hasher.hash(password.clone()).await?;
            let account = storage::Account::credential(&user.id, hash, now);
            let ev = Event::new(action::ADMIN_USER_CREATED, &Origin::default())
                .user(&user.id)
                .target(user.email.clone())
                .detail("by", "cli");
            let user = state
                .actors
                .admin_create_user(&server, user, Some(account), role, &state.audit.noted(ev))
                .await
                .map_err(|e| gatehouse_api::error::ApiError::from(e).to_string())?;
            if generated {
                // Printed once, on stdout; never logged.
                println!("{password}");
            }
            format!("created user {} ({})", user.email, user.id)
        }
        UserCommand::SetRole { email, role } => {
            let role = policy::normalize_roles(&role).map_err(|e| format!("role: {e}"))?;
            let user = state
                .reader
                .get_user_by_email(&email.to_lowercase())
                .await?
                .ok_or_else(|| format!("no user with email {email}"))?;
            let ev = Event::new(action::ADMIN_ROLE_SET, &Origin::default())
                .user(&user.id)
                .detail("role", role.clone())
                .detail("by", "cli");
            let user = state
                .actors
                .admin_set_role(&server, &user.id, role.clone(), &state.audit.noted(ev))
                .await
                .map_err(|e| gatehouse_api::error::ApiError::from(e).to_string())?;
            format!(
                "{} now has role {}",
                user.email,
                user.role.as_deref().unwrap_or("user")
            )
        }
    };
    state.actors.shutdown().await;
    Ok(said)
}

async fn rotate_keys(config: Config) -> CommandResult {
    let state = app(config).await?;
    let kp = state.jwt.new_key_pair(state.clock.now())?;
    state.actors.add_key_pair(&kp).await?;
    state.actors.shutdown().await;
    Ok(format!("new signing key {}", kp.id))
}

fn init_logging(config: &Config) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.log.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: a log file or collector gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if config.log.format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn serve(mut config: Config) -> Result<(), Box<dyn std::error::Error>> {
    // The address is taken first; `AppState::start` then checks everything the
    // configuration alone decides before it creates anything, so a failed start leaves
    // nothing behind (no data dir, secret or database).
    let listen = config.listen.clone();
    let limits =
        server::Limits::from_config(&config.server).fit_to_fd_limit(server::raise_fd_limit());
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let bound = listener.local_addr()?;
    let metrics_listener = match config.metrics_listen.trim() {
        "" => None,
        addr => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot listen on {addr} (metrics_listen): {e}"))?,
        ),
    };
    config.bound_to(bound);
    let base_url = config.base_url.clone();
    let state = AppState::start(config, Arc::new(storage::SystemClock)).await?;
    let local = bound.to_string();
    let housekeeping = state.spawn_housekeeping(Duration::from_secs(3600));
    let shutdown = shutdown_signal();
    tracing::info!(listen = %local, base_url = %base_url, max_connections = limits.max_connections, "gatehouse listening");
    // One plain line on stdout that tools (and the end-to-end tests) wait for.
    say(&format!("gatehouse listening on {local}"));
    let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let metrics = match metrics_listener {
        Some(l) => {
            let addr = l.local_addr()?;
            tracing::info!(listen = %addr, "metrics at /metrics");
            say(&format!("gatehouse metrics on {addr}"));
            let ep = state.metrics_endpoint();
            Some(tokio::spawn(server::serve(
                l,
                ep,
                server::Limits::from_config(&state.config.server),
                async move {
                    let _ = metrics_stopped.await;
                },
                Duration::from_secs(1),
            )))
        }
        None => None,
    };
    server::serve(
        listener,
        state.endpoint(),
        limits,
        shutdown,
        Duration::from_secs(30),
    )
    .await?;
    let _ = metrics_stop.send(());
    if let Some(m) = metrics {
        let _ = m.await;
    }
    housekeeping.abort();
    // Mail that answered requests left for after their answer (codes, links, resets), and
    // refusals' audit records.
    if tokio::time::timeout(Duration::from_secs(10), state.settled())
        .await
        .is_err()
    {
        tracing::warn!("stopped before all mail and audit records after the answers were stored");
    }
    state.actors.shutdown().await;
    tracing::info!("gatehouse stopped");
    Ok(())
}

/// One line on stdout for tools; a closed stdout (the reader went away) is no reason to stop.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called, not when the
/// future is first polled: a SIGTERM that arrives once the server said it listens (and before
/// the accept loop first looked at this future) still stops it gracefully, instead of killing
/// the process with the signal's default action.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    // `ctrl_c` installs its handler at its first poll: poll it once now.
    let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
    let _ = futures::FutureExt::now_or_never(ctrl_c.as_mut());
    async move {
        #[cfg(unix)]
        match term {
            Some(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            None => {
                let _ = ctrl_c.await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = ctrl_c.await;
        }
        tracing::info!("shutdown requested: finishing in-flight requests");
    }
}
