//! Deleting an account by its mailed link, once and only with its owner's session; listing and unlinking accounts.

use super::*;

#[tokio::test]
async fn delete_account_via_the_mailed_link() {
    let h = harness().await;
    let r = h.sign_up("del@example.com", PW).await;
    let cookie = r.cookie_header();
    let user_id = storage::UserId(r.json()["user"]["id"].as_str().unwrap().to_owned());
    // A membership that must go with the user.
    let now = storage::Clock::now(&*h.clock);
    let owner = h.sign_up("owner@example.com", PW).await.json()["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let org = storage::Organization::new("O".into(), "o".into(), None, None, true, now);
    let member = |u: &str, role: &str| storage::Member {
        id: storage::MemberId::generate(),
        organization_id: org.id.clone(),
        user_id: storage::UserId(u.into()),
        role: role.into(),
        team_id: None,
        created_at: now,
    };
    h.store
        .create_organization(&org, &member(&owner, "owner"), None, &[])
        .await
        .unwrap();
    h.state
        .actors
        .org(org.id.clone())
        .add_member(actors::Acting::Server, user_id.clone(), "member")
        .await
        .unwrap();

    let r = h
        .post(
            "/api/auth/delete-user",
            json!({"callbackURL": "/goodbye"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["message"], "Verification email sent");
    assert!(
        h.store.get_user(&user_id).await.unwrap().is_some(),
        "nothing deleted before confirmation"
    );
    let mail = last_mail(&h, "delete-account", "del@example.com").unwrap();
    let r = h
        .get(&link_path(&h, &mail), Some(&cookie))
        .await
        .expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/goodbye");
    assert_eq!(r.set_cookies().len(), 3);
    assert!(h.store.get_user(&user_id).await.unwrap().is_none());
    assert!(h
        .store
        .get_member(&org.id, &user_id)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        h.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null"
    );
    h.sign_in("del@example.com", PW).await.expect(401);
    // Used once: the session is gone with the user, and so is the token.
    let r = h
        .get(&link_path(&h, &mail), Some(&cookie))
        .await
        .expect(404);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");

    // Without a sender: deleted at once.
    let now_h =
        harness_with(|c| c.mail.transport = gatehouse_api::config::MailTransport::None).await;
    let c = now_h.sign_up("now@example.com", PW).await.cookie_header();
    let r = now_h
        .post("/api/auth/delete-user", json!({}), Some(&c))
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"success": true, "message": "User deleted"})
    );
    assert_eq!(r.set_cookies().len(), 3);
    now_h.sign_in("now@example.com", PW).await.expect(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_delete_callbacks_delete_once() {
    let h = harness().await;
    let cookie = h.sign_up("twice@example.com", PW).await.cookie_header();
    h.post("/api/auth/delete-user", json!({}), Some(&cookie))
        .await
        .expect(200);
    let path = link_path(
        &h,
        &last_mail(&h, "delete-account", "twice@example.com").unwrap(),
    );
    let tasks = (0..2).map(|_| {
        let ep = h.ep.clone();
        let path = path.clone();
        let cookie = cookie.clone();
        tokio::spawn(async move {
            call(&ep, Method::GET, &path, None, Some(&cookie), &[])
                .await
                .status
                .as_u16()
        })
    });
    let mut statuses: Vec<u16> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    statuses.sort();
    // The mailed link carries the default callbackURL (`/`): the winner redirects there.
    assert_eq!(statuses, vec![302, 404]);
}

#[tokio::test]
async fn list_and_unlink_accounts() {
    let h = harness().await;
    let r = h.sign_up("link@example.com", PW).await;
    let cookie = r.cookie_header();
    let uid = r.json()["user"]["id"].as_str().unwrap().to_owned();
    let list = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    let acc = &list[0];
    assert_eq!(acc["provider"], "credential");
    assert_eq!(acc["providerId"], "credential");
    assert_eq!(acc["accountId"], uid.as_str());
    assert_eq!(acc["scopes"], json!([]));
    assert!(acc["createdAt"].is_string() && acc["updatedAt"].is_string() && acc["id"].is_string());
    assert!(acc.get("password").is_none());

    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "credential"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "FAILED_TO_UNLINK_LAST_ACCOUNT", "message": "You can't unlink your last account"})
    );
    let now = storage::Clock::now(&*h.clock);
    h.store
        .create_account(
            &storage::Account {
                id: storage::AccountId::generate(),
                user_id: storage::UserId(uid.clone()),
                provider_id: "github".into(),
                account_id: "777".into(),
                password: None,
                access_token: Some("gho_secret".into()),
                refresh_token: None,
                id_token: None,
                access_token_expires_at: None,
                refresh_token_expires_at: None,
                scope: Some("read:user,user:email".into()),
                created_at: now,
                updated_at: now,
            },
            &[],
        )
        .await
        .unwrap();
    let list = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200);
    assert!(!list.text.contains("gho_secret"));
    let gh = list
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provider"] == "github")
        .cloned()
        .unwrap();
    assert_eq!(gh["scopes"], json!(["read:user", "user:email"]));
    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "github", "accountId": "999"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ACCOUNT_NOT_FOUND");
    h.post(
        "/api/auth/unlink-account",
        json!({"providerId": "github", "accountId": "777"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    assert_eq!(
        h.get("/api/auth/list-accounts", Some(&cookie))
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let all = harness_with(|c| c.account.allow_unlinking_all = true).await;
    let c = all.sign_up("all@example.com", PW).await.cookie_header();
    all.post(
        "/api/auth/unlink-account",
        json!({"providerId": "credential"}),
        Some(&c),
    )
    .await
    .expect(200);
    all.sign_in("all@example.com", PW).await.expect(401);
}

/// The delete-account link deletes only in the browser of the account it was mailed to: a mail
/// scanner prefetching it, or anyone it reaches without that user's session, deletes nothing
/// (on main before this fix, a GET of the link alone deleted the account).
#[tokio::test]
async fn a_delete_link_without_the_owners_session_deletes_nothing() {
    let h = harness().await;
    let r = h.sign_up("keep@example.com", PW).await;
    let cookie = r.cookie_header();
    let id = storage::UserId(r.json()["user"]["id"].as_str().unwrap().to_owned());
    let other = h.sign_up("mallory@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/delete-user",
        json!({"callbackURL": "/bye"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let path = link_path(
        &h,
        &last_mail(&h, "delete-account", "keep@example.com").unwrap(),
    );
    // A prefetch without cookies.
    let r = h.get(&path, None).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "FAILED_TO_GET_USER_INFO", "message": "Failed to get user info"})
    );
    // Another user's session.
    let r = h.get(&path, Some(&other)).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "INVALID_TOKEN", "message": "Invalid token"})
    );
    assert!(
        h.store.get_user(&id).await.unwrap().is_some(),
        "nothing deleted"
    );
    assert_ne!(
        h.session(&other).await,
        Value::Null,
        "the other user is untouched"
    );
    // A wrong token in the owner's browser: nothing either, and no redirect.
    let r = h
        .get(
            "/api/auth/delete-user/callback?token=not-the-token&callbackURL=/bye",
            Some(&cookie),
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "INVALID_TOKEN");
    assert!(h.store.get_user(&id).await.unwrap().is_some());
    // The owner's own browser: deleted (the failed attempts consumed nothing).
    let r = h.get(&path, Some(&cookie)).await.expect(302);
    assert_eq!(r.headers["location"], "http://localhost:3000/bye");
    assert!(h.store.get_user(&id).await.unwrap().is_none());
}
