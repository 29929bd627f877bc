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

/// Writes `t` over the stored factor at version `v`.
fn update_factor(c: &Connection, t: &TwoFactor, codes: &str, v: u64) -> StoreResult<()> {
    let n = c
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
        .map_err(map_err)?;
    match n {
        1 => Ok(()),
        _ => Err(moved_or_gone(c, "two_factors", "user_id", &t.user_id.0)?),
    }
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
                Some(v) => return update_factor(c, &t, &codes, v),
            };
            match n {
                1 => Ok(()),
                // The user is gone.
                _ => Err(StoreError::NotFound),
            }
        })
        .await
    }

    async fn finish_second_step(&self, step: &SecondStep<'_>) -> StoreResult<()> {
        let factor = match step.factor {
            Some((t, v)) => {
                let codes = serde_json::to_string(&t.backup_codes).map_err(internal)?;
                Some((t.clone(), codes, v))
            }
            None => None,
        };
        let challenge = step.challenge.to_owned();
        let session = step.session.clone();
        self.write_with(step.events, always, move |c| {
            atomically(c, |c| {
                if let Some((t, codes, v)) = &factor {
                    update_factor(c, t, codes, *v)?;
                }
                let taken = c
                    .exec(
                        "DELETE FROM verifications WHERE identifier = ?1 AND value = ?2",
                        params![challenge, session.user_id.0],
                    )
                    .map_err(map_err)?;
                if taken != 1 {
                    return Err(StoreError::Conflict("challenge"));
                }
                super::sessions::insert_session(c, &session)
            })
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
