//! User actors against a real SQLite store: lifecycle (spawn on demand, stop when idle) and
//! serialization of session changes.
use actors::{ActorConfig, Actors, NewSession, UserPatch};
use chrono::Duration as ChronoDuration;
use futures::future::join_all;
use std::sync::Arc;
use std::time::Duration;
use storage::sqlite::SqliteStore;
use storage::*;

async fn setup(idle: Duration, clock: Arc<dyn Clock>) -> (Actors, DynStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore = Arc::new(SqliteStore::open(dir.path().join("a.db")).await.unwrap());
    let cfg = ActorConfig {
        idle_timeout: idle,
        ..ActorConfig::default()
    };
    let actors = Actors::start(store.clone(), clock, cfg).await.unwrap();
    (actors, store, dir)
}

async fn new_user(store: &DynStore, email: &str) -> User {
    let now = SystemClock.now();
    let u = User {
        id: UserId::generate(),
        email: email.into(),
        email_verified: false,
        name: "U".into(),
        image: None,
        role: None,
        banned: false,
        ban_reason: None,
        ban_expires: None,
        created_at: now,
        updated_at: now,
    };
    store.create_user(&u, None).await.unwrap();
    u
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_actors_stop_and_live_count_returns_to_zero() {
    let (actors, store, _d) = setup(Duration::from_millis(300), Arc::new(SystemClock)).await;
    let mut users = Vec::new();
    for i in 0..200 {
        users.push(new_user(&store, &format!("u{i}@example.com")).await);
    }
    let tasks = users.iter().map(|u| {
        let h = actors.user(u.id.clone());
        async move { h.create_session(NewSession::default()).await.unwrap() }
    });
    let sessions = join_all(tasks).await;
    assert_eq!(sessions.len(), 200);
    let live = actors.live_actors();
    assert!(
        live > 150,
        "expected most actors alive right after use, got {live}"
    );
    let mut waited = 0;
    while actors.live_actors() > 0 && waited < 50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    assert_eq!(actors.live_actors(), 0, "idle actors did not stop");
    // A stopped actor is respawned transparently on next use.
    let s = actors
        .user(users[0].id.clone())
        .create_session(NewSession::default())
        .await
        .unwrap();
    assert_eq!(s.user_id, users[0].id);
    assert_eq!(actors.live_actors(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_of_one_user_are_serialized() {
    let (actors, store, _d) = setup(Duration::from_secs(30), Arc::new(SystemClock)).await;
    let u = new_user(&store, "serial@example.com").await;
    let tasks = (0..20).map(|i| {
        let h = actors.user(u.id.clone());
        async move {
            if i % 2 == 0 {
                h.create_session(NewSession::default()).await.map(|_| ())
            } else {
                h.update_user(UserPatch {
                    name: Some(format!("name{i}")),
                    ..UserPatch::default()
                })
                .await
                .map(|_| ())
            }
        }
    });
    for r in join_all(tasks).await {
        r.unwrap();
    }
    assert_eq!(store.list_sessions(&u.id).await.unwrap().len(), 10);
    assert!(store
        .get_user(&u.id)
        .await
        .unwrap()
        .unwrap()
        .name
        .starts_with("name"));
    assert_eq!(actors.live_actors(), 1, "one actor per user");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_revoked_while_being_refreshed_stays_revoked() {
    let clock = Arc::new(ManualClock::default());
    let (actors, store, _d) = setup(Duration::from_secs(30), clock.clone()).await;
    let u = new_user(&store, "race@example.com").await;
    let h = actors.user(u.id.clone());
    for _ in 0..30 {
        let s = h.create_session(NewSession::default()).await.unwrap();
        // Make the session due for refresh, then race a refresh with a revocation.
        clock.advance(ChronoDuration::days(2));
        let (h1, h2) = (h.clone(), h.clone());
        let (t1, t2) = (s.token.clone(), s.token.clone());
        let refresh = tokio::spawn(async move { h1.refresh_session(&t1, false).await });
        let revoke = tokio::spawn(async move { h2.revoke_session(&t2).await });
        let refreshed = refresh.await.unwrap().unwrap();
        assert!(
            revoke.await.unwrap().unwrap(),
            "revocation must find the session"
        );
        if let Some(r) = refreshed {
            assert!(r.expires_at > s.expires_at, "a refresh extends the session");
        }
        assert!(store.get_session(&s.token).await.unwrap().is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_extends_only_when_due_and_deletes_expired() {
    let clock = Arc::new(ManualClock::default());
    let (actors, store, _d) = setup(Duration::from_secs(30), clock.clone()).await;
    let u = new_user(&store, "refresh@example.com").await;
    let h = actors.user(u.id.clone());
    let s = h.create_session(NewSession::default()).await.unwrap();
    assert_eq!(s.expires_at - s.created_at, ChronoDuration::days(7));
    // Not due yet: unchanged.
    clock.advance(ChronoDuration::hours(12));
    assert_eq!(
        h.refresh_session(&s.token, false).await.unwrap(),
        Some(s.clone())
    );
    // Due: extended to now + 7 days.
    clock.advance(ChronoDuration::hours(13));
    let r = h.refresh_session(&s.token, false).await.unwrap().unwrap();
    assert_eq!(r.expires_at, clock.now() + ChronoDuration::days(7));
    assert_eq!(store.get_session(&s.token).await.unwrap(), Some(r));
    // A rememberMe:false session is never extended.
    let short = h
        .create_session(NewSession {
            dont_remember: true,
            ..NewSession::default()
        })
        .await
        .unwrap();
    assert_eq!(short.expires_at - short.created_at, ChronoDuration::days(1));
    // Expired: deleted.
    clock.advance(ChronoDuration::days(8));
    assert_eq!(h.refresh_session(&short.token, true).await.unwrap(), None);
    assert!(store.get_session(&short.token).await.unwrap().is_none());
    // Another user's token is not this user's session.
    let other = new_user(&store, "other@example.com").await;
    let os = actors
        .user(other.id.clone())
        .create_session(NewSession::default())
        .await
        .unwrap();
    assert_eq!(h.refresh_session(&os.token, false).await.unwrap(), None);
    assert!(!h.revoke_session(&os.token).await.unwrap());
    assert!(store.get_session(&os.token).await.unwrap().is_some());
}
