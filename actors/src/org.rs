//! The organization actor: every change of one organization (settings, members, roles) goes
//! through it. It asks `policy` whether the acting member may, checks the invariant (last
//! owner, membership limit, no cross-organization ids), writes through storage, and replies.
use crate::{ActorError, Actors, Rule, Shared};
use policy::{Permissions, Policy};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use std::time::Duration;
use storage::{
    Invitation, InvitationId, InvitationStatus, Member, MemberId, OrgId, Organization,
    OrganizationRole, RoleId, Team, TeamId, TeamMember, TeamMemberId, UserId,
};
use tokio::time::Instant;

type Reply<T> = RpcReplyPort<Result<T, ActorError>>;

/// A change of the organization's settings; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct OrgPatch {
    pub name: Option<String>,
    pub slug: Option<String>,
    pub logo: Option<Option<String>>,
    pub metadata: Option<Option<String>>,
}

/// Who asks for a change: a member acting through a session, or the server itself (server
/// credential), which passes every permission check but never the invariants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acting {
    User(UserId),
    Server,
}

pub(crate) enum OrgMsg {
    Update(Acting, OrgPatch, Reply<Organization>),
    Delete(Acting, Reply<Organization>),
    AddMember {
        acting: Acting,
        user: UserId,
        role: String,
        reply: Reply<Member>,
    },
    RemoveMember {
        acting: Acting,
        member: MemberId,
        reply: Reply<Member>,
    },
    Leave(UserId, Reply<Member>),
    UpdateMemberRole {
        acting: Acting,
        member: MemberId,
        role: String,
        reply: Reply<Member>,
    },
    HasPermission(UserId, Permissions, Reply<bool>),
    Invite {
        acting: Acting,
        email: String,
        role: String,
        team: Option<TeamId>,
        resend: bool,
        reply: Reply<Invitation>,
    },
    RespondInvitation {
        user: UserId,
        invitation: InvitationId,
        accept: bool,
        reply: Reply<(Invitation, Option<Member>)>,
    },
    CancelInvitation {
        acting: Acting,
        invitation: InvitationId,
        reply: Reply<Invitation>,
    },
    Team(Acting, TeamChange, Reply<Option<Team>>),
    Role(Acting, RoleChange, Reply<Option<OrganizationRole>>),
    IdleCheck,
}

/// A change of the organization's teams.
#[derive(Debug, Clone)]
pub enum TeamChange {
    Create {
        name: String,
    },
    Rename {
        team: TeamId,
        name: String,
    },
    Remove {
        team: TeamId,
        allow_removing_all: bool,
    },
    AddMember {
        team: TeamId,
        user: UserId,
    },
    RemoveMember {
        team: TeamId,
        user: UserId,
    },
}

/// A change of the organization's custom roles.
#[derive(Debug, Clone)]
pub enum RoleChange {
    Create {
        role: String,
        permission: Permissions,
    },
    Update {
        role: String,
        new_name: Option<String>,
        permission: Option<Permissions>,
    },
    Delete {
        role: String,
    },
}

struct OrgActor {
    shared: Arc<Shared>,
}

struct OrgState {
    id: OrgId,
    policy: Option<Policy>,
    last_active: Instant,
}

impl Actor for OrgActor {
    type Msg = OrgMsg;
    type State = OrgState;
    type Arguments = OrgId;

