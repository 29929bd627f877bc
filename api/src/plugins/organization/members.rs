//! Members: the caller's membership and role, listing, adding (server), removing, leaving and
//! changing roles. Changes go through the organization's actor (removing oneself and leaving
//! through the caller's, which also clears the active organization).
use super::dto::*;
use crate::audit::{action, Event, Origin};
use crate::dto::{JsonBytes, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use actors::{Acting, Fill};
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::{Member, MemberId, OrgId, User, UserId};

/// Member operations (tag Organization).
pub struct MemberApi;

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

#[derive(Debug, Object, serde::Serialize)]
struct ListMembersResponse {
    members: Vec<MemberDto>,
    total: u64,
}

#[derive(Debug, Object)]
struct MemberRole {
    role: String,
}

#[OpenApi(prefix_path = "/organization", tag = "Tag::Organization")]
impl MemberApi {
    /// Get the caller's membership in the active organization
    #[oai(
        path = "/get-active-member",
        method = "get",
        operation_id = "getActiveMember"
    )]
    async fn get_active_member(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<MemberDto>> {
        let org = auth.org_id(None)?;
        let m = state
            .reader
            .get_member(&org, &auth.user.id)
            .await?
            .ok_or(Code::MemberNotFound)?;
        Ok(Json(state.orgs.member_dto(&m).await?))
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
        auth: Principal,
        #[oai(name = "userId")] user_id: Query<Option<String>>,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<MemberRole>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        state.orgs.require_member(&org, &auth.user.id).await?;
        let who = user_id
            .0
            .map(UserId)
            .unwrap_or_else(|| auth.user.id.clone());
        let m = state
            .reader
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
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
        limit: Query<Option<u32>>,
        offset: Query<Option<u32>>,
    ) -> ApiResult<JsonBytes<ListMembersResponse>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        let limit = limit
            .0
            .unwrap_or(state.config.limits.membership_limit)
            .min(1000);
        let offset = offset.0.unwrap_or(0);
        let answer = |members: &[(Member, Option<User>)], total| {
            JsonBytes::new(&ListMembersResponse {
                members: members
                    .iter()
                    .map(|(m, u)| super::member_dto_of(m, u.as_ref()))
                    .collect(),
                total,
            })
        };
        // From this process's view cache, answered as written from the same entry before.
        if let Some(c) = state.reader.cached_view(&org, &auth.user.id) {
            if c.viewer.is_none() {
                return Err(Code::NotAMemberOfThis.into());
            }
            let body = c
                .answers
                .get_or_write(&format!("members {offset} {limit}"), || {
                    answer(c.members(offset, limit), c.view.total_members)
                        .bytes()
                        .clone()
                });
            return Ok(JsonBytes::written(body));
        }
        // One read: the caller's membership, the window with its users, the total.
        let q = storage::ViewQuery {
            viewer: auth.user.id.clone(),
            offset,
            limit,
            details: false,
        };
        let view = state.reader.organization_view(&org, &q).await?;
        let Some(view) = view.filter(|v| v.viewer.is_some()) else {
            return Err(Code::NotAMemberOfThis.into());
        };
        Ok(answer(&view.members, view.total_members))
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
        match state.sessions.server_call(req) {
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
        let user = UserId(body.0.user_id.0.clone());
        let role = body.0.role.joined();
        let ev = Event::new(action::MEMBER_ADDED, &Origin::of(req))
            .user(&user)
            .org(&org)
            .detail("role", role.clone())
            .detail("by", "server")
            .fill(Fill::TargetMember);
        let m = state
            .actors
            .org(org.clone())
            .with(state.audit.noted(ev.clone()))
            .add_member(Acting::Server, user.clone(), &role)
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let m = state.audit.audited(ev, m).await?;
        Ok(Json(state.orgs.member_dto(&m).await?))
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
        auth: Principal,
        body: Json<RemoveMemberBody>,
    ) -> ApiResult<Json<MemberResponse>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let target = body.0.member_id_or_email.0;
        let member_id = state.orgs.member_named(&org, target).await?;
        let ev = auth
            .event(action::MEMBER_REMOVED)
            .org(&org)
            .target(member_id.0.clone())
            .fill(Fill::UserOfMember);
        // Spec §4: removing oneself clears the active organization (same actor turn).
        let removed = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev.clone()))
            .leave_organization(org.clone(), Some(member_id.clone()), &auth.session.token)
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let (removed, session) = state.audit.audited(ev, removed).await?;
        state
            .sessions
            .reissue_cache(&auth.cookies, &auth.user, session);
        Ok(Json(MemberResponse {
            member: state.orgs.member_dto(&removed).await?,
        }))
    }

    /// Leave an organization
    ///
    /// The only owner cannot leave. Clears the active organization if it was this one.
    #[oai(path = "/leave", method = "post", operation_id = "leaveOrganization")]
    async fn leave(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<OrgIdBody>,
    ) -> ApiResult<Json<MemberDto>> {
        let org = OrgId(body.0.organization_id.0);
        let ev = auth
            .event(action::MEMBER_REMOVED)
            .org(&org)
            .detail("left", "true")
            .fill(Fill::TargetMember);
        let left = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev.clone()))
            .leave_organization(org.clone(), None, &auth.session.token)
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let (left, session) = state.audit.audited(ev, left).await?;
        state
            .sessions
            .reissue_cache(&auth.cookies, &auth.user, session);
        Ok(Json(state.orgs.member_dto(&left).await?))
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
        auth: Principal,
        body: Json<UpdateMemberRoleBody>,
    ) -> ApiResult<Json<MemberDto>> {
        let org = auth.org_id(text(&body.0.organization_id))?;
        let role = body.0.role.joined();
        let ev = auth
            .event(action::MEMBER_ROLE_CHANGED)
            .org(&org)
            .target(body.0.member_id.0.clone())
            .detail("role", role.clone())
            .fill(Fill::UserOfMember);
        let m = state
            .actors
            .org(org.clone())
            .with(state.audit.noted(ev.clone()))
            .update_member_role(auth.acting(), MemberId(body.0.member_id.0.clone()), &role)
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let m = state.audit.audited(ev, m).await?;
        Ok(Json(state.orgs.member_dto(&m).await?))
    }
}
