//! Sessions: cookies, the cookie cache, refresh, listing, revoking, signing out.

use super::*;

#[tokio::test]
async fn bad_cookies_give_null_and_clear_only_real_dead_sessions() {
    let h = harness().await;
    let r = h.sign_up("dana@example.com", PW).await;
    let good = r.cookie_header();
    let token = r.json()["token"].as_str().unwrap().to_owned();

    // No cookie, unsigned, tampered, signed with another key: null, cookies untouched.
    let other = gatehouse_api::crypto::Signer::new("another-secret-0123456789abcdefghijkl");
    for cookie in [
        None,
        Some(format!("gatehouse.session_token={token}")),
        Some(format!("{good}x")),
        Some(format!("gatehouse.session_token={}", other.sign(&token))),
        Some("gatehouse.session_token=%%%".to_owned()),
    ] {
        let resp = h
            .get("/api/auth/get-session", cookie.as_deref())
            .await
            .expect(200);
        assert_eq!(resp.text, "null", "{cookie:?}");
        assert!(resp.set_cookies().is_empty(), "{cookie:?}");
    }

    // Validly signed but unknown session: null and cookies cleared.
    let ghost = format!(
        "gatehouse.session_token={}",
        percent_encoding::utf8_percent_encode(
            &h.state.signer.sign("no-such-session"),
            percent_encoding::NON_ALPHANUMERIC
        )
    );
    let resp = h
        .get("/api/auth/get-session", Some(&ghost))
        .await
        .expect(200);
    assert_eq!(resp.text, "null");
    let cleared = resp.set_cookies();
    assert_eq!(cleared.len(), 3, "{cleared:?}");
    for name in ["session_token", "session_data", "dont_remember"] {
        assert!(cleared
            .iter()
            .any(|c| c.starts_with(&format!("gatehouse.{name}=;")) && c.contains("Max-Age=0")));
    }
    // A protected route with it: 401 and cleared too.
    let r = h
        .get("/api/auth/list-sessions", Some(&ghost))
        .await
        .expect(401);
    assert_eq!(
        r.json(),
        json!({"code": "UNAUTHORIZED", "message": "Unauthorized"})
    );
    assert_eq!(r.set_cookies().len(), 3);

    // Expired: null, cleared, and deleted from the store.
    assert!(h.session(&good).await["session"].is_object());
    h.clock.advance(Duration::days(8));
    let resp = h
        .get("/api/auth/get-session", Some(&good))
        .await
        .expect(200);
    assert_eq!(resp.text, "null");
    assert_eq!(resp.set_cookies().len(), 3);
    assert!(h.store.get_session(&token).await.unwrap().is_none());
}

