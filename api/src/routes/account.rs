//! Account lifecycle: email verification, password reset/change/set, change email, delete
//! account, linked accounts. Every state change goes through the user's actor; single-use
//! tokens are consumed atomically by the store.
use super::{normalize_email, text, Tag};
use crate::dto::{iso, StatusResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::MailKind;
use crate::session::{Auth, Authed, ResolveOptions};
use crate::AppState;
use actors::{PasswordChange, UserPatch};
use chrono::Duration;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde::{Deserialize, Serialize};
use storage::{User, Verification, VerificationId, CREDENTIAL_PROVIDER};

pub struct AccountApi;

const VERIFY_PURPOSE: &str = "verify-email";

/// What an email-verification token carries (sealed with the server secret).
#[derive(Serialize, Deserialize)]
struct EmailClaims {
    email: String,
    #[serde(rename = "updateTo", skip_serializing_if = "Option::is_none")]
    update_to: Option<String>,
    /// Expiry, seconds since the epoch.
    exp: i64,
}

#[derive(ApiResponse)]
enum RedirectOr<T: poem_openapi::types::ToJSON + Send + Sync> {
    /// The result, when no callback URL was given.
    #[oai(status = 200)]
    Ok(Json<T>),
    /// Redirect to the callback URL (with `?error=` on failure).
    #[oai(status = 302)]
    Redirect(#[oai(header = "Location")] String),
}

#[derive(Debug, Object)]
struct SendVerificationBody {
    email: Text,
    #[oai(rename = "callbackURL")]
    callback_url: Option<Text>,
}

#[derive(Debug, Object)]
struct VerifyEmailResponse {
    status: bool,
    user: Option<UserDto>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ForgetPasswordBody {
    email: Text,
    /// Where the reset link finally leads (with `?token=`); trusted origin or relative path.
    redirect_to: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ResetPasswordBody {
    new_password: Text,
    token: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ChangePasswordBody {
    new_password: Text,
    current_password: Text,
    revoke_other_sessions: Option<bool>,
}

#[derive(Debug, Object)]
struct ChangePasswordResponse {
    /// The new session's token when other sessions were revoked, else `null`.
    token: Option<String>,
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct SetPasswordBody {
    new_password: Text,
    /// The user whose password to set (or the user of the session cookie sent along).
    user_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ChangeEmailBody {
    new_email: Text,
    #[oai(rename = "callbackURL")]
    callback_url: Option<Text>,
}

#[derive(Debug, Object)]
struct DeleteUserBody {
    #[oai(rename = "callbackURL")]
    callback_url: Option<Text>,
    password: Option<Text>,
    token: Option<Text>,
}

#[derive(Debug, Object)]
struct DeleteUserResponse {
    success: bool,
    message: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct AccountDto {
    id: String,
    /// The provider id (`credential` for the password).
    provider: String,
    provider_id: String,
    account_id: String,
    user_id: String,
    created_at: String,
    updated_at: String,
    scopes: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct UnlinkAccountBody {
    provider_id: Text,
    account_id: Option<Text>,
}

impl AppState {
    /// An absolute URL for a redirect target (relative paths resolve against the base URL).
    fn absolute(&self, target: &str) -> String {
        if target.starts_with('/') {
            format!("{}{target}", self.config.base_url.trim_end_matches('/'))
        } else {
            target.to_owned()
        }
    }

    fn with_query(&self, target: &str, key: &str, value: &str) -> String {
        let sep = if target.contains('?') { '&' } else { '?' };
        let v = percent_encoding::utf8_percent_encode(value, crate::http::URI_COMPONENT);
        format!("{}{sep}{key}={v}", self.absolute(target))
    }

    fn api_url(&self, path: &str) -> String {
        format!(
            "{}{}{path}",
            self.config.base_url.trim_end_matches('/'),
            crate::BASE_PATH
        )
    }

    /// Mails a verification link for `email` (optionally confirming a change to `update_to`).
    pub async fn send_verification(
        &self,
        user: &User,
        kind: MailKind,
        to: &str,
        update_to: Option<&str>,
        callback: Option<&str>,
    ) -> ApiResult<()> {
        let exp =
            self.clock.now() + Duration::seconds(self.config.email_verification.expires_in as i64);
        let token = self.signer.seal(
            VERIFY_PURPOSE,
            &EmailClaims {
                email: user.email.clone(),
                update_to: update_to.map(str::to_owned),
                exp: exp.timestamp(),
            },
        );
        let mut link = format!("{}?token={token}", self.api_url("/verify-email"));
        if let Some(cb) = callback {
            link.push_str("&callbackURL=");
            link.extend(percent_encoding::utf8_percent_encode(
                cb,
                crate::http::URI_COMPONENT,
            ));
        }
        let vars = [
            ("name", user.name.as_str()),
            ("new_email", update_to.unwrap_or("")),
        ];
        self.mailer
            .send(kind, to, &link, &vars)
            .await
            .map_err(ApiError::internal)
    }

    /// Stores a single-use token for `identifier_prefix{token}` pointing at the user.
    async fn create_token(&self, identifier: String, user: &User, lifetime: u64) -> ApiResult<()> {
        let now = self.clock.now();
        let v = Verification {
            id: VerificationId::generate(),
            identifier,
            value: user.id.0.clone(),
            expires_at: now + Duration::seconds(lifetime as i64),
            created_at: now,
            updated_at: now,
        };
        self.store.create_verification(&v).await?;
        Ok(())
    }

    /// Consumes a single-use token: the user it points at, if it existed and had not expired.
    async fn consume_token(&self, identifier: &str) -> ApiResult<Option<User>> {
        let Some(v) = self.store.consume_verification(identifier).await? else {
            return Ok(None);
        };
        if v.expires_at <= self.clock.now() {
            return Ok(None);
        }
        Ok(self.store.get_user(&storage::UserId(v.value)).await?)
    }

    async fn credential_hash(&self, user: &User) -> ApiResult<Option<String>> {
        Ok(self
            .store
            .list_accounts(&user.id)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .and_then(|a| a.password))
    }

    /// Whether `password` is the user's current password (`None`: the user has none).
    async fn check_password(&self, user: &User, password: &str) -> ApiResult<Option<bool>> {
        match self.credential_hash(user).await? {
            Some(h) => Ok(Some(
                self.hasher
                    .verify(password.to_owned(), h)
                    .await
                    .map_err(ApiError::internal)?,
            )),
            None => Ok(None),
        }
    }

    /// Whether the request carries a valid server credential.
    pub(crate) fn server_call_ok(&self, req: &Request) -> bool {
        self.server_call(req) == Some(true)
    }

    /// Whether the request carries the server credential (`Authorization: Bearer <server_key>`),
    /// compared in constant time. `None` when no server key is configured.
    pub(crate) fn server_call(&self, req: &Request) -> Option<bool> {
        let key = self.config.server_key.as_ref()?;
        let sent = req
            .headers()
            .get(poem::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        Some(subtle::ConstantTimeEq::ct_eq(sent.as_bytes(), key.expose().as_bytes()).into())
    }
}

#[OpenApi(tag = "Tag::Account")]
impl AccountApi {
    /// Send a verification email
    ///
    /// Mails a verification link to the address if it belongs to an unverified user. The answer
    /// is the same for unknown and verified addresses, so it reveals no accounts.
    #[oai(
        path = "/send-verification-email",
        method = "post",
        operation_id = "sendVerificationEmail"
    )]
    async fn send_verification_email(
        &self,
        state: Data<&AppState>,
        body: Json<SendVerificationBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        if !state.mailer.enabled() {
            return Err(Code::VerificationEmailNotEnabled.into());
        }
        let email = normalize_email(&body.0.email.0).ok_or(Code::InvalidEmail)?;
        let cb = text(&body.0.callback_url);
        state.origins.check_redirect(cb, Code::InvalidCallbackurl)?;
        if let Some(user) = state.store.get_user_by_email(&email).await? {
            if !user.email_verified {
                state
                    .send_verification(&user, MailKind::VerifyEmail, &user.email, None, cb)
                    .await?;
            }
        }
        Ok(Json(StatusResponse { status: true }))
    }

    /// Verify an email address
    ///
    /// Follows the mailed link. On success: redirect to `callbackURL`, or `{status, user}`.
    /// On failure: redirect to `callbackURL?error=token_expired|invalid_token|user_not_found|
    /// unauthorized`, or a 400 error without a callback. A token with `updateTo` (a confirmed
    /// email change) needs the user's session and applies the change.
    #[oai(path = "/verify-email", method = "get", operation_id = "verifyEmail")]
    async fn verify_email(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        token: Query<String>,
        #[oai(name = "callbackURL")] callback_url: Query<Option<String>>,
    ) -> ApiResult<RedirectOr<VerifyEmailResponse>> {
        let cb = callback_url.0.filter(|c| !c.is_empty());
        state
            .origins
            .check_redirect(cb.as_deref(), Code::InvalidCallbackurl)?;
        let fail =
            |code: Code, redirect_code: &str| -> ApiResult<RedirectOr<VerifyEmailResponse>> {
                match &cb {
                    Some(c) => Ok(RedirectOr::Redirect(state.with_query(
                        c,
                        "error",
                        redirect_code,
                    ))),
                    None => Err(code.into()),
                }
            };
        let Some(claims) = state.signer.open::<EmailClaims>(VERIFY_PURPOSE, &token.0) else {
            return fail(Code::InvalidToken, "invalid_token");
        };
        if claims.exp <= state.clock.now().timestamp() {
            return fail(Code::TokenExpired, "token_expired");
        }
        let Some(user) = state.store.get_user_by_email(&claims.email).await? else {
            return fail(Code::UserNotFound, "user_not_found");
        };
        let actor = state.actors.user(user.id.clone());
        let user = if let Some(new_email) = claims.update_to {
            // Confirming a change of address: only the signed-in owner may apply it.
            let session = state
                .resolve_session(req, cookies, ResolveOptions::default())
                .await?;
            if session.as_ref().map(|a| &a.user.id) != Some(&user.id) {
                return fail(Code::Unauthorized, "unauthorized");
            }
            let changed = actor
                .update_user(UserPatch {
                    email: Some(new_email.clone()),
                    email_verified: Some(false),
                    ..UserPatch::default()
                })
                .await
                .map_err(|e| match e {
                    actors::ActorError::Conflict(_) => Code::CouldntUpdateYourEmail.into(),
                    other => ApiError::from(other),
                })?;
            state
                .send_verification(
                    &changed,
                    MailKind::VerifyEmail,
                    &new_email,
                    None,
                    cb.as_deref(),
                )
                .await?;
            changed
        } else if user.email_verified {
            user
        } else {
            let verified = actor
                .update_user(UserPatch {
                    email_verified: Some(true),
                    ..UserPatch::default()
                })
                .await?;
            if state
                .config
                .email_verification
                .auto_sign_in_after_verification
            {
                state
                    .start_session(req, cookies, verified.clone(), true)
                    .await?;
            }
            verified
        };
        if let Some(c) = cb {
            return Ok(RedirectOr::Redirect(state.absolute(&c)));
        }
        Ok(RedirectOr::Ok(Json(VerifyEmailResponse {
            status: true,
            user: Some(UserDto::from(&user)),
        })))
    }

    /// Request a password reset
    ///
    /// Mails a reset link (valid one hour) if the address belongs to a user. Known and unknown
    /// addresses get the same answer after the same work.
    #[oai(
        path = "/forget-password",
        method = "post",
        operation_id = "forgetPassword"
    )]
    async fn forget_password(
        &self,
        state: Data<&AppState>,
        body: Json<ForgetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        request_reset(&state, body.0).await
    }

    /// Request a password reset (current clients' name)
    ///
    /// The same as `forget-password`.
    #[oai(
        path = "/request-password-reset",
        method = "post",
        operation_id = "requestPasswordReset"
    )]
    async fn request_password_reset(
        &self,
        state: Data<&AppState>,
        body: Json<ForgetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        request_reset(&state, body.0).await
    }

    /// Follow a password-reset link
    ///
    /// Redirects to `callbackURL?token=…` when the token is valid, else to
    /// `callbackURL?error=INVALID_TOKEN`.
    #[oai(
        path = "/reset-password/:token",
        method = "get",
        operation_id = "resetPasswordCallback"
    )]
    async fn reset_password_callback(
        &self,
        state: Data<&AppState>,
        token: Path<String>,
        #[oai(name = "callbackURL")] callback_url: Query<String>,
    ) -> ApiResult<RedirectOr<StatusResponse>> {
        let cb = callback_url.0;
        state
            .origins
            .check_redirect(Some(&cb), Code::InvalidCallbackurl)?;
        let valid = state
            .store
            .get_verification(&format!("reset-password:{}", token.0))
            .await?
            .is_some_and(|v| v.expires_at > state.clock.now());
        let target = if valid {
            state.with_query(&cb, "token", &token.0)
        } else {
            state.with_query(&cb, "error", "INVALID_TOKEN")
        };
        Ok(RedirectOr::Redirect(target))
    }

    /// Reset the password
    ///
    /// With the token from the reset link (body or query): sets the new password, creating the
    /// password credential when the user had none. The token works exactly once.
    #[oai(
        path = "/reset-password",
        method = "post",
        operation_id = "resetPassword"
    )]
    async fn reset_password(
        &self,
        state: Data<&AppState>,
        #[oai(name = "token")] query_token: Query<Option<String>>,
        body: Json<ResetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let token = text(&body.0.token)
            .map(str::to_owned)
            .or(query_token.0)
            .ok_or(Code::InvalidToken)?;
        state.check_password_length(&body.0.new_password.0)?;
        let user = state
            .consume_token(&format!("reset-password:{token}"))
            .await?
            .ok_or(Code::InvalidToken)?;
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let actor = state.actors.user(user.id.clone());
        actor.set_password(&hash, PasswordChange::Upsert).await?;
        if state.config.account.revoke_sessions_on_password_reset {
            actor.revoke_sessions(None).await?;
            state.note_revocation(&user.id);
        }
        tracing::info!(user = %user.id, "password reset");
        Ok(Json(StatusResponse { status: true }))
    }

    /// Change the password
    ///
    /// Needs the current password. With `revokeOtherSessions`, every session is deleted and a
    /// new one issued (its token is answered and set as the cookie).
    #[oai(
        path = "/change-password",
        method = "post",
        operation_id = "changePassword"
    )]
    async fn change_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        auth: Auth,
        body: Json<ChangePasswordBody>,
    ) -> ApiResult<Json<ChangePasswordResponse>> {
        let Authed { user, .. } = auth.0;
        state.check_password_length(&body.0.new_password.0)?;
        match state
            .check_password(&user, &body.0.current_password.0)
            .await?
        {
            None => return Err(Code::CredentialAccountNotFound.into()),
            Some(false) => return Err(Code::InvalidPassword.into()),
            Some(true) => {}
        }
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        let actor = state.actors.user(user.id.clone());
        actor
            .set_password(&hash, PasswordChange::OnlyIfExists)
            .await?;
        let mut token = None;
        if body.0.revoke_other_sessions.unwrap_or(false) {
            actor.revoke_sessions(None).await?;
            state.note_revocation(&user.id);
            let fresh = state
                .start_session(req, cookies, user.clone(), true)
                .await?;
            token = Some(fresh.session.token);
        }
        Ok(Json(ChangePasswordResponse {
            token,
            user: UserDto::from(&user),
        }))
    }

    /// Set a password (server only)
    ///
    /// For a user without one (e.g. signed up with a social provider). Needs the server
    /// credential `Authorization: Bearer <server_key>`; without a configured key the route does
    /// not exist (404), with a wrong one it answers 401.
    #[oai(path = "/set-password", method = "post", operation_id = "setPassword")]
    async fn set_password(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SetPasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        match state.server_call(req) {
            None => return Err(Code::NotFound.into()),
            Some(false) => return Err(Code::Unauthorized.into()),
            Some(true) => {}
        }
        let user = match text(&body.0.user_id) {
            Some(id) => {
                state
                    .store
                    .get_user(&storage::UserId(id.to_owned()))
                    .await?
            }
            None => state
                .resolve_session(req, cookies, ResolveOptions::default())
                .await?
                .map(|a| a.user),
        }
        .ok_or(Code::UserNotFound)?;
        state.check_password_length(&body.0.new_password.0)?;
        let hash = state
            .hasher
            .hash(body.0.new_password.0)
            .await
            .map_err(ApiError::internal)?;
        state
            .actors
            .user(user.id.clone())
            .set_password(&hash, PasswordChange::OnlyIfNone)
            .await?;
        Ok(Json(StatusResponse { status: true }))
    }

    /// Change the email address
    ///
    /// Unverified address: changed at once (and a verification mailed to the new one).
    /// Verified address: a confirmation link goes to the current address; the change applies
    /// when it is followed.
    #[oai(path = "/change-email", method = "post", operation_id = "changeEmail")]
    async fn change_email(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<ChangeEmailBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        if !state.config.account.change_email_enabled {
            return Err(Code::ChangeEmailDisabled.into());
        }
        state.require_fresh(&auth.0)?;
        let user = auth.0.user;
        let new_email = normalize_email(&body.0.new_email.0).ok_or(Code::InvalidEmail)?;
        let cb = text(&body.0.callback_url);
        state.origins.check_redirect(cb, Code::InvalidCallbackurl)?;
        if new_email == user.email {
            return Err(Code::EmailIsTheSame.into());
        }
        if state.store.get_user_by_email(&new_email).await?.is_some() {
            return Err(Code::CouldntUpdateYourEmail.into());
        }
        if user.email_verified {
            if !state.mailer.enabled() {
                return Err(Code::VerificationEmailNotEnabled.into());
            }
            state
                .send_verification(
                    &user,
                    MailKind::ChangeEmailConfirmation,
                    &user.email,
                    Some(&new_email),
                    cb,
                )
                .await?;
            return Ok(Json(StatusResponse { status: true }));
        }
        let changed = state
            .actors
            .user(user.id.clone())
            .update_user(UserPatch {
                email: Some(new_email.clone()),
                email_verified: Some(false),
                ..UserPatch::default()
            })
            .await
            .map_err(|e| match e {
                actors::ActorError::Conflict(_) => Code::CouldntUpdateYourEmail.into(),
                other => ApiError::from(other),
            })?;
        if state.mailer.enabled() {
            state
                .send_verification(&changed, MailKind::VerifyEmail, &new_email, None, cb)
                .await?;
        }
        Ok(Json(StatusResponse { status: true }))
    }

    /// Delete the account
    ///
    /// With `password`, it must match; without, the session must be fresh. With a mail sender
    /// configured a confirmation link is mailed ('Verification email sent'); otherwise the user
    /// is deleted at once with sessions, accounts and memberships, and the cookies cleared.
    #[oai(path = "/delete-user", method = "post", operation_id = "deleteUser")]
    async fn delete_user(
        &self,
        state: Data<&AppState>,
        cookies: &PendingCookies,
        auth: Auth,
        body: Json<DeleteUserBody>,
    ) -> ApiResult<Json<DeleteUserResponse>> {
        if !state.config.account.delete_user_enabled {
            return Err(Code::DeleteUserDisabled.into());
        }
        let Authed { user, session } = auth.0;
        let cb = text(&body.0.callback_url);
        state.origins.check_redirect(cb, Code::InvalidCallbackurl)?;
        if let Some(pw) = text(&body.0.password) {
            match state.check_password(&user, pw).await? {
                None => return Err(Code::CredentialAccountNotFound.into()),
                Some(false) => return Err(Code::InvalidPassword.into()),
                Some(true) => {}
            }
        } else {
            let fresh = state.config.session.fresh_age;
            if fresh > 0 && session.created_at + Duration::seconds(fresh as i64) < state.clock.now()
            {
                return Err(Code::SessionExpired.into());
            }
        }
        if let Some(token) = text(&body.0.token) {
            let owner = state
                .consume_token(&format!("delete-account-{token}"))
                .await?
                .filter(|u| u.id == user.id)
                .ok_or(Code::InvalidToken)?;
            return delete_now(&state, cookies, &owner).await;
        }
        if state.mailer.enabled() {
            let token = storage::random_lower_alnum(32);
            state
                .create_token(
                    format!("delete-account-{token}"),
                    &user,
                    state.config.limits.delete_account_token_expires_in,
                )
                .await?;
            let mut link = format!("{}?token={token}", state.api_url("/delete-user/callback"));
            if let Some(c) = cb {
                link.push_str("&callbackURL=");
                link.extend(percent_encoding::utf8_percent_encode(
                    c,
                    crate::http::URI_COMPONENT,
                ));
            }
            state
                .mailer
                .send(
                    MailKind::DeleteAccount,
                    &user.email,
                    &link,
                    &[("name", &user.name)],
                )
                .await
                .map_err(ApiError::internal)?;
            return Ok(Json(DeleteUserResponse {
                success: true,
                message: "Verification email sent".into(),
            }));
        }
        delete_now(&state, cookies, &user).await
    }

    /// Confirm the account deletion
    ///
    /// Follows the mailed link: deletes the user (once; the token is single use), clears the
    /// cookies, and redirects to `callbackURL` or answers `{success, message}`.
    #[oai(
        path = "/delete-user/callback",
        method = "get",
        operation_id = "deleteUserCallback"
    )]
    async fn delete_user_callback(
        &self,
        state: Data<&AppState>,
        cookies: &PendingCookies,
        token: Query<String>,
        #[oai(name = "callbackURL")] callback_url: Query<Option<String>>,
    ) -> ApiResult<RedirectOr<DeleteUserResponse>> {
        if !state.config.account.delete_user_enabled {
            return Err(Code::DeleteUserDisabled.into());
        }
        let cb = callback_url.0.filter(|c| !c.is_empty());
        state
            .origins
            .check_redirect(cb.as_deref(), Code::InvalidCallbackurl)?;
        let Some(user) = state
            .consume_token(&format!("delete-account-{}", token.0))
            .await?
        else {
            return match cb {
                Some(c) => Ok(RedirectOr::Redirect(state.with_query(
                    &c,
                    "error",
                    "INVALID_TOKEN",
                ))),
                None => Err(Code::InvalidToken.into()),
            };
        };
        let done = delete_now(&state, cookies, &user).await?;
        match cb {
            Some(c) => Ok(RedirectOr::Redirect(state.absolute(&c))),
            None => Ok(RedirectOr::Ok(done)),
        }
    }

    /// List linked accounts
    ///
    /// The caller's password credential and social accounts.
    #[oai(path = "/list-accounts", method = "get", operation_id = "listAccounts")]
    async fn list_accounts(
        &self,
        state: Data<&AppState>,
        auth: Auth,
    ) -> ApiResult<Json<Vec<AccountDto>>> {
        let accounts = state.store.list_accounts(&auth.0.user.id).await?;
        Ok(Json(
            accounts
                .into_iter()
                .map(|a| AccountDto {
                    id: a.id.0,
                    provider: a.provider_id.clone(),
                    provider_id: a.provider_id,
                    account_id: a.account_id,
                    user_id: a.user_id.0,
                    created_at: iso(&a.created_at),
                    updated_at: iso(&a.updated_at),
                    scopes: a
                        .scope
                        .map(|s| {
                            s.split([',', ' '])
                                .filter(|x| !x.is_empty())
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
        ))
    }

    /// Unlink an account
    ///
    /// Refuses the last account ("You can't unlink your last account") unless
    /// `account.allow_unlinking_all` is set.
    #[oai(
        path = "/unlink-account",
        method = "post",
        operation_id = "unlinkAccount"
    )]
    async fn unlink_account(
        &self,
        state: Data<&AppState>,
        auth: Auth,
        body: Json<UnlinkAccountBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        state.require_fresh(&auth.0)?;
        state
            .actors
            .user(auth.0.user.id.clone())
            .unlink_account(
                &body.0.provider_id.0,
                text(&body.0.account_id),
                state.config.account.allow_unlinking_all,
            )
            .await?;
        Ok(Json(StatusResponse { status: true }))
    }
}

async fn request_reset(
    state: &AppState,
    body: ForgetPasswordBody,
) -> ApiResult<Json<StatusResponse>> {
    if !state.mailer.enabled() {
        return Err(Code::ResetPasswordDisabled.into());
    }
    let email = normalize_email(&body.email.0).ok_or(Code::InvalidEmail)?;
    let redirect = text(&body.redirect_to);
    state
        .origins
        .check_redirect(redirect, Code::InvalidRedirecturl)?;
    let token = storage::random_string(24);
    let identifier = format!("reset-password:{token}");
    let user = state.store.get_user_by_email(&email).await?;
    match user {
        Some(user) => {
            state
                .create_token(
                    identifier,
                    &user,
                    state.config.limits.reset_password_token_expires_in,
                )
                .await?;
            let link = format!(
                "{}?callbackURL={}",
                state.api_url(&format!("/reset-password/{token}")),
                percent_encoding::utf8_percent_encode(
                    redirect.unwrap_or("/"),
                    crate::http::URI_COMPONENT
                )
            );
            state
                .mailer
                .send(
                    MailKind::ResetPassword,
                    &user.email,
                    &link,
                    &[("name", &user.name)],
                )
                .await
                .map_err(ApiError::internal)?;
        }
        None => {
            // The same store round trips as for a real user, so timing reveals nothing.
            let ghost = User {
                id: storage::UserId::generate(),
                email: email.clone(),
                email_verified: false,
                name: String::new(),
                image: None,
                role: None,
                banned: false,
                ban_reason: None,
                ban_expires: None,
                created_at: state.clock.now(),
                updated_at: state.clock.now(),
            };
            state.create_token(identifier.clone(), &ghost, 1).await?;
            state.store.delete_verification(&identifier).await?;
        }
    }
    Ok(Json(StatusResponse { status: true }))
}

async fn delete_now(
    state: &AppState,
    cookies: &PendingCookies,
    user: &User,
) -> ApiResult<Json<DeleteUserResponse>> {
    state.actors.user(user.id.clone()).delete_user().await?;
    state.note_revocation(&user.id);
    cookies.push(state.cookies.clear_all());
    tracing::info!(user = %user.id, "user deleted");
    Ok(Json(DeleteUserResponse {
        success: true,
        message: "User deleted".into(),
    }))
}
