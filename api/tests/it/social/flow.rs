//! The code flow for every provider: the callback once and in the browser that started it, failures, checked requests.

use super::*;

#[tokio::test]
async fn every_provider_signs_in_through_the_code_flow() {
    let (h, fake) = social_harness().await;
    for spec in gatehouse_api::plugins::social::providers::catalog::PROVIDERS {
        let id = spec.id;
        let flow = sign_in_start(&h, id).await;
        // The authorize URL.
        let q = &flow.query;
        if id == "tiktok" {
            assert_eq!(q["client_key"], "client-tiktok");
            assert!(!q.contains_key("client_id"));
        } else {
            assert_eq!(q["client_id"], format!("client-{id}"), "{id}");
        }
        assert_eq!(
            q["redirect_uri"],
            format!("http://localhost:3000/api/auth/callback/{id}"),
            "{id}"
        );
        assert_eq!(q["response_type"], spec.response_type, "{id}");
        assert_eq!(q.contains_key("code_challenge"), spec.pkce, "{id}");
        assert_eq!(
            q.contains_key("nonce"),
            ID_TOKEN_PROVIDERS.contains(&id),
            "{id}"
        );
        assert_eq!(flow.state().len(), 32);

        let r = callback(&h, id, &flow, "good").await;
        assert_eq!(r.status.as_u16(), 302, "{id}: {}", r.text);
        assert_eq!(location(&r), "/welcome", "{id}: a new user");
        let session_cookie = r
            .set_cookie("gatehouse.session_token")
            .unwrap_or_else(|| panic!("{id}: a session cookie"));
        assert!(r
            .set_cookie("gatehouse.state")
            .is_some_and(|c| c.contains("Max-Age=0")));
        let cookie = session_cookie.split(';').next().unwrap().to_owned();
        let session = h.session(&cookie).await;
        let (account_id, email, verified, name) = expected(id);
        assert_eq!(session["user"]["email"], email, "{id}");
        assert_eq!(session["user"]["emailVerified"], verified, "{id}");
        assert_eq!(session["user"]["name"], name, "{id}");

        // What Gatehouse sent to the token endpoint.
        let seen = fake.log.token_call(id);
        let secret = format!("secret-{id}");
        match spec.client_auth {
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::Basic => {
                let b64 = base64::engine::general_purpose::STANDARD;
                let want = format!("Basic {}", b64.encode(format!("client-{id}:{secret}")));
                assert_eq!(seen.authorization.as_deref(), Some(want.as_str()), "{id}");
                assert!(!seen.form.contains_key("client_secret"), "{id}");
            }
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::ClientKey => {
                assert_eq!(seen.form["client_key"], "client-tiktok");
                assert!(!seen.form.contains_key("client_id"));
                assert_eq!(seen.form["client_secret"], secret);
            }
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::Body => {
                assert_eq!(seen.form["client_id"], format!("client-{id}"), "{id}");
                assert_eq!(seen.form["client_secret"], secret, "{id}");
            }
        }
        if spec.pkce {
            let verifier = &seen.form["code_verifier"];
            assert_eq!(verifier.len(), 128);
            assert_eq!(
                gatehouse_api::plugins::social::providers::challenge(verifier),
                flow.query["code_challenge"],
                "{id}: the verifier answers the challenge"
            );
        }
        if id == "vk" {
            assert_eq!(seen.form["device_id"], "dev-1");
        }

        // The stored account: the provider's id, tokens encrypted at rest.
        let user_id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
        let accounts = h.store.list_accounts(&user_id).await.unwrap();
        assert_eq!(accounts.len(), 1, "{id}");
        let a = &accounts[0];
        assert_eq!(
            (a.provider_id.as_str(), a.account_id.as_str()),
            (id, account_id)
        );
        let stored = a.access_token.as_deref().unwrap();
        assert!(
            stored.starts_with("gh1.") && !stored.contains("at-"),
            "{id}: {stored}"
        );
        assert_eq!(
            h.state.social_flow.social.open(stored).unwrap(),
            format!("at-{id}")
        );
        let listed = h
            .get("/api/auth/list-accounts", Some(&cookie))
            .await
            .expect(200)
            .json();
        assert_eq!(listed[0]["providerId"], id);
        assert_eq!(listed[0]["accountId"], account_id);

        // Signing in again: the same user, no new one, to callbackURL.
        let again = sign_in_start(&h, id).await;
        let r = callback(&h, id, &again, "good").await;
        assert_eq!(location(&r), "/dashboard", "{id}: an existing user");
        let cookie = r.cookie_header();
        assert_eq!(
            h.session(&cookie).await["user"]["id"],
            session["user"]["id"]
        );
    }
    let twitch = h
        .store
        .get_account_by_provider("twitch", "713936733")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(twitch.scope.as_deref(), Some("user:read:email,openid"));
}

