//! The proof of the mailbox and social sign-in (issue #35): a password set before the address
//! was verified by a link opened without the account's session is not the owner's until they
//! prove the mailbox (a code or link sign-in, a reset), and until then a provider's sign-in
//! with that address is not linked to the account implicitly. Verifying in the account's own
//! session, and linking from the account page, work as before.
use crate::common::*;
use crate::email_otp::code;
use crate::social::{callback, location, sign_in_start, social_harness};
use serde_json::{json, Value};

const PW: &str = "first-password-1";
/// The address the fake GitHub answers for its user (verified there).
const OCTO: &str = "octocat@example.com";

async fn verify_by_link(h: &H, cookie: Option<&str>) {
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": OCTO}),
        None,
    )
    .await
    .expect(200);
    let link = link_path(h, &last_mail(h, "verify-email", OCTO).unwrap());
    h.get(&link, cookie).await.expect(302);
}

async fn github(h: &H) -> Resp {
    let flow = sign_in_start(h, "github").await;
    callback(h, "github", &flow, "good").await
}

#[tokio::test]
async fn an_unproven_password_keeps_a_provider_from_linking_until_the_owner_signs_in_by_code() {
    let (h, _fake) = social_harness().await;
    // Someone registers the owner's address; the owner opens the verification mail.
    let mallory = h.sign_up(OCTO, PW).await.cookie_header();
    verify_by_link(&h, None).await;
    assert_eq!(h.session(&mallory).await["user"]["emailVerified"], true);
    // GitHub's sign-in is not merged into an account whose password may be Mallory's.
    let r = github(&h).await;
    assert_eq!(location(&r), "/oops?error=account_not_linked");
    assert!(!r.cookie_header().contains("session_token"));
    // The owner signs in by code: the password and the sessions made before are gone.
    let otp = code(&h, OCTO, "sign-in").await;
    let r = h
        .post(
            "/api/auth/sign-in/email-otp",
            json!({"email": OCTO, "otp": otp}),
            None,
        )
        .await
        .expect(200);
    let owner = r.cookie_header();
    assert_eq!(h.session(&mallory).await, Value::Null);
    h.sign_in(OCTO, PW).await.expect(401);
    // Now the provider links, to the same user.
    let r = github(&h).await;
    assert_eq!(location(&r), "/dashboard");
    assert_eq!(
        h.session(&r.cookie_header()).await["user"]["id"],
        h.session(&owner).await["user"]["id"]
    );
}

#[tokio::test]
async fn a_reset_proves_the_password_and_an_own_session_verification_needs_no_proof() {
    let (h, _fake) = social_harness().await;
    h.sign_up(OCTO, PW).await;
    verify_by_link(&h, None).await;
    assert_eq!(
        location(&github(&h).await),
        "/oops?error=account_not_linked"
    );
    // A reset by code: the owner's password now.
    let seen = mails(&h, "email-otp", OCTO).len();
    h.post(
        "/api/auth/email-otp/request-password-reset",
        json!({"email": OCTO}),
        None,
    )
    .await
    .expect(200);
    let mail = next_mail(&h, "email-otp", OCTO, seen).await;
    let otp = crate::email_otp::code_of(&mail);
    h.post(
        "/api/auth/email-otp/reset-password",
        json!({"email": OCTO, "otp": otp, "password": "owners-password-2"}),
        None,
    )
    .await
    .expect(200);
    assert_eq!(location(&github(&h).await), "/dashboard");

    // Verified in the account's own session (the laptop that signed up): links at once.
    let (h, _fake) = social_harness().await;
    let laptop = h.sign_up(OCTO, PW).await.cookie_header();
    verify_by_link(&h, Some(&laptop)).await;
    assert_eq!(location(&github(&h).await), "/dashboard");
}
