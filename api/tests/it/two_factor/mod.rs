//! Two-factor sign-in through HTTP: enrolment confirmed by a first code, the challenged
//! sign-in (TOTP, backup codes, trusted devices), codes used once (also when raced), the
//! challenge's tries and the lock, and turning it off. TOTP codes are computed here from the
//! `otpauth://` URI the server answered, at the test clock's time (RFC 6238).
use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use serde_json::{json, Value};
use storage::Clock;

mod by_mail;
mod challenge;

const PW: &str = "first-password-1";

/// The code an authenticator app shows for `uri`'s secret at `at` (seconds since the epoch).
fn code_at(uri: &str, at: i64) -> String {
    let secret = uri
        .split("secret=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("a secret in the URI");
    let raw = base32::decode(base32::Alphabet::Rfc4648 { padding: false }, secret).unwrap();
    totp_rs::TOTP::new_unchecked(totp_rs::Algorithm::SHA1, 6, 1, 30, raw).generate(at as u64)
}

async fn user_of(h: &H, email: &str) -> storage::User {
    h.store.get_user_by_email(email).await.unwrap().unwrap()
}

fn now_code(h: &H, uri: &str) -> String {
    code_at(uri, h.clock.now().timestamp())
}

/// A user with two-factor sign-in on: their session cookie and the enrolment answer.
async fn enrolled(h: &H, email: &str) -> (String, Value) {
    let cookie = h.sign_up(email, PW).await.cookie_header();
    let e = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": PW}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    let uri = e["totpURI"].as_str().unwrap();
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(h, uri)}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["twoFactorEnabled"], true);
    // The next code step, so the test's first challenge code is not the one just used.
    h.clock.advance(Duration::seconds(30));
    // The session changed with the second factor: the new one.
    (r.cookie_header(), e)
}

