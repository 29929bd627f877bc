//! The admin plugin: who may call each route (a table of every route × caller), bans racing
//! sign-ins, impersonation and its lifetime, the user listing, and JWT/JWKS verified by an
//! independent verifier.
use crate::common::*;
use gatehouse_api::config::Config;
use poem::http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use storage::{Clock, UserId};

const SERVER_KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";
const PASSWORD: &str = "password123";

fn admin_config(c: &mut Config) {
    c.server_key = Some(gatehouse_api::config::Secret::new(SERVER_KEY));
    let mut support = BTreeMap::new();
    support.insert(
        "user".to_string(),
        vec!["list".to_string(), "get".to_string()],
    );
    support.insert("session".to_string(), vec!["list".to_string()]);
    c.admin.roles.insert("support".into(), support);
}

/// Signs up `email` and gives it `role` (straight in the store, as a bootstrap would).
async fn user_with_role(h: &H, email: &str, role: Option<&str>) -> (String, UserId) {
    let r = h.sign_up(email, PASSWORD).await;
    let id = UserId(r.json()["user"]["id"].as_str().unwrap().to_owned());
    if let Some(role) = role {
        let mut u = h.store.get_user(&id).await.unwrap().unwrap();
        u.role = Some(role.into());
        u.version += 1;
        h.store.update_user(&u, &[]).await.unwrap();
    }
    (r.cookie_header(), id)
}

#[derive(Clone, Copy, Debug)]
enum Who {
    Server,
    Admin,
    Support,
    Plain,
    Anonymous,
}

struct Callers {
    admin: String,
    support: String,
    plain: String,
}

async fn send(
    h: &H,
    who: Who,
    c: &Callers,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Resp {
    let bearer = format!("Bearer {SERVER_KEY}");
    let (cookie, extra): (Option<&str>, Vec<(&str, &str)>) = match who {
        Who::Server => (None, vec![("authorization", bearer.as_str())]),
        Who::Admin => (Some(c.admin.as_str()), vec![("origin", ORIGIN)]),
        Who::Support => (Some(c.support.as_str()), vec![("origin", ORIGIN)]),
        Who::Plain => (Some(c.plain.as_str()), vec![("origin", ORIGIN)]),
        Who::Anonymous => (None, vec![("origin", ORIGIN)]),
    };
    h.call(method, path, body, cookie, &extra).await
}

/// Every admin route × {server key, admin, a configured role with a subset, plain user,
/// anonymous}: the status and code of each cell.
#[tokio::test]
async fn authorization_matrix() {
    let h = harness_with(admin_config).await;
    let (admin, _) = user_with_role(&h, "admin@m.io", Some("admin")).await;
    let (support, _) = user_with_role(&h, "support@m.io", Some("support")).await;
    let (plain, _) = user_with_role(&h, "plain@m.io", None).await;
    let c = Callers {
        admin,
        support,
        plain,
    };
    // (route, method, body builder from a fresh target, the code a caller without the
    // permission gets, whether `support` holds it)
    type Body = fn(&str, &str) -> Option<Value>;
    let routes: Vec<(&str, Method, Body, &str, bool)> = vec![
        (
            "create-user",
            Method::POST,
            |_, n| {
                Some(json!({"email": format!("new-{n}@m.io"), "password": PASSWORD, "name": "New"}))
            },
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_USERS",
            false,
        ),
        (
            "list-users",
            Method::GET,
            |_, _| None,
            "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS",
            true,
        ),
        (
            "get-user",
            Method::GET,
            |_, _| None,
            "YOU_ARE_NOT_ALLOWED_TO_GET_USER",
            true,
        ),
        (
            "update-user",
            Method::POST,
            |t, _| Some(json!({"userId": t, "data": {"name": "Changed"}})),
            "YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS",
            false,
        ),
        (
            "set-role",
            Method::POST,
            |t, _| Some(json!({"userId": t, "role": "support"})),
            "YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE",
            false,
        ),
        (
            "ban-user",
            Method::POST,
            |t, _| Some(json!({"userId": t, "banReason": "spam"})),
            "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS",
            false,
        ),
        (
            "unban-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS",
            false,
        ),
        (
            "list-user-sessions",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS",
            true,
        ),
        (
            "revoke-user-session",
            Method::POST,
            |_, _| Some(json!({"sessionToken": "no-such-token"})),
            "YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS",
            false,
        ),
        (
            "revoke-user-sessions",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS",
            false,
        ),
        (
            "impersonate-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS",
            false,
        ),
        (
            "remove-user",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS",
            false,
        ),
        (
            "disable-two-factor",
            Method::POST,
            |t, _| Some(json!({"userId": t})),
            "YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS",
            false,
        ),
        (
            "set-user-password",
            Method::POST,
            |t, _| Some(json!({"userId": t, "newPassword": "another-password"})),
            "YOU_ARE_NOT_ALLOWED_TO_SET_USERS_PASSWORD",
            false,
        ),
    ];
    let mut n = 0;
    for (route, method, body, denied, support_may) in &routes {
        for who in [
            Who::Server,
            Who::Admin,
            Who::Support,
            Who::Plain,
            Who::Anonymous,
        ] {
            n += 1;
            let target = store_user(&h, &format!("target-{n}@m.io")).await;
            let mut path = format!("/api/auth/admin/{route}");
            if *route == "get-user" {
                path.push_str(&format!("?id={}", target.id));
            }
            let r = send(
                &h,
                who,
                &c,
                method.clone(),
                &path,
                body(&target.id.0, &n.to_string()),
            )
            .await;
            let (status, code) = match who {
                Who::Anonymous => (401, "UNAUTHORIZED"),
                Who::Plain => (403, *denied),
                Who::Support if !support_may => (403, *denied),
                // Impersonation returns to an admin's session: the server key has none.
                Who::Server if *route == "impersonate-user" => (403, *denied),
                _ => (200, ""),
            };
            assert_eq!(r.status.as_u16(), status, "{route} as {who:?}: {}", r.text);
            if !code.is_empty() {
                assert_eq!(r.code(), code, "{route} as {who:?}");
            }
        }
    }
    // has-permission answers for anyone signed in, about themselves.
    for (who, want) in [
        (Who::Admin, true),
        (Who::Support, false),
        (Who::Plain, false),
    ] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/has-permission",
            Some(json!({"permissions": {"user": ["ban"]}})),
        )
        .await
        .expect(200);
        assert_eq!(r.json(), json!({"error": null, "success": want}), "{who:?}");
    }
    let r = send(
        &h,
        Who::Support,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["list", "get"], "session": ["list"]}})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], true);
    let r = send(
        &h,
        Who::Anonymous,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["ban"]}})),
    )
    .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
    // The server asks about a role or a user.
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"session": ["revoke"]}, "role": "admin"})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], true);
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"session": ["revoke"]}, "role": "support"})),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["success"], false);
    let r = send(
        &h,
        Who::Server,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({"permissions": {"user": ["ban"]}})),
    )
    .await;
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = send(
        &h,
        Who::Admin,
        &c,
        Method::POST,
        "/api/auth/admin/has-permission",
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "INVALID_PERMISSION_CHECK".into())
    );
    // stop-impersonating needs an impersonation session.
    for who in [Who::Admin, Who::Plain] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/stop-impersonating",
            None,
        )
        .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "NOT_IMPERSONATING".into()),
            "{who:?}"
        );
    }
    for who in [Who::Anonymous, Who::Server] {
        let r = send(
            &h,
            who,
            &c,
            Method::POST,
            "/api/auth/admin/stop-impersonating",
            None,
        )
        .await;
        assert_eq!(r.status.as_u16(), 401, "{who:?}");
    }
    // A wrong server key is no caller at all.
    let r = h
        .call(
            Method::GET,
            "/api/auth/admin/list-users",
            None,
            None,
            &[("authorization", "Bearer nope")],
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
}

