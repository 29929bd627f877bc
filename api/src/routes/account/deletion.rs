//! Deleting the account: with the password or a fresh session; by a mailed, single-use link when
//! a mail sender is configured (the link's token is consumed and the user deleted in one turn of
//! the user's actor).
use super::*;
use crate::dto::Text;
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::mail::MailKind;
use crate::routes::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use chrono::Duration;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::User;

/// Deletion operations (tag Account).
pub struct DeletionApi;

#[derive(Debug, Object)]
struct DeleteUserBody {
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    callback_url: Option<Text>,
    password: Option<Text>,
    token: Option<Text>,
}

#[derive(Debug, Object)]
struct DeleteUserResponse {
    success: bool,
    message: String,
}

impl AppState {
    /// Deletes the account a delete-account token points at, consuming the token in the same
    /// actor turn: the user deleted, or `None` when the token is not (or no longer) valid.
    async fn delete_by_token(&self, identifier: &str) -> ApiResult<Option<User>> {
        let Some(v) = self
            .reader
            .get_verification(identifier)
            .await?
            .filter(|v| v.expires_at > self.clock.now())
        else {
            return Ok(None);
        };
        let Some(user) = self.reader.get_user(&storage::UserId(v.value)).await? else {
            return Ok(None);
        };
        match self
            .actors
            .user(user.id.clone())
            .delete_with_token(identifier)
            .await
        {
            Ok(()) => {}
            Err(actors::ActorError::Refused(actors::Rule::InvalidToken)) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        Ok(Some(user))
    }
}

#[OpenApi(tag = "Tag::Account")]
impl DeletionApi {
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
        auth: Principal,
        body: Json<DeleteUserBody>,
    ) -> ApiResult<Json<DeleteUserResponse>> {
        if !state.config.account.delete_user_enabled {
            return Err(Code::DeleteUserDisabled.into());
        }
        let Principal { user, session, .. } = auth;
        let cb = state
            .origins
            .redirect_target(text(&body.0.callback_url), Code::InvalidCallbackurl)?;
        let cb = cb.as_deref();
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
            // Only the caller's own token (the actor checks it points at them).
            state
                .actors
                .user(user.id.clone())
                .delete_with_token(&format!("delete-account-{token}"))
                .await?;
            return deleted(&state, cookies, &user);
        }
        if state.mailer.enabled() {
            let token = storage::random_lower_alnum(32);
            state
                .create_token(
                    &format!("delete-account-{token}"),
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
        let cb = state
            .origins
            .redirect_target(callback_url.0.as_deref(), Code::InvalidCallbackurl)?;
        let Some(user) = state
            .delete_by_token(&format!("delete-account-{}", token.0))
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
        let done = deleted(&state, cookies, &user)?;
        match cb {
            Some(c) => Ok(RedirectOr::Redirect(state.absolute(&c))),
            None => Ok(RedirectOr::Ok(done)),
        }
    }
}

async fn delete_now(
    state: &AppState,
    cookies: &PendingCookies,
    user: &User,
) -> ApiResult<Json<DeleteUserResponse>> {
    state.actors.user(user.id.clone()).delete_user().await?;
    deleted(state, cookies, user)
}

/// After `user` was deleted: their cached sessions stop counting, the cookies go.
fn deleted(
    state: &AppState,
    cookies: &PendingCookies,
    user: &User,
) -> ApiResult<Json<DeleteUserResponse>> {
    state.note_revocation(&user.id);
    cookies.push(state.cookies.clear_all());
    tracing::info!(user = %user.id, "user deleted");
    Ok(Json(DeleteUserResponse {
        success: true,
        message: "User deleted".into(),
    }))
}
