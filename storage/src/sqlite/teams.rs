//! Teams and their members: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;

#[async_trait]
impl TeamStore for SqliteStore {
    async fn get_team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {TEAM_COLS} FROM teams WHERE id = ?1"),
                [id],
                team_row,
            )
        })
        .await
    }
    async fn list_teams(&self, org: &OrgId) -> StoreResult<Vec<Team>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {TEAM_COLS} FROM teams WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                team_row,
            )
        })
        .await
    }
    async fn list_team_members(&self, team: &Team) -> StoreResult<Vec<TeamMember>> {
        let t = team.id.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT id, team_id, user_id, created_at FROM team_members WHERE team_id = ?1 \
                 ORDER BY created_at, id",
                [t],
                team_member_row,
            )
        })
        .await
    }
    async fn list_user_teams(&self, user: &UserId) -> StoreResult<Vec<Team>> {
        let u = user.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT t.id, t.name, t.organization_id, t.created_at, t.updated_at FROM teams t \
                 JOIN team_members tm ON tm.team_id = t.id WHERE tm.user_id = ?1 \
                 ORDER BY t.created_at, t.id",
                [u],
                team_row,
            )
        })
        .await
    }
}
