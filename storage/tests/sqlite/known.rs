//! Sessions a SQLite store answers again without a read (`sqlite/known.rs`): only while no
//! commit of this process or another changed them. Two stores on one file stand for two
//! processes (each has its own connections, as another process would).
use crate::contract::{session, user};
use chrono::Duration;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use storage::sqlite::SqliteStore;
use storage::*;

async fn two_stores() -> (tempfile::TempDir, SqliteStore, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let a = SqliteStore::open(&path).await.unwrap();
    let b = SqliteStore::open(&path).await.unwrap();
    (dir, a, b)
}

async fn signed_in(s: &SqliteStore, email: &str) -> (User, Session) {
    let u = user(email);
    s.create_user(&u, None, &[]).await.unwrap();
    let x = session(&u);
    s.create_session(&x, &[]).await.unwrap();
    (u, x)
}

/// A write that changes neither sessions nor users.
async fn unrelated_write(s: &SqliteStore) {
    let t = SystemClock.now();
    let v = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: "someone".into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&v, &[]).await.unwrap();
}

/// Reads `token` and tells whether the store read it (`false`: answered without a read).
async fn read(s: &SqliteStore, token: &str) -> (Option<Session>, bool) {
    let before = s.op_counts().0;
    let found = s.get_session(token).await.unwrap();
    (found, s.op_counts().0 != before)
}

/// Waits (at most 2 s) until the store answers `token` without a read: the writer accounts
/// for another store's commits when it is idle for a moment.
async fn held_again(s: &SqliteStore, token: &str) -> Session {
    for _ in 0..200 {
        if let (Some(x), false) = read(s, token).await {
            return x;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the session is never answered without a read");
}

#[tokio::test]
async fn a_session_is_answered_without_a_read_until_a_commit_may_have_changed_it() {
    let (_dir, a, b) = two_stores().await;
    let (_, x) = signed_in(&a, "a@example.com").await;
    assert_eq!(read(&a, &x.token).await, (Some(x.clone()), true));
    assert_eq!(held_again(&a, &x.token).await, x);
    // This process's writes that leave sessions and users alone keep it.
    unrelated_write(&a).await;
    assert_eq!(read(&a, &x.token).await, (Some(x.clone()), false));

    // Another process's revocation: the next read finds it gone.
    assert!(b.delete_session(&x.token, &[]).await.unwrap());
    assert_eq!(read(&a, &x.token).await, (None, true));
}

/// The other process's commit is accounted for when this process next writes: it counts as a
/// session change, whatever it was.
#[tokio::test]
async fn another_process_revocation_is_seen_after_this_process_writes() {
    let (_dir, a, b) = two_stores().await;
    let (_, x) = signed_in(&a, "a@example.com").await;
    held_again(&a, &x.token).await;
    assert!(b.delete_session(&x.token, &[]).await.unwrap());
    unrelated_write(&a).await;
    assert_eq!(read(&a, &x.token).await.0, None);

    // The same when the writer accounts for it while idle.
    let (_, y) = signed_in(&a, "b@example.com").await;
    held_again(&a, &y.token).await;
    assert!(b.delete_session(&y.token, &[]).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(read(&a, &y.token).await.0, None);

    // Idle, this process answers without reads again a moment after the other one wrote.
    let (_, z) = signed_in(&a, "c@example.com").await;
    held_again(&a, &z.token).await;
    unrelated_write(&b).await;
    assert_eq!(read(&a, &z.token).await, (Some(z.clone()), true));
    assert_eq!(held_again(&a, &z.token).await, z);
}

#[tokio::test]
async fn this_process_session_and_user_changes_are_seen_at_once() {
    let (_dir, a, _b) = two_stores().await;
    let (u, x) = signed_in(&a, "a@example.com").await;
    held_again(&a, &x.token).await;
    let mut longer = x.clone();
    longer.expires_at = x.expires_at + Duration::days(1);
    a.update_session(&longer).await.unwrap();
    assert_eq!(read(&a, &x.token).await.0, Some(longer.clone()));

    assert!(a.delete_session(&x.token, &[]).await.unwrap());
    assert_eq!(read(&a, &x.token).await.0, None);

    // A deleted user takes its sessions along.
    let y = session(&u);
    a.create_session(&y, &[]).await.unwrap();
    held_again(&a, &y.token).await;
    a.delete_user(&u.id, &[]).await.unwrap();
    assert_eq!(read(&a, &y.token).await.0, None);
}

/// Readers hammer one session while writes of both processes go on; once a revocation has
/// returned — made by this process or the other — no read that begins after it finds the
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_read_after_a_revocation_returned_finds_the_session() {
    let (_dir, a, b) = two_stores().await;
    let (a, b) = (Arc::new(a), Arc::new(b));
    for (round, revoker) in [b.clone(), a.clone(), b.clone(), a.clone()]
        .into_iter()
        .enumerate()
    {
        let (_, x) = signed_in(&a, &format!("r{round}@example.com")).await;
        held_again(&a, &x.token).await;
        let revoked = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (a, token) = (a.clone(), x.token.clone());
                let (revoked, stop) = (revoked.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut late = 0;
                    while !stop.load(Ordering::Acquire) {
                        let after = revoked.load(Ordering::Acquire);
                        let found = a.get_session(&token).await.unwrap();
                        if after {
                            assert!(found.is_none(), "read after the revocation found it");
                            late += 1;
                        }
                        tokio::task::yield_now().await;
                    }
                    late
                })
            })
            .collect();
        let writers: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .map(|s| {
                let stop = stop.clone();
                tokio::spawn(async move {
                    while !stop.load(Ordering::Acquire) {
                        unrelated_write(&s).await;
                    }
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(revoker.delete_session(&x.token, &[]).await.unwrap());
        revoked.store(true, Ordering::Release);
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        stop.store(true, Ordering::Release);
        for r in readers {
            assert!(r.await.unwrap() > 0, "no read ran after the revocation");
        }
        for w in writers {
            w.await.unwrap();
        }
    }
}

/// The session read with its user (get-session with the cookie cache disabled): answered
/// without a read the same way, and a change of the user by either process is seen at once.
#[tokio::test]
async fn a_session_with_its_user_is_answered_again_until_either_changes() {
    let (_dir, a, b) = two_stores().await;
    let (u, x) = signed_in(&a, "a@example.com").await;
    let with_user = |s: &SqliteStore| {
        let (s, token) = (s.clone(), x.token.clone());
        async move {
            let before = s.op_counts().0;
            let found = s.get_session_with_user(&token).await.unwrap();
            (found, s.op_counts().0 != before)
        }
    };
    assert_eq!(
        with_user(&a).await,
        (Some((x.clone(), Some(u.clone()))), true)
    );
    assert_eq!(
        with_user(&a).await,
        (Some((x.clone(), Some(u.clone()))), false)
    );
    // The entry answers a read of the session alone too.
    assert_eq!(read(&a, &x.token).await, (Some(x.clone()), false));

    let mut renamed = u.clone();
    renamed.name = "Renamed".into();
    renamed.version = u.version + 1;
    a.update_user(&renamed, &[]).await.unwrap();
    assert_eq!(
        with_user(&a).await.0,
        Some((x.clone(), Some(renamed.clone())))
    );
    assert!(!with_user(&a).await.1);

    let mut again = renamed.clone();
    again.name = "Renamed by the other".into();
    again.version = renamed.version + 1;
    b.update_user(&again, &[]).await.unwrap();
    assert_eq!(with_user(&a).await.0, Some((x.clone(), Some(again))));
}
