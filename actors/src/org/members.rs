//! Members: add, remove, leave, change roles — and the rules of granting: nobody grants more
//! than their own roles hold, owner-only permissions come from owners, and nobody acts on a
//! stronger member. Counts on the organization row (members, owners) are what the membership
//! limit and the last-owner rule are checked against.
use super::{guarded, is_owner, policy_err, Acting, Decision, OrgActor, OrgState};
use crate::{ActorError, Escalation, Rule};
use policy::Permissions;
use storage::{Member, MemberId, OrgChange, OrgId, Organization, UserId};

impl OrgActor {
    pub(super) async fn add_member(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        user: &UserId,
        role: &str,
    ) -> Result<Member, ActorError> {
        guarded!(self, state, |org| async {
            let actor_member = self.check(state, &org, acting, "member", "create").await?;
            let role = self
                .validate_grant(
                    state,
                    &org,
                    actor_member.as_ref(),
                    role,
                    Escalation::AddMember,
                )
                .await?;
            let store = &self.shared.store;
            if store.get_user(user).await?.is_none() {
                return Err(ActorError::Refused(Rule::UserNotFound));
            }
            if store.get_member(&state.id, user).await?.is_some() {
                return Err(ActorError::Refused(Rule::AlreadyMember));
            }
            if org.member_count >= self.shared.config.org.membership_limit {
                return Err(ActorError::Refused(Rule::MembershipLimit));
            }
            let member = Member {
                id: MemberId::generate(),
                organization_id: state.id.clone(),
                user_id: user.clone(),
                role,
                team_id: None,
                created_at: self.shared.clock.now(),
            };
            let owner = u32::from(is_owner(&member.role));
            Ok(
                Decision::on(org, vec![OrgChange::AddMember(member.clone())], member).with(|o| {
                    o.member_count += 1;
                    o.owner_count += owner;
                }),
            )
        })
    }

    /// Parses a role list into its stored form and checks that `granter` (`None`: the server)
    /// may hand it out: every role exists, only an owner grants `owner`, and the roles grant
    /// nothing beyond the granter's own permissions (see [`OrgActor::may_grant`]). Returns the
    /// normalized list (trimmed, de-duplicated) to store.
    pub(super) async fn validate_grant(
        &self,
        state: &mut OrgState,
        org: &Organization,
        granter: Option<&Member>,
        role: &str,
        what: Escalation,
    ) -> Result<String, ActorError> {
        let role = policy::normalize_roles(role)
            .map_err(|e| ActorError::Refused(Rule::InvalidRole(e.to_string())))?;
        let id = state.id.clone();
        let policy = self.policy(state, org).await?;
        for r in policy::parse_roles(&role) {
            if !policy.is_role(r) {
                return Err(ActorError::Refused(Rule::InvalidRole(format!(
                    "unknown role {r:?}"
                ))));
            }
        }
        if let Some(g) = granter {
            if is_owner(&role) && !is_owner(&g.role) {
                return Err(ActorError::Refused(Rule::Escalation(what)));
            }
        }
        if let Some(g) = granter {
            let perms = policy.permissions_of(&role).map_err(policy_err)?;
            grants_within(policy, &id, g, &perms, what)?;
        }
        Ok(role)
    }

    /// Whether `granter` may hand out `perms` (to a role, a member or an invitation): only
    /// what their own roles already grant, and what only owners hold (deleting the
    /// organization) only by an owner. Checked inside the actor, in the same decision as the
    /// write, so no concurrent role change can open a window between the two.
    pub(super) async fn may_grant(
        &self,
        state: &mut OrgState,
        org: &Organization,
        granter: Option<&Member>,
        perms: &Permissions,
        what: Escalation,
    ) -> Result<(), ActorError> {
        let Some(g) = granter else {
            return Ok(());
        };
        let id = state.id.clone();
        let policy = self.policy(state, org).await?;
        grants_within(policy, &id, g, perms, what)
    }

    /// Whether `actor` (`None`: the server) may change or remove `target`: only an owner acts
    /// on an owner, and nobody on a member whose roles grant more than their own.
    async fn may_manage(
        &self,
        state: &mut OrgState,
        org: &Organization,
        actor: Option<&Member>,
        target: &Member,
        what: Escalation,
    ) -> Result<(), ActorError> {
        let Some(a) = actor else {
            return Ok(());
        };
        if is_owner(&target.role) && !is_owner(&a.role) {
            return Err(ActorError::Refused(Rule::Escalation(what)));
        }
        let policy = self.policy(state, org).await?;
        let theirs = policy.permissions_of(&target.role).map_err(policy_err)?;
        let own = policy.permissions_of(&a.role).map_err(policy_err)?;
        if !policy::is_subset(&theirs, &own) {
            return Err(ActorError::Refused(Rule::Escalation(what)));
        }
        Ok(())
    }