#[tokio::test]
async fn user_management_answers() {
    let h = harness_with(admin_config).await;
    let (admin, admin_id) = user_with_role(&h, "admin@u.io", Some("admin")).await;
    let (_, victim) = user_with_role(&h, "victim@u.io", None).await;
    let post = |path: &'static str, body: Value| {
        let admin = admin.clone();
        let h = &h;
        async move {
            h.post(&format!("/api/auth/admin/{path}"), body, Some(&admin))
                .await
        }
    };
    // Unknown users are 404 USER_NOT_FOUND on every route that needs one.
    for (path, body) in [
        ("set-role", json!({"userId": "ghost", "role": "user"})),
        ("ban-user", json!({"userId": "ghost"})),
        ("unban-user", json!({"userId": "ghost"})),
        (
            "update-user",
            json!({"userId": "ghost", "data": {"name": "x"}}),
        ),
        ("impersonate-user", json!({"userId": "ghost"})),
        ("remove-user", json!({"userId": "ghost"})),
        (
            "set-user-password",
            json!({"userId": "ghost", "newPassword": "password-ok"}),
        ),
    ] {
        let r = post(path, body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (404, "USER_NOT_FOUND".into()),
            "{path}"
        );
    }
    let r = h
        .get("/api/auth/admin/get-user?id=ghost", Some(&admin))
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "USER_NOT_FOUND".into())
    );
    // Roles: one, a list (stored comma-joined), unknown refused.
    let r = post(
        "set-role",
        json!({"userId": victim.0, "role": ["support", "user"]}),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["user"]["role"], "support,user");
    let r = post("set-role", json!({"userId": victim.0, "role": "superuser"})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE".into())
    );
    let r = post("set-role", json!({"userId": victim.0, "role": ""})).await;
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // create-user: duplicates, bad email, short password, a role, extra data.
    let r = post(
        "create-user",
        json!({"email": "VICTIM@u.io", "password": PASSWORD, "name": "Dup"}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL".into())
    );
    let r = post(
        "create-user",
        json!({"email": "nope", "password": PASSWORD, "name": "x"}),
    )
    .await;
    assert_eq!(r.code(), "INVALID_EMAIL");
    let r = post(
        "create-user",
        json!({"email": "short@u.io", "password": "short", "name": "x"}),
    )
    .await;
    assert_eq!(r.code(), "PASSWORD_TOO_SHORT");
    let r = post("create-user", json!({"email": "made@u.io", "password": PASSWORD, "name": "Made", "role": "support", "data": {"emailVerified": true, "image": "https://i.example/a.png"}})).await.expect(200);
    let made = r.json()["user"].clone();
    assert_eq!(
        (
            made["role"].as_str(),
            made["emailVerified"].as_bool(),
            made["image"].as_str()
        ),
        (Some("support"), Some(true), Some("https://i.example/a.png"))
    );
    h.sign_in("made@u.io", PASSWORD).await.expect(200);
    // update-user: fields, refused keys, nothing to do, email taken, self-ban.
    let r = post("update-user", json!({"userId": victim.0, "data": {"name": "Renamed", "emailVerified": true, "image": null}})).await.expect(200);
    assert_eq!(
        (
            r.json()["name"].as_str(),
            r.json()["emailVerified"].as_bool()
        ),
        (Some("Renamed"), Some(true))
    );
    for (data, code) in [
        (json!({}), "NO_DATA_TO_UPDATE"),
        (
            json!({"password": "x"}),
            "PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER",
        ),
        (json!({"id": "x"}), "USER_ID_CANNOT_BE_UPDATED"),
        (
            json!({"email": "made@u.io"}),
            "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL",
        ),
        (
            json!({"role": "superuser"}),
            "YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE",
        ),
    ] {
        let r = post("update-user", json!({"userId": victim.0, "data": data})).await;
        assert_eq!((r.status.as_u16(), r.code()), (400, code.into()), "{data}");
    }
    let r = post(
        "update-user",
        json!({"userId": admin_id.0, "data": {"banned": true}}),
    )
    .await;
    assert_eq!(r.code(), "YOU_CANNOT_BAN_YOURSELF");
    let r = post(
        "update-user",
        json!({"userId": victim.0, "data": {"email": "Moved@u.io"}}),
    )
    .await
    .expect(200);
    assert_eq!(r.json()["email"], "moved@u.io");
    // set-user-password: the new one signs in, the old one does not.
    post(
        "set-user-password",
        json!({"userId": victim.0, "newPassword": "brand-new-pass"}),
    )
    .await
    .expect(200);
    h.sign_in("moved@u.io", PASSWORD).await.expect(401);
    h.sign_in("moved@u.io", "brand-new-pass").await.expect(200);
    let r = post(
        "set-user-password",
        json!({"userId": victim.0, "newPassword": "x"}),
    )
    .await;
    assert_eq!(r.code(), "PASSWORD_TOO_SHORT");
    // Sessions: listed, one revoked, all revoked.
    let s2 = h
        .sign_in("moved@u.io", "brand-new-pass")
        .await
        .expect(200)
        .cookie_header();
    let r = post("list-user-sessions", json!({"userId": victim.0}))
        .await
        .expect(200);
    let sessions = r.json()["sessions"].as_array().unwrap().clone();
    // The sign-up's session and two sign-ins (a new password does not end sessions).
    assert_eq!(sessions.len(), 3);
    let token = sessions[0]["token"].as_str().unwrap();
    post("revoke-user-session", json!({"sessionToken": token}))
        .await
        .expect(200);
    assert_eq!(
        post("list-user-sessions", json!({"userId": victim.0}))
            .await
            .json()["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    post("revoke-user-sessions", json!({"userId": victim.0}))
        .await
        .expect(200);
    assert_eq!(h.session(&s2).await, Value::Null);
    assert_eq!(
        post("list-user-sessions", json!({"userId": victim.0}))
            .await
            .json()["sessions"],
        json!([])
    );
    // remove-user: not oneself; then gone.
    let r = post("remove-user", json!({"userId": admin_id.0})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "YOU_CANNOT_REMOVE_YOURSELF".into())
    );
    post("remove-user", json!({"userId": victim.0}))
        .await
        .expect(200);
    assert!(h.store.get_user(&victim).await.unwrap().is_none());
    h.sign_in("moved@u.io", "brand-new-pass").await.expect(401);
}

#[tokio::test]
async fn bans_block_sign_in_revoke_sessions_and_lift_themselves() {
    let h = harness_with(admin_config).await;
    let (admin, admin_id) = user_with_role(&h, "admin@b.io", Some("admin")).await;
    let (victim_cookie, victim) = user_with_role(&h, "victim@b.io", None).await;
    let r = h
        .post(
            "/api/auth/admin/ban-user",
            json!({"userId": admin_id.0}),
            Some(&admin),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "YOU_CANNOT_BAN_YOURSELF".into())
    );
    let r = h
        .post(
            "/api/auth/admin/ban-user",
            json!({"userId": victim.0, "banExpiresIn": 600}),
            Some(&admin),
        )
        .await
        .expect(200);
    let u = &r.json()["user"];
    assert_eq!(
        (u["banned"].as_bool(), u["banReason"].as_str()),
        (Some(true), Some("No reason"))
    );
    assert!(u["banExpires"].is_string());
    // Every session is gone, and no new one can be made.
    assert_eq!(h.session(&victim_cookie).await, Value::Null);
    let r = h.sign_in("victim@b.io", PASSWORD).await;
    assert_eq!(r.status.as_u16(), 403);
    assert_eq!(
        r.json(),
        json!({"code": "BANNED_USER", "message": "You have been banned from this application. Please contact support if you believe this is an error."})
    );
    // A wrong password still answers as a wrong password (no account probing through bans).
    h.sign_in("victim@b.io", "wrong-password").await.expect(401);
    // After the ban's end, the next sign-in lifts it.
    h.clock.advance(chrono::Duration::seconds(601));
    let r = h.sign_in("victim@b.io", PASSWORD).await.expect(200);
    assert_eq!(r.json()["user"]["banned"], false);
    let stored = h.store.get_user(&victim).await.unwrap().unwrap();
    assert!(!stored.banned && stored.ban_reason.is_none() && stored.ban_expires.is_none());
    // A ban without an end, then an unban.
    h.post(
        "/api/auth/admin/ban-user",
        json!({"userId": victim.0, "banReason": "spam"}),
        Some(&admin),
    )
    .await
    .expect(200);
    h.clock.advance(chrono::Duration::days(3650));
    let admin = h
        .sign_in("admin@b.io", PASSWORD)
        .await
        .expect(200)
        .cookie_header();
    h.sign_in("victim@b.io", PASSWORD).await.expect(403);
    let r = h
        .post(
            "/api/auth/admin/unban-user",
            json!({"userId": victim.0}),
            Some(&admin),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["banned"], false);
    h.sign_in("victim@b.io", PASSWORD).await.expect(200);
}

