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
