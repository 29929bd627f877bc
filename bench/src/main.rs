//! `gatehouse-bench`: drives any server that speaks better-auth's HTTP API over HTTP, with one
//! cookie jar per virtual user, and reports throughput, latency percentiles (HDR histogram) and
//! errors by status and code. It only speaks HTTP, so it measures Gatehouse and better-auth alike.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod http;

use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Scenario {
    /// New unique users signing up.
    SignUp,
    /// Seeded users signing in with their password.
    SignIn,
    /// Seeded users reading their session (the cookie cache is used if the server has it on).
    GetSession,
    /// Reading the session bypassing the cookie cache (`disableCookieCache=true`).
    GetSessionNoCache,
    /// A blend: mostly get-session, some sign-in, sign-up, list-sessions and sign-out.
    Mixed,
    /// Organization churn: create, invite, accept, list members, update role, remove.
    Org,
    /// An authenticated organization read: each virtual user owns an organization with
    /// `--org-members` members and reads it (`get-full-organization` and `list-members` in
    /// turn).
    OrgRead,
    /// An organization write: each owner changes one member's role back and forth
    /// (`update-member-role`).
    OrgWrite,
    /// `GET /api/auth/ok`: the cheapest request, to show the load generator is not the limit.
    Ok,
}

/// Load-test a better-auth-compatible server.
#[derive(Parser, Debug, Clone)]
#[command(name = "gatehouse-bench", version)]
struct Args {
    /// Base URL of the server (the API is under /api/auth).
    #[arg(long, default_value = "http://localhost:3000")]
    url: String,
    #[arg(long, value_enum, default_value = "get-session")]
    scenario: Scenario,
    /// Virtual users running at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// How long to measure, e.g. 30s, 2m, 500ms.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,
    /// Stop after this many measured requests instead of after --duration.
    #[arg(long)]
    requests: Option<u64>,
    /// Unmeasured load before measuring.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    warmup: Duration,
    /// Users to sign up before the run (default: one per virtual user).
    #[arg(long)]
    users: Option<usize>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Exit with an error when the error rate exceeds this fraction.
    #[arg(long, default_value_t = 0.0)]
    max_errors: f64,
    /// Origin header to send (default: the URL's origin).
    #[arg(long)]
    origin: Option<String>,
    /// A second server: run the same scenario against both, interleaved in short rounds.
    #[arg(long)]
    compare: Option<String>,
    /// Length of one round with --compare.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    round: Duration,
    /// Password of seeded users.
    #[arg(long, default_value = "bench-password-123")]
    password: String,
    /// Members of each virtual user's organization besides the owner (org-read, org-write).
    #[arg(long, default_value_t = 10)]
    org_members: usize,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Threads of the harness itself (1, as `wrk -t1`: one core at most, the rest left to the
    /// server on a shared machine).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let n: f64 = num.parse().map_err(|_| format!("bad duration {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("bad duration unit in {s:?} (ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// One virtual user: its credentials and cookies.
#[derive(Clone)]
struct VUser {
    email: String,
    cookie: String,
    /// org-read / org-write: the organization this user owns, and one member of it.
    org: Option<(String, String)>,
}

/// What one target measured.
#[derive(Default)]
struct Stats {
    hist: Option<Histogram<u64>>,
    ok: u64,
    errors: BTreeMap<String, u64>,
    elapsed: Duration,
}

impl Stats {
    fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, 60_000_000, 3).ok(),
            ..Default::default()
        }
    }
    fn record(&mut self, micros: u64, outcome: Result<(), String>) {
        if let Some(h) = &mut self.hist {
            let _ = h.record(micros.clamp(1, 60_000_000));
        }
        match outcome {
            Ok(()) => self.ok += 1,
            Err(e) => *self.errors.entry(e).or_default() += 1,
        }
    }
    fn merge(&mut self, other: Stats) {
        if let (Some(a), Some(b)) = (&mut self.hist, &other.hist) {
            let _ = a.add(b);
        }
        self.ok += other.ok;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.elapsed += other.elapsed;
    }
    fn total(&self) -> u64 {
        self.ok + self.errors.values().sum::<u64>()
    }
    fn error_rate(&self) -> f64 {
        let t = self.total();
        if t == 0 {
            0.0
        } else {
            (t - self.ok) as f64 / t as f64
        }
    }
    fn quantile_ms(&self, q: f64) -> f64 {
        self.hist
            .as_ref()
            .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1000.0)
    }
    fn max_ms(&self) -> f64 {
        self.hist.as_ref().map_or(0.0, |h| h.max() as f64 / 1000.0)
    }
    fn rps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.total() as f64 / s
        } else {
            0.0
        }
    }
    fn report(&self) -> Value {
        json!({
            "requests": self.total(),
            "ok": self.ok,
            "errors": self.errors,
            "error_rate": self.error_rate(),
            "seconds": self.elapsed.as_secs_f64(),
            "throughput_rps": self.rps(),
            "latency_ms": {
                "p50": self.quantile_ms(0.50),
                "p90": self.quantile_ms(0.90),
                "p99": self.quantile_ms(0.99),
                "max": self.max_ms(),
            },
        })
    }
}

