//! Organizations and their members. Every change goes through the organization's actor (or,
//! for creating one, the creator's actor); reads go to the store.
use super::{text, Tag};
use crate::dto::{iso, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::session::{Auth, Authed};
use crate::AppState;
use actors::{Acting, OrgPatch};
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, Union};
use storage::{
    Invitation, InvitationId, InvitationStatus, Member, MemberId, OrgId, Organization, TeamId,
    UserId,
};

pub struct OrganizationApi;

#[derive(Debug, Clone, Object)]
#[oai(rename = "Organization", rename_all = "camelCase")]
pub struct OrganizationDto {
    id: String,
    name: String,
    slug: String,
    logo: Option<String>,
    /// The organization's metadata object, or `null`.
    metadata: Option<serde_json::Value>,
    created_at: String,
}

impl From<&Organization> for OrganizationDto {
    fn from(o: &Organization) -> Self {
        Self {
            id: o.id.0.clone(),
            name: o.name.clone(),
            slug: o.slug.clone(),
            logo: o.logo.clone(),
            metadata: o
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
            created_at: iso(&o.created_at),
        }
    }
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "MemberUser")]
struct MemberUserDto {
    id: String,
    name: String,
    email: String,
    image: Option<String>,
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "Member", rename_all = "camelCase")]
struct MemberDto {
    id: String,
    organization_id: String,
    user_id: String,
    /// One or several comma-separated roles.
    role: String,
    team_id: Option<String>,
    created_at: String,
    user: Option<MemberUserDto>,
}

#[derive(Debug, Object)]
#[oai(rename = "OrganizationWithMembers")]
struct OrganizationWithMembers {
    #[oai(flatten)]
    organization: OrganizationDto,
    members: Vec<MemberDto>,
}