/// A ban racing 20 concurrent sign-ins of its user: whatever interleaving, no session of the
/// user is alive afterwards, and every sign-in either failed with BANNED_USER or made a session
/// that the ban revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ban_racing_sign_ins_leaves_no_live_session() {
    let h = std::sync::Arc::new(harness_with(admin_config).await);
    let (admin, _) = user_with_role(&h, "admin@r.io", Some("admin")).await;
    for round in 0..3 {
        let email = format!("racer{round}@r.io");
        let (_, victim) = user_with_role(&h, &email, None).await;
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let h = h.clone();
            let email = email.clone();
            tasks.push(tokio::spawn(
                async move { h.sign_in(&email, PASSWORD).await },
            ));
        }
        let ban = {
            let h = h.clone();
            let admin = admin.clone();
            let id = victim.0.clone();
            tokio::spawn(async move {
                h.post(
                    "/api/auth/admin/ban-user",
                    json!({"userId": id}),
                    Some(&admin),
                )
                .await
            })
        };
        let mut cookies = Vec::new();
        for t in tasks {
            let r = t.await.unwrap();
            match r.status.as_u16() {
                200 => cookies.push(r.cookie_header()),
                403 => assert_eq!(r.code(), "BANNED_USER"),
                other => panic!("sign-in answered {other}: {}", r.text),
            }
        }
        ban.await.unwrap().expect(200);
        let now = h.clock.now();
        let live: Vec<_> = h
            .store
            .list_sessions(&victim)
            .await
            .unwrap()
            .into_iter()
            .filter(|s| s.expires_at > now)
            .collect();
        assert!(
            live.is_empty(),
            "round {round}: {} sessions survived the ban",
            live.len()
        );
        for c in &cookies {
            assert_eq!(h.session(c).await, Value::Null);
        }
        h.sign_in(&email, PASSWORD).await.expect(403);
    }
}

