//! `gatehouse-bench`: drives any server that speaks better-auth's HTTP API over HTTP, with one
//! cookie jar per virtual user, and reports throughput, latency percentiles (HDR histogram) and
//! errors by status and code. It only speaks HTTP, so it measures Gatehouse and better-auth alike.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod http;
mod ops;
mod sink;
mod target;

use ops::*;
use target::*;

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
    /// Seeded users with two-factor sign-in on: each operation is a sign-in (answered with the
    /// challenge) and its second step with a backup code (every tenth operation also makes
    /// new codes): what a challenged sign-in costs beside `sign-in`.
    SignInTwoFactor,
    /// Seeded users' scripts: each virtual user has an API key without a rate limit (made
    /// with `--server-key`) and reads the session with it alone (`x-api-key`, no cookie).
    ApiKey,
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
    /// A second scenario on the same server (`--url`), interleaved with the first in short
    /// rounds: B is that scenario (e.g. `--scenario get-session-no-cache --versus ok` measures
    /// the share of `/ok` with both under the same load of the machine).
    #[arg(long, conflicts_with = "compare")]
    versus: Option<Scenario>,
    /// Length of one round with --compare or --versus.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    round: Duration,
    /// Password of seeded users.
    #[arg(long, default_value = "bench-password-123")]
    password: String,
    /// Members of each virtual user's organization besides the owner (org-read, org-write).
    #[arg(long, default_value_t = 10)]
    org_members: usize,
    /// The server key (`Authorization: Bearer`), for what only the server may set up: the
    /// api-key scenario's keys without a rate limit. Default: `GATEHOUSE_SERVER_KEY`.
    #[arg(long, env = "GATEHOUSE_SERVER_KEY", hide_env_values = true)]
    server_key: Option<String>,
    /// org-read, org-write: each organization of the first server (`--url`; with `--compare`
    /// the second is the baseline, without) gets a webhook endpoint for its members' events,
    /// answered by a receiver in this process (the server must allow it:
    /// `GATEHOUSE_WEBHOOKS__ALLOW_HTTP=true GATEHOUSE_WEBHOOKS__ALLOW_PRIVATE_ADDRESSES=true`).
    #[arg(long)]
    webhook: bool,
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
                    backup_codes: Vec::new(),
                    api_key: None,
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

/// A seeding error, said plainly when the server's rate limiter refused it (a 429).
fn limited(url: &str, e: String) -> String {
    if e.contains("429") {
        format!(
            "{url}: seeding the users was refused by the server's rate limiter ({e}; it lets \
             one address sign up 3 times per 10 s): run the server with \
             GATEHOUSE_RATE_LIMIT__ENABLED=false for the benchmark"
        )
    } else {
        e
    }
}