    async fn pre_start(
        &self,
        myself: ActorRef<OrgMsg>,
        id: OrgId,
    ) -> Result<OrgState, ActorProcessingErr> {
        let idle = self.shared.config.idle_timeout;
        myself.send_interval((idle / 2).max(Duration::from_millis(10)), || {
            OrgMsg::IdleCheck
        });
        Ok(OrgState {
            id,
            policy: None,
            last_active: Instant::now(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<OrgMsg>,
        msg: OrgMsg,
        state: &mut OrgState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(msg, OrgMsg::IdleCheck) {
            state.last_active = Instant::now();
        }
        match msg {
            OrgMsg::Update(acting, patch, reply) => {
                let _ = reply.send(self.update(state, &acting, patch).await);
            }
            OrgMsg::Delete(acting, reply) => {
                let r = self.delete(state, &acting).await;
                let deleted = r.is_ok();
                let _ = reply.send(r);
                if deleted {
                    myself.stop(Some("organization deleted".into()));
                }
            }
            OrgMsg::AddMember {
                acting,
                user,
                role,
                reply,
            } => {
                let _ = reply.send(self.add_member(state, &acting, user, role).await);
            }
            OrgMsg::RemoveMember {
                acting,
                member,
                reply,
            } => {
                let _ = reply.send(self.remove_member(state, &acting, &member).await);
            }
            OrgMsg::Leave(user, reply) => {
                let _ = reply.send(self.leave(state, &user).await);
            }
            OrgMsg::UpdateMemberRole {
                acting,
                member,
                role,
                reply,
            } => {
                let _ = reply.send(self.update_role(state, &acting, &member, role).await);
            }
            OrgMsg::HasPermission(user, perms, reply) => {
                let r = async {
                    let m = self.member_of(state, &user).await?;
                    let policy = self.policy(state).await?;
                    policy.allows_all(&m.role, &perms).map_err(policy_err)
                }
                .await;
                let _ = reply.send(r);
            }
            OrgMsg::Invite {
                acting,
                email,
                role,
                team,
                resend,
                reply,
            } => {
                let _ = reply.send(self.invite(state, &acting, email, role, team, resend).await);
            }
            OrgMsg::RespondInvitation {
                user,
                invitation,
                accept,
                reply,
            } => {
                let _ = reply.send(self.respond(state, &user, &invitation, accept).await);
            }
            OrgMsg::CancelInvitation {
                acting,
                invitation,
                reply,
            } => {
                let _ = reply.send(self.cancel(state, &acting, &invitation).await);
            }
            OrgMsg::Team(acting, change, reply) => {
                let _ = reply.send(self.team(state, &acting, change).await);
            }
            OrgMsg::Role(acting, change, reply) => {
                let r = self.role(state, &acting, change).await;
                // Custom roles changed (or may have): rebuild the policy on next use.
                state.policy = None;
                let _ = reply.send(r);
            }
            OrgMsg::IdleCheck => {
                if state.last_active.elapsed() >= self.shared.config.idle_timeout {
                    myself.stop(Some("idle".into()));
                }
            }
        }
        Ok(())
    }
}

fn policy_err(e: policy::PolicyError) -> ActorError {
    match e {
        policy::PolicyError::Engine(m) => ActorError::Internal(m),
        other => ActorError::Refused(Rule::InvalidRole(other.to_string())),
    }
}

fn is_owner(role: &str) -> bool {
    policy::parse_roles(role).contains(&"owner")
}

impl OrgActor {
    async fn org(&self, state: &OrgState) -> Result<Organization, ActorError> {
        self.shared
            .store
            .get_organization(&state.id)
            .await?
            .ok_or(ActorError::Refused(Rule::OrganizationNotFound))
    }

    /// This organization's policy, built on first use (custom roles come from storage).
    async fn policy<'a>(&self, state: &'a mut OrgState) -> Result<&'a Policy, ActorError> {
        if state.policy.is_none() {
            let custom: Vec<(String, Permissions)> = self
                .shared
                .store
                .list_roles(&state.id)
                .await?
                .into_iter()
                .filter_map(|r| {
                    serde_json::from_str::<Permissions>(&r.permission)
                        .ok()
                        .map(|p| (r.role, p))
                })
                .collect();
            let p = Policy::new(&state.id.0, &self.shared.config.org.global_roles, &custom)
                .await
                .map_err(|e| ActorError::Internal(e.to_string()))?;
            state.policy = Some(p);
        }
        state
            .policy
            .as_ref()
            .ok_or_else(|| ActorError::Internal("policy missing".into()))
    }

    async fn member_of(&self, state: &OrgState, user: &UserId) -> Result<Member, ActorError> {
        match self.shared.store.get_member(&state.id, user).await? {
            Some(m) => Ok(m),
            // Say which: the organization is gone, or the user is not in it.
            None => {
                self.org(state).await?;
                Err(ActorError::Refused(Rule::NotAMember))
            }
        }
    }

    /// The acting member (if a user) after checking `resource:action`.
    async fn check(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        resource: &str,
        action: &str,
    ) -> Result<Option<Member>, ActorError> {
        let Acting::User(user) = acting else {
            return Ok(None);
        };
        let m = self.member_of(state, user).await?;
        let policy = self.policy(state).await?;
        if policy
            .allows(&m.role, resource, action)
            .map_err(policy_err)?
        {
            Ok(Some(m))
        } else {
            Err(ActorError::Refused(Rule::Forbidden(resource_label(
                resource,
            ))))
        }
    }

    async fn owners(&self, state: &OrgState) -> Result<usize, ActorError> {
        let members = self
            .shared
            .store
            .list_members(&state.id, u32::MAX, 0)
            .await?;
        Ok(members.iter().filter(|m| is_owner(&m.role)).count())
    }

    async fn update(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        patch: OrgPatch,
    ) -> Result<Organization, ActorError> {
        self.check(state, acting, "organization", "update").await?;
        let mut org = self.org(state).await?;
        if let Some(n) = patch.name {
            org.name = n;
        }
        if let Some(s) = patch.slug {
            org.slug = s;
        }
        if let Some(l) = patch.logo {
            org.logo = l;
        }
        if let Some(m) = patch.metadata {
            org.metadata = m;
        }
        self.shared.store.update_organization(&org).await?;
        Ok(org)
    }

    async fn delete(
        &self,
        state: &mut OrgState,
        acting: &Acting,
    ) -> Result<Organization, ActorError> {
        self.check(state, acting, "organization", "delete").await?;
        let org = self.org(state).await?;
        self.shared.store.delete_organization(&state.id).await?;
        Ok(org)
    }

    async fn add_member(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        user: UserId,
        role: String,
    ) -> Result<Member, ActorError> {
        let actor_member = self.check(state, acting, "member", "create").await?;
        self.org(state).await?;
        self.validate_grant(state, actor_member.as_ref(), &role)
            .await?;
        let store = &self.shared.store;
        if store.get_user(&user).await?.is_none() {
            return Err(ActorError::Refused(Rule::UserNotFound));
        }
        if store.get_member(&state.id, &user).await?.is_some() {
            return Err(ActorError::Refused(Rule::AlreadyMember));
        }
        // Counted inside the actor, so concurrent joins cannot overshoot the limit.
        let limit = self.shared.config.org.membership_limit as u64;
        if store.count_members(&state.id).await? >= limit {
            return Err(ActorError::Refused(Rule::MembershipLimit));
        }
        let member = Member {
            id: MemberId::generate(),
            organization_id: state.id.clone(),
            user_id: user,
            role,
            team_id: None,
            created_at: self.shared.clock.now(),
        };
        store.create_member(&member).await.map_err(|e| match e {
            storage::StoreError::Conflict(_) => ActorError::Refused(Rule::AlreadyMember),
            other => other.into(),
        })?;
        Ok(member)
    }

    /// Every role must exist; only an owner may grant `owner` (no admin → owner).
    async fn validate_grant(
        &self,
        state: &mut OrgState,
        granter: Option<&Member>,
        role: &str,
    ) -> Result<(), ActorError> {
        let roles = policy::parse_roles(role);
        if roles.is_empty() {
            return Err(ActorError::Refused(Rule::InvalidRole(
                "no role given".into(),
            )));
        }
        let policy = self.policy(state).await?;
        for r in &roles {
            if !policy.is_role(r) {
                return Err(ActorError::Refused(Rule::InvalidRole(format!(
                    "unknown role {r:?}"
                ))));
            }
        }
        if let Some(g) = granter {
            if roles.contains(&"owner") && !is_owner(&g.role) {
                return Err(ActorError::Refused(Rule::Forbidden("member")));
            }
        }
        Ok(())
    }

    async fn target(&self, state: &OrgState, member: &MemberId) -> Result<Member, ActorError> {
        // An id from another organization is "not found" here, never acted on.
        self.shared
            .store
            .get_member_by_id(member)
            .await?
            .filter(|m| m.organization_id == state.id)
            .ok_or(ActorError::Refused(Rule::MemberNotFound))
    }

    async fn remove_member(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        member: &MemberId,
    ) -> Result<Member, ActorError> {
        let target = self.target(state, member).await?;
        let is_self = matches!(acting, Acting::User(u) if *u == target.user_id);
        let actor_member = if is_self {
            None
        } else {
            self.check(state, acting, "member", "delete").await?
        };
        if is_owner(&target.role) {
            if let Some(a) = &actor_member {
                if !is_owner(&a.role) {
                    return Err(ActorError::Refused(Rule::Forbidden("member")));
                }
            }
            if self.owners(state).await? <= 1 {
                return Err(ActorError::Refused(Rule::LastOwner));
            }
        }
        self.shared.store.delete_member(&target.id).await?;
        Ok(target)
    }

    async fn leave(&self, state: &mut OrgState, user: &UserId) -> Result<Member, ActorError> {
        let m = self.member_of(state, user).await?;
        if is_owner(&m.role) && self.owners(state).await? <= 1 {
            return Err(ActorError::Refused(Rule::LastOwner));
        }
        self.shared.store.delete_member(&m.id).await?;
        Ok(m)
    }

    async fn update_role(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        member: &MemberId,
        role: String,
    ) -> Result<Member, ActorError> {
        let actor_member = self.check(state, acting, "member", "update").await?;
        let mut target = self.target(state, member).await?;
        self.validate_grant(state, actor_member.as_ref(), &role)
            .await?;
        if is_owner(&target.role) {
            if let Some(a) = &actor_member {
                if !is_owner(&a.role) {
                    return Err(ActorError::Refused(Rule::Forbidden("member")));
                }
            }
            if !is_owner(&role) && self.owners(state).await? <= 1 {
                return Err(ActorError::Refused(Rule::LastOwner));
            }
        }
        self.shared
            .store
            .update_member_role(&target.id, &role)
            .await?;
        target.role = role;
        Ok(target)
    }
}

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

