//! The admin plugin's operations: who may do what is decided here, by the server's
//! [`policy::AdminPolicy`]; every change of a user then goes through that user's actor (a ban
//! and its revocation of sessions are one message of it, so a concurrent sign-in cannot slip
//! in between).
use crate::events::{data, Ctx, Emit, Facts};
use crate::{ActorError, Actors, BanChange, NewSession, PasswordChange, Rule, UserPatch};
use chrono::{DateTime, Utc};
use storage::{Account, Session, User, UserId, UserList, UserQuery};

/// Who asks for an admin operation.
#[derive(Debug, Clone)]
pub enum Caller {
    /// `Authorization: Bearer <server_key>`: tools and back ends; may do everything.
    Server,
    /// A signed-in user, as stored when the request was resolved.
    User(User),
}

impl Caller {
    fn user_id(&self) -> Option<&UserId> {
        match self {
            Self::Server => None,
            Self::User(u) => Some(&u.id),
        }
    }
}

/// Which permission a refused admin operation lacked (each has its own error code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminAction {
    CreateUsers,
    ListUsers,
    SetRole,
    Ban,
    Impersonate,
    DeleteUsers,
    SetPassword,
    GetUser,
    UpdateUsers,
    SetEmail,
    ListSessions,
    RevokeSessions,
    ReadAuditLog,
    ManageWebhooks,
}

impl AdminAction {
    /// The `(resource, action)` of the admin policy this needs.
    pub fn permission(self) -> (&'static str, &'static str) {
        match self {
            Self::CreateUsers => ("user", "create"),
            Self::ListUsers => ("user", "list"),
            Self::SetRole => ("user", "set-role"),
            Self::Ban => ("user", "ban"),
            Self::Impersonate => ("user", "impersonate"),
            Self::DeleteUsers => ("user", "delete"),
            Self::SetPassword => ("user", "set-password"),
            Self::GetUser => ("user", "get"),
            Self::UpdateUsers => ("user", "update"),
            Self::SetEmail => ("user", "set-email"),
            Self::ListSessions => ("session", "list"),
            Self::RevokeSessions => ("session", "revoke"),
            Self::ReadAuditLog => ("audit-log", "list"),
            Self::ManageWebhooks => ("webhook", "manage"),
        }
    }
}

/// What an admin changes on a user with `update-user` (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct AdminUpdate {
    pub name: Option<String>,
    pub image: Option<Option<String>>,
    /// Lowercased, already checked to be an address.
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// A normalized role list.
    pub role: Option<String>,
    pub ban: Option<BanChange>,
}

impl Actors {
    fn allows(&self, caller: &Caller, resource: &str, action: &str) -> bool {
        match caller {
            Caller::Server => true,
            Caller::User(u) => {
                self.shared
                    .admin
                    .allows(&u.id.0, u.role.as_deref(), resource, action)
            }
        }
    }

    /// Refuses (`AdminNotAllowed`) a caller without the permission `what` needs; the
    /// operations check it themselves, this is for work to skip before them (e.g. hashing).
    pub fn admin_authorize(&self, caller: &Caller, what: AdminAction) -> Result<(), ActorError> {
        self.authorize(caller, what)
    }

    fn authorize(&self, caller: &Caller, what: AdminAction) -> Result<(), ActorError> {
        let (resource, action) = what.permission();
        if self.allows(caller, resource, action) {
            Ok(())
        } else {
            Err(ActorError::Refused(Rule::AdminNotAllowed(what)))
        }
    }

    async fn target(&self, id: &UserId) -> Result<User, ActorError> {
        self.shared
            .store
            .get_user(id)
            .await?
            .ok_or(ActorError::Refused(Rule::NoSuchUser))
    }

    /// Each role of a (normalized) list must be one this server knows.
    fn known_roles(&self, roles: &str) -> Result<(), ActorError> {
        if policy::parse_roles(roles)
            .iter()
            .all(|r| self.shared.admin.is_role(r))
        {
            Ok(())
        } else {
            Err(ActorError::Refused(Rule::NonExistentRole))
        }
    }

