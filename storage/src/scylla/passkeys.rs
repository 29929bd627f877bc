//! Passkeys (passkey plugin): a row per credential, inserted with LWT (a credential is
//! registered once) and changed by compare-and-set on its version, plus the user's index
//! (written before the row and checked against it on read, so a failed insert leaves
//! nothing visible).
use super::stream::{Decision, Probe};
use super::*;
use crate::*;
use async_trait::async_trait;

const PASSKEY_COLS: &str = "id, user_id, name, credential_id, public_key, credential, counter, \
     device_type, backed_up, transports, aaguid, created_at, updated_at, last_used_at, version";

fn passkey_of(r: &Row) -> StoreResult<Passkey> {
    let c = Cols(r);
    Ok(Passkey {
        id: PasskeyId(c.text(0)?),
        user_id: UserId(c.text(1)?),
        name: c.otext(2),
        credential_id: c.text(3)?,
        public_key: c.text(4)?,
        credential: c.text(5)?,
        counter: c.big(6) as u32,
        device_type: c.text(7)?,
        backed_up: c.boolean(8),
        transports: c.otext(9).unwrap_or_default(),
        aaguid: c.otext(10).unwrap_or_default(),
        created_at: c.ts(11)?,
        updated_at: c.ts(12)?,
        last_used_at: c.ots(13),
        version: c.big(14) as u64,
    })
}

impl ScyllaStore {
    fn passkey_values(p: &Passkey) -> Vec<V> {
        vec![
            text(&p.id.0),
            text(&p.user_id.0),
            otext(p.name.as_deref()),
            text(&p.credential_id),
            text(&p.public_key),
            text(&p.credential),
            big(p.counter as i64),
            text(&p.device_type),
            boolean(p.backed_up),
            text(&p.transports),
            text(&p.aaguid),
            ms(&p.created_at),
            ms(&p.updated_at),
            oms(&p.last_used_at),
            big(p.version as i64),
        ]
    }

    fn insert_passkey_cql(&self, conditional: bool) -> String {
        format!(
            "INSERT INTO {} ({PASSKEY_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?){}",
            self.t("passkeys"),
            if conditional { " IF NOT EXISTS" } else { "" }
        )
    }

    async fn index_passkey(&self, user: &UserId, credential: &str, on: bool) -> StoreResult<()> {
        let cql = if on {
            format!(
                "INSERT INTO {} (user_id, credential_id) VALUES (?, ?)",
                self.t("passkeys_by_user")
            )
        } else {
            format!(
                "DELETE FROM {} WHERE user_id = ? AND credential_id = ?",
                self.t("passkeys_by_user")
            )
        };
        self.exec(&cql, vec![text(&user.0), text(credential)])
            .await
            .map(|_| ())
    }

    async fn insert_passkey(&self, p: &Passkey, decision: Option<Decision>) -> StoreResult<()> {
        if self.get_user(&p.user_id).await?.is_none() {
            return Err(StoreError::NotFound);
        }
        self.index_passkey(&p.user_id, &p.credential_id, true)
            .await?;
        let mut writes = vec![(self.insert_passkey_cql(true), Self::passkey_values(p))];
        writes.extend(decision.map(|d| {
            d.stamp(
                self,
                "passkeys",
                ("credential_id", &p.credential_id),
                p.version,
            )
        }));
        if self.batch_lwt(writes).await? {
            return Ok(());
        }
        // Registered already: the index row stays only if it is the same user's.
        let there = self.get_passkey_by_credential(&p.credential_id).await?;
        if there.is_none_or(|t| t.user_id != p.user_id) {
            self.index_passkey(&p.user_id, &p.credential_id, false)
                .await?;
        }
        Err(StoreError::Conflict("passkey"))
    }

