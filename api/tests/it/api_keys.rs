//! API keys through HTTP: made once and shown once, acting as their user on session routes
//! (never on the sensitive ones), every refusal with 1.7's code, the server's own fields,
//! organization keys within their organization and permissions, and races for a key's quota
//! and rate limit on two processes.
use crate::common::*;
use crate::organization::{add_member, create_org, user};
use futures::future::join_all;
use poem::http::Method;
use serde_json::{json, Value};

const SERVER_KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";

async fn key_harness() -> H {
    harness_with(key_config).await
}

fn key_config(c: &mut gatehouse_api::config::Config) {
    c.server_key = Some(gatehouse_api::config::Secret::new(SERVER_KEY));
    c.limits.membership_limit = 100;
}

on_both_stores!(a_refusal_takes_the_same_time_whether_the_key_exists_or_not);

async fn create(h: &H, cookie: &str, body: Value) -> Resp {
    h.post("/api/auth/api-key/create", body, Some(cookie)).await
}

/// A request with `key` in `x-api-key` (and no cookie).
async fn with_key(h: &H, method: Method, path: &str, body: Option<Value>, key: &str) -> Resp {
    h.call(
        method,
        path,
        body,
        None,
        &[("x-api-key", key), ("origin", ORIGIN)],
    )
    .await
}

async fn as_server(h: &H, path: &str, body: Value) -> Resp {
    let bearer = format!("Bearer {SERVER_KEY}");
    h.call(
        Method::POST,
        path,
        Some(body),
        None,
        &[("authorization", &bearer), ("origin", ORIGIN)],
    )
    .await
}

#[tokio::test]
async fn a_key_is_shown_once_and_acts_as_its_user() {
    let h = key_harness().await;
    let (ann, ann_id) = user(&h, "ann@example.com").await;
    let made = create(&h, &ann, json!({"name": "ci", "prefix": "gh_"}))
        .await
        .expect(200)
        .json();
    let key = made["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("gh_") && key.len() == 3 + 64, "{key}");
    assert_eq!(made["start"], key[..6]);
    assert_eq!(made["referenceId"], ann_id.as_str());
    assert_eq!(made["rateLimitMax"], 10);
    assert_eq!(made["rateLimitTimeWindow"], 86_400_000);
    assert_eq!(made["remaining"], Value::Null);
    let stored = h
        .store
        .find_api_key(&gatehouse_api::plugins::api_key::hash_key(&key))
        .await
        .unwrap()
        .expect("stored by its hash");
    assert_ne!(stored.key_hash, key, "never the key itself");
    // Listed and read without the key.
    let list = h
        .get("/api/auth/api-key/list", Some(&ann))
        .await
        .expect(200);
    assert_eq!(list.json()["total"], 1);
    assert!(!list.text.contains(&key));
    let id = made["id"].as_str().unwrap();
    let got = h
        .get(&format!("/api/auth/api-key/get?id={id}"), Some(&ann))
        .await
        .expect(200);
    assert_eq!(got.json()["name"], "ci");
    assert!(got.json().get("key").is_none());
    // The key acts as Ann on session routes, setting no cookie.
    let s = with_key(&h, Method::GET, "/api/auth/get-session", None, &key)
        .await
        .expect(200);
    assert_eq!(s.json()["user"]["email"], "ann@example.com");
    assert_eq!(s.json()["session"]["id"], id);
    assert!(s.set_cookies().is_empty(), "{:?}", s.set_cookies());
    let sessions = with_key(&h, Method::GET, "/api/auth/list-sessions", None, &key)
        .await
        .expect(200);
    assert_eq!(sessions.json().as_array().unwrap().len(), 1);
    with_key(
        &h,
        Method::POST,
        "/api/auth/update-user",
        Some(json!({"name": "Ann by script"})),
        &key,
    )
    .await
    .expect(200);
    assert_eq!(h.session(&ann).await["user"]["name"], "Ann by script");
    // A script makes an organization for Ann (no session to make it active in).
    let org = with_key(
        &h,
        Method::POST,
        "/api/auth/organization/create",
        Some(json!({"name": "Scripted", "slug": "scripted"})),
        &key,
    )
    .await
    .expect(200);
    assert_eq!(org.json()["members"][0]["userId"], ann_id.as_str());
    // Not where a person's session is needed; those tries cost the key no use.
    for (path, body) in [
        (
            "/api/auth/change-password",
            json!({"currentPassword": "x", "newPassword": "password-2-long"}),
        ),
        ("/api/auth/api-key/create", json!({"name": "more"})),
        ("/api/auth/delete-user", json!({})),
        ("/api/auth/two-factor/enable", json!({"password": "x"})),
        ("/api/auth/revoke-sessions", json!({})),
    ] {
        let r = with_key(&h, Method::POST, path, Some(body), &key).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (401, "UNAUTHORIZED".into()),
            "{path}"
        );
    }
    let got = h
        .get(&format!("/api/auth/api-key/get?id={id}"), Some(&ann))
        .await
        .json();
    assert_eq!(got["requestCount"], 4);
    assert!(got["lastRequest"].is_string());
    // Deleted: it stops at once.
    h.post("/api/auth/api-key/delete", json!({"keyId": id}), Some(&ann))
        .await
        .expect(200);
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, &key).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "INVALID_API_KEY".into())
    );
    let actions = audit_actions(&h).await;
    for a in [
        "api-key.created",
        "api-key.first-use",
        "api-key.deleted",
        "api-key.refused",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
}

