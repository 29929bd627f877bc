//! The organization plugin's reads beside the actors: members with their users, the
//! caller's membership, an invitation for its recipient, the permission to read roles.
use super::dto::*;
use super::member_dto_of;
use crate::error::{ApiResult, Code};
use std::sync::Arc;
use storage::{Invitation, InvitationId, InvitationStatus, Member, OrgId, Organization, UserId};

/// The organization plugin's read service. Cheap to clone.
#[derive(Clone)]
pub struct OrgReads {
    reader: actors::Reader,
    actors: actors::Actors,
    clock: Arc<dyn storage::Clock>,
    /// Only a verified address may see or answer its invitation.
    require_verified_invitee: bool,
}

impl OrgReads {
    pub fn new(
        actors: &actors::Actors,
        clock: Arc<dyn storage::Clock>,
        config: &crate::config::OrganizationConfig,
    ) -> Self {
        Self {
            reader: actors.reader(),
            actors: actors.clone(),
            clock,
            require_verified_invitee: config.require_email_verification_on_invitation,
        }
    }

    pub(crate) async fn member_dto(&self, m: &Member) -> ApiResult<MemberDto> {
        let user = self.reader.get_user(&m.user_id).await?;
        Ok(member_dto_of(m, user.as_ref()))
    }

    /// The caller's membership, or 403 when not a member.
    pub(crate) async fn require_member(&self, org: &OrgId, user: &UserId) -> ApiResult<Member> {
        self.reader
            .get_member(org, user)
            .await?
            .ok_or_else(|| Code::NotAMember.into())
    }

    pub(crate) async fn existing_org(&self, id: &OrgId) -> ApiResult<Organization> {
        self.reader
            .get_organization(id)
            .await?
            .ok_or_else(|| Code::OrganizationNotFound.into())
    }

    /// The invitation and its organization, for its recipient: pending, unexpired, and the
    /// caller's (verified, unless configured otherwise) address.
    pub(crate) async fn invitation_for(
        &self,
        user: &storage::User,
        id: &str,
    ) -> ApiResult<(Invitation, Organization)> {
        let inv = self
            .reader
            .get_invitation(&InvitationId(id.to_owned()))
            .await?
            .filter(|i| i.status == InvitationStatus::Pending && i.expires_at > self.clock.now())
            .ok_or(Code::InvitationNotFound)?;
        if inv.email != user.email {
            return Err(Code::NotRecipient.into());
        }
        if self.require_verified_invitee && !user.email_verified {
            return Err(Code::InvitationEmailNotVerified.into());
        }
        let org = self.existing_org(&inv.organization_id).await?;
        Ok((inv, org))
    }

    /// The invitation with that id (whatever its state: its organization's actor judges it).
    pub(crate) async fn invitation_org(&self, id: &str) -> ApiResult<Invitation> {
        self.reader
            .get_invitation(&InvitationId(id.to_owned()))
            .await?
            .ok_or_else(|| Code::InvitationNotFound.into())
    }

    /// Membership plus `ac:read`, asked of the organization's policy.
    pub(crate) async fn require_ac_read(
        &self,
        org: &storage::OrgId,
        user: &UserId,
    ) -> ApiResult<()> {
        let perms: policy::Permissions =
            [("ac".to_string(), ["read".to_string()].into_iter().collect())]
                .into_iter()
                .collect();
        if self.actors.standing(org, user).await?.allows_all(&perms)? {
            Ok(())
        } else {
            Err(Code::NotAllowedToReadRole.into())
        }
    }
}