#[tokio::test]
async fn a_callback_counts_once_and_only_in_the_browser_that_started_it() {
    let (h, _fake) = social_harness().await;
    // Replay: the second use of one state is refused and makes no session.
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&first), "/welcome");
    let replay = callback(&h, "github", &flow, "good").await;
    assert_eq!(replay.status.as_u16(), 302);
    // The state is gone, and with it the flow's error URL: the error page.
    assert_eq!(
        location(&replay),
        "http://localhost:3000/api/auth/error?error=please_restart_the_process"
    );
    assert!(replay.set_cookie("gatehouse.session_token").is_none());

    // Another browser: the right state without the state cookie.
    let flow = sign_in_start(&h, "github").await;
    let r = h
        .get(
            &format!("/api/auth/callback/github?code=good&state={}", flow.state()),
            None,
        )
        .await;
    assert_eq!(location(&r), "/oops?error=please_restart_the_process");
    // ...or with a cookie for another state.
    let other = sign_in_start(&h, "github").await;
    let r = h
        .get(
            &format!("/api/auth/callback/github?code=good&state={}", flow.state()),
            Some(&other.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=please_restart_the_process");
    // Unknown state, no state.
    let r = h
        .get(
            "/api/auth/callback/github?code=good&state=nope",
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(
        location(&r),
        "http://localhost:3000/api/auth/error?error=please_restart_the_process"
    );
    let r = h.get("/api/auth/callback/github?code=good", None).await;
    assert_eq!(
        location(&r),
        "http://localhost:3000/api/auth/error?error=state_not_found"
    );
}

#[tokio::test]
async fn twenty_concurrent_callbacks_with_one_state_make_one_session() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "gitlab").await;
    let replies =
        futures::future::join_all((0..20).map(|_| callback(&h, "gitlab", &flow, "good"))).await;
    let signed: Vec<&Resp> = replies
        .iter()
        .filter(|r| r.set_cookie("gatehouse.session_token").is_some())
        .collect();
    assert_eq!(signed.len(), 1);
    assert_eq!(location(signed[0]), "/welcome");
    let refused = replies
        .iter()
        .filter(|r| location(r).ends_with("?error=please_restart_the_process"))
        .count();
    assert_eq!(refused, 19);
    let user = h
        .store
        .get_user_by_email("gitty@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.store.list_sessions(&user.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn provider_failures_go_to_the_error_url() {
    let (h, _fake) = social_harness().await;
    // GitHub's bad code: HTTP 200 with an `error` member.
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "bad").await;
    assert_eq!(location(&r), "/oops?error=invalid_code");
    // Another provider's 400.
    let flow = sign_in_start(&h, "discord").await;
    assert_eq!(
        location(&callback(&h, "discord", &flow, "bad").await),
        "/oops?error=invalid_code"
    );
    // The user said no at the provider.
    let flow = sign_in_start(&h, "google").await;
    let r = h
        .get(
            &format!(
                "/api/auth/callback/google?error=access_denied&error_description=User%20denied&state={}",
                flow.state()
            ),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(
        location(&r),
        "/oops?error=access_denied&error_description=User%20denied"
    );
    // An id token bound to another flow (its nonce is not this flow's).
    let flow = sign_in_start(&h, "google").await;
    assert_eq!(flow.query["nonce"].len(), 32);
    let r = h
        .get(
            &format!(
                "/api/auth/callback/google?code=good.another-nonce&state={}",
                flow.state()
            ),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=nonce_binding_missing");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    // An id token in the token response whose signature is not the provider's key's: no
    // session and no user, for every provider whose user comes from the id token.
    for id in ID_TOKEN_PROVIDERS {
        let flow = sign_in_start(&h, id).await;
        let r = callback(&h, id, &flow, "forged").await;
        assert_eq!(location(&r), "/oops?error=unable_to_get_user_info", "{id}");
        assert!(r.set_cookie("gatehouse.session_token").is_none(), "{id}");
        let (_, email, _, _) = expected(id);
        assert!(
            h.store.get_user_by_email(email).await.unwrap().is_none(),
            "{id}"
        );
    }
    // No code.
    let flow = sign_in_start(&h, "google").await;
    let r = h
        .get(
            &format!("/api/auth/callback/google?state={}", flow.state()),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=no_code");
    // A provider that hangs: the error redirect once the configured timeout passes.
    let flow = sign_in_start(&h, "spotify").await;
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        callback(&h, "spotify", &flow, "hang"),
    )
    .await
    .expect("answered before the provider did");
    assert_eq!(location(&r), "/oops?error=invalid_code");
}

#[tokio::test]
async fn sign_in_requests_are_checked() {
    let (h, _fake) = social_harness().await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "myspace"}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "PROVIDER_NOT_FOUND");
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "callbackURL": "https://evil.example/x"}),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "additionalParams": {"redirect_uri": "https://evil.example"}}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // better-auth's client may send `additionalData` (for its server hooks): accepted; a
    // value that is not an object is not.
    h.post(
        "/api/auth/sign-in/social",
        json!({"provider": "github", "additionalData": {"plan": "pro", "seats": 3}}),
        None,
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "additionalData": "pro"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // Providers without id-token sign-in.
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "idToken": {"token": "x.y.z"}}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "ID_TOKEN_NOT_SUPPORTED");
    // disableRedirect: no Location, still a state.
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "disableRedirect": true, "scopes": ["repo"], "loginHint": "a@b.example"}),
            None,
        )
        .await
        .expect(200);
    assert!(r.headers.get("location").is_none());
    assert_eq!(r.json()["redirect"], false);
    let url = url::Url::parse(r.json()["url"].as_str().unwrap()).unwrap();
    let q: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(q["scope"], "read:user user:email repo");
    assert_eq!(q["login_hint"], "a@b.example");
    // The configured providers, without secrets.
    let list = h.get("/api/auth/social-providers", None).await.expect(200);
    assert_eq!(list.json().as_array().unwrap().len(), 18);
    assert!(!list.text.contains("secret-"));
    // Apple's form_post comes back as a GET with the same parameters.
    let r = h
        .call(
            poem::http::Method::POST,
            "/api/auth/callback/apple",
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        415,
        "a form body is required: {}",
        r.text
    );
    let resp = crate::common::call_raw(
        &h.ep,
        poem::Request::builder()
            .method(poem::http::Method::POST)
            .uri_str("/api/auth/callback/apple")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("code=c1&state=s1&user=%7B%7D"),
    )
    .await;
    assert_eq!(resp.status.as_u16(), 302);
    assert_eq!(
        location(&resp),
        "http://localhost:3000/api/auth/callback/apple?code=c1&state=s1&user=%7B%7D"
    );
}

#[tokio::test]
async fn a_posted_callback_merges_the_query_the_query_winning() {
    let (h, _fake) = social_harness().await;
    let posted = call_raw(
        &h.ep,
        poem::Request::builder()
            .method(poem::http::Method::POST)
            .uri_str("/api/auth/callback/apple?state=from-query&iss=https%3A%2F%2Fq.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("code=form-code&state=from-form"),
    )
    .await;
    assert_eq!(posted.status.as_u16(), 302, "{}", posted.text);
    let to = url::Url::parse(posted.headers.get("location").unwrap().to_str().unwrap()).unwrap();
    assert_eq!(to.path(), "/api/auth/callback/apple");
    let q: Vec<(String, String)> = to.query_pairs().into_owned().collect();
    assert_eq!(
        q,
        [
            ("code".to_string(), "form-code".to_string()),
            ("state".to_string(), "from-query".to_string()),
            ("iss".to_string(), "https://q.example".to_string()),
        ]
    );
}
