//! Who sent a request, as every layer sees it: the client's address (the middleware works it
//! out once, proxies considered), its user agent, the request id, and all three together as an
//! audit record's [`Origin`].
use poem::http::{header, HeaderValue};
use poem::Request;

#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) Option<std::net::IpAddr>);

/// The client's address: the socket peer, or — with `trust_proxy`, when the peer is one of
/// `trusted_proxies` — the address its proxies forwarded (see [`crate::rate_limit`]).
pub fn client_addr(req: &Request) -> Option<std::net::IpAddr> {
    if let Some(ClientAddr(ip)) = req.extensions().get::<ClientAddr>() {
        return *ip;
    }
    // The middleware worked it out; without it, the socket's peer.
    req.remote_addr().as_socket_addr().map(|a| a.ip())
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

pub const REQUEST_ID_HEADER: header::HeaderName = header::HeaderName::from_static("x-request-id");

/// The id of a request: the caller's `X-Request-Id` when it is a sane one (1–128 characters
/// of letters, digits and `-_.:`, as proxies and tracing systems make them), else a new one.
/// Answered in `X-Request-Id` and written on every log line of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    pub(crate) fn of(req: &Request) -> Self {
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

/// Where a request came from: its client address (as the limiter sees it), user agent and
/// request id. Cheap to take: nothing is formatted until an event is recorded.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub(crate) ip: Option<std::net::IpAddr>,
    pub(crate) user_agent: Option<HeaderValue>,
    pub(crate) request_id: Option<HeaderValue>,
}

impl Origin {
    pub fn of(req: &Request) -> Self {
        Self {
            ip: client_addr(req),
            user_agent: req.headers().get(header::USER_AGENT).cloned(),
            request_id: req
                .extensions()
                .get::<RequestId>()
                .and_then(|r| HeaderValue::from_str(&r.0).ok())
                .or_else(|| req.headers().get(REQUEST_ID_HEADER).cloned()),
        }
    }
}
