//! The side-by-side steps of the passkey plugin.
use super::*;

/// The passkey plugin's routes that need no authenticator: the options, the refusals of an
/// answer without a challenge or with a garbled one, and the account's list, rename and
/// delete of passkeys it does not have.
pub(super) fn passkey_steps(pw: &'static str) -> Vec<Step> {
    let pk = Some("pk");
    let garbled_registration = json!({"response": {"id": "abc", "rawId": "abc", "type": "public-key",
        "response": {"clientDataJSON": "xx", "attestationObject": "yy"}}});
    let garbled_assertion = json!({"response": {"id": "abc", "rawId": "abc", "type": "public-key",
        "response": {"clientDataJSON": "xx", "authenticatorData": "yy", "signature": "zz"}}});
    vec![
        step(
            "pk-sign-up",
            pk,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "P", "email": "pk@compat.io", "password": pw})),
        ),
        step(
            "passkey-register-options-signed-out",
            None,
            "GET",
            "/passkey/generate-register-options",
            None,
        ),
        step(
            "passkey-register-options",
            pk,
            "GET",
            "/passkey/generate-register-options?name=Laptop",
            None,
        ),
        step(
            "passkey-verify-registration-no-response",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(json!({})),
        ),
        step(
            "passkey-verify-registration-garbled",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(garbled_registration.clone()),
        ),
        step(
            "passkey-verify-registration-challenge-used",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(garbled_registration),
        ),
        step(
            "passkey-register-options-platform",
            pk,
            "GET",
            "/passkey/generate-register-options?authenticatorAttachment=platform",
            None,
        ),
        step(
            "passkey-authenticate-options-signed-in",
            pk,
            "GET",
            "/passkey/generate-authenticate-options",
            None,
        ),
        step(
            "passkey-authenticate-options",
            Some("pk-anon"),
            "GET",
            "/passkey/generate-authenticate-options",
            None,
        ),
        step(
            "passkey-verify-authentication-unknown",
            Some("pk-anon"),
            "POST",
            "/passkey/verify-authentication",
            Some(garbled_assertion.clone()),
        ),
        step(
            "passkey-verify-authentication-no-challenge",
            None,
            "POST",
            "/passkey/verify-authentication",
            Some(garbled_assertion),
        ),
        step(
            "passkey-list",
            pk,
            "GET",
            "/passkey/list-user-passkeys",
            None,
        ),
        step(
            "passkey-update-unknown",
            pk,
            "POST",
            "/passkey/update-passkey",
            Some(json!({"id": "no-such-passkey", "name": "X"})),
        ),
        step(
            "passkey-delete-unknown",
            pk,
            "POST",
            "/passkey/delete-passkey",
            Some(json!({"id": "no-such-passkey"})),
        ),
        step(
            "passkey-list-signed-out",
            None,
            "GET",
            "/passkey/list-user-passkeys",
            None,
        ),
    ]
}
