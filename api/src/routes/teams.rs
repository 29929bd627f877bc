//! Teams and custom roles of an organization. Changes go through the organization's actor,
//! which checks `team:*` / `ac:*` permissions; reads need membership.
use super::{text, Tag};
use crate::dto::{iso, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::session::Auth;
use crate::AppState;
use actors::{Acting, RoleChange, TeamChange};
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use std::collections::BTreeMap;
use storage::{OrganizationRole, Team, TeamId, UserId};

pub struct TeamApi;

#[derive(Debug, Object)]
#[oai(rename = "Team", rename_all = "camelCase")]
pub(crate) struct TeamDto {
    id: String,
    name: String,
    organization_id: String,
    created_at: String,
    updated_at: Option<String>,
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

#[derive(Debug, Object)]
#[oai(rename = "OrganizationRole", rename_all = "camelCase")]
struct RoleDto {
    id: String,
    organization_id: String,
    role: String,
    /// `{resource: [action, …]}`.
    permission: BTreeMap<String, Vec<String>>,
    created_at: String,
    updated_at: Option<String>,
}

impl From<&OrganizationRole> for RoleDto {
    fn from(r: &OrganizationRole) -> Self {
        Self {
            id: r.id.0.clone(),
            organization_id: r.organization_id.0.clone(),
            role: r.role.clone(),
            permission: serde_json::from_str(&r.permission).unwrap_or_default(),
            created_at: iso(&r.created_at),
            updated_at: r.updated_at.as_ref().map(iso),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CreateTeamBody {
    name: Text,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
struct TeamData {
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

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CreateRoleBody {
    role: Text,
    /// `{resource: [action, …]}`.
    permission: BTreeMap<String, Vec<String>>,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct RoleData {
    permission: Option<BTreeMap<String, Vec<String>>>,
    role_name: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct UpdateRoleBody {
    role_name: Text,
    data: RoleData,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct DeleteRoleBody {
    role_name: Text,
    organization_id: Option<Text>,
}

fn perms(p: BTreeMap<String, Vec<String>>) -> policy::Permissions {
    p.into_iter()
        .map(|(r, a)| (r, a.into_iter().collect()))
        .collect()
}

fn invalid(e: policy::PolicyError) -> ApiError {
    ApiError::validation(false, vec![e.to_string()])
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
        auth: Auth,
        body: Json<CreateTeamBody>,
    ) -> ApiResult<Json<TeamDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let name = team_name(&body.0.name)?;
        let t = state
            .actors
            .org(org)
            .team(
                Acting::User(auth.0.user.id.clone()),
                TeamChange::Create { name },
            )
            .await?;
        let t = t.ok_or_else(|| ApiError::internal("team missing"))?;
        Ok(Json(TeamDto::from(&t)))
    }

    /// Rename a team
    ///
    /// Needs `team:update`.
    #[oai(path = "/update-team", method = "post", operation_id = "updateTeam")]
    async fn update_team(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<UpdateTeamBody>,
    ) -> ApiResult<Json<TeamDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
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
        let t = state
            .actors
            .org(org)
            .team(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        let t = t.ok_or_else(|| ApiError::internal("team missing"))?;
        Ok(Json(TeamDto::from(&t)))
    }

    /// Remove a team
    ///
    /// Needs `team:delete`. The last team stays unless `organization.allow_removing_all_teams`.
    #[oai(path = "/remove-team", method = "post", operation_id = "removeTeam")]
    async fn remove_team(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<TeamIdBody>,
    ) -> ApiResult<Json<Removed>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let change = TeamChange::Remove {
            team: TeamId(body.0.team_id.0.clone()),
            allow_removing_all: state.config.organization.allow_removing_all_teams,
        };
        state
            .actors
            .org(org)
            .team(Acting::User(auth.0.user.id.clone()), change)
            .await?;
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
        auth: Auth,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<TeamDto>>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_member(&org, &auth.0.user.id).await?;
        Ok(Json(
            state
                .store
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
        auth: Auth,
        body: Json<SetActiveTeamBody>,
    ) -> ApiResult<Json<Option<TeamDto>>> {
        let team = match text(&body.0.team_id) {
            Some(id) => {
                let org = state.org_id(&auth.0, None)?;
                let t = state
                    .store
                    .get_team(&TeamId(id.to_owned()))
                    .await?
                    .filter(|t| t.organization_id == org)
                    .ok_or(Code::TeamNotFound)?;
                let members = state.store.list_team_members(&t.id).await?;
                if !members.iter().any(|m| m.user_id == auth.0.user.id) {
                    return Err(Code::NotAMember.into());
                }
                Some(t)
            }
            None => None,
        };
        state
            .set_active_team(
                &auth.1,
                &auth.0.user,
                &auth.0.session.token,
                team.as_ref().map(|t| t.id.clone()),
            )
            .await?;
        Ok(Json(team.as_ref().map(TeamDto::from)))
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
        auth: Auth,
    ) -> ApiResult<Json<Vec<TeamDto>>> {
        let teams = state.store.list_user_teams(&auth.0.user.id).await?;
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
        auth: Auth,
        body: Json<TeamMemberBody>,
    ) -> ApiResult<Json<TeamDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let change = TeamChange::AddMember {
            team: TeamId(body.0.team_id.0.clone()),
            user: UserId(body.0.user_id.0.clone()),
        };
        let t = state
            .actors
            .org(org)
            .team(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        let t = t.ok_or_else(|| ApiError::internal("team missing"))?;
        Ok(Json(TeamDto::from(&t)))
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
        auth: Auth,
        body: Json<TeamMemberBody>,
    ) -> ApiResult<Json<Removed>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let change = TeamChange::RemoveMember {
            team: TeamId(body.0.team_id.0.clone()),
            user: UserId(body.0.user_id.0.clone()),
        };
        state
            .actors
            .org(org)
            .team(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        Ok(Json(Removed {
            message: "Team member removed successfully.".into(),
        }))
    }

    /// List a team's members
    ///
    /// Members of the organization only.
    #[oai(
        path = "/list-team-members",
        method = "get",
        operation_id = "listTeamMembers"
    )]
    async fn list_team_members(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "teamId")] team_id: Query<String>,
    ) -> ApiResult<Json<Vec<TeamMemberDto>>> {
        let t = state
            .store
            .get_team(&TeamId(team_id.0))
            .await?
            .ok_or(Code::TeamNotFound)?;
        state
            .require_member(&t.organization_id, &auth.0.user.id)
            .await?;
        let members = state.store.list_team_members(&t.id).await?;
        Ok(Json(
            members
                .iter()
                .map(|m| TeamMemberDto {
                    id: m.id.0.clone(),
                    team_id: m.team_id.0.clone(),
                    user_id: m.user_id.0.clone(),
                    created_at: iso(&m.created_at),
                })
                .collect(),
        ))
    }

    /// Create a custom role
    ///
    /// Needs `ac:create`. Valid in this organization only; names of built-in and configured
    /// roles are taken.
    #[oai(path = "/create-role", method = "post", operation_id = "createOrgRole")]
    async fn create_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<CreateRoleBody>,
    ) -> ApiResult<Json<RoleDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let permission = perms(body.0.permission);
        policy::validate_role_name(&body.0.role.0).map_err(invalid)?;
        policy::validate_permissions(&permission).map_err(invalid)?;
        let change = RoleChange::Create {
            role: body.0.role.0.clone(),
            permission,
        };
        let r = state
            .actors
            .org(org)
            .role(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        let r = r.ok_or_else(|| ApiError::internal("role missing"))?;
        Ok(Json(RoleDto::from(&r)))
    }

    /// Update a custom role
    ///
    /// Needs `ac:update`: new permissions and/or a new name (not while members hold it).
    #[oai(path = "/update-role", method = "post", operation_id = "updateOrgRole")]
    async fn update_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<UpdateRoleBody>,
    ) -> ApiResult<Json<RoleDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let permission = body.0.data.permission.map(perms);
        if let Some(p) = &permission {
            policy::validate_permissions(p).map_err(invalid)?;
        }
        if let Some(n) = text(&body.0.data.role_name) {
            policy::validate_role_name(n).map_err(invalid)?;
        }
        let change = RoleChange::Update {
            role: body.0.role_name.0.clone(),
            new_name: text(&body.0.data.role_name).map(str::to_owned),
            permission,
        };
        let r = state
            .actors
            .org(org)
            .role(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        let r = r.ok_or_else(|| ApiError::internal("role missing"))?;
        Ok(Json(RoleDto::from(&r)))
    }

    /// Delete a custom role
    ///
    /// Needs `ac:delete`. Refused (400 `ROLE_IS_ASSIGNED_TO_MEMBERS`) while members hold it.
    #[oai(path = "/delete-role", method = "post", operation_id = "deleteOrgRole")]
    async fn delete_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<DeleteRoleBody>,
    ) -> ApiResult<Json<RoleDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let change = RoleChange::Delete {
            role: body.0.role_name.0.clone(),
        };
        let r = state
            .actors
            .org(org)
            .role(Acting::User(auth.0.user.id.clone()), change)
            .await?;
        let r = r.ok_or_else(|| ApiError::internal("role missing"))?;
        Ok(Json(RoleDto::from(&r)))
    }

    /// List custom roles
    ///
    /// Needs `ac:read` (every built-in role has it).
    #[oai(path = "/list-roles", method = "get", operation_id = "listOrgRoles")]
    async fn list_roles(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<RoleDto>>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_ac_read(&org, &auth.0.user.id).await?;
        Ok(Json(
            state
                .store
                .list_roles(&org)
                .await?
                .iter()
                .map(RoleDto::from)
                .collect(),
        ))
    }

    /// Get a custom role
    ///
    /// Needs `ac:read`.
    #[oai(path = "/get-role", method = "get", operation_id = "getOrgRole")]
    async fn get_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "roleName")] role_name: Query<String>,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<RoleDto>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_ac_read(&org, &auth.0.user.id).await?;
        let r = state
            .store
            .get_role(&org, &role_name.0)
            .await?
            .ok_or(Code::InvalidRole)?;
        Ok(Json(RoleDto::from(&r)))
    }
}

impl AppState {
    /// Membership plus `ac:read`, asked of the organization's policy.
    async fn require_ac_read(&self, org: &storage::OrgId, user: &UserId) -> ApiResult<()> {
        let perms: policy::Permissions =
            [("ac".to_string(), ["read".to_string()].into_iter().collect())]
                .into_iter()
                .collect();
        if self
            .actors
            .org(org.clone())
            .has_permission(user.clone(), perms)
            .await?
        {
            Ok(())
        } else {
            Err(ApiError::with_message(
                Code::Forbidden,
                "You are not allowed to access resource: ac",
            ))
        }
    }
}
