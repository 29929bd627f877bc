//! Social sign-in against a real OpenID provider: panva's `oidc-provider` (npm, installed by
//! `.ci/test` into `api/tests/oidc-peer`) started on a free port, with Gatehouse's `google`
//! and `microsoft` pointed at it by configuration. A cookie-keeping HTTP client plays the
//! browser at the provider (its login form), Gatehouse plays the relying party.
use crate::common::*;
use crate::social::{location, start, Flow};
use gatehouse_api::config::{Secret, SocialProviderConfig};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const CLIENT_ID: &str = "gatehouse-test";
const CLIENT_SECRET: &str = "gatehouse-test-secret-0123456789";
/// Apple's client is a native one at the provider (http is allowed only on a loopback IP).
const APPLE_REDIRECT: &str = "http://127.0.0.1:3000/api/auth/callback/apple";

/// The provider process; stopped when dropped.
struct Peer {
    child: Child,
    issuer: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the provider, or `None` when its npm packages are not installed and the run does
/// not require them (`REQUIRE_OIDC=1`, which `.ci/test` sets, makes their absence a failure).
fn peer() -> Option<Peer> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc-peer");
    if !dir.join("node_modules/oidc-provider").exists() {
        assert!(
            std::env::var("REQUIRE_OIDC").is_err(),
            "REQUIRE_OIDC is set but {}/node_modules is missing: run `npm ci` there",
            dir.display()
        );
        eprintln!("skipped: no oidc-provider in {} (npm ci)", dir.display());
        return None;
    }
    let redirects = ["google", "microsoft"]
        .map(|p| format!("http://localhost:3000/api/auth/callback/{p}"))
        .join(",");
    let mut child = Command::new("node")
        .arg("server.mjs")
        .current_dir(&dir)
        .env("CLIENT_ID", CLIENT_ID)
        .env("CLIENT_SECRET", CLIENT_SECRET)
        .env("REDIRECT_URIS", redirects)
        .env("APPLE_REDIRECT_URI", APPLE_REDIRECT)
        .env("CERT_JWKS", crate::social::fake_jwks().to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    // Keep reading: a closed pipe would kill the provider at its next write.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let issuer = line
        .trim()
        .strip_prefix("OIDC_ISSUER=")
        .unwrap_or_else(|| panic!("the provider did not start: {line:?}"))
        .to_owned();
    Some(Peer { child, issuer })
}

fn provider_config(issuer: &str) -> SocialProviderConfig {
    SocialProviderConfig {
        client_id: CLIENT_ID.into(),
        client_secret: Some(Secret::new(CLIENT_SECRET)),
        authorization_endpoint: Some(format!("{issuer}/auth")),
        token_endpoint: Some(format!("{issuer}/token")),
        extra_endpoint: Some(format!("{issuer}/no-photo")),
        issuer: Some(issuer.to_owned()),
        jwks_uri: Some(format!("{issuer}/jwks")),
        ..Default::default()
    }
}

/// The provider's authorize URL of a flow Gatehouse started.
fn authorize_url(issuer: &str, flow: &Flow) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.extend_pairs(flow.query.iter());
    format!("{issuer}/auth?{}", q.finish())
}

/// How the provider sends the browser back: a redirect, or (form_post) an auto-submitting
/// form's action and fields.
enum Back {
    Redirect(String),
    FormPost(String, Vec<(String, String)>),
}

/// `name="…" value="…"` pairs of an HTML form, and its action.
fn form_of(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let attr = |tag: &str, name: &str| {
        let key = format!("{name}=\"");
        let start = tag.find(&key)? + key.len();
        Some(tag[start..].split('"').next()?.to_owned())
    };
    let form_tag = html.split("<form").nth(1)?.split('>').next()?;
    let action = attr(form_tag, "action")?;
    let fields = html
        .split("<input")
        .skip(1)
        .filter_map(|t| {
            let tag = t.split('>').next()?;
            Some((attr(tag, "name")?, attr(tag, "value")?))
        })
        .collect();
    Some((action, fields))
}

