//! What providers and their settings may ask: bans, hosted domains, id tokens, verified addresses, overrides, the second factor.

use super::*;

/// A banned user cannot sign in through a provider: the error URL with `error=banned`, no
/// session; once unbanned, the same sign-in works.
#[tokio::test]
async fn a_banned_user_cannot_sign_in_through_a_provider() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&first), "/welcome");
    let session = h.session(&first.cookie_header()).await;
    let id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
    h.state
        .actors
        .admin_ban(
            &actors::Caller::Server,
            &id,
            "spam".into(),
            None,
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(h.session(&first.cookie_header()).await, Value::Null);
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert!(
        location(&r).starts_with("/oops?error=banned&error_description=You%20have%20been%20banned"),
        "{}",
        location(&r)
    );
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    h.state
        .actors
        .admin_unban(&actors::Caller::Server, &id, &Default::default())
        .await
        .unwrap();
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&r), "/dashboard");
    assert_eq!(
        audit_actions(&h).await,
        [
            "user.sign-in failure BANNED_USER github",
            "user.sign-in success github",
            "user.sign-in success github",
            "user.sign-up success github",
        ]
    );
}

#[tokio::test]
async fn google_hosted_domains_are_asked_for_and_required() {
    for (hd, signs_in) in [("example.com", true), ("*", true), ("other.example", false)] {
        let (h, _fake) = harness_with_provider("google", |g| g.hd = Some(hd.to_owned())).await;
        let flow = sign_in_start(&h, "google").await;
        assert_eq!(flow.query.get("hd").map(String::as_str), Some(hd));
        let r = callback(&h, "google", &flow, "good").await;
        if signs_in {
            assert_eq!(location(&r), "/welcome", "{hd}: {}", r.text);
        } else {
            assert_eq!(location(&r), "/oops?error=unable_to_get_user_info", "{hd}");
            assert!(r.set_cookie("gatehouse.session_token").is_none());
        }
    }
    // Only Google has hosted domains.
    let mut c = test_config(std::path::Path::new("/tmp"), |_| {});
    configure(&mut c, "http://127.0.0.1:1");
    c.social.get_mut("github").unwrap().hd = Some("example.com".into());
    let err =
        gatehouse_api::plugins::social::providers::Social::from_config(&c, &"s".repeat(32)).err();
    assert!(err.unwrap().contains("only Google"));
}

#[tokio::test]
async fn a_provider_may_refuse_id_tokens() {
    let (h, _fake) = harness_with_provider("google", |g| g.disable_id_token_sign_in = true).await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "google", "idToken": {"token": "any.token.here"}}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "ID_TOKEN_NOT_SUPPORTED");
}

#[tokio::test]
async fn a_provider_may_require_a_verified_address_before_a_session() {
    // Spotify never vouches for an address: its new users are made, but not signed in.
    let (h, _fake) =
        harness_with_provider("spotify", |s| s.require_email_verification = true).await;
    let flow = sign_in_start(&h, "spotify").await;
    let r = callback(&h, "spotify", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=email_not_verified");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    let user = h
        .store
        .get_user_by_email("wiz@example.com")
        .await
        .unwrap()
        .expect("the user was made");
    assert!(!user.email_verified);
    // A verification mail went out; other providers are not affected.
    assert!(last_mail(&h, "verify-email", "wiz@example.com").is_some());
    let flow = sign_in_start(&h, "google").await;
    let r = callback(&h, "google", &flow, "good").await;
    assert_eq!(location(&r), "/welcome");
}

#[tokio::test]
async fn facebook_opaque_id_tokens_sign_in_through_debug_token() {
    let (h, fake) = social_harness().await;
    let sign_in = |id_token: Value| {
        let h = &h;
        async move {
            h.post(
                "/api/auth/sign-in/social",
                json!({"provider": "facebook", "idToken": id_token}),
                None,
            )
            .await
        }
    };
    // Classic Facebook Login: an opaque token and the access token that came with it.
    let r = sign_in(json!({"token": "EAAGopaque", "accessToken": "at-facebook"}))
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "fay@example.com");
    assert!(r.set_cookie("gatehouse.session_token").is_some());
    let checked = fake
        .log
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.provider == "facebook" && s.what == "extra" && s.authorization.is_none());
    assert!(checked, "debug_token was asked");
    let account = h
        .store
        .list_accounts(&r.json()["user"]["id"].as_str().unwrap().into())
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.provider_id == "facebook")
        .expect("a facebook account");
    assert_eq!(account.account_id, "10158");
    // Without the access token there is nobody to ask about.
    let r = sign_in(json!({"token": "EAAGopaque"})).await.expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    // An access token Facebook does not know.
    let r = sign_in(json!({"token": "EAAGopaque", "accessToken": "at-other"}))
        .await
        .expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    // A JWT-shaped token is a Limited Login id token and must verify.
    let r = sign_in(json!({"token": "a.b.c", "accessToken": "at-facebook"}))
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TOKEN");
}

