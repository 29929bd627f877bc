//! Side by side with better-auth 1.7 itself: the same requests, with the headers a browser
//! sends, go to Gatehouse (the real binary) and to better-auth (`tests/js-client/
//! better-auth-server.mjs`, on its in-memory adapter), one step at a time; status, error
//! code and message, JSON keys and value kinds (ids and times by kind, not value; `null` and
//! an absent key alike), cookie names and attributes and redirect targets must agree. Each
//! difference Gatehouse keeps on purpose is listed in `DELIBERATE` with its reason (README,
//! "Differences from better-auth"); any other fails the test, and so does a listed one that
//! no longer happens. Skipped without the npm packages unless `REQUIRE_JS_CLIENT=1`.
mod api_keys;
mod by_mail;

use crate::common::Server;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Differences kept on purpose: (step label, what differs, why). README's "Differences from
/// better-auth" lists the same.
const DELIBERATE: &[(&str, &str, &str)] = &[
    (
        "api-key-get-session",
        "body.session.ipAddress: extra key",
        "a key's session records the request's address (1.7: null)",
    ),
    (
        "api-key-manages-keys",
        "status 401 UNAUTHORIZED vs 200 -",
        "a key cannot manage keys (nor passwords, sessions, second factors): a leaked key \
         cannot make itself permanent",
    ),
    (
        "otp-send-change-email-type",
        "status 400 INVALID_OTP_TYPE vs 400 -",
        "every error is {code, message} (1.7 sends this one without a code)",
    ),
    (
        "otp-request-email-change-off",
        "status 400 CHANGE_EMAIL_WITH_OTP_DISABLED vs 400 -",
        "every error is {code, message} (1.7 sends this one without a code)",
    ),
    (
        "list-team-members",
        "status 200 - vs 400 USER_IS_NOT_A_MEMBER_OF_THE_TEAM",
        "whoever may manage teams may list their members (1.7 refuses an owner outside the team)",
    ),
    (
        "reset-password",
        "body.sessionsRevoked: extra key",
        "the reset page says whether the account was signed out everywhere",
    ),
    (
        "passkey-verify-registration-garbled",
        "status 400 FAILED_TO_VERIFY_REGISTRATION vs 500 FAILED_TO_VERIFY_REGISTRATION",
        "an answer that is not a credential is the caller's error (400), never a 500",
    ),
    (
        "accept-invitation-to-a-team",
        "body.member.user: extra key",
        "members carry their user on every route",
    ),
    (
        "accept-invitation-to-a-team",
        "body.member.teamId: extra key",
        "members carry the team they joined with (as on create; 1.7 leaves it out here)",
    ),
    (
        "sign-in-social",
        "cookie better-auth.state: httponly; max-age=600; path=/; samesite=Lax vs httponly; max-age=300; path=/; samesite=Lax",
        "the state cookie lives as long as the flow (10 minutes, SPEC.md); 1.7's expires after 5 \
         while its state row lives 10",
    ),
    (
        "sign-in-social-again",
        "cookie better-auth.state: httponly; max-age=600; path=/; samesite=Lax vs httponly; max-age=300; path=/; samesite=Lax",
        "the state cookie lives as long as the flow",
    ),
    (
        "link-social",
        "cookie better-auth.state: httponly; max-age=600; path=/; samesite=Lax vs httponly; max-age=300; path=/; samesite=Lax",
        "the state cookie lives as long as the flow",
    ),
    (
        "list-accounts-social",
        "body[].provider: extra key",
        "SPEC.md lists `provider` in list-accounts' answer",
    ),
    (
        "refresh-token",
        "body.scopes: extra key",
        "SPEC.md: refresh-token answers scopes and tokenType too",
    ),
    (
        "refresh-token",
        "body.tokenType: extra key",
        "SPEC.md: refresh-token answers scopes and tokenType too",
    ),
    (
        "unlink-last-social-account",
        "status 400 FAILED_TO_UNLINK_LAST_ACCOUNT vs 400 VALIDATION_ERROR",
        "unlink-account takes SPEC.md's {providerId} alone (1.7 also wants accountId)",
    ),
    (
        "add-member-from-a-browser",
        "status 404 NOT_FOUND vs 404 -",
        "add-member is for the server (as in 1.7); every error is {code, message}",
    ),
    (
        "callback-form-post",
        "status 415 UNSUPPORTED_MEDIA_TYPE vs 302 -",
        "a POSTed callback must be a form (Apple's form_post); 1.7 redirects any body to the GET",
    ),
    (
        "callback-form-post",
        "location None vs Some(\"/api/auth/callback/github?\")",
        "a POSTed callback must be a form",
    ),
    (
        "create-role",
        "body.roleData.updatedAt: extra key",
        "custom roles carry updatedAt, as teams do",
    ),
    (
        "update-role",
        "body.roleData.updatedAt: extra key",
        "custom roles carry updatedAt",
    ),
    (
        "list-roles",
        "body[].updatedAt: extra key",
        "custom roles carry updatedAt",
    ),
    (
        "get-role",
        "body.updatedAt: extra key",
        "custom roles carry updatedAt",
    ),
    (
        "get-access-token-no-account",
        "status 400 ACCOUNT_NOT_FOUND vs 400 VALIDATION_ERROR",
        "the token routes take SPEC.md's {providerId} as well as 1.7's {accountId} (1.7 refuses \
         providerId as an unknown key)",
    ),
    (
        "refresh-token-no-account",
        "status 400 ACCOUNT_NOT_FOUND vs 400 VALIDATION_ERROR",
        "the token routes take SPEC.md's {providerId} as well",
    ),
    (
        "forget-password",
        "status 200 - vs 404 -",
        "SPEC.md's forget-password (1.2's name of request-password-reset) stays for 1.2 clients",
    ),
    (
        "set-password-has-one",
        "status 404 NOT_FOUND vs 404 -",
        "set-password is for the server (as in 1.7); every error is {code, message}",
    ),
    (
        "sign-up-taken",
        "status 422 USER_ALREADY_EXISTS vs 422 USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL",
        "SPEC.md's wording ('user already exists'), which better-auth 1.2 answered",
    ),
    (
        "check-slug-taken",
        "status 400 SLUG_IS_TAKEN vs 400 ORGANIZATION_SLUG_ALREADY_TAKEN",
        "SPEC.md: check-slug answers 'slug is taken'",
    ),
    (
        "update-user-empty",
        "status 400 NO_FIELDS_TO_UPDATE vs 400 -",
        "every error carries a code (1.7 sends this one without)",
    ),
    (
        "get-on-post-route",
        "status 404 NOT_FOUND vs 404 -",
        "every error is {code, message} (1.7 answers an empty 404)",
    ),
    (
        "unknown-route",
        "status 404 NOT_FOUND vs 404 -",
        "every error is {code, message} (1.7 answers an empty 404)",
    ),
    (
        "list-accounts",
        "body[].provider: extra key",
        "SPEC.md lists `provider` in list-accounts' answer",
    ),
    (
        "create-organization",
        "body.members[].user: extra key",
        "members carry their user ({id, name, email, image}) on every route, as list-members",
    ),
    (
        "accept-invitation",
        "body.member.user: extra key",
        "members carry their user on every route",
    ),
    (
        "list-teams",
        "body[].updatedAt: extra key",
        "teams carry updatedAt (1.7 stores it, and answers it once a team is renamed)",
    ),
    (
        "get-full-organization",
        "body.teams[].updatedAt: extra key",
        "teams carry updatedAt",
    ),
    (
        "list-user-teams",
        "body[].updatedAt: extra key",
        "teams carry updatedAt",
    ),
    (
        "revoke-unknown-session",
        "status 400 SESSION_NOT_FOUND vs 200 -",
        "SPEC.md's 'Session not found': a token that is not one of the caller's sessions is \
         refused, not silently accepted",
    ),
    (
        "change-email-same",
        "status 400 EMAIL_IS_THE_SAME vs 400 -",
        "every error carries a code (1.7 sends this one without)",
    ),
    (
        "change-email-to-the-confirmed-address",
        "status 400 EMAIL_IS_THE_SAME vs 400 -",
        "every error carries a code (1.7 sends this one without)",
    ),
    (
        "create-team-taken",
        "status 400 TEAM_ALREADY_EXISTS vs 200 -",
        "team names are unique within an organization (1.7 makes a second team of that name)",
    ),
    (
        "reject-canceled-invitation",
        "message \"Invitation not found\" vs \"Invitation not found!\"",
        "SPEC.md's wording",
    ),
];

