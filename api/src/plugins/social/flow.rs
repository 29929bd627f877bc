//! Social sign-in: start a sign-in or a link at a provider, come back from it, and the list of
//! configured providers. The state of a flow lives in two places, and the callback needs both:
//! a single-use verification row `auth-state:{state}` (10 minutes) and a signed cookie with the
//! same state in the browser that started it — a callback from another browser, a replay, or
//! an expired flow goes to the error page with `please_restart_the_process`.
use crate::dto::Text;
use crate::error::ApiResult;
use crate::http::PendingCookies;
use crate::plugins::{text, Tag};
use crate::session::Principal;
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Form, Json};
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub struct SocialApi;

/// How long a flow may take between leaving for the provider and coming back.
pub(super) const STATE_LIFETIME_SECS: i64 = 600;
pub(super) const STATE_PREFIX: &str = "auth-state:";

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub(super) struct IdTokenBody {
    pub(super) token: Text,
    pub(super) nonce: Option<Text>,
    pub(super) access_token: Option<Text>,
    pub(super) refresh_token: Option<Text>,
    pub(super) expires_at: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub(super) struct SignInSocialBody {
    /// A configured provider's id (`github`, `google`, …).
    #[oai(validator(max_length = 64))]
    pub(super) provider: Text,
    /// Where the browser goes after signing in; a trusted origin or a relative path. Default:
    /// the base URL.
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    pub(super) callback_url: Option<Text>,
    /// Where the browser goes after a sign-in that created the user (default: `callbackURL`).
    #[oai(rename = "newUserCallbackURL", validator(max_length = 2048))]
    pub(super) new_user_callback_url: Option<Text>,
    /// Where the browser goes with `?error=…` when the flow fails (default: the error page).
    #[oai(rename = "errorCallbackURL", validator(max_length = 2048))]
    pub(super) error_callback_url: Option<Text>,
    /// `true`: no `Location` header; the client navigates to `url` itself.
    pub(super) disable_redirect: Option<bool>,
    /// Scopes requested besides the provider's defaults.
    #[oai(validator(max_items = 32))]
    pub(super) scopes: Option<Vec<Text>>,
    /// Passed to providers that support it as `login_hint`.
    #[oai(validator(max_length = 256))]
    pub(super) login_hint: Option<Text>,
    /// Allow creating a user when the provider has `disable_implicit_sign_up`.
    pub(super) request_sign_up: Option<bool>,
    /// Extra parameters of the authorize URL (not the ones the flow sets itself).
    pub(super) additional_params: Option<BTreeMap<String, String>>,
    /// better-auth 1.7 hands this to its server-side hooks; Gatehouse has none, so it is
    /// accepted (a better-auth client may send it) and not used.
    pub(super) additional_data: Option<BTreeMap<String, serde_json::Value>>,
    /// Sign in with an id token the client got from the provider (Google, Apple, Microsoft,
    /// Facebook): verified here, then the user is signed in at once (no redirect).
    pub(super) id_token: Option<IdTokenBody>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub(super) struct LinkSocialBody {
    #[oai(validator(max_length = 64))]
    pub(super) provider: Text,
    #[oai(rename = "callbackURL", validator(max_length = 2048))]
    pub(super) callback_url: Option<Text>,
    #[oai(rename = "errorCallbackURL", validator(max_length = 2048))]
    pub(super) error_callback_url: Option<Text>,
    pub(super) disable_redirect: Option<bool>,
    #[oai(validator(max_items = 32))]
    pub(super) scopes: Option<Vec<Text>>,
    #[oai(validator(max_length = 256))]
    pub(super) login_hint: Option<Text>,
    pub(super) additional_params: Option<BTreeMap<String, String>>,
    /// Link with an id token the client got from the provider (no redirect).
    pub(super) id_token: Option<IdTokenBody>,
}

/// The answer of sign-in/social and link-social: the provider's authorize URL to go to, or —
/// with an `idToken` — the result at once.
#[derive(Debug, Object)]
pub(super) struct SocialRedirect {
    /// The provider's authorize URL (absent after an id-token sign-in; `""` after an
    /// id-token link).
    #[oai(skip_serializing_if_is_none)]
    pub(super) url: Option<String>,
    /// Whether the client should navigate to `url`.
    pub(super) redirect: bool,
    /// id-token sign-in: the new session's token (also set as the session cookie).
    #[oai(skip_serializing_if_is_none)]
    pub(super) token: Option<String>,
    /// id-token sign-in: the user.
    #[oai(skip_serializing_if_is_none)]
    pub(super) user: Option<crate::dto::UserDto>,
    /// id-token link: `true`.
    #[oai(skip_serializing_if_is_none)]
    pub(super) status: Option<bool>,
    /// id-token sign-in of a user with two-factor sign-in on: `true`, no session yet (the
    /// `two_factor` cookie is set for the second step).
    #[oai(rename = "twoFactorRedirect", skip_serializing_if_is_none)]
    pub(super) two_factor_redirect: Option<bool>,
    /// With `twoFactorRedirect`: how the second factor can be given.
    #[oai(rename = "twoFactorMethods", skip_serializing_if_is_none)]
    pub(super) two_factor_methods: Option<Vec<String>>,
}

#[derive(ApiResponse)]
pub(super) enum StartResponse {
    /// The authorize URL; also in `Location` unless `disableRedirect`, and the flow's state
    /// cookie is set.
    #[oai(status = 200)]
    Ok(
        Json<SocialRedirect>,
        #[oai(header = "Location")] Option<String>,
    ),
}

#[derive(ApiResponse)]
pub(super) enum Redirect {
    /// To the flow's callback URL (signed in: with the session cookie), or to its error URL
    /// with `?error=…`.
    #[oai(status = 302)]
    Found(#[oai(header = "Location")] String),
}

/// What a provider sends back (query of the GET, form of Apple's POST).
#[derive(Debug, Default, Clone, Object, Serialize, Deserialize)]
pub(super) struct CallbackParams {
    pub(super) code: Option<String>,
    pub(super) state: Option<String>,
    pub(super) error: Option<String>,
    pub(super) error_description: Option<String>,
    /// VK.
    pub(super) device_id: Option<String>,
    /// Apple's first authorization: the user's name, as JSON.
    pub(super) user: Option<String>,
    pub(super) iss: Option<String>,
}

#[derive(Debug, Object)]
pub(super) struct ProviderDto {
    pub(super) id: String,
    /// A display name for a button.
    pub(super) name: String,
}

/// The flow's state, stored as the verification row's value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FlowState {
    pub(super) oauth_state: String,
    pub(super) provider: String,
    #[serde(rename = "callbackURL")]
    pub(super) callback_url: String,
    #[serde(rename = "errorURL", skip_serializing_if = "Option::is_none")]
    pub(super) error_url: Option<String>,
    #[serde(rename = "newUserURL", skip_serializing_if = "Option::is_none")]
    pub(super) new_user_url: Option<String>,
    pub(super) code_verifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) nonce: Option<String>,
    #[serde(default)]
    pub(super) request_sign_up: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) link: Option<LinkState>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LinkState {
    pub(super) user_id: String,
    pub(super) email: String,
    /// The session that asked for the link, encrypted: it must still be alive at the callback.
    pub(super) encrypted_session_token: String,
}

/// The parts of a sign-in or link request that start a flow.
pub(super) struct Start<'a> {
    pub(super) provider: &'a Text,
    pub(super) callback_url: Option<&'a str>,
    pub(super) new_user_callback_url: Option<&'a str>,
    pub(super) error_callback_url: Option<&'a str>,
    pub(super) disable_redirect: bool,
    pub(super) scopes: &'a Option<Vec<Text>>,
    pub(super) login_hint: Option<&'a str>,
    pub(super) request_sign_up: bool,
    pub(super) additional_params: &'a Option<BTreeMap<String, String>>,
}

