//! Starting the real binary: what a failed start leaves behind (nothing), a store it must not
//! use (read-only, or written by a newer Gatehouse), stray environment, and the health routes.
use crate::common::Server;
use std::path::Path;
use std::process::{Command, Output};

fn gatehouse(args: &[&str], data_dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
    c.args(args)
        .env("GATEHOUSE_DATA_DIR", data_dir)
        .env("GATEHOUSE_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "warn");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_failed_start_creates_nothing_and_names_the_taken_address() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Refused by the configuration check (an unknown resource in a configured role).
    let out = gatehouse(
        &[],
        &data,
        &[("GATEHOUSE_ORGANIZATION__ROLES__AUDITOR__NOPE", "read")],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown resource"),
        "{}",
        stderr(&out)
    );
    assert!(!data.exists(), "a refused start created the data dir");
    // `gatehouse config` refuses the same thing.
    let out = gatehouse(
        &["config"],
        &data,
        &[("GATEHOUSE_ORGANIZATION__ROLES__AUDITOR__NOPE", "read")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The address is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = gatehouse(&[], &data, &[("GATEHOUSE_LISTEN", &addr)]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(!data.exists(), "a refused start created the data dir");
}

#[test]
fn stray_gatehouse_variables_are_warnings_and_no_error_quotes_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(
        &["config"],
        dir.path(),
        &[
            ("GATEHOUSE_PORT", "tcp://10.0.0.7:3000"),
            ("GATEHOUSE_SERVICE_HOST", "10.0.0.7"),
            ("GATEHOUSE_MAIL__SMTP__PASSWORD", "12345678"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning: ignoring GATEHOUSE_PORT"), "{err}");
    assert!(err.contains("GATEHOUSE_SERVICE_HOST"), "{err}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("password = \"***\""), "{shown}");
    assert!(!shown.contains("12345678") && !err.contains("12345678"));
    // A bad value next to a secret: the error names the variable, never a value.
    let out = gatehouse(
        &[],
        dir.path(),
        &[
            ("GATEHOUSE_MAIL__SMTP__PASSWORD", "hunter2-12345678"),
            ("GATEHOUSE_MAIL__SMTP__PORT", "hunter2"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("GATEHOUSE_MAIL__SMTP__PORT"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // GATEHOUSE_CONFIG names the file.
    let file = dir.path().join("g.toml");
    std::fs::write(&file, "cookie_prefix = \"from-file\"\n").unwrap();
    let out = gatehouse(
        &["config"],
        dir.path(),
        &[("GATEHOUSE_CONFIG", file.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cookie_prefix = \"from-file\""));
}

#[test]
fn a_database_from_a_newer_gatehouse_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(&["migrate"], dir.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = dir.path().join("gatehouse.db");
    let known: i64 = {
        let c = rusqlite::Connection::open(&db).unwrap();
        let v = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        c.execute_batch("PRAGMA user_version = 99").unwrap();
        v
    };
    assert!(known > 0);
    for args in [&[][..], &["migrate"][..]] {
        let out = gatehouse(args, dir.path(), &[]);
        assert!(!out.status.success(), "{args:?} used a newer schema");
        let err = stderr(&out);
        assert!(
            err.contains("schema version 99") && err.contains(&format!("Gatehouse's {known}")),
            "{err}"
        );
    }
    // Nothing was written into it.
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 99);
}

/// Runs the binary as an unprivileged user when the tests run as root (root writes through
/// any permission bits); `None` when that is not possible here.
fn unprivileged(data_dir: &Path) -> Option<Command> {
    let bin = env!("CARGO_BIN_EXE_gatehouse");
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        == "0";
    let mut c = if root {
        let ok = Command::new("setpriv").arg("--version").output().ok()?;
        if !ok.status.success() {
            return None;
        }
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            bin,
        ]);
        c
    } else {
        Command::new(bin)
    };
    c.env("GATEHOUSE_DATA_DIR", data_dir)
        .env("GATEHOUSE_LISTEN", "127.0.0.1:0")
        .env("GATEHOUSE_SECRET", "startup-test-secret-0123456789abcdef")
        .env("RUST_LOG", "warn");
    Some(c)
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_read_only_database_or_data_dir_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let data = dir.path().join("data");
    let out = gatehouse(&["migrate"], &data, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = data.join("gatehouse.db");
    // The file read-only, the folder writable.
    chmod(&data, 0o777);
    chmod(&db, 0o444);
    let Some(mut c) = unprivileged(&data) else {
        eprintln!("skipped: running as root without setpriv");
        return;
    };
    let out = c.output().unwrap();
    assert!(!out.status.success(), "started on a read-only database");
    assert!(stderr(&out).contains("not writable"), "{}", stderr(&out));
    // The file writable, the folder read-only.
    chmod(&db, 0o666);
    chmod(&data, 0o555);
    let out = unprivileged(&data).unwrap().output().unwrap();
    assert!(!out.status.success(), "started in a read-only data dir");
    assert!(stderr(&out).contains("data"), "{}", stderr(&out));
    chmod(&data, 0o755);
}

#[tokio::test]
async fn health_routes_say_live_and_ready_and_turn_unready_without_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let http = reqwest::Client::new();
    let root = format!("http://{}", server.addr);
    let live = http
        .get(format!("{root}/health/live"))
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    let r = http
        .get(format!("{root}/health/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["store"], "ok");
    assert_eq!(body["checks"]["mail"], "outbox");
    // The data dir goes away (a volume unmounted): not ready any more.
    std::fs::rename(&data, dir.path().join("gone")).unwrap();
    let r = http
        .get(format!("{root}/health/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_ne!(body["checks"]["dataDir"], "ok");
    server.stop();
}

/// A request's id is on every log line written while it is served (the JSON log here), the
/// answer's `X-Request-Id`, and its audit event.
#[tokio::test]
async fn a_request_id_is_on_each_log_line_of_its_request_and_its_audit_event() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logging_to(
        &dir.path().join("data"),
        &[
            ("RUST_LOG", "debug,hyper=warn,h2=warn"),
            ("GATEHOUSE_LOG__FORMAT", "json"),
            (
                "GATEHOUSE_SERVER_KEY",
                "startup-server-key-0123456789abcdef",
            ),
        ],
        log,
    );
    let http = reqwest::Client::new();
    let id = "edge-trace-7f3a";
    let r = http
        .post(format!("{}/sign-in/email", server.base))
        .header("origin", "http://localhost:3000")
        .header("x-request-id", id)
        .json(&serde_json::json!({"email": "nobody@example.com", "password": "wrong-password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["x-request-id"], id);
    let events: serde_json::Value = http
        .get(format!(
            "{}/admin/audit-log?action=user.sign-in",
            server.base
        ))
        .bearer_auth("startup-server-key-0123456789abcdef")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(events["events"][0]["requestId"], id, "{events}");
    server.stop();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    // The lines written inside the sign-in's request span: at least its answer.
    let of_request: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["span"]["path"] == "/api/auth/sign-in/email")
        .collect();
    assert!(
        of_request
            .iter()
            .any(|l| l["fields"]["message"] == "answered"),
        "{log}"
    );
    for l in &of_request {
        assert_eq!(l["span"]["id"], id, "{l}");
    }
}

/// `/health/ready` answers 503 naming the store when the store cannot serve this build: an
/// SQLite file another process migrated to a newer schema, and a ScyllaDB keyspace that is gone
/// (when a CQL node is configured).
#[tokio::test]
async fn ready_turns_503_when_the_store_cannot_serve() {
    async fn ready(server: &Server) -> (u16, serde_json::Value) {
        let r = reqwest::get(format!("http://{}/health/ready", server.addr))
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    assert_eq!(ready(&server).await.0, 200);
    let file = rusqlite::Connection::open(data.join("gatehouse.db")).unwrap();
    file.pragma_update(None, "user_version", 9999).unwrap();
    let (status, body) = ready(&server).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "unavailable");
    assert!(
        body["checks"]["store"].as_str().unwrap().contains("9999"),
        "{body}"
    );
    assert_eq!(body["checks"]["dataDir"], "ok");
    drop(server);

    let Some((opts, _guard)) = storage::scylla::testing::throwaway_keyspace("gh_ready") else {
        return;
    };
    let env = [
        ("GATEHOUSE_STORE", "scylla".to_owned()),
        ("GATEHOUSE_SCYLLA__URI", opts.nodes.join(",")),
        ("GATEHOUSE_SCYLLA__KEYSPACE", opts.keyspace.clone()),
        ("GATEHOUSE_SCYLLA__REPLICATION", opts.replication.clone()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cql_dir = tempfile::tempdir().unwrap();
    let out = gatehouse(&["migrate"], cql_dir.path(), &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let server = Server::start_with(cql_dir.path(), &env, None);
    assert_eq!(ready(&server).await.0, 200);
    storage::scylla::ScyllaStore::connect(&opts)
        .await
        .unwrap()
        .drop_keyspace()
        .await
        .unwrap();
    let (status, body) = ready(&server).await;
    assert_eq!(status, 503, "{body}");
    assert_ne!(body["checks"]["store"], "ok", "{body}");
}

/// Mailed links hold single-use tokens: the log says a mail was written and where, never its
/// link (outbox mode, info level).
#[tokio::test]
async fn no_mailed_token_reaches_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logging_to(
        &data,
        &[
            ("RUST_LOG", "info"),
            ("GATEHOUSE_EMAIL_VERIFICATION__SEND_ON_SIGN_UP", "true"),
        ],
        log,
    );
    let http = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{}{path}", server.base))
            .header("origin", "http://localhost:3000")
            .json(&body)
            .send()
    };
    let r = post(
        "/sign-up/email",
        serde_json::json!({"name": "Lo", "email": "log@example.com", "password": "log-password-1"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let r = post(
        "/request-password-reset",
        serde_json::json!({"email": "log@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    // The reset mail leaves after the answer.
    let mut mails = Vec::new();
    for _ in 0..200 {
        mails = crate::common::outbox_in(&data.join("outbox"));
        if mails.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let links: Vec<String> = mails
        .iter()
        .filter_map(|m| m["link"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(links.len(), 2, "{mails:?}");
    server.stop();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("mail written to outbox"), "{log}");
    for link in &links {
        let token = link
            .split(['=', '/', '&', '?'])
            .filter(|p| p.len() >= 20)
            .max_by_key(|p| p.len())
            .unwrap_or(link);
        assert!(!log.contains(token), "a token in the log: {token}");
        assert!(!log.contains(link.as_str()));
    }
}

/// A SIGTERM sent the moment the server says it listens stops it gracefully (exit status 0):
/// its handler is installed before that line, not when the accept loop first looks for it.
#[test]
fn a_sigterm_right_after_the_listening_line_is_a_graceful_stop() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        Server::start(dir.path()).stop();
    }
}
