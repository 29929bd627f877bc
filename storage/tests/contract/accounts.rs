//! A password replaced by compare-and-set: only over the password the caller checked, once
//! when raced.
use super::*;

pub async fn a_password_is_replaced_only_over_the_one_checked(s: S) {
    let u = user("replace@example.com");
    let first = credential(&u);
    s.create_user(&u, Some(&first), &[]).await.unwrap();
    let previous = first.password.clone().unwrap();

    // Eight replacements over the same password at once: one applies.
    let tries = (0..8).map(|i| {
        let (s, mut a, previous) = (s.clone(), first.clone(), previous.clone());
        a.password = Some(format!("$argon2id$new-{i}"));
        async move { (i, s.replace_password(&a, &previous, &[]).await) }
    });
    let results = join_all(tries).await;
    let won: Vec<usize> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(won.len(), 1, "{results:?}");
    for (_, r) in results.iter().filter(|(_, r)| r.is_err()) {
        assert!(
            matches!(r, Err(StoreError::ConcurrentModification)),
            "{r:?}"
        );
    }
    let stored = s.list_accounts(&u.id).await.unwrap();
    let now_set = format!("$argon2id$new-{}", won[0]);
    assert_eq!(stored[0].password.as_deref(), Some(now_set.as_str()));

    // Over a password that is not the stored one: refused, nothing changed.
    let mut stale = first.clone();
    stale.password = Some("$argon2id$stale".into());
    assert!(matches!(
        s.replace_password(&stale, &previous, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    let stored = s.list_accounts(&u.id).await.unwrap();
    assert_eq!(stored[0].password.as_deref(), Some(now_set.as_str()));

    // With its events: stored with the change.
    let mut next = first.clone();
    next.password = Some("$argon2id$next".into());
    let aggregate = format!("user:{}", u.id.0);
    let refused = domain(&aggregate, "password.refused", 1);
    assert!(s
        .replace_password(&stale, &previous, std::slice::from_ref(&refused))
        .await
        .is_err());
    let changed = domain(&aggregate, "password.changed", 2);
    s.replace_password(&next, &now_set, std::slice::from_ref(&changed))
        .await
        .unwrap();
    let stored = s.list_accounts(&u.id).await.unwrap();
    assert_eq!(stored[0].password.as_deref(), Some("$argon2id$next"));
    let stream = names(&all_of(&s, Topic::Domain).await);
    assert!(
        stream.contains(&"password.changed".to_owned()),
        "{stream:?}"
    );
    assert!(
        !stream.contains(&"password.refused".to_owned()),
        "{stream:?}"
    );

    // A gone account: NotFound.
    let mut gone = first.clone();
    gone.id = AccountId::generate();
    gone.account_id = gone.id.0.clone();
    assert!(matches!(
        s.replace_password(&gone, "$argon2id$next", &[]).await,
        Err(StoreError::NotFound)
    ));
}
