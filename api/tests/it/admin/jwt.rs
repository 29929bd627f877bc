//! JWT and JWKS: verification across a key rotation, keys under another secret, get-session's reused JWT.

use super::*;

/// Tokens from `/token` and `set-auth-jwt` verify against `/jwks` with the `jsonwebtoken`
/// crate used directly here (nothing of the signer's code); after a rotation old tokens still
/// verify and new ones carry the new key id; a tampered token fails.
#[tokio::test]
async fn jwt_verifies_against_jwks_across_a_rotation() {
    for alg in ["EdDSA", "ES256", "RS256"] {
        let h = harness_with(|c| {
            admin_config(c);
            c.jwt.algorithm = alg.into();
        })
        .await;
        let (cookie, id) = user_with_role(&h, "jwt@j.io", None).await;
        let token = h
            .get("/api/auth/token", Some(&cookie))
            .await
            .expect(200)
            .json()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        let claims = verify(&jwks, &token, &h.state.config.base_url)
            .unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(
            (claims["sub"].as_str(), claims["email"].as_str()),
            (Some(id.0.as_str()), Some("jwt@j.io"))
        );
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            900
        );
        // The header of get-session carries one too.
        let r = h
            .get("/api/auth/get-session", Some(&cookie))
            .await
            .expect(200);
        let header = r
            .headers
            .get("set-auth-jwt")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        verify(&jwks, &header, &h.state.config.base_url).unwrap();
        // Tampered: another subject under the same signature.
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged: Value = serde_json::from_slice(&b64(parts[1])).unwrap();
        forged["sub"] = json!("someone-else");
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64_url(&serde_json::to_vec(&forged).unwrap()),
            parts[2]
        );
        assert!(
            verify(&jwks, &forged, &h.state.config.base_url).is_err(),
            "{alg}"
        );
        // Rotate (as `gatehouse keys rotate` does), and let this process see it now.
        let old_kid = kid_of(&token);
        h.clock.advance(chrono::Duration::seconds(1));
        let kp = h.state.jwt.new_key_pair(h.clock.now()).unwrap();
        h.state.actors.add_key_pair(&kp).await.unwrap();
        h.state.jwt.forget_keys();
        let new_token = h
            .get("/api/auth/token", Some(&cookie))
            .await
            .expect(200)
            .json()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(kid_of(&new_token), kp.id.0);
        assert_ne!(kid_of(&new_token), old_kid);
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 2);
        verify(&jwks, &token, &h.state.config.base_url).unwrap();
        verify(&jwks, &new_token, &h.state.config.base_url).unwrap();
        // Once every token of the old key has expired, it leaves the JWKS.
        h.clock.advance(chrono::Duration::seconds(900 + 31));
        let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, vec![kp.id.0.as_str()]);
        // Private keys are stored encrypted.
        for stored in h.store.list_key_pairs().await.unwrap() {
            assert!(
                stored.private_key.starts_with("gk1.")
                    && !stored.private_key.contains("PRIVATE KEY")
            );
        }
    }
    // Anonymous callers get no token.
    let h = harness().await;
    let r = h.get("/api/auth/token", None).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "UNAUTHORIZED".into()));
}

fn b64(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

fn base64_url(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn kid_of(token: &str) -> String {
    jsonwebtoken::decode_header(token).unwrap().kid.unwrap()
}

/// Verifies `token` with the JWKS key its `kid` names (signature, `exp`, `iss`, `aud`).
fn verify(jwks: &Value, token: &str, base: &str) -> Result<Value, String> {
    let set: jsonwebtoken::jwk::JwkSet =
        serde_json::from_value(jwks.clone()).map_err(|e| e.to_string())?;
    let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
    let kid = header.kid.ok_or("no kid")?;
    let jwk = set.find(&kid).ok_or("kid not in the JWKS")?;
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let mut v = jsonwebtoken::Validation::new(header.alg);
    v.set_issuer(&[base]);
    v.set_audience(&[base]);
    // The tests' clock is a manual one; signature and claims are what is checked here.
    v.validate_exp = false;
    jsonwebtoken::decode::<Value>(token, &key, &v)
        .map(|d| d.claims)
        .map_err(|e| e.to_string())
}

/// Key pairs written under another secret cannot be decrypted: the server signs with a new key
/// instead of failing, and sessions keep resolving.
#[tokio::test]
async fn keys_under_another_secret_are_replaced_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let first = Server::start_with(
        dir.path(),
        &[(
            "GATEHOUSE_SECRET",
            "first-secret-0123456789abcdefghijklmnop",
        )],
        None,
    );
    let http = reqwest::Client::new();
    let jwks = |base: String| {
        let http = http.clone();
        async move {
            http.get(format!("{base}/jwks"))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let before = jwks(first.base.clone()).await;
    first.stop();
    let second = Server::start_with(
        dir.path(),
        &[(
            "GATEHOUSE_SECRET",
            "second-secret-0123456789abcdefghijklmno",
        )],
        None,
    );
    let after = jwks(second.base.clone()).await;
    let kids = |v: &Value| {
        v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(kids(&after).len(), 1);
    assert_ne!(kids(&after), kids(&before));
    let r = http
        .post(format!("{}/sign-up/email", second.base))
        .header("origin", "http://localhost:3000")
        .json(&json!({"email": "k@k.io", "password": PASSWORD, "name": "K"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let s = http
        .get(format!("{}/get-session", second.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert!(s.headers().contains_key("set-auth-jwt"));
    second.stop();
}

async fn session_jwt(h: &H, cookie: &str) -> String {
    h.get("/api/auth/get-session", Some(cookie))
        .await
        .expect(200)
        .headers
        .get("set-auth-jwt")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// get-session's `set-auth-jwt` is signed again only when it must be: the same token while at
/// least half its lifetime is left and the user is unchanged; a new one after a change of the
/// user, and once half its life has passed.
#[tokio::test]
async fn get_session_reuses_a_fresh_enough_jwt() {
    let h = harness_with(admin_config).await;
    let (cookie, _) = user_with_role(&h, "reuse@j.io", None).await;
    let first = session_jwt(&h, &cookie).await;
    h.clock.advance(chrono::Duration::seconds(60));
    assert_eq!(
        session_jwt(&h, &cookie).await,
        first,
        "reused within its half-life"
    );
    // The user changes: the claims change, so does the token.
    h.post(
        "/api/auth/update-user",
        json!({"name": "Renamed"}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let renamed = session_jwt(&h, &cookie).await;
    assert_ne!(renamed, first);
    let jwks = h.get("/api/auth/jwks", None).await.expect(200).json();
    let claims = verify(&jwks, &renamed, &h.state.config.base_url).unwrap();
    assert_eq!(claims["name"], "Renamed");
    // Past half its lifetime (900 s): a fresh one.
    h.clock.advance(chrono::Duration::seconds(451));
    let later = session_jwt(&h, &cookie).await;
    assert_ne!(later, renamed);
    let claims = verify(&jwks, &later, &h.state.config.base_url).unwrap();
    assert_eq!(claims["iat"].as_i64().unwrap(), h.clock.now().timestamp());
}