#[tokio::test]
async fn bad_keys_answer_with_1_7s_codes() {
    let h = key_harness().await;
    let (ann, _) = user(&h, "bo@example.com").await;
    let short = with_key(&h, Method::GET, "/api/auth/get-session", None, "abc").await;
    assert_eq!(
        (short.status.as_u16(), short.code()),
        (403, "INVALID_API_KEY".into())
    );
    let unknown = "x".repeat(64);
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, &unknown).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "INVALID_API_KEY".into())
    );
    // Disabled, then enabled again.
    let made = create(&h, &ann, json!({"expiresIn": 86_400}))
        .await
        .expect(200)
        .json();
    let (key, id) = (made["key"].as_str().unwrap(), made["id"].as_str().unwrap());
    h.post(
        "/api/auth/api-key/update",
        json!({"keyId": id, "enabled": false}),
        Some(&ann),
    )
    .await
    .expect(200);
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "KEY_DISABLED".into()));
    h.post(
        "/api/auth/api-key/update",
        json!({"keyId": id, "enabled": true}),
        Some(&ann),
    )
    .await
    .expect(200);
    // The default limit: ten requests a day, then 429 with when to try again.
    for _ in 0..10 {
        with_key(&h, Method::GET, "/api/auth/get-session", None, key)
            .await
            .expect(200);
    }
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!((r.status.as_u16(), r.code()), (429, "RATE_LIMITED".into()));
    let retry: u64 = r.headers["x-retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((86_000..=86_400).contains(&retry), "{retry}");
    // A day later it works again; after its expiry it answers KEY_EXPIRED.
    h.clock.advance(chrono::Duration::hours(23));
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!(
        r.status.as_u16(),
        429,
        "the window runs from the last request"
    );
    h.clock.advance(chrono::Duration::minutes(61));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "KEY_EXPIRED".into()));
    // A banned user's keys stop.
    let other = create(&h, &ann, json!({})).await.expect(200).json();
    h.change_user("bo@example.com", |u| u.banned = true).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = with_key(
        &h,
        Method::GET,
        "/api/auth/get-session",
        None,
        other["key"].as_str().unwrap(),
    )
    .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "USER_BANNED".into()));
}

