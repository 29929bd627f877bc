//! Two processes on a three-node CQL cluster (`storage/cql-test-node/cluster.sh`, named by
//! `CQL_CLUSTER_URI`; `.ci/test` runs this once, on its own) under write load while one node
//! and then another is killed (`kill -9`) and brought back, then with every node gone.
//!
//! The keyspace is replicated on all three nodes and the processes use the default
//! `LOCAL_QUORUM` / `LOCAL_SERIAL`: two nodes of three are enough for every operation. What must
//! hold: no answer is a 500; with two nodes up at least 90 % of requests succeed; a request that
//! failed failed with 503 and left no half-done change; afterwards every acknowledged write is on
//! every node (read at `ALL`), the membership limit held exactly, the organization kept its
//! owner, each invitation was accepted at most once and every signed-out session stays out. With
//! every node gone requests answer 503 quickly, `/health/ready` names the store, the processes
//! stay up and serve again once the nodes are back, without a restart.
use super::{pair, Backend, Pair, Reply, ONE_AT_A_TIME};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storage::{MemberStore, OrgId, UserStore};

const LIMIT: usize = 12;
const PASSWORD: &str = "a-good-password";

/// One request of the load: when it started, what it was, how it was answered.
struct Rec {
    at: Instant,
    what: &'static str,
    took: Duration,
    status: u16,
    code: String,
}

#[derive(Default)]
struct Log {
    recs: Vec<Rec>,
    /// Sign-ups: email → acknowledged (200) or failed (503).
    sign_ups: Vec<(String, bool)>,
    /// Invitation accepts acknowledged, by invitee user id.
    joined: Vec<String>,
    /// Per invitation: how many of its two accepts were acknowledged.
    accepts: HashMap<String, usize>,
    /// Role changes per member: every role asked, and the last one acknowledged.
    roles: HashMap<String, (Vec<String>, Option<usize>)>,
    /// Session cookies whose sign-out was acknowledged.
    signed_out: Vec<String>,
}

