//! The organization actor: every change of one organization (settings, members, invitations,
//! teams, roles) goes through it. It asks `policy` whether the acting member may, checks the
//! invariant (last owner, membership limit, no cross-organization ids…), and writes through
//! storage — all decided on one version of the organization and written only if that version
//! is still current (`guarded!`, in `decision.rs`), so the rules hold when several processes, each
//! with its own actor for the organization, change it at once.
//!
//! Files: `decision.rs` (a decision, and how it is written under the version: `guarded!`),
//! `members.rs` (add, remove, leave, roles of members, and the grant rules),
//! `invitations.rs`, `teams.rs`, `roles.rs` (custom roles), `handle.rs` (the typed handle).
mod decision;
mod events;
mod handle;
mod invitations;
mod members;
mod roles;
mod teams;

pub(crate) use decision::{guarded, Decision, Step};
pub use handle::OrgHandle;

use crate::events::{data, Ctx, Emit, Facts};
use crate::runtime::{Envelope, Idle};
use crate::{ActorError, Rule, Shared};
use policy::{Permissions, Policy};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use storage::{
    Invitation, InvitationId, Member, MemberId, OrgChange, OrgId, Organization, OrganizationRole,
    StoreError, Team, TeamId, UserId,
};

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
    /// An organization's API key: its maker, in that organization only, within the key's
    /// permissions as well as the maker's roles.
    Key {
        user: UserId,
        org: OrgId,
        permissions: Arc<policy::Permissions>,
    },
    Server,
}

impl Acting {
    /// The user acting (the maker of a key), if a user.
    pub fn user(&self) -> Option<&UserId> {
        match self {
            Acting::User(u) | Acting::Key { user: u, .. } => Some(u),
            Acting::Server => None,
        }
    }
}

/// The team a change was about, and the team member it added, if it added one.
#[derive(Debug, Clone)]
pub struct TeamOutcome {
    pub team: Team,
    pub member: Option<storage::TeamMember>,
}

/// A change of the organization's teams.
#[derive(Debug, Clone)]
pub enum TeamChange {
    Create {
        name: String,
    },
    /// A team with `user` (a member) in it, in one change: an organization's default team.
    CreateWithMember {
        name: String,
        user: UserId,
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
    Team(Acting, TeamChange, Reply<TeamOutcome>),
    Role(Acting, RoleChange, Reply<OrganizationRole>),
}

pub(crate) struct OrgActor {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct OrgState {
    id: OrgId,
    /// The policy of the message being decided (see [`OrgActor::policy`]).
    policy: Option<Arc<Policy>>,
    /// Memberships read at one version of the organization.
    members: Members,
    /// The organization as this actor last read or wrote it: a write decides on it first and
    /// the version check of the write proves it current (see [`guarded!`]).
    known: Option<Organization>,
    idle: Idle,
    /// What the message being handled adds to its decision (see `events`).
    ctx: Arc<Ctx>,
}

/// Memberships read at one version of the organization, so a decision does not read again
/// what an earlier one read (an owner changing roles reads its own membership and the
/// target's on every request). Sound because every write of a membership — here, in another
/// process, or a user's deletion — moves the organization's version in the same write: rows
/// read while the organization is at version `v` are still its rows while it is at `v`.
/// Trusted only within a message whose decision read the organization's row afresh
/// ([`OrgActor::org`]: a different version empties it); each message starts untrusted.
#[derive(Default)]
struct Members {
    version: u64,
    /// Set by reading the organization in the current message.
    fresh: bool,
    rows: Vec<Member>,
}

/// Memberships kept at most (an organization has up to the membership limit; an actor that
/// acts on more members than this starts over).
const MEMBERS_KEPT: usize = 256;

impl Members {
    /// The organization was read at `version` in this message.
    fn seen(&mut self, version: u64) {
        if self.version != version {
            self.rows.clear();
            self.version = version;
        }
        self.fresh = true;
    }

