//! Gatehouse actors: one `ractor` actor per user serializes that user's state changes
//! (sessions, profile), so concurrent requests can never interleave inside one change.
//!
//! Actors are spawned on first use, registered by name (`{system}/user:{id}`), supervised by one
//! supervisor per [`Actors`] system, and stop themselves after an idle period, so memory follows
//! the active set of users, not the total. They keep no cached data: every change re-reads the
//! store, which is what lets several processes share one store (the store's conditional writes
//! guard the invariants across processes).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod org;
mod user;

use chrono::Duration as ChronoDuration;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr, SupervisionEvent};
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, DynStore, StoreError};

pub use org::{Acting, OrgHandle, OrgPatch, RoleChange, TeamChange};
pub use user::{NewSession, PasswordChange, UserHandle, UserPatch};

/// The one error type of the actors crate.
#[derive(Debug, thiserror::Error)]
pub enum ActorError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal: {0}")]
    Internal(String),
    /// A rule of the domain refused the change (checked inside the actor, race-free).
    #[error("refused: {0:?}")]
    Refused(Rule),
}

/// Rules an actor enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// The user's last linked account cannot be unlinked.
    LastAccount,
    /// No linked account matches.
    AccountNotFound,
    /// The user has a password already (set-password).
    HasPassword,
    OrganizationNotFound,
    /// The acting user is not a member of the organization.
    NotAMember,
    /// The acting member's roles do not grant this on the resource.
    Forbidden(&'static str),
    /// A role that does not exist, or a malformed role list.
    InvalidRole(String),
    UserNotFound,
    AlreadyMember,
    MemberNotFound,
    MembershipLimit,
    /// The organization would be left without an owner.
    LastOwner,
    SlugTaken,
    /// The user reached the number of organizations they may create.
    OrganizationLimit,
    /// No pending, unexpired invitation of this organization has that id.
    InvitationNotFound,
    /// The address has a pending invitation already.
    AlreadyInvited,
    /// The invitation is for another address.
    NotRecipient,
    /// The invited address must be verified before the invitation can be answered.
    EmailNotVerified,
    TeamNotFound,
    TeamExists,
    /// The last team cannot be removed (unless allowed by configuration).
    LastTeam,
    RoleNotFound,
    RoleExists,
    /// Members still hold the role.
    RoleInUse,
}

impl From<StoreError> for ActorError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::NotFound,
            StoreError::Conflict(what) => Self::Conflict(what),
            StoreError::ConcurrentModification => {
                Self::Unavailable("concurrent modification".into())
            }
            StoreError::Unavailable(m) => Self::Unavailable(m),
            StoreError::Internal(m) => Self::Internal(m),
        }
    }
}

/// Session lifetimes (DESIGN §5); every value is configuration.
#[derive(Debug, Clone)]
pub struct SessionPolicy {
    /// Lifetime of a session (default 7 days).
    pub expires_in: ChronoDuration,
    /// A session older than this since its last update is extended (default 1 day).
    pub update_age: ChronoDuration,
    /// Lifetime of a `rememberMe: false` session (default 1 day); it is never extended.
    pub dont_remember_expires_in: ChronoDuration,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        Self {
            expires_in: ChronoDuration::days(7),
            update_age: ChronoDuration::days(1),
            dont_remember_expires_in: ChronoDuration::days(1),
        }
    }
}

/// Organization rules that are configuration.
#[derive(Debug, Clone)]
pub struct OrgConfig {
    /// Members per organization (default 100).
    pub membership_limit: u32,
    /// Roles from configuration, valid in every organization.
    pub global_roles: Vec<(String, policy::Permissions)>,
    /// Invitation lifetime (default 48 h).
    pub invitation_expires_in: ChronoDuration,
    /// Only a verified address may accept or reject an invitation (default on).
    pub require_verified_email: bool,
}

impl Default for OrgConfig {
    fn default() -> Self {
        Self {
            membership_limit: 100,
            global_roles: Vec::new(),
            invitation_expires_in: ChronoDuration::hours(48),
            require_verified_email: true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ActorConfig {
    /// An actor that received no message for this long stops.
    pub idle_timeout: Duration,
    /// How long a caller waits for an actor's answer before giving up with `Unavailable`.
    pub call_timeout: Duration,
    pub sessions: SessionPolicy,
    pub org: OrgConfig,
}

impl Default for ActorConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(10),
            sessions: SessionPolicy::default(),
            org: OrgConfig::default(),
        }
    }
}

