//! The HTTP edge: origins, CORS, client addresses, caching headers, redirect targets, page settings.

use super::*;

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