#[tokio::test]
async fn revoked_cookie_gives_null() {
    let h = harness().await;
    let a = h.sign_up("erin@example.com", PW).await.cookie_header();
    let b = h
        .sign_in("erin@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    h.post("/api/auth/revoke-other-sessions", json!({}), Some(&a))
        .await
        .expect(200);
    assert_eq!(h.get("/api/auth/get-session", Some(&b)).await.text, "null");
    assert!(h.session(&a).await["session"].is_object());
}

#[tokio::test]
async fn session_refreshes_after_update_age() {
    let h = harness().await;
    let r = h.sign_up("fay@example.com", PW).await;
    let cookie = r.cookie_header();
    let first = h.session(&cookie).await;
    // Within update age: nothing changes, no cookie re-set.
    h.clock.advance(Duration::hours(23));
    let resp = h
        .get("/api/auth/get-session", Some(&cookie))
        .await
        .expect(200);
    assert!(resp.set_cookies().is_empty());
    assert_eq!(
        resp.json()["session"]["expiresAt"],
        first["session"]["expiresAt"]
    );
    // Past it: with disableRefresh nothing changes either…
    h.clock.advance(Duration::hours(2));
    let resp = h
        .get("/api/auth/get-session?disableRefresh=true", Some(&cookie))
        .await
        .expect(200);
    assert_eq!(
        resp.json()["session"]["expiresAt"],
        first["session"]["expiresAt"]
    );
    // …without it the session is extended to now + 7 days and the cookie re-set.
    let resp = h
        .get("/api/auth/get-session", Some(&cookie))
        .await
        .expect(200);
    let expires = resp.json()["session"]["expiresAt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        expires,
        gatehouse_api::dto::iso(&(storage::Clock::now(&*h.clock) + Duration::days(7)))
    );
    assert!(resp
        .set_cookie("gatehouse.session_token")
        .unwrap()
        .contains("Max-Age=604800"));
    // Bad query values are a query validation error.
    let r = h
        .get("/api/auth/get-session?disableRefresh=maybe", Some(&cookie))
        .await
        .expect(400);
    assert_eq!(r.json()["message"], "Invalid query parameters");
}

#[tokio::test]
async fn list_and_revoke_sessions() {
    let h = harness().await;
    let a = h.sign_up("gus@example.com", PW).await.cookie_header();
    let b_resp = h.sign_in("gus@example.com", PW).await.expect(200);
    let b = b_resp.cookie_header();
    let b_token = b_resp.json()["token"].as_str().unwrap().to_owned();
    let list = h
        .get("/api/auth/list-sessions", Some(&a))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(
        h.get("/api/auth/list-sessions", None)
            .await
            .expect(401)
            .code(),
        "UNAUTHORIZED"
    );

    // Another user's session cannot be revoked (and is not revealed).
    let mallory = h.sign_up("mallory@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/revoke-session",
            json!({"token": b_token}),
            Some(&mallory),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "SESSION_NOT_FOUND", "message": "Session not found"})
    );
    assert!(h.session(&b).await["session"].is_object());
    h.post(
        "/api/auth/revoke-session",
        json!({"token": "unknown"}),
        Some(&a),
    )
    .await
    .expect(400);
    h.post("/api/auth/revoke-session", json!({}), Some(&a))
        .await
        .expect(400);

    let r = h
        .post(
            "/api/auth/revoke-session",
            json!({"token": b_token}),
            Some(&a),
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    assert!(
        r.set_cookies().is_empty(),
        "revoking another session keeps ours"
    );
    assert_eq!(h.get("/api/auth/get-session", Some(&b)).await.text, "null");
    assert_eq!(
        h.get("/api/auth/list-sessions", Some(&a))
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let _c = h.sign_in("gus@example.com", PW).await.cookie_header();
    let r = h
        .post("/api/auth/revoke-sessions", json!({}), Some(&a))
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    assert_eq!(r.set_cookies().len(), 3);
    assert_eq!(h.get("/api/auth/get-session", Some(&a)).await.text, "null");
    let gus = h
        .store
        .get_user_by_email("gus@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(h.store.list_sessions(&gus.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn sign_out_deletes_the_session_and_clears_cookies() {
    let h = harness().await;
    let r = h.sign_up("hal@example.com", PW).await;
    let cookie = r.cookie_header();
    let token = r.json()["token"].as_str().unwrap().to_owned();
    let out = h
        .post("/api/auth/sign-out", json!({}), Some(&cookie))
        .await
        .expect(200);
    assert_eq!(out.json(), json!({"success": true}));
    assert_eq!(out.set_cookies().len(), 3);
    assert!(h.store.get_session(&token).await.unwrap().is_none());
    assert_eq!(
        h.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null"
    );
    // No session cookie at all: nothing to end, the same answer (as 1.7).
    let r = h
        .call(Method::POST, "/api/auth/sign-out", None, None, &[])
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"success": true}));
}

