//! Rate limiting: per client address and path (better-auth's rules and answer: 429
//! `TOO_MANY_REQUESTS` with `X-Retry-After`), per account for failed sign-ins, and per
//! recipient for mail. Counters live behind [`storage::RateLimitStore`]: the general rule's in
//! this process's memory (it guards this process; counting every request in a store would
//! cost a write per request), the others — the rules of named paths, failed sign-ins, mail —
//! in the store with `rate_limit.storage = "store"` (the default), so that the processes on
//! one store share them, or in memory with `"memory"`.
//!
//! The client address is the socket peer, or with `trust_proxy` the right-most
//! `X-Forwarded-For` entry that is not a trusted proxy — never a header a client sets by
//! itself. IPv6 clients count by their `/64` (configurable): one host holds a whole /64.
use crate::config::{RateLimitConfig, RateLimitStorage, RateRule};
use crate::error::{ApiError, ApiResult};
use chrono::{DateTime, Duration, Utc};
use std::net::IpAddr;
use std::sync::Arc;
use storage::RateLimitStore;

/// better-auth 1.7's stricter rules, by path under `/api/auth` (the general rule covers the
/// rest). Configured rules of the same path replace them.
pub const BUILTIN_RULES: &[(&str, RateRule)] = &[
    ("/sign-in/*", RateRule { window: 10, max: 3 }),
    ("/sign-up/*", RateRule { window: 10, max: 3 }),
    ("/change-password", RateRule { window: 10, max: 3 }),
    ("/change-email", RateRule { window: 10, max: 3 }),
    ("/request-password-reset", RateRule { window: 60, max: 3 }),
    ("/forget-password", RateRule { window: 60, max: 3 }),
    ("/send-verification-email", RateRule { window: 60, max: 3 }),
    ("/two-factor/*", RateRule { window: 10, max: 3 }),
    ("/email-otp/*", RateRule { window: 60, max: 3 }),
    ("/sign-in/email-otp", RateRule { window: 60, max: 3 }),
    ("/forget-password/*", RateRule { window: 60, max: 3 }),
    ("/sign-in/magic-link", RateRule { window: 60, max: 5 }),
    ("/magic-link/*", RateRule { window: 60, max: 5 }),
];

/// An address block: an address and how many leading bits of it count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// `10.0.0.0/8`, `2001:db8::/32`, or a bare address (all its bits).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (addr, bits) = match s.trim().split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an address or CIDR block"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0–{max}"))?,
            None => max,
        };
        Ok(Self { addr, bits })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.bits),
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.bits),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    let rest = bits % 8;
    if a[..full] != b[..full] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    (a[full] & mask) == (b[full] & mask)
}

/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What a client is counted as: its IPv4 address, or its IPv6 address cut to `v6_prefix` bits.
pub fn client_key(ip: IpAddr, v6_prefix: u8) -> String {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let bits = u32::from(v6_prefix.min(128));
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            let net = std::net::Ipv6Addr::from(u128::from(v6) & mask);
            format!("{net}/{bits}")
        }
    }
}

/// The client's address: the socket peer, or — with `trust_proxy`, when the peer is one of
/// `proxies` — the right-most `X-Forwarded-For` entry that is not a trusted proxy (entries to
/// its left are whatever the client wrote). `X-Real-IP` is read only without
/// `X-Forwarded-For`.
pub fn client_address(
    peer: Option<IpAddr>,
    forwarded_for: Option<&str>,
    real_ip: Option<&str>,
    trust_proxy: bool,
    proxies: &[Cidr],
) -> Option<IpAddr> {
    let trusted = |ip: IpAddr| proxies.iter().any(|p| p.contains(ip));
    let peer_ip = peer?;
    if !trust_proxy || !trusted(peer_ip) {
        return Some(canonical(peer_ip));
    }
    if let Some(list) = forwarded_for {
        let mut last_trusted = peer_ip;
        for entry in list.rsplit(',') {
            match entry.trim().parse::<IpAddr>() {
                Ok(ip) if trusted(ip) => last_trusted = ip,
                Ok(ip) => return Some(canonical(ip)),
                // A garbled entry: nothing to its left can be believed.
                Err(_) => return Some(canonical(last_trusted)),
            }
        }
        return Some(canonical(last_trusted));
    }
    real_ip
        .and_then(|v| v.trim().parse::<IpAddr>().ok())
        .map(canonical)
        .or(Some(canonical(peer_ip)))
}