/// `storage/cql-test-node/cluster.sh <args>`, waited for.
fn cluster(args: &[&str]) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../storage/cql-test-node/cluster.sh"
    );
    let out = std::process::Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cluster.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn cluster_async(args: [&'static str; 2]) {
    tokio::task::spawn_blocking(move || cluster(&args))
        .await
        .unwrap();
}

impl Log {
    fn note(&mut self, what: &'static str, at: Instant, r: &Reply) {
        assert!(
            r.status < 500 || (r.status == 503 && r.code() == "SERVICE_UNAVAILABLE"),
            "{what}: {} {}",
            r.status,
            r.body
        );
        self.recs.push(Rec {
            at,
            what,
            took: at.elapsed(),
            status: r.status,
            code: r.code().to_owned(),
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_die_under_load_and_no_acknowledged_write_is_lost() {
    let _turn = ONE_AT_A_TIME.acquire().await.unwrap();
    let limit = LIMIT.to_string();
    let Some(p) = pair(
        Backend::Cluster,
        &[("GATEHOUSE_LIMITS__MEMBERSHIP_LIMIT", limit.as_str())],
    ) else {
        return;
    };
    let p = Arc::new(p);

    // Before the load, with every node up: an owner and an organization, three members whose
    // roles change, and invitees enough to fill the organization twice over.
    let (owner, owner_id) = p.user("owner@example.com").await;
    let org = p.new_org(&owner).await;
    let mut members = Vec::new();
    for i in 0..3 {
        let (_, u) = p.user(&format!("member{i}@example.com")).await;
        let r = p.add_member(&p.b, &org, &u, "member").await;
        assert_eq!(r.status, 200, "{}", r.body);
        members.push(r.body["id"].as_str().unwrap().to_owned());
    }
    let mut invitees = Vec::new();
    for i in 0..(2 * LIMIT) {
        let email = format!("invitee{i}@example.com");
        let (cookie, user) = p.user(&email).await;
        let r = p
            .post(
                &p.a,
                "/organization/invite-member",
                json!({"email": email, "role": "member", "organizationId": org}),
                Some(&owner),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        invitees.push((r.body["id"].as_str().unwrap().to_owned(), cookie, user));
    }

    let log = Arc::new(Mutex::new(Log::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    // Sign-ups, four at a time, alternating processes (a request that waits on a dead node
    // holds its worker up to the store's timeout: enough workers keep the load going).
    for w in 0..4 {
        let (p, log, stop) = (p.clone(), log.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let email = format!("s{w}-{i}@example.com");
                let at = Instant::now();
                let r = p
                    .try_post(
                        p.pick(i),
                        "/sign-up/email",
                        json!({"email": email, "password": PASSWORD, "name": "S"}),
                        None,
                    )
                    .await;
                let mut l = log.lock().unwrap();
                l.note("sign-up", at, &r);
                assert!(r.status == 200 || r.status == 503, "sign-up: {}", r.body);
                l.sign_ups.push((email, r.status == 200));
                i += 1;
            }
        }));
    }
    // Invitation accepts: each invitation accepted twice at once, once through each process,
    // paced so they span the run (and cross the membership limit halfway).
    {
        let (p, log, stop) = (p.clone(), log.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            for (invitation, cookie, user) in invitees {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let body = json!({"invitationId": invitation});
                let at = Instant::now();
                let (ra, rb) = tokio::join!(
                    p.try_post(
                        &p.a,
                        "/organization/accept-invitation",
                        body.clone(),
                        Some(&cookie)
                    ),
                    p.try_post(&p.b, "/organization/accept-invitation", body, Some(&cookie)),
                );
                {
                    let mut l = log.lock().unwrap();
                    let mut acked = 0;
                    for r in [&ra, &rb] {
                        l.note("accept", at, r);
                        if r.status == 200 {
                            acked += 1;
                        }
                    }
                    if acked > 0 {
                        l.joined.push(user.clone());
                    }
                    l.accepts.insert(invitation, acked);
                }
                tokio::time::sleep(Duration::from_millis(2500)).await;
            }
        }));
    }
    // Role changes of the three members, and the sole owner trying to step down.
    {
        let (p, log, stop, org, owner) = (
            p.clone(),
            log.clone(),
            stop.clone(),
            org.clone(),
            owner.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let member = &members[i % members.len()];
                let role = if (i / members.len()).is_multiple_of(2) {
                    "admin"
                } else {
                    "member"
                };
                let at = Instant::now();
                let r = p
                    .try_post(
                        p.pick(i),
                        "/organization/update-member-role",
                        json!({"memberId": member, "role": role, "organizationId": org}),
                        Some(&owner),
                    )
                    .await;
                {
                    let mut l = log.lock().unwrap();
                    l.note("role", at, &r);
                    assert!(r.status == 200 || r.status == 503, "role: {}", r.body);
                    let entry = l.roles.entry(member.clone()).or_default();
                    entry.0.push(role.to_owned());
                    if r.status == 200 {
                        entry.1 = Some(entry.0.len() - 1);
                    }
                }
                if i % 5 == 4 {
                    let at = Instant::now();
                    let r = p
                        .try_post(
                            p.pick(i + 1),
                            "/organization/leave",
                            json!({"organizationId": org}),
                            Some(&owner),
                        )
                        .await;
                    let mut l = log.lock().unwrap();
                    l.note("leave", at, &r);
                    assert_ne!(r.status, 200, "the last owner left: {}", r.body);
                }
                i += 1;
            }
        }));
    }
    // Sessions: sign in on one process, sign out on the other; two at a time.
    for w in 0..2 {
        let (p, log, stop) = (p.clone(), log.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let mut i = w;
            while !stop.load(Ordering::Relaxed) {
                let at = Instant::now();
                let r = p
                    .try_post(
                        p.pick(i),
                        "/sign-in/email",
                        json!({"email": "owner@example.com", "password": PASSWORD}),
                        None,
                    )
                    .await;
                log.lock().unwrap().note("sign-in", at, &r);
                i += 1;
                let Some(cookie) = r.cookie else { continue };
                let at = Instant::now();
                let r = p
                    .try_post(p.pick(i), "/sign-out", json!({}), Some(&cookie))
                    .await;
                let mut l = log.lock().unwrap();
                l.note("sign-out", at, &r);
                if r.status == 200 {
                    l.signed_out.push(cookie);
                }
            }
        }));
    }

    // The faults: node 2 killed and back, then node 3. Each window with two nodes up is
    // measured from a moment after the kill (the driver and the nodes notice it) to the restart.
    let mut windows = Vec::new();
    tokio::time::sleep(Duration::from_secs(5)).await;
    for n in ["2", "3"] {
        cluster_async(["kill", n]).await;
        let from = Instant::now() + Duration::from_secs(3);
        tokio::time::sleep(Duration::from_secs(20)).await;
        windows.push((from, Instant::now()));
        cluster_async(["start-node", n]).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let log = std::mem::take(&mut *log.lock().unwrap());

    // With two nodes of three up, at least 90 % of requests succeeded.
    let in_windows: Vec<&Rec> = log
        .recs
        .iter()
        .filter(|r| windows.iter().any(|(a, b)| r.at >= *a && r.at < *b))
        .collect();
    let failed = in_windows.iter().filter(|r| r.status == 503).count();
    let mut by_kind: HashMap<&str, (usize, usize)> = HashMap::new();
    for r in &log.recs {
        let e = by_kind.entry(r.what).or_default();
        e.0 += 1;
        e.1 += usize::from(r.status == 503);
    }
    eprintln!(
        "cluster load: {} requests, {} with a node down ({failed} answered 503); by kind \
         (requests, 503s): {by_kind:?}",
        log.recs.len(),
        in_windows.len()
    );
    let slowest = |recs: &mut Vec<Duration>| {
        recs.sort();
        let at = |q: usize| recs.get(recs.len() * q / 100).copied().unwrap_or_default();
        (at(50), at(99), recs.last().copied().unwrap_or_default())
    };
    let mut down: Vec<Duration> = in_windows.iter().map(|r| r.took).collect();
    let mut all: Vec<Duration> = log.recs.iter().map(|r| r.took).collect();
    eprintln!(
        "latency (p50, p99, max): with a node down {:?}, over the run {:?}",
        slowest(&mut down),
        slowest(&mut all)
    );
    assert!(
        in_windows.len() >= 60,
        "too little load: {}",
        in_windows.len()
    );
    assert!(
        failed * 10 <= in_windows.len(),
        "{failed} of {} requests failed with a node down",
        in_windows.len()
    );
    let codes: HashSet<&str> = log
        .recs
        .iter()
        .filter(|r| r.status >= 400 && r.status != 503)
        .map(|r| r.code.as_str())
        .collect();
    eprintln!("refusals seen: {codes:?}");

    // Every acknowledged write is on every node: read at ALL.
    let mut all = p.keyspace.as_ref().unwrap().0.clone();
    all.consistency = storage::scylla::Consistency::All;
    let store = storage::scylla::ScyllaStore::connect(&all).await.unwrap();
    for (email, acked) in &log.sign_ups {
        let user = store.get_user_by_email(email).await.unwrap();
        if *acked {
            assert!(user.is_some(), "acknowledged sign-up {email} lost");
        }
    }
    // A sign-up that failed is either whole (the user signs in) or not there at all (the
    // email signs up afresh): never half-done.
    for (email, _) in log.sign_ups.iter().filter(|(_, acked)| !acked) {
        let again = p
            .try_post(
                &p.a,
                "/sign-up/email",
                json!({"email": email, "password": PASSWORD, "name": "S"}),
                None,
            )
            .await;
        if again.status != 200 {
            assert_eq!(
                again.code(),
                "USER_ALREADY_EXISTS",
                "{email}: {}",
                again.body
            );
            let r = p
                .try_post(
                    &p.b,
                    "/sign-in/email",
                    json!({"email": email, "password": PASSWORD}),
                    None,
                )
                .await;
            assert_eq!(r.status, 200, "{email} half signed up: {}", r.body);
        }
    }
    let org_id = OrgId(org.clone());
    let stored = store.list_all_members(&org_id).await.unwrap();
    let users: Vec<&str> = stored.iter().map(|m| m.user_id.as_str()).collect();
    let distinct: HashSet<&str> = users.iter().copied().collect();
    assert_eq!(distinct.len(), users.len(), "a user is a member twice");
    assert!(
        stored.len() <= LIMIT,
        "{} members, limit {LIMIT}",
        stored.len()
    );
    for u in &log.joined {
        assert!(
            distinct.contains(u.as_str()),
            "acknowledged join of {u} lost"
        );
    }
    for (invitation, acked) in &log.accepts {
        assert!(
            *acked <= 1,
            "invitation {invitation} accepted {acked} times"
        );
    }
    let owners: Vec<_> = stored.iter().filter(|m| m.role == "owner").collect();
    assert_eq!(owners.len(), 1, "owners: {owners:?}");
    assert_eq!(owners[0].user_id.as_str(), owner_id);
    for m in &stored {
        if let Some((asked, last_acked)) = log.roles.get(m.id.as_str()) {
            // The last acknowledged role, or one asked after it whose answer was a 503.
            let from = last_acked.unwrap_or(0);
            assert!(
                asked[from..].contains(&m.role),
                "member {}: role {} (asked {asked:?}, last acknowledged {last_acked:?})",
                m.id,
                m.role
            );
        }
    }
    for cookie in &log.signed_out {
        for s in [&p.a, &p.b] {
            let r = p.get(s, "/get-session", cookie).await;
            assert_eq!(
                r.body,
                Value::Null,
                "a signed-out session answers: {}",
                r.body
            );
        }
    }

    every_node_gone_and_back(&p, &owner).await;
}

