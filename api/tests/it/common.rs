//! In-process API harness: the real application endpoint on a real SQLite file in a temp dir,
//! a manual clock, and a tiny cookie-aware request helper.

use gatehouse_api::config::{Config, Secret};
use gatehouse_api::AppState;
use poem::http::{header, Method, StatusCode};
use poem::{Endpoint, EndpointExt, Request};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use storage::ManualClock;

pub const ORIGIN: &str = "http://localhost:3000";

pub struct H {
    pub state: AppState,
    /// The store itself, for tests that set up or inspect what the API may only read.
    pub store: storage::DynStore,
    pub ep: Arc<poem::endpoint::BoxEndpoint<'static>>,
    pub clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
    /// The CQL keyspace of a harness on the CQL node, dropped last.
    _keyspace: Option<storage::scylla::testing::DropKeyspace>,
}

/// The store a harness runs on.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Sqlite,
    /// A fresh keyspace of the CQL node that `SCYLLA_URI` names.
    Cql,
}

/// Tests taking a [`Backend`], each run on both stores: the embedded one, and a keyspace of
/// the CQL node when `SCYLLA_URI` names one (tests whose rules each store keeps its own way).
macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $test() {
                super::$test(crate::common::Backend::Sqlite).await;
            })*
        }
        mod cql {
            $(#[tokio::test]
            async fn $test() {
                super::$test(crate::common::Backend::Cql).await;
            })*
        }
    };
}

/// A harness on `backend`, configured by `tweak`; `None` on the CQL store when no node is
/// named (`SCYLLA_URI`), as the storage tests skip then.
pub async fn harness_on(backend: Backend, tweak: impl FnOnce(&mut Config)) -> Option<H> {
    match backend {
        Backend::Sqlite => Some(harness_with(tweak).await),
        Backend::Cql => {
            let (opts, keyspace) = storage::scylla::testing::throwaway_keyspace("gh_it")?;
            let store: storage::DynStore =
                Arc::new(storage::scylla::ScyllaStore::migrate(&opts).await.unwrap());
            let dir = tempfile::tempdir().unwrap();
            let config = test_config(dir.path(), tweak);
            let mut h = start(dir, config, store, Arc::new(ManualClock::default())).await;
            h._keyspace = Some(keyspace);
            Some(h)
        }
    }
}

