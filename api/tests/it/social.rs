//! Social sign-in against HTTP fakes of the 18 providers: a poem server on a free port that
//! answers each provider's token, profile and second endpoints with the JSON their
//! documentation shows (including GitHub's HTTP-200 error and Twitch's array `scope`), and
//! records what Gatehouse sent. Gatehouse calls it over real HTTP.
use crate::common::*;
use base64::Engine;
use gatehouse_api::config::{Config, Secret, SocialProviderConfig};
use poem::web::{Data, Path};
use poem::{handler, EndpointExt, IntoResponse, Request, Response, Route};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What one call to the fake carried.
#[derive(Debug, Clone)]
struct Seen {
    provider: String,
    what: String,
    authorization: Option<String>,
    form: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    fn token_call(&self, provider: &str) -> Seen {
        self.0
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|s| s.provider == provider && s.what == "token")
            .cloned()
            .expect("a token request")
    }
}

const ID_TOKEN_PROVIDERS: &[&str] = &["apple", "google", "microsoft", "twitch"];

/// The fakes' signing key (made for these tests with `openssl genpkey -algorithm RSA`), and
/// its public half as the key set they serve.
pub(crate) const FAKE_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDiUGdcfnS0lo+1
hhGBWcOzuzNNVlTvAutyKjCbcewe6aXfQEvpnK4XVDUn2cuvPLwae4kd8dMCZS+/
nD8gJrwxjtRcrGN3Rz20RSkaDxo/S8GusIrZNE6Tis9p7d4yE3w9MFeO4XdlPIds
VRl1FgKHTRifGivEk3DE0wjiFA/y9Ew8+Kh6HyE4Ma3enE7Upc3K9B9fcvSV0wH4
fXmDo1Kkfa6KlFwi3hMDmq988IbIgrzZzHjhAu3+8I0aFjan05nNKHBr3iN8eVMb
pDDc+ge0ubY7wHW1Wna8YdqZ2PUBHxZNI/scCaTkQ4+Hqo/ggHrjVNnexysNJQaZ
ynjzCAsbAgMBAAECggEABV+LVLLb6n24o8KvH7cV4mqLaUandZVIKcm+pbIqvQEn
IwnPw5gouf0R1gRhxaNXg/ly4/cd32yvmYkIJqdEyJhvilO9eNOEL4eE1k2Nffs6
ef9PDKElTHN7QTSYle/If1tqeMX5o7mwLW5H0HPZU4UNFJn2eBBYGRQ5ncSELGx9
AH3hxYmq7futgAte8/MUEu1eDrTgzHzE4bIImQxBpECddl/Y2n9JPHU5T7zm6Hti
tcFaVZMBGYDvUsbNWfBXb0VCAHvgCTRH1AcziUvpRynLTEjkSjSQ96xziy0FN1WC
vPMlLcZPgFARAgopeBSZGbhBvpz+3gqNZTxaHjzgIQKBgQD+Q3rCd1yrhl933MC+
+DJjpS2kzZuzOGHJOPETsZWqJrcsnO31Now48WGWbrSwrPrL8mzQKCATzTosNYNV
L6soCHI152zAGA7dPN5iOn1eGJrjphHsOANEvxfR5uNOImKZwZEzG1OYGusnqrvT
MXP2gULCK9BzGVW8uJCnF1zzlwKBgQDj3A+fsJbyymZeMmngQseltFhqGuZ5FCKu
zOOMJCzN605znc4D0qGGiO8ZjjLYgyIRnvj7KTNbwYBHRkfWKOhiCbK6j1JfRB3z
hB1n47rCHJoj2MbKyjJ6VzcT8rPHDvyjoFKYd+kr8Y93+A0XIeA68/HvFTpCT7W3
KKvG5wWFHQKBgQCaLdj2quJqsCSbziSiqGYFvlebI4JSftHs7rZgtsKGVsukJdS1
aMpGjTgbvC2dJIc/vFT3NB2fZEbuH9TvhuRGdjirLxXmta/tv8cp0UXMFSd2+3DK
yHxS531OLq+O5ZLcoV+mmd9q0IffmcwjGE21IFSW4XKZGLfApDoy2BvpKQKBgAET
62b/+NbRKkbLykBrUHJyNfDai7iK5dcZ1QG2shePQ2G8n1rZRjZSs37Vc1we0qxu
qhLWEQ4gDjFIHdLfgqnkDdpgDy2wLswWFeWF6D4+0GPXBKm05yQ5AWOwxDTu1zcW
7Q0XlBzHGbyhib5QRLVCriRJX2ss4VkqchWQxi/pAoGAHrap6xdp07oSk+56drVh
90TlzvfdM7OzQ1jdZ7fmgyOyZQ0iqLAh2sNeNclNVhrTb2m56eDRpfAheNzhsthF
r53hNdo71LnqkCsNg/PRrcKX2VlN80DgN4bHISma1pWLVwcG0Yd7A/taG/Pa53kR
Y+Ig6zsuj9Q3R1wUxn+04D8=
-----END PRIVATE KEY-----
";
const FAKE_KEY_N: &str = "4lBnXH50tJaPtYYRgVnDs7szTVZU7wLrciowm3HsHuml30BL6ZyuF1Q1J9nLrzy8GnuJHfHTAmUvv5w_ICa8MY7UXKxjd0c9tEUpGg8aP0vBrrCK2TROk4rPae3eMhN8PTBXjuF3ZTyHbFUZdRYCh00YnxorxJNwxNMI4hQP8vRMPPioeh8hODGt3pxO1KXNyvQfX3L0ldMB-H15g6NSpH2uipRcIt4TA5qvfPCGyIK82cx44QLt_vCNGhY2p9OZzShwa94jfHlTG6Qw3PoHtLm2O8B1tVp2vGHamdj1AR8WTSP7HAmk5EOPh6qP4IB641TZ3scrDSUGmcp48wgLGw";

pub(crate) fn fake_jwks() -> Value {
    json!({"keys": [{"kty": "RSA", "kid": "fake-1", "use": "sig", "alg": "RS256", "n": FAKE_KEY_N, "e": "AQAB"}]})
}

