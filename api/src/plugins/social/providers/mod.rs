//! Social sign-in: the configured providers, the authorization-code flow's outbound calls
//! (token exchange, refresh, profile), and the encryption of provider tokens at rest.
//!
//! Outbound calls never follow redirects (a token or profile endpoint that redirects is
//! treated as failing), time out after `account.provider_timeout_ms`, and are logged by
//! provider and outcome only — never with codes or tokens.
pub mod catalog;
pub mod id_token;
pub mod profile;
mod token;
mod util;

use util::*;
pub use util::{challenge, decode_claims, random_token};

use crate::config::{Config, SocialProviderConfig};
use base64::Engine;
use catalog::{ClientAuth, ProfileSource, Spec};
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::{DateTime, Utc};
use hmac::Mac;
use profile::UserInfo;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// One configured provider: its description with the configuration's overrides applied.
#[derive(Debug, Clone)]
pub struct Provider {
    pub spec: &'static Spec,
    pub cfg: SocialProviderConfig,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub user_info_endpoint: String,
    pub extra_endpoint: String,
    pub jwks_uri: String,
    pub redirect_uri: String,
    /// What signs the client's credential at the token endpoint, when key material is
    /// configured instead of a secret.
    signer: Option<Signer>,
}

/// Key material that stands in for a client secret.
#[derive(Debug, Clone)]
enum Signer {
    /// Apple: the client secret is an ES256 JWT signed by the team's key.
    Apple(AppleKey),
    /// Microsoft (`private_key_jwt`): an RS256 client assertion signed by the key of the
    /// certificate registered with the app, named by its thumbprint.
    Assertion(AssertionKey),
}

/// The key of a certificate credential, and the certificate's SHA-1 thumbprint as the `x5t`
/// header carries it (base64url).
#[derive(Clone)]
struct AssertionKey {
    x5t: String,
    key: jsonwebtoken::EncodingKey,
}

impl std::fmt::Debug for AssertionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionKey")
            .field("x5t", &self.x5t)
            .finish_non_exhaustive()
    }
}

/// The type of a client assertion (RFC 7523).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// What signs Apple's client secret: the team's ES256 key.
#[derive(Clone)]
struct AppleKey {
    team_id: String,
    key_id: String,
    key: jsonwebtoken::EncodingKey,
}

impl std::fmt::Debug for AppleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppleKey")
            .field("team_id", &self.team_id)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl Provider {
    pub fn id(&self) -> &'static str {
        self.spec.id
    }

    /// With `hd` configured (Google Workspace), whether the id token's `hd` claim is it (`*`:
    /// any Workspace domain, i.e. present and not empty). Without it, always.
    pub fn hosted_domain_ok(&self, claims: &Value) -> bool {
        let Some(want) = self.cfg.hd.as_deref() else {
            return true;
        };
        let got = claims.get("hd").and_then(Value::as_str).unwrap_or_default();
        if want == "*" {
            !got.is_empty()
        } else {
            got.eq_ignore_ascii_case(want)
        }
    }

    /// The user comes from the id token of the token response, so the flow binds a nonce to
    /// it (required anyway where the authorization response itself carries an id token).
    pub fn uses_nonce(&self) -> bool {
        self.spec.profile == ProfileSource::IdToken
    }

    /// The scopes of an authorization: the defaults (unless disabled), the configured ones,
    /// then the request's, without repeats.
    pub fn scopes(&self, requested: &[String]) -> Vec<String> {
        let defaults = if self.cfg.disable_default_scope {
            &[][..]
        } else {
            self.spec.scopes
        };
        let mut out: Vec<String> = Vec::new();
        for s in defaults
            .iter()
            .map(|s| s.to_string())
            .chain(self.cfg.scopes.iter().cloned())
            .chain(requested.iter().cloned())
        {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// What the authorize URL carries besides the client's registration.
pub struct Authorization<'a> {
    pub state: &'a str,
    /// OIDC providers whose id token carries the identity: bound to this flow, checked in
    /// the id token at the callback.
    pub nonce: Option<&'a str>,
    pub code_verifier: &'a str,
    pub scopes: &'a [String],
    pub login_hint: Option<&'a str>,
    pub additional: &'a BTreeMap<String, String>,
}

/// Where the tokens a profile is read from come from.
#[derive(Debug, Clone, Copy)]
pub enum Received<'a> {
    /// Straight from the token endpoint in this flow: an id token is verified (signature,
    /// issuer, audience, age) and must carry the flow's nonce, if it bound one.
    Now { nonce: Option<&'a str> },
    /// From the store, where only tokens verified on arrival are kept.
    Stored,
}

/// A token endpoint's answer, as stored.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    pub access_token: Option<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub access_token_expires_at: Option<DateTime<Utc>>,
    pub refresh_token_expires_at: Option<DateTime<Utc>>,
    pub scopes: Vec<String>,
}

