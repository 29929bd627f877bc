//! Webhooks through HTTP, to a real receiver on loopback that verifies every delivery with
//! the Standard Webhooks library: an organization's events in order with their objects,
//! retries after 500s and timeouts, a failing endpoint disabled, redelivery, who may manage
//! endpoints, the server's own endpoints, and private addresses refused when the URL is saved
//! and on the connection.
use crate::common::*;
use crate::organization::{create_org, user};
use poem::http::Method;
use serde_json::{json, Value};
use std::time::Duration;

mod receiver;
pub(crate) use receiver::{verified, Plan, Receiver};

const SERVER_KEY: &str = "webhooks-server-key-0123456789abcdefghij";

async fn hook_harness(tweak: impl FnOnce(&mut gatehouse_api::config::Config)) -> H {
    hook_harness_on(Backend::Sqlite, tweak)
        .await
        .expect("the embedded store")
}

/// [`hook_harness`] on `backend` (`None`: no CQL node named).
async fn hook_harness_on(
    backend: Backend,
    tweak: impl FnOnce(&mut gatehouse_api::config::Config),
) -> Option<H> {
    harness_on(backend, |c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(SERVER_KEY));
        c.webhooks.allow_http = true;
        c.webhooks.allow_private_addresses = true;
        tweak(c);
    })
    .await
}

on_both_stores!(
    an_organization_hears_of_its_events_signed_in_order_with_their_objects,
    failures_are_retried_after_their_delays_then_failed_and_the_endpoint_disabled,
    the_servers_own_endpoint_hears_of_every_user,
    a_redirect_is_not_followed_and_counts_as_a_failure,
    a_first_try_still_out_after_a_second_is_stored_then_settled,
);

async fn as_server(h: &H, method: Method, path: &str, body: Option<Value>) -> Resp {
    let bearer = format!("Bearer {SERVER_KEY}");
    h.call(
        method,
        path,
        body,
        None,
        &[("authorization", &bearer), ("origin", ORIGIN)],
    )
    .await
}

/// Registers an endpoint (`POST /organization/webhook/create`) as `cookie`.
async fn create_hook(h: &H, cookie: &str, body: Value) -> Resp {
    h.post("/api/auth/organization/webhook/create", body, Some(cookie))
        .await
}

/// A new user owning a new organization with one endpoint at `url` for `events`: the user's
/// cookie, the organization's id and the endpoint as made (with its secret).
async fn org_with_hook(
    h: &H,
    email: &str,
    slug: &str,
    url: &str,
    events: Value,
) -> (String, String, Value) {
    let (owner, _) = user(h, email).await;
    let org = create_org(h, &owner, slug).await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let made = create_hook(
        h,
        &owner,
        json!({"organizationId": org_id, "url": url, "events": events}),
    )
    .await
    .expect(200)
    .json();
    (owner, org_id, made)
}

/// Renames `org`: an `organization.updated` event.
async fn rename(h: &H, cookie: &str, org: &str, name: &str) {
    h.post(
        "/api/auth/organization/update",
        json!({"organizationId": org, "data": {"name": name}}),
        Some(cookie),
    )
    .await
    .expect(200);
}

async fn deliveries(h: &H, cookie: &str, org: &str, hook: &str) -> Vec<Value> {
    let r = h
        .get(
            &format!(
                "/api/auth/organization/webhook/deliveries?organizationId={org}&webhookId={hook}"
            ),
            Some(cookie),
        )
        .await
        .expect(200)
        .json();
    r["deliveries"].as_array().unwrap().clone()
}

