//! Passkeys (passkey plugin): several per user, a credential registered once, changed by
//! compare-and-set, removed on the user's version, gone with their user.
use super::*;

fn passkey(u: &User, credential: &str) -> Passkey {
    let t = now();
    Passkey {
        id: PasskeyId::generate(),
        user_id: u.id.clone(),
        name: Some("Laptop".into()),
        credential_id: credential.into(),
        public_key: "pQECAyYgASFY".into(),
        credential: "{\"cred\":1}".into(),
        counter: 0,
        device_type: "singleDevice".into(),
        backed_up: false,
        transports: "internal,hybrid".into(),
        aaguid: "00000000-0000-0000-0000-000000000000".into(),
        created_at: t,
        updated_at: t,
        last_used_at: None,
        version: 1,
    }
}

pub async fn passkeys_register_once_change_and_go(s: S) {
    let u = user("pk@example.com");
    let other = user("pk-other@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    s.create_user(&other, None, &[]).await.unwrap();
    assert!(s.list_passkeys(&u.id).await.unwrap().is_empty());
    let first = passkey(&u, "cred-1");
    s.create_passkey(&first, &[]).await.unwrap();
    let mut second = passkey(&u, "cred-2");
    second.created_at = first.created_at + chrono::Duration::milliseconds(5);
    second.name = None;
    s.create_passkey(&second, &[]).await.unwrap();
    assert_eq!(
        s.list_passkeys(&u.id).await.unwrap(),
        vec![first.clone(), second.clone()]
    );
    assert_eq!(
        s.get_passkey_by_credential("cred-2").await.unwrap(),
        Some(second.clone())
    );
    // A credential is registered once, to anyone; the refused one is nowhere.
    for owner in [&u, &other] {
        let r = s.create_passkey(&passkey(owner, "cred-1"), &[]).await;
        assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    }
    assert!(s.list_passkeys(&other.id).await.unwrap().is_empty());
    assert_eq!(s.list_passkeys(&u.id).await.unwrap().len(), 2);
    // Nobody's passkey.
    let ghost = user("pk-ghost@example.com");
    let r = s.create_passkey(&passkey(&ghost, "cred-ghost"), &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    assert_eq!(
        s.get_passkey_by_credential("cred-ghost").await.unwrap(),
        None
    );
    // Used: the counter moves over the version read; a stale write is refused.
    let mut used = first.clone();
    used.counter = 7;
    used.last_used_at = Some(now());
    used.version = 2;
    s.update_passkey(&used, 1, &[]).await.unwrap();
    let mut stale = first.clone();
    stale.name = Some("Stale".into());
    stale.version = 2;
    let r = s.update_passkey(&stale, 1, &[]).await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    let read = s
        .get_passkey_by_credential("cred-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read.counter, read.version), (7, 2));
    assert_eq!(
        read.last_used_at.map(|t| t.timestamp_millis()),
        used.last_used_at.map(|t| t.timestamp_millis())
    );
    // Removed on the user's version, which it moves.
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    let r = s.delete_passkey(&u.id, &second.id, v + 5, &[]).await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    let r = s.delete_passkey(&other.id, &second.id, 0, &[]).await;
    assert!(r.is_err(), "another user's passkey: {r:?}");
    s.delete_passkey(&u.id, &second.id, v, &[]).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().unwrap().version, v + 1);
    assert_eq!(s.list_passkeys(&u.id).await.unwrap(), vec![read.clone()]);
    assert_eq!(s.get_passkey_by_credential("cred-2").await.unwrap(), None);
    let r = s.delete_passkey(&u.id, &second.id, v + 1, &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    let r = s.update_passkey(&second, 1, &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    // The removed credential may be registered again; a deleted user's passkeys go.
    s.create_passkey(&passkey(&other, "cred-2"), &[])
        .await
        .unwrap();
    s.delete_user(&u.id, &[]).await.unwrap();
    assert!(s.list_passkeys(&u.id).await.unwrap().is_empty());
    assert_eq!(s.get_passkey_by_credential("cred-1").await.unwrap(), None);
    assert_eq!(s.list_passkeys(&other.id).await.unwrap().len(), 1);
}

/// Eight registrations of one credential at once, and eight uses of one passkey: one wins.
pub async fn concurrent_writes_of_one_passkey_one_wins(s: S) {
    let users: Vec<User> = (0..8)
        .map(|i| user(&format!("pk-race-{i}@example.com")))
        .collect();
    for u in &users {
        s.create_user(u, None, &[]).await.unwrap();
    }
    let tries = users.iter().map(|u| {
        let s = s.clone();
        let p = passkey(u, "cred-race");
        async move { s.create_passkey(&p, &[]).await }
    });
    let results = join_all(tries).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::Conflict(_)))));
    let stored = s
        .get_passkey_by_credential("cred-race")
        .await
        .unwrap()
        .unwrap();
    let mut listed = 0;
    for u in &users {
        listed += s.list_passkeys(&u.id).await.unwrap().len();
    }
    assert_eq!(listed, 1);
    let uses = (0..8).map(|i| {
        let s = s.clone();
        let mut next = stored.clone();
        next.counter = 100 + i;
        next.version = 2;
        async move { s.update_passkey(&next, 1, &[]).await }
    });
    let results = join_all(uses).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    let read = s
        .get_passkey_by_credential("cred-race")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.version, 2);
    assert!((100..108).contains(&read.counter));
}

/// A passkey's events exist if and only if its write does.
pub async fn passkey_writes_carry_their_events(s: S) {
    let u = user("pk-events@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let agg = format!("user:{}", u.id.0);
    let p = passkey(&u, "cred-events");
    s.create_passkey(&p, &[domain(&agg, "passkey.registered", 1)])
        .await
        .unwrap();
    let r = s
        .create_passkey(&p, &[domain(&agg, "passkey.refused", 2)])
        .await;
    assert!(r.is_err());
    let mut renamed = p.clone();
    renamed.name = Some("Phone".into());
    renamed.version = 2;
    let r = s
        .update_passkey(&renamed, 5, &[domain(&agg, "passkey.stale", 3)])
        .await;
    assert!(r.is_err());
    s.update_passkey(&renamed, 1, &[domain(&agg, "passkey.renamed", 4)])
        .await
        .unwrap();
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    s.delete_passkey(&u.id, &p.id, v, &[domain(&agg, "passkey.deleted", 5)])
        .await
        .unwrap();
    let seen: Vec<String> = names(&all_of(&s, Topic::Domain).await)
        .into_iter()
        .filter(|n| n.starts_with("passkey."))
        .collect();
    assert_eq!(
        seen,
        ["passkey.registered", "passkey.renamed", "passkey.deleted"]
    );
}