    async fn target(&self, state: &mut OrgState, member: &MemberId) -> Result<Member, ActorError> {
        if let Some(m) = state.members.find(|m| m.id == *member) {
            return Ok(m);
        }
        // An id from another organization is "not found" here, never acted on.
        let m = self
            .shared
            .store
            .get_member_by_id(&state.id, member)
            .await?
            .ok_or(ActorError::Refused(Rule::MemberNotFound))?;
        state.members.keep(&m);
        Ok(m)
    }

    /// The decision to remove `target`: never the last owner.
    fn removal(org: Organization, target: Member) -> Result<Decision<Member>, ActorError> {
        let owner = is_owner(&target.role);
        if owner && org.owner_count <= 1 {
            return Err(ActorError::Refused(Rule::LastOwner));
        }
        Ok(Decision::on(
            org,
            vec![OrgChange::RemoveMember(target.id.clone())],
            target,
        )
        .with(|o| {
            o.member_count = o.member_count.saturating_sub(1);
            o.owner_count = o.owner_count.saturating_sub(u32::from(owner));
        }))
    }

    pub(super) async fn remove_member(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        member: &MemberId,
    ) -> Result<Member, ActorError> {
        guarded!(self, state, |org| async {
            // As 1.7 orders them: the target, the caller's membership, the last owner, then
            // the permission.
            let target = self.target(state, member).await?;
            let is_self = matches!(acting, Acting::User(u) if *u == target.user_id);
            if !is_self {
                if let Some(u) = acting.user() {
                    self.member_of(state, u).await?;
                }
                if is_owner(&target.role) && org.owner_count <= 1 {
                    return Err(ActorError::Refused(Rule::LastOwner));
                }
                let actor_member = self.check(state, &org, acting, "member", "delete").await?;
                self.may_manage(
                    state,
                    &org,
                    actor_member.as_ref(),
                    &target,
                    Escalation::RemoveMember,
                )
                .await?;
            }
            Self::removal(org, target)
        })
    }

    pub(super) async fn leave(
        &self,
        state: &mut OrgState,
        user: &UserId,
    ) -> Result<Member, ActorError> {
        guarded!(self, state, |org| async {
            let m = self.member_of(state, user).await?;
            Self::removal(org, m)
        })
    }

    pub(super) async fn update_role(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        member: &MemberId,
        role: &str,
    ) -> Result<Member, ActorError> {
        guarded!(self, state, |org| async {
            // The target first, as 1.7: an unknown member id is "not found" for anyone.
            let mut target = self.target(state, member).await?;
            let actor_member = self.check(state, &org, acting, "member", "update").await?;
            self.may_manage(
                state,
                &org,
                actor_member.as_ref(),
                &target,
                Escalation::UpdateMember,
            )
            .await?;
            let role = self
                .validate_grant(
                    state,
                    &org,
                    actor_member.as_ref(),
                    role,
                    Escalation::UpdateMember,
                )
                .await?;
            let (was, will) = (is_owner(&target.role), is_owner(&role));
            if was && !will && org.owner_count <= 1 {
                return Err(ActorError::Refused(Rule::NoOwnerLeft));
            }
            target.role = role.clone();
            let change = OrgChange::SetMemberRole {
                member: target.id.clone(),
                role,
            };
            Ok(Decision::on(org, vec![change], target).with(|o| {
                o.owner_count = (o.owner_count + u32::from(will)).saturating_sub(u32::from(was));
            }))
        })
    }
}

/// [`OrgActor::may_grant`]'s rule on a policy at hand: `g` hands out only what their own
/// roles grant (plus plain membership, the built-in `member` role's reading rights: whoever
/// may invite or add members may give it), and what only owners hold only as an owner.
fn grants_within(
    policy: &policy::Policy,
    org: &OrgId,
    g: &Member,
    perms: &Permissions,
    what: Escalation,
) -> Result<(), ActorError> {
    let own = policy.permissions_of(&g.role).map_err(policy_err)?;
    let member = policy.permissions_of("member").map_err(policy_err)?;
    let exceeds = !policy::within(perms, &[&own, &member]);
    let owners_part = !is_owner(&g.role) && policy::overlaps(perms, policy.owner_only());
    if exceeds || owners_part {
        tracing::warn!(
            org = %org,
            member = %g.id,
            ?what,
            "refused: granting permissions beyond the granter's own"
        );
        return Err(ActorError::Refused(Rule::Escalation(what)));
    }
    Ok(())
}
