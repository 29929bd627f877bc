//! Teams: create, rename, remove (never the last one unless allowed), and their members.
use super::{guarded, Acting, Decision, OrgActor, OrgState, TeamChange, TeamOutcome};
use crate::{ActorError, Rule};
use storage::{OrgChange, Team, TeamId, TeamMember, TeamMemberId};

fn new_team(state: &OrgState, name: &str, now: chrono::DateTime<chrono::Utc>) -> Team {
    Team {
        id: TeamId::generate(),
        name: name.to_owned(),
        organization_id: state.id.clone(),
        created_at: now,
        updated_at: Some(now),
    }
}

impl OrgActor {
    async fn own_team(&self, state: &OrgState, id: &TeamId) -> Result<Team, ActorError> {
        // A team of another organization is "not found" here.
        self.shared
            .store
            .get_team(id)
            .await?
            .filter(|t| t.organization_id == state.id)
            .ok_or(ActorError::Refused(Rule::TeamNotFound))
    }

    pub(super) async fn team(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        change: &TeamChange,
    ) -> Result<TeamOutcome, ActorError> {
        let only = |team: Team| TeamOutcome { team, member: None };
        guarded!(self, state, |org| async {
            let store = &self.shared.store;
            let now = self.shared.clock.now();
            match change {
                TeamChange::Create { name } => {
                    self.check(state, &org, acting, "team", "create").await?;
                    let team = new_team(state, name, now);
                    Ok(Decision::on(
                        org,
                        vec![OrgChange::CreateTeam(team.clone())],
                        only(team),
                    ))
                }
                TeamChange::CreateWithMember { name, user } => {
                    self.check(state, &org, acting, "team", "create").await?;
                    self.member_of(state, user)
                        .await
                        .map_err(|_| ActorError::Refused(Rule::MemberNotFound))?;
                    let team = new_team(state, name, now);
                    let tm = TeamMember {
                        id: TeamMemberId::generate(),
                        team_id: team.id.clone(),
                        user_id: user.clone(),
                        created_at: now,
                    };
                    Ok(Decision::on(
                        org,
                        vec![
                            OrgChange::CreateTeam(team.clone()),
                            OrgChange::AddTeamMember(tm.clone()),
                        ],
                        TeamOutcome {
                            team,
                            member: Some(tm),
                        },
                    ))
                }
                TeamChange::Rename { team, name } => {
                    self.check(state, &org, acting, "team", "update").await?;
                    let mut t = self.own_team(state, team).await?;
                    t.name = name.clone();
                    t.updated_at = Some(now);
                    Ok(Decision::on(
                        org,
                        vec![OrgChange::UpdateTeam(t.clone())],
                        only(t),
                    ))
                }
                TeamChange::Remove {
                    team,
                    allow_removing_all,
                } => {
                    self.check(state, &org, acting, "team", "delete").await?;
                    let t = self.own_team(state, team).await?;
                    if !allow_removing_all && store.list_teams(&state.id).await?.len() <= 1 {
                        return Err(ActorError::Refused(Rule::LastTeam));
                    }
                    Ok(Decision::on(
                        org,
                        vec![OrgChange::DeleteTeam(t.id.clone())],
                        only(t),
                    ))
                }
                TeamChange::AddMember { team, user } => {
                    self.check(state, &org, acting, "team", "update").await?;
                    let t = self.own_team(state, team).await?;
                    self.member_of(state, user)
                        .await
                        .map_err(|_| ActorError::Refused(Rule::MemberNotFound))?;
                    let tm = TeamMember {
                        id: TeamMemberId::generate(),
                        team_id: t.id.clone(),
                        user_id: user.clone(),
                        created_at: now,
                    };
                    Ok(Decision::on(
                        org,
                        vec![OrgChange::AddTeamMember(tm.clone())],
                        TeamOutcome {
                            team: t,
                            member: Some(tm),
                        },
                    ))
                }
                TeamChange::RemoveMember { team, user } => {
                    let leaving_self = matches!(acting, Acting::User(u) if u == user);
                    if !leaving_self {
                        self.check(state, &org, acting, "team", "update").await?;
                    }
                    let t = self.own_team(state, team).await?;
                    let in_team = store
                        .list_team_members(&t)
                        .await?
                        .iter()
                        .any(|m| &m.user_id == user);
                    if !in_team {
                        return Err(ActorError::Refused(Rule::MemberNotFound));
                    }
                    let change = OrgChange::RemoveTeamMember {
                        team: t.id.clone(),
                        user: user.clone(),
                    };
                    Ok(Decision::on(org, vec![change], only(t)))
                }
            }
        })
    }
}
