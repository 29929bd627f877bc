//! Organizations and their members. Every change goes through the organization's actor (or,
//! for creating one, the creator's actor); reads go to the store.
//!
//! Files: `members.rs`, `invitations.rs`, `teams.rs`, `roles.rs` (custom roles), `dto.rs`.
mod dto;
mod invitations;
mod members;
mod roles;
mod service;
mod teams;

pub use invitations::InvitationApi;
pub use members::MemberApi;
pub use roles::RoleApi;
pub use service::Orgs;
pub use teams::TeamApi;
pub(crate) use teams::TeamDto;

/// The organization plugin's operations.
pub type Apis = (OrganizationApi, MemberApi, InvitationApi, TeamApi, RoleApi);

pub fn apis() -> Apis {
    (OrganizationApi, MemberApi, InvitationApi, TeamApi, RoleApi)
}

use crate::audit::{action, Event, Origin};
use crate::dto::{iso, JsonBytes, Nullable, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::OrgPatch;
use dto::*;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::{Member, OrgId, User, UserId};

pub struct OrganizationApi;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CreateBody {
    /// At most 256 characters.
    #[oai(validator(max_length = 256))]
    name: Text,
    /// 1–64 of `[a-z0-9_-]`.
    slug: Text,
    /// Server calls only (with the server credential): create on behalf of this user.
    user_id: Option<Text>,
    /// A logo URL; at most 2048 characters.
    #[oai(validator(max_length = 2048))]
    logo: Option<Text>,
    /// Any JSON object; at most 8192 bytes once serialized.
    metadata: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    keep_current_active_organization: Option<bool>,
}

#[derive(Debug, Object)]
struct SlugBody {
    slug: Text,
}

#[derive(Debug, Object)]
struct UpdateData {
    #[oai(validator(max_length = 256))]
    name: Option<Text>,
    slug: Option<Text>,
    #[oai(validator(max_length = 2048))]
    logo: Option<Text>,
    /// Any JSON object; at most 8192 bytes once serialized.
    metadata: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct UpdateBody {
    data: UpdateData,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SetActiveBody {
    /// `null` clears the active organization.
    organization_id: Option<Text>,
    organization_slug: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct HasPermissionBody {
    /// `{resource: [action, …]}`; all must be granted.
    permissions: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Older clients' name for `permissions`.
    permission: Option<std::collections::BTreeMap<String, Vec<String>>>,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
struct HasPermissionResponse {
    success: bool,
    error: Option<String>,
}

/// What the caller may do in an organization (a Gatehouse extension).
#[derive(Debug, Object)]
struct MemberPermissions {
    /// The caller's roles there, comma-separated.
    role: String,
    /// Every action their roles grant, by resource (`member`, `invitation`, `team`, `ac`,
    /// `organization`).
    permissions: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Object)]
struct SlugStatus {
    status: bool,
}

fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 64
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The largest organization metadata accepted, serialized.
const MAX_METADATA_BYTES: usize = 8192;

/// Organization metadata as stored (JSON text); `VALIDATION_ERROR` past 8192 bytes.
fn metadata_text(
    m: Option<std::collections::BTreeMap<String, serde_json::Value>>,
) -> ApiResult<Option<String>> {
    let Some(m) = m else {
        return Ok(None);
    };
    let text = serde_json::Value::Object(m.into_iter().collect()).to_string();
    if text.len() > MAX_METADATA_BYTES {
        return Err(ApiError::validation(
            false,
            vec![format!("metadata: at most {MAX_METADATA_BYTES} bytes")],
        ));
    }
    Ok(Some(text))
}

pub(crate) fn member_dto_of(m: &Member, u: Option<&User>) -> MemberDto {
    MemberDto {
        id: m.id.0.clone(),
        organization_id: m.organization_id.0.clone(),
        user_id: m.user_id.0.clone(),
        role: m.role.clone(),
        team_id: m.team_id.as_ref().map(|t| t.0.clone()),
        created_at: iso(&m.created_at),
        user: u.map(|u| MemberUserDto {
            id: u.id.0.clone(),
            name: u.name.clone(),
            email: u.email.clone(),
            image: u.image.clone(),
        }),
    }
}

#[OpenApi(prefix_path = "/organization", tag = "Tag::Organization")]
impl OrganizationApi {
    /// Create an organization
    ///
    /// The caller becomes its first member with the creator role (`owner`) and, unless
    /// `keepCurrentActiveOrganization`, it becomes the session's active organization. `userId`
    /// is accepted only from server calls (server credential).
    #[oai(path = "/create", method = "post", operation_id = "createOrganization")]
    async fn create(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<CreateBody>,
    ) -> ApiResult<Json<OrganizationWithMembers>> {
        let body = body.0;
        let pending = req
            .extensions()
            .get::<crate::http::PendingCookies>()
            .ok_or_else(|| ApiError::internal("cookie middleware missing"))?;
        let session = state
            .sessions
            .resolve_session(req, pending, Default::default())
            .await?;
        let (owner, session) = match (text(&body.user_id), state.sessions.server_call_ok(req)) {
            (Some(id), true) => (UserId(id.to_owned()), None),
            (Some(_), false) => return Err(Code::ServerCredentialRequired.into()),
            (None, _) => match session {
                Some(a) => (a.user.id.clone(), Some(a)),
                None => return Err(Code::Unauthorized.into()),
            },
        };
        let (org, member) = state
            .orgs
            .new_organization(
                &owner,
                service::NewOrganization {
                    name: body.name.0,
                    slug: body.slug.0,
                    logo: body.logo.map(|t| t.0),
                    metadata: metadata_text(body.metadata)?,
                },
            )
            .await?;
        // Created and (unless asked not to) made active in the same actor turn.
        let activate = session
            .as_ref()
            .filter(|_| !body.keep_current_active_organization.unwrap_or(false))
            .map(|a| a.session.token.as_str());
        let ev = Event::new(action::ORGANIZATION_CREATED, &Origin::of(req))
            .user(&owner)
            .org(&org.id)
            .target(org.slug.clone());
        let ev = match &session {
            Some(a) => ev
                .actor(&a.user.id)
                .impersonated_by(a.session.impersonated_by.as_ref()),
            None => ev.detail("by", "server"),
        };
        let now_active = state
            .actors
            .user(owner.clone())
            .with(state.audit.noted(ev))
            .create_organization(
                &org,
                &member,
                state.config.limits.organization_limit,
                state.config.organization.default_team,
                activate,
            )
            .await?;
        if let Some(a) = &session {
            state.sessions.reissue_cache(pending, &a.user, now_active);
        }
        tracing::info!(org = %org.id, user = %owner, "organization created");
        Ok(Json(OrganizationWithMembers {
            organization: OrganizationDto::from(&org),
            members: vec![state.orgs.member_dto(&member).await?],
        }))
    }

    /// Check whether a slug is free
    ///
    /// `{status: true}` when free; 400 "slug is taken" otherwise.
    #[oai(path = "/check-slug", method = "post", operation_id = "checkSlug")]
    async fn check_slug(
        &self,
        state: Data<&AppState>,
        _auth: Principal,
        body: Json<SlugBody>,
    ) -> ApiResult<Json<SlugStatus>> {
        if state
            .reader
            .get_organization_by_slug(body.0.slug.0.trim())
            .await?
            .is_some()
        {
            return Err(Code::SlugIsTaken.into());
        }
        Ok(Json(SlugStatus { status: true }))
    }

    /// Update an organization
    ///
    /// Needs `organization:update`. `organizationId` defaults to the active organization.
    #[oai(path = "/update", method = "post", operation_id = "updateOrganization")]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<UpdateBody>,
    ) -> ApiResult<Json<OrganizationDto>> {
        let body = body.0;
        let org = auth.org_id(text(&body.organization_id))?;
        if let Some(s) = text(&body.data.slug) {
            if !valid_slug(s) {
                return Err(ApiError::validation(
                    false,
                    vec!["data.slug: lowercase letters, digits, - and _ (1-64)".into()],
                ));
            }
        }
        let patch = OrgPatch {
            name: body.data.name.map(|t| t.0),
            slug: body.data.slug.map(|t| t.0),
            logo: body.data.logo.map(|t| Some(t.0)),
            metadata: match body.data.metadata {
                Some(m) => Some(metadata_text(Some(m))?),
                None => None,
            },
        };
        let ev = auth.event(action::ORGANIZATION_UPDATED).org(&org);
        let updated = state
            .actors
            .org(org.clone())
            .with(state.audit.noted(ev.clone()))
            .update(auth.acting(), patch)
            .await
            .map_err(ApiError::from);
        let updated = state.audit.audited(ev, updated).await?;
        Ok(Json(OrganizationDto::from(&updated)))
    }

    /// Delete an organization
    ///
    /// Needs `organization:delete` (owners). Members, invitations, teams and roles go with it;
    /// sessions that had it active lose it.
    #[oai(path = "/delete", method = "post", operation_id = "deleteOrganization")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<OrgIdBody>,
    ) -> ApiResult<Json<OrganizationDto>> {
        let org = OrgId(body.0.organization_id.0);
        let ev = auth
            .event(action::ORGANIZATION_DELETED)
            .org(&org)
            .fill(actors::Fill::TargetSlug);
        // As 1.7: a non-member learns nothing, not even whether the organization exists.
        let deleted = state
            .actors
            .org(org.clone())
            .with(state.audit.noted(ev.clone()))
            .delete(auth.acting())
            .await
            .map_err(|e| {
                ApiError::from(e)
                    .recode(Code::NotAMember, Code::NotAMemberToDelete)
                    .recode(Code::OrganizationNotFound, Code::NotAMemberToDelete)
            });
        let deleted = state.audit.audited(ev, deleted).await?;
        Ok(Json(OrganizationDto::stored(&deleted)))
    }

    /// List the caller's organizations
    #[oai(path = "/list", method = "get", operation_id = "listOrganizations")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<OrganizationDto>>> {
        let orgs = state.reader.list_user_organizations(&auth.user.id).await?;
        Ok(Json(orgs.iter().map(OrganizationDto::stored).collect()))
    }

    /// Set the active organization
    ///
    /// By id or slug; `null` clears it. The caller must be a member.
    #[oai(
        path = "/set-active",
        method = "post",
        operation_id = "setActiveOrganization"
    )]
    async fn set_active(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<SetActiveBody>,
    ) -> ApiResult<Json<Nullable<OrganizationDto>>> {
        let user = &auth.user;
        let org = match (
            text(&body.0.organization_id),
            text(&body.0.organization_slug),
        ) {
            (Some(id), _) => Some(state.orgs.existing_org(&OrgId(id.to_owned())).await?),
            (None, Some(slug)) => Some(
                state
                    .reader
                    .get_organization_by_slug(slug)
                    .await?
                    .ok_or(Code::OrganizationNotFound)?,
            ),
            (None, None) => None,
        };
        if let Some(o) = &org {
            state.orgs.require_member(&o.id, &user.id).await?;
        }
        state
            .sessions
            .set_active_org(&auth, org.as_ref().map(|o| o.id.clone()))
            .await?;
        Ok(Json(Nullable(org.as_ref().map(OrganizationDto::stored))))
    }

    /// Get the full organization
    ///
    /// The organization (by `organizationId`, `organizationSlug`, or the active one) with its
    /// members; `null` when there is no active organization. Members only.
    #[oai(
        path = "/get-full-organization",
        method = "get",
        operation_id = "getFullOrganization"
    )]
    async fn get_full(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        #[oai(name = "organizationSlug")] organization_slug: Query<Option<String>>,
    ) -> ApiResult<JsonBytes<Nullable<FullOrganization>>> {
        let org = match (organization_id.0, organization_slug.0) {
            (Some(id), _) => OrgId(id),
            (None, Some(slug)) => {
                state
                    .reader
                    .get_organization_by_slug(&slug)
                    .await?
                    .ok_or(Code::OrganizationNotFound)?
                    .id
            }
            (None, None) => match &auth.session.active_organization_id {
                Some(id) => id.clone(),
                None => return Ok(JsonBytes::new(&Nullable(None))),
            },
        };
        // From this process's view cache, answered as written from the same entry before.
        if let Some(c) = state.reader.cached_view(&org, &auth.user.id) {
            if c.viewer.is_none() {
                return Err(Code::NotAMember.into());
            }
            let body = c.answers.get_or_write("full", || {
                JsonBytes::new(&Nullable(Some(full_organization(&c.view))))
                    .bytes()
                    .clone()
            });
            return Ok(JsonBytes::written(body));
        }
        // One read: the organization, the caller's membership, members with their users,
        // invitations, teams with their sizes.
        let q = storage::ViewQuery {
            viewer: auth.user.id.clone(),
            offset: 0,
            limit: state.config.limits.membership_limit,
            details: true,
        };
        let view = state
            .reader
            .organization_view(&org, &q)
            .await?
            .ok_or(Code::OrganizationNotFound)?;
        if view.viewer.is_none() {
            return Err(Code::NotAMember.into());
        }
        Ok(JsonBytes::new(&Nullable(Some(full_organization(&view)))))
    }

    /// Check the caller's permissions
    ///
    /// Whether the caller's roles in the organization grant every listed permission.
    #[oai(
        path = "/has-permission",
        method = "post",
        operation_id = "hasPermission"
    )]
    async fn has_permission(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<HasPermissionBody>,
    ) -> ApiResult<Json<HasPermissionResponse>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let asked = body
            .0
            .permissions
            .or(body.0.permission)
            .ok_or_else(|| ApiError::validation(false, vec!["permissions: required".into()]))?;
        let perms: policy::Permissions = asked
            .into_iter()
            .map(|(r, a)| (r, a.into_iter().collect()))
            .collect();
        policy::validate_permissions(&perms)
            .map_err(|e| ApiError::validation(false, vec![e.to_string()]))?;
        // Read beside the organization's actor, never queued behind its writes.
        let ok = state
            .actors
            .standing(&org, &auth.user.id)
            .await?
            .allows_all(&perms)?;
        Ok(Json(HasPermissionResponse {
            success: ok,
            error: None,
        }))
    }

    /// What the caller may do in an organization
    ///
    /// A Gatehouse extension: the caller's roles in `organizationId` (default: the active
    /// organization) and every permission they grant, in one answer — what a page asks
    /// instead of one `has-permission` per button. Members only.
    #[oai(
        path = "/get-member-permissions",
        method = "get",
        operation_id = "getMemberPermissions"
    )]
    async fn get_member_permissions(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<MemberPermissions>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        let standing = state.actors.standing(&org, &auth.user.id).await?;
        let permissions = standing
            .permissions()?
            .into_iter()
            .map(|(res, acts)| (res, acts.into_iter().collect()))
            .collect();
        Ok(Json(MemberPermissions {
            role: standing.member.role,
            permissions,
        }))
    }
}

/// get-full-organization's answer for `view` (every member).
fn full_organization(view: &storage::OrganizationView) -> FullOrganization {
    FullOrganization {
        organization: OrganizationDto::stored(&view.organization),
        members: view
            .members
            .iter()
            .map(|(m, u)| member_dto_of(m, u.as_ref()))
            .collect(),
        invitations: view.invitations.iter().map(InvitationDto::from).collect(),
        teams: view
            .teams
            .iter()
            .map(|(t, n)| TeamWithCount {
                team: TeamDto::from(t),
                member_count: *n,
            })
            .collect(),
    }
}
