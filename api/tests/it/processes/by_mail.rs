//! Codes and links by mail on two processes: a code asked on one is checked on the other,
//! their wrong tries add up to one limit, and of concurrent uses spread over both (a code, a
//! link) exactly one signs in.
use super::{Backend, Pair};
use crate::email_otp::code_of;
use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::PathBuf;

const TRIALS: usize = 20;

impl Pair {
    /// The newest mail of `kind` to `to` not in `seen` (both processes share the outbox
    /// folder), which joins `seen`; waited for (mail leaves after the answer).
    pub(super) async fn new_mail(
        &self,
        kind: &str,
        to: &str,
        seen: &mut HashSet<PathBuf>,
    ) -> Value {
        let dir = self.dir.path().join("outbox");
        for _ in 0..200 {
            let newest = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json") && !seen.contains(p))
                .filter_map(|p| {
                    let m: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
                    (m["kind"] == kind && m["to"] == to).then_some((p, m))
                })
                .max_by(|x, y| x.0.cmp(&y.0));
            if let Some((path, mail)) = newest {
                seen.insert(path);
                return mail;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no {kind} mail to {to}");
    }
}

/// A sign-in code asked on A (trial by trial: either), its tries counted across both, and
/// ten sign-ins with it spread over both: one session.
pub(super) async fn a_mailed_code_or_link_signs_in_once_across_processes(backend: Backend) {
    let Some(p) = super::pair(backend, &[]) else {
        return;
    };
    let email = "code@example.com";
    p.user(email).await;
    let mut seen = HashSet::new();
    let ask = |i: usize| {
        p.post(
            p.pick(i),
            "/email-otp/send-verification-otp",
            json!({"email": email, "type": "sign-in"}),
            None,
        )
    };
    let sign_in = |i: usize, otp: String| {
        p.post(
            p.pick(i),
            "/sign-in/email-otp",
            json!({"email": email, "otp": otp}),
            None,
        )
    };
    assert_eq!(ask(0).await.status, 200);
    let mail = p.new_mail("email-otp", email, &mut seen).await;
    let otp = code_of(&mail);
    let wrong = if otp == "000000" { "111111" } else { "000000" };
    for i in 0..3 {
        let r = sign_in(i, wrong.into()).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_OTP"));
    }
    let r = sign_in(1, otp).await;
    assert_eq!((r.status, r.code()), (403, "TOO_MANY_ATTEMPTS"));

    for trial in 0..TRIALS {
        assert_eq!(ask(trial).await.status, 200);
        let mail = p.new_mail("email-otp", email, &mut seen).await;
        let otp = code_of(&mail);
        let all = join_all((0..10).map(|i| sign_in(i, otp.clone()))).await;
        let ok = all.iter().filter(|r| r.status == 200).count();
        assert_eq!(
            ok,
            1,
            "trial {trial}: {:?}",
            all.iter().map(|r| r.code()).collect::<Vec<_>>()
        );
        assert!(all
            .iter()
            .all(|r| r.status == 200 || ["INVALID_OTP", "TOO_MANY_ATTEMPTS"].contains(&r.code())));
    }

    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for trial in 0..TRIALS {
        let r = p
            .post(
                p.pick(trial),
                "/sign-in/magic-link",
                json!({"email": email}),
                None,
            )
            .await;
        assert_eq!(r.status, 200);
        let mail = p.new_mail("magic-link", email, &mut seen).await;
        let link = mail["link"].as_str().unwrap();
        let token = link
            .split("token=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap();
        let path = format!("/magic-link/verify?token={token}&callbackURL=/in");
        let all = join_all((0..10).map(|i| {
            no_redirects
                .get(format!("{}{path}", p.pick(i).base))
                .header("origin", super::ORIGIN)
                .send()
        }))
        .await;
        let signed = all
            .iter()
            .map(|r| r.as_ref().unwrap())
            .filter(|r| {
                r.headers().get_all("set-cookie").iter().any(|c| {
                    c.to_str().unwrap_or("").contains("session_token=")
                        && !c.to_str().unwrap_or("").contains("Max-Age=0")
                })
            })
            .count();
        assert_eq!(signed, 1, "trial {trial}");
    }
}
