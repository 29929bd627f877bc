//! A user joining and leaving organizations: creating one (under the per-user limit),
//! accepting an invitation, leaving or removing a member — through the organization's actor,
//! with the session's active organization changed in the same turn.
use super::*;

impl UserActor {
    /// Creates an organization owned by this user; counted here, so concurrent creates by one
    /// user cannot pass the per-user limit. The slug's uniqueness is the store's. With
    /// `default_team`, a team named after the organization with the creator in it follows
    /// (through the organization's actor), and becomes the session's active team.
    pub(super) async fn create_organization(
        &self,
        user: &UserId,
        (org, owner): (Organization, Member),
        limit: Option<u32>,
        default_team: bool,
        activate: Option<&str>,
        ctx: &Ctx,
    ) -> Result<Option<Session>, ActorError> {
        let store = &self.shared.store;
        let mut created = false;
        let events = Emit::org(&org.id, self.now())
            .domain("organization.created", data::org(&org))
            .domain("member.added", data::member(&owner))
            .request(
                ctx,
                &Facts {
                    org: Some(&org),
                    member: Some(&owner),
                    ..Facts::default()
                },
            )
            .done();
        let mut attempts = Attempts::new();
        while attempts.next().await {
            // With a limit, the count is decided on the user's version: a membership gained
            // meanwhile (here or in another process) makes this decide again.
            let version = match limit {
                Some(limit) => {
                    let u = store.get_user(user).await?.ok_or(ActorError::NotFound)?;
                    if store.count_user_organizations(user).await? >= u64::from(limit) {
                        return Err(ActorError::Refused(Rule::OrganizationLimit));
                    }
                    Some(u.version)
                }
                None => None,
            };
            match store
                .create_organization(&org, &owner, version, &events)
                .await
            {
                Ok(()) => {
                    created = true;
                    break;
                }
                Err(storage::StoreError::ConcurrentModification) => continue,
                Err(storage::StoreError::Conflict(_)) => {
                    return Err(ActorError::Refused(Rule::SlugTaken))
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !created {
            return Err(contended());
        }
        let team = if default_team {
            let change = crate::org::TeamChange::CreateWithMember {
                name: org.name.clone(),
                user: user.clone(),
            };
            let handle = self.actors.org(org.id.clone());
            Some(handle.team(Acting::User(user.clone()), change).await?.id)
        } else {
            None
        };
        match activate {
            Some(token) => {
                self.change_own_session(user, token, |s| {
                    s.active_organization_id = Some(org.id);
                    s.active_team_id = team;
                })
                .await
            }
            None => Ok(None),
        }
    }

    /// Accepts an invitation (through the organization's actor) and makes the organization (and
    /// the invitation's team) the active one of the session that accepted: one request, one
    /// message.
    pub(super) async fn accept_invitation(
        &self,
        user: &UserId,
        org: OrgId,
        invitation: InvitationId,
        token: &str,
        ctx: &Ctx,
    ) -> Result<Accepted, ActorError> {
        let (invitation, member) = self
            .actors
            .org(org.clone())
            .with(ctx.clone())
            .respond_invitation(user.clone(), invitation, true)
            .await?;
        // An invitation to a team also makes that team the active one (as better-auth).
        let team = invitation.team_id.clone();
        let session = self
            .change_own_session(user, token, |s| {
                if team.is_some() {
                    s.active_team_id = team;
                } else if s.active_organization_id.as_ref() != Some(&org) {
                    s.active_team_id = None;
                }
                s.active_organization_id = Some(org);
            })
            .await?;
        Ok(Accepted {
            invitation,
            member,
            session,
        })
    }

    /// Leaves an organization (`member: None`) or removes a member of it as this user; when
    /// this user is the one who left, the session's active organization is cleared if it was
    /// that one.
    pub(super) async fn leave_organization(
        &self,
        user: &UserId,
        org: OrgId,
        member: Option<MemberId>,
        token: &str,
        ctx: &Ctx,
    ) -> Result<(Member, Option<Session>), ActorError> {
        let handle = self.actors.org(org.clone()).with(ctx.clone());
        let removed = match member {
            None => handle.leave(user.clone()).await?,
            Some(m) => handle.remove_member(Acting::User(user.clone()), m).await?,
        };
        if &removed.user_id != user {
            return Ok((removed, None));
        }
        let session = self
            .change_own_session(user, token, |s| {
                if s.active_organization_id.as_ref() == Some(&org) {
                    s.active_organization_id = None;
                    s.active_team_id = None;
                }
            })
            .await?;
        Ok((removed, session))
    }
}

impl UserHandle {
    /// Creates an organization with this user as its first member (see the actor method).
    /// With `activate` (a session token of this user), the new organization becomes that
    /// session's active one in the same turn; answers the session as it now is.
    pub async fn create_organization(
        &self,
        org: &Organization,
        owner: &Member,
        limit: Option<u32>,
        default_team: bool,
        activate: Option<&str>,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::CreateOrganization {
            org: Box::new((org.clone(), owner.clone())),
            limit,
            default_team,
            activate: activate.map(str::to_owned),
            reply,
        })
        .await
    }

    /// Accepts an invitation as this user and makes its organization the session's active one.
    pub async fn accept_invitation(
        &self,
        org: OrgId,
        invitation: InvitationId,
        token: &str,
    ) -> Result<Accepted, ActorError> {
        self.call(|reply| UserMsg::AcceptInvitation {
            org: org.clone(),
            invitation: invitation.clone(),
            token: token.to_owned(),
            reply,
        })
        .await
    }

    /// Leaves `org` (`member: None`) or removes one of its members as this user; clears the
    /// session's active organization when this user left it.
    pub async fn leave_organization(
        &self,
        org: OrgId,
        member: Option<MemberId>,
        token: &str,
    ) -> Result<(Member, Option<Session>), ActorError> {
        self.call(|reply| UserMsg::LeaveOrganization {
            org: org.clone(),
            member: member.clone(),
            token: token.to_owned(),
            reply,
        })
        .await
    }
}
