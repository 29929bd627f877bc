//! Every bad assertion and registration refused, and one assertion used once under ten requests.

use super::*;

#[tokio::test]
async fn every_bad_assertion_is_refused() {
    bad_assertions(Authenticator::new()).await;
}

#[tokio::test]
async fn every_bad_assertion_is_refused_with_an_ed25519_key() {
    bad_assertions(Authenticator::ed25519()).await;
}

async fn bad_assertions(mut a: Authenticator) {
    let h = harness().await;
    let cookie = h.sign_up("rex@example.com", PW).await.cookie_header();
    register(&h, &cookie, &mut a, None).await;

    // No challenge cookie, a garbled one, an expired one.
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, "", a.assert(&o)).await.expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");
    let r = verify(&h, "gatehouse.better-auth-passkey=forged.sig", a.assert(&o))
        .await
        .expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");
    h.clock.advance(chrono::Duration::seconds(301));
    let r = verify(&h, &c, a.assert(&o)).await.expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");

    // A good assertion once; replayed (its challenge is used), refused.
    let (o, c) = sign_in_options(&h, None).await;
    let good = a.assert(&o);
    verify(&h, &c, good.clone()).await.expect(200);
    let r = verify(&h, &c, good.clone()).await.expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");
    // Replayed against a new challenge: the signed challenge is not this one.
    let (_, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, good).await.expect(400);
    assert_eq!(r.code(), "AUTHENTICATION_FAILED");

    // Another origin.
    a.origin = "https://evil.example".into();
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, a.assert(&o)).await.expect(400);
    assert_eq!(r.code(), "AUTHENTICATION_FAILED");
    a.origin = ORIGIN.into();

    // A credential nobody registered.
    let mut stranger = a.like();
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, stranger.assert(&o)).await.expect(401);
    assert_eq!(r.code(), "PASSKEY_NOT_FOUND");

    // A bad signature: another key under the registered credential's id.
    let mut forger = a.like();
    forger.id = a.id.clone();
    forger.handle = a.handle.clone();
    forger.counter = 50;
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, forger.assert(&o)).await.expect(401);
    assert_eq!(r.code(), "AUTHENTICATION_FAILED");

    // The counter going back: a cloned authenticator. Refused and audited.
    let (o, c) = sign_in_options(&h, None).await;
    verify(&h, &c, a.assert(&o)).await.expect(200);
    a.counter = 0;
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, a.assert(&o)).await.expect(401);
    assert_eq!(r.code(), "AUTHENTICATION_FAILED");
    let actions = audit_actions(&h).await;
    assert!(
        actions.iter().any(|a| a == "passkey.clone-suspected"),
        "{actions:?}"
    );

    // Malformed answers: 400 with a code, never a 500.
    for bad in [
        json!("x"),
        json!({}),
        json!({"id": "abc", "rawId": "abc", "type": "public-key",
               "response": {"clientDataJSON": "xx", "authenticatorData": "yy", "signature": "zz"}}),
    ] {
        let (_, c) = sign_in_options(&h, None).await;
        let r = verify(&h, &c, bad.clone()).await;
        assert!(
            r.status.as_u16() == 400 || r.status.as_u16() == 401,
            "{bad}: {}",
            r.text
        );
        assert!(!r.code().is_empty());
    }
    let r = h
        .post("/api/auth/passkey/verify-authentication", json!({}), None)
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
}

#[tokio::test]
async fn every_bad_registration_is_refused() {
    bad_registrations(Authenticator::new()).await;
}

#[tokio::test]
async fn every_bad_registration_is_refused_with_an_ed25519_key() {
    bad_registrations(Authenticator::ed25519()).await;
}

async fn bad_registrations(mut a: Authenticator) {
    let h = harness().await;
    let cookie = h.sign_up("reg@example.com", PW).await.cookie_header();
    let other = h.sign_up("other@example.com", PW).await.cookie_header();
    // Without a session, or an unknown attachment.
    h.get("/api/auth/passkey/generate-register-options", None)
        .await
        .expect(401);
    let r = h
        .get(
            "/api/auth/passkey/generate-register-options?authenticatorAttachment=usb",
            Some(&cookie),
        )
        .await
        .expect(400);
    assert!(!r.code().is_empty());
    // Garbled CBOR, then the challenge is gone whatever the outcome.
    let (o, c) = register_options(&h, &cookie).await;
    let mut bad = a.register(&o);
    bad["response"]["attestationObject"] = json!(b64(b"\xff\x00garbage"));
    let r = finish_registration(&h, &c, bad).await.expect(400);
    assert_eq!(r.code(), "FAILED_TO_VERIFY_REGISTRATION");
    let r = finish_registration(&h, &c, a.register(&o))
        .await
        .expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");
    // Another user's challenge.
    let (o, c) = register_options(&h, &cookie).await;
    let theirs = join(&c, &other);
    let r = finish_registration(&h, &theirs, a.register(&o))
        .await
        .expect(401);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY");
    // Another origin.
    a.origin = "https://evil.example".into();
    let (o, c) = register_options(&h, &cookie).await;
    let r = finish_registration(&h, &c, a.register(&o))
        .await
        .expect(400);
    assert_eq!(r.code(), "FAILED_TO_VERIFY_REGISTRATION");
    a.origin = ORIGIN.into();
    // A sign-in challenge answered as a registration.
    let (o, c) = sign_in_options(&h, Some(&cookie)).await;
    let as_registration = json!({"challenge": o["challenge"], "user": {"id": b64(b"someone")}});
    let r = finish_registration(&h, &c, a.register(&as_registration))
        .await
        .expect(400);
    assert_eq!(r.code(), "CHALLENGE_NOT_FOUND");
    // Not a credential at all.
    let r = finish_registration(&h, &cookie, json!("x"))
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // The same authenticator twice: once for anyone.
    register(&h, &cookie, &mut a, None).await;
    let (o, c) = register_options(&h, &other).await;
    let r = finish_registration(&h, &c, a.register(&o))
        .await
        .expect(400);
    assert_eq!(r.code(), "PREVIOUSLY_REGISTERED");
}

#[tokio::test]
async fn ten_requests_with_one_assertion_make_one_session() {
    let h = harness().await;
    let cookie = h.sign_up("race@example.com", PW).await.cookie_header();
    let mut a = Authenticator::new();
    register(&h, &cookie, &mut a, None).await;
    let (o, c) = sign_in_options(&h, None).await;
    let assertion = a.assert(&o);
    let results = join_all((0..10).map(|_| verify(&h, &c, assertion.clone()))).await;
    let ok = results.iter().filter(|r| r.status.as_u16() == 200).count();
    assert_eq!(
        ok,
        1,
        "{:?}",
        results.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert!(results
        .iter()
        .all(|r| r.status.as_u16() == 200 || r.code() == "CHALLENGE_NOT_FOUND"));
}
