//! Custom roles: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl RoleStore for ScyllaStore {
    async fn get_role(&self, org: &OrgId, name: &str) -> StoreResult<Option<OrganizationRole>> {
        Ok(self.row_of(org, "role", name).await?.roles.pop())
    }
    async fn list_roles(&self, org: &OrgId) -> StoreResult<Vec<OrganizationRole>> {
        Ok(self.rows_of_kind(org, "role").await?.roles)
    }
}
