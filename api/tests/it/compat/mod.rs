//! Side by side with better-auth 1.7 itself: the same requests, with the headers a browser
//! sends, go to Gatehouse (the real binary) and to better-auth (`tests/js-client/
//! better-auth-server.mjs`, on its in-memory adapter), one step at a time; status, error
//! code and message, JSON keys and value kinds (ids and times by kind, not value; `null` and
//! an absent key alike), cookie names and attributes and redirect targets must agree. Each
//! difference Gatehouse keeps on purpose is listed in `DELIBERATE` with its reason (README,
//! "Differences from better-auth"); any other fails the test, and so does a listed one that
//! no longer happens. Skipped without the npm packages unless `REQUIRE_JS_CLIENT=1`.
mod account;
mod admin_social;
mod api_keys;
mod deliberate;
use deliberate::*;
mod passkey;
use passkey::*;
mod two_factor;
use two_factor::*;
mod by_mail;
mod organization;

use crate::common::Server;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

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

/// The body of a sign-up with `pw`, for an address: what the scenario's sign-ups send.
fn sign_up_with(pw: &'static str) -> impl Fn(&str) -> Value {
    move |email| json!({"name": "N", "email": email, "password": pw})
}

fn scenario() -> Vec<Step> {
    let pw = "correct-horse-battery";
    let mut s = account::steps(pw);
    s.extend(organization::steps(pw));
    s.extend(admin_social::steps(pw));
    s.extend(two_factor_steps(pw));
    s.extend(passkey_steps(pw));
    s.extend(by_mail::steps(pw));
    s.extend(api_keys::steps(pw));
    s.retain(|st| !st.label.is_empty());
    s
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
