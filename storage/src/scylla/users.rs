//! Users (row + email claim) and their linked accounts (rows + provider claims).
use super::*;
use crate::*;
use async_trait::async_trait;

pub(crate) const USER_COLS: &str =
    "id, email, email_verified, name, image, role, banned, ban_reason, \
                         ban_expires, created_at, updated_at, version, two_factor_enabled";

pub(crate) fn user_of(r: &Row) -> StoreResult<User> {
    let c = Cols(r);
    Ok(User {
        id: UserId(c.text(0)?),
        email: c.text(1)?,
        email_verified: c.boolean(2),
        name: c.otext(3).unwrap_or_default(),
        image: c.otext(4),
        role: c.otext(5),
        banned: c.boolean(6),
        ban_reason: c.otext(7),
        ban_expires: c.ots(8),
        created_at: c.ts(9)?,
        updated_at: c.ts(10)?,
        version: c.big(11) as u64,
        two_factor_enabled: c.boolean(12),
    })
}

const ACCOUNT_COLS: &str = "id, user_id, provider_id, account_id, password, access_token, \
    refresh_token, id_token, access_token_expires_at, refresh_token_expires_at, scope, \
    created_at, updated_at";

fn account_of(r: &Row) -> StoreResult<Account> {
    let c = Cols(r);
    Ok(Account {
        id: AccountId(c.text(0)?),
        user_id: UserId(c.text(1)?),
        provider_id: c.text(2)?,
        account_id: c.text(3)?,
        password: c.otext(4),
        access_token: c.otext(5),
        refresh_token: c.otext(6),
        id_token: c.otext(7),
        access_token_expires_at: c.ots(8),
        refresh_token_expires_at: c.ots(9),
        scope: c.otext(10),
        created_at: c.ts(11)?,
        updated_at: c.ts(12)?,
    })
}

/// An email claim older than this whose user row never appeared was left by a crash between
/// the claim and the row; it may be taken over.
const ORPHAN_CLAIM_MS: i64 = 60_000;

impl ScyllaStore {
    /// Claims `email` for `user`: `Ok(())` when it is (or already was) ours, `Conflict("email")`
    /// when another user holds it.
    async fn claim_email(&self, email: &str, user: &UserId) -> StoreResult<()> {
        let now = Utc::now().timestamp_millis();
        let claimed = self
            .lwt(
                &format!(
                    "INSERT INTO {} (email, user_id, claimed_at) VALUES (?, ?, ?) IF NOT EXISTS",
                    self.t("users_by_email")
                ),
                vec![text(email), text(&user.0), big(now)],
            )
            .await?;
        if claimed {
            return Ok(());
        }
        let Some(row) = self
            .exec_serial(
                &format!(
                    "SELECT user_id, claimed_at FROM {} WHERE email = ?",
                    self.t("users_by_email")
                ),
                vec![text(email)],
            )
            .await
            .and_then(super::rows_of)?
            .into_iter()
            .next()
        else {
            // Released meanwhile: try once more.
            return Box::pin(self.claim_email(email, user)).await;
        };
        let c = Cols(&row);
        let holder = c.text(0)?;
        if holder == user.0 {
            return Ok(());
        }
        let holder_exists = self.get_user(&UserId(holder.clone())).await?.is_some();
        if holder_exists || now - c.big(1) < ORPHAN_CLAIM_MS {
            return Err(StoreError::Conflict("email"));
        }
        let taken = self
            .lwt(
                &format!(
                    "UPDATE {} SET user_id = ?, claimed_at = ? WHERE email = ? IF user_id = ?",
                    self.t("users_by_email")
                ),
                vec![text(&user.0), big(now), text(email), text(&holder)],
            )
            .await?;
        if taken {
            Ok(())
        } else {
            Err(StoreError::Conflict("email"))
        }
    }

    async fn release_email(&self, email: &str, user: &UserId) -> StoreResult<()> {
        self.lwt(
            &format!(
                "DELETE FROM {} WHERE email = ? IF user_id = ?",
                self.t("users_by_email")
            ),
            vec![text(email), text(&user.0)],
        )
        .await?;
        Ok(())
    }

