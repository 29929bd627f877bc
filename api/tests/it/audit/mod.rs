//! The audit log: each route writes its event once, with the right actor and outcome; the
//! admin and organization read routes filter, page and refuse as documented; no stored event
//! holds a password or a token.

mod kinds;
mod routes;
use crate::common::*;
use poem::http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";
const PASSWORD: &str = "correct-horse-battery";
const NEW_PASSWORD: &str = "staple-another-horse";

async fn audit_harness() -> H {
    harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
    })
    .await
}

async fn server(h: &H, method: Method, path: &str, body: Option<Value>) -> Resp {
    h.call(
        method,
        path,
        body,
        None,
        &[
            ("authorization", &format!("Bearer {KEY}")),
            ("origin", ORIGIN),
        ],
    )
    .await
}

/// Every event the admin route answers, oldest first, through its pages.
async fn all_events(h: &H, filter: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/auth/admin/audit-log?order=oldest&limit=7{filter}{cursor}");
        let page = server(h, Method::GET, &path, None).await.expect(200).json();
        out.extend(page["events"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

fn count(events: &[Value], action: &str, outcome: &str) -> usize {
    events
        .iter()
        .filter(|e| e["action"] == action && e["outcome"] == outcome)
        .count()
}

fn one<'a>(events: &'a [Value], action: &str, outcome: &str) -> &'a Value {
    let found: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == action && e["outcome"] == outcome)
        .collect();
    assert_eq!(found.len(), 1, "{action} {outcome}: {events:#?}");
    found[0]
}

/// The session cookies of `r` on top of `cookie` (later ones win by name).
fn merge_cookies(cookie: &str, r: &Resp) -> String {
    let mut jar: Vec<(String, String)> = Vec::new();
    let fresh = r.cookie_header();
    for part in cookie.split("; ").chain(fresh.split("; ")) {
        if let Some((k, v)) = part.split_once('=') {
            jar.retain(|(n, _)| n != k);
            jar.push((k.to_owned(), v.to_owned()));
        }
    }
    for c in r.set_cookies() {
        if c.contains("Max-Age=0") {
            let name = c.split('=').next().unwrap().to_owned();
            jar.retain(|(n, _)| *n != name);
        }
    }
    jar.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}
