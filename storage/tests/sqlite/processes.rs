//! Another *process* on the same SQLite file (the command line run beside the server, or a
//! second server): its open leaves this process's use of the file alone, and what it commits
//! is what this process reads next.
use crate::contract::{session, user};
use std::path::Path;
use storage::sqlite::SqliteStore;
use storage::*;

/// What the child process is told to do: `<db path>\n<user id>\n<session token>`.
const CHILD: &str = "GATEHOUSE_STORAGE_TEST_CHILD";

/// Whether this process holds a read lock on byte 128 of `file` (SQLite's "a connection of this
/// process uses the WAL index" lock on the `-shm` file), per the kernel's lock table.
fn holds_index_lock(file: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(file).unwrap().ino().to_string();
    let me = std::process::id().to_string();
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    locks.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // "1: POSIX  ADVISORY  READ 4242 fe:00:1234 128 128"
        f.len() >= 8
            && f[1] == "POSIX"
            && f[3] == "READ"
            && f[4] == me
            && f[5].rsplit(':').next() == Some(inode.as_str())
            && f[6].parse::<u64>().is_ok_and(|s| s <= 128)
            && (f[7] == "EOF" || f[7].parse::<u64>().is_ok_and(|e| e >= 128))
    })
}

/// Runs `child_process_changes_the_user_and_revokes_the_session` in a new process of this
/// test binary, on `db`.
async fn child(db: &Path, u: &User, token: &str) {
    let task = format!("{}\n{}\n{token}", db.display(), u.id.0);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "processes::child_process_changes_the_user_and_revokes_the_session",
                "--exact",
                "--ignored",
                "--test-threads=1",
            ])
            .env(CHILD, task)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("1 passed"),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The child's part (ignored in a normal run; `child` runs it with its task).
#[tokio::test]
#[ignore = "run by `child`, in another process"]
async fn child_process_changes_the_user_and_revokes_the_session() {
    let Ok(task) = std::env::var(CHILD) else {
        return;
    };
    let [db, id, token] = task.splitn(3, '\n').collect::<Vec<_>>()[..] else {
        panic!("bad task {task:?}");
    };
    let s = SqliteStore::open(db).await.unwrap();
    let mut u = s.get_user(&UserId(id.into())).await.unwrap().unwrap();
    u.role = Some("admin".into());
    u.version += 1;
    s.update_user(&u, &[]).await.unwrap();
    assert!(s.delete_session(token, &[]).await.unwrap());
}

#[tokio::test]
async fn another_process_leaves_the_index_alone_and_its_commits_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let s = SqliteStore::open(&db).await.unwrap();
    let u = user("a@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let (x, y) = (session(&u), session(&u));
    s.create_session(&x, &[]).await.unwrap();
    s.create_session(&y, &[]).await.unwrap();
    // Read more than once: a read path that keeps what it read gets its chance to.
    for _ in 0..3 {
        assert_eq!(s.get_session(&x.token).await.unwrap(), Some(x.clone()));
        let (_, found) = s.get_session_with_user(&y.token).await.unwrap().unwrap();
        assert_eq!(found.unwrap().role, None);
    }
    // Both are answered without a read by now (the store keeps sessions it read while no
    // commit changed them: `known.rs`).
    for _ in 0..200 {
        let before = s.op_counts().0;
        s.get_session(&x.token).await.unwrap();
        s.get_session_with_user(&y.token).await.unwrap();
        if s.op_counts().0 == before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let before = s.op_counts().0;
    assert!(s.get_session_with_user(&y.token).await.unwrap().is_some());
    assert_eq!(s.op_counts().0, before, "held without a read");
    let shm = dir.path().join("t.db-shm");
    assert!(holds_index_lock(&shm), "this process's index lock is held");

    child(&db, &u, &x.token).await;
    assert!(
        holds_index_lock(&shm),
        "still held after another process came and went"
    );
    assert_eq!(s.get_session(&x.token).await.unwrap(), None);
    let (_, found) = s.get_session_with_user(&y.token).await.unwrap().unwrap();
    assert_eq!(found.unwrap().role.as_deref(), Some("admin"));
    // And this process's own writes go on on the same index.
    let z = session(&u);
    s.create_session(&z, &[]).await.unwrap();
    assert_eq!(s.get_session(&z.token).await.unwrap(), Some(z));
}