/// An id token as `provider` would issue it to its client: signed by the fakes' key, for
/// `client-<provider>`, issued now.
fn signed_id_token(provider: &str, mut claims: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    claims["aud"] = json!(format!("client-{provider}"));
    claims["iat"] = json!(now);
    claims["exp"] = json!(now + 600);
    if provider == "microsoft" {
        let tid = claims["tid"].as_str().unwrap().to_owned();
        claims["iss"] = json!(format!("https://login.microsoftonline.com/{tid}/v2.0"));
    }
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("fake-1".into());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(FAKE_KEY.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// The profile each provider documents (PROVIDERS.md §3.3 lists the fields used).
fn profile(provider: &str) -> Value {
    match provider {
        "apple" => {
            json!({"iss": "https://appleid.apple.com", "sub": "001234.apple", "aud": "client-apple", "email": "ann@example.com", "email_verified": "true"})
        }
        "discord" => {
            json!({"id": "80351110224678912", "username": "nelly", "discriminator": "0", "global_name": "Nelly", "avatar": "8342729096ea3675442027381ff50dfe", "verified": true, "email": "nelly@example.com"})
        }
        "facebook" => {
            json!({"id": "10158", "name": "Fay Book", "email": "fay@example.com", "picture": {"data": {"url": "https://fb.example/p.jpg"}}})
        }
        "github" => {
            json!({"login": "octocat", "id": 1, "avatar_url": "https://github.example/octocat.gif", "name": "monalisa octocat", "email": null})
        }
        "microsoft" => {
            json!({"oid": "00000000-0000-0000-66f3-3332eca7ea81", "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ", "tid": "9188040d-6c67-4c5b-b112-36a304b66dad", "name": "Mia Soft", "email": "mia@example.com", "email_verified": true})
        }
        "google" => {
            json!({"iss": "https://accounts.google.com", "sub": "110169484474386276334", "email": "gina@example.com", "email_verified": true, "name": "Gina G", "picture": "https://g.example/p.jpg", "hd": "example.com"})
        }
        "spotify" => {
            json!({"id": "wizzler", "display_name": "Wiz", "email": "wiz@example.com", "images": [{"url": "https://s.example/i.jpg", "height": 300, "width": 300}]})
        }
        "twitch" => {
            json!({"iss": "https://id.twitch.tv/oauth2", "sub": "713936733", "preferred_username": "twitchy", "email": "twitchy@example.com", "email_verified": true, "picture": "https://t.example/p.png"})
        }
        "twitter" => {
            json!({"data": {"id": "2244994945", "name": "X Dev", "username": "XDevelopers", "profile_image_url": "https://x.example/p.jpg"}})
        }
        "dropbox" => {
            json!({"account_id": "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "name": {"display_name": "Franz Ferdinand"}, "email": "franz@example.com", "email_verified": true, "profile_photo_url": "https://d.example/p.jpg"})
        }
        "kick" => {
            json!({"data": [{"user_id": 123, "name": "kicker", "email": "kick@example.com", "profile_picture": "https://k.example/p.png"}], "message": "OK"})
        }
        "linkedin" => {
            json!({"sub": "782bbtaQ", "name": "Lin Ked", "email": "lin@example.com", "email_verified": true, "picture": "https://l.example/p"})
        }
        "gitlab" => {
            json!({"id": 42, "username": "gitty", "name": "Git Lab", "state": "active", "locked": false, "email": "gitty@example.com", "avatar_url": "https://gl.example/a.png"})
        }
        "tiktok" => {
            json!({"data": {"user": {"open_id": "723f24d7-e717-40f8-a2b6-cb8464cd23b4", "display_name": "Tik", "avatar_large_url": "https://t.example/a.jpg"}}, "error": {"code": "ok", "message": "", "log_id": "x"}})
        }
        "reddit" => {
            json!({"id": "t2abc", "name": "redditor", "icon_img": "https://r.example/i.png?s=1"})
        }
        "roblox" => {
            json!({"sub": "1516563360", "preferred_username": "robloxer", "nickname": "Rob", "picture": "https://rb.example/p"})
        }
        "vk" => {
            json!({"user": {"user_id": "1234567890", "first_name": "Ivan", "last_name": "Ivanov", "avatar": "https://vk.example/a", "email": "ivan@example.com"}})
        }
        "zoom" => {
            json!({"id": "KDcuGIm1QgePTO8WbOqwIQ", "display_name": "Zed Zoom", "email": "zed@example.com", "verified": 1, "pic_url": "https://z.example/p"})
        }
        _ => Value::Null,
    }
}

/// (account id, email, email verified, name) Gatehouse must make of each profile.
fn expected(provider: &str) -> (&'static str, &'static str, bool, &'static str) {
    match provider {
        "apple" => ("001234.apple", "ann@example.com", true, "Ann Apple"),
        "discord" => ("80351110224678912", "nelly@example.com", true, "Nelly"),
        "facebook" => ("10158", "fay@example.com", false, "Fay Book"),
        "github" => ("1", "octocat@example.com", true, "monalisa octocat"),
        "microsoft" => (
            "00000000-0000-0000-66f3-3332eca7ea81",
            "mia@example.com",
            true,
            "Mia Soft",
        ),
        "google" => ("110169484474386276334", "gina@example.com", true, "Gina G"),
        "spotify" => ("wizzler", "wiz@example.com", false, "Wiz"),
        "twitch" => ("713936733", "twitchy@example.com", true, "twitchy"),
        "twitter" => ("2244994945", "xdev@example.com", true, "X Dev"),
        "dropbox" => (
            "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc",
            "franz@example.com",
            true,
            "Franz Ferdinand",
        ),
        "kick" => ("123", "kick@example.com", false, "kicker"),
        "linkedin" => ("782bbtaQ", "lin@example.com", true, "Lin Ked"),
        "gitlab" => ("42", "gitty@example.com", false, "Git Lab"),
        "tiktok" => (
            "723f24d7-e717-40f8-a2b6-cb8464cd23b4",
            "723f24d7-e717-40f8-a2b6-cb8464cd23b4@tiktok.placeholder.invalid",
            false,
            "Tik",
        ),
        "reddit" => (
            "t2abc",
            "t2abc@reddit.placeholder.invalid",
            false,
            "redditor",
        ),
        "roblox" => (
            "1516563360",
            "1516563360@roblox.placeholder.invalid",
            false,
            "Rob",
        ),
        "vk" => ("1234567890", "ivan@example.com", false, "Ivan Ivanov"),
        "zoom" => (
            "KDcuGIm1QgePTO8WbOqwIQ",
            "zed@example.com",
            true,
            "Zed Zoom",
        ),
        _ => unreachable!(),
    }
}

#[handler]
async fn provider_endpoint(
    Path((provider, what)): Path<(String, String)>,
    req: &Request,
    body: Vec<u8>,
    Data(log): Data<&Log>,
) -> Response {
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    log.0.lock().unwrap().push(Seen {
        provider: provider.clone(),
        what: what.clone(),
        authorization: authorization.clone(),
        form: form.clone(),
    });
    let json = |status: u16, v: Value| {
        Response::builder()
            .status(poem::http::StatusCode::from_u16(status).unwrap())
            .content_type("application/json")
            .body(v.to_string())
    };
    match what.as_str() {
        "token" => {
            // `code` is `<code>[.<nonce>]`: the test hands the flow's nonce over in the code,
            // as a provider keeps it with the authorization.
            let full = form.get("code").cloned().unwrap_or_default();
            let (code, nonce) = match full.split_once('.') {
                Some((c, n)) => (c.to_owned(), Some(n.to_owned())),
                None => (full.clone(), None),
            };
            if code == "hang" {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            if !matches!(code.as_str(), "good" | "forged")
                && form.get("grant_type").map(String::as_str) != Some("refresh_token")
            {
                return if provider == "github" {
                    json(
                        200,
                        json!({"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}),
                    )
                } else {
                    json(400, json!({"error": "invalid_grant"}))
                };
            }
            let refreshing = form.get("grant_type").map(String::as_str) == Some("refresh_token");
            let suffix = if refreshing { "-r" } else { "" };
            let mut t = json!({
                "access_token": format!("at-{provider}{suffix}"),
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": format!("rt-{provider}"),
                "scope": "a b",
            });
            if provider == "twitch" {
                t["scope"] = json!(["user:read:email", "openid"]);
            }
            if provider == "github" {
                t["scope"] = json!("read:user,user:email");
            }
            if ID_TOKEN_PROVIDERS.contains(&provider.as_str()) {
                let mut claims = profile(&provider);
                if let Some(n) = nonce {
                    claims["nonce"] = json!(n);
                }
                let signed = signed_id_token(&provider, claims);
                // `forged`: a token whose signature is not the provider's.
                t["id_token"] = if code == "forged" {
                    let (signed_part, _) = signed.rsplit_once('.').unwrap();
                    json!(format!("{signed_part}.c2lnbmVkIGJ5IG5vYm9keQ"))
                } else {
                    json!(signed)
                };
            }
            json(200, t)
        }
        "userinfo" => {
            let bearer_ok = authorization
                .as_deref()
                .is_some_and(|a| a.starts_with(&format!("Bearer at-{provider}")));
            let form_ok = form.get("access_token") == Some(&format!("at-{provider}"));
            if !(bearer_ok || (provider == "vk" && form_ok)) {
                return json(401, json!({"error": "invalid_token"}));
            }
            json(200, profile(&provider))
        }
        "jwks" => json(200, fake_jwks()),
        "extra" => match provider.as_str() {
            "github" => json(
                200,
                json!([
                    {"email": "old@example.com", "verified": false, "primary": false, "visibility": null},
                    {"email": "octocat@example.com", "verified": true, "primary": true, "visibility": "public"}
                ]),
            ),
            "twitter" => json(
                200,
                json!({"data": {"id": "2244994945", "confirmed_email": "xdev@example.com"}}),
            ),
            "facebook" => json(
                200,
                json!({"data": {"app_id": "client-facebook", "type": "USER", "is_valid": true, "user_id": "10158", "scopes": ["email"]}}),
            ),
            _ => json(404, json!({"error": {"code": "ImageNotFound"}})),
        },
        _ => "no such endpoint"
            .with_status(poem::http::StatusCode::NOT_FOUND)
            .into_response(),
    }
}

/// The fake providers, listening on a free port.
pub(crate) struct Fake {
    base: String,
    log: Log,
    _server: tokio::task::JoinHandle<()>,
}

async fn fake_providers() -> Fake {
    let log = Log::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Route::new()
        .at(
            "/:provider/:what",
            poem::post(provider_endpoint).get(provider_endpoint),
        )
        .data(log.clone());
    let server = tokio::spawn(async move {
        let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).unwrap();
        let _ = poem::Server::new_with_acceptor(acceptor).run(app).await;
    });
    Fake {
        base: format!("http://{addr}"),
        log,
        _server: server,
    }
}

fn configure(c: &mut Config, fake: &str) {
    for spec in gatehouse_api::plugins::social::providers::catalog::PROVIDERS {
        let id = spec.id;
        let user_info =
            (!ID_TOKEN_PROVIDERS.contains(&id)).then(|| format!("{fake}/{id}/userinfo"));
        c.social.insert(
            id.into(),
            SocialProviderConfig {
                client_id: format!("client-{id}"),
                client_secret: Some(Secret::new(format!("secret-{id}"))),
                authorization_endpoint: Some(format!("https://auth.example/{id}/authorize")),
                token_endpoint: Some(format!("{fake}/{id}/token")),
                user_info_endpoint: user_info,
                extra_endpoint: Some(format!("{fake}/{id}/extra")),
                jwks_uri: Some(format!("{fake}/{id}/jwks")),
                ..Default::default()
            },
        );
    }
    c.account.provider_timeout_ms = 1_000;
}

pub(crate) async fn social_harness() -> (H, Fake) {
    let fake = fake_providers().await;
    let base = fake.base.clone();
    let h = harness_with(|c| configure(c, &base)).await;
    (h, fake)
}

/// A started flow: the authorize URL's parameters and the browser's state cookie.
pub(crate) struct Flow {
    pub(crate) query: BTreeMap<String, String>,
    pub(crate) cookie: String,
}

impl Flow {
    pub(crate) fn state(&self) -> &str {
        &self.query["state"]
    }
}

pub(crate) async fn start(h: &H, path: &str, body: Value, cookie: Option<&str>) -> Flow {
    let r = h.post(path, body, cookie).await.expect(200);
    let url = r.json()["url"].as_str().unwrap().to_owned();
    assert_eq!(r.headers.get("location").unwrap().to_str().unwrap(), url);
    let query = url::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let state_cookie = r.set_cookie("gatehouse.state").expect("a state cookie");
    assert!(state_cookie.contains("HttpOnly") && state_cookie.contains("SameSite=Lax"));
    let state_pair = state_cookie.split(';').next().unwrap().to_owned();
    let cookie = match cookie {
        Some(c) => format!("{c}; {state_pair}"),
        None => state_pair,
    };
    Flow { query, cookie }
}

pub(crate) async fn sign_in_start(h: &H, provider: &str) -> Flow {
    start(
        h,
        "/api/auth/sign-in/social",
        json!({"provider": provider, "callbackURL": "/dashboard", "newUserCallbackURL": "/welcome", "errorCallbackURL": "/oops"}),
        None,
    )
    .await
}

pub(crate) async fn callback(h: &H, provider: &str, flow: &Flow, code: &str) -> Resp {
    let code = match flow.query.get("nonce") {
        Some(n) => format!("{code}.{n}"),
        None => code.to_owned(),
    };
    let mut path = format!(
        "/api/auth/callback/{provider}?code={code}&state={}",
        flow.state()
    );
    if provider == "apple" {
        path.push_str("&user=%7B%22name%22%3A%7B%22firstName%22%3A%22Ann%22%2C%22lastName%22%3A%22Apple%22%7D%7D");
    }
    if provider == "vk" {
        path.push_str("&device_id=dev-1");
    }
    h.get(&path, Some(&flow.cookie)).await
}

pub(crate) fn location(r: &Resp) -> String {
    r.headers
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn every_provider_signs_in_through_the_code_flow() {
    let (h, fake) = social_harness().await;
    for spec in gatehouse_api::plugins::social::providers::catalog::PROVIDERS {
        let id = spec.id;
        let flow = sign_in_start(&h, id).await;
        // The authorize URL.
        let q = &flow.query;
        if id == "tiktok" {
            assert_eq!(q["client_key"], "client-tiktok");
            assert!(!q.contains_key("client_id"));
        } else {
            assert_eq!(q["client_id"], format!("client-{id}"), "{id}");
        }
        assert_eq!(
            q["redirect_uri"],
            format!("http://localhost:3000/api/auth/callback/{id}"),
            "{id}"
        );
        assert_eq!(q["response_type"], spec.response_type, "{id}");
        assert_eq!(q.contains_key("code_challenge"), spec.pkce, "{id}");
        assert_eq!(
            q.contains_key("nonce"),
            ID_TOKEN_PROVIDERS.contains(&id),
            "{id}"
        );
        assert_eq!(flow.state().len(), 32);

        let r = callback(&h, id, &flow, "good").await;
        assert_eq!(r.status.as_u16(), 302, "{id}: {}", r.text);
        assert_eq!(location(&r), "/welcome", "{id}: a new user");
        let session_cookie = r
            .set_cookie("gatehouse.session_token")
            .unwrap_or_else(|| panic!("{id}: a session cookie"));
        assert!(r
            .set_cookie("gatehouse.state")
            .is_some_and(|c| c.contains("Max-Age=0")));
        let cookie = session_cookie.split(';').next().unwrap().to_owned();
        let session = h.session(&cookie).await;
        let (account_id, email, verified, name) = expected(id);
        assert_eq!(session["user"]["email"], email, "{id}");
        assert_eq!(session["user"]["emailVerified"], verified, "{id}");
        assert_eq!(session["user"]["name"], name, "{id}");

        // What Gatehouse sent to the token endpoint.
        let seen = fake.log.token_call(id);
        let secret = format!("secret-{id}");
        match spec.client_auth {
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::Basic => {
                let b64 = base64::engine::general_purpose::STANDARD;
                let want = format!("Basic {}", b64.encode(format!("client-{id}:{secret}")));
                assert_eq!(seen.authorization.as_deref(), Some(want.as_str()), "{id}");
                assert!(!seen.form.contains_key("client_secret"), "{id}");
            }
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::ClientKey => {
                assert_eq!(seen.form["client_key"], "client-tiktok");
                assert!(!seen.form.contains_key("client_id"));
                assert_eq!(seen.form["client_secret"], secret);
            }
            gatehouse_api::plugins::social::providers::catalog::ClientAuth::Body => {
                assert_eq!(seen.form["client_id"], format!("client-{id}"), "{id}");
                assert_eq!(seen.form["client_secret"], secret, "{id}");
            }
        }
        if spec.pkce {
            let verifier = &seen.form["code_verifier"];
            assert_eq!(verifier.len(), 128);
            assert_eq!(
                gatehouse_api::plugins::social::providers::challenge(verifier),
                flow.query["code_challenge"],
                "{id}: the verifier answers the challenge"
            );
        }
        if id == "vk" {
            assert_eq!(seen.form["device_id"], "dev-1");
        }

        // The stored account: the provider's id, tokens encrypted at rest.
        let user_id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
        let accounts = h.store.list_accounts(&user_id).await.unwrap();
        assert_eq!(accounts.len(), 1, "{id}");
        let a = &accounts[0];
        assert_eq!(
            (a.provider_id.as_str(), a.account_id.as_str()),
            (id, account_id)
        );
        let stored = a.access_token.as_deref().unwrap();
        assert!(
            stored.starts_with("gh1.") && !stored.contains("at-"),
            "{id}: {stored}"
        );
        assert_eq!(
            h.state.social_flow.social.open(stored).unwrap(),
            format!("at-{id}")
        );
        let listed = h
            .get("/api/auth/list-accounts", Some(&cookie))
            .await
            .expect(200)
            .json();
        assert_eq!(listed[0]["providerId"], id);
        assert_eq!(listed[0]["accountId"], account_id);

        // Signing in again: the same user, no new one, to callbackURL.
        let again = sign_in_start(&h, id).await;
        let r = callback(&h, id, &again, "good").await;
        assert_eq!(location(&r), "/dashboard", "{id}: an existing user");
        let cookie = r.cookie_header();
        assert_eq!(
            h.session(&cookie).await["user"]["id"],
            session["user"]["id"]
        );
    }
    let twitch = h
        .store
        .get_account_by_provider("twitch", "713936733")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(twitch.scope.as_deref(), Some("user:read:email,openid"));
}

#[tokio::test]
async fn a_callback_counts_once_and_only_in_the_browser_that_started_it() {
    let (h, _fake) = social_harness().await;
    // Replay: the second use of one state is refused and makes no session.
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&first), "/welcome");
    let replay = callback(&h, "github", &flow, "good").await;
    assert_eq!(replay.status.as_u16(), 302);
    // The state is gone, and with it the flow's error URL: the error page.
    assert_eq!(
        location(&replay),
        "http://localhost:3000/api/auth/error?error=please_restart_the_process"
    );
    assert!(replay.set_cookie("gatehouse.session_token").is_none());

    // Another browser: the right state without the state cookie.
    let flow = sign_in_start(&h, "github").await;
    let r = h
        .get(
            &format!("/api/auth/callback/github?code=good&state={}", flow.state()),
            None,
        )
        .await;
    assert_eq!(location(&r), "/oops?error=please_restart_the_process");
    // ...or with a cookie for another state.
    let other = sign_in_start(&h, "github").await;
    let r = h
        .get(
            &format!("/api/auth/callback/github?code=good&state={}", flow.state()),
            Some(&other.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=please_restart_the_process");
    // Unknown state, no state.
    let r = h
        .get(
            "/api/auth/callback/github?code=good&state=nope",
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(
        location(&r),
        "http://localhost:3000/api/auth/error?error=please_restart_the_process"
    );
    let r = h.get("/api/auth/callback/github?code=good", None).await;
    assert_eq!(
        location(&r),
        "http://localhost:3000/api/auth/error?error=state_not_found"
    );
}

#[tokio::test]
async fn twenty_concurrent_callbacks_with_one_state_make_one_session() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "gitlab").await;
    let replies =
        futures::future::join_all((0..20).map(|_| callback(&h, "gitlab", &flow, "good"))).await;
    let signed: Vec<&Resp> = replies
        .iter()
        .filter(|r| r.set_cookie("gatehouse.session_token").is_some())
        .collect();
    assert_eq!(signed.len(), 1);
    assert_eq!(location(signed[0]), "/welcome");
    let refused = replies
        .iter()
        .filter(|r| location(r).ends_with("?error=please_restart_the_process"))
        .count();
    assert_eq!(refused, 19);
    let user = h
        .store
        .get_user_by_email("gitty@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.store.list_sessions(&user.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn provider_failures_go_to_the_error_url() {
    let (h, _fake) = social_harness().await;
    // GitHub's bad code: HTTP 200 with an `error` member.
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "bad").await;
    assert_eq!(location(&r), "/oops?error=invalid_code");
    // Another provider's 400.
    let flow = sign_in_start(&h, "discord").await;
    assert_eq!(
        location(&callback(&h, "discord", &flow, "bad").await),
        "/oops?error=invalid_code"
    );
    // The user said no at the provider.
    let flow = sign_in_start(&h, "google").await;
    let r = h
        .get(
            &format!(
                "/api/auth/callback/google?error=access_denied&error_description=User%20denied&state={}",
                flow.state()
            ),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(
        location(&r),
        "/oops?error=access_denied&error_description=User%20denied"
    );
    // An id token bound to another flow (its nonce is not this flow's).
    let flow = sign_in_start(&h, "google").await;
    assert_eq!(flow.query["nonce"].len(), 32);
    let r = h
        .get(
            &format!(
                "/api/auth/callback/google?code=good.another-nonce&state={}",
                flow.state()
            ),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=nonce_binding_missing");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    // An id token in the token response whose signature is not the provider's key's: no
    // session and no user, for every provider whose user comes from the id token.
    for id in ID_TOKEN_PROVIDERS {
        let flow = sign_in_start(&h, id).await;
        let r = callback(&h, id, &flow, "forged").await;
        assert_eq!(location(&r), "/oops?error=unable_to_get_user_info", "{id}");
        assert!(r.set_cookie("gatehouse.session_token").is_none(), "{id}");
        let (_, email, _, _) = expected(id);
        assert!(
            h.store.get_user_by_email(email).await.unwrap().is_none(),
            "{id}"
        );
    }
    // No code.
    let flow = sign_in_start(&h, "google").await;
    let r = h
        .get(
            &format!("/api/auth/callback/google?state={}", flow.state()),
            Some(&flow.cookie),
        )
        .await;
    assert_eq!(location(&r), "/oops?error=no_code");
    // A provider that hangs: the error redirect once the configured timeout passes.
    let flow = sign_in_start(&h, "spotify").await;
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        callback(&h, "spotify", &flow, "hang"),
    )
    .await
    .expect("answered before the provider did");
    assert_eq!(location(&r), "/oops?error=invalid_code");
}

#[tokio::test]
async fn sign_in_requests_are_checked() {
    let (h, _fake) = social_harness().await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "myspace"}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "PROVIDER_NOT_FOUND");
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "callbackURL": "https://evil.example/x"}),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "INVALID_CALLBACK_URL");
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "additionalParams": {"redirect_uri": "https://evil.example"}}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // better-auth's client may send `additionalData` (for its server hooks): accepted; a
    // value that is not an object is not.
    h.post(
        "/api/auth/sign-in/social",
        json!({"provider": "github", "additionalData": {"plan": "pro", "seats": 3}}),
        None,
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "additionalData": "pro"}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    // Providers without id-token sign-in.
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "idToken": {"token": "x.y.z"}}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "ID_TOKEN_NOT_SUPPORTED");
    // disableRedirect: no Location, still a state.
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "github", "disableRedirect": true, "scopes": ["repo"], "loginHint": "a@b.example"}),
            None,
        )
        .await
        .expect(200);
    assert!(r.headers.get("location").is_none());
    assert_eq!(r.json()["redirect"], false);
    let url = url::Url::parse(r.json()["url"].as_str().unwrap()).unwrap();
    let q: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(q["scope"], "read:user user:email repo");
    assert_eq!(q["login_hint"], "a@b.example");
    // The configured providers, without secrets.
    let list = h.get("/api/auth/social-providers", None).await.expect(200);
    assert_eq!(list.json().as_array().unwrap().len(), 18);
    assert!(!list.text.contains("secret-"));
    // Apple's form_post comes back as a GET with the same parameters.
    let r = h
        .call(
            poem::http::Method::POST,
            "/api/auth/callback/apple",
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        415,
        "a form body is required: {}",
        r.text
    );
    let resp = crate::common::call_raw(
        &h.ep,
        poem::Request::builder()
            .method(poem::http::Method::POST)
            .uri_str("/api/auth/callback/apple")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("code=c1&state=s1&user=%7B%7D"),
    )
    .await;
    assert_eq!(resp.status.as_u16(), 302);
    assert_eq!(
        location(&resp),
        "http://localhost:3000/api/auth/callback/apple?code=c1&state=s1&user=%7B%7D"
    );
}

