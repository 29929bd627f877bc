//! Teams of an organization: create, rename, remove, members, the active team. Changes go
//! through the organization's actor (the active team through the caller's).
use crate::dto::{iso, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::TeamChange;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::{Team, TeamId, UserId};

pub struct TeamApi;

#[derive(Debug, Clone, Object, serde::Serialize)]
#[oai(rename = "Team", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamDto {
    id: String,
    name: String,
    organization_id: String,
    created_at: String,
    updated_at: Option<String>,
}

#[cfg(test)]
impl TeamDto {
    /// A team with its optional field set or not, for the JSON tests.
    pub(crate) fn sample(full: bool) -> Self {
        Self {
            id: "t1".into(),
            name: "Team".into(),
            organization_id: "o1".into(),
            created_at: "2026-11-24T10:00:00.000Z".into(),
            updated_at: full.then(|| "2026-11-24T11:00:00.000Z".into()),
        }
    }
}

impl From<&Team> for TeamDto {
    fn from(t: &Team) -> Self {
        Self {
            id: t.id.0.clone(),
            name: t.name.clone(),
            organization_id: t.organization_id.0.clone(),
            created_at: iso(&t.created_at),
            updated_at: t.updated_at.as_ref().map(iso),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "TeamMember", rename_all = "camelCase")]
struct TeamMemberDto {
    id: String,
    team_id: String,
    user_id: String,
    created_at: String,
}

impl From<&storage::TeamMember> for TeamMemberDto {
    fn from(m: &storage::TeamMember) -> Self {
        Self {
            id: m.id.0.clone(),
            team_id: m.team_id.0.clone(),
            user_id: m.user_id.0.clone(),
            created_at: iso(&m.created_at),
        }
    }
}

/// A refusal to change a team's members, with better-auth's code for it.
fn team_member_refusal(e: actors::ActorError, code: Code) -> ApiError {
    match e {
        actors::ActorError::Refused(actors::Rule::Forbidden("team", "update")) => code.into(),
        e => e.into(),
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CreateTeamBody {
    /// At most 256 characters.
    #[oai(validator(max_length = 256))]
    name: Text,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
struct TeamData {
    #[oai(validator(max_length = 256))]
    name: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct UpdateTeamBody {
    team_id: Text,
    data: TeamData,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct TeamIdBody {
    team_id: Text,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SetActiveTeamBody {
    /// `null` clears the active team.
    team_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct TeamMemberBody {
    team_id: Text,
    user_id: Text,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
struct Removed {
    message: String,
}

fn team_name(t: &Text) -> ApiResult<String> {
    let name = t.0.trim();
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::validation(
            false,
            vec!["name: 1 to 128 characters".into()],
        ));
    }
    Ok(name.to_owned())
}

#[OpenApi(prefix_path = "/organization", tag = "Tag::Organization")]
impl TeamApi {
    /// Create a team
    ///
    /// Needs `team:create`. Names are unique within the organization.
    #[oai(path = "/create-team", method = "post", operation_id = "createTeam")]
    async fn create_team(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<CreateTeamBody>,
    ) -> ApiResult<Json<TeamDto>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let name = team_name(&body.0.name)?;
        let t = state
            .actors
            .org(org)
            .team(auth.acting(), TeamChange::Create { name })
            .await?;
        Ok(Json(TeamDto::from(&t)))
    }

    /// Rename a team
    ///
    /// Needs `team:update`.
    #[oai(path = "/update-team", method = "post", operation_id = "updateTeam")]
    async fn update_team(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<UpdateTeamBody>,
    ) -> ApiResult<Json<TeamDto>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let name = match &body.0.data.name {
            Some(n) => team_name(n)?,
            None => {
                return Err(ApiError::validation(
                    false,
                    vec!["data.name: required".into()],
                ))
            }
        };
        let change = TeamChange::Rename {
            team: TeamId(body.0.team_id.0.clone()),
            name,
        };
        let t = state.actors.org(org).team(auth.acting(), change).await?;
        Ok(Json(TeamDto::from(&t)))
    }

    /// Remove a team
    ///
    /// Needs `team:delete`. The last team stays unless `organization.allow_removing_all_teams`.
    #[oai(path = "/remove-team", method = "post", operation_id = "removeTeam")]
    async fn remove_team(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<TeamIdBody>,
    ) -> ApiResult<Json<Removed>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let change = TeamChange::Remove {
            team: TeamId(body.0.team_id.0.clone()),
            allow_removing_all: state.config.organization.allow_removing_all_teams,
        };
        state.actors.org(org).team(auth.acting(), change).await?;
        Ok(Json(Removed {
            message: "Team removed successfully.".into(),
        }))
    }

    /// List an organization's teams
    ///
    /// Members only.
    #[oai(
        path = "/list-teams",
        method = "get",
        operation_id = "listOrganizationTeams"
    )]
    async fn list_teams(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<TeamDto>>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        state.orgs.require_member(&org, &auth.user.id).await?;
        Ok(Json(
            state
                .reader
                .list_teams(&org)
                .await?
                .iter()
                .map(TeamDto::from)
                .collect(),
        ))
    }

    /// Set the active team
    ///
    /// A team of the active organization the caller belongs to; `null` clears it.
    #[oai(
        path = "/set-active-team",
        method = "post",
        operation_id = "setActiveTeam"
    )]
    async fn set_active_team(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<SetActiveTeamBody>,
    ) -> ApiResult<Json<crate::dto::Nullable<TeamDto>>> {
        let team = match text(&body.0.team_id) {
            Some(id) => Some(
                state
                    .orgs
                    .team_to_activate(&auth.org_id(None)?, id, &auth.user.id)
                    .await?,
            ),
            None => None,
        };
        state
            .sessions
            .set_active_team(&auth, team.as_ref().map(|t| t.id.clone()))
            .await?;
        Ok(Json(crate::dto::Nullable(team.as_ref().map(TeamDto::from))))
    }

