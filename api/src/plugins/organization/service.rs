//! The organization plugin's service: what its handlers do beside the one actor call — a new
//! organization and its first member, a member named by address, the team a session may make
//! active, the invitation's mail — and its reads: members with their users, the caller's
//! membership, an invitation for its recipient, the permission to read roles.
use super::dto::*;
use super::member_dto_of;
use crate::error::{ApiError, ApiResult, Code};
use crate::mail::{MailJob, MailKind};
use std::sync::Arc;
use storage::{
    Invitation, InvitationId, InvitationStatus, Member, MemberId, OrgId, Organization, Team,
    TeamId, UserId,
};

/// The organization plugin's service. Cheap to clone.
#[derive(Clone)]
pub struct Orgs {
    reader: actors::Reader,
    actors: actors::Actors,
    clock: Arc<dyn storage::Clock>,
    /// Only a verified address may see or answer its invitation.
    require_verified_invitee: bool,
    /// The role of an organization's creator (`organization.creator_role`).
    creator_role: String,
    /// The invitation mail's link, `{base_url}` filled in (`organization.invitation_link`).
    invitation_link: String,
}

/// What a caller asks a new organization to be (validated by [`Orgs::new_organization`]).
pub(crate) struct NewOrganization {
    pub name: String,
    pub slug: String,
    pub logo: Option<String>,
    /// Serialized JSON, already within its size limit.
    pub metadata: Option<String>,
}

impl Orgs {
    pub fn new(
        actors: &actors::Actors,
        clock: Arc<dyn storage::Clock>,
        config: &crate::config::OrganizationConfig,
        base_url: &str,
    ) -> Self {
        Self {
            reader: actors.reader(),
            actors: actors.clone(),
            clock,
            require_verified_invitee: config.require_email_verification_on_invitation,
            creator_role: config.creator_role.clone(),
            invitation_link: config
                .invitation_link
                .replace("{base_url}", base_url.trim_end_matches('/')),
        }
    }

    /// A new organization for `owner` (who must exist) and its first member, with the
    /// creator's role; refused when the slug or the name is not valid.
    pub(crate) async fn new_organization(
        &self,
        owner: &UserId,
        asked: NewOrganization,
    ) -> ApiResult<(Organization, Member)> {
        if self.reader.get_user(owner).await?.is_none() {
            return Err(Code::UserNotFound.into());
        }
        let slug = asked.slug.trim().to_owned();
        if !super::valid_slug(&slug) {
            return Err(ApiError::validation(
                false,
                vec!["slug: lowercase letters, digits, - and _ (1-64)".into()],
            ));
        }
        let name = asked.name.trim();
        if name.is_empty() {
            return Err(ApiError::validation(false, vec!["name: required".into()]));
        }
        let now = self.clock.now();
        let org = Organization::new(
            name.to_owned(),
            slug,
            asked.logo,
            asked.metadata,
            policy::parse_roles(&self.creator_role).contains(&storage::OWNER_ROLE),
            now,
        );
        let member = Member {
            id: MemberId::generate(),
            organization_id: org.id.clone(),
            user_id: owner.clone(),
            role: self.creator_role.clone(),
            team_id: None,
            created_at: now,
        };
        Ok((org, member))
    }

    /// The member a caller names by id or, when it holds an `@`, by its user's address.
    pub(crate) async fn member_named(&self, org: &OrgId, named: String) -> ApiResult<MemberId> {
        if !named.contains('@') {
            return Ok(MemberId(named));
        }
        let user = self
            .reader
            .get_user_by_email(&named)
            .await?
            .ok_or(Code::MemberNotFound)?;
        Ok(self
            .reader
            .get_member(org, &user.id)
            .await?
            .ok_or(Code::MemberNotFound)?
            .id)
    }

    /// The team `user` may make active in `org`: one of its teams that they belong to.
    pub(crate) async fn team_to_activate(
        &self,
        org: &OrgId,
        team: &str,
        user: &UserId,
    ) -> ApiResult<Team> {
        let t = self
            .reader
            .get_team(&TeamId(team.to_owned()))
            .await?
            .filter(|t| &t.organization_id == org)
            .ok_or(Code::TeamNotFound)?;
        let members = self.reader.list_team_members(&t).await?;
        if !members.iter().any(|m| &m.user_id == user) {
            return Err(Code::NotATeamMember.into());
        }
        Ok(t)
    }

    /// The mail of an invitation to `email` into `org`, from `inviter`: its link and role are
    /// placeholders the invitation's actor fills in with the invitation it decides on.
    pub(crate) async fn invitation_mail(
        &self,
        org: &OrgId,
        email: &str,
        inviter: &str,
    ) -> ApiResult<MailJob> {
        let org = self.existing_org(org).await?;
        let link = self
            .invitation_link
            .replace("{id}", actors::INVITATION_ID)
            .replace(
                "{email}",
                &percent_encoding::utf8_percent_encode(email, crate::http::URI_COMPONENT)
                    .to_string(),
            );
        let name = match self.reader.get_user_by_email(email).await? {
            Some(u) => u.name,
            None => email.to_owned(),
        };
        let vars = [
            ("name", name.as_str()),
            ("organization", org.name.as_str()),
            ("inviter", inviter),
            ("role", actors::INVITATION_ROLE),
        ];
        Ok(MailJob::new(MailKind::Invitation, email, link, &vars))
    }

    /// A member as answers show it, with its user's name, email and image (from the user
    /// cache: see `Reader::cached_user`).
    pub(crate) async fn member_dto(&self, m: &Member) -> ApiResult<MemberDto> {
        let user = self.reader.cached_user(&m.user_id).await?;
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
