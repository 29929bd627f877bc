//! Gatehouse actors: one `ractor` actor per user (sessions, profile, password, accounts) and
//! one per organization (settings, members, invitations, teams, roles) serialize the state
//! changes of their entity, so concurrent requests can never interleave inside one change.
//!
//! Actors are spawned on first use, registered by name (`{system}/user:{id}`,
//! `{system}/org:{id}`), supervised by one supervisor per [`Actors`] system, and stop themselves
//! after an idle period, so memory follows the active set, not the total. Every change re-reads
//! the store (an organization actor caches only its policy), which is what lets several
//! processes share one store; the store's conditional writes guard the invariants across
//! processes. `runtime` holds what both actors share: envelopes with tickets, idle stop, and
//! the call path with its bound on waiting requests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod admin;
mod cache;
pub mod consumers;
mod events;
mod org;
mod policies;
mod reader;
mod runtime;
mod social;
mod user;
mod views;

use chrono::Duration as ChronoDuration;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, DynStore, StoreError};

pub use admin::{AdminAction, AdminUpdate, Caller};
pub use cache::CacheConfig;
pub use events::{fill_mail, Ctx, Facts, Fill, Note, When, INVITATION_ID, INVITATION_ROLE};
pub use org::{Acting, OrgHandle, OrgPatch, RoleChange, TeamChange, TeamOutcome};
pub use policies::Standing;
pub use reader::{CachedView, Reader};
pub use social::{SocialSignIn, SocialUser};
pub use user::{
    take_use, Accepted, BanChange, KeyEdit, LinkMode, Linked, MailSignIn, NewSession,
    PasswordChange, Proof, ProviderAccount, ProviderTokens, ResetOutcome, SignedIn, UserHandle,
    UserPatch, CHANGE_EMAIL_PREFIX, RESET_PASSWORD_PREFIX, TRUST_DEVICE_PREFIX,
    UNPROVEN_PASSWORD_PREFIX,
};
pub use views::Answers;

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
    /// Too many requests are waiting for this user's or organization's actor.
    #[error("overloaded")]
    Overloaded,
    /// A rule of the domain refused the change (checked inside the actor, race-free).
    #[error("refused: {0:?}")]
    Refused(Rule),
}