#[tokio::test]
async fn enrolment_is_confirmed_by_a_first_code() {
    let h = harness().await;
    let cookie = h.sign_up("ann@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": "wrong-password"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_PASSWORD");
    let r = h
        .post("/api/auth/two-factor/enable", json!({"password": PW}), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");
    let e = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": PW, "issuer": "My App"}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(e["method"], "totp");
    let uri = e["totpURI"].as_str().unwrap();
    assert!(
        uri.starts_with("otpauth://totp/My%20App:ann%40example.com?secret="),
        "{uri}"
    );
    assert!(
        uri.ends_with("&issuer=My%20App&digits=6&period=30"),
        "{uri}"
    );
    let codes = e["backupCodes"].as_array().unwrap();
    assert_eq!(codes.len(), 10);
    assert!(codes.iter().all(|c| {
        let c = c.as_str().unwrap();
        c.len() == 11 && c.as_bytes()[5] == b'-'
    }));
    // Not on until a code confirms the secret; the secret is sealed in the store.
    assert_eq!(h.session(&cookie).await["user"]["twoFactorEnabled"], false);
    let user = user_of(&h, "ann@example.com").await;
    let stored = h.store.get_two_factor(&user.id).await.unwrap().unwrap();
    let secret = uri
        .split("secret=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    assert!(!stored.secret.contains(secret));
    assert!(stored
        .backup_codes
        .iter()
        .all(|h| !codes.contains(&json!(h))));
    // get-totp-uri answers the same secret (with the default issuer).
    let again = h
        .post(
            "/api/auth/two-factor/get-totp-uri",
            json!({"password": PW}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    assert!(again["totpURI"].as_str().unwrap().contains(secret));
    // No backup codes before it is on.
    let r = h
        .post(
            "/api/auth/two-factor/generate-backup-codes",
            json!({"password": PW}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TWO_FACTOR_NOT_ENABLED");
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": "000000"}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
    let code = now_code(&h, uri);
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": code}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["twoFactorEnabled"], true);
    // A new session in place of the one from before the change (as 1.7).
    let renewed = r.cookie_header();
    assert_eq!(
        r.json()["token"],
        h.session(&renewed).await["session"]["token"]
    );
    assert_eq!(h.session(&renewed).await["user"]["twoFactorEnabled"], true);
    assert_eq!(h.session(&cookie).await, Value::Null);
    let cookie = renewed;
    // A code works once (better-auth accepts it again within its window).
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": code}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
    // Without a session or a challenge there is nothing to verify.
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": code}),
            None,
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    // A user with no factor.
    let other = h.sign_up("bob@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/get-totp-uri",
            json!({"password": PW}),
            Some(&other),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TOTP_NOT_ENABLED");
}

#[tokio::test]
async fn a_sign_in_waits_for_its_second_factor() {
    let h = harness().await;
    let (_, e) = enrolled(&h, "cora@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    let r = h.sign_in("cora@example.com", PW).await.expect(200);
    assert_eq!(
        r.json(),
        json!({"twoFactorRedirect": true, "twoFactorMethods": ["totp", "otp"]})
    );
    let challenge = r
        .set_cookie("gatehouse.two_factor")
        .expect("the challenge cookie");
    assert!(challenge.contains("Max-Age=600"), "{challenge}");
    assert!(r
        .set_cookie("gatehouse.session_token")
        .unwrap()
        .contains("Max-Age=0"));
    let cookie = r.cookie_header();
    // No session yet.
    assert_eq!(h.session(&cookie).await, Value::Null);
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": "000000"}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri)}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "cora@example.com");
    assert!(r
        .set_cookie("gatehouse.two_factor")
        .unwrap()
        .contains("Max-Age=0"));
    assert!(r.set_cookie("gatehouse.trust_device").is_none());
    let session = r.cookie_header();
    let s = h.session(&session).await;
    assert_eq!(s["session"]["token"], r.json()["token"]);
    // The challenge ended: its cookie does nothing more.
    h.clock.advance(Duration::seconds(30));
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri)}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    // A challenge expires after ten minutes.
    let cookie = h.sign_in("cora@example.com", PW).await.cookie_header();
    h.clock.advance(Duration::seconds(601));
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri)}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    // A forged challenge cookie.
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri)}),
            Some("gatehouse.two_factor=abc.1.forged"),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    // A wrong password is refused before any challenge.
    let r = h
        .sign_in("cora@example.com", "wrong-password")
        .await
        .expect(401);
    assert!(r.set_cookie("gatehouse.two_factor").is_none());
}

#[tokio::test]
async fn backup_codes_work_once_and_regenerating_replaces_them() {
    let h = harness().await;
    let (session, e) = enrolled(&h, "eve@example.com").await;
    let first = e["backupCodes"][0].as_str().unwrap().to_owned();
    let cookie = h.sign_in("eve@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/verify-backup-code",
            json!({"code": first}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "eve@example.com");
    let cookie = h.sign_in("eve@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/verify-backup-code",
            json!({"code": first}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_BACKUP_CODE");
    // New codes replace the old ones.
    let fresh = h
        .post(
            "/api/auth/two-factor/generate-backup-codes",
            json!({"password": PW}),
            Some(&session),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(fresh["status"], true);
    let second = e["backupCodes"][1].as_str().unwrap();
    let r = h
        .post(
            "/api/auth/two-factor/verify-backup-code",
            json!({"code": second}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_BACKUP_CODE");
    let new = fresh["backupCodes"][0].as_str().unwrap();
    h.post(
        "/api/auth/two-factor/verify-backup-code",
        json!({"code": new}),
        Some(&cookie),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn a_trusted_browser_skips_the_second_factor_until_it_is_turned_off() {
    let h = harness().await;
    let (session, e) = enrolled(&h, "gus@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    let cookie = h.sign_in("gus@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri), "trustDevice": true}),
            Some(&cookie),
        )
        .await
        .expect(200);
    let trust = r.set_cookie("gatehouse.trust_device").expect("trusted");
    assert!(trust.contains("Max-Age=2592000"), "{trust}");
    let browser = r.cookie_header();
    // Signing in again from that browser: a session at once, and the trust moves to a new
    // cookie (the old one works no more).
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "gus@example.com", "password": PW}),
            Some(&browser),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "gus@example.com");
    let rotated = r.cookie_header();
    assert_ne!(
        rotated.split("gatehouse.trust_device=").nth(1),
        browser.split("gatehouse.trust_device=").nth(1)
    );
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "gus@example.com", "password": PW}),
            Some(&browser),
        )
        .await
        .expect(200);
    assert_eq!(
        r.json()["twoFactorRedirect"],
        true,
        "an old trust cookie is spent"
    );
    // Another user's sign-in from the trusted browser is challenged; the trust stays Gus's.
    enrolled(&h, "hal@example.com").await;
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "hal@example.com", "password": PW}),
            Some(&rotated),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["twoFactorRedirect"], true);
    let r = h
        .post(
            "/api/auth/sign-in/email",
            json!({"email": "gus@example.com", "password": PW}),
            Some(&rotated),
        )
        .await
        .expect(200);
    assert!(r.json()["token"].is_string());
    let rotated = join(&rotated, &r.cookie_header());
    // Turning it off needs the password; then no challenge, and the trust is gone.
    let r = h
        .post(
            "/api/auth/two-factor/disable",
            json!({"password": "nope-nope"}),
            Some(&session),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_PASSWORD");
    let r = h
        .post(
            "/api/auth/two-factor/disable",
            json!({"password": PW}),
            Some(&session),
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    assert_eq!(h.session(&session).await, Value::Null, "renewed");
    let session = r.cookie_header();
    assert_eq!(h.session(&session).await["user"]["twoFactorEnabled"], false);
    let user = user_of(&h, "gus@example.com").await;
    assert!(h.store.get_two_factor(&user.id).await.unwrap().is_none());
    let r = h.sign_in("gus@example.com", PW).await.expect(200);
    assert!(r.json()["token"].is_string());
    assert!(h
        .store
        .get_verification(&format!(
            "trust-device:{}",
            rotated
                .split("gatehouse.trust_device=")
                .nth(1)
                .unwrap()
                .split('.')
                .next()
                .unwrap()
        ))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn two_factor_changes_are_audited() {
    let h = harness().await;
    let (session, _) = enrolled(&h, "ida@example.com").await;
    let cookie = h.sign_in("ida@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/two-factor/verify-totp",
        json!({"code": "000000"}),
        Some(&cookie),
    )
    .await
    .expect(401);
    h.post(
        "/api/auth/two-factor/disable",
        json!({"password": PW}),
        Some(&session),
    )
    .await
    .expect(200);
    let user = user_of(&h, "ida@example.com").await;
    h.state.settled().await;
    let mut q = storage::AuditQuery::range(
        h.clock.now() - Duration::hours(1),
        h.clock.now() + Duration::hours(1),
        100,
    );
    q.user = Some(user.id.clone());
    let actions: Vec<(String, String)> = h
        .store
        .list_audit(&q)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.action, format!("{:?}", e.outcome)))
        .collect();
    for want in [
        "two-factor.enrolled",
        "two-factor.challenge",
        "two-factor.disabled",
    ] {
        assert!(
            actions.iter().any(|(a, _)| a == want),
            "{want}: {actions:?}"
        );
    }
    assert!(
        actions
            .iter()
            .any(|(a, o)| a == "two-factor.challenge" && o.contains("Fail")),
        "{actions:?}"
    );
}

/// Two processes on one store share a challenge's tries: three wrong codes in one and two in
/// the other end it, and the first process's own try counts the others'.
#[tokio::test]
async fn two_processes_count_one_challenges_tries() {
    let a = harness().await;
    let b = same_store(&a, |_| {}).await;
    let (_, e) = enrolled(&a, "jo@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    let cookie = a.sign_in("jo@example.com", PW).await.cookie_header();
    for (i, h) in [&a, &b, &a, &b, &a].into_iter().enumerate() {
        let r = h
            .post(
                "/api/auth/two-factor/verify-totp",
                json!({"code": "000000"}),
                Some(&cookie),
            )
            .await
            .expect(401);
        assert_eq!(r.code(), "INVALID_CODE", "try {i}");
    }
    let r = b
        .post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&a, &uri)}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE");
}