#[tokio::test]
async fn linking_follows_the_rules() {
    let (h, _fake) = social_harness().await;
    // Pre-registration takeover: someone registered GitHub's (verified) address with a
    // password and never proved it; the GitHub sign-in must not hand them the account.
    h.sign_up("octocat@example.com", "a-good-password").await;
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=account_not_linked");
    assert!(r.set_cookie("gatehouse.session_token").is_none());

    // A verified local address and a provider-verified one: linked, the same user.
    let user = h.store.get_user_by_email("gina@example.com").await.unwrap();
    assert!(user.is_none());
    let gina = h.sign_up("gina@example.com", "a-good-password").await;
    let gina_id = gina.json()["user"]["id"].as_str().unwrap().to_owned();
    h.change_user("gina@example.com", |u| u.email_verified = true)
        .await;
    let flow = sign_in_start(&h, "google").await;
    let r = callback(&h, "google", &flow, "good").await;
    assert_eq!(location(&r), "/dashboard");
    assert_eq!(
        h.session(&r.cookie_header()).await["user"]["id"],
        gina_id.as_str()
    );

    // Facebook does not verify emails: no implicit link to a verified user.
    let fay = h.sign_up("fay@example.com", "a-good-password").await;
    let fay_cookie = fay.cookie_header();
    h.change_user("fay@example.com", |u| u.email_verified = true)
        .await;
    let flow = sign_in_start(&h, "facebook").await;
    assert_eq!(
        location(&callback(&h, "facebook", &flow, "good").await),
        "/oops?error=account_not_linked"
    );

    // link-social: a provider that does not verify → refused; different emails → refused.
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "facebook", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&fay_cookie),
    )
    .await;
    let r = callback(&h, "facebook", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=unable_to_link_account");
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "discord", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&fay_cookie),
    )
    .await;
    let r = callback(&h, "discord", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=email_does_not_match");

    // Gina links LinkedIn, whose address is not hers.
    let gina_cookie = h
        .sign_in("gina@example.com", "a-good-password")
        .await
        .expect(200)
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "linkedin", "callbackURL": "/settings"}),
        Some(&gina_cookie),
    )
    .await;
    let r = callback(&h, "linkedin", &flow, "good").await;
    assert!(
        location(&r).ends_with("error=email_does_not_match"),
        "{}",
        location(&r)
    );
    let accounts = h
        .get("/api/auth/list-accounts", Some(&gina_cookie))
        .await
        .expect(200)
        .json();
    let providers: Vec<&str> = accounts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["providerId"].as_str().unwrap())
        .collect();
    assert_eq!(providers.len(), 2, "{providers:?}");
    assert!(providers.contains(&"google") && providers.contains(&"credential"));

    // link-social with the provider-verified address of the signed-in user (whose own
    // address need not be verified for an explicit link): linked, no new session.
    let twitchy = h
        .sign_up("twitchy@example.com", "a-good-password")
        .await
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "twitch", "callbackURL": "/settings"}),
        Some(&twitchy),
    )
    .await;
    let r = callback(&h, "twitch", &flow, "good").await;
    assert_eq!(location(&r), "/settings");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    let accounts = h
        .get("/api/auth/list-accounts", Some(&twitchy))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 2);

    // Without a session, link-social is 401.
    let r = h
        .post("/api/auth/link-social", json!({"provider": "github"}), None)
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");

    // A social-only user cannot unlink their last account.
    let flow = sign_in_start(&h, "zoom").await;
    let zed = callback(&h, "zoom", &flow, "good").await.cookie_header();
    let r = h
        .post(
            "/api/auth/unlink-account",
            json!({"providerId": "zoom"}),
            Some(&zed),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "FAILED_TO_UNLINK_LAST_ACCOUNT");
}