    fn find(&self, f: impl Fn(&Member) -> bool) -> Option<Member> {
        self.fresh
            .then(|| self.rows.iter().find(|m| f(m)).cloned())
            .flatten()
    }

    /// A row read from the store in this message (after the organization was).
    fn keep(&mut self, m: &Member) {
        if !self.fresh {
            return;
        }
        if self.rows.len() >= MEMBERS_KEPT {
            self.rows.clear();
        }
        self.rows.retain(|r| r.id != m.id);
        self.rows.push(m.clone());
    }

    /// `changes` were written at `version` (one up from the version they were decided on):
    /// what they did to memberships is applied, anything else about members forgets them.
    fn written(&mut self, version: u64, changes: &[OrgChange]) {
        if !self.fresh || self.version + 1 != version {
            self.rows.clear();
            self.fresh = false;
            return;
        }
        for c in changes {
            match c {
                OrgChange::SetMemberRole { member, role } => {
                    if let Some(r) = self.rows.iter_mut().find(|r| r.id == *member) {
                        r.role = role.clone();
                    }
                }
                OrgChange::RemoveMember(member) => self.rows.retain(|r| r.id != *member),
                // Team changes can clear members' teams; a new member is read when needed.
                _ => self.rows.clear(),
            }
        }
        self.version = version;
    }
}

impl Actor for OrgActor {
    type Msg = Envelope<OrgMsg>;
    type State = OrgState;
    type Arguments = OrgId;

    async fn pre_start(
        &self,
        myself: ActorRef<Envelope<OrgMsg>>,
        id: OrgId,
    ) -> Result<OrgState, ActorProcessingErr> {
        Ok(OrgState {
            id,
            policy: None,
            members: Members::default(),
            known: None,
            idle: Idle::start(&myself, self.shared.config.idle_timeout),
            ctx: Arc::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Envelope<OrgMsg>>,
        envelope: Envelope<OrgMsg>,
        state: &mut OrgState,
    ) -> Result<(), ActorProcessingErr> {
        // Boxed: an idle actor's task then holds a pointer, not the space of the largest
        // message's work (several KB per actor, times every actor alive).
        Box::pin(self.dispatch(myself, envelope, state)).await
    }
}

impl OrgActor {
    async fn dispatch(
        &self,
        myself: ActorRef<Envelope<OrgMsg>>,
        envelope: Envelope<OrgMsg>,
        state: &mut OrgState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((msg, ctx)) = state.idle.open(&myself, envelope) else {
            return Ok(());
        };
        state.ctx = ctx;
        // Memberships read by earlier messages are trusted again only once this message has
        // read the organization's version.
        state.members.fresh = false;
        // A reply fails only when the caller gave up waiting; nothing to do then.
        match msg {
            OrgMsg::Update(acting, patch, reply) => {
                let _ = reply.send(self.update(state, &acting, &patch).await);
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
                let _ = reply.send(self.add_member(state, &acting, &user, &role).await);
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
                let _ = reply.send(self.update_role(state, &acting, &member, &role).await);
            }
            OrgMsg::Invite {
                acting,
                email,
                role,
                team,
                resend,
                reply,
            } => {
                let r = self
                    .invite(state, &acting, &email, &role, team.as_ref(), resend)
                    .await;
                let _ = reply.send(r);
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
                let _ = reply.send(self.team(state, &acting, &change).await);
            }
            OrgMsg::Role(acting, change, reply) => {
                let _ = reply.send(self.role(state, &acting, &change).await);
            }
        }
        // Again after the change: its caller may have given up before it landed.
        self.shared.views.drop_org(&state.id);
        Ok(())
    }
}

pub(crate) fn policy_err(e: policy::PolicyError) -> ActorError {
    match e {
        policy::PolicyError::Engine(m) => ActorError::Internal(m),
        other => ActorError::Refused(Rule::InvalidRole(other.to_string())),
    }
}

pub(crate) fn is_owner(role: &str) -> bool {
    policy::parse_roles(role).contains(&storage::OWNER_ROLE)
}

impl OrgActor {
    /// The organization's policy as of `org`'s roles version, from the policies this process
    /// shares (rebuilt when a role changed, here or in another process, so a revoked
    /// permission stops granting at once).
    async fn policy<'a>(
        &self,
        state: &'a mut OrgState,
        org: &Organization,
    ) -> Result<&'a Policy, ActorError> {
        let p = self.shared.policy_of(org).await?;
        let kept: &'a Arc<Policy> = state.policy.insert(p);
        Ok(kept.as_ref())
    }

