//! The schema: migrations applied in order at start (`PRAGMA user_version` counts them).
use super::*;
use rusqlite::Connection;

/// The audit log's columns, as each of its tables has them (migrations 5, 7, 8, 14 and the
/// audit file's schema); the id was the primary key until schema 7.
macro_rules! audit_columns {
    () => {
        audit_columns!("TEXT NOT NULL")
    };
    ($id:literal) => {
        concat!(
            "\n    id ",
            $id,
            r#",
    at INTEGER NOT NULL,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    actor_id TEXT,
    user_id TEXT,
    organization_id TEXT,
    target TEXT,
    ip_address TEXT,
    user_agent TEXT,
    request_id TEXT,
    details TEXT NOT NULL DEFAULT '{}'
"#
        )
    };
}

/// Schema migrations, applied in order at start; `PRAGMA user_version` records how many ran.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    email_verified INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL,
    image TEXT,
    role TEXT,
    banned INTEGER NOT NULL DEFAULT 0,
    ban_reason TEXT,
    ban_expires INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    password TEXT,
    access_token TEXT,
    refresh_token TEXT,
    id_token TEXT,
    access_token_expires_at INTEGER,
    refresh_token_expires_at INTEGER,
    scope TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (provider_id, account_id)
);
CREATE INDEX accounts_user ON accounts(user_id);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL,
    ip_address TEXT,
    user_agent TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    active_organization_id TEXT,
    active_team_id TEXT,
    impersonated_by TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expiry ON sessions(expires_at);
