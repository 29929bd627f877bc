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
