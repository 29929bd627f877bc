//! The embedded backend: one SQLite file (WAL) in the data directory.
//!
//! SQLite calls block, so every query runs on tokio's blocking pool, never on an async worker.
//! Writes go through one connection (SQLite has a single writer anyway; a mutex queues them
//! instead of letting them fail with SQLITE_BUSY); reads use a small pool of read connections,
//! which WAL lets run beside the writer.
use crate::*;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Schema migrations, applied in order at start; `PRAGMA user_version` records how many ran.
const MIGRATIONS: &[&str] = &[
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
];

const READERS: usize = 4;

struct Inner {
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
}

/// The SQLite store. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(e.to_string())
}

fn map_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
        {
            StoreError::Unavailable(e.to_string())
        }
        _ => internal(e),
    }
}

/// Maps a UNIQUE violation to `Conflict(what)`, anything else as usual.
fn unique(what: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation
                && f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            StoreError::Conflict(what)
        }
        _ => map_err(e),
    }
}

fn ms(t: &DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}
fn ms_opt(t: &Option<DateTime<Utc>>) -> Option<i64> {
    t.as_ref().map(ms)
}
fn ts(v: i64) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(v).ok_or(rusqlite::Error::IntegralValueOutOfRange(0, v))
}
fn ts_opt(v: Option<i64>) -> rusqlite::Result<Option<DateTime<Utc>>> {
    v.map(ts).transpose()
}

fn open(path: &Path, flags: OpenFlags) -> StoreResult<Connection> {
    let conn = Connection::open_with_flags(path, flags).map_err(map_err)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(map_err)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
    )
    .map_err(map_err)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path))
            .await
            .map_err(internal)?
    }

    fn open_blocking(path: &Path) -> StoreResult<Self> {
        let mut writer = open(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        migrate(&mut writer)?;
        let readers = (0..READERS)
            .map(|_| {
                open(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map(Mutex::new)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Self {
            inner: Arc::new(Inner {
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
            }),
        })
    }

    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock().map_err(internal)?;
            f(&mut conn)
        })
        .await
        .map_err(internal)?
    }

    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let n = inner.readers.len();
            let start = inner.next_reader.fetch_add(1, Ordering::Relaxed);
            // Take a free reader if there is one, else wait for the round-robin choice.
            for i in 0..n {
                if let Ok(conn) = inner.readers[(start + i) % n].try_lock() {
                    return f(&conn);
                }
            }
            let conn = inner.readers[start % n].lock().map_err(internal)?;
            f(&conn)
        })
        .await
        .map_err(internal)?
    }
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(map_err)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let tx = conn.transaction().map_err(map_err)?;
        tx.execute_batch(sql).map_err(map_err)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
            .map_err(map_err)?;
        tx.commit().map_err(map_err)?;
        tracing::info!(migration = i + 1, "applied storage migration");
    }
    Ok(())
}

const USER_COLS: &str = "id, email, email_verified, name, image, role, banned, ban_reason, \
                         ban_expires, created_at, updated_at";
fn user_row(r: &Row) -> rusqlite::Result<User> {
    Ok(User {
        id: UserId(r.get(0)?),
        email: r.get(1)?,
        email_verified: r.get(2)?,
        name: r.get(3)?,
        image: r.get(4)?,
        role: r.get(5)?,
        banned: r.get(6)?,
        ban_reason: r.get(7)?,
        ban_expires: ts_opt(r.get(8)?)?,
        created_at: ts(r.get(9)?)?,
        updated_at: ts(r.get(10)?)?,
    })
}

const ACCOUNT_COLS: &str = "id, user_id, provider_id, account_id, password, access_token, \
    refresh_token, id_token, access_token_expires_at, refresh_token_expires_at, scope, \
    created_at, updated_at";
