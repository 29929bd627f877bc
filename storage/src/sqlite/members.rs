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
