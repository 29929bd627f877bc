//! Sessions, single-use verifications, key pairs, rate-limit counters, health.
use super::*;

pub async fn sessions_lifecycle(s: S) {
    let u = user("sess@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let a = session(&u);
    let b = session(&u);
    let c = session(&u);
    for x in [&a, &b, &c] {
        s.create_session(x, &[]).await.unwrap();
    }
    assert_eq!(s.get_session(&a.token).await.unwrap().as_ref(), Some(&a));
    // With its user, in one read.
    let stored_user = s.get_user(&u.id).await.unwrap();
    assert_eq!(
        s.get_session_with_user(&a.token).await.unwrap(),
        Some((a.clone(), stored_user))
    );
    assert_eq!(
        s.get_session_with_user("no-such-token").await.unwrap(),
        None
    );
    assert_eq!(s.list_sessions(&u.id).await.unwrap().len(), 3);

    let mut moved = a.clone();
    moved.expires_at = a.expires_at + Duration::days(1);
    moved.updated_at = a.updated_at + Duration::days(1);
    moved.active_organization_id = Some(OrgId::generate());
    s.update_session(&moved).await.unwrap();
    assert_eq!(s.get_session(&a.token).await.unwrap(), Some(moved));

    assert_eq!(
        s.delete_user_sessions(&u.id, Some(&a.token), &[])
            .await
            .unwrap(),
        2
    );
    let left = s.list_sessions(&u.id).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].token, a.token);
    assert!(s.delete_session(&a.token, &[]).await.unwrap());
    assert!(!s.delete_session(&a.token, &[]).await.unwrap());
    assert!(s.get_session(&a.token).await.unwrap().is_none());

    // A session of a user that no longer exists cannot be created.
    let ghost = user("ghost2@example.com");
    assert!(s.create_session(&session(&ghost), &[]).await.is_err());
}

/// Many reads at once (which the CQL store sends together) each get their own session: known,
/// repeated, unknown and just-deleted tokens mixed.
pub async fn many_session_reads_at_once_each_get_their_own(s: S) {
    let mut sessions = Vec::new();
    for i in 0..6 {
        let u = user(&format!("many{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        for _ in 0..5 {
            let x = session(&u);
            s.create_session(&x, &[]).await.unwrap();
            sessions.push(x);
        }
    }
    let gone = sessions.pop().unwrap();
    assert!(s.delete_session(&gone.token, &[]).await.unwrap());
    for round in 0..3 {
        let mut reads = Vec::new();
        for i in 0..200 {
            let (token, want) = match i % 10 {
                // Never stored, or deleted before this round began.
                0 => (format!("unknown-{round}-{i}"), None),
                1 => (gone.token.clone(), None),
                _ => {
                    let x = &sessions[(i * 7 + round) % sessions.len()];
                    (x.token.clone(), Some(x.clone()))
                }
            };
            let s = s.clone();
            reads.push(tokio::spawn(async move {
                (s.get_session(&token).await.unwrap(), want)
            }));
        }
        for r in reads {
            let (got, want) = r.await.unwrap();
            assert_eq!(got, want);
        }
    }
    // A deletion that has returned is seen by every read asked after it, however many at once.
    let last = sessions.pop().unwrap();
    assert!(s.delete_session(&last.token, &[]).await.unwrap());
    let reads: Vec<_> = (0..64)
        .map(|_| {
            let (s, t) = (s.clone(), last.token.clone());
            tokio::spawn(async move { s.get_session(&t).await.unwrap() })
        })
        .collect();
    for r in reads {
        assert_eq!(r.await.unwrap(), None);
    }
}

/// Reads given up midway (a client gone: its request's future dropped while its read waits in
/// line, is about to send, or is out with others' reads) leave no read waiting: the reads asked
/// after them are all answered.
pub async fn session_reads_given_up_midway_leave_none_waiting(s: S) {
    use std::time::Duration;
    let u = user("given-up@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let x = session(&u);
    s.create_session(&x, &[]).await.unwrap();
    // Reads given up after 0 to 4 ms (a timeout polls its read once before it looks at the
    // clock, so even 0 ms leaves a read that has begun), or never (`None`).
    let read = |give_up: Option<u64>| {
        let (s, t) = (s.clone(), x.token.clone());
        tokio::spawn(async move {
            let read = s.get_session(&t);
            match give_up {
                None => Some(read.await.unwrap()),
                Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), read).await {
                    Ok(r) => Some(r.unwrap()),
                    Err(_) => None,
                },
            }
        })
    };
    let rounds = async {
        for _ in 0..8 {
            let reads: Vec<_> = (0..120u64)
                .map(|i| read((i % 3 != 0).then_some(i % 5)))
                .collect();
            for r in reads {
                if let Some(got) = r.await.unwrap() {
                    assert_eq!(got.as_ref(), Some(&x));
                }
            }
        }
        // And after them, many at once, none given up.
        let after: Vec<_> = (0..64).map(|_| read(None)).collect();
        for r in after {
            assert_eq!(r.await.unwrap(), Some(Some(x.clone())));
        }
    };
    let answered = tokio::time::timeout(Duration::from_secs(60), rounds).await;
    assert!(
        answered.is_ok(),
        "reads left waiting after others were given up"
    );
}