/// The API's route templates under `/api/auth` (from the OpenAPI document): what a request
/// path counts as for the limiter and is labelled as in metrics.
pub struct Routes {
    exact: std::collections::HashSet<String>,
    /// `(prefix before the first parameter, template)`: `("/callback/", "/callback/:id")`
    /// (written with `:`, as braces trip some exposition parsers).
    templated: Vec<(String, String)>,
}

impl Routes {
    pub fn new(paths: &[String]) -> Self {
        let (templated, exact): (Vec<&String>, Vec<&String>) =
            paths.iter().partition(|p| p.contains('{'));
        Self {
            exact: exact.into_iter().cloned().collect(),
            templated: templated
                .into_iter()
                .filter_map(|t| {
                    let (prefix, _) = t.split_once('{')?;
                    Some((prefix.to_owned(), t.replace('{', ":").replace('}', "")))
                })
                .collect(),
        }
    }

    /// The template `path` (under `/api/auth`) matches, if any.
    pub fn template(&self, path: &str) -> Option<&str> {
        if let Some(exact) = self.exact.get(path) {
            return Some(exact);
        }
        self.templated
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, t)| t.as_str())
    }
}

/// The limiter of one server process.
pub struct Limiter {
    /// Requests count per route, as better-auth counts them; every unknown path shares one
    /// counter (a flood of made-up paths makes no new counters).
    routes: Routes,
    /// `(pattern, prefix?, rule)`, most specific first.
    rules: Vec<(String, bool, RateRule)>,
    config: RateLimitConfig,
    /// The general rule's counters (always this process's).
    local: Arc<dyn RateLimitStore>,
    /// Every other counter: `local`, or the store with `rate_limit.storage = "store"`.
    shared: Arc<dyn RateLimitStore>,
    /// Refusals by limit (`path`, `sign_in`, `mail`), see [`Limiter::with_metrics`].
    refused: Option<prometheus::IntCounterVec>,
}

