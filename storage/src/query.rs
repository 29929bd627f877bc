//! The admin's user listing: search, filter, sort and a window, with the total count. Every
//! backend answers the same rows as [`UserQuery::matches`] and [`UserQuery::order`] say; the
//! embedded backend in SQL, a partitioned one by scanning (administration, not a request path
//! of end users).
use crate::entities::User;
use std::cmp::Ordering;

/// A user field that can be searched, filtered or sorted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserField {
    Id,
    Email,
    Name,
    Role,
    Banned,
    EmailVerified,
    CreatedAt,
    UpdatedAt,
}

impl UserField {
    /// better-auth's (camelCase) name of a field.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "id" => Self::Id,
            "email" => Self::Email,
            "name" => Self::Name,
            "role" => Self::Role,
            "banned" => Self::Banned,
            "emailVerified" => Self::EmailVerified,
            "createdAt" => Self::CreatedAt,
            "updatedAt" => Self::UpdatedAt,
            _ => return None,
        })
    }
}

/// How a search term matches (case-insensitive for ASCII letters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchOp {
    Contains,
    StartsWith,
    EndsWith,
}

/// How a filter compares a field with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    Contains,
}

/// A value compared with a field: text for text fields, a flag, or a time (ms since epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    Text(String),
    Flag(bool),
    Millis(i64),
}

#[derive(Debug, Clone, Default)]
pub struct UserQuery {
    /// `(field, op, term)`; the field is `Email` or `Name`.
    pub search: Option<(UserField, SearchOp, String)>,
    pub filter: Option<(UserField, FilterOp, FieldValue)>,
    /// `(field, descending)`; without it, oldest first (then by id).
    pub sort: Option<(UserField, bool)>,
    pub limit: Option<u32>,
    pub offset: u32,
}

/// One window of users and how many match in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserList {
    pub users: Vec<User>,
    pub total: u64,
}

impl UserQuery {
    /// The field of `u` as a comparable value (`role` unset reads as `user`).
    pub fn value_of(u: &User, field: UserField) -> FieldValue {
        match field {
            UserField::Id => FieldValue::Text(u.id.0.clone()),
            UserField::Email => FieldValue::Text(u.email.clone()),
            UserField::Name => FieldValue::Text(u.name.clone()),
            UserField::Role => FieldValue::Text(u.role.clone().unwrap_or_else(|| "user".into())),
            UserField::Banned => FieldValue::Flag(u.banned),
            UserField::EmailVerified => FieldValue::Flag(u.email_verified),
            UserField::CreatedAt => FieldValue::Millis(u.created_at.timestamp_millis()),
            UserField::UpdatedAt => FieldValue::Millis(u.updated_at.timestamp_millis()),
        }
    }

    /// Whether `u` is in the result.
    pub fn matches(&self, u: &User) -> bool {
        if let Some((field, op, term)) = &self.search {
            let FieldValue::Text(v) = Self::value_of(u, *field) else {
                return false;
            };
            let (v, t) = (v.to_ascii_lowercase(), term.to_ascii_lowercase());
            let hit = match op {
                SearchOp::Contains => v.contains(&t),
                SearchOp::StartsWith => v.starts_with(&t),
                SearchOp::EndsWith => v.ends_with(&t),
            };
            if !hit {
                return false;
            }
        }
        if let Some((field, op, want)) = &self.filter {
            let have = Self::value_of(u, *field);
            let ord = match (&have, want) {
                (FieldValue::Text(a), FieldValue::Text(b)) => {
                    if *op == FilterOp::Contains {
                        return a.contains(b.as_str());
                    }
                    a.as_str().cmp(b.as_str())
                }
                (FieldValue::Flag(a), FieldValue::Flag(b)) => a.cmp(b),
                (FieldValue::Millis(a), FieldValue::Millis(b)) => a.cmp(b),
                _ => return false,
            };
            let ok = match op {
                FilterOp::Eq => ord == Ordering::Equal,
                FilterOp::Ne => ord != Ordering::Equal,
                FilterOp::Lt => ord == Ordering::Less,
                FilterOp::Lte => ord != Ordering::Greater,
                FilterOp::Gt => ord == Ordering::Greater,
                FilterOp::Gte => ord != Ordering::Less,
                FilterOp::Contains => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// The order of the result: the sort field (byte order for text), then creation, then id.
    pub fn order(&self, a: &User, b: &User) -> Ordering {
        let primary = match self.sort {
            Some((field, desc)) => {
                let o = cmp_values(&Self::value_of(a, field), &Self::value_of(b, field));
                if desc {
                    o.reverse()
                } else {
                    o
                }
            }
            None => Ordering::Equal,
        };
        primary
            .then_with(|| a.created_at.cmp(&b.created_at))
            .then_with(|| a.id.0.cmp(&b.id.0))
    }

    /// Applies the query to every user (the scanning backends' implementation).
    pub fn apply(&self, all: impl IntoIterator<Item = User>) -> UserList {
        let mut hits: Vec<User> = all.into_iter().filter(|u| self.matches(u)).collect();
        hits.sort_by(|a, b| self.order(a, b));
        let total = hits.len() as u64;
        let users = hits
            .into_iter()
            .skip(self.offset as usize)
            .take(self.limit.map_or(usize::MAX, |l| l as usize))
            .collect();
        UserList { users, total }
    }
}

fn cmp_values(a: &FieldValue, b: &FieldValue) -> Ordering {
    match (a, b) {
        (FieldValue::Text(a), FieldValue::Text(b)) => a.as_str().cmp(b.as_str()),
        (FieldValue::Flag(a), FieldValue::Flag(b)) => a.cmp(b),
        (FieldValue::Millis(a), FieldValue::Millis(b)) => a.cmp(b),
        _ => Ordering::Equal,
    }
}
