//! Members of organizations: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl MemberStore for SqliteStore {
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        let (o, u) = (org.0.clone(), user.0.clone());
        self.point_read(move |c| {
            one(
                c,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 AND user_id = ?2"
                ),
                [o, u],
                member_row,
            )
        })
        .await
    }
    async fn get_member_by_id(&self, org: &OrgId, id: &MemberId) -> StoreResult<Option<Member>> {
        let (o, id) = (org.0.clone(), id.0.clone());
        self.point_read(move |c| {
            one(
                c,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE id = ?1 AND organization_id = ?2"
                ),
                [id, o],
                member_row,
            )
        })
        .await
    }
    async fn list_members(
        &self,
        org: &OrgId,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Member>> {
        let o = org.0.clone();
        let (ms, id) = match after {
            Some(c) => {
                let (ms, id) = parse_member_cursor(c)?;
                (Some(ms), id)
            }
            None => (None, String::new()),
        };
        let items = self
            .read(move |c| {
                all(
                    c,
                    &format!(
                        "SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 \
                         AND (?2 IS NULL OR (created_at, id) > (?2, ?3)) \
                         ORDER BY created_at, id LIMIT ?4"
                    ),
                    params![o, ms, id, i64::from(limit) + 1],
                    member_row,
                )
            })
            .await?;
        Ok(Page::from_overfetch(items, limit, member_cursor))
    }
    async fn organization_view(
        &self,
        org: &OrgId,
        q: &ViewQuery,
    ) -> StoreResult<Option<OrganizationView>> {
        let (o, q) = (org.0.clone(), q.clone());
        // One trip: every statement on one reader connection (a window of at most `limit`
        // members, and an organization's invitations and teams).
        self.point_read(move |c| {
            // One read transaction: one snapshot for every statement (and one WAL read lock
            // instead of one per statement).
            let tx = c.unchecked_transaction().map_err(map_err)?;
            let c = &*tx;
            let Some(organization) = one(
                c,
                &format!("SELECT {ORG_COLS} FROM organizations WHERE id = ?1"),
                [&o],
                org_row,
            )?
            else {
                return Ok(None);
            };
            let viewer = one(
                c,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 AND user_id = ?2"
                ),
                [&o, &q.viewer.0],
                member_row,
            )?;
            let members = all(
                c,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 \
                     ORDER BY created_at, id LIMIT ?2 OFFSET ?3"
                ),
                params![o, i64::from(q.limit), i64::from(q.offset)],
                member_row,
            )?;
            let ids: Vec<&str> = members.iter().map(|m| m.user_id.0.as_str()).collect();
            let users = super::users::users_by_id(c, &ids)?;
            let total_members = c
                .prepare_cached("SELECT COUNT(*) FROM members WHERE organization_id = ?1")
                .and_then(|mut st| st.query_row([&o], |r| r.get::<_, i64>(0)))
                .map_err(map_err)? as u64;
            let (invitations, teams) = if q.details {
                let invitations = all(
                    c,
                    &format!(
                        "SELECT {INVITATION_COLS} FROM invitations WHERE organization_id = ?1 \
                         ORDER BY created_at, id"
                    ),
                    [&o],
                    invitation_row,
                )?;
                let teams = all(
                    c,
                    &format!(
                        "SELECT {TEAM_COLS}, (SELECT COUNT(*) FROM team_members tm \
                         WHERE tm.team_id = teams.id) FROM teams WHERE organization_id = ?1 \
                         ORDER BY created_at, id"
                    ),
                    [&o],
                    |r| Ok((team_row(r)?, r.get::<_, i64>(TEAM_COL_COUNT)? as u32)),
                )?;
                (invitations, teams)
            } else {
                (Vec::new(), Vec::new())
            };
            let view = OrganizationView {
                organization,
                viewer,
                members: with_users(members, users),
                total_members,
                invitations,
                teams,
            };
            tx.commit().map_err(map_err)?;
            Ok(Some(view))
        })
        .await
    }

    async fn count_members(&self, org: &OrgId) -> StoreResult<u64> {
        let o = org.0.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT COUNT(*) FROM members WHERE organization_id = ?1",
                [o],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(map_err)
        })
        .await
    }
}