/// Waits until the newest delivery of `hook` is `status` with `attempts` attempts.
async fn settled(
    h: &H,
    cookie: &str,
    org: &str,
    hook: &str,
    status: &str,
    attempts: usize,
) -> Value {
    for _ in 0..400 {
        let list = deliveries(h, cookie, org, hook).await;
        if let Some(d) = list.first() {
            if d["status"] == status && d["attempts"].as_array().unwrap().len() == attempts {
                return d.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "no {status} delivery with {attempts} attempts: {:?}",
        deliveries(h, cookie, org, hook).await
    );
}

async fn an_organization_hears_of_its_events_signed_in_order_with_their_objects(backend: Backend) {
    let Some(h) = hook_harness_on(backend, |_| {}).await else {
        return;
    };
    let rx = Receiver::start(vec![]).await;
    let (owner, _) = user(&h, "hook-owner@example.com").await;
    let org = create_org(&h, &owner, "hooked").await;
    let org_id = org["id"].as_str().unwrap();
    // The endpoint comes after the organization (the test's clock stands still otherwise).
    h.clock.advance(chrono::Duration::seconds(1));
    let made = create_hook(&h, &owner, json!({"organizationId": org_id, "url": rx.url, "events": ["member.*", "organization.updated", "member.*"], "description": " crm "}))
        .await
        .expect(200)
        .json();
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{made}");
    assert_eq!(made["events"], json!(["member.*", "organization.updated"]));
    assert_eq!(made["description"], "crm");
    assert_eq!(made["organizationId"], org_id);
    let hook = made["id"].as_str().unwrap().to_owned();
    // Never shown again, nor stored as such.
    let list = h
        .get(
            &format!("/api/auth/organization/webhook/list?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(!list.text.contains(&secret));
    assert_eq!(list.json()[0]["id"], hook.as_str());
    let stored = h.store.get_webhook(&hook).await.unwrap().unwrap();
    assert!(!stored.secret.contains(&secret[6..]), "sealed at rest");

    // Two events after the endpoint was made: the rename, then the new member.
    rename(&h, &owner, org_id, "Hooked Inc").await;
    let (_, member_id) = user(&h, "hook-member@example.com").await;
    as_server(
        &h,
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": member_id, "role": "member", "organizationId": org_id})),
    )
    .await
    .expect(200);
    let got = rx.wait_for(2).await;
    let first = verified(&got[0], &secret);
    let second = verified(&got[1], &secret);
    assert_eq!(first["type"], "organization.updated");
    assert_eq!(first["data"]["name"], "Hooked Inc");
    assert_eq!(second["type"], "member.added");
    assert_eq!(second["data"]["organizationId"], org_id);
    assert_eq!(second["data"]["user"]["email"], "hook-member@example.com");
    assert!(second["timestamp"].as_str().unwrap().ends_with('Z'));
    for g in &got {
        assert!(!g.body.contains("token"), "no secrets: {}", g.body);
        assert_eq!(g.headers["content-type"], "application/json");
    }
    // Nothing else: not organization.created (before it), not the sign-ups (not asked).
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(rx.got().len(), 2);
    let d = settled(&h, &owner, org_id, &hook, "succeeded", 1).await;
    assert_eq!(d["type"], "member.added");
    assert_eq!(d["attempts"][0]["statusCode"], 200);
    assert_eq!(d["id"], got[1].headers["webhook-id"].to_str().unwrap());
    assert_eq!(d["payload"]["data"]["userId"], member_id.as_str());
    let actions = audit_actions(&h).await;
    assert!(
        actions.contains(&"webhook.created".to_owned()),
        "{actions:?}"
    );

    // Rotation: the new secret signs, and the old one still does during the overlap.
    let rotated = h
        .post(
            "/api/auth/organization/webhook/rotate-secret",
            json!({"organizationId": org_id, "webhookId": hook}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let new_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, secret);
    assert!(rotated["previousSecretUntil"].is_string());
    rename(&h, &owner, org_id, "Hooked Two").await;
    let got = rx.wait_for(3).await;
    assert_eq!(verified(&got[2], &new_secret)["data"]["name"], "Hooked Two");
    verified(&got[2], &secret);
    let sigs = got[2].headers["webhook-signature"].to_str().unwrap();
    assert_eq!(sigs.split(' ').count(), 2, "{sigs}");

    // Deleted: nothing more, and its deliveries are gone.
    h.post(
        "/api/auth/organization/webhook/delete",
        json!({"organizationId": org_id, "webhookId": hook}),
        Some(&owner),
    )
    .await
    .expect(200);
    rename(&h, &owner, org_id, "Hooked Three").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rx.got().len(), 3);
    let gone = h
        .get(
            &format!(
                "/api/auth/organization/webhook/deliveries?organizationId={org_id}&webhookId={hook}"
            ),
            Some(&owner),
        )
        .await;
    assert_eq!(gone.status.as_u16(), 404);
    assert_eq!(gone.code(), "WEBHOOK_NOT_FOUND");
}

async fn failures_are_retried_after_their_delays_then_failed_and_the_endpoint_disabled(
    backend: Backend,
) {
    let Some(h) = hook_harness_on(backend, |c| {
        c.webhooks.retry_delays = vec![60, 120];
        c.webhooks.timeout_ms = 400;
        c.webhooks.disable_after = 2;
    })
    .await
    else {
        return;
    };
    // A 500, then no answer in time, then 200.
    let rx = Receiver::start(vec![Plan::Status(500), Plan::Slow(Duration::from_secs(2))]).await;
    let (owner, org_id, made) = org_with_hook(
        &h,
        "retry-owner@example.com",
        "retry",
        &rx.url,
        json!(["organization.updated"]),
    )
    .await;
    let org_id = org_id.as_str();
    let hook = made["id"].as_str().unwrap().to_owned();
    let secret = made["secret"].as_str().unwrap().to_owned();
    rename(&h, &owner, org_id, "Once").await;
    let d = settled(&h, &owner, org_id, &hook, "pending", 1).await;
    assert_eq!(d["attempts"][0]["statusCode"], 500);
    assert!(d["nextAttemptAt"].is_string());
    // Not before its delay (60 s of the server's clock).
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rx.got().len(), 1);
    h.clock.advance(chrono::Duration::seconds(61));
    let d = settled(&h, &owner, org_id, &hook, "pending", 2).await;
    let err = d["attempts"][1]["error"].as_str().unwrap();
    assert!(err.contains("no answer within 400 ms"), "{err}");
    assert_eq!(d["attempts"][1]["statusCode"], Value::Null);
    h.clock.advance(chrono::Duration::seconds(121));
    let d = settled(&h, &owner, org_id, &hook, "succeeded", 3).await;
    let got = rx.got();
    assert_eq!(got.len(), 3);
    // One message: the same webhook-id and body on every attempt, each signed.
    for g in &got {
        assert_eq!(g.headers["webhook-id"], got[0].headers["webhook-id"]);
        assert_eq!(verified(g, &secret)["data"]["name"], "Once");
    }
    assert_eq!(d["id"], got[0].headers["webhook-id"].to_str().unwrap());

    // Redelivered: one more attempt with the same id.
    let again = h
        .post(
            "/api/auth/organization/webhook/redeliver",
            json!({"organizationId": org_id, "deliveryId": d["id"]}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(again["status"], "pending");
    let d = settled(&h, &owner, org_id, &hook, "succeeded", 4).await;
    assert_eq!(rx.got().len(), 4);
    assert_eq!(
        rx.got()[3].headers["webhook-id"],
        got[0].headers["webhook-id"]
    );
    assert_eq!(d["attempts"][3]["statusCode"], 200);

    // Two deliveries that fail through every retry: failed, and the endpoint disabled.
    rx.log
        .plan
        .lock()
        .unwrap()
        .extend((0..6).map(|_| Plan::Status(503)));
    rename(&h, &owner, org_id, "Twice").await;
    rename(&h, &owner, org_id, "Thrice").await;
    // Each retry once its delay has passed on the server's clock, until the endpoint is off
    // (on the CQL node under the whole suite's load that has taken over 30 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(150);
    while std::time::Instant::now() < deadline {
        if !h.store.get_webhook(&hook).await.unwrap().unwrap().enabled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
        h.clock.advance(chrono::Duration::seconds(200));
    }
    let list = h
        .get(
            &format!("/api/auth/organization/webhook/list?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(list[0]["enabled"], false, "{list}");
    assert_eq!(list[0]["disabledReason"], "failing");
    let all = deliveries(&h, &owner, org_id, &hook).await;
    assert_eq!(all[0]["status"], "failed", "{all:?}");
    assert_eq!(all[1]["status"], "failed");
    assert_eq!(all[0]["attempts"].as_array().unwrap().len(), 3);
    assert!(audit_actions(&h)
        .await
        .contains(&"webhook.disabled".to_owned()));
    // Turned on again by its owner: the count starts over.
    let on = h
        .post(
            "/api/auth/organization/webhook/update",
            json!({"organizationId": org_id, "webhookId": hook, "enabled": true}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (on["enabled"].clone(), on["failuresInRow"].clone()),
        (json!(true), json!(0))
    );
    // A pending delivery cannot be redelivered; an unknown one is not found.
    let r = h
        .post(
            "/api/auth/organization/webhook/redeliver",
            json!({"organizationId": org_id, "deliveryId": "msg_nope"}),
            Some(&owner),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "WEBHOOK_DELIVERY_NOT_FOUND".into())
    );
}

#[tokio::test]
async fn only_members_allowed_manage_endpoints_and_bad_input_is_refused() {
    let h = hook_harness(|_| {}).await;
    let (owner, _) = user(&h, "perm-owner@example.com").await;
    let (member, member_id) = user(&h, "perm-member@example.com").await;
    let (stranger, _) = user(&h, "perm-stranger@example.com").await;
    let org = create_org(&h, &owner, "perm").await;
    let org_id = org["id"].as_str().unwrap();
    as_server(
        &h,
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": member_id, "role": "member", "organizationId": org_id})),
    )
    .await
    .expect(200);
    let body = json!({"organizationId": org_id, "url": "https://hooks.example.com/in", "events": ["member.added"]});
    let create = |cookie: &str, body: Value| {
        let cookie = cookie.to_owned();
        let h = &h;
        async move { create_hook(h, &cookie, body).await }
    };
    let r = create(&member, body.clone()).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "YOU_ARE_NOT_ALLOWED_TO_MANAGE_WEBHOOKS".into())
    );
    let r = create(&stranger, body.clone()).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    for (events, code) in [
        (json!([]), "VALIDATION_ERROR"),
        (json!(["user.exploded"]), "INVALID_WEBHOOK_EVENTS"),
        (json!(["nothing.*"]), "INVALID_WEBHOOK_EVENTS"),
    ] {
        let r = create(&owner, json!({"organizationId": org_id, "url": "https://hooks.example.com/in", "events": events})).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, code.into()),
            "{}",
            r.text
        );
    }
    for url in ["ftp://hooks.example.com/", "hooks.example.com/in", ""] {
        let r = create(
            &owner,
            json!({"organizationId": org_id, "url": url, "events": ["*"]}),
        )
        .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "INVALID_WEBHOOK_URL".into()),
            "{url}"
        );
    }
    let made = create(&owner, body.clone()).await.expect(200).json();
    let hook = made["id"].as_str().unwrap();
    // Another organization's owner cannot reach it, even by its id.
    let other = create_org(&h, &stranger, "perm-other").await;
    let r = h
        .post(
            "/api/auth/organization/webhook/delete",
            json!({"organizationId": other["id"], "webhookId": hook}),
            Some(&stranger),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "WEBHOOK_NOT_FOUND".into())
    );
    // A member cannot read them either; the owner can.
    let r = h
        .get(
            &format!("/api/auth/organization/webhook/list?organizationId={org_id}"),
            Some(&member),
        )
        .await;
    assert_eq!(r.status.as_u16(), 403);
    // An API key does not manage webhooks (its secrets are shown).
    let key = h
        .post(
            "/api/auth/api-key/create",
            json!({"name": "k"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = h
        .call(
            Method::GET,
            &format!("/api/auth/organization/webhook/list?organizationId={org_id}"),
            None,
            None,
            &[("x-api-key", &key), ("origin", ORIGIN)],
        )
        .await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.text);
    // The server's own endpoints: administrators (or the server key) only.
    let r = h
        .post(
            "/api/auth/admin/webhook/create",
            json!({"url": "https://hooks.example.com/all", "events": ["*"]}),
            Some(&owner),
        )
        .await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    let admin = as_server(
        &h,
        Method::POST,
        "/api/auth/admin/webhook/create",
        Some(json!({"url": "https://hooks.example.com/all", "events": ["*"]})),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(admin["organizationId"], Value::Null);
    let listed = as_server(&h, Method::GET, "/api/auth/admin/webhook/list", None)
        .await
        .expect(200)
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // An organization's routes do not reach the server's endpoint.
    let r = h
        .post(
            "/api/auth/organization/webhook/delete",
            json!({"organizationId": org_id, "webhookId": admin["id"]}),
            Some(&owner),
        )
        .await;
    assert_eq!(r.status.as_u16(), 404);
    // The limit of endpoints.
    let h2 = hook_harness(|c| c.webhooks.max_endpoints = 1).await;
    let (o2, _) = user(&h2, "limit@example.com").await;
    let org2 = create_org(&h2, &o2, "limit").await;
    let b2 = json!({"organizationId": org2["id"], "url": "https://hooks.example.com/in", "events": ["*"]});
    create_hook(&h2, &o2, b2.clone()).await.expect(200);
    let r = create_hook(&h2, &o2, b2).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "TOO_MANY_WEBHOOKS".into())
    );
}

async fn the_servers_own_endpoint_hears_of_every_user(backend: Backend) {
    let Some(h) = hook_harness_on(backend, |_| {}).await else {
        return;
    };
    let rx = Receiver::start(vec![]).await;
    let made = as_server(
        &h,
        Method::POST,
        "/api/auth/admin/webhook/create",
        Some(json!({"url": rx.url, "events": ["user.created", "session.*"]})),
    )
    .await
    .expect(200)
    .json();
    let secret = made["secret"].as_str().unwrap();
    let (_, id) = user(&h, "everyone@example.com").await;
    let got = rx.wait_for(2).await;
    let bodies: Vec<Value> = got.iter().map(|g| verified(g, secret)).collect();
    let types: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["user.created", "session.created"]);
    assert_eq!(bodies[0]["data"]["id"], id.as_str());
    assert_eq!(bodies[1]["data"]["userId"], id.as_str());
    assert!(bodies[1]["data"].get("token").is_none());
}

