//! Whole-table pages by id, for export.
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl ScanStore for SqliteStore {
    async fn scan_users(&self, after: Option<&str>, limit: u32) -> StoreResult<Page<User>> {
        let after = after.unwrap_or_default().to_owned();
        let rows = self
            .read(move |c| {
                all(
                    c,
                    &format!("SELECT {USER_COLS} FROM users WHERE id > ?1 ORDER BY id LIMIT ?2"),
                    params![after, i64::from(limit) + 1],
                    user_row,
                )
            })
            .await?;
        Ok(Page::from_overfetch(rows, limit, |u| u.id.0.clone()))
    }

    async fn scan_organizations(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Organization>> {
        let after = after.unwrap_or_default().to_owned();
        let rows = self
            .read(move |c| {
                all(
                    c,
                    &format!(
                        "SELECT {ORG_COLS} FROM organizations WHERE id > ?1 ORDER BY id LIMIT ?2"
                    ),
                    params![after, i64::from(limit) + 1],
                    org_row,
                )
            })
            .await?;
        Ok(Page::from_overfetch(rows, limit, |o| o.id.0.clone()))
    }
}
