//! Who may call which admin route: every route × caller, and a role narrowed to one permission.

use super::*;

/// Every admin route × {server key, admin, a configured role with a subset, plain user,
/// anonymous}: the status and code of each cell.
#[tokio::test]
async fn authorization_matrix() {
    let h = harness_with(admin_config).await;
    let (admin, _) = user_with_role(&h, "admin@m.io", Some("admin")).await;
    let (support, _) = user_with_role(&h, "support@m.io", Some("support")).await;
    let (plain, _) = user_with_role(&h, "plain@m.io", None).await;
    let c = Callers {
        admin,
        support,
        plain,
    };
    // (route, method, body builder from a fresh target, the code a caller without the
    // permission gets, whether `support` holds it)
    type Body = fn(&str, &str) -> Option<Value>;
    let routes: Vec<(&str, Method, Body, &str, bool)> = vec![
        (
            "create-user",
            Method::POST,
            |_, n| {
                Some(json!({"email": format!("new-{n}@m.io"), "password": PASSWORD, "name": "New"}))
            },
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_USERS",
            false,
        ),
        (
            "list-users",
            Method::GET,
            |_, _| None,
            "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS",
            true,
        ),
        (
            "get-user",
            Method::GET,
            |_, _| None,
            "YOU_ARE_NOT_ALLOWED_TO_GET_USER",
            true,
        ),
        (
            "update-user",
            Method::POST,
            |t, _| Some(json!({"userId": t, "data": {"name": "Changed"}})),
            "YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS",
            false,
        ),
        (
            "set-role",
            Method::POST,
            |t, _| Some(json!({"userId": t, "role": "support"})),
            "YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE",
            false,
        ),
        (
            "ban-user",
            Method::POST,
            |t, _| Some(json!({"userId": t, "banReason": "spam"})),
            "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS",
            false,
        ),
        (
            "unban-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS",
            false,
        ),
        (
            "list-user-sessions",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS",
            true,
        ),
        (
            "revoke-user-session",
            Method::POST,
            |_, _| Some(json!({"sessionToken": "no-such-token"})),
            "YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS",
            false,
        ),
        (
            "revoke-user-sessions",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS",
            false,
        ),
        (
            "impersonate-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS",
            false,
        ),
        (
            "remove-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS",
            false,
        ),
        (
            "disable-two-factor",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS",
            false,
        ),
        (
            "set-user-password",
            Method::POST,
            |t, _| Some(json!({"userId": t, "newPassword": "another-password"})),
            "YOU_ARE_NOT_ALLOWED_TO_SET_USERS_PASSWORD",
            false,
        ),
    ];
    let mut n = 0;
    for (route, method, body, denied, support_may) in &routes {
        for who in [
            Who::Server,
            Who::Admin,
            Who::Support,
            Who::Plain,
            Who::Anonymous,
        ] {
            n += 1;
            let target = store_user(&h, &format!("target-{n}@m.io")).await;
            let mut path = format!("/api/auth/admin/{route}");
            if *route == "get-user" {
                path.push_str(&format!("?id={}", target.id));
            }
            let r = send(
                &h,
                who,
                &c,
                method.clone(),
                &path,
                body(&target.id.0, &n.to_string()),
            )
            .await;
            let (status, code) = match who {
                Who::Anonymous => (401, "UNAUTHORIZED"),
                Who::Plain => (403, *denied),
                Who::Support if !support_may => (403, *denied),
                // Impersonation returns to an admin's session: the server key has none.
                Who::Server if *route == "impersonate-user" => (403, *denied),
                _ => (200, ""),
            };
            assert_eq!(r.status.as_u16(), status, "{route} as {who:?}: {}", r.text);
            if !code.is_empty() {
                assert_eq!(r.code(), code, "{route} as {who:?}");
            }
        }
    }
    // has-permission answers for anyone signed in, about themselves.
    for (who, want) in [
        (Who::Admin, true),
        (Who::Support, false),
        (Who::Plain, false),
    ] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/has-permission",
            Some(json!({"permissions": {"user": ["ban"]}})),
        )
        .await
        .expect(200);
        assert_eq!(r.json(), json!({"error": null, "success": want}), "{who:?}");
    }
    let r = send(
        &h,
        Who::Support,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["list", "get"], "session": ["list"]}})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], true);
    let r = send(
        &h,
        Who::Anonymous,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["ban"]}})),
    )
    .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
    // The server asks about a role or a user.
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"session": ["revoke"]}, "role": "admin"})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], true);
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"session": ["revoke"]}, "role": "support"})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], false);
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["ban"]}})),
    )
    .await;
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = send(
        &h,
        Who::Admin,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "INVALID_PERMISSION_CHECK".into())
    );
    // stop-impersonating needs an impersonation session.
    for who in [Who::Admin, Who::Plain] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/stop-impersonating",
            None,
        )
        .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "NOT_IMPERSONATING".into()),
            "{who:?}"
        );
    }
    for who in [Who::Anonymous, Who::Server] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/stop-impersonating",
            None,
        )
        .await;
        assert_eq!(r.status.as_u16(), 401, "{who:?}");
    }
    // A wrong server key is no caller at all.
    let r = h
        .call(
            Method::GET,
            "/api/auth/admin/list-users",
            None,
            None,
            &[("authorization", "Bearer nope")],
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
}

/// A configured role holds exactly its permissions: one that may only set passwords does that,
/// and nothing else.
#[tokio::test]
async fn a_narrow_role_holds_only_its_permission() {
    let h = harness_with(|c| {
        admin_config(c);
        let mut resetter = BTreeMap::new();
        resetter.insert("user".to_string(), vec!["set-password".to_string()]);
        c.admin.roles.insert("resetter".into(), resetter);
    })
    .await;
    let (resetter, _) = user_with_role(&h, "resetter@n.io", Some("resetter")).await;
    let (_, target) = user_with_role(&h, "target@n.io", None).await;
    h.post(
        "/api/auth/admin/set-user-password",
        json!({"userId": target.0, "newPassword": "reset-by-helpdesk"}),
        Some(&resetter),
    )
    .await
    .expect(200);
    h.sign_in("target@n.io", "reset-by-helpdesk")
        .await
        .expect(200);
    let r = h
        .get(
            &format!("/api/auth/admin/get-user?id={}", target.0),
            Some(&resetter),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "YOU_ARE_NOT_ALLOWED_TO_GET_USER".into())
    );
    let r = h
        .post(
            "/api/auth/admin/ban-user",
            json!({"userId": target.0}),
            Some(&resetter),
        )
        .await;
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS");
}
