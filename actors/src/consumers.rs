//! Consumers of the event stream (see `storage::events`): each reads one topic with its own
//! progress, shard by shard, holding a lease per shard so that of several processes one
//! handles a shard at a time (another takes over when its lease runs out). Events are handed
//! over in order; progress is recorded after they are handled, so a crash in between hands
//! them over again (at least once).
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, Delivery, DynStore, Lease, Topic};

/// What a consumer does with the events it reads.
#[async_trait::async_trait]
pub trait Consume: Send + Sync + 'static {
    /// Handles events in order; answers how many of them are done (the rest, from the first
    /// one not done, come again on the next read: e.g. one too young to handle yet).
    async fn handle(&self, events: &[Delivery]) -> usize;
}

/// How a consumer runs.
#[derive(Debug, Clone)]
pub struct ConsumerSpec {
    /// Its name: its progress and leases are its own.
    pub name: String,
    pub topic: Topic,
    /// Events read at once.
    pub batch: u32,
    /// How often it looks for new events when not woken.
    pub poll: Duration,
    /// How long a lease lasts (renewed on every round).
    pub lease: Duration,
}

/// A running consumer: wake it to look at once.
#[derive(Clone)]
pub struct ConsumerHandle {
    wake: Arc<tokio::sync::Notify>,
    task: Arc<tokio::task::JoinHandle<()>>,
}

impl ConsumerHandle {
    /// Looks for new events now (after a write that emitted some).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

/// Starts `handler` as the consumer `spec` of `store`'s stream, as `holder` (this process).
pub fn spawn(
    store: DynStore,
    clock: Arc<dyn Clock>,
    holder: String,
    spec: ConsumerSpec,
    handler: Arc<dyn Consume>,
) -> ConsumerHandle {
    let wake = Arc::new(tokio::sync::Notify::new());
    let woken = wake.clone();
    let task = tokio::spawn(async move {
        loop {
            for shard in 0..store.event_shards() {
                if let Err(e) = round(&store, &clock, &holder, &spec, shard, &handler).await {
                    tracing::warn!(consumer = %spec.name, shard, error = %e, "event consumer round failed");
                }
            }
            let _ = tokio::time::timeout(spec.poll, woken.notified()).await;
        }
    });
    ConsumerHandle {
        wake,
        task: Arc::new(task),
    }
}

/// One shard: read and hand over until nothing is left, taking (or renewing) the lease before
/// each read, so that a round that goes on holds it throughout.
async fn round(
    store: &DynStore,
    clock: &Arc<dyn Clock>,
    holder: &str,
    spec: &ConsumerSpec,
    shard: u32,
    handler: &Arc<dyn Consume>,
) -> storage::StoreResult<()> {
    let lease = |now: chrono::DateTime<chrono::Utc>| Lease {
        consumer: spec.name.clone(),
        shard,
        holder: holder.to_owned(),
        now,
        until: now
            + chrono::Duration::from_std(spec.lease).unwrap_or(chrono::Duration::seconds(30)),
    };
    loop {
        let Some(position) = store.claim_events(&lease(clock.now())).await? else {
            return Ok(());
        };
        let read = store
            .read_events(
                spec.topic,
                shard,
                position.as_deref(),
                spec.batch,
                clock.now(),
            )
            .await?;
        let done = handler.handle(&read.events).await;
        let next = if done < read.events.len() {
            // Stopped early: progress up to the last event handled.
            done.checked_sub(1).map(|i| read.events[i].position.clone())
        } else {
            read.upto.clone()
        };
        let Some(next) = next.filter(|n| Some(n) != position.as_ref()) else {
            return Ok(());
        };
        if !store.advance_events(&lease(clock.now()), &next).await? {
            // The lease went to another holder: it goes on from what was recorded.
            return Ok(());
        }
        if done < read.events.len() {
            return Ok(());
        }
    }
}
