//! Event consumers in two processes: each event handled once per consumer.

use super::*;

/// Counts every event a consumer is handed, by event id.
struct Counting(std::sync::Mutex<std::collections::HashMap<String, u32>>);

#[async_trait::async_trait]
impl actors::consumers::Consume for Counting {
    async fn handle(&self, events: &[Delivery]) -> usize {
        let mut seen = self.0.lock().unwrap();
        for d in events {
            *seen.entry(d.event.id.clone()).or_default() += 1;
        }
        events.len()
    }
}

/// The same consumer running in both processes (each with its own store connection) is
/// handed each event once in all, while events are written from both: the lease lets one
/// process read a shard at a time, and its recorded progress is where the other goes on.
pub(super) async fn two_consumers_handle_each_event_once(backend: Backend) {
    use actors::consumers::{spawn, ConsumerSpec};
    use std::time::Duration;
    let Some(t) = two(backend, 100).await else {
        return;
    };
    let spec = ConsumerSpec {
        name: "counting".into(),
        topic: Topic::Domain,
        batch: 16,
        poll: Duration::from_millis(20),
        // Longer than any round takes on a loaded machine: a lease that runs out mid-round is
        // the case where a consumer may hand an event over again (at least once).
        lease: Duration::from_secs(5),
        shared: true,
        names_only: false,
    };
    let counted = Arc::new(Counting(Default::default()));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    // Each process's consumer runs on its own connection; both count into one table.
    let ca = spawn(
        t.a.store(),
        clock.clone(),
        "a".into(),
        spec.clone(),
        counted.clone(),
    );
    let cb = spawn(
        t.b.store(),
        clock.clone(),
        "b".into(),
        spec,
        counted.clone(),
    );
    let mut ids = Vec::new();
    for i in 0..120u32 {
        let store = if i % 2 == 0 { t.a.store() } else { t.b.store() };
        let e = Event::new(
            format!("org:{}", i % 7),
            SystemClock.now(),
            Payload::Domain {
                name: "team.created".into(),
                data: serde_json::json!({ "i": i }).into(),
            },
        );
        ids.push(e.id.clone());
        store.append_events(&[e]).await.unwrap();
        if i % 40 == 0 {
            ca.wake();
            cb.wake();
        }
    }
    // A backend may hold recent events back for a few seconds (see `storage::scylla`).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        ca.wake();
        cb.wake();
        let done = counted.0.lock().unwrap().len() >= ids.len();
        if done || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ca.stop();
    cb.stop();
    let seen = counted.0.lock().unwrap();
    for id in &ids {
        assert_eq!(seen.get(id), Some(&1), "event {id}");
    }
    assert_eq!(seen.len(), ids.len());
}
