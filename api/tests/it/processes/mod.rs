//! Several Gatehouse processes on one store, as a deployment behind a load balancer runs them:
//! two real `gatehouse` binaries on one SQLite file, and two on one keyspace of the CQL node
//! (`SCYLLA_URI`; see `storage/tests/scylla.rs`), raced over HTTP. Every rule that one process
//! keeps with its actors must hold when the other process writes at the same moment.
mod api_keys;
mod by_mail;
mod cluster;
mod credentials;
mod pair;
mod webhooks;

use api_keys::a_keys_quota_and_rate_limit_hold_across_processes;
use by_mail::a_mailed_code_or_link_signs_in_once_across_processes;
use credentials::a_password_change_raced_over_two_processes_applies_once;
use futures::future::join_all;
pub(crate) use pair::{pair, Backend, Pair, Reply, ORIGIN};
use serde_json::{json, Value};
use webhooks::{
    a_backlog_on_two_processes_is_delivered_once, a_process_killed_mid_delivery_loses_no_event,
};

const TRIALS: usize = 200;

/// One race at a time in this binary: each starts two servers (and loads the CQL node), which
/// would otherwise compete for the machine's cores with every other race at once.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

macro_rules! on_both_backends {
    ($($race:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $race() {
                    let _turn = super::ONE_AT_A_TIME.acquire().await.unwrap();
                    super::$race(super::Backend::Sqlite).await;
                }
            )*
        }
        mod cql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $race() {
                    let _turn = super::ONE_AT_A_TIME.acquire().await.unwrap();
                    super::$race(super::Backend::Scylla).await;
                }
            )*
        }
    };
}

on_both_backends!(
    sign_ups_of_one_email_make_one_user,
    a_password_change_raced_over_two_processes_applies_once,
    a_mailed_code_or_link_signs_in_once_across_processes,
    a_keys_quota_and_rate_limit_hold_across_processes,
    a_process_killed_mid_delivery_loses_no_event,
    a_backlog_on_two_processes_is_delivered_once,
    a_reset_token_is_consumed_once,
    a_revoked_session_stays_revoked_while_the_other_process_refreshes_it,
    joins_stop_at_the_membership_limit,
    two_last_owners_removing_each_other_leave_one,
    a_ban_leaves_no_session_on_either_process,
    limits_count_requests_to_either_process,
    a_change_shows_here_at_once_and_there_within_the_view_cache_ttl,
    another_process_drops_its_view_on_the_change_event,
);