    /// Compare-and-set of a user's version (`expected` → `expected + 1`).
    /// With `decision`, the new version records it (see `stream`).
    pub(crate) async fn cas_user_version(
        &self,
        user: &UserId,
        expected: u64,
        decision: Option<&Decision>,
    ) -> StoreResult<()> {
        let mut writes = vec![(
            format!(
                "UPDATE {} SET version = ? WHERE id = ? IF version = ?",
                self.t("users")
            ),
            vec![
                big(expected as i64 + 1),
                text(&user.0),
                big(expected as i64),
            ],
        )];
        writes.extend(decision.map(|d| d.stamp(self, "users", ("id", &user.0), expected + 1)));
        let ok = self.batch_lwt(writes).await?;
        if ok {
            return Ok(());
        }
        Err(StoreError::missed(self.get_user(user).await?.is_some()))
    }

    /// Moves a user's version, whatever it is now (its accounts or memberships changed).
    pub(crate) async fn bump_user(&self, user: &UserId) -> StoreResult<()> {
        loop {
            let Some(u) = self.get_user(user).await? else {
                return Ok(());
            };
            match self.cas_user_version(user, u.version, None).await {
                Err(StoreError::ConcurrentModification) => continue,
                Err(StoreError::NotFound) => return Ok(()),
                other => return other,
            }
        }
    }

    async fn insert_account(&self, a: &Account) -> StoreResult<()> {
        let claimed = self
            .lwt(
                &format!(
                    "INSERT INTO {} (provider_id, account_id, user_id) VALUES (?, ?, ?) \
                     IF NOT EXISTS",
                    self.t("accounts_by_provider")
                ),
                vec![
                    text(&a.provider_id),
                    text(&a.account_id),
                    text(&a.user_id.0),
                ],
            )
            .await?;
        if !claimed {
            return Err(StoreError::Conflict("account"));
        }
        self.insert_account_row(a).await
    }

    /// The account's row in its user's partition (its provider claim is the caller's).
    async fn insert_account_row(&self, a: &Account) -> StoreResult<()> {
        self.lwt(
            &format!(
                "INSERT INTO {} ({ACCOUNT_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) IF NOT EXISTS",
                self.t("accounts_by_user")
            ),
            vec![
                text(&a.id.0),
                text(&a.user_id.0),
                text(&a.provider_id),
                text(&a.account_id),
                otext(a.password.as_deref()),
                otext(a.access_token.as_deref()),
                otext(a.refresh_token.as_deref()),
                otext(a.id_token.as_deref()),
                oms(&a.access_token_expires_at),
                oms(&a.refresh_token_expires_at),
                otext(a.scope.as_deref()),
                ms(&a.created_at),
                ms(&a.updated_at),
            ],
        )
        .await?;
        Ok(())
    }

    async fn remove_account(&self, a: &Account) -> StoreResult<()> {
        self.remove_account_row(a).await?;
        self.release_account(a).await
    }

    /// Whether the row was there.
    async fn remove_account_row(&self, a: &Account) -> StoreResult<bool> {
        self.lwt(
            &format!(
                "DELETE FROM {} WHERE user_id = ? AND provider_id = ? AND account_id = ? IF EXISTS",
                self.t("accounts_by_user")
            ),
            vec![
                text(&a.user_id.0),
                text(&a.provider_id),
                text(&a.account_id),
            ],
        )
        .await
    }

    /// Frees the (provider, account) claim.
    async fn release_account(&self, a: &Account) -> StoreResult<()> {
        self.lwt(
            &format!(
                "DELETE FROM {} WHERE provider_id = ? AND account_id = ? IF user_id = ?",
                self.t("accounts_by_provider")
            ),
            vec![
                text(&a.provider_id),
                text(&a.account_id),
                text(&a.user_id.0),
            ],
        )
        .await?;
        Ok(())
    }
}

#[async_trait]
impl UserStore for ScyllaStore {
    async fn create_user(
        &self,
        user: &User,
        account: Option<&Account>,
        events: &[Event],
    ) -> StoreResult<()> {
        let id = user.id.0.clone();
        self.decide(
            events,
            |_| Probe::UserExists { user: id },
            always,
            |_| self.insert_user(user, account),
        )
        .await
    }