#[derive(Debug, Object)]
#[oai(rename = "FullOrganization")]
struct FullOrganization {
    #[oai(flatten)]
    organization: OrganizationDto,
    members: Vec<MemberDto>,
    invitations: Vec<InvitationDto>,
    teams: Vec<super::TeamDto>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct CreateBody {
    name: Text,
    slug: Text,
    /// Server calls only (with the server credential): create on behalf of this user.
    user_id: Option<Text>,
    logo: Option<Text>,
    metadata: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    keep_current_active_organization: Option<bool>,
}

#[derive(Debug, Object)]
struct SlugBody {
    slug: Text,
}

#[derive(Debug, Object)]
struct UpdateData {
    name: Option<Text>,
    slug: Option<Text>,
    logo: Option<Text>,
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
struct OrgIdBody {
    organization_id: Text,
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
struct AddMemberBody {
    user_id: Text,
    role: RoleInput,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct RemoveMemberBody {
    /// A member id, or the member's email.
    member_id_or_email: Text,
    organization_id: Option<Text>,
}

#[derive(Debug, Object)]
struct MemberResponse {
    member: MemberDto,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct UpdateMemberRoleBody {
    member_id: Text,
    role: RoleInput,
    organization_id: Option<Text>,
}

/// A role as a string (`"admin"` or `"admin,member"`) or a list of roles.
#[derive(Debug, Union)]
enum RoleInput {
    One(String),
    Many(Vec<String>),
}

impl RoleInput {
    fn joined(&self) -> String {
        match self {
            RoleInput::One(s) => s.clone(),
            RoleInput::Many(v) => v.join(","),
        }
    }
}

#[derive(Debug, Object)]
struct ListMembersResponse {
    members: Vec<MemberDto>,
    total: u64,
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

#[derive(Debug, Clone, Object)]
#[oai(rename = "Invitation", rename_all = "camelCase")]
struct InvitationDto {
    id: String,
    organization_id: String,
    email: String,
    role: String,
    /// pending, accepted, rejected or canceled.
    status: String,
    team_id: Option<String>,
    inviter_id: String,
    expires_at: String,
    created_at: String,
}

impl From<&Invitation> for InvitationDto {
    fn from(i: &Invitation) -> Self {
        Self {
            id: i.id.0.clone(),
            organization_id: i.organization_id.0.clone(),
            email: i.email.clone(),
            role: i.role.clone(),
            status: i.status.as_str().to_owned(),
            team_id: i.team_id.as_ref().map(|t| t.0.clone()),
            inviter_id: i.inviter_id.0.clone(),
            expires_at: iso(&i.expires_at),
            created_at: iso(&i.created_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "InvitationDetails", rename_all = "camelCase")]
struct InvitationDetails {
    #[oai(flatten)]
    invitation: InvitationDto,
    organization_name: String,
    organization_slug: String,
    inviter_email: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct InviteBody {
    email: Text,
    role: RoleInput,
    organization_id: Option<Text>,
    team_id: Option<Text>,
    /// Send the mail again for a pending invitation instead of refusing.
    resend: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct InvitationIdBody {
    invitation_id: Text,
}

#[derive(Debug, Object)]
struct InvitationAnswer {
    invitation: InvitationDto,
    member: Option<MemberDto>,
}

#[derive(Debug, Object)]
struct MemberRole {
    role: String,
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

fn metadata_text(
    m: Option<std::collections::BTreeMap<String, serde_json::Value>>,
) -> Option<String> {
    m.map(|m| serde_json::Value::Object(m.into_iter().collect()).to_string())
}

impl AppState {
    /// The organization named by `id`, or the session's active one.
    pub(crate) fn org_id(&self, authed: &Authed, id: Option<&str>) -> ApiResult<OrgId> {
        match id {
            Some(id) => Ok(OrgId(id.to_owned())),
            None => authed
                .session
                .active_organization_id
                .clone()
                .ok_or_else(|| Code::NoActiveOrganization.into()),
        }
    }

    async fn member_dto(&self, m: &Member) -> ApiResult<MemberDto> {
        let user = self
            .store
            .get_user(&m.user_id)
            .await?
            .map(|u| MemberUserDto {
                id: u.id.0,
                name: u.name,
                email: u.email,
                image: u.image,
            });
        Ok(MemberDto {
            id: m.id.0.clone(),
            organization_id: m.organization_id.0.clone(),
            user_id: m.user_id.0.clone(),
            role: m.role.clone(),
            team_id: m.team_id.as_ref().map(|t| t.0.clone()),
            created_at: iso(&m.created_at),
            user,
        })
    }

    async fn member_dtos(&self, members: &[Member]) -> ApiResult<Vec<MemberDto>> {
        let mut out = Vec::with_capacity(members.len());
        for m in members {
            out.push(self.member_dto(m).await?);
        }
        Ok(out)
    }

    /// The caller's membership, or 403 when not a member.
    pub(crate) async fn require_member(&self, org: &OrgId, user: &UserId) -> ApiResult<Member> {
        self.store
            .get_member(org, user)
            .await?
            .ok_or_else(|| Code::NotAMember.into())
    }

    /// The invitation and its organization, for its recipient: pending, unexpired, and the
    /// caller's (verified, unless configured otherwise) address.
    async fn invitation_for(
        &self,
        authed: &Authed,
        id: &str,
    ) -> ApiResult<(Invitation, Organization)> {
        let inv = self
            .store
            .get_invitation(&InvitationId(id.to_owned()))
            .await?
            .filter(|i| i.status == InvitationStatus::Pending && i.expires_at > self.clock.now())
            .ok_or(Code::InvitationNotFound)?;
        if inv.email != authed.user.email {
            return Err(Code::NotRecipient.into());
        }
        if self
            .config
            .organization
            .require_email_verification_on_invitation
            && !authed.user.email_verified
        {
            return Err(Code::InvitationEmailNotVerified.into());
        }
        let org = self.existing_org(&inv.organization_id).await?;
        Ok((inv, org))
    }

    async fn existing_org(&self, id: &OrgId) -> ApiResult<Organization> {
        self.store
            .get_organization(id)
            .await?
            .ok_or_else(|| Code::OrganizationNotFound.into())
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
            .resolve_session(req, pending, Default::default())
            .await?;
        let (owner, session) = match (text(&body.user_id), state.server_call_ok(req)) {
            (Some(id), true) => (UserId(id.to_owned()), None),
            (Some(_), false) => return Err(Code::ServerCredentialRequired.into()),
            (None, _) => match session {
                Some(a) => (a.user.id.clone(), Some(a)),
                None => return Err(Code::Unauthorized.into()),
            },
        };
        if state.store.get_user(&owner).await?.is_none() {
            return Err(Code::UserNotFound.into());
        }
        let slug = body.slug.0.trim().to_owned();
        if !valid_slug(&slug) {
            return Err(ApiError::validation(
                false,
                vec!["slug: lowercase letters, digits, - and _ (1-64)".into()],
            ));
        }
        if body.name.0.trim().is_empty() {
            return Err(ApiError::validation(false, vec!["name: required".into()]));
        }
        let now = state.clock.now();
        let org = Organization {
            id: OrgId::generate(),
            name: body.name.0.trim().to_owned(),
            slug,
            logo: body.logo.map(|t| t.0),
            metadata: metadata_text(body.metadata),
            created_at: now,
        };
        let member = Member {
            id: MemberId::generate(),
            organization_id: org.id.clone(),
            user_id: owner.clone(),
            role: state.config.organization.creator_role.clone(),
            team_id: None,
            created_at: now,
        };
        state
            .actors
            .user(owner.clone())
            .create_organization(&org, &member, state.config.limits.organization_limit)
            .await?;
        if let Some(a) = session {
            if !body.keep_current_active_organization.unwrap_or(false) {
                state
                    .set_active_org(pending, &a.user, &a.session.token, Some(org.id.clone()))
                    .await?;
            }
        }
        tracing::info!(org = %org.id, user = %owner, "organization created");
        Ok(Json(OrganizationWithMembers {
            organization: OrganizationDto::from(&org),
            members: vec![state.member_dto(&member).await?],
        }))
    }

    /// Check whether a slug is free
    ///
    /// `{status: true}` when free; 400 "slug is taken" otherwise.
    #[oai(path = "/check-slug", method = "post", operation_id = "checkSlug")]
    async fn check_slug(
        &self,
        state: Data<&AppState>,
        _auth: Auth,
        body: Json<SlugBody>,
    ) -> ApiResult<Json<SlugStatus>> {
        if state
            .store
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
        auth: Auth,
        body: Json<UpdateBody>,
    ) -> ApiResult<Json<OrganizationDto>> {
        let body = body.0;
        let org = state.org_id(&auth.0, text(&body.organization_id))?;
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
            metadata: body.data.metadata.map(|m| metadata_text(Some(m))),
        };
        let updated = state
            .actors
            .org(org)
            .update(Acting::User(auth.0.user.id.clone()), patch)
            .await
            .map_err(|e| match e {
                actors::ActorError::Conflict(_) => Code::OrganizationAlreadyExists.into(),
                other => ApiError::from(other),
            })?;
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
        auth: Auth,
        body: Json<OrgIdBody>,
    ) -> ApiResult<Json<OrganizationDto>> {
        let org = OrgId(body.0.organization_id.0);
        let deleted = state
            .actors
            .org(org)
            .delete(Acting::User(auth.0.user.id.clone()))
            .await?;
        Ok(Json(OrganizationDto::from(&deleted)))
    }

    /// List the caller's organizations
    #[oai(path = "/list", method = "get", operation_id = "listOrganizations")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: Auth,
    ) -> ApiResult<Json<Vec<OrganizationDto>>> {
        let orgs = state.store.list_user_organizations(&auth.0.user.id).await?;
        Ok(Json(orgs.iter().map(OrganizationDto::from).collect()))
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
        auth: Auth,
        body: Json<SetActiveBody>,
    ) -> ApiResult<Json<Option<OrganizationDto>>> {
        let Authed { user, session } = auth.0;
        let org = match (
            text(&body.0.organization_id),
            text(&body.0.organization_slug),
        ) {
            (Some(id), _) => Some(state.existing_org(&OrgId(id.to_owned())).await?),
            (None, Some(slug)) => Some(
                state
                    .store
                    .get_organization_by_slug(slug)
                    .await?
                    .ok_or(Code::OrganizationNotFound)?,
            ),
            (None, None) => None,
        };
        if let Some(o) = &org {
            state.require_member(&o.id, &user.id).await?;
        }
        state
            .set_active_org(
                &auth.1,
                &user,
                &session.token,
                org.as_ref().map(|o| o.id.clone()),
            )
            .await?;
        Ok(Json(org.as_ref().map(OrganizationDto::from)))
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
        auth: Auth,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        #[oai(name = "organizationSlug")] organization_slug: Query<Option<String>>,
    ) -> ApiResult<Json<Option<FullOrganization>>> {
        let org = match (organization_id.0, organization_slug.0) {
            (Some(id), _) => state.existing_org(&OrgId(id)).await?,
            (None, Some(slug)) => state
                .store
                .get_organization_by_slug(&slug)
                .await?
                .ok_or(Code::OrganizationNotFound)?,
            (None, None) => match &auth.0.session.active_organization_id {
                Some(id) => state.existing_org(id).await?,
                None => return Ok(Json(None)),
            },
        };
        state.require_member(&org.id, &auth.0.user.id).await?;
        let limit = state.config.limits.membership_limit;
        let members = state.store.list_members(&org.id, limit, 0).await?;
        Ok(Json(Some(FullOrganization {
            organization: OrganizationDto::from(&org),
            members: state.member_dtos(&members).await?,
            invitations: state
                .store
                .list_invitations(&org.id)
                .await?
                .iter()
                .map(InvitationDto::from)
                .collect(),
            teams: state
                .store
                .list_teams(&org.id)
                .await?
                .iter()
                .map(super::TeamDto::from)
                .collect(),
        })))
    }

    /// Get the caller's membership in the active organization
    #[oai(
        path = "/get-active-member",
        method = "get",
        operation_id = "getActiveMember"
    )]
    async fn get_active_member(
        &self,
        state: Data<&AppState>,
        auth: Auth,
    ) -> ApiResult<Json<MemberDto>> {
        let org = state.org_id(&auth.0, None)?;
        let m = state
            .store
            .get_member(&org, &auth.0.user.id)
            .await?
            .ok_or(Code::MemberNotFound)?;
        Ok(Json(state.member_dto(&m).await?))
    }

    /// Get a member's role in the active organization
    ///
    /// The caller's own, or (`userId`) another member's; members only.
    #[oai(
        path = "/get-active-member-role",
        method = "get",
        operation_id = "getActiveMemberRole"
    )]
    async fn get_active_member_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "userId")] user_id: Query<Option<String>>,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<MemberRole>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_member(&org, &auth.0.user.id).await?;
        let who = user_id
            .0
            .map(UserId)
            .unwrap_or_else(|| auth.0.user.id.clone());
        let m = state
            .store
            .get_member(&org, &who)
            .await?
            .ok_or(Code::MemberNotFound)?;
        Ok(Json(MemberRole { role: m.role }))
    }

