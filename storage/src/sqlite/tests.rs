use super::*;
use rusqlite::StatementStatus;

async fn store_with_table() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("t.db")).await.unwrap();
    store
        .write(|c| {
            c.execute_batch("CREATE TABLE t (a INTEGER)")
                .map_err(map_err)?;
            Ok(())
        })
        .await
        .unwrap();
    (dir, store)
}

fn insert(c: &Connection, a: i64) -> StoreResult<()> {
    c.exec("INSERT INTO t VALUES (?1)", [a])
        .map(drop)
        .map_err(map_err)
}

async fn rows(store: &SqliteStore) -> Vec<i64> {
    store
        .read(|c| all(c, "SELECT a FROM t ORDER BY a", [], |r| r.get(0)))
        .await
        .unwrap()
}

/// Queues a write that holds the writer thread until the returned sender is used or
/// dropped, so the writes queued meanwhile wait behind it.
fn hold_writer(store: &SqliteStore) -> std::sync::mpsc::Sender<()> {
    let (release, held) = std::sync::mpsc::channel::<()>();
    drop(store.submit(false, move |_| {
        let _ = held.recv();
        Ok(())
    }));
    release
}

/// A write that panics midway is answered with an error; the writer thread rolls back
/// what it wrote and runs the next write, which sees nothing of it.
#[tokio::test]
async fn the_writer_thread_outlives_a_write_that_panics() {
    let (_dir, store) = store_with_table().await;
    let r: StoreResult<()> = store
        .write(|c| {
            insert(c, 1)?;
            panic!("a bug in a write");
        })
        .await;
    assert!(matches!(r, Err(StoreError::Internal(_))), "{r:?}");
    store.write(|c| insert(c, 2)).await.unwrap();
    assert_eq!(rows(&store).await, vec![2]);
}

/// Writes queued behind one another commit in one transaction, each answered as it would
/// be alone: one that fails keeps what it wrote before failing, one that panics keeps
/// nothing, a write that must run alone (the health probe) runs after the group.
#[tokio::test]
async fn queued_writes_commit_together_each_answered_as_alone() {
    let (_dir, store) = store_with_table().await;
    let before = store.group_commits();
    let release = hold_writer(&store);
    let mut answers = Vec::new();
    for a in 0..20 {
        answers.push(store.submit(false, move |c| insert(c, a)).unwrap());
    }
    let fails = store
        .submit(false, |c| -> StoreResult<()> {
            insert(c, 100)?;
            Err(StoreError::NotFound)
        })
        .unwrap();
    let panics = store
        .submit(false, |c| -> StoreResult<()> {
            insert(c, 200)?;
            panic!("a bug in a write");
        })
        .unwrap();
    let sees = store
        .submit(false, |c| -> StoreResult<i64> {
            c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .map_err(map_err)
        })
        .unwrap();
    let health = store
        .submit(true, |c| probe_write(c).map_err(map_err))
        .unwrap();
    release.send(()).unwrap();
    for answer in answers {
        answer.await.unwrap();
    }
    assert!(matches!(fails.await, Err(StoreError::NotFound)));
    assert!(matches!(panics.await, Err(StoreError::Internal(_))));
    // The write after them sees the group's writes before it: 20 rows and the failed
    // write's row.
    assert_eq!(sees.await.unwrap(), 21);
    health.await.unwrap();
    let mut expected: Vec<i64> = (0..20).collect();
    expected.push(100);
    assert_eq!(rows(&store).await, expected);
    // The held write and the 23 queued behind it: one commit (the health probe, queued
    // after them, ends the group and commits nothing).
    assert_eq!(store.group_commits() - before, 1);
}