#[tokio::test]
async fn link_social_links_an_account_with_the_users_verified_email() {
    let (h, _fake) = social_harness().await;
    // A user who signed up with Dropbox (a verified address) links the same account again.
    let flow = sign_in_start(&h, "dropbox").await;
    let franz = callback(&h, "dropbox", &flow, "good").await.cookie_header();
    let pw = h
        .post(
            "/api/auth/link-social",
            json!({"provider": "dropbox", "callbackURL": "/settings"}),
            Some(&franz),
        )
        .await
        .expect(200);
    assert!(pw.json()["url"]
        .as_str()
        .unwrap()
        .contains("client_id=client-dropbox"));
    // Relinking the same account updates it (and merges scopes); the user still has one.
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "dropbox", "callbackURL": "/settings"}),
        Some(&franz),
    )
    .await;
    let r = callback(&h, "dropbox", &flow, "good").await;
    assert_eq!(location(&r), "/settings");
    assert!(
        r.set_cookie("gatehouse.session_token").is_none(),
        "no new session"
    );
    let accounts = h
        .get("/api/auth/list-accounts", Some(&franz))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 1);
    // An account of another user cannot be linked.
    h.sign_up("other@example.com", "a-good-password").await;
    let other = h
        .sign_in("other@example.com", "a-good-password")
        .await
        .expect(200)
        .cookie_header();
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "dropbox", "callbackURL": "/settings", "errorCallbackURL": "/oops"}),
        Some(&other),
    )
    .await;
    let r = callback(&h, "dropbox", &flow, "good").await;
    // Emails differ, which is checked first.
    assert_eq!(location(&r), "/oops?error=email_does_not_match");
    // Each step is in the audit log once, a refused link with the redirect's error.
    assert_eq!(
        audit_actions(&h).await,
        [
            "account.linked failure email_does_not_match",
            "account.linked success",
            "user.sign-in success",
            "user.sign-in success dropbox",
            "user.sign-up success",
            "user.sign-up success dropbox",
        ]
    );
}

