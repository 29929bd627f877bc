//! The user actor: owns the changes of one user's sessions and profile.
use crate::{ActorError, Actors, Rule, Shared};
use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use std::time::Duration;
use storage::{
    Account, AccountId, Member, OrgId, Organization, Session, SessionId, TeamId, User, UserId,
    CREDENTIAL_PROVIDER,
};
use tokio::time::Instant;

type Reply<T> = RpcReplyPort<Result<T, ActorError>>;

/// What a new session records about the request that created it.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// `rememberMe: false`: a shorter session that is never extended.
    pub dont_remember: bool,
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
}

pub(crate) enum UserMsg {
    CreateSession(NewSession, Reply<Session>),
    RefreshSession {
        token: String,
        dont_remember: bool,
        reply: Reply<Option<Session>>,
    },
    RevokeSession(String, Reply<bool>),
    RevokeSessions {
        keep: Option<String>,
        reply: Reply<u64>,
    },
    UpdateUser(UserPatch, Reply<User>),
    SetPassword(String, PasswordChange, Reply<()>),
    UnlinkAccount {
        provider_id: String,
        account_id: Option<String>,
        allow_unlinking_all: bool,
        reply: Reply<()>,
    },
    DeleteUser(Reply<()>),
    CreateOrganization {
        org: Organization,
        owner: Member,
        limit: Option<u32>,
        reply: Reply<()>,
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
    IdleCheck,
}

struct UserActor {
    shared: Arc<Shared>,
}

struct UserState {
    id: UserId,
    last_active: Instant,
}

impl Actor for UserActor {
    type Msg = UserMsg;
    type State = UserState;
    type Arguments = UserId;