#[tokio::test]
async fn what_a_session_may_set_and_what_only_the_server_may() {
    let h = key_harness().await;
    let (ann, ann_id) = user(&h, "cy@example.com").await;
    for (body, status, code) in [
        (json!({"remaining": 5}), 400, "SERVER_ONLY_PROPERTY"),
        (json!({"rateLimitMax": 5}), 400, "SERVER_ONLY_PROPERTY"),
        (
            json!({"permissions": {"a": ["b"]}}),
            400,
            "SERVER_ONLY_PROPERTY",
        ),
        (json!({"userId": ann_id}), 401, "UNAUTHORIZED_SESSION"),
        (json!({"metadata": {"a": 1}}), 400, "METADATA_DISABLED"),
        (json!({"name": "n".repeat(33)}), 400, "INVALID_NAME_LENGTH"),
        (json!({"expiresIn": 60}), 400, "EXPIRES_IN_IS_TOO_SMALL"),
        (
            json!({"expiresIn": 400 * 86_400}),
            400,
            "EXPIRES_IN_IS_TOO_LARGE",
        ),
        (json!({"prefix": "a b"}), 400, "VALIDATION_ERROR"),
        (
            json!({"prefix": "p".repeat(33)}),
            400,
            "INVALID_PREFIX_LENGTH",
        ),
    ] {
        let r = create(&h, &ann, body.clone()).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code.into()),
            "{body}"
        );
    }
    let r = as_server(&h, "/api/auth/api-key/create", json!({"userId": "nobody"})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "USER_NOT_FOUND".into())
    );
    let r = h.post("/api/auth/api-key/create", json!({}), None).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "UNAUTHORIZED_SESSION".into())
    );
    // The server makes a key for Ann with two uses and no rate limit.
    let made = as_server(
        &h,
        "/api/auth/api-key/create",
        json!({"userId": ann_id, "remaining": 2, "rateLimitEnabled": false,
               "permissions": {"files": ["read"]}}),
    )
    .await
    .expect(200)
    .json();
    let key = made["key"].as_str().unwrap().to_owned();
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(made["permissions"], json!({"files": ["read"]}));
    let r = h
        .post(
            "/api/auth/api-key/update",
            json!({"keyId": id, "remaining": 9}),
            Some(&ann),
        )
        .await;
    assert_eq!(r.code(), "SERVER_ONLY_PROPERTY");
    let r = h
        .post("/api/auth/api-key/update", json!({"keyId": id}), Some(&ann))
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "NO_VALUES_TO_UPDATE".into())
    );
    // Verify is the server's: it counts a use, and checks permissions.
    let r = h
        .post("/api/auth/api-key/verify", json!({"key": key}), None)
        .await;
    assert_eq!(r.status.as_u16(), 401);
    let v = as_server(
        &h,
        "/api/auth/api-key/verify",
        json!({"key": key, "permissions": {"files": ["read"]}}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(
        (v["valid"].clone(), v["key"]["remaining"].clone()),
        (json!(true), json!(1))
    );
    let v = as_server(
        &h,
        "/api/auth/api-key/verify",
        json!({"key": key, "permissions": {"files": ["write"]}}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(v["valid"], false);
    assert_eq!(v["error"]["code"], "KEY_NOT_FOUND");
    // That check took the last use: the key is spent.
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, &key).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (429, "USAGE_EXCEEDED".into())
    );
    // A refill: one use a second.
    let made = as_server(
        &h,
        "/api/auth/api-key/create",
        json!({"userId": ann_id, "refillAmount": 1, "refillInterval": 1000,
               "rateLimitEnabled": false}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(made["remaining"], 1);
    let key = made["key"].as_str().unwrap();
    with_key(&h, Method::GET, "/api/auth/get-session", None, key)
        .await
        .expect(200);
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!(r.code(), "USAGE_EXCEEDED");
    h.clock.advance(chrono::Duration::seconds(2));
    with_key(&h, Method::GET, "/api/auth/get-session", None, key)
        .await
        .expect(200);
    // Housekeeping: expired keys go.
    let gone = as_server(
        &h,
        "/api/auth/api-key/delete-all-expired-api-keys",
        json!({}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(gone["success"], true);
}

#[tokio::test]
async fn an_organizations_key_acts_there_within_its_permissions() {
    let h = key_harness().await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let (admin, admin_id) = user(&h, "admin@example.com").await;
    let (member, member_id) = user(&h, "member@example.com").await;
    let org = create_org(&h, &owner, "keys").await;
    let org_id = org["id"].as_str().unwrap();
    add_member(&h, org_id, &admin_id, "admin").await;
    add_member(&h, org_id, &member_id, "member").await;
    let other = create_org(&h, &owner, "other").await;
    // A member without apiKey permissions may neither make nor list the organization's keys.
    let r = create(&h, &member, json!({"organizationId": org_id})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "INSUFFICIENT_API_KEY_PERMISSIONS".into())
    );
    let r = h
        .get(
            &format!("/api/auth/api-key/list?organizationId={org_id}"),
            Some(&member),
        )
        .await;
    assert_eq!(r.status.as_u16(), 403);
    let (stranger, _) = user(&h, "stranger@example.com").await;
    let r = create(&h, &stranger, json!({"organizationId": org_id})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "USER_NOT_MEMBER_OF_ORGANIZATION".into())
    );
    // An admin cannot give a key what admins do not hold.
    let r = create(
        &h,
        &admin,
        json!({"organizationId": org_id, "permissions": {"organization": ["delete"]}}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "INSUFFICIENT_API_KEY_PERMISSIONS".into())
    );
    let made = create(
        &h,
        &admin,
        json!({"organizationId": org_id, "name": "invites",
               "permissions": {"invitation": ["create"]}}),
    )
    .await
    .expect(200)
    .json();
    assert_eq!(made["referenceId"], org_id);
    let key = made["key"].as_str().unwrap();
    // The owner lists it (as the organization's), the admin's own list does not hold it.
    let list = h
        .get(
            &format!("/api/auth/api-key/list?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(list["total"], 1);
    let own = h
        .get("/api/auth/api-key/list", Some(&admin))
        .await
        .expect(200)
        .json();
    assert_eq!(own["total"], 0);
    // It invites (in its organization, named or not), and does nothing else.
    with_key(
        &h,
        Method::POST,
        "/api/auth/organization/invite-member",
        Some(json!({"email": "new@example.com", "role": "member"})),
        key,
    )
    .await
    .expect(200);
    let r = with_key(
        &h,
        Method::POST,
        "/api/auth/organization/update",
        Some(json!({"data": {"name": "Renamed"}, "organizationId": org_id})),
        key,
    )
    .await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    let r = with_key(
        &h,
        Method::POST,
        "/api/auth/organization/invite-member",
        Some(json!({"email": "x@example.com", "role": "member", "organizationId": other["id"]})),
        key,
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "INVALID_REFERENCE_ID_FROM_API_KEY".into())
    );
    let r = with_key(&h, Method::GET, "/api/auth/organization/list", None, key).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "INVALID_REFERENCE_ID_FROM_API_KEY".into()),
        "the maker's other organizations are not the key's business"
    );
    let r = with_key(
        &h,
        Method::POST,
        "/api/auth/update-user",
        Some(json!({"name": "Not through the organization's key"})),
        key,
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (401, "INVALID_REFERENCE_ID_FROM_API_KEY".into())
    );
    // The owner revokes it.
    h.post(
        "/api/auth/api-key/delete",
        json!({"keyId": made["id"]}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = with_key(&h, Method::GET, "/api/auth/get-session", None, key).await;
    assert_eq!(r.code(), "INVALID_API_KEY");
}

/// A key with five uses left, asked twelve times at once on two processes: five pass. Then
/// a key limited to four requests a window, asked twelve times at once: four pass.
#[tokio::test]
async fn concurrent_uses_on_two_processes_pass_exactly_as_often_as_allowed() {
    let a = key_harness().await;
    let b = same_store(&a, |c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(SERVER_KEY));
    })
    .await;
    let (_, ann_id) = user(&a, "race@example.com").await;
    for (body, allowed, refusal) in [
        (
            json!({"userId": ann_id, "remaining": 5, "rateLimitEnabled": false}),
            5,
            "USAGE_EXCEEDED",
        ),
        (
            json!({"userId": ann_id, "rateLimitMax": 4, "rateLimitTimeWindow": 60_000}),
            4,
            "RATE_LIMITED",
        ),
    ] {
        let made = as_server(&a, "/api/auth/api-key/create", body)
            .await
            .expect(200)
            .json();
        let key = made["key"].as_str().unwrap().to_owned();
        let tries = (0..12).map(|i| {
            let (h, key) = (if i % 2 == 0 { &a } else { &b }, key.clone());
            async move { with_key(h, Method::GET, "/api/auth/get-session", None, &key).await }
        });
        let results = join_all(tries).await;
        let passed = results.iter().filter(|r| r.status == 200).count();
        assert_eq!(
            passed,
            allowed,
            "{:?}",
            results
                .iter()
                .map(|r| (r.status, &r.text))
                .collect::<Vec<_>>()
        );
        assert!(
            results
                .iter()
                .all(|r| r.status == 200 || r.code() == refusal),
            "{:?}",
            results.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
    }
}

/// better-auth's official client with `apiKeyClient()` (Node, `api/tests/js-client`) makes,
/// lists, renames, reads and deletes a key, and a script calls the real binary with the key
/// alone. Skipped without the npm packages, unless `REQUIRE_JS_CLIENT=1`.
#[tokio::test]
async fn official_client_manages_keys_and_a_script_uses_one() {
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let seen = run_js_client(
        &js,
        "api-key-client.mjs",
        &[
            &format!("http://{}", server.addr),
            "http://localhost:3000",
            "keys@js.io",
            "first-password-1",
        ],
    )
    .await;
    assert_eq!(seen["signUp"], "keys@js.io", "{seen}");
    assert_eq!(seen["create"]["error"], Value::Null, "{seen}");
    assert_eq!(seen["create"]["name"], "deploy", "{seen}");
    assert_eq!(seen["create"]["prefixed"], true, "{seen}");
    assert_eq!(
        seen["list"],
        json!({"error": null, "total": 1, "names": ["deploy"], "holdsKey": false}),
        "{seen}"
    );
    assert_eq!(seen["update"]["name"], "deploy-2", "{seen}");
    assert_eq!(seen["get"]["name"], "deploy-2", "{seen}");
    assert_eq!(seen["refused"], "SERVER_ONLY_PROPERTY", "{seen}");
    assert_eq!(
        seen["script"],
        json!({"status": 200, "email": "keys@js.io"}),
        "{seen}"
    );
    assert_eq!(
        seen["delete"],
        json!({"error": null, "data": {"success": true}}),
        "{seen}"
    );
    assert_eq!(
        seen["after"],
        json!({"status": 401, "code": "INVALID_API_KEY"}),
        "{seen}"
    );
}

/// A refused key is answered in the same time whether a key with its hash exists (disabled,
/// expired) or not: each is found, or found missing, in the process's copy of the last second
/// and refused the same way, its audit record (which names the key's user when there is one)
/// stored after the answer. Many interleaved samples; the medians may differ by far less than
/// one store read.
async fn a_refusal_takes_the_same_time_whether_the_key_exists_or_not(backend: Backend) {
    let Some(h) = harness_on(backend, key_config).await else {
        return;
    };
    let (ann, _) = user(&h, "timing@example.com").await;
    let made = create(&h, &ann, json!({"name": "off"}))
        .await
        .expect(200)
        .json();
    h.post(
        "/api/auth/api-key/update",
        json!({"keyId": made["id"], "enabled": false}),
        Some(&ann),
    )
    .await
    .expect(200);
    let keys = [made["key"].as_str().unwrap().to_owned(), "u".repeat(64)];
    let (ep, keys) = (&h.ep, &keys);
    answered_in_the_same_time(&h, "disabled key, unknown key", 400, |kind| async move {
        let r = call(
            ep,
            Method::GET,
            "/api/auth/get-session",
            None,
            None,
            &[("x-api-key", &keys[kind]), ("origin", ORIGIN)],
        )
        .await;
        assert_eq!(r.status.as_u16(), 401, "{}", r.text);
    })
    .await;
}
