//! Registering and signing in with passkeys (ES256 and Ed25519), renaming, deleting, the last way to sign in, better-auth's official client.

use super::*;

#[tokio::test]
async fn an_ed25519_passkey_registers_and_signs_in() {
    let h = harness().await;
    let cookie = h.sign_up("ed@example.com", PW).await.cookie_header();
    let mut a = Authenticator::ed25519();
    let p = register(&h, &cookie, &mut a, Some("Key")).await;
    assert_eq!(p["counter"], 0);
    let key = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        p["publicKey"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(
        key,
        a.cose_key(),
        "the COSE key as the authenticator gave it"
    );
    for _ in 0..2 {
        let (o, c) = sign_in_options(&h, None).await;
        let r = verify(&h, &c, a.assert(&o)).await.expect(200);
        assert_eq!(r.json()["user"]["email"], "ed@example.com");
        h.session(&r.cookie_header()).await;
    }
    let user = h
        .store
        .get_user_by_email("ed@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.store.list_passkeys(&user.id).await.unwrap()[0].counter, 2);
    // Signed in: offered as that user's only passkey.
    let (o, c) = sign_in_options(&h, Some(&cookie)).await;
    assert_eq!(o["allowCredentials"][0]["id"], b64(&a.id));
    verify(&h, &c, a.assert(&o)).await.expect(200);

    // Keys that are not Ed25519 points, another curve, an attestation other than "none".
    let ed448 = {
        let mut k = vec![0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x07, 0x21];
        k.extend(crate::authenticator::cbor_bytes(&[7u8; 57]));
        k
    };
    let short = {
        let mut k = vec![0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21];
        k.extend(crate::authenticator::cbor_bytes(&[7u8; 31]));
        k
    };
    for (cose, fmt) in [
        (Some(ed448), "none"),
        (Some(short), "none"),
        (None, "packed"),
    ] {
        let mut b = Authenticator::ed25519();
        b.cose = cose;
        b.fmt = fmt.into();
        let (o, c) = register_options(&h, &cookie).await;
        let r = finish_registration(&h, &c, b.register(&o))
            .await
            .expect(400);
        assert_eq!(r.code(), "FAILED_TO_VERIFY_REGISTRATION", "{fmt}");
    }
    assert_eq!(h.store.list_passkeys(&user.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_passkey_registers_and_signs_in_alone() {
    let h = harness().await;
    let cookie = h.sign_up("pia@example.com", PW).await.cookie_header();
    let o = h
        .get(
            "/api/auth/passkey/generate-register-options?authenticatorAttachment=platform",
            Some(&cookie),
        )
        .await
        .expect(200);
    let set = o
        .set_cookie("gatehouse.better-auth-passkey")
        .unwrap_or_else(|| panic!("{:?}", o.set_cookies()));
    assert!(
        set.contains("Max-Age=300") && set.contains("HttpOnly"),
        "{set}"
    );
    let opts = o.json();
    assert_eq!(opts["rp"]["id"], "localhost");
    assert_eq!(opts["user"]["name"], "pia@example.com");
    assert_eq!(opts["user"]["displayName"], "pia@example.com");
    assert_eq!(opts["attestation"], "none");
    assert_eq!(opts["timeout"], 60000);
    assert_eq!(opts["excludeCredentials"], json!([]));
    assert_eq!(
        opts["authenticatorSelection"],
        json!({"residentKey": "preferred", "userVerification": "preferred",
               "authenticatorAttachment": "platform", "requireResidentKey": false})
    );
    let algs: Vec<i64> = opts["pubKeyCredParams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["alg"].as_i64().unwrap())
        .collect();
    assert_eq!(algs, [-8, -7, -257], "EdDSA, ES256, RS256 as 1.7");
    let user = h
        .store
        .get_user_by_email("pia@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        opts["user"]["id"],
        json!(b64(user.id.0.as_bytes())),
        "not the user's id"
    );
    assert_eq!(opts["extensions"], json!({"credProps": true}));
    assert_eq!(opts["challenge"].as_str().unwrap().len(), 43);

    let mut a = Authenticator::new();
    let both = join(&cookie, &o.cookie_header());
    let p = h
        .post(
            "/api/auth/passkey/verify-registration",
            json!({"response": a.register(&opts), "name": "Laptop"}),
            Some(&both),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(p["name"], "Laptop");
    assert_eq!(p["credentialID"], b64(&a.id));
    assert_eq!(p["userId"], json!(user.id.0));
    assert_eq!(p["deviceType"], "singleDevice");
    assert_eq!(p["backedUp"], false);
    assert_eq!(p["transports"], "internal,hybrid");
    assert_eq!(p["aaguid"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(p["counter"], 0);
    assert!(!p["publicKey"].as_str().unwrap().is_empty());
    // Listed; the next registration excludes it.
    let list = h
        .get("/api/auth/passkey/list-user-passkeys", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], p["id"]);
    let again = h
        .get("/api/auth/passkey/generate-register-options", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(again["excludeCredentials"][0]["id"], b64(&a.id));
    assert_eq!(
        again["user"]["id"], opts["user"]["id"],
        "one handle per user"
    );

    // Another browser, no session: any passkey of the site.
    let (o, c) = sign_in_options(&h, None).await;
    assert_eq!(o["rpId"], "localhost");
    assert_eq!(o["userVerification"], "preferred");
    assert!(o.get("allowCredentials").is_none(), "{o}");
    let r = verify(&h, &c, a.assert(&o)).await.expect(200);
    let body = r.json();
    assert_eq!(body["user"]["email"], "pia@example.com");
    assert_eq!(body["session"]["userId"], json!(user.id.0));
    let s = h.session(&r.cookie_header()).await;
    assert_eq!(s["user"]["email"], "pia@example.com");
    let stored = h.store.list_passkeys(&user.id).await.unwrap();
    assert_eq!(stored[0].counter, 1);
    assert!(stored[0].last_used_at.is_some());
    // Signed in: only the user's own passkeys are allowed.
    let (o, _) = sign_in_options(&h, Some(&cookie)).await;
    assert_eq!(o["allowCredentials"][0]["id"], b64(&a.id));
    assert_eq!(
        o["allowCredentials"][0]["transports"],
        json!(["internal", "hybrid"])
    );
    // Audited.
    let actions = audit_actions(&h).await;
    assert!(
        actions.iter().any(|a| a == "passkey.registered"),
        "{actions:?}"
    );
    assert!(
        actions.iter().any(|a| a == "passkey.sign-in"),
        "{actions:?}"
    );
}

#[tokio::test]
async fn rename_delete_and_the_last_way_to_sign_in() {
    let h = harness().await;
    let cookie = h.sign_up("del@example.com", PW).await.cookie_header();
    let other = h.sign_up("else@example.com", PW).await.cookie_header();
    let mut a = Authenticator::new();
    let p = register(&h, &cookie, &mut a, Some("Laptop")).await;
    let id = p["id"].as_str().unwrap();
    let r = h
        .post(
            "/api/auth/passkey/update-passkey",
            json!({"id": id, "name": "Work laptop"}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["passkey"]["name"], "Work laptop");
    // Another user's passkey is not theirs to see.
    for path in ["update-passkey", "delete-passkey"] {
        let r = h
            .post(
                &format!("/api/auth/passkey/{path}"),
                json!({"id": id, "name": "Mine"}),
                Some(&other),
            )
            .await
            .expect(404);
        assert_eq!(r.code(), "PASSKEY_NOT_FOUND");
    }
    // Only a passkey left once the password goes: it cannot be deleted then.
    h.post(
        "/api/auth/unlink-account",
        json!({"providerId": "credential"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/passkey/delete-passkey",
            json!({"id": id}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "LAST_SIGN_IN_METHOD");
    // A second passkey: the first may go.
    let mut b = Authenticator::new();
    register(&h, &cookie, &mut b, None).await;
    h.post(
        "/api/auth/passkey/delete-passkey",
        json!({"id": id}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let list = h
        .get("/api/auth/passkey/list-user-passkeys", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    // The deleted passkey signs in no more.
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, a.assert(&o)).await.expect(401);
    assert_eq!(r.code(), "PASSKEY_NOT_FOUND");
    let (o, c) = sign_in_options(&h, None).await;
    verify(&h, &c, b.assert(&o)).await.expect(200);
}

#[tokio::test]
async fn no_second_factor_after_a_passkey_and_no_sign_in_when_banned() {
    let h = harness().await;
    let cookie = h.sign_up("tf@example.com", PW).await.cookie_header();
    let mut a = Authenticator::new();
    register(&h, &cookie, &mut a, None).await;
    h.change_user("tf@example.com", |u| u.two_factor_enabled = true)
        .await;
    // A password sign-in is challenged; a passkey one is not.
    let r = h.sign_in("tf@example.com", PW).await.expect(200);
    assert_eq!(r.json()["twoFactorRedirect"], true);
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, a.assert(&o)).await.expect(200);
    assert!(r.json()["session"]["token"].is_string());
    assert!(r.set_cookie("gatehouse.two_factor").is_none());
    // Banned: refused.
    h.change_user("tf@example.com", |u| u.banned = true).await;
    let (o, c) = sign_in_options(&h, None).await;
    let r = verify(&h, &c, a.assert(&o)).await.expect(403);
    assert_eq!(r.code(), "BANNED_USER");
}

/// better-auth's official client with `passkeyClient()` (Node, `api/tests/js-client`) lists,
/// renames and deletes a passkey as an app does. Skipped without the npm packages, unless
/// `REQUIRE_JS_CLIENT=1`.
#[tokio::test]
async fn official_client_lists_renames_and_deletes() {
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let http = reqwest::Client::new();
    let up = http
        .post(format!("http://{}/api/auth/sign-up/email", server.addr))
        .header("origin", ORIGIN)
        .json(&json!({"email": "pk@js.io", "password": PW, "name": "Pat"}))
        .send()
        .await
        .unwrap();
    assert_eq!(up.status(), 200);
    let user: Value = up.json().await.unwrap();
    // The passkey as a registration stores it (a browser's authenticator is not here).
    let store = storage::sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let p = storage::Passkey {
        id: storage::PasskeyId::generate(),
        user_id: storage::UserId(user["user"]["id"].as_str().unwrap().to_owned()),
        name: Some("Laptop".into()),
        credential_id: b64(&rand_id()),
        public_key: "pQECAyYgASFY".into(),
        credential: "{}".into(),
        counter: 0,
        device_type: "singleDevice".into(),
        backed_up: false,
        transports: "internal".into(),
        aaguid: "00000000-0000-0000-0000-000000000000".into(),
        created_at: now,
        updated_at: now,
        last_used_at: None,
        version: 1,
    };
    storage::PasskeyStore::create_passkey(&store, &p, &[])
        .await
        .unwrap();
    let seen = run_js_client(
        &js,
        "passkey-client.mjs",
        &[
            &format!("http://{}", server.addr),
            "http://localhost:3000",
            "pk@js.io",
            PW,
        ],
    )
    .await;
    assert_eq!(seen["signIn"]["error"], Value::Null, "{seen}");
    assert_eq!(seen["list"]["names"], json!(["Laptop"]), "{seen}");
    for field in [
        "id",
        "name",
        "publicKey",
        "userId",
        "credentialID",
        "counter",
        "deviceType",
        "backedUp",
        "transports",
        "createdAt",
        "aaguid",
    ] {
        assert!(
            seen["list"]["fields"]
                .as_array()
                .unwrap()
                .contains(&json!(field)),
            "{field}: {seen}"
        );
    }
    assert_eq!(
        seen["rename"],
        json!({"error": null, "name": "Renamed by the client"}),
        "{seen}"
    );
    assert_eq!(
        seen["unknown"],
        json!({"code": "PASSKEY_NOT_FOUND", "status": 404}),
        "{seen}"
    );
    assert_eq!(
        seen["delete"],
        json!({"error": null, "status": true}),
        "{seen}"
    );
    assert_eq!(seen["after"], 0, "{seen}");
}
