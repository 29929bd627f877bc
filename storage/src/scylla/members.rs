//! Members of organizations: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl MemberStore for ScyllaStore {
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        Ok(self
            .row_of(org, "member", &user.0)
            .await?
            .members
            .into_iter()
            .next())
    }
    async fn get_member_by_id(&self, org: &OrgId, id: &MemberId) -> StoreResult<Option<Member>> {
        Ok(self
            .rows_of_kind(org, "member")
            .await?
            .members
            .into_iter()
            .find(|m| &m.id == id))
    }
    async fn list_members(
        &self,
        org: &OrgId,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Member>> {
        // The partition is bounded by the membership limit: read it, page in memory.
        page_of_members(self.list_all_members(org).await?, after, limit)
    }
    async fn list_all_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        Ok(self.rows_of_kind(org, "member").await?.members)
    }
    async fn organization_view(
        &self,
        org: &OrgId,
        q: &ViewQuery,
    ) -> StoreResult<Option<OrganizationView>> {
        // Partitions of their own: read side by side.
        compose_organization_view(self, org, q).await
    }

    async fn count_members(&self, org: &OrgId) -> StoreResult<u64> {
        // The counter every membership change compare-and-sets.
        Ok(self
            .get_organization(org)
            .await?
            .map_or(0, |o| u64::from(o.member_count)))
    }
}
