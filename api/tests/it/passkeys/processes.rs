//! Passkey ceremonies begun in one process and finished in another, on both backends.

use super::*;

#[tokio::test]
async fn one_process_issues_the_options_another_verifies() {
    let h = harness().await;
    let second = same_store(&h, |_| {}).await;
    let cookie = h.sign_up("two@example.com", PW).await.cookie_header();
    // Registration begun on one, finished on the other.
    let (o, c) = register_options(&h, &cookie).await;
    let mut a = Authenticator::new();
    finish_registration(&second, &c, a.register(&o))
        .await
        .expect(200);
    let (o, c) = sign_in_options(&second, None).await;
    verify(&h, &c, a.assert(&o)).await.expect(200);
}

/// Two processes on one store, as behind a load balancer (SQLite and the CQL node): a
/// registration begun on one is finished on the other, an assertion sent to both at once
/// signs in once, a counter gone back is refused on the other process, and a passkey deleted
/// on one signs in on neither.
async fn passkeys_across_processes(backend: crate::processes::Backend) {
    use reqwest::Method;
    let Some(p) = crate::processes::pair(backend, &[]) else {
        return;
    };
    let (session, _) = p.user("pk-two@example.com").await;
    let (st, options, set) = raw(
        &p,
        &p.a,
        Method::GET,
        "/passkey/generate-register-options",
        None,
        &session,
    )
    .await;
    assert_eq!(st, 200, "{options}");
    let mut a = Authenticator::new();
    let both = join(&session, &set);
    let (st, registered, _) = raw(
        &p,
        &p.b,
        Method::POST,
        "/passkey/verify-registration",
        Some(json!({"response": a.register(&options)})),
        &both,
    )
    .await;
    assert_eq!(st, 200, "{registered}");
    // One assertion, ten requests split between the two: one session.
    let (_, options, challenge) = raw(
        &p,
        &p.b,
        Method::GET,
        "/passkey/generate-authenticate-options",
        None,
        "",
    )
    .await;
    let assertion = a.assert(&options);
    let tries = (0..10).map(|i| {
        let s = if i % 2 == 0 { &p.a } else { &p.b };
        raw(
            &p,
            s,
            Method::POST,
            "/passkey/verify-authentication",
            Some(json!({"response": assertion.clone()})),
            &challenge,
        )
    });
    let results = join_all(tries).await;
    assert_eq!(
        results.iter().filter(|r| r.0 == 200).count(),
        1,
        "{:?}",
        results.iter().map(|r| (r.0, &r.1)).collect::<Vec<_>>()
    );
    assert!(results.iter().all(|r| r.0 == 200 || r.0 == 400));
    // The counter the other process stored: an older one is refused.
    a.counter = 0;
    let (st, body) = sign_in_across(&p, &p.a, &p.b, &mut a).await;
    assert_eq!(
        (st, body["code"].as_str()),
        (401, Some("AUTHENTICATION_FAILED"))
    );
    // Deleted on B: refused on A.
    let (st, body, _) = raw(
        &p,
        &p.b,
        Method::POST,
        "/passkey/delete-passkey",
        Some(json!({"id": registered["id"]})),
        &session,
    )
    .await;
    assert_eq!(st, 200, "{body}");
    a.counter = 100;
    let (st, body) = sign_in_across(&p, &p.a, &p.a, &mut a).await;
    assert_eq!(
        (st, body["code"].as_str()),
        (401, Some("PASSKEY_NOT_FOUND"))
    );
}

/// Sign-in options from `options_on`, `a`'s assertion sent to `verify_on`.
async fn sign_in_across(
    p: &crate::processes::Pair,
    options_on: &Server,
    verify_on: &Server,
    a: &mut Authenticator,
) -> (u16, Value) {
    let (_, options, challenge) = raw(
        p,
        options_on,
        reqwest::Method::GET,
        "/passkey/generate-authenticate-options",
        None,
        "",
    )
    .await;
    let (st, body, _) = raw(
        p,
        verify_on,
        reqwest::Method::POST,
        "/passkey/verify-authentication",
        Some(json!({"response": a.assert(&options)})),
        &challenge,
    )
    .await;
    (st, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn passkeys_across_processes_on_sqlite() {
    let _turn = crate::processes::ONE_AT_A_TIME.acquire().await.unwrap();
    passkeys_across_processes(crate::processes::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn passkeys_across_processes_on_the_cql_node() {
    let _turn = crate::processes::ONE_AT_A_TIME.acquire().await.unwrap();
    passkeys_across_processes(crate::processes::Backend::Scylla).await;
}
