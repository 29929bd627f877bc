//! Rate-limit hits shared by every process: windows aligned to the clock (the `window`-long
//! slot holding now), a row per hit written with a TTL to the window's end, then the window
//! read up to the cap. Each hit is written before it reads, so of N concurrent hits past a
//! limit at most the limit's number read a count within it (a later read sees every hit
//! written before the earlier ones read). Nothing to purge: rows expire.
use super::*;
use crate::rate_limit::{stored_key, RateLimitStore, WindowCount};
use async_trait::async_trait;
use chrono::Duration;

/// The slot holding `now` and when it ends.
fn slot(window: Duration, now: DateTime<Utc>) -> (i64, DateTime<Utc>) {
    let w = window.num_milliseconds().max(1);
    let slot = now.timestamp_millis().div_euclid(w);
    let end = DateTime::from_timestamp_millis(slot.saturating_add(1).saturating_mul(w))
        .unwrap_or(now + window);
    (slot, end)
}

impl ScyllaStore {
    /// The window's hits, counted up to `cap + 1`.
    async fn window_count(&self, key: &str, slot: i64, cap: u32) -> StoreResult<u32> {
        let limit = i32::try_from(cap.saturating_add(1)).unwrap_or(i32::MAX);
        let rows = self
            .rows(
                &format!(
                    "SELECT id FROM {} WHERE key = ? AND slot = ? LIMIT ?",
                    self.t("rate_limit_hits")
                ),
                vec![text(key), big(slot), int(limit)],
            )
            .await?;
        Ok(u32::try_from(rows.len()).unwrap_or(u32::MAX))
    }
}

#[async_trait]
impl RateLimitStore for ScyllaStore {
    async fn hit(
        &self,
        key: &str,
        window: Duration,
        cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let key = stored_key(key);
        let (slot, resets_at) = slot(window, now);
        // Whole seconds to the window's end, rounded up: a row outlives its window by < 1 s.
        let ttl_secs = ((resets_at - now).num_milliseconds() + 999) / 1000;
        self.exec(
            &format!(
                "INSERT INTO {} (key, slot, id) VALUES (?, ?, ?) USING TTL ?",
                self.t("rate_limit_hits")
            ),
            vec![
                text(&key),
                big(slot),
                text(&crate::random_lower_alnum(16)),
                int(ttl_secs.clamp(1, i64::from(i32::MAX)) as i32),
            ],
        )
        .await?;
        Ok(WindowCount {
            count: self.window_count(&key, slot, cap).await?,
            resets_at,
        })
    }

    async fn count(
        &self,
        key: &str,
        window: Duration,
        cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let (slot, resets_at) = slot(window, now);
        let count = self.window_count(&stored_key(key), slot, cap).await?;
        Ok(WindowCount {
            count,
            resets_at: if count == 0 { now } else { resets_at },
        })
    }

    async fn purge_rate_limits(&self, _now: DateTime<Utc>) -> StoreResult<u64> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_to_the_clock() {
        let t = |ms| DateTime::from_timestamp_millis(ms).unwrap();
        let w = Duration::seconds(10);
        assert_eq!(
            slot(w, t(1_800_000_000_000)),
            (180_000_000, t(1_800_000_010_000))
        );
        assert_eq!(
            slot(w, t(1_800_000_009_999)),
            (180_000_000, t(1_800_000_010_000))
        );
        assert_eq!(slot(w, t(1_800_000_010_000)).0, 180_000_001);
    }
}
