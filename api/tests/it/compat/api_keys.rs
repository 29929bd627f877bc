//! The side-by-side steps of API keys (better-auth's `apiKey`, keys acting as sessions): a key
//! made and refused in each way a session may be, listed, read, renamed, used alone in
//! `x-api-key` (also where it may not be, and when it is unknown or too short), and deleted.
use super::{step, Step};
use serde_json::json;

/// `step` with `key` (a saved name or the text) sent in `x-api-key` and no cookie.
fn with_key(label: &'static str, method: &str, path: &'static str, key: &'static str) -> Step {
    Step {
        api_key: Some(key),
        ..step(label, None, method, path, None)
    }
}

pub(super) fn steps(pw: &'static str) -> Vec<Step> {
    let ak = Some("ak");
    let create = |label, body| step(label, ak, "POST", "/api-key/create", Some(body));
    vec![
        step(
            "api-key-sign-up",
            ak,
            "POST",
            "/sign-up/email",
            Some(json!({"email": "ak@compat.io", "password": pw, "name": "Key Maker"})),
        ),
        Step {
            save: vec![("ak_key", "/key"), ("ak_id", "/id")],
            ..create("api-key-create", json!({"name": "ci", "prefix": "gh_"}))
        },
        create("api-key-create-server-only", json!({"remaining": 5})),
        create("api-key-create-metadata-off", json!({"metadata": {"a": 1}})),
        create("api-key-create-long-name", json!({"name": "n".repeat(33)})),
        create("api-key-create-short-expiry", json!({"expiresIn": 60})),
        create(
            "api-key-create-long-expiry",
            json!({"expiresIn": 400 * 86_400}),
        ),
        step(
            "api-key-create-signed-out",
            None,
            "POST",
            "/api-key/create",
            Some(json!({"name": "x"})),
        ),
        step("api-key-list", ak, "GET", "/api-key/list", None),
        step("api-key-get", ak, "GET", "/api-key/get?id={ak_id}", None),
        step(
            "api-key-get-unknown",
            ak,
            "GET",
            "/api-key/get?id=nope",
            None,
        ),
        step(
            "api-key-update-name",
            ak,
            "POST",
            "/api-key/update",
            Some(json!({"keyId": "{ak_id}", "name": "ci-2"})),
        ),
        step(
            "api-key-update-nothing",
            ak,
            "POST",
            "/api-key/update",
            Some(json!({"keyId": "{ak_id}"})),
        ),
        step(
            "api-key-update-server-only",
            ak,
            "POST",
            "/api-key/update",
            Some(json!({"keyId": "{ak_id}", "remaining": 3})),
        ),
        with_key("api-key-get-session", "GET", "/get-session", "ak_key"),
        with_key("api-key-list-sessions", "GET", "/list-sessions", "ak_key"),
        with_key("api-key-short", "GET", "/get-session", "short-key"),
        with_key(
            "api-key-unknown",
            "GET",
            "/get-session",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ),
        with_key("api-key-manages-keys", "GET", "/api-key/list", "ak_key"),
        step(
            "api-key-delete",
            ak,
            "POST",
            "/api-key/delete",
            Some(json!({"keyId": "{ak_id}"})),
        ),
        step(
            "api-key-delete-again",
            ak,
            "POST",
            "/api-key/delete",
            Some(json!({"keyId": "{ak_id}"})),
        ),
        with_key("api-key-deleted", "GET", "/get-session", "ak_key"),
    ]
}
