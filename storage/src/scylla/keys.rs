//! Signing key pairs: few, kept in one partition.
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl KeyPairStore for ScyllaStore {
    async fn create_key_pair(&self, kp: &KeyPair) -> StoreResult<()> {
        let exists = self
            .row(
                &format!(
                    "SELECT id FROM {} WHERE bucket = 'keys' AND id = ?",
                    self.t("key_pairs")
                ),
                vec![text(&kp.id.0)],
            )
            .await?
            .is_some();
        if exists {
            return Err(StoreError::Conflict("key pair"));
        }
        self.exec(
            &format!(
                "INSERT INTO {} (bucket, id, public_key, private_key, created_at) \
                 VALUES ('keys', ?, ?, ?, ?)",
                self.t("key_pairs")
            ),
            vec![
                text(&kp.id.0),
                text(&kp.public_key),
                text(&kp.private_key),
                ms(&kp.created_at),
            ],
        )
        .await?;
        Ok(())
    }

    async fn list_key_pairs(&self) -> StoreResult<Vec<KeyPair>> {
        let mut list = self
            .rows(
                &format!(
                    "SELECT id, public_key, private_key, created_at FROM {} WHERE bucket = 'keys'",
                    self.t("key_pairs")
                ),
                vec![],
            )
            .await?
            .iter()
            .map(|r| {
                let c = Cols(r);
                Ok(KeyPair {
                    id: KeyPairId(c.text(0)?),
                    public_key: c.text(1)?,
                    private_key: c.text(2)?,
                    created_at: c.ts(3)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        list.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(list)
    }
}