#[tokio::test]
async fn impersonation_round_trip_and_lifetime() {
    let h = harness_with(|c| {
        admin_config(c);
        c.admin.impersonation_session_duration = 3600;
        // Sessions are extended after a minute of use: an impersonation must not be.
        c.session.update_age = 60;
    })
    .await;
    let (admin, admin_id) = user_with_role(&h, "admin@i.io", Some("admin")).await;
    let (_, other_admin) = user_with_role(&h, "admin2@i.io", Some("admin")).await;
    let (_, victim) = user_with_role(&h, "victim@i.io", None).await;
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": other_admin.0}),
            Some(&admin),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "YOU_CANNOT_IMPERSONATE_ADMINS".into())
    );
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": victim.0}),
            Some(&admin),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["session"]["impersonatedBy"], admin_id.0);
    assert_eq!(r.json()["user"]["id"], victim.0);
    // The admin's session rides along in the admin_session cookie; the impersonation's
    // cookie lasts the browser session.
    assert!(r
        .set_cookie("gatehouse.admin_session")
        .unwrap()
        .contains("Max-Age="));
    assert!(!r
        .set_cookie("gatehouse.session_token")
        .unwrap()
        .contains("Max-Age="));
    let both = format!("{}; {}", admin, r.cookie_header());
    let as_victim = r.cookie_header();
    let s = h.session(&as_victim).await;
    assert_eq!(
        (
            s["user"]["id"].as_str(),
            s["session"]["impersonatedBy"].as_str()
        ),
        (Some(victim.0.as_str()), Some(admin_id.0.as_str()))
    );
    // Marked in the user's own list of sessions.
    let list = h
        .get("/api/auth/list-sessions", Some(&as_victim))
        .await
        .expect(200)
        .json();
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["impersonatedBy"] == admin_id.0));
    // While impersonating, the admin acts as the user: admin routes are refused.
    let r = h.get("/api/auth/admin/list-users", Some(&as_victim)).await;
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS");
    // Stop: the impersonation ends, the admin's session is back.
    // (The request carries both cookies as a browser would: the newer session_token wins.)
    let cookie = merge_cookies(&both);
    let r = h
        .post(
            "/api/auth/admin/stop-impersonating",
            json!({}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], admin_id.0);
    assert!(r
        .set_cookie("gatehouse.admin_session")
        .unwrap()
        .contains("Max-Age=0"));
    let back = r.cookie_header();
    assert_eq!(h.session(&back).await["user"]["id"], admin_id.0);
    assert_eq!(h.session(&as_victim).await, Value::Null);
    // Without the admin's cookie there is nothing to go back to.
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": victim.0}),
            Some(&back),
        )
        .await
        .expect(200);
    let as_victim: String = r
        .cookie_header()
        .split("; ")
        .filter(|c| !c.starts_with("gatehouse.admin_session="))
        .collect::<Vec<_>>()
        .join("; ");
    let r = h
        .post(
            "/api/auth/admin/stop-impersonating",
            json!({}),
            Some(&as_victim),
        )
        .await;
    assert_eq!(r.code(), "ADMIN_SESSION_NOT_FOUND");
    // An impersonation ends after its lifetime even when used all along.
    for _ in 0..5 {
        h.clock.advance(chrono::Duration::minutes(10));
        let s = h.session(&as_victim).await;
        assert_eq!(s["session"]["impersonatedBy"], admin_id.0);
    }
    h.clock.advance(chrono::Duration::minutes(11));
    assert_eq!(h.session(&as_victim).await, Value::Null);
}