/// Points `env` at the keyspace of `opts` (store, nodes, keyspace, replication) and makes its
/// schema with the `migrate` command, as a deployment does once before its servers start.
pub fn migrate_cql(
    env: &mut Vec<(String, String)>,
    opts: &storage::scylla::ScyllaOptions,
    data_dir: &std::path::Path,
) {
    env.extend([
        ("GATEHOUSE_STORE".into(), "scylla".into()),
        ("GATEHOUSE_SCYLLA__URI".into(), opts.nodes.join(",")),
        ("GATEHOUSE_SCYLLA__KEYSPACE".into(), opts.keyspace.clone()),
        (
            "GATEHOUSE_SCYLLA__REPLICATION".into(),
            opts.replication.clone(),
        ),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("migrate")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("GATEHOUSE_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The session cookie (`name=value`) a real server's answer sets, not a clearing one.
pub fn session_cookie_of(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.contains("session_token=") && !c.contains("Max-Age=0"))
        .map(|c| c.split(';').next().unwrap_or_default().to_owned())
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: poem::http::HeaderMap,
    pub text: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }
    /// The Set-Cookie line for a cookie name.
    pub fn set_cookie(&self, name: &str) -> Option<String> {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
    }
    /// `name=value` pairs of cookies set (not cleared) by this response, for a Cookie header.
    pub fn cookie_header(&self) -> String {
        self.set_cookies()
            .iter()
            .filter(|c| !c.contains("Max-Age=0"))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join("; ")
    }
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        self
    }
}

/// The secret of every test server (cookies and tokens are signed with it).
pub const SECRET: &str = "test-secret-0123456789abcdefghijklmnop";

/// A fast-hashing test configuration; `tweak` adjusts it.
pub fn test_config(dir: &std::path::Path, tweak: impl FnOnce(&mut Config)) -> Config {
    let mut c = Config {
        data_dir: dir.to_owned(),
        secret: Some(Secret::new(SECRET)),
        ..Config::default()
    };
    c.password.argon2_memory_kib = 1024;
    c.password.argon2_iterations = 1;
    c.actors.idle_timeout_ms = 5_000;
    // Tests sign in and mail far more often than the limiter allows; its own tests turn it on.
    c.rate_limit.enabled = false;
    tweak(&mut c);
    c
}

pub async fn harness_with(tweak: impl FnOnce(&mut Config)) -> H {
    let dir = tempfile::tempdir().unwrap();
    server_on(dir, None, Arc::new(ManualClock::default()), tweak).await
}

/// A second server process on `h`'s data dir and SQLite file (its own store connections,
/// actors and limiter; the same secret and clock), configured by `tweak`.
pub async fn same_store(h: &H, tweak: impl FnOnce(&mut Config)) -> H {
    let guard = tempfile::tempdir().unwrap();
    server_on(guard, Some(h._dir.path()), h.clock.clone(), tweak).await
}

/// A server on the SQLite file in `data_dir` (default: `dir`, which the harness keeps).
async fn server_on(
    dir: tempfile::TempDir,
    data_dir: Option<&std::path::Path>,
    clock: Arc<ManualClock>,
    tweak: impl FnOnce(&mut Config),
) -> H {
    let data_dir = data_dir.unwrap_or(dir.path());
    let store: storage::DynStore = Arc::new(
        storage::sqlite::SqliteStore::open(data_dir.join("gatehouse.db"))
            .await
            .unwrap(),
    );
    let config = test_config(data_dir, tweak);
    start(dir, config, store, clock).await
}

/// A server of `config` on `store`; it keeps `dir`.
async fn start(
    dir: tempfile::TempDir,
    config: Config,
    store: storage::DynStore,
    clock: Arc<ManualClock>,
) -> H {
    let state = AppState::start_with_store(config, clock.clone(), store.clone())
        .await
        .unwrap();
    let ep = Arc::new(state.endpoint().map_to_response().boxed());
    H {
        state,
        store,
        ep,
        clock,
        _dir: dir,
        _keyspace: None,
    }
}

pub async fn harness() -> H {
    harness_with(|_| {}).await
}

/// `a; b` of two cookie headers (the later one's names win: a sign-in's new cookies, say).
pub fn join(a: &str, b: &str) -> String {
    let names: Vec<&str> = b.split("; ").filter_map(|p| p.split('=').next()).collect();
    a.split("; ")
        .filter(|p| !p.is_empty() && !names.contains(&p.split('=').next().unwrap_or("")))
        .chain(b.split("; ").filter(|p| !p.is_empty()))
        .collect::<Vec<_>>()
        .join("; ")
}

impl H {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Resp {
        let r = call(&self.ep, method, path, body, cookie, extra).await;
        // Mail that leaves after the answer has left when the test reads the outbox.
        self.state.settled().await;
        r
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        self.call(Method::GET, path, None, cookie, &[]).await
    }

    /// A POST as a browser on the trusted origin sends it.
    pub async fn post(&self, path: &str, body: Value, cookie: Option<&str>) -> Resp {
        self.call(
            Method::POST,
            path,
            Some(body),
            cookie,
            &[("origin", ORIGIN)],
        )
        .await
    }

    pub async fn sign_up(&self, email: &str, password: &str) -> Resp {
        self.post(
            "/api/auth/sign-up/email",
            serde_json::json!({"name": "Test User", "email": email, "password": password}),
            None,
        )
        .await
        .expect(200)
    }

    pub async fn sign_in(&self, email: &str, password: &str) -> Resp {
        self.post(
            "/api/auth/sign-in/email",
            serde_json::json!({"email": email, "password": password}),
            None,
        )
        .await
    }

    /// A sign-in with any body (as a browser on the trusted origin sends it).
    pub async fn sign_in_body(&self, body: Value) -> Resp {
        self.post("/api/auth/sign-in/email", body, None).await
    }

    /// Changes a user as stored (their next version), for a state no route reaches at once.
    pub async fn change_user(&self, email: &str, change: impl FnOnce(&mut storage::User)) {
        let mut u = self
            .store
            .get_user_by_email(email)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no user {email}"));
        change(&mut u);
        u.version += 1;
        self.store.update_user(&u, &[]).await.unwrap();
    }

    pub async fn session(&self, cookie: &str) -> Value {
        self.get("/api/auth/get-session", Some(cookie))
            .await
            .expect(200)
            .json()
    }
}

pub async fn call(
    ep: &poem::endpoint::BoxEndpoint<'static>,
    method: Method,
    path: &str,
    body: Option<Value>,
    cookie: Option<&str>,
    extra: &[(&str, &str)],
) -> Resp {
    let mut b = Request::builder().method(method).uri_str(path);
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    let req = match body {
        Some(v) => b
            .header(header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&v).unwrap()),
        None => b.finish(),
    };
    call_raw(ep, req).await
}

