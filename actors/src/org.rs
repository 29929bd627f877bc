//! The organization actor: every change of one organization (settings, members, roles) goes
//! through it. It asks `policy` whether the acting member may, checks the invariant (last
//! owner, membership limit, no cross-organization ids), writes through storage, and replies.
use crate::{ActorError, Actors, Rule, Shared};
use policy::{Permissions, Policy};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use std::time::Duration;
use storage::{Member, MemberId, OrgId, Organization, UserId};
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
    IdleCheck,
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
        self.shared
            .store
            .get_member(&state.id, user)
            .await?
            .ok_or(ActorError::Refused(Rule::NotAMember))
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
