//! Second factors by mail: codes sent during the challenge.
use super::*;

/// The six digits of the newest sign-in code mailed to `to`.
fn mailed_code(h: &H, to: &str) -> String {
    let mail = last_mail(h, "two-factor-otp", to).expect("a code by mail");
    let subject = mail["subject"].as_str().unwrap();
    let code = subject.split(' ').next().unwrap().to_owned();
    assert!(mail["text"].as_str().unwrap().contains(&code));
    assert_eq!(code.len(), 6);
    code
}

#[tokio::test]
async fn codes_by_mail_sign_in_once_each() {
    let h = harness().await;
    let cookie = h.sign_up("kim@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": PW, "method": "otp"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"method": "otp"}));
    assert_eq!(h.session(&cookie).await, Value::Null, "renewed");
    assert_eq!(
        h.session(&r.cookie_header()).await["user"]["twoFactorEnabled"],
        true
    );
    let r = h.sign_in("kim@example.com", PW).await.expect(200);
    assert_eq!(r.json()["twoFactorMethods"], json!(["otp"]));
    let challenge = r.cookie_header();
    // No code without a challenge.
    let r = h
        .post("/api/auth/two-factor/send-otp", json!({}), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    h.post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await
        .expect(200);
    let code = mailed_code(&h, "kim@example.com");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": wrong}),
            Some(&challenge),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": code}),
            Some(&challenge),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "kim@example.com");
    // Once: a new challenge cannot use it, and a code expires after 5 minutes.
    let challenge = h.sign_in("kim@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": code}),
            Some(&challenge),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
    h.post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await
        .expect(200);
    let code = mailed_code(&h, "kim@example.com");
    h.clock.advance(Duration::seconds(301));
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": code}),
            Some(&challenge),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_CODE");
}

#[tokio::test]
async fn without_mail_there_are_no_codes_by_mail() {
    let h = harness_with(|c| c.mail.transport = gatehouse_api::config::MailTransport::None).await;
    let cookie = h.sign_up("lou@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": PW, "method": "otp"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "OTP_NOT_ENABLED");
    let r = h
        .post(
            "/api/auth/two-factor/enable",
            json!({"password": PW, "method": "sms"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
}

/// A right code by mail ends a run of wrong codes too: nine wrong codes, a right one by mail,
/// then more wrong ones do not lock the second step (ten in a row would).
#[tokio::test]
async fn a_right_code_by_mail_ends_a_run_of_wrong_codes() {
    let h = harness().await;
    enrolled(&h, "otto@example.com").await;
    wrong_codes(&h, "otto@example.com", 9).await;
    let challenge = h.sign_in("otto@example.com", PW).await.cookie_header();
    h.post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await
        .expect(200);
    let code = mailed_code(&h, "otto@example.com");
    h.post(
        "/api/auth/two-factor/verify-otp",
        json!({"code": code}),
        Some(&challenge),
    )
    .await
    .expect(200);
    // The run starts anew: three more wrong codes are just wrong, not a lock.
    wrong_codes(&h, "otto@example.com", 3).await;
}
