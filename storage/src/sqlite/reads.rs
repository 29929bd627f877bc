//! The threads that run reads which do not run on the calling task (see
//! [`super::SqliteStore::read`]).
//!
//! A fixed number of them, one per read connection, taking reads from one queue: a read waits
//! in the queue, holding no thread, until a reader thread is free. On tokio's blocking pool a
//! waiting read held a thread of its own (its stack, its allocator's pages), so a burst of reads
//! grew the pool by a thread per read (up to hundreds), and a thread handed back its place a
//! moment before it was idle again, so even a bound on the reads in flight did not bound the
//! threads.
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// A read, with the delivery of its answer.
pub(super) type ReadJob = Box<dyn FnOnce() + Send>;

/// Starts `n` threads serving one queue; they end when its sender is dropped (with the store).
pub(super) fn start(n: usize) -> std::io::Result<Sender<ReadJob>> {
    let (jobs, queue) = channel::<ReadJob>();
    let queue = Arc::new(Mutex::new(queue));
    for i in 0..n {
        let queue = queue.clone();
        std::thread::Builder::new()
            .name(format!("sqlite-read-{i}"))
            .spawn(move || serve(&queue))?;
    }
    Ok(jobs)
}

fn serve(queue: &Mutex<Receiver<ReadJob>>) {
    loop {
        // One thread waits in `recv` holding the lock, the others for the lock: a read wakes
        // exactly one thread.
        let job = match queue.lock() {
            Ok(q) => q.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        // A read that panics (a bug) drops its answer's sender, so its caller is answered
        // `Internal`; the thread goes on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}
