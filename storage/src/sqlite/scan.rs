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

    async fn list_users(&self, q: &UserQuery) -> StoreResult<UserList> {
        self.list_users_sql(q).await
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

    async fn scan_verifications(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Page<Verification>> {
        let after = after.unwrap_or_default().to_owned();
        let rows = self
            .read(move |c| {
                all(
                    c,
                    &format!(
                        "SELECT {VERIFICATION_COLS} FROM verifications WHERE identifier > ?1 \
                         ORDER BY identifier LIMIT ?2"
                    ),
                    params![after, i64::from(limit) + 1],
                    verification_row,
                )
            })
            .await?;
        Ok(Page::from_overfetch(rows, limit, |v| v.identifier.clone()))
    }
}

/// The SQL of a user listing: the `WHERE` clause (with its parameters) and the `ORDER BY`.
/// Text compares in SQLite's binary collation (byte order), search with ASCII case folding:
/// the same rows, in the same order, as [`UserQuery::matches`] and [`UserQuery::order`].
fn user_query_sql(q: &UserQuery) -> (String, Vec<rusqlite::types::Value>, String) {
    use rusqlite::types::Value;
    fn column(f: UserField) -> &'static str {
        match f {
            UserField::Id => "id",
            UserField::Email => "email",
            UserField::Name => "name",
            UserField::Role => "COALESCE(role, 'user')",
            UserField::Banned => "banned",
            UserField::EmailVerified => "email_verified",
            UserField::CreatedAt => "created_at",
            UserField::UpdatedAt => "updated_at",
        }
    }
    let mut clauses: Vec<String> = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    if let Some((field, op, term)) = &q.search {
        let escaped = term
            .to_ascii_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let pattern = match op {
            SearchOp::Contains => format!("%{escaped}%"),
            SearchOp::StartsWith => format!("{escaped}%"),
            SearchOp::EndsWith => format!("%{escaped}"),
        };
        args.push(Value::Text(pattern));
        // LIKE folds ASCII case; `lower` keeps non-ASCII bytes as they are, like the Rust side.
        clauses.push(format!(
            "lower({}) LIKE ?{} ESCAPE '\\'",
            column(*field),
            args.len()
        ));
    }
    if let Some((field, op, value)) = &q.filter {
        let col = column(*field);
        let typed = match (field, value) {
            (
                UserField::Id | UserField::Email | UserField::Name | UserField::Role,
                FieldValue::Text(t),
            ) => Some(Value::Text(t.clone())),
            (UserField::Banned | UserField::EmailVerified, FieldValue::Flag(b)) => {
                Some(Value::Integer(i64::from(*b)))
            }
            (UserField::CreatedAt | UserField::UpdatedAt, FieldValue::Millis(m)) => {
                Some(Value::Integer(*m))
            }
            _ => None,
        };
        match typed {
            None => clauses.push("0".into()),
            Some(v) => {
                let is_text = matches!(v, Value::Text(_));
                args.push(v);
                let n = args.len();
                clauses.push(match op {
                    FilterOp::Eq => format!("{col} = ?{n}"),
                    FilterOp::Ne => format!("{col} <> ?{n}"),
                    FilterOp::Lt => format!("{col} < ?{n}"),
                    FilterOp::Lte => format!("{col} <= ?{n}"),
                    FilterOp::Gt => format!("{col} > ?{n}"),
                    FilterOp::Gte => format!("{col} >= ?{n}"),
                    FilterOp::Contains if is_text => format!("instr({col}, ?{n}) > 0"),
                    FilterOp::Contains => "0".into(),
                });
            }
        }
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    };
    let order = match q.sort {
        Some((field, desc)) => format!(
            " ORDER BY {} {}, created_at, id",
            column(field),
            if desc { "DESC" } else { "ASC" }
        ),
        None => " ORDER BY created_at, id".into(),
    };
    (filter, args, order)
}

impl SqliteStore {
    pub(super) async fn list_users_sql(&self, q: &UserQuery) -> StoreResult<UserList> {
        let (filter, args, order) = user_query_sql(q);
        let limit = q.limit.map_or(-1, i64::from);
        let offset = i64::from(q.offset);
        self.read(move |c| {
            let total: i64 = c
                .prepare_cached(&format!("SELECT COUNT(*) FROM users{filter}"))
                .and_then(|mut s| {
                    s.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0))
                })
                .map_err(map_err)?;
            let n = args.len();
            let sql = format!(
                "SELECT {USER_COLS} FROM users{filter}{order} LIMIT ?{} OFFSET ?{}",
                n + 1,
                n + 2
            );
            let mut all_args = args;
            all_args.push(rusqlite::types::Value::Integer(limit));
            all_args.push(rusqlite::types::Value::Integer(offset));
            let mut stmt = c.prepare_cached(&sql).map_err(map_err)?;
            let users = stmt
                .query_map(rusqlite::params_from_iter(all_args.iter()), user_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<User>>>())
                .map_err(map_err)?;
            Ok(UserList {
                users,
                total: total as u64,
            })
        })
        .await
    }
}
