//! The `gatehouse` server binary.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clap::{Parser, Subcommand};
use gatehouse_api::config::Config;
use gatehouse_api::AppState;
use poem::listener::{Acceptor, Listener, TcpListener};
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
    /// A TOML configuration file.
    #[arg(long, global = true, value_name = "PATH")]
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Openapi) => {
            println!("{}", gatehouse_api::openapi_json());
            return ExitCode::SUCCESS;
        }
        Some(Command::Config) | Some(Command::Serve) | None => {}
    }
    let config = match Config::load(cli.config.as_deref(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gatehouse: {e}");
            return ExitCode::from(2);
        }
    };
    if matches!(cli.command, Some(Command::Config)) {
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
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "gatehouse stopped with an error");
            eprintln!("gatehouse: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &Config) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.log.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log.format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn serve(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    let listen = config.listen.clone();
    let base_url = config.base_url.clone();
    let state = AppState::start(config, Arc::new(storage::SystemClock)).await?;
    let housekeeping = state.spawn_housekeeping(Duration::from_secs(3600));
    let acceptor = TcpListener::bind(listen).into_acceptor().await?;
    let local = acceptor
        .local_addr()
        .into_iter()
        .next()
        .and_then(|a| a.as_socket_addr().map(|s| s.to_string()))
        .unwrap_or_default();
    tracing::info!(listen = %local, base_url = %base_url, "gatehouse listening");
    // One plain line on stdout that tools (and the end-to-end tests) wait for.
    println!("gatehouse listening on {local}");
    poem::Server::new_with_acceptor(acceptor)
        .run_with_graceful_shutdown(
            state.endpoint(),
            shutdown_signal(),
            Some(Duration::from_secs(30)),
        )
        .await?;
    housekeeping.abort();
    state.actors.shutdown().await;
    tracing::info!("gatehouse stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    tracing::info!("shutdown requested: finishing in-flight requests");
}
