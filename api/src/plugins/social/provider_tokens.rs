//! A linked provider account's tokens and profile: get a valid access token (refreshing it
//! when it is about to expire), refresh on demand, and read the account's profile at the
//! provider. Tokens are stored encrypted; they are decrypted only to be answered or used.
use super::SocialFlow;
use crate::dto::{iso, Text};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::social::providers::{Provider, Tokens};
use crate::plugins::{text, Tag};
use crate::session::ResolveOptions;
use crate::AppState;
use actors::ProviderTokens;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use storage::{Account, User, UserId, CREDENTIAL_PROVIDER};

pub struct ProviderTokenApi;

/// Which account: 1.7's `{accountId: <row id>}`, or the spec's `{providerId, accountId?}`
/// where `accountId` may be the row id or the provider's id of the account.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct AccountRef {
    #[oai(validator(max_length = 64))]
    provider_id: Option<Text>,
    #[oai(validator(max_length = 256))]
    account_id: Option<Text>,
    /// Server calls only (`Authorization: Bearer <server_key>`): whose account.
    #[oai(validator(max_length = 64))]
    user_id: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct AccessTokenResponse {
    access_token: String,
    #[oai(skip_serializing_if_is_none)]
    access_token_expires_at: Option<String>,
    scopes: Vec<String>,
    #[oai(skip_serializing_if_is_none)]
    id_token: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct RefreshResponse {
    access_token: String,
    #[oai(skip_serializing_if_is_none)]
    refresh_token: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    access_token_expires_at: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    refresh_token_expires_at: Option<String>,
    /// The stored scopes, comma-joined (1.7), and as a list (spec).
    scope: Option<String>,
    scopes: Vec<String>,
    id_token: Option<String>,
    token_type: String,
    provider_id: String,
    /// The account's row id.
    account_id: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct ProviderUser {
    name: String,
    email: Option<String>,
    image: Option<String>,
    email_verified: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
struct AccountKey {
    id: String,
    provider_id: String,
    account_id: String,
}

#[derive(Debug, Object)]
struct AccountInfoResponse {
    user: ProviderUser,
    /// The provider's profile as it answered it.
    data: serde_json::Value,
    account: AccountKey,
}

impl SocialFlow {
    /// The caller's user: the session's, or — only for a server call without a session —
    /// the body's `userId`.
    async fn token_owner(
        &self,
        req: &Request,
        cookies: &PendingCookies,
        user_id: Option<&str>,
    ) -> ApiResult<User> {
        let opts = ResolveOptions {
            disable_cookie_cache: true,
            disable_refresh: false,
        };
        if let Some(a) = self.sessions.resolve_session(req, cookies, opts).await? {
            return Ok(a.user);
        }
        match user_id {
            Some(id) if self.sessions.server_call_ok(req) => self
                .reader
                .get_user(&UserId(id.to_owned()))
                .await?
                .ok_or_else(|| ApiError::new(Code::UserNotFound)),
            _ => Err(Code::Unauthorized.into()),
        }
    }

    /// The account a token request names, among `user`'s.
    async fn named_account(&self, user: &User, r: &AccountRef) -> ApiResult<Account> {
        let provider = text(&r.provider_id);
        let account = text(&r.account_id);
        if provider.is_none() && account.is_none() {
            return Err(ApiError::validation(
                false,
                vec!["accountId or providerId is required".into()],
            ));
        }
        self.reader
            .list_accounts(&user.id)
            .await?
            .into_iter()
            .find(|a| {
                provider.is_none_or(|p| a.provider_id == p)
                    && account
                        .is_none_or(|id| a.id.0 == id || (provider.is_some() && a.account_id == id))
            })
            .ok_or_else(|| ApiError::new(Code::AccountNotFound))
    }

    fn social_provider_of(&self, a: &Account, code: Code) -> ApiResult<&Provider> {
        if a.provider_id == CREDENTIAL_PROVIDER {
            return Err(code.into());
        }
        self.social
            .get(&a.provider_id)
            .ok_or_else(|| ApiError::new(code))
    }

    /// Refreshes at the provider and stores the result (encrypted) on the account.
    async fn refresh_account(
        &self,
        p: &Provider,
        a: &Account,
        refresh_token: &str,
    ) -> Result<(Account, Tokens), crate::plugins::social::providers::ProviderError> {
        let t = self.social.refresh(p, refresh_token).await?;
        let sealed = ProviderTokens {
            // A refresh does not change the granted scopes.
            scope: None,
            ..self.social.sealed(&t)
        };
        let stored = self
            .actors
            .user(a.user_id.clone())
            .store_tokens(&a.id, &sealed)
            .await
            .map_err(|e| {
                crate::plugins::social::providers::ProviderError::Malformed(e.to_string())
            })?;
        Ok((stored, t))
    }

    fn open_opt(&self, v: &Option<String>) -> Option<String> {
        v.as_deref().and_then(|s| self.social.open(s))
    }

    /// A valid access token of `a`: the stored one, or a refreshed one when the stored one
    /// expires within 5 s or its expiry is unknown and a refresh token exists.
    async fn valid_access_token(
        &self,
        p: &Provider,
        a: Account,
        failure: Code,
    ) -> ApiResult<Account> {
        let soon = self.clock.now() + chrono::Duration::seconds(5);
        let due = a.access_token_expires_at.is_none_or(|t| t < soon);
        let refresh = self.open_opt(&a.refresh_token);
        match (due, refresh, p.spec.refresh) {
            (true, Some(rt), true) => match self.refresh_account(p, &a, &rt).await {
                Ok((stored, _)) => Ok(stored),
                Err(e) => {
                    tracing::info!(provider = p.id(), error = %e, "token refresh failed");
                    Err(failure.into())
                }
            },
            _ => Ok(a),
        }
    }
}

#[OpenApi(tag = "Tag::Social")]
impl ProviderTokenApi {
    /// Get a provider access token
    ///
    /// A valid access token of one of the caller's linked accounts, refreshed first when it
    /// expires within 5 seconds (or its expiry is unknown) and a refresh token is stored.
    #[oai(
        path = "/get-access-token",
        method = "post",
        operation_id = "getAccessToken"
    )]
    async fn get_access_token(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<AccountRef>,
    ) -> ApiResult<Json<AccessTokenResponse>> {
        let user = state
            .social_flow
            .token_owner(req, cookies, text(&body.0.user_id))
            .await?;
        let a = state.social_flow.named_account(&user, &body.0).await?;
        let p = state
            .social_flow
            .social_provider_of(&a, Code::ProviderNotSupported)?;
        let a = state
            .social_flow
            .valid_access_token(p, a, Code::FailedToGetAccessToken)
            .await?;
        let access_token = state
            .social_flow
            .open_opt(&a.access_token)
            .ok_or(Code::FailedToGetAccessToken)?;
        Ok(Json(AccessTokenResponse {
            access_token,
            access_token_expires_at: a.access_token_expires_at.as_ref().map(iso),
            scopes: a.scopes(),
            id_token: state.social_flow.open_opt(&a.id_token),
        }))
    }

    /// Refresh a provider access token
    ///
    /// Trades the account's stored refresh token for new tokens at the provider and stores
    /// them; a refresh token is kept when the provider sends no new one.
    #[oai(
        path = "/refresh-token",
        method = "post",
        operation_id = "refreshToken"
    )]
    async fn refresh_token(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<AccountRef>,
    ) -> ApiResult<Json<RefreshResponse>> {
        let user = state
            .social_flow
            .token_owner(req, cookies, text(&body.0.user_id))
            .await?;
        let a = state.social_flow.named_account(&user, &body.0).await?;
        let p = state
            .social_flow
            .social_provider_of(&a, Code::ProviderNotSupported)?;
        if !p.spec.refresh {
            return Err(Code::TokenRefreshNotSupported.into());
        }
        let rt = state
            .social_flow
            .open_opt(&a.refresh_token)
            .ok_or(Code::RefreshTokenNotFound)?;
        let (stored, _) = state
            .social_flow
            .refresh_account(p, &a, &rt)
            .await
            .map_err(|e| {
                tracing::info!(provider = p.id(), error = %e, "token refresh failed");
                ApiError::new(Code::FailedToRefreshAccessToken)
            })?;
        let access_token = state
            .social_flow
            .open_opt(&stored.access_token)
            .ok_or(Code::FailedToRefreshAccessToken)?;
        Ok(Json(RefreshResponse {
            access_token,
            refresh_token: state.social_flow.open_opt(&stored.refresh_token),
            access_token_expires_at: stored.access_token_expires_at.as_ref().map(iso),
            refresh_token_expires_at: stored.refresh_token_expires_at.as_ref().map(iso),
            scopes: stored.scopes(),
            scope: stored.scope.clone(),
            id_token: state.social_flow.open_opt(&stored.id_token),
            token_type: "Bearer".into(),
            provider_id: stored.provider_id.clone(),
            account_id: stored.id.0.clone(),
        }))
    }

    /// A linked account's profile at the provider
    ///
    /// Asks the provider for the account's profile now (with a valid access token, refreshed
    /// if needed): the mapped user, the raw profile, and the account's keys.
    #[oai(path = "/account-info", method = "get", operation_id = "accountInfo")]
    async fn account_info(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        #[oai(name = "accountId")] account_id: Query<Option<String>>,
        #[oai(name = "providerId")] provider_id: Query<Option<String>>,
        #[oai(name = "userId")] user_id: Query<Option<String>>,
    ) -> ApiResult<Json<AccountInfoResponse>> {
        let r = AccountRef {
            provider_id: provider_id.0.map(Text),
            account_id: account_id.0.map(Text),
            user_id: user_id.0.map(Text),
        };
        let user = state
            .social_flow
            .token_owner(req, cookies, text(&r.user_id))
            .await?;
        let a = state.social_flow.named_account(&user, &r).await?;
        let p = state
            .social_flow
            .social_provider_of(&a, Code::ProviderNotConfigured)?;
        let a = state
            .social_flow
            .valid_access_token(p, a, Code::FailedToGetAccessToken)
            .await?;
        let tokens = Tokens {
            access_token: state.social_flow.open_opt(&a.access_token),
            id_token: state.social_flow.open_opt(&a.id_token),
            ..Tokens::default()
        };
        if tokens.access_token.is_none() {
            return Err(Code::AccessTokenNotFound.into());
        }
        let (info, raw) = match state
            .social_flow
            .social
            .user_info(
                p,
                &tokens,
                None,
                crate::plugins::social::providers::Received::Stored,
            )
            .await
        {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Code::FailedToGetUserInfo.into()),
            Err(e) => {
                tracing::info!(provider = p.id(), error = %e, "profile request failed");
                return Err(Code::FailedToGetUserInfo.into());
            }
        };
        Ok(Json(AccountInfoResponse {
            user: ProviderUser {
                name: info.name,
                email: info.email,
                image: info.image,
                email_verified: info.email_verified,
            },
            data: raw,
            account: AccountKey {
                id: a.id.0,
                provider_id: a.provider_id,
                account_id: a.account_id,
            },
        }))
    }
}
