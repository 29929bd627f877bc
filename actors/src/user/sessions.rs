//! A user's sessions: made (a ban checked before and after), refreshed, revoked one or all,
//! and their active organization and team.
use super::*;

impl UserActor {
    pub(super) async fn create_session(
        &self,
        user: &UserId,
        new: NewSession,
        ctx: &Ctx,
    ) -> Result<Session, ActorError> {
        self.check_not_banned(user).await?;
        let session = self.new_session(user, new);
        let events = self.session_created(&session, ctx);
        self.shared
            .store
            .create_session(&session, &events)
            .await
            .map_err(|e| match e {
                // The user is gone (deleted meanwhile).
                storage::StoreError::NotFound => ActorError::Refused(Rule::UserGone),
                other => other.into(),
            })?;
        self.session_stands(user, session).await
    }

    /// A new session of `user` (not stored yet).
    pub(super) fn new_session(&self, user: &UserId, new: NewSession) -> Session {
        let now = self.now();
        let policy = &self.shared.config.sessions;
        let lifetime = match new.lifetime {
            Some(l) => l,
            None if new.dont_remember => policy.dont_remember_expires_in,
            None => policy.expires_in,
        };
        Session {
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
        }
    }

    /// What storing a new session emits: `session.created` and the request's audit notes.
    pub(super) fn session_created(&self, session: &Session, ctx: &Ctx) -> Vec<storage::Event> {
        Emit::user(&session.user_id, self.now())
            .domain("session.created", data::session(session))
            .request(
                ctx,
                &Facts {
                    session: Some(session),
                    ..Facts::default()
                },
            )
            .done()
    }

    /// A session just stored, kept unless a ban came meanwhile. A ban decided in another
    /// process between the check before the write and the write: either it is seen now (and
    /// this session goes), or it was written after this session and its revocation of every
    /// session removes this one too.
    pub(super) async fn session_stands(
        &self,
        user: &UserId,
        session: Session,
    ) -> Result<Session, ActorError> {
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
    pub(super) async fn refresh_session(
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
    pub(super) async fn change_own_session(
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

    pub(super) async fn revoke_session(
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
    pub(super) async fn revoke_known(
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
    pub(super) async fn revoke_sessions(
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

    /// Makes `org` (or none) the active organization of one of this user's sessions; a new
    /// organization also resets the active team.
    pub(super) async fn set_active(
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
}

impl UserHandle {
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
}
