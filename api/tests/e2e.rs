//! End to end: the real `gatehouse` binary on a free loopback port with a temporary data dir,
//! spoken to over HTTP; data survives a restart; SIGTERM stops it cleanly.
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(data_dir: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .env("GATEHOUSE_LISTEN", "127.0.0.1:0")
            .env("GATEHOUSE_DATA_DIR", data_dir)
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
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
        }
    }

    /// SIGTERM, then wait: the process must exit successfully (graceful shutdown).
    fn stop(mut self) {
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
    }
}

#[tokio::test]
async fn sign_up_restart_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();

    let server = Server::start(dir.path());
    let r = http
        .post(format!("{}/sign-up/email", server.base))
        .json(&json!({"name": "E2E", "email": "e2e@example.com", "password": "persist-me-please"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let user: serde_json::Value = r.json().await.unwrap();
    let ok: serde_json::Value = http
        .get(format!("{}/ok", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok, json!({"ok": true}));
    server.stop();
    // The generated secret was kept, so the old cookie still verifies after the restart.
    assert!(dir.path().join("secret").exists());

    let server = Server::start(dir.path());
    let r = http
        .post(format!("{}/sign-in/email", server.base))
        .json(&json!({"email": "e2e@example.com", "password": "persist-me-please"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let signed_in: serde_json::Value = r.json().await.unwrap();
    assert_eq!(signed_in["user"]["id"], user["user"]["id"]);
    let s: serde_json::Value = http
        .get(format!("{}/get-session", server.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(s["user"]["email"], "e2e@example.com");
    let r = http
        .post(format!("{}/sign-in/email", server.base))
        .json(&json!({"email": "e2e@example.com", "password": "wrong-password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    server.stop();
}

#[test]
fn openapi_subcommand_prints_the_document_and_bad_config_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("openapi")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["paths"]["/sign-in/email"]["post"]["operationId"] == "signInEmail");

    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .env("GATEHOUSE_SECRET", "too-short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 32 bytes"));
    // The secret itself is never echoed.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("too-short"));

    let help = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("GATEHOUSE_"));
}

#[test]
fn committed_example_config_lists_the_defaults() {
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("config")
        .env_clear()
        .output()
        .unwrap();
    assert!(out.status.success());
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gatehouse.example.toml"
    ))
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        committed,
        "regenerate with `cargo run -q -- config > gatehouse.example.toml` (no GATEHOUSE_ env set)"
    );
}