/// `a=1; b=2; a=3` → `b=2; a=3` (later values win, as a browser's cookie jar keeps them).
fn merge_cookies(header: &str) -> String {
    let mut jar: Vec<(String, String)> = Vec::new();
    for pair in header.split("; ").filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap();
        jar.retain(|(n, _)| n != k);
        jar.push((k.to_owned(), v.to_owned()));
    }
    jar.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test]
async fn impersonating_admins_can_be_allowed() {
    let h = harness_with(|c| {
        admin_config(c);
        let mut root = BTreeMap::new();
        root.insert(
            "user".to_string(),
            vec!["impersonate".to_string(), "impersonate-admins".to_string()],
        );
        c.admin.roles.insert("root".into(), root);
    })
    .await;
    let (root, _) = user_with_role(&h, "root@i.io", Some("root")).await;
    let (_, admin) = user_with_role(&h, "admin@i.io", Some("admin")).await;
    let r = h
        .post(
            "/api/auth/admin/impersonate-user",
            json!({"userId": admin.0}),
            Some(&root),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], admin.0);
}

/// 500 users; pages, sorts and searches over HTTP give what a sort done here gives.
#[tokio::test]
async fn list_users_pages_sorts_and_searches_500_users() {
    let h = harness_with(admin_config).await;
    let (admin, _) = user_with_role(&h, "admin@l.io", Some("admin")).await;
    let now = h.clock.now();
    let words = ["Ada", "bert", "Cleo", "dan", "Eve", "fay", "Gus", "hal"];
    for i in 0..500u32 {
        let mut u = storage::User::new(
            &format!(
                "user{:03}@{}.io",
                (i * 7919) % 500,
                ["l", "m"][i as usize % 2]
            ),
            format!("{} {}", words[(i as usize * 31) % words.len()], i % 37),
            None,
            now + chrono::Duration::milliseconds(i as i64),
        );
        u.email_verified = i % 3 == 0;
        h.store.create_user(&u, None, &[]).await.unwrap();
    }
    let mut all: Vec<Value> = Vec::new();
    let mut offset = 0;
    loop {
        let r = h
            .get(&format!("/api/auth/admin/list-users?limit=64&offset={offset}&sortBy=email&sortDirection=asc"), Some(&admin))
            .await
            .expect(200)
            .json();
        assert_eq!(r["total"], 501);
        assert_eq!(
            (r["limit"].as_u64(), r["offset"].as_u64()),
            (Some(64), Some(offset))
        );
        let page = r["users"].as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        all.extend(page);
        offset += 64;
    }
    let emails: Vec<&str> = all.iter().map(|u| u["email"].as_str().unwrap()).collect();
    let mut sorted = emails.clone();
    sorted.sort();
    assert_eq!(emails.len(), 501);
    assert_eq!(emails, sorted);
    // Search names (ASCII case folded) with each operator, sorted by name descending.
    let everyone: Vec<Value> = {
        let r = h
            .get("/api/auth/admin/list-users?limit=1000", Some(&admin))
            .await
            .expect(200)
            .json();
        r["users"].as_array().unwrap().clone()
    };
    for (op, term, pred) in [
        (
            "contains",
            "ER",
            Box::new(|n: &str| n.to_lowercase().contains("er")) as Box<dyn Fn(&str) -> bool>,
        ),
        (
            "starts_with",
            "e",
            Box::new(|n: &str| n.to_lowercase().starts_with('e')),
        ),
        ("ends_with", " 3", Box::new(|n: &str| n.ends_with(" 3"))),
    ] {
        let mut want: Vec<(String, String, String)> = everyone
            .iter()
            .filter(|u| pred(u["name"].as_str().unwrap()))
            .map(|u| {
                (
                    u["name"].as_str().unwrap().to_owned(),
                    u["createdAt"].as_str().unwrap().to_owned(),
                    u["id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let term_q = term.replace(' ', "%20");
        let r = h
            .get(&format!("/api/auth/admin/list-users?searchField=name&searchOperator={op}&searchValue={term_q}&sortBy=name&sortDirection=desc&limit=20&offset=5"), Some(&admin))
            .await
            .expect(200)
            .json();
        assert_eq!(r["total"].as_u64(), Some(want.len() as u64), "{op} {term}");
        let got: Vec<&str> = r["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["id"].as_str().unwrap())
            .collect();
        let want_ids: Vec<&str> = want.iter().skip(5).take(20).map(|w| w.2.as_str()).collect();
        assert_eq!(got, want_ids, "{op} {term}");
    }
    // Filters.
    let r = h
        .get(
            "/api/auth/admin/list-users?filterField=emailVerified&filterValue=true&limit=1000",
            Some(&admin),
        )
        .await
        .expect(200)
        .json();
    let want = everyone
        .iter()
        .filter(|u| u["emailVerified"] == true)
        .count();
    assert_eq!(r["total"].as_u64(), Some(want as u64));
    let r = h
        .get(
            "/api/auth/admin/list-users?filterField=role&filterValue=admin",
            Some(&admin),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["total"], 1);
    let r = h
        .get(
            "/api/auth/admin/list-users?searchValue=@M.IO&searchOperator=ends_with&limit=1",
            Some(&admin),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["total"], 250);
    // Bad parameters are clear errors.
    for q in [
        "sortBy=password",
        "filterField=password&filterValue=x",
        "searchOperator=regex&searchValue=a",
        "limit=abc",
        "filterField=banned&filterValue=maybe",
        "filterField=role",
    ] {
        let r = h
            .get(&format!("/api/auth/admin/list-users?{q}"), Some(&admin))
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "VALIDATION_ERROR".into()),
            "{q}: {}",
            r.text
        );
    }
}

/// Tokens from `/token` and `set-auth-jwt` verify against `/jwks` with the `jsonwebtoken`
/// crate used directly here (nothing of the signer's code); after a rotation old tokens still
/// verify and new ones carry the new key id; a tampered token fails.
#[tokio::test]
async fn jwt_verifies_against_jwks_across_a_rotation() {
    for alg in ["EdDSA", "ES256", "RS256"] {
        let h = harness_with(|c| {
            admin_config(c);
            c.jwt.algorithm = alg.into();
        })
        .await;
        let (cookie, id) = user_with_role(&h, "jwt@j.io", None).await;
        let token = h
            .get("/api/auth/token", Some(&cookie))
            .await
            .expect(200)
            .json()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        let claims = verify(&jwks, &token, &h.state.config.base_url)
            .unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(
            (claims["sub"].as_str(), claims["email"].as_str()),
            (Some(id.0.as_str()), Some("jwt@j.io"))
        );
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            900
        );
        // The header of get-session carries one too.
        let r = h
            .get("/api/auth/get-session", Some(&cookie))
            .await
            .expect(200);
        let header = r
            .headers
            .get("set-auth-jwt")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        verify(&jwks, &header, &h.state.config.base_url).unwrap();
        // Tampered: another subject under the same signature.
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged: Value = serde_json::from_slice(&b64(parts[1])).unwrap();
        forged["sub"] = json!("someone-else");
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64_url(&serde_json::to_vec(&forged).unwrap()),
            parts[2]
        );
        assert!(
            verify(&jwks, &forged, &h.state.config.base_url).is_err(),
            "{alg}"
        );
        // Rotate (as `gatehouse keys rotate` does), and let this process see it now.
        let old_kid = kid_of(&token);
        h.clock.advance(chrono::Duration::seconds(1));
        let kp = h.state.jwt.new_key_pair(h.clock.now()).unwrap();
        h.state.actors.add_key_pair(&kp).await.unwrap();
        h.state.jwt.forget_keys();
        let new_token = h
            .get("/api/auth/token", Some(&cookie))
            .await
            .expect(200)
            .json()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(kid_of(&new_token), kp.id.0);
        assert_ne!(kid_of(&new_token), old_kid);
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 2);
        verify(&jwks, &token, &h.state.config.base_url).unwrap();
        verify(&jwks, &new_token, &h.state.config.base_url).unwrap();
        // Once every token of the old key has expired, it leaves the JWKS.
        h.clock.advance(chrono::Duration::seconds(900 + 31));
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, vec![kp.id.0.as_str()]);
        // Private keys are stored encrypted.
        for stored in h.store.list_key_pairs().await.unwrap() {
            assert!(
                stored.private_key.starts_with("gk1.")
                    && !stored.private_key.contains("PRIVATE KEY")
            );
        }
    }
    // Anonymous callers get no token.
    let h = harness().await;
    let r = h.get("/api/auth/token", None).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
}

