//! Passkeys (passkey plugin): a row per credential, unique credential id, gone with the user.
use super::*;
use crate::*;
use rusqlite::{params, Row};

const PASSKEY_COLS: &str = "id, user_id, name, credential_id, public_key, credential, counter, \
     device_type, backed_up, transports, aaguid, created_at, updated_at, last_used_at, version";

fn passkey_row(r: &Row) -> rusqlite::Result<Passkey> {
    Ok(Passkey {
        id: PasskeyId(r.get(0)?),
        user_id: UserId(r.get(1)?),
        name: r.get(2)?,
        credential_id: r.get(3)?,
        public_key: r.get(4)?,
        credential: r.get(5)?,
        counter: r.get::<_, i64>(6)? as u32,
        device_type: r.get(7)?,
        backed_up: r.get(8)?,
        transports: r.get(9)?,
        aaguid: r.get(10)?,
        created_at: ts(r.get(11)?)?,
        updated_at: ts(r.get(12)?)?,
        last_used_at: ts_opt(r.get(13)?)?,
        version: r.get::<_, i64>(14)? as u64,
    })
}

#[async_trait]
impl PasskeyStore for SqliteStore {
    async fn create_passkey(&self, p: &Passkey, events: &[Event]) -> StoreResult<()> {
        let p = p.clone();
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
                    &format!(
                        "INSERT INTO passkeys ({PASSKEY_COLS}) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, \
                         ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15 WHERE EXISTS \
                         (SELECT 1 FROM users WHERE id = ?2)"
                    ),
                    params![
                        p.id.0,
                        p.user_id.0,
                        p.name,
                        p.credential_id,
                        p.public_key,
                        p.credential,
                        p.counter as i64,
                        p.device_type,
                        p.backed_up,
                        p.transports,
                        p.aaguid,
                        ms(&p.created_at),
                        ms(&p.updated_at),
                        ms_opt(&p.last_used_at),
                        p.version as i64
                    ],
                )
                .map_err(unique("passkey"))?;
            match n {
                1 => Ok(()),
                _ => Err(StoreError::NotFound),
            }
        })
        .await
    }

    async fn list_passkeys(&self, user: &UserId) -> StoreResult<Vec<Passkey>> {
        let id = user.0.clone();
        self.point_read(move |c| {
            all(
                c,
                &format!(
                    "SELECT {PASSKEY_COLS} FROM passkeys WHERE user_id = ?1 \
                     ORDER BY created_at, id"
                ),
                params![id],
                passkey_row,
            )
        })
        .await
    }

    async fn get_passkey_by_credential(&self, credential_id: &str) -> StoreResult<Option<Passkey>> {
        let id = credential_id.to_owned();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {PASSKEY_COLS} FROM passkeys WHERE credential_id = ?1"),
                params![id],
                passkey_row,
            )
        })
        .await
    }

    async fn update_passkey(
        &self,
        p: &Passkey,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let p = p.clone();
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
                    "UPDATE passkeys SET name = ?2, credential = ?3, counter = ?4, \
                     device_type = ?5, backed_up = ?6, updated_at = ?7, last_used_at = ?8, \
                     version = ?9 WHERE id = ?1 AND version = ?10",
                    params![
                        p.id.0,
                        p.name,
                        p.credential,
                        p.counter as i64,
                        p.device_type,
                        p.backed_up,
                        ms(&p.updated_at),
                        ms_opt(&p.last_used_at),
                        p.version as i64,
                        expected as i64
                    ],
                )
                .map_err(map_err)?;
            if n == 1 {
                return Ok(());
            }
            Err(moved_or_gone(c, "passkeys", "id", &p.id.0)?)
        })
        .await
    }

    async fn delete_passkey(
        &self,
        user: &UserId,
        id: &PasskeyId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let (user, id) = (user.0.clone(), id.0.clone());
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            let n = tx
                .exec(
                    "UPDATE users SET version = version + 1 WHERE id = ?1 AND version = ?2",
                    params![user, expected as i64],
                )
                .map_err(map_err)?;
            if n == 0 {
                return Err(user_moved_or_gone(&tx, &user)?);
            }
            touched(
                tx.exec(
                    "DELETE FROM passkeys WHERE id = ?1 AND user_id = ?2",
                    [&id, &user],
                )
                .map_err(map_err)?,
            )?;
            tx.commit()
        })
        .await
    }
}