/// Differences still to remove (each one fails the test once it is gone, so the list stays
/// true): (step label, what differs, what 1.7 does).
const OPEN: &[(&str, &str, &str)] = &[];

struct Reference(Child);

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

/// One server under test, with a cookie jar per actor and values saved from its answers.
struct Side {
    name: &'static str,
    api: String,
    origin: String,
    http: reqwest::Client,
    jars: BTreeMap<String, BTreeMap<String, String>>,
    saved: BTreeMap<String, String>,
    /// Where its mail is read: Gatehouse's outbox folder, or better-auth's `/__mail` route.
    mail: Mail,
    /// Links already followed (each mail once).
    followed: BTreeSet<String>,
    /// How a user is made an administrator.
    promote: Promote,
}

enum Promote {
    /// `gatehouse user set-role` on the server's data directory (another process, one store).
    Cli(std::path::PathBuf),
    /// better-auth's test route `/__set-role`.
    Route(String),
}

enum Mail {
    Outbox(std::path::PathBuf),
    Route(String),
}

/// What one answer looks like once values are reduced to their kinds.
#[derive(Debug)]
struct Seen {
    status: u16,
    code: Option<String>,
    message: Option<String>,
    shape: Value,
    cookies: BTreeMap<String, String>,
    location: Option<String>,
    json: Value,
}

fn kind(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        // A random id can contain a `T` and end in `Z`: only a timestamp parses as one.
        Value::String(s) if chrono::DateTime::parse_from_rfc3339(s).is_ok() => json!("time"),
        Value::String(_) => json!("string"),
        Value::Array(a) => Value::Array(a.first().map(kind).into_iter().collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), kind(v)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// `name → attributes` of each Set-Cookie (values left out, attribute names lowercased).
fn cookie_attrs(headers: &reqwest::header::HeaderMap) -> BTreeMap<String, String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|c| {
            let mut parts = c.split(';').map(str::trim);
            let name = parts.next()?.split('=').next()?.to_owned();
            let mut attrs: Vec<String> = parts
                .filter(|a| !a.is_empty())
                .map(|a| match a.split_once('=') {
                    Some((k, v)) => format!("{}={v}", k.to_ascii_lowercase()),
                    None => a.to_ascii_lowercase(),
                })
                .filter(|a| !a.starts_with("expires="))
                .collect();
            attrs.sort();
            Some((name, attrs.join("; ")))
        })
        .collect()
}

impl Side {
    fn new(name: &'static str, api: String, origin: String, mail: Mail, promote: Promote) -> Self {
        Side {
            name,
            api,
            origin,
            mail,
            promote,
            followed: BTreeSet::new(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jars: BTreeMap::new(),
            saved: BTreeMap::new(),
        }
    }

    /// What each mail of `kind` to `to` carries, oldest first: its link, or for a code
    /// (`email-otp`) the code (the first word of Gatehouse's subject; better-auth's `url`).
    async fn mailed(&self, kind: &str, to: &str) -> Vec<String> {
        match &self.mail {
            Mail::Outbox(dir) => crate::common::outbox_in(dir)
                .into_iter()
                .filter(|m| m["kind"] == kind && m["to"] == to)
                .filter_map(|m| match kind {
                    "email-otp" => Some(m["subject"].as_str()?.split(' ').next()?.to_owned()),
                    _ => m["link"].as_str().map(str::to_owned),
                })
                .collect(),
            Mail::Route(url) => {
                let all: Value = self
                    .http
                    .get(format!("{url}?to={to}"))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                all.as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["kind"] == kind)
                    .filter_map(|m| m["url"].as_str().map(str::to_owned))
                    .collect()
            }
        }
    }

