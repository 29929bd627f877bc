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

const SEALED_PREFIX: &str = "gh1.";

/// Apple's client secret: an ES256 JWT from the team (`iss`) for the services id (`sub`),
/// `aud` Apple, valid five minutes — made fresh for each token request.
fn apple_client_secret(
    k: &AppleKey,
    client_id: &str,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = Utc::now().timestamp();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(k.key_id.clone());
    let claims = serde_json::json!({
        "iss": k.team_id,
        "iat": now,
        "exp": now + 300,
        "aud": "https://appleid.apple.com",
        "sub": client_id,
    });
    jsonwebtoken::encode(&header, &claims, &k.key)
}

/// A client assertion (RFC 7523, as Microsoft's certificate credentials take it): RS256,
/// `x5t` the certificate's thumbprint, from and about the client, for the token endpoint,
/// single use (`jti`), valid five minutes — made fresh for each token request.
fn client_assertion(
    k: &AssertionKey,
    client_id: &str,
    token_endpoint: &str,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = Utc::now().timestamp();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.x5t = Some(k.x5t.clone());
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": token_endpoint,
        "jti": random_token(32),
        "iat": now,
        "nbf": now,
        "exp": now + 300,
    });
    jsonwebtoken::encode(&header, &claims, &k.key)
}

/// The `x5t` of a certificate from its SHA-1 thumbprint as portals show it (40 hex digits,
/// any case, colons allowed): base64url of the 20 bytes.
fn x5t(thumbprint: &str) -> Option<String> {
    let hex: String = thumbprint.chars().filter(|c| *c != ':').collect();
    if hex.len() != 40 {
        return None;
    }
    let bytes = (0..20)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A transport failure with its causes (never the URL, which may carry a token).
pub(crate) fn transport(e: reqwest::Error) -> ProviderError {
    let e = e.without_url();
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    ProviderError::Transport(msg)
}

async fn read_json(r: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
    let resp = r.send().await.map_err(transport)?;
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(ProviderError::Refused {
            status,
            error: "profile request refused".into(),
        });
    }
    resp.json()
        .await
        .map_err(|e| ProviderError::Malformed(e.without_url().to_string()))
}

/// The key that encrypts provider tokens: HMAC-SHA256 of a fixed label under the secret.
fn token_key(secret: &str) -> [u8; 32] {
    let mut mac = match <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    mac.update(b"gatehouse provider tokens v1");
    mac.finalize().into_bytes().into()
}