    async fn invite(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        email: String,
        role: String,
        team: Option<TeamId>,
        resend: bool,
    ) -> Result<Invitation, ActorError> {
        // `invitation:create`, or `member:create` (inviting is a way of adding members).
        let inviter = match self.check(state, acting, "invitation", "create").await {
            Err(ActorError::Refused(Rule::Forbidden(_))) => self
                .check(state, acting, "member", "create")
                .await
                .map_err(|e| match e {
                    ActorError::Refused(Rule::Forbidden(_)) => {
                        ActorError::Refused(Rule::Forbidden("invitation"))
                    }
                    other => other,
                })?,
            other => other?,
        };
        self.org(state).await?;
        self.validate_grant(state, inviter.as_ref(), &role).await?;
        let store = &self.shared.store;
        if let Some(team) = &team {
            store
                .get_team(team)
                .await?
                .filter(|t| t.organization_id == state.id)
                .ok_or(ActorError::Refused(Rule::TeamNotFound))?;
        }
        if let Some(user) = store.get_user_by_email(&email).await? {
            if store.get_member(&state.id, &user.id).await?.is_some() {
                return Err(ActorError::Refused(Rule::AlreadyMember));
            }
        }
        let now = self.shared.clock.now();
        let pending = store
            .list_invitations_by_email(&email)
            .await?
            .into_iter()
            .find(|i| {
                i.organization_id == state.id
                    && i.status == InvitationStatus::Pending
                    && i.expires_at > now
            });
        if let Some(existing) = pending {
            return if resend {
                Ok(existing)
            } else {
                Err(ActorError::Refused(Rule::AlreadyInvited))
            };
        }
        let limit = self.shared.config.org.membership_limit as u64;
        if store.count_members(&state.id).await? >= limit {
            return Err(ActorError::Refused(Rule::MembershipLimit));
        }
        let inviter_id = match (acting, &inviter) {
            (_, Some(m)) => m.user_id.clone(),
            (Acting::User(u), None) => u.clone(),
            (Acting::Server, None) => UserId(String::new()),
        };
        let inv = Invitation {
            id: InvitationId::generate(),
            organization_id: state.id.clone(),
            email,
            role,
            status: InvitationStatus::Pending,
            team_id: team,
            inviter_id,
            expires_at: now + self.shared.config.org.invitation_expires_in,
            created_at: now,
        };
        store.create_invitation(&inv).await?;
        Ok(inv)
    }