/// The audit log as `action outcome [reason] [provider]` lines, sorted (the harness's clock
/// stands still, so time does not order them).
async fn audit_actions(h: &H) -> Vec<String> {
    let now = chrono::Utc::now();
    let q = storage::AuditQuery::range(
        now - chrono::Duration::days(30),
        now + chrono::Duration::days(30),
        1000,
    );
    let mut lines: Vec<String> = h
        .store
        .list_audit(&q)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| {
            let mut line = format!("{} {}", e.action, e.outcome.as_str());
            for extra in [
                e.reason.as_deref(),
                e.details.get("provider").map(String::as_str),
            ]
            .into_iter()
            .flatten()
            {
                line.push(' ');
                line.push_str(extra);
            }
            line
        })
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn provider_tokens_are_answered_refreshed_and_used() {
    let (h, _fake) = social_harness().await;
    let pw = h.sign_up("octocat@example.com", "a-good-password").await;
    let cookie = pw.cookie_header();
    let user_id = storage::UserId(pw.json()["user"]["id"].as_str().unwrap().to_owned());
    let flow = start(
        &h,
        "/api/auth/link-social",
        json!({"provider": "github", "callbackURL": "/settings"}),
        Some(&cookie),
    )
    .await;
    assert_eq!(
        location(&callback(&h, "github", &flow, "good").await),
        "/settings"
    );
    let row = h
        .store
        .get_account_by_provider("github", "1")
        .await
        .unwrap()
        .unwrap();

    // By provider (spec) and by row id (1.7): the stored token, not yet due.
    for body in [
        json!({"providerId": "github"}),
        json!({"accountId": row.id.0}),
    ] {
        let r = h
            .post("/api/auth/get-access-token", body, Some(&cookie))
            .await
            .expect(200);
        assert_eq!(r.json()["accessToken"], "at-github");
        assert_eq!(r.json()["scopes"], json!(["read:user", "user:email"]));
    }
    // Refresh on demand: new tokens, stored encrypted.
    let r = h
        .post(
            "/api/auth/refresh-token",
            json!({"accountId": row.id.0}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["accessToken"], "at-github-r");
    assert_eq!(r.json()["refreshToken"], "rt-github");
    assert_eq!(r.json()["providerId"], "github");
    let stored = h
        .store
        .get_account_by_provider("github", "1")
        .await
        .unwrap()
        .unwrap();
    assert!(stored.access_token.as_deref().unwrap().starts_with("gh1."));
    // An expiry in the past: get-access-token refreshes first.
    let mut expired = stored.clone();
    expired.access_token_expires_at = Some(chrono::Utc::now() - chrono::Duration::minutes(1));
    expired.access_token = Some(h.state.social_flow.social.seal("at-github-old"));
    h.store.update_account(&expired, &[]).await.unwrap();
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"providerId": "github"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["accessToken"], "at-github-r");

    // The profile at the provider, now.
    let r = h
        .get(
            &format!("/api/auth/account-info?accountId={}", row.id.0),
            Some(&cookie),
        )
        .await
        .expect(200);
    let info = r.json();
    assert_eq!(info["user"]["email"], "octocat@example.com");
    assert_eq!(info["data"]["login"], "octocat");
    // GitHub's profile has no address; the listed primary one is filled in, as 1.7 does.
    assert_eq!(info["data"]["email"], "octocat@example.com");
    assert_eq!(info["account"]["accountId"], "1");

    // Errors: the password credential, an unknown account, no caller.
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"providerId": "credential"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "PROVIDER_NOT_SUPPORTED");
    let r = h
        .post(
            "/api/auth/get-access-token",
            json!({"accountId": "nope"}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ACCOUNT_NOT_FOUND");
    let r = h
        .post(
            "/api/auth/refresh-token",
            json!({"providerId": "github", "userId": user_id.0}),
            None,
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "UNAUTHORIZED");

    // Unlink by row id (1.7's body): the password credential remains.
    h.post(
        "/api/auth/unlink-account",
        json!({"accountId": row.id.0}),
        Some(&cookie),
    )
    .await
    .expect(200);
    let accounts = h
        .get("/api/auth/list-accounts", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 1);
    assert_eq!(accounts[0]["providerId"], "credential");
}

/// A banned user cannot sign in through a provider: the error URL with `error=banned`, no
/// session; once unbanned, the same sign-in works.
#[tokio::test]
async fn a_banned_user_cannot_sign_in_through_a_provider() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&first), "/welcome");
    let session = h.session(&first.cookie_header()).await;
    let id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
    h.state
        .actors
        .admin_ban(
            &actors::Caller::Server,
            &id,
            "spam".into(),
            None,
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(h.session(&first.cookie_header()).await, Value::Null);
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert!(
        location(&r).starts_with("/oops?error=banned&error_description=You%20have%20been%20banned"),
        "{}",
        location(&r)
    );
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    h.state
        .actors
        .admin_unban(&actors::Caller::Server, &id, &Default::default())
        .await
        .unwrap();
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(location(&r), "/dashboard");
    assert_eq!(
        audit_actions(&h).await,
        [
            "user.sign-in failure BANNED_USER github",
            "user.sign-in success github",
            "user.sign-in success github",
            "user.sign-up success github",
        ]
    );
}

