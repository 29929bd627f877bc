//! The admin plugin's operations on users: create, list, read, update, roles, bans, removal,
//! passwords, permissions.
use super::dto::*;
use super::{AdminApi, AdminCaller};
use crate::audit::action;
use crate::dto::{StatusResponse, SuccessResponse, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::{normalize_email, Tag};
use crate::AppState;
use actors::{BanChange, Caller};
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::OpenApi;
use storage::{Account, FilterOp, SearchOp, User, UserField, UserId, UserQuery};

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