    /// Accepts or rejects: only while pending and unexpired, only by the invited address
    /// (verified, unless configured otherwise). Accepting creates the member (and joins the
    /// team, if any); the status moves with a conditional write, so it happens once.
    async fn respond(
        &self,
        state: &mut OrgState,
        user: &UserId,
        id: &InvitationId,
        accept: bool,
    ) -> Result<(Invitation, Option<Member>), ActorError> {
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
        if !accept {
            store
                .transition_invitation(id, InvitationStatus::Pending, InvitationStatus::Rejected)
                .await
                .map_err(gone)?;
            inv.status = InvitationStatus::Rejected;
            return Ok((inv, None));
        }
        if store.get_member(&state.id, user).await?.is_some() {
            return Err(ActorError::Refused(Rule::AlreadyMember));
        }
        let limit = self.shared.config.org.membership_limit as u64;
        if store.count_members(&state.id).await? >= limit {
            return Err(ActorError::Refused(Rule::MembershipLimit));
        }
        store
            .transition_invitation(id, InvitationStatus::Pending, InvitationStatus::Accepted)
            .await
            .map_err(gone)?;
        inv.status = InvitationStatus::Accepted;
        let member = Member {
            id: MemberId::generate(),
            organization_id: state.id.clone(),
            user_id: user.clone(),
            role: inv.role.clone(),
            team_id: inv.team_id.clone(),
            created_at: now,
        };
        store.create_member(&member).await?;
        if let Some(team) = &inv.team_id {
            let tm = TeamMember {
                id: TeamMemberId::generate(),
                team_id: team.clone(),
                user_id: user.clone(),
                created_at: now,
            };
            // The team may have been removed since the invitation was sent; membership stands.
            if let Err(e) = store.add_team_member(&tm).await {
                tracing::warn!(error = %e, "could not join the invitation's team");
            }
        }
        Ok((inv, Some(member)))
    }