/// Every node killed: requests answer 503 quickly, without a word about the store, and
/// `/health/ready` names it; the processes stay up and serve again once the nodes are back.
async fn every_node_gone_and_back(p: &Pair, owner: &str) {
    for n in ["1", "2", "3"] {
        cluster_async(["kill", n]).await;
    }
    for s in [&p.a, &p.b] {
        for (path, body, cookie) in [
            (
                "/sign-in/email",
                json!({"email": "owner@example.com", "password": PASSWORD}),
                None,
            ),
            (
                "/sign-up/email",
                json!({"email": "late@example.com", "password": PASSWORD, "name": "L"}),
                None,
            ),
            ("/list-sessions", Value::Null, Some(owner)),
        ] {
            let at = Instant::now();
            let r = if body.is_null() {
                p.try_call(s, reqwest::Method::GET, path, None, cookie, false)
                    .await
            } else {
                p.try_post(s, path, body, cookie).await
            };
            let took = at.elapsed();
            eprintln!(
                "with every node down, {path} answered {} in {took:?}",
                r.status
            );
            assert_eq!(
                (r.status, r.code()),
                (503, "SERVICE_UNAVAILABLE"),
                "{path}: {}",
                r.body
            );
            assert!(took < Duration::from_secs(12), "{path} took {took:?}");
            let text = r.body.to_string().to_lowercase();
            for word in ["127.0.0", "cassandra", "scylla", "keyspace", "node"] {
                assert!(!text.contains(word), "{path} tells about the store: {text}");
            }
        }
        let r = p
            .http
            .get(format!("http://{}/health/ready", s.addr))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        let body: Value = r.json().await.unwrap();
        assert_ne!(body["checks"]["store"], "ok", "{body}");
        assert_ne!(body["checks"]["store"], Value::Null, "{body}");
    }
    for s in [&p.a, &p.b] {
        let live = p
            .http
            .get(format!("http://{}/health/live", s.addr))
            .send()
            .await;
        assert_eq!(live.unwrap().status(), 200, "{} is not up", s.base);
    }
    for n in ["1", "2", "3"] {
        cluster_async(["start-node", n]).await;
    }
    for s in [&p.a, &p.b] {
        let mut served = None;
        for _ in 0..120 {
            let r = p
                .try_post(
                    s,
                    "/sign-in/email",
                    json!({"email": "owner@example.com", "password": PASSWORD}),
                    None,
                )
                .await;
            if r.status == 200 {
                served = Some(r);
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(served.is_some(), "{} does not serve again", s.base);
        let ready = p
            .http
            .get(format!("http://{}/health/ready", s.addr))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200);
    }
}