#[tokio::test]
async fn a_posted_callback_merges_the_query_the_query_winning() {
    let (h, _fake) = social_harness().await;
    let posted = call_raw(
        &h.ep,
        poem::Request::builder()
            .method(poem::http::Method::POST)
            .uri_str("/api/auth/callback/apple?state=from-query&iss=https%3A%2F%2Fq.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("code=form-code&state=from-form"),
    )
    .await;
    assert_eq!(posted.status.as_u16(), 302, "{}", posted.text);
    let to = url::Url::parse(posted.headers.get("location").unwrap().to_str().unwrap()).unwrap();
    assert_eq!(to.path(), "/api/auth/callback/apple");
    let q: Vec<(String, String)> = to.query_pairs().into_owned().collect();
    assert_eq!(
        q,
        [
            ("code".to_string(), "form-code".to_string()),
            ("state".to_string(), "from-query".to_string()),
            ("iss".to_string(), "https://q.example".to_string()),
        ]
    );
}

/// A harness whose `provider` has `tweak` applied to its configuration.
async fn harness_with_provider(
    provider: &str,
    tweak: impl FnOnce(&mut SocialProviderConfig),
) -> (H, Fake) {
    let fake = fake_providers().await;
    let base = fake.base.clone();
    let h = harness_with(|c| {
        configure(c, &base);
        tweak(c.social.get_mut(provider).unwrap());
    })
    .await;
    (h, fake)
}

#[tokio::test]
async fn google_hosted_domains_are_asked_for_and_required() {
    for (hd, signs_in) in [("example.com", true), ("*", true), ("other.example", false)] {
        let (h, _fake) = harness_with_provider("google", |g| g.hd = Some(hd.to_owned())).await;
        let flow = sign_in_start(&h, "google").await;
        assert_eq!(flow.query.get("hd").map(String::as_str), Some(hd));
        let r = callback(&h, "google", &flow, "good").await;
        if signs_in {
            assert_eq!(location(&r), "/welcome", "{hd}: {}", r.text);
        } else {
            assert_eq!(location(&r), "/oops?error=unable_to_get_user_info", "{hd}");
            assert!(r.set_cookie("gatehouse.session_token").is_none());
        }
    }
    // Only Google has hosted domains.
    let mut c = test_config(std::path::Path::new("/tmp"), |_| {});
    configure(&mut c, "http://127.0.0.1:1");
    c.social.get_mut("github").unwrap().hd = Some("example.com".into());
    let err =
        gatehouse_api::plugins::social::providers::Social::from_config(&c, &"s".repeat(32)).err();
    assert!(err.unwrap().contains("only Google"));
}

#[tokio::test]
async fn a_provider_may_refuse_id_tokens() {
    let (h, _fake) = harness_with_provider("google", |g| g.disable_id_token_sign_in = true).await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "google", "idToken": {"token": "any.token.here"}}),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.code(), "ID_TOKEN_NOT_SUPPORTED");
}