impl Limiter {
    /// `paths`: the API's route templates under `/api/auth` (`/callback/{id}`). Every counter
    /// in `local` until [`Limiter::with_store`].
    pub fn new(
        config: &RateLimitConfig,
        local: Arc<dyn RateLimitStore>,
        paths: &[String],
    ) -> Result<Self, String> {
        let mut rules: std::collections::BTreeMap<String, RateRule> = BUILTIN_RULES
            .iter()
            .map(|(p, r)| (p.to_string(), *r))
            .collect();
        for (path, rule) in &config.rules {
            if !path.starts_with('/') || path[..path.len() - 1].contains('*') {
                return Err(format!(
                    "rate_limit.rules: {path:?} must start with / and may end with * only"
                ));
            }
            if rule.window == 0 {
                return Err(format!(
                    "rate_limit.rules.{path:?}: window must be at least 1"
                ));
            }
            rules.insert(path.clone(), *rule);
        }
        if config.window == 0 || config.sign_in_failure_window == 0 || config.mail_window == 0 {
            return Err("rate_limit: windows must be at least 1 second".into());
        }
        if config.ipv6_prefix > 128 {
            return Err("rate_limit.ipv6_prefix must be 0–128".into());
        }
        let mut rules: Vec<(String, bool, RateRule)> = rules
            .into_iter()
            .map(|(p, r)| match p.strip_suffix('*') {
                Some(prefix) => (prefix.to_owned(), true, r),
                None => (p, false, r),
            })
            .collect();
        // Exact paths before prefixes; longer prefixes before shorter ones.
        rules.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.len().cmp(&a.0.len())));
        Ok(Self {
            routes: Routes::new(paths),
            rules,
            config: config.clone(),
            shared: local.clone(),
            local,
            refused: None,
        })
    }

    /// With `rate_limit.storage = "store"`, counts all but the general rule in `store`.
    pub fn with_store(mut self, store: Arc<dyn RateLimitStore>) -> Self {
        if self.config.storage == RateLimitStorage::Store {
            self.shared = store;
        }
        self
    }

    /// Housekeeping: forgets ended windows in memory and in the store.
    pub async fn purge(&self, now: DateTime<Utc>) -> storage::StoreResult<u64> {
        let local = self.local.purge_rate_limits(now).await?;
        if Arc::ptr_eq(&self.local, &self.shared) {
            return Ok(local);
        }
        Ok(local + self.shared.purge_rate_limits(now).await?)
    }

    /// Counts each refusal by the limit that made it in `refused`.
    pub fn with_metrics(mut self, refused: prometheus::IntCounterVec) -> Self {
        self.refused = Some(refused);
        self
    }

    fn refuse(&self, limit: &str, resets_at: DateTime<Utc>, now: DateTime<Utc>) -> ApiError {
        if let Some(c) = &self.refused {
            c.with_label_values(&[limit]).inc();
        }
        ApiError::too_many((resets_at - now).num_seconds().max(1) as u64)
    }

    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The rule for `path` (under `/api/auth`) and the name its counter goes by.
    fn rule(&self, path: &str) -> (&str, RateRule) {
        for (pattern, prefix, rule) in &self.rules {
            let hit = if *prefix {
                path.starts_with(pattern.as_str())
            } else {
                path == pattern || path.strip_prefix(pattern.as_str()) == Some("/")
            };
            if hit {
                return (pattern, *rule);
            }
        }
        let general = RateRule {
            window: self.config.window,
            max: self.config.max,
        };
        ("*", general)
    }

    async fn count(
        &self,
        counters: &dyn RateLimitStore,
        limit: &'static str,
        key: &str,
        window: u64,
        max: u32,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        let w = counters
            .hit(
                key,
                Duration::seconds(window as i64),
                max.saturating_add(1),
                now,
            )
            .await
            .map_err(|e| Refusal {
                error: e.into(),
                first: false,
                limit,
            })?;
        if w.count > max {
            // The first refusal of a window is the one this process notes first: a shared
            // store's counts need not pass through `max + 1` exactly (a burst may read past it).
            let first = self
                .local
                .hit(
                    &format!("refused:{key}"),
                    Duration::seconds(window as i64),
                    1,
                    now,
                )
                .await
                .is_ok_and(|n| n.count == 1);
            return Err(Refusal {
                error: self.refuse(limit, w.resets_at, now),
                first,
                limit,
            });
        }
        Ok(())
    }

    /// The API's routes.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Counts a request to `path` (under `/api/auth`) from `client`, per route as
    /// better-auth counts (`template`: the route's, from [`Limiter::routes`]; every unknown path
    /// counts as one, `?`); refuses it past its rule.
    pub async fn request(
        &self,
        path: &str,
        template: Option<&str>,
        client: IpAddr,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        if !self.config.enabled {
            return Ok(());
        }
        let (pattern, rule) = self.rule(path);
        let key = format!(
            "ip:{}:{}",
            template.unwrap_or("?"),
            client_key(client, self.config.ipv6_prefix)
        );
        let counters = if pattern == "*" {
            &*self.local
        } else {
            &*self.shared
        };
        self.count(counters, "path", &key, rule.window, rule.max, now)
            .await
    }

    fn failure_keys(&self, email: &str, client: Option<IpAddr>) -> (String, Option<String>) {
        (
            format!("signin-fail:{email}"),
            client.map(|ip| {
                format!(
                    "signin-fail:{email}:{}",
                    client_key(ip, self.config.ipv6_prefix)
                )
            }),
        )
    }

    /// Refuses a sign-in to `email` that follows too many failed ones: from this client, or
    /// from everywhere (then every client waits for the window to end: an attacker holds an
    /// account for at most one window per `sign_in_failures_per_account` wrong passwords).
    pub async fn sign_in_allowed(
        &self,
        email: &str,
        client: Option<IpAddr>,
        now: DateTime<Utc>,
    ) -> ApiResult<()> {
        if !self.config.enabled {
            return Ok(());
        }
        let window = Duration::seconds(self.config.sign_in_failure_window as i64);
        let (account, pair) = self.failure_keys(email, client);
        let checks = [
            (Some(account), self.config.sign_in_failures_per_account),
            (pair, self.config.sign_in_failures_per_client),
        ];
        for (key, max) in checks {
            let Some(key) = key else { continue };
            let w = self.shared.count(&key, window, max, now).await?;
            if w.count >= max {
                return Err(self.refuse("sign_in", w.resets_at, now));
            }
        }
        Ok(())
    }

    /// Counts a failed sign-in to `email` from `client`.
    pub async fn sign_in_failed(&self, email: &str, client: Option<IpAddr>, now: DateTime<Utc>) {
        if !self.config.enabled {
            return;
        }
        let window = Duration::seconds(self.config.sign_in_failure_window as i64);
        // Past the larger of the two limits, the exact count no longer matters.
        let cap = self
            .config
            .sign_in_failures_per_account
            .max(self.config.sign_in_failures_per_client);
        let (account, pair) = self.failure_keys(email, client);
        for key in std::iter::once(account).chain(pair) {
            if let Err(e) = self.shared.hit(&key, window, cap, now).await {
                tracing::warn!(error = %e, "counting a failed sign-in");
            }
        }
    }

    /// Counts a mail to `to` (the normalized address, whether or not an account has it)
    /// asked for by `client`: refused past `mail_per_recipient_per_client` for this client, and
    /// past `mail_per_recipient` from all clients together. A client's refused requests do
    /// not count against the address's allowance, so no single client can use it up.
    pub async fn mail(
        &self,
        to: &str,
        client: Option<IpAddr>,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        if !self.config.enabled {
            return Ok(());
        }
        let to = to.to_ascii_lowercase();
        if let Some(ip) = client {
            let pair = format!("mail:{to}:{}", client_key(ip, self.config.ipv6_prefix));
            self.count(
                &*self.shared,
                "mail",
                &pair,
                self.config.mail_window,
                self.config.mail_per_recipient_per_client,
                now,
            )
            .await?;
        }
        self.count(
            &*self.shared,
            "mail",
            &format!("mail:{to}"),
            self.config.mail_window,
            self.config.mail_per_recipient,
            now,
        )
        .await
    }
}

