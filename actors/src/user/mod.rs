//! The user actor: owns the changes of one user's sessions and profile.
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

mod social;

pub use social::{LinkMode, Linked, ProviderAccount, ProviderTokens, SignedIn};

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
}

/// The identifier prefix of password-reset tokens (`reset-password:{token}`, spec §3).
pub const RESET_PASSWORD_PREFIX: &str = "reset-password:";
/// The identifier prefix of email-change confirmations (`change-email:{id}`).
pub const CHANGE_EMAIL_PREFIX: &str = "change-email:";

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
    CreateSession(NewSession, Reply<Session>),
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
        let Some((msg, ctx)) = state.idle.open(&myself, envelope) else {
            return Ok(());
        };
        let ctx = ctx.as_ref();
        let shown = msg.shows_in_organizations();
        // A reply fails only when the caller gave up waiting; nothing to do then.
        match msg {
            UserMsg::Social(m) => self.social(&state.id, m, ctx).await,
            UserMsg::CreateSession(new, reply) => {
                let _ = reply.send(self.create_session(&state.id, new, ctx).await);
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
                revoke_sessions,
                reply,
            } => {
                let _ = reply.send(self.verify_email(&state.id, revoke_sessions, ctx).await);
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
        if shown {
            // Again after the change: its caller may have given up before it landed.
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

    /// Refuses a banned user (`Banned`); a ban that has ended is lifted here.
    async fn check_not_banned(&self, id: &UserId) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut user = store
                .get_user(id)
                .await?
                .ok_or(ActorError::Refused(Rule::UserGone))?;
            if !user.banned {
                return Ok(());
            }
            let now = self.now();
            if user.ban_expires.is_none_or(|t| t > now) {
                return Err(ActorError::Refused(Rule::Banned));
            }
            user.banned = false;
            user.ban_reason = None;
            user.ban_expires = None;
            user.updated_at = now;
            user.version += 1;
            match store.update_user(&user, &[]).await {
                Ok(()) => return Ok(()),
                Err(storage::StoreError::ConcurrentModification) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    async fn create_session(
        &self,
        user: &UserId,
        new: NewSession,
        ctx: &Ctx,
    ) -> Result<Session, ActorError> {
        self.check_not_banned(user).await?;
        let now = self.now();
        let policy = &self.shared.config.sessions;
        let lifetime = match new.lifetime {
            Some(l) => l,
            None if new.dont_remember => policy.dont_remember_expires_in,
            None => policy.expires_in,
        };
        let session = Session {
            id: SessionId::generate(),
            token: storage::random_string(32),
            user_id: user.clone(),
            expires_at: now + lifetime,
            ip_address: new.ip_address,
            user_agent: new.user_agent,
            created_at: now,
            updated_at: now,
            active_organization_id: None,
            active_team_id: None,
            impersonated_by: new.impersonated_by,
        };
        let events = Emit::user(user, now)
            .domain("session.created", data::session(&session))
            .request(
                ctx,
                &Facts {
                    session: Some(&session),
                    ..Facts::default()
                },
            )
            .done();
        self.shared
            .store
            .create_session(&session, &events)
            .await
            .map_err(|e| match e {
                // The user is gone (deleted meanwhile).
                storage::StoreError::NotFound => ActorError::Refused(Rule::UserGone),
                other => other.into(),
            })?;
        // A ban decided in another process between the check and the write: either it is
        // seen now (and this session goes), or it was written after this session and its
        // revocation of every session removes this one too.
        if let Err(e) = self.check_not_banned(user).await {
            let events = Emit::user(user, self.now())
                .domain("session.revoked", data::session(&session))
                .done();
            self.shared
                .store
                .delete_session(&session.token, &events)
                .await?;
            return Err(e);
        }
        Ok(session)
    }

    /// Extends the session (as its caller read it) when its last update is older than
    /// `update_age`. Returns the session as it now is, or `None` when it is gone or expired (an
    /// expired one is deleted). A copy older than one this actor refreshed lately answers that
    /// one: of concurrent refreshes in this process only the first writes.
    async fn refresh_session(
        &self,
        state: &mut UserState,
        mut session: Session,
        dont_remember: bool,
    ) -> Result<Option<Session>, ActorError> {
        if session.user_id != state.id {
            return Ok(None);
        }
        if let Some(done) = state
            .refreshed
            .iter()
            .find(|s| s.token == session.token && s.updated_at >= session.updated_at)
        {
            return Ok(Some(done.clone()));
        }
        let store = &self.shared.store;
        let now = self.now();
        if session.expires_at <= now {
            store.delete_session(&session.token, &[]).await?;
            return Ok(None);
        }
        let policy = &self.shared.config.sessions;
        // An impersonation ends when its own lifetime does.
        if dont_remember
            || session.impersonated_by.is_some()
            || session.updated_at + policy.update_age > now
        {
            return Ok(Some(session));
        }
        session.expires_at = now + policy.expires_in;
        session.updated_at = now;
        match store.update_session(&session).await {
            Ok(()) => {
                if state.refreshed.len() >= REFRESHED_KEPT {
                    state.refreshed.remove(0);
                }
                state.refreshed.retain(|s| s.token != session.token);
                state.refreshed.push(session.clone());
                Ok(Some(session))
            }
            // Revoked meanwhile (e.g. by another process): it stays revoked.
            Err(storage::StoreError::NotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Applies `change` to one of this user's sessions. `None` when the token is not (or no
    /// longer) a session of this user; a session revoked meanwhile is not written back.
    async fn change_own_session(
        &self,
        user: &UserId,
        token: &str,
        change: impl FnOnce(&mut Session),
    ) -> Result<Option<Session>, ActorError> {
        let store = &self.shared.store;
        let Some(mut s) = store.get_session(token).await? else {
            return Ok(None);
        };
        if &s.user_id != user {
            return Ok(None);
        }
        change(&mut s);
        match store.update_session(&s).await {
            Ok(()) => Ok(Some(s)),
            Err(storage::StoreError::NotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn revoke_session(
        &self,
        user: &UserId,
        token: &str,
        ctx: &Ctx,
    ) -> Result<bool, ActorError> {
        let store = &self.shared.store;
        match store.get_session(token).await? {
            Some(s) if &s.user_id == user => {
                let events = Emit::user(user, self.now())
                    .domain("session.revoked", data::session(&s))
                    .request(
                        ctx,
                        &Facts {
                            session: Some(&s),
                            ..Facts::default()
                        },
                    )
                    .done();
                Ok(store.delete_session(token, &events).await?)
            }
            _ => Ok(false),
        }
    }

    /// Deletes a session its caller read (it must be this user's).
    async fn revoke_known(
        &self,
        user: &UserId,
        s: &Session,
        ctx: &Ctx,
    ) -> Result<bool, ActorError> {
        if &s.user_id != user {
            return Ok(false);
        }
        let events = Emit::user(user, self.now())
            .domain("session.revoked", data::session(s))
            .request(
                ctx,
                &Facts {
                    session: Some(s),
                    ..Facts::default()
                },
            )
            .done();
        Ok(self.shared.store.delete_session(&s.token, &events).await?)
    }

    /// Revokes every session of the user but `keep`; how many.
    async fn revoke_sessions(
        &self,
        user: &UserId,
        keep: Option<&str>,
        ctx: &Ctx,
    ) -> Result<u64, ActorError> {
        let events = Emit::user(user, self.now())
            .domain(
                "session.revoked",
                serde_json::json!({ "userId": user, "allSessions": keep.is_none() }),
            )
            .request(ctx, &Facts::default())
            .done();
        Ok(self
            .shared
            .store
            .delete_user_sessions(user, keep, &events)
            .await?)
    }

    /// Deletes the user with everything that belongs to it.
    async fn delete_user(&self, user: &UserId, ctx: &Ctx) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let gone = store.get_user(user).await?.ok_or(ActorError::NotFound)?;
        let events = Emit::user(user, self.now())
            .domain("user.deleted", data::user(&gone))
            .request(ctx, &Facts::default())
            .done();
        Ok(store.delete_user(user, &events).await?)
    }

    /// Creates an organization owned by this user; counted here, so concurrent creates by one
    /// user cannot pass the per-user limit. The slug's uniqueness is the store's. With
    /// `default_team`, a team named after the organization with the creator in it follows
    /// (through the organization's actor), and becomes the session's active team.
    async fn create_organization(
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

    /// Makes `org` (or none) the active organization of one of this user's sessions; a new
    /// organization also resets the active team.
    async fn set_active(
        &self,
        user: &UserId,
        token: &str,
        org: Option<OrgId>,
    ) -> Result<Option<Session>, ActorError> {
        self.change_own_session(user, token, |s| {
            if s.active_organization_id != org {
                s.active_team_id = None;
            }
            s.active_organization_id = org;
        })
        .await
    }

    /// Accepts an invitation (through the organization's actor) and makes the organization (and
    /// the invitation's team) the active one of the session that accepted: one request, one
    /// message.
    async fn accept_invitation(
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
    async fn leave_organization(
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

    /// Replaces the password, only if the credential still holds `current_hash` (the one the
    /// caller verified: a concurrent change makes this one fail); with `new_session`, every
    /// session is revoked and a new one made — all in one turn.
    async fn change_password(
        &self,
        user: &UserId,
        current_hash: &str,
        new_hash: String,
        new_session: Option<NewSession>,
        ctx: &Ctx,
    ) -> Result<Option<Session>, ActorError> {
        let store = &self.shared.store;
        let current = store
            .list_accounts(user)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .and_then(|a| a.password);
        if current.as_deref() != Some(current_hash) {
            return Err(ActorError::Refused(Rule::InvalidPassword));
        }
        let events = self.request(user, ctx, &Facts::default());
        self.set_password(user, new_hash, PasswordChange::OnlyIfExists, &events)
            .await?;
        match new_session {
            Some(new) => {
                self.revoke_sessions(user, None, &Ctx::default()).await?;
                Ok(Some(self.create_session(user, new, &Ctx::default()).await?))
            }
            None => Ok(None),
        }
    }

    /// `events` are stored with the credential's change.
    async fn set_password(
        &self,
        id: &UserId,
        hash: String,
        how: PasswordChange,
        events: &[storage::Event],
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let now = self.now();
        let existing = store
            .list_accounts(id)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER);
        match (existing, how) {
            (Some(a), PasswordChange::OnlyIfNone) if a.password.is_some() => {
                return Err(ActorError::Refused(Rule::HasPassword))
            }
            (Some(mut a), _) => {
                a.password = Some(hash);
                a.updated_at = now;
                store.update_account(&a, events).await?;
            }
            (None, PasswordChange::OnlyIfExists) => {
                return Err(ActorError::Refused(Rule::AccountNotFound))
            }
            (None, _) => {
                store.get_user(id).await?.ok_or(ActorError::NotFound)?;
                store
                    .create_account(&Account::credential(id, hash, now), events)
                    .await?;
            }
        }
        // A new password ends every outstanding reset link (issued for the old one).
        store
            .delete_verifications_of(&id.0, RESET_PASSWORD_PREFIX)
            .await?;
        Ok(())
    }

    /// A new password-reset token; every older one of the user stops working (only the newest
    /// mailed link resets). Serialized here, so two concurrent requests leave one valid token.
    /// The mailed link (the request's mail) is stored with the token.
    async fn issue_reset_token(
        &self,
        user: &UserId,
        token: String,
        lifetime: chrono::Duration,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        store
            .delete_verifications_of(&user.0, RESET_PASSWORD_PREFIX)
            .await?;
        self.issue_token(
            user,
            format!("{RESET_PASSWORD_PREFIX}{token}"),
            lifetime,
            ctx,
        )
        .await
    }

    /// Stores a single-use token `identifier` pointing at this user (delete-account links,
    /// email-change confirmations).
    async fn issue_token(
        &self,
        user: &UserId,
        identifier: String,
        lifetime: chrono::Duration,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let now = self.now();
        let events = self.request(user, ctx, &Facts::default());
        self.shared
            .store
            .create_verification(
                &Verification {
                    id: VerificationId::generate(),
                    identifier,
                    value: user.0.clone(),
                    expires_at: now + lifetime,
                    created_at: now,
                    updated_at: now,
                },
                &events,
            )
            .await?;
        Ok(())
    }

    /// Consumes a single-use token of this user: `InvalidToken` when it is unknown, used,
    /// expired or another user's.
    async fn take_token(&self, user: &UserId, identifier: &str) -> Result<(), ActorError> {
        let invalid = || ActorError::Refused(Rule::InvalidToken);
        let v = self
            .shared
            .store
            .consume_verification(identifier)
            .await?
            .ok_or_else(invalid)?;
        if v.value != user.0 || v.expires_at <= self.now() {
            return Err(invalid());
        }
        Ok(())
    }

    /// Consumes the reset token (once, even under concurrent use) and sets the password
    /// (creating the credential if there is none). Following a mailed link proves the mailbox:
    /// an unverified address becomes verified, and since whoever signed up with it before
    /// need not be its owner, every session is revoked then, whatever `revoke_sessions` says.
    async fn reset_password(
        &self,
        user: &UserId,
        token: &str,
        hash: String,
        revoke_sessions: bool,
        ctx: &Ctx,
    ) -> Result<ResetOutcome, ActorError> {
        let store = &self.shared.store;
        self.take_token(user, &format!("{RESET_PASSWORD_PREFIX}{token}"))
            .await?;
        let u = store
            .get_user(user)
            .await?
            .ok_or(ActorError::Refused(Rule::InvalidToken))?;
        let unproven = !u.email_verified;
        let sessions_revoked = revoke_sessions || unproven;
        let events = self.request(
            user,
            ctx,
            &Facts {
                sessions_revoked: Some(sessions_revoked),
                ..Facts::default()
            },
        );
        self.set_password(user, hash, PasswordChange::Upsert, &events)
            .await?;
        if unproven {
            self.update_user(
                user,
                UserPatch {
                    email_verified: Some(true),
                    ..UserPatch::default()
                },
                &Ctx::default(),
            )
            .await?;
        }
        if sessions_revoked {
            self.revoke_sessions(user, None, &Ctx::default()).await?;
        }
        Ok(ResetOutcome { sessions_revoked })
    }

    /// Marks the address verified (a no-op when it is). `revoke_sessions`: the link was
    /// followed without this user's session, so the sessions made before the proof — possibly
    /// by someone who signed up with another's address — are revoked. Returns the user and
    /// whether sessions were revoked.
    async fn verify_email(
        &self,
        user: &UserId,
        revoke_sessions: bool,
        ctx: &Ctx,
    ) -> Result<(User, bool), ActorError> {
        let store = &self.shared.store;
        let u = store.get_user(user).await?.ok_or(ActorError::NotFound)?;
        if u.email_verified {
            let events = self.request(
                user,
                ctx,
                &Facts {
                    sessions_revoked: Some(false),
                    ..Facts::default()
                },
            );
            store.append_events(&events).await?;
            return Ok((u, false));
        }
        let u = self
            .change_user(
                user,
                UserPatch {
                    email_verified: Some(true),
                    ..UserPatch::default()
                },
                ctx,
                Some(revoke_sessions),
            )
            .await?;
        if revoke_sessions {
            self.revoke_sessions(user, None, &Ctx::default()).await?;
        }
        Ok((u, revoke_sessions))
    }

    /// Consumes one step's single-use token of an email change (`change-email:{id}`), so a
    /// link works once and only for the user it was issued to; with `apply` (the new address
    /// proved by its own link), switches to the new address, verified.
    async fn confirm_email_change(
        &self,
        user: &UserId,
        id: &str,
        new_email: String,
        apply: bool,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.take_token(user, &format!("{CHANGE_EMAIL_PREFIX}{id}"))
            .await?;
        if !apply {
            let store = &self.shared.store;
            store
                .append_events(&self.request(user, ctx, &Facts::default()))
                .await?;
            return store.get_user(user).await?.ok_or(ActorError::NotFound);
        }
        self.update_user(
            user,
            UserPatch {
                email: Some(new_email),
                email_verified: Some(true),
                ..UserPatch::default()
            },
            ctx,
        )
        .await
    }

    async fn unlink_account(
        &self,
        id: &UserId,
        provider_id: Option<&str>,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let events = self.request(id, ctx, &Facts::default());
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            let accounts = store.list_accounts(id).await?;
            let target = accounts
                .iter()
                .find(|a| {
                    provider_id.is_none_or(|p| a.provider_id == p)
                        && account_id.is_none_or(|want| {
                            a.id.0 == want || (provider_id.is_some() && a.account_id == want)
                        })
                })
                .ok_or(ActorError::Refused(Rule::AccountNotFound))?;
            if accounts.len() <= 1 && !allow_unlinking_all {
                return Err(ActorError::Refused(Rule::LastAccount));
            }
            // Decided on the user's version: an unlink (or link) made meanwhile, here or in
            // another process, makes this one decide again.
            match store
                .delete_account(id, &target.id, user.version, &events)
                .await
            {
                Err(storage::StoreError::ConcurrentModification) => continue,
                other => return Ok(other?),
            }
        }
        Err(contended())
    }

    /// Applies `patch` to the user as stored now; when another process changed the user
    /// meanwhile (its version moved), applies it again to the newer row: no change is lost.
    async fn update_user(
        &self,
        id: &UserId,
        patch: UserPatch,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.change_user(id, patch, ctx, None).await
    }

    /// [`UserActor::update_user`], telling the request's notes whether sessions were revoked.
    async fn change_user(
        &self,
        id: &UserId,
        patch: UserPatch,
        ctx: &Ctx,
        sessions_revoked: Option<bool>,
    ) -> Result<User, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            if let Some(name) = &patch.name {
                user.name = name.clone();
            }
            if let Some(image) = &patch.image {
                user.image = image.clone();
            }
            if let Some(email) = &patch.email {
                user.email = email.to_lowercase();
            }
            if let Some(v) = patch.email_verified {
                user.email_verified = v;
            }
            if let Some(role) = &patch.role {
                user.role = role.clone();
            }
            match &patch.ban {
                Some(BanChange::Ban { reason, expires }) => {
                    user.banned = true;
                    user.ban_reason = Some(reason.clone());
                    user.ban_expires = *expires;
                }
                Some(BanChange::Unban) => {
                    user.banned = false;
                    user.ban_reason = None;
                    user.ban_expires = None;
                }
                None => {}
            }
            user.updated_at = self.now();
            user.version += 1;
            let events = Emit::user(id, self.now())
                .domain("user.updated", data::user(&user))
                .request(
                    ctx,
                    &Facts {
                        sessions_revoked,
                        ..Facts::default()
                    },
                )
                .done();
            match store.update_user(&user, &events).await {
                Ok(()) => {
                    if matches!(patch.ban, Some(BanChange::Ban { .. })) {
                        self.revoke_sessions(id, None, &Ctx::default()).await?;
                    }
                    return Ok(user);
                }
                Err(storage::StoreError::ConcurrentModification) => continue,
                Err(storage::StoreError::Conflict(_)) => {
                    return Err(ActorError::Refused(Rule::EmailTaken))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
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

    pub async fn create_session(&self, new: NewSession) -> Result<Session, ActorError> {
        self.call(|r| UserMsg::CreateSession(new.clone(), r)).await
    }

    /// Extends `session` (as the caller read it) when it is due; the session as it now is,
    /// `None` when it is gone or expired.
    pub async fn refresh_session(
        &self,
        session: &Session,
        dont_remember: bool,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::RefreshSession {
            session: Box::new(session.clone()),
            dont_remember,
            reply,
        })
        .await
    }

    /// Deletes a session the caller read (expired, or its user banned), without reading it
    /// again; whether it was there.
    pub async fn revoke_known_session(&self, session: &Session) -> Result<bool, ActorError> {
        self.call(|r| UserMsg::RevokeKnown(Box::new(session.clone()), r))
            .await
    }

    /// Deletes the session if it belongs to this user; returns whether it did.
    pub async fn revoke_session(&self, token: &str) -> Result<bool, ActorError> {
        self.call(|r| UserMsg::RevokeSession(token.to_owned(), r))
            .await
    }

    /// Deletes all of the user's sessions but `keep`; returns how many.
    pub async fn revoke_sessions(&self, keep: Option<&str>) -> Result<u64, ActorError> {
        self.call(|reply| UserMsg::RevokeSessions {
            keep: keep.map(str::to_owned),
            reply,
        })
        .await
    }

    pub async fn update_user(&self, patch: UserPatch) -> Result<User, ActorError> {
        self.call(|r| UserMsg::UpdateUser(patch.clone(), r)).await
    }

    /// Stores a new password hash on the credential account (see [`PasswordChange`]).
    pub async fn set_password(&self, hash: &str, how: PasswordChange) -> Result<(), ActorError> {
        self.call(|r| UserMsg::SetPassword(hash.to_owned(), how, r))
            .await
    }

    /// Unlinks an account, refusing the last one unless `allow_unlinking_all`.
    pub async fn unlink_account(
        &self,
        provider_id: Option<&str>,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::UnlinkAccount {
            provider_id: provider_id.map(str::to_owned),
            account_id: account_id.map(str::to_owned),
            allow_unlinking_all,
            reply,
        })
        .await
    }

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

    /// Stores a single-use token `identifier` pointing at this user, valid for `lifetime`.
    pub async fn issue_token(
        &self,
        identifier: &str,
        lifetime: chrono::Duration,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::IssueToken {
            identifier: identifier.to_owned(),
            lifetime,
            reply,
        })
        .await
    }

    /// Consumes this user's single-use token `identifier` and deletes the user, in one turn;
    /// `Refused(InvalidToken)` when the token is not (or no longer) valid for them.
    pub async fn delete_with_token(&self, identifier: &str) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::DeleteWithToken {
            identifier: identifier.to_owned(),
            reply,
        })
        .await
    }

    /// Changes the password if the credential still holds `current_hash`; with `new_session`,
    /// revokes every session and answers a new one.
    pub async fn change_password(
        &self,
        current_hash: &str,
        new_hash: &str,
        new_session: Option<NewSession>,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::ChangePassword {
            current_hash: current_hash.to_owned(),
            new_hash: new_hash.to_owned(),
            new_session: new_session.clone(),
            reply,
        })
        .await
    }

    /// Stores `token` as the user's password-reset token, with the mail that carries its link
    /// (the request's); older ones of this user stop working.
    pub async fn issue_reset_token(
        &self,
        token: &str,
        lifetime: chrono::Duration,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::IssueResetToken {
            token: token.to_owned(),
            lifetime,
            reply,
        })
        .await
    }

    /// Resets the password with a mailed token (see the actor method for what else it does).
    /// `Refused(InvalidToken)` when the token is unknown, used, expired or another user's.
    pub async fn reset_password(
        &self,
        token: &str,
        hash: &str,
        revoke_sessions: bool,
    ) -> Result<ResetOutcome, ActorError> {
        self.call(|reply| UserMsg::ResetPassword {
            token: token.to_owned(),
            hash: hash.to_owned(),
            revoke_sessions,
            reply,
        })
        .await
    }

    /// Marks the address verified; `revoke_sessions` when the link was followed without this
    /// user's session. Answers the user and whether sessions were revoked.
    pub async fn verify_email(&self, revoke_sessions: bool) -> Result<(User, bool), ActorError> {
        self.call(|reply| UserMsg::VerifyEmail {
            revoke_sessions,
            reply,
        })
        .await
    }

    /// One step of an email change, once (`id` of its stored token): the old address's
    /// confirmation (`apply: false`, answers the user as is), then the new address's proof
    /// (`apply: true`, switches to it, verified).
    pub async fn confirm_email_change(
        &self,
        id: &str,
        new_email: &str,
        apply: bool,
    ) -> Result<User, ActorError> {
        self.call(|reply| UserMsg::ConfirmEmailChange {
            id: id.to_owned(),
            new_email: new_email.to_owned(),
            apply,
            reply,
        })
        .await
    }

    /// Sets (or clears) the active organization of one of this user's sessions.
    pub async fn set_active_organization(
        &self,
        token: &str,
        org: Option<OrgId>,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::SetActiveOrganization {
            token: token.to_owned(),
            org: org.clone(),
            reply,
        })
        .await
    }

    /// Sets (or clears) the active team of one of this user's sessions.
    pub async fn set_active_team(
        &self,
        token: &str,
        team: Option<TeamId>,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::SetActiveTeam {
            token: token.to_owned(),
            team: team.clone(),
            reply,
        })
        .await
    }

    /// Deletes the user with its sessions, accounts and memberships.
    pub async fn delete_user(&self) -> Result<(), ActorError> {
        self.call(UserMsg::DeleteUser).await
    }

    /// Asks the actor for a change. One that may show in organizations' views (see
    /// [`UserMsg::shows_in_organizations`]) drops them before the caller sees the answer.
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
        if shown.load(std::sync::atomic::Ordering::Relaxed) {
            shared.views.drop_all();
        }
        r
    }
}
