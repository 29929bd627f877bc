//! Moving a deployment from the embedded store to ScyllaDB with the real binary: `gatehouse
//! export` from the SQLite file, `gatehouse migrate` and `gatehouse import` into a keyspace of
//! the CQL node, then a server on the keyspace: users sign in with their passwords, keep their
//! sessions and see their organizations. (Into a second SQLite file as well, and when no CQL
//! node is configured only there.)
use crate::common::Server;
use serde_json::{json, Value};
use std::process::Command;
use storage::scylla::testing::throwaway_keyspace;

const SECRET: &str = "migration-secret-0123456789abcdefghij";
const KEY: &str = "migration-server-key-0123456789abcdef";

/// Runs `gatehouse <args>` with `env`; panics with its stderr unless it succeeds.
fn gatehouse(args: &[&str], data_dir: &std::path::Path, env: &[(String, String)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(args)
        .env("GATEHOUSE_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "gatehouse {args:?}: {stderr}");
    stderr
}

async fn call(
    http: &reqwest::Client,
    s: &Server,
    path: &str,
    body: Option<Value>,
    cookie: Option<&str>,
) -> (u16, Value, Option<String>) {
    let mut req = match &body {
        Some(b) => http.post(format!("{}{path}", s.base)).json(b),
        None => http.get(format!("{}{path}", s.base)),
    }
    .header("origin", "http://localhost:3000");
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    if path.ends_with("add-member") {
        req = req.bearer_auth(KEY);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let cookie = crate::common::session_cookie_of(r.headers());
    (status, r.json().await.unwrap_or(Value::Null), cookie)
}

#[tokio::test]
async fn export_from_sqlite_import_into_the_cql_node_and_carry_on() {
    let http = reqwest::Client::new();
    let base: Vec<(String, String)> = vec![
        ("GATEHOUSE_SECRET".into(), SECRET.into()),
        ("GATEHOUSE_SERVER_KEY".into(), KEY.into()),
    ];
    let env = |extra: &[(String, String)]| -> Vec<(String, String)> {
        base.iter().chain(extra).cloned().collect()
    };

    // Before: a deployment on the SQLite file.
    let source = tempfile::tempdir().unwrap();
    let source_env = env(&[]);
    let refs: Vec<(&str, &str)> = source_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let server = Server::start_with(source.path(), &refs, None);
    let mut ids = Vec::new();
    let mut cookies = Vec::new();
    for who in ["ann", "bob"] {
        let (status, body, cookie) = call(
            &http,
            &server,
            "/sign-up/email",
            Some(json!({"name": who, "email": format!("{who}@example.com"), "password": format!("{who}-password-1")})),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        ids.push(body["user"]["id"].as_str().unwrap().to_owned());
        cookies.push(cookie.unwrap());
    }
    let (status, org, _) = call(
        &http,
        &server,
        "/organization/create",
        Some(json!({"name": "Acme", "slug": "acme"})),
        Some(&cookies[0]),
    )
    .await;
    assert_eq!(status, 200, "{org}");
    let (status, body, _) = call(
        &http,
        &server,
        "/organization/add-member",
        Some(json!({"userId": ids[1], "role": "admin", "organizationId": org["id"]})),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.stop();

    let dump = source.path().join("dump.jsonl");
    let said = gatehouse(
        &["export", "--output", dump.to_str().unwrap()],
        source.path(),
        &source_env,
    );
    assert!(said.contains("exported 2 users"), "{said}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dump).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the dump is readable by its owner only"
        );
    }

    // After: the same data on a new store, served by a new server.
    let mut targets: Vec<(Vec<(String, String)>, Option<_>)> = vec![(env(&[]), None)];
    if let Some((opts, guard)) = throwaway_keyspace("gh_migrate") {
        targets.push((
            env(&[
                ("GATEHOUSE_STORE".into(), "scylla".into()),
                ("GATEHOUSE_SCYLLA__URI".into(), opts.nodes.join(",")),
                ("GATEHOUSE_SCYLLA__KEYSPACE".into(), opts.keyspace.clone()),
                (
                    "GATEHOUSE_SCYLLA__REPLICATION".into(),
                    opts.replication.clone(),
                ),
            ]),
            Some(guard),
        ));
    }
    for (target_env, _guard) in targets {
        let dir = tempfile::tempdir().unwrap();
        gatehouse(&["migrate"], dir.path(), &target_env);
        let said = gatehouse(
            &["import", "--input", dump.to_str().unwrap()],
            dir.path(),
            &target_env,
        );
        assert!(
            said.contains("imported 2 users, 2 accounts, 2 sessions, 1 organizations, 2 members"),
            "{said}"
        );
        let refs: Vec<(&str, &str)> = target_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let server = Server::start_with(dir.path(), &refs, None);
        // Sessions came along: ann is still signed in.
        let (_, s, _) = call(&http, &server, "/get-session", None, Some(&cookies[0])).await;
        assert_eq!(s["user"]["id"], ids[0].as_str(), "{s}");
        // Passwords came along: bob signs in, and sees his organization and role.
        let (status, body, bob) = call(
            &http,
            &server,
            "/sign-in/email",
            Some(json!({"email": "bob@example.com", "password": "bob-password-1"})),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let bob = bob.unwrap();
        let (_, orgs, _) = call(&http, &server, "/organization/list", None, Some(&bob)).await;
        assert_eq!(orgs[0]["slug"], "acme", "{orgs}");
        let (_, members, _) = call(
            &http,
            &server,
            &format!(
                "/organization/list-members?organizationId={}",
                org["id"].as_str().unwrap()
            ),
            None,
            Some(&bob),
        )
        .await;
        assert_eq!(members["total"], 2, "{members}");
        let roles: Vec<&str> = members["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(
            roles.contains(&"owner") && roles.contains(&"admin"),
            "{roles:?}"
        );
        // Unique rules hold on the new store: the slug and the emails are taken.
        let (status, _, _) = call(
            &http,
            &server,
            "/sign-up/email",
            Some(json!({"name": "x", "email": "ann@example.com", "password": "another-password"})),
            None,
        )
        .await;
        assert_eq!(status, 422);
        server.stop();
    }
}
