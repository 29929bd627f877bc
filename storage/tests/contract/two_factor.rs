//! Second factors (two-factor plugin): one per user, compare-and-set on its version, gone
//! with its user; the user's `two_factor_enabled` kept with the user.
use super::*;

fn factor(u: &User) -> TwoFactor {
    let t = now();
    TwoFactor {
        user_id: u.id.clone(),
        secret: "sealed-secret".into(),
        backup_codes: vec!["h1".into(), "h2".into()],
        last_step: 0,
        created_at: t,
        updated_at: t,
        version: 1,
    }
}

pub async fn two_factors_compare_and_set_and_go_with_their_user(s: S) {
    let u = user("tf@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), None);
    let tf = factor(&u);
    s.put_two_factor(&tf, None, &[]).await.unwrap();
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(tf.clone()));
    assert!(!format!("{tf:?}").contains("sealed-secret"));
    // One per user.
    let again = s.put_two_factor(&tf, None, &[]).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    // A code used: the next version over the one read.
    let mut used = tf.clone();
    used.last_step = 1234;
    used.backup_codes = vec!["h2".into()];
    used.version = 2;
    s.put_two_factor(&used, Some(1), &[]).await.unwrap();
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(used.clone()));
    // Written over a version that moved: refused, nothing changed.
    let mut stale = tf.clone();
    stale.last_step = 99;
    stale.version = 2;
    let r = s.put_two_factor(&stale, Some(1), &[]).await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(used.clone()));
    // The flag is the user's.
    let mut on = s.get_user(&u.id).await.unwrap().unwrap();
    on.two_factor_enabled = true;
    on.version += 1;
    s.update_user(&on, &[]).await.unwrap();
    let read = s.get_user(&u.id).await.unwrap().unwrap();
    assert!(read.two_factor_enabled);
    assert_eq!(s.get_user_by_email(&u.email).await.unwrap(), Some(read));
    // Turned off, then on again from scratch.
    assert!(s.delete_two_factor(&u.id, &[]).await.unwrap());
    assert!(!s.delete_two_factor(&u.id, &[]).await.unwrap());
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), None);
    let r = s.put_two_factor(&used, Some(2), &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    s.put_two_factor(&tf, None, &[]).await.unwrap();
    // No factor for a user who does not exist; a deleted user's goes with them.
    let ghost = user("ghost@example.com");
    let r = s.put_two_factor(&factor(&ghost), None, &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    s.delete_user(&u.id, &[]).await.unwrap();
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), None);
}

/// N processes' actors using codes of one factor at once: exactly one write wins.
pub async fn concurrent_uses_of_one_two_factor_one_wins(s: S) {
    let u = user("race-tf@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let tf = factor(&u);
    s.put_two_factor(&tf, None, &[]).await.unwrap();
    let tries = (0..8).map(|i| {
        let s = s.clone();
        let mut next = tf.clone();
        next.last_step = 1000 + i;
        next.version = 2;
        async move { s.put_two_factor(&next, Some(1), &[]).await }
    });
    let results = join_all(tries).await;
    let won: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::ConcurrentModification))));
    let stored = s.get_two_factor(&u.id).await.unwrap().unwrap();
    assert_eq!(stored.version, 2);
    assert!((1000..1008).contains(&stored.last_step));
}

