//! The JSON bodies of the auth routes, through the whole application (middleware, parsing,
//! validation, handlers, a real SQLite file): whatever the bytes, the answer is never a 5xx and
//! an error is always the `{code, message}` body. The first byte picks the route.
#![no_main]
use gatehouse_api::config::{Config, Secret};
use gatehouse_api::AppState;
use libfuzzer_sys::fuzz_target;
use poem::{Endpoint, EndpointExt};
use std::sync::{Arc, OnceLock};

const ROUTES: &[&str] = &[
    "/api/auth/sign-up/email",
    "/api/auth/sign-in/email",
    "/api/auth/request-password-reset",
    "/api/auth/reset-password",
    "/api/auth/send-verification-email",
    "/api/auth/organization/create",
    "/api/auth/update-user",
    "/api/auth/change-password",
];

struct App {
    rt: tokio::runtime::Runtime,
    ep: poem::endpoint::BoxEndpoint<'static>,
    _dir: tempfile::TempDir,
}

fn app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: dir.path().to_owned(),
            secret: Some(Secret::new("fuzz-secret-0123456789abcdefghijklmnop")),
            ..Config::default()
        };
        config.password.argon2_memory_kib = 1024;
        config.password.argon2_iterations = 1;
        let state = rt
            .block_on(AppState::start(config, Arc::new(storage::SystemClock)))
            .unwrap();
        let ep = state.endpoint().map_to_response().boxed();
        App { rt, ep, _dir: dir }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let app = app();
    let path = ROUTES[pick as usize % ROUTES.len()];
    let req = poem::Request::builder()
        .method(poem::http::Method::POST)
        .uri_str(path)
        .header("content-type", "application/json")
        .header("origin", "http://localhost:3000")
        .body(body.to_vec());
    let (status, text) = app.rt.block_on(async {
        let resp = app.ep.call(req).await.unwrap();
        let status = resp.status();
        (status, resp.into_body().into_string().await.unwrap())
    });
    assert!(!status.is_server_error(), "{path}: {status} {text}");
    if status.is_client_error() {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["code"].is_string() && v["message"].is_string(), "{text}");
    }
});
