//! Sessions: rows by token (every write a lightweight transaction, so a revoked session is never
//! written back by a concurrent refresh) and a per-user index of tokens; both with a TTL.
use super::*;
use crate::*;
use async_trait::async_trait;

const SESSION_COLS: &str =
    "session_token, id, user_id, expires_at, ip_address, user_agent, created_at, \
                            updated_at, active_organization_id, active_team_id, impersonated_by";

/// Reads of a session by its token (the column first in [`SESSION_COLS`]), coalesced.
pub(super) fn by_token(session: std::sync::Arc<CachingSession>, ks: &str) -> coalesce::Coalescer {
    let select = format!("SELECT {SESSION_COLS} FROM {ks}.sessions");
    coalesce::Coalescer::new(session, &select, "session_token", 0)
}

fn session_of(r: &Row) -> StoreResult<Session> {
    let c = Cols(r);
    Ok(Session {
        token: c.text(0)?,
        id: SessionId(c.text(1)?),
        user_id: UserId(c.text(2)?),
        expires_at: c.ts(3)?,
        ip_address: c.otext(4),
        user_agent: c.otext(5),
        created_at: c.ts(6)?,
        updated_at: c.ts(7)?,
        active_organization_id: c.otext(8).map(OrgId),
        active_team_id: c.otext(9).map(TeamId),
        impersonated_by: c.otext(10).map(UserId),
    })
}

impl ScyllaStore {
    async fn index_session(&self, s: &Session) -> StoreResult<()> {
        self.exec(
            &format!(
                "INSERT INTO {} (user_id, session_token, expires_at) VALUES (?, ?, ?) USING TTL ?",
                self.t("sessions_by_user")
            ),
            vec![
                text(&s.user_id.0),
                text(&s.token),
                ms(&s.expires_at),
                ttl(&s.expires_at),
            ],
        )
        .await?;
        Ok(())
    }

    async fn tokens_of(&self, user: &UserId) -> StoreResult<Vec<String>> {
        self.rows(
            &format!(
                "SELECT session_token FROM {} WHERE user_id = ?",
                self.t("sessions_by_user")
            ),
            vec![text(&user.0)],
        )
        .await?
        .iter()
        .map(|r| Cols(r).text(0))
        .collect()
    }

