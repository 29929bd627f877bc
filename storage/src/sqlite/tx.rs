//! The writer's transaction statements and savepoints, each prepared once per connection.
use super::{map_err, Connection, StoreResult};

/// Runs one of the writer's transaction statements, prepared once.
pub(super) fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// A savepoint whose statements come from the connection's statement cache (rusqlite's
/// `Savepoint` parses `SAVEPOINT` and `RELEASE` again on every use, on the writer's thread):
/// what was written through it is rolled back when it is dropped before [`Savepoint::commit`].
/// Nested ones share the name: SQLite releases and rolls back to the innermost of that name.
pub(super) struct Savepoint<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Savepoint<'c> {
    pub(super) fn new(conn: &'c Connection) -> StoreResult<Self> {
        control(conn, "SAVEPOINT part").map_err(map_err)?;
        Ok(Self { conn, open: true })
    }

    pub(super) fn commit(mut self) -> StoreResult<()> {
        self.open = false;
        control(self.conn, "RELEASE part").map_err(map_err)
    }
}

impl std::ops::Deref for Savepoint<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if self.open {
            // Nothing to do if it fails: the transaction around it ended (SQLite ended it).
            let _ = control(self.conn, "ROLLBACK TO part")
                .and_then(|()| control(self.conn, "RELEASE part"));
        }
    }
}

/// Runs `f` all or nothing inside the writer's transaction: an error rolls back what it wrote.
pub(super) fn atomically<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Connection) -> StoreResult<T>,
) -> StoreResult<T> {
    control(conn, "SAVEPOINT atomically").map_err(map_err)?;
    match f(conn) {
        Ok(v) => {
            control(conn, "RELEASE atomically").map_err(map_err)?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO atomically; RELEASE atomically");
            Err(e)
        }
    }
}
