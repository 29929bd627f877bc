//! The challenge of a sign-in: wrong codes and the lock, races on one challenge, its cookie.
use super::*;

on_both_stores!(
    five_wrong_codes_end_a_challenge_and_ten_lock_the_factor,
    one_code_raced_signs_in_once,
    different_backup_codes_raced_sign_in_once_and_use_one,
    challenge_cookies_name_their_user_and_older_ones_still_work,
    a_right_code_ends_a_run_of_wrong_codes,
);

async fn five_wrong_codes_end_a_challenge_and_ten_lock_the_factor(backend: Backend) {
    let Some(h) = harness_on(backend, |_| {}).await else {
        return;
    };
    let (_, e) = enrolled(&h, "dan@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    let cookie = h.sign_in("dan@example.com", PW).await.cookie_header();
    for _ in 0..5 {
        let r = h
            .post(
                "/api/auth/two-factor/verify-totp",
                json!({"code": "000000"}),
                Some(&cookie),
            )
            .await
            .expect(401);
        assert_eq!(r.code(), "INVALID_CODE");
    }
    // The sixth try is refused even with the right code, and the challenge is dead.
    let right = json!({"code": now_code(&h, &uri)});
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            right.clone(),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE");
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            right.clone(),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE");
    // Five more wrong codes (a backup code counts too) in a new challenge: locked.
    let cookie = h.sign_in("dan@example.com", PW).await.cookie_header();
    for _ in 0..4 {
        h.post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": "111111"}),
            Some(&cookie),
        )
        .await
        .expect(401);
    }
    let r = h
        .post(
            "/api/auth/two-factor/verify-backup-code",
            json!({"code": "aaaaa-bbbbb"}),
            Some(&cookie),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_BACKUP_CODE");
    let cookie = h.sign_in("dan@example.com", PW).await.cookie_header();
    let r = h
        .post(
            "/api/auth/two-factor/verify-totp",
            right.clone(),
            Some(&cookie),
        )
        .await
        .expect(429);
    assert_eq!(r.code(), "TOO_MANY_ATTEMPTS");
    // Fifteen minutes later the right code works.
    h.clock.advance(Duration::seconds(901));
    let cookie = h.sign_in("dan@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/two-factor/verify-totp",
        json!({"code": now_code(&h, &uri)}),
        Some(&cookie),
    )
    .await
    .expect(200);
}

/// Eight requests finishing one challenge with one right code at once: one session.
async fn one_code_raced_signs_in_once(backend: Backend) {
    let Some(h) = harness_on(backend, |_| {}).await else {
        return;
    };
    let (_, e) = enrolled(&h, "fay@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    let cookie = h.sign_in("fay@example.com", PW).await.cookie_header();
    let code = now_code(&h, &uri);
    let tries = (0..8).map(|_| {
        h.post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": code}),
            Some(&cookie),
        )
    });
    let results = join_all(tries).await;
    let won = results.iter().filter(|r| r.status == 200).count();
    assert_eq!(
        won,
        1,
        "{:?}",
        results.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert!(
        results.iter().all(|r| r.status == 200 || r.status == 401),
        "{:?}",
        results
            .iter()
            .map(|r| (r.status, &r.text))
            .collect::<Vec<_>>()
    );
    let user = user_of(&h, "fay@example.com").await;
    // The enrolment's session and the one won.
    assert_eq!(h.store.list_sessions(&user.id).await.unwrap().len(), 2);
}

/// Eight requests finishing one challenge, each with another right backup code, at once:
/// each reads the factor before any writes, so all but the first find it moved when they
/// write. One session, one code used; the others stay usable.
async fn different_backup_codes_raced_sign_in_once_and_use_one(backend: Backend) {
    let Some(h) = harness_on(backend, |_| {}).await else {
        return;
    };
    let (_, e) = enrolled(&h, "gil@example.com").await;
    let codes: Vec<String> = (0..8)
        .map(|i| e["backupCodes"][i].as_str().unwrap().to_owned())
        .collect();
    let cookie = h.sign_in("gil@example.com", PW).await.cookie_header();
    let tries = codes.iter().map(|code| {
        h.post(
            "/api/auth/two-factor/verify-backup-code",
            json!({"code": code}),
            Some(&cookie),
        )
    });
    let results = join_all(tries).await;
    let statuses: Vec<_> = results.iter().map(|r| (r.status, &r.text)).collect();
    let won: Vec<usize> = (0..8).filter(|&i| results[i].status == 200).collect();
    assert_eq!(won.len(), 1, "{statuses:?}");
    assert!(
        results.iter().all(
            |r| r.status == 200 || (r.status == 401 && r.code() == "INVALID_TWO_FACTOR_COOKIE")
        ),
        "{statuses:?}"
    );
    let user = user_of(&h, "gil@example.com").await;
    assert_eq!(h.store.list_sessions(&user.id).await.unwrap().len(), 2);
    // Only the winner's code was used: another one still signs in.
    let other = &codes[(won[0] + 1) % 8];
    let cookie = h.sign_in("gil@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/two-factor/verify-backup-code",
        json!({"code": other}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let cookie = h.sign_in("gil@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/two-factor/verify-backup-code",
        json!({"code": codes[won[0]]}),
        Some(&cookie),
    )
    .await
    .expect(401);
}

/// The `two_factor` cookie's value (`id.remember.run.user`, signed), and a cookie with
/// `value` signed in its place.
fn challenge_value(cookie: &str) -> String {
    let signed = cookie
        .split("; ")
        .find_map(|c| c.strip_prefix("gatehouse.two_factor="))
        .expect("a challenge cookie");
    let signed = percent_encoding::percent_decode_str(signed)
        .decode_utf8()
        .unwrap()
        .into_owned();
    gatehouse_api::crypto::Signer::new(SECRET)
        .unsign(&signed)
        .expect("signed with the test secret")
        .to_owned()
}

fn challenge_cookie(value: &str) -> String {
    let signed = gatehouse_api::crypto::Signer::new(SECRET).sign(value);
    format!(
        "gatehouse.two_factor={}",
        percent_encoding::utf8_percent_encode(&signed, percent_encoding::NON_ALPHANUMERIC)
    )
}

/// `verify-totp` with `user`'s current code and a challenge cookie of `value`.
async fn totp_with_cookie(h: &H, user: &Value, value: &str) -> Resp {
    let cookie = challenge_cookie(value);
    h.post(
        "/api/auth/two-factor/verify-totp",
        json!({"code": now_code(h, user["totpURI"].as_str().unwrap())}),
        Some(&cookie),
    )
    .await
}

/// The challenge cookie names its user and factor version (so that the second step reads
/// them beside the challenge): one naming another user than its challenge row is refused, a
/// malformed one too, and one from before it named them (`id.remember`) still works.
async fn challenge_cookies_name_their_user_and_older_ones_still_work(backend: Backend) {
    let Some(h) = harness_on(backend, |_| {}).await else {
        return;
    };
    let (_, a) = enrolled(&h, "ada@example.com").await;
    let (_, b) = enrolled(&h, "bea@example.com").await;
    let bea = user_of(&h, "bea@example.com").await;
    let ada = user_of(&h, "ada@example.com").await;
    let value = challenge_value(&h.sign_in("ada@example.com", PW).await.cookie_header());
    let parts: Vec<&str> = value.splitn(4, '.').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[1], "1");
    assert_eq!(parts[3], ada.id.0);
    let factor = h.store.get_two_factor(&ada.id).await.unwrap().unwrap();
    assert_eq!(parts[2], factor.version.to_string());
    // Ada's challenge, said to be Bea's, with Bea's right code: no; nor malformed ones.
    let forged = format!("{}.1.{}.{}", parts[0], parts[2], bea.id.0);
    let malformed = format!("{}.1.{}", parts[0], parts[2]);
    let no_run = format!("{}.1.x.{}", parts[0], ada.id.0);
    for (user, bad) in [(&b, forged), (&a, malformed), (&a, no_run)] {
        let r = totp_with_cookie(&h, user, &bad).await.expect(401);
        assert_eq!(r.code(), "INVALID_TWO_FACTOR_COOKIE", "{bad}");
    }
    // As a cookie made before the user was in it: the challenge row names the user.
    let r = totp_with_cookie(&h, &a, &format!("{}.1", parts[0]))
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "ada@example.com");
}

/// The lock counts wrong codes in a row: a right code in between starts the count anew.
async fn a_right_code_ends_a_run_of_wrong_codes(backend: Backend) {
    let Some(h) = harness_on(backend, |_| {}).await else {
        return;
    };
    let (_, e) = enrolled(&h, "ned@example.com").await;
    let uri = e["totpURI"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let cookie = wrong_codes(&h, "ned@example.com", 9).await;
        h.post(
            "/api/auth/two-factor/verify-totp",
            json!({"code": now_code(&h, &uri)}),
            Some(&cookie),
        )
        .await
        .expect(200);
        h.clock.advance(Duration::seconds(30));
    }
}
