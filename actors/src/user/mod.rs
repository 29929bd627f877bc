//! The user actor: owns the changes of one user — its sessions, profile, credentials, social
//! accounts and memberships. This file holds the messages, their dispatch and the handle's
//! call path; each concern's decisions and handle methods are a file of their own:
//! `sessions.rs`, `profile.rs`, `credentials.rs`, `membership.rs`, `social.rs`.
use crate::events::{data, Ctx, Emit, Facts};
use crate::runtime::{Attempts, Envelope, Idle};
use crate::{Acting, ActorError, Actors, Rule, Shared};
use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use storage::{
    Account, Invitation, InvitationId, Member, MemberId, OrgId, Organization, Session, SessionId,
    TeamId, User, UserId, Verification, VerificationId, CREDENTIAL_PROVIDER,
};

mod api_keys;
mod credentials;
mod mailbox;
mod membership;
mod passkeys;
mod profile;
mod sessions;
mod social;
mod two_factor;

pub use api_keys::{take_use, KeyEdit};
pub use mailbox::MailSignIn;
pub use social::{LinkMode, Linked, ProviderAccount, ProviderTokens, SignedIn};
pub use two_factor::{Proof, TRUST_DEVICE_PREFIX};

type Reply<T> = RpcReplyPort<Result<T, ActorError>>;

/// What a new session records about the request that created it.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// `rememberMe: false`: a shorter session that is never extended.
    pub dont_remember: bool,
    /// An admin's session acting as this user: marked with the admin's id, with its own
    /// lifetime (`lifetime`), and never extended.
    pub impersonated_by: Option<UserId>,
    /// Overrides the configured lifetime.
    pub lifetime: Option<chrono::Duration>,
}

/// A ban as an admin sets it (`None` in [`UserPatch::ban`] leaves it as it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BanChange {
    /// Banned, with a reason and an optional end; every session of the user is revoked in
    /// the same message, so no sign-in can slip in between.
    Ban {
        reason: String,
        expires: Option<DateTime<Utc>>,
    },
    Unban,
}

/// How a new password hash is applied to the credential account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordChange {
    /// Replace the password, creating the credential account if there is none (reset).
    Upsert,
    /// Only if the user has no password yet (set-password).
    OnlyIfNone,
    /// Only if the credential account exists (change-password).
    OnlyIfExists,
}

/// A change of the user's profile; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct UserPatch {
    pub name: Option<String>,
    pub image: Option<Option<String>>,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// Admin: the global role list (`Some(None)`: back to the default role).
    pub role: Option<Option<String>>,
    /// Admin: ban or unban.
    pub ban: Option<BanChange>,
    /// Two-factor plugin: whether the second factor is asked at sign-in.
    pub two_factor_enabled: Option<bool>,
}

/// The identifier prefix of password-reset tokens (`reset-password:{token}`, spec §3).
pub const RESET_PASSWORD_PREFIX: &str = "reset-password:";
/// The identifier prefix of email-change confirmations (`change-email:{id}`).
pub const CHANGE_EMAIL_PREFIX: &str = "change-email:";
/// The marker of a password no proof of the mailbox followed (`unproven-password:{user}`): set
/// when an address with a password was verified without the account's session (whoever set
/// the password may not own the address); while it stands, a social sign-in is not linked to
/// the account implicitly. A code or link sign-in or a password reset removes it.
pub const UNPROVEN_PASSWORD_PREFIX: &str = "unproven-password:";

/// An accepted invitation: the invitation, the new member, and the session now active in its
/// organization.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub invitation: Invitation,
    pub member: Option<Member>,
    pub session: Option<Session>,
}

/// What a completed password reset did besides setting the password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetOutcome {
    /// Every session of the user was revoked.
    pub sessions_revoked: bool,
}

