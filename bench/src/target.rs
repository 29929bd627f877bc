//! The server under test: its HTTP client, the virtual users and their cookies, seeding.
use super::*;

/// One virtual user: its credentials and cookies.
#[derive(Clone)]
pub(crate) struct VUser {
    pub(crate) email: String,
    pub(crate) cookie: String,
    /// org-read / org-write: the organization this user owns, and one member of it.
    pub(crate) org: Option<(String, String)>,
    /// sign-in-two-factor: the user's unused backup codes.
    pub(crate) backup_codes: Vec<String>,
    /// api-key: the user's key.
    pub(crate) api_key: Option<String>,
}

pub(crate) struct Target {
    pub(crate) origin: String,
    pub(crate) http: http::Client,
    /// Shared across runs (warm-up, rounds), so a cookie a scenario changes (sign-out, sign-in)
    /// stays changed; a virtual user is used by one task at a time.
    pub(crate) users: Vec<Arc<tokio::sync::Mutex<VUser>>>,
    pub(crate) run_id: String,
    pub(crate) seq: AtomicU64,
}

/// An answer's body, unparsed.
pub(crate) struct Body(Vec<u8>);

impl Body {
    /// The body as JSON (`null` when it is not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.0).unwrap_or(Value::Null)
    }

    /// Whether the body is JSON `null` (what get-session answers without a session) or empty.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self.0.trim_ascii(), b"null" | b"")
    }
}

impl Target {
    pub(crate) fn api(path: &str) -> String {
        format!("/api/auth{path}")
    }

    /// One request; `Ok` for a 2xx, else `"status CODE"`. Returns the body as it came (parsed
    /// only by the callers that read it: parsing every answer would make the harness, not the
    /// server, the limit on large answers) and the cookie pairs set.
    pub(crate) async fn send(
        &self,
        post: bool,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
    ) -> Result<(Body, Vec<String>), String> {
        let cookie = cookie.filter(|c| !c.is_empty());
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
        self.send_with(post, path, body, &headers).await
    }

    /// [`Target::send`] with `headers` (the origin is added).
    pub(crate) async fn send_with(
        &self,
        post: bool,
        path: &str,
        body: Option<Value>,
        extra: &[(&str, &str)],
    ) -> Result<(Body, Vec<String>), String> {
        let mut headers = vec![("origin", self.origin.as_str())];
        headers.extend_from_slice(extra);
        let json = match body {
            Some(b) => Some(serde_json::to_vec(&b).map_err(|e| e.to_string())?),
            None if post => Some(b"{}".to_vec()),
            None => None,
        };
        let answer = self
            .http
            .send(
                if post { "POST" } else { "GET" },
                &Self::api(path),
                &headers,
                json.as_deref(),
            )
            .await?;
        let body = Body(answer.body);
        if (200..300).contains(&answer.status) {
            Ok((body, answer.cookies))
        } else {
            let code = body.json()["code"].as_str().unwrap_or("-").to_owned();
            Err(format!("{} {code}", answer.status))
        }
    }

    pub(crate) fn next_email(&self) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("bench-{}-{n}@example.com", self.run_id)
    }

    pub(crate) async fn sign_up(&self, email: &str, password: &str) -> Result<String, String> {
        let (_, cookies) = self
            .send(
                true,
                "/sign-up/email",
                Some(json!({"name": "Bench User", "email": email, "password": password})),
                None,
            )
            .await?;
        Ok(cookies.join("; "))
    }
}

pub(crate) async fn connect(url: &str, args: &Args, run_id: &str) -> Result<Target, String> {
    let base = url.trim_end_matches('/').to_owned();
    let origin = match &args.origin {
        Some(o) => o.clone(),
        None => url::Url::parse(&base)
            .map(|u| u.origin().ascii_serialization())
            .map_err(|e| format!("--url {base}: {e}"))?,
    };
    let http = http::Client::new(http::Endpoint::parse(&base)?, Duration::from_secs(30));
    Ok(Target {
        origin,
        http,
        users: Vec::new(),
        run_id: run_id.to_owned(),
        seq: AtomicU64::new(0),
    })
}

/// Signs up `n` users in parallel (bounded), keeping their cookies.
pub(crate) async fn seed(
    t: &mut Target,
    n: usize,
    password: &str,
    concurrency: usize,
) -> Result<(), String> {
    use futures::stream::{self, StreamExt};
    let results: Vec<Result<VUser, String>> = stream::iter(0..n)
        .map(|_| {
            let t = &*t;
            async move {
                let email = t.next_email();
                let cookie = t.sign_up(&email, password).await?;
                Ok(VUser {
                    email,
                    cookie,
                    org: None,
                    backup_codes: Vec::new(),
                    api_key: None,
                })
            }
        })
        .buffer_unordered(concurrency.max(1) * 2)
        .collect()
        .await;
    for r in results {
        let u = r.map_err(|e| format!("seeding failed: {e}"))?;
        t.users.push(Arc::new(tokio::sync::Mutex::new(u)));
    }
    Ok(())
}