#[OpenApi(tag = "Tag::Social")]
impl SocialApi {
    /// Sign in with a social provider
    ///
    /// Starts the provider's authorization-code flow: answers the provider's authorize URL
    /// (also as `Location`, unless `disableRedirect`) and sets the flow's state cookie. The
    /// browser comes back to `/callback/{provider}`. An unknown or unconfigured provider
    /// answers 404 `PROVIDER_NOT_FOUND`.
    #[oai(
        path = "/sign-in/social",
        method = "post",
        operation_id = "signInSocial"
    )]
    async fn sign_in_social(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<SignInSocialBody>,
    ) -> ApiResult<StartResponse> {
        let b = &body.0;
        if let Some(t) = &b.id_token {
            return state
                .social_flow
                .id_token_sign_in(
                    req,
                    cookies,
                    &b.provider.0,
                    t,
                    b.request_sign_up.unwrap_or(false),
                )
                .await;
        }
        state
            .social_flow
            .start_flow(
                cookies,
                Start {
                    provider: &b.provider,
                    callback_url: text(&b.callback_url),
                    new_user_callback_url: text(&b.new_user_callback_url),
                    error_callback_url: text(&b.error_callback_url),
                    disable_redirect: b.disable_redirect.unwrap_or(false),
                    scopes: &b.scopes,
                    login_hint: text(&b.login_hint),
                    request_sign_up: b.request_sign_up.unwrap_or(false),
                    additional_params: &b.additional_params,
                },
                None,
            )
            .await
    }

    /// Link a social account
    ///
    /// As sign-in with a provider, for the signed-in user: the callback links the provider's
    /// account to them (the provider must be trusted or have verified the email, and the
    /// emails must match unless `account.allow_different_emails`) and redirects to
    /// `callbackURL` without a new session.
    #[oai(path = "/link-social", method = "post", operation_id = "linkSocial")]
    async fn link_social(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<LinkSocialBody>,
    ) -> ApiResult<StartResponse> {
        let b = &body.0;
        if let Some(t) = &b.id_token {
            return state
                .social_flow
                .id_token_link(&auth, &b.provider.0, t)
                .await;
        }
        let link = LinkState {
            user_id: auth.user.id.0.clone(),
            email: auth.user.email.clone(),
            encrypted_session_token: state.social_flow.social.seal(&auth.session.token),
        };
        state
            .social_flow
            .start_flow(
                &auth.cookies,
                Start {
                    provider: &b.provider,
                    callback_url: text(&b.callback_url),
                    new_user_callback_url: None,
                    error_callback_url: text(&b.error_callback_url),
                    disable_redirect: b.disable_redirect.unwrap_or(false),
                    scopes: &b.scopes,
                    login_hint: text(&b.login_hint),
                    request_sign_up: false,
                    additional_params: &b.additional_params,
                },
                Some(link),
            )
            .await
    }

    /// Come back from a provider
    ///
    /// The provider's redirect: checks the flow's state (the stored row and the browser's
    /// state cookie; single use), exchanges the code, reads the profile, signs the user in
    /// (creating or linking per the linking rules) and redirects to the flow's callback URL
    /// (`newUserCallbackURL` for a new user); on failure to its error URL with `?error=…`.
    #[oai(
        path = "/callback/:id",
        method = "get",
        operation_id = "socialCallback"
    )]
    #[allow(clippy::too_many_arguments)]
    async fn callback_get(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        id: Path<String>,
        code: Query<Option<String>>,
        #[oai(name = "state")] oauth_state: Query<Option<String>>,
        error: Query<Option<String>>,
        error_description: Query<Option<String>>,
        device_id: Query<Option<String>>,
        user: Query<Option<String>>,
    ) -> Redirect {
        let p = CallbackParams {
            code: code.0,
            state: oauth_state.0,
            error: error.0,
            error_description: error_description.0,
            device_id: device_id.0,
            user: user.0,
            iss: None,
        };
        state.social_flow.finish_flow(req, cookies, &id.0, p).await
    }

    /// Come back from a provider by form POST (Apple)
    ///
    /// Redirects (302) to the GET callback with the same parameters, so that the browser's
    /// `SameSite=Lax` state cookie travels with the request that finishes the flow. Parameters
    /// in the query are merged with the form's, the query's winning (as better-auth).
    #[oai(
        path = "/callback/:id",
        method = "post",
        operation_id = "socialCallbackPost"
    )]
    async fn callback_post(
        &self,
        state: Data<&AppState>,
        req: &Request,
        id: Path<String>,
        form: Form<CallbackParams>,
    ) -> ApiResult<Redirect> {
        if state.social_flow.social.get(&id.0).is_none() {
            return Ok(state.social_flow.error_redirect(
                &state.social_flow.default_error_url(),
                "oauth_provider_not_found",
                None,
            ));
        }
        let p = form.0;
        let query: Vec<(String, String)> =
            url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("code", &p.code),
            ("state", &p.state),
            ("error", &p.error),
            ("error_description", &p.error_description),
            ("device_id", &p.device_id),
            ("user", &p.user),
            ("iss", &p.iss),
        ] {
            let from_query = query.iter().find(|(name, _)| name == k).map(|(_, v)| v);
            if let Some(v) = from_query.or(v.as_ref()) {
                q.append_pair(k, v);
            }
        }
        let path = format!("/callback/{}", id.0);
        Ok(Redirect::Found(format!(
            "{}?{}",
            state.links.api_url(&path),
            q.finish()
        )))
    }

    /// List the configured social providers
    ///
    /// Each provider's id and display name, for sign-in buttons; nothing secret.
    #[oai(
        path = "/social-providers",
        method = "get",
        operation_id = "listSocialProviders"
    )]
    async fn social_providers(&self, state: Data<&AppState>) -> Json<Vec<ProviderDto>> {
        Json(
            state
                .social_flow
                .social
                .list()
                .map(|p| ProviderDto {
                    id: p.id().to_owned(),
                    name: p.spec.name.to_owned(),
                })
                .collect(),
        )
    }
}
