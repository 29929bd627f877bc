//! Managing users: the answers, paging and search, bans and their races.

use super::*;

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
