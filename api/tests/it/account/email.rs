//! Changing the email address, and its confirmation once.

use super::*;

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