/// When SQLite ends a group's transaction (as it does on a full disk or an I/O error;
/// here a write rolls it back), the writes of the group before are answered with an
/// error, not as done, and the next write starts a new group.
#[tokio::test]
async fn a_group_whose_transaction_ends_answers_every_write_with_an_error() {
    let (_dir, store) = store_with_table().await;
    let release = hold_writer(&store);
    let first = store.submit(false, |c| insert(c, 1)).unwrap();
    let ends = store
        .submit(false, |c| {
            c.execute_batch("ROLLBACK").map_err(map_err)?;
            Ok(())
        })
        .unwrap();
    let next = store.submit(false, |c| insert(c, 3)).unwrap();
    drop(release);
    assert!(matches!(first.await, Err(StoreError::Unavailable(_))));
    assert!(matches!(ends.await, Err(StoreError::Unavailable(_))));
    next.await.unwrap();
    assert_eq!(rows(&store).await, vec![3]);
}

/// A cached statement is prepared once, whatever values its `LIMIT` and `OFFSET` take (no
/// re-prepare per run), and SQLite keeps no memory statistics (no global allocation lock).
#[test]
fn statements_stay_prepared_and_allocations_take_no_global_lock() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(&dir.path().join("t.db"), OpenFlags::default()).unwrap();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER PRIMARY KEY); \
         INSERT INTO t VALUES (1), (2), (3), (4), (5), (6);",
    )
    .unwrap();
    for (limit, offset, expected) in [
        (2, 0, vec![1, 2]),
        (3, 2, vec![3, 4, 5]),
        (5, 4, vec![5, 6]),
    ] {
        let mut st = c
            .prepare_cached("SELECT a FROM t ORDER BY a LIMIT ?1 OFFSET ?2")
            .unwrap();
        let got: Vec<i64> = st
            .query_map([limit, offset], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, expected);
        assert_eq!(st.get_status(StatementStatus::RePrepare), 0);
    }
    // SAFETY: a read of a counter SQLite keeps for the process.
    assert_eq!(unsafe { rusqlite::ffi::sqlite3_memory_used() }, 0);
}

/// Two stores on one file, as two processes would be: each has its own connections.
async fn two_stores_with_table() -> (tempfile::TempDir, SqliteStore, SqliteStore) {
    let (dir, a) = store_with_table().await;
    let b = SqliteStore::open(dir.path().join("t.db")).await.unwrap();
    assert!(a.inner.snapshots.on() && b.inner.snapshots.on());
    (dir, a, b)
}

async fn count(store: &SqliteStore) -> i64 {
    store
        .point_read(|c| one(c, "SELECT COUNT(*) FROM t", [], |r| r.get(0)).map(|n| n.unwrap_or(-1)))
        .await
        .unwrap()
}

/// A reader keeps its snapshot between reads, yet a read sees every commit that ended before
/// it began — one made by another store's connection too (another process's, as far as SQLite
/// can tell): the WAL index header it checks moved. With the checks off (`blind`), the same
/// reads show the old snapshot: the test sees the difference.
#[tokio::test]
async fn a_read_sees_what_another_connection_committed_before_it() {
    let (_dir, a, b) = two_stores_with_table().await;
    for i in 1..=100 {
        // Both readers hold a snapshot from before the write…
        assert_eq!(count(&b).await, i - 1);
        assert_eq!(count(&a).await, i - 1);
        assert!(b.inner.readers.iter().any(|r| r.lock().unwrap().holds()));
        // …which another store's write moves on, and this store's own.
        let w = if i % 2 == 0 { &a } else { &b };
        w.write(move |c| insert(c, i)).await.unwrap();
        assert_eq!(count(&b).await, i, "after write {i}");
        assert_eq!(count(&a).await, i, "after write {i}");
    }
    // Without the checks, a snapshot held before a write is read after it.
    b.inner.snapshots.blind.store(true, Ordering::Relaxed);
    let before = count(&b).await;
    let mut stale = 0;
    for i in 0..20 {
        a.write(move |c| insert(c, 1000 + i)).await.unwrap();
        if count(&b).await == before {
            stale += 1;
        }
    }
    assert!(stale > 0, "every read saw the write without the checks");
}