    async fn cancel(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        id: &InvitationId,
    ) -> Result<Invitation, ActorError> {
        self.check(state, acting, "invitation", "cancel").await?;
        let mut inv = self.invitation(state, id).await?;
        if inv.status != InvitationStatus::Pending {
            return Err(ActorError::Refused(Rule::InvitationNotFound));
        }
        self.shared
            .store
            .transition_invitation(id, InvitationStatus::Pending, InvitationStatus::Canceled)
            .await
            .map_err(gone)?;
        inv.status = InvitationStatus::Canceled;
        Ok(inv)
    }
}

impl OrgActor {
    async fn own_team(&self, state: &OrgState, id: &TeamId) -> Result<Team, ActorError> {
        self.shared
            .store
            .get_team(id)
            .await?
            .filter(|t| t.organization_id == state.id)
            .ok_or(ActorError::Refused(Rule::TeamNotFound))
    }

    async fn team(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        change: TeamChange,
    ) -> Result<Option<Team>, ActorError> {
        let store = &self.shared.store;
        let now = self.shared.clock.now();
        let conflict = |e: storage::StoreError| match e {
            storage::StoreError::Conflict(_) => ActorError::Refused(Rule::TeamExists),
            other => other.into(),
        };
        match change {
            TeamChange::Create { name } => {
                self.check(state, acting, "team", "create").await?;
                self.org(state).await?;
                let team = Team {
                    id: TeamId::generate(),
                    name,
                    organization_id: state.id.clone(),
                    created_at: now,
                    updated_at: Some(now),
                };
                store.create_team(&team).await.map_err(conflict)?;
                Ok(Some(team))
            }
            TeamChange::Rename { team, name } => {
                self.check(state, acting, "team", "update").await?;
                let mut t = self.own_team(state, &team).await?;
                t.name = name;
                t.updated_at = Some(now);
                store.update_team(&t).await.map_err(conflict)?;
                Ok(Some(t))
            }
            TeamChange::Remove {
                team,
                allow_removing_all,
            } => {
                self.check(state, acting, "team", "delete").await?;
                let t = self.own_team(state, &team).await?;
                if !allow_removing_all && store.list_teams(&state.id).await?.len() <= 1 {
                    return Err(ActorError::Refused(Rule::LastTeam));
                }
                store.delete_team(&t.id).await?;
                Ok(Some(t))
            }
            TeamChange::AddMember { team, user } => {
                self.check(state, acting, "team", "update").await?;
                let t = self.own_team(state, &team).await?;
                self.member_of(state, &user)
                    .await
                    .map_err(|_| ActorError::Refused(Rule::MemberNotFound))?;
                let tm = TeamMember {
                    id: TeamMemberId::generate(),
                    team_id: t.id.clone(),
                    user_id: user,
                    created_at: now,
                };
                store.add_team_member(&tm).await.map_err(|e| match e {
                    storage::StoreError::Conflict(_) => ActorError::Refused(Rule::AlreadyMember),
                    other => other.into(),
                })?;
                Ok(Some(t))
            }
            TeamChange::RemoveMember { team, user } => {
                let leaving_self = matches!(acting, Acting::User(u) if *u == user);
                if !leaving_self {
                    self.check(state, acting, "team", "update").await?;
                }
                let t = self.own_team(state, &team).await?;
                if !store.remove_team_member(&t.id, &user).await? {
                    return Err(ActorError::Refused(Rule::MemberNotFound));
                }
                Ok(Some(t))
            }
        }
    }

