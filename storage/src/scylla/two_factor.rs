//! Second factors (two-factor plugin): a row per user, compare-and-set on its version (LWT),
//! which decision made each version recorded as on the user row.
use super::stream::{internal, Probe};
use super::*;
use crate::*;
use async_trait::async_trait;

const TWO_FACTOR_COLS: &str =
    "user_id, secret, backup_codes, last_step, created_at, updated_at, version";

fn two_factor_of(r: &Row) -> StoreResult<TwoFactor> {
    let c = Cols(r);
    Ok(TwoFactor {
        user_id: UserId(c.text(0)?),
        secret: c.text(1)?,
        backup_codes: serde_json::from_str(&c.text(2)?).map_err(internal)?,
        last_step: c.big(3),
        created_at: c.ts(4)?,
        updated_at: c.ts(5)?,
        version: c.big(6) as u64,
    })
}

impl ScyllaStore {
    async fn write_two_factor(
        &self,
        tf: &TwoFactor,
        expected: Option<u64>,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let codes = serde_json::to_string(&tf.backup_codes).map_err(internal)?;
        let write = match expected {
            None => (
                format!(
                    "INSERT INTO {} ({TWO_FACTOR_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
                    self.t("two_factors")
                ),
                vec![
                    text(&tf.user_id.0),
                    text(&tf.secret),
                    text(&codes),
                    big(tf.last_step),
                    ms(&tf.created_at),
                    ms(&tf.updated_at),
                    big(tf.version as i64),
                ],
            ),
            Some(v) => (
                format!(
                    "UPDATE {} SET secret = ?, backup_codes = ?, last_step = ?, updated_at = ?, \
                     version = ? WHERE user_id = ? IF version = ?",
                    self.t("two_factors")
                ),
                vec![
                    text(&tf.secret),
                    text(&codes),
                    big(tf.last_step),
                    ms(&tf.updated_at),
                    big(tf.version as i64),
                    text(&tf.user_id.0),
                    big(v as i64),
                ],
            ),
        };
        if expected.is_none() && self.get_user(&tf.user_id).await?.is_none() {
            return Err(StoreError::NotFound);
        }
        let mut writes = vec![write];
        writes.extend(
            decision.map(|d| d.stamp(self, "two_factors", ("user_id", &tf.user_id.0), tf.version)),
        );
        if self.batch_lwt(writes).await? {
            return Ok(());
        }
        Err(match (expected, self.get_two_factor(&tf.user_id).await?) {
            (None, _) => StoreError::Conflict("two factor"),
            (Some(_), Some(_)) => StoreError::ConcurrentModification,
            (Some(_), None) => StoreError::NotFound,
        })
    }
}

#[async_trait]
impl TwoFactorStore for ScyllaStore {
    async fn get_two_factor(&self, user: &UserId) -> StoreResult<Option<TwoFactor>> {
        self.row(
            &format!(
                "SELECT {TWO_FACTOR_COLS} FROM {} WHERE user_id = ?",
                self.t("two_factors")
            ),
            vec![text(&user.0)],
        )
        .await?
        .as_ref()
        .map(two_factor_of)
        .transpose()
    }

    async fn put_two_factor(
        &self,
        tf: &TwoFactor,
        expected: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()> {
        let (user, version) = (tf.user_id.0.clone(), tf.version);
        self.decide(
            events,
            |_| Probe::TwoFactorDecision { user, version },
            always,
            |d| self.write_two_factor(tf, expected, d),
        )
        .await
    }

    /// Three partitions, so three writes: the challenge taken first (single use: of second
    /// steps racing on one challenge one goes on), then the factor's compare-and-set (the
    /// code's single use; when it fails the challenge is put back, so that a code is never
    /// spent on a challenge another step took, and the caller may try again with the factor
    /// read anew), then the session with the events.
    async fn finish_second_step(&self, step: &SecondStep<'_>) -> StoreResult<()> {
        let challenge = match self.consume_verification(step.challenge).await? {
            Some(v) if v.value == step.session.user_id.0 => v,
            Some(other) => {
                self.insert_verification(&other).await?;
                return Err(StoreError::Conflict("challenge"));
            }
            None => return Err(StoreError::Conflict("challenge")),
        };
        if let Some((tf, expected)) = step.factor {
            if let Err(e) = self.put_two_factor(tf, Some(expected), &[]).await {
                self.insert_verification(&challenge).await?;
                return Err(e);
            }
        }
        self.create_session(step.session, step.events).await
    }

    async fn delete_two_factor(&self, user: &UserId, events: &[Event]) -> StoreResult<bool> {
        let id = user.0.clone();
        self.decide(
            events,
            |_| Probe::TwoFactorGone { user: id },
            |gone: &bool| *gone,
            |_| async {
                self.lwt(
                    &format!(
                        "DELETE FROM {} WHERE user_id = ? IF EXISTS",
                        self.t("two_factors")
                    ),
                    vec![text(&user.0)],
                )
                .await
            },
        )
        .await
    }
}