    /// The newest link (or code) of `kind` mailed to `to` and not used yet, waiting for it
    /// (mail is written in the background); it counts as used from now.
    async fn unused_mail(&mut self, kind: &str, to: &str) -> String {
        for _ in 0..100 {
            let all = self.mailed(kind, to).await;
            if let Some(m) = all.iter().rev().find(|l| !self.followed.contains(*l)) {
                self.followed.insert(m.clone());
                return m.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{}: no {kind} mail to {to}", self.name);
    }

    /// The path (under the API) of the newest link of `kind` mailed to `to` not followed yet.
    async fn mailed_link(&mut self, kind: &str, to: &str) -> String {
        let link = self.unused_mail(kind, to).await;
        let rest = link
            .split_once("/api/auth")
            .map(|(_, r)| r)
            .unwrap_or(&link);
        rest.to_owned()
    }

    fn fill(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (k, v) in &self.saved {
            out = out.replace(&format!("{{{k}}}"), v);
            // `{totp:name}` / `{totp+1:name}`: the code now (or of the next step) of the
            // `otpauth://` URI saved as `name`.
            for (tag, step) in [("totp", 0), ("totp+1", 1)] {
                let key = format!("{{{tag}:{k}}}");
                if out.contains(&key) {
                    out = out.replace(&key, &totp_of(v, step));
                }
            }
        }
        out
    }

    /// Makes `email` an administrator, out of band.
    async fn make_admin(&self, email: &str) {
        match &self.promote {
            Promote::Cli(dir) => {
                let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
                    .args(["user", "set-role", email, "admin"])
                    .env("GATEHOUSE_DATA_DIR", dir)
                    .env("RUST_LOG", "warn")
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
            }
            Promote::Route(url) => {
                let r = self
                    .http
                    .post(url)
                    .json(&json!({"email": email, "role": "admin"}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.text().await.unwrap());
            }
        }
    }

    async fn send(&mut self, step: &Step) -> Seen {
        let out_of_band = if let Some(email) = step.path.strip_prefix("@promote:") {
            self.make_admin(email).await;
            true
        } else if let Some(rest) = step.path.strip_prefix("@code:") {
            let (name, to) = rest.split_once(':').unwrap();
            let code = self.unused_mail("email-otp", to).await;
            self.saved.insert(name.to_owned(), code);
            true
        } else {
            false
        };
        if out_of_band {
            return Seen {
                status: 200,
                code: None,
                message: None,
                shape: Value::Null,
                cookies: BTreeMap::new(),
                location: None,
                json: Value::Null,
            };
        }
        let path = match step.follow {
            Some((kind, to)) => self.mailed_link(kind, to).await,
            None => self.fill(step.path),
        };
        let url = format!("{}{}", self.api, path);
        let mut req = self
            .http
            .request(step.method.clone(), url)
            .header("origin", &self.origin)
            .header("sec-fetch-site", "same-origin")
            .header("sec-fetch-mode", "cors")
            .header("sec-fetch-dest", "empty")
            .header("user-agent", "Mozilla/5.0 (X11; Linux x86_64) compat-test");
        if let Some(actor) = step.actor {
            let jar = self.jars.entry(actor.to_owned()).or_default();
            if !jar.is_empty() {
                let header = jar
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                req = req.header("cookie", header);
            }
        }
        if let Some(key) = step.api_key {
            let value = self
                .saved
                .get(key)
                .cloned()
                .unwrap_or_else(|| key.to_owned());
            req = req.header("x-api-key", value);
        }
        if let Some(body) = &step.body {
            let body: Value = serde_json::from_str(&self.fill(&body.to_string())).unwrap();
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let cookies = cookie_attrs(resp.headers());
        if let Some(actor) = step.actor {
            let jar = self.jars.entry(actor.to_owned()).or_default();
            for c in resp.headers().get_all("set-cookie") {
                let c = c.to_str().unwrap();
                let (pair, rest) = c.split_once(';').unwrap_or((c, ""));
                let (k, v) = pair.split_once('=').unwrap();
                if rest.contains("Max-Age=0") || v.is_empty() {
                    jar.remove(k);
                } else {
                    jar.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        let location = resp.headers().get("location").map(|l| {
            let l = l.to_str().unwrap().to_owned();
            // The server's own address differs between the two: keep path and query.
            match url::Url::parse(&l) {
                Ok(u) => format!(
                    "{}{}",
                    u.path(),
                    u.query().map(|q| format!("?{q}")).unwrap_or_default()
                ),
                Err(_) => l,
            }
        });
        let text = resp.text().await.unwrap();
        let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        for (name, pointer) in &step.save {
            // `location:<param>`: a query parameter of the redirect target.
            let value = match pointer.strip_prefix("location:") {
                Some(param) => location.as_deref().and_then(|l| {
                    url::Url::parse(&format!("http://x{l}"))
                        .ok()?
                        .query_pairs()
                        .find(|(k, _)| k == param)
                        .map(|(_, v)| v.into_owned())
                }),
                None => json
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            };
            if let Some(v) = value {
                self.saved.insert((*name).to_owned(), v);
            }
        }
        let field = |k: &str| json.get(k).and_then(Value::as_str).map(str::to_owned);
        let is_error = status >= 400;
        Seen {
            status,
            code: if is_error { field("code") } else { None },
            message: if is_error { field("message") } else { None },
            shape: if is_error { Value::Null } else { kind(&json) },
            cookies,
            location,
            json,
        }
    }
}

/// The code an authenticator app shows for `uri`'s secret, `steps` after now.
fn totp_of(uri: &str, steps: u64) -> String {
    let secret = uri
        .split("secret=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .unwrap_or_default();
    let raw =
        base32::decode(base32::Alphabet::Rfc4648 { padding: false }, secret).unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    totp_rs::TOTP::new_unchecked(totp_rs::Algorithm::SHA1, 6, 1, 30, raw).generate(now + 30 * steps)
}

struct Step {
    label: &'static str,
    actor: Option<&'static str>,
    method: reqwest::Method,
    path: &'static str,
    body: Option<Value>,
    /// Values to keep from the answer (name, JSON pointer or `location:<query param>`),
    /// used later as `{name}`.
    save: Vec<(&'static str, &'static str)>,
    /// Instead of `path`: the newest unfollowed link of this kind mailed to this address.
    follow: Option<(&'static str, &'static str)>,
    /// Sent in `x-api-key`: a saved value's name, or the text itself when nothing is saved
    /// under it.
    api_key: Option<&'static str>,
}

fn step(
    label: &'static str,
    actor: Option<&'static str>,
    method: &str,
    path: &'static str,
    body: Option<Value>,
) -> Step {
    Step {
        label,
        actor,
        method: method.parse().unwrap(),
        path,
        body,
        save: Vec::new(),
        follow: None,
        api_key: None,
    }
}

/// Follows the newest link of `kind` mailed to `to`, as `actor` (a GET, like a mail client).
fn follow(
    label: &'static str,
    actor: Option<&'static str>,
    kind: &'static str,
    to: &'static str,
) -> Step {
    Step {
        follow: Some((kind, to)),
        ..step(label, actor, "GET", "", None)
    }
}

/// Differences between two shapes, as `path: ours vs theirs` lines.
fn shape_diff(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => shape_diff(&p, x, y, out),
                    (Some(_), None) => out.push(format!("{p}: extra key")),
                    (None, Some(_)) => out.push(format!("{p}: missing key")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => match (a.first(), b.first()) {
            (Some(x), Some(y)) => shape_diff(&format!("{path}[]"), x, y, out),
            (None, None) => {}
            _ => out.push(format!("{path}: {} vs {} items", a.len(), b.len())),
        },
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {a} vs {b}")),
    }
}

fn compare(ours: &Seen, theirs: &Seen) -> Vec<String> {
    let mut d = Vec::new();
    if (ours.status, &ours.code) != (theirs.status, &theirs.code) {
        d.push(format!(
            "status {} {} vs {} {}",
            ours.status,
            ours.code.as_deref().unwrap_or("-"),
            theirs.status,
            theirs.code.as_deref().unwrap_or("-")
        ));
    } else if ours.message != theirs.message {
        d.push(format!(
            "message {:?} vs {:?}",
            ours.message.as_deref().unwrap_or(""),
            theirs.message.as_deref().unwrap_or("")
        ));
    }
    if ours.status < 400 && theirs.status < 400 {
        shape_diff("body", &ours.shape, &theirs.shape, &mut d);
    }
    let names: BTreeSet<&String> = ours.cookies.keys().chain(theirs.cookies.keys()).collect();
    for n in names {
        match (ours.cookies.get(n), theirs.cookies.get(n)) {
            (Some(a), Some(b)) if a != b => d.push(format!("cookie {n}: {a} vs {b}")),
            (Some(_), None) => d.push(format!("cookie {n}: set vs not set")),
            (None, Some(_)) => d.push(format!("cookie {n}: not set vs set")),
            _ => {}
        }
    }
    if ours.location.is_some() != theirs.location.is_some() {
        d.push(format!(
            "location {:?} vs {:?}",
            ours.location, theirs.location
        ));
    }
    d
}

fn scenario() -> Vec<Step> {
    let ann = Some("ann");
    let bob = Some("bob");
    let root = Some("root");
    let gh = Some("gh");
    let made = Some("made");
    let pw = "correct-horse-battery";
    let sign_up = |email: &str| json!({"name": "N", "email": email, "password": pw});
    let mut s = vec![
        Step {
            save: vec![("ann_id", "/user/id")],
            ..step(
                "sign-up",
                ann,
                "POST",
                "/sign-up/email",
                Some(sign_up("ann@compat.io")),
            )
        },
        step(
            "sign-up-taken",
            None,
            "POST",
            "/sign-up/email",
            Some(sign_up("ann@compat.io")),
        ),
        step(
            "sign-up-malformed-email",
            None,
            "POST",
            "/sign-up/email",
            Some(sign_up("nope")),
        ),
        step(
            "sign-up-short-password",
            None,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "N", "email": "short@compat.io", "password": "short"})),
        ),
        step(
            "sign-in-wrong-password",
            None,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "ann@compat.io", "password": "not-the-password"})),
        ),
        step(
            "sign-in-unknown-user",
            None,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "nobody@compat.io", "password": pw})),
        ),
        step(
            "sign-in",
            Some("ann2"),
            "POST",
            "/sign-in/email",
            Some(json!({"email": "ann@compat.io", "password": pw})),
        ),
        step(
            "sign-in-not-remembered",
            Some("ann3"),
            "POST",
            "/sign-in/email",
            Some(json!({"email": "ann@compat.io", "password": pw, "rememberMe": false})),
        ),
        step("get-session", ann, "GET", "/get-session", None),
        step("get-session-none", None, "GET", "/get-session", None),
        step("list-sessions", ann, "GET", "/list-sessions", None),
        step("list-sessions-none", None, "GET", "/list-sessions", None),
        step(
            "update-user",
            ann,
            "POST",
            "/update-user",
            Some(json!({"name": "Annie"})),
        ),
        step(
            "update-user-empty",
            ann,
            "POST",
            "/update-user",
            Some(json!({})),
        ),
        step(
            "update-user-email",
            ann,
            "POST",
            "/update-user",
            Some(json!({"email": "x@compat.io"})),
        ),
        step(
            "change-password-wrong",
            ann,
            "POST",
            "/change-password",
            Some(json!({"currentPassword": "wrong-password-1", "newPassword": "new-password-1"})),
        ),
        step(
            "verify-password",
            ann,
            "POST",
            "/verify-password",
            Some(json!({"password": pw})),
        ),
        step(
            "verify-password-wrong",
            ann,
            "POST",
            "/verify-password",
            Some(json!({"password": "wrong-password-1"})),
        ),
        step("list-accounts", ann, "GET", "/list-accounts", None),
        step(
            "unlink-last-account",
            ann,
            "POST",
            "/unlink-account",
            Some(json!({"providerId": "credential", "accountId": "{ann_id}"})),
        ),
        step(
            "revoke-other-sessions",
            ann,
            "POST",
            "/revoke-other-sessions",
            Some(json!({})),
        ),
        step(
            "revoke-unknown-session",
            ann,
            "POST",
            "/revoke-session",
            Some(json!({"token": "no-such-token"})),
        ),
        step(
            "get-session-uncached",
            ann,
            "GET",
            "/get-session?disableCookieCache=true",
            None,
        ),
        step(
            "request-password-reset",
            None,
            "POST",
            "/request-password-reset",
            Some(json!({"email": "ann@compat.io", "redirectTo": "/reset"})),
        ),
        step(
            "request-password-reset-unknown",
            None,
            "POST",
            "/request-password-reset",
            Some(json!({"email": "nobody@compat.io", "redirectTo": "/reset"})),
        ),
        step(
            "reset-password-bad-token",
            None,
            "POST",
            "/reset-password",
            Some(json!({"newPassword": "new-password-1", "token": "bad"})),
        ),
        step(
            "send-verification-email",
            None,
            "POST",
            "/send-verification-email",
            Some(json!({"email": "ann@compat.io"})),
        ),
        // Opened on another device (the phone): the first browser stays signed in.
        follow(
            "verify-email",
            Some("ann-phone"),
            "verify-email",
            "ann@compat.io",
        ),
        step(
            "get-session-after-verifying-elsewhere",
            ann,
            "GET",
            "/get-session",
            None,
        ),
        Step {
            save: vec![("reset", "location:token")],
            ..follow("reset-link", None, "reset-password", "ann@compat.io")
        },
        step(
            "reset-password",
            None,
            "POST",
            "/reset-password",
            Some(json!({"newPassword": "a-new-password-1", "token": "{reset}"})),
        ),
        step(
            "reset-password-again",
            None,
            "POST",
            "/reset-password",
            Some(json!({"newPassword": "a-new-password-2", "token": "{reset}"})),
        ),
        step(
            "change-email-same",
            ann,
            "POST",
            "/change-email",
            Some(json!({"newEmail": "ann@compat.io"})),
        ),
        step(
            "change-email-verified",
            ann,
            "POST",
            "/change-email",
            Some(json!({"newEmail": "ann.new@compat.io"})),
        ),
        follow(
            "confirm-email-change",
            ann,
            "change-email-confirmation",
            "ann@compat.io",
        ),
        follow(
            "prove-new-address",
            ann,
            "verify-email",
            "ann.new@compat.io",
        ),
        step("get-session-after-change", ann, "GET", "/get-session", None),
        step(
            "change-email-to-the-confirmed-address",
            ann,
            "POST",
            "/change-email",
            Some(json!({"newEmail": "ann.new@compat.io"})),
        ),
        step(
            "verify-email-bad-token",
            None,
            "GET",
            "/verify-email?token=bad",
            None,
        ),
        step(
            "admin-list-users-not-admin",
            ann,
            "GET",
            "/admin/list-users",
            None,
        ),
        step(
            "check-slug-free",
            ann,
            "POST",
            "/organization/check-slug",
            Some(json!({"slug": "acme"})),
        ),
        Step {
            save: vec![("org", "/id")],
            ..step(
                "create-organization",
                ann,
                "POST",
                "/organization/create",
                Some(json!({"name": "Acme", "slug": "acme", "metadata": {"plan": "pro"}})),
            )
        },
        step(
            "check-slug-taken",
            ann,
            "POST",
            "/organization/check-slug",
            Some(json!({"slug": "acme"})),
        ),
        step(
            "create-organization-slug-taken",
            ann,
            "POST",
            "/organization/create",
            Some(json!({"name": "Acme", "slug": "acme"})),
        ),
        step("list-organizations", ann, "GET", "/organization/list", None),
        step(
            "get-full-organization",
            ann,
            "GET",
            "/organization/get-full-organization",
            None,
        ),
        step(
            "set-active",
            ann,
            "POST",
            "/organization/set-active",
            Some(json!({"organizationId": "{org}"})),
        ),
        step("list-teams", ann, "GET", "/organization/list-teams", None),
        Step {
            save: vec![("team", "/id")],
            ..step(
                "create-team",
                ann,
                "POST",
                "/organization/create-team",
                Some(json!({"name": "Core"})),
            )
        },
        step(
            "create-team-taken",
            ann,
            "POST",
            "/organization/create-team",
            Some(json!({"name": "Core"})),
        ),
        step(
            "update-team",
            ann,
            "POST",
            "/organization/update-team",
            Some(json!({"teamId": "{team}", "data": {"name": "Platform"}})),
        ),
        step(
            "set-active-team",
            ann,
            "POST",
            "/organization/set-active-team",
            Some(json!({"teamId": "{team}"})),
        ),
        step(
            "list-user-teams",
            ann,
            "GET",
            "/organization/list-user-teams",
            None,
        ),
        step(
            "list-team-members",
            ann,
            "GET",
            "/organization/list-team-members?teamId={team}",
            None,
        ),
        step(
            "has-permission",
            ann,
            "POST",
            "/organization/has-permission",
            Some(json!({"permissions": {"member": ["create"]}})),
        ),
        step(
            "get-active-member-role",
            ann,
            "GET",
            "/organization/get-active-member-role",
            None,
        ),
        step(
            "list-members",
            ann,
            "GET",
            "/organization/list-members",
            None,
        ),
        Step {
            save: vec![("owner_member", "/id")],
            ..step(
                "get-active-member",
                ann,
                "GET",
                "/organization/get-active-member",
                None,
            )
        },
        step(
            "update-organization",
            ann,
            "POST",
            "/organization/update",
            Some(json!({"data": {"name": "Acme Inc"}})),
        ),
        Step {
            save: vec![("invitation", "/id")],
            ..step(
                "invite-member",
                ann,
                "POST",
                "/organization/invite-member",
                Some(json!({"email": "bob@compat.io", "role": "member"})),
            )
        },
        step(
            "invite-member-again",
            ann,
            "POST",
            "/organization/invite-member",
            Some(json!({"email": "bob@compat.io", "role": "member"})),
        ),
        step(
            "list-invitations",
            ann,
            "GET",
            "/organization/list-invitations",
            None,
        ),
        Step {
            save: vec![("bob_id", "/user/id")],
            ..step(
                "bob-sign-up",
                bob,
                "POST",
                "/sign-up/email",
                Some(sign_up("bob@compat.io")),
            )
        },
        step(
            "list-user-invitations-unverified",
            bob,
            "GET",
            "/organization/list-user-invitations",
            None,
        ),
        step(
            "get-invitation",
            bob,
            "GET",
            "/organization/get-invitation?id={invitation}",
            None,
        ),
        step(
            "bob-send-verification",
            bob,
            "POST",
            "/send-verification-email",
            Some(json!({"email": "bob@compat.io"})),
        ),
        follow("bob-verify-email", bob, "verify-email", "bob@compat.io"),
        step(
            "list-user-invitations",
            bob,
            "GET",
            "/organization/list-user-invitations",
            None,
        ),
        step(
            "accept-invitation",
            bob,
            "POST",
            "/organization/accept-invitation",
            Some(json!({"invitationId": "{invitation}"})),
        ),
        step(
            "update-member-role-unknown-member",
            bob,
            "POST",
            "/organization/update-member-role",
            Some(json!({"memberId": "no-such-member", "role": "admin"})),
        ),
        step(
            "update-member-role-not-allowed",
            bob,
            "POST",
            "/organization/update-member-role",
            Some(json!({"memberId": "{owner_member}", "role": "member"})),
        ),
        step(
            "remove-only-owner",
            bob,
            "POST",
            "/organization/remove-member",
            Some(json!({"memberIdOrEmail": "{owner_member}"})),
        ),
        step(
            "leave-as-only-owner",
            ann,
            "POST",
            "/organization/leave",
            Some(json!({"organizationId": "{org}"})),
        ),
        step(
            "add-team-member",
            ann,
            "POST",
            "/organization/add-team-member",
            Some(json!({"teamId": "{team}", "userId": "{bob_id}"})),
        ),
        step(
            "add-team-member-not-allowed",
            bob,
            "POST",
            "/organization/add-team-member",
            Some(json!({"teamId": "{team}", "userId": "{ann_id}"})),
        ),
        step(
            "remove-team-member-not-allowed",
            bob,
            "POST",
            "/organization/remove-team-member",
            Some(json!({"teamId": "{team}", "userId": "{ann_id}"})),
        ),
        step(
            "remove-team-member",
            ann,
            "POST",
            "/organization/remove-team-member",
            Some(json!({"teamId": "{team}", "userId": "{bob_id}"})),
        ),
        step(
            "create-role",
            ann,
            "POST",
            "/organization/create-role",
            Some(json!({"role": "auditor", "permission": {"member": ["create"]}})),
        ),
        step(
            "create-role-taken",
            ann,
            "POST",
            "/organization/create-role",
            Some(json!({"role": "auditor", "permission": {"member": ["create"]}})),
        ),
        step(
            "create-role-not-allowed",
            bob,
            "POST",
            "/organization/create-role",
            Some(json!({"role": "spy", "permission": {"member": ["create"]}})),
        ),
        step("list-roles", ann, "GET", "/organization/list-roles", None),
        step(
            "get-role",
            ann,
            "GET",
            "/organization/get-role?roleName=auditor",
            None,
        ),
        step(
            "get-role-unknown",
            ann,
            "GET",
            "/organization/get-role?roleName=nobody",
            None,
        ),
        step(
            "update-role",
            ann,
            "POST",
            "/organization/update-role",
            Some(
                json!({"roleName": "auditor", "data": {"permission": {"member": ["create", "update"]}}}),
            ),
        ),
        step(
            "delete-role",
            ann,
            "POST",
            "/organization/delete-role",
            Some(json!({"roleName": "auditor"})),
        ),
        step(
            "delete-role-unknown",
            ann,
            "POST",
            "/organization/delete-role",
            Some(json!({"roleName": "auditor"})),
        ),
        Step {
            save: vec![("team_invitation", "/id")],
            ..step(
                "invite-member-to-a-team",
                ann,
                "POST",
                "/organization/invite-member",
                Some(json!({"email": "dee@compat.io", "role": "member", "teamId": "{team}"})),
            )
        },
        step(
            "dee-sign-up",
            Some("dee"),
            "POST",
            "/sign-up/email",
            Some(sign_up("dee@compat.io")),
        ),
        step(
            "accept-invitation-to-a-team",
            Some("dee"),
            "POST",
            "/organization/accept-invitation",
            Some(json!({"invitationId": "{team_invitation}"})),
        ),
        step(
            "list-user-teams-invited",
            Some("dee"),
            "GET",
            "/organization/list-user-teams",
            None,
        ),
        step(
            "get-session-after-team-invitation",
            Some("dee"),
            "GET",
            "/get-session",
            None,
        ),
        step(
            "remove-team",
            ann,
            "POST",
            "/organization/remove-team",
            Some(json!({"teamId": "{team}"})),
        ),
        Step {
            save: vec![("invitation2", "/id")],
            ..step(
                "invite-second",
                ann,
                "POST",
                "/organization/invite-member",
                Some(json!({"email": "cy@compat.io", "role": "admin"})),
            )
        },
        step(
            "cancel-invitation",
            ann,
            "POST",
            "/organization/cancel-invitation",
            Some(json!({"invitationId": "{invitation2}"})),
        ),
        step(
            "reject-canceled-invitation",
            bob,
            "POST",
            "/organization/reject-invitation",
            Some(json!({"invitationId": "{invitation2}"})),
        ),
        Step {
            save: vec![("root_id", "/user/id")],
            ..step(
                "root-sign-up",
                root,
                "POST",
                "/sign-up/email",
                Some(sign_up("root@compat.io")),
            )
        },
        step(
            "admin-create-user-not-admin",
            root,
            "POST",
            "/admin/create-user",
            Some(json!({"email": "made@compat.io", "password": pw, "name": "Made"})),
        ),
        step("promote", root, "POST", "@promote:root@compat.io", None),
        Step {
            save: vec![("made_id", "/user/id")],
            ..step(
                "admin-create-user",
                root,
                "POST",
                "/admin/create-user",
                Some(
                    json!({"email": "made@compat.io", "password": pw, "name": "Made", "role": "user"}),
                ),
            )
        },
        step(
            "admin-create-user-taken",
            root,
            "POST",
            "/admin/create-user",
            Some(json!({"email": "made@compat.io", "password": pw, "name": "Made"})),
        ),
        step(
            "admin-get-user",
            root,
            "GET",
            "/admin/get-user?id={made_id}",
            None,
        ),
        step(
            "admin-get-user-unknown",
            root,
            "GET",
            "/admin/get-user?id=no-such-user",
            None,
        ),
        step(
            "admin-update-user",
            root,
            "POST",
            "/admin/update-user",
            Some(json!({"userId": "{made_id}", "data": {"name": "Made Again"}})),
        ),
        step(
            "admin-set-role",
            root,
            "POST",
            "/admin/set-role",
            Some(json!({"userId": "{made_id}", "role": "admin"})),
        ),
        step(
            "admin-set-role-back",
            root,
            "POST",
            "/admin/set-role",
            Some(json!({"userId": "{made_id}", "role": "user"})),
        ),
        step(
            "made-sign-in",
            made,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "made@compat.io", "password": pw})),
        ),
        Step {
            save: vec![("made_session", "/sessions/0/token")],
            ..step(
                "admin-list-user-sessions",
                root,
                "POST",
                "/admin/list-user-sessions",
                Some(json!({"userId": "{made_id}"})),
            )
        },
        step(
            "admin-revoke-user-session",
            root,
            "POST",
            "/admin/revoke-user-session",
            Some(json!({"sessionToken": "{made_session}"})),
        ),
        step(
            "admin-revoke-user-sessions",
            root,
            "POST",
            "/admin/revoke-user-sessions",
            Some(json!({"userId": "{made_id}"})),
        ),
        step(
            "admin-ban-user",
            root,
            "POST",
            "/admin/ban-user",
            Some(json!({"userId": "{made_id}", "banReason": "spam"})),
        ),
        step(
            "banned-sign-in",
            made,
            "POST",
            "/sign-in/email",
            Some(json!({"email": "made@compat.io", "password": pw})),
        ),
        step(
            "admin-unban-user",
            root,
            "POST",
            "/admin/unban-user",
            Some(json!({"userId": "{made_id}"})),
        ),
        step(
            "admin-set-user-password",
            root,
            "POST",
            "/admin/set-user-password",
            Some(json!({"userId": "{made_id}", "newPassword": "another-password-1"})),
        ),
        step(
            "admin-has-permission",
            root,
            "POST",
            "/admin/has-permission",
            Some(json!({"permissions": {"user": ["create"]}})),
        ),
        step(
            "admin-has-permission-user",
            bob,
            "POST",
            "/admin/has-permission",
            Some(json!({"permissions": {"user": ["create"]}})),
        ),
        step(
            "admin-impersonate-user",
            root,
            "POST",
            "/admin/impersonate-user",
            Some(json!({"userId": "{made_id}"})),
        ),
        step(
            "impersonated-get-session",
            root,
            "GET",
            "/get-session",
            None,
        ),
        step(
            "admin-stop-impersonating",
            root,
            "POST",
            "/admin/stop-impersonating",
            Some(json!({})),
        ),
        step(
            "admin-remove-user",
            root,
            "POST",
            "/admin/remove-user",
            Some(json!({"userId": "{made_id}"})),
        ),
        step(
            "admin-remove-user-again",
            root,
            "POST",
            "/admin/remove-user",
            Some(json!({"userId": "{made_id}"})),
        ),
        step(
            "sign-in-social-unknown-provider",
            None,
            "POST",
            "/sign-in/social",
            Some(json!({"provider": "gitlab", "callbackURL": "/"})),
        ),
        step(
            "link-social-unknown-provider",
            ann,
            "POST",
            "/link-social",
            Some(json!({"provider": "gitlab", "callbackURL": "/"})),
        ),
        step(
            "get-access-token-no-account",
            ann,
            "POST",
            "/get-access-token",
            Some(json!({"providerId": "github"})),
        ),
        step(
            "refresh-token-no-account",
            ann,
            "POST",
            "/refresh-token",
            Some(json!({"providerId": "github"})),
        ),
        step(
            "account-info-no-account",
            ann,
            "GET",
            "/account-info?accountId=no-such-account",
            None,
        ),
        step(
            "callback-without-state",
            None,
            "GET",
            "/callback/github?code=x",
            None,
        ),
        step(
            "forget-password",
            None,
            "POST",
            "/forget-password",
            Some(json!({"email": "ann@compat.io", "redirectTo": "/reset"})),
        ),
        step(
            "set-password-has-one",
            ann,
            "POST",
            "/set-password",
            Some(json!({"newPassword": "another-password-1"})),
        ),
        Step {
            save: vec![("gh_state", "location:state")],
            ..step(
                "sign-in-social",
                gh,
                "POST",
                "/sign-in/social",
                Some(
                    json!({"provider": "github", "callbackURL": "/dash", "newUserCallbackURL": "/welcome", "errorCallbackURL": "/oops"}),
                ),
            )
        },
        step(
            "callback-bad-code",
            gh,
            "GET",
            "/callback/github?code=bad&state={gh_state}",
            None,
        ),
        Step {
            save: vec![("gh_state", "location:state")],
            ..step(
                "sign-in-social-again",
                gh,
                "POST",
                "/sign-in/social",
                Some(
                    json!({"provider": "github", "callbackURL": "/dash", "newUserCallbackURL": "/welcome", "errorCallbackURL": "/oops"}),
                ),
            )
        },
        step(
            "callback",
            gh,
            "GET",
            "/callback/github?code=good&state={gh_state}",
            None,
        ),
        step(
            "callback-replayed",
            gh,
            "GET",
            "/callback/github?code=good&state={gh_state}",
            None,
        ),
        step("get-session-social", gh, "GET", "/get-session", None),
        Step {
            save: vec![("gh_account", "/0/id")],
            ..step("list-accounts-social", gh, "GET", "/list-accounts", None)
        },
        step(
            "get-access-token",
            gh,
            "POST",
            "/get-access-token",
            Some(json!({"accountId": "{gh_account}"})),
        ),
        step(
            "refresh-token",
            gh,
            "POST",
            "/refresh-token",
            Some(json!({"accountId": "{gh_account}"})),
        ),
        step(
            "account-info",
            gh,
            "GET",
            "/account-info?accountId={gh_account}",
            None,
        ),
        step(
            "unlink-last-social-account",
            gh,
            "POST",
            "/unlink-account",
            Some(json!({"providerId": "github"})),
        ),
        Step {
            save: vec![("link_state", "location:state")],
            ..step(
                "link-social",
                ann,
                "POST",
                "/link-social",
                Some(
                    json!({"provider": "github", "callbackURL": "/linked", "errorCallbackURL": "/oops"}),
                ),
            )
        },
        step(
            "link-social-callback-other-email",
            ann,
            "GET",
            "/callback/github?code=good&state={link_state}",
            None,
        ),
        step(
            "sign-in-social-id-token-unsupported",
            None,
            "POST",
            "/sign-in/social",
            Some(json!({"provider": "github", "idToken": {"token": "a.b.c"}})),
        ),
        step("ok", None, "GET", "/ok", None),
        step("token", ann, "GET", "/token", None),
        step("token-signed-out", None, "GET", "/token", None),
        step("jwks", None, "GET", "/jwks", None),
        step(
            "add-member-from-a-browser",
            ann,
            "POST",
            "/organization/add-member",
            Some(json!({"userId": "{bob_id}", "role": "member"})),
        ),
        step("callback-form-post", None, "POST", "/callback/github", None),
        step("get-on-post-route", None, "GET", "/sign-in/email", None),
        step(
            "post-get-session",
            None,
            "POST",
            "/get-session",
            Some(json!({})),
        ),
        step("unknown-route", None, "GET", "/no-such-route", None),
        step(
            "delete-organization",
            ann,
            "POST",
            "/organization/delete",
            Some(json!({"organizationId": "{org}"})),
        ),
        step(
            "cy-sign-up",
            Some("cy"),
            "POST",
            "/sign-up/email",
            Some(sign_up("cy@compat.io")),
        ),
        step(
            "delete-user",
            Some("cy"),
            "POST",
            "/delete-user",
            Some(json!({})),
        ),
        follow(
            "delete-user-link",
            Some("cy"),
            "delete-account",
            "cy@compat.io",
        ),
        step("sign-out", ann, "POST", "/sign-out", Some(json!({}))),
        step(
            "sign-out-signed-out",
            None,
            "POST",
            "/sign-out",
            Some(json!({})),
        ),
        step(
            "sign-in-again",
            Some("ann4"),
            "POST",
            "/sign-in/email",
            Some(json!({"email": "ann@compat.io", "password": "another-password-1"})),
        ),
        step(
            "revoke-sessions",
            Some("ann4"),
            "POST",
            "/revoke-sessions",
            Some(json!({})),
        ),
        step(
            "get-session-after-revoke-sessions",
            Some("ann4"),
            "GET",
            "/get-session",
            None,
        ),
    ];
    s.extend(two_factor_steps(pw));
    s.extend(passkey_steps(pw));
    s.extend(by_mail::steps(pw));
    s.extend(api_keys::steps(pw));
    s.retain(|st| !st.label.is_empty());
    s
}