/// Each process keeps the organizations it read (`organization.view_cache`): a change made
/// through A shows in A's next read at once, and in B's once B's copy is `ttl_ms` old — for a
/// member's role (an organization change) and a member's name (a user change). With
/// `ttl_ms = 0` there is no cache: B sees the change at once too.
async fn a_change_shows_here_at_once_and_there_within_the_view_cache_ttl(backend: Backend) {
    const TTL_MS: u64 = 600;
    for ttl in [TTL_MS, 0] {
        let ttl_env = ttl.to_string();
        let Some(p) = pair(
            backend,
            &[(
                "GATEHOUSE_ORGANIZATION__VIEW_CACHE__TTL_MS",
                ttl_env.as_str(),
            )],
        ) else {
            return;
        };
        let (owner, _) = p.user("view-owner@example.com").await;
        let (member_cookie, member) = p.user("view-member@example.com").await;
        let org = p.new_org(&owner).await;
        let m = p.add_member(&p.a, &org, &member, "member").await;
        assert_eq!(m.status, 200, "{}", m.body);
        let member_id = m.body["id"].clone();
        let full = format!("/organization/get-full-organization?organizationId={org}");
        let of_member = |r: &Reply| -> (String, String) {
            let m = r.body["members"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["id"] == member_id)
                .unwrap()
                .clone();
            (
                m["role"].as_str().unwrap().to_owned(),
                m["user"]["name"].as_str().unwrap().to_owned(),
            )
        };
        // Both processes hold the organization now.
        for s in [&p.a, &p.b] {
            let r = p.get(s, &full, &owner).await;
            assert_eq!(of_member(&r), ("member".into(), "P".into()), "ttl {ttl}");
        }
        let changed = p
            .post(
                &p.a,
                "/organization/update-member-role",
                json!({"memberId": member_id, "role": "admin", "organizationId": org}),
                Some(&owner),
            )
            .await;
        assert_eq!(changed.status, 200, "{}", changed.body);
        let renamed = p
            .post(
                &p.a,
                "/update-user",
                json!({"name": "Renamed"}),
                Some(&member_cookie),
            )
            .await;
        assert_eq!(renamed.status, 200, "{}", renamed.body);
        let want = ("admin".to_owned(), "Renamed".to_owned());
        // The members list reads the same cache.
        let listed = p
            .get(
                &p.a,
                &format!("/organization/list-members?organizationId={org}"),
                &owner,
            )
            .await;
        assert_eq!(of_member(&listed), want, "ttl {ttl}");
        assert_eq!(
            of_member(&p.get(&p.a, &full, &owner).await),
            want,
            "ttl {ttl}"
        );
        if ttl == 0 {
            assert_eq!(of_member(&p.get(&p.b, &full, &owner).await), want);
        } else {
            // B's copy was read before the change: at most `ttl` later it is gone.
            tokio::time::sleep(std::time::Duration::from_millis(ttl)).await;
            assert_eq!(of_member(&p.get(&p.b, &full, &owner).await), want);
        }
        // A member removed through A reads nothing through A at once.
        let removed = p
            .post(
                &p.a,
                "/organization/remove-member",
                json!({"memberIdOrEmail": member_id, "organizationId": org}),
                Some(&owner),
            )
            .await;
        assert_eq!(removed.status, 200, "{}", removed.body);
        let r = p.get(&p.a, &full, &member_cookie).await;
        assert_eq!(r.status, 403, "ttl {ttl}: {}", r.body);
    }
}

