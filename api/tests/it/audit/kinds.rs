//! The other kinds of event: rate limits once per window, the command line's export, sessions, organizations, keys.

use super::*;

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

/// A refusal's record is stored after its answer, many requests' in one write: a burst of
/// refused sign-ins leaves one record each, and a read of the log made at once sees them all
/// (the read route also waits for what this process queued before it).
#[tokio::test]
async fn refusals_are_recorded_after_their_answers_every_one() {
    let h = audit_harness().await;
    let refused = (0..200).map(|i| {
        let ep = h.ep.clone();
        async move {
            call(
                &ep,
                Method::POST,
                "/api/auth/sign-in/email",
                Some(
                    json!({"email": format!("nobody{i}@example.com"), "password": "whatever-123"}),
                ),
                None,
                &[("origin", ORIGIN)],
            )
            .await
            .status
            .as_u16()
        }
    });
    let statuses = futures::future::join_all(refused).await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    let page = server(
        &h,
        Method::GET,
        "/api/auth/admin/audit-log?action=user.sign-in&outcome=failure&limit=500",
        None,
    )
    .await
    .expect(200)
    .json();
    let mut targets: Vec<String> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["target"].as_str().unwrap_or_default().to_owned())
        .collect();
    targets.sort();
    let mut expected: Vec<String> = (0..200).map(|i| format!("nobody{i}@example.com")).collect();
    expected.sort();
    assert_eq!(targets, expected);
}
