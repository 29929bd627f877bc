//! The admin plugin: who may call each route (a table of every route × caller), bans racing
//! sign-ins, impersonation and its lifetime, the user listing, and JWT/JWKS verified by an
//! independent verifier.

mod cli;
mod impersonation;
mod jwt;
mod matrix;
mod users;
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
