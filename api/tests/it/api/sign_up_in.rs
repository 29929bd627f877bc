//! Sign-up and sign-in: their answers, their errors, and races.

use super::*;

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
        state.settled().await; // its audit record, stored after the answer
        known = known.min(work(before, store.op_counts()));
        let before = store.op_counts();
        sign_in("nobody@example.com").await.expect(401);
        state.settled().await;
        unknown = unknown.min(work(before, store.op_counts()));
    }
    assert_eq!(known, unknown);
    assert!(known.0 >= 2, "{known:?}");
}