fn account_row(r: &Row) -> rusqlite::Result<Account> {
    Ok(Account {
        id: AccountId(r.get(0)?),
        user_id: UserId(r.get(1)?),
        provider_id: r.get(2)?,
        account_id: r.get(3)?,
        password: r.get(4)?,
        access_token: r.get(5)?,
        refresh_token: r.get(6)?,
        id_token: r.get(7)?,
        access_token_expires_at: ts_opt(r.get(8)?)?,
        refresh_token_expires_at: ts_opt(r.get(9)?)?,
        scope: r.get(10)?,
        created_at: ts(r.get(11)?)?,
        updated_at: ts(r.get(12)?)?,
    })
}
fn insert_account(conn: &Connection, a: &Account) -> StoreResult<()> {
    conn.execute(
        &format!("INSERT INTO accounts ({ACCOUNT_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"),
        params![
            a.id.0, a.user_id.0, a.provider_id, a.account_id, a.password, a.access_token,
            a.refresh_token, a.id_token, ms_opt(&a.access_token_expires_at),
            ms_opt(&a.refresh_token_expires_at), a.scope, ms(&a.created_at), ms(&a.updated_at)
        ],
    )
    .map_err(unique("account"))?;
    Ok(())
}

const SESSION_COLS: &str = "id, token, user_id, expires_at, ip_address, user_agent, created_at, \
    updated_at, active_organization_id, active_team_id, impersonated_by";
fn session_row(r: &Row) -> rusqlite::Result<Session> {
    Ok(Session {
        id: SessionId(r.get(0)?),
        token: r.get(1)?,
        user_id: UserId(r.get(2)?),
        expires_at: ts(r.get(3)?)?,
        ip_address: r.get(4)?,
        user_agent: r.get(5)?,
        created_at: ts(r.get(6)?)?,
        updated_at: ts(r.get(7)?)?,
        active_organization_id: r.get::<_, Option<String>>(8)?.map(OrgId),
        active_team_id: r.get::<_, Option<String>>(9)?.map(TeamId),
        impersonated_by: r.get::<_, Option<String>>(10)?.map(UserId),
    })
}

const VERIFICATION_COLS: &str = "id, identifier, value, expires_at, created_at, updated_at";
fn verification_row(r: &Row) -> rusqlite::Result<Verification> {
    Ok(Verification {
        id: VerificationId(r.get(0)?),
        identifier: r.get(1)?,
        value: r.get(2)?,
        expires_at: ts(r.get(3)?)?,
        created_at: ts(r.get(4)?)?,
        updated_at: ts(r.get(5)?)?,
    })
}

const ORG_COLS: &str = "id, name, slug, logo, metadata, created_at";
fn org_row(r: &Row) -> rusqlite::Result<Organization> {
    Ok(Organization {
        id: OrgId(r.get(0)?),
        name: r.get(1)?,
        slug: r.get(2)?,
        logo: r.get(3)?,
        metadata: r.get(4)?,
        created_at: ts(r.get(5)?)?,
    })
}

const MEMBER_COLS: &str = "id, organization_id, user_id, role, team_id, created_at";
fn member_row(r: &Row) -> rusqlite::Result<Member> {
    Ok(Member {
        id: MemberId(r.get(0)?),
        organization_id: OrgId(r.get(1)?),
        user_id: UserId(r.get(2)?),
        role: r.get(3)?,
        team_id: r.get::<_, Option<String>>(4)?.map(TeamId),
        created_at: ts(r.get(5)?)?,
    })
}
fn insert_member(conn: &Connection, m: &Member) -> StoreResult<()> {
    conn.execute(
        &format!("INSERT INTO members ({MEMBER_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"),
        params![
            m.id.0,
            m.organization_id.0,
            m.user_id.0,
            m.role,
            m.team_id.as_ref().map(|t| &t.0),
            ms(&m.created_at)
        ],
    )
    .map_err(unique("member"))?;
    Ok(())
}

const INVITATION_COLS: &str =
    "id, organization_id, email, role, status, team_id, inviter_id, expires_at, created_at";
fn invitation_row(r: &Row) -> rusqlite::Result<Invitation> {
    let status: String = r.get(4)?;
    Ok(Invitation {
        id: InvitationId(r.get(0)?),
        organization_id: OrgId(r.get(1)?),
        email: r.get(2)?,
        role: r.get(3)?,
        status: InvitationStatus::parse(&status).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                4,
                rusqlite::types::Type::Text,
                format!("unknown invitation status {status:?}").into(),
            )
        })?,
        team_id: r.get::<_, Option<String>>(5)?.map(TeamId),
        inviter_id: UserId(r.get(6)?),
        expires_at: ts(r.get(7)?)?,
        created_at: ts(r.get(8)?)?,
    })
}

