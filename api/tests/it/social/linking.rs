//! Linking accounts, the audit actions of social sign-in, and provider tokens.

use super::*;

#[tokio::test]
async fn linking_follows_the_rules() {
    let (h, _fake) = social_harness().await;
    // Pre-registration takeover: someone registered GitHub's (verified) address with a
    // password and never proved it; the GitHub sign-in must not hand them the account.
    h.sign_up("octocat@example.com", "a-good-password").await;
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=account_not_linked");
    assert!(r.set_cookie("gatehouse.session_token").is_none());

    // A verified local address and a provider-verified one: linked, the same user.
    let user = h.store.get_user_by_email("gina@example.com").await.unwrap();
    assert!(user.is_none());
    let gina = h.sign_up("gina@example.com", "a-good-password").await;
    let gina_id = gina.json()["user"]["id"].as_str().unwrap().to_owned();
    h.change_user("gina@example.com", |u| u.email_verified = true)
        .await;
    let flow = sign_in_start(&h, "google").await;
    let r = callback(&h, "google", &flow, "good").await;
    assert_eq!(location(&r), "/dashboard");
    assert_eq!(
        h.session(&r.cookie_header()).await["user"]["id"],
        gina_id.as_str()
    );

    // Facebook does not verify emails: no implicit link to a verified user.
    let fay = h.sign_up("fay@example.com", "a-good-password").await;
    let fay_cookie = fay.cookie_header();
    h.change_user("fay@example.com", |u| u.email_verified = true)
        .await;
    let flow = sign_in_start(&h, "facebook").await;
    assert_eq!(
        location(&callback(&h, "facebook", &flow, "good").await),
        "/oops?error=account_not_linked"
    );

    // link-social: a provider that does not verify → refused; different emails → refused.
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "facebook", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&fay_cookie),
    )
    .await;
    let r = callback(&h, "facebook", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=unable_to_link_account");
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "discord", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&fay_cookie),
    )
    .await;
    let r = callback(&h, "discord", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=email_does_not_match");

    // Gina links LinkedIn, whose address is not hers.
    let gina_cookie = h
        .sign_in("gina@example.com", "a-good-password")
        .await
        .expect(200)
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "linkedin", "callbackURL": "/settings"}),
        Some(&gina_cookie),
    )
    .await;
    let r = callback(&h, "linkedin", &flow, "good").await;
    assert!(
        location(&r).ends_with("error=email_does_not_match"),
        "{}",
        location(&r)
    );
    let accounts = h
        .get("/api/auth/list-accounts", Some(&gina_cookie))
        .await
        .expect(200)
        .json();
    let providers: Vec<&str> = accounts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["providerId"].as_str().unwrap())
        .collect();
    assert_eq!(providers.len(), 2, "{providers:?}");
    assert!(providers.contains(&"google") && providers.contains(&"credential"));

    // link-social with the provider-verified address of the signed-in user (whose own
    // address need not be verified for an explicit link): linked, no new session.
    let twitchy = h
        .sign_up("twitchy@example.com", "a-good-password")
        .await
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "twitch", "callbackURL": "/settings"}),
        Some(&twitchy),
    )
    .await;
    let r = callback(&h, "twitch", &flow, "good").await;
    assert_eq!(location(&r), "/settings");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    let accounts = h
        .get("/api/auth/list-accounts", Some(&twitchy))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 2);

    // Without a session, link-social is 401.
    let r = h
        .post("/api/auth/link-social", json!({"provider": "github"}), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");

    // A social-only user cannot unlink their last account.
    let flow = sign_in_start(&h, "zoom").await;
    let zed = callback(&h, "zoom", &flow, "good").await.cookie_header();
    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "zoom"}),
            Some(&zed),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "FAILED_TO_UNLINK_LAST_ACCOUNT");
}