/// Logs in at the provider as `login` (consenting when asked) and answers how the provider
/// sends the browser back.
async fn login_at_provider(issuer: &str, authorize_url: &str, login: &str) -> Back {
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut url = authorize_url.to_owned();
    for _ in 0..10 {
        if url.starts_with("http://localhost:3000/") {
            return Back::Redirect(url);
        }
        let r = if url.contains("/interaction/") {
            let page = browser
                .get(&url)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let prompt = if page.contains("name=\"login\"") {
                "login"
            } else {
                "consent"
            };
            browser
                .post(&url)
                .form(&[("prompt", prompt), ("login", login), ("password", "any")])
                .send()
                .await
                .unwrap()
        } else {
            browser.get(&url).send().await.unwrap()
        };
        let Some(next) = r.headers().get("location") else {
            let status = r.status();
            let page = r.text().await.unwrap();
            let (action, fields) =
                form_of(&page).unwrap_or_else(|| panic!("{url}: {status} {page}"));
            return Back::FormPost(action, fields);
        };
        let next = next.to_str().unwrap().to_owned();
        url = if next.starts_with('/') {
            format!("{issuer}{next}")
        } else {
            next
        };
    }
    panic!("the provider never sent the browser back (last: {url})")
}

/// As [`login_at_provider`], for a provider that redirects back.
async fn authorize_at_provider(issuer: &str, authorize_url: &str, login: &str) -> String {
    match login_at_provider(issuer, authorize_url, login).await {
        Back::Redirect(url) => url,
        Back::FormPost(action, _) => panic!("a form post to {action}, not a redirect"),
    }
}

