//! A user's account and profile between two processes, and its sessions' user cache.

use super::*;

/// Two accounts unlinked at once, one from each process: the user keeps one.
pub(super) async fn unlinking_from_two_processes_keeps_the_last_account(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let u = new_user(&t.store).await;
        let now = SystemClock.now();
        for provider in ["github", "gitlab"] {
            let mut a = Account::credential(&u.id, String::new(), now);
            a.provider_id = provider.into();
            a.account_id = random_lower_alnum(12);
            a.password = None;
            t.store.create_account(&a, &[]).await.unwrap();
        }
        let (ha, hb) = (t.a.user(u.id.clone()), t.b.user(u.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.unlink_account(Some("github"), None, false),
            hb.unlink_account(Some("gitlab"), None, false),
        );
        assert_eq!(
            t.store.list_accounts(&u.id).await.unwrap().len(),
            1,
            "trial {trial}: {ra:?} / {rb:?}"
        );
        let refused = if ra.is_err() { ra } else { rb };
        assert!(
            matches!(refused, Err(ActorError::Refused(Rule::LastAccount))),
            "trial {trial}: {refused:?}"
        );
    }
}

/// Profile changes made at once in both processes are both kept (no lost update).
pub(super) async fn profile_changes_from_two_processes_are_both_kept(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let u = new_user(&t.store).await;
        let (ha, hb) = (t.a.user(u.id.clone()), t.b.user(u.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.update_user(UserPatch {
                name: Some(format!("name{trial}")),
                ..UserPatch::default()
            }),
            hb.update_user(UserPatch {
                image: Some(Some(format!("https://img.example/{trial}"))),
                ..UserPatch::default()
            }),
        );
        ra.unwrap();
        rb.unwrap();
        let now = t.store.get_user(&u.id).await.unwrap().unwrap();
        assert_eq!(now.name, format!("name{trial}"), "trial {trial}");
        assert_eq!(
            now.image.as_deref(),
            Some(format!("https://img.example/{trial}").as_str()),
            "trial {trial}"
        );
    }
}

/// A session is always read from the store, its user from the process's user cache: a change
/// of the user through this process shows at once, a change through the other process once
/// its event is read (the cache's lifetime is a minute here, so nothing else drops it), a
/// revoked session is gone at once everywhere, and a fresh read never uses the cache.
pub(super) async fn a_user_changed_in_one_process_shows_in_the_others_sessions(backend: Backend) {
    use std::time::{Duration, Instant};
    let Some(t) = two_with(backend, |c| c.user_cache.ttl = Duration::from_secs(60)).await else {
        return;
    };
    let events = t.a.spawn_cache_invalidation(Duration::from_millis(50));
    let reader = t.a.reader();
    let u = new_user(&t.store).await;
    let now = SystemClock.now();
    let session = Session {
        id: SessionId::generate(),
        token: random_string(32),
        user_id: u.id.clone(),
        expires_at: now + chrono::Duration::days(1),
        ip_address: None,
        user_agent: None,
        created_at: now,
        updated_at: now,
        active_organization_id: None,
        active_team_id: None,
        impersonated_by: None,
    };
    t.store.create_session(&session, &[]).await.unwrap();
    let name = |fresh: bool| {
        let reader = reader.clone();
        let token = session.token.clone();
        async move {
            let (_, user) = reader
                .session_with_user(&token, fresh)
                .await
                .unwrap()
                .expect("the session");
            user.expect("the user").name
        }
    };
    assert_eq!(name(false).await, "U");
    // Written around both processes (no actor, no event): the cache answers, a fresh read not.
    let mut changed = t.store.get_user(&u.id).await.unwrap().unwrap();
    changed.name = "Behind".into();
    changed.version += 1;
    t.store.update_user(&changed, &[]).await.unwrap();
    assert_eq!(name(false).await, "U", "the user is cached");
    assert_eq!(name(true).await, "Behind");
    let rename = |process: &Actors, to: &str| {
        let user = process.user(u.id.clone());
        let patch = UserPatch {
            name: Some(to.into()),
            ..UserPatch::default()
        };
        async move { user.update_user(patch).await.unwrap() }
    };
    // Through this process's actor: at once.
    rename(&t.a, "Here").await;
    assert_eq!(name(false).await, "Here");
    // Through the other process: once its event is read (a CQL reader waits a few seconds).
    rename(&t.b, "There").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        events.wake();
        let seen = name(false).await;
        if seen == "There" {
            break;
        }
        assert_eq!(seen, "Here", "only the old or the new name");
        assert!(
            Instant::now() < deadline,
            "the other process's change never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Revoked by the other process: gone at once, the cached user notwithstanding.
    t.b.user(u.id.clone()).revoke_sessions(None).await.unwrap();
    assert!(reader
        .session_with_user(&session.token, false)
        .await
        .unwrap()
        .is_none());
    events.stop();
}
