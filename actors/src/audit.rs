//! The audit writer: events are written in groups. A request that records an event hands it
//! over and waits until it is stored (nothing is acknowledged before it is written); while the
//! store is busy with one group, the events of other requests gather into the next, so under
//! load many events share one write (one SQLite transaction) instead of queueing one write
//! each behind the single writer connection.
use storage::{AuditEvent, DynStore, StoreError, StoreResult};
use tokio::sync::{mpsc, oneshot};

/// At most this many events go into one write.
const GROUP: usize = 256;

struct Pending {
    event: AuditEvent,
    keep_for: std::time::Duration,
    done: oneshot::Sender<StoreResult<()>>,
}

/// The handle requests record events through.
pub(crate) struct AuditWriter {
    tx: mpsc::Sender<Pending>,
}

impl AuditWriter {
    /// Starts the writer task (it ends when the last handle is dropped).
    pub(crate) fn start(store: DynStore) -> Self {
        let (tx, mut rx) = mpsc::channel::<Pending>(4 * GROUP);
        tokio::spawn(async move {
            let mut group: Vec<Pending> = Vec::with_capacity(GROUP);
            while let Some(first) = rx.recv().await {
                group.push(first);
                while group.len() < GROUP {
                    match rx.try_recv() {
                        Ok(p) => group.push(p),
                        Err(_) => break,
                    }
                }
                // One write per retention (there is one, unless it was reconfigured).
                while !group.is_empty() {
                    let keep_for = group[0].keep_for;
                    let (now, later): (Vec<Pending>, Vec<Pending>) =
                        group.drain(..).partition(|p| p.keep_for == keep_for);
                    group = later;
                    let events: Vec<AuditEvent> = now.iter().map(|p| p.event.clone()).collect();
                    let r = store.append_audit_batch(&events, keep_for).await;
                    for p in now {
                        let _ = p.done.send(r.clone());
                    }
                }
            }
        });
        Self { tx }
    }

    /// Stores `event` (with the next group) and answers once it is written.
    pub(crate) async fn record(
        &self,
        event: AuditEvent,
        keep_for: std::time::Duration,
    ) -> StoreResult<()> {
        let (done, written) = oneshot::channel();
        let pending = Pending {
            event,
            keep_for,
            done,
        };
        self.tx
            .send(pending)
            .await
            .map_err(|_| StoreError::Unavailable("the audit writer has stopped".into()))?;
        written
            .await
            .map_err(|_| StoreError::Unavailable("the audit writer has stopped".into()))?
    }
}