impl UserMsg {
    /// Whether the change may show in an organization's view (the user's name, email or
    /// image, a membership, the user itself): all but the session and credential messages.
    fn shows_in_organizations(&self) -> bool {
        !matches!(
            self,
            UserMsg::CreateSession(..)
                | UserMsg::RefreshSession { .. }
                | UserMsg::RevokeSession(..)
                | UserMsg::RevokeKnown(..)
                | UserMsg::RevokeSessions { .. }
                | UserMsg::SetPassword(..)
                | UserMsg::ChangePassword { .. }
                | UserMsg::UnlinkAccount { .. }
                | UserMsg::IssueToken { .. }
                | UserMsg::IssueResetToken { .. }
                | UserMsg::SetActiveOrganization { .. }
                | UserMsg::SetActiveTeam { .. }
        )
    }
}

pub(crate) enum UserMsg {
    Social(social::SocialMsg),
    TwoFactor(two_factor::TwoFactorMsg),
    Passkey(passkeys::PasskeyMsg),
    ApiKey(api_keys::ApiKeyMsg),
    CreateSession(NewSession, Reply<Session>),
    /// A sign-in by a code or link by mail (`mailbox.rs`).
    SignInByMail {
        new: Option<NewSession>,
        reply: Reply<MailSignIn>,
    },
    IssueResetToken {
        token: String,
        lifetime: chrono::Duration,
        reply: Reply<()>,
    },
    ResetPassword {
        token: String,
        hash: String,
        revoke_sessions: bool,
        reply: Reply<ResetOutcome>,
    },
    VerifyEmail {
        elsewhere: bool,
        revoke_sessions: bool,
        reply: Reply<(User, bool)>,
    },
    ConfirmEmailChange {
        id: String,
        new_email: String,
        apply: bool,
        reply: Reply<User>,
    },
    /// The session as its caller read it (not read again here).
    RefreshSession {
        session: Box<Session>,
        dont_remember: bool,
        reply: Reply<Option<Session>>,
    },
    RevokeSession(String, Reply<bool>),
    /// A session its caller read (expired, or its user banned): deleted without reading it
    /// again.
    RevokeKnown(Box<Session>, Reply<bool>),
    RevokeSessions {
        keep: Option<String>,
        reply: Reply<u64>,
    },
    UpdateUser(UserPatch, Reply<User>),
    SetPassword(String, PasswordChange, Reply<()>),
    UnlinkAccount {
        provider_id: Option<String>,
        account_id: Option<String>,
        allow_unlinking_all: bool,
        reply: Reply<()>,
    },
    DeleteUser(Reply<()>),
    CreateOrganization {
        org: Box<(Organization, Member)>,
        limit: Option<u32>,
        default_team: bool,
        activate: Option<String>,
        reply: Reply<Option<Session>>,
    },
    AcceptInvitation {
        org: OrgId,
        invitation: InvitationId,
        token: String,
        reply: Reply<Accepted>,
    },
    LeaveOrganization {
        org: OrgId,
        member: Option<MemberId>,
        token: String,
        reply: Reply<(Member, Option<Session>)>,
    },
    IssueToken {
        identifier: String,
        lifetime: chrono::Duration,
        reply: Reply<()>,
    },
    DeleteWithToken {
        identifier: String,
        reply: Reply<()>,
    },
    ChangePassword {
        current_hash: String,
        new_hash: String,
        new_session: Option<NewSession>,
        reply: Reply<Option<Session>>,
    },
    SetActiveOrganization {
        token: String,
        org: Option<OrgId>,
        reply: Reply<Option<Session>>,
    },
    SetActiveTeam {
        token: String,
        team: Option<TeamId>,
        reply: Reply<Option<Session>>,
    },
}

struct UserActor {
    shared: Arc<Shared>,
    /// To ask organization actors, for operations of this user that span an organization
    /// (joining, leaving). Organization actors never ask user actors, so no cycle can wait.
    actors: Actors,
}

struct UserState {
    id: UserId,
    idle: Idle,
    /// Sessions this actor refreshed lately: a refresh asked with an older copy of one (a
    /// request that read it before) answers the refreshed one instead of writing again.
    refreshed: Vec<Session>,
}

/// Refreshed sessions remembered per user actor.
const REFRESHED_KEPT: usize = 8;

