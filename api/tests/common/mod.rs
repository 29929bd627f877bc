//! In-process API harness: the real application endpoint on a real SQLite file in a temp dir,
//! a manual clock, and a tiny cookie-aware request helper.
#![allow(dead_code)]

use gatehouse_api::config::{Config, Secret};
use gatehouse_api::AppState;
use poem::http::{header, Method, StatusCode};
use poem::{Endpoint, EndpointExt, Request};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use storage::ManualClock;

pub const ORIGIN: &str = "http://localhost:3000";

pub struct H {
    pub state: AppState,
    pub ep: Arc<poem::endpoint::BoxEndpoint<'static>>,
    pub clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: poem::http::HeaderMap,
    pub text: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }
    /// The Set-Cookie line for a cookie name.
    pub fn set_cookie(&self, name: &str) -> Option<String> {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
    }
    /// `name=value` pairs of cookies set (not cleared) by this response, for a Cookie header.
    pub fn cookie_header(&self) -> String {
        self.set_cookies()
            .iter()
            .filter(|c| !c.contains("Max-Age=0"))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join("; ")
    }
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        self
    }
}

/// A fast-hashing test configuration; `tweak` adjusts it.
pub fn test_config(dir: &std::path::Path, tweak: impl FnOnce(&mut Config)) -> Config {
    let mut c = Config {
        data_dir: dir.to_owned(),
        secret: Some(Secret::new("test-secret-0123456789abcdefghijklmnop")),
        ..Config::default()
    };
    c.password.argon2_memory_kib = 1024;
    c.password.argon2_iterations = 1;
    c.actors.idle_timeout_ms = 5_000;
    tweak(&mut c);
    c
}

pub async fn harness_with(tweak: impl FnOnce(&mut Config)) -> H {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), tweak);
    let clock = Arc::new(ManualClock::default());
    let state = AppState::start(config, clock.clone()).await.unwrap();
    let ep = Arc::new(state.endpoint().map_to_response().boxed());
    H {
        state,
        ep,
        clock,
        _dir: dir,
    }
}

pub async fn harness() -> H {
    harness_with(|_| {}).await
}

impl H {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Resp {
        call(&self.ep, method, path, body, cookie, extra).await
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        self.call(Method::GET, path, None, cookie, &[]).await
    }

    /// A POST as a browser on the trusted origin sends it.
    pub async fn post(&self, path: &str, body: Value, cookie: Option<&str>) -> Resp {
        self.call(
            Method::POST,
            path,
            Some(body),
            cookie,
            &[("origin", ORIGIN)],
        )
        .await
    }

    pub async fn sign_up(&self, email: &str, password: &str) -> Resp {
        self.post(
            "/api/auth/sign-up/email",
            serde_json::json!({"name": "Test User", "email": email, "password": password}),
            None,
        )
        .await
        .expect(200)
    }

    pub async fn sign_in(&self, email: &str, password: &str) -> Resp {
        self.post(
            "/api/auth/sign-in/email",
            serde_json::json!({"email": email, "password": password}),
            None,
        )
        .await
    }

    pub async fn session(&self, cookie: &str) -> Value {
        self.get("/api/auth/get-session", Some(cookie))
            .await
            .expect(200)
            .json()
    }
}

pub async fn call(
    ep: &poem::endpoint::BoxEndpoint<'static>,
    method: Method,
    path: &str,
    body: Option<Value>,
    cookie: Option<&str>,
    extra: &[(&str, &str)],
) -> Resp {
    let mut b = Request::builder().method(method).uri_str(path);
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    let req = match body {
        Some(v) => b
            .header(header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&v).unwrap()),
        None => b.finish(),
    };
    let resp = ep.call(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.into_body().into_string().await.unwrap();
    Resp {
        status,
        headers,
        text,
    }
}

/// Parses `a=b; c=d` into a map.
pub fn parse_cookie_header(h: &str) -> HashMap<String, String> {
    h.split("; ")
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Every message in the outbox, oldest first.
pub fn outbox(h: &H) -> Vec<Value> {
    let dir = h.state.config.data_dir.join("outbox");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    files
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// The newest message of `kind` to `to`.
pub fn last_mail(h: &H, kind: &str, to: &str) -> Option<Value> {
    outbox(h)
        .into_iter()
        .rfind(|m| m["kind"] == kind && m["to"] == to)
}

/// The path and query of a link the server mailed (its base URL removed).
pub fn link_path(h: &H, mail: &Value) -> String {
    let link = mail["link"].as_str().unwrap();
    link.strip_prefix(&h.state.config.base_url)
        .unwrap_or_else(|| panic!("link {link} not on the base URL"))
        .to_owned()
}

/// The token of a mailed reset link (`…/reset-password/{token}?callbackURL=…`).
pub fn reset_token_of(mail: &Value) -> String {
    let link = mail["link"].as_str().unwrap();
    let after = link.split("/reset-password/").nth(1).unwrap();
    after.split('?').next().unwrap().to_owned()
}

/// A user without any account (as a social sign-up leaves one), written straight to the store.
pub async fn store_user(h: &H, email: &str) -> storage::User {
    let now = storage::Clock::now(&*h.clock);
    let u = storage::User {
        id: storage::UserId::generate(),
        email: email.into(),
        email_verified: true,
        name: "Stored".into(),
        image: None,
        role: None,
        banned: false,
        ban_reason: None,
        ban_expires: None,
        created_at: now,
        updated_at: now,
    };
    h.state.store.create_user(&u, None).await.unwrap();
    u
}