fn b64(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

fn base64_url(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn kid_of(token: &str) -> String {
    jsonwebtoken::decode_header(token).unwrap().kid.unwrap()
}

/// Verifies `token` with the JWKS key its `kid` names (signature, `exp`, `iss`, `aud`).
fn verify(jwks: &Value, token: &str, base: &str) -> Result<Value, String> {
    let set: jsonwebtoken::jwk::JwkSet =
        serde_json::from_value(jwks.clone()).map_err(|e| e.to_string())?;
    let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
    let kid = header.kid.ok_or("no kid")?;
    let jwk = set.find(&kid).ok_or("kid not in the JWKS")?;
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let mut v = jsonwebtoken::Validation::new(header.alg);
    v.set_issuer(&[base]);
    v.set_audience(&[base]);
    // The tests' clock is a manual one; signature and claims are what is checked here.
    v.validate_exp = false;
    jsonwebtoken::decode::<Value>(token, &key, &v)
        .map(|d| d.claims)
        .map_err(|e| e.to_string())
}

/// The operator's bootstrap: `gatehouse user create` on a stopped server makes the first admin
/// (password generated and printed once), `user set-role` and `keys rotate` work while the
/// server runs, through the same store.
#[tokio::test]
async fn cli_bootstraps_an_admin_and_rotates_keys() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str], stdin: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        c.args(args)
            .env("GATEHOUSE_DATA_DIR", dir.path())
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        )
    };
    let (ok, password, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "Root@Ops.io",
            "--name",
            "Root",
            "--role",
            "admin",
        ],
        None,
    );
    assert!(ok, "{said}");
    assert!(said.contains("created user root@ops.io"), "{said}");
    assert!(
        password.len() >= 20,
        "a generated password is printed once: {password:?}"
    );
    let (ok, _, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "root@ops.io",
            "--name",
            "Again",
        ],
        Some("another-password\n"),
    );
    assert!(
        !ok && said.contains("USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"),
        "{said}"
    );
    let (ok, _, said) = cli(
        &[
            "user", "create", "--email", "x@ops.io", "--name", "X", "--role", "wizard",
        ],
        None,
    );
    assert!(!ok && said.contains("non-existent role"), "{said}");

    let server = Server::start(dir.path());
    let http = reqwest::Client::new();
    let post = |path: &str, body: Value, cookie: Option<&str>| {
        let mut r = http
            .post(format!("{}{path}", server.base))
            .header("origin", "http://localhost:3000")
            .json(&body);
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.send()
    };
    let r = post(
        "/sign-in/email",
        json!({"email": "root@ops.io", "password": password}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    // On a real clock too, the cookie lasts exactly the configured lifetime.
    let set = r
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(set.contains("; Max-Age=604800;"), "{set}");
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let users = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(users.status(), 200);
    // A second user, made an admin from the command line while the server runs.
    let (ok, _, said) = cli(
        &[
            "user",
            "create",
            "--email",
            "ops2@ops.io",
            "--name",
            "Ops",
            "--password-stdin",
        ],
        Some("ops-password-2\n"),
    );
    assert!(ok, "{said}");
    let r = post(
        "/sign-in/email",
        json!({"email": "ops2@ops.io", "password": "ops-password-2"}),
        None,
    )
    .await
    .unwrap();
    let ops2 = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let denied = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &ops2)
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let (ok, _, said) = cli(&["user", "set-role", "ops2@ops.io", "admin"], None);
    assert!(ok && said.contains("now has role admin"), "{said}");
    let allowed = http
        .get(format!("{}/admin/list-users", server.base))
        .header("cookie", &ops2)
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    // Key rotation while running: the JWKS shows both keys once the server re-reads them.
    let jwks = |http: reqwest::Client, base: String| async move {
        http.get(format!("{base}/jwks"))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    let before = jwks(http.clone(), server.base.clone()).await;
    assert_eq!(before["keys"].as_array().unwrap().len(), 1);
    let (ok, _, said) = cli(&["keys", "rotate"], None);
    assert!(ok && said.starts_with("new signing key "), "{said}");
    // The first line (a consumer of the running server's store may log after it).
    let new_kid = said
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("new signing key ")
        .trim()
        .to_owned();
    let stored = storage::sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
        .await
        .unwrap();
    let kids: Vec<String> = storage::KeyPairStore::list_key_pairs(&stored)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id.0)
        .collect();
    assert!(kids.contains(&new_kid) && kids.len() == 2, "{kids:?}");
    server.stop();
}

