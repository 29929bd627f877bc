//! HTTP plumbing: cookies (names, parsing, `Set-Cookie`), trusted origins and redirect-target
//! checks, the body limit, and the middleware that applies them. Cookies are in `cookies.rs`.
mod cookies;

use crate::client::ClientAddr;
pub use crate::client::{client_addr, client_ip, user_agent, RequestId, REQUEST_ID_HEADER};

use crate::error::{ApiError, Code};
use crate::AppState;
use percent_encoding::{percent_decode_str, AsciiSet, NON_ALPHANUMERIC};
use poem::http::{header, Method};
use poem::{Endpoint, IntoResponse, Request, Response};

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

pub use cookies::*;

/// Origins the server trusts: its own and the configured ones (with `*` wildcards).
#[derive(Debug, Clone)]
pub struct TrustedOrigins {
    patterns: Vec<String>,
    /// The base URL, against which relative redirect targets are resolved.
    base: Option<url::Url>,
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
        Self {
            patterns,
            base: url::Url::parse(base_url).ok(),
        }
    }

    /// The trusted origins as matched: the base URL's, then the configured ones, normalized
    /// (`*` wildcards kept; one without a scheme matches the host of any http(s) origin).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether an absolute URL's origin is trusted.
    pub fn is_trusted_url(&self, url: &str) -> bool {
        // An `Origin` header as browsers send it is already a serialized origin: equal to an
        // exact pattern (each one is normalized), parsing it would give itself.
        if self.patterns.iter().any(|p| !p.contains('*') && p == url) {
            return true;
        }
        let Some(origin) = origin_of(url) else {
            return false;
        };
        self.is_trusted_origin(&origin)
    }

    fn is_trusted_origin(&self, origin: &str) -> bool {
        self.patterns.iter().any(|p| {
            if p.contains('*') {
                // A pattern without a scheme matches the host part of any http(s) origin.
                let target = if p.contains("://") {
                    origin
                } else {
                    origin.split_once("://").map_or(origin, |(_, h)| h)
                };
                glob(p.as_bytes(), target.as_bytes())
            } else {
                *p == origin
            }
        })
    }

    /// The normalized form of a redirect target when it is safe: a relative path resolved
    /// against the base URL (dot segments removed, characters encoded, and still on the base
    /// origin) and written as `path?query#fragment`, or an absolute http(s) URL of a trusted
    /// origin without credentials, as the `url` crate serializes it. Control characters
    /// (browsers drop CR, LF and TAB inside URLs), backslashes (`/\host`, `\@`), surrounding
    /// whitespace and protocol-relative `//host` forms are refused. Only the returned string
    /// is ever redirected to.
    pub fn normalize_redirect(&self, target: &str) -> Option<String> {
        // The cap holds for what is redirected to: encoding can lengthen a target.
        self.normalize_unbounded(target)
            .filter(|normal| normal.len() <= MAX_URL_LEN)
    }

    fn normalize_unbounded(&self, target: &str) -> Option<String> {
        if target.is_empty()
            || target.len() > MAX_URL_LEN
            || target.trim() != target
            || target.chars().any(|c| c.is_control() || c == '\\')
        {
            return None;
        }
        if target.starts_with('/') {
            if !is_safe_relative(target) {
                return None;
            }
            let base = self.base.as_ref()?;
            let joined = base.join(target).ok()?;
            if joined.origin() != base.origin() {
                return None;
            }
            let mut out = joined.path().to_owned();
            if let Some(q) = joined.query() {
                out.push('?');
                out.push_str(q);
            }
            if let Some(f) = joined.fragment() {
                out.push('#');
                out.push_str(f);
            }
            // Resolution must not have produced a protocol-relative path either.
            return is_safe_relative(&out).then_some(out);
        }
        let u = url::Url::parse(target).ok()?;
        if !matches!(u.scheme(), "http" | "https")
            || !u.username().is_empty()
            || u.password().is_some()
        {
            return None;
        }
        let origin = match u.origin() {
            o @ url::Origin::Tuple(..) => o.ascii_serialization(),
            url::Origin::Opaque(_) => return None,
        };
        self.is_trusted_origin(&origin).then(|| u.to_string())
    }

    /// A redirect target is fine when it is a safe relative path or a trusted absolute URL.
    pub fn is_safe_redirect(&self, target: &str) -> bool {
        self.normalize_redirect(target).is_some()
    }

    /// Checks a redirect target from a request: its normalized form (see
    /// [`TrustedOrigins::normalize_redirect`]), `None` when absent or empty, 403 with `code`
    /// when it is not safe.
    pub fn redirect_target(
        &self,
        target: Option<&str>,
        code: Code,
    ) -> Result<Option<String>, ApiError> {
        match target {
            None | Some("") => Ok(None),
            Some(t) => self
                .normalize_redirect(t)
                .map(Some)
                .ok_or_else(|| ApiError::new(code)),
        }
    }
}