/// S256: base64url(sha256(verifier)) without padding.
pub fn challenge(verifier: &str) -> String {
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

/// The claims of a JWT, **unverified**: only for an id token that was verified when it was
/// received and has been kept (encrypted) in the store since.
pub fn decode_claims(jwt: &str) -> Option<Value> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `n` random characters of `[A-Za-z0-9_-]` (state: 32, code verifier: 128).
pub fn random_token(n: usize) -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| CHARS[rng.gen_range(0..CHARS.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn social() -> Social {
        let mut config = Config::default();
        config.social.insert(
            "github".into(),
            SocialProviderConfig {
                client_id: "cid".into(),
                ..Default::default()
            },
        );
        Social::from_config(&config, "a-secret-of-at-least-thirty-two-bytes!").unwrap()
    }

    #[test]
    fn tokens_are_sealed_and_opened_and_tampering_is_detected() {
        let s = social();
        let sealed = s.seal("gho_secret");
        assert!(sealed.starts_with("gh1.") && !sealed.contains("gho_secret"));
        assert_ne!(sealed, s.seal("gho_secret"), "a fresh nonce each time");
        assert_eq!(s.open(&sealed).as_deref(), Some("gho_secret"));
        let mut bad = sealed.clone();
        bad.pop();
        bad.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(s.open(&bad), None);
        assert_eq!(s.open("plain-imported").as_deref(), Some("plain-imported"));
    }

    #[test]
    fn the_authorize_url_has_pkce_scopes_and_the_redirect_uri() {
        let s = social();
        let p = s.get("github").unwrap();
        let url = s
            .authorize_url(
                p,
                &Authorization {
                    state: "st",
                    nonce: None,
                    code_verifier: "v",
                    scopes: &p.scopes(&["repo".into()]),
                    login_hint: Some("a@b.co"),
                    additional: &BTreeMap::new(),
                },
            )
            .unwrap();
        let u = url::Url::parse(&url).unwrap();
        let q: BTreeMap<_, _> = u.query_pairs().into_owned().collect();
        assert_eq!(q["scope"], "read:user user:email repo");
        assert_eq!(q["code_challenge"], challenge("v"));
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["login_hint"], "a@b.co");
        assert_eq!(
            q["redirect_uri"],
            "http://localhost:3000/api/auth/callback/github"
        );
    }

    const P8: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+Vm1kCNnQpRZuE1e
tW0WBdI55XnL8o8xwS2/GVAxMw6hRANCAATueMMJtyMJZ2TNstNXZ/URWdDtrip2
tgwwztFiJMy5g7w2fB7D8A3KzF6TWmHUEF9GyDy67cbeTqODppmF7Hha
-----END PRIVATE KEY-----
";
    const P8_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7njDCbcjCWdkzbLTV2f1EVnQ7a4q
drYMMM7RYiTMuYO8Nnwew/ANysxek1ph1BBfRsg8uu3G3k6jg6aZhex4Wg==
-----END PUBLIC KEY-----
";

    #[test]
    fn apple_client_secrets_are_signed_from_the_key_material() {
        let mut config = Config::default();
        config.social.insert(
            "apple".into(),
            SocialProviderConfig {
                client_id: "com.example.web".into(),
                team_id: Some("TEAM123456".into()),
                key_id: Some("KEY1234567".into()),
                private_key: Some(crate::config::Secret::new(P8)),
                ..Default::default()
            },
        );
        let s = Social::from_config(&config, "a-secret-of-at-least-thirty-two-bytes!").unwrap();
        let Some(Signer::Apple(k)) = s.get("apple").unwrap().signer.as_ref() else {
            panic!("an Apple signer");
        };
        let jwt = apple_client_secret(k, "com.example.web").unwrap();
        let header = jsonwebtoken::decode_header(&jwt).unwrap();
        assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some("KEY1234567"));
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        v.set_audience(&["https://appleid.apple.com"]);
        v.set_issuer(&["TEAM123456"]);
        let key = jsonwebtoken::DecodingKey::from_ec_pem(P8_PUBLIC.as_bytes()).unwrap();
        let claims = jsonwebtoken::decode::<Value>(&jwt, &key, &v)
            .unwrap()
            .claims;
        assert_eq!(claims["sub"], "com.example.web");
        // Key material without its ids, or a key that is not one, stops the start.
        let mut bad = config.clone();
        bad.social.get_mut("apple").unwrap().key_id = None;
        assert!(Social::from_config(&bad, "a-secret-of-at-least-thirty-two-bytes!").is_err());
        bad.social.get_mut("apple").unwrap().key_id = Some("K".into());
        bad.social.get_mut("apple").unwrap().private_key =
            Some(crate::config::Secret::new("not a key"));
        assert!(Social::from_config(&bad, "a-secret-of-at-least-thirty-two-bytes!").is_err());
    }

    /// A certificate credential's key, made for this test (`openssl genpkey -algorithm RSA`).
    const RSA_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCVBEzvSa748XSn
L2qDHAM1/+AETe4fbMqq7qKFRSO59Eq+Ja+AwDsskYc809Je+w3Hy9BTzOYkCtje
o733j3GSXR17QsdyLT8JWXw2PCAzElEFjKbP3yKDWAd4BSlK654MEOkqsyu+xq3z
kt4rH44S7UR/5zgGztBU8RxI0qXJ+9O5BCNnlKAVxKXUy5grpQjVkSaq7yqJdLqH
zAlRjZz0YBTz+Ah9g9t6W7WZYdX7y9ECZXimJH7L47pAssOZynxMuo4IuZ9DxLew
asm/deEMRNjFywQH3JONuDi+3Nj9sNXJrNNQeiEwvLB9BIxr0+dysazcsjyklE+v
pLm+4t6fAgMBAAECggEAJOzRYZP5Ev/F362cr4tP8mAKsxZadJgBKlUCmZJ11VzG
7pIpCHbZ0uPmxnhYjyeXlRQYdcN2naTAc37QklkNk+6V4Ra9lDnI/niZkljYw778
q6rcJPNOOoykISXqQwHagnPoSyflpZrWvN3+RmJF0sPPbwAs/mbd8cZjM1pbMY7f
5eXPoRzaeDTogc4fIO7UUowkmlzdxXqteFJ5BOytWQLjiCsKAgL5a2DFb3DSkKXg
2a4QR3TKuI0a8PN+49Gylm3SnAJErznRq4FIzPX8uYhSM3ElJqCYpLTCO1FSVUfM
JXP2xD1elUAluJiXI2bw7V1AWWEux7IZOKNlDCldDQKBgQDIglWo4gUxsNKtgG7T
6Es6OVVg2Fcd5WP4eoH71vA3QhYkqOzsg8eeki4qWLF29SI8aVREPHGSNK666rgW
32akzA2HL6bpO6aTvxLzLD6syzl76Y96+ws9qZfWbDz23b52e3QBdHnIQUsZ3Epz
+8yfUNWb2k57c53CDw2LQKHowwKBgQC+QdbVh1eF1aDgYW/Fb8hLC62IESNisvym
2+TBZ0LqUPdBcAZSdo4hE++UF80FsRSUL+gdzpRo/LLXf89fmPwRk0lnxJLquRu8
73nOCvhvy2WNjyITMaF2uQuBbo68z0m82m7zMnUBCH87jBxNO0HQ+Zp2B/QwqSBY
UUemLkK09QKBgGEz5gjwQWpceVXJLHEobMe2IbDIUDtbCELeSQNoqJ1xOUDeb7Ud
EXnLDfxTcPzlS4qT2VkXIEurpIVS4pmcBaugjHJb5IOu+ksn1yzx5xRnlN+AU6Ff
8IwdGlHFuSxIRVw07wEBkURGevz3cVSW3hTh4BwlEeUBIJqCJ6O5WoR3AoGBAIwL
yMja3CkOzGH+NxkdJFFhYjYjb2mqmOF2QZe/m/kA6lBH1s+CpzJgC112e5sx8xT1
gqXWN1ZklHyefxY+dWW2hjUU9JRE988GdCGf36njDXi7IHkCcnkC0x5ONFF1QDD8
lOj9fjTpfUZm5zpOYS8jXHh/eFcNV1rLUbNYoA+1AoGBAKJq8F5jW4v6YO+nI6yI
Zmm2ILnGZYup0Yqn3jT4MfZOVq4AzJ/CmteJgUjge+NY4IWcLlKPJFY8MI2wluXF
+2eFVmQS474GqKGl7Hyecio0IilrrFsudTBQUKgS1TNIJvDGXC+uvS2FzcRTZFft
O9Lu95I1rhIFAXA4f6XWYxzE
-----END PRIVATE KEY-----
";
    const RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAlQRM70mu+PF0py9qgxwD
Nf/gBE3uH2zKqu6ihUUjufRKviWvgMA7LJGHPNPSXvsNx8vQU8zmJArY3qO9949x
kl0de0LHci0/CVl8NjwgMxJRBYymz98ig1gHeAUpSuueDBDpKrMrvsat85LeKx+O
Eu1Ef+c4Bs7QVPEcSNKlyfvTuQQjZ5SgFcSl1MuYK6UI1ZEmqu8qiXS6h8wJUY2c
9GAU8/gIfYPbelu1mWHV+8vRAmV4piR+y+O6QLLDmcp8TLqOCLmfQ8S3sGrJv3Xh
DETYxcsEB9yTjbg4vtzY/bDVyazTUHohMLywfQSMa9PncrGs3LI8pJRPr6S5vuLe
nwIDAQAB
-----END PUBLIC KEY-----
";

    #[test]
    fn microsoft_signs_a_client_assertion_with_a_certificate_key() {
        let mut config = Config::default();
        let ms = |key: &str, thumb: &str| SocialProviderConfig {
            client_id: "app-1".into(),
            key_id: Some(thumb.into()),
            private_key: Some(crate::config::Secret::new(key)),
            token_endpoint: Some("https://login.example/t/oauth2/v2.0/token".into()),
            ..Default::default()
        };
        config.social.insert(
            "microsoft".into(),
            ms(
                RSA_KEY,
                "5D:2C:9A:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:01",
            ),
        );
        let s = Social::from_config(&config, "a-secret-of-at-least-thirty-two-bytes!").unwrap();
        let p = s.get("microsoft").unwrap();
        let Some(Signer::Assertion(k)) = p.signer.as_ref() else {
            panic!("an assertion signer");
        };
        let jwt = client_assertion(k, "app-1", &p.token_endpoint).unwrap();
        let header = jsonwebtoken::decode_header(&jwt).unwrap();
        assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
        assert_eq!(header.x5t.as_deref(), Some("XSyaABEiM0RVZneImaq7zN3u_wE"));
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        v.set_audience(&["https://login.example/t/oauth2/v2.0/token"]);
        v.set_issuer(&["app-1"]);
        let key = jsonwebtoken::DecodingKey::from_rsa_pem(RSA_PUBLIC.as_bytes()).unwrap();
        let claims = jsonwebtoken::decode::<Value>(&jwt, &key, &v)
            .unwrap()
            .claims;
        assert_eq!(claims["sub"], "app-1");
        assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
        let again = client_assertion(k, "app-1", &p.token_endpoint).unwrap();
        let jti = |t: &str| decode_claims(t).unwrap()["jti"].clone();
        assert_ne!(jti(&jwt), jti(&again), "single use: a new jti each time");
        // Refused at start: a secret too, a bad thumbprint, an EC key, a key for GitHub.
        let refused = |c: SocialProviderConfig, id: &str| {
            let mut config = Config::default();
            config.social.insert(id.into(), c);
            Social::from_config(&config, "a-secret-of-at-least-thirty-two-bytes!").is_err()
        };
        let mut both = ms(RSA_KEY, &"ab".repeat(20));
        both.client_secret = Some(crate::config::Secret::new("s"));
        assert!(refused(both, "microsoft"));
        assert!(refused(ms(RSA_KEY, "not-a-thumbprint"), "microsoft"));
        assert!(refused(ms(P8, &"ab".repeat(20)), "microsoft"));
        assert!(refused(ms(RSA_KEY, &"ab".repeat(20)), "github"));
    }

    #[test]
    fn s256_matches_rfc_7636() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
