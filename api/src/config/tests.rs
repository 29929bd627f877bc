//! The configuration's layers, checks and secrets.
use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_then_file_then_env() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(
        &file,
        "listen = \"0.0.0.0:9\"\ncookie_prefix = \"file\"\n[session]\nexpires_in = 10\n",
    )
    .unwrap();
    let c = Config::load(
        Some(&file),
        env(&[
            ("GATEHOUSE_COOKIE_PREFIX", "better-auth"),
            (
                "GATEHOUSE_TRUSTED_ORIGINS",
                "https://a.example, https://*.b.example",
            ),
            ("GATEHOUSE_SESSION__UPDATE_AGE", "5"),
            ("GATEHOUSE_SECRET", "0123456789012345678901234567890123"),
            ("OTHER", "x"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.listen, "0.0.0.0:9");
    assert_eq!(c.cookie_prefix, "better-auth");
    assert_eq!(c.session.expires_in, 10);
    assert_eq!(c.session.update_age, 5);
    assert_eq!(c.session.fresh_age, 86400);
    assert_eq!(
        c.trusted_origins,
        vec!["https://a.example", "https://*.b.example"]
    );
    assert_eq!(c.secret.as_ref().unwrap().expose().len(), 34);
    assert_eq!(format!("{:?}", c.secret), "Some(***)");
}

#[test]
fn short_secret_and_unknown_keys_are_refused() {
    assert!(Config::load(None, env(&[("GATEHOUSE_SECRET", "short")])).is_err());
    assert!(Config::load(None, env(&[("GATEHOUSE_BASE_URL", "ftp://x")])).is_err());
    let c = Config::load(None, env(&[])).unwrap().config;
    assert_eq!(c.base_url, "http://localhost:3000");
    assert_eq!(c.password.min_length, 8);
    assert_eq!(c.password.max_length, 128);
}

#[test]
fn the_scylla_store_from_the_environment() {
    let c = Config::load(
        None,
        env(&[
            ("GATEHOUSE_STORE", "scylla"),
            ("GATEHOUSE_SCYLLA__URI", "10.0.0.1:9042, 10.0.0.2:9042"),
            ("GATEHOUSE_SCYLLA__LOCAL_DATACENTER", "dc1"),
            ("GATEHOUSE_SCYLLA__CONSISTENCY", "quorum"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.store, StoreKind::Scylla);
    let o = c.scylla.options().unwrap();
    assert_eq!(o.nodes, vec!["10.0.0.1:9042", "10.0.0.2:9042"]);
    assert_eq!(o.keyspace, "gatehouse");
    assert_eq!(o.local_datacenter.as_deref(), Some("dc1"));
    assert_eq!(o.consistency, storage::scylla::Consistency::Quorum);
    assert_eq!(
        o.serial_consistency,
        storage::scylla::SerialConsistency::LocalSerial
    );
    assert_eq!(
        Config::load(None, env(&[])).unwrap().config.store,
        StoreKind::Sqlite
    );
    for bad in [
        vec![("GATEHOUSE_STORE", "scylla")],
        vec![("GATEHOUSE_STORE", "mysql")],
        vec![
            ("GATEHOUSE_STORE", "scylla"),
            ("GATEHOUSE_SCYLLA__URI", "a:1"),
            ("GATEHOUSE_SCYLLA__KEYSPACE", "x;drop"),
        ],
        vec![
            ("GATEHOUSE_STORE", "scylla"),
            ("GATEHOUSE_SCYLLA__URI", "a:1"),
            ("GATEHOUSE_SCYLLA__REPLICATION", "{'x': 1}; DROP"),
        ],
        vec![
            ("GATEHOUSE_STORE", "scylla"),
            ("GATEHOUSE_SCYLLA__URI", "a:1"),
            ("GATEHOUSE_SCYLLA__SERIAL_CONSISTENCY", "ONE"),
        ],
    ] {
        assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn social_providers_from_the_environment() {
    let c = Config::load(
        None,
        env(&[
            ("GATEHOUSE_SOCIAL__DISCORD__CLIENT_ID", "1234567890"),
            ("GATEHOUSE_SOCIAL__DISCORD__CLIENT_SECRET", "s3cr3t"),
            ("GATEHOUSE_SOCIAL__DISCORD__SCOPES", "guilds, connections"),
            ("GATEHOUSE_SOCIAL__DISCORD__TRUSTED", "true"),
            (
                "GATEHOUSE_SOCIAL__GITHUB__TOKEN_ENDPOINT",
                "http://127.0.0.1:9/token",
            ),
            ("GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID", "gh"),
        ]),
    )
    .unwrap()
    .config;
    let d = &c.social["discord"];
    assert_eq!(d.client_id, "1234567890", "a numeric id stays a string");
    assert_eq!(d.scopes, ["guilds", "connections"]);
    assert!(d.trusted);
    assert_eq!(
        c.social["github"].token_endpoint.as_deref(),
        Some("http://127.0.0.1:9/token")
    );
    let shown = toml::to_string(&c).unwrap();
    assert!(!shown.contains("s3cr3t"), "secrets are redacted");
    for bad in [
        vec![("GATEHOUSE_SOCIAL__MYSPACE__CLIENT_ID", "x")],
        vec![("GATEHOUSE_SOCIAL__GITHUB__CLIENT_SECRET", "x")],
        vec![
            ("GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID", "x"),
            (
                "GATEHOUSE_SOCIAL__GITHUB__TOKEN_ENDPOINT",
                "file:///etc/passwd",
            ),
        ],
    ] {
        assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn stray_variables_warn_and_the_config_variable_is_not_a_setting() {
    let loaded = Config::load(
        None,
        env(&[
            // What a Kubernetes Service named `gatehouse` injects.
            ("GATEHOUSE_PORT", "tcp://10.0.0.7:3000"),
            ("GATEHOUSE_SERVICE_HOST", "10.0.0.7"),
            ("GATEHOUSE_PORT_3000_TCP_ADDR", "10.0.0.7"),
            ("GATEHOUSE_SESION__EXPIRES_IN", "5"),
            ("GATEHOUSE_CONFIG", "/etc/gatehouse.toml"),
            ("GATEHOUSE_SESSION__EXPIRES_IN", "60"),
        ]),
    )
    .unwrap();
    assert_eq!(loaded.config.session.expires_in, 60);
    let w = loaded.warnings.join("\n");
    for var in [
        "GATEHOUSE_PORT:",
        "GATEHOUSE_SERVICE_HOST",
        "GATEHOUSE_PORT_3000_TCP_ADDR",
        "GATEHOUSE_SESION__EXPIRES_IN",
    ] {
        assert!(w.contains(var), "{var} not warned about: {w}");
    }
    assert!(!w.contains("GATEHOUSE_CONFIG"), "{w}");
    assert!(!w.contains("10.0.0.7"), "values are not repeated: {w}");
}

#[test]
fn environment_values_take_the_type_of_their_setting_and_are_never_echoed() {
    let c = Config::load(
        None,
        env(&[
            ("GATEHOUSE_MAIL__SMTP__PASSWORD", "12345678"),
            ("GATEHOUSE_MAIL__SMTP__USERNAME", "4711"),
            ("GATEHOUSE_MAIL__SMTP__PORT", "2525"),
            (
                "GATEHOUSE_SERVER_KEY",
                "12345678901234567890123456789012345",
            ),
            ("GATEHOUSE_COOKIE_PREFIX", "true"),
            ("GATEHOUSE_TRUST_PROXY", "true"),
            ("GATEHOUSE_LIMITS__ORGANIZATION_LIMIT", "3"),
            ("GATEHOUSE_ADMIN__ADMIN_ROLES", "admin, superadmin"),
            ("GATEHOUSE_WEBHOOKS__RETRY_DELAYS", "[1, 1, 2, 5]"),
            ("GATEHOUSE_WEBHOOKS__ALLOW_HTTP", "true"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.webhooks.retry_delays, [1, 1, 2, 5]);
    assert!(c.webhooks.allow_http);
    assert_eq!(c.mail.smtp.password.as_ref().unwrap().expose(), "12345678");
    assert_eq!(c.mail.smtp.username.as_deref(), Some("4711"));
    assert_eq!(c.mail.smtp.port, 2525);
    assert_eq!(c.cookie_prefix, "true");
    assert!(c.trust_proxy);
    assert_eq!(c.limits.organization_limit, Some(3));
    assert_eq!(c.admin.admin_roles, ["admin", "superadmin"]);
    for (key, value) in [
        ("GATEHOUSE_SESSION__EXPIRES_IN", "s3cr3t-looking"),
        ("GATEHOUSE_MAIL__TRANSPORT", "smpt-hunter2"),
        ("GATEHOUSE_TRUST_PROXY", "hunter2"),
    ] {
        let err = Config::load(None, env(&[(key, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{err}");
        assert!(!err.contains(value), "the value is echoed: {err}");
        assert!(err.contains("expected"), "{err}");
    }
}

#[test]
fn secrets_in_the_file_are_text_and_never_quoted_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(&file, "[mail.smtp]\npassword = 12345678\n").unwrap();
    let c = Config::load(Some(&file), env(&[])).unwrap().config;
    assert_eq!(c.mail.smtp.password.unwrap().expose(), "12345678");
    std::fs::write(&file, "secret = \"hunter2hunter2hunter2hunter2hunter2\n").unwrap();
    let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
    assert!(err.contains("line 1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // Other lines are shown as they are, which helps.
    std::fs::write(&file, "listen = \"127.0.0.1:3000\"\ncookie_prefix = 'x\n").unwrap();
    let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
    assert!(err.contains("cookie_prefix = 'x"), "{err}");
}

#[test]
fn base_url_follows_listen_unless_given() {
    let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs)).unwrap();
    assert_eq!(load(&[]).config.base_url, "http://localhost:3000");
    let l = load(&[("GATEHOUSE_LISTEN", "0.0.0.0:8080")]);
    assert_eq!(l.config.base_url, "http://localhost:8080");
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let l = load(&[("GATEHOUSE_LISTEN", "192.168.1.5:4000")]);
    assert_eq!(l.config.base_url, "http://192.168.1.5:4000");
    let l = load(&[("GATEHOUSE_LISTEN", "[::1]:4000")]);
    assert_eq!(l.config.base_url, "http://localhost:4000");
    // Given and pointing elsewhere on this machine: kept, with a warning.
    let l = load(&[
        ("GATEHOUSE_LISTEN", "127.0.0.1:8080"),
        ("GATEHOUSE_BASE_URL", "http://localhost:3000"),
    ]);
    assert_eq!(l.config.base_url, "http://localhost:3000");
    assert!(
        l.warnings.iter().any(|w| w.contains("port 3000")),
        "{:?}",
        l.warnings
    );
    // A public URL (behind a proxy) is not this machine's port: no warning.
    let l = load(&[
        ("GATEHOUSE_LISTEN", "127.0.0.1:8080"),
        ("GATEHOUSE_BASE_URL", "https://auth.example.com"),
    ]);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    // `:0`: the port chosen at bind time.
    let mut c = load(&[("GATEHOUSE_LISTEN", "127.0.0.1:0")]).config;
    c.bound_to("127.0.0.1:41234".parse().unwrap());
    assert_eq!(c.base_url, "http://localhost:41234");
    let mut c = load(&[
        ("GATEHOUSE_LISTEN", "127.0.0.1:0"),
        ("GATEHOUSE_BASE_URL", "http://localhost:3000"),
    ])
    .config;
    c.bound_to("127.0.0.1:41234".parse().unwrap());
    assert_eq!(c.base_url, "http://localhost:3000");
}

/// A base URL derived from a loopback listen address trusts the other spellings of that
/// address too (the start line prints 127.0.0.1); a configured one trusts only itself.
#[test]
fn a_derived_loopback_base_url_trusts_its_other_spellings() {
    let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs)).unwrap();
    let mut c = load(&[("GATEHOUSE_LISTEN", "127.0.0.1:0")]).config;
    c.bound_to("127.0.0.1:41234".parse().unwrap());
    assert_eq!(
        c.origins_besides_base(),
        ["http://127.0.0.1:41234", "http://[::1]:41234"]
    );
    let t = crate::http::TrustedOrigins::new(&c.base_url, &c.origins_besides_base());
    for ok in [
        "http://localhost:41234",
        "http://127.0.0.1:41234",
        "http://[::1]:41234",
    ] {
        assert!(t.is_trusted_url(ok), "{ok}");
    }
    for no in [
        "http://127.0.0.1:41235",
        "https://127.0.0.1:41234",
        "http://127.0.0.2:41234",
    ] {
        assert!(!t.is_trusted_url(no), "{no}");
    }
    let c = load(&[
        ("GATEHOUSE_LISTEN", "127.0.0.1:3000"),
        ("GATEHOUSE_BASE_URL", "http://localhost:3000"),
        ("GATEHOUSE_TRUSTED_ORIGINS", "https://app.example.com"),
    ])
    .config;
    assert_eq!(c.origins_besides_base(), ["https://app.example.com"]);
    // A public listen address derives no loopback spellings.
    let c = load(&[("GATEHOUSE_LISTEN", "10.1.2.3:3000")]).config;
    assert!(c.origins_besides_base().is_empty(), "{:?}", c.base_url);
}

#[test]
fn what_serve_would_refuse_is_refused_at_load() {
    for bad in [
        vec![("GATEHOUSE_LISTEN", "localhost")],
        vec![("GATEHOUSE_LISTEN", "127.0.0.1:99999")],
        vec![("GATEHOUSE_MAIL__TRANSPORT", "smpt")],
    ] {
        assert!(Config::load(None, env(&bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn the_tenants_look_is_checked_at_load() {
    let c = Config::load(
        None,
        env(&[
            ("GATEHOUSE_UI__APP_NAME", "Acme"),
            (
                "GATEHOUSE_UI__LOGO_URL",
                "https://cdn.acme.example/logo.svg",
            ),
            ("GATEHOUSE_UI__PRIMARY_COLOR", "#0a7d33"),
            ("GATEHOUSE_UI__SUPPORT_EMAIL", "help@acme.example"),
            ("GATEHOUSE_TRUSTED_ORIGINS", "https://app.acme.example"),
            ("GATEHOUSE_UI__HOME_URL", "https://app.acme.example/welcome"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.app_name(), "Acme");
    assert_eq!(Config::default().app_name(), "Gatehouse");
    for bad in [
        [("GATEHOUSE_UI__PRIMARY_COLOR", "red")],
        [("GATEHOUSE_UI__PRIMARY_COLOR", "#12345")],
        [("GATEHOUSE_UI__LOGO_URL", "http://cdn.example/logo.svg")],
        [("GATEHOUSE_UI__LOGO_URL", "//cdn.example/logo.svg")],
        [("GATEHOUSE_UI__SUPPORT_EMAIL", "not-an-address")],
        [("GATEHOUSE_UI__HOME_URL", "https://evil.example/")],
        [("GATEHOUSE_UI__HOME_URL", "//evil.example/")],
    ] {
        let err = Config::load(None, env(&bad)).unwrap_err().to_string();
        assert!(err.contains("ui."), "{bad:?}: {err}");
    }
}
