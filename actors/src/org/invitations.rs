//! Invitations: invite (with the grant rules and daily caps), accept or reject (only the
//! invited, verified address, only while pending, only while the inviter may still grant the
//! role), cancel. Accepting writes the status, the member and its team membership as one unit.
use super::{guarded, is_owner, policy_err, Acting, Decision, OrgActor, OrgState};
use crate::{ActorError, Escalation, Rule};
use storage::{
    Invitation, InvitationId, InvitationStatus, Member, MemberId, OrgChange, Organization, TeamId,
    TeamMember, TeamMemberId, UserId,
};

impl OrgActor {
    async fn invitation(
        &self,
        state: &OrgState,
        id: &InvitationId,
    ) -> Result<Invitation, ActorError> {
        // An invitation of another organization is "not found" here.
        self.shared
            .store
            .get_invitation(id)
            .await?
            .filter(|i| i.organization_id == state.id)
            .ok_or(ActorError::Refused(Rule::InvitationNotFound))
    }

    pub(super) async fn invite(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        email: &str,
        role: &str,
        team: Option<&TeamId>,
        resend: bool,
    ) -> Result<Invitation, ActorError> {
        guarded!(self, state, |org| async {
            // `invitation:create`, or `member:create` (inviting is a way of adding members).
            let inviter = match self
                .check(state, &org, acting, "invitation", "create")
                .await
            {
                Err(ActorError::Refused(Rule::Forbidden(..))) => self
                    .check(state, &org, acting, "member", "create")
                    .await
                    .map_err(|e| match e {
                        ActorError::Refused(Rule::Forbidden(..)) => {
                            ActorError::Refused(Rule::Forbidden("invitation", "create"))
                        }
                        other => other,
                    })?,
                other => other?,
            };
            let role = self
                .validate_grant(state, &org, inviter.as_ref(), role, Escalation::Invite)
                .await?;
            let store = &self.shared.store;
            if let Some(team) = team {
                store
                    .get_team(team)
                    .await?
                    .filter(|t| t.organization_id == state.id)
                    .ok_or(ActorError::Refused(Rule::TeamNotFound))?;
            }
            if let Some(user) = store.get_user_by_email(email).await? {
                if store.get_member(&state.id, &user.id).await?.is_some() {
                    return Err(ActorError::Refused(Rule::AlreadyMember));
                }
            }
            let now = self.shared.clock.now();
            let pending = store
                .list_invitations_by_email(email)
                .await?
                .into_iter()
                .find(|i| {
                    i.organization_id == state.id
                        && i.status == InvitationStatus::Pending
                        && i.expires_at > now
                });
            if let Some(existing) = pending {
                return if resend {
                    Ok(Decision::unchanged(org, existing))
                } else {
                    Err(ActorError::Refused(Rule::AlreadyInvited))
                };
            }
            if org.member_count >= self.shared.config.org.membership_limit {
                return Err(ActorError::Refused(Rule::MembershipLimit));
            }
            let inviter_id = match (acting, &inviter) {
                (_, Some(m)) => m.user_id.clone(),
                (acting, None) => acting.user().cloned().unwrap_or(UserId(String::new())),
            };
            if inviter.is_some() {
                self.check_invitation_caps(state, &inviter_id).await?;
            }
            let inv = Invitation {
                id: InvitationId::generate(),
                organization_id: state.id.clone(),
                email: email.to_owned(),
                role,
                status: InvitationStatus::Pending,
                team_id: team.cloned(),
                inviter_id,
                expires_at: now + self.shared.config.org.invitation_expires_in,
                created_at: now,
            };
            Ok(Decision::on(org, vec![OrgChange::Invite(inv.clone())], inv))
        })
    }

    /// An invitation grants what its inviter could grant when it is accepted, not when it was
    /// sent: the inviter must still be a member allowed to invite, with that role. Invitations
    /// made by the server (no inviter) stand.
    async fn inviter_still_entitled(
        &self,
        state: &mut OrgState,
        org: &Organization,
        inv: &Invitation,
    ) -> Result<(), ActorError> {
        if inv.inviter_id.0.is_empty() {
            return Ok(());
        }
        let gone = || ActorError::Refused(Rule::InviterGone);
        let Some(inviter) = self
            .shared
            .store
            .get_member(&state.id, &inv.inviter_id)
            .await?
        else {
            return Err(gone());
        };
        let policy = self.policy(state, org).await?;
        let may_invite = policy
            .allows(&inviter.role, "invitation", "create")
            .map_err(policy_err)?
            || policy
                .allows(&inviter.role, "member", "create")
                .map_err(policy_err)?;
        if !may_invite {
            return Err(gone());
        }
        match self
            .validate_grant(state, org, Some(&inviter), &inv.role, Escalation::Invite)
            .await
        {
            Ok(_) => Ok(()),
            Err(ActorError::Refused(_)) => Err(gone()),
            Err(other) => Err(other),
        }
    }