    async fn get_user(&self, id: &UserId) -> StoreResult<Option<User>> {
        self.row(
            &format!("SELECT {USER_COLS} FROM {} WHERE id = ?", self.t("users")),
            vec![text(&id.0)],
        )
        .await?
        .map(|r| user_of(&r))
        .transpose()
    }

    async fn get_users(&self, ids: &[UserId]) -> StoreResult<Vec<User>> {
        // One partition each: read side by side.
        let found = side_by_side(ids, |id| self.get_user(id)).await?;
        Ok(found.into_iter().flatten().collect())
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let email = email.to_lowercase();
        let Some(row) = self
            .row(
                &format!(
                    "SELECT user_id FROM {} WHERE email = ?",
                    self.t("users_by_email")
                ),
                vec![text(&email)],
            )
            .await?
        else {
            return Ok(None);
        };
        let id = UserId(Cols(&row).text(0)?);
        // A claim whose user is gone or has moved to another address reads as nothing.
        Ok(self.get_user(&id).await?.filter(|u| u.email == email))
    }

    async fn update_user(&self, user: &User, events: &[Event]) -> StoreResult<()> {
        let (id, version) = (user.id.0.clone(), user.version);
        self.decide(
            events,
            |_| Probe::UserDecision { user: id, version },
            always,
            |d| self.write_user(user, d),
        )
        .await
    }

    async fn delete_user(&self, id: &UserId, events: &[Event]) -> StoreResult<()> {
        let user = id.0.clone();
        self.decide(
            events,
            |_| Probe::UserGone { user },
            always,
            |_| self.remove_user(id),
        )
        .await
    }
}

#[async_trait]
impl AccountStore for ScyllaStore {
    async fn create_account(&self, account: &Account, events: &[Event]) -> StoreResult<()> {
        let probe = Probe::AccountExists {
            user: account.user_id.0.clone(),
            provider: account.provider_id.clone(),
            account: account.account_id.clone(),
        };
        self.decide(events, |_| probe, always, |_| self.add_account(account))
            .await
    }

    async fn list_accounts(&self, user_id: &UserId) -> StoreResult<Vec<Account>> {
        let mut list = self
            .rows(
                &format!(
                    "SELECT {ACCOUNT_COLS} FROM {} WHERE user_id = ?",
                    self.t("accounts_by_user")
                ),
                vec![text(&user_id.0)],
            )
            .await?
            .iter()
            .map(account_of)
            .collect::<StoreResult<Vec<_>>>()?;
        list.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(list)
    }

    async fn get_account_by_provider(
        &self,
        provider_id: &str,
        account_id: &str,
    ) -> StoreResult<Option<Account>> {
        let Some(claim) = self
            .row(
                &format!(
                    "SELECT user_id FROM {} WHERE provider_id = ? AND account_id = ?",
                    self.t("accounts_by_provider")
                ),
                vec![text(provider_id), text(account_id)],
            )
            .await?
        else {
            return Ok(None);
        };
        let user = Cols(&claim).text(0)?;
        self.row(
            &format!(
                "SELECT {ACCOUNT_COLS} FROM {} WHERE user_id = ? AND provider_id = ? \
                 AND account_id = ?",
                self.t("accounts_by_user")
            ),
            vec![text(&user), text(provider_id), text(account_id)],
        )
        .await?
        .map(|r| account_of(&r))
        .transpose()
    }

    async fn update_account(&self, account: &Account, events: &[Event]) -> StoreResult<()> {
        let probe = Probe::AccountExists {
            user: account.user_id.0.clone(),
            provider: account.provider_id.clone(),
            account: account.account_id.clone(),
        };
        self.decide(events, |_| probe, always, |_| self.write_account(account))
            .await
    }