#[tokio::test]
async fn a_provider_may_require_a_verified_address_before_a_session() {
    // Spotify never vouches for an address: its new users are made, but not signed in.
    let (h, _fake) =
        harness_with_provider("spotify", |s| s.require_email_verification = true).await;
    let flow = sign_in_start(&h, "spotify").await;
    let r = callback(&h, "spotify", &flow, "good").await;
    assert_eq!(location(&r), "/oops?error=email_not_verified");
    assert!(r.set_cookie("gatehouse.session_token").is_none());
    let user = h
        .store
        .get_user_by_email("wiz@example.com")
        .await
        .unwrap()
        .expect("the user was made");
    assert!(!user.email_verified);
    // A verification mail went out; other providers are not affected.
    assert!(last_mail(&h, "verify-email", "wiz@example.com").is_some());
    let flow = sign_in_start(&h, "google").await;
    let r = callback(&h, "google", &flow, "good").await;
    assert_eq!(location(&r), "/welcome");
}

#[tokio::test]
async fn facebook_opaque_id_tokens_sign_in_through_debug_token() {
    let (h, fake) = social_harness().await;
    let sign_in = |id_token: Value| {
        let h = &h;
        async move {
            h.post(
                "/api/auth/sign-in/social",
                json!({"provider": "facebook", "idToken": id_token}),
                None,
            )
            .await
        }
    };
    // Classic Facebook Login: an opaque token and the access token that came with it.
    let r = sign_in(json!({"token": "EAAGopaque", "accessToken": "at-facebook"}))
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["email"], "fay@example.com");
    assert!(r.set_cookie("gatehouse.session_token").is_some());
    let checked = fake
        .log
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.provider == "facebook" && s.what == "extra" && s.authorization.is_none());
    assert!(checked, "debug_token was asked");
    let account = h
        .store
        .list_accounts(&r.json()["user"]["id"].as_str().unwrap().into())
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.provider_id == "facebook")
        .expect("a facebook account");
    assert_eq!(account.account_id, "10158");
    // Without the access token there is nobody to ask about.
    let r = sign_in(json!({"token": "EAAGopaque"})).await.expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    // An access token Facebook does not know.
    let r = sign_in(json!({"token": "EAAGopaque", "accessToken": "at-other"}))
        .await
        .expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    // A JWT-shaped token is a Limited Login id token and must verify.
    let r = sign_in(json!({"token": "a.b.c", "accessToken": "at-facebook"}))
        .await
        .expect(401);
    assert_eq!(r.code(), "INVALID_TOKEN");
}

