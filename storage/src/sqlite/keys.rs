//! Signing key pairs.
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl KeyPairStore for SqliteStore {
    async fn create_key_pair(&self, kp: &KeyPair) -> StoreResult<()> {
        let k = kp.clone();
        self.write(move |c| {
            c.exec(
                "INSERT INTO key_pairs (id, public_key, private_key, created_at) VALUES (?1,?2,?3,?4)",
                params![k.id.0, k.public_key, k.private_key, ms(&k.created_at)],
            )
            .map_err(unique("key pair"))?;
            Ok(())
        })
        .await
    }

    async fn list_key_pairs(&self) -> StoreResult<Vec<KeyPair>> {
        self.read(|c| {
            all(
                c,
                "SELECT id, public_key, private_key, created_at FROM key_pairs ORDER BY created_at, id",
                [],
                |r| {
                    Ok(KeyPair {
                        id: KeyPairId(r.get(0)?),
                        public_key: r.get(1)?,
                        private_key: r.get(2)?,
                        created_at: ts(r.get(3)?)?,
                    })
                },
            )
        })
        .await
    }
}
