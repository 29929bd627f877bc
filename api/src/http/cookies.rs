//! Cookies: the server's names and attributes, parsing a request's (once, by the middleware),
//! and the `Set-Cookie` values a response carries.
use super::URI_COMPONENT;
use crate::error::ApiError;
use percent_encoding::{percent_decode_str, utf8_percent_encode};
use poem::http::header;
use poem::Request;
use std::sync::{Arc, Mutex};

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
    /// A sign-in waiting for its second factor (signed challenge id).
    pub two_factor: String,
    /// A browser trusted to skip the second factor (signed, rotated on use).
    pub trust_device: String,
    /// A passkey ceremony in progress (signed id of its stored challenge).
    pub passkey: String,
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
            two_factor: format!("{p}{prefix}.two_factor"),
            trust_device: format!("{p}{prefix}.trust_device"),
            passkey: format!("{p}{prefix}.better-auth-passkey"),
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
pub struct RequestCookies(pub(super) Vec<(Box<str>, Box<str>)>);

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
pub struct PendingCookies(Arc<Mutex<(Vec<String>, bool)>>);

impl PendingCookies {
    pub fn push(&self, cookies: impl IntoIterator<Item = String>) {
        if let Ok(mut v) = self.0.lock() {
            if !v.1 {
                v.0.extend(cookies);
            }
        }
    }

    /// From now on this response sets no cookie: a request made with an API key acts
    /// through the key, never through a session a cookie would name (the key's session
    /// exists only for the request).
    pub fn refuse_all(&self) {
        if let Ok(mut v) = self.0.lock() {
            v.0.clear();
            v.1 = true;
        }
    }

    pub(super) fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut v.0))
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