/// better-auth's official client with `adminClient()` (Node, `api/tests/js-client`) lists,
/// bans, unbans and sets roles against a running Gatehouse, and `jose` verifies its JWT
/// against the JWKS. Skipped when the npm packages are not installed, unless
/// `REQUIRE_JS_CLIENT=1` (set by `.ci/test`).
#[tokio::test]
async fn official_client_administers_users() {
    use std::process::Command;
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let base_url = "http://localhost:3000";
    let http = reqwest::Client::new();
    let sign_up = |email: &'static str| {
        http.post(format!("{}/sign-up/email", server.base))
            .header("origin", base_url)
            .json(&json!({"email": email, "password": PASSWORD, "name": "Js"}))
            .send()
    };
    sign_up("boss@js.io").await.unwrap();
    let victim: Value = sign_up("victim@js.io").await.unwrap().json().await.unwrap();
    let victim = victim["user"]["id"].as_str().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["user", "set-role", "boss@js.io", "admin"])
        .env("GATEHOUSE_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tokio::process::Command::new("node")
        .arg("admin-client.mjs")
        .args([
            &format!("http://{}", server.addr),
            base_url,
            "boss@js.io",
            PASSWORD,
            &victim,
        ])
        .current_dir(&js)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["signIn"]["email"], "boss@js.io", "{seen}");
    assert_eq!(seen["list"]["total"], 2, "{seen}");
    assert_eq!(
        seen["list"]["emails"],
        json!(["boss@js.io", "victim@js.io"]),
        "{seen}"
    );
    assert_eq!(
        (&seen["ban"]["banned"], &seen["ban"]["reason"]),
        (&json!(true), &json!("client test")),
        "{seen}"
    );
    assert_eq!(seen["unban"]["banned"], false, "{seen}");
    assert_eq!(seen["setRole"]["role"], "admin", "{seen}");
    assert_eq!(
        seen["denied"],
        json!({"status": 400, "code": "YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE"}),
        "{seen}"
    );
    assert_eq!(
        (seen["jwt"]["email"].as_str(), seen["jwt"]["alg"].as_str()),
        (Some("boss@js.io"), Some("EdDSA")),
        "{seen}"
    );
    assert_eq!(
        seen["forged"], "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
        "{seen}"
    );
    // The ban and unban really happened in the store.
    let user = storage::UserStore::get_user(
        &storage::sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
            .await
            .unwrap(),
        &UserId(victim),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!((user.banned, user.role.as_deref()), (false, Some("admin")));
    server.stop();
}

