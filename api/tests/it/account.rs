//! Account flows end to end through HTTP, following the links from the messages the server
//! really produced (outbox files), with expired, reused, tampered and wrong-kind tokens.

use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use poem::http::Method;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

fn query_param(url: &str, key: &str) -> Option<String> {
    let q = url.split_once('?')?.1;
    q.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8()
                .unwrap()
                .into_owned()
        })
    })
}

#[tokio::test]
async fn email_verification_via_the_mailed_link() {
    let h = harness_with(|c| c.email_verification.send_on_sign_up = true).await;
    let r = h
        .post("/api/auth/sign-up/email", json!({"name": "Vera", "email": "vera@example.com", "password": PW, "callbackURL": "/welcome"}), None)
        .await
        .expect(200);
    let cookie = r.cookie_header();
    assert_eq!(h.session(&cookie).await["user"]["emailVerified"], false);
    let mail =
        last_mail(&h, "verify-email", "vera@example.com").expect("verification mail in the outbox");
    assert!(mail["subject"].as_str().unwrap().contains("Verify"));
    assert!(mail["text"]
        .as_str()
        .unwrap()
        .contains(mail["link"].as_str().unwrap()));
    assert!(mail["html"].as_str().unwrap().contains("Vera"));
    let path = link_path(&h, &mail);
    assert!(path.starts_with("/api/auth/verify-email?token="));

    // Tampered token: redirected with the error.
    let tampered = path.replacen("token=", "token=x", 1);
    let r = h.get(&tampered, None).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/welcome?error=INVALID_TOKEN"
    );
    let token = query_param(&path, "token").unwrap();
    let r = h
        .get(&format!("/api/auth/verify-email?token={token}x"), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TOKEN");

    let r = h.get(&path, Some(&cookie)).await.expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/welcome");
    assert_eq!(h.session(&cookie).await["user"]["emailVerified"], true);
    // Following it again is harmless.
    let r = h
        .get(&format!("/api/auth/verify-email?token={token}"), None)
        .await
        .expect(200);
    // As 1.7: a verification answers no user.
    assert_eq!(r.json(), json!({"status": true, "user": null}));

    // Expired.
    h.clock.advance(Duration::seconds(3601));
    let r = h.get(&path, None).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/welcome?error=TOKEN_EXPIRED"
    );
    // Untrusted callback: refused before anything else.
    let r = h
        .get(
            &format!("/api/auth/verify-email?token={token}&callbackURL=https://evil.example"),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
}

#[tokio::test]
async fn require_verification_blocks_sign_in_until_verified_and_auto_signs_in() {
    let h = harness_with(|c| {
        c.email_verification.require_email_verification = true;
        c.email_verification.auto_sign_in_after_verification = true;
    })
    .await;
    let r = h.sign_up("rita@example.com", PW).await;
    assert_eq!(r.json()["token"], serde_json::Value::Null);
    assert!(r.set_cookies().is_empty());
    assert_eq!(outbox(&h).len(), 1);
    let r = h.sign_in("rita@example.com", PW).await.expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "EMAIL_NOT_VERIFIED", "message": "Email not verified"})
    );
    assert_eq!(outbox(&h).len(), 2, "a refused sign-in re-sends the link");
    // Wrong password is still 401, and sends nothing.
    h.sign_in("rita@example.com", "wrong-password")
        .await
        .expect(401);
    assert_eq!(outbox(&h).len(), 2);
    let mail = last_mail(&h, "verify-email", "rita@example.com").unwrap();
    let r = h.get(&link_path(&h, &mail), None).await.expect(302);
    let cookie = r.cookie_header();
    assert!(!cookie.is_empty(), "auto sign-in sets the session cookie");
    assert_eq!(
        h.session(&cookie).await["user"]["email"],
        "rita@example.com"
    );
    h.sign_in("rita@example.com", PW).await.expect(200);
}

