//! The token endpoint: code exchange and refresh through the `oauth2` crate for the 17
//! providers whose requests are standard (client authentication in the body or HTTP Basic,
//! or a client assertion), and one typed request for TikTok, which the crate cannot express
//! (its requests carry `client_key` and no `client_id`; PROVIDERS.md §4).
//!
//! Both read the answer into one [`TokenAnswer`], which is more lenient than the crate's
//! standard response where providers are: Twitch's `scope` is a JSON array, some send
//! `expires_in` as a string, some no `token_type`. GitHub's HTTP-200 answer with an `error`
//! member is a refusal, not a malformed answer.
use super::catalog::ClientAuth;
use super::{transport, Provider, ProviderError, Tokens};
use chrono::Utc;
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
};
use oauth2::{
    AccessToken, AuthType, AuthorizationCode, ClientId, ClientSecret, EndpointNotSet, EndpointSet,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, StandardRevocableToken,
    TokenResponse, TokenUrl,
};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A token endpoint's successful answer.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct TokenAnswer {
    access_token: AccessToken,
    #[serde(default)]
    token_type: AnyTokenType,
    #[serde(default, deserialize_with = "lenient_seconds")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<RefreshToken>,
    #[serde(default, deserialize_with = "lenient_seconds")]
    refresh_token_expires_in: Option<u64>,
    #[serde(default, deserialize_with = "lenient_scopes")]
    scope: Option<Vec<Scope>>,
    #[serde(default)]
    id_token: Option<String>,
}

/// Whatever `token_type` a provider names (every provider here issues bearer tokens).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct AnyTokenType(String);

impl Default for AnyTokenType {
    fn default() -> Self {
        Self("bearer".into())
    }
}

impl oauth2::TokenType for AnyTokenType {}

impl TokenResponse for TokenAnswer {
    type TokenType = AnyTokenType;

    fn access_token(&self) -> &AccessToken {
        &self.access_token
    }

    fn token_type(&self) -> &AnyTokenType {
        &self.token_type
    }

    fn expires_in(&self) -> Option<Duration> {
        self.expires_in.map(Duration::from_secs)
    }

    fn refresh_token(&self) -> Option<&RefreshToken> {
        self.refresh_token.as_ref()
    }

    fn scopes(&self) -> Option<&Vec<Scope>> {
        self.scope.as_ref()
    }
}

/// A number of seconds, as a number or a numeric string.
fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// Scopes as a space-delimited string (RFC 6749), any whitespace, or a JSON array (Twitch).
fn lenient_scopes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Scope>>, D::Error> {
    let words: Vec<String> = match Option::<Value>::deserialize(d)? {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => return Ok(None),
    };
    Ok(Some(words.into_iter().map(Scope::new).collect()))
}