#[tokio::test]
async fn private_addresses_are_refused_on_save_and_on_connection() {
    let h = harness_with(|c| c.webhooks.allow_http = true).await;
    let rx = Receiver::start(vec![]).await;
    let (owner, _) = user(&h, "ssrf@example.com").await;
    let org = create_org(&h, &owner, "ssrf").await;
    let org_id = org["id"].as_str().unwrap();
    let port = rx.url.split(':').nth(2).unwrap().split('/').next().unwrap();
    for url in [
        rx.url.clone(),
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://[::1]:{port}/hook"),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "http://10.0.0.8/hook".to_owned(),
    ] {
        let r = create_hook(
            &h,
            &owner,
            json!({"organizationId": org_id, "url": url, "events": ["*"]}),
        )
        .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "WEBHOOK_URL_NOT_ALLOWED".into()),
            "{url}"
        );
    }
    // https only by default.
    let strict = harness().await;
    let (o, _) = user(&strict, "strict@example.com").await;
    let org2 = create_org(&strict, &o, "strict").await;
    let r = create_hook(
        &strict,
        &o,
        json!({"organizationId": org2["id"], "url": "http://hooks.example.com/in", "events": ["*"]}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "INVALID_WEBHOOK_URL".into())
    );

    // Saved while allowed (a name resolving to loopback), then sent by a process that does
    // not allow it: refused on the connection, nothing reaches the receiver.
    let lax = hook_harness(|c| c.webhooks.enabled = false).await;
    let (o3, org3_id, made) = org_with_hook(
        &lax,
        "rebind@example.com",
        "rebind",
        &rx.url,
        json!(["organization.updated"]),
    )
    .await;
    let org3_id = org3_id.as_str();
    let hook = made["id"].as_str().unwrap();
    let sender = same_store(&lax, |c| {
        c.webhooks.allow_http = true;
        c.webhooks.retry_delays = vec![];
    })
    .await;
    rename(&lax, &o3, org3_id, "Rebound").await;
    let d = settled(&lax, &o3, org3_id, hook, "failed", 1).await;
    let err = d["attempts"][0]["error"].as_str().unwrap();
    assert!(err.contains("private, loopback"), "{err}");
    assert!(rx.got().is_empty());
    drop(sender);
}

