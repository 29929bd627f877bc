//! HTTP plumbing: cookies (names, parsing, `Set-Cookie`), trusted origins and redirect-target
//! checks, the body limit, and the middleware that applies them.
use crate::error::{ApiError, Code};
use crate::AppState;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use poem::http::{header, Method};
use poem::{Endpoint, IntoResponse, Request, Response};
use std::sync::{Arc, Mutex};

/// What JavaScript's `encodeURIComponent` leaves alone; better-auth encodes cookie values so.
pub(crate) const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The server's cookie names and attributes.
#[derive(Debug, Clone)]
pub struct CookieNames {
    pub session_token: String,
    pub session_data: String,
    pub dont_remember: String,
    secure: bool,
}

/// Cookie `Max-Age` never exceeds 400 days (browsers cap it there; so does better-auth).
pub const MAX_COOKIE_AGE: u64 = 400 * 86400;

impl CookieNames {
    pub fn new(prefix: &str, secure: bool) -> Self {
        let p = if secure { "__Secure-" } else { "" };
        Self {
            session_token: format!("{p}{prefix}.session_token"),
            session_data: format!("{p}{prefix}.session_data"),
            dont_remember: format!("{p}{prefix}.dont_remember"),
            secure,
        }
    }

    /// A `Set-Cookie` value; `max_age: None` makes a browser-session cookie.
    pub fn set(&self, name: &str, value: &str, max_age: Option<u64>) -> String {
        let mut c = format!("{name}={}", utf8_percent_encode(value, URI_COMPONENT));
        if let Some(age) = max_age {
            c.push_str(&format!("; Max-Age={}", age.min(MAX_COOKIE_AGE)));
        }
        c.push_str("; Path=/; HttpOnly; SameSite=Lax");
        if self.secure {
            c.push_str("; Secure");
        }
        c
    }

    /// The three `Set-Cookie` values that end a session in the browser.
    pub fn clear_all(&self) -> Vec<String> {
        [&self.session_token, &self.session_data, &self.dont_remember]
            .into_iter()
            .map(|n| self.set(n, "", Some(0)))
            .collect()
    }
}

/// The request's cookies by name (values percent-decoded). Malformed pairs are skipped.
pub fn request_cookie(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| percent_decode_str(v.trim_matches('"')).decode_utf8().ok())
        .map(|v| v.into_owned())
}

/// `Set-Cookie` values a handler or extractor wants on the response; the cookie middleware
/// appends them, so an extractor (e.g. a session refresh) can set cookies too.
#[derive(Clone, Default)]
pub struct PendingCookies(Arc<Mutex<Vec<String>>>);

impl PendingCookies {
    pub fn push(&self, cookies: impl IntoIterator<Item = String>) {
        if let Ok(mut v) = self.0.lock() {
            v.extend(cookies);
        }
    }
    fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

impl<'a> poem::FromRequest<'a> for &'a PendingCookies {
    async fn from_request(req: &'a Request, _: &mut poem::RequestBody) -> poem::Result<Self> {
        req.extensions()
            .get::<PendingCookies>()
            .ok_or_else(|| ApiError::internal("cookie middleware missing").into())
    }
}

/// Origins the server trusts: its own and the configured ones (with `*` wildcards).
#[derive(Debug, Clone)]
pub struct TrustedOrigins {
    patterns: Vec<String>,
}

impl TrustedOrigins {
    pub fn new(base_url: &str, extra: &[String]) -> Self {
        let mut patterns = Vec::new();
        if let Some(o) = origin_of(base_url) {
            patterns.push(o);
        }
        for e in extra {
            let e = e.trim().trim_end_matches('/');
            if e.is_empty() {
                continue;
            }
            patterns.push(if e.contains('*') {
                e.to_ascii_lowercase()
            } else {
                origin_of(e).unwrap_or_else(|| e.to_ascii_lowercase())
            });
        }
        Self { patterns }
    }

    /// Whether an absolute URL's origin is trusted.
    pub fn is_trusted_url(&self, url: &str) -> bool {
        let Some(origin) = origin_of(url) else {
            return false;
        };
        self.patterns.iter().any(|p| {
            if p.contains('*') {
                // A pattern without a scheme matches the host part of any http(s) origin.
                let target = if p.contains("://") {
                    origin.as_str()
                } else {
                    origin.split_once("://").map_or(origin.as_str(), |(_, h)| h)
                };
                glob(p.as_bytes(), target.as_bytes())
            } else {
                *p == origin
            }
        })
    }