#[tokio::test]
async fn update_user_sets_only_allowed_fields() {
    let h = harness().await;
    let cookie = h.sign_up("ivy@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/update-user",
            json!({"name": "Ivy B", "image": "https://i.example/ivy.png"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    let s = h.session(&cookie).await;
    assert_eq!(s["user"]["name"], "Ivy B");
    assert_eq!(s["user"]["image"], "https://i.example/ivy.png");
    h.post(
        "/api/auth/update-user",
        json!({"image": null}),
        Some(&cookie),
    )
    .await
    .expect(200);
    assert_eq!(
        h.session(&cookie).await["user"]["image"],
        serde_json::Value::Null
    );

    let r = h
        .post(
            "/api/auth/update-user",
            json!({"email": "x@example.com"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "EMAIL_CAN_NOT_BE_UPDATED", "message": "Email can not be updated"})
    );
    let r = h
        .post(
            "/api/auth/update-user",
            json!({"name": "x", "role": "admin"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "FIELD_NOT_ALLOWED", "message": "role is not allowed to be set"})
    );
    assert_eq!(
        h.post("/api/auth/update-user", json!({}), Some(&cookie))
            .await
            .expect(400)
            .code(),
        "NO_FIELDS_TO_UPDATE"
    );
    assert_eq!(
        h.post("/api/auth/update-user", json!({"name": 5}), Some(&cookie))
            .await
            .expect(400)
            .code(),
        "VALIDATION_ERROR"
    );
    assert_eq!(
        h.post("/api/auth/update-user", json!({"name": "x"}), None)
            .await
            .expect(401)
            .code(),
        "UNAUTHORIZED"
    );
    assert_eq!(h.session(&cookie).await["user"]["name"], "Ivy B");
}

#[tokio::test]
async fn cookie_cache_is_used_bypassed_and_loses_to_revocation() {
    let h = harness_with(|c| c.session.cookie_cache.enabled = true).await;
    let r = h.sign_up("kim@example.com", PW).await;
    let data = r
        .set_cookie("gatehouse.session_data")
        .expect("cache cookie set");
    assert!(data.contains("Max-Age=300"));
    assert!(data.split(';').next().unwrap().len() <= 4093);
    let cookie = r.cookie_header();
    let token = r.json()["token"].as_str().unwrap().to_owned();

    // Deleted behind this process's back (as another instance would): the cache still answers…
    h.store.delete_session(&token, &[]).await.unwrap();
    assert_eq!(h.session(&cookie).await["session"]["token"], token.as_str());
    // …unless bypassed.
    assert_eq!(
        h.get(
            "/api/auth/get-session?disableCookieCache=true",
            Some(&cookie)
        )
        .await
        .text,
        "null"
    );
    // After the cache's max-age it is not trusted either.
    h.clock.advance(Duration::seconds(301));
    assert_eq!(
        h.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null"
    );

    // Revocation through this server wins at once, cache or not.
    let r = h.sign_in("kim@example.com", PW).await.expect(200);
    let a = r.cookie_header();
    let b = h
        .sign_in("kim@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    h.clock.advance(Duration::milliseconds(5));
    h.post("/api/auth/revoke-other-sessions", json!({}), Some(&a))
        .await
        .expect(200);
    assert_eq!(h.get("/api/auth/get-session", Some(&b)).await.text, "null");
    // A tampered cache cookie is ignored (falls back to the store).
    let tampered = a.replace("session_data=", "session_data=x");
    assert!(h.session(&tampered).await["session"].is_object());
}

/// A cookie-cache cookie verified once is answered from the process's table of verified
/// cookies: the answer a fresh verification gives, losing to the cache's max-age and to a
/// revocation as a fresh one does. A cookie that differs by a byte, or comes with another
/// session's token, is verified afresh.
#[tokio::test]
async fn verified_cookie_cache_cookies_answer_as_a_fresh_verification_does() {
    let h = harness_with(|c| c.session.cookie_cache.enabled = true).await;
    let pairs = |cookie: &str| -> (String, String) {
        let find = |name: &str| {
            cookie
                .split("; ")
                .find(|p| p.starts_with(name))
                .unwrap()
                .to_owned()
        };
        (
            find("gatehouse.session_token="),
            find("gatehouse.session_data="),
        )
    };
    let a = h.sign_up("vic@example.com", PW).await.cookie_header();
    let b = h.sign_up("wes@example.com", PW).await.cookie_header();
    assert!(h.state.sessions.verified.is_empty());
    let first = h.get("/api/auth/get-session", Some(&a)).await.expect(200);
    assert_eq!(h.state.sessions.verified.len(), 1);
    let again = h.get("/api/auth/get-session", Some(&a)).await.expect(200);
    assert_eq!(first.text, again.text);
    assert_eq!(
        first.headers.get("set-auth-jwt"),
        again.headers.get("set-auth-jwt")
    );
    assert_eq!(again.json()["user"]["email"], "vic@example.com");
    // Routes that need a session take it from there too.
    h.get("/api/auth/list-sessions", Some(&a)).await.expect(200);
    assert_eq!(h.session(&b).await["user"]["email"], "wes@example.com");
    assert_eq!(h.state.sessions.verified.len(), 2);
    // b's session token with a's cache cookie: b's session, never a's.
    let (a_token, a_data) = pairs(&a);
    let (b_token, _) = pairs(&b);
    let mixed = format!("{b_token}; {a_data}");
    assert_eq!(h.session(&mixed).await["user"]["email"], "wes@example.com");
    // a's session deleted behind this process's back (as another process would): its cache
    // cookie still answers within the max-age, as a verified cookie does; the same cookie
    // with one byte changed is verified afresh, fails, and the store has no session.
    let token = again.json()["session"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    h.store.delete_session(&token, &[]).await.unwrap();
    assert_eq!(h.session(&a).await["user"]["email"], "vic@example.com");
    let mid = a_data.len() / 2;
    let flipped = if &a_data[mid..=mid] == "A" { "B" } else { "A" };
    let tampered = format!(
        "{a_token}; {}{flipped}{}",
        &a_data[..mid],
        &a_data[mid + 1..]
    );
    assert_eq!(
        h.get("/api/auth/get-session", Some(&tampered)).await.text,
        "null"
    );
    // A revocation through this process wins at once over b's verified cookie.
    let b2 = h
        .sign_in("wes@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    h.clock.advance(Duration::milliseconds(5));
    h.post("/api/auth/revoke-other-sessions", json!({}), Some(&b2))
        .await
        .expect(200);
    assert_eq!(h.get("/api/auth/get-session", Some(&b)).await.text, "null");
    // Past the cache's max-age a verified cookie is not trusted either.
    assert!(h.session(&b2).await["session"].is_object());
    h.clock.advance(Duration::seconds(301));
    assert_eq!(h.get("/api/auth/get-session", Some(&a)).await.text, "null");
}

#[tokio::test]
async fn https_base_url_uses_secure_cookies_and_prefix_is_configurable() {
    let h = harness_with(|c| {
        c.base_url = "https://auth.example.com".into();
        c.cookie_prefix = "better-auth".into();
    })
    .await;
    let r = h
        .call(
            Method::POST,
            "/api/auth/sign-up/email",
            Some(json!({"name": "L", "email": "l@example.com", "password": PW})),
            None,
            &[],
        )
        .await
        .expect(200);
    let c = r.set_cookie("__Secure-better-auth.session_token").unwrap();
    assert!(c.ends_with("; Secure"), "{c}");
    let got = h
        .get("/api/auth/get-session", Some(&r.cookie_header()))
        .await
        .expect(200)
        .json();
    assert_eq!(got["user"]["email"], "l@example.com");
}

/// As 1.7: changing the session or its user re-issues the session cookie with a fresh,
/// full `Max-Age` (and a `rememberMe: false` session stays a browser-session cookie).
#[tokio::test]
async fn session_cookie_is_reissued_after_changes() {
    let h = harness().await;
    let cookie = h.sign_up("re@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/update-user",
            json!({"name": "Renamed"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    let set = r.set_cookie("gatehouse.session_token").expect("re-issued");
    assert!(set.contains("Max-Age=604800"), "{set}");
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Re", "slug": "re-org"}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    let r = h
        .post(
            "/api/auth/organization/set-active",
            json!({"organizationId": org["id"]}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(r
        .set_cookie("gatehouse.session_token")
        .unwrap()
        .contains("Max-Age=604800"));
    let short = h
        .sign_in_body(json!({"email": "re@example.com", "password": PW, "rememberMe": false}))
        .await
        .expect(200)
        .cookie_header();
    let r = h
        .post(
            "/api/auth/update-user",
            json!({"name": "Again"}),
            Some(&short),
        )
        .await
        .expect(200);
    let set = r.set_cookie("gatehouse.session_token").unwrap();
    assert!(!set.contains("Max-Age"), "{set}");
    assert!(r.set_cookie("gatehouse.dont_remember").is_some());

    // change-email of an unverified address (applied at once) re-issues it too; following a
    // verification link does not (as 1.7: the side-by-side test compares it).
    let r = h
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "re2@example.com"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    let set = r.set_cookie("gatehouse.session_token").expect("re-issued");
    assert!(set.contains("Max-Age=604800"), "{set}");
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": "re2@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "verify-email", "re2@example.com").unwrap();
    let r = h.get(&link_path(&h, &mail), Some(&cookie)).await;
    assert_eq!(r.status.as_u16(), 302, "{}", r.text);
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    assert_eq!(h.session(&cookie).await["user"]["emailVerified"], true);
}
