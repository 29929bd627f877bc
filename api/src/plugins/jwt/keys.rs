//! Signed JSON Web Tokens for the signed-in user (better-auth's `jwt` plugin): key pairs in
//! the store (private halves encrypted under a key derived from the server secret), `/jwks`,
//! `/token` and the `set-auth-jwt` header.
//!
//! The newest key pair signs. A rotation (`gatehouse keys rotate`) adds a key pair; every
//! process picks it up within [`RELOAD_EVERY`], and a retired key stays in the JWKS until every
//! token it can have signed has expired.
use crate::config::JwtConfig;
use crate::dto::iso;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::{DateTime, Utc};
use hmac::Mac;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::sync::RwLock;
use std::time::{Duration, Instant};
use storage::{KeyPair, KeyPairId, User};

/// How often a process re-reads the key pairs (to see another process's rotation).
pub const RELOAD_EVERY: Duration = Duration::from_secs(30);

const SEALED_PREFIX: &str = "gk1.";

#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("unsupported algorithm {0:?} (EdDSA, ES256 or RS256)")]
    Algorithm(String),
    #[error("key generation: {0}")]
    Generate(String),
    #[error("key pair {0} cannot be read: {1}")]
    Corrupt(String, String),
    #[error("signing: {0}")]
    Sign(String),
    #[error("storage: {0}")]
    Store(String),
}

struct Loaded {
    kid: String,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
    created_at: DateTime<Utc>,
}

struct Keys {
    /// Oldest first.
    list: Vec<Loaded>,
    loaded_at: Instant,
}

pub struct Jwt {
    cfg: JwtConfig,
    issuer: String,
    audience: String,
    cipher: XChaCha20Poly1305,
    keys: RwLock<Option<Keys>>,
    /// Tokens signed lately, by what they say (the key and every user field in the claims):
    /// a token is handed out again while at least half its lifetime is left, so get-session
    /// does not sign a fresh one on every call. A change of the user or of the key makes
    /// another entry; nothing outlives its token's `exp`.
    recent: RwLock<std::collections::HashMap<u64, (String, i64)>>,
}

/// Signed tokens kept at most; past that, the expired ones go, or else all.
const RECENT_TOKENS: usize = 50_000;

fn alg_of(name: &str) -> Result<Algorithm, JwtError> {
    match name {
        "EdDSA" => Ok(Algorithm::EdDSA),
        "ES256" => Ok(Algorithm::ES256),
        "RS256" => Ok(Algorithm::RS256),
        other => Err(JwtError::Algorithm(other.to_owned())),
    }
}

fn key_of_secret(secret: &str) -> [u8; 32] {
    let mut mac = match <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    mac.update(b"gatehouse jwt private keys v1");
    mac.finalize().into_bytes().into()
}

/// A new key pair of `alg`: the private key as PKCS#8 PEM and the public key as a JWK.
fn generate(alg: Algorithm, kid: &str) -> Result<(String, Value), JwtError> {
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    let gen = |e: &dyn std::fmt::Display| JwtError::Generate(e.to_string());
    let mut rng = rand::rngs::OsRng;
    match alg {
        Algorithm::EdDSA => {
            let sk = ed25519_dalek::SigningKey::generate(&mut rng);
            let pem = sk.to_pkcs8_pem(LineEnding::LF).map_err(|e| gen(&e))?;
            let jwk = json!({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": kid,
                "x": B64.encode(sk.verifying_key().as_bytes())});
            Ok((pem.to_string(), jwk))
        }
        Algorithm::ES256 => {
            let sk = p256::SecretKey::random(&mut rng);
            let pem = sk.to_pkcs8_pem(LineEnding::LF).map_err(|e| gen(&e))?;
            let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(
                &sk.public_key(),
                false,
            );
            let (Some(x), Some(y)) = (point.x(), point.y()) else {
                return Err(JwtError::Generate("P-256 point".into()));
            };
            let jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": kid,
                "x": B64.encode(x), "y": B64.encode(y)});
            Ok((pem.to_string(), jwk))
        }
        Algorithm::RS256 => {
            use rsa::traits::PublicKeyParts;
            let sk = rsa::RsaPrivateKey::new(&mut rng, 2048).map_err(|e| gen(&e))?;
            let pem = rsa::pkcs8::EncodePrivateKey::to_pkcs8_pem(&sk, LineEnding::LF)
                .map_err(|e| gen(&e))?;
            let jwk = json!({"kty": "RSA", "alg": "RS256", "kid": kid,
                "n": B64.encode(sk.n().to_bytes_be()), "e": B64.encode(sk.e().to_bytes_be())});
            Ok((pem.to_string(), jwk))
        }
        other => Err(JwtError::Algorithm(format!("{other:?}"))),
    }
}

