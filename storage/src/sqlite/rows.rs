//! Column lists and row mappers of every table, and the inserts more than one file needs.
use super::*;
use crate::*;
use rusqlite::{params, Connection, Row};

pub(super) const USER_COLS: &str =
    "id, email, email_verified, name, image, role, banned, ban_reason, \
                         ban_expires, created_at, updated_at, version, two_factor_enabled";

/// The two reads of every authenticated request, their text made once.
pub(super) static GET_USER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {USER_COLS} FROM users WHERE id = ?1"));
pub(super) static GET_SESSION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {SESSION_COLS} FROM sessions WHERE token = ?1"));

pub(super) fn user_row(r: &Row) -> rusqlite::Result<User> {
    user_row_at(r, 0)
}

/// A user whose [`USER_COLS`] start at column `at` of the row (after a joined table's).
pub(super) fn user_row_at(r: &Row, at: usize) -> rusqlite::Result<User> {
    Ok(User {
        id: UserId(r.get(at)?),
        email: r.get(at + 1)?,
        email_verified: r.get(at + 2)?,
        name: r.get(at + 3)?,
        image: r.get(at + 4)?,
        role: r.get(at + 5)?,
        banned: r.get(at + 6)?,
        ban_reason: r.get(at + 7)?,
        ban_expires: ts_opt(r.get(at + 8)?)?,
        created_at: ts(r.get(at + 9)?)?,
        updated_at: ts(r.get(at + 10)?)?,
        version: r.get::<_, i64>(at + 11)? as u64,
        two_factor_enabled: r.get(at + 12)?,
    })
}

pub(super) const ACCOUNT_COLS: &str =
    "id, user_id, provider_id, account_id, password, access_token, \
    refresh_token, id_token, access_token_expires_at, refresh_token_expires_at, scope, \
    created_at, updated_at";