    /// Invitations sent in the last 24 hours, by the organization and by `inviter`, against
    /// the configured daily caps (0: no cap). The server's own invitations are not capped.
    async fn check_invitation_caps(
        &self,
        state: &OrgState,
        inviter: &UserId,
    ) -> Result<(), ActorError> {
        let cfg = &self.shared.config.org;
        if cfg.invitations_per_day == 0 && cfg.invitations_per_inviter_per_day == 0 {
            return Ok(());
        }
        let since = self.shared.clock.now() - chrono::Duration::hours(24);
        let recent: Vec<Invitation> = self
            .shared
            .store
            .list_invitations(&state.id)
            .await?
            .into_iter()
            .filter(|i| i.created_at > since)
            .collect();
        let by_inviter = recent.iter().filter(|i| &i.inviter_id == inviter).count();
        if (cfg.invitations_per_day > 0 && recent.len() >= cfg.invitations_per_day as usize)
            || (cfg.invitations_per_inviter_per_day > 0
                && by_inviter >= cfg.invitations_per_inviter_per_day as usize)
        {
            return Err(ActorError::Refused(Rule::InvitationLimit));
        }
        Ok(())
    }

    /// Accepts or rejects: only while pending and unexpired, only by the invited address
    /// (verified, unless configured otherwise). Accepting creates the member (and joins the
    /// team, if it still exists), in one unit with the status change, so it happens once.
    pub(super) async fn respond(
        &self,
        state: &mut OrgState,
        user: &UserId,
        id: &InvitationId,
        accept: bool,
    ) -> Result<(Invitation, Option<Member>), ActorError> {
        guarded!(self, state, |org| async {
            let store = &self.shared.store;
            let mut inv = self.invitation(state, id).await?;
            let now = self.shared.clock.now();
            if inv.status != InvitationStatus::Pending || inv.expires_at <= now {
                return Err(ActorError::Refused(Rule::InvitationNotFound));
            }
            let u = store
                .get_user(user)
                .await?
                .ok_or(ActorError::Refused(Rule::UserNotFound))?;
            if u.email != inv.email {
                return Err(ActorError::Refused(Rule::NotRecipient));
            }
            if self.shared.config.org.require_verified_email && !u.email_verified {
                return Err(ActorError::Refused(Rule::EmailNotVerified));
            }
            let transition = |to| OrgChange::TransitionInvitation {
                id: id.clone(),
                from: InvitationStatus::Pending,
                to,
            };
            if !accept {
                inv.status = InvitationStatus::Rejected;
                let change = transition(InvitationStatus::Rejected);
                return Ok(Decision::on(org, vec![change], (inv, None)));
            }
            if store.get_member(&state.id, user).await?.is_some() {
                return Err(ActorError::Refused(Rule::AlreadyMember));
            }
            self.inviter_still_entitled(state, &org, &inv).await?;
            if org.member_count >= self.shared.config.org.membership_limit {
                return Err(ActorError::Refused(Rule::MembershipLimit));
            }
            // The team may have been removed since the invitation was sent; membership stands.
            let team = match &inv.team_id {
                Some(t) => store
                    .get_team(t)
                    .await?
                    .filter(|t| t.organization_id == state.id),
                None => None,
            };
            let member = Member {
                id: MemberId::generate(),
                organization_id: state.id.clone(),
                user_id: user.clone(),
                role: inv.role.clone(),
                team_id: team.as_ref().map(|t| t.id.clone()),
                created_at: now,
            };
            let mut changes = vec![
                transition(InvitationStatus::Accepted),
                OrgChange::AddMember(member.clone()),
            ];
            if let Some(t) = team {
                changes.push(OrgChange::AddTeamMember(TeamMember {
                    id: TeamMemberId::generate(),
                    team_id: t.id,
                    user_id: user.clone(),
                    created_at: now,
                }));
            }
            inv.status = InvitationStatus::Accepted;
            let owner = u32::from(is_owner(&member.role));
            Ok(Decision::on(org, changes, (inv, Some(member))).with(|o| {
                o.member_count += 1;
                o.owner_count += owner;
            }))
        })
    }

    pub(super) async fn cancel(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        id: &InvitationId,
    ) -> Result<Invitation, ActorError> {
        guarded!(self, state, |org| async {
            self.check(state, &org, acting, "invitation", "cancel")
                .await?;
            let mut inv = self.invitation(state, id).await?;
            // Canceling a canceled invitation changes nothing and answers it (as 1.7);
            // an accepted or rejected one cannot be canceled.
            if inv.status == InvitationStatus::Canceled {
                return Ok(Decision::unchanged(org, inv));
            }
            if inv.status != InvitationStatus::Pending {
                return Err(ActorError::Refused(Rule::InvitationNotFound));
            }
            inv.status = InvitationStatus::Canceled;
            let change = OrgChange::TransitionInvitation {
                id: id.clone(),
                from: InvitationStatus::Pending,
                to: InvitationStatus::Canceled,
            };
            Ok(Decision::on(org, vec![change], inv))
        })
    }
}
