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
    /// The signed state of a social sign-in in progress.
    pub state: String,
    /// While an admin impersonates a user: the admin's own session token (signed).
    pub admin_session: String,
    /// What every name above starts with (the prefix, with `__Secure-` on https).
    lead: String,
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
            state: format!("{p}{prefix}.state"),
            admin_session: format!("{p}{prefix}.admin_session"),
            lead: format!("{p}{prefix}."),
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
    raw_cookie(req, name).and_then(|v| {
        // Signed values are base64 and dots: most have nothing to decode.
        if !v.contains('%') {
            return Some(v.to_owned());
        }
        percent_decode_str(v)
            .decode_utf8()
            .ok()
            .map(|v| v.into_owned())
    })
}

/// A cookie's value exactly as the request carries it (not decoded).
pub fn raw_cookie<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    raw_cookies(req, [name])[0]
}

/// Several cookies' values exactly as the request carries them: from the server's cookies the
/// middleware parsed once ([`RequestCookies`]), else in one pass over the header.
pub fn raw_cookies<'a, const N: usize>(req: &'a Request, names: [&str; N]) -> [Option<&'a str>; N] {
    let mut found = [None; N];
    if let Some(parsed) = req.extensions().get::<RequestCookies>() {
        for (i, name) in names.iter().enumerate() {
            found[i] = parsed.get(name);
        }
        return found;
    }
    for (k, v) in cookie_pairs(req) {
        if let Some(i) = names.iter().position(|n| *n == k) {
            // The first of a name wins, as for one cookie.
            found[i].get_or_insert(v);
        }
    }
    found
}

/// Every `name=value` of the request's `Cookie` headers, in order (quotes dropped).
fn cookie_pairs(req: &Request) -> impl Iterator<Item = (&str, &str)> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(k, v)| (k, v.trim_matches('"')))
}

/// The server's own cookies of a request (names with its prefix), parsed once by the
/// middleware: every later look-up (the session, the cookie cache, `dont_remember`, the
/// admin's session) reads them here instead of scanning the header again.
#[derive(Debug, Clone, Default)]
pub struct RequestCookies(Vec<(Box<str>, Box<str>)>);

impl RequestCookies {
    pub fn parse(req: &Request, names: &CookieNames) -> Self {
        let mut out: Vec<(Box<str>, Box<str>)> = Vec::new();
        for (k, v) in cookie_pairs(req) {
            // The first of a name wins, as for one cookie.
            if k.starts_with(&names.lead) && !out.iter().any(|(n, _)| &**n == k) {
                out.push((k.into(), v.into()));
            }
        }
        Self(out)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| &**n == name).map(|(_, v)| &**v)
    }
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

pub const REQUEST_ID_HEADER: header::HeaderName = header::HeaderName::from_static("x-request-id");

/// The id of a request: the caller's `X-Request-Id` when it is a sane one (1–128 characters
/// of letters, digits and `-_.:`, as proxies and tracing systems make them), else a new one.
/// Answered in `X-Request-Id` and written on every log line of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    fn of(req: &Request) -> Self {
        let given = req
            .headers()
            .get(REQUEST_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| {
                (1..=128).contains(&v.len())
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
            });
        Self(given.map_or_else(|| storage::random_string(24), str::to_owned))
    }
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
#[derive(Debug, Clone, Copy)]
struct ClientAddr(Option<std::net::IpAddr>);

/// The client's address: the socket peer, or — with `trust_proxy`, when the peer is one of
/// `trusted_proxies` — the address its proxies forwarded (see [`crate::rate_limit`]).
pub fn client_addr(req: &Request) -> Option<std::net::IpAddr> {
    if let Some(ClientAddr(ip)) = req.extensions().get::<ClientAddr>() {
        return *ip;
    }
    match req.data::<AppState>() {
        Some(state) => forwarded_client(req, state),
        None => req.remote_addr().as_socket_addr().map(|a| a.ip()),
    }
}

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