    /// A redirect target is fine when it is a safe relative path or a trusted absolute URL.
    pub fn is_safe_redirect(&self, target: &str) -> bool {
        if target.starts_with('/') {
            return is_safe_relative(target);
        }
        self.is_trusted_url(target)
    }

    /// Checks a redirect target from a request, answering 403 with `code` when it fails.
    pub fn check_redirect(&self, target: Option<&str>, code: Code) -> Result<(), ApiError> {
        match target {
            Some(t) if !t.is_empty() && !self.is_safe_redirect(t) => Err(ApiError::new(code)),
            _ => Ok(()),
        }
    }
}

/// `scheme://host[:port]`, lowercased, for http(s) URLs.
fn origin_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    match u.origin() {
        o @ url::Origin::Tuple(..) => Some(o.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// `/path` but never `//host`, `/\host`, or their percent-encoded or control-character forms,
/// which browsers may treat as another origin.
fn is_safe_relative(path: &str) -> bool {
    let Ok(decoded) = percent_decode_str(path).decode_utf8() else {
        return false;
    };
    // Decode twice: `%255C` is `%5C` after one round.
    let twice = percent_decode_str(&decoded)
        .decode_utf8()
        .map(|s| s.into_owned())
        .unwrap_or_else(|_| decoded.to_string());
    [path, &*decoded, &*twice].iter().all(|p| {
        let rest = &p[1..];
        p.starts_with('/')
            && !rest.starts_with('/')
            && !rest.starts_with('\\')
            && !p.chars().any(|c| c.is_control() || c == '\\')
    })
}

/// `*` matches any run of characters, `?` exactly one.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t, mut star, mut mark) = (0, 0, None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The outer middleware of every route: body limit, origin check, pending cookies, and the
/// mapping of any error to the wire format.
pub async fn middleware<E: Endpoint>(next: E, req: Request) -> poem::Result<Response> {
    let Some(state) = req.data::<AppState>().cloned() else {
        return Ok(ApiError::internal("app state missing").into_response());
    };
    // Only the path is recorded (queries may carry tokens, headers carry cookies), with the
    // token segment of a reset link masked.
    let span = tracing::info_span!("request", method = %req.method(), path = %loggable_path(req.uri().path()));
    let started = std::time::Instant::now();
    let cors_origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| state.origins.is_trusted_url(o))
        .map(str::to_owned);
    let mut resp = tracing::Instrument::instrument(handle(next, req, &state), span.clone()).await;
    if let Some(origin) = cors_origin {
        add_cors(&mut resp, &origin);
    }
    span.in_scope(|| {
        tracing::debug!(
            status = resp.status().as_u16(),
            micros = started.elapsed().as_micros() as u64,
            "answered"
        );
    });
    Ok(resp)
}

async fn handle<E: Endpoint>(next: E, mut req: Request, state: &AppState) -> Response {
    if req.method() == Method::OPTIONS {
        // CORS preflight: headers are added by the caller for trusted origins only.
        return Response::builder()
            .status(poem::http::StatusCode::NO_CONTENT)
            .finish();
    }
    if let Err(e) = limit_body(&mut req, state.config.max_body_bytes).await {
        return e.into_response();
    }
    if let Err(e) = check_origin(&req, state) {
        return e.into_response();
    }
    let cookies = PendingCookies::default();
    req.extensions_mut().insert(cookies.clone());
    let mut resp = match next.call(req).await {
        Ok(r) => r.into_response(),
        Err(e) => crate::error::from_poem_error(&e).into_response(),
    };
    for c in cookies.take() {
        if let Ok(v) = header::HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

/// Lets a browser app on a trusted origin call the API with its cookies.
fn add_cors(resp: &mut Response, origin: &str) {
    let h = resp.headers_mut();
    if let Ok(v) = header::HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
        header::HeaderValue::from_static("true"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        header::HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        header::HeaderValue::from_static("content-type, authorization"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        header::HeaderValue::from_static("600"),
    );
    h.append(header::VARY, header::HeaderValue::from_static("Origin"));
}

/// The request path as it may appear in logs: path segments that are tokens are masked.
fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    const TOKEN_PREFIX: &str = "/api/auth/reset-password/";
    match path.strip_prefix(TOKEN_PREFIX) {
        Some(rest) if !rest.is_empty() => format!("{TOKEN_PREFIX}{{token}}").into(),
        _ => path.into(),
    }
}

/// Reads the body up to the limit (also for chunked bodies without a length): 413 past it.
async fn limit_body(req: &mut Request, max: usize) -> Result<(), ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(ApiError::new(Code::PayloadTooLarge));
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) && declared.is_none() {
        return Ok(());
    }
    let body = req.take_body();
    let bytes = body.into_bytes_limit(max).await.map_err(|e| match e {
        poem::error::ReadBodyError::PayloadTooLarge => ApiError::new(Code::PayloadTooLarge),
        other => ApiError::validation(false, vec![other.to_string()]),
    })?;
    req.set_body(bytes);
    Ok(())
}

/// DESIGN §5: a state-changing request that carries cookies must come from a trusted origin.
fn check_origin(req: &Request, state: &AppState) -> Result<(), ApiError> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    if req.headers().get(header::COOKIE).is_none() {
        return Ok(());
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .or_else(|| req.headers().get(header::REFERER))
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && *v != "null");
    match origin {
        None => Err(ApiError::new(Code::MissingOrNullOrigin)),
        Some(o) if state.origins.is_trusted_url(o) => Ok(()),
        Some(_) => Err(ApiError::new(Code::InvalidOrigin)),
    }
}