/// The passkey plugin's routes that need no authenticator: the options, the refusals of an
/// answer without a challenge or with a garbled one, and the account's list, rename and
/// delete of passkeys it does not have.
fn passkey_steps(pw: &'static str) -> Vec<Step> {
    let pk = Some("pk");
    let garbled_registration = json!({"response": {"id": "abc", "rawId": "abc", "type": "public-key",
        "response": {"clientDataJSON": "xx", "attestationObject": "yy"}}});
    let garbled_assertion = json!({"response": {"id": "abc", "rawId": "abc", "type": "public-key",
        "response": {"clientDataJSON": "xx", "authenticatorData": "yy", "signature": "zz"}}});
    vec![
        step(
            "pk-sign-up",
            pk,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "P", "email": "pk@compat.io", "password": pw})),
        ),
        step(
            "passkey-register-options-signed-out",
            None,
            "GET",
            "/passkey/generate-register-options",
            None,
        ),
        step(
            "passkey-register-options",
            pk,
            "GET",
            "/passkey/generate-register-options?name=Laptop",
            None,
        ),
        step(
            "passkey-verify-registration-no-response",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(json!({})),
        ),
        step(
            "passkey-verify-registration-garbled",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(garbled_registration.clone()),
        ),
        step(
            "passkey-verify-registration-challenge-used",
            pk,
            "POST",
            "/passkey/verify-registration",
            Some(garbled_registration),
        ),
        step(
            "passkey-register-options-platform",
            pk,
            "GET",
            "/passkey/generate-register-options?authenticatorAttachment=platform",
            None,
        ),
        step(
            "passkey-authenticate-options-signed-in",
            pk,
            "GET",
            "/passkey/generate-authenticate-options",
            None,
        ),
        step(
            "passkey-authenticate-options",
            Some("pk-anon"),
            "GET",
            "/passkey/generate-authenticate-options",
            None,
        ),
        step(
            "passkey-verify-authentication-unknown",
            Some("pk-anon"),
            "POST",
            "/passkey/verify-authentication",
            Some(garbled_assertion.clone()),
        ),
        step(
            "passkey-verify-authentication-no-challenge",
            None,
            "POST",
            "/passkey/verify-authentication",
            Some(garbled_assertion),
        ),
        step(
            "passkey-list",
            pk,
            "GET",
            "/passkey/list-user-passkeys",
            None,
        ),
        step(
            "passkey-update-unknown",
            pk,
            "POST",
            "/passkey/update-passkey",
            Some(json!({"id": "no-such-passkey", "name": "X"})),
        ),
        step(
            "passkey-delete-unknown",
            pk,
            "POST",
            "/passkey/delete-passkey",
            Some(json!({"id": "no-such-passkey"})),
        ),
        step(
            "passkey-list-signed-out",
            None,
            "GET",
            "/passkey/list-user-passkeys",
            None,
        ),
    ]
}

