//! Members of organizations: reads (every write is an `OrgChange`, applied in `organizations.rs`).
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl MemberStore for SqliteStore {
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        let (o, u) = (org.0.clone(), user.0.clone());
        self.point_read(move |c| one(c, &GET_MEMBER, [o, u], member_row))
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
            // One snapshot for every statement (and one WAL read lock instead of one per
            // statement).
            snapshot(c, |c| {
                let Some(organization) = one(c, &GET_ORGANIZATION, [&o], org_row)? else {
                    return Ok(None);
                };
                let viewer = one(c, &GET_MEMBER, [&o, &q.viewer.0], member_row)?;
                let members = all(
                    c,
                    &MEMBERS_WITH_USERS,
                    params![o, i64::from(q.limit), i64::from(q.offset)],
                    member_with_user_row,
                )?;
                let total_members =
                    one(c, COUNT_MEMBERS, [&o], |r| r.get::<_, i64>(0))?.unwrap_or_default() as u64;
                let (invitations, teams) = if q.details {
                    let invitations = all(c, &ORG_INVITATIONS, [&o], invitation_row)?;
                    let teams = all(c, &ORG_TEAMS, [&o], |r| {
                        Ok((team_row(r)?, r.get::<_, i64>(TEAM_COL_COUNT)? as u32))
                    })?;
                    (invitations, teams)
                } else {
                    (Vec::new(), Vec::new())
                };
                Ok(Some(OrganizationView {
                    organization,
                    viewer,
                    members,
                    total_members,
                    invitations,
                    teams,
                }))
            })
        })
        .await
    }

    async fn count_members(&self, org: &OrgId) -> StoreResult<u64> {
        let o = org.0.clone();
        self.read(move |c| {
            c.query_row(COUNT_MEMBERS, [o], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(map_err)
        })
        .await
    }
}

/// The statements of the organization view, their text made once.
static GET_ORGANIZATION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {ORG_COLS} FROM organizations WHERE id = ?1"));
static GET_MEMBER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 AND user_id = ?2")
});
const COUNT_MEMBERS: &str = "SELECT COUNT(*) FROM members WHERE organization_id = ?1";
static ORG_INVITATIONS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {INVITATION_COLS} FROM invitations WHERE organization_id = ?1 \
         ORDER BY created_at, id"
    )
});
static ORG_TEAMS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {TEAM_COLS}, (SELECT COUNT(*) FROM team_members tm \
         WHERE tm.team_id = teams.id) FROM teams WHERE organization_id = ?1 \
         ORDER BY created_at, id"
    )
});

/// Runs `f` in one read transaction (one snapshot), its `BEGIN` and `COMMIT` prepared once per
/// connection; the transaction is rolled back when `f` or the commit fails.
fn snapshot<T>(c: &Connection, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
    // Already in one: the reader's kept snapshot (see `snapshot.rs`).
    if !c.is_autocommit() {
        return f(c);
    }
    let run = |sql: &str| {
        c.prepare_cached(sql)
            .and_then(|mut st| st.execute([]))
            .map_err(map_err)
    };
    run("BEGIN")?;
    let r = f(c).and_then(|v| run("COMMIT").map(|_| v));
    if r.is_err() && !c.is_autocommit() {
        // A read transaction holds no change: ending it cannot lose anything.
        let _ = c.execute_batch("ROLLBACK");
    }
    r
}
