//! The writer thread (see the module comment of `sqlite`).
use super::*;

/// The writer thread: owns the write connection and runs the queued writes.
///
/// A write that finds others queued behind it commits with them: one `BEGIN IMMEDIATE`, each
/// write inside its own savepoint, one `COMMIT` for up to [`GROUP_MAX`] writes, then every
/// answer. A commit (its WAL frames, and their sync when the log is checkpointed) costs more
/// than a typical write, and pages several writes change (an index's, the audit table's last)
/// are written once. A write sees exactly what it would see alone (the writes before it,
/// committed or in the group), and its answer is given only once the group committed, so no
/// caller hears of a change that is not in the file. Each write keeps what it would keep alone:
/// one that fails keeps what it wrote before failing, as autocommit statements would (the
/// stores' writes that must be all-or-nothing use their own savepoint); one that panics is
/// rolled back to its savepoint. When SQLite itself ends the transaction (a full disk, an I/O
/// error), every write of the group is answered with that error. When the group cannot begin
/// (another process holds the write lock past the busy timeout), the write runs on its own and
/// meets the error itself.
pub(super) fn writer_thread(
    mut conn: Connection,
    queue: &std::sync::mpsc::Receiver<WriteJob>,
    commits: &AtomicUsize,
    checkpoints: Option<&checkpoint::Checkpoints>,
    known: Option<&known::Known>,
) {
    let mut held = None;
    loop {
        if let Some(c) = checkpoints {
            // After the previous job or group (the first time, after the migrations).
            c.after_commit(&conn);
        }
        let job = match held.take() {
            Some(job) => job,
            None => match receive(queue, checkpoints, known, &conn) {
                Some(job) => job,
                None => return,
            },
        };
        if job.alone || control(&conn, "BEGIN IMMEDIATE").is_err() {
            let deliver = run_caught(&mut conn, job);
            // Whatever the write left open (a bug, or a panic) is rolled back.
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            if let Some(k) = known {
                k.after_writes(&conn);
            }
            if let Some(deliver) = deliver {
                deliver(Ok(()));
            }
            continue;
        }
        let mut answers: Vec<Deliver> = Vec::new();
        let mut next = Some(job);
        let mut ended = None;
        while let Some(job) = next.take() {
            if let Err(e) = control(&conn, "SAVEPOINT grouped") {
                // Not run here: it runs next, on its own (it cannot fail this way twice).
                ended = Some(map_err(e));
                held = Some(WriteJob { alone: true, ..job });
                break;
            }
            let deliver = run_caught(&mut conn, job);
            if conn.is_autocommit() {
                ended = Some(StoreError::Unavailable(
                    "SQLite ended the transaction of a group of writes".into(),
                ));
                answers.extend(deliver);
                break;
            }
            let closed = match deliver {
                Some(deliver) => {
                    answers.push(deliver);
                    control(&conn, "RELEASE grouped")
                }
                None => conn.execute_batch("ROLLBACK TO grouped; RELEASE grouped"),
            };
            if let Err(e) = closed {
                ended = Some(map_err(e));
                break;
            }
            if answers.len() < GROUP_MAX {
                match queue.try_recv() {
                    Ok(job) if job.alone => held = Some(job),
                    Ok(job) => next = Some(job),
                    Err(_) => {}
                }
            }
        }
        let outcome = match ended {
            Some(e) => Err(e),
            None => control(&conn, "COMMIT").map_err(map_err),
        };
        if outcome.is_ok() {
            commits.fetch_add(1, Ordering::Relaxed);
        } else if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        // Before any caller hears of a session it changed (see `known.rs`).
        if let Some(k) = known {
            k.after_writes(&conn);
        }
        for deliver in answers {
            deliver(outcome.clone());
        }
    }
}

/// The next write; `None` once the store is gone. When none comes for `checkpoint::IDLE`,
/// the log is copied first if it is due (see [`checkpoint::Checkpoints::idle`]), and other
/// connections' commits are accounted for (see `known.rs`).
fn receive(
    queue: &std::sync::mpsc::Receiver<WriteJob>,
    checkpoints: Option<&checkpoint::Checkpoints>,
    known: Option<&known::Known>,
    conn: &Connection,
) -> Option<WriteJob> {
    use std::sync::mpsc::RecvTimeoutError;
    if checkpoints.is_some() || known.is_some() {
        match queue.recv_timeout(checkpoint::IDLE) {
            Ok(job) => return Some(job),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {
                if let Some(c) = checkpoints {
                    c.idle();
                }
                if let Some(k) = known {
                    k.after_writes(conn);
                }
            }
        }
    }
    queue.recv().ok()
}

/// Runs a write; `None` when it panicked (a bug: its caller is answered `Internal` when the
/// dropped answer channel tells it so, and the thread goes on).
fn run_caught(conn: &mut Connection, job: WriteJob) -> Option<Deliver> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (job.run)(conn))).ok()
}
