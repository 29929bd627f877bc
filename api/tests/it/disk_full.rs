//! The SQLite file cannot grow — its disk full. Here the process's file size limit stands in
//! for the full disk (`prlimit --fsize` on the running server: every write past the limit fails
//! as it would on a full disk). Writes answer 503 `SERVICE_UNAVAILABLE` with nothing about the
//! store in the body, reads go on, `/health/ready` says the store is not writable, the process
//! stays up, and once there is room it writes again without a restart, with nothing lost.
use crate::common::Server;
use serde_json::{json, Value};
use std::time::Duration;

const ORIGIN: &str = "http://localhost:3000";

struct Client {
    http: reqwest::Client,
    base: String,
    addr: String,
}

impl Client {
    async fn post(
        &self,
        path: &str,
        body: Value,
        cookie: Option<&str>,
    ) -> (u16, Value, Option<String>) {
        let mut r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("origin", ORIGIN)
            .json(&body);
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let cookie = crate::common::session_cookie_of(r.headers());
        (status, r.json().await.unwrap_or(Value::Null), cookie)
    }

    async fn get(&self, path: &str, cookie: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn health(&self, which: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("http://{}/health/{which}", self.addr))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn sign_up(&self, email: &str) -> (u16, Value, Option<String>) {
        self.post(
            "/sign-up/email",
            json!({"email": email, "password": "a-good-password", "name": "F"}),
            None,
        )
        .await
    }
}

/// The soft file size limit of process `pid` (the hard one stays unlimited, so it can be
/// lifted again).
fn limit_file_size(pid: u32, soft: &str) {
    let out = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            &format!("--fsize={soft}:unlimited"),
        ])
        .output()
        .expect("prlimit (util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn is_unavailable(status: u16, body: &Value) -> bool {
    let text = body.to_string().to_lowercase();
    for word in ["sqlite", "disk", "database", "file"] {
        assert!(
            !text.contains(word),
            "the answer tells about the store: {text}"
        );
    }
    status == 503 && body["code"] == "SERVICE_UNAVAILABLE"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_cleanly_keeps_reads_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let c = Client {
        http: reqwest::Client::new(),
        base: server.base.clone(),
        addr: server.addr.clone(),
    };
    let (status, _, cookie) = c.sign_up("first@example.com").await;
    assert_eq!(status, 200);
    let cookie = cookie.unwrap();
    let (status, org, _) = c
        .post(
            "/organization/create",
            json!({"name": "Full", "slug": "full"}),
            Some(&cookie),
        )
        .await;
    assert_eq!(status, 200, "{org}");

    // No file of the process may grow past 64 KiB any more (the database is larger already):
    // writes fail from the first one that needs a new page on disk.
    limit_file_size(server.child.id(), "65536");
    let mut refused = None;
    let mut signed_up = Vec::new();
    for i in 0..200 {
        let email = format!("while-full-{i}@example.com");
        let (status, body, _) = c.sign_up(&email).await;
        match status {
            200 => signed_up.push(email),
            _ => {
                assert!(is_unavailable(status, &body), "{status} {body}");
                refused = Some(i);
                break;
            }
        }
    }
    assert!(refused.is_some(), "no write was refused");
    // Every write is refused the same way, nothing half-done…
    for (path, body) in [
        (
            "/sign-up/email",
            json!({"email": "late@example.com", "password": "a-good-password", "name": "L"}),
        ),
        (
            "/organization/create",
            json!({"name": "More", "slug": "more"}),
        ),
        ("/update-user", json!({"name": "Renamed"})),
    ] {
        let (status, answer, _) = c.post(path, body, Some(&cookie)).await;
        assert!(is_unavailable(status, &answer), "{path}: {status} {answer}");
    }
    // …while reads go on.
    let (status, session) = c.get("/get-session", &cookie).await;
    assert_eq!(status, 200);
    assert_eq!(session["user"]["email"], "first@example.com");
    assert_eq!(
        session["user"]["name"], "F",
        "the refused rename left the name"
    );
    let (status, orgs) = c.get("/organization/list", &cookie).await;
    assert_eq!(status, 200);
    assert_eq!(orgs.as_array().map(Vec::len), Some(1), "{orgs}");
    let (status, ready) = c.health("ready").await;
    assert_eq!(status, 503, "{ready}");
    assert_ne!(ready["checks"]["store"], "ok", "{ready}");
    assert_eq!(c.health("live").await.0, 200);

    // Room again: the same process writes, and is ready, without a restart.
    limit_file_size(server.child.id(), "unlimited");
    let mut wrote = false;
    for _ in 0..50 {
        if c.sign_up("after@example.com").await.0 == 200 {
            wrote = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(wrote, "no write after the disk had room again");
    assert_eq!(c.health("ready").await.0, 200);
    signed_up.push("first@example.com".into());
    for email in &signed_up {
        let (status, body, _) = c
            .post(
                "/sign-in/email",
                json!({"email": email, "password": "a-good-password"}),
                None,
            )
            .await;
        assert_eq!(status, 200, "{email}: {body}");
    }
    let (status, body, _) = c
        .post(
            "/sign-in/email",
            json!({"email": "late@example.com", "password": "a-good-password"}),
            None,
        )
        .await;
    assert_eq!(status, 401, "the refused sign-up was not stored: {body}");
    server.stop();
}