pub(crate) struct Shared {
    pub store: DynStore,
    pub clock: Arc<dyn Clock>,
    pub config: ActorConfig,
}

/// The actor system of one server: its supervisor and what every actor shares.
#[derive(Clone)]
pub struct Actors {
    shared: Arc<Shared>,
    /// Distinguishes this system's names in ractor's process-wide registry.
    prefix: Arc<str>,
    supervisor: ActorRef<()>,
}

/// Supervises user actors: a crashed actor is logged and simply respawned by the next request
/// (it holds no state worth restoring; the store has it all).
struct Supervisor;

impl Actor for Supervisor {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        event: SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(who, err) = event {
            tracing::error!(actor = ?who.get_name(), error = %err, "actor failed; it will be respawned on next use");
        }
        Ok(())
    }
}

impl Actors {
    pub async fn start(
        store: DynStore,
        clock: Arc<dyn Clock>,
        config: ActorConfig,
    ) -> Result<Self, ActorError> {
        let (supervisor, _) = Actor::spawn(None, Supervisor, ())
            .await
            .map_err(|e| ActorError::Internal(e.to_string()))?;
        Ok(Self {
            shared: Arc::new(Shared {
                store,
                clock,
                config,
            }),
            prefix: storage::random_string(12).into(),
            supervisor,
        })
    }

    /// The handle through which every change of this user goes.
    pub fn user(&self, id: storage::UserId) -> UserHandle {
        UserHandle::new(self.clone(), id)
    }

    /// The handle through which every change of this organization goes.
    pub fn org(&self, id: storage::OrgId) -> OrgHandle {
        OrgHandle::new(self.clone(), id)
    }

    /// How many actors (users and organizations) are alive right now.
    pub fn live_actors(&self) -> usize {
        self.supervisor.get_children().len()
    }

    /// Stops every actor (after the messages they are processing).
    pub async fn shutdown(&self) {
        for child in self.supervisor.get_children() {
            child.stop(None);
        }
        self.supervisor.stop(None);
    }

    pub(crate) fn name(&self, kind: &str, id: &str) -> String {
        format!("{}/{kind}:{id}", self.prefix)
    }

    /// Sends a request to the actor registered as `kind:id`, spawning it (under the supervisor)
    /// when it is not running. A message dropped because the actor stopped (idle) before
    /// handling it is sent again to a fresh actor; a timeout is not retried (it may have run).
    pub(crate) async fn call<A, T>(
        &self,
        kind: &str,
        args: &A::Arguments,
        make: impl Fn() -> A,
        build: impl Fn(RpcReplyPort<Result<T, ActorError>>) -> A::Msg,
        id: &str,
    ) -> Result<T, ActorError>
    where
        A: Actor,
        A::Arguments: Clone,
        T: Send + 'static,
    {
        let name = self.name(kind, id);
        let timeout = self.shared.config.call_timeout;
        let mut last = ActorError::Unavailable(format!("{kind} actor unavailable"));
        for attempt in 0..5u32 {
            if attempt > 0 {
                // The actor was stopping; give the registry a moment to forget its name.
                tokio::time::sleep(Duration::from_millis(2 << attempt)).await;
            }
            let actor = match ActorRef::<A::Msg>::where_is(&name) {
                Some(a) => a,
                None => match Actor::spawn_linked(
                    Some(name.clone()),
                    make(),
                    args.clone(),
                    self.supervisor.get_cell(),
                )
                .await
                {
                    Ok((a, _)) => a,
                    Err(SpawnErr::ActorAlreadyRegistered(_)) => {
                        match ActorRef::<A::Msg>::where_is(&name) {
                            Some(a) => a,
                            None => continue,
                        }
                    }
                    Err(e) => return Err(ActorError::Internal(e.to_string())),
                },
            };
            match actor.call(&build, Some(timeout)).await {
                Ok(CallResult::Success(r)) => return r,
                // Not processed (the actor stopped before reaching it): safe to send again.
                Ok(CallResult::SenderError) | Err(_) => {
                    last = ActorError::Unavailable(format!("{kind} actor stopped"));
                    continue;
                }
                Ok(CallResult::Timeout) => {
                    return Err(ActorError::Unavailable(format!("{kind} actor timed out")))
                }
            }
        }
        Err(last)
    }
}
