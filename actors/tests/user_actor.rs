//! User actors against a real SQLite store: lifecycle (spawn on demand, stop when idle) and
//! serialization of session changes.
use actors::{ActorConfig, ActorError, Actors, NewSession, RESET_PASSWORD_PREFIX};
use chrono::Duration as ChronoDuration;
use futures::future::join_all;
use std::sync::Arc;
use std::time::Duration;
use storage::sqlite::SqliteStore;
use storage::*;

async fn setup(idle: Duration, clock: Arc<dyn Clock>) -> (Actors, DynStore, tempfile::TempDir) {
    setup_with(clock, |c| c.idle_timeout = idle).await
}

async fn setup_with(
    clock: Arc<dyn Clock>,
    tweak: impl FnOnce(&mut ActorConfig),
) -> (Actors, DynStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore = Arc::new(SqliteStore::open(dir.path().join("a.db")).await.unwrap());
    let mut cfg = ActorConfig {
        idle_timeout: Duration::from_secs(30),
        ..ActorConfig::default()
    };
    tweak(&mut cfg);
    let actors = Actors::start(store.clone(), clock, cfg).await.unwrap();
    (actors, store, dir)
}

async fn new_user(store: &DynStore, email: &str) -> User {
    let now = SystemClock.now();
    let u = User::new(email, "U".into(), None, now);
    store.create_user(&u, None, &[]).await.unwrap();
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

/// Issuing a reset token is a read-modify-write of the user's tokens (delete the older ones,
/// then create one). Twenty at once leave exactly one valid token only because the actor runs
/// them one after another: the store serializes single statements, not the pair, so without
/// the actor two requests interleave (delete, delete, create, create) and leave two.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_of_one_user_are_serialized() {
    let (actors, store, _d) = setup(Duration::from_secs(30), Arc::new(SystemClock)).await;
    for round in 0..10 {
        let u = new_user(&store, &format!("serial{round}@example.com")).await;
        let tasks = (0..20).map(|_| {
            let h = actors.user(u.id.clone());
            let token = storage::random_string(24);
            async move {
                h.issue_reset_token(&token, ChronoDuration::hours(1))
                    .await
                    .map(|()| token)
            }
        });
        let tokens: Vec<String> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let mut valid = 0;
        for t in &tokens {
            let id = format!("{RESET_PASSWORD_PREFIX}{t}");
            if store.get_verification(&id).await.unwrap().is_some() {
                valid += 1;
            }
        }
        assert_eq!(valid, 1, "round {round}");
    }
}

