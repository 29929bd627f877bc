//! Impersonation: its round trip, lifetime, and impersonating other admins.

use super::*;

#[tokio::test]
async fn impersonation_round_trip_and_lifetime() {
    let h = harness_with(|c| {
        admin_config(c);
        c.admin.impersonation_session_duration = 3600;
        // Sessions are extended after a minute of use: an impersonation must not be.
        c.session.update_age = 60;
    })
    .await;
    let (admin, admin_id) = user_with_role(&h, "admin@i.io", Some("admin")).await;
    let (_, other_admin) = user_with_role(&h, "admin2@i.io", Some("admin")).await;
    let (_, victim) = user_with_role(&h, "victim@i.io", None).await;
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": other_admin.0}),
            Some(&admin),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "YOU_CANNOT_IMPERSONATE_ADMINS".into())
    );
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": victim.0}),
            Some(&admin),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["session"]["impersonatedBy"], admin_id.0);
    assert_eq!(r.json()["user"]["id"], victim.0);
    // The admin's session rides along in the admin_session cookie; the impersonation's
    // cookie lasts the browser session.
    assert!(r
        .set_cookie("gatehouse.admin_session")
        .unwrap()
        .contains("Max-Age="));
    assert!(!r
        .set_cookie("gatehouse.session_token")
        .unwrap()
        .contains("Max-Age="));
    let both = format!("{}; {}", admin, r.cookie_header());
    let as_victim = r.cookie_header();
    let s = h.session(&as_victim).await;
    assert_eq!(
        (
            s["user"]["id"].as_str(),
            s["session"]["impersonatedBy"].as_str()
        ),
        (Some(victim.0.as_str()), Some(admin_id.0.as_str()))
    );
    // Marked in the user's own list of sessions.
    let list = h
        .get("/api/auth/list-sessions", Some(&as_victim))
        .await
        .expect(200)
        .json();
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["impersonatedBy"] == admin_id.0));
    // While impersonating, the admin acts as the user: admin routes are refused.
    let r = h.get("/api/auth/admin/list-users", Some(&as_victim)).await;
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS");
    // Stop: the impersonation ends, the admin's session is back.
    // (The request carries both cookies as a browser would: the newer session_token wins.)
    let cookie = merge_cookies(&both);
    let r = h
        .post(
            "/api/auth/admin/stop-impersonating",
            json!({}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], admin_id.0);
    assert!(r
        .set_cookie("gatehouse.admin_session")
        .unwrap()
        .contains("Max-Age=0"));
    let back = r.cookie_header();
    assert_eq!(h.session(&back).await["user"]["id"], admin_id.0);
    assert_eq!(h.session(&as_victim).await, Value::Null);
    // Without the admin's cookie there is nothing to go back to.
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": victim.0}),
            Some(&back),
        )
        .await
        .expect(200);
    let as_victim: String = r
        .cookie_header()
        .split("; ")
        .filter(|c| !c.starts_with("gatehouse.admin_session="))
        .collect::<Vec<_>>()
        .join("; ");
    let r = h
        .post(
            "/api/auth/admin/stop-impersonating",
            json!({}),
            Some(&as_victim),
        )
        .await;
    assert_eq!(r.code(), "ADMIN_SESSION_NOT_FOUND");
    // An impersonation ends after its lifetime even when used all along.
    for _ in 0..5 {
        h.clock.advance(chrono::Duration::minutes(10));
        let s = h.session(&as_victim).await;
        assert_eq!(s["session"]["impersonatedBy"], admin_id.0);
    }
    h.clock.advance(chrono::Duration::minutes(11));
    assert_eq!(h.session(&as_victim).await, Value::Null);
}

/// `a=1; b=2; a=3` → `b=2; a=3` (later values win, as a browser's cookie jar keeps them).
fn merge_cookies(header: &str) -> String {
    let mut jar: Vec<(String, String)> = Vec::new();
    for pair in header.split("; ").filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap();
        jar.retain(|(n, _)| n != k);
        jar.push((k.to_owned(), v.to_owned()));
    }
    jar.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test]
async fn impersonating_admins_can_be_allowed() {
    let h = harness_with(|c| {
        admin_config(c);
        let mut root = BTreeMap::new();
        root.insert(
            "user".to_string(),
            vec!["impersonate".to_string(), "impersonate-admins".to_string()],
        );
        c.admin.roles.insert("root".into(), root);
    })
    .await;
    let (root, _) = user_with_role(&h, "root@i.io", Some("root")).await;
    let (_, admin) = user_with_role(&h, "admin@i.io", Some("admin")).await;
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": admin.0}),
            Some(&root),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], admin.0);
}
