//! Where deliveries may go: `https` (or `http` when allowed) URLs whose addresses are public —
//! never private, loopback, link-local (cloud metadata), shared, multicast or reserved ones,
//! unless `webhooks.allow_private_addresses`. Checked when a URL is saved and again on the
//! address each connection uses (a name may resolve elsewhere by then: DNS rebinding).
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// What an attempt records when the address is refused.
pub const REFUSED: &str = "the endpoint's address is private, loopback, link-local or reserved";

/// Whether deliveries may not go to `ip` (when private addresses are not allowed).
pub fn refused(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => refused_v4(v4),
            None => refused_v6(v6),
        },
    }
}

fn refused_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier NAT), benchmarking, IETF protocol assignments.
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || (a == 192 && b == 0 && c == 0)
        // Reserved (240/4).
        || a >= 240
}

fn refused_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local (fc00::/7, AWS's metadata fd00:ec2::254 among them), link-local.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // Documentation (2001:db8::/32), the NAT64 prefix (may reach IPv4 privates).
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x0064 && ip.segments()[1] == 0xff9b)
}

/// Why a URL cannot be an endpoint: not absolute http(s), `http` when not allowed, no host.
pub fn check_url(raw: &str, allow_http: bool) -> Result<reqwest::Url, &'static str> {
    let url = reqwest::Url::parse(raw.trim()).map_err(|_| "not an absolute URL")?;
    match url.scheme() {
        "https" => {}
        "http" if allow_http => {}
        "http" => return Err("http:// is not allowed: use https://"),
        _ => return Err("not an http(s) URL"),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host");
    }
    if raw.len() > 2048 {
        return Err("the URL is longer than 2048 characters");
    }
    Ok(url)
}

/// A URL whose host is an address (no name to resolve): refused when that address is.
pub fn check_literal(raw: &str, allow_private: bool) -> Result<(), &'static str> {
    if allow_private {
        return Ok(());
    }
    let url = reqwest::Url::parse(raw).map_err(|_| "not an absolute URL")?;
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        _ => return Ok(()),
    };
    if refused(ip) {
        Err(REFUSED)
    } else {
        Ok(())
    }
}

/// Whether the URL's host (an address, or a name resolved now) is refused: `Err` when any
/// address it has is. A name that does not resolve now is accepted (checked on every send).
pub async fn check_host(url: &reqwest::Url) -> Result<(), &'static str> {
    check_literal(url.as_str(), false)?;
    let (Some(url::Host::Domain(name)), Some(port)) = (url.host(), url.port_or_known_default())
    else {
        return Ok(());
    };
    let lookup = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        tokio::net::lookup_host((name.to_owned(), port)),
    )
    .await;
    if let Ok(Ok(addrs)) = lookup {
        if addrs.into_iter().any(|a: SocketAddr| refused(a.ip())) {
            return Err(REFUSED);
        }
    }
    Ok(())
}

/// The resolver of deliveries when private addresses are not allowed: a name's refused
/// addresses are dropped; none left is an error.
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
                .await?
                .filter(|a| !refused(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(REFUSED.into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
        ] {
            assert!(refused(bad.parse().unwrap()), "{bad}");
        }
        for good in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(!refused(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn urls() {
        assert!(check_url("https://hooks.example.com/in?x=1", false).is_ok());
        assert!(check_url("http://hooks.example.com/", false).is_err());
        assert!(check_url("http://hooks.example.com/", true).is_ok());
        assert!(check_url("ftp://hooks.example.com/", true).is_err());
        assert!(check_url("/relative", true).is_err());
        assert!(check_literal("https://127.0.0.1:8443/", false).is_err());
        assert!(check_literal("https://[::1]/", false).is_err());
        assert!(check_literal("https://127.0.0.1/", true).is_ok());
        assert!(check_literal("https://example.com/", false).is_ok());
    }
}
