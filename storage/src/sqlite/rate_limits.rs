//! Rate-limit counters in the file, for processes that share it: one row per key, counted
//! by one upsert on the single writer (so concurrent hits from every process get distinct
//! counts), windows opening at a key's first hit as in memory.
use super::*;
use crate::rate_limit::{stored_key, RateLimitStore, WindowCount};
use chrono::Duration;
use rusqlite::params;

#[async_trait]
impl RateLimitStore for SqliteStore {
    async fn hit(
        &self,
        key: &str,
        window: Duration,
        _cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let (key, now_ms, end_ms) = (stored_key(key), ms(&now), ms(&(now + window)));
        let (count, resets_at) = self
            .write(move |c| {
                c.prepare_cached(
                    "INSERT INTO rate_limits (key, count, resets_at) VALUES (?1, 1, ?3) \
                     ON CONFLICT (key) DO UPDATE SET \
                     count = CASE WHEN resets_at <= ?2 THEN 1 ELSE count + 1 END, \
                     resets_at = CASE WHEN resets_at <= ?2 THEN ?3 ELSE resets_at END \
                     RETURNING count, resets_at",
                )
                .and_then(|mut st| {
                    st.query_row(params![key, now_ms, end_ms], |r| {
                        Ok((r.get::<_, i64>(0)?, ts(r.get(1)?)?))
                    })
                })
                .map_err(map_err)
            })
            .await?;
        Ok(WindowCount {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            resets_at,
        })
    }

    async fn count(
        &self,
        key: &str,
        _window: Duration,
        _cap: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<WindowCount> {
        let (key, now_ms) = (stored_key(key), ms(&now));
        let open = self
            .point_read(move |c| {
                c.prepare_cached(
                    "SELECT count, resets_at FROM rate_limits WHERE key = ?1 AND resets_at > ?2",
                )
                .and_then(|mut st| {
                    st.query_row(params![key, now_ms], |r| {
                        Ok((r.get::<_, i64>(0)?, ts(r.get(1)?)?))
                    })
                    .optional()
                })
                .map_err(map_err)
            })
            .await?;
        Ok(match open {
            Some((count, resets_at)) => WindowCount {
                count: u32::try_from(count).unwrap_or(u32::MAX),
                resets_at,
            },
            None => WindowCount {
                count: 0,
                resets_at: now,
            },
        })
    }

    async fn purge_rate_limits(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            let n = c
                .exec("DELETE FROM rate_limits WHERE resets_at <= ?1", [ms(&now)])
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}
