//! Passkeys through HTTP with a software authenticator built here (ES256, 'none' attestation,
//! as WebAuthn Level 2 lays out its bytes): registration, sign-in with the passkey alone, and
//! each refusal — a replayed assertion, another origin, an unknown credential, a counter
//! going back, a challenge used twice or expired, malformed answers — plus two processes,
//! a raced assertion, the last way to sign in, and no second factor after a passkey.
use crate::authenticator::{b64, rand_id, Authenticator};
use crate::common::*;
use futures::future::join_all;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

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

/// Registers `a` for the user signed in with `cookie`: the stored passkey's answer.
async fn register(h: &H, cookie: &str, a: &mut Authenticator, name: Option<&str>) -> Value {
    let (o, c) = register_options(h, cookie).await;
    let mut body = json!({"response": a.register(&o)});
    if let Some(n) = name {
        body["name"] = json!(n);
    }
    h.post("/api/auth/passkey/verify-registration", body, Some(&c))
        .await
        .expect(200)
        .json()
}

/// Fresh registration options for the user signed in with `cookie`: the options and the
/// cookie header carrying their challenge.
async fn register_options(h: &H, cookie: &str) -> (Value, String) {
    let o = h
        .get("/api/auth/passkey/generate-register-options", Some(cookie))
        .await
        .expect(200);
    (o.json(), join(cookie, &o.cookie_header()))
}

async fn finish_registration(h: &H, cookie: &str, response: Value) -> Resp {
    h.post(
        "/api/auth/passkey/verify-registration",
        json!({ "response": response }),
        Some(cookie),
    )
    .await
}

/// Sign-in options for a browser with `cookie` (maybe none): the options and the cookie
/// header that carries their challenge.
async fn sign_in_options(h: &H, cookie: Option<&str>) -> (Value, String) {
    let o = h
        .get("/api/auth/passkey/generate-authenticate-options", cookie)
        .await
        .expect(200);
    let c = join(cookie.unwrap_or(""), &o.cookie_header());
    (o.json(), c)
}

async fn verify(h: &H, cookie: &str, response: Value) -> Resp {
    h.post(
        "/api/auth/passkey/verify-authentication",
        json!({ "response": response }),
        Some(cookie),
    )
    .await
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

#[tokio::test]
async fn one_process_issues_the_options_another_verifies() {
    let h = harness().await;
    let second = same_store(&h, |_| {}).await;
    let cookie = h.sign_up("two@example.com", PW).await.cookie_header();
    // Registration begun on one, finished on the other.
    let (o, c) = register_options(&h, &cookie).await;
    let mut a = Authenticator::new();
    finish_registration(&second, &c, a.register(&o))
        .await
        .expect(200);
    let (o, c) = sign_in_options(&second, None).await;
    verify(&h, &c, a.assert(&o)).await.expect(200);
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

/// A request to a real server: the status, the body, and the cookies it set (`name=value`).
async fn raw(
    p: &crate::processes::Pair,
    s: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    cookie: &str,
) -> (u16, Value, String) {
    let mut req = p
        .http
        .request(method, format!("{}{path}", s.base))
        .header("origin", ORIGIN)
        .header("cookie", cookie);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let set = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|c| !c.contains("Max-Age=0"))
        .map(|c| c.split(';').next().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let body = r.json().await.unwrap_or(Value::Null);
    (status, body, set)
}

/// Two processes on one store, as behind a load balancer (SQLite and the CQL node): a
/// registration begun on one is finished on the other, an assertion sent to both at once
/// signs in once, a counter gone back is refused on the other process, and a passkey deleted
/// on one signs in on neither.
async fn passkeys_across_processes(backend: crate::processes::Backend) {
    use reqwest::Method;
    let Some(p) = crate::processes::pair(backend, &[]) else {
        return;
    };
    let (session, _) = p.user("pk-two@example.com").await;
    let (st, options, set) = raw(
        &p,
        &p.a,
        Method::GET,
        "/passkey/generate-register-options",
        None,
        &session,
    )
    .await;
    assert_eq!(st, 200, "{options}");
    let mut a = Authenticator::new();
    let both = join(&session, &set);
    let (st, registered, _) = raw(
        &p,
        &p.b,
        Method::POST,
        "/passkey/verify-registration",
        Some(json!({"response": a.register(&options)})),
        &both,
    )
    .await;
    assert_eq!(st, 200, "{registered}");
    // One assertion, ten requests split between the two: one session.
    let (_, options, challenge) = raw(
        &p,
        &p.b,
        Method::GET,
        "/passkey/generate-authenticate-options",
        None,
        "",
    )
    .await;
    let assertion = a.assert(&options);
    let tries = (0..10).map(|i| {
        let s = if i % 2 == 0 { &p.a } else { &p.b };
        raw(
            &p,
            s,
            Method::POST,
            "/passkey/verify-authentication",
            Some(json!({"response": assertion.clone()})),
            &challenge,
        )
    });
    let results = join_all(tries).await;
    assert_eq!(
        results.iter().filter(|r| r.0 == 200).count(),
        1,
        "{:?}",
        results.iter().map(|r| (r.0, &r.1)).collect::<Vec<_>>()
    );
    assert!(results.iter().all(|r| r.0 == 200 || r.0 == 400));
    // The counter the other process stored: an older one is refused.
    a.counter = 0;
    let (st, body) = sign_in_across(&p, &p.a, &p.b, &mut a).await;
    assert_eq!(
        (st, body["code"].as_str()),
        (401, Some("AUTHENTICATION_FAILED"))
    );
    // Deleted on B: refused on A.
    let (st, body, _) = raw(
        &p,
        &p.b,
        Method::POST,
        "/passkey/delete-passkey",
        Some(json!({"id": registered["id"]})),
        &session,
    )
    .await;
    assert_eq!(st, 200, "{body}");
    a.counter = 100;
    let (st, body) = sign_in_across(&p, &p.a, &p.a, &mut a).await;
    assert_eq!(
        (st, body["code"].as_str()),
        (401, Some("PASSKEY_NOT_FOUND"))
    );
}

/// Sign-in options from `options_on`, `a`'s assertion sent to `verify_on`.
async fn sign_in_across(
    p: &crate::processes::Pair,
    options_on: &Server,
    verify_on: &Server,
    a: &mut Authenticator,
) -> (u16, Value) {
    let (_, options, challenge) = raw(
        p,
        options_on,
        reqwest::Method::GET,
        "/passkey/generate-authenticate-options",
        None,
        "",
    )
    .await;
    let (st, body, _) = raw(
        p,
        verify_on,
        reqwest::Method::POST,
        "/passkey/verify-authentication",
        Some(json!({"response": a.assert(&options)})),
        &challenge,
    )
    .await;
    (st, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn passkeys_across_processes_on_sqlite() {
    let _turn = crate::processes::ONE_AT_A_TIME.acquire().await.unwrap();
    passkeys_across_processes(crate::processes::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn passkeys_across_processes_on_the_cql_node() {
    let _turn = crate::processes::ONE_AT_A_TIME.acquire().await.unwrap();
    passkeys_across_processes(crate::processes::Backend::Scylla).await;
}
