//! The user itself: its profile (changed on the row as stored now, never losing another
//! process's change), its email (verified, changed in two steps), bans, and its deletion.
use super::*;

impl UserActor {
    /// Refuses a banned user (`Banned`); a ban that has ended is lifted here. Answers the
    /// user as stored now.
    pub(super) async fn check_not_banned(&self, id: &UserId) -> Result<User, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut user = store
                .get_user(id)
                .await?
                .ok_or(ActorError::Refused(Rule::UserGone))?;
            if !user.banned {
                return Ok(user);
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
                Ok(()) => return Ok(user),
                Err(storage::StoreError::ConcurrentModification) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    /// Deletes the user with everything that belongs to it.
    pub(super) async fn delete_user(&self, user: &UserId, ctx: &Ctx) -> Result<(), ActorError> {
        let store = &self.shared.store;
        let gone = store.get_user(user).await?.ok_or(ActorError::NotFound)?;
        let events = Emit::user(user, self.now())
            .domain("user.deleted", data::user(&gone))
            .request(ctx, &Facts::default())
            .done();
        Ok(store.delete_user(user, &events).await?)
    }

    /// Marks the address verified (a no-op when it is). `elsewhere`: the link (or code) was
    /// used without this user's session, so a password set before it was not followed by
    /// its owner's proof: it is marked unproven (see [`UNPROVEN_PASSWORD_PREFIX`]).
    /// `revoke_sessions`: the sessions made before are revoked too. Returns the user and
    /// whether sessions were revoked.
    pub(super) async fn verify_email(
        &self,
        user: &UserId,
        elsewhere: bool,
        revoke_sessions: bool,
        ctx: &Ctx,
    ) -> Result<(User, bool), ActorError> {
        let store = &self.shared.store;
        let u = store.get_user(user).await?.ok_or(ActorError::NotFound)?;
        if elsewhere && !u.email_verified && self.has_password(user).await? {
            self.mark_password_unproven(user).await?;
        }
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
    pub(super) async fn confirm_email_change(
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

    /// Applies `patch` to the user as stored now; when another process changed the user
    /// meanwhile (its version moved), applies it again to the newer row: no change is lost.
    pub(super) async fn update_user(
        &self,
        id: &UserId,
        patch: UserPatch,
        ctx: &Ctx,
    ) -> Result<User, ActorError> {
        self.change_user(id, patch, ctx, None).await
    }

    /// [`UserActor::update_user`], telling the request's notes whether sessions were revoked.
    pub(super) async fn change_user(
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
            if let Some(on) = patch.two_factor_enabled {
                user.two_factor_enabled = on;
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

impl UserHandle {
    pub async fn update_user(&self, patch: UserPatch) -> Result<User, ActorError> {
        self.call(|r| UserMsg::UpdateUser(patch.clone(), r)).await
    }

    /// Marks the address verified; `elsewhere` when the link or code was used without this
    /// user's session (a password set before is then unproven), `revoke_sessions` to end the
    /// earlier sessions too. Answers the user and whether sessions were revoked.
    pub async fn verify_email(
        &self,
        elsewhere: bool,
        revoke_sessions: bool,
    ) -> Result<(User, bool), ActorError> {
        self.call(|reply| UserMsg::VerifyEmail {
            elsewhere,
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

    /// Deletes the user with its sessions, accounts and memberships.
    pub async fn delete_user(&self) -> Result<(), ActorError> {
        self.call(UserMsg::DeleteUser).await
    }
}