/// Why a call to a provider failed (logged; the client sees only the redirect's code).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider unreachable or too slow: {0}")]
    Transport(String),
    #[error("provider answered {status}: {error}")]
    Refused { status: u16, error: String },
    #[error("unexpected answer: {0}")]
    Malformed(String),
    /// The id token is not the one this flow asked for (another flow's, or replayed).
    #[error("the id token's nonce is not the flow's")]
    NonceMismatch,
}

/// Keys of the authorize URL a request's `additionalParams` may not set.
pub const RESERVED_PARAMS: &[&str] = &[
    "state",
    "client_id",
    "client_key",
    "redirect_uri",
    "response_type",
    "code_challenge",
    "code_challenge_method",
    "nonce",
    "scope",
];

/// The configured providers and the HTTP client they are called with.
pub struct Social {
    providers: BTreeMap<&'static str, Provider>,
    http: reqwest::Client,
    cipher: XChaCha20Poly1305,
    keys: id_token::KeyCache,
}

impl Social {
    pub fn from_config(config: &Config, secret: &str) -> Result<Self, String> {
        let base = format!(
            "{}{}",
            config.base_url.trim_end_matches('/'),
            crate::BASE_PATH
        );
        let mut providers = BTreeMap::new();
        for (id, cfg) in config.social.iter().filter(|(_, c)| c.enabled) {
            let spec = catalog::find(id).ok_or_else(|| format!("no provider {id:?}"))?;
            if cfg.hd.is_some() && spec.id != "google" {
                return Err(format!("social.{id}.hd: only Google has hosted domains"));
            }
            if cfg.hd.as_deref().is_some_and(|hd| hd.trim().is_empty()) {
                return Err(format!("social.{id}.hd: a domain, or * for any"));
            }
            let tenant = |url: &str| match &cfg.tenant_id {
                Some(t) => url.replace("/common/", &format!("/{t}/")),
                None => url.to_owned(),
            };
            let pick = |over: &Option<String>, default: &str| {
                over.clone().unwrap_or_else(|| tenant(default))
            };
            let signer = match (spec.id, &cfg.private_key, &cfg.team_id, &cfg.key_id) {
                (_, None, _, _) => None,
                ("apple", Some(pem), Some(team_id), Some(key_id)) => Some(Signer::Apple(AppleKey {
                    team_id: team_id.clone(),
                    key_id: key_id.clone(),
                    key: jsonwebtoken::EncodingKey::from_ec_pem(pem.expose().as_bytes())
                        .map_err(|e| format!("social.{id}.private_key: {e}"))?,
                })),
                ("apple", Some(_), _, _) => {
                    return Err(format!("social.{id}: private_key needs team_id and key_id"))
                }
                ("microsoft", Some(pem), None, Some(thumbprint)) => {
                    if cfg.client_secret.is_some() {
                        return Err(format!(
                            "social.{id}: a private_key (certificate credential) or a \
                             client_secret, not both"
                        ));
                    }
                    Some(Signer::Assertion(AssertionKey {
                        x5t: x5t(thumbprint)
                            .ok_or_else(|| format!("social.{id}.key_id: the certificate's SHA-1 thumbprint (40 hex digits)"))?,
                        key: jsonwebtoken::EncodingKey::from_rsa_pem(pem.expose().as_bytes())
                            .map_err(|e| format!("social.{id}.private_key: {e}"))?,
                    }))
                }
                ("microsoft", Some(_), _, _) => {
                    return Err(format!(
                        "social.{id}: private_key needs key_id (the certificate's thumbprint), not team_id"
                    ))
                }
                (_, Some(_), _, _) => {
                    return Err(format!(
                        "social.{id}.private_key: only Apple and Microsoft sign with a key"
                    ))
                }
            };
            providers.insert(
                spec.id,
                Provider {
                    spec,
                    authorization_endpoint: pick(
                        &cfg.authorization_endpoint,
                        spec.authorization_endpoint,
                    ),
                    token_endpoint: pick(&cfg.token_endpoint, spec.token_endpoint),
                    user_info_endpoint: pick(&cfg.user_info_endpoint, spec.user_info_endpoint),
                    extra_endpoint: pick(&cfg.extra_endpoint, spec.extra_endpoint),
                    jwks_uri: pick(&cfg.jwks_uri, spec.jwks_uri),
                    redirect_uri: cfg
                        .redirect_uri
                        .clone()
                        .unwrap_or_else(|| format!("{base}/callback/{}", spec.id)),
                    cfg: cfg.clone(),
                    signer,
                },
            );
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_millis(config.account.provider_timeout_ms))
            .connect_timeout(Duration::from_millis(
                config.account.provider_timeout_ms.min(5_000),
            ))
            .user_agent(concat!("gatehouse/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            providers,
            http,
            cipher: XChaCha20Poly1305::new(&token_key(secret).into()),
            keys: id_token::KeyCache::default(),
        })
    }

