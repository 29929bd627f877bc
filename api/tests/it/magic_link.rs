//! Sign-in links by mail (the magic-link plugin) through HTTP: a new address signed up, a
//! known one signed in, a link used once (also by concurrent follows), its expiry, the
//! redirect targets checked, the proof of the mailbox on an account someone else registered,
//! and the second factor.
use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

/// Asks for a link with `body` and answers its path, read from the outbox.
async fn link(h: &H, body: Value) -> String {
    let email = body["email"].as_str().unwrap().to_lowercase();
    let seen = mails(h, "magic-link", &email).len();
    let r = h
        .post("/api/auth/sign-in/magic-link", body, None)
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    link_path(h, &next_mail(h, "magic-link", &email, seen).await)
}

fn location(r: &Resp) -> String {
    r.headers["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_link_signs_up_a_new_address_once_and_leads_where_asked() {
    let h = harness().await;
    let path = link(
        &h,
        json!({"email": "Lu@Example.com", "name": "Lu", "callbackURL": "/dashboard",
               "newUserCallbackURL": "/welcome", "errorCallbackURL": "/oops"}),
    )
    .await;
    assert!(
        path.starts_with("/api/auth/magic-link/verify?token="),
        "{path}"
    );
    let mail = last_mail(&h, "magic-link", "lu@example.com").unwrap();
    assert!(mail["subject"].as_str().unwrap().starts_with("Sign in to"));
    let r = h.get(&path, None).await.expect(302);
    assert_eq!(location(&r), format!("{}/welcome", h.state.config.base_url));
    let cookie = r.cookie_header();
    let s = h.session(&cookie).await;
    assert_eq!(s["user"]["email"], "lu@example.com");
    assert_eq!(s["user"]["name"], "Lu");
    assert_eq!(s["user"]["emailVerified"], true);
    // Once: the second follow goes to the error target.
    let r = h.get(&path, None).await.expect(302);
    assert!(
        location(&r).ends_with("/oops?error=INVALID_TOKEN"),
        "{}",
        location(&r)
    );

    // A known address goes to callbackURL; without one in the link, the session as JSON.
    let path = link(
        &h,
        json!({"email": "lu@example.com", "callbackURL": "/dashboard"}),
    )
    .await;
    let r = h.get(&path, None).await.expect(302);
    assert!(location(&r).ends_with("/dashboard"));
    let path = link(&h, json!({"email": "lu@example.com"})).await;
    let token = path
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let r = h
        .get(&format!("/api/auth/magic-link/verify?token={token}"), None)
        .await
        .expect(200);
    let body = r.json();
    assert_eq!(body["user"]["email"], "lu@example.com");
    assert_eq!(body["session"]["token"], body["token"]);
    assert_eq!(
        h.session(&r.cookie_header()).await["user"]["email"],
        "lu@example.com"
    );
}

#[tokio::test]
async fn targets_are_checked_and_old_or_unknown_links_fail() {
    let h = harness().await;
    for key in ["callbackURL", "newUserCallbackURL", "errorCallbackURL"] {
        let r = h
            .post(
                "/api/auth/sign-in/magic-link",
                json!({"email": "x@example.com", key: "https://evil.example/"}),
                None,
            )
            .await
            .expect(403);
        assert_eq!(r.code(), "INVALID_CALLBACK_URL");
    }
    let r = h
        .get(
            "/api/auth/magic-link/verify?token=nope&errorCallbackURL=https://evil.example/",
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
    let r = h
        .post(
            "/api/auth/sign-in/magic-link",
            json!({"email": "bad"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = h
        .get(
            "/api/auth/magic-link/verify?token=nope&callbackURL=/d",
            None,
        )
        .await
        .expect(302);
    assert!(location(&r).ends_with("/d?error=INVALID_TOKEN"));
    let path = link(&h, json!({"email": "old@example.com", "callbackURL": "/d"})).await;
    h.clock.advance(Duration::seconds(301));
    let r = h.get(&path, None).await.expect(302);
    assert!(location(&r).ends_with("/d?error=EXPIRED_TOKEN"));
    assert!(h
        .store
        .get_user_by_email("old@example.com")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn without_sign_up_an_unknown_address_gets_no_link() {
    let h = harness_with(|c| c.magic_link.disable_sign_up = true).await;
    h.sign_up("kit@example.com", PW).await;
    let r = h
        .post(
            "/api/auth/sign-in/magic-link",
            json!({"email": "ghost@example.com"}),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.json(), json!({"status": true}));
    link(&h, json!({"email": "kit@example.com"})).await;
    assert!(mails(&h, "magic-link", "ghost@example.com").is_empty());
}

/// Issue #35: a link sign-in on an account someone registered with the owner's address
/// ends the intruder's sessions and password.
#[tokio::test]
async fn a_link_sign_in_undoes_a_pre_registration() {
    let h = harness().await;
    let intruder = h.sign_up("own@example.com", PW).await.cookie_header();
    let path = link(&h, json!({"email": "own@example.com", "callbackURL": "/"})).await;
    let r = h.get(&path, None).await.expect(302);
    let owner = r.cookie_header();
    assert_eq!(h.session(&intruder).await, Value::Null);
    assert_eq!(h.session(&owner).await["user"]["emailVerified"], true);
    h.sign_in("own@example.com", PW).await.expect(401);
}

#[tokio::test]
async fn one_link_followed_ten_times_signs_in_once() {
    let h = harness().await;
    h.sign_up("many@example.com", PW).await;
    let path = link(
        &h,
        json!({"email": "many@example.com", "callbackURL": "/in"}),
    )
    .await;
    let all = join_all((0..10).map(|_| h.get(&path, None))).await;
    let signed: Vec<_> = all
        .iter()
        .filter(|r| r.cookie_header().contains("session_token"))
        .collect();
    assert_eq!(signed.len(), 1);
    assert_eq!(
        all.iter()
            .filter(|r| location(r).ends_with("/in?error=INVALID_TOKEN"))
            .count(),
        9
    );
}

#[tokio::test]
async fn a_link_sign_in_goes_to_the_second_step() {
    let h = harness().await;
    h.sign_up("tf@example.com", PW).await;
    h.change_user("tf@example.com", |u| u.two_factor_enabled = true)
        .await;
    let path = link(
        &h,
        json!({"email": "tf@example.com", "callbackURL": "/home"}),
    )
    .await;
    let r = h.get(&path, None).await.expect(302);
    let to = location(&r);
    assert!(to.contains("/two-factor?methods="), "{to}");
    assert!(
        to.ends_with("redirectTo=%2Fhome") || to.contains("redirectTo=http"),
        "{to}"
    );
    assert!(r.set_cookie("gatehouse.two_factor").is_some());
    assert!(!r.cookie_header().contains("session_token"));
}