/// An administrator turns off the second factor of a user who lost it: audited, and the next
/// sign-in has no second step.
#[tokio::test]
async fn an_administrator_turns_a_users_second_factor_off() {
    let h = harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(
            "server-key-0123456789abcdef",
        ))
    })
    .await;
    enrolled(&h, "max@example.com").await;
    let user = user_of(&h, "max@example.com").await;
    let listed = h
        .call(
            poem::http::Method::GET,
            "/api/auth/admin/list-users?searchField=email&searchValue=max",
            None,
            None,
            &[("authorization", "Bearer server-key-0123456789abcdef")],
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["users"][0]["twoFactorEnabled"], true);
    h.call(
        poem::http::Method::POST,
        "/api/auth/admin/disable-two-factor",
        Some(json!({"userId": user.id.0})),
        None,
        &[("authorization", "Bearer server-key-0123456789abcdef")],
    )
    .await
    .expect(200);
    let r = h.sign_in("max@example.com", PW).await.expect(200);
    assert!(r.json()["token"].is_string());
    assert!(h.store.get_two_factor(&user.id).await.unwrap().is_none());
    h.state.settled().await;
    let mut q = storage::AuditQuery::range(
        h.clock.now() - Duration::hours(1),
        h.clock.now() + Duration::hours(1),
        100,
    );
    q.user = Some(user.id.clone());
    let actions: Vec<String> = h
        .store
        .list_audit(&q)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.action)
        .collect();
    assert!(
        actions.contains(&"admin.two-factor-disabled".to_owned()),
        "{actions:?}"
    );
}

