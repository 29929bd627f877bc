//! The side-by-side steps of codes and links by mail (better-auth's `emailOTP` and
//! `magicLink`): sign-up and sign-in by code, a used code, a check, reset and verification by
//! code, the proof of the mailbox on a pre-registered account, and a sign-in link.
use super::{follow, step, Step};
use serde_json::json;

/// `@code:<name>:<to>`: the newest unused code mailed to `to`, saved as `{name}`.
fn code(name: &'static str, to: &'static str) -> Step {
    let path: &'static str = Box::leak(format!("@code:{name}:{to}").into_boxed_str());
    let label: &'static str = Box::leak(format!("mailed-code-{name}").into_boxed_str());
    step(label, None, "GET", path, None)
}

fn send(label: &'static str, email: &str, purpose: &str) -> Step {
    step(
        label,
        None,
        "POST",
        "/email-otp/send-verification-otp",
        Some(json!({"email": email, "type": purpose})),
    )
}

pub(super) fn steps(pw: &'static str) -> Vec<Step> {
    let (otp, intruder, owner, vo, ml) = (
        Some("otp"),
        Some("intruder"),
        Some("owner"),
        Some("vo"),
        Some("ml"),
    );
    vec![
        send("otp-send-sign-in-new", "otp@compat.io", "sign-in"),
        code("otp1", "otp@compat.io"),
        step(
            "otp-check-new-address",
            None,
            "POST",
            "/email-otp/check-verification-otp",
            Some(json!({"email": "otp@compat.io", "type": "sign-in", "otp": "{otp1}"})),
        ),
        step(
            "otp-sign-in-up",
            otp,
            "POST",
            "/sign-in/email-otp",
            Some(json!({"email": "otp@compat.io", "otp": "{otp1}", "name": "Otto"})),
        ),
        step("otp-get-session", otp, "GET", "/get-session", None),
        step(
            "otp-sign-in-used-code",
            None,
            "POST",
            "/sign-in/email-otp",
            Some(json!({"email": "otp@compat.io", "otp": "{otp1}"})),
        ),
        send("otp-send-bad-email", "not-an-address", "sign-in"),
        send(
            "otp-send-change-email-type",
            "otp@compat.io",
            "change-email",
        ),
        step(
            "otp-request-email-change-off",
            otp,
            "POST",
            "/email-otp/request-email-change",
            Some(json!({"newEmail": "otp2@compat.io"})),
        ),
        step(
            "otp-request-password-reset",
            None,
            "POST",
            "/email-otp/request-password-reset",
            Some(json!({"email": "otp@compat.io"})),
        ),
        step(
            "otp-request-password-reset-unknown",
            None,
            "POST",
            "/email-otp/request-password-reset",
            Some(json!({"email": "nobody@compat.io"})),
        ),
        code("otp2", "otp@compat.io"),
        step(
            "otp-check-reset-code",
            None,
            "POST",
            "/email-otp/check-verification-otp",
            Some(json!({"email": "otp@compat.io", "type": "forget-password", "otp": "{otp2}"})),
        ),
        step(
            "otp-reset-password-short",
            None,
            "POST",
            "/email-otp/reset-password",
            Some(json!({"email": "otp@compat.io", "otp": "{otp2}", "password": "short"})),
        ),
        step(
            "otp-reset-password",
            None,
            "POST",
            "/email-otp/reset-password",
            Some(json!({"email": "otp@compat.io", "otp": "{otp2}", "password": pw})),
        ),
        step(
            "otp-reset-password-used-code",
            None,
            "POST",
            "/email-otp/reset-password",
            Some(json!({"email": "otp@compat.io", "otp": "{otp2}", "password": pw})),
        ),
        step(
            "otp-sign-in-with-the-new-password",
            None,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "otp@compat.io", "password": pw})),
        ),
        // Someone registers the owner's address; the owner signs in by code.
        step(
            "pre-registration",
            intruder,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "Mallory", "email": "owner@compat.io", "password": pw})),
        ),
        send("owner-send-sign-in", "owner@compat.io", "sign-in"),
        code("owner1", "owner@compat.io"),
        step(
            "owner-sign-in-by-code",
            owner,
            "POST",
            "/sign-in/email-otp",
            Some(json!({"email": "owner@compat.io", "otp": "{owner1}"})),
        ),
        step(
            "intruder-session-after-proof",
            intruder,
            "GET",
            "/get-session",
            None,
        ),
        step(
            "intruder-password-after-proof",
            None,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "owner@compat.io", "password": pw})),
        ),
        step("owner-session", owner, "GET", "/get-session", None),
        // Verification by code keeps the account's sessions.
        step(
            "vo-sign-up",
            vo,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "Vo", "email": "vo@compat.io", "password": pw})),
        ),
        send("vo-send-verification", "vo@compat.io", "email-verification"),
        code("vo1", "vo@compat.io"),
        step(
            "vo-verify-email-by-code",
            None,
            "POST",
            "/email-otp/verify-email",
            Some(json!({"email": "vo@compat.io", "otp": "{vo1}"})),
        ),
        step(
            "vo-session-after-verification",
            vo,
            "GET",
            "/get-session",
            None,
        ),
        // A sign-in link.
        step(
            "magic-link-bad-callback",
            None,
            "POST",
            "/sign-in/magic-link",
            Some(json!({"email": "ml@compat.io", "callbackURL": "https://evil.example/"})),
        ),
        step(
            "magic-link-send",
            None,
            "POST",
            "/sign-in/magic-link",
            Some(
                json!({"email": "ml@compat.io", "name": "Mel", "callbackURL": "/dash",
                        "newUserCallbackURL": "/welcome", "errorCallbackURL": "/err"}),
            ),
        ),
        follow("magic-link-verify", ml, "magic-link", "ml@compat.io"),
        step("magic-link-session", ml, "GET", "/get-session", None),
        step(
            "magic-link-bad-token",
            None,
            "GET",
            "/magic-link/verify?token=bad&callbackURL=/dash",
            None,
        ),
    ]
}