async fn a_redirect_is_not_followed_and_counts_as_a_failure(backend: Backend) {
    let Some(h) = hook_harness_on(backend, |c| c.webhooks.retry_delays = vec![]).await else {
        return;
    };
    let rx = Receiver::start(vec![Plan::Status(307)]).await;
    let (owner, org_id, made) = org_with_hook(
        &h,
        "redirect@example.com",
        "redirect",
        &rx.url,
        json!(["organization.updated"]),
    )
    .await;
    let hook = made["id"].as_str().unwrap();
    rename(&h, &owner, &org_id, "Moved").await;
    let d = settled(&h, &owner, &org_id, hook, "failed", 1).await;
    assert_eq!(d["attempts"][0]["statusCode"], 307);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.got().len(), 1, "not followed");
}

/// A delivery's first try is made before the delivery is stored; one still out after a
/// second is stored pending (leased, so no other round sends it) and settled when it ends.
async fn a_first_try_still_out_after_a_second_is_stored_then_settled(backend: Backend) {
    let Some(h) = hook_harness_on(backend, |c| c.webhooks.timeout_ms = 6000).await else {
        return;
    };
    let rx = Receiver::start(vec![Plan::Slow(Duration::from_secs(3))]).await;
    let (owner, org_id, made) = org_with_hook(
        &h,
        "slow-owner@example.com",
        "slow",
        &rx.url,
        json!(["organization.updated"]),
    )
    .await;
    let hook = made["id"].as_str().unwrap().to_owned();
    rename(&h, &owner, &org_id, "Slowly").await;
    let mut arrived = None;
    for _ in 0..400 {
        if !rx.got().is_empty() {
            arrived = Some(std::time::Instant::now());
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let arrived = arrived.expect("the first try reached the receiver");
    let d = settled(&h, &owner, &org_id, &hook, "pending", 0).await;
    assert!(
        arrived.elapsed() < Duration::from_millis(2500),
        "stored only after {:?}",
        arrived.elapsed()
    );
    assert_eq!(rx.got().len(), 1, "{d}");
    let d = settled(&h, &owner, &org_id, &hook, "succeeded", 1).await;
    assert_eq!(d["attempts"][0]["statusCode"], 200);
    assert_eq!(rx.got().len(), 1, "sent once");
}
