//! Whole-table pages in token order, for export: a full scan of every node, never run on a
//! request path.
use super::organizations::{org_of, STATIC_COLS};
use super::users::{user_of, USER_COLS};
use super::verifications::{verification_of, VERIFICATION_COLS};
use super::*;
use crate::*;
use async_trait::async_trait;

impl ScyllaStore {
    /// Rows of `cols` from `table`, partitions after `after` (by token) first, at most `limit`.
    pub(crate) async fn scan(
        &self,
        cols: &str,
        table: &str,
        key: &str,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<Row>> {
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        match after {
            None => {
                self.rows(
                    &format!("SELECT {cols} FROM {} LIMIT ?", self.t(table)),
                    vec![int(limit)],
                )
                .await
            }
            Some(after) => {
                self.rows(
                    &format!(
                        "SELECT {cols} FROM {} WHERE token({key}) > token(?) LIMIT ?",
                        self.t(table)
                    ),
                    vec![text(after), int(limit)],
                )
                .await
            }
        }
    }
}

/// The next cursor: the last key read, when the page came back full.
fn next_of(rows: &[Row], limit: u32) -> StoreResult<Option<String>> {
    if rows.len() < limit as usize {
        return Ok(None);
    }
    rows.last().map(|r| Cols(r).text(0)).transpose()
}

#[async_trait]
impl ScanStore for ScyllaStore {
    async fn scan_users(&self, after: Option<&str>, limit: u32) -> StoreResult<Page<User>> {
        let rows = self.scan(USER_COLS, "users", "id", after, limit).await?;
        Ok(Page {
            next: next_of(&rows, limit)?,
            items: rows.iter().map(user_of).collect::<StoreResult<_>>()?,
        })
    }

    async fn scan_organizations(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Organization>> {
        let cols = format!("DISTINCT org_id, {STATIC_COLS}");
        let rows = self.scan(&cols, "org_rows", "org_id", after, limit).await?;
        let mut items = Vec::new();
        for r in &rows {
            let c = Cols(r);
            // A deleted organization (no name) is skipped.
            if let Some(o) = org_of(&OrgId(c.text(0)?), &c, 1)? {
                items.push(o);
            }
        }
        Ok(Page {
            next: next_of(&rows, limit)?,
            items,
        })
    }

    async fn scan_verifications(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Verification>> {
        let rows = self
            .scan(
                VERIFICATION_COLS,
                "verifications",
                "identifier",
                after,
                limit,
            )
            .await?;
        let items = rows
            .iter()
            .map(verification_of)
            .collect::<StoreResult<Vec<_>>>()?;
        // The cursor is the partition key, the identifier.
        let next = (items.len() >= limit as usize)
            .then(|| items.last().map(|v| v.identifier.clone()))
            .flatten();
        Ok(Page { next, items })
    }
}