#[tokio::test]
async fn google_and_microsoft_sign_in_against_a_real_openid_provider() {
    let Some(peer) = peer() else { return };
    let issuer = peer.issuer.clone();
    let h = harness_with(|c| {
        c.social.insert("google".into(), provider_config(&issuer));
        // Microsoft asks for Graph's `User.Read` and `offline_access` by default; this
        // provider grants neither (it drops `offline_access` without a consent prompt, and
        // issues refresh tokens regardless), and a refresh may only ask for granted scopes.
        let mut microsoft = provider_config(&issuer);
        microsoft.disable_default_scope = true;
        microsoft.scopes = ["openid", "profile", "email"].map(String::from).to_vec();
        c.social.insert("microsoft".into(), microsoft);
    })
    .await;
    for (provider, login, account_id) in [
        ("google", "dora", "dora"),
        ("microsoft", "mike", "oid-mike"),
    ] {
        let flow = start(
            &h,
            "/api/auth/sign-in/social",
            json!({"provider": provider, "callbackURL": "/dashboard", "newUserCallbackURL": "/welcome"}),
            None,
        )
        .await;
        assert_eq!(flow.query["code_challenge_method"], "S256");
        let back = authorize_at_provider(&issuer, &authorize_url(&issuer, &flow), login).await;
        let path = back.trim_start_matches("http://localhost:3000");
        assert!(
            path.starts_with(&format!("/api/auth/callback/{provider}?")),
            "{back}"
        );
        let r = h.get(path, Some(&flow.cookie)).await;
        assert_eq!(location(&r), "/welcome", "{provider}: {}", r.text);
        let cookie = r.cookie_header();
        let session = h.session(&cookie).await;
        assert_eq!(session["user"]["email"], format!("{login}@example.com"));
        assert_eq!(session["user"]["emailVerified"], true);
        assert_eq!(session["user"]["name"], format!("User {login}"));
        let account = h
            .store
            .get_account_by_provider(provider, account_id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{provider}: the account keyed by {account_id}"));
        assert!(
            account.refresh_token.is_some(),
            "{provider}: a refresh token"
        );
        assert!(account.id_token.is_some(), "{provider}: the id token");

        // The provider's tokens: a valid access token, a refresh at the provider, the profile.
        let before = h
            .post(
                "/api/auth/get-access-token",
                json!({"providerId": provider}),
                Some(&cookie),
            )
            .await
            .expect(200)
            .json();
        assert!(before["accessToken"].as_str().unwrap().len() > 10);
        let refreshed = h
            .post(
                "/api/auth/refresh-token",
                json!({"accountId": account.id.0}),
                Some(&cookie),
            )
            .await
            .expect(200)
            .json();
        assert_ne!(
            refreshed["accessToken"], before["accessToken"],
            "{provider}"
        );
        // The access token the provider issued works at its userinfo endpoint.
        let me: serde_json::Value = reqwest::Client::new()
            .get(format!("{issuer}/me"))
            .bearer_auth(refreshed["accessToken"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["sub"], login);
        let info = h
            .get(
                &format!("/api/auth/account-info?accountId={}", account.id.0),
                Some(&cookie),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(info["user"]["email"], format!("{login}@example.com"));
        assert_eq!(info["account"]["accountId"], account_id);

        // Signing in again: the same user, to callbackURL.
        let again = start(
            &h,
            "/api/auth/sign-in/social",
            json!({"provider": provider, "callbackURL": "/dashboard"}),
            None,
        )
        .await;
        let back = authorize_at_provider(&issuer, &authorize_url(&issuer, &again), login).await;
        let r = h
            .get(
                back.trim_start_matches("http://localhost:3000"),
                Some(&again.cookie),
            )
            .await;
        assert_eq!(location(&r), "/dashboard");
        assert_eq!(
            h.session(&r.cookie_header()).await["user"]["id"],
            session["user"]["id"]
        );
    }
}

/// An id token the provider minted for `login` (as Google One Tap or a mobile SDK would hand
/// it to the client), with `nonce`.
async fn id_token_from_provider(issuer: &str, login: &str, nonce: &str) -> String {
    let verifier = gatehouse_api::plugins::social::providers::random_token(64);
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.extend_pairs([
        ("client_id", CLIENT_ID),
        ("response_type", "code"),
        ("scope", "openid email profile"),
        (
            "redirect_uri",
            "http://localhost:3000/api/auth/callback/google",
        ),
        ("state", "client-state"),
        ("nonce", nonce),
        (
            "code_challenge",
            &gatehouse_api::plugins::social::providers::challenge(&verifier),
        ),
        ("code_challenge_method", "S256"),
    ]);
    let back = authorize_at_provider(issuer, &format!("{issuer}/auth?{}", q.finish()), login).await;
    let code = url::Url::parse(&back)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let tokens: serde_json::Value = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            (
                "redirect_uri",
                "http://localhost:3000/api/auth/callback/google",
            ),
            ("code_verifier", &verifier),
            ("client_id", CLIENT_ID),
            ("client_secret", CLIENT_SECRET),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    tokens["id_token"].as_str().expect("an id token").to_owned()
}

#[tokio::test]
async fn id_tokens_the_provider_minted_sign_in_and_link() {
    let Some(peer) = peer() else { return };
    let issuer = peer.issuer.clone();
    let h = harness_with(|c| {
        c.social.insert("google".into(), provider_config(&issuer));
    })
    .await;
    let token = id_token_from_provider(&issuer, "ida", "n-1").await;

    // Refused: another nonce, a forged signature, garbage.
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    for (t, nonce) in [
        (&token, "n-2"),
        (&forged, "n-1"),
        (&"x.y.z".to_owned(), "n-1"),
    ] {
        let r = h
            .post(
                "/api/auth/sign-in/social",
                json!({"provider": "google", "idToken": {"token": t, "nonce": nonce}}),
                None,
            )
            .await
            .expect(401);
        assert_eq!(r.code(), "INVALID_TOKEN");
    }
    assert!(h
        .store
        .get_user_by_email("ida@example.com")
        .await
        .unwrap()
        .is_none());

    // Accepted: a session at once, no redirect.
    let r = h
        .post(
            "/api/auth/sign-in/social",
            json!({"provider": "google", "idToken": {"token": token, "nonce": "n-1", "accessToken": "at-1"}}),
            None,
        )
        .await
        .expect(200);
    let body = r.json();
    assert_eq!(body["redirect"], false);
    assert!(body.get("url").is_none());
    assert_eq!(body["user"]["email"], "ida@example.com");
    assert_eq!(body["user"]["emailVerified"], true);
    let session = h.session(&r.cookie_header()).await;
    assert_eq!(session["session"]["token"], body["token"]);
    let account = h
        .store
        .get_account_by_provider("google", "ida")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        h.state
            .social_flow
            .social
            .open(account.access_token.as_deref().unwrap())
            .unwrap(),
        "at-1"
    );

    // Linking with an id token of the signed-in user's address.
    let lee = h
        .sign_up("lee@example.com", "a-good-password")
        .await
        .cookie_header();
    let lee_token = id_token_from_provider(&issuer, "lee", "n-3").await;
    let r = h
        .post(
            "/api/auth/link-social",
            json!({"provider": "google", "idToken": {"token": lee_token}}),
            Some(&lee),
        )
        .await
        .expect(200);
    assert_eq!(
        r.json(),
        json!({"url": "", "redirect": false, "status": true})
    );
    let accounts = h
        .get("/api/auth/list-accounts", Some(&lee))
        .await
        .expect(200)
        .json();
    assert_eq!(accounts.as_array().unwrap().len(), 2);
    // Ida's token for Lee: another address, refused.
    let ida_again = id_token_from_provider(&issuer, "ida", "n-4").await;
    let r = h
        .post(
            "/api/auth/link-social",
            json!({"provider": "google", "idToken": {"token": ida_again}}),
            Some(&lee),
        )
        .await
        .expect(401);
    assert_eq!(r.code(), "LINKING_DIFFERENT_EMAILS_NOT_ALLOWED");
}

#[tokio::test]
async fn apple_comes_back_by_form_post_and_signs_in() {
    let Some(peer) = peer() else { return };
    let issuer = peer.issuer.clone();
    let h = harness_with(|c| {
        let mut apple = provider_config(&issuer);
        apple.client_id = format!("{CLIENT_ID}-apple");
        apple.redirect_uri = Some(APPLE_REDIRECT.into());
        apple.disable_default_scope = true;
        apple.scopes = ["openid", "email", "profile"].map(String::from).to_vec();
        c.social.insert("apple".into(), apple);
    })
    .await;
    let flow = start(
        &h,
        "/api/auth/sign-in/social",
        json!({"provider": "apple", "callbackURL": "/dashboard", "newUserCallbackURL": "/welcome"}),
        None,
    )
    .await;
    assert_eq!(flow.query["response_type"], "code id_token");
    assert_eq!(flow.query["response_mode"], "form_post");
    let url = authorize_url(&issuer, &flow);
    let Back::FormPost(action, fields) = login_at_provider(&issuer, &url, "anna").await else {
        panic!("Apple answers by form_post");
    };
    assert_eq!(action, APPLE_REDIRECT);
    assert!(fields.iter().any(|(k, _)| k == "id_token"));
    // The provider's page posts the form cross-site: no cookies travel with it.
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    body.extend_pairs(fields.iter());
    body.append_pair(
        "user",
        r#"{"name":{"firstName":"Anna","lastName":"Apfel"}}"#,
    );
    let posted = call_raw(
        &h.ep,
        poem::Request::builder()
            .method(poem::http::Method::POST)
            .uri_str("/api/auth/callback/apple")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.finish()),
    )
    .await;
    assert_eq!(posted.status.as_u16(), 302, "{}", posted.text);
    let get = location(&posted);
    let path = get.trim_start_matches("http://localhost:3000");
    assert!(path.starts_with("/api/auth/callback/apple?"), "{get}");
    // The browser follows it, now a same-site GET with the state cookie.
    let r = h.get(path, Some(&flow.cookie)).await;
    assert_eq!(location(&r), "/welcome", "{}", r.text);
    let session = h.session(&r.cookie_header()).await;
    assert_eq!(session["user"]["email"], "anna@example.com");
    assert_eq!(session["user"]["name"], "Anna Apfel");
}

/// A key the provider does not know for the certificate client.
const UNKNOWN_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDKFxje7Zd/iijw
osCEWFoCOo/xhPXyH4SEE2MxDmRx0xI2i9qtzCh9WBXTlQoQ8DdRcbsojXD3G6Qt
zHUjjYJVhdPPI13k5YTQ/fuUMogNRqOz388KTfiK3FwAuI6pa3KZ22kDK3kJPMl8
Q0Ky8L1nbSjsX65G/5RbeXeJOZJW4Gu9mF6nFtJQl6+/EPgH2ysIHVxjAObLOxKR
ur9T4kAF0K2lCIG2DVlfGtuxIE/QEhMDEPyJxvTDeLIKac8nyOVR00Em2kL7ce6z
5wKR4Vbofmxzfkh5zIzx83uyFurKniUgD/686Ob7ZIt2OxPPp4FvYyVqqFI/bLew
1e9pmZFxAgMBAAECggEAA+y2aC/riwfLGz9B52AS4WuzO3DGWP0pNOpuePerVjWP
6zzEkq7+E08YX2tLzn/nxx5jENrMWJQyGEyZ8saPAyut7R4l9unJLkjcb6iakU1v
pPDiA7R3cPTuGXp8FMi4KUpETBI2T8pdLFtfCnwX5ZAOZSbHiuvwPOWLP4A9eg/p
Uvsuq4fWWsVeujONyz2M+8lwd0NAf7vgeQ8UYJo5c2DpKrQKikscAd32fVLKViUV
PlZyzbvABgr7qeSX0MF2Wjb4Ui9RvaRWKIU/hGusQEGlto4nKrnwrbrn416sOvST
qzEldXyNzwiHbmCyjwb1I3X7EfTou2DYtH7oFnXCAQKBgQD2NuiVb9sDFGzN1Yig
3jli336Hw71yybDcSl0/1U/bodJ7E2NdkGEO89wVIDaa6N4f8uumCczpqnBcy7ts
LiMUeFhNme0bseWid5RkZ6VGJdJB6/dOa7lhA86E7BTDg8ljv0UbWZjWMOCgjJkA
Vhl/Tx5WhT1USZgFXFWhHfIigQKBgQDSHz/fMpsfUSQx5qj57PgtKcrhJxbZIbJl
9jHp9gcxbm4Fl2LRHCObOzquXyza4ZZUOrLPmXXX2VICTMJ1aOwkfOQwt0nLBb+g
5MuyMdb1XpNun+RcfJRSdubwYdQsR4YI4Rs2iET+a2i4fuchQgl5d+Qnj5X/dhd1
RAkdMbAW8QKBgCrbxAC/R9Bxbb8mvHHEPRkI7m2TlRa2JSMzjqfd6djBgnIKHfHb
gAmqSVUkFl1Ay+mjz4FHk3PZR1Xf4PAj19doW3ampK99eAuf5STVJd/gFYmEGbh8
5/gLQZfBwJuIBTZnxQ/NuN0QBQntb3SviCCxFQbaiqJxbRUBzaYOIGgBAoGAWcAB
TzvVaG4HMM1eVcpzQw872ioRJ1OuWMDtFwsAjYumsPq1ua30Q4TsDrkWdrOuu3GL
GQNqg3UPA254DSBw5TD3YxuXCIH/FSFFJGsHby0jejgPmbWYwRSKlhijQPqX9Mj6
D7PrDGUiiNOjs9/6HgkoygEZx9FQOcWCwxaLKXECgYEA8GhXJ7fjrzR4kqsXLERy
zJdN37CSOvvJGYxm+o6A8LmHrjMd4aYS7n41/G2btFCkXiFUKpe7rsqa1JDHG9QG
EEPJ4zITGcGNSDxrlwuxInawifakSQx3fw5WPM1E/QkMKOUVWHCeZkRl2ior35oq
BSgFLfZdK9I0wZrgx4HSUxQ=
-----END PRIVATE KEY-----
";

#[tokio::test]
async fn microsoft_signs_in_with_a_certificate_credential() {
    let Some(peer) = peer() else { return };
    let issuer = peer.issuer.clone();
    for (key, signs_in) in [(crate::social::FAKE_KEY, true), (UNKNOWN_KEY, false)] {
        let h = harness_with(|c| {
            let mut microsoft = provider_config(&issuer);
            microsoft.client_id = format!("{CLIENT_ID}-cert");
            microsoft.client_secret = None;
            microsoft.private_key = Some(Secret::new(key));
            microsoft.key_id = Some("5D2C9A00112233445566778899AABBCCDDEEFF01".into());
            microsoft.disable_default_scope = true;
            microsoft.scopes = ["openid", "profile", "email"].map(String::from).to_vec();
            c.social.insert("microsoft".into(), microsoft);
        })
        .await;
        let flow = start(
            &h,
            "/api/auth/sign-in/social",
            json!({"provider": "microsoft", "callbackURL": "/dashboard", "errorCallbackURL": "/oops"}),
            None,
        )
        .await;
        let back = authorize_at_provider(&issuer, &authorize_url(&issuer, &flow), "cora").await;
        let r = h
            .get(
                back.trim_start_matches("http://localhost:3000"),
                Some(&flow.cookie),
            )
            .await;
        if !signs_in {
            // The provider refuses the assertion: the code exchange fails.
            assert_eq!(location(&r), "/oops?error=invalid_code");
            assert!(h
                .store
                .get_user_by_email("cora@example.com")
                .await
                .unwrap()
                .is_none());
            continue;
        }
        assert_eq!(location(&r), "/dashboard", "{}", r.text);
        let cookie = r.cookie_header();
        assert_eq!(
            h.session(&cookie).await["user"]["email"],
            "cora@example.com"
        );
        // A refresh authenticates with a new assertion (the provider refuses a reused jti).
        for _ in 0..2 {
            let t = h
                .post(
                    "/api/auth/refresh-token",
                    json!({"providerId": "microsoft"}),
                    Some(&cookie),
                )
                .await
                .expect(200)
                .json();
            assert!(t["accessToken"].as_str().unwrap().len() > 10);
        }
    }
}