const TEAM_COLS: &str = "id, name, organization_id, created_at, updated_at";
fn team_row(r: &Row) -> rusqlite::Result<Team> {
    Ok(Team {
        id: TeamId(r.get(0)?),
        name: r.get(1)?,
        organization_id: OrgId(r.get(2)?),
        created_at: ts(r.get(3)?)?,
        updated_at: ts_opt(r.get(4)?)?,
    })
}

fn team_member_row(r: &Row) -> rusqlite::Result<TeamMember> {
    Ok(TeamMember {
        id: TeamMemberId(r.get(0)?),
        team_id: TeamId(r.get(1)?),
        user_id: UserId(r.get(2)?),
        created_at: ts(r.get(3)?)?,
    })
}

const ROLE_COLS: &str = "id, organization_id, role, permission, created_at, updated_at";
fn role_row(r: &Row) -> rusqlite::Result<OrganizationRole> {
    Ok(OrganizationRole {
        id: RoleId(r.get(0)?),
        organization_id: OrgId(r.get(1)?),
        role: r.get(2)?,
        permission: r.get(3)?,
        created_at: ts(r.get(4)?)?,
        updated_at: ts_opt(r.get(5)?)?,
    })
}

/// One row by a query, or `None`.
fn one<T>(
    conn: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
    f: fn(&Row) -> rusqlite::Result<T>,
) -> StoreResult<Option<T>> {
    conn.prepare_cached(sql)
        .map_err(map_err)?
        .query_row(p, f)
        .optional()
        .map_err(map_err)
}

/// All rows of a query.
fn all<T>(
    conn: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
    f: fn(&Row) -> rusqlite::Result<T>,
) -> StoreResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
    let rows = stmt.query_map(p, f).map_err(map_err)?;
    rows.collect::<rusqlite::Result<Vec<T>>>().map_err(map_err)
}

/// `NotFound` when a write touched no row.
fn touched(n: usize) -> StoreResult<()> {
    if n == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}

#[async_trait]
impl UserStore for SqliteStore {
    async fn create_user(&self, user: &User, account: Option<&Account>) -> StoreResult<()> {
        let u = user.clone();
        let a = account.cloned();
        self.write(move |conn| {
            let tx = conn.transaction().map_err(map_err)?;
            tx.execute(
                &format!(
                    "INSERT INTO users ({USER_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
                ),
                params![
                    u.id.0,
                    u.email,
                    u.email_verified,
                    u.name,
                    u.image,
                    u.role,
                    u.banned,
                    u.ban_reason,
                    ms_opt(&u.ban_expires),
                    ms(&u.created_at),
                    ms(&u.updated_at)
                ],
            )
            .map_err(unique("email"))?;
            if let Some(a) = &a {
                insert_account(&tx, a)?;
            }
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn get_user(&self, id: &UserId) -> StoreResult<Option<User>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {USER_COLS} FROM users WHERE id = ?1"),
                [id],
                user_row,
            )
        })
        .await
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let email = email.to_lowercase();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {USER_COLS} FROM users WHERE email = ?1"),
                [email],
                user_row,
            )
        })
        .await
    }

    async fn update_user(&self, user: &User) -> StoreResult<()> {
        let u = user.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE users SET email=?2, email_verified=?3, name=?4, image=?5, role=?6, \
                     banned=?7, ban_reason=?8, ban_expires=?9, updated_at=?10 WHERE id=?1",
                    params![
                        u.id.0,
                        u.email,
                        u.email_verified,
                        u.name,
                        u.image,
                        u.role,
                        u.banned,
                        u.ban_reason,
                        ms_opt(&u.ban_expires),
                        ms(&u.updated_at)
                    ],
                )
                .map_err(unique("email"))?;
            touched(n)
        })
        .await
    }

    async fn delete_user(&self, id: &UserId) -> StoreResult<()> {
        let id = id.0.clone();
        // Foreign keys cascade to sessions, accounts, members and team members; pending
        // single-use tokens that point at the user (reset, delete) go with it.
        self.write(move |c| {
            let tx = c.transaction().map_err(map_err)?;
            let n = tx
                .execute("DELETE FROM users WHERE id = ?1", [&id])
                .map_err(map_err)?;
            touched(n)?;
            tx.execute("DELETE FROM verifications WHERE value = ?1", [&id])
                .map_err(map_err)?;
            tx.commit().map_err(map_err)
        })
        .await
    }
}