    /// The membership of `user` (the organization exists: it was loaded).
    async fn member_of(&self, state: &mut OrgState, user: &UserId) -> Result<Member, ActorError> {
        if let Some(m) = state.members.find(|m| m.user_id == *user) {
            return Ok(m);
        }
        let m = self
            .shared
            .store
            .get_member(&state.id, user)
            .await?
            .ok_or(ActorError::Refused(Rule::NotAMember))?;
        state.members.keep(&m);
        Ok(m)
    }

    /// The acting member (if a user) after checking `resource:action`.
    async fn check(
        &self,
        state: &mut OrgState,
        org: &Organization,
        acting: &Acting,
        resource: &str,
        action: &str,
    ) -> Result<Option<Member>, ActorError> {
        let Some(user) = acting.user() else {
            return Ok(None);
        };
        let within_key = match acting {
            Acting::Key {
                org: key_org,
                permissions,
                ..
            } => {
                key_org == &state.id
                    && permissions
                        .get(resource)
                        .is_some_and(|acts| acts.contains(action))
            }
            _ => true,
        };
        let m = self.member_of(state, user).await?;
        let policy = self.policy(state, org).await?;
        if within_key
            && policy
                .allows(&m.role, resource, action)
                .map_err(policy_err)?
        {
            Ok(Some(m))
        } else {
            Err(ActorError::Refused(Rule::Forbidden(
                resource_label(resource),
                action_label(action),
            )))
        }
    }

    async fn update(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        patch: &OrgPatch,
    ) -> Result<Organization, ActorError> {
        guarded!(self, state, |org| async {
            self.check(state, &org, acting, "organization", "update")
                .await?;
            let mut next = org.clone();
            next.version += 1;
            let d = Decision::on(org, Vec::new(), next).with(|o| {
                if let Some(n) = &patch.name {
                    o.name = n.clone();
                }
                if let Some(s) = &patch.slug {
                    o.slug = s.clone();
                }
                if let Some(l) = &patch.logo {
                    o.logo = l.clone();
                }
                if let Some(m) = &patch.metadata {
                    o.metadata = m.clone();
                }
            });
            let value = d.next.clone();
            Ok(Decision { value, ..d })
        })
    }

    async fn delete(
        &self,
        state: &mut OrgState,
        acting: &Acting,
    ) -> Result<Organization, ActorError> {
        let mut attempts = crate::runtime::Attempts::new();
        while attempts.next().await {
            let org = self.org(state).await?;
            self.check(state, &org, acting, "organization", "delete")
                .await?;
            let events = Emit::org(&state.id, self.shared.clock.now())
                .domain("organization.deleted", data::org(&org))
                .request(
                    &state.ctx,
                    &Facts {
                        org: Some(&org),
                        ..Facts::default()
                    },
                )
                .done();
            match self
                .shared
                .store
                .delete_organization(&state.id, org.version, &events)
                .await
            {
                Ok(()) => return Ok(org),
                Err(StoreError::ConcurrentModification) => continue,
                Err(StoreError::NotFound) => {
                    return Err(ActorError::Refused(Rule::OrganizationNotFound))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ActorError::Unavailable(
            "organization changed too often to delete it".into(),
        ))
    }
}

fn action_label(action: &str) -> &'static str {
    match action {
        "create" => "create",
        "read" => "read",
        "update" => "update",
        "delete" => "delete",
        "cancel" => "cancel",
        _ => "action",
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
