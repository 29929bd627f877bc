//! Single-use values: rows by identifier (created and consumed with lightweight transactions,
//! so of N concurrent consumers exactly one gets the value) and an index by value; both with a
//! TTL.
use super::*;
use crate::*;
use async_trait::async_trait;

pub(crate) const VERIFICATION_COLS: &str =
    "id, identifier, value, expires_at, created_at, updated_at";

pub(crate) fn verification_of(r: &Row) -> StoreResult<Verification> {
    let c = Cols(r);
    Ok(Verification {
        id: VerificationId(c.text(0)?),
        identifier: c.text(1)?,
        value: c.text(2)?,
        expires_at: c.ts(3)?,
        created_at: c.ts(4)?,
        updated_at: c.ts(5)?,
    })
}

impl ScyllaStore {
    /// Deletes the value, conditionally: of N concurrent deletes exactly one answers true.
    async fn delete_value(&self, identifier: &str) -> StoreResult<bool> {
        self.lwt(
            &format!(
                "DELETE FROM {} WHERE identifier = ? IF EXISTS",
                self.t("verifications")
            ),
            vec![text(identifier)],
        )
        .await
    }

    async fn unindex_verification(&self, v: &Verification) -> StoreResult<()> {
        if v.value.is_empty() {
            return Ok(());
        }
        self.exec(
            &format!(
                "DELETE FROM {} WHERE value = ? AND identifier = ?",
                self.t("verifications_by_value")
            ),
            vec![text(&v.value), text(&v.identifier)],
        )
        .await?;
        Ok(())
    }
}

#[async_trait]
impl VerificationStore for ScyllaStore {
    async fn create_verification(&self, v: &Verification, events: &[Event]) -> StoreResult<()> {
        let identifier = v.identifier.clone();
        self.decide(
            events,
            |_| Probe::VerificationExists { identifier },
            always,
            |_| self.insert_verification(v),
        )
        .await
    }

    async fn get_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        self.row(
            &format!(
                "SELECT {VERIFICATION_COLS} FROM {} WHERE identifier = ?",
                self.t("verifications")
            ),
            vec![text(identifier)],
        )
        .await?
        .map(|r| verification_of(&r))
        .transpose()
    }

    /// Reads the value at the serial consistency, then deletes it conditionally: only the
    /// caller whose delete applied gets it.
    async fn consume_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        let Some(v) = super::rows_of(
            self.exec_serial(
                &format!(
                    "SELECT {VERIFICATION_COLS} FROM {} WHERE identifier = ?",
                    self.t("verifications")
                ),
                vec![text(identifier)],
            )
            .await?,
        )?
        .first()
        .map(verification_of)
        .transpose()?
        else {
            return Ok(None);
        };
        if !self.delete_value(identifier).await? {
            return Ok(None);
        }
        self.unindex_verification(&v).await?;
        Ok(Some(v))
    }

    async fn delete_verification(&self, identifier: &str) -> StoreResult<bool> {
        let found = self.get_verification(identifier).await?;
        let deleted = self.delete_value(identifier).await?;
        if let Some(v) = found {
            self.unindex_verification(&v).await?;
        }
        Ok(deleted)
    }

    async fn delete_verifications_of(&self, value: &str, prefix: &str) -> StoreResult<u64> {
        let identifiers: Vec<String> = self
            .rows(
                &format!(
                    "SELECT identifier FROM {} WHERE value = ?",
                    self.t("verifications_by_value")
                ),
                vec![text(value)],
            )
            .await?
            .iter()
            .map(|r| Cols(r).text(0))
            .collect::<StoreResult<_>>()?;
        let mut n = 0;
        for identifier in identifiers.iter().filter(|i| i.starts_with(prefix)) {
            if self.delete_verification(identifier).await? {
                n += 1;
            }
            self.exec(
                &format!(
                    "DELETE FROM {} WHERE value = ? AND identifier = ?",
                    self.t("verifications_by_value")
                ),
                vec![text(value), text(identifier)],
            )
            .await?;
        }
        Ok(n)
    }

    /// A no-op: values expire by their TTL.
    async fn purge_expired_verifications(&self, _now: DateTime<Utc>) -> StoreResult<u64> {
        Ok(0)
    }
}

/// The writes themselves; the trait's methods run them as decisions with their events
/// (see `stream`).
impl ScyllaStore {
    pub(crate) async fn insert_verification(&self, v: &Verification) -> StoreResult<()> {
        let created = self
            .lwt(
                &format!(
                    "INSERT INTO {} ({VERIFICATION_COLS}) VALUES (?,?,?,?,?,?) \
                     IF NOT EXISTS USING TTL ?",
                    self.t("verifications")
                ),
                vec![
                    text(&v.id.0),
                    text(&v.identifier),
                    text(&v.value),
                    ms(&v.expires_at),
                    ms(&v.created_at),
                    ms(&v.updated_at),
                    ttl(&v.expires_at),
                ],
            )
            .await?;
        if !created {
            return Err(StoreError::Conflict("identifier"));
        }
        if v.value.is_empty() {
            // No owner to find it by (the lookup's partition key may not be empty).
            return Ok(());
        }
        self.exec(
            &format!(
                "INSERT INTO {} (value, identifier) VALUES (?, ?) USING TTL ?",
                self.t("verifications_by_value")
            ),
            vec![text(&v.value), text(&v.identifier), ttl(&v.expires_at)],
        )
        .await?;
        Ok(())
    }
}
