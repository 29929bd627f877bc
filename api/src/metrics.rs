//! Prometheus metrics of one server process, in Prometheus' text format at `/metrics` on
//! `metrics_listen` (a separate address, off the public port; off by default). Routes are
//! labelled by their template (`/callback/:id`), never by a raw path, so the label sets stay
//! few; nothing user-chosen is ever a label.
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Every metric Gatehouse keeps.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// Requests by route template, method and status.
    pub requests: IntCounterVec,
    /// Request latency by route template, seconds.
    pub latency: HistogramVec,
    /// Email + password sign-ins by outcome (`success`, `invalid`, `unverified`, `limited`).
    pub sign_ins: IntCounterVec,
    /// Password hashes waiting for or running on the hashing threads.
    pub hash_queue: IntGauge,
    /// Time of one argon2 hash or verification, seconds.
    pub hash_seconds: Histogram,
    /// Live actors by kind (`user`, `organization`), read at each scrape.
    pub actors: IntGaugeVec,
    /// Mails by kind and outcome (`written`, `sent`, `failed`).
    pub mails: IntCounterVec,
    /// Requests refused by the rate limiter, by what limited them (`path`, `sign_in`, `mail`).
    pub rate_limited: IntCounterVec,
    /// Store errors seen by request handlers, by kind (`unavailable`, `internal`, …): the
    /// process-wide [`store_errors`] counter.
    pub store_errors: IntCounterVec,
    /// Store round trips by backend, kind of call and outcome, seconds: the process-wide
    /// [`store_calls`] histogram.
    pub store_calls: HistogramVec,
    /// Audit events the store could not take.
    pub audit_failures: prometheus::IntCounter,
    /// Domain events by name, counted by the events consumer ([`EventCounter`]): each event
    /// by one process of a deployment (sum over the processes).
    pub events: IntCounterVec,
    /// Requests made with an API key, by outcome (`ok`, or the refusal's code).
    pub api_key_requests: IntCounterVec,
    /// Webhook delivery attempts by outcome (`succeeded`, `retried`, `failed`).
    pub webhook_attempts: IntCounterVec,
    /// Seconds since the oldest undelivered webhook delivery was made (0: none waiting).
    pub webhook_lag: IntGauge,
}

/// The metrics consumer of the event stream: counts domain events by name.
pub struct EventCounter(pub IntCounterVec);

#[async_trait::async_trait]
impl actors::consumers::Consume for EventCounter {
    async fn handle(&self, events: &[storage::Delivery]) -> usize {
        for d in events {
            if let storage::Payload::Domain { name, .. } = &d.event.payload {
                self.0.with_label_values(&[name.as_str()]).inc();
            }
        }
        events.len()
    }
}

/// Store errors of this process by kind, counted where they become answers
/// (`crate::error`), wherever the store was called from.
pub fn store_errors() -> Option<&'static IntCounterVec> {
    static COUNTER: std::sync::OnceLock<Option<IntCounterVec>> = std::sync::OnceLock::new();
    COUNTER
        .get_or_init(|| {
            IntCounterVec::new(
                Opts::new(
                    "store_errors_total",
                    "Store errors seen by request handlers",
                )
                .namespace("gatehouse"),
                &["kind"],
            )
            .ok()
        })
        .as_ref()
}

/// Store round trips of this process (see `storage::observe`), by backend, kind of call
/// (`read`/`write`; `query`/`serial`/`batch`) and outcome (`ok`, `error`).
pub fn store_calls() -> Option<&'static HistogramVec> {
    static HISTOGRAM: std::sync::OnceLock<Option<HistogramVec>> = std::sync::OnceLock::new();
    HISTOGRAM
        .get_or_init(|| {
            let h = HistogramVec::new(
                HistogramOpts::new("store_call_seconds", "Store round trips, seconds")
                    .namespace("gatehouse")
                    .buckets(vec![
                        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                        0.25, 1.0,
                    ]),
                &["backend", "call", "outcome"],
            )
            .ok()?;
            storage::observe::set_observer(|backend, call, secs, ok| {
                if let Some(h) = store_calls() {
                    let outcome = if ok { "ok" } else { "error" };
                    h.with_label_values(&[backend, call, outcome]).observe(secs);
                }
            });
            Some(h)
        })
        .as_ref()
}

/// Counts one store error of `kind`.
pub fn count_store_error(kind: &str) {
    if let Some(c) = store_errors() {
        c.with_label_values(&[kind]).inc();
    }
}

