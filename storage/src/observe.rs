//! How long store calls take, for whoever wants to know (the server's metrics): one
//! process-wide observer, called after every backend round trip with the backend, the kind of
//! call and whether it succeeded. Nothing is measured until one is set.
use std::sync::OnceLock;
use std::time::Instant;

/// `(backend, call, seconds, ok)`: `backend` is `sqlite` or `scylla`; `call` is `read` or
/// `write` (SQLite), `query`, `serial` (a read at the serial consistency), `lwt` (a conditional
/// statement: a lightweight transaction), `batch` or `batch_lwt` (a conditional batch) on
/// ScyllaDB.
pub type Observer = fn(&'static str, &'static str, f64, bool);

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Sets the observer (the first call wins: a process has one metrics registry for it).
pub fn set_observer(f: Observer) {
    let _ = OBSERVER.set(f);
}

/// When a call started, if anyone is watching.
pub(crate) fn start() -> Option<Instant> {
    OBSERVER.get().map(|_| Instant::now())
}

pub(crate) fn done(backend: &'static str, call: &'static str, started: Option<Instant>, ok: bool) {
    if let (Some(f), Some(t)) = (OBSERVER.get(), started) {
        f(backend, call, t.elapsed().as_secs_f64(), ok);
    }
}
