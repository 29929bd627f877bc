//! The storage contract on the embedded backend: a real SQLite file in a temp dir per test.
mod contract;

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

/// Appended events wait in `audit_recent` and are moved under `audit_events`' indexes a batch
/// at a time; a purge moves the rest. Each is listed exactly once whichever table holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appended_audit_events_are_moved_under_the_indexes_in_batches() {
    use storage::{AuditEvent, AuditQuery, AuditStore, UserId};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.set_audit_batch(4);
    let counts = || {
        let c = rusqlite::Connection::open(&path).unwrap();
        let n = |t: &str| -> i64 {
            c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        };
        (n("audit_recent"), n("audit_events"))
    };
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
    // once those moves end.
    let mut waited = 0;
    while counts().1 < 8 && waited < 100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 1;
    }
    let (recent, moved) = counts();
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
