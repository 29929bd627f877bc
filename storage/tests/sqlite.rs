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
        s.create_user(&u, None).await.unwrap();
    }
    let s = SqliteStore::open(&path).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap(), Some(u));
}