/// Rules an actor enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Two-factor: the user has no second factor.
    TwoFactorNotEnabled,
    /// Two-factor: the code's time step was used already (a code works once).
    CodeUsed,
    /// Two-factor: no unused backup code matches.
    InvalidBackupCode,
    /// Two-factor: the sign-in's challenge was finished already (or is gone).
    ChallengeTaken,
    /// The user's last linked account cannot be unlinked.
    LastAccount,
    /// Passkeys: the passkey is the user's last way to sign in (no account, no other one).
    LastSignInMethod,
    /// Passkeys: the credential is registered already.
    PasskeyRegistered,
    /// Passkeys: no passkey of the user has that id.
    PasskeyNotFound,
    /// Passkeys: another use of the passkey was recorded since this one was checked.
    PasskeyUsedMeanwhile,
    /// API keys: no key of the user (or organization) has that id.
    ApiKeyNotFound,
    ApiKeyDisabled,
    ApiKeyExpired,
    /// The key's `remaining` uses are spent.
    ApiKeyUsageExceeded,
    /// The key's rate limit is reached; the window frees up in `retry_in_ms`.
    ApiKeyRateLimited {
        retry_in_ms: i64,
    },
    /// No linked account matches.
    AccountNotFound,
    /// The user has a password already (set-password).
    HasPassword,
    OrganizationNotFound,
    /// The acting user is not a member of the organization.
    NotAMember,
    /// The acting member's roles do not grant this action on the resource (`resource`,
    /// `action`; each pair has its own error code).
    Forbidden(&'static str, &'static str),
    /// A role that does not exist, or a malformed role list.
    InvalidRole(String),
    UserNotFound,
    AlreadyMember,
    MemberNotFound,
    MembershipLimit,
    /// The organization would be left without an owner (its last owner leaving or removed).
    LastOwner,
    /// The last owner's role would lose `owner`.
    NoOwnerLeft,
    /// An organization's new slug belongs to another organization.
    SlugInUse,
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
    /// The change would give someone permissions the acting member does not have (or only an
    /// owner may give), or act on a member stronger than the acting one.
    Escalation(Escalation),
    /// The inviter left (or may no longer invite with that role) before the invitation was
    /// accepted.
    InviterGone,
    /// The organization (or the inviter) sent its invitations of the day.
    InvitationLimit,
    /// A single-use token that is unknown, used, expired or not this user's.
    InvalidToken,
    /// The new email address belongs to another user.
    EmailTaken,
    /// The current password given does not match (or changed meanwhile).
    InvalidPassword,
    /// A custom role's name or permissions are malformed (unknown resource or action…).
    InvalidRoleDefinition(String),
    /// Sign-up: the email belongs to a user already.
    UserExists,
    /// The user was deleted while a session was being made for them.
    UserGone,
    /// Sign-in: a user has the provider's email, but linking to it is not allowed (the
    /// provider did not verify the email, or the user's own email is not verified).
    AccountNotLinked,
    /// Sign-in would create a user, and the provider's sign-up is disabled.
    SignUpDisabled,
    /// link-social: the provider neither is trusted nor verified the email.
    LinkingNotAllowed,
    /// link-social: the provider's email is not the user's.
    EmailDoesNotMatch,
    /// The provider account is linked to another user.
    AccountLinkedToOtherUser,
    /// The user is banned (and the ban has not ended).
    Banned,
    /// Admin: the caller's roles do not grant this.
    AdminNotAllowed(AdminAction),
    /// Admin: the target user does not exist.
    NoSuchUser,
    CannotBanYourself,
    CannotRemoveYourself,
    CannotImpersonateAdmins,
    /// Admin: a role this server does not know.
    NonExistentRole,
    /// Admin: the new email belongs to another user.
    EmailInUse,
}

/// Which change was refused as an escalation of privileges (each has its own error code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    CreateRole,
    UpdateRole,
    UpdateMember,
    RemoveMember,
    AddMember,
    Invite,
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
    /// Invitations an organization may send per 24 hours (0: no cap).
    pub invitations_per_day: u32,
    /// Invitations one member may send per 24 hours (0: no cap).
    pub invitations_per_inviter_per_day: u32,
}

impl Default for OrgConfig {
    fn default() -> Self {
        Self {
            membership_limit: 100,
            global_roles: Vec::new(),
            invitation_expires_in: ChronoDuration::hours(48),
            require_verified_email: true,
            invitations_per_day: 100,
            invitations_per_inviter_per_day: 50,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ActorConfig {
    /// An actor that received no message for this long stops.
    pub idle_timeout: Duration,
    /// How long a caller waits for an actor to take its request before giving up with
    /// `Unavailable` (a request not yet started then never runs).
    pub call_timeout: Duration,
    /// Requests that may wait for one actor; beyond it new ones are refused (`Overloaded`).
    pub max_pending: usize,
    pub sessions: SessionPolicy,
    pub org: OrgConfig,
    /// The admin plugin's roles (global, not per organization).
    pub admin: policy::AdminRoles,
    /// The organization view cache (see `views`).
    pub view_cache: CacheConfig,
    /// The cache of sessions' users (see [`Reader::session_with_user`]).
    pub user_cache: CacheConfig,
}

impl Default for ActorConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(10),
            max_pending: 256,
            sessions: SessionPolicy::default(),
            org: OrgConfig::default(),
            admin: policy::AdminRoles {
                admin_roles: vec!["admin".into()],
                ..Default::default()
            },
            view_cache: CacheConfig {
                ttl: Duration::from_secs(1),
                max_entries: 1024,
            },
            user_cache: CacheConfig {
                ttl: Duration::from_secs(1),
                max_entries: 10_000,
            },
        }
    }
}

