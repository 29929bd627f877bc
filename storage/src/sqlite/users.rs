//! Users and their linked accounts.
use super::*;
use crate::*;
use rusqlite::params;

#[async_trait]
impl UserStore for SqliteStore {
    async fn create_user(
        &self,
        user: &User,
        account: Option<&Account>,
        events: &[Event],
    ) -> StoreResult<()> {
        let u = user.clone();
        let a = account.cloned();
        self.write_with(events, always, move |conn| {
            let tx = Savepoint::new(conn)?;
            tx.exec(
                &format!(
                    "INSERT INTO users ({USER_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
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
                    ms(&u.updated_at),
                    u.version as i64,
                    u.two_factor_enabled
                ],
            )
            .map_err(unique("email"))?;
            if let Some(a) = &a {
                insert_account(&tx, a)?;
            }
            tx.commit()
        })
        .await
    }

    async fn get_user(&self, id: &UserId) -> StoreResult<Option<User>> {
        let id = id.0.clone();
        self.point_read(move |c| one(c, &GET_USER, [id], user_row))
            .await
    }

    async fn get_users(&self, ids: &[UserId]) -> StoreResult<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ids.iter().map(|i| i.0.clone()).collect();
        self.point_read(move |c| users_by_id(c, &ids)).await
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let email = email.to_lowercase();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {USER_COLS} FROM users WHERE email = ?1"),
                [email],
                user_row,
            )
        })
        .await
    }

    async fn update_user(&self, user: &User, events: &[Event]) -> StoreResult<()> {
        let u = user.clone();
        let expected = version_before(u.version)?;
        self.write_with(events, always, move |c| {
            // The email apart, and only when it changed: a column an UPDATE sets has its index
            // entry rewritten even when the value stays.
            let tx = Savepoint::new(c)?;
            let email: Option<String> = one(
                &tx,
                "UPDATE users SET email_verified=?3, name=?4, image=?5, role=?6, \
                 banned=?7, ban_reason=?8, ban_expires=?9, updated_at=?10, version=?11, \
                 two_factor_enabled=?13 WHERE id=?1 AND version=?12 RETURNING email",
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
                    ms(&u.updated_at),
                    u.version as i64,
                    expected as i64,
                    u.two_factor_enabled
                ],
                |r| r.get(0),
            )?;
            set_unique_if_changed(&tx, "users", "email", &u.id.0, email, &u.email)?;
            tx.commit()
        })
        .await
    }

    async fn delete_user(&self, id: &UserId, events: &[Event]) -> StoreResult<()> {
        let id = id.0.clone();
        // Foreign keys cascade to sessions, accounts, members and team members; pending
        // single-use tokens that point at the user (reset, delete) go with it.
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            // Its memberships go: the organizations' counts follow, and their versions move,
            // so no decision made on the old membership can be written after this.
            tx.exec(
                "UPDATE organizations SET version = version + 1, \
                 member_count = member_count - 1, \
                 owner_count = owner_count - (SELECT COUNT(*) FROM members m \
                    WHERE m.organization_id = organizations.id AND m.user_id = ?1 \
                    AND (',' || replace(m.role, ' ', '') || ',') LIKE '%,owner,%') \
                 WHERE id IN (SELECT organization_id FROM members WHERE user_id = ?1)",
                [&id],
            )
            .map_err(map_err)?;
            let n = tx
                .exec("DELETE FROM users WHERE id = ?1", [&id])
                .map_err(map_err)?;
            touched(n)?;
            tx.exec("DELETE FROM verifications WHERE value = ?1", [&id])
                .map_err(map_err)?;
            tx.commit()
        })
        .await
    }
}

#[async_trait]
impl AccountStore for SqliteStore {
    async fn create_account(&self, account: &Account, events: &[Event]) -> StoreResult<()> {
        let a = account.clone();
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            insert_account(&tx, &a)?;
            bump_user(&tx, &a.user_id.0)?;
            tx.commit()
        })
        .await
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

    async fn update_account(&self, account: &Account, events: &[Event]) -> StoreResult<()> {
        let a = account.clone();
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
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

    async fn replace_password(
        &self,
        account: &Account,
        previous: &str,
        events: &[Event],
    ) -> StoreResult<()> {
        let (id, previous) = (account.id.0.clone(), previous.to_owned());
        let (password, at) = (account.password.clone(), ms(&account.updated_at));
        self.write_with(events, always, move |c| {
            let n = c
                .exec(
                    "UPDATE accounts SET password = ?2, updated_at = ?3 \
                     WHERE id = ?1 AND password = ?4",
                    params![id, password, at, previous],
                )
                .map_err(map_err)?;
            if n == 0 {
                return Err(moved_or_gone(c, "accounts", "id", &id)?);
            }
            Ok(())
        })
        .await
    }

    async fn delete_account(
        &self,
        user: &UserId,
        id: &AccountId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let (user, id) = (user.0.clone(), id.0.clone());
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            let n = tx
                .exec(
                    "UPDATE users SET version = version + 1 WHERE id = ?1 AND version = ?2",
                    params![user, expected as i64],
                )
                .map_err(map_err)?;
            if n == 0 {
                return Err(user_moved_or_gone(&tx, &user)?);
            }
            touched(
                tx.exec(
                    "DELETE FROM accounts WHERE id = ?1 AND user_id = ?2",
                    [&id, &user],
                )
                .map_err(map_err)?,
            )?;
            tx.commit()
        })
        .await
    }
}

/// The users of `ids` that exist: statements of up to 100 ids (few distinct texts for the
/// statement cache).
pub(super) fn users_by_id<S: AsRef<str>>(c: &Connection, ids: &[S]) -> StoreResult<Vec<User>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(100) {
        let marks = vec!["?"; chunk.len()].join(",");
        let sql = format!("SELECT {USER_COLS} FROM users WHERE id IN ({marks})");
        let args = chunk.iter().map(AsRef::as_ref);
        out.extend(all(c, &sql, rusqlite::params_from_iter(args), user_row)?);
    }
    Ok(out)
}