pub async fn deleted_session_is_never_written_back(s: S) {
    let u = user("revoke@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    for _ in 0..20 {
        let x = session(&u);
        s.create_session(&x, &[]).await.unwrap();
        let mut refreshed = x.clone();
        refreshed.expires_at = x.expires_at + Duration::days(1);
        let (s1, s2) = (s.clone(), s.clone());
        let (t, r) = (x.token.clone(), refreshed.clone());
        let del = tokio::spawn(async move { s1.delete_session(&t, &[]).await });
        let upd = tokio::spawn(async move { s2.update_session(&r).await });
        assert!(del.await.unwrap().unwrap());
        match upd.await.unwrap() {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert!(
            s.get_session(&x.token).await.unwrap().is_none(),
            "revoked session came back"
        );
    }
    assert!(matches!(
        s.update_session(&session(&u)).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn purge_expired_sessions(s: S) {
    let u = user("old@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let mut old = session(&u);
    old.expires_at = now() - Duration::seconds(1);
    let fresh = session(&u);
    s.create_session(&old, &[]).await.unwrap();
    s.create_session(&fresh, &[]).await.unwrap();
    // Purging may be a no-op where the backend expires rows itself (a TTL); either way an
    // expired session is never taken for a live one, and live ones stay.
    s.purge_expired_sessions(now()).await.unwrap();
    if let Some(left) = s.get_session(&old.token).await.unwrap() {
        assert!(left.expires_at <= now());
    }
    assert!(s.get_session(&fresh.token).await.unwrap().is_some());
}

pub async fn verifications_are_single_use(s: S) {
    let t = now();
    let v = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: "user-id".into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&v, &[]).await.unwrap();
    assert!(matches!(
        s.create_verification(&v, &[]).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.get_verification(&v.identifier).await.unwrap().as_ref(),
        Some(&v)
    );
    let tasks = (0..20).map(|_| {
        let s = s.clone();
        let id = v.identifier.clone();
        tokio::spawn(async move { s.consume_verification(&id).await.unwrap() })
    });
    let got: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.iter().filter(|g| g.is_some()).count(), 1);
    assert_eq!(got.into_iter().flatten().next(), Some(v.clone()));
    assert!(s.get_verification(&v.identifier).await.unwrap().is_none());

    let mut expired = v.clone();
    expired.identifier = "delete-account-x".into();
    expired.expires_at = t - Duration::seconds(1);
    s.create_verification(&expired, &[]).await.unwrap();
    s.purge_expired_verifications(t).await.unwrap();
    if let Some(left) = s.get_verification("delete-account-x").await.unwrap() {
        assert!(left.expires_at <= t);
    }
    assert!(!s.delete_verification("never-issued").await.unwrap());

    // A value without an owner (an empty one) is kept, read and taken like any other.
    let ownerless = Verification {
        id: VerificationId::generate(),
        identifier: format!("marker:{}", random_string(12)),
        value: String::new(),
        ..v.clone()
    };
    s.create_verification(&ownerless, &[]).await.unwrap();
    assert_eq!(
        s.get_verification(&ownerless.identifier).await.unwrap(),
        Some(ownerless.clone())
    );
    assert_eq!(
        s.consume_verification(&ownerless.identifier).await.unwrap(),
        Some(ownerless.clone())
    );
    s.create_verification(&ownerless, &[]).await.unwrap();
    assert!(s.delete_verification(&ownerless.identifier).await.unwrap());
}

pub async fn verifications_of_one_owner_are_deleted_by_prefix(s: S) {
    let t = now();
    let v = |identifier: &str, value: &str| Verification {
        id: VerificationId::generate(),
        identifier: identifier.into(),
        value: value.into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    for x in [
        v("reset-password:a", "u1"),
        v("reset-password:b", "u1"),
        v("reset-password:c", "u2"),
        v("delete-account-d", "u1"),
        v("reset_password:e", "u1"),
    ] {
        s.create_verification(&x, &[]).await.unwrap();
    }
    assert_eq!(
        s.delete_verifications_of("u1", "reset-password:")
            .await
            .unwrap(),
        2
    );
    for (id, there) in [
        ("reset-password:a", false),
        ("reset-password:b", false),
        ("reset-password:c", true),
        ("delete-account-d", true),
        ("reset_password:e", true),
    ] {
        assert_eq!(
            s.get_verification(id).await.unwrap().is_some(),
            there,
            "{id}"
        );
    }
    assert_eq!(
        s.delete_verifications_of("u1", "reset-password:")
            .await
            .unwrap(),
        0
    );
}

pub async fn key_pairs(s: S) {
    let k = KeyPair {
        id: KeyPairId::generate(),
        public_key: "pub".into(),
        private_key: "priv".into(),
        created_at: now(),
    };
    s.create_key_pair(&k).await.unwrap();
    assert_eq!(s.list_key_pairs().await.unwrap(), vec![k.clone()]);
    assert!(!format!("{k:?}").contains("priv"));
}

/// Rate-limit counters of one key: counted per window, reset after it, exact up to the cap,
/// and never more callers within a limit than it allows, however many hit at once. Run on
/// each backend's tables and on the in-memory counters (`RateLimitStore` directly, since
/// the memory counters are no `Store`).
pub async fn rate_limit_counters(s: S) {
    rate_limits_of(s).await
}

pub async fn rate_limits_of(s: Arc<dyn RateLimitStore>) {
    // A fixed time at the start of a minute, so that windows aligned to the clock and
    // windows opened by the first hit end at the same instant.
    let t0 = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let at = |secs: i64| t0 + Duration::seconds(secs);
    let w = Duration::seconds(60);
    let key = format!("mail:{}@example.com:203.0.113.7", random_lower_alnum(8));

    for n in 0..3 {
        let c = s.hit(&key, w, 11, at(n)).await.unwrap();
        assert_eq!(c.count, n as u32 + 1);
        assert_eq!(
            c.resets_at,
            at(60),
            "the window ends a window after its start"
        );
    }
    assert_eq!(s.count(&key, w, 11, at(30)).await.unwrap().count, 3);
    let other = format!("{key}/other");
    assert_eq!(s.count(&other, w, 11, at(30)).await.unwrap().count, 0);
    assert_eq!(s.hit(&other, w, 11, at(30)).await.unwrap().count, 1);

    // The next window starts from nothing; housekeeping after it forgets the old one.
    assert_eq!(s.count(&key, w, 11, at(60)).await.unwrap().count, 0);
    assert_eq!(s.hit(&key, w, 11, at(61)).await.unwrap().count, 1);
    s.purge_rate_limits(at(200)).await.unwrap();
    assert_eq!(s.count(&key, w, 11, at(200)).await.unwrap().count, 0);
    assert_eq!(s.hit(&key, w, 11, at(200)).await.unwrap().count, 1);

    // Exact up to the cap; past it, some number above it.
    let capped = format!("{key}/capped");
    let mut counts = Vec::new();
    for _ in 0..6 {
        counts.push(s.hit(&capped, w, 2, at(1)).await.unwrap().count);
    }
    assert_eq!(counts[..2], [1, 2]);
    assert!(counts[2..].iter().all(|c| *c > 2), "{counts:?}");
    assert!(s.count(&capped, w, 2, at(2)).await.unwrap().count > 2);

    // 40 at once against a limit of 10: at most 10 see a count within it, and any hit
    // after them sees the window full.
    let raced = format!("{key}/raced");
    let t5 = at(5);
    let hits = join_all((0..40).map(|_| {
        let (s, raced) = (s.clone(), raced.clone());
        tokio::spawn(async move { s.hit(&raced, w, 11, t5).await.unwrap().count })
    }))
    .await;
    let within = hits
        .into_iter()
        .filter(|c| *c.as_ref().unwrap() <= 10)
        .count();
    assert!(within <= 10, "{within} of 40 passed a limit of 10");
    assert!(s.hit(&raced, w, 11, at(6)).await.unwrap().count > 10);
    assert!(s.count(&raced, w, 11, at(6)).await.unwrap().count > 10);
}

/// A store just opened (and migrated) is healthy, and stays so after writes.
pub async fn a_fresh_store_is_healthy(s: S) {
    s.check_health().await.unwrap();
    let u = User::new("healthy@example.com", "H".into(), None, Utc::now());
    s.create_user(&u, None, &[]).await.unwrap();
    s.check_health().await.unwrap();
    assert!(s.get_user(&u.id).await.unwrap().is_some());
}
