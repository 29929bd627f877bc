//! The side-by-side steps of the two-factor plugin.
use super::*;

/// The two-factor plugin: enrolment, the challenged sign-in (a wrong code, a right one, a
/// backup code), turning it off.
pub(super) fn two_factor_steps(pw: &'static str) -> Vec<Step> {
    let tf = Some("tf");
    let tf2 = Some("tf2");
    let tf3 = Some("tf3");
    let sign_in = json!({"email": "tf@compat.io", "password": pw});
    vec![
        step(
            "tf-sign-up",
            tf,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "T", "email": "tf@compat.io", "password": pw})),
        ),
        step(
            "two-factor-enable-wrong-password",
            tf,
            "POST",
            "/two-factor/enable",
            Some(json!({"password": "not-the-password"})),
        ),
        step(
            "two-factor-get-totp-uri-none",
            tf,
            "POST",
            "/two-factor/get-totp-uri",
            Some(json!({"password": pw})),
        ),
        Step {
            save: vec![("tf_uri", "/totpURI"), ("tf_backup", "/backupCodes/0")],
            ..step(
                "two-factor-enable",
                tf,
                "POST",
                "/two-factor/enable",
                Some(json!({"password": pw})),
            )
        },
        step(
            "two-factor-verify-totp-wrong",
            tf,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-verify-totp-confirm",
            tf,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "{totp:tf_uri}"})),
        ),
        step(
            "two-factor-get-totp-uri",
            tf,
            "POST",
            "/two-factor/get-totp-uri",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-sign-in",
            tf2,
            "POST",
            "/sign-in/email",
            Some(sign_in.clone()),
        ),
        step(
            "two-factor-no-session-yet",
            tf2,
            "GET",
            "/get-session",
            None,
        ),
        step(
            "two-factor-verify-no-challenge",
            None,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-challenge-wrong-code",
            tf2,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-challenge-right-code",
            tf2,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "{totp+1:tf_uri}", "trustDevice": true})),
        ),
        step("two-factor-signed-in", tf2, "GET", "/get-session", None),
        step(
            "two-factor-sign-in-backup",
            tf3,
            "POST",
            "/sign-in/email",
            Some(sign_in),
        ),
        step(
            "two-factor-backup-wrong",
            tf3,
            "POST",
            "/two-factor/verify-backup-code",
            Some(json!({"code": "aaaaa-bbbbb"})),
        ),
        step(
            "two-factor-backup",
            tf3,
            "POST",
            "/two-factor/verify-backup-code",
            Some(json!({"code": "{tf_backup}"})),
        ),
        step(
            "two-factor-generate-backup-codes",
            tf3,
            "POST",
            "/two-factor/generate-backup-codes",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-disable",
            tf3,
            "POST",
            "/two-factor/disable",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-generate-backup-codes-off",
            tf3,
            "POST",
            "/two-factor/generate-backup-codes",
            Some(json!({"password": pw})),
        ),
    ]
}
