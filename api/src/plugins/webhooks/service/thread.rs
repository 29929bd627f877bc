//! The thread deliveries run on, apart from the requests' workers, and how they make way for
//! requests when the process is busy (`webhooks.thread_nice`, `webhooks.yield_above_requests`).
use super::fan_out::FanOut;
use super::*;

/// A running fan-out and sender (see [`Webhooks::start`]); dropped, they stop.
pub struct Running {
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Waits while `load()` is above `above` (never when `above` is 0), looking again every
/// [`BUSY_CHECK`], for at most `most`.
async fn wait_while_busy(above: usize, most: Duration, load: impl Fn() -> usize) {
    if above == 0 {
        return;
    }
    let start = Instant::now();
    while load() > above && start.elapsed() < most {
        tokio::time::sleep(BUSY_CHECK.min(most)).await;
    }
}

/// How often a yielding delivery looks whether the requests eased.
const BUSY_CHECK: Duration = Duration::from_millis(10);

impl Webhooks {
    /// Starts this process's fan-out and sender (none when `webhooks.enabled` is off: the
    /// routes still answer, nothing is delivered) on a thread of their own, at the priority
    /// `webhooks.thread_nice` sets: the HTTP connections, timers and store reads of deliveries
    /// then run there too, not among the requests. They stop when the [`Running`] is dropped.
    pub fn start(&self) -> Option<Running> {
        if !self.config.enabled {
            return None;
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let me = self.clone();
        let nice = self.config.thread_nice;
        let thread = std::thread::Builder::new()
            .name("gatehouse-webhooks".into())
            .spawn(move || {
                if nice > 0 {
                    crate::crypto::lower_this_threads_priority(nice, "webhook delivery");
                }
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .thread_name("gatehouse-webhooks-io")
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        tracing::error!(error = %e, "webhooks: no runtime for deliveries; none are sent by this process");
                        return;
                    }
                };
                rt.block_on(async move {
                    let fan_out = me.spawn_fan_out();
                    let sender = me.spawn_sender();
                    // Until the service is dropped (the sender's end goes away).
                    let _ = stopped.await;
                    fan_out.stop();
                    sender.abort();
                });
                rt.shutdown_timeout(Duration::from_secs(1));
            });
        if let Err(e) = thread {
            tracing::error!(error = %e, "webhooks: no thread for deliveries; none are sent by this process");
            return None;
        }
        Some(Running { _stop: stop })
    }

    /// Waits while this process handles more requests than `webhooks.yield_above_requests`
    /// (see there), at most `webhooks.yield_most_ms`.
    pub(super) async fn yield_to_requests(&self) {
        wait_while_busy(
            self.config.yield_above_requests,
            Duration::from_millis(self.config.yield_most_ms),
            crate::server::requests_in_flight,
        )
        .await
    }

    /// The fan-out consumer, on the current runtime.
    fn spawn_fan_out(&self) -> actors::consumers::ConsumerHandle {
        actors::consumers::spawn(
            self.store.clone(),
            self.clock.clone(),
            storage::random_string(16),
            Self::fan_out_spec(),
            Arc::new(FanOut(self.clone())),
        )
    }

    /// The consumer that stores deliveries (see the module).
    fn fan_out_spec() -> ConsumerSpec {
        ConsumerSpec {
            name: "webhooks".into(),
            topic: Topic::Domain,
            batch: 200,
            poll: Duration::from_secs(1),
            // Renewed every round: a process killed mid-way hands its shards over soon.
            lease: Duration::from_secs(10),
            shared: true,
            names_only: false,
        }
    }

    /// Starts the sender: leases due deliveries and sends them until it is stopped.
    fn spawn_sender(&self) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut lag_checked = Instant::now() - Duration::from_secs(60);
            let mut backoff = actors::consumers::Backoff::new(Duration::from_millis(500));
            loop {
                let sent = match me.round().await {
                    Ok(n) => {
                        backoff.succeeded(|| "webhook deliveries".into());
                        n
                    }
                    Err(e) => {
                        let wait = backoff.failed(&e, || "webhook deliveries".into());
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                };
                if lag_checked.elapsed() >= Duration::from_secs(5) {
                    lag_checked = Instant::now();
                    if let Ok(oldest) = me.store.oldest_pending_delivery().await {
                        let lag = oldest.map_or(0, |t| (me.clock.now() - t).num_seconds().max(0));
                        me.metrics.lag.set(lag);
                    }
                }
                if sent == 0 {
                    let _ =
                        tokio::time::timeout(Duration::from_millis(500), me.wake.notified()).await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delivery waits while the load is above the bound, goes on once it eases, never
    /// waits longer than its most, and never waits when the bound is 0.
    #[tokio::test]
    async fn deliveries_wait_while_requests_are_many() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let load = Arc::new(AtomicUsize::new(20));
        let eases = load.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            eases.store(3, Ordering::Relaxed);
        });
        let start = Instant::now();
        wait_while_busy(8, Duration::from_secs(5), || load.load(Ordering::Relaxed)).await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert!(waited < Duration::from_secs(4), "{waited:?}");

        let start = Instant::now();
        wait_while_busy(8, Duration::from_millis(120), || 50).await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(120), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");

        let start = Instant::now();
        wait_while_busy(0, Duration::from_secs(5), || 50).await;
        wait_while_busy(8, Duration::from_secs(5), || 8).await;
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