    pub fn get(&self, id: &str) -> Option<&Provider> {
        self.providers.get(id)
    }

    /// The configured providers (for the UI's buttons).
    pub fn list(&self) -> impl Iterator<Item = &Provider> {
        self.providers.values()
    }

    /// The URL the browser is sent to.
    pub fn authorize_url(&self, p: &Provider, a: &Authorization<'_>) -> Result<String, String> {
        let mut url = url::Url::parse(&p.authorization_endpoint).map_err(|e| e.to_string())?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", p.spec.response_type);
            if p.spec.client_auth == ClientAuth::ClientKey {
                q.append_pair("client_key", &p.cfg.client_id);
            } else {
                q.append_pair("client_id", &p.cfg.client_id);
            }
            q.append_pair("state", a.state);
            if !a.scopes.is_empty() {
                q.append_pair("scope", &a.scopes.join(p.spec.scope_separator));
            }
            q.append_pair("redirect_uri", &p.redirect_uri);
            if let Some(nonce) = a.nonce {
                q.append_pair("nonce", nonce);
            }
            if p.spec.pkce {
                q.append_pair("code_challenge_method", "S256");
                q.append_pair("code_challenge", &challenge(a.code_verifier));
            }
            for (k, v) in p.spec.authorize_params {
                if *k == "prompt" && p.cfg.prompt.is_some() {
                    continue;
                }
                q.append_pair(k, v);
            }
            if let Some(prompt) = &p.cfg.prompt {
                q.append_pair("prompt", prompt);
            }
            if let (true, Some(hint)) = (p.spec.login_hint, a.login_hint) {
                q.append_pair("login_hint", hint);
            }
            if let Some(hd) = &p.cfg.hd {
                q.append_pair("hd", hd);
            }
            for (k, v) in a.additional {
                q.append_pair(k, v);
            }
        }
        Ok(url.into())
    }

    /// Exchanges an authorization code for tokens.
    pub async fn exchange(
        &self,
        p: &Provider,
        code: &str,
        code_verifier: &str,
        device_id: Option<&str>,
    ) -> Result<Tokens, ProviderError> {
        let grant = token::Grant::Code {
            code,
            verifier: p.spec.sends_verifier.then_some(code_verifier),
            device_id,
        };
        token::request(&self.http, p, self.credential(p)?, grant).await
    }

    /// Trades a refresh token for new tokens.
    pub async fn refresh(
        &self,
        p: &Provider,
        refresh_token: &str,
    ) -> Result<Tokens, ProviderError> {
        let grant = token::Grant::Refresh {
            token: refresh_token,
            // Microsoft asks for its scopes again.
            scopes: if p.spec.id == "microsoft" {
                p.scopes(&[])
            } else {
                Vec::new()
            },
        };
        token::request(&self.http, p, self.credential(p)?, grant).await
    }

    /// The client's credential for one token request: the configured secret, or one signed
    /// now from the configured key.
    fn credential(&self, p: &Provider) -> Result<token::Credential, ProviderError> {
        let signing = |e: jsonwebtoken::errors::Error| {
            ProviderError::Malformed(format!("client credential: {e}"))
        };
        Ok(match &p.signer {
            Some(Signer::Apple(k)) => token::Credential::Secret(Some(
                apple_client_secret(k, &p.cfg.client_id).map_err(signing)?,
            )),
            Some(Signer::Assertion(k)) => token::Credential::Assertion(
                client_assertion(k, &p.cfg.client_id, &p.token_endpoint).map_err(signing)?,
            ),
            None => token::Credential::Secret(
                p.cfg.client_secret.as_ref().map(|s| s.expose().to_owned()),
            ),
        })
    }

    /// The user behind `tokens`, and the provider's raw profile. `apple_user`: the `user`
    /// form field of Apple's first callback (the only place Apple sends the name).
    pub async fn user_info(
        &self,
        p: &Provider,
        tokens: &Tokens,
        apple_user: Option<&str>,
        received: Received<'_>,
    ) -> Result<Option<(UserInfo, Value)>, ProviderError> {
        let access = tokens.access_token.as_deref().unwrap_or_default();
        let (mut raw, extra) = match p.spec.profile {
            ProfileSource::IdToken => {
                let token = tokens
                    .id_token
                    .as_deref()
                    .ok_or_else(|| ProviderError::Malformed("no id_token".into()))?;
                let claims = match received {
                    Received::Now { nonce } => self
                        .verify_id_token(p, token, nonce)
                        .await
                        .map_err(|e| match e {
                            id_token::IdTokenError::Nonce => ProviderError::NonceMismatch,
                            e => ProviderError::Malformed(format!("id token: {e}")),
                        })?,
                    // Verified when it was received; it may have expired since.
                    Received::Stored => decode_claims(token)
                        .ok_or_else(|| ProviderError::Malformed("no readable id_token".into()))?,
                };
                let extra = if p.spec.id == "microsoft" {
                    self.microsoft_photo(p, access).await
                } else {
                    Value::Null
                };
                (claims, extra)
            }
            ProfileSource::Get => {
                let raw = self.get_json(p, &p.user_info_endpoint, access).await?;
                let extra = match p.spec.id {
                    "github" | "twitter" => self
                        .get_json(p, &p.extra_endpoint, access)
                        .await
                        .unwrap_or(Value::Null),
                    "facebook" => {
                        self.facebook_check(p, access, &raw).await?;
                        Value::Null
                    }
                    _ => Value::Null,
                };
                (raw, extra)
            }
            ProfileSource::PostEmpty => {
                let r = self.http.post(&p.user_info_endpoint).bearer_auth(access);
                (read_json(r).await?, Value::Null)
            }
            ProfileSource::PostForm => {
                let r = self.http.post(&p.user_info_endpoint).form(&[
                    ("access_token", access),
                    ("client_id", p.cfg.client_id.as_str()),
                ]);
                (read_json(r).await?, Value::Null)
            }
        };
        if let (Some(user), Value::Object(map)) = (apple_user, &mut raw) {
            if let Ok(u) = serde_json::from_str::<Value>(user) {
                map.insert("user".into(), u);
            }
        }
        let Some(info) = profile::map(p.spec.id, &raw, &extra) else {
            return Ok(None);
        };
        // GitHub lists addresses apart from the profile: as 1.7, the profile's `email` is the
        // one used.
        if p.spec.id == "github" {
            if let (Value::Object(map), Some(email)) = (&mut raw, &info.email) {
                if map.get("email").is_none_or(Value::is_null) {
                    map.insert("email".into(), Value::String(email.clone()));
                }
            }
        }
        Ok(Some((info, raw)))
    }

    async fn get_json(
        &self,
        p: &Provider,
        url: &str,
        access: &str,
    ) -> Result<Value, ProviderError> {
        let mut r = self.http.get(url).bearer_auth(access);
        if p.spec.id == "github" {
            r = r.header(reqwest::header::ACCEPT, "application/vnd.github+json");
        }
        read_json(r).await
    }

    /// Facebook: the access token must have been issued to this app, for the user `/me` is.
    async fn facebook_check(
        &self,
        p: &Provider,
        access: &str,
        me: &Value,
    ) -> Result<(), ProviderError> {
        let secret = p
            .cfg
            .client_secret
            .as_ref()
            .map(|s| s.expose())
            .unwrap_or_default();
        let app_token = format!("{}|{secret}", p.cfg.client_id);
        let r = self.http.get(&p.extra_endpoint).query(&[
            ("input_token", access),
            ("access_token", app_token.as_str()),
        ]);
        let info = read_json(r).await?;
        let d = info.get("data").unwrap_or(&Value::Null);
        let ok = profile::truthy(d, &["is_valid"])
            && profile::s(d, &["app_id"]).as_deref() == Some(p.cfg.client_id.as_str())
            && profile::s(d, &["user_id"]).is_some()
            && profile::s(d, &["user_id"]) == profile::s(me, &["id"]);
        if ok {
            Ok(())
        } else {
            Err(ProviderError::Malformed(
                "debug_token refused the access token".into(),
            ))
        }
    }

    /// Microsoft's Graph photo as a data URL, or nothing (a missing photo is not an error).
    async fn microsoft_photo(&self, p: &Provider, access: &str) -> Value {
        let Ok(r) = self
            .http
            .get(&p.extra_endpoint)
            .bearer_auth(access)
            .send()
            .await
        else {
            return Value::Null;
        };
        if !r.status().is_success() {
            return Value::Null;
        }
        match r.bytes().await {
            Ok(b) if !b.is_empty() => serde_json::json!({
                "photo": format!(
                    "data:image/jpeg;base64, {}",
                    base64::engine::general_purpose::STANDARD.encode(&b)
                )
            }),
            _ => Value::Null,
        }
    }

    /// Encrypts a provider token for storage (XChaCha20-Poly1305 under a key derived from the
    /// server secret): `gh1.<base64url(nonce ‖ ciphertext)>`.
    pub fn seal(&self, plain: &str) -> String {
        let nonce_bytes: [u8; 24] = rand::random();
        let nonce = XNonce::from_slice(&nonce_bytes);
        match self.cipher.encrypt(nonce, plain.as_bytes()) {
            Ok(ct) => {
                let mut out = nonce_bytes.to_vec();
                out.extend_from_slice(&ct);
                format!(
                    "{SEALED_PREFIX}{}",
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
                )
            }
            // Encryption of a byte string cannot fail; never store the plain token anyway.
            Err(_) => String::new(),
        }
    }

    /// What a token endpoint answered, as it is stored: each token encrypted, the scopes
    /// comma-joined.
    pub fn sealed(&self, t: &Tokens) -> actors::ProviderTokens {
        actors::ProviderTokens {
            access_token: t.access_token.as_deref().map(|v| self.seal(v)),
            refresh_token: t.refresh_token.as_deref().map(|v| self.seal(v)),
            id_token: t.id_token.as_deref().map(|v| self.seal(v)),
            access_token_expires_at: t.access_token_expires_at,
            refresh_token_expires_at: t.refresh_token_expires_at,
            scope: (!t.scopes.is_empty()).then(|| t.scopes.join(",")),
        }
    }

    /// A stored token in the clear: decrypted when sealed; a token written without
    /// encryption (imported from better-auth) as it is. `None` when it does not decrypt.
    pub fn open(&self, stored: &str) -> Option<String> {
        let Some(b64) = stored.strip_prefix(SEALED_PREFIX) else {
            return Some(stored.to_owned());
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b64)
            .ok()?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, ct) = bytes.split_at(24);
        let plain = self.cipher.decrypt(XNonce::from_slice(nonce), ct).ok()?;
        String::from_utf8(plain).ok()
    }
}

#[cfg(test)]
mod tests;