impl Metrics {
    /// The metrics, registered (fails only on a malformed definition in this file).
    pub fn new() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let latency = HistogramOpts::new(
            "gatehouse_http_request_duration_seconds",
            "HTTP request latency",
        )
        .buckets(vec![
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
        ]);
        let hash = HistogramOpts::new(
            "gatehouse_password_hash_seconds",
            "Time of one argon2 hash or verification",
        )
        .buckets(vec![0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5]);
        let m = Self {
            requests: IntCounterVec::new(
                Opts::new(
                    "gatehouse_http_requests_total",
                    "HTTP requests by route, method and status",
                ),
                &["route", "method", "status"],
            )?,
            latency: HistogramVec::new(latency, &["route"])?,
            sign_ins: IntCounterVec::new(
                Opts::new(
                    "gatehouse_sign_ins_total",
                    "Email and password sign-ins by outcome",
                ),
                &["outcome"],
            )?,
            hash_queue: IntGauge::new(
                "gatehouse_password_hash_queue",
                "Password hashes waiting for or running on the hashing threads",
            )?,
            hash_seconds: Histogram::with_opts(hash)?,
            actors: IntGaugeVec::new(
                Opts::new("gatehouse_actors_live", "Live actors by kind"),
                &["kind"],
            )?,
            mails: IntCounterVec::new(
                Opts::new("gatehouse_mails_total", "Mails by kind and outcome"),
                &["kind", "outcome"],
            )?,
            rate_limited: IntCounterVec::new(
                Opts::new(
                    "gatehouse_rate_limited_total",
                    "Requests refused by the rate limiter",
                ),
                &["limit"],
            )?,
            store_calls: store_calls().cloned().ok_or_else(|| {
                prometheus::Error::Msg("the store call histogram could not be made".into())
            })?,
            audit_failures: prometheus::IntCounter::new(
                "gatehouse_audit_failures_total",
                "Audit events the store could not take",
            )?,
            events: IntCounterVec::new(
                Opts::new(
                    "gatehouse_events_total",
                    "Domain events by name (each counted by one process)",
                ),
                &["name"],
            )?,
            api_key_requests: IntCounterVec::new(
                Opts::new(
                    "gatehouse_api_key_requests_total",
                    "Requests made with an API key, by outcome",
                ),
                &["outcome"],
            )?,
            webhook_attempts: IntCounterVec::new(
                Opts::new(
                    "gatehouse_webhook_attempts_total",
                    "Webhook delivery attempts by outcome (succeeded, retried, failed)",
                ),
                &["outcome"],
            )?,
            webhook_lag: IntGauge::new(
                "gatehouse_webhook_lag_seconds",
                "Age of the oldest webhook delivery not yet delivered, seconds",
            )?,
            store_errors: store_errors().cloned().ok_or_else(|| {
                prometheus::Error::Msg("the store error counter could not be made".into())
            })?,
            registry,
        };
        let collectors: Vec<Box<dyn prometheus::core::Collector>> = vec![
            Box::new(m.requests.clone()),
            Box::new(m.latency.clone()),
            Box::new(m.sign_ins.clone()),
            Box::new(m.hash_queue.clone()),
            Box::new(m.hash_seconds.clone()),
            Box::new(m.actors.clone()),
            Box::new(m.mails.clone()),
            Box::new(m.rate_limited.clone()),
            Box::new(m.store_errors.clone()),
            Box::new(m.audit_failures.clone()),
            Box::new(m.events.clone()),
            Box::new(m.api_key_requests.clone()),
            Box::new(m.webhook_attempts.clone()),
            Box::new(m.webhook_lag.clone()),
            Box::new(m.store_calls.clone()),
        ];
        for c in collectors {
            m.registry.register(c)?;
        }
        Ok(m)
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_exposed_with_the_prefix() {
        let m = Metrics::new().unwrap();
        m.requests.with_label_values(&["/ok", "GET", "200"]).inc();
        m.latency.with_label_values(&["/ok"]).observe(0.001);
        m.sign_ins.with_label_values(&["success"]).inc();
        m.hash_seconds.observe(0.05);
        m.actors.with_label_values(&["user"]).set(2);
        m.mails
            .with_label_values(&["verify-email", "written"])
            .inc();
        m.rate_limited.with_label_values(&["path"]).inc();
        m.events.with_label_values(&["user.created"]).inc();
        count_store_error("unavailable");
        let text = m.render();
        for name in [
            "gatehouse_http_requests_total{method=\"GET\",route=\"/ok\",status=\"200\"} 1",
            "gatehouse_http_request_duration_seconds_bucket",
            "gatehouse_sign_ins_total{outcome=\"success\"} 1",
            "gatehouse_password_hash_queue 0",
            "gatehouse_password_hash_seconds_count 1",
            "gatehouse_actors_live{kind=\"user\"} 2",
            "gatehouse_mails_total",
            "gatehouse_rate_limited_total{limit=\"path\"} 1",
            "gatehouse_store_errors_total{kind=\"unavailable\"}",
            "gatehouse_events_total{name=\"user.created\"} 1",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
    }
}
