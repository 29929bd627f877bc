//! The audit log: each route writes its event once, with the right actor and outcome; the
//! admin and organization read routes filter, page and refuse as documented; no stored event
//! holds a password or a token.
use crate::common::*;
use poem::http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";
const PASSWORD: &str = "correct-horse-battery";
const NEW_PASSWORD: &str = "staple-another-horse";

async fn audit_harness() -> H {
    harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
    })
    .await
}

async fn server(h: &H, method: Method, path: &str, body: Option<Value>) -> Resp {
    h.call(
        method,
        path,
        body,
        None,
        &[
            ("authorization", &format!("Bearer {KEY}")),
            ("origin", ORIGIN),
        ],
    )
    .await
}

/// Every event the admin route answers, oldest first, through its pages.
async fn all_events(h: &H, filter: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/auth/admin/audit-log?order=oldest&limit=7{filter}{cursor}");
        let page = server(h, Method::GET, &path, None).await.expect(200).json();
        out.extend(page["events"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

fn count(events: &[Value], action: &str, outcome: &str) -> usize {
    events
        .iter()
        .filter(|e| e["action"] == action && e["outcome"] == outcome)
        .count()
}

fn one<'a>(events: &'a [Value], action: &str, outcome: &str) -> &'a Value {
    let found: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == action && e["outcome"] == outcome)
        .collect();
    assert_eq!(found.len(), 1, "{action} {outcome}: {events:#?}");
    found[0]
}

