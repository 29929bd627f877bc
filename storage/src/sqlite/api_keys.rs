//! API keys (api-key plugin): a row per key, its hash unique, gone with its user.
use super::*;
use crate::*;
use rusqlite::{params, Row, ToSql};

const API_KEY_COLS: &str = "id, config_id, name, start, prefix, key_hash, user_id, \
     organization_id, reference_id, enabled, expires_at, created_at, updated_at, last_request, \
     request_count, remaining, refill_amount, refill_interval, last_refill_at, \
     rate_limit_enabled, rate_limit_time_window, rate_limit_max, permissions, metadata, version";

fn api_key_row(r: &Row) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: ApiKeyId(r.get(0)?),
        config_id: r.get(1)?,
        name: r.get(2)?,
        start: r.get(3)?,
        prefix: r.get(4)?,
        key_hash: r.get(5)?,
        user_id: UserId(r.get(6)?),
        organization_id: r.get::<_, Option<String>>(7)?.map(OrgId),
        // 8: reference_id, derived.
        enabled: r.get(9)?,
        expires_at: ts_opt(r.get(10)?)?,
        created_at: ts(r.get(11)?)?,
        updated_at: ts(r.get(12)?)?,
        last_request: ts_opt(r.get(13)?)?,
        request_count: r.get(14)?,
        remaining: r.get(15)?,
        refill_amount: r.get(16)?,
        refill_interval: r.get(17)?,
        last_refill_at: ts_opt(r.get(18)?)?,
        rate_limit_enabled: r.get(19)?,
        rate_limit_time_window: r.get(20)?,
        rate_limit_max: r.get(21)?,
        permissions: r.get(22)?,
        metadata: r.get(23)?,
        version: r.get::<_, i64>(24)? as u64,
    })
}

/// Every column's value, in [`API_KEY_COLS`]' order.
fn api_key_values(k: &ApiKey) -> Vec<Box<dyn ToSql + Send>> {
    vec![
        Box::new(k.id.0.clone()),
        Box::new(k.config_id.clone()),
        Box::new(k.name.clone()),
        Box::new(k.start.clone()),
        Box::new(k.prefix.clone()),
        Box::new(k.key_hash.clone()),
        Box::new(k.user_id.0.clone()),
        Box::new(k.organization_id.as_ref().map(|o| o.0.clone())),
        Box::new(k.reference_id().to_owned()),
        Box::new(k.enabled),
        Box::new(ms_opt(&k.expires_at)),
        Box::new(ms(&k.created_at)),
        Box::new(ms(&k.updated_at)),
        Box::new(ms_opt(&k.last_request)),
        Box::new(k.request_count),
        Box::new(k.remaining),
        Box::new(k.refill_amount),
        Box::new(k.refill_interval),
        Box::new(ms_opt(&k.last_refill_at)),
        Box::new(k.rate_limit_enabled),
        Box::new(k.rate_limit_time_window),
        Box::new(k.rate_limit_max),
        Box::new(k.permissions.clone()),
        Box::new(k.metadata.clone()),
        Box::new(k.version as i64),
    ]
}

fn refs(values: &[Box<dyn ToSql + Send>]) -> Vec<&dyn ToSql> {
    values.iter().map(|v| v.as_ref() as &dyn ToSql).collect()
}

#[async_trait]
impl ApiKeyStore for SqliteStore {
    async fn create_api_key(&self, k: &ApiKey, events: &[Event]) -> StoreResult<()> {
        let values = api_key_values(k);
        self.write_with(events, always, move |c| {
            let slots = (1..=values.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let n = c
                .exec(
                    &format!(
                        "INSERT INTO api_keys ({API_KEY_COLS}) SELECT {slots} WHERE EXISTS \
                         (SELECT 1 FROM users WHERE id = ?7)"
                    ),
                    refs(&values).as_slice(),
                )
                .map_err(unique("api key"))?;
            match n {
                1 => Ok(()),
                _ => Err(StoreError::NotFound),
            }
        })
        .await
    }

    async fn get_api_key(&self, id: &ApiKeyId) -> StoreResult<Option<ApiKey>> {
        let id = id.0.clone();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {API_KEY_COLS} FROM api_keys WHERE id = ?1"),
                params![id],
                api_key_row,
            )
        })
        .await
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let hash = key_hash.to_owned();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {API_KEY_COLS} FROM api_keys WHERE key_hash = ?1"),
                params![hash],
                api_key_row,
            )
        })
        .await
    }

    async fn list_api_keys(&self, reference: &str) -> StoreResult<Vec<ApiKey>> {
        let reference = reference.to_owned();
        self.point_read(move |c| {
            all(
                c,
                &format!(
                    "SELECT {API_KEY_COLS} FROM api_keys WHERE reference_id = ?1 \
                     ORDER BY created_at, id"
                ),
                params![reference],
                api_key_row,
            )
        })
        .await
    }

    async fn update_api_key(&self, k: &ApiKey, expected: u64, events: &[Event]) -> StoreResult<()> {
        let mut values = api_key_values(k);
        let id = k.id.0.clone();
        values.push(Box::new(expected as i64));
        self.write_with(events, always, move |c| {
            // Every column but the id, the hash, the maker and the owner.
            let set = [
                (2, "config_id"),
                (3, "name"),
                (4, "start"),
                (5, "prefix"),
                (10, "enabled"),
                (11, "expires_at"),
                (13, "updated_at"),
                (14, "last_request"),
                (15, "request_count"),
                (16, "remaining"),
                (17, "refill_amount"),
                (18, "refill_interval"),
                (19, "last_refill_at"),
                (20, "rate_limit_enabled"),
                (21, "rate_limit_time_window"),
                (22, "rate_limit_max"),
                (23, "permissions"),
                (24, "metadata"),
                (25, "version"),
            ]
            .iter()
            .map(|(i, col)| format!("{col} = ?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
            let n = c
                .exec(
                    &format!("UPDATE api_keys SET {set} WHERE id = ?1 AND version = ?26"),
                    refs(&values).as_slice(),
                )
                .map_err(map_err)?;
            if n == 1 {
                return Ok(());
            }
            Err(moved_or_gone(c, "api_keys", "id", &id)?)
        })
        .await
    }

    async fn delete_api_key(&self, id: &ApiKeyId, events: &[Event]) -> StoreResult<bool> {
        let id = id.0.clone();
        self.write_with(
            events,
            |gone: &bool| *gone,
            move |c| {
                Ok(c.exec("DELETE FROM api_keys WHERE id = ?1", params![id])
                    .map_err(map_err)?
                    == 1)
            },
        )
        .await
    }

    async fn delete_expired_api_keys(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            let n = c
                .exec(
                    "DELETE FROM api_keys WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                    [ms(&now)],
                )
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}
