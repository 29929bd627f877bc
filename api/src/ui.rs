//! The hosted pages (the React app of `web/`, embedded at build time by `build.rs`): served at
//! `/` on the API's origin, so the session cookie and the origin check need no configuration.
//! Paths the app routes itself (`/account`, `/accept-invitation/:id`, …) answer `index.html`;
//! hashed assets are cached for a year, everything else revalidated.
use poem::http::{header, HeaderValue, StatusCode};
use poem::{Endpoint, Request, Response};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/ui_files.rs"));
}

/// The embedded file at `path`, if any.
pub fn file(path: &str) -> Option<&'static [u8]> {
    embedded::FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

/// Whether the binary carries the web app (a build without `web/dist` does not).
pub fn available() -> bool {
    file("/index.html").is_some()
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") | Some("mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") | Some("map") => "application/json",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Headers every page and asset carries: no framing (clickjacking of the sign-in form), no
/// script or connection to another origin, and no `Referer` (the reset page's URL holds its
/// token).
fn secure(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; \
             connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// Serves the app: an embedded file by its path, `index.html` for the app's own routes.
pub struct Ui;

impl Endpoint for Ui {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        let path = req.uri().path();
        // The API's and the probes' unknown paths stay JSON 404s, never the app.
        // `/metrics` too: metrics are served on `metrics_listen` only, never here.
        if path.starts_with("/api/") || path.starts_with("/health/") || path == "/metrics" {
            return Err(poem::error::NotFoundError.into());
        }
        if !matches!(
            *req.method(),
            poem::http::Method::GET | poem::http::Method::HEAD
        ) {
            return Err(poem::error::NotFoundError.into());
        }
        if let Some(bytes) = file(path).filter(|_| path != "/index.html") {
            let cache = if path.starts_with("/assets/") {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            return Ok(secure(
                Response::builder()
                    .content_type(content_type(path))
                    .header(header::CACHE_CONTROL, cache)
                    .body(bytes),
            ));
        }
        // A missing file (a dotted last segment) is a 404; every other path is a client route.
        let last = path.rsplit('/').next().unwrap_or_default();
        match file("/index.html") {
            Some(index) if !last.contains('.') => Ok(secure(
                Response::builder()
                    .content_type("text/html; charset=utf-8")
                    .header(header::CACHE_CONTROL, "no-cache")
                    .body(index),
            )),
            _ => Ok(Response::builder()
                .status(StatusCode::NOT_FOUND)
                .content_type("text/plain; charset=utf-8")
                .body("Not found")),
        }
    }
}
