//! Verifying an id token a client got from the provider itself (Google One Tap, Sign in with
//! Apple on iOS, MSAL, Facebook Limited Login): RS256 only (the algorithm comes from here, never
//! from the token), the key chosen by `kid` from the provider's key set (fetched, cached, and
//! fetched again for a `kid` it does not know, at most every 10 s), the issuer, the audience
//! (the client id), expiry with 30 s of tolerance, an `iat` at most an hour old, and the nonce
//! when the client sent one.
use super::{Provider, ProviderError, Social};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why an id token was refused (logged; the client sees 401 `INVALID_TOKEN`).
#[derive(Debug, thiserror::Error)]
pub enum IdTokenError {
    #[error("malformed token: {0}")]
    Malformed(String),
    #[error("no key {0:?} in the provider's key set")]
    UnknownKey(String),
    #[error("key set: {0}")]
    Keys(#[from] ProviderError),
    #[error("refused: {0}")]
    Invalid(String),
    /// The nonce is not the one the client (or the flow) bound to the token.
    #[error("the nonce is not the expected one")]
    Nonce,
}

/// Key sets by URL, with when they were fetched.
#[derive(Default)]
pub struct KeyCache(Mutex<HashMap<String, (Instant, JwkSet)>>);

const REFETCH_AFTER: Duration = Duration::from_secs(10);
const KEEP_FOR: Duration = Duration::from_secs(3600);
const MAX_AGE_SECS: i64 = 3600;

impl KeyCache {
    fn lookup(&self, url: &str, kid: &str) -> (Option<DecodingKey>, bool) {
        let Ok(map) = self.0.lock() else {
            return (None, true);
        };
        match map.get(url) {
            Some((at, set)) => {
                let key = set
                    .find(kid)
                    .and_then(|jwk| DecodingKey::from_jwk(jwk).ok())
                    .filter(|_| at.elapsed() < KEEP_FOR);
                let may_fetch = at.elapsed() >= REFETCH_AFTER;
                (key, may_fetch)
            }
            None => (None, true),
        }
    }

    fn store(&self, url: &str, set: JwkSet) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(url.to_owned(), (Instant::now(), set));
        }
    }
}

impl Social {
    async fn key_for(&self, p: &Provider, kid: &str) -> Result<DecodingKey, IdTokenError> {
        let (key, may_fetch) = self.keys.lookup(&p.jwks_uri, kid);
        if let Some(k) = key {
            return Ok(k);
        }
        if !may_fetch {
            return Err(IdTokenError::UnknownKey(kid.to_owned()));
        }
        let resp = self
            .http
            .get(&p.jwks_uri)
            .send()
            .await
            .map_err(super::transport)?;
        if resp.status() != 200 {
            return Err(IdTokenError::Keys(ProviderError::Refused {
                status: resp.status().as_u16(),
                error: "key set refused".into(),
            }));
        }
        let set: JwkSet = resp
            .json()
            .await
            .map_err(|e| IdTokenError::Keys(ProviderError::Malformed(e.to_string())))?;
        let key = set
            .find(kid)
            .and_then(|jwk| DecodingKey::from_jwk(jwk).ok());
        self.keys.store(&p.jwks_uri, set);
        key.ok_or_else(|| IdTokenError::UnknownKey(kid.to_owned()))
    }

    /// The claims of `token` if it is a valid id token of provider `p` for this client.
    pub async fn verify_id_token(
        &self,
        p: &Provider,
        token: &str,
        nonce: Option<&str>,
    ) -> Result<Value, IdTokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| IdTokenError::Malformed(e.to_string()))?;
        if header.alg != Algorithm::RS256 {
            return Err(IdTokenError::Invalid(format!("algorithm {:?}", header.alg)));
        }
        let kid = header
            .kid
            .ok_or_else(|| IdTokenError::Malformed("no kid".into()))?;
        let key = self.key_for(p, &kid).await?;
        let mut v = Validation::new(Algorithm::RS256);
        v.leeway = 30;
        v.set_audience(&[p.cfg.client_id.as_str()]);
        v.set_required_spec_claims(&["iss", "sub", "aud", "exp", "iat"]);
        let issuers = p.issuers();
        if !issuers.is_empty() {
            v.set_issuer(&issuers);
        }
        let data = jsonwebtoken::decode::<Value>(token, &key, &v)
            .map_err(|e| IdTokenError::Invalid(e.to_string()))?;
        let claims = data.claims;
        let now = chrono::Utc::now().timestamp();
        let iat = claims.get("iat").and_then(Value::as_i64).unwrap_or(0);
        if iat < now - MAX_AGE_SECS || iat > now + 30 {
            return Err(IdTokenError::Invalid("issued too long ago".into()));
        }
        if issuers.is_empty() && p.id() == "microsoft" {
            // A multi-tenant authority: the issuer names the token's own tenant.
            let tid = claims
                .get("tid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let want = format!("https://login.microsoftonline.com/{tid}/v2.0");
            if tid.is_empty() || claims.get("iss").and_then(Value::as_str) != Some(&want) {
                return Err(IdTokenError::Invalid("issuer".into()));
            }
        }
        if let Some(want) = nonce {
            let got = claims
                .get("nonce")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let hashed = {
                use sha2::Digest;
                sha2::Sha256::digest(want.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            };
            let ok = got == want || (p.id() == "apple" && got == hashed);
            if !ok {
                return Err(IdTokenError::Nonce);
            }
        }
        if !p.hosted_domain_ok(&claims) {
            return Err(IdTokenError::Invalid("hd".into()));
        }
        Ok(claims)
    }
}

impl Provider {
    /// The issuers an id token of this provider may name (empty: checked otherwise).
    fn issuers(&self) -> Vec<String> {
        if let Some(i) = &self.cfg.issuer {
            return vec![i.clone()];
        }
        match self.spec.id {
            "google" => vec![
                "https://accounts.google.com".into(),
                "accounts.google.com".into(),
            ],
            "microsoft" => Vec::new(),
            _ if !self.spec.issuer.is_empty() => vec![self.spec.issuer.to_owned()],
            _ => Vec::new(),
        }
    }
}
