//! API keys (api-key plugin): found by their hash, listed by what owns them, changed by
//! compare-and-set (each use of a limited key is one), gone with their maker.
use super::*;

fn api_key(u: &User, hash: &str, owner: Option<&Organization>) -> ApiKey {
    let t = now();
    ApiKey {
        id: ApiKeyId::generate(),
        config_id: "default".into(),
        name: Some("ci".into()),
        start: Some("gh_abc".into()),
        prefix: Some("gh_".into()),
        key_hash: hash.into(),
        user_id: u.id.clone(),
        organization_id: owner.map(|o| o.id.clone()),
        enabled: true,
        expires_at: None,
        created_at: t,
        updated_at: t,
        last_request: None,
        request_count: 0,
        remaining: Some(3),
        refill_amount: None,
        refill_interval: None,
        last_refill_at: None,
        rate_limit_enabled: true,
        rate_limit_time_window: Some(86_400_000),
        rate_limit_max: Some(10),
        permissions: Some(r#"{"member":["create"]}"#.into()),
        metadata: None,
        version: 1,
    }
}

pub async fn api_keys_are_found_by_hash_listed_by_owner_and_go(s: S) {
    let u = user("ak@example.com");
    let other = user("ak-other@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    s.create_user(&other, None, &[]).await.unwrap();
    let org = org("ak-org");
    s.create_organization(&org, &member(&org, &other, "owner"), None, &[])
        .await
        .unwrap();
    let own = api_key(&u, "hash-1", None);
    s.create_api_key(&own, &[]).await.unwrap();
    let mut theirs = api_key(&u, "hash-2", Some(&org));
    theirs.created_at = own.created_at + chrono::Duration::milliseconds(1);
    theirs.remaining = None;
    theirs.expires_at = Some(now() - chrono::Duration::seconds(1));
    s.create_api_key(&theirs, &[]).await.unwrap();
    assert_eq!(s.get_api_key(&own.id).await.unwrap(), Some(own.clone()));
    assert_eq!(
        s.find_api_key("hash-2").await.unwrap(),
        Some(theirs.clone())
    );
    assert_eq!(s.find_api_key("hash-3").await.unwrap(), None);
    // A user's own keys, an organization's keys: apart.
    assert_eq!(s.list_api_keys(&u.id.0).await.unwrap(), vec![own.clone()]);
    assert_eq!(
        s.list_api_keys(&org.id.0).await.unwrap(),
        vec![theirs.clone()]
    );
    assert!(s.list_api_keys(&other.id.0).await.unwrap().is_empty());
    // A hash is stored once; a key of a user who is gone is refused.
    let r = s
        .create_api_key(&api_key(&other, "hash-1", None), &[])
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    let ghost = user("ak-ghost@example.com");
    let r = s
        .create_api_key(&api_key(&ghost, "hash-9", None), &[])
        .await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    // Changed over the version read, never over another.
    let mut used = own.clone();
    used.remaining = Some(2);
    used.last_request = Some(now());
    used.request_count = 1;
    used.name = None;
    used.metadata = Some(r#"{"a":1}"#.into());
    used.version = 2;
    let r = s.update_api_key(&used, 5, &[]).await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    s.update_api_key(&used, 1, &[]).await.unwrap();
    assert_eq!(s.find_api_key("hash-1").await.unwrap(), Some(used.clone()));
    // Expired keys go in one sweep; the others stay.
    assert_eq!(s.delete_expired_api_keys(now()).await.unwrap(), 1);
    assert_eq!(s.get_api_key(&theirs.id).await.unwrap(), None);
    assert!(s.list_api_keys(&org.id.0).await.unwrap().is_empty());
    assert!(s.delete_api_key(&used.id, &[]).await.unwrap());
    assert!(!s.delete_api_key(&used.id, &[]).await.unwrap());
    assert_eq!(s.find_api_key("hash-1").await.unwrap(), None);
    let r = s.update_api_key(&used, 2, &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    // The hash may be stored again once its key is gone; a deleted maker's keys go.
    let again = api_key(&u, "hash-1", Some(&org));
    s.create_api_key(&again, &[]).await.unwrap();
    s.delete_user(&u.id, &[]).await.unwrap();
    assert_eq!(s.get_api_key(&again.id).await.unwrap(), None);
    assert_eq!(s.find_api_key("hash-1").await.unwrap(), None);
    assert!(s.list_api_keys(&org.id.0).await.unwrap().is_empty());
}

/// Eight uses of one key with one use left, at once: one takes it.
pub async fn concurrent_uses_of_one_api_key_one_wins(s: S) {
    let u = user("ak-race@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let k = api_key(&u, "hash-race", None);
    s.create_api_key(&k, &[]).await.unwrap();
    let uses = (0..8).map(|i| {
        let s = s.clone();
        let mut next = k.clone();
        next.remaining = Some(2);
        next.request_count = i;
        next.version = 2;
        async move { s.update_api_key(&next, 1, &[]).await }
    });
    let results = join_all(uses).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::ConcurrentModification))));
    let read = s.get_api_key(&k.id).await.unwrap().unwrap();
    assert_eq!((read.version, read.remaining), (2, Some(2)));
}

/// A key's events exist if and only if its write does.
pub async fn api_key_writes_carry_their_events(s: S) {
    let u = user("ak-events@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let agg = format!("user:{}", u.id.0);
    let k = api_key(&u, "hash-events", None);
    s.create_api_key(&k, &[domain(&agg, "api_key.created", 1)])
        .await
        .unwrap();
    let r = s
        .create_api_key(&k, &[domain(&agg, "api_key.refused", 2)])
        .await;
    assert!(r.is_err());
    let mut next = k.clone();
    next.enabled = false;
    next.version = 2;
    let r = s
        .update_api_key(&next, 7, &[domain(&agg, "api_key.stale", 3)])
        .await;
    assert!(r.is_err());
    s.update_api_key(&next, 1, &[domain(&agg, "api_key.updated", 4)])
        .await
        .unwrap();
    assert!(s
        .delete_api_key(&k.id, &[domain(&agg, "api_key.deleted", 5)])
        .await
        .unwrap());
    assert!(!s
        .delete_api_key(&k.id, &[domain(&agg, "api_key.gone", 6)])
        .await
        .unwrap());
    let seen: Vec<String> = names(&all_of(&s, Topic::Domain).await)
        .into_iter()
        .filter(|n| n.starts_with("api_key."))
        .collect();
    assert_eq!(
        seen,
        ["api_key.created", "api_key.updated", "api_key.deleted"]
    );
}
