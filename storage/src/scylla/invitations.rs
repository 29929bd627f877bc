//! Invitations: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl InvitationStore for ScyllaStore {
    async fn get_invitation(&self, id: &InvitationId) -> StoreResult<Option<Invitation>> {
        let Some(row) = self
            .row(
                &format!(
                    "SELECT org_id FROM {} WHERE id = ?",
                    self.t("invitations_by_id")
                ),
                vec![text(&id.0)],
            )
            .await?
        else {
            return Ok(None);
        };
        let org = OrgId(Cols(&row).text(0)?);
        Ok(self
            .row_of(&org, "invitation", &id.0)
            .await?
            .invitations
            .into_iter()
            .next())
    }
    async fn list_invitations(&self, org: &OrgId) -> StoreResult<Vec<Invitation>> {
        Ok(self.rows_of_kind(org, "invitation").await?.invitations)
    }
    async fn list_invitations_by_email(&self, email: &str) -> StoreResult<Vec<Invitation>> {
        let found: Vec<(InvitationId, OrgId)> = self
            .rows(
                &format!(
                    "SELECT id, org_id FROM {} WHERE email = ?",
                    self.t("invitations_by_email")
                ),
                vec![text(&email.to_lowercase())],
            )
            .await?
            .iter()
            .map(|r| {
                let c = Cols(r);
                Ok((InvitationId(c.text(0)?), OrgId(c.text(1)?)))
            })
            .collect::<StoreResult<_>>()?;
        let mut list = Vec::new();
        for (id, org) in found {
            if let Some(i) = self
                .row_of(&org, "invitation", &id.0)
                .await?
                .invitations
                .pop()
            {
                list.push(i);
            }
        }
        list.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(list)
    }
}