pub(crate) struct Shared {
    pub store: DynStore,
    pub clock: Arc<dyn Clock>,
    pub config: ActorConfig,
    pub admin: policy::AdminPolicy,
    /// The organization policy of every organization without custom roles (built-in and
    /// configured roles only), built once: an organization actor that starts needs no casbin
    /// enforcer of its own unless the organization has roles of its own.
    pub base_policy: Arc<policy::Policy>,
    /// Organizations' policies by roles version (see `policies`).
    pub policies: policies::Policies,
    /// Organization views this process read (see `views`): changes drop them.
    pub views: Arc<views::ViewCache>,
    /// Users of sessions this process resolved (see [`Reader::session_with_user`]): every
    /// message to a user's actor drops that user.
    pub users: Arc<cache::UserCache>,
}

/// The actor system of one server: its supervisor and what every actor shares.
#[derive(Clone)]
pub struct Actors {
    shared: Arc<Shared>,
    /// Distinguishes this system's names in ractor's process-wide registry.
    prefix: Arc<str>,
    supervisor: ActorRef<()>,
    pending: Arc<runtime::Pending>,
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
        let admin = policy::AdminPolicy::new(&config.admin)
            .await
            .map_err(|e| ActorError::Internal(format!("admin roles: {e}")))?;
        let base_policy = Arc::new(
            policy::Policy::new("", &config.org.global_roles, &[])
                .await
                .map_err(|e| ActorError::Internal(format!("organization roles: {e}")))?,
        );
        let (supervisor, _) = Actor::spawn(None, Supervisor, ())
            .await
            .map_err(|e| ActorError::Internal(e.to_string()))?;
        Ok(Self {
            shared: Arc::new(Shared {
                views: Arc::new(views::ViewCache::new(
                    config.view_cache.clone(),
                    config.org.membership_limit,
                )),
                users: Arc::new(cache::TtlCache::new(&config.user_cache)),
                store,
                clock,
                config,
                admin,
                base_policy,
                policies: Default::default(),
            }),
            prefix: storage::random_string(12).into(),
            supervisor,
            pending: Arc::default(),
        })
    }

    /// Signs a user up with its first account (e.g. the password credential; none for a
    /// sign-up by a code or link by mail): the store's unique email decides between
    /// concurrent sign-ups of one address (`UserExists`).
    pub async fn sign_up(
        &self,
        user: &storage::User,
        account: Option<&storage::Account>,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let events = events::Emit::user(&user.id, self.shared.clock.now())
            .domain("user.created", events::data::user(user))
            .request(ctx, &Facts::default())
            .done();
        self.shared
            .store
            .create_user(user, account, &events)
            .await
            .map_err(|e| match e {
                StoreError::Conflict(_) => ActorError::Refused(Rule::UserExists),
                other => other.into(),
            })
    }

    /// The read-only view of the store the HTTP layer works with.
    pub fn reader(&self) -> Reader {
        Reader {
            store: self.shared.store.clone(),
            views: self.shared.views.clone(),
            users: self.shared.users.clone(),
        }
    }

    /// Housekeeping: removes expired sessions and verification values (every read checks
    /// expiry itself; this only reclaims space).
    pub async fn purge_expired(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), ActorError> {
        self.shared.store.purge_expired_sessions(now).await?;
        self.shared.store.purge_expired_verifications(now).await?;
        Ok(())
    }

    /// Stores events that go with no change: a refusal's audit record (a refused decision
    /// writes nothing, so it emits nothing itself), mail that needs nothing stored. Records
    /// are stamped with this server's clock.
    pub async fn record(&self, ctx: &Ctx) -> Result<(), ActorError> {
        if ctx.is_empty() {
            return Ok(());
        }
        let events = self.events_of("server", ctx);
        self.append(&events).await
    }

    /// Stores events made by [`Actors::events_of`] that go with no change (see
    /// [`Actors::record`]), several requests' at once.
    pub async fn append(&self, events: &[storage::Event]) -> Result<(), ActorError> {
        if events.is_empty() {
            return Ok(());
        }
        Ok(self.shared.store.append_events(events).await?)
    }

    /// The events of a write the request makes itself (a webhook endpoint's): its audit
    /// records (and mail), as events of `aggregate`, to store with the write.
    pub fn events_of(&self, aggregate: &str, ctx: &Ctx) -> Vec<storage::Event> {
        events::Emit::of(aggregate.to_owned(), self.shared.clock.now())
            .request(ctx, &Facts::default())
            .done()
    }

    /// Deletes every API key expired by `now` (no owner decides: an expired key is dead
    /// whoever made it); how many.
    pub async fn delete_expired_api_keys(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, ActorError> {
        Ok(self.shared.store.delete_expired_api_keys(now).await?)
    }

    /// Housekeeping: deletes audit events from before `before` (the retention); how many.
    pub async fn purge_audit(
        &self,
        before: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, ActorError> {
        Ok(self.shared.store.purge_audit(before).await?)
    }

    /// Remembers a single-use marker `identifier` for `lifetime` (an owner-less write: e.g.
    /// that a mail was sent); `false` when it was there already.
    pub async fn remember(
        &self,
        identifier: &str,
        lifetime: ChronoDuration,
    ) -> Result<bool, ActorError> {
        let now = self.shared.clock.now();
        let marker = storage::Verification {
            id: storage::VerificationId::generate(),
            identifier: identifier.to_owned(),
            // Its own value: a partitioned store keeps a lookup by value, and one value shared
            // by every marker (every mail sent) would be one ever-growing partition.
            value: identifier.to_owned(),
            expires_at: now + lifetime,
            created_at: now,
            updated_at: now,
        };
        match self.shared.store.create_verification(&marker, &[]).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The store this system writes to (for the event stream's consumers).
    pub fn store(&self) -> DynStore {
        self.shared.store.clone()
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

    /// How many user and organization actors are alive right now: `(users, organizations)`.
    pub fn live_actors_by_kind(&self) -> (usize, usize) {
        let user = format!("{}/user:", self.prefix);
        let org = format!("{}/org:", self.prefix);
        let mut counts = (0, 0);
        for child in self.supervisor.get_children() {
            match child.get_name() {
                Some(n) if n.starts_with(&user) => counts.0 += 1,
                Some(n) if n.starts_with(&org) => counts.1 += 1,
                _ => {}
            }
        }
        counts
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

    /// Sends a request to the actor registered as `kind:id` (see [`runtime::call`]), after
    /// counting it against the actor's bound of pending requests.
    pub(crate) async fn call<A, M, T>(
        &self,
        kind: &str,
        ctx: &Arc<Ctx>,
        args: &A::Arguments,
        make: impl Fn() -> A,
        build: impl Fn(RpcReplyPort<Result<T, ActorError>>) -> M,
        id: &str,
    ) -> Result<T, ActorError>
    where
        A: Actor<Msg = runtime::Envelope<M>>,
        A::Arguments: Clone,
        M: Send + 'static,
        T: Send + 'static,
    {
        let name = self.name(kind, id);
        let _pending = self.pending.enter(&name, self.shared.config.max_pending)?;
        let spec = runtime::CallSpec {
            name: &name,
            kind,
            timeout: self.shared.config.call_timeout,
            supervisor: &self.supervisor,
            ctx,
        };
        runtime::call(spec, args, make, build).await
    }
}

impl Actors {
    /// Stores a new signing key pair (its private half already encrypted by the caller). Key
    /// pairs are only ever added: a rotation adds the next one.
    pub async fn add_key_pair(&self, kp: &storage::KeyPair) -> Result<(), ActorError> {
        Ok(self.shared.store.create_key_pair(kp).await?)
    }
}