struct Target {
    origin: String,
    http: http::Client,
    /// Shared across runs (warm-up, rounds), so a cookie a scenario changes (sign-out, sign-in)
    /// stays changed; a virtual user is used by one task at a time.
    users: Vec<Arc<tokio::sync::Mutex<VUser>>>,
    run_id: String,
    seq: AtomicU64,
}

/// An answer's body, unparsed.
struct Body(Vec<u8>);

impl Body {
    /// The body as JSON (`null` when it is not JSON).
    fn json(&self) -> Value {
        serde_json::from_slice(&self.0).unwrap_or(Value::Null)
    }

    /// Whether the body is JSON `null` (what get-session answers without a session) or empty.
    fn is_null(&self) -> bool {
        matches!(self.0.trim_ascii(), b"null" | b"")
    }
}

impl Target {
    fn api(path: &str) -> String {
        format!("/api/auth{path}")
    }

    /// One request; `Ok` for a 2xx, else `"status CODE"`. Returns the body as it came (parsed
    /// only by the callers that read it: parsing every answer would make the harness, not the
    /// server, the limit on large answers) and the cookie pairs set.
    async fn send(
        &self,
        post: bool,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
    ) -> Result<(Body, Vec<String>), String> {
        let cookie = cookie.filter(|c| !c.is_empty());
        let mut headers = vec![("origin", self.origin.as_str())];
        if let Some(c) = cookie {
            headers.push(("cookie", c));
        }
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

    fn next_email(&self) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("bench-{}-{n}@example.com", self.run_id)
    }