    async fn role(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        change: RoleChange,
    ) -> Result<Option<OrganizationRole>, ActorError> {
        let store = &self.shared.store;
        let now = self.shared.clock.now();
        let reserved = |name: &str| {
            policy::BUILTIN_ROLES.contains(&name)
                || self
                    .shared
                    .config
                    .org
                    .global_roles
                    .iter()
                    .any(|(n, _)| n == name)
        };
        let invalid =
            |e: policy::PolicyError| ActorError::Refused(Rule::InvalidRole(e.to_string()));
        let json = |p: &Permissions| serde_json::to_string(p).unwrap_or_else(|_| "{}".into());
        match change {
            RoleChange::Create { role, permission } => {
                self.check(state, acting, "ac", "create").await?;
                self.org(state).await?;
                policy::validate_role_name(&role).map_err(invalid)?;
                policy::validate_permissions(&permission).map_err(invalid)?;
                if reserved(&role) {
                    return Err(ActorError::Refused(Rule::RoleExists));
                }
                let r = OrganizationRole {
                    id: RoleId::generate(),
                    organization_id: state.id.clone(),
                    role,
                    permission: json(&permission),
                    created_at: now,
                    updated_at: Some(now),
                };
                store.create_role(&r).await.map_err(|e| match e {
                    storage::StoreError::Conflict(_) => ActorError::Refused(Rule::RoleExists),
                    other => other.into(),
                })?;
                Ok(Some(r))
            }
            RoleChange::Update {
                role,
                new_name,
                permission,
            } => {
                self.check(state, acting, "ac", "update").await?;
                let mut r = store
                    .get_role(&state.id, &role)
                    .await?
                    .ok_or(ActorError::Refused(Rule::RoleNotFound))?;
                if let Some(p) = permission {
                    policy::validate_permissions(&p).map_err(invalid)?;
                    r.permission = json(&p);
                }
                if let Some(n) = new_name.filter(|n| *n != r.role) {
                    policy::validate_role_name(&n).map_err(invalid)?;
                    if reserved(&n) {
                        return Err(ActorError::Refused(Rule::RoleExists));
                    }
                    if self.assigned(state, &r.role).await? {
                        return Err(ActorError::Refused(Rule::RoleInUse));
                    }
                    r.role = n;
                }
                r.updated_at = Some(now);
                store.update_role(&r).await.map_err(|e| match e {
                    storage::StoreError::Conflict(_) => ActorError::Refused(Rule::RoleExists),
                    other => other.into(),
                })?;
                Ok(Some(r))
            }
            RoleChange::Delete { role } => {
                self.check(state, acting, "ac", "delete").await?;
                let r = store
                    .get_role(&state.id, &role)
                    .await?
                    .ok_or(ActorError::Refused(Rule::RoleNotFound))?;
                // Deleting a role members still hold would leave them with an unknown role:
                // refused until they are given another one.
                if self.assigned(state, &r.role).await? {
                    return Err(ActorError::Refused(Rule::RoleInUse));
                }
                store.delete_role(&r.id).await?;
                Ok(Some(r))
            }
        }
    }