/// The two-factor plugin: enrolment, the challenged sign-in (a wrong code, a right one, a
/// backup code), turning it off.
fn two_factor_steps(pw: &'static str) -> Vec<Step> {
    let tf = Some("tf");
    let tf2 = Some("tf2");
    let tf3 = Some("tf3");
    let sign_in = json!({"email": "tf@compat.io", "password": pw});
    vec![
        step(
            "tf-sign-up",
            tf,
            "POST",
            "/sign-up/email",
            Some(json!({"name": "T", "email": "tf@compat.io", "password": pw})),
        ),
        step(
            "two-factor-enable-wrong-password",
            tf,
            "POST",
            "/two-factor/enable",
            Some(json!({"password": "not-the-password"})),
        ),
        step(
            "two-factor-get-totp-uri-none",
            tf,
            "POST",
            "/two-factor/get-totp-uri",
            Some(json!({"password": pw})),
        ),
        Step {
            save: vec![("tf_uri", "/totpURI"), ("tf_backup", "/backupCodes/0")],
            ..step(
                "two-factor-enable",
                tf,
                "POST",
                "/two-factor/enable",
                Some(json!({"password": pw})),
            )
        },
        step(
            "two-factor-verify-totp-wrong",
            tf,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-verify-totp-confirm",
            tf,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "{totp:tf_uri}"})),
        ),
        step(
            "two-factor-get-totp-uri",
            tf,
            "POST",
            "/two-factor/get-totp-uri",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-sign-in",
            tf2,
            "POST",
            "/sign-in/email",
            Some(sign_in.clone()),
        ),
        step(
            "two-factor-no-session-yet",
            tf2,
            "GET",
            "/get-session",
            None,
        ),
        step(
            "two-factor-verify-no-challenge",
            None,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-challenge-wrong-code",
            tf2,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "000000"})),
        ),
        step(
            "two-factor-challenge-right-code",
            tf2,
            "POST",
            "/two-factor/verify-totp",
            Some(json!({"code": "{totp+1:tf_uri}", "trustDevice": true})),
        ),
        step("two-factor-signed-in", tf2, "GET", "/get-session", None),
        step(
            "two-factor-sign-in-backup",
            tf3,
            "POST",
            "/sign-in/email",
            Some(sign_in),
        ),
        step(
            "two-factor-backup-wrong",
            tf3,
            "POST",
            "/two-factor/verify-backup-code",
            Some(json!({"code": "aaaaa-bbbbb"})),
        ),
        step(
            "two-factor-backup",
            tf3,
            "POST",
            "/two-factor/verify-backup-code",
            Some(json!({"code": "{tf_backup}"})),
        ),
        step(
            "two-factor-generate-backup-codes",
            tf3,
            "POST",
            "/two-factor/generate-backup-codes",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-disable",
            tf3,
            "POST",
            "/two-factor/disable",
            Some(json!({"password": pw})),
        ),
        step(
            "two-factor-generate-backup-codes-off",
            tf3,
            "POST",
            "/two-factor/generate-backup-codes",
            Some(json!({"password": pw})),
        ),
    ]
}

