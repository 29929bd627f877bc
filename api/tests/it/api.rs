//! Every route and every error of the foundation, in-process over the real application.

use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use gatehouse_api::error::Code;
use poem::http::Method;
use serde_json::json;

const PW: &str = "correct-horse-battery";

#[tokio::test]
async fn sign_up_answers_token_user_and_session_cookie() {
    let h = harness().await;
    let r = h
        .post(
            "/api/auth/sign-up/email",
            json!({"name": "Ann", "email": "Ann@Example.COM", "password": PW, "image": "https://i.example/a.png"}),
            None,
        )
        .await
        .expect(200);
    let body = r.json();
    let token = body["token"].as_str().unwrap();
    assert_eq!(token.len(), 32);
    let user = &body["user"];
    assert_eq!(user["email"], "ann@example.com");
    assert_eq!(user["name"], "Ann");
    assert_eq!(user["image"], "https://i.example/a.png");
    assert_eq!(user["emailVerified"], false);
    assert_eq!(user["role"], "user");
    assert_eq!(user["banned"], false);
    assert!(user["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(user["id"].as_str().unwrap().len(), 32);

    let set = r.set_cookie("gatehouse.session_token").unwrap();
    assert!(
        set.contains("; Max-Age=604800; Path=/; HttpOnly; SameSite=Lax"),
        "{set}"
    );
    assert!(!set.contains("Secure"));
    assert!(set.starts_with(&format!("gatehouse.session_token={token}.")));
    // The cookie value is the token signed with HMAC-SHA256, URL-encoded.
    let signed = percent_encoding::percent_decode_str(
        set.split(';').next().unwrap().split_once('=').unwrap().1,
    )
    .decode_utf8()
    .unwrap()
    .into_owned();
    assert_eq!(h.state.signer.unsign(&signed), Some(token));
    assert!(r.set_cookie("gatehouse.dont_remember").is_none());

    let s = h
        .get("/api/auth/get-session", Some(&r.cookie_header()))
        .await
        .expect(200);
    assert_eq!(s.headers.get("cache-control").unwrap(), "no-store");
    let s = s.json();
    assert_eq!(s["session"]["token"], token);
    assert_eq!(s["session"]["userId"], user["id"]);
    assert_eq!(s["user"]["email"], "ann@example.com");
    assert_eq!(
        s["session"]["activeOrganizationId"],
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn sign_up_errors() {
    let h = harness_with(|c| {
        c.password.min_length = 10;
        c.password.max_length = 20;
    })
    .await;
    let up = |body: serde_json::Value| {
        let h = &h;
        async move { h.post("/api/auth/sign-up/email", body, None).await }
    };
    h.sign_up("taken@example.com", "long-enough-pw").await;
    let r = up(json!({"name": "X", "email": "TAKEN@example.com", "password": "long-enough-pw"}))
        .await
        .expect(422);
    assert_eq!(
        r.json(),
        json!({"code": "USER_ALREADY_EXISTS", "message": "User already exists"})
    );
    assert_eq!(
        up(json!({"name": "X", "email": "nope", "password": "long-enough-pw"}))
            .await
            .expect(400)
            .code(),
        "VALIDATION_ERROR"
    );
    // What only administrators set is refused, not silently dropped.
    for field in ["role", "banned", "banReason", "banExpires"] {
        let mut body = json!({"name": "X", "email": "field@b.com", "password": "long-enough-pw"});
        body[field] = json!("admin");
        let r = up(body).await.expect(400);
        assert_eq!(
            r.json(),
            json!({"code": "FIELD_NOT_ALLOWED", "message": format!("{field} is not allowed to be set")})
        );
    }
    assert_eq!(
        up(json!({"name": "X", "email": "a@b.com", "password": "123456789"}))
            .await
            .expect(400)
            .code(),
        "PASSWORD_TOO_SHORT"
    );
    assert_eq!(
        up(json!({"name": "X", "email": "a@b.com", "password": "x".repeat(21)}))
            .await
            .expect(400)
            .code(),
        "PASSWORD_TOO_LONG"
    );
    let r = up(json!({"email": "a@b.com", "password": "long-enough-pw"}))
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    assert_eq!(r.json()["message"], "Invalid body parameters");
    assert_eq!(
        up(json!({"name": "X", "email": "a@b.com", "password": 1234567890}))
            .await
            .expect(400)
            .code(),
        "VALIDATION_ERROR"
    );
    assert_eq!(
        up(json!(["not", "an", "object"])).await.expect(400).code(),
        "VALIDATION_ERROR"
    );
    let r = up(json!({"name": "X", "email": "a@b.com", "password": "long-enough-pw", "callbackURL": "https://evil.example/x"})).await.expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_CALLBACK_URL", "message": "Invalid callbackURL"})
    );
    up(json!({"name": "X", "email": "a@b.com", "password": "long-enough-pw", "callbackURL": "/welcome"})).await.expect(200);
}

#[tokio::test]
async fn malformed_bodies_never_500() {
    let h = harness().await;
    for (ct, body) in [
        ("application/json", "{\"email\":"),
        ("application/json", ""),
        ("application/json", "null"),
        ("text/plain", "hello"),
        ("application/json", "\u{0}\u{1}"),
    ] {
        let req = poem::Request::builder()
            .method(Method::POST)
            .uri_str("/api/auth/sign-in/email")
            .header("content-type", ct)
            .body(body.to_owned());
        let resp = poem::Endpoint::call(&*h.ep, req).await.unwrap();
        let status = resp.status().as_u16();
        assert!(status == 400 || status == 415, "{ct} {body:?} → {status}");
        let v: serde_json::Value =
            serde_json::from_str(&resp.into_body().into_string().await.unwrap()).unwrap();
        assert!(v["code"].is_string() && v["message"].is_string());
    }
}

#[tokio::test]
async fn validation_details_name_the_field_and_why() {
    let h = harness().await;
    for (body, detail) in [
        (
            r#"{"email":"a@b.co","password":"long-enough-1"}"#,
            "name: required",
        ),
        (
            r#"{"name":"A","email":5,"password":"long-enough-1"}"#,
            "email: expected a string, found an integer",
        ),
        (
            r#"{"name":"A","email":"a@b.co","password":"long-enough-1","rememberMe":"no"}"#,
            "rememberMe: expected a boolean, found a string",
        ),
    ] {
        let req = poem::Request::builder()
            .method(Method::POST)
            .uri_str("/api/auth/sign-up/email")
            .header("content-type", "application/json")
            .body(body.to_owned());
        let resp = poem::Endpoint::call(&*h.ep, req).await.unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{body}");
        let v: serde_json::Value =
            serde_json::from_str(&resp.into_body().into_string().await.unwrap()).unwrap();
        assert_eq!(v["code"], "VALIDATION_ERROR");
        assert_eq!(v["details"], serde_json::json!([detail]), "{body}");
    }
}

#[tokio::test]
async fn sign_in_success_shapes_and_remember_me() {
    let h = harness().await;
    h.sign_up("bob@example.com", PW).await;
    let r = h.sign_in("BOB@example.com", PW).await.expect(200);
    let b = r.json();
    assert_eq!(b["redirect"], false);
    assert_eq!(b["url"], serde_json::Value::Null);
    assert_eq!(b["user"]["email"], "bob@example.com");
    assert_eq!(b["token"].as_str().unwrap().len(), 32);

    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "bob@example.com", "password": PW, "callbackURL": "/dashboard", "rememberMe": false}),
            None,
        )
        .await
        .expect(200);
    let b = r.json();
    assert_eq!(b["redirect"], true);
    assert_eq!(b["url"], "/dashboard");
    // As 1.7 sends it: the target in `Location` too, with the 200.
    assert_eq!(r.headers["location"], "/dashboard");
    let token_cookie = r.set_cookie("gatehouse.session_token").unwrap();
    assert!(
        !token_cookie.contains("Max-Age"),
        "rememberMe:false is a browser-session cookie"
    );
    let dr = r.set_cookie("gatehouse.dont_remember").unwrap();
    assert!(dr.starts_with("gatehouse.dont_remember=true.") && !dr.contains("Max-Age"));
    let s = h.session(&r.cookie_header()).await;
    let created =
        chrono::DateTime::parse_from_rfc3339(s["session"]["createdAt"].as_str().unwrap()).unwrap();
    let expires =
        chrono::DateTime::parse_from_rfc3339(s["session"]["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(expires - created, Duration::days(1));
}

#[tokio::test]
async fn sign_in_errors_do_not_reveal_accounts() {
    let h = harness().await;
    h.sign_up("carol@example.com", PW).await;
    let wrong = h
        .sign_in("carol@example.com", "wrong-password")
        .await
        .expect(401);
    let unknown = h.sign_in("nobody@example.com", PW).await.expect(401);
    assert_eq!(wrong.text, unknown.text);
    assert_eq!(
        wrong.json(),
        json!({"code": "INVALID_EMAIL_OR_PASSWORD", "message": "Invalid email or password"})
    );
    assert!(wrong.set_cookies().is_empty());
    let r = h.sign_in("not-an-email", PW).await.expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_EMAIL", "message": "Invalid email"})
    );
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "carol@example.com", "password": PW, "callbackURL": "//evil.example"}),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "carol@example.com"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
}

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
async fn origin_is_checked_for_cookie_bearing_posts() {
    let h = harness_with(|c| c.trusted_origins = vec!["https://*.app.example".into()]).await;
    let cookie = h.sign_up("jon@example.com", PW).await.cookie_header();
    let body = Some(json!({"name": "J"}));
    let r = h
        .call(
            Method::POST,
            "/api/auth/update-user",
            body.clone(),
            Some(&cookie),
            &[],
        )
        .await
        .expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "MISSING_OR_NULL_ORIGIN", "message": "Missing or null Origin"})
    );
    let r = h
        .call(
            Method::POST,
            "/api/auth/update-user",
            body.clone(),
            Some(&cookie),
            &[("origin", "null")],
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "MISSING_OR_NULL_ORIGIN");
    let r = h
        .call(
            Method::POST,
            "/api/auth/update-user",
            body.clone(),
            Some(&cookie),
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_ORIGIN", "message": "Invalid origin"})
    );
    h.call(
        Method::POST,
        "/api/auth/update-user",
        body.clone(),
        Some(&cookie),
        &[("origin", "https://web.app.example")],
    )
    .await
    .expect(200);
    h.call(
        Method::POST,
        "/api/auth/update-user",
        body.clone(),
        Some(&cookie),
        &[("referer", "http://localhost:3000/settings")],
    )
    .await
    .expect(200);
    // Without cookies there is nothing to protect: sign-in from a script works.
    h.call(
        Method::POST,
        "/api/auth/sign-in/email",
        Some(json!({"email": "jon@example.com", "password": PW})),
        None,
        &[],
    )
    .await
    .expect(200);
    // GETs are not checked.
    h.get("/api/auth/list-sessions", Some(&cookie))
        .await
        .expect(200);
}

