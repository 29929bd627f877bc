//! Email verification: the mailed link, required verification, the sender, another device, operator templates.

use super::*;

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