    async fn pre_start(
        &self,
        myself: ActorRef<UserMsg>,
        id: UserId,
    ) -> Result<UserState, ActorProcessingErr> {
        let idle = self.shared.config.idle_timeout;
        // The interval task ends by itself when the actor stops (sending then fails).
        myself.send_interval((idle / 2).max(Duration::from_millis(10)), || {
            UserMsg::IdleCheck
        });
        Ok(UserState {
            id,
            last_active: Instant::now(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<UserMsg>,
        msg: UserMsg,
        state: &mut UserState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(msg, UserMsg::IdleCheck) {
            state.last_active = Instant::now();
        }
        // A reply fails only when the caller gave up waiting; nothing to do then.
        match msg {
            UserMsg::CreateSession(new, reply) => {
                let _ = reply.send(self.create_session(&state.id, new).await);
            }
            UserMsg::RefreshSession {
                token,
                dont_remember,
                reply,
            } => {
                let _ = reply.send(self.refresh_session(&state.id, &token, dont_remember).await);
            }
            UserMsg::RevokeSession(token, reply) => {
                let _ = reply.send(self.revoke_session(&state.id, &token).await);
            }
            UserMsg::RevokeSessions { keep, reply } => {
                let r = self
                    .shared
                    .store
                    .delete_user_sessions(&state.id, keep.as_deref())
                    .await
                    .map_err(Into::into);
                let _ = reply.send(r);
            }
            UserMsg::UpdateUser(patch, reply) => {
                let _ = reply.send(self.update_user(&state.id, patch).await);
            }
            UserMsg::SetPassword(hash, how, reply) => {
                let _ = reply.send(self.set_password(&state.id, hash, how).await);
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
                        &provider_id,
                        account_id.as_deref(),
                        allow_unlinking_all,
                    )
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::DeleteUser(reply) => {
                let r = self
                    .shared
                    .store
                    .delete_user(&state.id)
                    .await
                    .map_err(Into::into);
                let _ = reply.send(r);
            }
            UserMsg::CreateOrganization {
                org,
                owner,
                limit,
                reply,
            } => {
                let _ = reply.send(self.create_organization(&state.id, org, owner, limit).await);
            }
            UserMsg::SetActiveOrganization { token, org, reply } => {
                let r = self
                    .change_own_session(&state.id, &token, |s| {
                        if s.active_organization_id != org {
                            s.active_team_id = None;
                        }
                        s.active_organization_id = org;
                    })
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::SetActiveTeam { token, team, reply } => {
                let r = self
                    .change_own_session(&state.id, &token, |s| s.active_team_id = team)
                    .await;
                let _ = reply.send(r);
            }
            UserMsg::IdleCheck => {
                if state.last_active.elapsed() >= self.shared.config.idle_timeout {
                    myself.stop(Some("idle".into()));
                }
            }
        }
        Ok(())
    }
}

impl UserActor {
    fn now(&self) -> DateTime<Utc> {
        self.shared.clock.now()
    }

    async fn create_session(&self, user: &UserId, new: NewSession) -> Result<Session, ActorError> {
        let now = self.now();
        let policy = &self.shared.config.sessions;
        let lifetime = if new.dont_remember {
            policy.dont_remember_expires_in
        } else {
            policy.expires_in
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
            impersonated_by: None,
        };
        self.shared.store.create_session(&session).await?;
        Ok(session)
    }

    /// Extends the session when its last update is older than `update_age`. Returns the session
    /// as it now is, or `None` when it is gone or expired (an expired one is deleted).
    async fn refresh_session(
        &self,
        user: &UserId,
        token: &str,
        dont_remember: bool,
    ) -> Result<Option<Session>, ActorError> {
        let store = &self.shared.store;
        let Some(mut session) = store.get_session(token).await? else {
            return Ok(None);
        };
        if &session.user_id != user {
            return Ok(None);
        }
        let now = self.now();
        if session.expires_at <= now {
            store.delete_session(token).await?;
            return Ok(None);
        }
        let policy = &self.shared.config.sessions;
        // Re-checked here, inside the actor: of concurrent refreshes only the first writes.
        if dont_remember || session.updated_at + policy.update_age > now {
            return Ok(Some(session));
        }
        session.expires_at = now + policy.expires_in;
        session.updated_at = now;
        match store.update_session(&session).await {
            Ok(()) => Ok(Some(session)),
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

    async fn revoke_session(&self, user: &UserId, token: &str) -> Result<bool, ActorError> {
        let store = &self.shared.store;
        match store.get_session(token).await? {
            Some(s) if &s.user_id == user => Ok(store.delete_session(token).await?),
            _ => Ok(false),
        }
    }

    /// Creates an organization owned by this user; counted here, so concurrent creates by one
    /// user cannot pass the per-user limit. The slug's uniqueness is the store's.
    async fn create_organization(
        &self,
        user: &UserId,
        org: Organization,
        owner: Member,
        limit: Option<u32>,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        if let Some(limit) = limit {
            if store.list_user_organizations(user).await?.len() as u64 >= limit as u64 {
                return Err(ActorError::Refused(Rule::OrganizationLimit));
            }
        }
        store
            .create_organization(&org, &owner)
            .await
            .map_err(|e| match e {
                storage::StoreError::Conflict(_) => ActorError::Refused(Rule::SlugTaken),
                other => other.into(),
            })
    }

    async fn set_password(
        &self,
        id: &UserId,
        hash: String,
        how: PasswordChange,
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
                Err(ActorError::Refused(Rule::HasPassword))
            }
            (Some(mut a), _) => {
                a.password = Some(hash);
                a.updated_at = now;
                Ok(store.update_account(&a).await?)
            }
            (None, PasswordChange::OnlyIfExists) => Err(ActorError::Refused(Rule::AccountNotFound)),
            (None, _) => {
                store.get_user(id).await?.ok_or(ActorError::NotFound)?;
                let account = Account {
                    id: AccountId::generate(),
                    user_id: id.clone(),
                    provider_id: CREDENTIAL_PROVIDER.into(),
                    account_id: id.0.clone(),
                    password: Some(hash),
                    access_token: None,
                    refresh_token: None,
                    id_token: None,
                    access_token_expires_at: None,
                    refresh_token_expires_at: None,
                    scope: None,
                    created_at: now,
                    updated_at: now,
                };
                Ok(store.create_account(&account).await?)
            }
        }
    }

    async fn unlink_account(
        &self,
        id: &UserId,
        provider_id: &str,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
    ) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let accounts = store.list_accounts(id).await?;
        let target = accounts
            .iter()
            .find(|a| {
                a.provider_id == provider_id && account_id.is_none_or(|want| a.account_id == want)
            })
            .ok_or(ActorError::Refused(Rule::AccountNotFound))?;
        // Checked here, inside the actor: two concurrent unlinks cannot both pass it.
        if accounts.len() <= 1 && !allow_unlinking_all {
            return Err(ActorError::Refused(Rule::LastAccount));
        }
        Ok(store.delete_account(&target.id).await?)
    }

    async fn update_user(&self, id: &UserId, patch: UserPatch) -> Result<User, ActorError> {
        let store = &self.shared.store;
        let mut user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
        if let Some(name) = patch.name {
            user.name = name;
        }
        if let Some(image) = patch.image {
            user.image = image;
        }
        if let Some(email) = patch.email {
            user.email = email.to_lowercase();
        }
        if let Some(v) = patch.email_verified {
            user.email_verified = v;
        }
        user.updated_at = self.now();
        store.update_user(&user).await?;
        Ok(user)
    }
}

/// A typed handle to one user's actor. Spawns the actor when it is not running, and retries
/// when a message was dropped because the actor stopped (idle) just before handling it.
#[derive(Clone)]
pub struct UserHandle {
    actors: Actors,
    id: UserId,
}

impl UserHandle {
    pub(crate) fn new(actors: Actors, id: UserId) -> Self {
        Self { actors, id }
    }

    pub async fn create_session(&self, new: NewSession) -> Result<Session, ActorError> {
        self.call(|r| UserMsg::CreateSession(new.clone(), r)).await
    }

    pub async fn refresh_session(
        &self,
        token: &str,
        dont_remember: bool,
    ) -> Result<Option<Session>, ActorError> {
        self.call(|reply| UserMsg::RefreshSession {
            token: token.to_owned(),
            dont_remember,
            reply,
        })
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
        provider_id: &str,
        account_id: Option<&str>,
        allow_unlinking_all: bool,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::UnlinkAccount {
            provider_id: provider_id.to_owned(),
            account_id: account_id.map(str::to_owned),
            allow_unlinking_all,
            reply,
        })
        .await
    }

    /// Creates an organization with this user as its first member (see the actor method).
    pub async fn create_organization(
        &self,
        org: &Organization,
        owner: &Member,
        limit: Option<u32>,
    ) -> Result<(), ActorError> {
        self.call(|reply| UserMsg::CreateOrganization {
            org: org.clone(),
            owner: owner.clone(),
            limit,
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

    async fn call<T: Send + 'static>(
        &self,
        build: impl Fn(Reply<T>) -> UserMsg,
    ) -> Result<T, ActorError> {
        let shared = self.actors.shared.clone();
        self.actors
            .call(
                "user",
                &self.id,
                || UserActor {
                    shared: shared.clone(),
                },
                build,
                &self.id.0,
            )
            .await
    }
}