impl Limiter {
    /// Counts a mail to `to` asked for by `req`'s client ([`Limiter::mail`]) at `now`;
    /// refuses it past the recipient's limits (the first refusal recorded through `audit`).
    pub async fn limit_mail(
        &self,
        req: &poem::Request,
        to: &str,
        now: DateTime<Utc>,
        audit: &crate::audit::Audit,
    ) -> ApiResult<()> {
        let client = crate::client::client_addr(req);
        let refused = self.mail(to, client, now).await;
        Self::refused(req, refused, audit).await
    }

    /// Hands a refusal on as its error, recording the first one of each window in the audit
    /// log (the ones after it in the same window are only counted: a flood of refused
    /// requests does not become a flood of writes).
    pub async fn refused(
        req: &poem::Request,
        r: Result<(), Refusal>,
        audit: &crate::audit::Audit,
    ) -> ApiResult<()> {
        let Err(r) = r else { return Ok(()) };
        if r.first {
            let ev = crate::audit::Event::new(
                crate::audit::action::RATE_LIMITED,
                &crate::audit::Origin::of(req),
            )
            .target(req.uri().path().to_owned())
            .detail("limit", r.limit)
            .failed(r.error.code);
            audit.record_after(audit.noted(ev)).await;
        }
        Err(r.error)
    }
}