#[tokio::test]
async fn send_verification_email_answers_alike_and_needs_a_sender() {
    let h = harness().await;
    h.sign_up("sam@example.com", PW).await;
    for email in ["sam@example.com", "nobody@example.com"] {
        let r = h
            .post(
                "/api/auth/send-verification-email",
                json!({"email": email}),
                None,
            )
            .await
            .expect(200);
        assert_eq!(r.json(), json!({"status": true}));
    }
    assert_eq!(outbox(&h).len(), 1);
    assert_eq!(outbox(&h)[0]["to"], "sam@example.com");
    let r = h
        .post(
            "/api/auth/send-verification-email",
            json!({"email": "bad"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // Signed in: only one's own, unverified address.
    let me = h.sign_up("me@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/send-verification-email",
            json!({"email": "sam@example.com"}),
            Some(&me),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "EMAIL_MISMATCH", "message": "Email mismatch"})
    );
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": "me@example.com"}),
        Some(&me),
    )
    .await
    .expect(200);
    assert_eq!(outbox(&h).last().unwrap()["to"], "me@example.com");

    let off = harness_with(|c| c.mail.transport = gatehouse_api::config::MailTransport::None).await;
    let r = off
        .post(
            "/api/auth/send-verification-email",
            json!({"email": "sam@example.com"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "VERIFICATION_EMAIL_ISNT_ENABLED", "message": "Verification email isn't enabled"})
    );
    let r = off
        .post(
            "/api/auth/forget-password",
            json!({"email": "sam@example.com"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "RESET_PASSWORD_ISNT_ENABLED");
}

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
async fn change_email_unverified_and_verified_paths() {
    let h = harness().await;
    let cookie = h.sign_up("old@example.com", PW).await.cookie_header();
    h.sign_up("taken@example.com", PW).await;
    let r = h
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "OLD@example.com"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "EMAIL_IS_THE_SAME", "message": "Email is the same"})
    );
    let r = h
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "taken@example.com"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "COULDNT_UPDATE_YOUR_EMAIL", "message": "Couldn't update your email"})
    );
    h.post(
        "/api/auth/change-email",
        json!({"newEmail": "nope"}),
        Some(&cookie),
    )
    .await
    .expect(400);

    // Unverified: changes at once; a verification goes to the new address.
    h.post(
        "/api/auth/change-email",
        json!({"newEmail": "new@example.com"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    assert_eq!(h.session(&cookie).await["user"]["email"], "new@example.com");
    let mail = last_mail(&h, "verify-email", "new@example.com").unwrap();
    h.get(&link_path(&h, &mail), Some(&cookie))
        .await
        .expect(302);
    assert_eq!(h.session(&cookie).await["user"]["emailVerified"], true);

    // Verified: a confirmation link goes to the current address; nothing changes yet.
    h.post(
        "/api/auth/change-email",
        json!({"newEmail": "newer@example.com", "callbackURL": "/settings"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    assert_eq!(h.session(&cookie).await["user"]["email"], "new@example.com");
    let confirm = last_mail(&h, "change-email-confirmation", "new@example.com").unwrap();
    assert!(confirm["text"]
        .as_str()
        .unwrap()
        .contains("newer@example.com"));
    let path = link_path(&h, &confirm);
    // Without the owner's session the link does nothing.
    let r = h.get(&path, None).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/settings?error=UNAUTHORIZED"
    );
    let r = h.get(&path, Some(&cookie)).await.expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/settings");
    // As 1.7: confirmed by the old address, the change still waits for the new one's proof.
    assert_eq!(h.session(&cookie).await["user"]["email"], "new@example.com");
    let prove = link_path(
        &h,
        &last_mail(&h, "verify-email", "newer@example.com").unwrap(),
    );
    h.get(&prove, None).await.expect(302);
    assert_eq!(h.session(&cookie).await["user"]["email"], "new@example.com");
    h.get(&prove, Some(&cookie)).await.expect(302);
    let s = h.session(&cookie).await;
    assert_eq!(s["user"]["email"], "newer@example.com");
    assert_eq!(s["user"]["emailVerified"], true);
    // Each link works once.
    let r = h.get(&prove, Some(&cookie)).await.expect(302);
    assert!(r.headers["location"].to_str().unwrap().contains("error="));
    h.sign_in("newer@example.com", PW).await.expect(200);
    h.sign_in("new@example.com", PW).await.expect(401);

    let off = harness_with(|c| c.account.change_email_enabled = false).await;
    let c = off.sign_up("o@example.com", PW).await.cookie_header();
    let r = off
        .post(
            "/api/auth/change-email",
            json!({"newEmail": "p@example.com"}),
            Some(&c),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "CHANGE_EMAIL_IS_DISABLED", "message": "Change email is disabled"})
    );
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
async fn delete_account_via_the_mailed_link() {
    let h = harness().await;
    let r = h.sign_up("del@example.com", PW).await;
    let cookie = r.cookie_header();
    let user_id = storage::UserId(r.json()["user"]["id"].as_str().unwrap().to_owned());
    // A membership that must go with the user.
    let now = storage::Clock::now(&*h.clock);
    let owner = h.sign_up("owner@example.com", PW).await.json()["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let org = storage::Organization::new("O".into(), "o".into(), None, None, true, now);
    let member = |u: &str, role: &str| storage::Member {
        id: storage::MemberId::generate(),
        organization_id: org.id.clone(),
        user_id: storage::UserId(u.into()),
        role: role.into(),
        team_id: None,
        created_at: now,
    };
    h.store
        .create_organization(&org, &member(&owner, "owner"), None, &[])
        .await
        .unwrap();
    h.state
        .actors
        .org(org.id.clone())
        .add_member(actors::Acting::Server, user_id.clone(), "member")
        .await
        .unwrap();

    let r = h
        .post(
            "/api/auth/delete-user",
            json!({"callbackURL": "/goodbye"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["message"], "Verification email sent");
    assert!(
        h.store.get_user(&user_id).await.unwrap().is_some(),
        "nothing deleted before confirmation"
    );
    let mail = last_mail(&h, "delete-account", "del@example.com").unwrap();
    let r = h
        .get(&link_path(&h, &mail), Some(&cookie))
        .await
        .expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/goodbye");
    assert_eq!(r.set_cookies().len(), 3);
    assert!(h.store.get_user(&user_id).await.unwrap().is_none());
    assert!(h
        .store
        .get_member(&org.id, &user_id)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        h.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null"
    );
    h.sign_in("del@example.com", PW).await.expect(401);
    // Used once: the session is gone with the user, and so is the token.
    let r = h
        .get(&link_path(&h, &mail), Some(&cookie))
        .await
        .expect(404);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");

    // Without a sender: deleted at once.
    let now_h =
        harness_with(|c| c.mail.transport = gatehouse_api::config::MailTransport::None).await;
    let c = now_h.sign_up("now@example.com", PW).await.cookie_header();
    let r = now_h
        .post("/api/auth/delete-user", json!({}), Some(&c))
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"success": true, "message": "User deleted"})
    );
    assert_eq!(r.set_cookies().len(), 3);
    now_h.sign_in("now@example.com", PW).await.expect(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_delete_callbacks_delete_once() {
    let h = harness().await;
    let cookie = h.sign_up("twice@example.com", PW).await.cookie_header();
    h.post("/api/auth/delete-user", json!({}), Some(&cookie))
        .await
        .expect(200);
    let path = link_path(
        &h,
        &last_mail(&h, "delete-account", "twice@example.com").unwrap(),
    );
    let tasks = (0..2).map(|_| {
        let ep = h.ep.clone();
        let path = path.clone();
        let cookie = cookie.clone();
        tokio::spawn(async move {
            call(&ep, Method::GET, &path, None, Some(&cookie), &[])
                .await
                .status
                .as_u16()
        })
    });
    let mut statuses: Vec<u16> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    statuses.sort();
    // The mailed link carries the default callbackURL (`/`): the winner redirects there.
    assert_eq!(statuses, vec![302, 404]);
}

#[tokio::test]
async fn list_and_unlink_accounts() {
    let h = harness().await;
    let r = h.sign_up("link@example.com", PW).await;
    let cookie = r.cookie_header();
    let uid = r.json()["user"]["id"].as_str().unwrap().to_owned();
    let list = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    let acc = &list[0];
    assert_eq!(acc["provider"], "credential");
    assert_eq!(acc["providerId"], "credential");
    assert_eq!(acc["accountId"], uid.as_str());
    assert_eq!(acc["scopes"], json!([]));
    assert!(acc["createdAt"].is_string() && acc["updatedAt"].is_string() && acc["id"].is_string());
    assert!(acc.get("password").is_none());

    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "credential"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "FAILED_TO_UNLINK_LAST_ACCOUNT", "message": "You can't unlink your last account"})
    );
    let now = storage::Clock::now(&*h.clock);
    h.store
        .create_account(
            &storage::Account {
                id: storage::AccountId::generate(),
                user_id: storage::UserId(uid.clone()),
                provider_id: "github".into(),
                account_id: "777".into(),
                password: None,
                access_token: Some("gho_secret".into()),
                refresh_token: None,
                id_token: None,
                access_token_expires_at: None,
                refresh_token_expires_at: None,
                scope: Some("read:user,user:email".into()),
                created_at: now,
                updated_at: now,
            },
            &[],
        )
        .await
        .unwrap();
    let list = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200);
    assert!(!list.text.contains("gho_secret"));
    let gh = list
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provider"] == "github")
        .cloned()
        .unwrap();
    assert_eq!(gh["scopes"], json!(["read:user", "user:email"]));
    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "github", "accountId": "999"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ACCOUNT_NOT_FOUND");
    h.post(
        "/api/auth/unlink-account",
        json!({"providerId": "github", "accountId": "777"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    assert_eq!(
        h.get("/api/auth/list-accounts", Some(&cookie))
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let all = harness_with(|c| c.account.allow_unlinking_all = true).await;
    let c = all.sign_up("all@example.com", PW).await.cookie_header();
    all.post(
        "/api/auth/unlink-account",
        json!({"providerId": "credential"}),
        Some(&c),
    )
    .await
    .expect(200);
    all.sign_in("all@example.com", PW).await.expect(401);
}

#[tokio::test]
async fn operator_templates_override_the_builtin_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("reset-password.subject"),
        "{{app_name}}: new password for {{name}}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("reset-password.txt"), "Go to {{link}} now.").unwrap();
    std::fs::write(
        dir.path().join("reset-password.html"),
        "<p>{{name}}</p><a href=\"{{link}}\">reset</a>",
    )
    .unwrap();
    let path = dir.path().to_owned();
    let h = harness_with(move |c| {
        c.mail.templates_dir = Some(path);
        c.mail.app_name = "Acme".into();
    })
    .await;
    h.post(
        "/api/auth/sign-up/email",
        json!({"name": "<Tom>", "email": "tom@example.com", "password": PW}),
        None,
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/forget-password",
        json!({"email": "tom@example.com"}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(&h, "reset-password", "tom@example.com").unwrap();
    let link = mail["link"].as_str().unwrap();
    assert_eq!(mail["subject"], "Acme: new password for <Tom>");
    assert_eq!(mail["text"], format!("Go to {link} now."));
    // Values are HTML-escaped in the HTML body.
    assert!(mail["html"]
        .as_str()
        .unwrap()
        .starts_with("<p>&lt;Tom&gt;</p>"));
    // Kinds without an override keep the built-in template.
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": "tom@example.com"}),
        None,
    )
    .await
    .expect(200);
    assert!(
        last_mail(&h, "verify-email", "tom@example.com").unwrap()["subject"]
            .as_str()
            .unwrap()
            .contains("Verify")
    );
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

/// The token of the newest reset mail to `to` (after following its link).
async fn reset_token(h: &H, to: &str) -> String {
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": to, "redirectTo": "/reset"}),
        None,
    )
    .await
    .expect(200);
    reset_token_of(&last_mail(h, "reset-password", to).unwrap())
}

async fn reset(h: &H, token: &str, password: &str) -> Resp {
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": password, "token": token}),
        None,
    )
    .await
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

/// A verification link opened on another device (the mail read on a phone) verifies the
/// address and signs nobody out, as 1.7 (issue #35); with
/// `email_verification.revoke_sessions_on_foreign_link` it ends the earlier sessions (the
/// stricter rule of issue #8). The holder following it while signed in keeps their session.
#[tokio::test]
async fn a_verification_link_on_another_device_revokes_nothing_unless_configured() {
    for strict in [false, true] {
        let h =
            harness_with(|c| c.email_verification.revoke_sessions_on_foreign_link = strict).await;
        let laptop = h.sign_up("victim@example.com", PW).await.cookie_header();
        let other = h.sign_up("other@example.com", PW).await.cookie_header();
        h.post(
            "/api/auth/send-verification-email",
            json!({"email": "victim@example.com"}),
            None,
        )
        .await
        .expect(200);
        let link = link_path(
            &h,
            &last_mail(&h, "verify-email", "victim@example.com").unwrap(),
        );
        // Followed in a browser signed in as somebody else: not this account's session either.
        h.get(&link, Some(&other)).await.expect(302);
        let left = h.session(&laptop).await;
        if strict {
            assert_eq!(left, Value::Null);
        } else {
            assert_eq!(left["user"]["emailVerified"], true);
        }
        assert_eq!(
            h.session(&other).await["user"]["email"],
            "other@example.com"
        );
    }
    let h = harness().await;

    // The holder's own session survives their own verification.
    let own = h.sign_up("own@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": "own@example.com"}),
        None,
    )
    .await
    .expect(200);
    let link = link_path(
        &h,
        &last_mail(&h, "verify-email", "own@example.com").unwrap(),
    );
    h.get(&link, Some(&own)).await.expect(302);
    assert_eq!(h.session(&own).await["user"]["emailVerified"], true);
    // Following it again (verified already) changes nothing.
    h.get(&link, None).await.expect(302);
    assert_eq!(h.session(&own).await["user"]["emailVerified"], true);
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

/// Attack (issue #8): an email-change confirmation link works once. Replaying it after the
/// user changed back does not move the address again.
#[tokio::test]
async fn an_email_change_confirmation_cannot_be_replayed() {
    let h = harness().await;
    let cookie = h.sign_up("a@example.com", PW).await.cookie_header();
    let verify = |to: &'static str, cookie: String| {
        let h = &h;
        async move {
            h.post(
                "/api/auth/send-verification-email",
                json!({"email": to}),
                None,
            )
            .await
            .expect(200);
            let link = link_path(h, &last_mail(h, "verify-email", to).unwrap());
            h.get(&link, Some(&cookie)).await.expect(302);
        }
    };
    verify("a@example.com", cookie.clone()).await;
    let change = |to: &'static str| {
        let h = &h;
        let cookie = cookie.clone();
        async move {
            h.post(
                "/api/auth/change-email",
                json!({"newEmail": to}),
                Some(&cookie),
            )
            .await
            .expect(200);
        }
    };
    change("b@example.com").await;
    let a_to_b = link_path(
        &h,
        &last_mail(&h, "change-email-confirmation", "a@example.com").unwrap(),
    );
    h.get(&a_to_b, Some(&cookie)).await.expect(302);
    // The new address proves itself with its own link (as 1.7), then the change applies.
    let prove = |to: &'static str| {
        let h = &h;
        let cookie = cookie.clone();
        async move {
            let link = link_path(h, &last_mail(h, "verify-email", to).unwrap());
            h.get(&link, Some(&cookie)).await.expect(302);
        }
    };
    prove("b@example.com").await;
    assert_eq!(h.session(&cookie).await["user"]["email"], "b@example.com");
    // Replaying it at once: nothing (back to the app with the error: a@ has no user now).
    let r = h.get(&a_to_b, Some(&cookie)).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/?error=USER_NOT_FOUND"
    );
    assert_eq!(h.session(&cookie).await["user"]["email"], "b@example.com");

    // Back to a@ (b@ is verified by its proof, so the change needs a confirmation again)…
    change("a@example.com").await;
    let b_to_a = link_path(
        &h,
        &last_mail(&h, "change-email-confirmation", "b@example.com").unwrap(),
    );
    h.get(&b_to_a, Some(&cookie)).await.expect(302);
    prove("a@example.com").await;
    assert_eq!(h.session(&cookie).await["user"]["email"], "a@example.com");
    // …and the old a→b link is dead, though it names the current address again.
    let r = h.get(&a_to_b, Some(&cookie)).await.expect(302);
    assert_eq!(
        r.headers["location"],
        "http://localhost:3000/?error=INVALID_TOKEN"
    );
    assert_eq!(h.session(&cookie).await["user"]["email"], "a@example.com");
}

