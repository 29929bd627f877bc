//! What the providers' calls need besides the flows: client secrets (Apple's, signed client
//! assertions), PKCE challenges, reading a provider's JSON, the key tokens are sealed with.
use super::*;

pub(super) const SEALED_PREFIX: &str = "gh1.";

/// Apple's client secret: an ES256 JWT from the team (`iss`) for the services id (`sub`),
/// `aud` Apple, valid five minutes — made fresh for each token request.
pub(super) fn apple_client_secret(
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
pub(super) fn client_assertion(
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
pub(super) fn x5t(thumbprint: &str) -> Option<String> {
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

pub(super) async fn read_json(r: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
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
pub(super) fn token_key(secret: &str) -> [u8; 32] {
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
