//! API keys (api-key plugin): a row per key, changed by compare-and-set on its version, and
//! three indexes written before the row and checked against it on read (a failed insert
//! leaves nothing visible): by the hash of the key, by what owns it, by its maker.
use super::stream::{Decision, Probe};
use super::*;
use crate::*;
use async_trait::async_trait;

const API_KEY_COLS: &str = "id, config_id, name, start, prefix, key_hash, user_id, \
     organization_id, enabled, expires_at, created_at, updated_at, last_request, \
     request_count, remaining, refill_amount, refill_interval, last_refill_at, \
     rate_limit_enabled, rate_limit_time_window, rate_limit_max, permissions, metadata, version";

fn api_key_of(r: &Row) -> StoreResult<ApiKey> {
    let c = Cols(r);
    Ok(ApiKey {
        id: ApiKeyId(c.text(0)?),
        config_id: c.otext(1).unwrap_or_else(|| "default".into()),
        name: c.otext(2),
        start: c.otext(3),
        prefix: c.otext(4),
        key_hash: c.text(5)?,
        user_id: UserId(c.text(6)?),
        organization_id: c.otext(7).map(OrgId),
        enabled: c.boolean(8),
        expires_at: c.ots(9),
        created_at: c.ts(10)?,
        updated_at: c.ts(11)?,
        last_request: c.ots(12),
        request_count: c.big(13),
        remaining: c.obig(14),
        refill_amount: c.obig(15),
        refill_interval: c.obig(16),
        last_refill_at: c.ots(17),
        rate_limit_enabled: c.boolean(18),
        rate_limit_time_window: c.obig(19),
        rate_limit_max: c.obig(20),
        permissions: c.otext(21),
        metadata: c.otext(22),
        version: c.big(23) as u64,
    })
}

fn obig(n: Option<i64>) -> V {
    n.and_then(big)
}

/// Every column but the id, with its value.
fn api_key_columns(k: &ApiKey) -> Vec<(&'static str, V)> {
    vec![
        ("config_id", text(&k.config_id)),
        ("name", otext(k.name.as_deref())),
        ("start", otext(k.start.as_deref())),
        ("prefix", otext(k.prefix.as_deref())),
        ("key_hash", text(&k.key_hash)),
        ("user_id", text(&k.user_id.0)),
        (
            "organization_id",
            otext(k.organization_id.as_ref().map(|o| o.0.as_str())),
        ),
        ("enabled", boolean(k.enabled)),
        ("expires_at", oms(&k.expires_at)),
        ("created_at", ms(&k.created_at)),
        ("updated_at", ms(&k.updated_at)),
        ("last_request", oms(&k.last_request)),
        ("request_count", big(k.request_count)),
        ("remaining", obig(k.remaining)),
        ("refill_amount", obig(k.refill_amount)),
        ("refill_interval", obig(k.refill_interval)),
        ("last_refill_at", oms(&k.last_refill_at)),
        ("rate_limit_enabled", boolean(k.rate_limit_enabled)),
        ("rate_limit_time_window", obig(k.rate_limit_time_window)),
        ("rate_limit_max", obig(k.rate_limit_max)),
        ("permissions", otext(k.permissions.as_deref())),
        ("metadata", otext(k.metadata.as_deref())),
        ("version", big(k.version as i64)),
    ]
}

impl ScyllaStore {
    async fn index_api_key(&self, k: &ApiKey, on: bool) -> StoreResult<()> {
        let idx: [(&str, &str, &str); 3] = [
            ("api_keys_by_hash", "key_hash", &k.key_hash),
            ("api_keys_by_reference", "reference_id", k.reference_id()),
            ("api_keys_by_user", "user_id", &k.user_id.0),
        ];
        for (i, (table, col, value)) in idx.into_iter().enumerate() {
            let (cql, values) = match (on, i) {
                (true, _) => (
                    format!("INSERT INTO {} ({col}, id) VALUES (?, ?)", self.t(table)),
                    vec![text(value), text(&k.id.0)],
                ),
                (false, 0) => (
                    format!("DELETE FROM {} WHERE {col} = ?", self.t(table)),
                    vec![text(value)],
                ),
                (false, _) => (
                    format!("DELETE FROM {} WHERE {col} = ? AND id = ?", self.t(table)),
                    vec![text(value), text(&k.id.0)],
                ),
            };
            self.exec(&cql, values).await?;
        }
        Ok(())
    }

    async fn insert_api_key(&self, k: &ApiKey, decision: Option<Decision>) -> StoreResult<()> {
        if self.get_user(&k.user_id).await?.is_none() {
            return Err(StoreError::NotFound);
        }
        if self.find_api_key(&k.key_hash).await?.is_some() {
            return Err(StoreError::Conflict("api key"));
        }
        self.index_api_key(k, true).await?;
        let mut values = vec![text(&k.id.0)];
        values.extend(api_key_columns(k).into_iter().map(|(_, v)| v));
        let mut writes = vec![(
            format!(
                "INSERT INTO {} ({API_KEY_COLS}) VALUES ({}) IF NOT EXISTS",
                self.t("api_keys"),
                vec!["?"; values.len()].join(", ")
            ),
            values,
        )];
        writes.extend(decision.map(|d| d.stamp(self, "api_keys", ("id", &k.id.0), k.version)));
        if self.batch_lwt(writes).await? {
            return Ok(());
        }
        // The id is taken: the indexes stay only if they are that key's.
        if self.get_api_key(&k.id).await?.as_ref() != Some(k) {
            self.index_api_key(k, false).await?;
        }
        Err(StoreError::Conflict("api key"))
    }