#[tokio::test]
async fn a_facebook_token_issued_to_another_app_is_refused() {
    // debug_token names the app the token was issued to: here not this client.
    let (h, _fake) =
        harness_with_provider("facebook", |f| f.client_id = "another-app".into()).await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "facebook", "idToken": {"token": "EAAGopaque", "accessToken": "at-facebook"}}),
            None,
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    assert!(h
        .store
        .get_user_by_email("fay@example.com")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_provider_may_override_the_users_name_image_and_email_at_each_sign_in() {
    for on in [false, true] {
        let (h, _fake) =
            harness_with_provider("github", |g| g.override_user_info_on_sign_in = on).await;
        let flow = sign_in_start(&h, "github").await;
        assert_eq!(
            location(&callback(&h, "github", &flow, "good").await),
            "/welcome"
        );
        // Since then the user renamed themselves and moved to another, unverified address.
        rewrite_user(&h, "octocat@example.com", |u| {
            u.name = "Local Name".into();
            u.image = None;
            u.email = "mona@local.test".into();
            u.email_verified = false;
        })
        .await;
        let flow = sign_in_start(&h, "github").await;
        assert_eq!(
            location(&callback(&h, "github", &flow, "good").await),
            "/dashboard"
        );
        let user = |email: &'static str| {
            let h = &h;
            async move { h.store.get_user_by_email(email).await.unwrap() }
        };
        if on {
            let u = user("octocat@example.com")
                .await
                .expect("the provider's address");
            assert_eq!(u.name, "monalisa octocat");
            assert_eq!(
                u.image.as_deref(),
                Some("https://github.example/octocat.gif")
            );
            assert!(u.email_verified, "GitHub verified it");
            assert!(user("mona@local.test").await.is_none());
        }
        // The replaced address is in the audit log, once, with the one it replaced.
        h.state.settled().await;
        let mut q = storage::AuditQuery::range(
            chrono::DateTime::from_timestamp(0, 0).unwrap(),
            storage::Clock::now(&*h.clock) + chrono::Duration::days(1),
            50,
        );
        q.action = Some("email.changed".into());
        let changed = h.store.list_audit(&q).await.unwrap().items;
        if on {
            assert_eq!(changed.len(), 1, "{changed:?}");
            assert_eq!(changed[0].target.as_deref(), Some("octocat@example.com"));
            assert_eq!(changed[0].details["from"], "mona@local.test");
            assert_eq!(changed[0].details["provider"], "github");
        } else {
            assert!(changed.is_empty(), "{changed:?}");
            let u = user("mona@local.test").await.expect("left alone");
            assert_eq!((u.name.as_str(), u.image.as_deref()), ("Local Name", None));
            assert!(!u.email_verified);
        }
    }
}

#[tokio::test]
async fn an_override_never_takes_another_users_address() {
    let (h, _fake) =
        harness_with_provider("github", |g| g.override_user_info_on_sign_in = true).await;
    let flow = sign_in_start(&h, "github").await;
    callback(&h, "github", &flow, "good").await;
    rewrite_user(&h, "octocat@example.com", |u| {
        u.name = "Local Name".into();
        u.email = "mona@local.test".into();
    })
    .await;
    // Someone else signs up with the address GitHub reports.
    h.sign_up("octocat@example.com", "password1234")
        .await
        .expect(200);
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(
        location(&r),
        "/dashboard",
        "the sign-in itself goes through"
    );
    let mine = h
        .store
        .get_user_by_email("mona@local.test")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        mine.name, "monalisa octocat",
        "the rest of the override applies"
    );
    let theirs = h
        .store
        .get_user_by_email("octocat@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(theirs.id, mine.id);
    assert_eq!(theirs.name, "Test User", "theirs is untouched");
}

/// A user with two-factor sign-in on finishes a provider sign-in with the second step: the
/// callback sets the challenge instead of a session and sends the browser to the hosted page
/// of that step; a code there signs in.
#[tokio::test]
async fn a_social_sign_in_waits_for_the_second_factor() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    let session = h.session(&first.cookie_header()).await;
    let id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
    h.state
        .actors
        .user(id.clone())
        .enroll_two_factor("gt1.not-a-secret".into(), vec![], true)
        .await
        .unwrap();
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await.expect(302);
    assert_eq!(
        location(&r),
        "http://localhost:3000/two-factor?methods=otp&redirectTo=%2Fdashboard"
    );
    assert!(r.set_cookie("gatehouse.two_factor").is_some());
    let challenge = r.cookie_header();
    assert!(!challenge.contains("gatehouse.session_token="));
    assert_eq!(h.session(&challenge).await, Value::Null);
    h.post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await
        .expect(200);
    let mail = last_mail(
        &h,
        "two-factor-otp",
        session["user"]["email"].as_str().unwrap(),
    )
    .expect("a code by mail");
    let code = mail["subject"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": code}),
            Some(&challenge),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], id.0);
    assert_eq!(h.session(&r.cookie_header()).await["user"]["id"], id.0);
}