    /// Rewrites sessions of the organization's members that point at `org` (or at `team`):
    /// the organization or team is gone, so they lose it.
    pub(crate) async fn clear_active(
        &self,
        members: &[UserId],
        org: &OrgId,
        team: Option<&TeamId>,
    ) -> StoreResult<()> {
        for user in members {
            for token in self.tokens_of(user).await? {
                let Some(mut s) = self.get_session(&token).await? else {
                    continue;
                };
                let hit = match team {
                    Some(t) => s.active_team_id.as_ref() == Some(t),
                    None => s.active_organization_id.as_ref() == Some(org),
                };
                if !hit {
                    continue;
                }
                if team.is_none() {
                    s.active_organization_id = None;
                }
                s.active_team_id = None;
                match self.update_session(&s).await {
                    Ok(()) | Err(StoreError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// The session's columns after its token, in `SESSION_COLS` order.
fn values_of(s: &Session) -> Vec<V> {
    vec![
        text(&s.id.0),
        text(&s.user_id.0),
        ms(&s.expires_at),
        otext(s.ip_address.as_deref()),
        otext(s.user_agent.as_deref()),
        ms(&s.created_at),
        ms(&s.updated_at),
        otext(s.active_organization_id.as_ref().map(|x| x.0.as_str())),
        otext(s.active_team_id.as_ref().map(|x| x.0.as_str())),
        otext(s.impersonated_by.as_ref().map(|x| x.0.as_str())),
    ]
}

#[async_trait]
impl SessionStore for ScyllaStore {
    async fn create_session(&self, s: &Session, events: &[Event]) -> StoreResult<()> {
        let token = s.token.clone();
        self.decide(
            events,
            |_| Probe::SessionExists { token },
            always,
            |_| self.insert_session(s),
        )
        .await
    }

    async fn get_session(&self, token: &str) -> StoreResult<Option<Session>> {
        self.sessions_by_token
            .get(token)
            .await?
            .map(|r| session_of(&r))
            .transpose()
    }

    async fn get_session_with_user(
        &self,
        token: &str,
    ) -> StoreResult<Option<(Session, Option<User>)>> {
        // Two partitions: the user is read once the session names it.
        let Some(s) = self.get_session(token).await? else {
            return Ok(None);
        };
        let u = self.get_user(&s.user_id).await?;
        Ok(Some((s, u)))
    }

    async fn list_sessions(&self, user_id: &UserId) -> StoreResult<Vec<Session>> {
        let mut list = Vec::new();
        for token in self.tokens_of(user_id).await? {
            if let Some(s) = self.get_session(&token).await? {
                list.push(s);
            }
        }
        list.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(list)
    }

    /// Every column is rewritten with the new TTL (a TTL is per cell), only if the session
    /// still exists.
    async fn update_session(&self, s: &Session) -> StoreResult<()> {
        let ok = self
            .lwt(
                &format!(
                    "UPDATE {} USING TTL ? SET id = ?, user_id = ?, expires_at = ?, \
                     ip_address = ?, user_agent = ?, created_at = ?, updated_at = ?, \
                     active_organization_id = ?, active_team_id = ?, impersonated_by = ? \
                     WHERE session_token = ? IF EXISTS",
                    self.t("sessions")
                ),
                [vec![ttl(&s.expires_at)], values_of(s), vec![text(&s.token)]].concat(),
            )
            .await?;
        if !ok {
            return Err(StoreError::NotFound);
        }
        self.index_session(s).await
    }

    async fn delete_session(&self, token: &str, events: &[Event]) -> StoreResult<bool> {
        let t = token.to_owned();
        self.decide(
            events,
            |_| Probe::SessionGone { token: t },
            |deleted: &bool| *deleted,
            |_| self.remove_session(token),
        )
        .await
    }

    async fn delete_user_sessions(
        &self,
        user_id: &UserId,
        keep: Option<&str>,
        events: &[Event],
    ) -> StoreResult<u64> {
        self.decide(
            events,
            |_| Probe::Always,
            always,
            |_| self.remove_user_sessions(user_id, keep),
        )
        .await
    }

    /// A no-op: sessions expire by their TTL.
    async fn purge_expired_sessions(&self, _now: DateTime<Utc>) -> StoreResult<u64> {
        Ok(0)
    }
}

/// The writes themselves; the trait's methods run them as decisions with their events
/// (see `stream`).
impl ScyllaStore {
    pub(crate) async fn insert_session(&self, s: &Session) -> StoreResult<()> {
        // A session of a user that is gone cannot be made.
        if self.get_user(&s.user_id).await?.is_none() {
            return Err(StoreError::NotFound);
        }
        let created = self
            .lwt(
                &format!(
                    "INSERT INTO {} ({SESSION_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?) \
                     IF NOT EXISTS USING TTL ?",
                    self.t("sessions")
                ),
                [vec![text(&s.token)], values_of(s), vec![ttl(&s.expires_at)]].concat(),
            )
            .await?;
        if !created {
            return Err(StoreError::Conflict("token"));
        }
        self.index_session(s).await
    }

    pub(crate) async fn remove_session(&self, token: &str) -> StoreResult<bool> {
        let owner = self.get_session(token).await?.map(|s| s.user_id);
        let deleted = self
            .lwt(
                &format!(
                    "DELETE FROM {} WHERE session_token = ? IF EXISTS",
                    self.t("sessions")
                ),
                vec![text(token)],
            )
            .await?;
        if let Some(user) = owner {
            self.exec(
                &format!(
                    "DELETE FROM {} WHERE user_id = ? AND session_token = ?",
                    self.t("sessions_by_user")
                ),
                vec![text(&user.0), text(token)],
            )
            .await?;
        }
        Ok(deleted)
    }

    /// The sessions that existed when it started (one made meanwhile may survive).
    pub(crate) async fn remove_user_sessions(
        &self,
        user_id: &UserId,
        keep: Option<&str>,
    ) -> StoreResult<u64> {
        let mut n = 0;
        for token in self.tokens_of(user_id).await? {
            if Some(token.as_str()) == keep {
                continue;
            }
            if self.remove_session(&token).await? {
                n += 1;
            }
        }
        Ok(n)
    }
}
