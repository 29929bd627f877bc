//! The social flows' work, on the social plugin's service: the authorization-code flow
//! (start, callback, linking), id-token sign-in and linking, each through the actors.
use super::flow::*;
use super::SocialFlow;
use crate::audit::{action, Event, Origin};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{request_cookie, PendingCookies};
use crate::mail::MailKind;
use crate::plugins::social::providers::{random_token, Authorization, Provider};
use crate::plugins::text;
use crate::session::Principal;
use actors::{ActorError, LinkMode, ProviderAccount, ProviderTokens, Rule, SocialSignIn};
use poem::Request;
use poem_openapi::payload::Json;

impl SocialFlow {
    pub(super) fn provider(&self, id: &str) -> ApiResult<&Provider> {
        self.social
            .get(id)
            .ok_or_else(|| ApiError::new(Code::ProviderNotFound))
    }

    pub(super) async fn start_flow(
        &self,
        cookies: &PendingCookies,
        s: Start<'_>,
        link: Option<LinkState>,
    ) -> ApiResult<StartResponse> {
        let provider = self.provider(&s.provider.0)?;
        let callback_url = self
            .origins
            .redirect_target(s.callback_url, Code::InvalidCallbackurl)?
            .unwrap_or_else(|| self.config.base_url.clone());
        let error_url = self
            .origins
            .redirect_target(s.error_callback_url, Code::InvalidErrorCallbackurl)?;
        let new_user_url = self
            .origins
            .redirect_target(s.new_user_callback_url, Code::InvalidNewUserCallbackurl)?;
        let additional = s.additional_params.clone().unwrap_or_default();
        if let Some(k) = additional
            .keys()
            .find(|k| crate::plugins::social::providers::RESERVED_PARAMS.contains(&k.as_str()))
        {
            return Err(ApiError::validation(
                false,
                vec![format!("additionalParams: {k:?} is set by the flow itself")],
            ));
        }
        let requested: Vec<String> = s
            .scopes
            .iter()
            .flatten()
            .map(|t| t.0.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        let oauth_state = random_token(32);
        let code_verifier = random_token(128);
        let nonce = provider.uses_nonce().then(|| random_token(32));
        let url = self
            .social
            .authorize_url(
                provider,
                &Authorization {
                    state: &oauth_state,
                    nonce: nonce.as_deref(),
                    code_verifier: &code_verifier,
                    scopes: &provider.scopes(&requested),
                    login_hint: s.login_hint,
                    additional: &additional,
                },
            )
            .map_err(ApiError::internal)?;
        let flow = FlowState {
            oauth_state: oauth_state.clone(),
            provider: provider.id().to_owned(),
            callback_url,
            error_url,
            new_user_url,
            code_verifier,
            nonce,
            request_sign_up: s.request_sign_up,
            link,
        };
        let now = self.clock.now();
        let value = serde_json::to_string(&flow).map_err(ApiError::internal)?;
        self.actors
            .put_state(&storage::Verification {
                id: storage::VerificationId::generate(),
                identifier: format!("{STATE_PREFIX}{oauth_state}"),
                value,
                expires_at: now + chrono::Duration::seconds(STATE_LIFETIME_SECS),
                created_at: now,
                updated_at: now,
            })
            .await?;
        cookies.push([self.cookies.set(
            &self.cookies.state,
            &self.signer.sign(&oauth_state),
            Some(STATE_LIFETIME_SECS as u64),
        )]);
        let location = (!s.disable_redirect).then(|| url.clone());
        Ok(StartResponse::Ok(
            Json(SocialRedirect {
                url: Some(url),
                redirect: !s.disable_redirect,
                token: None,
                user: None,
                status: None,
                two_factor_redirect: None,
                two_factor_methods: None,
            }),
            location,
        ))
    }

    pub(super) fn default_error_url(&self) -> String {
        self.links.api_url("/error")
    }

    /// `target?error=…[&error_description=…]`.
    pub(super) fn error_redirect(
        &self,
        target: &str,
        error: &str,
        description: Option<&str>,
    ) -> Redirect {
        // The target as given (a relative path stays relative), with any query it had.
        let sep = if target.contains('?') { '&' } else { '?' };
        let enc = |v: &str| {
            percent_encoding::utf8_percent_encode(v, crate::http::URI_COMPONENT).to_string()
        };
        let mut url = format!("{target}{sep}error={}", enc(error));
        if let Some(d) = description {
            let d = percent_encoding::utf8_percent_encode(d, crate::http::URI_COMPONENT);
            url.push_str(&format!("&error_description={d}"));
        }
        Redirect::Found(url)
    }

    /// The callback: checks the state (row and cookie), exchanges the code, reads the
    /// profile, then signs in (or links) and redirects. Every failure is a redirect.
    pub(super) async fn finish_flow(
        &self,
        req: &Request,
        cookies: &PendingCookies,
        provider_id: &str,
        p: CallbackParams,
    ) -> Redirect {
        let Some(oauth_state) = p.state.as_deref().filter(|s| !s.is_empty()) else {
            return self.error_redirect(&self.default_error_url(), "state_not_found", None);
        };
        let identifier = format!("{STATE_PREFIX}{oauth_state}");
        let now = self.clock.now();
        let restart =
            |target: &str| self.error_redirect(target, "please_restart_the_process", None);
        // Read first (to know where errors go), then check the cookie, then take the row:
        // of concurrent callbacks with one state, only the one that takes it goes on.
        let flow = match self.reader.get_verification(&identifier).await {
            Ok(Some(v)) if v.expires_at > now => serde_json::from_str::<FlowState>(&v.value).ok(),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "reading a sign-in state failed");
                return self.error_redirect(
                    &self.default_error_url(),
                    "internal_server_error",
                    None,
                );
            }
        };
        let Some(flow) = flow.filter(|f| f.oauth_state == oauth_state) else {
            return restart(&self.default_error_url());
        };
        let error_url = flow
            .error_url
            .clone()
            .unwrap_or_else(|| self.default_error_url());
        let cookie_state = request_cookie(req, &self.cookies.state)
            .and_then(|c| self.signer.unsign(&c).map(str::to_owned));
        let cookie_ok = cookie_state.as_deref().is_some_and(|c| {
            subtle::ConstantTimeEq::ct_eq(c.as_bytes(), oauth_state.as_bytes()).into()
        });
        if !cookie_ok {
            return restart(&error_url);
        }
        match self.actors.take_state(&identifier).await {
            Ok(Some(_)) => {}
            Ok(None) => return restart(&error_url),
            Err(e) => {
                tracing::warn!(error = %e, "taking a sign-in state failed");
                return self.error_redirect(&error_url, "internal_server_error", None);
            }
        }
        // From here on the flow is over, whatever happens: the browser's state cookie goes.
        cookies.push([self.cookies.set(&self.cookies.state, "", Some(0))]);
        if let Some(error) = p.error.as_deref() {
            return self.error_redirect(&error_url, error, p.error_description.as_deref());
        }
        let Some(code) = p.code.as_deref().filter(|c| !c.is_empty()) else {
            return self.error_redirect(&error_url, "no_code", None);
        };
        let Some(provider) = self.social.get(provider_id) else {
            return self.error_redirect(&error_url, "oauth_provider_not_found", None);
        };
        let tokens = match self
            .social
            .exchange(provider, code, &flow.code_verifier, p.device_id.as_deref())
            .await
        {
            Ok(t) => t,
            Err(e) => {
                tracing::info!(provider = provider_id, error = %e, "code exchange failed");
                return self.error_redirect(&error_url, "invalid_code", None);
            }
        };
        let info = match self
            .social
            .user_info(
                provider,
                &tokens,
                p.user.as_deref(),
                crate::plugins::social::providers::Received::Now {
                    nonce: flow.nonce.as_deref(),
                },
            )
            .await
        {
            Ok(Some((info, _raw))) => info,
            Err(crate::plugins::social::providers::ProviderError::NonceMismatch) => {
                tracing::warn!(provider = provider_id, "id token with another flow's nonce");
                return self.error_redirect(&error_url, "nonce_binding_missing", None);
            }
            Ok(None) => return self.error_redirect(&error_url, "unable_to_get_user_info", None),
            Err(e) => {
                tracing::info!(provider = provider_id, error = %e, "profile request failed");
                return self.error_redirect(&error_url, "unable_to_get_user_info", None);
            }
        };
        let account = ProviderAccount {
            provider_id: provider.id().to_owned(),
            account_id: info.id.clone(),
            email: info.email.clone().unwrap_or_default(),
            email_verified: info.email_verified,
            tokens: self.social.sealed(&tokens),
        };
        if let Some(link) = &flow.link {
            return self
                .finish_link(
                    &Origin::of(req),
                    provider,
                    link,
                    &account,
                    &flow,
                    &error_url,
                )
                .await;
        }
        if info.email.is_none() {
            return self.error_redirect(&error_url, "email_not_found", None);
        }
        let account_email = account.email.clone();
        let origin = Origin::of(req);
        let attempt = || {
            Event::new(action::SIGN_IN, &origin)
                .detail("method", "social")
                .detail("provider", provider_id)
        };
        let allow_sign_up = !provider.cfg.disable_sign_up
            && (!provider.cfg.disable_implicit_sign_up || flow.request_sign_up);
        let ctx = self.audit.social_notes(&origin, provider_id);
        let signed = self
            .actors
            .social_sign_in(
                &SocialSignIn {
                    account,
                    name: info.name.clone(),
                    image: info.image.clone(),
                    trusted: provider.cfg.trusted,
                    allow_sign_up,
                    update_account_on_sign_in: self.config.account.update_account_on_sign_in,
                    implicit_linking: self.config.account.implicit_linking,
                    override_user_info: provider.cfg.override_user_info_on_sign_in,
                },
                &ctx,
            )
            .await;
        let signed = match signed {
            Ok(s) => s,
            Err(e) => {
                let code = match &e {
                    ActorError::Refused(Rule::AccountNotLinked) => "account_not_linked",
                    ActorError::Refused(Rule::SignUpDisabled) => "signup_disabled",
                    ActorError::Refused(Rule::UserGone) => "unable_to_link_account",
                    _ => {
                        tracing::warn!(provider = provider_id, error = %e, "social sign-in failed");
                        "unable_to_create_user"
                    }
                };
                let ev = attempt().target(account_email.clone()).failed_because(code);
                self.audit.record_after(self.audit.noted(ev)).await;
                return self.error_redirect(&error_url, code, None);
            }
        };
        tracing::info!(user = %signed.user.id, provider = provider_id, created = signed.created, "social sign-in");
        let ev = &self.config.email_verification;
        let require_verified =
            ev.require_email_verification || provider.cfg.require_email_verification;
        if signed.created
            && !signed.user.email_verified
            && (ev.send_on_sign_up || require_verified)
            && self.mail.enabled()
            && !signed.user.email.ends_with(".placeholder.invalid")
        {
            if let Err(e) = self
                .account_mail
                .send_verification(
                    &signed.user,
                    MailKind::VerifyEmail,
                    &signed.user.email,
                    Some(&flow.callback_url),
                )
                .await
            {
                tracing::warn!(error = ?e, "verification mail after social sign-up failed");
            }
        }
        let user_id = signed.user.id.clone();
        if require_verified && !signed.user.email_verified {
            let ev = attempt().own(&user_id);
            self.audit.record_refusal(ev, Code::EmailNotVerified).await;
            return self.error_redirect(&error_url, "email_not_verified", None);
        }
        let target = match (&flow.new_user_url, signed.created) {
            (Some(u), true) => u.clone(),
            _ => flow.callback_url.clone(),
        };
        match self.second_step(req, cookies, &signed.user, &target).await {
            Ok(Some(page)) => return Redirect::Found(page),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = ?e, "two-factor challenge after social sign-in failed");
                return self.error_redirect(&error_url, "unable_to_create_session", None);
            }
        }
        let ev = attempt().own(&user_id);
        let ctx = self
            .audit
            .noted(ev.clone().fill(actors::Fill::TargetSession));
        let started = self
            .sessions
            .start_session(req, cookies, signed.user, true, ctx)
            .await;
        let started = self.audit.audited(ev, started).await;
        if let Err(e) = started {
            if e.code == Code::BannedUser {
                tracing::info!("social sign-in refused: banned user");
                return self.error_redirect(&error_url, "banned", Some(&e.message));
            }
            tracing::warn!(error = ?e, "session after social sign-in failed");
            return self.error_redirect(&error_url, "unable_to_create_session", None);
        }
        Redirect::Found(target)
    }

    /// For a user with two-factor sign-in on, from a browser not trusted to skip it: the
    /// challenge instead of a session, and the hosted page of the second step to go to
    /// (`/two-factor?methods=…&redirectTo=…`); `None` when no second step is needed.
    async fn second_step(
        &self,
        req: &poem::Request,
        cookies: &crate::http::PendingCookies,
        user: &storage::User,
        target: &str,
    ) -> ApiResult<Option<String>> {
        if !self.two_factor.needed(req, user, cookies).await? {
            return Ok(None);
        }
        let methods = self.two_factor.begin(user, true, cookies).await?;
        let page = self
            .links
            .with_query("/two-factor", "methods", &methods.join(","));
        Ok(Some(self.links.with_query(&page, "redirectTo", target)))
    }

    pub(super) async fn finish_link(
        &self,
        origin: &Origin,
        provider: &Provider,
        link: &LinkState,
        account: &ProviderAccount,
        flow: &FlowState,
        error_url: &str,
    ) -> Redirect {
        let now = self.clock.now();
        let alive = match self.social.open(&link.encrypted_session_token) {
            Some(token) => matches!(
                self.reader.get_session(&token).await,
                Ok(Some(s)) if s.user_id.0 == link.user_id && s.expires_at > now
            ),
            None => false,
        };
        if !alive {
            return self.error_redirect(error_url, "unable_to_link_account", None);
        }
        let ev = Event::new(action::ACCOUNT_LINKED, origin)
            .own(&storage::UserId(link.user_id.clone()))
            .target(provider.id());
        let r = self
            .actors
            .user(storage::UserId(link.user_id.clone()))
            .with(self.audit.noted(ev.clone()))
            .link_account(
                account,
                LinkMode::Explicit {
                    trusted: provider.cfg.trusted,
                    allow_different_emails: self.config.account.allow_different_emails,
                },
            )
            .await;
        match r {
            Ok(_) => {
                tracing::info!(user = %link.user_id, provider = provider.id(), "account linked");
                Redirect::Found(flow.callback_url.clone())
            }
            Err(e) => {
                let code = match &e {
                    ActorError::Refused(Rule::EmailDoesNotMatch) => "email_does_not_match",
                    ActorError::Refused(Rule::AccountLinkedToOtherUser) => {
                        "account_already_linked_to_different_user"
                    }
                    ActorError::Refused(Rule::LinkingNotAllowed) => "unable_to_link_account",
                    _ => {
                        tracing::warn!(error = %e, "linking failed");
                        "unable_to_link_account"
                    }
                };
                self.audit
                    .record(self.audit.noted(ev.failed_because(code)))
                    .await;
                self.error_redirect(error_url, code, None)
            }
        }
    }

    /// Verifies a client's id token and maps its claims: the provider, the account as the
    /// provider describes it, and the user info.
    pub(super) async fn verified_id_token(
        &self,
        provider_id: &str,
        t: &IdTokenBody,
    ) -> ApiResult<(
        &Provider,
        ProviderAccount,
        crate::plugins::social::providers::profile::UserInfo,
    )> {
        let p = self.provider(provider_id)?;
        if !p.spec.id_token_sign_in || p.cfg.disable_id_token_sign_in {
            return Err(Code::IdTokenNotSupported.into());
        }
        let info = if p.id() == "facebook" && t.token.0.split('.').count() != 3 {
            self.facebook_opaque_token(p, t).await?
        } else {
            let claims = self
                .social
                .verify_id_token(p, &t.token.0, text(&t.nonce))
                .await
                .map_err(|e| {
                    tracing::info!(provider = provider_id, error = %e, "id token refused");
                    ApiError::new(Code::InvalidIdToken)
                })?;
            crate::plugins::social::providers::profile::map(
                p.id(),
                &claims,
                &serde_json::Value::Null,
            )
            .ok_or(Code::FailedToGetUserInfo)?
        };
        let email = info.email.clone().ok_or(Code::UserEmailNotFound)?;
        let account = ProviderAccount {
            provider_id: p.id().to_owned(),
            account_id: info.id.clone(),
            email,
            email_verified: info.email_verified,
            tokens: ProviderTokens {
                id_token: Some(self.social.seal(&t.token.0)),
                access_token: t.access_token.as_ref().map(|a| self.social.seal(&a.0)),
                refresh_token: t.refresh_token.as_ref().map(|r| self.social.seal(&r.0)),
                access_token_expires_at: t
                    .expires_at
                    .and_then(chrono::DateTime::from_timestamp_millis),
                ..ProviderTokens::default()
            },
        };
        Ok((p, account, info))
    }

    /// Facebook's classic login hands the client an opaque token rather than a JWT (Limited
    /// Login's): the user is then whoever the access token sent with it belongs to, once
    /// `debug_token` says that token was issued to this app for that user.
    pub(super) async fn facebook_opaque_token(
        &self,
        p: &Provider,
        t: &IdTokenBody,
    ) -> ApiResult<crate::plugins::social::providers::profile::UserInfo> {
        let Some(access) = t.access_token.as_ref().filter(|a| !a.0.is_empty()) else {
            tracing::info!(provider = p.id(), "opaque id token without an access token");
            return Err(Code::FailedToGetUserInfo.into());
        };
        let tokens = crate::plugins::social::providers::Tokens {
            access_token: Some(access.0.clone()),
            ..Default::default()
        };
        match self
            .social
            .user_info(
                p,
                &tokens,
                None,
                crate::plugins::social::providers::Received::Now { nonce: None },
            )
            .await
        {
            Ok(Some((info, _))) => Ok(info),
            Ok(None) => Err(Code::FailedToGetUserInfo.into()),
            Err(e) => {
                tracing::info!(provider = p.id(), error = %e, "opaque id token refused");
                Err(Code::FailedToGetUserInfo.into())
            }
        }
    }

    pub(super) async fn id_token_sign_in(
        &self,
        req: &Request,
        cookies: &PendingCookies,
        provider_id: &str,
        t: &IdTokenBody,
        request_sign_up: bool,
    ) -> ApiResult<StartResponse> {
        let (p, account, info) = self.verified_id_token(provider_id, t).await?;
        let origin = Origin::of(req);
        let attempt = Event::new(action::SIGN_IN, &origin)
            .detail("method", "id-token")
            .detail("provider", provider_id);
        let email = account.email.clone();
        let ctx = self.audit.social_notes(&origin, provider_id);
        let signed = self
            .actors
            .social_sign_in(
                &SocialSignIn {
                    account,
                    name: info.name,
                    image: info.image,
                    trusted: p.cfg.trusted,
                    allow_sign_up: !p.cfg.disable_sign_up
                        && (!p.cfg.disable_implicit_sign_up || request_sign_up),
                    update_account_on_sign_in: self.config.account.update_account_on_sign_in,
                    implicit_linking: self.config.account.implicit_linking,
                    override_user_info: p.cfg.override_user_info_on_sign_in,
                },
                &ctx,
            )
            .await
            .map_err(ApiError::from);
        let signed = self
            .audit
            .audited(attempt.clone().target(email), signed)
            .await?;
        let attempt = attempt.own(&signed.user.id);
        let require_verified = self.config.email_verification.require_email_verification
            || p.cfg.require_email_verification;
        if require_verified && !signed.user.email_verified {
            self.audit
                .record_refusal(attempt, Code::EmailNotVerified)
                .await;
            return Err(Code::EmailNotVerified.into());
        }
        if self.two_factor.needed(req, &signed.user, cookies).await? {
            let methods = self.two_factor.begin(&signed.user, true, cookies).await?;
            return Ok(StartResponse::Ok(
                Json(SocialRedirect {
                    url: None,
                    redirect: false,
                    token: None,
                    user: None,
                    status: None,
                    two_factor_redirect: Some(true),
                    two_factor_methods: Some(methods),
                }),
                None,
            ));
        }
        let ctx = self
            .audit
            .noted(attempt.clone().fill(actors::Fill::TargetSession));
        let started = self
            .sessions
            .start_session(req, cookies, signed.user, true, ctx)
            .await;
        let authed = self.audit.audited(attempt, started).await?;
        tracing::info!(user = %authed.user.id, provider = provider_id, "id-token sign-in");
        Ok(StartResponse::Ok(
            Json(SocialRedirect {
                url: None,
                redirect: false,
                token: Some(authed.session.token.clone()),
                user: Some(crate::dto::UserDto::from(&authed.user)),
                status: None,
                two_factor_redirect: None,
                two_factor_methods: None,
            }),
            None,
        ))
    }

    pub(super) async fn id_token_link(
        &self,
        auth: &Principal,
        provider_id: &str,
        t: &IdTokenBody,
    ) -> ApiResult<StartResponse> {
        let (p, account, _) = self.verified_id_token(provider_id, t).await?;
        let ev = auth.event(action::ACCOUNT_LINKED).target(provider_id);
        let linked = self
            .actors
            .user(auth.user.id.clone())
            .with(self.audit.noted(ev.clone()))
            .link_account(
                &account,
                LinkMode::Explicit {
                    trusted: p.cfg.trusted,
                    allow_different_emails: self.config.account.allow_different_emails,
                },
            )
            .await
            .map_err(ApiError::from);
        self.audit.audited(ev, linked).await?;
        Ok(StartResponse::Ok(
            Json(SocialRedirect {
                url: Some(String::new()),
                redirect: false,
                token: None,
                user: None,
                status: Some(true),
                two_factor_redirect: None,
                two_factor_methods: None,
            }),
            None,
        ))
    }
}
