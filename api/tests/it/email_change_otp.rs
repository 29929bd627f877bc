//! Changing the address by a code (`email_otp.change_email`): off by default, a code to the
//! new address (none to an address in use), the current address's code first when
//! configured, a fresh session, the new address verified and the session replaced.
use crate::common::*;
use crate::email_otp::code_of;
use chrono::Duration;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

async fn request(h: &H, cookie: &str, body: Value) -> Resp {
    h.post(
        "/api/auth/email-otp/request-email-change",
        body,
        Some(cookie),
    )
    .await
}

async fn change(h: &H, cookie: &str, new_email: &str, otp: &str) -> Resp {
    h.post(
        "/api/auth/email-otp/change-email",
        json!({"newEmail": new_email, "otp": otp}),
        Some(cookie),
    )
    .await
}

#[tokio::test]
async fn off_by_default() {
    let h = harness().await;
    let cookie = h.sign_up("al@example.com", PW).await.cookie_header();
    let r = request(&h, &cookie, json!({"newEmail": "al2@example.com"}))
        .await
        .expect(400);
    assert_eq!(r.code(), "CHANGE_EMAIL_WITH_OTP_DISABLED");
    let r = change(&h, &cookie, "al2@example.com", "123456")
        .await
        .expect(400);
    assert_eq!(r.code(), "CHANGE_EMAIL_WITH_OTP_DISABLED");
    // The code type is never asked for through send-verification-otp.
    let r = h
        .post(
            "/api/auth/email-otp/send-verification-otp",
            json!({"email": "al@example.com", "type": "change-email"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "INVALID_OTP_TYPE");
}

#[tokio::test]
async fn a_code_to_the_new_address_changes_it_and_replaces_the_session() {
    let h = harness_with(|c| c.email_otp.change_email = true).await;
    let cookie = h.sign_up("al@example.com", PW).await.cookie_header();
    h.sign_up("taken@example.com", PW).await;
    let r = request(&h, "", json!({"newEmail": "new@example.com"}))
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");
    let r = request(&h, &cookie, json!({"newEmail": "al@example.com"}))
        .await
        .expect(400);
    assert_eq!(r.code(), "EMAIL_IS_THE_SAME");
    // An address in use: the same answer, and no mail.
    request(&h, &cookie, json!({"newEmail": "taken@example.com"}))
        .await
        .expect(200);
    let r = request(&h, &cookie, json!({"newEmail": "New@Example.com"}))
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"success": true}));
    let mail = next_mail(&h, "email-otp", "new@example.com", 0).await;
    assert!(mail["subject"]
        .as_str()
        .unwrap()
        .contains("email change code"));
    assert!(mails(&h, "email-otp", "taken@example.com").is_empty());
    let otp = code_of(&mail);
    // Another user cannot use it: the code is this user's.
    let bo = h.sign_up("bo@example.com", PW).await.cookie_header();
    assert_eq!(
        change(&h, &bo, "new@example.com", &otp).await.code(),
        "INVALID_OTP"
    );
    let r = change(&h, &cookie, "new@example.com", &otp)
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"success": true}));
    let fresh = r.cookie_header();
    assert!(fresh.contains("session_token"));
    let s = h.session(&fresh).await;
    assert_eq!(s["user"]["email"], "new@example.com");
    assert_eq!(s["user"]["emailVerified"], true);
    // The old session is gone; the code worked once.
    assert_eq!(h.session(&cookie).await, Value::Null);
    assert_eq!(
        change(&h, &fresh, "new@example.com", &otp).await.code(),
        "EMAIL_IS_THE_SAME"
    );
    h.sign_in("new@example.com", PW).await.expect(200);
}

#[tokio::test]
async fn the_current_address_first_when_configured_and_a_fresh_session() {
    let h = harness_with(|c| {
        c.email_otp.change_email = true;
        c.email_otp.change_email_verify_current = true;
    })
    .await;
    let cookie = h.sign_up("cu@example.com", PW).await.cookie_header();
    let r = request(&h, &cookie, json!({"newEmail": "cu2@example.com"}))
        .await
        .expect(400);
    assert_eq!(r.code(), "OTP_REQUIRED");
    let r = request(
        &h,
        &cookie,
        json!({"newEmail": "cu2@example.com", "otp": "000000"}),
    )
    .await
    .expect(400);
    assert_eq!(r.code(), "INVALID_OTP");
    h.post(
        "/api/auth/email-otp/send-verification-otp",
        json!({"email": "cu@example.com", "type": "email-verification"}),
        None,
    )
    .await
    .expect(200);
    let current = code_of(&next_mail(&h, "email-otp", "cu@example.com", 0).await);
    request(
        &h,
        &cookie,
        json!({"newEmail": "cu2@example.com", "otp": current}),
    )
    .await
    .expect(200);
    let otp = code_of(&next_mail(&h, "email-otp", "cu2@example.com", 0).await);
    // A session older than session.fresh_age may not change the address.
    h.clock.advance(Duration::days(2));
    let r = change(&h, &cookie, "cu2@example.com", &otp).await;
    assert_eq!(r.code(), "SESSION_NOT_FRESH");
}