/// A process drops its copy of an organization when the change's event reaches it (the views
/// consumer), long before the copy's time to live: B, holding the organization for a minute,
/// sees a role changed through A within seconds.
async fn another_process_drops_its_view_on_the_change_event(backend: Backend) {
    let Some(p) = pair(
        backend,
        &[("GATEHOUSE_ORGANIZATION__VIEW_CACHE__TTL_MS", "60000")],
    ) else {
        return;
    };
    let (owner, _) = p.user("event-view-owner@example.com").await;
    let (_, member) = p.user("event-view-member@example.com").await;
    let org = p.new_org(&owner).await;
    let m = p.add_member(&p.a, &org, &member, "member").await;
    assert_eq!(m.status, 200, "{}", m.body);
    let member_id = m.body["id"].clone();
    let full = format!("/organization/get-full-organization?organizationId={org}");
    let role = |r: &Reply| -> String {
        r.body["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == member_id)
            .unwrap()["role"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(role(&p.get(&p.b, &full, &owner).await), "member");
    let changed = p
        .post(
            &p.a,
            "/organization/update-member-role",
            json!({"memberId": member_id, "role": "admin", "organizationId": org}),
            Some(&owner),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    // On ScyllaDB events are read once a few seconds old (see storage::scylla::stream).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if role(&p.get(&p.b, &full, &owner).await) == "admin" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "B still shows its copy 30 s after the change (its time to live is 60 s)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// With the limiter on, the processes share its counters (`rate_limit.storage = "store"`,
/// the default): sign-ins from one address (3 per 10 s) alternate between them and the fourth
/// is refused; of 20 reset requests for one address raced through both, at most three are
/// sent (exactly three on SQLite's single writer; on ScyllaDB a burst may be refused earlier,
/// never later).
async fn limits_count_requests_to_either_process(backend: Backend) {
    let Some(p) = pair(backend, &[("GATEHOUSE_RATE_LIMIT__ENABLED", "true")]) else {
        return;
    };
    p.user("limited@example.com").await;
    if !matches!(backend, Backend::Sqlite) {
        at_a_window_start().await;
    }
    let sign_in = |i: usize| {
        p.post(
            p.pick(i),
            "/sign-in/email",
            json!({"email": "limited@example.com", "password": "a-good-password"}),
            None,
        )
    };
    for i in 0..3 {
        assert_eq!(sign_in(i).await.status, 200, "sign-in {i}");
    }
    let r = sign_in(3).await;
    assert_eq!((r.status, r.code()), (429, "TOO_MANY_REQUESTS"));

    let replies = join_all((0..20).map(|i| {
        p.post(
            p.pick(i),
            "/request-password-reset",
            json!({"email": "limited@example.com", "redirectTo": "/reset"}),
            None,
        )
    }))
    .await;
    let sent = replies.iter().filter(|r| r.status == 200).count();
    assert!(
        replies.iter().all(|r| r.status == 200 || r.status == 429),
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    match backend {
        Backend::Sqlite => assert_eq!(sent, 3),
        Backend::Scylla | Backend::Cluster => {
            assert!(sent <= 3, "{sent} of 20 passed a limit of 3")
        }
    }
    let r = p
        .post(
            &p.b,
            "/request-password-reset",
            json!({"email": "limited@example.com", "redirectTo": "/reset"}),
            None,
        )
        .await;
    assert_eq!(r.status, 429);
}

/// Waits for the start of a 10 s window in a minute's first 50 s. ScyllaDB's rate-limit
/// windows are aligned to the clock (storage::scylla::rate_limits): four sign-ins made across
/// a 10 s boundary, or a reset burst across a minute's, count in two windows.
async fn at_a_window_start() {
    loop {
        let ms = chrono::Utc::now().timestamp_millis();
        if ms % 10_000 < 300 && ms % 60_000 < 50_000 {
            return;
        }
        let to_next = 10_000 - ms % 10_000;
        tokio::time::sleep(std::time::Duration::from_millis(to_next as u64 + 20)).await;
    }
}

/// A ban through one process racing sign-ins of its user through both: afterwards the store
/// holds no live session of the user, and no cookie any sign-in got resolves on either process.
async fn a_ban_leaves_no_session_on_either_process(backend: Backend) {
    let Some(p) = pair(backend, &[]) else { return };
    let trials = match backend {
        Backend::Sqlite => 30,
        Backend::Scylla | Backend::Cluster => 10,
    };
    for trial in 0..trials {
        let email = format!("banned{trial}@example.com");
        let (_, id) = p.user(&email).await;
        let sign_ins = join_all((0..10).map(|i| {
            p.post(
                p.pick(i),
                "/sign-in/email",
                json!({"email": email, "password": "a-good-password"}),
                None,
            )
        }));
        let ban = p.call(
            p.pick(trial),
            reqwest::Method::POST,
            "/admin/ban-user",
            Some(json!({"userId": id})),
            None,
            true,
        );
        let (sign_ins, ban) = tokio::join!(sign_ins, ban);
        assert_eq!(ban.status, 200, "trial {trial}: {}", ban.body);
        let mut cookies = Vec::new();
        for r in sign_ins {
            match r.status {
                200 => cookies.push(r.cookie.expect("session cookie")),
                403 => assert_eq!(r.code(), "BANNED_USER", "trial {trial}"),
                other => panic!("trial {trial}: sign-in answered {other}: {}", r.body),
            }
        }
        let live = p
            .call(
                p.pick(trial + 1),
                reqwest::Method::POST,
                "/admin/list-user-sessions",
                Some(json!({"userId": id})),
                None,
                true,
            )
            .await;
        assert_eq!(
            live.body["sessions"],
            json!([]),
            "trial {trial}: a session survived the ban"
        );
        for c in &cookies {
            for s in [&p.a, &p.b] {
                assert_eq!(
                    p.get(s, "/get-session", c).await.body,
                    Value::Null,
                    "trial {trial}"
                );
            }
        }
    }
}

/// 20 sign-ups of one address, half on each process: exactly one user.
async fn sign_ups_of_one_email_make_one_user(backend: Backend) {
    let Some(p) = pair(backend, &[]) else { return };
    for trial in 0..TRIALS {
        let email = format!("race{trial}@example.com");
        let body = json!({"email": email, "password": "a-good-password", "name": "R"});
        let replies =
            join_all((0..20).map(|i| p.post(p.pick(i), "/sign-up/email", body.clone(), None)))
                .await;
        let won: Vec<&Reply> = replies.iter().filter(|r| r.status == 200).collect();
        assert_eq!(won.len(), 1, "trial {trial}");
        for r in replies.iter().filter(|r| r.status != 200) {
            assert_eq!(
                (r.status, r.code()),
                (422, "USER_ALREADY_EXISTS"),
                "trial {trial}"
            );
        }
        // The one user signs in on either process.
        let user = won[0].body["user"]["id"].clone();
        for s in [&p.a, &p.b] {
            let r = p
                .post(
                    s,
                    "/sign-in/email",
                    json!({"email": email, "password": "a-good-password"}),
                    None,
                )
                .await;
            assert_eq!(
                (r.status, &r.body["user"]["id"]),
                (200, &user),
                "trial {trial}"
            );
        }
    }
}

/// A reset token sent to both processes at once resets the password once.
async fn a_reset_token_is_consumed_once(backend: Backend) {
    let Some(p) = pair(backend, &[]) else { return };
    let email = "reset@example.com";
    p.user(email).await;
    let mut seen = std::collections::HashSet::new();
    for trial in 0..TRIALS {
        let r = p
            .post(
                p.pick(trial),
                "/request-password-reset",
                json!({"email": email, "redirectTo": "/reset"}),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let token = p.reset_token(email, &mut seen).await;
        let password = format!("new-password-{trial}");
        let body = json!({"token": token, "newPassword": password});
        let (ra, rb) = tokio::join!(
            p.post(&p.a, "/reset-password", body.clone(), None),
            p.post(&p.b, "/reset-password", body, None),
        );
        let ok = [&ra, &rb].iter().filter(|r| r.status == 200).count();
        assert_eq!(ok, 1, "trial {trial}: {} / {}", ra.body, rb.body);
        let lost = if ra.status == 200 { &rb } else { &ra };
        assert_eq!(
            (lost.status, lost.code()),
            (400, "INVALID_TOKEN"),
            "trial {trial}"
        );
        let r = p
            .post(
                p.pick(trial + 1),
                "/sign-in/email",
                json!({"email": email, "password": password}),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "trial {trial}: the new password works");
    }
}

/// A session revoked on A while B refreshes it (every request refreshes here) stays revoked.
async fn a_revoked_session_stays_revoked_while_the_other_process_refreshes_it(backend: Backend) {
    let Some(p) = pair(backend, &[("GATEHOUSE_SESSION__UPDATE_AGE", "0")]) else {
        return;
    };
    let email = "refresh@example.com";
    p.user(email).await;
    for trial in 0..TRIALS {
        let r = p
            .post(
                &p.b,
                "/sign-in/email",
                json!({"email": email, "password": "a-good-password"}),
                None,
            )
            .await;
        let cookie = r.cookie.expect("session cookie");
        let token = r.body["token"].as_str().unwrap().to_owned();
        let refreshes = join_all((0..4).map(|_| p.get(&p.b, "/get-session", &cookie)));
        let revoke = p.post(
            &p.a,
            "/revoke-session",
            json!({"token": token}),
            Some(&cookie),
        );
        let (refreshed, revoked) = tokio::join!(refreshes, revoke);
        assert_eq!(revoked.status, 200, "trial {trial}: {}", revoked.body);
        for r in &refreshed {
            assert_eq!(r.status, 200, "trial {trial}");
        }
        for s in [&p.a, &p.b] {
            let r = p.get(s, "/get-session", &cookie).await;
            assert_eq!(r.body, Value::Null, "trial {trial}: revoked stays revoked");
        }
    }
}

/// 150 joins, half through each process, into organizations limited to 100 members: exactly
/// 100 members (the owner and 99 joins), every time. (Fewer trials on the CQL node: each is
/// 150 lightweight transactions on one partition, and the node shares the machine's cores.)
async fn joins_stop_at_the_membership_limit(backend: Backend) {
    let trials = match backend {
        Backend::Sqlite => TRIALS,
        Backend::Scylla | Backend::Cluster => TRIALS / 4,
    };
    let Some(p) = pair(backend, &[("GATEHOUSE_LIMITS__MEMBERSHIP_LIMIT", "100")]) else {
        return;
    };
    let (owner, _) = p.user("owner@example.com").await;
    let mut joiners = Vec::new();
    for i in 0..150 {
        joiners.push(p.user(&format!("joiner{i}@example.com")).await.1);
    }
    for trial in 0..trials {
        let org = p.new_org(&owner).await;
        let replies = join_all(
            joiners
                .iter()
                .enumerate()
                .map(|(i, u)| p.add_member(p.pick(i), &org, u, "member")),
        )
        .await;
        let joined = replies.iter().filter(|r| r.status == 200).count();
        assert_eq!(joined, 99, "trial {trial}");
        for r in replies.iter().filter(|r| r.status != 200) {
            assert_eq!(
                (r.status, r.code()),
                (403, "ORGANIZATION_MEMBERSHIP_LIMIT_REACHED"),
                "trial {trial}"
            );
        }
        for s in [&p.a, &p.b] {
            let m = p.members(s, &org, &owner).await;
            assert_eq!(m["total"], 100, "trial {trial}");
            assert_eq!(m["members"].as_array().unwrap().len(), 100, "trial {trial}");
        }
    }
}

/// Two owners, the only two, remove each other — one through A, one through B: one owner is
/// left, every time.
async fn two_last_owners_removing_each_other_leave_one(backend: Backend) {
    let Some(p) = pair(backend, &[]) else { return };
    let (c1, _) = p.user("first-owner@example.com").await;
    let (c2, u2) = p.user("second-owner@example.com").await;
    for trial in 0..TRIALS {
        let org = p.new_org(&c1).await;
        let m2 = p.add_member(&p.b, &org, &u2, "owner").await;
        assert_eq!(m2.status, 200, "{}", m2.body);
        let members = p.members(&p.a, &org, &c1).await;
        let m1 = members["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] != m2.body["id"])
            .unwrap()["id"]
            .clone();
        let remove =
            |member: &Value, org: &str| json!({"memberIdOrEmail": member, "organizationId": org});
        let (ra, rb) = tokio::join!(
            p.post(
                &p.a,
                "/organization/remove-member",
                remove(&m2.body["id"], &org),
                Some(&c1)
            ),
            p.post(
                &p.b,
                "/organization/remove-member",
                remove(&m1, &org),
                Some(&c2)
            ),
        );
        let ok = [&ra, &rb].iter().filter(|r| r.status == 200).count();
        assert_eq!(ok, 1, "trial {trial}: {} / {}", ra.body, rb.body);
        let survivor = if ra.status == 200 { &c1 } else { &c2 };
        let left = p.members(&p.b, &org, survivor).await;
        let owners: Vec<&Value> = left["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "owner")
            .collect();
        assert_eq!(
            (left["total"].clone(), owners.len()),
            (json!(1), 1),
            "trial {trial}"
        );
    }
}