    async fn replace_password(
        &self,
        account: &Account,
        previous: &str,
        events: &[Event],
    ) -> StoreResult<()> {
        let a = account;
        let probe = Probe::AccountPassword {
            user: a.user_id.0.clone(),
            provider: a.provider_id.clone(),
            account: a.account_id.clone(),
            password: a.password.clone().unwrap_or_default(),
        };
        self.decide(
            events,
            |_| probe,
            always,
            |_| async {
                let applied = self
                    .lwt(
                        &format!(
                            "UPDATE {} SET password = ?, updated_at = ? WHERE user_id = ? \
                         AND provider_id = ? AND account_id = ? IF password = ?",
                            self.t("accounts_by_user")
                        ),
                        vec![
                            otext(a.password.as_deref()),
                            ms(&a.updated_at),
                            text(&a.user_id.0),
                            text(&a.provider_id),
                            text(&a.account_id),
                            text(previous),
                        ],
                    )
                    .await?;
                if applied {
                    return Ok(());
                }
                let still_there = self
                    .account_password(&a.user_id.0, &a.provider_id, &a.account_id)
                    .await?
                    .is_some();
                Err(StoreError::missed(still_there))
            },
        )
        .await
    }

    async fn delete_account(
        &self,
        user: &UserId,
        id: &AccountId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let probe = Probe::UserDecision {
            user: user.0.clone(),
            version: expected + 1,
        };
        self.decide(
            events,
            |_| probe,
            always,
            |d| self.unlink_account(user, id, expected, d),
        )
        .await
    }
}

