//! The command line's admin bootstrap and key rotation, and better-auth's official client administering users.

use super::*;

/// The operator's bootstrap: `gatehouse user create` on a stopped server makes the first admin
/// (password generated and printed once), `user set-role` and `keys rotate` work while the
/// server runs, through the same store.
#[tokio::test]
async fn cli_bootstraps_an_admin_and_rotates_keys() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str], stdin: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        c.args(args)
            .env("GATEHOUSE_DATA_DIR", dir.path())
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        )
    };
    let (ok, password, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "Root@Ops.io",
            "--name",
            "Root",
            "--role",
            "admin",
        ],
        None,
    );
    assert!(ok, "{said}");
    assert!(said.contains("created user root@ops.io"), "{said}");
    assert!(
        password.len() >= 20,
        "a generated password is printed once: {password:?}"
    );
    let (ok, _, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "root@ops.io",
            "--name",
            "Again",
        ],
        Some("another-password\n"),
    );
    assert!(
        !ok && said.contains("USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"),
        "{said}"
    );
    let (ok, _, said) = cli(
        &[
            "user", "create", "--email", "x@ops.io", "--name", "X", "--role", "wizard",
        ],
        None,
    );
    assert!(!ok && said.contains("non-existent role"), "{said}");

    let server = Server::start(dir.path());
    let http = reqwest::Client::new();
    let post = |path: &str, body: Value, cookie: Option<&str>| {
        let mut r = http
            .post(format!("{}{path}", server.base))
            .header("origin", "http://localhost:3000")
            .json(&body);
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.send()
    };
    let r = post(
        "/sign-in/email",
        json!({"email": "root@ops.io", "password": password}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    // On a real clock too, the cookie lasts exactly the configured lifetime.
    let set = r
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(set.contains("; Max-Age=604800;"), "{set}");
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let users = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(users.status(), 200);
    // A second user, made an admin from the command line while the server runs.
    let (ok, _, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "ops2@ops.io",
            "--name",
            "Ops",
            "--password-stdin",
        ],
        Some("ops-password-2\n"),
    );
    assert!(ok, "{said}");
    let r = post(
        "/sign-in/email",
        json!({"email": "ops2@ops.io", "password": "ops-password-2"}),
        None,
    )
    .await
    .unwrap();
    let ops2 = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let denied = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &ops2)
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let (ok, _, said) = cli(&["user", "set-role", "ops2@ops.io", "admin"], None);
    assert!(ok && said.contains("now has role admin"), "{said}");
    let allowed = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &ops2)
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    // Key rotation while running: the JWKS shows both keys once the server re-reads them.
    let jwks = |http: reqwest::Client, base: String| async move {
        http.get(format!("{base}/jwks"))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    let before = jwks(http.clone(), server.base.clone()).await;
    assert_eq!(before["keys"].as_array().unwrap().len(), 1);
    let (ok, _, said) = cli(&["keys", "rotate"], None);
    assert!(ok && said.starts_with("new signing key "), "{said}");
    // The first line (a consumer of the running server's store may log after it).
    let new_kid = said
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("new signing key ")
        .trim()
        .to_owned();
    let stored = storage::sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
        .await
        .unwrap();
    let kids: Vec<String> = storage::KeyPairStore::list_key_pairs(&stored)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id.0)
        .collect();
    assert!(kids.contains(&new_kid) && kids.len() == 2, "{kids:?}");
    server.stop();
}

/// better-auth's official client with `adminClient()` (Node, `api/tests/js-client`) lists,
/// bans, unbans and sets roles against a running Gatehouse, and `jose` verifies its JWT
/// against the JWKS. Skipped when the npm packages are not installed, unless
/// `REQUIRE_JS_CLIENT=1` (set by `.ci/test`).
#[tokio::test]
async fn official_client_administers_users() {
    use std::process::Command;
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let base_url = "http://localhost:3000";
    let http = reqwest::Client::new();
    let sign_up = |email: &'static str| {
        http.post(format!("{}/sign-up/email", server.base))
            .header("origin", base_url)
            .json(&json!({"email": email, "password": PASSWORD, "name": "Js"}))
            .send()
    };
    sign_up("boss@js.io").await.unwrap();
    let victim: Value = sign_up("victim@js.io").await.unwrap().json().await.unwrap();
    let victim = victim["user"]["id"].as_str().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["user", "set-role", "boss@js.io", "admin"])
        .env("GATEHOUSE_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tokio::process::Command::new("node")
        .arg("admin-client.mjs")
        .args([
            &format!("http://{}", server.addr),
            base_url,
            "boss@js.io",
            PASSWORD,
            &victim,
        ])
        .current_dir(&js)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["signIn"]["email"], "boss@js.io", "{seen}");
    assert_eq!(seen["list"]["total"], 2, "{seen}");
    assert_eq!(
        seen["list"]["emails"],
        json!(["boss@js.io", "victim@js.io"]),
        "{seen}"
    );
    assert_eq!(
        (&seen["ban"]["banned"], &seen["ban"]["reason"]),
        (&json!(true), &json!("client test")),
        "{seen}"
    );
    assert_eq!(seen["unban"]["banned"], false, "{seen}");
    assert_eq!(seen["setRole"]["role"], "admin", "{seen}");
    assert_eq!(
        seen["denied"],
        json!({"status": 400, "code": "YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE"}),
        "{seen}"
    );
    assert_eq!(
        (seen["jwt"]["email"].as_str(), seen["jwt"]["alg"].as_str()),
        (Some("boss@js.io"), Some("EdDSA")),
        "{seen}"
    );
    assert_eq!(
        seen["forged"], "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
        "{seen}"
    );
    // The ban and unban really happened in the store.
    let user = storage::UserStore::get_user(
        &storage::sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
            .await
            .unwrap(),
        &UserId(victim),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!((user.banned, user.role.as_deref()), (false, Some("admin")));
    server.stop();
}