    /// List the caller's teams
    #[oai(
        path = "/list-user-teams",
        method = "get",
        operation_id = "listUserTeams"
    )]
    async fn list_user_teams(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<TeamDto>>> {
        let teams = state.reader.list_user_teams(&auth.user.id).await?;
        Ok(Json(teams.iter().map(TeamDto::from).collect()))
    }

    /// Add a member to a team
    ///
    /// Needs `team:update`; the user must be a member of the organization.
    #[oai(
        path = "/add-team-member",
        method = "post",
        operation_id = "addTeamMember"
    )]
    async fn add_team_member(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<TeamMemberBody>,
    ) -> ApiResult<Json<TeamMemberDto>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let change = TeamChange::AddMember {
            team: TeamId(body.0.team_id.0.clone()),
            user: UserId(body.0.user_id.0.clone()),
        };
        let outcome = state
            .actors
            .org(org)
            .team_change(auth.acting(), change)
            .await
            .map_err(|e| team_member_refusal(e, Code::NotAllowedToCreateTeamMember))?;
        let added = outcome.member.ok_or(Code::TeamNotFound)?;
        Ok(Json(TeamMemberDto::from(&added)))
    }

    /// Remove a member from a team
    ///
    /// Needs `team:update`, or removing oneself.
    #[oai(
        path = "/remove-team-member",
        method = "post",
        operation_id = "removeTeamMember"
    )]
    async fn remove_team_member(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<TeamMemberBody>,
    ) -> ApiResult<Json<Removed>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let change = TeamChange::RemoveMember {
            team: TeamId(body.0.team_id.0.clone()),
            user: UserId(body.0.user_id.0.clone()),
        };
        state
            .actors
            .org(org)
            .team(auth.acting(), change)
            .await
            .map_err(|e| team_member_refusal(e, Code::NotAllowedToRemoveTeamMember))?;
        Ok(Json(Removed {
            message: "Team member removed successfully.".into(),
        }))
    }

    /// List a team's members
    ///
    /// For the team's own members, and for members who may manage teams (`team:update`).
    #[oai(
        path = "/list-team-members",
        method = "get",
        operation_id = "listTeamMembers"
    )]
    async fn list_team_members(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "teamId")] team_id: Query<String>,
    ) -> ApiResult<Json<Vec<TeamMemberDto>>> {
        let t = state
            .reader
            .get_team(&TeamId(team_id.0))
            .await?
            .ok_or(Code::TeamNotFound)?;
        let standing = state
            .actors
            .standing(&t.organization_id, &auth.user.id)
            .await?;
        let members = state.reader.list_team_members(&t).await?;
        // A team's members are listed to its own members (as 1.7), and to whoever may manage
        // teams (1.7 refuses an owner outside the team the list she manages).
        let manages = standing.allows_all(&policy::Permissions::from([(
            "team".to_owned(),
            std::collections::BTreeSet::from(["update".to_owned()]),
        )]))?;
        if !manages && !members.iter().any(|m| m.user_id == auth.user.id) {
            return Err(Code::NotATeamMemberToList.into());
        }
        Ok(Json(members.iter().map(TeamMemberDto::from).collect()))
    }
}
