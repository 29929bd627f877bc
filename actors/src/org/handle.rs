//! The typed handle through which every change of one organization is asked of its actor.
use super::{Acting, OrgActor, OrgMsg, OrgPatch, Reply, RoleChange, TeamChange, TeamOutcome};
use crate::events::Ctx;
use crate::{ActorError, Actors};
use std::sync::Arc;
use storage::{
    Invitation, InvitationId, Member, MemberId, OrgId, Organization, OrganizationRole, Team,
    TeamId, UserId,
};

/// A typed handle to one organization's actor.
#[derive(Clone)]
pub struct OrgHandle {
    actors: Actors,
    id: OrgId,
    ctx: Arc<Ctx>,
}

impl OrgHandle {
    pub(crate) fn new(actors: Actors, id: OrgId) -> Self {
        Self {
            actors,
            id,
            ctx: Arc::default(),
        }
    }

    /// Asks with `ctx`: the audit records to keep with the decision and the mail to send.
    pub fn with(mut self, ctx: Ctx) -> Self {
        self.ctx = Arc::new(ctx);
        self
    }

    pub async fn update(
        &self,
        acting: Acting,
        patch: OrgPatch,
    ) -> Result<Organization, ActorError> {
        self.call(|r| OrgMsg::Update(acting.clone(), patch.clone(), r))
            .await
    }

    pub async fn delete(&self, acting: Acting) -> Result<Organization, ActorError> {
        self.call(|r| OrgMsg::Delete(acting.clone(), r)).await
    }

    pub async fn add_member(
        &self,
        acting: Acting,
        user: UserId,
        role: &str,
    ) -> Result<Member, ActorError> {
        self.call(|reply| OrgMsg::AddMember {
            acting: acting.clone(),
            user: user.clone(),
            role: role.to_owned(),
            reply,
        })
        .await
    }

    pub async fn remove_member(
        &self,
        acting: Acting,
        member: MemberId,
    ) -> Result<Member, ActorError> {
        self.call(|reply| OrgMsg::RemoveMember {
            acting: acting.clone(),
            member: member.clone(),
            reply,
        })
        .await
    }

    pub async fn leave(&self, user: UserId) -> Result<Member, ActorError> {
        self.call(|r| OrgMsg::Leave(user.clone(), r)).await
    }

    pub async fn update_member_role(
        &self,
        acting: Acting,
        member: MemberId,
        role: &str,
    ) -> Result<Member, ActorError> {
        self.call(|reply| OrgMsg::UpdateMemberRole {
            acting: acting.clone(),
            member: member.clone(),
            role: role.to_owned(),
            reply,
        })
        .await
    }

    pub async fn invite(
        &self,
        acting: Acting,
        email: &str,
        role: &str,
        team: Option<TeamId>,
        resend: bool,
    ) -> Result<Invitation, ActorError> {
        self.call(|reply| OrgMsg::Invite {
            acting: acting.clone(),
            email: email.to_owned(),
            role: role.to_owned(),
            team: team.clone(),
            resend,
            reply,
        })
        .await
    }

    /// Accepts (`true`) or rejects an invitation as `user`.
    pub async fn respond_invitation(
        &self,
        user: UserId,
        invitation: InvitationId,
        accept: bool,
    ) -> Result<(Invitation, Option<Member>), ActorError> {
        self.call(|reply| OrgMsg::RespondInvitation {
            user: user.clone(),
            invitation: invitation.clone(),
            accept,
            reply,
        })
        .await
    }

    pub async fn team(&self, acting: Acting, change: TeamChange) -> Result<Team, ActorError> {
        Ok(self.team_change(acting, change).await?.team)
    }

    /// As [`OrgHandle::team`], with the team member the change added (if it added one).
    pub async fn team_change(
        &self,
        acting: Acting,
        change: TeamChange,
    ) -> Result<TeamOutcome, ActorError> {
        self.call(|r| OrgMsg::Team(acting.clone(), change.clone(), r))
            .await
    }

    pub async fn role(
        &self,
        acting: Acting,
        change: RoleChange,
    ) -> Result<OrganizationRole, ActorError> {
        self.call(|r| OrgMsg::Role(acting.clone(), change.clone(), r))
            .await
    }

    pub async fn cancel_invitation(
        &self,
        acting: Acting,
        invitation: InvitationId,
    ) -> Result<Invitation, ActorError> {
        self.call(|reply| OrgMsg::CancelInvitation {
            acting: acting.clone(),
            invitation: invitation.clone(),
            reply,
        })
        .await
    }

    async fn call<T: Send + 'static>(
        &self,
        build: impl Fn(Reply<T>) -> OrgMsg,
    ) -> Result<T, ActorError> {
        let shared = self.actors.shared.clone();
        let r = self
            .actors
            .call(
                "org",
                &self.ctx,
                &self.id,
                || OrgActor {
                    shared: shared.clone(),
                },
                build,
                &self.id.0,
            )
            .await;
        // Before the caller sees the answer: its next read of the organization sees the change.
        shared.views.drop_org(&self.id);
        r
    }
}