/// The words a reader watches are where SQLite keeps them: the last frame of the log (word 4)
/// and how far a checkpoint copied it (word 24, the 13th watched).
#[tokio::test]
async fn the_watched_header_follows_the_log() {
    let (dir, store) = store_with_table().await;
    let checkpoint = |mode: &'static str| {
        store
            .submit(true, move |c| {
                c.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(map_err)
            })
            .unwrap()
    };
    assert_eq!(checkpoint("TRUNCATE").await.unwrap(), 0);
    for i in 0..5 {
        store.write(move |c| insert(c, i)).await.unwrap();
    }
    let wal = std::fs::metadata(dir.path().join("t.db-wal"))
        .unwrap()
        .len();
    let page: u64 = store
        .read(|c| one(c, "PRAGMA page_size", [], |r| r.get(0)).map(|p| p.unwrap_or(0)))
        .await
        .unwrap();
    let h = store.inner.snapshots.watched().unwrap();
    assert_eq!(
        u64::from(h[4]),
        (wal - 32) / (page + 24),
        "frames in the log"
    );
    assert!(h[4] >= 5);
    assert_eq!(h[12], 0, "nothing copied yet");
    assert_eq!(checkpoint("PASSIVE").await.unwrap(), 0);
    let h = store.inner.snapshots.watched().unwrap();
    assert_eq!(h[12], h[4], "all copied");
}

/// Readers left idle end their snapshots by themselves (the sweeper), so none keeps the log
/// from being checkpointed; the sweeper then sleeps.
#[tokio::test]
async fn idle_readers_give_their_snapshots_up() {
    let (_dir, store) = store_with_table().await;
    for _ in 0..8 {
        count(&store).await;
    }
    let holding = || {
        store
            .inner
            .readers
            .iter()
            .filter(|r| r.lock().unwrap().holds())
            .count()
    };
    assert!(holding() > 0, "reads keep a snapshot");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while holding() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a snapshot stayed open"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Every snapshot ended, so a full checkpoint can empty the log at once.
    let (busy, log, _): (i64, i64, i64) = store
        .submit(true, |c| {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(map_err)
        })
        .unwrap()
        .await
        .unwrap();
    assert_eq!((busy, log), (0, 0));
}