#[tokio::test]
async fn a_facebook_token_issued_to_another_app_is_refused() {
    // debug_token names the app the token was issued to: here not this client.
    let (h, _fake) =
        harness_with_provider("facebook", |f| f.client_id = "another-app".into()).await;
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "facebook", "idToken": {"token": "EAAGopaque", "accessToken": "at-facebook"}}),
            None,
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "FAILED_TO_GET_USER_INFO");
    assert!(h
        .store
        .get_user_by_email("fay@example.com")
        .await
        .unwrap()
        .is_none());
}

/// The user `email` with `change` applied directly in the store (as another process would).
async fn rewrite_user(h: &H, email: &str, change: impl FnOnce(&mut storage::User)) {
    let mut u = h.store.get_user_by_email(email).await.unwrap().unwrap();
    change(&mut u);
    u.version += 1;
    h.store.update_user(&u, &[]).await.unwrap();
}

#[tokio::test]
async fn a_provider_may_override_the_users_name_image_and_email_at_each_sign_in() {
    for on in [false, true] {
        let (h, _fake) =
            harness_with_provider("github", |g| g.override_user_info_on_sign_in = on).await;
        let flow = sign_in_start(&h, "github").await;
        assert_eq!(
            location(&callback(&h, "github", &flow, "good").await),
            "/welcome"
        );
        // Since then the user renamed themselves and moved to another, unverified address.
        rewrite_user(&h, "octocat@example.com", |u| {
            u.name = "Local Name".into();
            u.image = None;
            u.email = "mona@local.test".into();
            u.email_verified = false;
        })
        .await;
        let flow = sign_in_start(&h, "github").await;
        assert_eq!(
            location(&callback(&h, "github", &flow, "good").await),
            "/dashboard"
        );
        let user = |email: &'static str| {
            let h = &h;
            async move { h.store.get_user_by_email(email).await.unwrap() }
        };
        if on {
            let u = user("octocat@example.com")
                .await
                .expect("the provider's address");
            assert_eq!(u.name, "monalisa octocat");
            assert_eq!(
                u.image.as_deref(),
                Some("https://github.example/octocat.gif")
            );
            assert!(u.email_verified, "GitHub verified it");
            assert!(user("mona@local.test").await.is_none());
        }
        // The replaced address is in the audit log, once, with the one it replaced.
        let mut q = storage::AuditQuery::range(
            chrono::DateTime::from_timestamp(0, 0).unwrap(),
            storage::Clock::now(&*h.clock) + chrono::Duration::days(1),
            50,
        );
        q.action = Some("email.changed".into());
        let changed = h.store.list_audit(&q).await.unwrap().items;
        if on {
            assert_eq!(changed.len(), 1, "{changed:?}");
            assert_eq!(changed[0].target.as_deref(), Some("octocat@example.com"));
            assert_eq!(changed[0].details["from"], "mona@local.test");
            assert_eq!(changed[0].details["provider"], "github");
        } else {
            assert!(changed.is_empty(), "{changed:?}");
            let u = user("mona@local.test").await.expect("left alone");
            assert_eq!((u.name.as_str(), u.image.as_deref()), ("Local Name", None));
            assert!(!u.email_verified);
        }
    }
}

#[tokio::test]
async fn an_override_never_takes_another_users_address() {
    let (h, _fake) =
        harness_with_provider("github", |g| g.override_user_info_on_sign_in = true).await;
    let flow = sign_in_start(&h, "github").await;
    callback(&h, "github", &flow, "good").await;
    rewrite_user(&h, "octocat@example.com", |u| {
        u.name = "Local Name".into();
        u.email = "mona@local.test".into();
    })
    .await;
    // Someone else signs up with the address GitHub reports.
    h.sign_up("octocat@example.com", "password1234")
        .await
        .expect(200);
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await;
    assert_eq!(
        location(&r),
        "/dashboard",
        "the sign-in itself goes through"
    );
    let mine = h
        .store
        .get_user_by_email("mona@local.test")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        mine.name, "monalisa octocat",
        "the rest of the override applies"
    );
    let theirs = h
        .store
        .get_user_by_email("octocat@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(theirs.id, mine.id);
    assert_eq!(theirs.name, "Test User", "theirs is untouched");
}

/// A user with two-factor sign-in on finishes a provider sign-in with the second step: the
/// callback sets the challenge instead of a session and sends the browser to the hosted page
/// of that step; a code there signs in.
#[tokio::test]
async fn a_social_sign_in_waits_for_the_second_factor() {
    let (h, _fake) = social_harness().await;
    let flow = sign_in_start(&h, "github").await;
    let first = callback(&h, "github", &flow, "good").await;
    let session = h.session(&first.cookie_header()).await;
    let id = storage::UserId(session["user"]["id"].as_str().unwrap().to_owned());
    h.state
        .actors
        .user(id.clone())
        .enroll_two_factor("gt1.not-a-secret".into(), vec![], true)
        .await
        .unwrap();
    let flow = sign_in_start(&h, "github").await;
    let r = callback(&h, "github", &flow, "good").await.expect(302);
    assert_eq!(
        location(&r),
        "http://localhost:3000/two-factor?methods=otp&redirectTo=%2Fdashboard"
    );
    assert!(r.set_cookie("gatehouse.two_factor").is_some());
    let challenge = r.cookie_header();
    assert!(!challenge.contains("gatehouse.session_token="));
    assert_eq!(h.session(&challenge).await, Value::Null);
    h.post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await
        .expect(200);
    let mail = last_mail(
        &h,
        "two-factor-otp",
        session["user"]["email"].as_str().unwrap(),
    )
    .expect("a code by mail");
    let code = mail["subject"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let r = h
        .post(
            "/api/auth/two-factor/verify-otp",
            json!({"code": code}),
            Some(&challenge),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["user"]["id"], id.0);
    assert_eq!(h.session(&r.cookie_header()).await["user"]["id"], id.0);
}