/// Sends a request built by the caller (any body and content type).
pub async fn call_raw(ep: &poem::endpoint::BoxEndpoint<'static>, req: Request) -> Resp {
    let resp = ep.call(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.into_body().into_string().await.unwrap();
    Resp {
        status,
        headers,
        text,
    }
}

/// The actions in the audit log within a day of the harness's clock.
pub async fn audit_actions(h: &H) -> Vec<String> {
    use storage::Clock;
    h.state.settled().await;
    let now = h.clock.now();
    let q = storage::AuditQuery::range(
        now - chrono::Duration::days(1),
        now + chrono::Duration::days(1),
        1000,
    );
    let page = h.store.list_audit(&q).await.unwrap();
    page.items.into_iter().map(|e| e.action).collect()
}

/// The median of timing samples.
fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Asserts that two kinds of request are answered in the same time: `ask(kind)` (0 or 1)
/// makes one and checks its answer; `samples` of them interleaved K U U K … (each kind follows
/// each kind as often), the first 40 unmeasured, each after the work of the one before it
/// ended (`AppState::settled`). Their medians must be within 100 µs of each other in one of
/// three rounds: a real difference shows in every round, a round the machine's load skews does
/// not repeat.
pub async fn answered_in_the_same_time<F, Fut>(h: &H, label: &str, samples: usize, mut ask: F)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut gaps = Vec::new();
    for _round in 0..3 {
        let mut times = [Vec::new(), Vec::new()];
        for i in 0..samples {
            let kind = usize::from(matches!(i % 4, 1 | 2));
            let started = std::time::Instant::now();
            ask(kind).await;
            let took = started.elapsed();
            h.state.settled().await;
            if i >= 40 {
                times[kind].push(took);
            }
        }
        let (first, second) = (median(&mut times[0]), median(&mut times[1]));
        eprintln!("{label}: {first:?} against {second:?}");
        gaps.push(first.abs_diff(second));
        if first.abs_diff(second) < Duration::from_micros(100) {
            return;
        }
    }
    panic!("{label}: the medians were apart by {gaps:?}");
}

/// Every message in the outbox, oldest first.
pub fn outbox(h: &H) -> Vec<Value> {
    outbox_in(&h.state.config.data_dir.join("outbox"))
}

