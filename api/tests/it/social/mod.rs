//! Social sign-in against HTTP fakes of the 18 providers: a poem server on a free port that
//! answers each provider's token, profile and second endpoints with the JSON their
//! documentation shows (including GitHub's HTTP-200 error and Twitch's array `scope`), and
//! records what Gatehouse sent. Gatehouse calls it over real HTTP.

mod flow;
mod linking;
mod providers;
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

/// The user `email` with `change` applied directly in the store (as another process would).
async fn rewrite_user(h: &H, email: &str, change: impl FnOnce(&mut storage::User)) {
    let mut u = h.store.get_user_by_email(email).await.unwrap().unwrap();
    change(&mut u);
    u.version += 1;
    h.store.update_user(&u, &[]).await.unwrap();
}

/// The audit log as `action outcome [reason] [provider]` lines, sorted (the harness's clock
/// stands still, so time does not order them).
async fn audit_actions(h: &H) -> Vec<String> {
    let now = chrono::Utc::now();
    h.state.settled().await;
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
