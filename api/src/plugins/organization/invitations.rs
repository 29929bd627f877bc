//! Invitations: invite, accept, reject, cancel, read and list. Every rule of an invitation is
//! checked by the organization's actor; accepting goes through the caller's actor, which also
//! makes the organization active.
use super::dto::*;
use crate::audit::action;
use crate::dto::Text;
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::{InvitationId, InvitationStatus, TeamId};

/// Invitation operations (tag Organization).
pub struct InvitationApi;

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

#[OpenApi(prefix_path = "/organization", tag = "Tag::Organization")]
impl InvitationApi {
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
        req: &poem::Request,
        auth: Principal,
        body: Json<InviteBody>,
    ) -> ApiResult<Json<InvitationDto>> {
        let body = body.0;
        let org_id = auth.org_id(text(&body.organization_id))?;
        let email = crate::plugins::normalize_email(&body.email.0).ok_or(Code::InvalidEmail)?;
        // Refused before the invitation exists: the invitee's mailbox has a limit too.
        state
            .limiter
            .limit_mail(req, &email, state.clock.now(), &state.audit)
            .await?;
        let role = body.role.joined();
        let ev = auth
            .event(action::INVITATION_CREATED)
            .org(&org_id)
            .detail("email", email.clone())
            .detail("role", role.clone())
            .fill(actors::Fill::TargetInvitation);
        // The mail goes with the invitation; its link names the invitation the decision makes
        // (or sends again), which the actor puts in.
        let job = state
            .orgs
            .invitation_mail(&org_id, &email, &auth.user.name)
            .await?;
        let inv = state
            .actors
            .org(org_id.clone())
            .with(
                state
                    .mail
                    .mailing(state.audit.noted(ev.clone()), std::slice::from_ref(&job)),
            )
            .invite(
                auth.acting(),
                &email,
                &role,
                text(&body.team_id).map(|t| TeamId(t.to_owned())),
                body.resend.unwrap_or(false),
            )
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let inv = state.audit.audited(ev, inv).await?;
        if let Ok(job) = serde_json::from_value(actors::fill_mail(&job.value(), Some(&inv))) {
            state.mail.deliver(&[job]).await;
        }
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
        auth: Principal,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationAnswer>> {
        // Every rule (pending, unexpired, recipient, verified, inviter still entitled) is the
        // organization actor's; accepted and made active in one message of the user's actor.
        let inv = state.orgs.invitation_org(&body.0.invitation_id.0).await?;
        let ev = auth
            .event(action::INVITATION_ACCEPTED)
            .org(&inv.organization_id)
            .target(inv.id.0.clone());
        let joined = auth
            .event(action::MEMBER_ADDED)
            .org(&inv.organization_id)
            .detail("invitation", inv.id.0.clone())
            .fill(actors::Fill::TargetMember)
            .fill(actors::Fill::MemberRole)
            .when(actors::When::MemberAdded);
        let accepted = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noting([ev.clone(), joined]))
            .accept_invitation(inv.organization_id.clone(), inv.id, &auth.session.token)
            .await
            .map_err(ApiError::from);
        let accepted = state.audit.audited(ev, accepted).await?;
        if accepted.invitation.team_id.is_some() {
            // The session's active team changed: its cookie is issued again (as 1.7).
            state
                .sessions
                .reissue_session(&auth, &auth.user, accepted.session);
        } else {
            state
                .sessions
                .reissue_cache(&auth.cookies, &auth.user, accepted.session);
        }
        let (inv, member) = (accepted.invitation, accepted.member);
        let member = match &member {
            Some(m) => Some(state.orgs.member_dto(m).await?),
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
        auth: Principal,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationAnswer>> {
        let inv = state.orgs.invitation_org(&body.0.invitation_id.0).await?;
        let ev = auth
            .event(action::INVITATION_REJECTED)
            .org(&inv.organization_id)
            .target(inv.id.0.clone());
        let rejected = state
            .actors
            .org(inv.organization_id)
            .with(state.audit.noted(ev.clone()))
            .respond_invitation(auth.user.id.clone(), inv.id, false)
            .await
            .map_err(ApiError::from);
        let (inv, _) = state.audit.audited(ev, rejected).await?;
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
        auth: Principal,
        body: Json<InvitationIdBody>,
    ) -> ApiResult<Json<InvitationDto>> {
        let id = InvitationId(body.0.invitation_id.0);
        let inv = state
            .reader
            .get_invitation(&id)
            .await?
            .ok_or(Code::InvitationNotFound)?;
        let ev = auth
            .event(action::INVITATION_CANCELED)
            .org(&inv.organization_id)
            .target(id.0.clone());
        let inv = state
            .actors
            .org(inv.organization_id)
            .with(state.audit.noted(ev.clone()))
            .cancel_invitation(auth.acting(), id)
            .await
            .map_err(|e| ApiError::from(e).recode(Code::NotAMember, Code::MemberNotFound));
        let inv = state.audit.audited(ev, inv).await?;
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
        auth: Principal,
        id: Query<String>,
    ) -> ApiResult<Json<InvitationDetails>> {
        let (inv, org) = state.orgs.invitation_for(&auth.user, &id.0).await?;
        let inviter_email = state
            .reader
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
        auth: Principal,
        #[oai(name = "organizationId")] organization_id: Query<Option<String>>,
    ) -> ApiResult<Json<Vec<InvitationDto>>> {
        let org = auth.org_id(organization_id.0.as_deref())?;
        state
            .orgs
            .require_member(&org, &auth.user.id)
            .await
            .map_err(|e| e.recode(Code::NotAMember, Code::NotAMemberOfThis))?;
        let list = state.reader.list_invitations(&org).await?;
        Ok(Json(list.iter().map(InvitationDto::from).collect()))
    }

    /// List the caller's pending invitations
    ///
    /// With each organization's name. Needs a verified address.
    #[oai(
        path = "/list-user-invitations",
        method = "get",
        operation_id = "listUserInvitations"
    )]
    async fn list_user_invitations(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<UserInvitation>>> {
        // An invitation id is the proof that its recipient reads the mailbox: it never reaches
        // an account that has not proved the address (someone may have signed up with it).
        if !auth.user.email_verified {
            return Err(Code::InvitationEmailVerificationRequired.into());
        }
        let now = state.clock.now();
        let list = state
            .reader
            .list_invitations_by_email(&auth.user.email)
            .await?;
        let mut out = Vec::new();
        for i in list
            .iter()
            .filter(|i| i.status == InvitationStatus::Pending && i.expires_at > now)
        {
            // An organization deleted meanwhile takes its invitations with it.
            let Some(org) = state.reader.get_organization(&i.organization_id).await? else {
                continue;
            };
            out.push(UserInvitation {
                invitation: InvitationDto::from(i),
                organization_name: org.name,
            });
        }
        Ok(Json(out))
    }
}