/// The client's address: the socket peer, or — only when `trust_proxy` is configured, i.e. a
/// reverse proxy sets these headers — the first `X-Forwarded-For` entry or `X-Real-IP`.
pub fn client_ip(req: &Request) -> Option<String> {
    let trust_proxy = req.data::<AppState>().is_some_and(|s| s.config.trust_proxy);
    if trust_proxy {
        let forwarded = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .or_else(|| req.headers().get("x-real-ip").and_then(|v| v.to_str().ok()))
            .and_then(|v| v.trim().parse::<std::net::IpAddr>().ok());
        if let Some(ip) = forwarded {
            return Some(ip.to_string());
        }
    }
    req.remote_addr()
        .as_socket_addr()
        .map(|a| a.ip().to_string())
}

pub fn user_agent(req: &Request) -> Option<String> {
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(512).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_targets() {
        let t = TrustedOrigins::new(
            "http://localhost:3000",
            &[
                "https://app.example.com".into(),
                "https://*.trusted.dev".into(),
            ],
        );
        for ok in [
            "/dashboard",
            "/a/b?c=d#e",
            "http://localhost:3000/x",
            "https://app.example.com/cb",
            "https://x.trusted.dev/y",
        ] {
            assert!(t.is_safe_redirect(ok), "{ok}");
        }
        for bad in [
            "//evil.com",
            "/\\evil.com",
            "/%5Cevil.com",
            "/%2F/evil.com",
            "/%255Cevil.com",
            "https://evil.com/x",
            "https://app.example.com.evil.com/",
            "http://app.example.com/",
            "javascript:alert(1)",
            "evil.com",
            "/a\nb",
            "https://trusted.dev.evil.com/",
        ] {
            assert!(!t.is_safe_redirect(bad), "{bad}");
        }
    }

    #[test]
    fn token_paths_are_masked_in_logs() {
        assert_eq!(
            loggable_path("/api/auth/reset-password/abc123"),
            "/api/auth/reset-password/{token}"
        );
        assert_eq!(
            loggable_path("/api/auth/reset-password"),
            "/api/auth/reset-password"
        );
        assert_eq!(
            loggable_path("/api/auth/get-session"),
            "/api/auth/get-session"
        );
    }

    #[test]
    fn glob_matches() {
        assert!(glob(b"https://*.a.com", b"https://x.a.com"));
        assert!(!glob(b"https://*.a.com", b"https://x.b.com"));
        assert!(glob(b"*", b"anything"));
        assert!(glob(b"a?c", b"abc"));
    }

    #[test]
    fn cookie_format() {
        let n = CookieNames::new("gatehouse", false);
        assert_eq!(
            n.set(&n.session_token, "abc.d+/=", Some(10)),
            "gatehouse.session_token=abc.d%2B%2F%3D; Max-Age=10; Path=/; HttpOnly; SameSite=Lax"
        );
        let s = CookieNames::new("gatehouse", true);
        assert_eq!(s.session_token, "__Secure-gatehouse.session_token");
        assert!(s
            .set(&s.session_token, "v", Some(u64::MAX))
            .contains("Max-Age=34560000;"));
        assert!(s.set(&s.session_token, "v", None).ends_with("; Secure"));
    }
}