#[tokio::test]
async fn each_route_records_its_event_once_and_no_secret() {
    let h = audit_harness().await;
    let ann = h.sign_up("ann@example.com", PASSWORD).await;
    let ann_token = ann.json()["token"].as_str().unwrap().to_owned();
    let ann_id = ann.json()["user"]["id"].as_str().unwrap().to_owned();
    let bob = h.sign_up("bob@example.com", PASSWORD).await;
    let bob_id = bob.json()["user"]["id"].as_str().unwrap().to_owned();
    let bob_cookie = bob.cookie_header();
    // Sign-ins: an unknown address, a wrong password, a right one.
    h.sign_in("nobody@example.com", PASSWORD).await.expect(401);
    h.sign_in("ann@example.com", "wrong-password-1")
        .await
        .expect(401);
    let ann2 = h.sign_in("ann@example.com", PASSWORD).await.expect(200);
    let ann2_token = ann2.json()["token"].as_str().unwrap().to_owned();
    let ann_cookie = ann2.cookie_header();
    // A wrong current password, then the change.
    h.post(
        "/api/auth/change-password",
        json!({"currentPassword": "wrong-password-2", "newPassword": NEW_PASSWORD}),
        Some(&ann_cookie),
    )
    .await
    .expect(400);
    h.post(
        "/api/auth/change-password",
        json!({"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD}),
        Some(&ann_cookie),
    )
    .await
    .expect(200);
    // An organization: create, add Bob, change his role, a refused change by Bob, remove him.
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Acme", "slug": "acme"}),
            Some(&ann_cookie),
        )
        .await
        .expect(200)
        .json();
    let org_id = org["id"].as_str().unwrap().to_owned();
    let member = server(
        &h,
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": bob_id, "role": "member", "organizationId": org_id})),
    )
    .await
    .expect(200)
    .json();
    let member_id = member["id"].as_str().unwrap().to_owned();
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"organizationId": org_id, "memberId": member_id, "role": "admin"}),
        Some(&ann_cookie),
    )
    .await
    .expect(200);
    let owner_member = org["members"][0]["id"].as_str().unwrap().to_owned();
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"organizationId": org_id, "memberId": owner_member, "role": "member"}),
        Some(&bob_cookie),
    )
    .await;
    let inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"organizationId": org_id, "email": "cy@example.com", "role": "member"}),
            Some(&ann_cookie),
        )
        .await
        .expect(200)
        .json();
    h.post(
        "/api/auth/organization/cancel-invitation",
        json!({"invitationId": inv["id"]}),
        Some(&ann_cookie),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/remove-member",
        json!({"organizationId": org_id, "memberIdOrEmail": member_id}),
        Some(&ann_cookie),
    )
    .await
    .expect(200);
    // Sessions, an admin ban and unban, sign-out.
    h.post(
        "/api/auth/revoke-other-sessions",
        json!({}),
        Some(&ann_cookie),
    )
    .await
    .expect(200);
    server(
        &h,
        Method::POST,
        "/api/auth/admin/ban-user",
        Some(json!({"userId": bob_id, "banReason": "spam"})),
    )
    .await
    .expect(200);
    server(
        &h,
        Method::POST,
        "/api/auth/admin/unban-user",
        Some(json!({"userId": bob_id})),
    )
    .await
    .expect(200);
    h.post("/api/auth/sign-out", json!({}), Some(&ann_cookie))
        .await
        .expect(200);

    let events = all_events(&h, "").await;
    assert_eq!(count(&events, "user.sign-up", "success"), 2);
    assert!(events
        .iter()
        .any(|e| e["action"] == "user.sign-up" && e["userId"] == ann_id.as_str()));
    let unknown: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "user.sign-in" && e["outcome"] == "failure")
        .collect();
    assert_eq!(unknown.len(), 2);
    let (nobody, wrong) = match unknown[0]["target"] == "nobody@example.com" {
        true => (unknown[0], unknown[1]),
        false => (unknown[1], unknown[0]),
    };
    assert_eq!(nobody["target"], "nobody@example.com");
    assert_eq!(nobody["actorId"], Value::Null);
    assert_eq!(wrong["actorId"], ann_id.as_str());
    assert_eq!(wrong["reason"], "INVALID_EMAIL_OR_PASSWORD");
    let ok = one(&events, "user.sign-in", "success");
    assert_eq!(ok["actorId"], ann_id.as_str());
    assert!(ok["requestId"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(
        one(&events, "password.changed", "failure")["reason"],
        "INVALID_PASSWORD"
    );
    one(&events, "password.changed", "success");
    let created = one(&events, "organization.created", "success");
    assert_eq!(created["organizationId"], org_id.as_str());
    assert_eq!(created["actorId"], ann_id.as_str());
    let added = one(&events, "member.added", "success");
    assert_eq!(added["userId"], bob_id.as_str());
    assert_eq!(added["details"]["by"], "server");
    let changed = one(&events, "member.role-changed", "success");
    assert_eq!(changed["userId"], bob_id.as_str());
    assert_eq!(changed["details"]["role"], "admin");
    let refused = one(&events, "member.role-changed", "failure");
    assert_eq!(refused["actorId"], bob_id.as_str());
    one(&events, "invitation.created", "success");
    assert_eq!(
        one(&events, "invitation.canceled", "success")["target"],
        inv["id"]
    );
    assert_eq!(
        one(&events, "member.removed", "success")["userId"],
        bob_id.as_str()
    );
    assert_eq!(
        one(&events, "session.revoked", "success")["details"]["scope"],
        "others"
    );
    let ban = one(&events, "admin.user-banned", "success");
    assert_eq!(ban["userId"], bob_id.as_str());
    assert_eq!(ban["details"]["by"], "server");
    one(&events, "admin.user-unbanned", "success");
    one(&events, "user.sign-out", "success");
    // (The harness's clock stands still: events of one instant are in id order.) Newest first
    // is the reverse of oldest first.
    let times: Vec<&str> = events.iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    let newest = server(
        &h,
        Method::GET,
        "/api/auth/admin/audit-log?limit=1000",
        None,
    )
    .await
    .expect(200)
    .json();
    let mut reversed: Vec<Value> = newest["events"].as_array().unwrap().clone();
    reversed.reverse();
    assert_eq!(reversed, events);

    // Filters: a user (actor or subject), an organization, an action family, an outcome.
    let of_bob = all_events(&h, &format!("&userId={bob_id}")).await;
    assert!(of_bob
        .iter()
        .all(|e| e["actorId"] == bob_id.as_str() || e["userId"] == bob_id.as_str()));
    assert!(of_bob.iter().any(|e| e["action"] == "admin.user-banned"));
    let of_org = all_events(&h, &format!("&organizationId={org_id}")).await;
    assert_eq!(of_org.len(), 7, "{of_org:#?}");
    let members = all_events(&h, "&action=member").await;
    assert_eq!(members.len(), 4);
    let failures = all_events(&h, "&outcome=failure").await;
    assert_eq!(failures.len(), 4);

    // No event holds a password or a token, whatever field it would hide in.
    let text = serde_json::to_string(&events).unwrap();
    for secret in [
        PASSWORD,
        NEW_PASSWORD,
        "wrong-password-1",
        "wrong-password-2",
        &ann_token,
        &ann2_token,
    ] {
        assert!(!text.contains(secret), "an event holds {secret}");
    }
    for cookie in [&ann_cookie, &bob_cookie] {
        for part in cookie.split(';') {
            let value = part.split_once('=').map(|(_, v)| v).unwrap_or("");
            if value.len() > 8 {
                assert!(!text.contains(value), "an event holds a cookie value");
            }
        }
    }
}

#[tokio::test]
async fn the_read_routes_refuse_who_may_not_read() {
    let h = audit_harness().await;
    let ann = h.sign_up("ann@example.com", PASSWORD).await.cookie_header();
    let bob = h.sign_up("bob@example.com", PASSWORD).await;
    let bob_id = bob.json()["user"]["id"].as_str().unwrap().to_owned();
    let bob = bob.cookie_header();
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Acme", "slug": "acme"}),
            Some(&ann),
        )
        .await
        .expect(200)
        .json();
    let org_id = org["id"].as_str().unwrap();
    h.clock.advance(chrono::Duration::milliseconds(5));
    server(
        &h,
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": bob_id, "role": "member", "organizationId": org_id})),
    )
    .await
    .expect(200);
    // Not an admin, not signed in.
    let r = h
        .get("/api/auth/admin/audit-log", Some(&ann))
        .await
        .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG");
    h.get("/api/auth/admin/audit-log", None).await.expect(401);
    // The owner reads the organization's events only; a plain member may not.
    let path = format!("/api/auth/organization/audit-log?organizationId={org_id}");
    let page = h.get(&path, Some(&ann)).await.expect(200).json();
    let events = page["events"].as_array().unwrap();
    let actions: Vec<&str> = events
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["member.added", "organization.created"]);
    assert!(events.iter().all(|e| e["organizationId"] == org_id));
    let r = h.get(&path, Some(&bob)).await.expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG");
    // Bad filters are 400s, never 500s.
    for q in [
        "since=yesterday",
        "action=nope",
        "cursor=zzz",
        "limit=0",
        "limit=5000",
        "order=up",
    ] {
        let r = server(
            &h,
            Method::GET,
            &format!("/api/auth/admin/audit-log?{q}"),
            None,
        )
        .await;
        assert_eq!(r.status.as_u16(), 400, "{q}: {}", r.text);
    }
    // An admin (by role) reads everything.
    let mut u = h
        .store
        .get_user(&storage::UserId(bob_id.clone()))
        .await
        .unwrap()
        .unwrap();
    u.role = Some("admin".into());
    u.version += 1;
    h.store.update_user(&u, &[]).await.unwrap();
    let all = h
        .get("/api/auth/admin/audit-log", Some(&bob))
        .await
        .expect(200)
        .json();
    assert_eq!(all["events"].as_array().unwrap().len(), 4);
    let _: BTreeMap<String, Value> = serde_json::from_value(all).unwrap();
}

