//! Custom roles: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;

#[async_trait]
impl RoleStore for SqliteStore {
    async fn get_role(&self, org: &OrgId, name: &str) -> StoreResult<Option<OrganizationRole>> {
        let (o, n) = (org.0.clone(), name.to_owned());
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ROLE_COLS} FROM organization_roles WHERE organization_id = ?1 AND role = ?2"),
                [o, n],
                role_row,
            )
        })
        .await
    }
    async fn list_roles(&self, org: &OrgId) -> StoreResult<Vec<OrganizationRole>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {ROLE_COLS} FROM organization_roles WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                role_row,
            )
        })
        .await
    }
}