/// A factor's events exist if and only if its write does.
pub async fn two_factor_writes_carry_their_events(s: S) {
    let u = user("tf-events@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let agg = format!("user:{}", u.id.0);
    let tf = factor(&u);
    s.put_two_factor(&tf, None, &[domain(&agg, "two_factor.enabled", 1)])
        .await
        .unwrap();
    // Refused writes leave no event.
    let r = s
        .put_two_factor(&tf, None, &[domain(&agg, "two_factor.refused", 2)])
        .await;
    assert!(r.is_err());
    let nobody = user("none@example.com");
    let gone = s
        .delete_two_factor(&nobody.id, &[domain(&agg, "two_factor.nothing", 3)])
        .await
        .unwrap();
    assert!(!gone);
    let gone = s
        .delete_two_factor(&u.id, &[domain(&agg, "two_factor.disabled", 4)])
        .await
        .unwrap();
    assert!(gone);
    let seen: Vec<String> = names(&all_of(&s, Topic::Domain).await)
        .into_iter()
        .filter(|n| n.starts_with("two_factor."))
        .collect();
    assert_eq!(seen, ["two_factor.enabled", "two_factor.disabled"]);
}

fn challenge(u: &User) -> Verification {
    let t = now();
    Verification {
        id: VerificationId::generate(),
        identifier: format!("two-factor:{}", random_string(24)),
        value: u.id.0.clone(),
        expires_at: t + Duration::minutes(10),
        created_at: t,
        updated_at: t,
    }
}

/// A sign-in's second step: the code's use, the challenge taken and the session with its
/// events, written together; refused as a whole when the factor moved or the challenge is
/// gone.
pub async fn a_second_step_uses_the_code_takes_the_challenge_and_starts_the_session(s: S) {
    let u = user("step@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let agg = format!("user:{}", u.id.0);
    let tf = factor(&u);
    s.put_two_factor(&tf, None, &[]).await.unwrap();
    let c = challenge(&u);
    s.create_verification(&c, &[]).await.unwrap();
    let mut used = tf.clone();
    used.backup_codes = vec!["h2".into()];
    used.version = 2;

    // Over a version that moved: nothing of it written.
    let lost = session(&u);
    let r = s
        .finish_second_step(&SecondStep {
            factor: Some((&used, 7)),
            challenge: &c.identifier,
            session: &lost,
            events: &[domain(&agg, "session.lost", 1)],
        })
        .await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    assert_eq!(s.get_session(&lost.token).await.unwrap(), None);
    assert!(s.get_verification(&c.identifier).await.unwrap().is_some());
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(tf.clone()));

    // Right: all three.
    let won = session(&u);
    s.finish_second_step(&SecondStep {
        factor: Some((&used, 1)),
        challenge: &c.identifier,
        session: &won,
        events: &[domain(&agg, "session.created", 2)],
    })
    .await
    .unwrap();
    assert_eq!(s.get_session(&won.token).await.unwrap(), Some(won.clone()));
    assert_eq!(s.get_verification(&c.identifier).await.unwrap(), None);
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(used.clone()));

    // The challenge used: a second step again (a code by mail, no factor change) starts
    // nothing.
    let again = session(&u);
    let r = s
        .finish_second_step(&SecondStep {
            factor: None,
            challenge: &c.identifier,
            session: &again,
            events: &[domain(&agg, "session.again", 3)],
        })
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    assert_eq!(s.get_session(&again.token).await.unwrap(), None);
    // … nor does one with a code, which is not spent on it.
    let mut spent = used.clone();
    spent.backup_codes = vec![];
    spent.version = 3;
    let r = s
        .finish_second_step(&SecondStep {
            factor: Some((&spent, 2)),
            challenge: &c.identifier,
            session: &again,
            events: &[domain(&agg, "session.spent", 3)],
        })
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    assert_eq!(s.get_session(&again.token).await.unwrap(), None);
    assert_eq!(s.get_two_factor(&u.id).await.unwrap(), Some(used.clone()));

    // Another user's challenge starts no session of this one.
    let other = user("other-step@example.com");
    s.create_user(&other, None, &[]).await.unwrap();
    let theirs = challenge(&other);
    s.create_verification(&theirs, &[]).await.unwrap();
    let r = s
        .finish_second_step(&SecondStep {
            factor: None,
            challenge: &theirs.identifier,
            session: &again,
            events: &[domain(&agg, "session.theirs", 4)],
        })
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    assert_eq!(s.get_session(&again.token).await.unwrap(), None);

    let seen: Vec<String> = names(&all_of(&s, Topic::Domain).await)
        .into_iter()
        .filter(|n| n.starts_with("session."))
        .collect();
    assert_eq!(seen, ["session.created"]);
}

/// Several processes finishing one challenge at once (each with its own backup code): one
/// session.
pub async fn concurrent_second_steps_of_one_challenge_one_wins(s: S) {
    let u = user("step-race@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let tf = factor(&u);
    s.put_two_factor(&tf, None, &[]).await.unwrap();
    let c = challenge(&u);
    s.create_verification(&c, &[]).await.unwrap();
    let tries = (0..8).map(|i| {
        let (s, c, tf, u) = (s.clone(), c.clone(), tf.clone(), u.clone());
        async move {
            let mut used = tf.clone();
            used.backup_codes.truncate(i % 2);
            used.version = 2;
            let new = session(&u);
            let r = s
                .finish_second_step(&SecondStep {
                    factor: (i % 3 != 0).then_some((&used, 1)),
                    challenge: &c.identifier,
                    session: &new,
                    events: &[],
                })
                .await;
            (r, new.token)
        }
    });
    let results = join_all(tries).await;
    let mut live = 0;
    for (r, token) in &results {
        let stored = s.get_session(token).await.unwrap();
        assert_eq!(r.is_ok(), stored.is_some(), "{r:?}");
        live += usize::from(stored.is_some());
    }
    assert_eq!(
        live,
        1,
        "{:?}",
        results.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
}
