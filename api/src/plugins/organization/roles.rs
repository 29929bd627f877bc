//! Custom roles of an organization (the access-control surface): create, update, delete, list,
//! read. Changes go through the organization's actor, which also checks that nobody grants more
//! than they hold.
use crate::audit::action;
use crate::dto::{iso, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::RoleChange;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use std::collections::BTreeMap;
use storage::OrganizationRole;

/// Custom-role operations (tag Organization).
pub struct RoleApi;

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

/// A created role, and the permissions it was given (as better-auth 1.7 answers).
#[derive(Debug, Object)]
#[oai(rename = "CreatedOrganizationRole", rename_all = "camelCase")]
struct RoleCreated {
    success: bool,
    role_data: RoleDto,
    /// `{resource: [action, …]}`.
    statements: BTreeMap<String, Vec<String>>,
}

/// An updated role.
#[derive(Debug, Object)]
#[oai(rename = "UpdatedOrganizationRole", rename_all = "camelCase")]
struct RoleUpdated {
    success: bool,
    role_data: RoleDto,
}

/// A deleted role.
#[derive(Debug, Object)]
#[oai(rename = "DeletedOrganizationRole")]
struct RoleDeleted {
    success: bool,
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

/// One resource and the actions a role may be granted on it.
#[derive(Debug, Object)]
struct CatalogResource {
    resource: String,
    actions: Vec<String>,
}

/// A role valid in every organization (built-in or configured).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CatalogRole {
    role: String,
    /// `owner`, `admin` or `member`; otherwise a role from the server's configuration.
    built_in: bool,
    /// `{resource: [action, …]}` the role grants.
    permission: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Object)]
struct PermissionCatalog {
    /// Every resource and action of the permission model, in a stable order.
    resources: Vec<CatalogResource>,
    /// The roles every organization has (its custom roles come from `list-roles`).
    roles: Vec<CatalogRole>,
    /// What only owners hold and only owners may grant.
    #[oai(rename = "ownerOnly")]
    owner_only: BTreeMap<String, Vec<String>>,
}

fn wire(p: &policy::Permissions) -> BTreeMap<String, Vec<String>> {
    p.iter()
        .map(|(r, a)| (r.clone(), a.iter().cloned().collect()))
        .collect()
}

#[OpenApi(prefix_path = "/organization", tag = "Tag::Organization")]
impl RoleApi {
    /// The permission catalogue
    ///
    /// Every resource × action a role can grant, the roles valid in every organization with
    /// what each grants, and what only owners may grant: what a roles editor needs. Not part
    /// of better-auth; needs a session.
    #[oai(
        path = "/permission-catalog",
        method = "get",
        operation_id = "getPermissionCatalog"
    )]
    async fn permission_catalog(
        &self,
        state: Data<&AppState>,
        _auth: Principal,
    ) -> Json<PermissionCatalog> {
        Json(PermissionCatalog {
            resources: policy::RESOURCES
                .iter()
                .map(|(res, acts)| CatalogResource {
                    resource: res.to_string(),
                    actions: acts.iter().map(|a| a.to_string()).collect(),
                })
                .collect(),
            roles: state
                .role_catalog
                .roles
                .iter()
                .map(|(role, perms)| CatalogRole {
                    built_in: policy::BUILTIN_ROLES.contains(&role.as_str()),
                    role: role.clone(),
                    permission: wire(perms),
                })
                .collect(),
            owner_only: wire(&state.role_catalog.owner_only),
        })
    }

    /// Create a custom role
    ///
    /// Needs `ac:create`. Valid in this organization only; names of built-in and configured
    /// roles are taken.
    #[oai(path = "/create-role", method = "post", operation_id = "createOrgRole")]
    async fn create_role(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<CreateRoleBody>,
    ) -> ApiResult<Json<RoleCreated>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let permission = perms(body.0.permission);
        let change = RoleChange::Create {
            role: body.0.role.0.clone(),
            permission,
        };
        let ev = auth
            .event(action::ROLE_CREATED)
            .org(&org)
            .target(body.0.role.0.clone());
        let r = state
            .actors
            .org(org)
            .with(state.audit.noted(ev.clone()))
            .role(auth.acting(), change)
            .await;
        let r = state.audit.audited(ev, r.map_err(ApiError::from)).await?;
        let role_data = RoleDto::from(&r);
        Ok(Json(RoleCreated {
            success: true,
            statements: role_data.permission.clone(),
            role_data,
        }))
    }

    /// Update a custom role
    ///
    /// Needs `ac:update`: new permissions and/or a new name (not while members hold it).
    #[oai(path = "/update-role", method = "post", operation_id = "updateOrgRole")]
    async fn update_role(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<UpdateRoleBody>,
    ) -> ApiResult<Json<RoleUpdated>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let permission = body.0.data.permission.map(perms);
        let change = RoleChange::Update {
            role: body.0.role_name.0.clone(),
            new_name: text(&body.0.data.role_name).map(str::to_owned),
            permission,
        };
        let mut ev = auth
            .event(action::ROLE_UPDATED)
            .org(&org)
            .target(body.0.role_name.0.clone());
        if let Some(n) = text(&body.0.data.role_name) {
            ev = ev.detail("newName", n);
        }
        let r = state
            .actors
            .org(org)
            .with(state.audit.noted(ev.clone()))
            .role(auth.acting(), change)
            .await;
        let r = state.audit.audited(ev, r.map_err(ApiError::from)).await?;
        Ok(Json(RoleUpdated {
            success: true,
            role_data: RoleDto::from(&r),
        }))
    }

    /// Delete a custom role
    ///
    /// Needs `ac:delete`. Refused (400 `ROLE_IS_ASSIGNED_TO_MEMBERS`) while members hold it.
    #[oai(path = "/delete-role", method = "post", operation_id = "deleteOrgRole")]
    async fn delete_role(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<DeleteRoleBody>,
    ) -> ApiResult<Json<RoleDeleted>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let change = RoleChange::Delete {
            role: body.0.role_name.0.clone(),
        };
        let ev = auth
            .event(action::ROLE_DELETED)
            .org(&org)
            .target(body.0.role_name.0.clone());
        let r = state
            .actors
            .org(org)
            .with(state.audit.noted(ev.clone()))
            .role(auth.acting(), change)
            .await;
        state.audit.audited(ev, r.map_err(ApiError::from)).await?;
        Ok(Json(RoleDeleted { success: true }))
    }

    /// List custom roles
    ///
    /// Needs `ac:read` (every built-in role has it).
    #[oai(path = "/list-roles", method = "get", operation_id = "listOrgRoles")]
    async fn list_roles(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<RoleDto>>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        state.orgs.require_ac_read(&org, &auth.user.id).await?;
        Ok(Json(
            state
                .reader
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
        auth: Principal,
        #[oai(name = "roleName")] role_name: Query<String>,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<RoleDto>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        state.orgs.require_ac_read(&org, &auth.user.id).await?;
        let r = state
            .reader
            .get_role(&org, &role_name.0)
            .await?
            .ok_or(Code::InvalidRole)?;
        Ok(Json(RoleDto::from(&r)))
    }
}
