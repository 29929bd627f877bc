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
