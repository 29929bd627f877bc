//! The admin plugin's bodies and answers.
use crate::dto::{SessionDto, Text, UserDto};
use crate::error::{ApiError, ApiResult};
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{Enum, Object, Union};
use storage::{FieldValue, UserField, UserId};

/// One role or several.
#[derive(Debug, Clone, Union)]
#[oai(rename = "AdminRoles", one_of)]
pub(super) enum Roles {
    One(String),
    Many(Vec<String>),
}

impl Roles {
    /// The stored form: trimmed, de-duplicated, comma-joined (`INVALID_ROLE_TYPE`-like
    /// malformed lists are a validation error).
    pub(super) fn normalized(&self) -> ApiResult<String> {
        let joined = match self {
            Self::One(r) => r.clone(),
            Self::Many(v) => v.join(","),
        };
        policy::normalize_roles(&joined)
            .map_err(|e| ApiError::validation(false, vec![format!("role: {e}")]))
    }
}

#[derive(Debug, Object)]
#[oai(rename = "AdminCreateUserBody", rename_all = "camelCase")]
pub(super) struct CreateUserBody {
    pub(super) email: Text,
    /// Without a password the user signs in by other means (a social provider, a reset).
    pub(super) password: Option<Text>,
    #[oai(validator(max_length = 256))]
    pub(super) name: Text,
    /// Needs `user:set-role` besides `user:create`; `user` when absent.
    pub(super) role: Option<Roles>,
    /// Extra fields of the user: `image`, `emailVerified`.
    pub(super) data: Option<CreateUserData>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminCreateUserData", rename_all = "camelCase")]
pub(super) struct CreateUserData {
    #[oai(validator(max_length = 2048))]
    pub(super) image: Option<String>,
    pub(super) email_verified: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserResponse")]
pub(super) struct UserResponse {
    pub(super) user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserIdBody", rename_all = "camelCase")]
pub(super) struct UserIdBody {
    pub(super) user_id: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSetRoleBody", rename_all = "camelCase")]
pub(super) struct SetRoleBody {
    pub(super) user_id: Text,
    pub(super) role: Roles,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminBanBody", rename_all = "camelCase")]
pub(super) struct BanBody {
    pub(super) user_id: Text,
    /// `No reason` when absent.
    #[oai(validator(max_length = 1024))]
    pub(super) ban_reason: Option<String>,
    /// Seconds until the ban ends by itself; forever when absent.
    #[oai(validator(minimum(value = "1")))]
    pub(super) ban_expires_in: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUpdateUserBody", rename_all = "camelCase")]
pub(super) struct UpdateUserBody {
    pub(super) user_id: Text,
    pub(super) data: AdminUserData,
}

/// What `update-user` may change. `password` and `id` are refused with their own codes.
#[derive(Debug, Object)]
#[oai(rename = "AdminUserData", rename_all = "camelCase")]
pub(super) struct AdminUserData {
    #[oai(validator(max_length = 256))]
    pub(super) name: Option<String>,
    /// Needs `user:set-email`.
    pub(super) email: Option<String>,
    /// An image URL, or `null` to remove it.
    pub(super) image: MaybeUndefined<String>,
    pub(super) email_verified: Option<bool>,
    /// Needs `user:set-role`.
    pub(super) role: Option<Roles>,
    /// Needs `user:ban`; `true` revokes every session of the user.
    pub(super) banned: Option<bool>,
    pub(super) ban_reason: MaybeUndefined<String>,
    /// ISO 8601 date-time, or `null`.
    pub(super) ban_expires: MaybeUndefined<String>,
    /// Refused: use `set-user-password`.
    pub(super) password: Option<serde_json::Value>,
    /// Refused: a user's id never changes.
    pub(super) id: Option<serde_json::Value>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSessionTokenBody", rename_all = "camelCase")]
pub(super) struct SessionTokenBody {
    pub(super) session_token: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSetPasswordBody", rename_all = "camelCase")]
pub(super) struct SetPasswordBody {
    pub(super) user_id: Text,
    pub(super) new_password: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSessionsResponse")]
pub(super) struct SessionsResponse {
    pub(super) sessions: Vec<SessionDto>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminHasPermissionBody", rename_all = "camelCase")]
pub(super) struct HasPermissionBody {
    /// `{resource: [action, …]}`, e.g. `{"user": ["ban"]}`.
    pub(super) permissions: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The same, under better-auth's older name.
    pub(super) permission: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Server calls only: the user to ask about.
    pub(super) user_id: Option<Text>,
    /// Server calls only: a role list to ask about.
    pub(super) role: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminHasPermissionResponse")]
pub(super) struct HasPermissionResponse {
    /// Always `null` (better-auth's shape).
    pub(super) error: Option<String>,
    pub(super) success: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserList")]
pub(super) struct ListUsersResponse {
    pub(super) users: Vec<UserDto>,
    /// How many users match, beyond this window too.
    pub(super) total: u64,
    #[oai(skip_serializing_if_is_none)]
    pub(super) limit: Option<u32>,
    #[oai(skip_serializing_if_is_none)]
    pub(super) offset: Option<u32>,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminSearchField", rename_all = "camelCase")]
pub(super) enum SearchFieldParam {
    Email,
    Name,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminSearchOperator", rename_all = "snake_case")]
pub(super) enum SearchOperatorParam {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "SortDirection", rename_all = "lowercase")]
pub(crate) enum SortDirectionParam {
    Asc,
    Desc,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminFilterOperator", rename_all = "lowercase")]
pub(super) enum FilterOperatorParam {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    Contains,
}

/// Without a `limit`, a listing answers at most this many users (`total` says how many match).
pub(super) const MAX_UNPAGED: u32 = 1000;

pub(super) fn user_field(name: &str, param: &str) -> ApiResult<UserField> {
    UserField::parse(name).ok_or_else(|| {
        ApiError::validation(
            true,
            vec![format!(
                "{param}: one of id, email, name, role, banned, emailVerified, createdAt, updatedAt"
            )],
        )
    })
}

pub(super) fn filter_value(field: UserField, raw: &str) -> ApiResult<FieldValue> {
    let bad = |what: &str| ApiError::validation(true, vec![format!("filterValue: {what}")]);
    Ok(match field {
        UserField::Banned | UserField::EmailVerified => match raw {
            "true" => FieldValue::Flag(true),
            "false" => FieldValue::Flag(false),
            _ => return Err(bad("true or false")),
        },
        UserField::CreatedAt | UserField::UpdatedAt => {
            let t = chrono::DateTime::parse_from_rfc3339(raw)
                .map_err(|_| bad("an ISO 8601 date-time"))?;
            FieldValue::Millis(t.timestamp_millis())
        }
        _ => FieldValue::Text(raw.to_owned()),
    })
}

pub(super) fn user_id(t: &Text) -> UserId {
    UserId(t.0.clone())
}
