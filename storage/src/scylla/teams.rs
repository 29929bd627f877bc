//! Teams and their members: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl TeamStore for ScyllaStore {
    async fn get_team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        let Some(row) = self
            .row(
                &format!("SELECT org_id FROM {} WHERE id = ?", self.t("teams_by_id")),
                vec![text(&id.0)],
            )
            .await?
        else {
            return Ok(None);
        };
        let org = OrgId(Cols(&row).text(0)?);
        Ok(self.row_of(&org, "team", &id.0).await?.teams.pop())
    }
    async fn list_teams(&self, org: &OrgId) -> StoreResult<Vec<Team>> {
        Ok(self.rows_of_kind(org, "team").await?.teams)
    }
    async fn list_team_members(&self, team: &Team) -> StoreResult<Vec<TeamMember>> {
        // Keys of team members are `team id/user id`: the team's are one clustering range.
        Ok(self
            .rows_with_prefix(
                &team.organization_id,
                "team_member",
                &format!("{}/", team.id.0),
            )
            .await?
            .team_members)
    }
    async fn list_user_teams(&self, user: &UserId) -> StoreResult<Vec<Team>> {
        let ids: Vec<TeamId> = self
            .rows(
                &format!(
                    "SELECT team_id FROM {} WHERE user_id = ?",
                    self.t("team_members_by_user")
                ),
                vec![text(&user.0)],
            )
            .await?
            .iter()
            .map(|r| Cols(r).text(0).map(TeamId))
            .collect::<StoreResult<_>>()?;
        let mut teams = Vec::new();
        for id in ids {
            if let Some(t) = self.get_team(&id).await? {
                teams.push(t);
            }
        }
        teams.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(teams)
    }
}