    async fn write_passkey(
        &self,
        p: &Passkey,
        expected: u64,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let mut writes = vec![(
            format!(
                "UPDATE {} SET name = ?, credential = ?, counter = ?, device_type = ?, \
                 backed_up = ?, updated_at = ?, last_used_at = ?, version = ? \
                 WHERE credential_id = ? IF version = ?",
                self.t("passkeys")
            ),
            vec![
                otext(p.name.as_deref()),
                text(&p.credential),
                big(p.counter as i64),
                text(&p.device_type),
                boolean(p.backed_up),
                ms(&p.updated_at),
                oms(&p.last_used_at),
                big(p.version as i64),
                text(&p.credential_id),
                big(expected as i64),
            ],
        )];
        writes.extend(decision.map(|d| {
            d.stamp(
                self,
                "passkeys",
                ("credential_id", &p.credential_id),
                p.version,
            )
        }));
        if self.batch_lwt(writes).await? {
            return Ok(());
        }
        Err(StoreError::missed(
            self.get_passkey_by_credential(&p.credential_id)
                .await?
                .is_some(),
        ))
    }

    /// The row goes first and the user's version moves after (as unlinking an account): a
    /// decision on the new version sees it gone; if the version moved meanwhile, the row
    /// comes back and the caller decides again.
    async fn remove_passkey(
        &self,
        user: &UserId,
        id: &PasskeyId,
        expected: u64,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let Some(p) = self
            .list_passkeys(user)
            .await?
            .into_iter()
            .find(|p| &p.id == id)
        else {
            return Err(StoreError::NotFound);
        };
        let gone = self
            .lwt(
                &format!(
                    "DELETE FROM {} WHERE credential_id = ? IF EXISTS",
                    self.t("passkeys")
                ),
                vec![text(&p.credential_id)],
            )
            .await?;
        if !gone {
            return Err(StoreError::NotFound);
        }
        if let Err(e) = self
            .cas_user_version(user, expected, decision.as_ref())
            .await
        {
            self.exec(&self.insert_passkey_cql(false), Self::passkey_values(&p))
                .await?;
            return Err(e);
        }
        self.index_passkey(user, &p.credential_id, false).await
    }

    /// Every passkey of a user that is being deleted.
    pub(crate) async fn remove_user_passkeys(&self, user: &UserId) -> StoreResult<()> {
        for p in self.list_passkeys(user).await? {
            self.exec(
                &format!("DELETE FROM {} WHERE credential_id = ?", self.t("passkeys")),
                vec![text(&p.credential_id)],
            )
            .await?;
        }
        self.exec(
            &format!(
                "DELETE FROM {} WHERE user_id = ?",
                self.t("passkeys_by_user")
            ),
            vec![text(&user.0)],
        )
        .await
        .map(|_| ())
    }
}

#[async_trait]
impl PasskeyStore for ScyllaStore {
    async fn create_passkey(&self, p: &Passkey, events: &[Event]) -> StoreResult<()> {
        let (credential, version) = (p.credential_id.clone(), p.version);
        self.decide(
            events,
            |_| Probe::PasskeyDecision {
                credential,
                version,
            },
            always,
            |d| self.insert_passkey(p, d),
        )
        .await
    }

    async fn list_passkeys(&self, user: &UserId) -> StoreResult<Vec<Passkey>> {
        let ids = self
            .rows(
                &format!(
                    "SELECT credential_id FROM {} WHERE user_id = ?",
                    self.t("passkeys_by_user")
                ),
                vec![text(&user.0)],
            )
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for r in &ids {
            let credential = Cols(r).text(0)?;
            if let Some(p) = self.get_passkey_by_credential(&credential).await? {
                if &p.user_id == user {
                    out.push(p);
                }
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(out)
    }

    async fn get_passkey_by_credential(&self, credential_id: &str) -> StoreResult<Option<Passkey>> {
        self.row(
            &format!(
                "SELECT {PASSKEY_COLS} FROM {} WHERE credential_id = ?",
                self.t("passkeys")
            ),
            vec![text(credential_id)],
        )
        .await?
        .as_ref()
        .map(passkey_of)
        .transpose()
    }

    async fn update_passkey(
        &self,
        p: &Passkey,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let (credential, version) = (p.credential_id.clone(), p.version);
        self.decide(
            events,
            |_| Probe::PasskeyDecision {
                credential,
                version,
            },
            always,
            |d| self.write_passkey(p, expected, d),
        )
        .await
    }

    async fn delete_passkey(
        &self,
        user: &UserId,
        id: &PasskeyId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let probe = Probe::UserDecision {
            user: user.0.clone(),
            version: expected + 1,
        };
        self.decide(
            events,
            |_| probe,
            always,
            |d| self.remove_passkey(user, id, expected, d),
        )
        .await
    }
}