pub(super) fn account_row(r: &Row) -> rusqlite::Result<Account> {
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

pub(super) fn insert_account(conn: &Connection, a: &Account) -> StoreResult<()> {
    conn.exec(
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

pub(super) const SESSION_COLS: &str =
    "id, token, user_id, expires_at, ip_address, user_agent, created_at, \
    updated_at, active_organization_id, active_team_id, impersonated_by";

pub(super) fn session_row(r: &Row) -> rusqlite::Result<Session> {
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

/// How many columns [`SESSION_COLS`] names.
const SESSION_COL_COUNT: usize = col_count(SESSION_COLS);

/// A session by token with its user (`NULL`s when the user row is gone), in one statement: one
/// WAL read lock instead of one per statement.
pub(super) static GET_SESSION_WITH_USER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| {
        format!(
            "SELECT {}, {} FROM sessions s LEFT JOIN users u ON u.id = s.user_id \
             WHERE s.token = ?1",
            qualified("s", SESSION_COLS),
            qualified("u", USER_COLS)
        )
    });

/// A row of [`GET_SESSION_WITH_USER`].
pub(super) fn session_with_user_row(r: &Row) -> rusqlite::Result<(Session, Option<User>)> {
    with_user(r, session_row, SESSION_COL_COUNT)
}

/// A row of a table joined (`LEFT JOIN`) to its user, whose columns start at `at`.
fn with_user<T>(
    r: &Row,
    first: fn(&Row) -> rusqlite::Result<T>,
    at: usize,
) -> rusqlite::Result<(T, Option<User>)> {
    let user = match r.get_ref(at)? {
        rusqlite::types::ValueRef::Null => None,
        _ => Some(user_row_at(r, at)?),
    };
    Ok((first(r)?, user))
}

pub(super) const VERIFICATION_COLS: &str =
    "id, identifier, value, expires_at, created_at, updated_at";

pub(super) fn verification_row(r: &Row) -> rusqlite::Result<Verification> {
    Ok(Verification {
        id: VerificationId(r.get(0)?),
        identifier: r.get(1)?,
        value: r.get(2)?,
        expires_at: ts(r.get(3)?)?,
        created_at: ts(r.get(4)?)?,
        updated_at: ts(r.get(5)?)?,
    })
}

pub(super) const ORG_COLS: &str =
    "id, name, slug, logo, metadata, created_at, version, member_count, owner_count, roles_version";

pub(super) fn org_row(r: &Row) -> rusqlite::Result<Organization> {
    Ok(Organization {
        id: OrgId(r.get(0)?),
        name: r.get(1)?,
        slug: r.get(2)?,
        logo: r.get(3)?,
        metadata: r.get(4)?,
        created_at: ts(r.get(5)?)?,
        version: r.get::<_, i64>(6)? as u64,
        member_count: r.get(7)?,
        owner_count: r.get(8)?,
        roles_version: r.get::<_, i64>(9)? as u64,
    })
}

pub(super) const MEMBER_COLS: &str = "id, organization_id, user_id, role, team_id, created_at";
/// How many columns [`MEMBER_COLS`] names.
const MEMBER_COL_COUNT: usize = col_count(MEMBER_COLS);

/// How many columns a comma-separated column list names.
const fn col_count(cols: &str) -> usize {
    let (bytes, mut i, mut n) = (cols.as_bytes(), 0, 1);
    while i < bytes.len() {
        if bytes[i] == b',' {
            n += 1;
        }
        i += 1;
    }
    n
}

/// `cols` with every column name prefixed by the table alias `t`.
fn qualified(t: &str, cols: &str) -> String {
    cols.split(',')
        .map(|c| format!("{t}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A window of an organization's members in their order, each with its user (`NULL`s when the
/// user row is gone): `?1` organization, `?2` limit, `?3` offset.
pub(super) static MEMBERS_WITH_USERS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| {
        format!(
            "SELECT {}, {} FROM members m LEFT JOIN users u ON u.id = m.user_id \
             WHERE m.organization_id = ?1 ORDER BY m.created_at, m.id LIMIT ?2 OFFSET ?3",
            qualified("m", MEMBER_COLS),
            qualified("u", USER_COLS)
        )
    });

/// A row of [`MEMBERS_WITH_USERS`].
pub(super) fn member_with_user_row(r: &Row) -> rusqlite::Result<(Member, Option<User>)> {
    with_user(r, member_row, MEMBER_COL_COUNT)
}

pub(super) fn member_row(r: &Row) -> rusqlite::Result<Member> {
    Ok(Member {
        id: MemberId(r.get(0)?),
        organization_id: OrgId(r.get(1)?),
        user_id: UserId(r.get(2)?),
        role: r.get(3)?,
        team_id: r.get::<_, Option<String>>(4)?.map(TeamId),
        created_at: ts(r.get(5)?)?,
    })
}

pub(super) fn insert_member(conn: &Connection, m: &Member) -> StoreResult<()> {
    conn.exec(
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

pub(super) const INVITATION_COLS: &str =
    "id, organization_id, email, role, status, team_id, inviter_id, expires_at, created_at";

pub(super) fn invitation_row(r: &Row) -> rusqlite::Result<Invitation> {
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

pub(super) const TEAM_COLS: &str = "id, name, organization_id, created_at, updated_at";
/// The index of a column selected after [`TEAM_COLS`].
pub(super) const TEAM_COL_COUNT: usize = col_count(TEAM_COLS);

pub(super) fn team_row(r: &Row) -> rusqlite::Result<Team> {
    Ok(Team {
        id: TeamId(r.get(0)?),
        name: r.get(1)?,
        organization_id: OrgId(r.get(2)?),
        created_at: ts(r.get(3)?)?,
        updated_at: ts_opt(r.get(4)?)?,
    })
}

pub(super) fn team_member_row(r: &Row) -> rusqlite::Result<TeamMember> {
    Ok(TeamMember {
        id: TeamMemberId(r.get(0)?),
        team_id: TeamId(r.get(1)?),
        user_id: UserId(r.get(2)?),
        created_at: ts(r.get(3)?)?,
    })
}

pub(super) const ROLE_COLS: &str = "id, organization_id, role, permission, created_at, updated_at";

pub(super) fn role_row(r: &Row) -> rusqlite::Result<OrganizationRole> {
    Ok(OrganizationRole {
        id: RoleId(r.get(0)?),
        organization_id: OrgId(r.get(1)?),
        role: r.get(2)?,
        permission: r.get(3)?,
        created_at: ts(r.get(4)?)?,
        updated_at: ts_opt(r.get(5)?)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The joined reads find the second table's columns where the first table's end.
    #[test]
    fn column_counts_match_the_column_lists() {
        assert_eq!(SESSION_COLS.split(',').count(), SESSION_COL_COUNT);
        assert_eq!(MEMBER_COLS.split(',').count(), MEMBER_COL_COUNT);
        assert_eq!(TEAM_COLS.split(',').count(), TEAM_COL_COUNT);
        assert!(GET_SESSION_WITH_USER.contains("s.impersonated_by, u.id, u.email"));
        assert!(MEMBERS_WITH_USERS.contains("m.created_at, u.id, u.email"));
    }
}
