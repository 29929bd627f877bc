//! Each route's audit event, once and without a secret; who may read the log.

use super::*;

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
