//! API keys on two processes: uses of one key spread over both pass exactly as often as its
//! quota and its rate limit allow, and a key deleted through one stops on the other within
//! the second its lookup may be kept.
use super::{Backend, Pair};
use crate::common::Server;
use futures::future::join_all;
use serde_json::json;

const USES: usize = 16;

impl Pair {
    /// `GET /get-session` on `s` with `key` alone: the status and the error code.
    async fn with_key(&self, s: &Server, key: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("{}/get-session", s.base))
            .header("x-api-key", key)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: serde_json::Value = r.json().await.unwrap_or_default();
        assert!(status < 500, "{status} {body}");
        (status, body["code"].as_str().unwrap_or_default().to_owned())
    }
}

pub(super) async fn a_keys_quota_and_rate_limit_hold_across_processes(backend: Backend) {
    let Some(p) = super::pair(backend, &[]) else {
        return;
    };
    let (cookie, _) = p.user("keys@example.com").await;
    for (body, allowed, refusal) in [
        (
            json!({"remaining": 5, "rateLimitEnabled": false}),
            5,
            "USAGE_EXCEEDED",
        ),
        (
            json!({"rateLimitMax": 4, "rateLimitTimeWindow": 600_000}),
            4,
            "RATE_LIMITED",
        ),
    ] {
        let made = p
            .call(
                &p.a,
                reqwest::Method::POST,
                "/api-key/create",
                Some(body),
                Some(&cookie),
                true,
            )
            .await;
        assert_eq!(made.status, 200, "{}", made.body);
        let key = made.body["key"].as_str().unwrap().to_owned();
        let uses = (0..USES).map(|i| p.with_key(p.pick(i), &key));
        let results = join_all(uses).await;
        let passed = results.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(passed, allowed, "{results:?}");
        assert!(
            results.iter().all(|(s, c)| *s == 200 || c == refusal),
            "{results:?}"
        );
    }
    // Deleted through A while B has just read it: B refuses it within its second.
    let made = p
        .post(
            &p.a,
            "/api-key/create",
            json!({"name": "gone"}),
            Some(&cookie),
        )
        .await;
    let key = made.body["key"].as_str().unwrap().to_owned();
    assert_eq!(p.with_key(&p.b, &key).await.0, 200);
    let gone = p
        .post(
            &p.a,
            "/api-key/delete",
            json!({"keyId": made.body["id"]}),
            Some(&cookie),
        )
        .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(p.with_key(&p.a, &key).await.0, 401, "at once where deleted");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        p.with_key(&p.b, &key).await,
        (401, "INVALID_API_KEY".to_owned())
    );
}