    async fn assigned(&self, state: &OrgState, role: &str) -> Result<bool, ActorError> {
        let members = self
            .shared
            .store
            .list_members(&state.id, u32::MAX, 0)
            .await?;
        Ok(members
            .iter()
            .any(|m| policy::parse_roles(&m.role).contains(&role)))
    }
}

/// A lost conditional transition means the invitation is no longer pending.
fn gone(e: storage::StoreError) -> ActorError {
    match e {
        storage::StoreError::ConcurrentModification | storage::StoreError::NotFound => {
            ActorError::Refused(Rule::InvitationNotFound)
        }
        other => other.into(),
    }
}

fn resource_label(resource: &str) -> &'static str {
    match resource {
        "organization" => "organization",
        "member" => "member",
        "invitation" => "invitation",
        "team" => "team",
        "ac" => "ac",
        _ => "resource",
    }
}

/// A typed handle to one organization's actor.
#[derive(Clone)]
pub struct OrgHandle {
    actors: Actors,
    id: OrgId,
}

impl OrgHandle {
    pub(crate) fn new(actors: Actors, id: OrgId) -> Self {
        Self { actors, id }
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

    pub async fn team(
        &self,
        acting: Acting,
        change: TeamChange,
    ) -> Result<Option<Team>, ActorError> {
        self.call(|r| OrgMsg::Team(acting.clone(), change.clone(), r))
            .await
    }

    pub async fn role(
        &self,
        acting: Acting,
        change: RoleChange,
    ) -> Result<Option<OrganizationRole>, ActorError> {
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

    pub async fn has_permission(
        &self,
        user: UserId,
        perms: Permissions,
    ) -> Result<bool, ActorError> {
        self.call(|r| OrgMsg::HasPermission(user.clone(), perms.clone(), r))
            .await
    }

    async fn call<T: Send + 'static>(
        &self,
        build: impl Fn(Reply<T>) -> OrgMsg,
    ) -> Result<T, ActorError> {
        let shared = self.actors.shared.clone();
        self.actors
            .call(
                "org",
                &self.id,
                || OrgActor {
                    shared: shared.clone(),
                },
                build,
                &self.id.0,
            )
            .await
    }
}
