//! Password reset: the mailed link once, races, wrong tokens, older tokens, who is signed out.

use super::*;

#[tokio::test]
async fn password_reset_via_the_mailed_link_works_once() {
    let h = harness_with(|c| c.account.revoke_sessions_on_password_reset = true).await;
    let cookie = h.sign_up("pat@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/forget-password",
            json!({"email": "PAT@example.com", "redirectTo": "/reset"}),
            None,
        )
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"status": true, "message": "If this email exists in our system, check your email for the reset link"})
    );
    // Unknown address: same answer, no mail.
    let r = h
        .post(
            "/api/auth/request-password-reset",
            json!({"email": "ghost@example.com", "redirectTo": "/reset"}),
            None,
        )
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"status": true, "message": "If this email exists in our system, check your email for the reset link"})
    );
    assert_eq!(outbox(&h).len(), 1);
    let r = h
        .post(
            "/api/auth/forget-password",
            json!({"email": "pat@example.com", "redirectTo": "https://evil.example"}),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_REDIRECT_URL");

    let mail = last_mail(&h, "reset-password", "pat@example.com").unwrap();
    let r = h.get(&link_path(&h, &mail), None).await.expect(302);
    let location = r.headers["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("http://localhost:3000/reset?token="),
        "{location}"
    );
    let token = query_param(&location, "token").unwrap();
    assert_eq!(token.len(), 24);

    let r = h
        .post(
            "/api/auth/reset-password",
            json!({"newPassword": "short", "token": token}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "PASSWORD_TOO_SHORT");
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": "second-password-2", "token": token}),
        None,
    )
    .await
    .expect(200);
    h.sign_in("pat@example.com", "second-password-2")
        .await
        .expect(200);
    h.sign_in("pat@example.com", PW).await.expect(401);
    assert_eq!(
        h.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null",
        "sessions revoked on reset"
    );
    // Single use.
    let r = h
        .post(
            "/api/auth/reset-password",
            json!({"newPassword": "third-password-3", "token": token}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_TOKEN", "message": "Invalid token"})
    );
    let r = h.get(&link_path(&h, &mail), None).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/reset?error=INVALID_TOKEN"
    );

    // Expired, via the query parameter form.
    h.post(
        "/api/auth/forget-password",
        json!({"email": "pat@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "pat@example.com").unwrap();
    let link = mail["link"].as_str().unwrap();
    let token = link
        .split("/reset-password/")
        .nth(1)
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    h.clock.advance(Duration::seconds(3601));
    let r = h
        .post(
            &format!("/api/auth/reset-password?token={token}"),
            json!({"newPassword": "third-password-3"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_TOKEN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_resets_with_one_token_one_wins() {
    let h = harness().await;
    h.sign_up("race@example.com", PW).await;
    h.post(
        "/api/auth/forget-password",
        json!({"email": "race@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "race@example.com").unwrap();
    let token = reset_token_of(&mail);
    let tasks = ["password-alpha-1", "password-bravo-2"].map(|pw| {
        let ep = h.ep.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let r = call(
                &ep,
                Method::POST,
                "/api/auth/reset-password",
                Some(json!({"newPassword": pw, "token": token})),
                None,
                &[],
            )
            .await;
            (pw, r.status.as_u16())
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let winners: Vec<_> = results.iter().filter(|(_, s)| *s == 200).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert!(
        results.iter().all(|(_, s)| *s == 200 || *s == 400),
        "{results:?}"
    );
    for (pw, status) in &results {
        let expect = if *status == 200 { 200 } else { 401 };
        h.sign_in("race@example.com", pw).await.expect(expect);
    }
    h.sign_in("race@example.com", PW).await.expect(401);
}

#[tokio::test]
async fn wrong_kind_tokens_are_refused() {
    let h = harness().await;
    let cookie = h.sign_up("kind@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/forget-password",
        json!({"email": "kind@example.com"}),
        None,
    )
    .await
    .expect(200);
    let reset = last_mail(&h, "reset-password", "kind@example.com").unwrap();
    let reset_token = reset_token_of(&reset);
    // A reset token is neither a delete token nor a verification token.
    let r = h
        .get(
            &format!("/api/auth/delete-user/callback?token={reset_token}"),
            Some(&cookie),
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "INVALID_TOKEN");
    let r = h
        .get(&format!("/api/auth/verify-email?token={reset_token}"), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TOKEN");
    // A delete token is not a reset token.
    let r = h
        .post("/api/auth/delete-user", json!({}), Some(&cookie))
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"success": true, "message": "Verification email sent"})
    );
    let del = last_mail(&h, "delete-account", "kind@example.com").unwrap();
    let del_token = query_param(del["link"].as_str().unwrap(), "token").unwrap();
    assert_eq!(del_token.len(), 32);
    assert!(del_token
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
    let r = h
        .post(
            "/api/auth/reset-password",
            json!({"newPassword": "another-pass-9", "token": del_token}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_TOKEN");
    // A verification token (sealed) is not a reset token either.
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": "kind@example.com"}),
        None,
    )
    .await
    .expect(200);
    let ver = last_mail(&h, "verify-email", "kind@example.com").unwrap();
    let ver_token = query_param(ver["link"].as_str().unwrap(), "token").unwrap();
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": "another-pass-9", "token": ver_token}),
        None,
    )
    .await
    .expect(400);
    // The real ones still work after all that.
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": "another-pass-9", "token": reset_token}),
        None,
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn reset_creates_a_password_for_a_user_without_one() {
    let h = harness().await;
    store_user(&h, "nopw@example.com").await;
    h.post(
        "/api/auth/forget-password",
        json!({"email": "nopw@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "nopw@example.com").unwrap();
    let token = reset_token_of(&mail);
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": "brand-new-pass-1", "token": token}),
        None,
    )
    .await
    .expect(200);
    let r = h
        .sign_in("nopw@example.com", "brand-new-pass-1")
        .await
        .expect(200);
    let accounts = h
        .get("/api/auth/list-accounts", Some(&r.cookie_header()))
        .await
        .json();
    assert_eq!(accounts[0]["providerId"], "credential");
}

/// Attack (issue #8): Mallory signs up with the victim's address. When the victim proves the
/// mailbox by resetting the password from the mailed link, Mallory's sessions die and the
/// address counts as verified — even with `revoke_sessions_on_password_reset` off.
#[tokio::test]
async fn a_reset_on_an_unverified_account_evicts_whoever_signed_up_with_it() {
    let h = harness_with(|c| c.account.revoke_sessions_on_password_reset = false).await;
    let mallory = h.sign_up("victim@example.com", PW).await.cookie_header();
    let token = reset_token(&h, "victim@example.com").await;
    reset(&h, &token, "the-victims-own-1").await.expect(200);
    assert_eq!(h.session(&mallory).await, Value::Null);
    h.sign_in("victim@example.com", PW).await.expect(401);
    let victim = h
        .sign_in("victim@example.com", "the-victims-own-1")
        .await
        .expect(200)
        .cookie_header();
    assert_eq!(h.session(&victim).await["user"]["emailVerified"], true);

    // With the option off, a verified account's reset keeps its sessions, and says so.
    let token = reset_token(&h, "victim@example.com").await;
    let r = reset(&h, &token, "the-victims-own-2").await.expect(200);
    assert_eq!(r.json(), json!({"status": true, "sessionsRevoked": false}));
    assert_eq!(
        h.session(&victim).await["user"]["email"],
        "victim@example.com"
    );
}

/// By default a reset signs the account out everywhere (a reset after a compromise ends the
/// intruder's sessions), and the answer says so.
#[tokio::test]
async fn a_reset_signs_out_everywhere_by_default() {
    let h = harness().await;
    let cookie = h.sign_up("rey@example.com", PW).await.cookie_header();
    h.change_user("rey@example.com", |u| u.email_verified = true)
        .await;
    let token = reset_token(&h, "rey@example.com").await;
    let r = reset(&h, &token, "a-new-password-1").await.expect(200);
    assert_eq!(r.json(), json!({"status": true, "sessionsRevoked": true}));
    assert_eq!(h.session(&cookie).await, Value::Null);
}

/// Issue #8: a newer reset link, a completed reset and a password change each end every older
/// reset link of the user.
#[tokio::test]
async fn older_reset_tokens_die_with_a_newer_one_a_reset_or_a_password_change() {
    let h = harness().await;
    let cookie = h.sign_up("pat@example.com", PW).await.cookie_header();
    let first = reset_token(&h, "pat@example.com").await;
    let second = reset_token(&h, "pat@example.com").await;
    assert_ne!(first, second);
    let r = reset(&h, &first, "new-password-1").await.expect(400);
    assert_eq!(r.code(), "INVALID_TOKEN");
    // The link of the older mail now leads to the error.
    let r = h
        .get(
            &format!("/api/auth/reset-password/{first}?callbackURL=/reset"),
            None,
        )
        .await
        .expect(302);
    assert!(r.headers["location"]
        .to_str()
        .unwrap()
        .ends_with("error=INVALID_TOKEN"));

    // A password change ends the outstanding one.
    h.post(
        "/api/auth/change-password",
        json!({"currentPassword": PW, "newPassword": "changed-password-1"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let r = reset(&h, &second, "new-password-2").await.expect(400);
    assert_eq!(r.code(), "INVALID_TOKEN");

    // A completed reset ends the others (issued concurrently, say): both were valid until
    // one was used.
    let third = reset_token(&h, "pat@example.com").await;
    reset(&h, &third, "reset-password-3").await.expect(200);
    let r = reset(&h, &third, "reset-password-4").await.expect(400);
    assert_eq!(r.code(), "INVALID_TOKEN");
    h.sign_in("pat@example.com", "reset-password-3")
        .await
        .expect(200);
}

/// Issue #8: twenty concurrent reset requests leave exactly one working link.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reset_requests_leave_one_valid_token() {
    let h = harness().await;
    h.sign_up("pat@example.com", PW).await;
    let tasks = (0..20).map(|_| {
        h.post(
            "/api/auth/request-password-reset",
            json!({"email": "pat@example.com"}),
            None,
        )
    });
    for r in futures::future::join_all(tasks).await {
        r.expect(200);
    }
    let tokens: Vec<String> = outbox(&h)
        .iter()
        .filter(|m| m["kind"] == "reset-password")
        .map(reset_token_of)
        .collect();
    assert_eq!(tokens.len(), 20);
    let mut ok = 0;
    for t in &tokens {
        if reset(&h, t, "new-password-1").await.status.as_u16() == 200 {
            ok += 1;
        }
    }
    assert_eq!(ok, 1);
}