impl Jwt {
    pub fn new(cfg: &JwtConfig, base_url: &str, secret: &str) -> Result<Self, JwtError> {
        alg_of(&cfg.algorithm)?;
        let base = base_url.trim_end_matches('/').to_owned();
        Ok(Self {
            cfg: cfg.clone(),
            issuer: cfg.issuer.clone().unwrap_or_else(|| base.clone()),
            audience: cfg.audience.clone().unwrap_or(base),
            cipher: XChaCha20Poly1305::new(&key_of_secret(secret).into()),
            keys: RwLock::new(None),
            recent: RwLock::new(std::collections::HashMap::new()),
        })
    }

    /// A fresh token for `user` (keys re-read from the store when due).
    pub async fn user_jwt(
        &self,
        actors: &actors::Actors,
        user: &User,
        now: DateTime<Utc>,
    ) -> crate::error::ApiResult<String> {
        use crate::error::ApiError;
        self.ensure_keys(actors, &actors.reader(), now)
            .await
            .map_err(ApiError::internal)?;
        self.sign_reusing(user, now).map_err(ApiError::internal)
    }

    pub fn enabled(&self) -> bool {
        self.cfg.enabled
    }

    fn seal(&self, plain: &str) -> String {
        let nonce_bytes: [u8; 24] = rand::random();
        match self
            .cipher
            .encrypt(XNonce::from_slice(&nonce_bytes), plain.as_bytes())
        {
            Ok(ct) => {
                let mut out = nonce_bytes.to_vec();
                out.extend_from_slice(&ct);
                format!("{SEALED_PREFIX}{}", B64.encode(out))
            }
            Err(_) => String::new(),
        }
    }