    async fn sign_up(&self, email: &str, password: &str) -> Result<String, String> {
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

async fn connect(url: &str, args: &Args, run_id: &str) -> Result<Target, String> {
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
async fn seed(t: &mut Target, n: usize, password: &str, concurrency: usize) -> Result<(), String> {
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

/// One operation of the scenario by virtual user `u`.
async fn op(
    t: &Target,
    scenario: Scenario,
    u: &mut VUser,
    step: u64,
    password: &str,
) -> Result<(), String> {
    match scenario {
        Scenario::SignUp => t.sign_up(&t.next_email(), password).await.map(|_| ()),
        Scenario::SignIn => sign_in(t, u, password).await,
        Scenario::GetSession => get_session(t, u, false).await,
        Scenario::GetSessionNoCache => get_session(t, u, true).await,
        Scenario::Mixed => match step % 20 {
            0 => sign_in(t, u, password).await,
            1 => t.sign_up(&t.next_email(), password).await.map(|_| ()),
            2 => t
                .send(false, "/list-sessions", None, Some(&u.cookie))
                .await
                .map(|_| ()),
            3 => {
                // Sign out, then back in, so the user keeps a session.
                t.send(true, "/sign-out", None, Some(&u.cookie)).await?;
                sign_in(t, u, password).await
            }
            _ => get_session(t, u, false).await,
        },
        Scenario::Org => org_round(t, u, step, password).await,
        Scenario::OrgRead => {
            let (org, _) = u.org.as_ref().ok_or("no organization")?;
            let path = match step % 2 {
                0 => format!("/organization/get-full-organization?organizationId={org}"),
                _ => format!("/organization/list-members?organizationId={org}"),
            };
            t.send(false, &path, None, Some(&u.cookie))
                .await
                .map(|_| ())
        }
        Scenario::OrgWrite => {
            let (org, member) = u.org.as_ref().ok_or("no organization")?;
            let role = if step.is_multiple_of(2) {
                "admin"
            } else {
                "member"
            };
            t.send(
                true,
                "/organization/update-member-role",
                Some(json!({"organizationId": org, "memberId": member, "role": role})),
                Some(&u.cookie),
            )
            .await
            .map(|_| ())
        }
        Scenario::Ok => t.send(false, "/ok", None, None).await.map(|_| ()),
    }
}

async fn sign_in(t: &Target, u: &mut VUser, password: &str) -> Result<(), String> {
    let (_, cookies) = t
        .send(
            true,
            "/sign-in/email",
            Some(json!({"email": u.email, "password": password})),
            None,
        )
        .await?;
    if !cookies.is_empty() {
        u.cookie = cookies.join("; ");
    }
    Ok(())
}

async fn get_session(t: &Target, u: &VUser, no_cache: bool) -> Result<(), String> {
    let path = if no_cache {
        "/get-session?disableCookieCache=true"
    } else {
        "/get-session"
    };
    let (body, _) = t.send(false, path, None, Some(&u.cookie)).await?;
    if body.is_null() {
        return Err("200 null-session".into());
    }
    Ok(())
}

/// Creates an organization named `slug` owned by the user of `cookie`; answers its id.
async fn create_org(t: &Target, slug: &str, cookie: &str) -> Result<String, String> {
    let (org, _) = t
        .send(
            true,
            "/organization/create",
            Some(json!({"name": slug, "slug": slug})),
            Some(cookie),
        )
        .await?;
    Ok(org.json()["id"].as_str().unwrap_or_default().to_owned())
}

/// Signs up a fresh user, invites them to `org_id` (as the owner of `owner_cookie`), and has
/// them accept; answers the new member's id.
async fn add_guest(
    t: &Target,
    org_id: &str,
    owner_cookie: &str,
    password: &str,
) -> Result<String, String> {
    let guest = t.next_email();
    let guest_cookie = t.sign_up(&guest, password).await?;
    let (inv, _) = t
        .send(
            true,
            "/organization/invite-member",
            Some(json!({"organizationId": org_id, "email": guest, "role": "member"})),
            Some(owner_cookie),
        )
        .await?;
    let (acc, _) = t
        .send(
            true,
            "/organization/accept-invitation",
            Some(json!({"invitationId": inv.json()["id"]})),
            Some(&guest_cookie),
        )
        .await?;
    Ok(acc.json()["member"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Gives each virtual user an organization with `members` members (signed up, invited and
/// accepted through the API), for org-read and org-write.
async fn setup_orgs(t: &Target, members: usize, password: &str) -> Result<(), String> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    stream::iter(t.users.iter().cloned())
        .map(|u| async move {
            let mut u = u.lock().await;
            let slug = format!("o-{}-{}", t.run_id, t.seq.fetch_add(1, Ordering::Relaxed));
            let org_id = create_org(t, &slug, &u.cookie).await?;
            let mut first = None;
            for _ in 0..members.max(1) {
                let member = add_guest(t, &org_id, &u.cookie, password).await?;
                first.get_or_insert(member);
            }
            u.org = Some((org_id, first.ok_or("no member id")?));
            Ok::<(), String>(())
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await
        .map(|_| ())
}

/// A whole organization life: create, invite a fresh user, that user accepts, list members,
/// change the role, remove the member. Counted as one operation.
async fn org_round(t: &Target, owner: &mut VUser, step: u64, password: &str) -> Result<(), String> {
    let slug = format!(
        "b-{}-{}-{step}",
        t.run_id,
        t.seq.fetch_add(1, Ordering::Relaxed)
    );
    let org_id = create_org(t, &slug, &owner.cookie).await?;
    let member_id = add_guest(t, &org_id, &owner.cookie, password).await?;
    t.send(
        false,
        &format!("/organization/list-members?organizationId={org_id}"),
        None,
        Some(&owner.cookie),
    )
    .await?;
    t.send(
        true,
        "/organization/update-member-role",
        Some(json!({"organizationId": org_id, "memberId": member_id, "role": "admin"})),
        Some(&owner.cookie),
    )
    .await?;
    t.send(
        true,
        "/organization/remove-member",
        Some(json!({"organizationId": org_id, "memberIdOrEmail": member_id})),
        Some(&owner.cookie),
    )
    .await?;
    Ok(())
}

/// Runs the scenario on `t` for `dur` (or `requests`), returning what was measured.
async fn run(
    t: Arc<Target>,
    args: &Args,
    dur: Duration,
    requests: Option<u64>,
    progress: bool,
) -> Stats {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..args.concurrency {
        let t = t.clone();
        let stop = stop.clone();
        let done = done.clone();
        let user = t
            .users
            .get(i % t.users.len().max(1))
            .cloned()
            .unwrap_or_else(|| {
                Arc::new(tokio::sync::Mutex::new(VUser {
                    email: String::new(),
                    cookie: String::new(),
                    org: None,
                }))
            });
        let scenario = args.scenario;
        let password = args.password.clone();
        tasks.push(tokio::spawn(async move {
            let mut stats = Stats::new();
            let mut step = i as u64;
            while !stop.load(Ordering::Relaxed) {
                if let Some(max) = requests {
                    if done.fetch_add(1, Ordering::Relaxed) >= max {
                        break;
                    }
                } else {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                let mut u = user.lock().await;
                let t0 = Instant::now();
                let outcome = op(&t, scenario, &mut u, step, &password).await;
                drop(u);
                stats.record(t0.elapsed().as_micros() as u64, outcome);
                step += 1;
            }
            stats
        }));
    }
    let ticker = {
        let stop = stop.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let elapsed = started.elapsed();
                let n = done.load(Ordering::Relaxed);
                if progress {
                    let frac = (elapsed.as_secs_f64() / dur.as_secs_f64()).min(1.0);
                    let bar = "#".repeat((frac * 30.0) as usize);
                    eprint!(
                        "\r[{bar:<30}] {:>5.1}s  {:>8} req/s ",
                        elapsed.as_secs_f64(),
                        n - last
                    );
                }
                last = n;
                if requests.is_none() && elapsed >= dur {
                    stop.store(true, Ordering::Relaxed);
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        })
    };
    let mut total = Stats::new();
    for task in tasks {
        if let Ok(s) = task.await {
            total.merge(s);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = ticker.await;
    if progress {
        eprintln!();
    }
    total.elapsed = started.elapsed();
    total
}

fn print(label: &str, s: &Stats) {
    println!("{label}");
    println!(
        "  requests {:>9}  ok {:>9}  errors {:>7} ({:.2}%)  in {:.1}s",
        s.total(),
        s.ok,
        s.total() - s.ok,
        s.error_rate() * 100.0,
        s.elapsed.as_secs_f64()
    );
    println!("  throughput {:>10.1} req/s", s.rps());
    println!(
        "  latency ms  p50 {:>8.2}  p90 {:>8.2}  p99 {:>8.2}  max {:>8.2}",
        s.quantile_ms(0.5),
        s.quantile_ms(0.9),
        s.quantile_ms(0.99),
        s.max_ms()
    );
    for (k, v) in &s.errors {
        println!("  error {k}: {v}");
    }
}

async fn prepare(url: &str, args: &Args, run_id: &str) -> Result<Arc<Target>, String> {
    let mut t = connect(url, args, run_id).await?;
    let ok = t.send(false, "/ok", None, None).await;
    if let Err(e) = ok {
        return Err(format!("{url}: /api/auth/ok answered {e}"));
    }
    let n = args.users.unwrap_or(args.concurrency);
    if !matches!(args.scenario, Scenario::Ok) && n > 0 {
        let seeded = Instant::now();
        seed(&mut t, n, &args.password, args.concurrency).await?;
        eprintln!(
            "seeded {n} users on {url} in {:.1}s",
            seeded.elapsed().as_secs_f64()
        );
        if matches!(args.scenario, Scenario::OrgRead | Scenario::OrgWrite) {
            let made = Instant::now();
            setup_orgs(&t, args.org_members, &args.password)
                .await
                .map_err(|e| format!("organizations: {e}"))?;
            eprintln!(
                "made {n} organizations of {} members on {url} in {:.1}s",
                args.org_members.max(1) + 1,
                made.elapsed().as_secs_f64()
            );
        }
    }
    Ok(Arc::new(t))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    match runtime {
        Ok(rt) => rt.block_on(run_all(args)),
        Err(e) => {
            eprintln!("gatehouse-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_all(args: Args) -> ExitCode {
    let run_id: String = {
        use rand::Rng;
        let mut r = rand::thread_rng();
        (0..8)
            .map(|_| (b'a' + r.gen_range(0..26)) as char)
            .collect()
    };
    let a = match prepare(&args.url, &args, &run_id).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gatehouse-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let b = match &args.compare {
        Some(url) => match prepare(url, &args, &run_id).await {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("gatehouse-bench: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    if !args.warmup.is_zero() {
        run(a.clone(), &args, args.warmup, None, false).await;
        if let Some(b) = &b {
            run(b.clone(), &args, args.warmup, None, false).await;
        }
    }
    let cpu_before = process_cpu();
    let (sa, sb) = match &b {
        None => (
            run(a.clone(), &args, args.duration, args.requests, !args.quiet).await,
            None,
        ),
        Some(b) => {
            // Interleave short rounds so machine noise hits both servers alike.
            let mut sa = Stats::new();
            let mut sb = Stats::new();
            let rounds = (args.duration.as_secs_f64() / args.round.as_secs_f64())
                .ceil()
                .max(1.0) as u32;
            for r in 0..rounds {
                if !args.quiet {
                    eprintln!("round {}/{rounds}", r + 1);
                }
                sa.merge(run(a.clone(), &args, args.round, None, false).await);
                sb.merge(run(b.clone(), &args, args.round, None, false).await);
            }
            (sa, Some(sb))
        }
    };
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    println!(
        "scenario {:?}, concurrency {}",
        args.scenario, args.concurrency
    );
    print(&format!("A: {}", args.url), &sa);
    if let (Some(sb), Some(url)) = (&sb, &args.compare) {
        print(&format!("B: {url}"), sb);
        let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::NAN };
        println!("A/B");
        println!("  throughput x{:.2}", ratio(sa.rps(), sb.rps()));
        for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
            println!(
                "  latency {name} x{:.2}",
                ratio(sa.quantile_ms(q), sb.quantile_ms(q))
            );
        }
    }
    if let Some(c) = cpu {
        let wall = sa.elapsed.as_secs_f64() + sb.as_ref().map_or(0.0, |s| s.elapsed.as_secs_f64());
        println!(
            "load generator CPU: {:.1}s over {:.1}s wall ({:.0}% of one core)",
            c,
            wall,
            100.0 * c / wall.max(0.001)
        );
    }
    if let Some(path) = &args.json {
        let mut doc = json!({"scenario": args.scenario, "concurrency": args.concurrency, "a": {"url": args.url, "results": sa.report()}});
        if let (Some(sb), Some(url)) = (&sb, &args.compare) {
            doc["b"] = json!({"url": url, "results": sb.report()});
        }
        if let Err(e) = std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap_or_default()) {
            eprintln!("gatehouse-bench: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let worst = sb
        .as_ref()
        .map_or(sa.error_rate(), |b| sa.error_rate().max(b.error_rate()));
    if worst > args.max_errors {
        eprintln!(
            "gatehouse-bench: error rate {:.4} exceeds --max-errors {}",
            worst, args.max_errors
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// This process's CPU time (user + system), seconds, from /proc (Linux only).
fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