    /// List members
    ///
    /// Of `organizationId` or the active organization, oldest first, with `limit`/`offset`
    /// paging. Members only.
    #[oai(path = "/list-members", method = "get", operation_id = "listMembers")]
    async fn list_members(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        limit: Query<Option<u32>>,
        offset: Query<Option<u32>>,
    ) -> ApiResult<Json<ListMembersResponse>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_member(&org, &auth.0.user.id).await?;
        let limit = limit
            .0
            .unwrap_or(state.config.limits.membership_limit)
            .min(1000);
        let members = state
            .store
            .list_members(&org, limit, offset.0.unwrap_or(0))
            .await?;
        let total = state.store.count_members(&org).await?;
        Ok(Json(ListMembersResponse {
            members: state.member_dtos(&members).await?,
            total,
        }))
    }

    /// Add a member (server only)
    ///
    /// Needs the server credential. Respects the membership limit.
    #[oai(path = "/add-member", method = "post", operation_id = "addMember")]
    async fn add_member(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: Json<AddMemberBody>,
    ) -> ApiResult<Json<MemberDto>> {
        match state.server_call(req) {
            None => return Err(Code::NotFound.into()),
            Some(false) => return Err(Code::Unauthorized.into()),
            Some(true) => {}
        }
        let org = OrgId(
            text(&body.0.organization_id)
                .ok_or_else(|| {
                    ApiError::validation(false, vec!["organizationId: required".into()])
                })?
                .to_owned(),
        );
        let m = state
            .actors
            .org(org)
            .add_member(
                Acting::Server,
                UserId(body.0.user_id.0.clone()),
                &body.0.role.joined(),
            )
            .await?;
        Ok(Json(state.member_dto(&m).await?))
    }