/// Every message in an outbox folder, oldest first.
pub fn outbox_in(dir: &std::path::Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    files
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// The newest message of `kind` to `to`.
pub fn last_mail(h: &H, kind: &str, to: &str) -> Option<Value> {
    outbox(h)
        .into_iter()
        .rfind(|m| m["kind"] == kind && m["to"] == to)
}

/// Every message of `kind` to `to`, oldest first.
pub fn mails(h: &H, kind: &str, to: &str) -> Vec<Value> {
    outbox(h)
        .into_iter()
        .filter(|m| m["kind"] == kind && m["to"] == to)
        .collect()
}

/// The message of `kind` to `to` after the first `seen` of them: mail that leaves after the
/// answer (codes and links by mail) is waited for, up to 10 s.
pub async fn next_mail(h: &H, kind: &str, to: &str, seen: usize) -> Value {
    for _ in 0..200 {
        if let Some(m) = mails(h, kind, to).into_iter().nth(seen) {
            return m;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no {kind} mail #{seen} to {to}")
}

/// The path and query of a link the server mailed (its base URL removed).
pub fn link_path(h: &H, mail: &Value) -> String {
    let link = mail["link"].as_str().unwrap();
    link.strip_prefix(&h.state.config.base_url)
        .unwrap_or_else(|| panic!("link {link} not on the base URL"))
        .to_owned()
}

/// The token of a mailed reset link (`…/reset-password/{token}?callbackURL=…`).
pub fn reset_token_of(mail: &Value) -> String {
    let link = mail["link"].as_str().unwrap();
    let after = link.split("/reset-password/").nth(1).unwrap();
    after.split('?').next().unwrap().to_owned()
}

/// A user without any account (as a social sign-up leaves one), written straight to the store.
pub async fn store_user(h: &H, email: &str) -> storage::User {
    let now = storage::Clock::now(&*h.clock);
    let u = storage::User {
        email_verified: true,
        ..storage::User::new(email, "Stored".into(), None, now)
    };
    h.store.create_user(&u, None, &[]).await.unwrap();
    u
}

/// The real `gatehouse` binary on a free loopback port (fast password hashing), until dropped.
pub struct Server {
    pub child: Child,
    /// `http://addr/api/auth`.
    pub base: String,
    pub addr: String,
    /// Where its log (standard error) goes, shown when the test fails.
    log: Option<std::path::PathBuf>,
}

impl Server {
    pub fn start(data_dir: &std::path::Path) -> Self {
        Self::start_with(data_dir, &[], None)
    }

    /// With extra environment, and optionally under `ulimit -n <open_files>`.
    pub fn start_with(
        data_dir: &std::path::Path,
        env: &[(&str, &str)],
        open_files: Option<u32>,
    ) -> Self {
        // Its log beside its data, not in the test run's output: shown if the test fails.
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = data_dir.with_extension(format!("{n}.log"));
        let file = std::fs::File::create(&log).expect("the server's log file");
        let mut server = Self::spawn(data_dir, env, open_files, Stdio::from(file));
        server.log = Some(log);
        server
    }

    /// With its log (standard error) written to `log`.
    pub fn start_logging_to(
        data_dir: &std::path::Path,
        env: &[(&str, &str)],
        log: std::fs::File,
    ) -> Self {
        Self::spawn(data_dir, env, None, Stdio::from(log))
    }

    fn spawn(
        data_dir: &std::path::Path,
        env: &[(&str, &str)],
        open_files: Option<u32>,
        stderr: Stdio,
    ) -> Self {
        let bin = env!("CARGO_BIN_EXE_gatehouse");
        let mut cmd = match open_files {
            Some(n) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("ulimit -n {n} && exec \"$0\""), bin]);
                c
            }
            None => Command::new(bin),
        };
        // An explicit base URL: derived from `:0` it would name the chosen port, and the tests
        // send `Origin: http://localhost:3000`.
        cmd.env("GATEHOUSE_LISTEN", "127.0.0.1:0")
            .env("GATEHOUSE_BASE_URL", "http://localhost:3000")
            .env("GATEHOUSE_DATA_DIR", data_dir)
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            // Off unless a test turns it on (`env` comes after and wins).
            .env("GATEHOUSE_RATE_LIMIT__ENABLED", "false");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start gatehouse");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("gatehouse listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Server {
            child,
            base: format!("http://{addr}/api/auth"),
            addr,
            log: None,
        }
    }

    /// SIGTERM, then wait: the process must exit successfully (graceful shutdown).
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success());
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "gatehouse exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("gatehouse did not stop on SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let Some(log) = &self.log else {
            return;
        };
        if std::thread::panicking() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            eprintln!(
                "--- the gatehouse process's log ({}):\n{text}",
                log.display()
            );
        }
        let _ = std::fs::remove_file(log);
    }
}

/// `tests/js-client` (better-auth's official package and jose, installed by `npm ci` there),
/// or `None` when not installed — then the calling test is skipped, unless
/// `REQUIRE_JS_CLIENT=1` (set by `.ci/test`) makes that a failure.
pub fn js_client_dir() -> Option<std::path::PathBuf> {
    let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js-client");
    if js.join("node_modules/better-auth").exists() {
        return Some(js);
    }
    assert!(
        std::env::var("REQUIRE_JS_CLIENT").is_err(),
        "REQUIRE_JS_CLIENT is set but {}/node_modules is missing: run `npm ci` there",
        js.display()
    );
    eprintln!("skipped: no better-auth in {} (npm ci)", js.display());
    None
}

/// Runs `script` of `api/tests/js-client` with node and `args`; the one JSON object it prints.
pub async fn run_js_client(js: &std::path::Path, script: &str, args: &[&str]) -> Value {
    let out = tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(js)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node {script} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A request as it arrives from `peer` (the socket's address), with `headers`.
pub async fn call_from(
    h: &H,
    peer: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let mut b = poem::http::Request::builder()
        .method(method)
        .uri(path)
        .header("origin", ORIGIN);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let body = match body {
        Some(v) => {
            b = b.header("content-type", "application/json");
            poem::Body::from(serde_json::to_vec(&v).unwrap())
        }
        None => poem::Body::empty(),
    };
    let (parts, _) = b.body(()).unwrap().into_parts();
    let peer: std::net::SocketAddr = peer.parse().unwrap();
    let parts = poem::RequestParts::from((
        parts,
        poem::web::LocalAddr(poem::Addr::SocketAddr("127.0.0.1:3000".parse().unwrap())),
        poem::web::RemoteAddr(poem::Addr::SocketAddr(peer)),
        poem::http::uri::Scheme::HTTP,
    ));
    let r = call_raw(&h.ep, poem::Request::from_parts(parts, body)).await;
    h.state.settled().await;
    r
}
