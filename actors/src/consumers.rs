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
    /// `true`: one process at a time handles each shard, with progress in the store (an event
    /// is handled once per deployment). `false`: every process handles every event from the
    /// moment it starts, with its progress in memory (a process's own caches).
    pub shared: bool,
    /// `true`: its handler reads only each event's name and aggregate, so the store may leave
    /// the payloads' objects out ([`storage::EventStore::read_event_names`]).
    pub names_only: bool,
}

impl ConsumerSpec {
    /// Reads the next events of `shard` after `after` the way this consumer needs them.
    async fn read(
        &self,
        store: &DynStore,
        shard: u32,
        after: Option<&str>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> storage::StoreResult<storage::Read> {
        if self.names_only {
            store
                .read_event_names(self.topic, shard, after, self.batch, now)
                .await
        } else {
            store
                .read_events(self.topic, shard, after, self.batch, now)
                .await
        }
    }
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
        let shards = store.event_shards();
        // A process's own consumer starts at the stream's head, once it knows it.
        let mut own: Vec<Option<Option<String>>> = vec![None; shards as usize];
        let mut backoff = Backoff::new(spec.poll);
        loop {
            let mut failed = None;
            for shard in 0..shards {
                let r = if spec.shared {
                    round(&store, &clock, &holder, &spec, shard, &handler).await
                } else {
                    own_round(
                        &store,
                        &clock,
                        &spec,
                        shard,
                        &handler,
                        &mut own[shard as usize],
                    )
                    .await
                };
                if let Err(e) = r {
                    failed.get_or_insert((shard, e));
                }
            }
            match failed {
                // A failing store is asked again later and later, not woken by every write.
                Some((shard, e)) => {
                    let wait = backoff.failed(&e, || {
                        format!("event consumer {} (shard {shard})", spec.name)
                    });
                    tokio::time::sleep(wait).await;
                }
                None => {
                    backoff.succeeded(|| format!("event consumer {}", spec.name));
                    let _ = tokio::time::timeout(spec.poll, woken.notified()).await;
                }
            }
        }
    });
    ConsumerHandle {
        wake,
        task: Arc::new(task),
    }
}

/// How a background loop waits after failed rounds: doubling from its usual pause up to
/// [`Backoff::MAX`], with one warning when the failures start and one line when they end (the
/// failures between are debug lines), so a store that is down neither floods the log nor is
/// asked in a tight loop.
pub struct Backoff {
    first: Duration,
    failures: u32,
}

impl Backoff {
    /// The longest wait between two tries.
    pub const MAX: Duration = Duration::from_secs(5);

    pub fn new(first: Duration) -> Self {
        Self {
            first: first.max(Duration::from_millis(50)),
            failures: 0,
        }
    }

    /// A round failed: says so (a warning the first time), and how long to wait.
    pub fn failed(&mut self, e: &dyn std::fmt::Display, what: impl FnOnce() -> String) -> Duration {
        if self.failures == 0 {
            tracing::warn!(error = %e, "{}: a round failed; retrying with backoff", what());
        } else {
            tracing::debug!(error = %e, failures = self.failures + 1, "{}: a round failed", what());
        }
        self.failures = self.failures.saturating_add(1);
        self.first
            .saturating_mul(1 << (self.failures - 1).min(16))
            .min(Self::MAX)
    }

    /// A round went through: after failures, says the loop recovered.
    pub fn succeeded(&mut self, what: impl FnOnce() -> String) {
        if self.failures > 0 {
            tracing::info!(failures = self.failures, "{}: working again", what());
            self.failures = 0;
        }
    }
}

/// Drops what this process's caches hold that another process's decisions changed (its own
/// decisions drop them before they answer): an organization's events drop its view; a change
/// of a user drops that user from the sessions' user cache and every view (a user shows in
/// organizations' member lists).
pub(crate) struct CacheInvalidation {
    pub(crate) views: Arc<crate::views::ViewCache>,
    pub(crate) users: Arc<crate::cache::UserCache>,
}

#[async_trait::async_trait]
impl Consume for CacheInvalidation {
    async fn handle(&self, events: &[Delivery]) -> usize {
        for d in events {
            let storage::Payload::Domain { name, .. } = &d.event.payload else {
                continue;
            };
            if let Some(org) = d.event.aggregate.strip_prefix("org:") {
                self.views.drop_org(&storage::OrgId(org.to_owned()));
            } else if matches!(name.as_str(), "user.updated" | "user.deleted") {
                if let Some(user) = d.event.aggregate.strip_prefix("user:") {
                    self.users.drop_key(&storage::UserId(user.to_owned()));
                }
                self.views.drop_all();
            }
        }
        events.len()
    }
}

impl crate::Actors {
    /// Whether this process caches anything another process's events must drop.
    pub fn caches_enabled(&self) -> bool {
        self.shared.views.enabled() || self.shared.users.enabled()
    }

    /// Starts this process's cache invalidation (see [`CacheInvalidation`]), polling every
    /// `poll`.
    pub fn spawn_cache_invalidation(&self, poll: Duration) -> ConsumerHandle {
        spawn(
            self.shared.store.clone(),
            self.shared.clock.clone(),
            String::new(),
            ConsumerSpec {
                name: "caches".into(),
                topic: Topic::Domain,
                batch: 500,
                poll,
                lease: Duration::ZERO,
                shared: false,
                names_only: true,
            },
            Arc::new(CacheInvalidation {
                views: self.shared.views.clone(),
                users: self.shared.users.clone(),
            }),
        )
    }
}

/// One shard of a process's own consumer: from the head at its start, progress in memory.
async fn own_round(
    store: &DynStore,
    clock: &Arc<dyn Clock>,
    spec: &ConsumerSpec,
    shard: u32,
    handler: &Arc<dyn Consume>,
    position: &mut Option<Option<String>>,
) -> storage::StoreResult<()> {
    let mut at = match position.take() {
        Some(p) => p,
        None => store.event_head(spec.topic, shard).await?,
    };
    let r = async {
        loop {
            let read = spec.read(store, shard, at.as_deref(), clock.now()).await?;
            let done = handler.handle(&read.events).await;
            let next = if done < read.events.len() {
                done.checked_sub(1).map(|i| read.events[i].position.clone())
            } else {
                read.upto.clone()
            };
            match next.filter(|n| Some(n) != at.as_ref()) {
                Some(n) if done == read.events.len() => at = Some(n),
                Some(n) => {
                    at = Some(n);
                    return Ok(());
                }
                None => return Ok(()),
            }
        }
    }
    .await;
    *position = Some(at);
    r
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
        let read = spec
            .read(store, shard, position.as_deref(), clock.now())
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