    fn open(&self, sealed: &str) -> Option<String> {
        let bytes = B64.decode(sealed.strip_prefix(SEALED_PREFIX)?).ok()?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, ct) = bytes.split_at(24);
        let plain = self.cipher.decrypt(XNonce::from_slice(nonce), ct).ok()?;
        String::from_utf8(plain).ok()
    }

    /// A new key pair of the configured algorithm, as it is stored.
    pub fn new_key_pair(&self, now: DateTime<Utc>) -> Result<KeyPair, JwtError> {
        let id = KeyPairId::generate();
        let (pem, jwk) = generate(alg_of(&self.cfg.algorithm)?, &id.0)?;
        Ok(KeyPair {
            id,
            public_key: jwk.to_string(),
            private_key: self.seal(&pem),
            created_at: now,
        })
    }

    fn load(&self, kp: &KeyPair) -> Result<Loaded, JwtError> {
        let corrupt = |why: &str| JwtError::Corrupt(kp.id.0.clone(), why.to_owned());
        let jwk: Value = serde_json::from_str(&kp.public_key).map_err(|_| corrupt("public key"))?;
        let alg = alg_of(jwk["alg"].as_str().unwrap_or_default())?;
        let pem = self
            .open(&kp.private_key)
            .ok_or_else(|| corrupt("private key does not decrypt (another secret?)"))?;
        let key = match alg {
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .map_err(|_| corrupt("private key"))?;
        Ok(Loaded {
            kid: kp.id.0.clone(),
            alg,
            key,
            jwk,
            created_at: kp.created_at,
        })
    }

    /// Makes sure the key pairs are loaded and fresh: reads the store when they are older
    /// than [`RELOAD_EVERY`], and creates the first key pair when the store has none.
    pub async fn ensure_keys(
        &self,
        actors: &actors::Actors,
        reader: &actors::Reader,
        now: DateTime<Utc>,
    ) -> Result<(), JwtError> {
        let fresh = self
            .keys
            .read()
            .map(|k| {
                k.as_ref()
                    .is_some_and(|k| k.loaded_at.elapsed() < RELOAD_EVERY && !k.list.is_empty())
            })
            .unwrap_or(false);
        if fresh {
            return Ok(());
        }
        let store = |e: storage::StoreError| JwtError::Store(e.to_string());
        let mut pairs = reader.list_key_pairs().await.map_err(store)?;
        if pairs.is_empty() {
            let kp = self.new_key_pair(now)?;
            actors
                .add_key_pair(&kp)
                .await
                .map_err(|e| JwtError::Store(e.to_string()))?;
            // Another process may have created one at the same moment: all are kept, and the
            // newest signs everywhere once read back.
            pairs = reader.list_key_pairs().await.map_err(store)?;
        }
        pairs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.0.cmp(&b.id.0)));
        let mut list = Vec::with_capacity(pairs.len());
        for kp in &pairs {
            match self.load(kp) {
                Ok(l) => list.push(l),
                Err(e) => tracing::error!(error = %e, "unusable JWT key pair skipped"),
            }
        }
        if list.is_empty() {
            // Every stored key is unusable (written under another secret): sign with a new one.
            tracing::error!("no usable JWT key pair in the store; adding a new one");
            let kp = self.new_key_pair(now)?;
            actors
                .add_key_pair(&kp)
                .await
                .map_err(|e| JwtError::Store(e.to_string()))?;
            list.push(self.load(&kp)?);
        }
        if let Ok(mut k) = self.keys.write() {
            *k = Some(Keys {
                list,
                loaded_at: Instant::now(),
            });
        }
        Ok(())
    }

    /// The claims of a token for `user`: better-auth's (the user's fields) plus `sub`, `iat`,
    /// `exp`, `iss`, `aud`.
    fn claims(&self, user: &User, now: DateTime<Utc>) -> Value {
        let iat = now.timestamp();
        json!({
            "id": user.id.0,
            "sub": user.id.0,
            "email": user.email,
            "name": user.name,
            "image": user.image,
            "emailVerified": user.email_verified,
            "role": user.role.clone().unwrap_or_else(|| "user".into()),
            "banned": user.banned,
            "createdAt": iso(&user.created_at),
            "updatedAt": iso(&user.updated_at),
            "iat": iat,
            "exp": iat + self.cfg.expiration as i64,
            "iss": self.issuer,
            "aud": self.audience,
        })
    }

    /// Drops the loaded keys: the next use reads the store again (e.g. right after a rotation
    /// in this process).
    pub fn forget_keys(&self) {
        if let Ok(mut k) = self.keys.write() {
            *k = None;
        }
    }

    /// A token for `user`: one signed lately with the newest key (keys loaded by
    /// [`Jwt::ensure_keys`]) for the same user fields while at least half its lifetime is
    /// left, else a freshly signed one.
    pub fn sign_reusing(&self, user: &User, now: DateTime<Utc>) -> Result<String, JwtError> {
        let keys = self
            .keys
            .read()
            .map_err(|_| JwtError::Sign("key cache poisoned".into()))?;
        let Some(current) = keys.as_ref().and_then(|k| k.list.last()) else {
            return Err(JwtError::Sign("no key loaded".into()));
        };
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (
                &current.kid,
                &user.id.0,
                &user.email,
                &user.name,
                &user.image,
            )
                .hash(&mut h);
            (user.email_verified, &user.role, user.banned).hash(&mut h);
            (
                user.created_at.timestamp_millis(),
                user.updated_at.timestamp_millis(),
            )
                .hash(&mut h);
            h.finish()
        };
        let half_life = (self.cfg.expiration / 2) as i64;
        if let Ok(recent) = self.recent.read() {
            if let Some((token, exp)) = recent.get(&key) {
                if exp - now.timestamp() >= half_life {
                    return Ok(token.clone());
                }
            }
        }
        let mut header = Header::new(current.alg);
        header.kid = Some(current.kid.clone());
        header.typ = None;
        let token = jsonwebtoken::encode(&header, &self.claims(user, now), &current.key)
            .map_err(|e| JwtError::Sign(e.to_string()))?;
        drop(keys);
        if let Ok(mut recent) = self.recent.write() {
            if recent.len() >= RECENT_TOKENS {
                let t = now.timestamp();
                recent.retain(|_, (_, exp)| *exp - t >= half_life);
                if recent.len() >= RECENT_TOKENS {
                    recent.clear();
                }
            }
            let exp = now.timestamp() + self.cfg.expiration as i64;
            recent.insert(key, (token.clone(), exp));
        }
        Ok(token)
    }

    /// The public keys that verify live tokens: the current one, and each older one until
    /// every token it can have signed has expired (it signed until its successor appeared, and
    /// processes see a successor within [`RELOAD_EVERY`]).
    pub fn jwks(&self, now: DateTime<Utc>) -> Value {
        let Ok(keys) = self.keys.read() else {
            return json!({"keys": []});
        };
        let list = keys.as_ref().map(|k| k.list.as_slice()).unwrap_or_default();
        let grace = chrono::Duration::seconds(self.cfg.expiration as i64)
            + chrono::Duration::from_std(RELOAD_EVERY).unwrap_or_default();
        let live: Vec<&Value> = list
            .iter()
            .enumerate()
            .filter(|(i, _)| match list.get(i + 1) {
                None => true,
                Some(next) => next.created_at + grace > now,
            })
            .map(|(_, l)| &l.jwk)
            .collect();
        json!({ "keys": live })
    }
}