fn start_reference(js: &std::path::Path) -> (Reference, String) {
    let mut child = Command::new("node")
        .arg("better-auth-server.mjs")
        .current_dir(js)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("better-auth did not start: {line:?}"))
        .to_owned();
    (Reference(child), addr)
}

#[tokio::test]
async fn answers_match_better_auth_side_by_side() {
    let Some(js) = crate::common::js_client_dir() else {
        return;
    };
    let (_reference, ref_addr) = start_reference(&js);
    let port = ref_addr.rsplit(':').next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // GitHub, for both: the reference's fake (better-auth asks it in-process).
    let github = |path: &str| format!("http://{ref_addr}/__github{path}");
    let env = [
        ("GATEHOUSE_COOKIE_PREFIX", "better-auth".to_owned()),
        // 1.7's default (Gatehouse's is on), so the steps after the reset compare one flow.
        (
            "GATEHOUSE_ACCOUNT__REVOKE_SESSIONS_ON_PASSWORD_RESET",
            "false".to_owned(),
        ),
        (
            "GATEHOUSE_SOCIAL__GITHUB__CLIENT_ID",
            "compat-github".to_owned(),
        ),
        (
            "GATEHOUSE_SOCIAL__GITHUB__CLIENT_SECRET",
            "compat-github-secret".to_owned(),
        ),
        (
            "GATEHOUSE_SOCIAL__GITHUB__TOKEN_ENDPOINT",
            github("/login/oauth/access_token"),
        ),
        (
            "GATEHOUSE_SOCIAL__GITHUB__USER_INFO_ENDPOINT",
            github("/user"),
        ),
        (
            "GATEHOUSE_SOCIAL__GITHUB__EXTRA_ENDPOINT",
            github("/user/emails"),
        ),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_with(dir.path(), &env, None);
    let mut ours = Side::new(
        "gatehouse",
        server.base.clone(),
        "http://localhost:3000".into(),
        Mail::Outbox(dir.path().join("outbox")),
        Promote::Cli(dir.path().to_path_buf()),
    );
    let mut theirs = Side::new(
        "better-auth",
        format!("http://{ref_addr}/api/auth"),
        format!("http://localhost:{port}"),
        Mail::Route(format!("http://{ref_addr}/__mail")),
        Promote::Route(format!("http://{ref_addr}/__set-role")),
    );
    let mut found: Vec<(String, String)> = Vec::new();
    let mut transcript = String::new();
    for st in scenario() {
        let a = ours.send(&st).await;
        let b = theirs.send(&st).await;
        for d in compare(&a, &b) {
            transcript.push_str(&format!(
                "{:<36} {d}\n    {}: {}\n    {}: {}\n",
                st.label, ours.name, a.json, theirs.name, b.json
            ));
            found.push((st.label.to_owned(), d));
        }
    }
    let known: BTreeSet<(String, String)> = DELIBERATE
        .iter()
        .chain(OPEN)
        .map(|(l, d, _)| ((*l).to_owned(), (*d).to_owned()))
        .collect();
    let unexpected: Vec<&(String, String)> = found.iter().filter(|f| !known.contains(*f)).collect();
    let gone: Vec<&(String, String)> = known.iter().filter(|k| !found.contains(k)).collect();
    assert!(
        unexpected.is_empty() && gone.is_empty(),
        "differences from better-auth 1.7 (ours vs theirs):\n{transcript}\nunexpected: \
         {unexpected:#?}\nlisted as deliberate but not seen: {gone:#?}"
    );
}
