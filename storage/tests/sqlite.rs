//! The storage contract on the embedded backend: a real SQLite file in a temp dir per test.
mod contract;
#[path = "sqlite/known.rs"]
mod known;
#[path = "sqlite/processes.rs"]
mod processes;

use std::sync::Arc;
use storage::sqlite::SqliteStore;

async fn fresh() -> Option<(contract::S, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("test.db")).await.unwrap();
    Some((Arc::new(store), dir))
}

contract_tests!(fresh);

/// The in-memory counters (the default of one process) keep the same contract.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_rate_limits_keep_the_contract() {
    contract::rate_limits_of(Arc::new(storage::MemoryRateLimits::default())).await;
}

#[tokio::test]
async fn reopening_keeps_data_and_migrations_run_once() {
    use storage::UserStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keep.db");
    let u = contract::user("keep@example.com");
    {
        let s = SqliteStore::open(&path).await.unwrap();
        s.create_user(&u, None, &[]).await.unwrap();
    }
    let s = SqliteStore::open(&path).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap(), Some(u));
}

/// The audit log's contract with its events spread over both of SQLite's tables: appended
/// ones, and ones moved under the indexes three at a time, while the test reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_log_keeps_the_contract_while_events_are_moved_in_batches() {
    let store = || async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("test.db")).await.unwrap();
        store.set_audit_batch(3);
        (Arc::new(store), dir)
    };
    let (s, _dir) = store().await;
    contract::audit_log(s).await;
    let (s, _dir) = store().await;
    contract::audit_log_over_a_long_range(s).await;
}

/// How many events wait in the main file's `audit_recent`, and how many are under the
/// indexes, in the audit log's own file beside it.
fn audit_counts(db: &std::path::Path) -> (i64, i64) {
    let n = |file: &std::path::Path, t: &str| -> i64 {
        let c = rusqlite::Connection::open(file).unwrap();
        c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    let mut audit = db.as_os_str().to_owned();
    audit.push("-audit");
    (
        n(db, "audit_recent"),
        n(std::path::Path::new(&audit), "audit_events"),
    )
}

/// Appended events wait in `audit_recent` and are moved under `audit_events`' indexes (in the
/// audit log's own file) a batch at a time; a purge moves the rest. Each is listed exactly once whichever table holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appended_audit_events_are_moved_under_the_indexes_in_batches() {
    use storage::{AuditEvent, AuditQuery, AuditStore, UserId};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.set_audit_batch(4);
    let counts = || audit_counts(&path);
    let t0 = chrono::Utc::now() - chrono::Duration::minutes(10);
    let users = [UserId::generate(), UserId::generate()];
    let mut ids = Vec::new();
    for i in 0..10 {
        let mut e = AuditEvent::new("user.sign-in", t0 + chrono::Duration::seconds(i));
        e.actor_id = Some(users[i as usize % 2].clone());
        store
            .append_audit(&e, std::time::Duration::from_secs(3600))
            .await
            .unwrap();
        ids.push(e.id);
    }
    let listed = |user: Option<usize>| {
        let mut q = AuditQuery::range(t0, t0 + chrono::Duration::minutes(1), 100);
        q.oldest_first = true;
        q.user = user.map(|u| users[u].clone());
        let store = store.clone();
        async move {
            let page = store.list_audit(&q).await.unwrap();
            page.items.into_iter().map(|e| e.id).collect::<Vec<_>>()
        }
    };
    // The fourth and eighth appends each started a move: eight or more are under the indexes
    // once those moves end. A move copies before it deletes (an event is for a moment in both
    // tables, and the two files are counted one after the other): wait for one that has ended.
    let mut waited = 0;
    let (mut recent, mut moved) = counts();
    while (moved < 8 || recent + moved != 10) && waited < 250 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 1;
        (recent, moved) = counts();
    }
    assert!(moved >= 8 && recent + moved == 10, "{recent} / {moved}");
    assert_eq!(listed(None).await, ids);
    let of_first: Vec<String> = ids.iter().step_by(2).cloned().collect();
    assert_eq!(listed(Some(0)).await, of_first);
    // Housekeeping's purge (here of nothing: every event is newer) moves the rest.
    assert_eq!(store.purge_audit(t0).await.unwrap(), 0);
    assert_eq!(counts(), (0, 10));
    assert_eq!(listed(None).await, ids);
    assert_eq!(listed(Some(0)).await, of_first);
    // An event already moved is refused when appended again, as one still waiting is.
    let mut again = AuditEvent::new("user.sign-in", t0);
    again.id = ids[0].clone();
    let r = store
        .append_audit(&again, std::time::Duration::from_secs(3600))
        .await;
    assert!(matches!(r, Err(storage::StoreError::Conflict(_))), "{r:?}");
}

/// Reads beyond the readers wait without a thread: 256 list reads at once (reads that do not
/// run on the calling task) leave the runtime with its two workers and the one blocking thread
/// that opened the store, not a thread per waiting read (each a stack and allocator pages).
#[test]
fn waiting_reads_hold_no_thread() {
    use storage::AuditStore;
    const NAME: &str = "gh-read-bound";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(NAME)
        .enable_all()
        .build()
        .unwrap();
    let threads = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == NAME)
            .count()
    };
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(dir.path().join("t.db")).await.unwrap());
        let now = chrono::Utc::now();
        let q = storage::AuditQuery::range(now - chrono::Duration::days(1), now, 50);
        let reads: Vec<_> = (0..256)
            .map(|_| {
                let (store, q) = (store.clone(), q.clone());
                tokio::spawn(async move { store.list_audit(&q).await.map(|p| p.items.len()) })
            })
            .collect();
        for r in reads {
            assert_eq!(r.await.unwrap().unwrap(), 0);
        }
        // Idle blocking threads stay 10 s: any the burst made would still be counted.
        let n = threads();
        assert!(n <= 3, "{n} runtime threads after 256 reads at once");
    });
}