#[tokio::test]
async fn limits_unknown_routes_and_meta() {
    let h = harness_with(|c| c.max_body_bytes = 1024).await;
    let big = json!({"name": "x".repeat(2000), "email": "a@b.com", "password": PW});
    let r = h
        .post("/api/auth/sign-up/email", big, None)
        .await
        .expect(413);
    assert_eq!(r.code(), "PAYLOAD_TOO_LARGE");
    let r = h.get("/api/auth/no-such-route", None).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "NOT_FOUND", "message": "Not found"})
    );
    // Other paths are the hosted app's (it shows its own "not found" page); a missing file is
    // a 404.
    assert!(h
        .get("/elsewhere", None)
        .await
        .expect(200)
        .text
        .contains("id=\"root\""));
    h.get("/elsewhere.php", None).await.expect(404);
    assert_eq!(
        h.get("/api/auth/ok", None).await.expect(200).json(),
        json!({"ok": true})
    );
    let page = h
        .get(
            "/api/auth/error?error=%3Cscript%3Ealert(1)%3C/script%3E",
            None,
        )
        .await
        .expect(200);
    assert!(page
        .headers
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.text.contains("<script>"));
    assert!(page.text.contains("href=\"/\""));
    let page = h
        .get("/api/auth/error?error=invalid_token", None)
        .await
        .expect(200);
    assert!(page.text.contains("invalid_token"));
    let spec = h
        .get("/api/auth/openapi.json", None)
        .await
        .expect(200)
        .json();
    assert_eq!(spec["openapi"].as_str().unwrap().chars().next(), Some('3'));
    let ui = h.get("/api/auth/reference", None).await.expect(200);
    assert!(ui.text.to_lowercase().contains("<html"));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_sign_ups_of_one_email_one_wins() {
    let h = harness().await;
    let tasks = (0..20).map(|_| {
        let ep = h.ep.clone();
        tokio::spawn(async move {
            call(
                &ep,
                Method::POST,
                "/api/auth/sign-up/email",
                Some(json!({"name": "R", "email": "race@example.com", "password": PW})),
                None,
                &[],
            )
            .await
        })
    });
    let statuses: Vec<u16> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap().status.as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 422).count(),
        19,
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_sign_ins_does_not_stall_get_session() {
    // Real argon2 cost and one hashing slot: the sign-ins queue behind each other, while
    // get-session (no hashing) must still be answered before the burst is through.
    let h = harness_with(|c| {
        c.password.argon2_memory_kib = 19456;
        c.password.argon2_iterations = 2;
        c.password.max_concurrent_hashes = 1;
    })
    .await;
    let cookie = h.sign_up("max@example.com", PW).await.cookie_header();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let burst: Vec<_> = (0..12)
        .map(|_| {
            let ep = h.ep.clone();
            let done = done.clone();
            tokio::spawn(async move {
                let r = call(
                    &ep,
                    Method::POST,
                    "/api/auth/sign-in/email",
                    Some(json!({"email": "max@example.com", "password": PW})),
                    None,
                    &[],
                )
                .await;
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                r.status.as_u16()
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let s = h
        .get("/api/auth/get-session", Some(&cookie))
        .await
        .expect(200);
    assert!(s.json()["session"].is_object());
    let finished = done.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        finished < 12,
        "get-session waited for the whole burst ({finished} sign-ins had finished)"
    );
    for t in burst {
        assert_eq!(t.await.unwrap(), 200);
    }
}

#[test]
fn every_error_code_has_its_pinned_status() {
    let expected: &[(&str, u16)] = &[
        ("VALIDATION_ERROR", 400),
        ("INVALID_JSON", 400),
        ("INVALID_EMAIL", 400),
        ("PASSWORD_TOO_SHORT", 400),
        ("PASSWORD_TOO_LONG", 400),
        ("SESSION_NOT_FOUND", 400),
        ("FAILED_TO_GET_SESSION", 400),
        ("EMAIL_CAN_NOT_BE_UPDATED", 400),
        ("FIELD_NOT_ALLOWED", 400),
        ("NO_FIELDS_TO_UPDATE", 400),
        ("VERIFICATION_EMAIL_ISNT_ENABLED", 400),
        ("RESET_PASSWORD_ISNT_ENABLED", 400),
        ("INVALID_TOKEN", 400),
        ("TOKEN_EXPIRED", 400),
        ("USER_NOT_FOUND", 400),
        ("INVALID_PASSWORD", 400),
        ("CREDENTIAL_ACCOUNT_NOT_FOUND", 400),
        ("USER_ALREADY_HAS_PASSWORD", 400),
        ("SESSION_EXPIRED", 400),
        ("CHANGE_EMAIL_IS_DISABLED", 400),
        ("EMAIL_IS_THE_SAME", 400),
        ("COULDNT_UPDATE_YOUR_EMAIL", 400),
        ("FAILED_TO_UNLINK_LAST_ACCOUNT", 400),
        ("ACCOUNT_NOT_FOUND", 400),
        ("DELETE_USER_IS_DISABLED", 400),
        ("EMAIL_NOT_VERIFIED", 403),
        ("ORGANIZATION_NOT_FOUND", 400),
        ("ORGANIZATION_ALREADY_EXISTS", 400),
        ("SLUG_IS_TAKEN", 400),
        ("NO_ACTIVE_ORGANIZATION", 400),
        ("MEMBER_NOT_FOUND", 400),
        ("USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION", 400),
        ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER", 400),
        ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_WITHOUT_AN_OWNER", 400),
        ("ORGANIZATION_SLUG_ALREADY_TAKEN", 400),
        ("YOU_ARE_NOT_A_MEMBER_OF_THIS_ORGANIZATION", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", 400),
        ("ROLE_NOT_FOUND", 400),
        ("YOU_HAVE_REACHED_THE_MAXIMUM_NUMBER_OF_ORGANIZATIONS", 403),
        ("ORGANIZATION_MEMBERSHIP_LIMIT_REACHED", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", 403),
        ("FORBIDDEN", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_ORGANIZATION", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION", 403),
        (
            "YOU_ARE_NOT_ALLOWED_TO_INVITE_USERS_TO_THIS_ORGANIZATION",
            403,
        ),
        ("YOU_ARE_NOT_ALLOWED_TO_CANCEL_THIS_INVITATION", 403),
        (
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_TEAMS_IN_THIS_ORGANIZATION",
            403,
        ),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_TEAM", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_NEW_TEAM_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_REMOVE_A_TEAM_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_TEAM", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_READ_A_ROLE", 403),
        ("SERVER_CREDENTIAL_REQUIRED", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER", 401),
        ("YOU_ARE_NOT_ALLOWED_TO_INVITE_USER_WITH_THIS_ROLE", 403),
        ("INVITATION_NOT_FOUND", 400),
        ("INVITER_IS_NO_LONGER_A_MEMBER_OF_THE_ORGANIZATION", 400),
        ("INVITATION_LIMIT_REACHED", 403),
        ("EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION", 403),
        ("TEAM_ALREADY_EXISTS", 400),
        ("UNABLE_TO_REMOVE_LAST_TEAM", 400),
        ("ROLE_NAME_IS_ALREADY_TAKEN", 400),
        ("ROLE_IS_ASSIGNED_TO_MEMBERS", 400),
        ("USER_IS_ALREADY_INVITED_TO_THIS_ORGANIZATION", 400),
        ("TEAM_NOT_FOUND", 400),
        ("YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION", 403),
        (
            "EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION",
            403,
        ),
        ("INVALID_EMAIL_OR_PASSWORD", 401),
        ("UNAUTHORIZED", 401),
        ("INVALID_ORIGIN", 403),
        ("MISSING_OR_NULL_ORIGIN", 403),
        ("INVALID_CALLBACK_URL", 403),
        ("INVALID_REDIRECT_URL", 403),
        ("INVALID_ERROR_CALLBACK_URL", 403),
        ("INVALID_NEW_USER_CALLBACK_URL", 403),
        ("SESSION_NOT_FRESH", 403),
        ("NOT_FOUND", 404),
        ("PROVIDER_NOT_FOUND", 404),
        ("ID_TOKEN_NOT_SUPPORTED", 404),
        ("INVALID_TOKEN", 401),
        ("USER_EMAIL_NOT_FOUND", 401),
        ("OAUTH_LINK_ERROR", 401),
        ("LINKING_NOT_ALLOWED", 401),
        ("LINKING_DIFFERENT_EMAILS_NOT_ALLOWED", 401),
        ("SOCIAL_ACCOUNT_ALREADY_LINKED", 409),
        ("PROVIDER_NOT_SUPPORTED", 400),
        ("PROVIDER_NOT_CONFIGURED", 400),
        ("FAILED_TO_GET_ACCESS_TOKEN", 400),
        ("TOKEN_REFRESH_NOT_SUPPORTED", 400),
        ("REFRESH_TOKEN_NOT_FOUND", 400),
        ("FAILED_TO_REFRESH_ACCESS_TOKEN", 400),
        ("ACCESS_TOKEN_NOT_FOUND", 400),
        ("FAILED_TO_GET_USER_INFO", 401),
        ("FAILED_TO_GET_USER_INFO", 404),
        ("INVALID_TOKEN", 404),
        ("TOKEN_EXPIRED", 401),
        ("USER_NOT_FOUND", 401),
        ("EMAIL_MISMATCH", 400),
        ("EMAIL_ALREADY_VERIFIED", 400),
        ("BANNED_USER", 403),
        ("USER_NOT_FOUND", 404),
        ("YOU_CANNOT_BAN_YOURSELF", 400),
        ("YOU_CANNOT_REMOVE_YOURSELF", 400),
        ("YOU_CANNOT_IMPERSONATE_ADMINS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE", 400),
        ("USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", 400),
        ("NO_DATA_TO_UPDATE", 400),
        ("PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER", 400),
        ("USER_ID_CANNOT_BE_UPDATED", 400),
        ("NOT_IMPERSONATING", 400),
        ("ADMIN_SESSION_NOT_FOUND", 400),
        ("INVALID_PERMISSION_CHECK", 400),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_BAN_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_PASSWORD", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_GET_USER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_EMAIL", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS", 403),
        ("METHOD_NOT_ALLOWED", 405),
        ("METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED", 405),
        ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", 400),
        ("PAYLOAD_TOO_LARGE", 413),
        ("TOO_MANY_REQUESTS", 429),
        ("INVALID_CODE", 401),
        ("INVALID_TWO_FACTOR_COOKIE", 401),
        ("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE", 400),
        ("TOTP_NOT_ENABLED", 400),
        ("OTP_NOT_ENABLED", 400),
        ("TWO_FACTOR_NOT_ENABLED", 400),
        ("INVALID_BACKUP_CODE", 401),
        ("TOO_MANY_ATTEMPTS", 429),
        ("CHALLENGE_NOT_FOUND", 400),
        ("YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY", 401),
        ("FAILED_TO_VERIFY_REGISTRATION", 400),
        ("PREVIOUSLY_REGISTERED", 400),
        ("PASSKEY_NOT_FOUND", 404),
        ("PASSKEY_NOT_FOUND", 401),
        ("AUTHENTICATION_FAILED", 401),
        // A passkey's counter gone back (audited as a suspected clone).
        ("AUTHENTICATION_FAILED", 401),
        ("AUTHENTICATION_FAILED", 400),
        ("LAST_SIGN_IN_METHOD", 400),
        ("INVALID_OTP", 400),
        ("OTP_EXPIRED", 400),
        // A mailed code past its tries (the two-factor lock above is 429).
        ("TOO_MANY_ATTEMPTS", 403),
        ("MAIL_NOT_CONFIGURED", 400),
        ("CHANGE_EMAIL_WITH_OTP_DISABLED", 400),
        ("INVALID_OTP_TYPE", 400),
        ("OTP_REQUIRED", 400),
        ("INVALID_API_KEY", 401),
        ("INVALID_API_KEY", 403),
        ("KEY_NOT_FOUND", 404),
        ("KEY_DISABLED", 401),
        ("KEY_EXPIRED", 401),
        ("USAGE_EXCEEDED", 429),
        ("RATE_LIMITED", 429),
        ("USER_BANNED", 401),
        ("UNAUTHORIZED", 401),
        ("INVALID_REFERENCE_ID_FROM_API_KEY", 401),
        ("UNAUTHORIZED_SESSION", 401),
        ("SERVER_ONLY_PROPERTY", 400),
        ("METADATA_DISABLED", 400),
        ("INVALID_METADATA_TYPE", 400),
        ("REFILL_AMOUNT_AND_INTERVAL_REQUIRED", 400),
        ("REFILL_INTERVAL_AND_AMOUNT_REQUIRED", 400),
        ("EXPIRES_IN_IS_TOO_SMALL", 400),
        ("EXPIRES_IN_IS_TOO_LARGE", 400),
        ("KEY_DISABLED_EXPIRATION", 400),
        ("INVALID_PREFIX_LENGTH", 400),
        ("INVALID_NAME_LENGTH", 400),
        ("NAME_REQUIRED", 400),
        ("NO_VALUES_TO_UPDATE", 400),
        ("INVALID_REMAINING", 400),
        ("USER_NOT_MEMBER_OF_ORGANIZATION", 403),
        ("INSUFFICIENT_API_KEY_PERMISSIONS", 403),
        ("WEBHOOK_NOT_FOUND", 404),
        ("WEBHOOK_DELIVERY_NOT_FOUND", 404),
        ("WEBHOOK_DELIVERY_PENDING", 409),
        ("INVALID_WEBHOOK_URL", 400),
        ("WEBHOOK_URL_NOT_ALLOWED", 400),
        ("INVALID_WEBHOOK_EVENTS", 400),
        ("TOO_MANY_WEBHOOKS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_MANAGE_WEBHOOKS", 403),
        ("REQUEST_TIMEOUT", 408),
        ("UNSUPPORTED_MEDIA_TYPE", 415),
        ("USER_ALREADY_EXISTS", 422),
        ("FAILED_TO_CREATE_USER", 422),
        ("FAILED_TO_CREATE_SESSION", 500),
        ("INTERNAL_SERVER_ERROR", 500),
        ("SERVICE_UNAVAILABLE", 503),
    ];
    assert_eq!(
        Code::ALL.len(),
        expected.len(),
        "a new code needs its status pinned here"
    );
    for code in Code::ALL {
        // A code may stand at two statuses (INVALID_TOKEN: a bad link token 400, a bad id
        // token 401, a delete link not the caller's 404; USER_NOT_FOUND: 400 on account routes, 404 on
        // admin routes), each pinned.
        assert!(
            expected
                .iter()
                .any(|(c, s)| *c == code.code() && *s == code.status().as_u16()),
            "{code:?} not pinned at {}",
            code.status()
        );
    }
}

#[test]
fn committed_openapi_document_matches_the_code() {
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../openapi/openapi.json"
    ))
    .expect("openapi/openapi.json is committed");
    let generated = gatehouse_api::openapi_json();
    assert!(
        committed.trim_end() == generated.trim_end(),
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    let mut ids = Vec::new();
    for (_, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            ids.push(op["operationId"].as_str().unwrap().to_owned());
            assert!(
                op["summary"].is_string(),
                "every operation documented: {op}"
            );
        }
    }
    for id in [
        "signUpEmail",
        "signInEmail",
        "signOut",
        "getSession",
        "listSessions",
        "revokeSession",
        "revokeSessions",
        "revokeOtherSessions",
        "updateUser",
        "sendVerificationEmail",
        "verifyEmail",
        "forgetPassword",
        "requestPasswordReset",
        "resetPassword",
        "resetPasswordCallback",
        "changePassword",
        "setPassword",
        "changeEmail",
        "deleteUser",
        "deleteUserCallback",
        "listAccounts",
        "unlinkAccount",
        "createOrganization",
        "checkSlug",
        "updateOrganization",
        "deleteOrganization",
        "listOrganizations",
        "setActiveOrganization",
        "getFullOrganization",
        "getActiveMember",
        "listMembers",
        "addMember",
        "removeMember",
        "leaveOrganization",
        "updateMemberRole",
        "hasPermission",
        "inviteMember",
        "acceptInvitation",
        "rejectInvitation",
        "cancelInvitation",
        "getInvitation",
        "listInvitations",
        "listUserInvitations",
        "getActiveMemberRole",
        "createTeam",
        "updateTeam",
        "removeTeam",
        "listOrganizationTeams",
        "setActiveTeam",
        "listUserTeams",
        "addTeamMember",
        "removeTeamMember",
        "listTeamMembers",
        "createOrgRole",
        "updateOrgRole",
        "deleteOrgRole",
        "listOrgRoles",
        "getOrgRole",
        "ok",
        "error",
    ] {
        assert!(ids.iter().any(|i| i == id), "missing operationId {id}");
    }
}

#[tokio::test]
async fn cors_for_trusted_origins_only() {
    let h = harness_with(|c| c.trusted_origins = vec!["https://app.example".into()]).await;
    let pre = h
        .call(
            Method::OPTIONS,
            "/api/auth/sign-in/email",
            None,
            None,
            &[
                ("origin", "https://app.example"),
                ("access-control-request-method", "POST"),
            ],
        )
        .await
        .expect(204);
    assert_eq!(
        pre.headers.get("access-control-allow-origin").unwrap(),
        "https://app.example"
    );
    assert_eq!(
        pre.headers.get("access-control-allow-credentials").unwrap(),
        "true"
    );
    let r = h
        .call(
            Method::GET,
            "/api/auth/ok",
            None,
            None,
            &[("origin", "https://app.example")],
        )
        .await
        .expect(200);
    assert_eq!(
        r.headers.get("access-control-allow-origin").unwrap(),
        "https://app.example"
    );
    let r = h
        .call(
            Method::GET,
            "/api/auth/ok",
            None,
            None,
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(200);
    assert!(r.headers.get("access-control-allow-origin").is_none());
    let pre = h
        .call(
            Method::OPTIONS,
            "/api/auth/sign-in/email",
            None,
            None,
            &[
                ("origin", "https://evil.example"),
                ("access-control-request-method", "POST"),
            ],
        )
        .await;
    assert!(pre.headers.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn forwarded_client_address_only_when_trusted() {
    // Through a proxy on this machine (127.0.0.1) and one at 10.0.0.1, both trusted.
    for trust in [false, true] {
        let h = harness_with(|c| {
            c.trust_proxy = trust;
            c.trusted_proxies = vec!["127.0.0.1".into(), "10.0.0.0/8".into()];
        })
        .await;
        let r = call_from(
            &h,
            "127.0.0.1:40000",
            Method::POST,
            "/api/auth/sign-up/email",
            Some(json!({"name": "P", "email": "p@example.com", "password": PW})),
            &[
                ("x-forwarded-for", "203.0.113.7, 10.0.0.1"),
                ("user-agent", "probe/1.0"),
            ],
        )
        .await
        .expect(200);
        let s = h.session(&r.cookie_header()).await;
        assert_eq!(s["session"]["userAgent"], "probe/1.0");
        let want = if trust { "203.0.113.7" } else { "127.0.0.1" };
        assert_eq!(s["session"]["ipAddress"], want);
    }
}

/// Issue #8: answers carrying sessions or cookies are never stored by browsers or proxies; the
/// public OpenAPI document may be.
#[tokio::test]
async fn answers_with_session_data_are_not_cacheable() {
    let h = harness().await;
    let r = h.sign_up("ann@example.com", PW).await;
    assert_eq!(r.headers["cache-control"], "no-store");
    let cookie = r.cookie_header();
    let r = h
        .get("/api/auth/get-session", Some(&cookie))
        .await
        .expect(200);
    assert_eq!(r.headers["cache-control"], "no-store");
    let r = h
        .sign_in("ann@example.com", "wrong-password")
        .await
        .expect(401);
    assert_eq!(r.headers["cache-control"], "no-store");
    let r = h.get("/api/auth/openapi.json", None).await.expect(200);
    assert!(r.headers.get("cache-control").is_none());
}

/// Issue #8: documented length caps (names 256 characters, URLs 2048, organization metadata
/// 8192 bytes) and a JSON nesting cap (32) answer 400 `VALIDATION_ERROR`, never store a 1 MB
/// name.
#[tokio::test]
async fn oversized_fields_and_deep_json_are_refused() {
    let h = harness().await;
    let long = |n: usize| "x".repeat(n);
    let r = h
        .post(
            "/api/auth/sign-up/email",
            json!({"name": long(300_000), "email": "big@example.com", "password": PW}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    assert!(
        r.json()["details"][0].as_str().unwrap().contains("name"),
        "{}",
        r.text
    );
    h.post(
        "/api/auth/sign-up/email",
        json!({"name": long(256), "email": "ok@example.com", "password": PW, "image": format!("https://i.example/{}", long(2000))}),
        None,
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/sign-up/email",
        json!({"name": "n", "email": "img@example.com", "password": PW, "image": long(2049)}),
        None,
    )
    .await
    .expect(400);
    let cookie = h.sign_up("ann@example.com", PW).await.cookie_header();
    for body in [json!({"name": long(257)}), json!({"image": long(2049)})] {
        let r = h
            .post("/api/auth/update-user", body, Some(&cookie))
            .await
            .expect(400);
        assert_eq!(r.code(), "VALIDATION_ERROR");
    }
    for body in [
        json!({"name": long(257), "slug": "a"}),
        json!({"name": "n", "slug": "b", "logo": long(2049)}),
        json!({"name": "n", "slug": "c", "metadata": {"blob": long(9000)}}),
    ] {
        let r = h
            .post("/api/auth/organization/create", body, Some(&cookie))
            .await
            .expect(400);
        assert_eq!(r.code(), "VALIDATION_ERROR", "{}", r.text);
    }
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "n", "slug": "d"}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    let r = h
        .post(
            "/api/auth/organization/create-team",
            json!({"name": long(257), "organizationId": org["id"]}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = h
        .post(
            "/api/auth/organization/update",
            json!({"data": {"metadata": {"blob": long(9000)}}, "organizationId": org["id"]}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");

    // Nesting: 32 levels parse, 33 are refused before parsing.
    let nested = |depth: usize| {
        let mut v = json!(1);
        for _ in 0..depth - 1 {
            v = json!([v]);
        }
        json!({"email": "ann@example.com", "password": PW, "x": v})
    };
    h.sign_in_body(nested(32)).await.expect(200);
    let r = h.sign_in_body(nested(33)).await.expect(400);
    assert!(
        r.json()["details"][0].as_str().unwrap().contains("nested"),
        "{}",
        r.text
    );
    let r = h
        .call(
            Method::POST,
            "/api/auth/sign-in/email",
            None,
            None,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(r.status.as_u16(), 400);
}

/// Issue #8: redirect targets are parsed, normalized and refused when they carry control
/// characters, backslashes or credentials; only the normalized form is redirected to.
#[tokio::test]
async fn redirect_targets_are_normalized_and_hostile_ones_refused() {
    let h = harness().await;
    h.sign_up("ann@example.com", PW).await;
    for bad in [
        "http://localhost:3000/\r\nSet-Cookie: a=b",
        "/ok\r\nx",
        "http://localhost:3000\\@evil.example",
        "/\\evil.example",
        "http://ann@localhost:3000/",
        "https://evil.example/",
    ] {
        let r = h
            .post(
                "/api/auth/sign-in/email",
                json!({"email": "ann@example.com", "password": PW, "callbackURL": bad}),
                None,
            )
            .await
            .expect(403);
        assert_eq!(r.code(), "INVALID_CALLBACK_URL", "{bad:?}");
    }
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "ann@example.com", "password": PW, "callbackURL": "/a/../dash board"}),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.json()["url"], "/dash%20board");
    // A reset link: the Location is the normalized target, always present.
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": "ann@example.com", "redirectTo": "/x/./y/../reset"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "ann@example.com").unwrap();
    let r = h.get(&link_path(&h, &mail), None).await.expect(302);
    assert!(
        r.headers["location"]
            .to_str()
            .unwrap()
            .starts_with("http://localhost:3000/x/reset?token="),
        "{:?}",
        r.headers["location"]
    );
    let r = h
        .get(
            "/api/auth/reset-password/abc?callbackURL=%2Fok%0D%0AX-Evil%3A%201",
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
}

/// Issue #8: signing in with an unknown address does exactly the store work (and hashing) of
/// a known address with a wrong password, so timing tells nothing.
#[tokio::test]
async fn unknown_and_wrong_password_sign_ins_do_the_same_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(
        storage::sqlite::SqliteStore::open(dir.path().join("g.db"))
            .await
            .unwrap(),
    );
    let config = test_config(dir.path(), |_| {});
    let clock = std::sync::Arc::new(storage::ManualClock::default());
    let state = gatehouse_api::AppState::start_with_store(config, clock, store.clone())
        .await
        .unwrap();
    let ep = {
        use poem::EndpointExt;
        state.endpoint().map_to_response().boxed()
    };
    let sign_in = |email: &'static str| {
        let ep = &ep;
        async move {
            call(
                ep,
                Method::POST,
                "/api/auth/sign-in/email",
                Some(json!({"email": email, "password": "not-the-password"})),
                None,
                &[("origin", ORIGIN)],
            )
            .await
        }
    };
    call(
        &ep,
        Method::POST,
        "/api/auth/sign-up/email",
        Some(json!({"name": "Ann", "email": "ann@example.com", "password": PW})),
        None,
        &[("origin", ORIGIN)],
    )
    .await
    .expect(200);
    let work = |f: (usize, usize), t: (usize, usize)| (t.0 - f.0, t.1 - f.1);
    // The store also serves the event stream's consumers now and then (their reads and lease
    // writes count too): the least work of a few sign-ins is each one's own.
    let (mut known, mut unknown) = ((usize::MAX, usize::MAX), (usize::MAX, usize::MAX));
    for _ in 0..8 {
        let before = store.op_counts();
        sign_in("ann@example.com").await.expect(401);
        known = known.min(work(before, store.op_counts()));
        let before = store.op_counts();
        sign_in("nobody@example.com").await.expect(401);
        unknown = unknown.min(work(before, store.op_counts()));
    }
    assert_eq!(known, unknown);
    assert!(known.0 >= 2, "{known:?}");
}

/// Login CSRF: a POST without cookies that a browser sends from another site (it carries an
/// `Origin` or `Sec-Fetch-*` header) is refused like a cookie-bearing one — on main before this
/// fix, another site could sign a visitor in to the attacker's account, sign up or request
/// reset mail in their name. Back ends (no browser headers) and providers' form_post callbacks
/// still pass.
#[tokio::test]
async fn cookie_less_browser_posts_from_other_sites_are_refused() {
    let h = harness().await;
    h.sign_up("victim@example.com", PW).await;
    let sign_in = json!({"email": "victim@example.com", "password": PW});
    for (headers, code) in [
        (vec![("origin", "https://evil.example")], "INVALID_ORIGIN"),
        (vec![("origin", "null")], "MISSING_OR_NULL_ORIGIN"),
        (
            vec![("sec-fetch-site", "cross-site")],
            "MISSING_OR_NULL_ORIGIN",
        ),
        (
            vec![
                ("sec-fetch-mode", "navigate"),
                ("referer", "https://evil.example/form"),
            ],
            "INVALID_ORIGIN",
        ),
    ] {
        let r = h
            .call(
                Method::POST,
                "/api/auth/sign-in/email",
                Some(sign_in.clone()),
                None,
                &headers,
            )
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (403, code.to_owned()),
            "{headers:?}"
        );
        assert!(r.set_cookie("gatehouse.session_token").is_none());
    }
    let evil = [("origin", "https://evil.example")];
    let r = h
        .call(
            Method::POST,
            "/api/auth/sign-up/email",
            Some(json!({"name": "X", "email": "planted@example.com", "password": PW})),
            None,
            &evil,
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "INVALID_ORIGIN".into())
    );
    assert!(h
        .store
        .get_user_by_email("planted@example.com")
        .await
        .unwrap()
        .is_none());
    for path in [
        "/api/auth/request-password-reset",
        "/api/auth/forget-password",
    ] {
        let r = h
            .call(
                Method::POST,
                path,
                Some(json!({"email": "victim@example.com"})),
                None,
                &evil,
            )
            .await;
        assert_eq!(r.status.as_u16(), 403, "{path}");
    }
    assert!(last_mail(&h, "reset-password", "victim@example.com").is_none());
    // A back end: no browser headers.
    h.call(
        Method::POST,
        "/api/auth/sign-in/email",
        Some(sign_in.clone()),
        None,
        &[],
    )
    .await
    .expect(200);
    // The app's own origin.
    h.call(
        Method::POST,
        "/api/auth/sign-in/email",
        Some(sign_in.clone()),
        None,
        &[("origin", ORIGIN)],
    )
    .await
    .expect(200);
    // A provider's form_post reaches its callback (no provider configured here: not a 403).
    let r = h
        .call(
            Method::POST,
            "/api/auth/callback/apple",
            None,
            None,
            &[("origin", "https://appleid.apple.com")],
        )
        .await;
    assert_ne!(r.status.as_u16(), 403, "{}", r.text);
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

/// A route asked with another method answers as an unknown route (1.7: 404); POST
/// get-session has its own 405.
#[tokio::test]
async fn another_method_answers_like_an_unknown_route() {
    let h = harness().await;
    let r = h.get("/api/auth/sign-in/email", None).await.expect(404);
    assert_eq!(r.code(), "NOT_FOUND");
    let r = h
        .post("/api/auth/list-sessions", json!({}), None)
        .await
        .expect(404);
    assert_eq!(r.code(), "NOT_FOUND");
    let r = h
        .post("/api/auth/get-session", json!({}), None)
        .await
        .expect(405);
    assert_eq!(r.code(), "METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED");
}

/// The hosted pages read what they must tell a person before a submit from the configuration
/// (a Gatehouse extension), and nothing secret is in it.
#[tokio::test]
async fn page_settings_follow_the_configuration() {
    let h = harness().await;
    assert_eq!(
        h.get("/api/auth/page-settings", None)
            .await
            .expect(200)
            .json(),
        json!({"appName": "Gatehouse", "emailVerification": {"sendOnSignUp": false, "required": false},
               "password": {"minLength": 8, "maxLength": 128}, "byMail": true,
               "trustedOrigins": ["http://localhost:3000"]})
    );
    let h = harness_with(|c| {
        c.mail.transport = gatehouse_api::config::MailTransport::None;
        c.mail.app_name = "Acme".into();
        c.email_verification.send_on_sign_up = true;
        c.email_verification.require_email_verification = true;
        c.password.min_length = 12;
        c.trusted_origins = vec!["https://App.example.com/".into(), "*.acme.example".into()];
    })
    .await;
    assert_eq!(
        h.get("/api/auth/page-settings", None)
            .await
            .expect(200)
            .json(),
        json!({"appName": "Acme", "emailVerification": {"sendOnSignUp": true, "required": true},
               "password": {"minLength": 12, "maxLength": 128}, "byMail": false,
               "trustedOrigins": ["http://localhost:3000", "https://app.example.com", "*.acme.example"]})
    );
    // The tenant's look: its name wins over mail.app_name, in the pages and in mail.
    let h = harness_with(|c| {
        c.ui.app_name = "Acme".into();
        c.ui.logo_url = "/favicon.svg".into();
        c.ui.primary_color = "#0a7d33".into();
        c.ui.support_email = "help@acme.example".into();
        c.ui.home_url = "/organizations".into();
    })
    .await;
    let s = h
        .get("/api/auth/page-settings", None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        (&s["appName"], &s["logoUrl"], &s["primaryColor"]),
        (&json!("Acme"), &json!("/favicon.svg"), &json!("#0a7d33"))
    );
    assert_eq!(
        (&s["supportEmail"], &s["homeUrl"]),
        (&json!("help@acme.example"), &json!("/organizations"))
    );
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": "nobody@example.com"}),
        None,
    )
    .await
    .expect(200);
    h.sign_up("ann@example.com", "a-good-password").await;
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": "ann@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "ann@example.com").unwrap();
    assert_eq!(mail["subject"], "Reset your Acme password");
}