#[tokio::test]
async fn a_rate_limited_client_is_recorded_once_per_window() {
    let h = harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
        c.rate_limit.enabled = true;
    })
    .await;
    let sign_in = || async {
        call_from(
            &h,
            "198.51.100.9:5000",
            Method::POST,
            "/api/auth/sign-in/email",
            Some(json!({"email": "x@example.com", "password": "whatever-123"})),
            &[("origin", ORIGIN)],
        )
        .await
        .status
        .as_u16()
    };
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(sign_in().await);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        3,
        "{statuses:?}"
    );
    let limited = all_events(&h, "&action=rate-limit").await;
    assert_eq!(limited.len(), 1, "{limited:#?}");
    assert_eq!(limited[0]["ipAddress"], "198.51.100.9");
    assert_eq!(limited[0]["target"], "/api/auth/sign-in/email");
    assert_eq!(limited[0]["reason"], "TOO_MANY_REQUESTS");
    // The next window's first refusal is an event again.
    h.clock.advance(chrono::Duration::seconds(11));
    for expected in [401, 401, 401, 429, 429] {
        assert_eq!(sign_in().await, expected);
    }
    assert_eq!(all_events(&h, "&action=rate-limit").await.len(), 2);
}

/// `gatehouse audit export` writes the store's events as JSON lines, oldest first; what the
/// CLI itself changes (the first admin) is in the log too.
#[tokio::test]
async fn the_cli_exports_json_lines() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .args(args)
            .env("GATEHOUSE_DATA_DIR", dir.path())
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, _, said) = cli(&[
        "user",
        "create",
        "--email",
        "root@ops.io",
        "--name",
        "Root",
        "--role",
        "admin",
    ]);
    assert!(ok, "{said}");
    let (ok, _, said) = cli(&["user", "set-role", "root@ops.io", "admin,user"]);
    assert!(ok, "{said}");
    let (ok, out, said) = cli(&["audit", "export", "--since", "1h"]);
    assert!(ok, "{said}");
    assert!(said.contains("exported 2 audit events"), "{said}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actions: Vec<&str> = events
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["admin.user-created", "admin.role-set"]);
    assert_eq!(events[0]["details"]["by"], "cli");
    assert_eq!(events[0]["target"], "root@ops.io");
    assert_eq!(events[1]["details"]["role"], "admin,user");
    assert_eq!(events[0]["userId"], events[1]["userId"]);
    // A window that ends before them is empty; a file is made for the owner only.
    let (ok, out, _) = cli(&["audit", "export", "--since", "2h", "--until", "1h"]);
    assert!(ok && out.is_empty(), "{out}");
    let file = dir.path().join("audit.jsonl");
    let (ok, _, said) = cli(&[
        "audit",
        "export",
        "--since",
        "1d",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (ok, _, said) = cli(&["audit", "export", "--since", "yesterday"]);
    assert!(!ok && said.contains("ISO 8601"), "{said}");
}

/// The session cookies of `r` on top of `cookie` (later ones win by name).
fn merge_cookies(cookie: &str, r: &Resp) -> String {
    let mut jar: Vec<(String, String)> = Vec::new();
    let fresh = r.cookie_header();
    for part in cookie.split("; ").chain(fresh.split("; ")) {
        if let Some((k, v)) = part.split_once('=') {
            jar.retain(|(n, _)| n != k);
            jar.push((k.to_owned(), v.to_owned()));
        }
    }
    for c in r.set_cookies() {
        if c.contains("Max-Age=0") {
            let name = c.split('=').next().unwrap().to_owned();
            jar.retain(|(n, _)| *n != name);
        }
    }
    jar.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The account, organization and admin events the first test does not cause, each from the
/// route that causes it, once, with its actor.
#[tokio::test]
async fn the_other_event_kinds() {
    let h = audit_harness().await;
    let tick = || h.clock.advance(chrono::Duration::milliseconds(2));
    let ann = h.sign_up("ann@example.com", PASSWORD).await;
    let ann_id = ann.json()["user"]["id"].as_str().unwrap().to_owned();
    let mut ann = ann.cookie_header();
    tick();
    // An unverified address changes at once; then it is verified from the mailed link.
    let r = h
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "ann2@example.com"}),
            Some(&ann),
        )
        .await
        .expect(200);
    ann = merge_cookies(&ann, &r);
    tick();
    let mail = last_mail(&h, "verify-email", "ann2@example.com").expect("verification mail");
    let r = h.get(&link_path(&h, &mail), Some(&ann)).await;
    assert!(
        r.status.is_success() || r.status.is_redirection(),
        "{}",
        r.text
    );
    ann = merge_cookies(&ann, &r);
    tick();
    // A verified address: the change is asked for (a link to the old address).
    h.post(
        "/api/auth/change-email",
        json!({"newEmail": "ann3@example.com"}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    // A reset from the mailed link.
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": "ann2@example.com"}),
        None,
    )
    .await
    .expect(200);
    let token = reset_token_of(&last_mail(&h, "reset-password", "ann2@example.com").unwrap());
    tick();
    h.post(
        "/api/auth/reset-password",
        json!({"token": token, "newPassword": NEW_PASSWORD}),
        None,
    )
    .await
    .expect(200);
    tick();
    let ann_signed = h
        .sign_in("ann2@example.com", NEW_PASSWORD)
        .await
        .expect(200);
    ann = ann_signed.cookie_header();
    tick();
    // The last account cannot be unlinked: a refusal, recorded.
    h.post(
        "/api/auth/unlink-account",
        json!({"providerId": "credential"}),
        Some(&ann),
    )
    .await
    .expect(400);
    tick();
    // set-password for a user who has one: refused, recorded.
    server(
        &h,
        Method::POST,
        "/api/auth/set-password",
        Some(json!({"userId": ann_id, "newPassword": "another-password-9"})),
    )
    .await
    .expect(400);
    tick();
    // Organization: update, roles, an accepted and a rejected invitation, delete.
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Acme", "slug": "acme"}),
            Some(&ann),
        )
        .await
        .expect(200)
        .json();
    let org_id = org["id"].as_str().unwrap().to_owned();
    tick();
    h.post(
        "/api/auth/organization/update",
        json!({"organizationId": org_id, "data": {"name": "Acme Inc"}}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/organization/create-role",
        json!({"organizationId": org_id, "role": "auditor", "permission": {"team": ["create"]}}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/organization/update-role",
        json!({"organizationId": org_id, "roleName": "auditor", "data": {"permission": {"team": ["create", "update"]}}}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/organization/delete-role",
        json!({"organizationId": org_id, "roleName": "auditor"}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    let bob = h.sign_up("bob@example.com", PASSWORD).await;
    let bob_id = bob.json()["user"]["id"].as_str().unwrap().to_owned();
    let bob = bob.cookie_header();
    let cy = h.sign_up("cy@example.com", PASSWORD).await;
    let cy_id = cy.json()["user"]["id"].as_str().unwrap().to_owned();
    let cy = cy.cookie_header();
    tick();
    let invite = |email: &str| {
        h.post(
            "/api/auth/organization/invite-member",
            json!({"organizationId": org_id, "email": email, "role": "member"}),
            Some(&ann),
        )
    };
    let to_bob = invite("bob@example.com").await.expect(200).json();
    tick();
    let to_cy = invite("cy@example.com").await.expect(200).json();
    tick();
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": to_bob["id"]}),
        Some(&bob),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/organization/reject-invitation",
        json!({"invitationId": to_cy["id"]}),
        Some(&cy),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/organization/delete",
        json!({"organizationId": org_id}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    // Sessions: one revoked by its token, then all of Bob's.
    let second = h.sign_in("bob@example.com", PASSWORD).await.expect(200);
    let second_token = second.json()["token"].as_str().unwrap().to_owned();
    let second_id = h
        .store
        .get_session(&second_token)
        .await
        .unwrap()
        .unwrap()
        .id
        .0;
    tick();
    h.post(
        "/api/auth/revoke-session",
        json!({"token": second_token}),
        Some(&bob),
    )
    .await
    .expect(200);
    tick();
    h.post("/api/auth/revoke-sessions", json!({}), Some(&bob))
        .await
        .expect(200);
    tick();
    // Admin: Ann becomes one; create, update, role, password, sessions, impersonation, remove.
    let mut u = h
        .store
        .get_user(&storage::UserId(ann_id.clone()))
        .await
        .unwrap()
        .unwrap();
    u.role = Some("admin".into());
    u.version += 1;
    h.store.update_user(&u, &[]).await.unwrap();
    let created = h
        .post(
            "/api/auth/admin/create-user",
            json!({"email": "dee@example.com", "name": "Dee", "password": "dee-password-1"}),
            Some(&ann),
        )
        .await
        .expect(200)
        .json();
    let dee_id = created["user"]["id"].as_str().unwrap().to_owned();
    tick();
    h.post(
        "/api/auth/admin/update-user",
        json!({"userId": dee_id, "data": {"name": "Dee D"}}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/admin/set-role",
        json!({"userId": dee_id, "role": "user"}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/admin/set-user-password",
        json!({"userId": dee_id, "newPassword": "dee-password-2"}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/admin/revoke-user-sessions",
        json!({"userId": dee_id}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    let imp = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": dee_id}),
            Some(&ann),
        )
        .await
        .expect(200);
    let acting = merge_cookies(&ann, &imp);
    tick();
    h.post(
        "/api/auth/admin/stop-impersonating",
        json!({}),
        Some(&acting),
    )
    .await
    .expect(200);
    tick();
    h.post(
        "/api/auth/admin/remove-user",
        json!({"userId": dee_id}),
        Some(&ann),
    )
    .await
    .expect(200);
    tick();
    // Cy deletes her account with the mailed link, in her own browser.
    h.post("/api/auth/delete-user", json!({}), Some(&cy))
        .await
        .expect(200);
    let mail = last_mail(&h, "delete-account", "cy@example.com").unwrap();
    tick();
    let r = h.get(&link_path(&h, &mail), Some(&cy)).await;
    assert!(
        r.status.is_success() || r.status.is_redirection(),
        "{}",
        r.text
    );

    let events = all_events(&h, "").await;
    let actor = |action: &str, outcome: &str| one(&events, action, outcome)["actorId"].clone();
    let user = |action: &str, outcome: &str| one(&events, action, outcome)["userId"].clone();
    assert_eq!(actor("email.changed", "success"), ann_id.as_str());
    assert_eq!(
        one(&events, "email.changed", "success")["target"],
        "ann2@example.com"
    );
    assert_eq!(actor("email.verified", "success"), ann_id.as_str());
    assert_eq!(
        one(&events, "email.change-requested", "success")["target"],
        "ann3@example.com"
    );
    assert_eq!(user("password.reset", "success"), ann_id.as_str());
    assert_eq!(
        one(&events, "account.unlinked", "failure")["target"],
        "credential"
    );
    assert_eq!(user("password.set", "failure"), ann_id.as_str());
    assert_eq!(
        one(&events, "organization.updated", "success")["organizationId"],
        org_id.as_str()
    );
    for a in ["role.created", "role.updated", "role.deleted"] {
        assert_eq!(one(&events, a, "success")["target"], "auditor");
    }
    assert!(events
        .iter()
        .filter(|e| e["action"] == "invitation.created")
        .all(|e| e["organizationId"] == org_id.as_str()));
    assert_eq!(count(&events, "invitation.created", "success"), 2);
    assert_eq!(actor("invitation.accepted", "success"), bob_id.as_str());
    assert_eq!(actor("member.added", "success"), bob_id.as_str());
    assert_eq!(actor("invitation.rejected", "success"), cy_id.as_str());
    assert_eq!(
        one(&events, "organization.deleted", "success")["target"],
        "acme"
    );
    let revoked: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "session.revoked")
        .collect();
    assert_eq!(revoked.len(), 2);
    assert_eq!(revoked[0]["details"]["scope"], "one");
    assert_eq!(revoked[0]["target"], second_id.as_str());
    assert_eq!(revoked[1]["details"]["scope"], "all");
    for a in [
        "admin.user-created",
        "admin.user-updated",
        "admin.role-set",
        "admin.password-set",
        "admin.sessions-revoked",
        "admin.impersonation-started",
        "admin.impersonation-stopped",
        "admin.user-removed",
    ] {
        assert_eq!(actor(a, "success"), ann_id.as_str(), "{a}");
        assert_eq!(user(a, "success"), dee_id.as_str(), "{a}");
    }
    assert_eq!(
        one(&events, "admin.user-updated", "success")["details"]["fields"],
        "name"
    );
    let deleted = one(&events, "user.deleted", "success");
    assert_eq!(deleted["actorId"], cy_id.as_str());
    assert_eq!(deleted["details"]["confirmed"], "link");
    // Oldest first is the order the routes ran in (the clock moved between them).
    let times: Vec<&str> = events.iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    let text = serde_json::to_string(&events).unwrap();
    for secret in [
        PASSWORD,
        NEW_PASSWORD,
        "dee-password-1",
        "dee-password-2",
        &token,
        &second_token,
    ] {
        assert!(!text.contains(secret), "an event holds {secret}");
    }
}