/// A request the limiter refused: the answer, whether it is the first refusal of its window,
/// and which limit (`path`, `mail`).
#[derive(Debug)]
pub struct Refusal {
    pub error: ApiError,
    pub first: bool,
    pub limit: &'static str,
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        r.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn cidr_blocks() {
        let net = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(net.contains(ip("10.1.200.3")));
        assert!(!net.contains(ip("10.2.0.1")));
        assert!(Cidr::parse("::1").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("2001:db8::/33")
            .unwrap()
            .contains(ip("2001:db8:7fff::1")));
        assert!(!Cidr::parse("2001:db8::/33")
            .unwrap()
            .contains(ip("2001:db8:8000::1")));
        assert!(Cidr::parse("127.0.0.1/32")
            .unwrap()
            .contains(ip("::ffff:127.0.0.1")));
        for bad in ["10.0.0.0/33", "nope", "::/129", "1.2.3.4/x"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ipv6_clients_count_by_their_prefix() {
        assert_eq!(
            client_key(ip("2001:db8:1:2:aaaa::1"), 64),
            client_key(ip("2001:db8:1:2:ffff:1:2:3"), 64)
        );
        assert_ne!(
            client_key(ip("2001:db8:1:2::1"), 64),
            client_key(ip("2001:db8:1:3::1"), 64)
        );
        assert_eq!(client_key(ip("2001:db8:1:2::1"), 64), "2001:db8:1:2::/64");
        assert_eq!(client_key(ip("::ffff:192.0.2.7"), 64), "192.0.2.7");
        assert_eq!(client_key(ip("192.0.2.7"), 64), "192.0.2.7");
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let proxies = [Cidr::parse("10.0.0.0/8").unwrap()];
        let peer = Some(ip("10.0.0.2"));
        // Not behind a proxy: the peer, whatever the headers say.
        assert_eq!(
            client_address(peer, Some("1.2.3.4"), None, false, &proxies),
            peer
        );
        // From an untrusted peer: the peer.
        assert_eq!(
            client_address(
                Some(ip("203.0.113.9")),
                Some("1.2.3.4"),
                None,
                true,
                &proxies
            ),
            Some(ip("203.0.113.9"))
        );
        // The proxy appended the client; what the client wrote to its left does not count.
        assert_eq!(
            client_address(peer, Some("6.6.6.6, 198.51.100.4"), None, true, &proxies),
            Some(ip("198.51.100.4"))
        );
        // Through two trusted proxies.
        assert_eq!(
            client_address(peer, Some("198.51.100.4, 10.0.0.9"), None, true, &proxies),
            Some(ip("198.51.100.4"))
        );
        // Garbage stops the walk at the last trusted hop.
        assert_eq!(
            client_address(
                peer,
                Some("1.1.1.1, garbage, 10.0.0.9"),
                None,
                true,
                &proxies
            ),
            Some(ip("10.0.0.9"))
        );
        assert_eq!(
            client_address(peer, None, Some("198.51.100.5"), true, &proxies),
            Some(ip("198.51.100.5"))
        );
    }

    #[test]
    fn the_most_specific_rule_wins() {
        let mut config = RateLimitConfig::default();
        config
            .rules
            .insert("/sign-in/email".into(), RateRule { window: 5, max: 7 });
        config
            .rules
            .insert("/organization/*".into(), RateRule { window: 1, max: 9 });
        let paths = ["/sign-in/email".to_string(), "/callback/{id}".to_string()];
        let l = Limiter::new(
            &config,
            Arc::new(storage::MemoryRateLimits::default()),
            &paths,
        )
        .unwrap();
        assert_eq!(
            l.routes().template("/sign-in/email"),
            Some("/sign-in/email")
        );
        assert_eq!(
            l.routes().template("/callback/github"),
            Some("/callback/:id")
        );
        assert_eq!(l.routes().template("/made-up-1"), None);
        assert_eq!(
            l.rule("/sign-in/email"),
            ("/sign-in/email", RateRule { window: 5, max: 7 })
        );
        assert_eq!(l.rule("/sign-in/social").0, "/sign-in/");
        assert_eq!(l.rule("/organization/create").1.max, 9);
        // Codes and links by mail: 1.7's 3 (links: 5) per minute, the sign-in routes too.
        for (path, max) in [
            ("/email-otp/send-verification-otp", 3),
            ("/email-otp/reset-password", 3),
            ("/sign-in/email-otp", 3),
            ("/forget-password/email-otp", 3),
            ("/sign-in/magic-link", 5),
            ("/magic-link/verify", 5),
        ] {
            assert_eq!(l.rule(path).1, RateRule { window: 60, max }, "{path}");
        }
        assert_eq!(
            l.rule("/get-session"),
            (
                "*",
                RateRule {
                    window: 10,
                    max: 100
                }
            )
        );
        assert_eq!(l.rule("/change-password").1.max, 3);
        let mut bad = RateLimitConfig::default();
        bad.rules
            .insert("/a*b".into(), RateRule { window: 1, max: 1 });
        assert!(Limiter::new(&bad, Arc::new(storage::MemoryRateLimits::default()), &[]).is_err());
    }
}
