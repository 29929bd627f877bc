//! A process that dies right after a decision (as `kill -9` would: an abort at a failpoint, no
//! shutdown) loses neither the decision's audit record nor its mail: another process on the
//! same store finds both, on SQLite and on the CQL node.
use crate::common::Server;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use storage::scylla::testing::throwaway_keyspace;

const SERVER_KEY: &str = "crash-server-key-0123456789abcdefghij";
const ORIGIN: &str = "http://localhost:3000";

#[derive(Clone, Copy)]
enum Backend {
    Sqlite,
    Scylla,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invitation_outlives_its_process_on_sqlite() {
    an_invitation_outlives_its_process(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invitation_outlives_its_process_on_the_cql_node() {
    an_invitation_outlives_its_process(Backend::Scylla).await;
}

async fn post(
    http: &reqwest::Client,
    s: &Server,
    path: &str,
    body: Value,
    cookie: Option<&str>,
) -> reqwest::Result<reqwest::Response> {
    let mut r = http
        .post(format!("{}{path}", s.base))
        .header("origin", ORIGIN)
        .json(&body);
    if let Some(c) = cookie {
        r = r.header("cookie", c);
    }
    r.send().await
}

/// Invitation mails in the shared outbox.
fn invitations(dir: &std::path::Path) -> Vec<Value> {
    crate::common::outbox_in(&dir.join("outbox"))
        .into_iter()
        .filter(|m| m["kind"] == "invitation")
        .collect()
}

/// The invitation is stored, then the process dies before mailing it (SQLite: the change, its
/// audit record and its mail are one transaction; CQL: before the decision's row is settled,
/// so the next process's reader settles it through the probe). The next process mails it
/// once, and the audit log has the invitation.
async fn an_invitation_outlives_its_process(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut env: Vec<(String, String)> = vec![
        (
            "GATEHOUSE_SECRET".into(),
            "crash-secret-0123456789abcdefghijklmn".into(),
        ),
        ("GATEHOUSE_SERVER_KEY".into(), SERVER_KEY.into()),
        ("GATEHOUSE_MAIL__REDELIVER_AFTER_SECS".into(), "1".into()),
    ];
    let mut _keyspace = None;
    let failpoint = match backend {
        Backend::Sqlite => "abort-before-mail",
        Backend::Scylla => {
            let Some((opts, guard)) = throwaway_keyspace("gh_crash") else {
                return;
            };
            crate::common::migrate_cql(&mut env, &opts, dir.path());
            _keyspace = Some(guard);
            "abort-before-settle"
        }
    };
    let env_of = |extra: Option<(&str, &str)>| {
        let mut e: Vec<(String, String)> = env.clone();
        e.extend(extra.map(|(k, v)| (k.to_owned(), v.to_owned())));
        e
    };
    let dying_env = env_of(Some(("GATEHOUSE_FAILPOINT", failpoint)));
    let dying: Vec<(&str, &str)> = dying_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut a = Server::start_with(dir.path(), &dying, None);
    let http = reqwest::Client::new();
    let r = post(
        &http,
        &a,
        "/sign-up/email",
        json!({"email": "owner@example.com", "password": "a-good-password", "name": "O"}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = crate::common::session_cookie_of(r.headers()).unwrap();
    let r = post(
        &http,
        &a,
        "/organization/create",
        json!({"name": "Crash", "slug": "crash"}),
        Some(&cookie),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let org = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The invitation is decided and stored; the process dies before it answers.
    let r = post(
        &http,
        &a,
        "/organization/invite-member",
        json!({"email": "bob@example.com", "role": "member", "organizationId": org}),
        Some(&cookie),
    )
    .await;
    assert!(r.is_err(), "the process died before answering: {r:?}");
    let status = a.child.wait().unwrap();
    assert!(!status.success(), "aborted: {status:?}");
    assert!(
        invitations(dir.path()).is_empty(),
        "not mailed before it died"
    );
    let next_env = env_of(None);
    let next: Vec<(&str, &str)> = next_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let b = Server::start_with(dir.path(), &next, None);
    // Its mail consumer finds the stored mail no request delivered (on CQL once the decision's
    // row is settled, 30 s after it was written).
    let deadline = Instant::now() + Duration::from_secs(90);
    while invitations(dir.path()).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // And only once, however often its consumer looks again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mails = invitations(dir.path());
    assert_eq!(mails.len(), 1, "{mails:?}");
    let r = http
        .get(format!(
            "{}/organization/list-invitations?organizationId={org}",
            b.base
        ))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    let listed: Value = r.json().await.unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    assert!(
        mails[0]["link"].as_str().unwrap().contains(&id),
        "{} names {id}",
        mails[0]["link"]
    );
    let audit: Value = http
        .get(format!(
            "{}/admin/audit-log?action=invitation.created&organizationId={org}",
            b.base
        ))
        .bearer_auth(SERVER_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let events = audit["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{audit}");
    assert_eq!(events[0]["target"], id.as_str());
    assert_eq!(events[0]["outcome"], "success");
}
