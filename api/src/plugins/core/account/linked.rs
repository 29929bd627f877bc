//! Linked accounts: list them, unlink one (never the last, unless configured).
use crate::dto::{iso, StatusResponse, Text};
use crate::error::{ApiError, ApiResult};
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

/// LinkedAccount operations (tag Account).
pub struct LinkedAccountApi;

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
    /// The provider (spec); with it, `accountId` may also be the provider's id of the account.
    provider_id: Option<Text>,
    /// The account's row id (`id` in list-accounts), as better-auth 1.7 sends it.
    account_id: Option<Text>,
}

#[OpenApi(tag = "Tag::Account")]
impl LinkedAccountApi {
    /// List linked accounts
    ///
    /// The caller's password credential and social accounts.
    #[oai(path = "/list-accounts", method = "get", operation_id = "listAccounts")]
    async fn list_accounts(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<AccountDto>>> {
        let accounts = state.reader.list_accounts(&auth.user.id).await?;
        Ok(Json(
            accounts
                .into_iter()
                .map(|a| AccountDto {
                    scopes: a.scopes(),
                    id: a.id.0,
                    provider: a.provider_id.clone(),
                    provider_id: a.provider_id,
                    account_id: a.account_id,
                    user_id: a.user_id.0,
                    created_at: iso(&a.created_at),
                    updated_at: iso(&a.updated_at),
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
        auth: Principal,
        body: Json<UnlinkAccountBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        state.sessions.require_fresh(&auth.session)?;
        if body.0.provider_id.is_none() && body.0.account_id.is_none() {
            return Err(ApiError::validation(
                false,
                vec!["accountId or providerId is required".into()],
            ));
        }
        let mut ev = auth.event(crate::audit::action::ACCOUNT_UNLINKED);
        if let Some(p) = text(&body.0.provider_id) {
            ev = ev.target(p);
        }
        if let Some(a) = text(&body.0.account_id) {
            ev = ev.detail("accountId", a);
        }
        let unlinked = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev.clone()))
            .unlink_account(
                text(&body.0.provider_id),
                text(&body.0.account_id),
                state.config.account.allow_unlinking_all,
            )
            .await
            .map_err(ApiError::from);
        state.audit.audited(ev, unlinked).await?;
        Ok(Json(StatusResponse { status: true }))
    }
}
