//! Webhooks (`[webhooks]`): how events reach the endpoints tenants register.
use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhooksConfig {
    /// Deliver events to registered endpoints (the routes answer either way).
    pub enabled: bool,
    /// Seconds to wait before each retry of a failed delivery; after the last one the
    /// delivery has failed (`GATEHOUSE_WEBHOOKS__RETRY_DELAYS="[1, 1, 2, 5]"`).
    pub retry_delays: Vec<u64>,
    /// How long an endpoint has to answer, connection included (ms).
    pub timeout_ms: u64,
    /// Accept `http://` endpoints (only `https://` by default).
    pub allow_http: bool,
    /// Accept endpoints on private, loopback, link-local and metadata addresses (refused by
    /// default, checked on the address connected to, not only when the URL is saved).
    pub allow_private_addresses: bool,
    /// An endpoint whose deliveries failed this many times in a row is disabled (0: never).
    pub disable_after: u32,
    /// Deliveries in flight at once, per process.
    pub concurrency: usize,
    /// How much lower the delivery thread's priority is than the server's (added to its nice
    /// value, 0–19; Linux). Storing deliveries, signing, sending and settling them run on one
    /// thread of their own: at 19 they take the cores the requests leave, so a saturated
    /// server answers requests first and delivers when it has room (the lag metric shows
    /// how far behind it is); 0 gives them the requests' share.
    pub thread_nice: i32,
    /// Deliveries yield to requests: while this process handles more than this many requests
    /// at once, new deliveries wait (stored as events, nothing lost) until it handles fewer,
    /// for at most `yield_most_ms` per batch, so a server at its limit answers requests first
    /// and delivers in its lulls (the lag metric shows how far behind). 0: never wait.
    pub yield_above_requests: usize,
    /// The longest a batch of deliveries waits for requests to ease (ms): under a load that
    /// never eases, deliveries still go out, a batch at least this often.
    pub yield_most_ms: u64,
    /// Endpoints per organization (and for the server's own).
    pub max_endpoints: usize,
    /// Days finished deliveries are kept (listed, redeliverable).
    pub keep_days: u64,
    /// Seconds the secret a rotation replaced keeps signing beside the new one.
    pub rotation_overlap_secs: u64,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            retry_delays: vec![5, 300, 1_800, 7_200, 18_000, 36_000],
            timeout_ms: 10_000,
            allow_http: false,
            allow_private_addresses: false,
            disable_after: 5,
            concurrency: 16,
            thread_nice: 19,
            yield_above_requests: 8,
            yield_most_ms: 1_000,
            max_endpoints: 20,
            keep_days: 30,
            rotation_overlap_secs: 86_400,
        }
    }
}

impl WebhooksConfig {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.timeout_ms == 0 || self.concurrency == 0 {
            return Err("webhooks.timeout_ms and webhooks.concurrency must be positive".into());
        }
        if !(0..=19).contains(&self.thread_nice) {
            return Err("webhooks.thread_nice must be 0–19".into());
        }
        if self.yield_most_ms > 5_000 {
            // The fan-out's lease (10 s) must outlast a batch's wait.
            return Err("webhooks.yield_most_ms: at most 5000".into());
        }
        if self.retry_delays.len() > 20 {
            return Err("webhooks.retry_delays: at most 20 retries".into());
        }
        Ok(())
    }
}
