//! Second factors (two-factor plugin): one row per user, gone with the user.
use super::*;
use crate::*;
use rusqlite::{params, Row};

const TWO_FACTOR_COLS: &str =
    "user_id, secret, backup_codes, last_step, created_at, updated_at, version";

fn two_factor_row(r: &Row) -> rusqlite::Result<TwoFactor> {
    let codes: String = r.get(2)?;
    Ok(TwoFactor {
        user_id: UserId(r.get(0)?),
        secret: r.get(1)?,
        backup_codes: serde_json::from_str(&codes).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, e.into())
        })?,
        last_step: r.get(3)?,
        created_at: ts(r.get(4)?)?,
        updated_at: ts(r.get(5)?)?,
        version: r.get::<_, i64>(6)? as u64,
    })
}

#[async_trait]
impl TwoFactorStore for SqliteStore {
    async fn get_two_factor(&self, user: &UserId) -> StoreResult<Option<TwoFactor>> {
        let id = user.0.clone();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {TWO_FACTOR_COLS} FROM two_factors WHERE user_id = ?1"),
                params![id],
                two_factor_row,
            )
        })
        .await
    }

    async fn put_two_factor(
        &self,
        tf: &TwoFactor,
        expected: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()> {
        let t = tf.clone();
        let codes = serde_json::to_string(&tf.backup_codes).map_err(internal)?;
        self.write_with(events, always, move |c| {
            let n = match expected {
                None => c
                    .exec(
                        &format!(
                            "INSERT INTO two_factors ({TWO_FACTOR_COLS}) \
                             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS \
                             (SELECT 1 FROM users WHERE id = ?1)"
                        ),
                        params![
                            t.user_id.0,
                            t.secret,
                            codes,
                            t.last_step,
                            ms(&t.created_at),
                            ms(&t.updated_at),
                            t.version as i64
                        ],
                    )
                    .map_err(unique("two factor"))?,
                Some(v) => c
                    .exec(
                        "UPDATE two_factors SET secret = ?2, backup_codes = ?3, last_step = ?4, \
                         updated_at = ?5, version = ?6 WHERE user_id = ?1 AND version = ?7",
                        params![
                            t.user_id.0,
                            t.secret,
                            codes,
                            t.last_step,
                            ms(&t.updated_at),
                            t.version as i64,
                            v as i64
                        ],
                    )
                    .map_err(map_err)?,
            };
            if n == 1 {
                return Ok(());
            }
            if expected.is_none() {
                // The user is gone.
                return Err(StoreError::NotFound);
            }
            Err(moved_or_gone(c, "two_factors", "user_id", &t.user_id.0)?)
        })
        .await
    }

    async fn delete_two_factor(&self, user: &UserId, events: &[Event]) -> StoreResult<bool> {
        let id = user.0.clone();
        self.write_with(
            events,
            |gone: &bool| *gone,
            move |c| {
                Ok(
                    c.exec("DELETE FROM two_factors WHERE user_id = ?1", params![id])
                        .map_err(map_err)?
                        == 1,
                )
            },
        )
        .await
    }
}