/// The longest redirect target accepted (browsers and proxies cut URLs around 2 KB–8 KB).
pub const MAX_URL_LEN: usize = 2048;

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

/// The outer middleware of every route: the request id, rate limits (API routes), body limit,
/// origin check, pending cookies, the mapping of any error to the wire format, CORS and
/// `Cache-Control`, and the request's metrics.
pub async fn middleware<E: Endpoint>(next: E, mut req: Request) -> poem::Result<Response> {
    let Some(state) = req.data::<AppState>().cloned() else {
        return Ok(ApiError::internal("app state missing").into_response());
    };
    let request_id = RequestId::of(&req);
    req.extensions_mut().insert(request_id.clone());
    // Worked out once here, read by the limiter, sign-in, mail limits and new sessions.
    let client = ClientAddr(forwarded_client(&req, &state));
    req.extensions_mut().insert(client);
    let cookies = RequestCookies::parse(&req, &state.cookies);
    req.extensions_mut().insert(cookies);
    // Only the path is recorded (queries may carry tokens, headers carry cookies), with the
    // token segment of a reset link masked; every line of the request carries its id.
    let span = tracing::info_span!("request", id = %request_id.0, method = %req.method(), path = %loggable_path(req.uri().path()));
    let started = std::time::Instant::now();
    let cors_origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| state.origins.is_trusted_url(o))
        .map(str::to_owned);
    let cacheable = is_document(req.uri().path());
    // The API route's template, looked up once for the limiter's key and the metrics' label.
    let template = req
        .uri()
        .path()
        .strip_prefix(crate::BASE_PATH)
        .and_then(|p| state.limiter.routes().template(p));
    let route = route_label(req.uri().path(), template);
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let mut resp =
        tracing::Instrument::instrument(handle(next, req, &state, template), span.clone()).await;
    let status = resp.status();
    state
        .metrics
        .requests
        .with_label_values(&[route, method, status.as_str()])
        .inc();
    state
        .metrics
        .latency
        .with_label_values(&[route])
        .observe(started.elapsed().as_secs_f64());
    if let Ok(v) = header::HeaderValue::from_str(&request_id.0) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    if let Some(origin) = cors_origin {
        add_cors(&mut resp, &origin);
    }
    // Answers carry sessions, users, tokens and cookies: no browser or proxy may keep them.
    if !cacheable && !resp.headers().contains_key(header::CACHE_CONTROL) {
        resp.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
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

async fn handle<E: Endpoint>(
    next: E,
    mut req: Request,
    state: &AppState,
    template: Option<&str>,
) -> Response {
    if req.method() == Method::OPTIONS {
        // CORS preflight: headers are added by the caller for trusted origins only.
        return Response::builder()
            .status(poem::http::StatusCode::NO_CONTENT)
            .finish();
    }
    if let (Some(path), Some(ip)) = (
        req.uri().path().strip_prefix(crate::BASE_PATH),
        client_addr(&req).filter(|_| state.limiter.enabled()),
    ) {
        let counted = state
            .limiter
            .request(path, template, ip, state.clock.now())
            .await;
        if let Err(e) = crate::rate_limit::Limiter::refused(&req, counted, &state.audit).await {
            tracing::info!("rate limited");
            return e.into_response();
        }
    }
    let body_timeout = std::time::Duration::from_millis(state.config.server.body_read_timeout_ms);
    let body = match limit_body(&mut req, state.config.max_body_bytes, body_timeout).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = check_origin(&req, state) {
        return e.into_response();
    }
    let cookies = PendingCookies::default();
    req.extensions_mut().insert(cookies.clone());
    // Kept for error reporting: both clones only bump reference counts.
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let mut resp = match next.call(req).await {
        Ok(r) => r.into_response(),
        Err(e) => {
            let asked = crate::error::Asked {
                method: method.as_str(),
                path: uri.path(),
                body: body.as_deref(),
            };
            crate::error::from_poem_error(&e, &asked).into_response()
        }
    };
    for c in cookies.take() {
        if let Ok(v) = header::HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

/// What a request is labelled as in metrics: its API route's `template` (`/callback/:id`),
/// `other` for anything else under the API, the health route, or `ui` for the hosted pages.
fn route_label<'a>(path: &str, template: Option<&'a str>) -> &'a str {
    match template {
        Some(t) => t,
        None if path.starts_with(crate::BASE_PATH) => "other",
        None if path == "/health/live" => "/health/live",
        None if path == "/health/ready" => "/health/ready",
        None => "ui",
    }
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
        header::HeaderValue::from_static("content-type, authorization, x-request-id"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        header::HeaderValue::from_static("600"),
    );
    h.append(header::VARY, header::HeaderValue::from_static("Origin"));
}

/// The OpenAPI document and its browsable reference: public, the same for everyone.
fn is_document(path: &str) -> bool {
    path.strip_prefix(crate::BASE_PATH)
        .is_some_and(|p| p == "/openapi.json" || p.starts_with("/reference"))
}

/// The request path as it may appear in logs: path segments that are tokens are masked.
fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    const TOKEN_PREFIX: &str = "/api/auth/reset-password/";
    match path.strip_prefix(TOKEN_PREFIX) {
        Some(rest) if !rest.is_empty() => format!("{TOKEN_PREFIX}{{token}}").into(),
        _ => path.into(),
    }
}