#[tokio::test]
async fn link_social_links_an_account_with_the_users_verified_email() {
    let (h, _fake) = social_harness().await;
    // A user who signed up with Dropbox (a verified address) links the same account again.
    let flow = sign_in_start(&h, "dropbox").await;
    let franz = callback(&h, "dropbox", &flow, "good").await.cookie_header();
    let pw = h
        .post(
            "/api/auth/link-social",
            json!({"provider": "dropbox", "callbackURL": "/settings"}),
            Some(&franz),
        )
        .await
        .expect(200);
    assert!(pw.json()["url"]
        .as_str()
        .unwrap()
        .contains("client_id=client-dropbox"));
    // Relinking the same account updates it (and merges scopes); the user still has one.
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "dropbox", "callbackURL": "/settings"}),
        Some(&franz),
    )
    .await;
    let r = callback(&h, "dropbox", &flow, "good").await;
    assert_eq!(location(&r), "/settings");
    assert!(
        r.set_cookie("gatehouse.session_token").is_none(),
        "no new session"
    );
    let accounts = h
        .get("/api/auth/list-accounts", Some(&franz))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 1);
    // An account of another user cannot be linked.
    h.sign_up("other@example.com", "a-good-password").await;
    let other = h
        .sign_in("other@example.com", "a-good-password")
        .await
        .expect(200)
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "dropbox", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&other),
    )
    .await;
    let r = callback(&h, "dropbox", &flow, "good").await;
    // Emails differ, which is checked first.
    assert_eq!(location(&r), "/oops?error=email_does_not_match");
    // Each step is in the audit log once, a refused link with the redirect's error.
    assert_eq!(
        audit_actions(&h).await,
        [
            "account.linked failure email_does_not_match",
            "account.linked success",
            "user.sign-in success",
            "user.sign-in success dropbox",
            "user.sign-up success",
            "user.sign-up success dropbox",
        ]
    );
}

#[tokio::test]
async fn provider_tokens_are_answered_refreshed_and_used() {
    let (h, _fake) = social_harness().await;
    let pw = h.sign_up("octocat@example.com", "a-good-password").await;
    let cookie = pw.cookie_header();
    let user_id = storage::UserId(pw.json()["user"]["id"].as_str().unwrap().to_owned());
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "github", "callbackURL": "/settings"}),
        Some(&cookie),
    )
    .await;
    assert_eq!(
        location(&callback(&h, "github", &flow, "good").await),
        "/settings"
    );
    let row = h
        .store
        .get_account_by_provider("github", "1")
        .await
        .unwrap()
        .unwrap();

    // By provider (spec) and by row id (1.7): the stored token, not yet due.
    for body in [
        json!({"providerId": "github"}),
        json!({"accountId": row.id.0}),
    ] {
        let r = h
            .post("/api/auth/get-access-token", body, Some(&cookie))
            .await
            .expect(200);
        assert_eq!(r.json()["accessToken"], "at-github");
        assert_eq!(r.json()["scopes"], json!(["read:user", "user:email"]));
    }
    // Refresh on demand: new tokens, stored encrypted.
    let r = h
        .post(
            "/api/auth/refresh-token",
            json!({"accountId": row.id.0}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["accessToken"], "at-github-r");
    assert_eq!(r.json()["refreshToken"], "rt-github");
    assert_eq!(r.json()["providerId"], "github");
    let stored = h
        .store
        .get_account_by_provider("github", "1")
        .await
        .unwrap()
        .unwrap();
    assert!(stored.access_token.as_deref().unwrap().starts_with("gh1."));
    // An expiry in the past: get-access-token refreshes first.
    let mut expired = stored.clone();
    expired.access_token_expires_at = Some(chrono::Utc::now() - chrono::Duration::minutes(1));
    expired.access_token = Some(h.state.social_flow.social.seal("at-github-old"));
    h.store.update_account(&expired, &[]).await.unwrap();
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"providerId": "github"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["accessToken"], "at-github-r");

    // The profile at the provider, now.
    let r = h
        .get(
            &format!("/api/auth/account-info?accountId={}", row.id.0),
            Some(&cookie),
        )
        .await
        .expect(200);
    let info = r.json();
    assert_eq!(info["user"]["email"], "octocat@example.com");
    assert_eq!(info["data"]["login"], "octocat");
    // GitHub's profile has no address; the listed primary one is filled in, as 1.7 does.
    assert_eq!(info["data"]["email"], "octocat@example.com");
    assert_eq!(info["account"]["accountId"], "1");

    // Errors: the password credential, an unknown account, no caller.
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"providerId": "credential"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "PROVIDER_NOT_SUPPORTED");
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"accountId": "nope"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ACCOUNT_NOT_FOUND");
    let r = h
        .post(
            "/api/auth/refresh-token",
            json!({"providerId": "github", "userId": user_id.0}),
            None,
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");

    // Unlink by row id (1.7's body): the password credential remains.
    h.post(
        "/api/auth/unlink-account",
        json!({"accountId": row.id.0}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let accounts = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 1);
    assert_eq!(accounts[0]["providerId"], "credential");
}
