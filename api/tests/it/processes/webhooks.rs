//! Webhooks on two real processes: a process killed (`kill -9`) right after its decisions,
//! with a delivery in flight, loses none of their events — its lease runs out and they are
//! sent after the restart; and a backlog that both processes deliver reaches each endpoint
//! once per event, never sent twice at the same moment.
use super::{Backend, Pair};
use crate::webhooks::{verified, Receiver};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const ENV: &[(&str, &str)] = &[
    ("GATEHOUSE_WEBHOOKS__ALLOW_HTTP", "true"),
    ("GATEHOUSE_WEBHOOKS__ALLOW_PRIVATE_ADDRESSES", "true"),
    ("GATEHOUSE_WEBHOOKS__TIMEOUT_MS", "1000"),
    (
        "GATEHOUSE_WEBHOOKS__RETRY_DELAYS",
        "[1, 1, 1, 1, 1, 1, 1, 1]",
    ),
];

impl Pair {
    /// An organization (made on A by `cookie`) with an endpoint at `url` for its renames:
    /// the organization's id and the endpoint's secret.
    async fn hooked_org(&self, cookie: &str, url: &str) -> (String, String) {
        let (org, secret, _) = self.hooked_org_with_id(cookie, url).await;
        (org, secret)
    }

    /// [`Self::hooked_org`], and the endpoint's id.
    async fn hooked_org_with_id(&self, cookie: &str, url: &str) -> (String, String, String) {
        let org = self.new_org(cookie).await;
        let made = self
            .post(
                &self.a,
                "/organization/webhook/create",
                json!({"organizationId": org, "url": url, "events": ["organization.updated"]}),
                Some(cookie),
            )
            .await;
        assert_eq!(made.status, 200, "{}", made.body);
        (
            org,
            made.body["secret"].as_str().unwrap().to_owned(),
            made.body["id"].as_str().unwrap().to_owned(),
        )
    }

    /// The stored deliveries of endpoint `hook` of `org`, as B lists them.
    async fn deliveries(&self, cookie: &str, org: &str, hook: &str) -> Vec<Value> {
        let r = self
            .get(
                &self.b,
                &format!("/organization/webhook/deliveries?organizationId={org}&webhookId={hook}"),
                cookie,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["deliveries"].as_array().unwrap().clone()
    }

    async fn rename(&self, i: usize, org: &str, cookie: &str, name: &str) {
        let r = self
            .post(
                self.pick(i),
                "/organization/update",
                json!({"organizationId": org, "data": {"name": name}}),
                Some(cookie),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

/// The names the receiver heard of, each verified.
fn names(rx: &Receiver, secret: &str) -> Vec<String> {
    rx.got()
        .iter()
        .map(|g| {
            let body: Value = verified(g, secret);
            body["data"]["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

pub(super) async fn a_process_killed_mid_delivery_loses_no_event(backend: Backend) {
    let rx = Receiver::start(vec![]).await;
    // Each answer takes long enough for the kill to come while one is in flight.
    rx.pause(Duration::from_millis(700));
    let Some(mut p) = super::pair(backend, ENV) else {
        return;
    };
    // B takes no part: it only would deliver what A left.
    p.b.child.kill().unwrap();
    let (cookie, _) = p.user("killed@example.com").await;
    let (org, secret) = p.hooked_org(&cookie, &rx.url).await;
    let wanted: Vec<String> = (0..5).map(|i| format!("Name {i}")).collect();
    for n in &wanted {
        p.rename(0, &org, &cookie, n).await;
    }
    // The first delivery is on its way: kill A now.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let before = rx.got().len();
    assert!(before < wanted.len(), "all delivered before the kill");
    p.kill_and_restart_a();
    rx.pause(Duration::ZERO);
    // Within the leases' time (the fan-out's 10 s, a delivery's (1 s + 1 s) × 5).
    rx.wait_for_within(wanted.len(), Duration::from_secs(60))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heard = names(&rx, &secret);
    for n in &wanted {
        assert!(heard.contains(n), "{n} lost: {heard:?}");
    }
    // At least once: only the delivery in flight at the kill may come twice.
    assert!(heard.len() <= wanted.len() + 1, "{heard:?}");
}

pub(super) async fn a_backlog_on_two_processes_is_delivered_once(backend: Backend) {
    let rx = Receiver::start(vec![]).await;
    rx.pause(Duration::from_millis(30));
    let Some(p) = super::pair(backend, ENV) else {
        return;
    };
    let (cookie, _) = p.user("backlog@example.com").await;
    let mut orgs = Vec::new();
    let mut hooks = Vec::new();
    for _ in 0..3 {
        let (org, secret, hook) = p.hooked_org_with_id(&cookie, &rx.url).await;
        hooks.push((org.clone(), hook));
        orgs.push((org, secret));
    }
    // Twelve renames of each organization, through both processes.
    let renames = orgs
        .iter()
        .flat_map(|(org, _)| (0..12).map(move |i| (i, org.clone(), format!("{org} {i}"))));
    futures::future::join_all(renames.clone().map(|(i, org, name)| {
        let (p, cookie) = (&p, &cookie);
        async move { p.rename(i, &org, cookie, &name).await }
    }))
    .await;
    let total = renames.count();
    rx.wait_for_within(total, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = rx.got();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for g in &got {
        *by_id
            .entry(g.headers["webhook-id"].to_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_id.len(), total, "one delivery per event and endpoint");
    assert!(by_id.values().all(|n| *n == 1), "sent twice: {by_id:?}");
    assert!(rx.log.overlaps.lock().unwrap().is_empty());
    // Each verified with its organization's endpoint's secret.
    for g in &got {
        let body: Value = serde_json::from_str(&g.body).unwrap();
        let name = body["data"]["name"].as_str().unwrap();
        let (_, secret) = orgs.iter().find(|(o, _)| name.starts_with(o)).unwrap();
        verified(g, secret);
    }
    // Each delivery is stored settled, with the one attempt that was made (a delivery left
    // pending would be sent again once its lease ran out).
    for (org, hook) in &hooks {
        let mut list = Vec::new();
        for _ in 0..100 {
            list = p.deliveries(&cookie, org, hook).await;
            if list.len() == 12 && list.iter().all(|d| d["status"] == "succeeded") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(list.len(), 12, "{list:?}");
        for d in &list {
            assert_eq!(d["status"], "succeeded", "{d}");
            assert_eq!(d["attempts"].as_array().unwrap().len(), 1, "{d}");
            assert_eq!(d["attempts"][0]["statusCode"], 200, "{d}");
        }
    }
}