#[async_trait]
impl AccountStore for SqliteStore {
    async fn create_account(&self, account: &Account) -> StoreResult<()> {
        let a = account.clone();
        self.write(move |c| insert_account(c, &a)).await
    }

    async fn list_accounts(&self, user_id: &UserId) -> StoreResult<Vec<Account>> {
        let id = user_id.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {ACCOUNT_COLS} FROM accounts WHERE user_id = ?1 ORDER BY created_at, id"),
                [id],
                account_row,
            )
        })
        .await
    }

    async fn get_account_by_provider(
        &self,
        provider_id: &str,
        account_id: &str,
    ) -> StoreResult<Option<Account>> {
        let (p, a) = (provider_id.to_owned(), account_id.to_owned());
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ACCOUNT_COLS} FROM accounts WHERE provider_id = ?1 AND account_id = ?2"),
                [p, a],
                account_row,
            )
        })
        .await
    }

    async fn update_account(&self, account: &Account) -> StoreResult<()> {
        let a = account.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE accounts SET password=?2, access_token=?3, refresh_token=?4, \
                     id_token=?5, access_token_expires_at=?6, refresh_token_expires_at=?7, \
                     scope=?8, updated_at=?9 WHERE id=?1",
                    params![
                        a.id.0,
                        a.password,
                        a.access_token,
                        a.refresh_token,
                        a.id_token,
                        ms_opt(&a.access_token_expires_at),
                        ms_opt(&a.refresh_token_expires_at),
                        a.scope,
                        ms(&a.updated_at)
                    ],
                )
                .map_err(map_err)?;
            touched(n)
        })
        .await
    }

    async fn delete_account(&self, id: &AccountId) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            touched(
                c.execute("DELETE FROM accounts WHERE id = ?1", [id])
                    .map_err(map_err)?,
            )
        })
        .await
    }
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create_session(&self, session: &Session) -> StoreResult<()> {
        let s = session.clone();
        self.write(move |c| {
            c.execute(
                &format!("INSERT INTO sessions ({SESSION_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"),
                params![
                    s.id.0, s.token, s.user_id.0, ms(&s.expires_at), s.ip_address, s.user_agent,
                    ms(&s.created_at), ms(&s.updated_at),
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
        })
        .await
    }

    async fn get_session(&self, token: &str) -> StoreResult<Option<Session>> {
        let t = token.to_owned();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {SESSION_COLS} FROM sessions WHERE token = ?1"),
                [t],
                session_row,
            )
        })
        .await
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
                .execute(
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

    async fn delete_session(&self, token: &str) -> StoreResult<bool> {
        let t = token.to_owned();
        self.write(move |c| {
            Ok(c.execute("DELETE FROM sessions WHERE token = ?1", [t])
                .map_err(map_err)?
                > 0)
        })
        .await
    }

    async fn delete_user_sessions(&self, user_id: &UserId, keep: Option<&str>) -> StoreResult<u64> {
        let id = user_id.0.clone();
        let keep = keep.map(str::to_owned);
        self.write(move |c| {
            let n = c
                .execute(
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
                .execute("DELETE FROM sessions WHERE expires_at <= ?1", [ms(&now)])
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}

#[async_trait]
impl VerificationStore for SqliteStore {
    async fn create_verification(&self, v: &Verification) -> StoreResult<()> {
        let v = v.clone();
        self.write(move |c| {
            c.execute(
                &format!(
                    "INSERT INTO verifications ({VERIFICATION_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"
                ),
                params![
                    v.id.0,
                    v.identifier,
                    v.value,
                    ms(&v.expires_at),
                    ms(&v.created_at),
                    ms(&v.updated_at)
                ],
            )
            .map_err(unique("identifier"))?;
            Ok(())
        })
        .await
    }

    async fn get_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        let i = identifier.to_owned();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {VERIFICATION_COLS} FROM verifications WHERE identifier = ?1"),
                [i],
                verification_row,
            )
        })
        .await
    }

    async fn consume_verification(&self, identifier: &str) -> StoreResult<Option<Verification>> {
        let i = identifier.to_owned();
        // DELETE … RETURNING on the single writer: exactly one caller sees the row.
        self.write(move |c| {
            one(
                c,
                &format!(
                    "DELETE FROM verifications WHERE identifier = ?1 RETURNING {VERIFICATION_COLS}"
                ),
                [i],
                verification_row,
            )
        })
        .await
    }

    async fn delete_verification(&self, identifier: &str) -> StoreResult<bool> {
        let i = identifier.to_owned();
        self.write(move |c| {
            Ok(
                c.execute("DELETE FROM verifications WHERE identifier = ?1", [i])
                    .map_err(map_err)?
                    > 0,
            )
        })
        .await
    }

    async fn purge_expired_verifications(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.write(move |c| {
            let n = c
                .execute(
                    "DELETE FROM verifications WHERE expires_at <= ?1",
                    [ms(&now)],
                )
                .map_err(map_err)?;
            Ok(n as u64)
        })
        .await
    }
}

