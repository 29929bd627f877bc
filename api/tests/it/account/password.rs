//! Changing, setting and checking a password; fresh sessions for sensitive actions.

use super::*;

#[tokio::test]
async fn change_password_and_revoke_other_sessions() {
    let h = harness().await;
    let a = h.sign_up("cole@example.com", PW).await.cookie_header();
    let b = h
        .sign_in("cole@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    let r = h
        .post(
            "/api/auth/change-password",
            json!({"newPassword": "second-password-2", "currentPassword": "nope-nope-nope"}),
            Some(&a),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})
    );
    let r = h
        .post(
            "/api/auth/change-password",
            json!({"newPassword": "x", "currentPassword": PW}),
            Some(&a),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "PASSWORD_TOO_SHORT");
    let r = h
        .post(
            "/api/auth/change-password",
            json!({"newPassword": "second-password-2", "currentPassword": PW}),
            Some(&a),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["token"], serde_json::Value::Null);
    assert_eq!(r.json()["user"]["email"], "cole@example.com");
    h.sign_in("cole@example.com", "second-password-2")
        .await
        .expect(200);
    h.sign_in("cole@example.com", PW).await.expect(401);
    assert!(h.session(&b).await["session"].is_object());

    let r = h.post("/api/auth/change-password", json!({"newPassword": "third-password-3", "currentPassword": "second-password-2", "revokeOtherSessions": true}), Some(&a)).await.expect(200);
    let token = r.json()["token"].as_str().unwrap().to_owned();
    let fresh = r.cookie_header();
    assert_eq!(h.get("/api/auth/get-session", Some(&a)).await.text, "null");
    assert_eq!(h.get("/api/auth/get-session", Some(&b)).await.text, "null");
    assert_eq!(h.session(&fresh).await["session"]["token"], token.as_str());
    assert_eq!(
        h.get("/api/auth/list-sessions", Some(&fresh))
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    h.post(
        "/api/auth/change-password",
        json!({"newPassword": "x-password-4"}),
        Some(&fresh),
    )
    .await
    .expect(400);
    h.post(
        "/api/auth/change-password",
        json!({"newPassword": "x-password-4", "currentPassword": "third-password-3"}),
        None,
    )
    .await
    .expect(401);
}

#[tokio::test]
async fn set_password_is_server_only() {
    let key = "server-key-0123456789abcdefghijklmnopqrstuv";
    let h = harness_with(|c| c.server_key = Some(gatehouse_api::config::Secret::new(key))).await;
    let body = |id: &str| Some(json!({"newPassword": "server-set-pass-1", "userId": id}));
    // A user with no password (as a social sign-up would make).
    let social = store_user(&h, "social@example.com").await;
    let id = social.id.0.as_str();
    let r = h
        .call(Method::POST, "/api/auth/set-password", body(id), None, &[])
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");
    h.call(
        Method::POST,
        "/api/auth/set-password",
        body(id),
        None,
        &[("authorization", "Bearer wrong")],
    )
    .await
    .expect(401);
    h.sign_in("social@example.com", "server-set-pass-1")
        .await
        .expect(401);
    let bearer = format!("Bearer {key}");
    h.call(
        Method::POST,
        "/api/auth/set-password",
        body(id),
        None,
        &[("authorization", &bearer)],
    )
    .await
    .expect(200);
    h.sign_in("social@example.com", "server-set-pass-1")
        .await
        .expect(200);
    let r = h
        .call(
            Method::POST,
            "/api/auth/set-password",
            body(id),
            None,
            &[("authorization", &bearer)],
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "USER_ALREADY_HAS_PASSWORD", "message": "user already has a password"})
    );

    // Without a configured key the route does not exist.
    let plain = harness().await;
    let cookie = plain.sign_up("p@example.com", PW).await.cookie_header();
    plain
        .post(
            "/api/auth/set-password",
            json!({"newPassword": "server-set-pass-1"}),
            Some(&cookie),
        )
        .await
        .expect(404);
}

#[tokio::test]
async fn stale_sessions_are_refused_for_sensitive_actions() {
    let h = harness().await;
    let cookie = h.sign_up("stale@example.com", PW).await.cookie_header();
    h.clock.advance(Duration::hours(25));
    let r = h
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "x@example.com"}),
            Some(&cookie),
        )
        .await
        .expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "SESSION_NOT_FRESH", "message": "Session is not fresh"})
    );
    h.post(
        "/api/auth/unlink-account",
        json!({"providerId": "credential"}),
        Some(&cookie),
    )
    .await
    .expect(403);
    let r = h
        .post("/api/auth/delete-user", json!({}), Some(&cookie))
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "Session expired. Re-authenticate to perform this action."
    );
    // With the password it is allowed.
    let r = h
        .post(
            "/api/auth/delete-user",
            json!({"password": "wrong-password"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_PASSWORD");
    h.post(
        "/api/auth/delete-user",
        json!({"password": PW}),
        Some(&cookie),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn verify_password_checks_the_callers_password() {
    let h = harness().await;
    let cookie = h.sign_up("vp@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/verify-password",
            json!({"password": PW}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    let r = h
        .post(
            "/api/auth/verify-password",
            json!({"password": "not-it-at-all"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})
    );
    let r = h
        .post(
            "/api/auth/verify-password",
            json!({"password": 5}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = h
        .post("/api/auth/verify-password", json!({"password": PW}), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");
    // A user without a password: refused the same way.
    let u = store_user(&h, "nopw@example.com").await;
    let s = h
        .state
        .actors
        .user(u.id.clone())
        .create_session(Default::default())
        .await
        .unwrap();
    let cookie = format!(
        "gatehouse.session_token={}",
        urlencode(&h.state.signer.sign(&s.token))
    );
    let r = h
        .post(
            "/api/auth/verify-password",
            json!({"password": PW}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_PASSWORD");
}