    /// Whether the caller holds every permission of `perms` (`has-permission`); the server
    /// asks about a user (`user`) or a role list (`roles`).
    pub fn admin_has_permission(
        &self,
        caller: &Caller,
        user: Option<&User>,
        roles: Option<&str>,
        perms: &policy::Permissions,
    ) -> bool {
        let policy = &self.shared.admin;
        match (caller, user) {
            (Caller::User(u), _) | (Caller::Server, Some(u)) => {
                policy.allows_all(&u.id.0, u.role.as_deref(), perms)
            }
            (Caller::Server, None) => policy.allows_all("", roles, perms),
        }
    }

    pub async fn admin_get_user(&self, caller: &Caller, id: &UserId) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::GetUser)?;
        self.target(id).await
    }

    pub async fn admin_list_users(
        &self,
        caller: &Caller,
        q: &UserQuery,
    ) -> Result<UserList, ActorError> {
        self.authorize(caller, AdminAction::ListUsers)?;
        Ok(self.shared.store.list_users(q).await?)
    }

    /// Creates a user (with a password credential when `account` is given); a role other than
    /// the default needs `user:set-role` too.
    pub async fn admin_create_user(
        &self,
        caller: &Caller,
        mut user: User,
        account: Option<Account>,
        role: Option<String>,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::CreateUsers)?;
        if let Some(role) = role {
            self.authorize(caller, AdminAction::SetRole)?;
            self.known_roles(&role)?;
            user.role = Some(role);
        }
        let events = Emit::user(&user.id, self.shared.clock.now())
            .domain("user.created", data::user(&user))
            .request(ctx, &Facts::default())
            .done();
        self.shared
            .store
            .create_user(&user, account.as_ref(), &events)
            .await
            .map_err(|e| match e {
                storage::StoreError::Conflict(_) => ActorError::Refused(Rule::EmailInUse),
                other => other.into(),
            })?;
        Ok(user)
    }

    /// `update-user`: each kind of change needs its own permission besides `user:update`.
    pub async fn admin_update_user(
        &self,
        caller: &Caller,
        id: &UserId,
        change: AdminUpdate,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::UpdateUsers)?;
        if let Some(role) = &change.role {
            self.authorize(caller, AdminAction::SetRole)?;
            self.known_roles(role)?;
        }
        if let Some(ban) = &change.ban {
            self.authorize(caller, AdminAction::Ban)?;
            if matches!(ban, BanChange::Ban { .. }) && caller.user_id() == Some(id) {
                return Err(ActorError::Refused(Rule::CannotBanYourself));
            }
        }
        if change.email.is_some() {
            self.authorize(caller, AdminAction::SetEmail)?;
        }
        self.target(id).await?;
        let patch = UserPatch {
            name: change.name,
            image: change.image,
            email: change.email,
            email_verified: change.email_verified,
            role: change.role.map(Some),
            ban: change.ban,
            two_factor_enabled: None,
        };
        self.user(id.clone())
            .with(ctx.clone())
            .update_user(patch)
            .await
            .map_err(|e| match e {
                ActorError::Refused(Rule::EmailTaken) => ActorError::Refused(Rule::EmailInUse),
                ActorError::NotFound => ActorError::Refused(Rule::NoSuchUser),
                other => other,
            })
    }

    pub async fn admin_set_role(
        &self,
        caller: &Caller,
        id: &UserId,
        roles: String,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::SetRole)?;
        self.known_roles(&roles)?;
        self.change(
            id,
            UserPatch {
                role: Some(Some(roles)),
                ..UserPatch::default()
            },
            ctx,
        )
        .await
    }

    /// Bans the user and revokes every session of theirs (one message of the user's actor).
    pub async fn admin_ban(
        &self,
        caller: &Caller,
        id: &UserId,
        reason: String,
        expires: Option<DateTime<Utc>>,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::Ban)?;
        self.target(id).await?;
        if caller.user_id() == Some(id) {
            return Err(ActorError::Refused(Rule::CannotBanYourself));
        }
        self.change(
            id,
            UserPatch {
                ban: Some(BanChange::Ban { reason, expires }),
                ..UserPatch::default()
            },
            ctx,
        )
        .await
    }

    pub async fn admin_unban(
        &self,
        caller: &Caller,
        id: &UserId,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::Ban)?;
        self.change(
            id,
            UserPatch {
                ban: Some(BanChange::Unban),
                ..UserPatch::default()
            },
            ctx,
        )
        .await
    }

    async fn change(&self, id: &UserId, patch: UserPatch, ctx: &Ctx) -> Result<User, ActorError> {
        self.target(id).await?;
        self.user(id.clone())
            .with(ctx.clone())
            .update_user(patch)
            .await
            .map_err(|e| match e {
                ActorError::NotFound => ActorError::Refused(Rule::NoSuchUser),
                other => other,
            })
    }

    pub async fn admin_list_sessions(
        &self,
        caller: &Caller,
        id: &UserId,
    ) -> Result<Vec<Session>, ActorError> {
        self.authorize(caller, AdminAction::ListSessions)?;
        let now = self.shared.clock.now();
        let mut sessions = self.shared.store.list_sessions(id).await?;
        sessions.retain(|s| s.expires_at > now);
        Ok(sessions)
    }

    /// Revokes one session by its token (whoever's it is); unknown tokens are no error.
    pub async fn admin_revoke_session(
        &self,
        caller: &Caller,
        token: &str,
        ctx: &Ctx,
    ) -> Result<Option<UserId>, ActorError> {
        self.authorize(caller, AdminAction::RevokeSessions)?;
        let Some(s) = self.shared.store.get_session(token).await? else {
            return Ok(None);
        };
        self.user(s.user_id.clone())
            .with(ctx.clone())
            .revoke_session(token)
            .await?;
        Ok(Some(s.user_id))
    }

    pub async fn admin_revoke_sessions(
        &self,
        caller: &Caller,
        id: &UserId,
        ctx: &Ctx,
    ) -> Result<u64, ActorError> {
        self.authorize(caller, AdminAction::RevokeSessions)?;
        self.user(id.clone())
            .with(ctx.clone())
            .revoke_sessions(None)
            .await
    }

    /// Turns a user's two-factor sign-in off (their factor, backup codes and trusted
    /// browsers go): for a user who lost every way to give it. Needs `user:update`.
    pub async fn admin_disable_two_factor(
        &self,
        caller: &Caller,
        id: &UserId,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.authorize(caller, AdminAction::UpdateUsers)?;
        self.target(id).await?;
        self.user(id.clone())
            .with(ctx.clone())
            .disable_two_factor()
            .await
    }

    pub async fn admin_remove_user(
        &self,
        caller: &Caller,
        id: &UserId,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        self.authorize(caller, AdminAction::DeleteUsers)?;
        if caller.user_id() == Some(id) {
            return Err(ActorError::Refused(Rule::CannotRemoveYourself));
        }
        self.target(id).await?;
        self.user(id.clone())
            .with(ctx.clone())
            .delete_user()
            .await
            .map_err(|e| match e {
                ActorError::NotFound => ActorError::Refused(Rule::NoSuchUser),
                other => other,
            })
    }

    /// Sets the user's password (creating the password credential if there is none).
    pub async fn admin_set_password(
        &self,
        caller: &Caller,
        id: &UserId,
        hash: &str,
        ctx: &Ctx,
    ) -> Result<(), ActorError> {
        self.authorize(caller, AdminAction::SetPassword)?;
        self.target(id).await?;
        self.user(id.clone())
            .with(ctx.clone())
            .set_password(hash, PasswordChange::Upsert)
            .await
    }

    /// A session of `id` marked as the caller's impersonation, with its own lifetime.
    /// Impersonating an administrator needs `user:impersonate-admins`.
    pub async fn admin_impersonate(
        &self,
        caller: &Caller,
        id: &UserId,
        mut new: NewSession,
        lifetime: chrono::Duration,
        ctx: &Ctx,
    ) -> Result<(Session, User), ActorError> {
        self.authorize(caller, AdminAction::Impersonate)?;
        let Caller::User(admin) = caller else {
            // Impersonation needs an admin session to return to.
            return Err(ActorError::Refused(Rule::AdminNotAllowed(
                AdminAction::Impersonate,
            )));
        };
        let target = self.target(id).await?;
        if self
            .shared
            .admin
            .is_admin(&target.id.0, target.role.as_deref())
            && !self.allows(caller, "user", "impersonate-admins")
        {
            return Err(ActorError::Refused(Rule::CannotImpersonateAdmins));
        }
        new.impersonated_by = Some(admin.id.clone());
        new.lifetime = Some(lifetime);
        new.dont_remember = true;
        let session = self
            .user(id.clone())
            .with(ctx.clone())
            .create_session(new)
            .await?;
        Ok((session, target))
    }
}