/// better-auth's official client with `twoFactorClient()` (Node, `api/tests/js-client`) turns
/// two-factor sign-in on, is sent to the second step at sign-in (its `onTwoFactorRedirect`),
/// and finishes it with a code. Skipped without the npm packages, unless `REQUIRE_JS_CLIENT=1`.
#[tokio::test]
async fn official_client_signs_in_with_two_factor() {
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let seen = run_js_client(
        &js,
        "two-factor-client.mjs",
        &[
            &format!("http://{}", server.addr),
            "http://localhost:3000",
            "two@js.io",
            PW,
        ],
    )
    .await;
    assert_eq!(seen["signUp"]["twoFactorEnabled"], false, "{seen}");
    assert_eq!(
        seen["enable"],
        json!({"error": null, "uri": "otpauth://totp/Gatehouse:two%40js.io", "codes": 10}),
        "{seen}"
    );
    assert_eq!(seen["confirm"]["twoFactorEnabled"], true, "{seen}");
    assert_eq!(
        seen["signIn"],
        json!({"error": null, "twoFactorRedirect": true, "methods": ["totp", "otp"], "redirected": 1}),
        "{seen}"
    );
    assert_eq!(seen["before"], Value::Null, "{seen}");
    assert_eq!(
        seen["verify"],
        json!({"error": null, "email": "two@js.io"}),
        "{seen}"
    );
    assert_eq!(
        seen["session"],
        json!({"email": "two@js.io", "twoFactorEnabled": true}),
        "{seen}"
    );
    assert_eq!(
        seen["wrongBackup"],
        json!({"status": 401, "code": "INVALID_BACKUP_CODE"}),
        "{seen}"
    );
    server.stop();
}

/// `n` wrong authenticator codes for `email`, four per sign-in (a challenge takes five): the
/// last challenge's cookie.
async fn wrong_codes(h: &H, email: &str, n: usize) -> String {
    let mut left = n;
    let mut cookie = String::new();
    while left > 0 {
        cookie = h.sign_in(email, PW).await.cookie_header();
        for _ in 0..left.min(4) {
            h.post(
                "/api/auth/two-factor/verify-totp",
                json!({"code": "999999"}),
                Some(&cookie),
            )
            .await
            .expect(401);
        }
        left -= left.min(4);
    }
    cookie
}
