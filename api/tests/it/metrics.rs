//! Prometheus metrics: the exposition parses with a Prometheus text parser and moves with the
//! requests made; it is served on `metrics_listen` only.
use crate::common::*;
use poem::http::Method;
use poem::{Endpoint, EndpointExt, Request};
use serde_json::json;

const PW: &str = "correct-horse-battery";

/// Scrapes the state's metrics endpoint: `(metric name + sorted labels) → value`.
async fn scrape(h: &H) -> std::collections::BTreeMap<String, f64> {
    let ep = h.state.metrics_endpoint().map_to_response();
    let resp = ep
        .call(Request::builder().uri_str("/metrics").finish())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = resp.into_body().into_string().await.unwrap();
    parse(&text)
}

fn parse(text: &str) -> std::collections::BTreeMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    scrape
        .samples
        .into_iter()
        .filter_map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                prometheus_parse::Value::Histogram(h) => h.last().map(|b| b.count)?,
                _ => return None,
            };
            let mut labels: Vec<String> =
                s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            labels.sort();
            Some((format!("{}{{{}}}", s.metric, labels.join(",")), value))
        })
        .collect()
}

fn get(m: &std::collections::BTreeMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_parse_and_move_with_requests() {
    let h = harness().await;
    let before = scrape(&h).await;
    h.sign_up("ann@example.com", PW).await.expect(200);
    h.sign_in("ann@example.com", PW).await.expect(200);
    h.sign_in("ann@example.com", "wrong-password")
        .await
        .expect(401);
    h.get("/api/auth/ok", None).await.expect(200);
    h.get("/api/auth/no-such", None).await.expect(404);
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": "ann@example.com"}),
        None,
    )
    .await
    .expect(200);
    h.call(Method::GET, "/api/auth/callback/github", None, None, &[])
        .await;
    h.get("/account", None).await.expect(200);
    // Domain events are counted by the events consumer, after they are stored.
    let mut after = scrape(&h).await;
    for _ in 0..100 {
        if get(&after, "gatehouse_events_total{name=session.created}") >= 1.0 {
            break;
        }
        h.state.events_consumer.wake();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        after = scrape(&h).await;
    }
    let delta = |k: &str| get(&after, k) - get(&before, k);
    assert_eq!(
        delta("gatehouse_http_requests_total{method=GET,route=/ok,status=200}"),
        1.0
    );
    assert_eq!(
        delta("gatehouse_http_requests_total{method=POST,route=/sign-in/email,status=200}"),
        1.0
    );
    assert_eq!(
        delta("gatehouse_http_requests_total{method=POST,route=/sign-in/email,status=401}"),
        1.0
    );
    // Unknown paths and templated routes never become labels of their own.
    assert_eq!(
        delta("gatehouse_http_requests_total{method=GET,route=other,status=404}"),
        1.0
    );
    assert!(
        after.keys().any(|k| k.contains("route=/callback/:id")),
        "{:?}",
        after
            .keys()
            .filter(|k| k.contains("callback"))
            .collect::<Vec<_>>()
    );
    assert!(!after
        .keys()
        .any(|k| k.contains("no-such") || k.contains("github")));
    assert_eq!(
        delta("gatehouse_http_requests_total{method=GET,route=ui,status=200}"),
        1.0
    );
    assert_eq!(delta("gatehouse_sign_ins_total{outcome=success}"), 1.0);
    assert_eq!(delta("gatehouse_sign_ins_total{outcome=invalid}"), 1.0);
    assert!(delta("gatehouse_http_request_duration_seconds{route=/sign-in/email}") >= 2.0);
    // Sign-up hashes, sign-in verifies twice: every hash is timed; none is left queued.
    assert!(delta("gatehouse_password_hash_seconds{}") >= 3.0);
    assert_eq!(get(&after, "gatehouse_password_hash_queue{}"), 0.0);
    assert_eq!(
        delta("gatehouse_mails_total{kind=reset-password,outcome=written}"),
        1.0
    );
    assert_eq!(delta("gatehouse_events_total{name=user.created}"), 1.0);
    assert_eq!(delta("gatehouse_events_total{name=session.created}"), 2.0);
    // The user's actor is alive (it handled the sign-in).
    assert!(get(&after, "gatehouse_actors_live{kind=user}") >= 1.0);
    // Store round trips are timed by kind (the counts are the process's: tests run beside
    // each other, so only "moved" is certain).
    assert!(delta("gatehouse_store_call_seconds{backend=sqlite,call=read,outcome=ok}") >= 3.0);
    assert!(delta("gatehouse_store_call_seconds{backend=sqlite,call=write,outcome=ok}") >= 2.0);
}

#[tokio::test]
async fn rate_limit_refusals_are_counted() {
    let h = harness_with(|c| {
        c.rate_limit.enabled = true;
        c.rate_limit.mail_per_recipient = 1;
    })
    .await;
    let body = json!({"email": "someone@example.com"});
    h.post("/api/auth/request-password-reset", body.clone(), None)
        .await
        .expect(200);
    h.post("/api/auth/request-password-reset", body, None)
        .await
        .expect(429);
    let m = scrape(&h).await;
    assert_eq!(get(&m, "gatehouse_rate_limited_total{limit=mail}"), 1.0);
    assert_eq!(
        get(
            &m,
            "gatehouse_http_requests_total{method=POST,route=/request-password-reset,status=429}"
        ),
        1.0
    );
}

#[tokio::test]
async fn the_binary_serves_metrics_on_their_own_address_only() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        dir.path(),
        &[("GATEHOUSE_METRICS_LISTEN", metrics_addr.as_str())],
        None,
    );
    let http = reqwest::Client::new();
    http.get(format!("{}/ok", server.base))
        .send()
        .await
        .unwrap();
    let text = http
        .get(format!("http://{metrics_addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let m = parse(&text);
    assert!(
        get(
            &m,
            "gatehouse_http_requests_total{method=GET,route=/ok,status=200}"
        ) >= 1.0
    );
    // The public address has no metrics.
    let public = http
        .get(format!("http://{}/metrics", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);
    server.stop();
}