#[async_trait]
impl OrganizationStore for SqliteStore {
    async fn create_organization(&self, org: &Organization, owner: &Member) -> StoreResult<()> {
        let (o, m) = (org.clone(), owner.clone());
        self.write(move |c| {
            let tx = c.transaction().map_err(map_err)?;
            tx.execute(
                &format!("INSERT INTO organizations ({ORG_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"),
                params![
                    o.id.0,
                    o.name,
                    o.slug,
                    o.logo,
                    o.metadata,
                    ms(&o.created_at)
                ],
            )
            .map_err(unique("slug"))?;
            insert_member(&tx, &m)?;
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn get_organization(&self, id: &OrgId) -> StoreResult<Option<Organization>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ORG_COLS} FROM organizations WHERE id = ?1"),
                [id],
                org_row,
            )
        })
        .await
    }

    async fn get_organization_by_slug(&self, slug: &str) -> StoreResult<Option<Organization>> {
        let s = slug.to_owned();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ORG_COLS} FROM organizations WHERE slug = ?1"),
                [s],
                org_row,
            )
        })
        .await
    }

    async fn update_organization(&self, org: &Organization) -> StoreResult<()> {
        let o = org.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE organizations SET name=?2, slug=?3, logo=?4, metadata=?5 WHERE id=?1",
                    params![o.id.0, o.name, o.slug, o.logo, o.metadata],
                )
                .map_err(unique("slug"))?;
            touched(n)
        })
        .await
    }

    async fn delete_organization(&self, id: &OrgId) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            let tx = c.transaction().map_err(map_err)?;
            // Sessions that had it active lose it (spec §4: deletion clears the active org).
            tx.execute(
                "UPDATE sessions SET active_organization_id = NULL, active_team_id = NULL \
                 WHERE active_organization_id = ?1",
                [&id],
            )
            .map_err(map_err)?;
            let n = tx
                .execute("DELETE FROM organizations WHERE id = ?1", [&id])
                .map_err(map_err)?;
            touched(n)?;
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn list_user_organizations(&self, user_id: &UserId) -> StoreResult<Vec<Organization>> {
        let id = user_id.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT o.id, o.name, o.slug, o.logo, o.metadata, o.created_at FROM organizations o \
                 JOIN members m ON m.organization_id = o.id WHERE m.user_id = ?1 \
                 ORDER BY o.created_at, o.id",
                [id],
                org_row,
            )
        })
        .await
    }

    async fn create_member(&self, member: &Member) -> StoreResult<()> {
        let m = member.clone();
        self.write(move |c| insert_member(c, &m)).await
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        let (o, u) = (org.0.clone(), user.0.clone());
        self.read(move |c| {
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

    async fn get_member_by_id(&self, id: &MemberId) -> StoreResult<Option<Member>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {MEMBER_COLS} FROM members WHERE id = ?1"),
                [id],
                member_row,
            )
        })
        .await
    }

    async fn list_members(&self, org: &OrgId, limit: u32, offset: u32) -> StoreResult<Vec<Member>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE organization_id = ?1 \
                     ORDER BY created_at, id LIMIT ?2 OFFSET ?3"
                ),
                params![o, limit, offset],
                member_row,
            )
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

    async fn update_member_role(&self, id: &MemberId, role: &str) -> StoreResult<()> {
        let (id, role) = (id.0.clone(), role.to_owned());
        self.write(move |c| {
            touched(
                c.execute("UPDATE members SET role = ?2 WHERE id = ?1", [id, role])
                    .map_err(map_err)?,
            )
        })
        .await
    }

    async fn delete_member(&self, id: &MemberId) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            let tx = c.transaction().map_err(map_err)?;
            let m = one(
                &tx,
                &format!("SELECT {MEMBER_COLS} FROM members WHERE id = ?1"),
                [&id],
                member_row,
            )?
            .ok_or(StoreError::NotFound)?;
            tx.execute(
                "DELETE FROM team_members WHERE user_id = ?1 AND team_id IN \
                 (SELECT id FROM teams WHERE organization_id = ?2)",
                [&m.user_id.0, &m.organization_id.0],
            )
            .map_err(map_err)?;
            tx.execute("DELETE FROM members WHERE id = ?1", [&id])
                .map_err(map_err)?;
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn create_invitation(&self, inv: &Invitation) -> StoreResult<()> {
        let i = inv.clone();
        self.write(move |c| {
            c.execute(
                &format!("INSERT INTO invitations ({INVITATION_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)"),
                params![
                    i.id.0, i.organization_id.0, i.email, i.role, i.status.as_str(),
                    i.team_id.as_ref().map(|t| &t.0), i.inviter_id.0, ms(&i.expires_at),
                    ms(&i.created_at)
                ],
            )
            .map_err(unique("invitation"))?;
            Ok(())
        })
        .await
    }

    async fn get_invitation(&self, id: &InvitationId) -> StoreResult<Option<Invitation>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE id = ?1"),
                [id],
                invitation_row,
            )
        })
        .await
    }

    async fn list_invitations(&self, org: &OrgId) -> StoreResult<Vec<Invitation>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                invitation_row,
            )
        })
        .await
    }

    async fn list_invitations_by_email(&self, email: &str) -> StoreResult<Vec<Invitation>> {
        let e = email.to_lowercase();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {INVITATION_COLS} FROM invitations WHERE email = ?1 ORDER BY created_at, id"),
                [e],
                invitation_row,
            )
        })
        .await
    }

    async fn transition_invitation(
        &self,
        id: &InvitationId,
        from: InvitationStatus,
        to: InvitationStatus,
    ) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE invitations SET status = ?3 WHERE id = ?1 AND status = ?2",
                    [&id, from.as_str(), to.as_str()],
                )
                .map_err(map_err)?;
            if n > 0 {
                return Ok(());
            }
            let exists: Option<i64> = c
                .query_row("SELECT 1 FROM invitations WHERE id = ?1", [&id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(map_err)?;
            Err(if exists.is_some() {
                StoreError::ConcurrentModification
            } else {
                StoreError::NotFound
            })
        })
        .await
    }

    async fn create_team(&self, team: &Team) -> StoreResult<()> {
        let t = team.clone();
        self.write(move |c| {
            c.execute(
                &format!("INSERT INTO teams ({TEAM_COLS}) VALUES (?1,?2,?3,?4,?5)"),
                params![
                    t.id.0,
                    t.name,
                    t.organization_id.0,
                    ms(&t.created_at),
                    ms_opt(&t.updated_at)
                ],
            )
            .map_err(unique("team"))?;
            Ok(())
        })
        .await
    }

    async fn get_team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        let id = id.0.clone();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {TEAM_COLS} FROM teams WHERE id = ?1"),
                [id],
                team_row,
            )
        })
        .await
    }

    async fn list_teams(&self, org: &OrgId) -> StoreResult<Vec<Team>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {TEAM_COLS} FROM teams WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                team_row,
            )
        })
        .await
    }

    async fn update_team(&self, team: &Team) -> StoreResult<()> {
        let t = team.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE teams SET name = ?2, updated_at = ?3 WHERE id = ?1",
                    params![t.id.0, t.name, ms_opt(&t.updated_at)],
                )
                .map_err(unique("team"))?;
            touched(n)
        })
        .await
    }

    async fn delete_team(&self, id: &TeamId) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            let tx = c.transaction().map_err(map_err)?;
            tx.execute(
                "UPDATE members SET team_id = NULL WHERE team_id = ?1",
                [&id],
            )
            .map_err(map_err)?;
            tx.execute(
                "UPDATE sessions SET active_team_id = NULL WHERE active_team_id = ?1",
                [&id],
            )
            .map_err(map_err)?;
            touched(
                tx.execute("DELETE FROM teams WHERE id = ?1", [&id])
                    .map_err(map_err)?,
            )?;
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn add_team_member(&self, tm: &TeamMember) -> StoreResult<()> {
        let t = tm.clone();
        self.write(move |c| {
            c.execute(
                "INSERT INTO team_members (id, team_id, user_id, created_at) VALUES (?1,?2,?3,?4)",
                params![t.id.0, t.team_id.0, t.user_id.0, ms(&t.created_at)],
            )
            .map_err(unique("team member"))?;
            Ok(())
        })
        .await
    }

    async fn remove_team_member(&self, team: &TeamId, user: &UserId) -> StoreResult<bool> {
        let (t, u) = (team.0.clone(), user.0.clone());
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM team_members WHERE team_id = ?1 AND user_id = ?2",
                [t, u],
            )
            .map_err(map_err)?
                > 0)
        })
        .await
    }

    async fn list_team_members(&self, team: &TeamId) -> StoreResult<Vec<TeamMember>> {
        let t = team.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT id, team_id, user_id, created_at FROM team_members WHERE team_id = ?1 \
                 ORDER BY created_at, id",
                [t],
                team_member_row,
            )
        })
        .await
    }

    async fn list_user_teams(&self, user: &UserId) -> StoreResult<Vec<Team>> {
        let u = user.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT t.id, t.name, t.organization_id, t.created_at, t.updated_at FROM teams t \
                 JOIN team_members tm ON tm.team_id = t.id WHERE tm.user_id = ?1 \
                 ORDER BY t.created_at, t.id",
                [u],
                team_row,
            )
        })
        .await
    }

    async fn create_role(&self, role: &OrganizationRole) -> StoreResult<()> {
        let r = role.clone();
        self.write(move |c| {
            c.execute(
                &format!("INSERT INTO organization_roles ({ROLE_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"),
                params![
                    r.id.0,
                    r.organization_id.0,
                    r.role,
                    r.permission,
                    ms(&r.created_at),
                    ms_opt(&r.updated_at)
                ],
            )
            .map_err(unique("role"))?;
            Ok(())
        })
        .await
    }

    async fn get_role(&self, org: &OrgId, name: &str) -> StoreResult<Option<OrganizationRole>> {
        let (o, n) = (org.0.clone(), name.to_owned());
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ROLE_COLS} FROM organization_roles WHERE organization_id = ?1 AND role = ?2"),
                [o, n],
                role_row,
            )
        })
        .await
    }

    async fn list_roles(&self, org: &OrgId) -> StoreResult<Vec<OrganizationRole>> {
        let o = org.0.clone();
        self.read(move |c| {
            all(
                c,
                &format!("SELECT {ROLE_COLS} FROM organization_roles WHERE organization_id = ?1 ORDER BY created_at, id"),
                [o],
                role_row,
            )
        })
        .await
    }

    async fn update_role(&self, role: &OrganizationRole) -> StoreResult<()> {
        let r = role.clone();
        self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE organization_roles SET role = ?2, permission = ?3, updated_at = ?4 WHERE id = ?1",
                    params![r.id.0, r.role, r.permission, ms_opt(&r.updated_at)],
                )
                .map_err(unique("role"))?;
            touched(n)
        })
        .await
    }

    async fn delete_role(&self, id: &RoleId) -> StoreResult<()> {
        let id = id.0.clone();
        self.write(move |c| {
            touched(
                c.execute("DELETE FROM organization_roles WHERE id = ?1", [id])
                    .map_err(map_err)?,
            )
        })
        .await
    }
}

#[async_trait]
impl KeyPairStore for SqliteStore {
    async fn create_key_pair(&self, kp: &KeyPair) -> StoreResult<()> {
        let k = kp.clone();
        self.write(move |c| {
            c.execute(
                "INSERT INTO key_pairs (id, public_key, private_key, created_at) VALUES (?1,?2,?3,?4)",
                params![k.id.0, k.public_key, k.private_key, ms(&k.created_at)],
            )
            .map_err(unique("key pair"))?;
            Ok(())
        })
        .await
    }

    async fn list_key_pairs(&self) -> StoreResult<Vec<KeyPair>> {
        self.read(|c| {
            all(
                c,
                "SELECT id, public_key, private_key, created_at FROM key_pairs ORDER BY created_at, id",
                [],
                |r| {
                    Ok(KeyPair {
                        id: KeyPairId(r.get(0)?),
                        public_key: r.get(1)?,
                        private_key: r.get(2)?,
                        created_at: ts(r.get(3)?)?,
                    })
                },
            )
        })
        .await
    }
}
