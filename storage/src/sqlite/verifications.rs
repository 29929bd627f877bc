//! Single-use verification values.
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl VerificationStore for SqliteStore {
    async fn create_verification(&self, v: &Verification, events: &[Event]) -> StoreResult<()> {
        let v = v.clone();
        self.write_with(events, always, move |c| {
            c.exec(
                &format!(
                    "INSERT INTO verifications ({VERIFICATION_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"
                ),
                params![
                    v.id.0,
                    v.identifier,
                    v.value,
                    ms(&v.expires_at),
                    ms(&v.created_at),
                    ms(&v.updated_at)
                ],
            )
            .map_err(unique("identifier"))?;
            Ok(())
        })
        .await
    }

    async fn get_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        let i = identifier.to_owned();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {VERIFICATION_COLS} FROM verifications WHERE identifier = ?1"),
                [i],
                verification_row,
            )
        })
        .await
    }

    async fn consume_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        let i = identifier.to_owned();
        // DELETE … RETURNING on the single writer: exactly one caller sees the row.
        self.write(move |c| {
            one(
                c,
                &format!(
                    "DELETE FROM verifications WHERE identifier = ?1 RETURNING {VERIFICATION_COLS}"
                ),
                [i],
                verification_row,
            )
        })
        .await
    }

    async fn delete_verification(&self, identifier: &str) -> StoreResult<bool> {
        let i = identifier.to_owned();
        self.write(move |c| {
            Ok(
                c.exec("DELETE FROM verifications WHERE identifier = ?1", [i])
                    .map_err(map_err)?
                    > 0,
            )
        })
        .await
    }

    async fn delete_verifications_of(&self, value: &str, prefix: &str) -> StoreResult<u64> {
        let (value, prefix) = (value.to_owned(), prefix.to_owned());
        // By the value index; the prefix is compared as text (no LIKE, so `_`/`%` are plain).
        self.write(move |c| {
            let n = c
                .exec(
                    "DELETE FROM verifications WHERE value = ?1 \
                     AND substr(identifier, 1, length(?2)) = ?2",
                    [value, prefix],
                )
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }

    async fn purge_expired_verifications(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            let n = c
                .exec(
                    "DELETE FROM verifications WHERE expires_at <= ?1",
                    [ms(&now)],
                )
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}