async fn prepare(
    url: &str,
    args: &Args,
    run_id: &str,
    hook: Option<&str>,
) -> Result<Arc<Target>, String> {
    let mut t = connect(url, args, run_id).await?;
    let ok = t.send(false, "/ok", None, None).await;
    if let Err(e) = ok {
        return Err(format!("{url}: /api/auth/ok answered {e}"));
    }
    let n = args.users.unwrap_or(args.concurrency);
    if !matches!(args.scenario, Scenario::Ok) && n > 0 {
        let seeded = Instant::now();
        seed(&mut t, n, &args.password, args.concurrency)
            .await
            .map_err(|e| limited(url, e))?;
        eprintln!(
            "seeded {n} users on {url} in {:.1}s",
            seeded.elapsed().as_secs_f64()
        );
        if matches!(args.scenario, Scenario::SignInTwoFactor) {
            let made = Instant::now();
            setup_two_factor(&t, &args.password)
                .await
                .map_err(|e| format!("two-factor: {e}"))?;
            eprintln!(
                "turned two-factor sign-in on for {n} users on {url} in {:.1}s",
                made.elapsed().as_secs_f64()
            );
        }
        if matches!(args.scenario, Scenario::ApiKey) {
            let key = args.server_key.as_deref().ok_or(
                "the api-key scenario needs --server-key (or GATEHOUSE_SERVER_KEY): keys made \
                 from a session allow 10 requests a day",
            )?;
            let made = Instant::now();
            setup_api_keys(&t, key)
                .await
                .map_err(|e| format!("api keys: {e}"))?;
            eprintln!(
                "made {n} API keys on {url} in {:.1}s",
                made.elapsed().as_secs_f64()
            );
        }
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
            if let Some(hook) = hook {
                setup_hooks(&t, hook)
                    .await
                    .map_err(|e| format!("webhooks: {e}"))?;
                eprintln!("registered {n} webhook endpoints at {hook}");
            }
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
    let sink = match args.webhook {
        true => match sink::Sink::start().await {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("gatehouse-bench: the webhook receiver: {e}");
                return ExitCode::from(2);
            }
        },
        false => None,
    };
    let hook = sink.as_ref().map(|s| s.url.clone());
    let a = match prepare(&args.url, &args, &run_id, hook.as_deref()).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gatehouse-bench: {e}");
            return ExitCode::from(2);
        }
    };
    // B's scenario: the same, or --versus on the same server.
    let args_b = Args {
        scenario: args.versus.unwrap_or(args.scenario),
        ..args.clone()
    };
    // B: the second server, or --versus on the same server (with its own users beside A's);
    // its label and its prepared target.
    let (label_b, prepared_b) = match (&args.compare, args.versus) {
        // The second server is the baseline: no endpoints.
        (Some(url), _) => (
            Some(url.clone()),
            Some(prepare(url, &args, &run_id, None).await),
        ),
        (None, Some(s)) => (
            Some(format!("{} ({s:?})", args.url)),
            Some(prepare(&args.url, &args_b, &format!("{run_id}v"), None).await),
        ),
        (None, None) => (None, None),
    };
    let b = match prepared_b.transpose() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gatehouse-bench: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.warmup.is_zero() {
        run(a.clone(), &args, args.warmup, None, false).await;
        if let Some(b) = &b {
            run(b.clone(), &args_b, args.warmup, None, false).await;
        }
    }
    let cpu_before = process_cpu();
    let (sa, sb) = match &b {
        None => (
            run(a.clone(), &args, args.duration, args.requests, !args.quiet).await,
            None,
        ),
        Some(b) => {
            // Interleave short rounds so machine noise hits both alike.
            let mut sa = Stats::new();
            let mut sb = Stats::new();
            // With --webhook: how long A's deliveries went on after its rounds.
            let mut drained = Duration::ZERO;
            let rounds = (args.duration.as_secs_f64() / args.round.as_secs_f64())
                .ceil()
                .max(1.0) as u32;
            for r in 0..rounds {
                if !args.quiet {
                    eprintln!("round {}/{rounds}", r + 1);
                }
                sa.merge(run(a.clone(), &args, args.round, None, false).await);
                if let Some(s) = &sink {
                    // A's deliveries still under way would take B's cores: B waits for them.
                    let (_, last) = s
                        .quiet(Duration::from_millis(300), Duration::from_secs(30))
                        .await;
                    drained += last;
                }
                sb.merge(run(b.clone(), &args_b, args.round, None, false).await);
            }
            if sink.is_some() {
                println!(
                    "webhook deliveries went on {:.1}s in all after A's rounds (B's rounds waited for them)",
                    drained.as_secs_f64()
                );
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
    if let (Some(sb), Some(label)) = (&sb, &label_b) {
        print(&format!("B: {label}"), sb);
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
    if let Some(s) = &sink {
        let during = s.received();
        println!("webhook deliveries received: {during}");
        // Deliveries the server put off while it was busy come afterwards: how many, and when
        // the last came (none for 2 s: done; at most 5 minutes).
        let (seen, last) = s
            .quiet(Duration::from_secs(2), Duration::from_secs(300))
            .await;
        println!(
            "  after the run: {} more, the last {:.1}s after it ended",
            seen - during,
            last.as_secs_f64()
        );
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
        if let (Some(sb), Some(label)) = (&sb, &label_b) {
            doc["b"] = json!({"url": label, "scenario": args_b.scenario, "results": sb.report()});
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