/// Under writes through one store and reads through two, the log is checkpointed as it would
/// be without kept snapshots: its file stays within the size at which the writer copies it
/// itself (see `checkpoint.rs`; plus a group of writes), not the sum of every write. With the
/// checks off (`blind`), it does grow so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_snapshots_leave_the_log_bounded() {
    async fn wal_after_load(blind: bool, off: bool) -> u64 {
        let (dir, a, b) = two_stores_with_table().await;
        for s in [&a, &b] {
            s.inner.snapshots.blind.store(blind, Ordering::Relaxed);
            s.inner.snapshots.off.store(off, Ordering::Relaxed);
        }
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = [a.clone(), b.clone(), a.clone(), b.clone()]
            .into_iter()
            .map(|s| {
                let done = done.clone();
                tokio::spawn(async move {
                    while !done.load(Ordering::Relaxed) {
                        count(&s).await;
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for i in 0..3000 {
            a.write(move |c| {
                c.exec("INSERT INTO t VALUES (?1)", [i])
                    .and_then(|_| c.exec("UPDATE t SET a = a WHERE a = ?1", [i]))
                    .map(drop)
                    .map_err(map_err)
            })
            .await
            .unwrap();
            if i % 4 == 0 {
                // Rows of a few pages each, so the log grows by several pages per commit.
                a.write(|c| {
                    c.exec("CREATE TABLE IF NOT EXISTS big (b BLOB)", [])
                        .and_then(|_| c.exec("INSERT INTO big VALUES (zeroblob(16000))", []))
                        .map(drop)
                        .map_err(map_err)
                })
                .await
                .unwrap();
            }
        }
        done.store(true, Ordering::Relaxed);
        for r in readers {
            r.await.unwrap();
        }
        std::fs::metadata(dir.path().join("t.db-wal"))
            .unwrap()
            .len()
    }
    let off = wal_after_load(false, true).await;
    let kept = wal_after_load(false, false).await;
    let blind = wal_after_load(true, false).await;
    eprintln!("log: {off} bytes keeping no snapshot, {kept} with the checks, {blind} without");
    // A group of writes commits at most GROUP_MAX writes of up to five pages past the size.
    let bound = u64::from(checkpoint::WRITER_FRAMES + GROUP_MAX as u32 * 5) * (4096 + 24);
    assert!(
        off <= bound,
        "the log grew to {off} bytes keeping no snapshot"
    );
    assert!(kept <= bound, "the log grew to {kept} bytes");
    assert!(
        blind > bound + bound / 2,
        "without the checks the log stayed at {blind} bytes"
    );
}

/// Checkpoints run on their own thread, not the writer's, and the log still starts over: its
/// last frame comes back to the start again and again, and its file stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_leave_the_writer_and_the_log_starts_over() {
    let (dir, store) = store_with_table().await;
    let (thread_before, _) = store.checkpoints().expect("checkpoints off the writer");
    let mut highest = 0u32;
    let mut restarts = 0;
    for i in 0..2000 {
        store
            .write(move |c| {
                c.exec("CREATE TABLE IF NOT EXISTS big (b BLOB)", [])
                    .and_then(|_| c.exec("INSERT INTO big VALUES (zeroblob(8000))", []))
                    .and_then(|_| c.exec("INSERT INTO t VALUES (?1)", [i]))
                    .map(drop)
                    .map_err(map_err)
            })
            .await
            .unwrap();
        let frames = store.inner.snapshots.watched().unwrap()[4];
        if frames < highest {
            restarts += 1;
        }
        highest = frames;
    }
    let (by_thread, by_writer) = store.checkpoints().unwrap();
    assert!(by_thread > thread_before, "the thread ran no checkpoint");
    assert!(restarts >= 2, "the log started over {restarts} times");
    let wal = std::fs::metadata(dir.path().join("t.db-wal"))
        .unwrap()
        .len();
    let bound = u64::from(checkpoint::WRITER_FRAMES) * (4096 + 24);
    assert!(wal <= bound, "the log's file is {wal} bytes");
    eprintln!("checkpoints: {by_thread} by the thread, {by_writer} by the writer; log {wal} bytes");
    assert_eq!(rows(&store).await.len(), 2000);
}

/// A burst of writes that leaves the log short of the thread's 1 000 frames but past the
/// 750 from which reads keep no snapshot is copied once the writer has nothing to do, so
/// reads keep their snapshots again (without it they took a lock per statement until the
/// next burst: every get-session after a sign-up burst).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_left_between_bursts_is_copied_when_the_writer_is_idle() {
    let (_dir, store) = store_with_table().await;
    let (thread_before, _) = store.checkpoints().expect("checkpoints off the writer");
    // About 800 pages in one commit.
    store
        .write(|c| {
            c.exec("CREATE TABLE big (b BLOB)", [])
                .and_then(|_| c.exec("INSERT INTO big VALUES (zeroblob(800 * 4096))", []))
                .map(drop)
                .map_err(map_err)
        })
        .await
        .unwrap();
    let h = store.inner.snapshots.watched().unwrap();
    assert!(
        (snapshot::DUE_FRAMES..checkpoint::THREAD_FRAMES).contains(&h[4]) && h[12] < h[4],
        "the log: {h:?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let h = store.inner.snapshots.watched().unwrap();
        if h[12] == h[4] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the log was not copied: {h:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(store.checkpoints().unwrap().0 > thread_before);
    count(&store).await;
    assert!(
        store
            .inner
            .readers
            .iter()
            .any(|r| r.lock().unwrap().holds()),
        "reads keep a snapshot again"
    );
}

/// An organization write that keeps the slug leaves the slug's unique index alone: it writes
/// fewer pages to the log than one that changes the slug (SQLite rewrites the index entry of
/// every column an UPDATE sets, changed or not).
#[tokio::test]
async fn an_organization_write_rewrites_the_slug_index_only_when_the_slug_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("t.db")).await.unwrap();
    let now = Utc::now();
    let owner = User::new("o@example.com", "Owner".into(), None, now);
    store.create_user(&owner, None, &[]).await.unwrap();
    let mut o = Organization::new("Acme".into(), "acme".into(), None, None, true, now);
    let m = Member {
        id: MemberId::generate(),
        organization_id: o.id.clone(),
        user_id: owner.id.clone(),
        role: "owner".into(),
        team_id: None,
        created_at: now,
    };
    store.create_organization(&o, &m, None, &[]).await.unwrap();
    let mut frames_of = |slug: &str| {
        o.version += 1;
        o.slug = slug.into();
        let next = o.clone();
        let store = store.clone();
        async move {
            let before = store.inner.snapshots.watched().unwrap()[4];
            store.change_organization(&next, &[], &[]).await.unwrap();
            store.inner.snapshots.watched().unwrap()[4] - before
        }
    };
    let kept = frames_of("acme").await;
    let changed = frames_of("acme-2").await;
    let kept_again = frames_of("acme-2").await;
    assert!(
        kept < changed,
        "{kept} frames keeping the slug, {changed} changing it"
    );
    assert_eq!(kept, kept_again);
    let found = store.get_organization_by_slug("acme-2").await.unwrap();
    assert_eq!(found.map(|f| f.version), Some(3));
    assert!(store
        .get_organization_by_slug("acme")
        .await
        .unwrap()
        .is_none());
}

/// The same for a user's email and its unique index.
#[tokio::test]
async fn a_user_write_rewrites_the_email_index_only_when_the_email_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("t.db")).await.unwrap();
    let mut u = User::new("a@example.com", "A".into(), None, Utc::now());
    store.create_user(&u, None, &[]).await.unwrap();
    let mut frames_of = |email: &str| {
        u.version += 1;
        u.email = email.into();
        let next = u.clone();
        let store = store.clone();
        async move {
            let before = store.inner.snapshots.watched().unwrap()[4];
            store.update_user(&next, &[]).await.unwrap();
            store.inner.snapshots.watched().unwrap()[4] - before
        }
    };
    let kept = frames_of("a@example.com").await;
    let changed = frames_of("b@example.com").await;
    assert!(
        kept < changed,
        "{kept} frames keeping the email, {changed} changing it"
    );
    let found = store.get_user_by_email("b@example.com").await.unwrap();
    assert_eq!(found.map(|f| f.version), Some(2));
    assert!(store
        .get_user_by_email("a@example.com")
        .await
        .unwrap()
        .is_none());
}

/// The store's savepoints (statements from the cache) nest: one dropped uncommitted takes back
/// what was written through it and nothing else, and a write that fails inside one leaves
/// nothing.
#[tokio::test]
async fn savepoints_nest_and_take_back_what_they_wrote() {
    let (_dir, store) = store_with_table().await;
    store
        .write(|c| {
            let outer = Savepoint::new(c)?;
            insert(&outer, 1)?;
            {
                let dropped = Savepoint::new(&outer)?;
                insert(&dropped, 2)?;
            }
            let kept = Savepoint::new(&outer)?;
            insert(&kept, 3)?;
            kept.commit()?;
            outer.commit()
        })
        .await
        .unwrap();
    assert_eq!(rows(&store).await, vec![1, 3]);
    let failed = store
        .write(|c| {
            let sp = Savepoint::new(c)?;
            insert(&sp, 4)?;
            Err::<(), _>(StoreError::Conflict("test"))
        })
        .await;
    assert!(matches!(failed, Err(StoreError::Conflict(_))));
    assert_eq!(rows(&store).await, vec![1, 3]);
}