impl TokenAnswer {
    /// As stored, with expiry times from now.
    fn into_tokens(self) -> Tokens {
        let now = Utc::now();
        let at = |secs: Option<u64>| {
            secs.and_then(|s| i64::try_from(s).ok())
                .map(|s| now + chrono::Duration::seconds(s))
        };
        Tokens {
            access_token: Some(self.access_token.secret().clone()),
            refresh_token: self.refresh_token.map(|r| r.secret().clone()),
            id_token: self.id_token,
            access_token_expires_at: at(self.expires_in),
            refresh_token_expires_at: at(self.refresh_token_expires_in),
            scopes: self
                .scope
                .unwrap_or_default()
                .into_iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

type Client = oauth2::Client<
    BasicErrorResponse,
    TokenAnswer,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// How the client proves itself at the token endpoint for one request.
pub enum Credential {
    /// A client secret (Apple's: a JWT signed for this request); `None`: public client.
    Secret(Option<String>),
    /// A client assertion (`private_key_jwt`) signed for this request.
    Assertion(String),
}

/// What a token request asks for.
pub enum Grant<'a> {
    Code {
        code: &'a str,
        /// `Some` where the provider takes a PKCE verifier.
        verifier: Option<&'a str>,
        /// VK's `device_id` from the callback.
        device_id: Option<&'a str>,
    },
    Refresh {
        token: &'a str,
        /// Scopes the refresh asks for again (Microsoft).
        scopes: Vec<String>,
    },
}

/// One call to `p`'s token endpoint.
pub async fn request(
    http: &reqwest::Client,
    p: &Provider,
    credential: Credential,
    grant: Grant<'_>,
) -> Result<Tokens, ProviderError> {
    let answer = if p.spec.client_auth == ClientAuth::ClientKey {
        client_key_request(http, p, credential, grant).await?
    } else {
        crate_request(http, p, credential, grant).await?
    };
    Ok(answer.into_tokens())
}

/// Through the `oauth2` crate: body or Basic client authentication, or a client assertion.
async fn crate_request(
    http: &reqwest::Client,
    p: &Provider,
    credential: Credential,
    grant: Grant<'_>,
) -> Result<TokenAnswer, ProviderError> {
    let config = |e: &dyn std::fmt::Display| ProviderError::Malformed(format!("endpoint: {e}"));
    let mut client: Client = oauth2::Client::new(ClientId::new(p.cfg.client_id.clone()))
        .set_token_uri(TokenUrl::new(p.token_endpoint.clone()).map_err(|e| config(&e))?)
        .set_redirect_uri(RedirectUrl::new(p.redirect_uri.clone()).map_err(|e| config(&e))?)
        .set_auth_type(if p.spec.client_auth == ClientAuth::Basic {
            AuthType::BasicAuth
        } else {
            AuthType::RequestBody
        });
    let mut extra: Vec<(&str, String)> = Vec::new();
    match credential {
        Credential::Secret(Some(s)) if !s.is_empty() => {
            client = client.set_client_secret(ClientSecret::new(s));
        }
        Credential::Secret(_) => {}
        Credential::Assertion(a) => {
            extra.push(("client_assertion_type", super::JWT_BEARER.to_owned()));
            extra.push(("client_assertion", a));
        }
    }
    let answer = match grant {
        Grant::Code {
            code,
            verifier,
            device_id,
        } => {
            let mut req = client.exchange_code(AuthorizationCode::new(code.to_owned()));
            if let Some(v) = verifier {
                req = req.set_pkce_verifier(PkceCodeVerifier::new(v.to_owned()));
            }
            if let Some(d) = device_id {
                extra.push(("device_id", d.to_owned()));
            }
            for (k, v) in extra {
                req = req.add_extra_param(k, v);
            }
            req.request_async(http).await
        }
        Grant::Refresh { token, scopes } => {
            let token = RefreshToken::new(token.to_owned());
            let mut req = client
                .exchange_refresh_token(&token)
                .add_scopes(scopes.into_iter().map(Scope::new));
            for (k, v) in extra {
                req = req.add_extra_param(k, v);
            }
            req.request_async(http).await
        }
    };
    answer.map_err(|e| match e {
        RequestTokenError::ServerResponse(r) => ProviderError::Refused {
            status: 400,
            error: match r.error_description() {
                Some(d) => format!("{}: {d}", r.error()),
                None => r.error().to_string(),
            },
        },
        RequestTokenError::Request(oauth2::HttpClientError::Reqwest(e)) => transport(*e),
        RequestTokenError::Request(e) => ProviderError::Transport(e.to_string()),
        RequestTokenError::Parse(e, body) => refusal_in(&body)
            .unwrap_or_else(|| ProviderError::Malformed(format!("token answer: {e}"))),
        RequestTokenError::Other(e) => ProviderError::Malformed(e),
    })
}

/// An `error` member in an answer that came with HTTP 200 (GitHub's way to refuse a code).
fn refusal_in(body: &[u8]) -> Option<ProviderError> {
    let json: Value = serde_json::from_slice(body).ok()?;
    let error = json.get("error").filter(|e| !e.is_null())?;
    let mut error = match error.as_str() {
        Some(s) => s.to_owned(),
        None => error.to_string(),
    };
    if let Some(d) = json.get("error_description").and_then(Value::as_str) {
        error = format!("{error}: {d}");
    }
    Some(ProviderError::Refused { status: 200, error })
}

/// TikTok's token request: `client_key` and `client_secret` in the body, no `client_id`.
async fn client_key_request(
    http: &reqwest::Client,
    p: &Provider,
    credential: Credential,
    grant: Grant<'_>,
) -> Result<TokenAnswer, ProviderError> {
    let secret = match credential {
        Credential::Secret(s) => s.unwrap_or_default(),
        Credential::Assertion(_) => {
            return Err(ProviderError::Malformed(
                "client assertions are not for this provider".into(),
            ))
        }
    };
    let mut form: Vec<(&str, &str)> =
        vec![("client_key", &p.cfg.client_id), ("client_secret", &secret)];
    match &grant {
        Grant::Code { code, verifier, .. } => {
            form.extend([
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &p.redirect_uri),
            ]);
            if let Some(v) = verifier {
                form.push(("code_verifier", v));
            }
        }
        Grant::Refresh { token, .. } => {
            form.extend([("grant_type", "refresh_token"), ("refresh_token", token)]);
        }
    }
    let resp = http
        .post(&p.token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .send()
        .await
        .map_err(transport)?;
    let status = resp.status().as_u16();
    let body = resp.bytes().await.map_err(transport)?;
    if let Some(refusal) = refusal_in(&body) {
        return Err(match refusal {
            ProviderError::Refused { error, .. } => ProviderError::Refused { status, error },
            other => other,
        });
    }
    if status != 200 {
        return Err(ProviderError::Refused {
            status,
            error: "unknown".into(),
        });
    }
    serde_json::from_slice(&body)
        .map_err(|e| ProviderError::Malformed(format!("token answer: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_providers_send_them() {
        let t: TokenAnswer = serde_json::from_value(serde_json::json!({
            "access_token": "a", "expires_in": "3600", "scope": ["user:read:email", "openid"],
            "refresh_token": "r", "refresh_token_expires_in": 7200, "id_token": "x.y.z"
        }))
        .unwrap();
        let tokens = t.into_tokens();
        assert_eq!(tokens.scopes, ["user:read:email", "openid"]);
        assert_eq!(tokens.refresh_token.as_deref(), Some("r"));
        let left = tokens.access_token_expires_at.unwrap() - Utc::now();
        assert!(left.num_seconds() > 3590 && left.num_seconds() <= 3600);
        assert!(tokens.refresh_token_expires_at.is_some());
        let t: TokenAnswer = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "scope": "a  b\tc"
        }))
        .unwrap();
        assert_eq!(t.into_tokens().scopes, ["a", "b", "c"]);
        // No access token: not an answer.
        assert!(
            serde_json::from_value::<TokenAnswer>(serde_json::json!({"id_token": "x"})).is_err()
        );
    }

    #[test]
    fn an_error_member_is_a_refusal_whatever_the_status() {
        let body = br#"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}"#;
        match refusal_in(body) {
            Some(ProviderError::Refused { status: 200, error }) => {
                assert!(error.starts_with("bad_verification_code: "))
            }
            other => panic!("{other:?}"),
        }
        assert!(refusal_in(br#"{"access_token":"a","error":null}"#).is_none());
        assert!(refusal_in(b"not json").is_none());
    }
}
