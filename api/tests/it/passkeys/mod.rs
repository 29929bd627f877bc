//! Passkeys through HTTP with a software authenticator built here (ES256, 'none' attestation,
//! as WebAuthn Level 2 lays out its bytes): registration, sign-in with the passkey alone, and
//! each refusal — a replayed assertion, another origin, an unknown credential, a counter
//! going back, a challenge used twice or expired, malformed answers — plus two processes,
//! a raced assertion, the last way to sign in, and no second factor after a passkey.

mod ceremonies;
mod processes;
mod refusals;
use crate::authenticator::{b64, rand_id, Authenticator};
use crate::common::*;
use futures::future::join_all;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

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
