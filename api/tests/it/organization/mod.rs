//! Organizations and members: authorization for every route × role, the rules, and races.

mod basics;
mod custom_roles;
mod invitations;
mod races;
mod roles;
mod teams;

use crate::common::*;
use futures::future::join_all;
use poem::http::Method;
use serde_json::{json, Value};

const PW: &str = "org-password-1";
const KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";

pub(crate) async fn org_harness(limit: u32) -> H {
    harness_with(move |c| org_config(c, limit)).await
}

fn org_config(c: &mut gatehouse_api::config::Config, limit: u32) {
    {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
        c.limits.membership_limit = limit;
        // The matrix sends hundreds of invitations; the daily caps have their own test.
        c.limits.invitations_per_organization_per_day = 0;
        c.limits.invitations_per_inviter_per_day = 0;
        c.organization.roles.insert(
            "recruiter".into(),
            [
                ("member".to_string(), vec!["create".to_string()]),
                ("invitation".to_string(), vec!["create".to_string()]),
            ]
            .into_iter()
            .collect(),
        );
    }
}

/// Signs a user up: (cookie, user id).
pub(crate) async fn user(h: &H, email: &str) -> (String, String) {
    let r = h.sign_up(email, PW).await;
    (
        r.cookie_header(),
        r.json()["user"]["id"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn create_org(h: &H, cookie: &str, slug: &str) -> Value {
    h.post(
        "/api/auth/organization/create",
        json!({"name": format!("Org {slug}"), "slug": slug, "metadata": {"plan": "pro"}}),
        Some(cookie),
    )
    .await
    .expect(200)
    .json()
}

pub(crate) async fn add_member(h: &H, org: &str, user_id: &str, role: &str) -> Value {
    h.call(
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": user_id, "role": role, "organizationId": org})),
        None,
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await
    .expect(200)
    .json()
}

/// Verifies a user's address by following the mailed link.
/// Verifies the address from the mailed link, followed in the user's own signed-in browser
/// (`cookie`; `None` when the test has no session for them).
async fn verify(h: &H, email: &str, cookie: Option<&str>) {
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": email}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(h, "verify-email", email).unwrap();
    h.get(&link_path(h, &mail), cookie).await.expect(302);
}

fn invitation_id(h: &H, to: &str) -> String {
    let mail = last_mail(h, "invitation", to).expect("invitation mail");
    mail["link"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned()
}

/// Signs a user up and verifies the address from the mailed link (followed in their own,
/// signed-in browser): their cookie.
async fn verified_user(h: &H, email: &str) -> String {
    let (cookie, _) = user(h, email).await;
    verify(h, email, Some(&cookie)).await;
    cookie
}