/// [`client_addr`] as text, as sessions store it.
pub fn client_ip(req: &Request) -> Option<String> {
    client_addr(req).map(|ip| ip.to_string())
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
    fn raw_cookies_finds_each_name_once_in_one_pass() {
        let req = Request::builder()
            .header(header::COOKIE, "a=1; b=\"2\"; a=3")
            .header(header::COOKIE, "c=4;d")
            .finish();
        assert_eq!(
            raw_cookies(&req, ["c", "a", "b", "z"]),
            [Some("4"), Some("1"), Some("2"), None]
        );
        assert_eq!(raw_cookie(&req, "a"), Some("1"));
        assert_eq!(raw_cookie(&req, "d"), None);
        assert_eq!(raw_cookies(&Request::default(), ["a"]), [None]);
    }

    /// The middleware's parse keeps the server's cookies only, the first of a name, and every
    /// look-up after it reads that (the same answers as a scan of the header).
    #[test]
    fn the_servers_cookies_are_parsed_once() {
        let names = CookieNames::new("gh", false);
        let mut req = Request::builder()
            .header(
                header::COOKIE,
                "app=1; gh.session_token=t1; gh.session_data=\"d\"",
            )
            .header(header::COOKIE, "gh.session_token=t2; other.session_token=x")
            .finish();
        let parsed = RequestCookies::parse(&req, &names);
        assert_eq!(parsed.0.len(), 2, "{parsed:?}");
        let scanned = raw_cookies(&req, ["gh.session_token", "gh.session_data", "app"]);
        assert_eq!(scanned, [Some("t1"), Some("d"), Some("1")]);
        req.extensions_mut().insert(parsed);
        assert_eq!(
            raw_cookies(&req, ["gh.session_token", "gh.session_data", "app"]),
            [Some("t1"), Some("d"), None],
            "only the server's own cookies are kept"
        );
        // Once parsed, the header is not read again: a header changed afterwards is not seen.
        req.headers_mut().remove(header::COOKIE);
        assert_eq!(raw_cookie(&req, "gh.session_token"), Some("t1"));
    }

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
            "http://localhost:3000/\r\nSet-Cookie: x=y",
            "http://localhost:3000\\@evil.com",
            "https://app.example.com\\@evil.com/",
            "https://app.example.com@evil.com/",
            "https://user:pw@app.example.com/",
            "/\t/evil.com",
            " /dashboard",
            "/dashboard ",
            "/a/../..//evil.com",
            "/%09/evil.com",
        ] {
            assert!(!t.is_safe_redirect(bad), "{bad:?}");
        }
        let long = format!("/{}", "a".repeat(MAX_URL_LEN));
        assert!(!t.is_safe_redirect(&long));
        // Short enough as sent, too long once encoded (found by the fuzzer).
        let grows = format!("/{}", " ".repeat(MAX_URL_LEN / 2));
        assert!(grows.len() <= MAX_URL_LEN);
        assert!(!t.is_safe_redirect(&grows));
    }

    #[test]
    fn origins_as_sent_and_as_written() {
        let t = TrustedOrigins::new(
            "http://localhost:3000",
            &["https://app.example.com".into(), "*.trusted.dev".into()],
        );
        for ok in [
            "http://localhost:3000",
            "https://app.example.com",
            "HTTPS://APP.example.com:443",
            "https://app.example.com/cb",
            "https://x.trusted.dev",
        ] {
            assert!(t.is_trusted_url(ok), "{ok}");
        }
        for bad in [
            "http://localhost:3001",
            "https://app.example.com.evil.com",
            "http://app.example.com",
            "null",
            "",
            "https://trusted.dev.evil.com",
        ] {
            assert!(!t.is_trusted_url(bad), "{bad}");
        }
    }

    #[test]
    fn cookies_are_found_and_decoded() {
        let req = Request::builder()
            .header(header::COOKIE, "a=1; ba.x=%22q%22; c=\"v.w\"; d=%FF")
            .finish();
        assert_eq!(request_cookie(&req, "a").as_deref(), Some("1"));
        assert_eq!(request_cookie(&req, "ba.x").as_deref(), Some("\"q\""));
        assert_eq!(request_cookie(&req, "c").as_deref(), Some("v.w"));
        assert_eq!(request_cookie(&req, "d"), None, "not UTF-8 once decoded");
        assert_eq!(request_cookie(&req, "b"), None);
    }

    #[test]
    fn redirect_targets_are_normalized() {
        let t = TrustedOrigins::new("http://localhost:3000", &["https://app.example.com".into()]);
        for (given, normal) in [
            ("/a/../b?x=1#f", "/b?x=1#f"),
            ("/a b/ü", "/a%20b/%C3%BC"),
            ("/dashboard", "/dashboard"),
            (
                "https://APP.example.com:443/cb?x=%20",
                "https://app.example.com/cb?x=%20",
            ),
            ("http://localhost:3000", "http://localhost:3000/"),
        ] {
            assert_eq!(
                t.normalize_redirect(given).as_deref(),
                Some(normal),
                "{given}"
            );
        }
        assert_eq!(
            t.redirect_target(Some(""), Code::InvalidCallbackurl)
                .unwrap(),
            None
        );
        assert!(t
            .redirect_target(Some("//evil.com"), Code::InvalidCallbackurl)
            .is_err());
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
    fn json_depth_ignores_brackets_in_strings() {
        assert_eq!(json_depth(b"{}"), 1);
        assert_eq!(json_depth(br#"{"a":[{"b":"[[[{{{"}]}"#), 3);
        assert_eq!(json_depth(br#"{"a":"\"[[["}"#), 1);
        assert_eq!(json_depth(b"5"), 0);
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert_eq!(json_depth(deep.as_bytes()), 40);
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