/// A request whose caller gave up (call timeout) is never applied later: every session in the
/// store was answered to its caller, and every caller told 503 left nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_its_caller_gave_up_on_is_never_applied() {
    let (actors, store, _d) = setup_with(Arc::new(SystemClock), |c| {
        c.call_timeout = Duration::from_millis(15);
        c.max_pending = 100_000;
    })
    .await;
    let u = new_user(&store, "timeout@example.com").await;
    let (mut answered, mut gave_up) = (0usize, 0usize);
    for _ in 0..10 {
        let tasks = (0..400).map(|_| {
            let h = actors.user(u.id.clone());
            async move { h.create_session(NewSession::default()).await }
        });
        for r in join_all(tasks).await {
            match r {
                Ok(_) => answered += 1,
                Err(ActorError::Unavailable(_)) => gave_up += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(store.list_sessions(&u.id).await.unwrap().len(), answered);
        if gave_up > 0 {
            break;
        }
    }
    assert!(
        gave_up > 0,
        "no call timed out: the test did not exercise the deadline"
    );
    // Nothing queued runs later either.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.list_sessions(&u.id).await.unwrap().len(), answered);
}

/// Beyond `max_pending` waiting requests, an actor refuses new ones at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_overloaded_actor_sheds_requests() {
    let (actors, store, _d) = setup_with(Arc::new(SystemClock), |c| c.max_pending = 4).await;
    let u = new_user(&store, "busy@example.com").await;
    let tasks = (0..200).map(|_| {
        let h = actors.user(u.id.clone());
        async move { h.create_session(NewSession::default()).await }
    });
    let (mut ok, mut shed) = (0, 0);
    for r in join_all(tasks).await {
        match r {
            Ok(_) => ok += 1,
            Err(ActorError::Overloaded) => shed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(shed > 0 && ok > 0, "ok {ok}, shed {shed}");
    assert_eq!(store.list_sessions(&u.id).await.unwrap().len(), ok);
    // Once the burst is over, requests pass again.
    actors
        .user(u.id.clone())
        .create_session(NewSession::default())
        .await
        .unwrap();
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
        let (s1, t2) = (s.clone(), s.token.clone());
        let refresh = tokio::spawn(async move { h1.refresh_session(&s1, false).await });
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
    assert_eq!(h.refresh_session(&s, false).await.unwrap(), Some(s.clone()));
    // Due: extended to now + 7 days.
    clock.advance(ChronoDuration::hours(13));
    let r = h.refresh_session(&s, false).await.unwrap().unwrap();
    assert_eq!(r.expires_at, clock.now() + ChronoDuration::days(7));
    assert_eq!(store.get_session(&s.token).await.unwrap(), Some(r.clone()));
    // Another request that read the session before the refresh: answered the refreshed one,
    // not written again (a later clock would extend it further).
    clock.advance(ChronoDuration::minutes(1));
    assert_eq!(h.refresh_session(&s, false).await.unwrap(), Some(r.clone()));
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
    assert_eq!(h.refresh_session(&short, true).await.unwrap(), None);
    assert!(store.get_session(&short.token).await.unwrap().is_none());
    // Another user's token is not this user's session.
    let other = new_user(&store, "other@example.com").await;
    let os = actors
        .user(other.id.clone())
        .create_session(NewSession::default())
        .await
        .unwrap();
    assert_eq!(h.refresh_session(&os, false).await.unwrap(), None);
    assert!(!h.revoke_known_session(&os).await.unwrap());
    assert!(!h.revoke_session(&os.token).await.unwrap());
    assert!(store.get_session(&os.token).await.unwrap().is_some());
}

/// A decision keeps the request's audit record in its own write, completed with what only
/// it knows (the session it made); a refused decision keeps none; a refusal is recorded on
/// its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_keeps_its_audit_record_and_a_refusal_none() {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore = Arc::new(SqliteStore::open(dir.path().join("a.db")).await.unwrap());
    let actors = Actors::start(store.clone(), Arc::new(SystemClock), ActorConfig::default())
        .await
        .unwrap();
    let now = SystemClock.now();
    let u = new_user(&store, "noted@example.com").await;
    let note = |action: &str| actors::Note {
        record: AuditEvent::new(action, now),
        fill: vec![actors::Fill::TargetSession],
        keep_for_secs: 3600,
        when: actors::When::Always,
    };
    let ctx = actors::Ctx::default().note(note("user.sign-in"));
    let s = actors
        .user(u.id.clone())
        .with(ctx.clone())
        .create_session(NewSession::default())
        .await
        .unwrap();
    // A user that does not exist: refused, nothing kept.
    let ghost = actors
        .user(storage::UserId::generate())
        .with(ctx)
        .create_session(NewSession::default())
        .await;
    assert!(ghost.is_err());
    actors
        .record(&actors::Ctx::default().note(note("user.sign-out")))
        .await
        .unwrap();
    let q = AuditQuery::range(
        now - ChronoDuration::seconds(5),
        now + ChronoDuration::seconds(5),
        100,
    );
    let page = store.list_audit(&q).await.unwrap();
    let mut got: Vec<(String, Option<String>)> = page
        .items
        .into_iter()
        .map(|e| (e.action, e.target))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("user.sign-in".to_owned(), Some(s.id.0.clone())),
            ("user.sign-out".to_owned(), None)
        ]
    );
}
