//! The store's readiness: whether the file is at this build's schema and can take a write.
use super::*;

/// Writes and commits the header's schema version, unchanged: fails on a read-only file or
/// folder (SQLite otherwise opens such a file read-only without a word, and every later write
/// fails) and on a disk that is full or failing (a commit's frame cannot be written), so the
/// readiness check says so, and says ready again once there is room. Only on a file at this
/// build's schema version (both callers checked it): the value written is the one there.
pub(super) fn probe_write(conn: &Connection) -> rusqlite::Result<()> {
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
            Some("the file is read-only".into()),
        ));
    }
    // One page (the header) in the write-ahead log: what any write needs.
    let wrote = conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; PRAGMA user_version = {}; COMMIT;",
        schema::VERSION
    ));
    // Whatever failed, the connection leaves no transaction open.
    let ended = if conn.is_autocommit() {
        Ok(())
    } else {
        conn.execute_batch("ROLLBACK")
    };
    wrote.and(ended)
}

#[async_trait]
impl HealthStore for SqliteStore {
    async fn check_health(&self) -> StoreResult<()> {
        self.submit(true, |conn| {
            let at = schema::current(conn)?;
            if at > schema::VERSION {
                return Err(schema::newer(at));
            }
            if at < schema::VERSION {
                return Err(StoreError::Internal(format!(
                    "the database is at schema version {at}, this Gatehouse needs {}",
                    schema::VERSION
                )));
            }
            probe_write(conn)
                .map_err(|e| StoreError::Unavailable(format!("the database is not writable: {e}")))
        })?
        .await
    }
}
