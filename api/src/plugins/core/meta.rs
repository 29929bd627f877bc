//! Health check and the HTML error page that redirects with `?error=` land on.
use crate::plugins::Tag;
use crate::AppState;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::{Html, Json};
use poem_openapi::{Object, OpenApi};

pub struct MetaApi;

#[derive(Debug, Object)]
struct OkResponse {
    ok: bool,
}

/// What the hosted pages need to know of this server's configuration (a Gatehouse
/// extension): nothing secret.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct PageSettings {
    /// The name the server signs its mail with (`mail.app_name`).
    app_name: String,
    email_verification: EmailVerificationSettings,
    password: PasswordRules,
    /// Codes and links by mail are offered (the server sends mail).
    by_mail: bool,
    /// The tenant's look and help (`[ui]`); absent when not configured.
    #[oai(skip_serializing_if_is_none)]
    logo_url: Option<String>,
    /// The accent colour, `#rgb` or `#rrggbb`.
    #[oai(skip_serializing_if_is_none)]
    primary_color: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    support_email: Option<String>,
    /// Where a sign-in with no `redirectTo` leads: a path here or a URL of a trusted origin.
    #[oai(skip_serializing_if_is_none)]
    home_url: Option<String>,
    /// The origins a sign-in may lead back to (a `redirectTo` of the tenant's app): the base
    /// URL's and `trusted_origins`, `*` wildcards kept (one without a scheme matches the
    /// host of any http or https origin).
    trusted_origins: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct EmailVerificationSettings {
    /// A sign-up mails a verification link at once.
    send_on_sign_up: bool,
    /// No session before the address is verified.
    required: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct PasswordRules {
    min_length: u64,
    max_length: u64,
}

#[OpenApi(tag = "Tag::Meta")]
impl MetaApi {
    /// Health check
    ///
    /// Answers `{ok: true}` while the server accepts requests.
    #[oai(path = "/ok", method = "get", operation_id = "ok")]
    async fn ok(&self) -> Json<OkResponse> {
        Json(OkResponse { ok: true })
    }

    /// Settings of the hosted pages
    ///
    /// What a sign-up or password form should tell the person before they submit (a Gatehouse
    /// extension): the app's name, whether a sign-up mails a verification link, the password
    /// rules, whether codes and links by mail are offered, the tenant's look (`[ui]`) and the
    /// origins a sign-in may lead back to. Nothing secret.
    #[oai(path = "/page-settings", method = "get", operation_id = "pageSettings")]
    async fn page_settings(&self, state: Data<&AppState>) -> Json<PageSettings> {
        let c = &state.config;
        let set = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
        Json(PageSettings {
            app_name: c.app_name().to_owned(),
            email_verification: EmailVerificationSettings {
                send_on_sign_up: c.email_verification.send_on_sign_up,
                required: c.email_verification.require_email_verification,
            },
            password: PasswordRules {
                min_length: c.password.min_length as u64,
                max_length: c.password.max_length as u64,
            },
            by_mail: state.mail.enabled(),
            logo_url: set(&c.ui.logo_url),
            primary_color: set(&c.ui.primary_color),
            support_email: set(&c.ui.support_email),
            home_url: set(&c.ui.home_url),
            trusted_origins: state.origins.patterns().to_vec(),
        })
    }

    /// Error page
    ///
    /// An HTML page showing the (escaped) error code, for flows that redirect with `?error=`.
    #[oai(path = "/error", method = "get", operation_id = "error")]
    async fn error(&self, error: Query<Option<String>>) -> Html<String> {
        Html(error_page(error.0.as_deref().unwrap_or("unknown")))
    }
}

/// `GET /health/live`: the process is up and serving.
#[poem::handler]
pub async fn live() -> poem::web::Json<serde_json::Value> {
    poem::web::Json(serde_json::json!({ "status": "live" }))
}

/// `GET /health/ready`: 200 when this process can serve — the store reachable, at this
/// build's schema and writable, the data dir writable (the secret, the outbox) — else 503;
/// the body says which check failed (never a secret: store errors name no credentials).
#[poem::handler]
pub async fn ready(state: poem::web::Data<&crate::AppState>) -> poem::Response {
    let store = match state.reader.check_health().await {
        Ok(()) => "ok".to_owned(),
        Err(e) => e.to_string(),
    };
    let dir = state.config.data_dir.clone();
    let data_dir =
        match tokio::task::spawn_blocking(move || crate::check_data_dir_writable(&dir)).await {
            Ok(Ok(())) => "ok".to_owned(),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
    let ready = store == "ok" && data_dir == "ok";
    let body = serde_json::json!({
        "status": if ready { "ready" } else { "unavailable" },
        "checks": { "store": store, "dataDir": data_dir, "mail": state.config.mail.transport },
    });
    poem::Response::builder()
        .status(if ready {
            poem::http::StatusCode::OK
        } else {
            poem::http::StatusCode::SERVICE_UNAVAILABLE
        })
        .header("cache-control", "no-store")
        .content_type("application/json")
        .body(body.to_string())
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// The error page: heading, generic message, the escaped code, and a link back to `/`.
pub fn error_page(code: &str) -> String {
    let code: String = escape(&code.chars().take(200).collect::<String>());
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in problem</title>
<style>
body {{ font-family: system-ui, sans-serif; background: #f6f7f9; color: #1d2330; display: grid; place-items: center; min-height: 100vh; margin: 0; }}
main {{ background: #fff; border: 1px solid #e3e6ea; border-radius: 10px; padding: 2rem 2.5rem; max-width: 28rem; text-align: center; }}
h1 {{ font-size: 1.4rem; margin: 0 0 .75rem; }}
code {{ background: #f0f1f4; padding: .15rem .4rem; border-radius: 4px; }}
a {{ display: inline-block; margin-top: 1.25rem; color: #fff; background: #1d2330; padding: .5rem 1rem; border-radius: 6px; text-decoration: none; }}
</style>
</head>
<body>
<main>
<h1>Something went wrong</h1>
<p>We could not complete your request. Please try again, or contact the application's support if the problem persists.</p>
<p>Error code: <code>{code}</code></p>
<a href="/">Return to Application</a>
</main>
</body>
</html>
"#
    )
}