impl Actor for UserActor {
    type Msg = Envelope<UserMsg>;
    type State = UserState;
    type Arguments = UserId;

    async fn pre_start(
        &self,
        myself: ActorRef<Envelope<UserMsg>>,
        id: UserId,
    ) -> Result<UserState, ActorProcessingErr> {
        Ok(UserState {
            id,
            idle: Idle::start(&myself, self.shared.config.idle_timeout),
            refreshed: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Envelope<UserMsg>>,
        envelope: Envelope<UserMsg>,
        state: &mut UserState,
    ) -> Result<(), ActorProcessingErr> {
        // Boxed: an idle actor's task then holds a pointer, not the space of the largest
        // message's work (several KB per actor, times every actor alive).
        Box::pin(self.dispatch(myself, envelope, state)).await
    }
}

impl UserActor {
    async fn dispatch(
        &self,
        myself: ActorRef<Envelope<UserMsg>>,
        envelope: Envelope<UserMsg>,
        state: &mut UserState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((msg, ctx)) = state.idle.open(&myself, envelope) else {
            return Ok(());
        };
        let ctx = ctx.as_ref();
        let shown = msg.shows_in_organizations();
        // A reply fails only when the caller gave up waiting; nothing to do then.
        match msg {
            UserMsg::Social(m) => self.social(&state.id, m, ctx).await,
            UserMsg::TwoFactor(m) => self.two_factor(&state.id, m, ctx).await,
            UserMsg::Passkey(m) => self.passkeys(&state.id, m, ctx).await,
            UserMsg::ApiKey(m) => self.api_keys(&state.id, m, ctx).await,
            UserMsg::CreateSession(new, reply) => {
                let _ = reply.send(self.create_session(&state.id, new, ctx).await);
            }
            UserMsg::SignInByMail { new, reply } => {
                let _ = reply.send(self.sign_in_by_mail(&state.id, new, ctx).await);
            }
            UserMsg::IssueResetToken {
                token,
                lifetime,
                reply,
            } => {
                let r = self
                    .issue_reset_token(&state.id, token, lifetime, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::ResetPassword {
                token,
                hash,
                revoke_sessions,
                reply,
            } => {
                let r = self
                    .reset_password(&state.id, &token, hash, revoke_sessions, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::VerifyEmail {
                elsewhere,
                revoke_sessions,
                reply,
            } => {
                let r = self
                    .verify_email(&state.id, elsewhere, revoke_sessions, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::ConfirmEmailChange {
                id,
                new_email,
                apply,
                reply,
            } => {
                let r = self
                    .confirm_email_change(&state.id, &id, new_email, apply, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::RefreshSession {
                session,
                dont_remember,
                reply,
            } => {
                let r = self.refresh_session(state, *session, dont_remember).await;
                let _ = reply.send(r);
            }
            UserMsg::RevokeSession(token, reply) => {
                let _ = reply.send(self.revoke_session(&state.id, &token, ctx).await);
            }
            UserMsg::RevokeKnown(session, reply) => {
                let _ = reply.send(self.revoke_known(&state.id, &session, ctx).await);
            }
            UserMsg::RevokeSessions { keep, reply } => {
                let _ = reply.send(self.revoke_sessions(&state.id, keep.as_deref(), ctx).await);
            }
            UserMsg::UpdateUser(patch, reply) => {
                let _ = reply.send(self.update_user(&state.id, patch, ctx).await);
            }
            UserMsg::SetPassword(hash, how, reply) => {
                let events = self.request(&state.id, ctx, &Facts::default());
                let _ = reply.send(self.set_password(&state.id, hash, how, &events).await);
            }
            UserMsg::UnlinkAccount {
                provider_id,
                account_id,
                allow_unlinking_all,
                reply,
            } => {
                let r = self
                    .unlink_account(
                        &state.id,
                        provider_id.as_deref(),
                        account_id.as_deref(),
                        allow_unlinking_all,
                        ctx,
                    )
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::DeleteUser(reply) => {
                let _ = reply.send(self.delete_user(&state.id, ctx).await);
            }
            UserMsg::CreateOrganization {
                org,
                limit,
                default_team,
                activate,
                reply,
            } => {
                let r = self
                    .create_organization(
                        &state.id,
                        *org,
                        limit,
                        default_team,
                        activate.as_deref(),
                        ctx,
                    )
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::AcceptInvitation {
                org,
                invitation,
                token,
                reply,
            } => {
                let r = self
                    .accept_invitation(&state.id, org, invitation, &token, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::LeaveOrganization {
                org,
                member,
                token,
                reply,
            } => {
                let r = self
                    .leave_organization(&state.id, org, member, &token, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::IssueToken {
                identifier,
                lifetime,
                reply,
            } => {
                let _ = reply.send(self.issue_token(&state.id, identifier, lifetime, ctx).await);
            }
            UserMsg::DeleteWithToken { identifier, reply } => {
                let r = async {
                    self.take_token(&state.id, &identifier).await?;
                    self.delete_user(&state.id, ctx).await
                }
                .await;
                let _ = reply.send(r);
            }
            UserMsg::ChangePassword {
                current_hash,
                new_hash,
                new_session,
                reply,
            } => {
                let r = self
                    .change_password(&state.id, &current_hash, new_hash, new_session, ctx)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::SetActiveOrganization { token, org, reply } => {
                let _ = reply.send(self.set_active(&state.id, &token, org).await);
            }
            UserMsg::SetActiveTeam { token, team, reply } => {
                let r = self
                    .change_own_session(&state.id, &token, |s| s.active_team_id = team)
                    .await;
                let _ = reply.send(r);
            }
        }
        // Again after the change: its caller may have given up before it landed.
        self.shared.users.drop_key(&state.id);
        if shown {
            self.shared.views.drop_all();
        }
        Ok(())
    }
}

impl UserActor {
    fn now(&self) -> DateTime<Utc> {
        self.shared.clock.now()
    }

    /// The request's notes and mail, as events of this user.
    fn request(&self, user: &UserId, ctx: &Ctx, facts: &Facts<'_>) -> Vec<storage::Event> {
        Emit::user(user, self.now()).request(ctx, facts).done()
    }
}

/// Too many concurrent changes of the user for a decision to be written.
fn contended() -> ActorError {
    ActorError::Unavailable("user changed too often to apply the request".into())
}

/// A typed handle to one user's actor. Spawns the actor when it is not running, and retries
/// when a message was dropped because the actor stopped (idle) just before handling it.
#[derive(Clone)]
pub struct UserHandle {
    actors: Actors,
    id: UserId,
    ctx: Arc<Ctx>,
}

impl UserHandle {
    pub(crate) fn new(actors: Actors, id: UserId) -> Self {
        Self {
            actors,
            id,
            ctx: Arc::default(),
        }
    }

    /// Asks with `ctx`: the audit records to keep with the decision and the mail to send.
    pub fn with(mut self, ctx: Ctx) -> Self {
        self.ctx = Arc::new(ctx);
        self
    }

    /// Asks the actor for a change. The user leaves the sessions' user cache, and a change
    /// that may show in organizations' views (see [`UserMsg::shows_in_organizations`]) drops
    /// them, before the caller sees the answer.
    async fn call<T: Send + 'static>(
        &self,
        build: impl Fn(Reply<T>) -> UserMsg,
    ) -> Result<T, ActorError> {
        let shared = self.actors.shared.clone();
        let shown = std::sync::atomic::AtomicBool::new(false);
        let r = self
            .actors
            .call(
                "user",
                &self.ctx,
                &self.id,
                || UserActor {
                    shared: shared.clone(),
                    actors: self.actors.clone(),
                },
                |reply| {
                    let msg = build(reply);
                    if msg.shows_in_organizations() {
                        shown.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    msg
                },
                &self.id.0,
            )
            .await;
        // Any message may change the user (the sessions' user cache holds it).
        shared.users.drop_key(&self.id);
        if shown.load(std::sync::atomic::Ordering::Relaxed) {
            shared.views.drop_all();
        }
        r
    }
}