/// The delete-account link deletes only in the browser of the account it was mailed to: a mail
/// scanner prefetching it, or anyone it reaches without that user's session, deletes nothing
/// (on main before this fix, a GET of the link alone deleted the account).
#[tokio::test]
async fn a_delete_link_without_the_owners_session_deletes_nothing() {
    let h = harness().await;
    let r = h.sign_up("keep@example.com", PW).await;
    let cookie = r.cookie_header();
    let id = storage::UserId(r.json()["user"]["id"].as_str().unwrap().to_owned());
    let other = h.sign_up("mallory@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/delete-user",
        json!({"callbackURL": "/bye"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let path = link_path(
        &h,
        &last_mail(&h, "delete-account", "keep@example.com").unwrap(),
    );
    // A prefetch without cookies.
    let r = h.get(&path, None).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "FAILED_TO_GET_USER_INFO", "message": "Failed to get user info"})
    );
    // Another user's session.
    let r = h.get(&path, Some(&other)).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_TOKEN", "message": "Invalid token"})
    );
    assert!(
        h.store.get_user(&id).await.unwrap().is_some(),
        "nothing deleted"
    );
    assert_ne!(
        h.session(&other).await,
        Value::Null,
        "the other user is untouched"
    );
    // A wrong token in the owner's browser: nothing either, and no redirect.
    let r = h
        .get(
            "/api/auth/delete-user/callback?token=not-the-token&callbackURL=/bye",
            Some(&cookie),
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "INVALID_TOKEN");
    assert!(h.store.get_user(&id).await.unwrap().is_some());
    // The owner's own browser: deleted (the failed attempts consumed nothing).
    let r = h.get(&path, Some(&cookie)).await.expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/bye");
    assert!(h.store.get_user(&id).await.unwrap().is_none());
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

fn urlencode(v: &str) -> String {
    v.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}