    /// Remove a member
    ///
    /// Needs `member:delete` (or removing oneself). Only an owner removes an owner, and never
    /// the last one.
    #[oai(
        path = "/remove-member",
        method = "post",
        operation_id = "removeMember"
    )]
    async fn remove_member(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<RemoveMemberBody>,
    ) -> ApiResult<Json<MemberResponse>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let target = body.0.member_id_or_email.0;
        let member_id = if target.contains('@') {
            let user = state
                .store
                .get_user_by_email(&target)
                .await?
                .ok_or(Code::MemberNotFound)?;
            state
                .store
                .get_member(&org, &user.id)
                .await?
                .ok_or(Code::MemberNotFound)?
                .id
        } else {
            MemberId(target)
        };
        let removed = state
            .actors
            .org(org.clone())
            .remove_member(Acting::User(auth.0.user.id.clone()), member_id)
            .await?;
        // Spec §4: removing oneself clears the active organization.
        if removed.user_id == auth.0.user.id && auth.0.session.active_organization_id == Some(org) {
            state
                .set_active_org(&auth.1, &auth.0.user, &auth.0.session.token, None)
                .await?;
        }
        Ok(Json(MemberResponse {
            member: state.member_dto(&removed).await?,
        }))
    }

    /// Leave an organization
    ///
    /// The only owner cannot leave. Clears the active organization if it was this one.
    #[oai(path = "/leave", method = "post", operation_id = "leaveOrganization")]
    async fn leave(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<OrgIdBody>,
    ) -> ApiResult<Json<MemberDto>> {
        let org = OrgId(body.0.organization_id.0);
        let left = state
            .actors
            .org(org.clone())
            .leave(auth.0.user.id.clone())
            .await?;
        if auth.0.session.active_organization_id == Some(org) {
            state
                .set_active_org(&auth.1, &auth.0.user, &auth.0.session.token, None)
                .await?;
        }
        Ok(Json(state.member_dto(&left).await?))
    }

    /// Change a member's role
    ///
    /// Needs `member:update`. Roles must exist; only an owner grants `owner` or changes an
    /// owner's role; the last owner cannot be demoted.
    #[oai(
        path = "/update-member-role",
        method = "post",
        operation_id = "updateMemberRole"
    )]
    async fn update_member_role(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<UpdateMemberRoleBody>,
    ) -> ApiResult<Json<MemberDto>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
        let m = state
            .actors
            .org(org)
            .update_member_role(
                Acting::User(auth.0.user.id.clone()),
                MemberId(body.0.member_id.0.clone()),
                &body.0.role.joined(),
            )
            .await?;
        Ok(Json(state.member_dto(&m).await?))
    }

    /// Invite someone
    ///
    /// Needs `invitation:create`; the role must exist and an admin cannot invite an owner. Mails
    /// the invitation (link: `organization.invitation_link`). A pending invitation for the
    /// address is refused unless `resend`, which mails it again.
    #[oai(
        path = "/invite-member",
        method = "post",
        operation_id = "inviteMember"
    )]
    async fn invite_member(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<InviteBody>,
    ) -> ApiResult<Json<InvitationDto>> {
        let body = body.0;
        let org_id = state.org_id(&auth.0, text(&body.organization_id))?;
        let email = super::normalize_email(&body.email.0).ok_or(Code::InvalidEmail)?;
        let inv = state
            .actors
            .org(org_id.clone())
            .invite(
                Acting::User(auth.0.user.id.clone()),
                &email,
                &body.role.joined(),
                text(&body.team_id).map(|t| TeamId(t.to_owned())),
                body.resend.unwrap_or(false),
            )
            .await?;
        let org = state.existing_org(&org_id).await?;
        let link = state
            .config
            .organization
            .invitation_link
            .replace("{base_url}", state.config.base_url.trim_end_matches('/'))
            .replace("{id}", &inv.id.0);
        let name = match state.store.get_user_by_email(&email).await? {
            Some(u) => u.name,
            None => email.clone(),
        };
        let vars = [
            ("name", name.as_str()),
            ("organization", org.name.as_str()),
            ("inviter", auth.0.user.name.as_str()),
            ("role", inv.role.as_str()),
        ];
        state
            .mailer
            .send(crate::mail::MailKind::Invitation, &email, &link, &vars)
            .await
            .map_err(ApiError::internal)?;
        Ok(Json(InvitationDto::from(&inv)))
    }

    /// Accept an invitation
    ///
    /// Only the invited (verified) address, only while pending and unexpired. Creates the
    /// membership (and team membership), and makes the organization active.
    #[oai(
        path = "/accept-invitation",
        method = "post",
        operation_id = "acceptInvitation"
    )]
    async fn accept_invitation(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationAnswer>> {
        let (inv, org) = state
            .invitation_for(&auth.0, &body.0.invitation_id.0)
            .await?;
        let (inv, member) = state
            .actors
            .org(org.id.clone())
            .respond_invitation(auth.0.user.id.clone(), inv.id, true)
            .await?;
        state
            .set_active_org(&auth.1, &auth.0.user, &auth.0.session.token, Some(org.id))
            .await?;
        let member = match &member {
            Some(m) => Some(state.member_dto(m).await?),
            None => None,
        };
        Ok(Json(InvitationAnswer {
            invitation: InvitationDto::from(&inv),
            member,
        }))
    }

    /// Reject an invitation
    #[oai(
        path = "/reject-invitation",
        method = "post",
        operation_id = "rejectInvitation"
    )]
    async fn reject_invitation(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationAnswer>> {
        let (inv, org) = state
            .invitation_for(&auth.0, &body.0.invitation_id.0)
            .await?;
        let (inv, _) = state
            .actors
            .org(org.id)
            .respond_invitation(auth.0.user.id.clone(), inv.id, false)
            .await?;
        Ok(Json(InvitationAnswer {
            invitation: InvitationDto::from(&inv),
            member: None,
        }))
    }

    /// Cancel an invitation
    ///
    /// Needs `invitation:cancel`.
    #[oai(
        path = "/cancel-invitation",
        method = "post",
        operation_id = "cancelInvitation"
    )]
    async fn cancel_invitation(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationDto>> {
        let id = InvitationId(body.0.invitation_id.0);
        let inv = state
            .store
            .get_invitation(&id)
            .await?
            .ok_or(Code::InvitationNotFound)?;
        let inv = state
            .actors
            .org(inv.organization_id)
            .cancel_invitation(Acting::User(auth.0.user.id.clone()), id)
            .await?;
        Ok(Json(InvitationDto::from(&inv)))
    }

    /// Get an invitation
    ///
    /// For its recipient only, while pending: with the organization's name and slug and the
    /// inviter's email.
    #[oai(
        path = "/get-invitation",
        method = "get",
        operation_id = "getInvitation"
    )]
    async fn get_invitation(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        id: Query<String>,
    ) -> ApiResult<Json<InvitationDetails>> {
        let (inv, org) = state.invitation_for(&auth.0, &id.0).await?;
        let inviter_email = state
            .store
            .get_user(&inv.inviter_id)
            .await?
            .map(|u| u.email);
        Ok(Json(InvitationDetails {
            invitation: InvitationDto::from(&inv),
            organization_name: org.name,
            organization_slug: org.slug,
            inviter_email,
        }))
    }

    /// List an organization's invitations
    ///
    /// Of `organizationId` or the active organization; members only.
    #[oai(
        path = "/list-invitations",
        method = "get",
        operation_id = "listInvitations"
    )]
    async fn list_invitations(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<InvitationDto>>> {
        let org = state.org_id(&auth.0, organization_id.0.as_deref())?;
        state.require_member(&org, &auth.0.user.id).await?;
        let list = state.store.list_invitations(&org).await?;
        Ok(Json(list.iter().map(InvitationDto::from).collect()))
    }

    /// List the caller's pending invitations
    #[oai(
        path = "/list-user-invitations",
        method = "get",
        operation_id = "listUserInvitations"
    )]
    async fn list_user_invitations(
        &self,
        state: Data<&AppState>,
        auth: Auth,
    ) -> ApiResult<Json<Vec<InvitationDto>>> {
        let now = state.clock.now();
        let list = state
            .store
            .list_invitations_by_email(&auth.0.user.email)
            .await?;
        Ok(Json(
            list.iter()
                .filter(|i| i.status == InvitationStatus::Pending && i.expires_at > now)
                .map(InvitationDto::from)
                .collect(),
        ))
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
        auth: Auth,
        body: Json<HasPermissionBody>,
    ) -> ApiResult<Json<HasPermissionResponse>> {
        let org = state.org_id(&auth.0, text(&body.0.organization_id))?;
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
        let ok = state
            .actors
            .org(org)
            .has_permission(auth.0.user.id.clone(), perms)
            .await?;
        Ok(Json(HasPermissionResponse {
            success: ok,
            error: None,
        }))
    }
}