/// The writes themselves; the trait's methods run them as decisions with their events
/// (see `stream`).
impl ScyllaStore {
    /// Claims the email, then the account (releasing the email if that fails), then writes the
    /// user row and the account row: a failed create leaves no visible user.
    pub(crate) async fn insert_user(
        &self,
        user: &User,
        account: Option<&Account>,
    ) -> StoreResult<()> {
        self.claim_email(&user.email, &user.id).await?;
        if let Some(a) = account {
            if let Err(e) = self.insert_account(a).await {
                self.release_email(&user.email, &user.id).await?;
                return Err(e);
            }
        }
        let u = user;
        self.lwt(
            &format!(
                "INSERT INTO {} ({USER_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) IF NOT EXISTS",
                self.t("users")
            ),
            vec![
                text(&u.id.0),
                text(&u.email),
                boolean(u.email_verified),
                text(&u.name),
                otext(u.image.as_deref()),
                otext(u.role.as_deref()),
                boolean(u.banned),
                otext(u.ban_reason.as_deref()),
                oms(&u.ban_expires),
                ms(&u.created_at),
                ms(&u.updated_at),
                big(u.version as i64),
                boolean(u.two_factor_enabled),
            ],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn write_user(
        &self,
        user: &User,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let expected = user
            .version
            .checked_sub(1)
            .ok_or_else(|| StoreError::Internal("a changed user's version is 0".into()))?;
        let Some(current) = self.get_user(&user.id).await? else {
            return Err(StoreError::NotFound);
        };
        let new_email = current.email != user.email;
        if new_email {
            self.claim_email(&user.email, &user.id).await?;
        }
        let u = user;
        let mut writes = vec![(
            format!(
                "UPDATE {} SET email = ?, email_verified = ?, name = ?, image = ?, role = ?, \
                     banned = ?, ban_reason = ?, ban_expires = ?, updated_at = ?, version = ?, \
                     two_factor_enabled = ? WHERE id = ? IF version = ?",
                self.t("users")
            ),
            vec![
                text(&u.email),
                boolean(u.email_verified),
                text(&u.name),
                otext(u.image.as_deref()),
                otext(u.role.as_deref()),
                boolean(u.banned),
                otext(u.ban_reason.as_deref()),
                oms(&u.ban_expires),
                ms(&u.updated_at),
                big(u.version as i64),
                boolean(u.two_factor_enabled),
                text(&u.id.0),
                big(expected as i64),
            ],
        )];
        writes.extend(decision.map(|d| d.stamp(self, "users", ("id", &u.id.0), u.version)));
        let ok = self.batch_lwt(writes).await?;
        if !ok {
            if new_email {
                self.release_email(&user.email, &user.id).await?;
            }
            return Err(StoreError::missed(self.get_user(&user.id).await?.is_some()));
        }
        if new_email {
            self.release_email(&current.email, &user.id).await?;
        }
        Ok(())
    }

    /// Deletes the user row first (from then on the user is gone for every read), then
    /// everything that belongs to it, idempotently: email claim, accounts, sessions, pending
    /// single-use values, memberships (through each organization's version).
    pub(crate) async fn remove_user(&self, id: &UserId) -> StoreResult<()> {
        let Some(user) = self.get_user(id).await? else {
            return Err(StoreError::NotFound);
        };
        let deleted = self
            .lwt(
                &format!("DELETE FROM {} WHERE id = ? IF EXISTS", self.t("users")),
                vec![text(&id.0)],
            )
            .await?;
        if !deleted {
            return Err(StoreError::NotFound);
        }
        self.release_email(&user.email, id).await?;
        for a in self.list_accounts(id).await? {
            self.remove_account(&a).await?;
        }
        self.remove_user_sessions(id, None).await?;
        self.delete_verifications_of(&id.0, "").await?;
        self.exec(
            &format!("DELETE FROM {} WHERE user_id = ?", self.t("two_factors")),
            vec![text(&id.0)],
        )
        .await?;
        self.remove_user_passkeys(id).await?;
        self.remove_user_api_keys(id).await?;
        self.leave_all_organizations(id).await?;
        Ok(())
    }

    pub(crate) async fn add_account(&self, account: &Account) -> StoreResult<()> {
        self.insert_account(account).await?;
        self.bump_user(&account.user_id).await
    }

    /// An account's stored password: `None` when the account is gone, `Some(None)` when it
    /// has none (a provider's account).
    pub(crate) async fn account_password(
        &self,
        user: &str,
        provider: &str,
        account: &str,
    ) -> StoreResult<Option<Option<String>>> {
        Ok(self
            .row(
                &format!(
                    "SELECT password FROM {} WHERE user_id = ? AND provider_id = ? \
                     AND account_id = ?",
                    self.t("accounts_by_user")
                ),
                vec![text(user), text(provider), text(account)],
            )
            .await?
            .map(|r| Cols(&r).otext(0)))
    }

    pub(crate) async fn write_account(&self, account: &Account) -> StoreResult<()> {
        let a = account;
        let ok = self
            .lwt(
                &format!(
                    "UPDATE {} SET password = ?, access_token = ?, refresh_token = ?, \
                     id_token = ?, access_token_expires_at = ?, refresh_token_expires_at = ?, \
                     scope = ?, updated_at = ? WHERE user_id = ? AND provider_id = ? \
                     AND account_id = ? IF EXISTS",
                    self.t("accounts_by_user")
                ),
                vec![
                    otext(a.password.as_deref()),
                    otext(a.access_token.as_deref()),
                    otext(a.refresh_token.as_deref()),
                    otext(a.id_token.as_deref()),
                    oms(&a.access_token_expires_at),
                    oms(&a.refresh_token_expires_at),
                    otext(a.scope.as_deref()),
                    ms(&a.updated_at),
                    text(&a.user_id.0),
                    text(&a.provider_id),
                    text(&a.account_id),
                ],
            )
            .await?;
        if ok {
            Ok(())
        } else {
            Err(StoreError::NotFound)
        }
    }

    pub(crate) async fn unlink_account(
        &self,
        user: &UserId,
        id: &AccountId,
        expected: u64,
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let Some(account) = self
            .list_accounts(user)
            .await?
            .into_iter()
            .find(|a| &a.id == id)
        else {
            return Err(StoreError::NotFound);
        };
        // The decision ("not the last account") was made on `expected`. The row goes first and
        // the version moves after, so whoever decides on the new version already sees the
        // account gone; if the version moved meanwhile, the row comes back and the caller
        // decides again. (A decision made in that short window may see one account fewer and
        // refuse: never the other way round.)
        if !self.remove_account_row(&account).await? {
            return Err(StoreError::NotFound);
        }
        if let Err(e) = self
            .cas_user_version(user, expected, decision.as_ref())
            .await
        {
            self.insert_account_row(&account).await?;
            return Err(e);
        }
        self.release_account(&account).await
    }
}