/// Two stores on one file (as two processes) append events and move them at once, while a
/// third lists them: every listing holds each event at most once and, in time order, every
/// event appended before it began; in the end each event is under the indexes exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_move_one_audit_log_and_lists_never_miss_or_repeat_an_event() {
    use storage::{AuditEvent, AuditQuery, AuditStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.db");
    let a = SqliteStore::open(&path).await.unwrap();
    let b = SqliteStore::open(&path).await.unwrap();
    let reader = SqliteStore::open(&path).await.unwrap();
    a.set_audit_batch(5);
    b.set_audit_batch(7);
    let t0 = chrono::Utc::now() - chrono::Duration::hours(1);
    let appended = Arc::new(std::sync::Mutex::new(Vec::<(i64, String)>::new()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = |s: SqliteStore, from: i64| {
        let appended = appended.clone();
        tokio::spawn(async move {
            for i in 0..300 {
                let at = t0 + chrono::Duration::milliseconds(from + 2 * i);
                let e = AuditEvent::new("user.sign-in", at);
                s.append_audit(&e, std::time::Duration::from_secs(3600))
                    .await
                    .unwrap();
                appended.lock().unwrap().push((at.timestamp_millis(), e.id));
            }
        })
    };
    let writers = [writer(a.clone(), 0), writer(b.clone(), 1)];
    let lister = {
        let appended = appended.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut lists = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let before: Vec<(i64, String)> = appended.lock().unwrap().clone();
                let mut q = AuditQuery::range(t0, t0 + chrono::Duration::minutes(1), 1000);
                q.oldest_first = true;
                let page = reader.list_audit(&q).await.unwrap();
                let listed: Vec<(i64, String)> = page
                    .items
                    .iter()
                    .map(|e| (e.at.timestamp_millis(), e.id.clone()))
                    .collect();
                let unique: std::collections::HashSet<_> = listed.iter().collect();
                assert_eq!(unique.len(), listed.len(), "an event listed twice");
                for e in &before {
                    assert!(unique.contains(e), "an appended event missing: {e:?}");
                }
                lists += 1;
            }
            lists
        })
    };
    for w in writers {
        w.await.unwrap();
    }
    a.purge_audit(t0).await.unwrap();
    b.purge_audit(t0).await.unwrap();
    done.store(true, std::sync::atomic::Ordering::Release);
    assert!(lister.await.unwrap() > 0);
    assert_eq!(audit_counts(&path), (0, 600));
}

/// The audit log's file lost (deleted while stopped): the store opens with an empty one and
/// goes on logging; the main file's data is all there.
#[tokio::test]
async fn a_lost_audit_file_is_made_again() {
    use storage::{AuditEvent, AuditQuery, AuditStore, UserStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lost.db");
    let u = contract::user("lost@example.com");
    {
        let s = SqliteStore::open(&path).await.unwrap();
        s.create_user(&u, None, &[]).await.unwrap();
        let e = AuditEvent::new("user.sign-in", chrono::Utc::now());
        s.append_audit(&e, std::time::Duration::from_secs(60))
            .await
            .unwrap();
        s.purge_audit(chrono::Utc::now() - chrono::Duration::hours(1))
            .await
            .unwrap();
        assert_eq!(audit_counts(&path), (0, 1));
    }
    for suffix in ["-audit", "-audit-wal", "-audit-shm"] {
        let mut f = path.as_os_str().to_owned();
        f.push(suffix);
        let _ = std::fs::remove_file(std::path::Path::new(&f));
    }
    let s = SqliteStore::open(&path).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap(), Some(u));
    let t = chrono::Utc::now();
    let e = AuditEvent::new("user.sign-out", t);
    s.append_audit(&e, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    s.purge_audit(t - chrono::Duration::hours(1)).await.unwrap();
    let q = AuditQuery::range(
        t - chrono::Duration::hours(1),
        t + chrono::Duration::hours(1),
        10,
    );
    let ids: Vec<String> = s
        .list_audit(&q)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, [e.id]);
    assert_eq!(audit_counts(&path), (0, 1));
}

/// Purges while events are appended and moved under the indexes one at a time: each event is
/// purged once and counted once (a move between the purge's two tables would have an event
/// in both, copied and not yet deleted).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn purges_during_moves_count_each_event_once() {
    use storage::{AuditEvent, AuditStore};
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("test.db")).await.unwrap());
    store.set_audit_batch(1);
    let old = chrono::Utc::now() - chrono::Duration::days(30);
    let appends = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 0..300 {
                let e = AuditEvent::new("user.sign-in", old + chrono::Duration::seconds(i));
                store
                    .append_audit(&e, std::time::Duration::from_secs(86_400))
                    .await
                    .unwrap();
            }
        })
    };
    let cut = chrono::Utc::now() - chrono::Duration::days(1);
    let mut purged = 0;
    while !appends.is_finished() {
        purged += store.purge_audit(cut).await.unwrap();
    }
    appends.await.unwrap();
    purged += store.purge_audit(cut).await.unwrap();
    assert_eq!(purged, 300);
}