    async fn write_api_key(
        &self,
        k: &ApiKey,
        expected: u64,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        // Every column but the id, the hash, the maker and the owner.
        let (set, mut values): (Vec<String>, Vec<V>) = api_key_columns(k)
            .into_iter()
            .filter(|(c, _)| !matches!(*c, "key_hash" | "user_id" | "organization_id"))
            .map(|(c, v)| (format!("{c} = ?"), v))
            .unzip();
        values.push(text(&k.id.0));
        values.push(big(expected as i64));
        let mut writes = vec![(
            format!(
                "UPDATE {} SET {} WHERE id = ? IF version = ?",
                self.t("api_keys"),
                set.join(", ")
            ),
            values,
        )];
        writes.extend(decision.map(|d| d.stamp(self, "api_keys", ("id", &k.id.0), k.version)));
        if self.batch_lwt(writes).await? {
            return Ok(());
        }
        Err(StoreError::missed(self.get_api_key(&k.id).await?.is_some()))
    }

    async fn remove_api_key(&self, id: &ApiKeyId) -> StoreResult<bool> {
        let Some(k) = self.get_api_key(id).await? else {
            return Ok(false);
        };
        let gone = self
            .lwt(
                &format!("DELETE FROM {} WHERE id = ? IF EXISTS", self.t("api_keys")),
                vec![text(&id.0)],
            )
            .await?;
        if gone {
            self.index_api_key(&k, false).await?;
        }
        Ok(gone)
    }

    /// Every key a user that is being deleted made.
    pub(crate) async fn remove_user_api_keys(&self, user: &UserId) -> StoreResult<()> {
        let rows = self
            .rows(
                &format!(
                    "SELECT id FROM {} WHERE user_id = ?",
                    self.t("api_keys_by_user")
                ),
                vec![text(&user.0)],
            )
            .await?;
        for r in &rows {
            self.remove_api_key(&ApiKeyId(Cols(r).text(0)?)).await?;
        }
        Ok(())
    }

    async fn api_keys_by(&self, table: &str, col: &str, value: &str) -> StoreResult<Vec<ApiKey>> {
        let ids = self
            .rows(
                &format!("SELECT id FROM {} WHERE {col} = ?", self.t(table)),
                vec![text(value)],
            )
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for r in &ids {
            if let Some(k) = self.get_api_key(&ApiKeyId(Cols(r).text(0)?)).await? {
                out.push(k);
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl ApiKeyStore for ScyllaStore {
    async fn create_api_key(&self, k: &ApiKey, events: &[Event]) -> StoreResult<()> {
        let (id, version) = (k.id.0.clone(), k.version);
        self.decide(
            events,
            |_| Probe::ApiKeyDecision { id, version },
            always,
            |d| self.insert_api_key(k, d),
        )
        .await
    }

    async fn get_api_key(&self, id: &ApiKeyId) -> StoreResult<Option<ApiKey>> {
        self.row(
            &format!(
                "SELECT {API_KEY_COLS} FROM {} WHERE id = ?",
                self.t("api_keys")
            ),
            vec![text(&id.0)],
        )
        .await?
        .as_ref()
        .map(api_key_of)
        .transpose()
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let Some(r) = self
            .row(
                &format!(
                    "SELECT id FROM {} WHERE key_hash = ?",
                    self.t("api_keys_by_hash")
                ),
                vec![text(key_hash)],
            )
            .await?
        else {
            return Ok(None);
        };
        let id = ApiKeyId(Cols(&r).text(0)?);
        Ok(self
            .get_api_key(&id)
            .await?
            .filter(|k| k.key_hash == key_hash))
    }

    async fn list_api_keys(&self, reference: &str) -> StoreResult<Vec<ApiKey>> {
        let mut out = self
            .api_keys_by("api_keys_by_reference", "reference_id", reference)
            .await?;
        out.retain(|k| k.reference_id() == reference);
        out.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(out)
    }

    async fn update_api_key(&self, k: &ApiKey, expected: u64, events: &[Event]) -> StoreResult<()> {
        let (id, version) = (k.id.0.clone(), k.version);
        self.decide(
            events,
            |_| Probe::ApiKeyDecision { id, version },
            always,
            |d| self.write_api_key(k, expected, d),
        )
        .await
    }

    async fn delete_api_key(&self, id: &ApiKeyId, events: &[Event]) -> StoreResult<bool> {
        let key = id.0.clone();
        self.decide(
            events,
            |_| Probe::ApiKeyGone { id: key },
            |gone: &bool| *gone,
            |_| self.remove_api_key(id),
        )
        .await
    }

    async fn delete_expired_api_keys(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        let mut after: Option<String> = None;
        let mut n = 0;
        loop {
            let rows = self
                .scan("id, expires_at", "api_keys", "id", after.as_deref(), 500)
                .await?;
            for r in &rows {
                let c = Cols(r);
                if c.ots(1).is_some_and(|t| t <= now)
                    && self.remove_api_key(&ApiKeyId(c.text(0)?)).await?
                {
                    n += 1;
                }
            }
            if rows.len() < 500 {
                return Ok(n);
            }
            after = rows.last().map(|r| Cols(r).text(0)).transpose()?;
        }
    }
}