/// A configured role holds exactly its permissions: one that may only set passwords does that,
/// and nothing else.
#[tokio::test]
async fn a_narrow_role_holds_only_its_permission() {
    let h = harness_with(|c| {
        admin_config(c);
        let mut resetter = BTreeMap::new();
        resetter.insert("user".to_string(), vec!["set-password".to_string()]);
        c.admin.roles.insert("resetter".into(), resetter);
    })
    .await;
    let (resetter, _) = user_with_role(&h, "resetter@n.io", Some("resetter")).await;
    let (_, target) = user_with_role(&h, "target@n.io", None).await;
    h.post(
        "/api/auth/admin/set-user-password",
        json!({"userId": target.0, "newPassword": "reset-by-helpdesk"}),
        Some(&resetter),
    )
    .await
    .expect(200);
    h.sign_in("target@n.io", "reset-by-helpdesk")
        .await
        .expect(200);
    let r = h
        .get(
            &format!("/api/auth/admin/get-user?id={}", target.0),
            Some(&resetter),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "YOU_ARE_NOT_ALLOWED_TO_GET_USER".into())
    );
    let r = h
        .post(
            "/api/auth/admin/ban-user",
            json!({"userId": target.0}),
            Some(&resetter),
        )
        .await;
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_BAN_USERS");
}

/// Key pairs written under another secret cannot be decrypted: the server signs with a new key
/// instead of failing, and sessions keep resolving.
#[tokio::test]
async fn keys_under_another_secret_are_replaced_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let first = Server::start_with(
        dir.path(),
        &[(
            "GATEHOUSE_SECRET",
            "first-secret-0123456789abcdefghijklmnop",
        )],
        None,
    );
    let http = reqwest::Client::new();
    let jwks = |base: String| {
        let http = http.clone();
        async move {
            http.get(format!("{base}/jwks"))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let before = jwks(first.base.clone()).await;
    first.stop();
    let second = Server::start_with(
        dir.path(),
        &[(
            "GATEHOUSE_SECRET",
            "second-secret-0123456789abcdefghijklmno",
        )],
        None,
    );
    let after = jwks(second.base.clone()).await;
    let kids = |v: &Value| {
        v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(kids(&after).len(), 1);
    assert_ne!(kids(&after), kids(&before));
    let r = http
        .post(format!("{}/sign-up/email", second.base))
        .header("origin", "http://localhost:3000")
        .json(&json!({"email": "k@k.io", "password": PASSWORD, "name": "K"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let s = http
        .get(format!("{}/get-session", second.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert!(s.headers().contains_key("set-auth-jwt"));
    second.stop();
}

async fn session_jwt(h: &H, cookie: &str) -> String {
    h.get("/api/auth/get-session", Some(cookie))
        .await
        .expect(200)
        .headers
        .get("set-auth-jwt")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// get-session's `set-auth-jwt` is signed again only when it must be: the same token while at
/// least half its lifetime is left and the user is unchanged; a new one after a change of the
/// user, and once half its life has passed.
#[tokio::test]
async fn get_session_reuses_a_fresh_enough_jwt() {
    let h = harness_with(admin_config).await;
    let (cookie, _) = user_with_role(&h, "reuse@j.io", None).await;
    let first = session_jwt(&h, &cookie).await;
    h.clock.advance(chrono::Duration::seconds(60));
    assert_eq!(
        session_jwt(&h, &cookie).await,
        first,
        "reused within its half-life"
    );
    // The user changes: the claims change, so does the token.
    h.post(
        "/api/auth/update-user",
        json!({"name": "Renamed"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let renamed = session_jwt(&h, &cookie).await;
    assert_ne!(renamed, first);
    let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
    let claims = verify(&jwks, &renamed, &h.state.config.base_url).unwrap();
    assert_eq!(claims["name"], "Renamed");
    // Past half its lifetime (900 s): a fresh one.
    h.clock.advance(chrono::Duration::seconds(451));
    let later = session_jwt(&h, &cookie).await;
    assert_ne!(later, renamed);
    let claims = verify(&jwks, &later, &h.state.config.base_url).unwrap();
    assert_eq!(claims["iat"].as_i64().unwrap(), h.clock.now().timestamp());
}
