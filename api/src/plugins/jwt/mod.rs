//! The `jwt` plugin's routes: the signed-in user's token and the keys that verify it.
pub mod keys;

/// The JWT plugin's operations.
pub type Apis = JwtApi;

pub fn apis() -> Apis {
    JwtApi
}

use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::Tag;
use crate::session::Principal;
use crate::AppState;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

pub struct JwtApi;

#[derive(Debug, Object)]
#[oai(rename = "JwtTokenResponse")]
struct TokenResponse {
    /// A JWT for the signed-in user (`sub` = user id), signed with the current key.
    token: String,
}

/// A JSON Web Key Set (RFC 7517).
#[derive(Debug, Object)]
#[oai(rename = "Jwks")]
struct JwksDoc {
    /// The public keys: `kty`, `kid`, `alg` and the key's own members (`crv`/`x`[/`y`], or
    /// `n`/`e`).
    keys: Vec<serde_json::Value>,
}

#[derive(ApiResponse)]
enum JwksResponse {
    #[oai(status = 200)]
    Ok(Json<JwksDoc>, #[oai(header = "Cache-Control")] String),
}

#[OpenApi(tag = "Tag::Jwt")]
impl JwtApi {
    /// Get a JWT for the signed-in user
    ///
    /// Claims: `sub` (the user id), `iat`, `exp`, `iss`, `aud` and the user's fields. Verify
    /// it with the keys of `/jwks`.
    #[oai(path = "/token", method = "get", operation_id = "getToken")]
    async fn token(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<TokenResponse>> {
        if !state.jwt.enabled() {
            return Err(Code::NotFound.into());
        }
        Ok(Json(TokenResponse {
            token: state
                .jwt
                .user_jwt(&state.actors, &auth.user, state.clock.now())
                .await?,
        }))
    }

    /// The public keys (JWKS)
    ///
    /// Every key that verifies a token still alive: the current key, and a retired one until
    /// the tokens it signed have expired.
    #[oai(path = "/jwks", method = "get", operation_id = "getJwks")]
    async fn jwks(&self, state: Data<&AppState>) -> ApiResult<JwksResponse> {
        if !state.jwt.enabled() {
            return Err(Code::NotFound.into());
        }
        let now = state.clock.now();
        state
            .jwt
            .ensure_keys(&state.actors, &state.reader, now)
            .await
            .map_err(ApiError::internal)?;
        let doc = state.jwt.jwks(now);
        let keys = doc["keys"].as_array().cloned().unwrap_or_default();
        Ok(JwksResponse::Ok(
            Json(JwksDoc { keys }),
            "public, max-age=60".into(),
        ))
    }
}
