//! Sessions.
use super::*;
use crate::*;
use rusqlite::params;

/// Inserts a new session: `NotFound` when its user is gone.
pub(super) fn insert_session(c: &Connection, s: &Session) -> StoreResult<()> {
    c.exec(
        &format!(
            "INSERT INTO sessions ({SESSION_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
        ),
        params![
            s.id.0,
            s.token,
            s.user_id.0,
            ms(&s.expires_at),
            s.ip_address,
            s.user_agent,
            ms(&s.created_at),
            ms(&s.updated_at),
            s.active_organization_id.as_ref().map(|x| &x.0),
            s.active_team_id.as_ref().map(|x| &x.0),
            s.impersonated_by.as_ref().map(|x| &x.0)
        ],
    )
    .map_err(|e| match e {
        // The user was deleted meanwhile: its sessions must not come back.
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY =>
        {
            StoreError::NotFound
        }
        e => unique("token")(e),
    })?;
    Ok(())
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create_session(&self, session: &Session, events: &[Event]) -> StoreResult<()> {
        let s = session.clone();
        self.write_with(events, always, move |c| insert_session(c, &s))
            .await
    }

    async fn get_session(&self, token: &str) -> StoreResult<Option<Session>> {
        let known = self.inner.known.as_deref();
        let tag = match known.map(|k| k.get(token)) {
            Some(Ok(session)) => return Ok(Some(session)),
            Some(Err(tag)) => tag,
            None => None,
        };
        let t = token.to_owned();
        let session = self
            .point_read(move |c| one(c, &GET_SESSION, [t], session_row))
            .await?;
        match (known, tag, &session) {
            (Some(k), Some(tag), Some(s)) => k.fill(s, None, tag),
            (Some(k), _, None) => k.forget(token),
            _ => {}
        }
        Ok(session)
    }

    async fn get_session_with_user(
        &self,
        token: &str,
    ) -> StoreResult<Option<(Session, Option<User>)>> {
        let known = self.inner.known.as_deref();
        let tag = match known.map(|k| k.get_with_user(token)) {
            Some(Ok(found)) => return Ok(Some(found)),
            Some(Err(tag)) => tag,
            None => None,
        };
        let t = token.to_owned();
        // One statement (session joined to its user), usually on the calling task.
        let found = self
            .point_read(move |c| one(c, &GET_SESSION_WITH_USER, [t], session_with_user_row))
            .await?;
        match (known, tag, &found) {
            (Some(k), Some(tag), Some((s, u))) => k.fill(s, Some(u.as_ref()), tag),
            (Some(k), _, None) => k.forget(token),
            _ => {}
        }
        Ok(found)
    }

    async fn list_sessions(&self, user_id: &UserId) -> StoreResult<Vec<Session>> {
        let id = user_id.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {SESSION_COLS} FROM sessions WHERE user_id = ?1 ORDER BY created_at, id"),
                [id],
                session_row,
            )
        })
        .await
    }

    async fn update_session(&self, session: &Session) -> StoreResult<()> {
        let s = session.clone();
        self.write(move |c| {
            let n = c
                .exec(
                    "UPDATE sessions SET expires_at=?2, ip_address=?3, user_agent=?4, \
                     updated_at=?5, active_organization_id=?6, active_team_id=?7, \
                     impersonated_by=?8 WHERE token=?1",
                    params![
                        s.token,
                        ms(&s.expires_at),
                        s.ip_address,
                        s.user_agent,
                        ms(&s.updated_at),
                        s.active_organization_id.as_ref().map(|x| &x.0),
                        s.active_team_id.as_ref().map(|x| &x.0),
                        s.impersonated_by.as_ref().map(|x| &x.0)
                    ],
                )
                .map_err(map_err)?;
            touched(n)
        })
        .await
    }

    async fn delete_session(&self, token: &str, events: &[Event]) -> StoreResult<bool> {
        let t = token.to_owned();
        // Its events only when it was there: a session revoked twice is revoked once.
        self.write_with(
            events,
            |deleted: &bool| *deleted,
            move |c| {
                Ok(c.exec("DELETE FROM sessions WHERE token = ?1", [t])
                    .map_err(map_err)?
                    > 0)
            },
        )
        .await
    }

    async fn delete_user_sessions(
        &self,
        user_id: &UserId,
        keep: Option<&str>,
        events: &[Event],
    ) -> StoreResult<u64> {
        let id = user_id.0.clone();
        let keep = keep.map(str::to_owned);
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
                    "DELETE FROM sessions WHERE user_id = ?1 AND (?2 IS NULL OR token <> ?2)",
                    params![id, keep],
                )
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }

    async fn purge_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            let n = c
                .exec("DELETE FROM sessions WHERE expires_at <= ?1", [ms(&now)])
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}
