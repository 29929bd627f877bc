//! The rate limiter over the real endpoint, with requests from chosen client addresses: the
//! per-path rules and their 429, proxies, IPv6 prefixes, failed sign-ins per account, and mail
//! per recipient (raced).
use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use poem::http::Method;
use serde_json::json;

const PW: &str = "correct-horse-battery";

async fn limited() -> H {
    harness_with(|c| c.rate_limit.enabled = true).await
}

async fn sign_in(h: &H, peer: &str, email: &str, password: &str) -> Resp {
    call_from(
        h,
        peer,
        Method::POST,
        "/api/auth/sign-in/email",
        Some(json!({"email": email, "password": password})),
        &[],
    )
    .await
}

/// `change-password` (3 per 10 s) from `peer`, forwarded for `forwarded_for`.
async fn forwarded(h: &H, peer: &str, forwarded_for: &str) -> u16 {
    call_from(
        h,
        peer,
        Method::POST,
        "/api/auth/change-password",
        Some(json!({})),
        &[("x-forwarded-for", forwarded_for)],
    )
    .await
    .status
    .as_u16()
}

fn retry_after(r: &Resp) -> u64 {
    r.headers
        .get("x-retry-after")
        .expect("X-Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn past_a_rule_the_answer_is_429_with_retry_after_until_the_window_ends() {
    let h = limited().await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    for _ in 0..3 {
        sign_in(&h, "198.51.100.1:5000", "ann@example.com", PW)
            .await
            .expect(200);
    }
    let r = sign_in(&h, "198.51.100.1:5001", "ann@example.com", PW)
        .await
        .expect(429);
    assert_eq!(
        r.json(),
        json!({"code": "TOO_MANY_REQUESTS", "message": "Too many requests. Please try again later."})
    );
    let wait = retry_after(&r);
    assert!((1..=10).contains(&wait), "{wait}");
    // Another address, and another path from the same address, are not held back.
    sign_in(&h, "198.51.100.2:5000", "ann@example.com", PW)
        .await
        .expect(200);
    call_from(
        &h,
        "198.51.100.1:5002",
        Method::GET,
        "/api/auth/get-session",
        None,
        &[],
    )
    .await
    .expect(200);
    h.clock.advance(Duration::seconds(wait as i64));
    sign_in(&h, "198.51.100.1:5003", "ann@example.com", PW)
        .await
        .expect(200);
}

#[tokio::test]
async fn the_general_rule_counts_each_path() {
    let h = limited().await;
    for _ in 0..100 {
        call_from(&h, "203.0.113.5:1", Method::GET, "/api/auth/ok", None, &[])
            .await
            .expect(200);
    }
    let r = call_from(&h, "203.0.113.5:1", Method::GET, "/api/auth/ok", None, &[])
        .await
        .expect(429);
    assert_eq!(r.code(), "TOO_MANY_REQUESTS");
    call_from(
        &h,
        "203.0.113.5:1",
        Method::GET,
        "/api/auth/get-session",
        None,
        &[],
    )
    .await
    .expect(200);
    // The hosted pages and health probes are not the API's: never limited.
    for _ in 0..150 {
        call_from(&h, "203.0.113.5:1", Method::GET, "/health/live", None, &[])
            .await
            .expect(200);
    }
}

#[tokio::test]
async fn a_spoofed_forwarded_for_does_not_change_the_key() {
    // Not behind a proxy: the header is the client's own words.
    let h = limited().await;
    for i in 0..4 {
        let spoof = format!("10.9.9.{i}");
        let r = call_from(
            &h,
            "198.51.100.7:1",
            Method::POST,
            "/api/auth/sign-in/email",
            Some(json!({"email": "nobody@example.com", "password": "wrong-password"})),
            &[("x-forwarded-for", &spoof), ("x-real-ip", &spoof)],
        )
        .await;
        assert_eq!(r.status == 429, i == 3, "{i}: {}", r.status);
    }

    // Behind a trusted proxy, but this peer is not it: the same.
    let h = harness_with(|c| {
        c.rate_limit.enabled = true;
        c.trust_proxy = true;
        c.trusted_proxies = vec!["10.0.0.0/8".into()];
    })
    .await;
    for i in 0..4 {
        let status = forwarded(&h, "198.51.100.8:1", &format!("192.0.2.{i}")).await;
        assert_eq!(status == 429, i == 3, "{i}: {status}");
    }
    // From the trusted proxy, each forwarded client counts alone (what a client prepends
    // itself does not).
    for i in 0..4 {
        let status = forwarded(&h, "10.0.0.2:1", &format!("6.6.6.6, 192.0.2.{i}")).await;
        assert_ne!(status, 429, "{i}");
    }
    for i in 0..4 {
        let status = forwarded(&h, "10.0.0.2:1", &format!("6.6.6.{i}, 192.0.2.200")).await;
        assert_eq!(status == 429, i == 3, "{i}");
    }
}

#[tokio::test]
async fn ipv6_clients_count_by_their_64() {
    let h = limited().await;
    let change_email = |peer: String| {
        let h = &h;
        async move {
            call_from(
                h,
                &peer,
                Method::POST,
                "/api/auth/change-email",
                Some(json!({})),
                &[],
            )
            .await
            .status
        }
    };
    for host in ["1", "abcd:1", "ffff:ffff:1"] {
        change_email(format!("[2001:db8:1:2::{host}]:1")).await;
    }
    let status = change_email("[2001:db8:1:2:9::9]:1".into()).await;
    assert_eq!(status, 429, "one /64, one bucket");
    let status = change_email("[2001:db8:1:3::1]:1".into()).await;
    assert_ne!(status, 429, "another /64");
}

#[tokio::test]
async fn failed_sign_ins_slow_the_account_not_its_owner_elsewhere() {
    let h = harness_with(|c| {
        c.rate_limit.enabled = true;
        // Only the account rules here: the per-path rule would stop each address first.
        c.rate_limit.rules.insert(
            "/sign-in/*".into(),
            gatehouse_api::config::RateRule {
                window: 10,
                max: 1000,
            },
        );
    })
    .await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    for _ in 0..10 {
        sign_in(&h, "198.51.100.20:1", "ann@example.com", "wrong-password")
            .await
            .expect(401);
    }
    // That address is held back for Ann, even with the right password …
    let r = sign_in(&h, "198.51.100.20:1", "ann@example.com", PW)
        .await
        .expect(429);
    assert!(retry_after(&r) > 10);
    // … Ann from her own address is not, and neither is another account from that address.
    sign_in(&h, "198.51.100.99:1", "ann@example.com", PW)
        .await
        .expect(200);
    h.sign_up("bob@example.com", PW).await.expect(200);
    sign_in(&h, "198.51.100.20:1", "bob@example.com", PW)
        .await
        .expect(200);
    // 50 failures from many addresses hold every address back for the window's rest …
    for i in 0..40 {
        sign_in(
            &h,
            &format!("192.0.2.{i}:1"),
            "ann@example.com",
            "wrong-password",
        )
        .await
        .expect(401);
    }
    sign_in(&h, "198.51.100.99:1", "ann@example.com", PW)
        .await
        .expect(429);
    // … and no longer: then Ann signs in again.
    h.clock.advance(Duration::seconds(901));
    sign_in(&h, "198.51.100.99:1", "ann@example.com", PW)
        .await
        .expect(200);
    // Unknown addresses are counted the same (the answer does not tell them apart).
    for _ in 0..10 {
        sign_in(&h, "198.51.100.30:1", "ghost@example.com", "wrong-password")
            .await
            .expect(401);
    }
    sign_in(&h, "198.51.100.30:1", "ghost@example.com", "wrong-password")
        .await
        .expect(429);
}

#[tokio::test]
async fn mail_per_recipient_holds_under_50_concurrent_requests() {
    let h = limited().await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    for email in ["ann@example.com", "nobody@example.com"] {
        assert_eq!(reset_race(&h, &h, email).await, 10, "{email}");
    }
    // Exactly ten reset mails reached Ann (written in the background).
    let mut mails = 0;
    for _ in 0..50 {
        mails = outbox(&h)
            .iter()
            .filter(|m| m["kind"] == "reset-password" && m["to"] == "ann@example.com")
            .count();
        if mails == 10 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(mails, 10);
    // Other mail to that address waits as well.
    let r = call_from(
        &h,
        "198.51.100.40:1",
        Method::POST,
        "/api/auth/send-verification-email",
        Some(json!({"email": "ann@example.com"})),
        &[],
    )
    .await
    .expect(429);
    assert!(retry_after(&r) > 60);
}

/// `request-password-reset` for `email` from 50 addresses at once, half through each server
/// (or all through one): how many were answered 200 (the others must be 429).
async fn reset_race(a: &H, b: &H, email: &str) -> usize {
    let answers = join_all((0..50).map(|i| async move {
        call_from(
            if i % 2 == 0 { a } else { b },
            &format!("192.0.2.{i}:1"),
            Method::POST,
            "/api/auth/request-password-reset",
            Some(json!({"email": email})),
            &[],
        )
        .await
        .status
        .as_u16()
    }))
    .await;
    assert!(
        answers.iter().all(|s| *s == 200 || *s == 429),
        "{answers:?}"
    );
    answers.iter().filter(|s| **s == 200).count()
}

#[tokio::test]
async fn processes_on_one_store_share_their_limits() {
    let tweak = |c: &mut gatehouse_api::config::Config| {
        c.rate_limit.enabled = true;
        c.rate_limit.max = 5;
    };
    let a = harness_with(tweak).await;
    let b = same_store(&a, tweak).await;
    assert_eq!(
        a.state.config.rate_limit.storage,
        gatehouse_api::config::RateLimitStorage::Store,
        "the default"
    );
    a.sign_up("ann@example.com", PW).await.expect(200);
    // Sign-in (3 per 10 s per address) counts across both processes.
    for h in [&a, &b, &a] {
        sign_in(h, "198.51.100.1:1", "ann@example.com", PW)
            .await
            .expect(200);
    }
    sign_in(&b, "198.51.100.1:1", "ann@example.com", PW)
        .await
        .expect(429);
    // So does mail to one recipient: ten of 50 requests raced through both.
    assert_eq!(reset_race(&a, &b, "ann@example.com").await, 10);
    // The general rule guards each process: 5 each, the sixth refused.
    async fn session(h: &H) -> Resp {
        call_from(
            h,
            "198.51.100.2:1",
            Method::GET,
            "/api/auth/get-session",
            None,
            &[],
        )
        .await
    }
    for _ in 0..5 {
        session(&a).await.expect(200);
        session(&b).await.expect(200);
    }
    session(&a).await.expect(429);
    session(&b).await.expect(429);

    // With `storage = "memory"`, each process counts alone: twice the limits.
    let memory = |c: &mut gatehouse_api::config::Config| {
        c.rate_limit.enabled = true;
        c.rate_limit.storage = gatehouse_api::config::RateLimitStorage::Memory;
    };
    let c = harness_with(memory).await;
    let d = same_store(&c, memory).await;
    c.sign_up("ann@example.com", PW).await.expect(200);
    for h in [&c, &d, &c, &d, &c, &d] {
        sign_in(h, "198.51.100.1:1", "ann@example.com", PW)
            .await
            .expect(200);
    }
    assert_eq!(reset_race(&c, &d, "ann@example.com").await, 20);
}

#[tokio::test]
async fn turned_off_nothing_is_limited() {
    let h = harness().await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    for _ in 0..20 {
        sign_in(&h, "198.51.100.1:1", "ann@example.com", "wrong-password")
            .await
            .expect(401);
    }
    sign_in(&h, "198.51.100.1:1", "ann@example.com", PW)
        .await
        .expect(200);
}

#[tokio::test]
async fn request_ids_are_kept_or_made_and_answered() {
    let h = harness().await;
    let r = h
        .call(
            Method::GET,
            "/api/auth/ok",
            None,
            None,
            &[("x-request-id", "edge-7f3a.1:b_2")],
        )
        .await
        .expect(200);
    assert_eq!(r.headers.get("x-request-id").unwrap(), "edge-7f3a.1:b_2");
    // None, or one that is not an id (too long, odd characters): a new one.
    let long = "a".repeat(129);
    for sent in [None, Some("bad id with spaces"), Some(long.as_str())] {
        let extra: Vec<(&str, &str)> = sent.map(|s| ("x-request-id", s)).into_iter().collect();
        let r = h
            .call(Method::GET, "/api/auth/get-session", None, None, &extra)
            .await;
        let id = r.headers.get("x-request-id").unwrap().to_str().unwrap();
        assert_eq!(id.len(), 24, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(Some(id), sent);
    }
    // Errors carry it too.
    let r = h.get("/api/auth/nope", None).await.expect(404);
    assert!(r.headers.contains_key("x-request-id"));
}

#[tokio::test]
async fn one_client_cannot_use_up_an_addresss_mail_allowance() {
    let h = harness_with(|c| {
        c.rate_limit.enabled = true;
        // Only the recipient limits here: the per-path rule would stop the address first.
        c.rate_limit.rules.insert(
            "/request-password-reset".into(),
            gatehouse_api::config::RateRule {
                window: 60,
                max: 1000,
            },
        );
    })
    .await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    let reset = |peer: &'static str| {
        let h = &h;
        async move {
            call_from(
                h,
                peer,
                Method::POST,
                "/api/auth/request-password-reset",
                Some(json!({"email": "ann@example.com"})),
                &[],
            )
            .await
            .status
            .as_u16()
        }
    };
    // An attacker's address gets 3, then nothing, however often it asks …
    for i in 0..20 {
        assert_eq!(reset("203.0.113.66:1").await, if i < 3 { 200 } else { 429 });
    }
    // … and Ann, from her own address, still gets her reset mail.
    assert_eq!(reset("198.51.100.5:1").await, 200);
}
