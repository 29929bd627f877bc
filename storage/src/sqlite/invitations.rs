//! Invitations: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;

#[async_trait]
impl InvitationStore for SqliteStore {
    async fn get_invitation(&self, id: &InvitationId) -> StoreResult<Option<Invitation>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE id = ?1"),
                [id],
                invitation_row,
            )
        })
        .await
    }
    async fn list_invitations(&self, org: &OrgId) -> StoreResult<Vec<Invitation>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                invitation_row,
            )
        })
        .await
    }
    async fn list_invitations_by_email(&self, email: &str) -> StoreResult<Vec<Invitation>> {
        let e = email.to_lowercase();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE email = ?1 ORDER BY created_at, id"),
                [e],
                invitation_row,
            )
        })
        .await
    }
}
