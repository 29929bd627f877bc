//! The admin plugin's routes under `/admin/`: users, roles, bans, sessions, impersonation.
//! Handlers parse and answer; who may do what is decided by the actors (the admin policy).
mod audit;

pub use audit::AuditApi;

/// The admin plugin's operations (with the audit log's routes).
pub type Apis = (AdminApi, AuditApi);

pub fn apis() -> Apis {
    (AdminApi, AuditApi)
}

use crate::audit::{action, Event};
use crate::dto::{SessionDto, SessionWithUser, StatusResponse, SuccessResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{client_ip, request_cookie, user_agent, PendingCookies};
use crate::plugins::{normalize_email, Tag};
use crate::session::{Authed, ResolveOptions, SESSION_SCHEME};
use crate::AppState;
use actors::{BanChange, Caller, NewSession};
use poem::web::Data;
use poem::{Request, RequestBody};
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{
    ApiExtractor, ApiExtractorType, Enum, ExtractParamOptions, Object, OpenApi, Union,
};
use storage::{Account, FieldValue, FilterOp, SearchOp, User, UserField, UserId, UserQuery};

pub struct AdminApi;

pub const SERVER_KEY_SCHEME: &str = "serverKey";

/// Who calls an admin route: the server credential (`Authorization: Bearer <server_key>`), or
/// a signed-in user whose role is read from the store for this request (never from the cookie
/// cache). Anything else is 401 `UNAUTHORIZED`.
pub struct AdminCaller {
    pub caller: Caller,
    /// The caller's session, when a user calls.
    pub session: Option<Authed>,
    pub cookies: PendingCookies,
    /// Where the request came from (for audit events).
    pub origin: crate::audit::Origin,
}

impl<'a> ApiExtractor<'a> for AdminCaller {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        crate::session::Principal::register(registry);
        registry.create_security_scheme(
            SERVER_KEY_SCHEME,
            MetaSecurityScheme {
                ty: "http",
                description: Some(
                    "The server credential `Authorization: Bearer <server_key>` (from the \
                     configuration): tools and back ends, allowed every admin operation.",
                ),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec![SESSION_SCHEME, SERVER_KEY_SCHEME]
    }

    async fn from_request(
        req: &'a Request,
        _body: &mut RequestBody,
        _opts: ExtractParamOptions<()>,
    ) -> poem::Result<Self> {
        let (state, cookies) = crate::session::request_context(req)?;
        let cookies = cookies.clone();
        let bearer = req
            .headers()
            .contains_key(poem::http::header::AUTHORIZATION);
        if bearer {
            return match state.sessions.server_call(req) {
                Some(true) => Ok(Self {
                    caller: Caller::Server,
                    session: None,
                    cookies,
                    origin: crate::audit::Origin::of(req),
                }),
                _ => Err(ApiError::new(Code::Unauthorized).into()),
            };
        }
        let opts = ResolveOptions {
            disable_cookie_cache: true,
            disable_refresh: false,
        };
        match state.sessions.resolve_session(req, &cookies, opts).await? {
            Some(a) => Ok(Self {
                caller: Caller::User(a.user.clone()),
                session: Some(a),
                cookies,
                origin: crate::audit::Origin::of(req),
            }),
            None => Err(ApiError::new(Code::Unauthorized).into()),
        }
    }
}

/// One role or several.
#[derive(Debug, Clone, Union)]
#[oai(rename = "AdminRoles", one_of)]
enum Roles {
    One(String),
    Many(Vec<String>),
}

impl Roles {
    /// The stored form: trimmed, de-duplicated, comma-joined (`INVALID_ROLE_TYPE`-like
    /// malformed lists are a validation error).
    fn normalized(&self) -> ApiResult<String> {
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
struct CreateUserBody {
    email: Text,
    /// Without a password the user signs in by other means (a social provider, a reset).
    password: Option<Text>,
    #[oai(validator(max_length = 256))]
    name: Text,
    /// Needs `user:set-role` besides `user:create`; `user` when absent.
    role: Option<Roles>,
    /// Extra fields of the user: `image`, `emailVerified`.
    data: Option<CreateUserData>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminCreateUserData", rename_all = "camelCase")]
struct CreateUserData {
    #[oai(validator(max_length = 2048))]
    image: Option<String>,
    email_verified: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserResponse")]
struct UserResponse {
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserIdBody", rename_all = "camelCase")]
struct UserIdBody {
    user_id: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSetRoleBody", rename_all = "camelCase")]
struct SetRoleBody {
    user_id: Text,
    role: Roles,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminBanBody", rename_all = "camelCase")]
struct BanBody {
    user_id: Text,
    /// `No reason` when absent.
    #[oai(validator(max_length = 1024))]
    ban_reason: Option<String>,
    /// Seconds until the ban ends by itself; forever when absent.
    #[oai(validator(minimum(value = "1")))]
    ban_expires_in: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUpdateUserBody", rename_all = "camelCase")]
struct UpdateUserBody {
    user_id: Text,
    data: AdminUserData,
}

/// What `update-user` may change. `password` and `id` are refused with their own codes.
#[derive(Debug, Object)]
#[oai(rename = "AdminUserData", rename_all = "camelCase")]
struct AdminUserData {
    #[oai(validator(max_length = 256))]
    name: Option<String>,
    /// Needs `user:set-email`.
    email: Option<String>,
    /// An image URL, or `null` to remove it.
    image: MaybeUndefined<String>,
    email_verified: Option<bool>,
    /// Needs `user:set-role`.
    role: Option<Roles>,
    /// Needs `user:ban`; `true` revokes every session of the user.
    banned: Option<bool>,
    ban_reason: MaybeUndefined<String>,
    /// ISO 8601 date-time, or `null`.
    ban_expires: MaybeUndefined<String>,
    /// Refused: use `set-user-password`.
    password: Option<serde_json::Value>,
    /// Refused: a user's id never changes.
    id: Option<serde_json::Value>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSessionTokenBody", rename_all = "camelCase")]
struct SessionTokenBody {
    session_token: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSetPasswordBody", rename_all = "camelCase")]
struct SetPasswordBody {
    user_id: Text,
    new_password: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminSessionsResponse")]
struct SessionsResponse {
    sessions: Vec<SessionDto>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminHasPermissionBody", rename_all = "camelCase")]
struct HasPermissionBody {
    /// `{resource: [action, …]}`, e.g. `{"user": ["ban"]}`.
    permissions: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The same, under better-auth's older name.
    permission: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Server calls only: the user to ask about.
    user_id: Option<Text>,
    /// Server calls only: a role list to ask about.
    role: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminHasPermissionResponse")]
struct HasPermissionResponse {
    /// Always `null` (better-auth's shape).
    error: Option<String>,
    success: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "AdminUserList")]
struct ListUsersResponse {
    users: Vec<UserDto>,
    /// How many users match, beyond this window too.
    total: u64,
    #[oai(skip_serializing_if_is_none)]
    limit: Option<u32>,
    #[oai(skip_serializing_if_is_none)]
    offset: Option<u32>,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminSearchField", rename_all = "camelCase")]
enum SearchFieldParam {
    Email,
    Name,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminSearchOperator", rename_all = "snake_case")]
enum SearchOperatorParam {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "SortDirection", rename_all = "lowercase")]
enum SortDirectionParam {
    Asc,
    Desc,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "AdminFilterOperator", rename_all = "lowercase")]
enum FilterOperatorParam {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    Contains,
}

/// Without a `limit`, a listing answers at most this many users (`total` says how many match).
const MAX_UNPAGED: u32 = 1000;

fn user_field(name: &str, param: &str) -> ApiResult<UserField> {
    UserField::parse(name).ok_or_else(|| {
        ApiError::validation(
            true,
            vec![format!(
                "{param}: one of id, email, name, role, banned, emailVerified, createdAt, updatedAt"
            )],
        )
    })
}

fn filter_value(field: UserField, raw: &str) -> ApiResult<FieldValue> {
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

fn user_id(t: &Text) -> UserId {
    UserId(t.0.clone())
}

#[OpenApi(prefix_path = "/admin", tag = "Tag::Admin")]
impl AdminApi {
    /// Create a user
    ///
    /// Creates a user (with a password credential when `password` is given). Needs
    /// `user:create` (and `user:set-role` for a `role`). An email in use answers 400
    /// `USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL`.
    #[oai(
        path = "/create-user",
        method = "post",
        operation_id = "adminCreateUser"
    )]
    async fn create_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<CreateUserBody>,
    ) -> ApiResult<Json<UserResponse>> {
        let body = body.0;
        let email = normalize_email(&body.email.0).ok_or(Code::InvalidEmail)?;
        let role = body.role.as_ref().map(Roles::normalized).transpose()?;
        let now = state.clock.now();
        let data = body.data.unwrap_or(CreateUserData {
            image: None,
            email_verified: None,
        });
        let mut user = User::new(&email, body.name.0, data.image, now);
        user.email_verified = data.email_verified.unwrap_or(false);
        let account = match body.password {
            Some(p) => {
                state.passwords.check_password_length(&p.0)?;
                let hash = state.hasher.hash(p.0).await.map_err(ApiError::internal)?;
                Some(Account::credential(&user.id, hash, now))
            }
            None => None,
        };
        let target = user.id.clone();
        let ev = who.event(action::ADMIN_USER_CREATED, &target).target(email);
        let ev = match &role {
            Some(r) => ev.detail("role", r.clone()),
            None => ev,
        };
        let user = state
            .actors
            .admin_create_user(
                &who.caller,
                user,
                account,
                role,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let user = state.audit.audited(ev, user).await?;
        tracing::info!(user = %user.id, "admin created a user");
        Ok(Json(UserResponse {
            user: UserDto::from(&user),
        }))
    }

    /// List users
    ///
    /// Search (`searchValue` in `searchField` with `searchOperator`, ASCII case-insensitive),
    /// filter (`filterField` `filterOperator` `filterValue`), sort (`sortBy`,
    /// `sortDirection`) and window (`limit`, `offset`); `total` counts every match. Without a
    /// `limit`, at most 1000 users are answered. Needs `user:list`.
    #[oai(path = "/list-users", method = "get", operation_id = "adminListUsers")]
    #[allow(clippy::too_many_arguments)]
    async fn list_users(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        #[oai(name = "searchValue")] search_value: Query<Option<String>>,
        #[oai(name = "searchField")] search_field: Query<Option<SearchFieldParam>>,
        #[oai(name = "searchOperator")] search_operator: Query<Option<SearchOperatorParam>>,
        #[oai(validator(maximum(value = "100000")))] limit: Query<Option<u32>>,
        offset: Query<Option<u32>>,
        #[oai(name = "sortBy")] sort_by: Query<Option<String>>,
        #[oai(name = "sortDirection")] sort_direction: Query<Option<SortDirectionParam>>,
        #[oai(name = "filterField")] filter_field: Query<Option<String>>,
        #[oai(name = "filterValue")] filter_value_param: Query<Option<String>>,
        #[oai(name = "filterOperator")] filter_operator: Query<Option<FilterOperatorParam>>,
    ) -> ApiResult<Json<ListUsersResponse>> {
        let search = search_value.0.filter(|v| !v.is_empty()).map(|v| {
            let field = match search_field.0 {
                Some(SearchFieldParam::Name) => UserField::Name,
                _ => UserField::Email,
            };
            let op = match search_operator.0 {
                Some(SearchOperatorParam::StartsWith) => SearchOp::StartsWith,
                Some(SearchOperatorParam::EndsWith) => SearchOp::EndsWith,
                _ => SearchOp::Contains,
            };
            (field, op, v)
        });
        let filter = match (filter_field.0, filter_value_param.0) {
            (Some(f), Some(v)) => {
                let field = user_field(&f, "filterField")?;
                let op = match filter_operator.0.unwrap_or(FilterOperatorParam::Eq) {
                    FilterOperatorParam::Eq => FilterOp::Eq,
                    FilterOperatorParam::Ne => FilterOp::Ne,
                    FilterOperatorParam::Lt => FilterOp::Lt,
                    FilterOperatorParam::Lte => FilterOp::Lte,
                    FilterOperatorParam::Gt => FilterOp::Gt,
                    FilterOperatorParam::Gte => FilterOp::Gte,
                    FilterOperatorParam::Contains => FilterOp::Contains,
                };
                Some((field, op, filter_value(field, &v)?))
            }
            (Some(_), None) => {
                return Err(ApiError::validation(
                    true,
                    vec!["filterValue: required with filterField".into()],
                ))
            }
            _ => None,
        };
        let sort = sort_by
            .0
            .map(|f| user_field(&f, "sortBy"))
            .transpose()?
            .map(|f| {
                (
                    f,
                    matches!(sort_direction.0, Some(SortDirectionParam::Desc)),
                )
            });
        let q = UserQuery {
            search,
            filter,
            sort,
            limit: Some(limit.0.unwrap_or(MAX_UNPAGED)),
            offset: offset.0.unwrap_or(0),
        };
        let list = state.actors.admin_list_users(&who.caller, &q).await?;
        Ok(Json(ListUsersResponse {
            users: list.users.iter().map(UserDto::from).collect(),
            total: list.total,
            limit: limit.0,
            offset: offset.0,
        }))
    }

    /// Get a user
    ///
    /// The user with that id (404 `USER_NOT_FOUND`). Needs `user:get`.
    #[oai(path = "/get-user", method = "get", operation_id = "adminGetUser")]
    async fn get_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        id: Query<String>,
    ) -> ApiResult<Json<UserDto>> {
        let user = state
            .actors
            .admin_get_user(&who.caller, &UserId(id.0))
            .await?;
        Ok(Json(UserDto::from(&user)))
    }

    /// Update a user
    ///
    /// Changes the user's fields; a role needs `user:set-role`, a ban `user:ban`, an email
    /// `user:set-email`. Answers the user.
    #[oai(
        path = "/update-user",
        method = "post",
        operation_id = "adminUpdateUser"
    )]
    async fn update_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UpdateUserBody>,
    ) -> ApiResult<Json<UserDto>> {
        let UpdateUserBody { user_id: id, data } = body.0;
        if data.password.is_some() {
            return Err(Code::PasswordCannotBeUpdatedViaUpdateUser.into());
        }
        if data.id.is_some() {
            return Err(Code::UserIdCannotBeUpdated.into());
        }
        let email = data
            .email
            .as_deref()
            .map(|e| normalize_email(e).ok_or(Code::InvalidEmail))
            .transpose()?;
        let ban = match data.banned {
            Some(true) => {
                let expires = match data.ban_expires {
                    MaybeUndefined::Value(t) => Some(
                        chrono::DateTime::parse_from_rfc3339(&t)
                            .map_err(|_| {
                                ApiError::validation(
                                    false,
                                    vec!["data.banExpires: an ISO 8601 date-time".into()],
                                )
                            })?
                            .with_timezone(&chrono::Utc),
                    ),
                    _ => None,
                };
                let reason = match data.ban_reason {
                    MaybeUndefined::Value(r) => r,
                    _ => "No reason".into(),
                };
                Some(BanChange::Ban { reason, expires })
            }
            Some(false) => Some(BanChange::Unban),
            None => None,
        };
        let change = actors::AdminUpdate {
            name: data.name,
            image: match data.image {
                MaybeUndefined::Undefined => None,
                MaybeUndefined::Null => Some(None),
                MaybeUndefined::Value(v) => Some(Some(v)),
            },
            email,
            email_verified: data.email_verified,
            role: data.role.as_ref().map(Roles::normalized).transpose()?,
            ban,
        };
        if change.name.is_none()
            && change.image.is_none()
            && change.email.is_none()
            && change.email_verified.is_none()
            && change.role.is_none()
            && change.ban.is_none()
        {
            return Err(Code::NoDataToUpdate.into());
        }
        let banned = matches!(change.ban, Some(BanChange::Ban { .. }));
        let target = user_id(&id);
        let fields = [
            ("name", change.name.is_some()),
            ("image", change.image.is_some()),
            ("email", change.email.is_some()),
            ("emailVerified", change.email_verified.is_some()),
            ("role", change.role.is_some()),
            ("banned", change.ban.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(",");
        let ev = who
            .event(action::ADMIN_USER_UPDATED, &target)
            .detail("fields", fields);
        let user = state
            .actors
            .admin_update_user(&who.caller, &target, change, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        let user = state.audit.audited(ev, user).await?;
        if banned {
            state.sessions.note_revocation(&target);
        }
        Ok(Json(UserDto::from(&user)))
    }

    /// Set a user's role
    ///
    /// One role or a list (stored comma-separated); each must be a role this server knows
    /// (400 `YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE`). Needs `user:set-role`.
    #[oai(path = "/set-role", method = "post", operation_id = "adminSetRole")]
    async fn set_role(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<SetRoleBody>,
    ) -> ApiResult<Json<UserResponse>> {
        let roles = body.0.role.normalized()?;
        let target = user_id(&body.0.user_id);
        let ev = who
            .event(action::ADMIN_ROLE_SET, &target)
            .detail("role", roles.clone());
        let user = state
            .actors
            .admin_set_role(&who.caller, &target, roles, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        let user = state.audit.audited(ev, user).await?;
        Ok(Json(UserResponse {
            user: UserDto::from(&user),
        }))
    }

    /// Ban a user
    ///
    /// The user can no longer sign in (403 `BANNED_USER`) and every session of theirs is
    /// revoked at once. `banExpiresIn` (seconds) ends the ban by itself. An admin cannot ban
    /// themselves. Needs `user:ban`.
    #[oai(path = "/ban-user", method = "post", operation_id = "adminBanUser")]
    async fn ban_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<BanBody>,
    ) -> ApiResult<Json<UserResponse>> {
        let body = body.0;
        let expires = body
            .ban_expires_in
            .map(|s| {
                chrono::Duration::try_seconds(s)
                    .and_then(|d| state.clock.now().checked_add_signed(d))
                    .ok_or_else(|| {
                        ApiError::validation(false, vec!["banExpiresIn: too large".into()])
                    })
            })
            .transpose()?;
        let target = user_id(&body.user_id);
        let reason = body
            .ban_reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| "No reason".into());
        let mut ev = who.event(action::ADMIN_USER_BANNED, &target);
        if let Some(t) = &expires {
            ev = ev.detail("expires", crate::dto::iso(t));
        }
        let user = state
            .actors
            .admin_ban(
                &who.caller,
                &target,
                reason,
                expires,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let user = state.audit.audited(ev, user).await?;
        state.sessions.note_revocation(&target);
        tracing::info!(user = %target, "admin banned a user");
        Ok(Json(UserResponse {
            user: UserDto::from(&user),
        }))
    }

    /// Unban a user
    ///
    /// Needs `user:ban`.
    #[oai(path = "/unban-user", method = "post", operation_id = "adminUnbanUser")]
    async fn unban_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<UserResponse>> {
        let target = user_id(&body.0.user_id);
        let ev = who.event(action::ADMIN_USER_UNBANNED, &target);
        let user = state
            .actors
            .admin_unban(&who.caller, &target, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        let user = state.audit.audited(ev, user).await?;
        Ok(Json(UserResponse {
            user: UserDto::from(&user),
        }))
    }

    /// List a user's sessions
    ///
    /// Every unexpired session of the user (none for an unknown id). Needs `session:list`.
    #[oai(
        path = "/list-user-sessions",
        method = "post",
        operation_id = "adminListUserSessions"
    )]
    async fn list_user_sessions(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SessionsResponse>> {
        let sessions = state
            .actors
            .admin_list_sessions(&who.caller, &user_id(&body.0.user_id))
            .await?;
        Ok(Json(SessionsResponse {
            sessions: sessions.iter().map(SessionDto::from).collect(),
        }))
    }

    /// Revoke one session
    ///
    /// By its token, whoever's it is; an unknown token is no error. Needs `session:revoke`.
    #[oai(
        path = "/revoke-user-session",
        method = "post",
        operation_id = "adminRevokeUserSession"
    )]
    async fn revoke_user_session(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<SessionTokenBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        // Named by its id in the event, never by its token.
        let known = state.reader.get_session(&body.0.session_token.0).await?;
        let ev = who
            .event_about(
                action::ADMIN_SESSIONS_REVOKED,
                known.as_ref().map(|s| &s.user_id),
            )
            .detail("scope", "one")
            .fill(actors::Fill::TargetSession);
        let owner = state
            .actors
            .admin_revoke_session(
                &who.caller,
                &body.0.session_token.0,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let owner = state.audit.audited(ev, owner).await?;
        if let Some(owner) = owner {
            state.sessions.note_revocation(&owner);
        }
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Revoke every session of a user
    ///
    /// Needs `session:revoke`.
    #[oai(
        path = "/revoke-user-sessions",
        method = "post",
        operation_id = "adminRevokeUserSessions"
    )]
    async fn revoke_user_sessions(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        let target = user_id(&body.0.user_id);
        let ev = who
            .event(action::ADMIN_SESSIONS_REVOKED, &target)
            .detail("scope", "all");
        let revoked = state
            .actors
            .admin_revoke_sessions(&who.caller, &target, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, revoked).await?;
        state.sessions.note_revocation(&target);
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Impersonate a user
    ///
    /// Signs the calling admin in as the user: a session marked `impersonatedBy`, lasting
    /// `admin.impersonation_session_duration` and never extended. The admin's own session is
    /// kept in the `admin_session` cookie for `stop-impersonating`. Impersonating an
    /// administrator needs `user:impersonate-admins`. Needs `user:impersonate`.
    #[oai(
        path = "/impersonate-user",
        method = "post",
        operation_id = "adminImpersonateUser"
    )]
    async fn impersonate_user(
        &self,
        state: Data<&AppState>,
        req: &Request,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SessionWithUser>> {
        let new = NewSession {
            ip_address: client_ip(req),
            user_agent: user_agent(req),
            ..NewSession::default()
        };
        let lifetime = chrono::Duration::seconds(
            state
                .config
                .admin
                .impersonation_session_duration
                .min(i64::MAX as u64) as i64,
        );
        let target = user_id(&body.0.user_id);
        let ev = who
            .event(action::ADMIN_IMPERSONATION_STARTED, &target)
            .fill(actors::Fill::TargetSession);
        let started = state
            .actors
            .admin_impersonate(
                &who.caller,
                &target,
                new,
                lifetime,
                &state.audit.noted(ev.clone()),
            )
            .await
            .map_err(ApiError::from);
        let (session, user) = state.audit.audited(ev, started).await?;
        let n = &state.cookies;
        if let Some(admin) = &who.session {
            // As 1.7: the configured session lifetime (the admin's session may end sooner;
            // then the cookie names a session that no longer resolves).
            who.cookies.push(Some(n.set(
                &n.admin_session,
                &state.signer.sign(&admin.session.token),
                Some(state.config.session.expires_in),
            )));
        }
        let authed = Authed { session, user };
        if !state.config.session.cookie_cache.enabled {
            // No cached copy of the admin's session may outlive the switch.
            who.cookies.push(Some(n.set(&n.session_data, "", Some(0))));
        }
        who.cookies
            .push(state.sessions.session_cookies(&authed, true));
        tracing::info!(admin = ?who.caller_id(), user = %authed.user.id, "impersonation started");
        Ok(Json(SessionWithUser {
            session: SessionDto::from(&authed.session),
            user: UserDto::from(&authed.user),
        }))
    }

    /// Stop impersonating
    ///
    /// Ends the impersonation session and restores the admin's own session from the
    /// `admin_session` cookie; answers it. 400 `NOT_IMPERSONATING` from a session that is not
    /// an impersonation.
    #[oai(
        path = "/stop-impersonating",
        method = "post",
        operation_id = "adminStopImpersonating"
    )]
    async fn stop_impersonating(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: crate::session::Principal,
    ) -> ApiResult<Json<SessionWithUser>> {
        let Some(admin_id) = auth.session.impersonated_by.clone() else {
            return Err(Code::NotImpersonating.into());
        };
        let admin_token = request_cookie(req, &state.cookies.admin_session)
            .and_then(|raw| state.signer.unsign(&raw).map(str::to_owned))
            .ok_or(Code::AdminSessionNotFound)?;
        let admin_session = state
            .reader
            .get_session(&admin_token)
            .await?
            .filter(|s| s.user_id == admin_id && s.expires_at > state.clock.now())
            .ok_or(Code::AdminSessionNotFound)?;
        let admin = state
            .reader
            .get_user(&admin_id)
            .await?
            .ok_or(Code::AdminSessionNotFound)?;
        let ev = Event::new(action::ADMIN_IMPERSONATION_STOPPED, &auth.origin)
            .actor(&admin_id)
            .user(&auth.user.id)
            .target(auth.session.id.0.clone());
        state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev))
            .revoke_known_session(&auth.session)
            .await?;
        state.sessions.note_revocation(&auth.user.id);
        let authed = Authed {
            session: admin_session,
            user: admin,
        };
        let n = &state.cookies;
        auth.cookies.push([
            n.set(&n.dont_remember, "", Some(0)),
            n.set(&n.admin_session, "", Some(0)),
        ]);
        auth.cookies
            .push(state.sessions.session_cookies(&authed, false));
        Ok(Json(SessionWithUser {
            session: SessionDto::from(&authed.session),
            user: UserDto::from(&authed.user),
        }))
    }

    /// Remove a user
    ///
    /// Deletes the user and everything of theirs. An admin cannot remove themselves. Needs
    /// `user:delete`.
    #[oai(
        path = "/remove-user",
        method = "post",
        operation_id = "adminRemoveUser"
    )]
    async fn remove_user(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<UserIdBody>,
    ) -> ApiResult<Json<SuccessResponse>> {
        let target = user_id(&body.0.user_id);
        let ev = who.event(action::ADMIN_USER_REMOVED, &target);
        let removed = state
            .actors
            .admin_remove_user(&who.caller, &target, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, removed).await?;
        state.sessions.note_revocation(&target);
        tracing::info!(user = %target, "admin removed a user");
        Ok(Json(SuccessResponse { success: true }))
    }

    /// Set a user's password
    ///
    /// Sets (or creates) the user's password credential. Needs `user:set-password`.
    #[oai(
        path = "/set-user-password",
        method = "post",
        operation_id = "adminSetUserPassword"
    )]
    async fn set_user_password(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<SetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let body = body.0;
        state
            .passwords
            .check_password_length(&body.new_password.0)?;
        let target = user_id(&body.user_id);
        // Authorized before the (costly) hash, and again with it, inside the actors.
        let ev = who.event(action::ADMIN_PASSWORD_SET, &target);
        let allowed = state
            .actors
            .admin_authorize(&who.caller, actors::AdminAction::SetPassword)
            .map_err(ApiError::from);
        if let Err(e) = allowed {
            state.audit.record_refusal(ev, e.code).await;
            return Err(e);
        }
        let hash = state
            .hasher
            .hash(body.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let set = state
            .actors
            .admin_set_password(&who.caller, &target, &hash, &state.audit.noted(ev.clone()))
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, set).await?;
        Ok(Json(StatusResponse { status: true }))
    }

    /// Check permissions
    ///
    /// Whether the signed-in caller holds every permission asked for. The server credential
    /// may ask about a `userId` or a `role` instead.
    #[oai(
        path = "/has-permission",
        method = "post",
        operation_id = "adminHasPermission"
    )]
    async fn has_permission(
        &self,
        state: Data<&AppState>,
        who: AdminCaller,
        body: Json<HasPermissionBody>,
    ) -> ApiResult<Json<HasPermissionResponse>> {
        let body = body.0;
        let perms: policy::Permissions = body
            .permissions
            .or(body.permission)
            .ok_or(Code::NoPermissionsPassed)?
            .into_iter()
            .map(|(res, acts)| (res, acts.into_iter().collect()))
            .collect();
        let user = match (&who.caller, &body.user_id) {
            (Caller::Server, Some(id)) => Some(
                state
                    .reader
                    .get_user(&user_id(id))
                    .await?
                    .ok_or(Code::AdminUserNotFound)?,
            ),
            (Caller::Server, None) if body.role.is_none() => {
                return Err(ApiError::validation(
                    false,
                    vec!["userId or role is required".into()],
                ))
            }
            _ => None,
        };
        let success = state.actors.admin_has_permission(
            &who.caller,
            user.as_ref(),
            body.role.as_deref(),
            &perms,
        );
        Ok(Json(HasPermissionResponse {
            error: None,
            success,
        }))
    }
}

impl AdminCaller {
    /// An admin event about `target`: the calling admin is the actor (the server key is
    /// noted as `by: server`).
    fn event(&self, action: &'static str, target: &UserId) -> Event {
        self.event_about(action, Some(target))
    }

    fn event_about(&self, action: &'static str, target: Option<&UserId>) -> Event {
        let ev = Event::new(action, &self.origin);
        let ev = match target {
            Some(t) => ev.user(t),
            None => ev,
        };
        match (&self.caller, &self.session) {
            (Caller::Server, _) => ev.detail("by", "server"),
            (Caller::User(u), s) => ev
                .actor(&u.id)
                .impersonated_by(s.as_ref().and_then(|a| a.session.impersonated_by.as_ref())),
        }
    }

    fn caller_id(&self) -> Option<&str> {
        match &self.caller {
            Caller::Server => None,
            Caller::User(u) => Some(&u.id.0),
        }
    }
}
