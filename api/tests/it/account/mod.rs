//! Account flows end to end through HTTP, following the links from the messages the server
//! really produced (outbox files), with expired, reused, tampered and wrong-kind tokens.

mod deletion;
mod email;
mod password;
mod reset;
mod verification;

use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use poem::http::Method;
use serde_json::{json, Value};

const PW: &str = "first-password-1";

fn query_param(url: &str, key: &str) -> Option<String> {
    let q = url.split_once('?')?.1;
    q.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8()
                .unwrap()
                .into_owned()
        })
    })
}

/// The token of the newest reset mail to `to` (after following its link).
async fn reset_token(h: &H, to: &str) -> String {
    h.post(
        "/api/auth/request-password-reset",
        json!({"email": to, "redirectTo": "/reset"}),
        None,
    )
    .await
    .expect(200);
    reset_token_of(&last_mail(h, "reset-password", to).unwrap())
}

async fn reset(h: &H, token: &str, password: &str) -> Resp {
    h.post(
        "/api/auth/reset-password",
        json!({"newPassword": password, "token": token}),
        None,
    )
    .await
}

fn urlencode(v: &str) -> String {
    v.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}