CREATE TABLE verifications (
    id TEXT PRIMARY KEY,
    identifier TEXT NOT NULL UNIQUE,
    value TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX verifications_expiry ON verifications(expires_at);
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL UNIQUE,
    logo TEXT,
    metadata TEXT,
    created_at INTEGER NOT NULL
);
CREATE TABLE members (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    team_id TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (organization_id, user_id)
);
CREATE INDEX members_user ON members(user_id);
CREATE TABLE invitations (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    status TEXT NOT NULL,
    team_id TEXT,
    inviter_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX invitations_org ON invitations(organization_id);
CREATE INDEX invitations_email ON invitations(email);
CREATE TABLE teams (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    updated_at INTEGER,
    UNIQUE (organization_id, name)
);
CREATE TABLE team_members (
    id TEXT PRIMARY KEY,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    UNIQUE (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members(user_id);
CREATE TABLE organization_roles (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    permission TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER,
    UNIQUE (organization_id, role)
);
CREATE TABLE key_pairs (
    id TEXT PRIMARY KEY,
    public_key TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
"#,
    // 2: pending tokens are found by the user they point at (deleted with the user).
    "CREATE INDEX verifications_value ON verifications(value);",
    // 3: organizations carry a version (compare-and-set by every write inside them) and the
    // counts the rules check; the columns deletions clear get indexes.
    r#"
ALTER TABLE organizations ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE organizations ADD COLUMN member_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE organizations ADD COLUMN owner_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE organizations ADD COLUMN roles_version INTEGER NOT NULL DEFAULT 0;
UPDATE organizations SET
    member_count = (SELECT COUNT(*) FROM members m WHERE m.organization_id = organizations.id),
    owner_count = (SELECT COUNT(*) FROM members m WHERE m.organization_id = organizations.id
                   AND (',' || replace(m.role, ' ', '') || ',') LIKE '%,owner,%');
CREATE INDEX sessions_active_org ON sessions(active_organization_id)
    WHERE active_organization_id IS NOT NULL;
CREATE INDEX sessions_active_team ON sessions(active_team_id) WHERE active_team_id IS NOT NULL;
CREATE INDEX members_team ON members(team_id) WHERE team_id IS NOT NULL;
CREATE INDEX teams_org ON teams(organization_id);
"#,
    // 4: users carry a version too.
    "ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 0;",
    // 5: the audit log. No foreign keys: events outlive the users and organizations they name
    // (an account's deletion is an event); retention purges them by time.
    concat!(
        "\nCREATE TABLE audit_events (",
        audit_columns!("TEXT PRIMARY KEY"),
        r#");
CREATE INDEX audit_at ON audit_events(at, id);
CREATE INDEX audit_actor ON audit_events(actor_id, at, id) WHERE actor_id IS NOT NULL;
CREATE INDEX audit_user ON audit_events(user_id, at, id) WHERE user_id IS NOT NULL;
CREATE INDEX audit_org ON audit_events(organization_id, at, id) WHERE organization_id IS NOT NULL;
"#
    ),
    // 6: rate-limit counters shared by the processes on this file (`rate_limit.storage =
    // "store"`): one row per key (its SHA-256) with its window's count and end; housekeeping
    // deletes the ended ones.
    r#"
CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    resets_at INTEGER NOT NULL
) WITHOUT ROWID;
"#,
    // 7: the audit log without an index of its own on `id`. The id is random, so each event
    // wrote one more page at a random place of that index (of all the audit log's page writes,
    // the one the table's other keys do not share); an event is found by `(at, id)`, which
    // stays unique. Rows are copied oldest first, so the table stays in time order.
    concat!(
        "\nCREATE TABLE audit_events_7 (",
        audit_columns!(),
        r#");
INSERT INTO audit_events_7 (id, at, action, outcome, reason, actor_id, user_id, organization_id,
    target, ip_address, user_agent, request_id, details)
SELECT id, at, action, outcome, reason, actor_id, user_id, organization_id,
    target, ip_address, user_agent, request_id, details
FROM audit_events ORDER BY at, id;
DROP TABLE audit_events;
ALTER TABLE audit_events_7 RENAME TO audit_events;
CREATE UNIQUE INDEX audit_at ON audit_events(at, id);
CREATE INDEX audit_actor ON audit_events(actor_id, at, id) WHERE actor_id IS NOT NULL;
CREATE INDEX audit_user ON audit_events(user_id, at, id) WHERE user_id IS NOT NULL;
CREATE INDEX audit_org ON audit_events(organization_id, at, id) WHERE organization_id IS NOT NULL;
"#
    ),
    // 8: new audit events are appended to `audit_recent`, which has no index by actor, user or
    // organization, and moved under `audit_events`' indexes in batches (see `audit.rs`):
    // appended one at a time, each event wrote a page of each of those three indexes; moved a
    // batch at a time, the events of one actor, user or organization share their pages.
    concat!(
        "\nCREATE TABLE audit_recent (",
        audit_columns!(),
        ");\nCREATE UNIQUE INDEX audit_recent_at ON audit_recent(at, id);\n"
    ),
    // 9: the event stream (see `events.rs`): each decision's domain and mail events, written
    // in its transaction, in commit order; and each consumer's lease and progress.
    r#"
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    at INTEGER NOT NULL,
    topic TEXT NOT NULL,
    aggregate TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX events_topic ON events(topic, seq);
CREATE TABLE event_consumers (
    consumer TEXT NOT NULL,
    shard INTEGER NOT NULL,
    holder TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0,
    position TEXT,
    PRIMARY KEY (consumer, shard)
);
"#,
    // 10: the two-factor plugin: whether a user's second factor is on, and the factor itself
    // (a sealed TOTP secret, hashed backup codes, the last TOTP step used).
    r#"
ALTER TABLE users ADD COLUMN two_factor_enabled INTEGER NOT NULL DEFAULT 0;
CREATE TABLE two_factors (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    secret TEXT NOT NULL,
    backup_codes TEXT NOT NULL,
    last_step INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL
);
"#,
    // 11: the passkey plugin: WebAuthn credentials, several per user, each registered once.
    r#"
CREATE TABLE passkeys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT,
    credential_id TEXT NOT NULL UNIQUE,
    public_key TEXT NOT NULL,
    credential TEXT NOT NULL,
    counter INTEGER NOT NULL,
    device_type TEXT NOT NULL,
    backed_up INTEGER NOT NULL,
    transports TEXT NOT NULL,
    aaguid TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_used_at INTEGER,
    version INTEGER NOT NULL
);
CREATE INDEX passkeys_user ON passkeys(user_id, created_at);
"#,
    // 12: the api-key plugin: keys by the hash of the key, listed by what owns them.
    r#"
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    config_id TEXT NOT NULL,
    name TEXT,
    start TEXT,
    prefix TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    organization_id TEXT,
    reference_id TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_request INTEGER,
    request_count INTEGER NOT NULL,
    remaining INTEGER,
    refill_amount INTEGER,
    refill_interval INTEGER,
    last_refill_at INTEGER,
    rate_limit_enabled INTEGER NOT NULL,
    rate_limit_time_window INTEGER,
    rate_limit_max INTEGER,
    permissions TEXT,
    metadata TEXT,
    version INTEGER NOT NULL
);
CREATE INDEX api_keys_reference ON api_keys(reference_id, created_at);
CREATE INDEX api_keys_expiry ON api_keys(expires_at) WHERE expires_at IS NOT NULL;
"#,
    // 13: webhooks: endpoints by scope, deliveries by endpoint (newest first) and by when
    // they are due; each row's document holds the rest.
    r#"
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX webhooks_scope ON webhooks(scope, created_at);
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    next_at INTEGER,
    holder TEXT,
    lease_until INTEGER,
    doc TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries(webhook_id, seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries(lease_until)
    WHERE status = 'pending' AND holder IS NOT NULL;
"#,
    // 14: the audit log's indexed events live in a file of their own (`audit.rs`; copied
    // there first, see [`migrate`]), and `audit_recent`'s row numbers are never used twice
    // (a move deletes the rows up to the last one it copied, in a later transaction: a number
    // used again would name an event it never copied).
    concat!(
        r#"
DROP TABLE IF EXISTS audit_events;
CREATE TABLE audit_recent_14 (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
"#,
        audit_columns!(),
        r#");
INSERT INTO audit_recent_14 (id, at, action, outcome, reason, actor_id, user_id,
    organization_id, target, ip_address, user_agent, request_id, details)
SELECT id, at, action, outcome, reason, actor_id, user_id, organization_id,
    target, ip_address, user_agent, request_id, details
FROM audit_recent ORDER BY rowid;
DROP TABLE audit_recent;
ALTER TABLE audit_recent_14 RENAME TO audit_recent;
CREATE UNIQUE INDEX audit_recent_at ON audit_recent(at, id);
"#
    ),
    // 15: a delivery's body has a column of its own, written once when the delivery is made
    // (its document, rewritten at each attempt, no longer carries it).
    r#"
ALTER TABLE webhook_deliveries ADD COLUMN body TEXT;
UPDATE webhook_deliveries SET body = json_extract(doc, '$.body'), doc = json_remove(doc, '$.body');
"#,
];

/// The migration that drops the audit log's indexed table from the main file (14).
const AUDIT_FILE_MIGRATION: usize = 13;

/// The audit log's own file (attached as `audit`): its events under their indexes. Made when
/// missing, each time the store opens (a lost file costs its events, not the server).
pub(super) const AUDIT_FILE_SCHEMA: &str = concat!(
    r#"
PRAGMA audit.journal_mode = WAL;
PRAGMA audit.synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS audit.audit_events (
"#,
    audit_columns!(),
    r#");
CREATE UNIQUE INDEX IF NOT EXISTS audit.audit_at ON audit_events(at, id);
CREATE INDEX IF NOT EXISTS audit.audit_actor ON audit_events(actor_id, at, id)
    WHERE actor_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit.audit_user ON audit_events(user_id, at, id)
    WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit.audit_org ON audit_events(organization_id, at, id)
    WHERE organization_id IS NOT NULL;
"#
);

/// Refuses a file a newer Gatehouse wrote (before anything is written beside it).
pub(super) fn refuse_newer(conn: &Connection) -> StoreResult<()> {
    let version = current(conn)?;
    if version > MIGRATIONS.len() as i64 {
        return Err(newer(version));
    }
    Ok(())
}

/// Copies the main file's indexed audit events into the audit file (`audit`: a connection
/// with it attached), in a transaction of their own that writes only the audit file: the
/// main file's table is dropped by the next migration, after this one committed (a
/// transaction over both files is not atomic in WAL mode, and would commit the main file
/// first). Run again after a crash, it copies nothing twice.
fn copy_audit_to_file(audit: &mut Connection) -> StoreResult<()> {
    let tx = audit.transaction().map_err(map_err)?;
    let there: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'audit_events'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(map_err)?;
    if there.is_some() {
        let cols = super::audit::AUDIT_COLS;
        tx.execute(
            &format!(
                "INSERT OR IGNORE INTO audit.audit_events ({cols}) \
                 SELECT {cols} FROM main.audit_events ORDER BY at, id"
            ),
            [],
        )
        .map_err(map_err)?;
    }
    tx.commit().map_err(map_err)
}

/// Applies the pending migrations on `conn`; `audit` is a connection to the same file with the
/// audit log's file attached (see [`copy_audit_to_file`]).
pub(super) fn migrate(conn: &mut Connection, audit: &mut Connection) -> StoreResult<()> {
    refuse_newer(conn)?;
    let version = current(conn)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        if i == AUDIT_FILE_MIGRATION {
            copy_audit_to_file(audit)?;
        }
        let tx = conn.transaction().map_err(map_err)?;
        tx.execute_batch(sql).map_err(map_err)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
            .map_err(map_err)?;
        tx.commit().map_err(map_err)?;
        tracing::info!(migration = i + 1, "applied storage migration");
    }
    Ok(())
}

/// The schema version recorded in the file (how many migrations ran).
pub(super) fn current(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(map_err)
}

/// This build's schema version.
pub(super) const VERSION: i64 = MIGRATIONS.len() as i64;

/// A file written by a newer Gatehouse (a rollback): its schema is not this build's to use.
pub(super) fn newer(at: i64) -> StoreError {
    StoreError::Internal(format!(
        "the database holds schema version {at}, newer than this Gatehouse's {VERSION}: \
         refusing to use it (run the newer Gatehouse, or restore a backup made before it)"
    ))
}

#[cfg(test)]
mod tests;