/// Reads the body up to the limit (also for chunked bodies without a length): 413 past it,
/// 408 when it does not arrive within `timeout` (a client trickling its body). Puts it back
/// and answers it too, for error reporting (`None` for a bodiless GET).
async fn limit_body(
    req: &mut Request,
    max: usize,
    timeout: std::time::Duration,
) -> Result<Option<bytes::Bytes>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(ApiError::new(Code::PayloadTooLarge));
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) && declared.is_none() {
        return Ok(None);
    }
    let body = req.take_body();
    let bytes = tokio::time::timeout(timeout, body.into_bytes_limit(max))
        .await
        .map_err(|_| ApiError::new(Code::RequestTimeout))?
        .map_err(|e| match e {
            poem::error::ReadBodyError::PayloadTooLarge => ApiError::new(Code::PayloadTooLarge),
            other => ApiError::validation(false, vec![other.to_string()]),
        })?;
    if json_depth(&bytes) > MAX_JSON_DEPTH {
        return Err(ApiError::validation(
            false,
            vec![format!("body: nested deeper than {MAX_JSON_DEPTH} levels")],
        ));
    }
    req.set_body(bytes.clone());
    Ok(Some(bytes))
}

/// The deepest nesting of arrays and objects a JSON body may have (no route needs more than a
/// few levels; deep nesting only costs the parser).
pub const MAX_JSON_DEPTH: usize = 32;

/// How deeply `[`/`{` nest in a JSON text (brackets inside strings do not count). Cheap and
/// tolerant: it runs before parsing, which reports malformed bodies itself.
fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// DESIGN §5: a state-changing request from a browser must come from a trusted origin —
/// one that carries cookies, and also one without cookies that a browser sent (it has an
/// `Origin` or `Sec-Fetch-*` header): otherwise another site could sign a visitor in to the
/// attacker's account (login CSRF), sign up or request mail in their name. Calls from back ends
/// (no cookies, no browser headers) are not browsers' and pass. A provider's `form_post` to its
/// callback comes from the provider's origin by design and carries no cookies (`SameSite=Lax`).
fn check_origin(req: &Request, state: &AppState) -> Result<(), ApiError> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let h = req.headers();
    if h.get(header::COOKIE).is_none() {
        let browser = h.contains_key(header::ORIGIN)
            || ["sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest"]
                .iter()
                .any(|n| h.contains_key(*n));
        let provider_callback = req
            .uri()
            .path()
            .strip_prefix(crate::BASE_PATH)
            .is_some_and(|p| p.starts_with("/callback/"));
        if !browser || provider_callback {
            return Ok(());
        }
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

/// A request's client address, as [`middleware`] worked it out.
fn forwarded_client(req: &Request, state: &AppState) -> Option<std::net::IpAddr> {
    let peer = req.remote_addr().as_socket_addr().map(|a| a.ip());
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    crate::rate_limit::client_address(
        peer,
        header("x-forwarded-for"),
        header("x-real-ip"),
        state.config.trust_proxy,
        &state.proxies,
    )
}

#[cfg(test)]
mod tests;
