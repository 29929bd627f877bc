//! Password hashing (argon2id) on a few threads of its own.
use crate::config::PasswordConfig;
use argon2::password_hash::{PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::Arc;

/// argon2id hashing on a small dedicated thread pool.
///
/// Why not tokio's blocking pool: each argon2 call allocates `argon2_memory_kib` (19 MiB by
/// default), and glibc keeps freed memory in per-thread arenas. Spread over the dozens of
/// threads a blocking pool grows to under load, that retained memory reached gigabytes in a
/// sign-in benchmark; on `max_concurrent_hashes` long-lived threads it stays at that many
/// buffers, and once no hash has been asked for [`KEEP_MEMORY`] they go back to the system.
/// Jobs queue in a channel, so a burst of sign-ins waits here and never occupies the async
/// workers that answer `get-session`.
#[derive(Clone)]
pub struct PasswordHasher {
    params: Params,
    jobs: std::sync::mpsc::Sender<Job>,
    /// A hash of a random password, verified against when a user does not exist, so an
    /// unknown email costs the same time as a wrong password.
    dummy: Arc<str>,
    /// argon2's working memory between hashes (the hashing threads hold it; kept here for
    /// the tests to look at).
    #[cfg(test)]
    memory: Arc<Memory>,
    /// Hashes waiting or running, and the time of each (see [`PasswordHasher::with_metrics`]).
    queue: Option<prometheus::IntGauge>,
    seconds: Option<prometheus::Histogram>,
}

/// Takes one hash off the queue gauge when dropped (also when the caller gave up waiting).
struct Queued(Option<prometheus::IntGauge>);

impl Drop for Queued {
    fn drop(&mut self) {
        if let Some(q) = &self.0 {
            q.dec();
        }
    }
}

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("invalid argon2 parameters: {0}")]
    Params(String),
    #[error("hashing failed: {0}")]
    Hash(String),
}

/// How long argon2's working memory is kept once no hash is asked for: a burst of sign-ins
/// reuses it (19 MiB a hashing thread by default), an idle server does not hold it.
const KEEP_MEMORY: std::time::Duration = std::time::Duration::from_secs(2);

/// argon2's working memory (one buffer of blocks per hash running, at most one per hashing
/// thread), kept between hashes so that a burst does not churn the allocator with 19 MiB
/// buffers, and let go when hashing has been idle (see [`KEEP_MEMORY`]).
#[derive(Default)]
struct Memory(std::sync::Mutex<Vec<Vec<argon2::Block>>>);

impl Memory {
    /// A buffer of at least `blocks` blocks: a kept one, or a new one.
    fn take(&self, blocks: usize) -> Vec<argon2::Block> {
        let kept = self.0.lock().ok().and_then(|mut v| v.pop());
        let mut b = kept.unwrap_or_default();
        if b.len() < blocks {
            b.resize(blocks, argon2::Block::default());
        }
        b
    }

    fn give_back(&self, b: Vec<argon2::Block>) {
        if let Ok(mut v) = self.0.lock() {
            v.push(b);
        }
    }

    /// Lets every kept buffer go (not the ones hashes are using).
    fn release(&self) {
        let kept = self.0.lock().map(|mut v| std::mem::take(&mut *v));
        drop(kept);
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.0.lock().map_or(0, |v| v.len())
    }
}

thread_local! {
    /// The working memory of the hasher this thread hashes for (none outside hashing threads:
    /// a buffer of its own each time).
    static MEMORY: std::cell::RefCell<Option<Arc<Memory>>> = const { std::cell::RefCell::new(None) };
}

impl PasswordHasher {
    pub fn new(cfg: &PasswordConfig) -> Result<Self, HashError> {
        Self::keeping_memory(cfg, KEEP_MEMORY)
    }

    /// [`PasswordHasher::new`], its working memory let go after `keep` without a hash.
    fn keeping_memory(cfg: &PasswordConfig, keep: std::time::Duration) -> Result<Self, HashError> {
        let params = Params::new(
            cfg.argon2_memory_kib,
            cfg.argon2_iterations,
            cfg.argon2_parallelism,
            None,
        )
        .map_err(|e| HashError::Params(e.to_string()))?;
        let threads = match cfg.max_concurrent_hashes {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        if !(0..=19).contains(&cfg.hash_thread_nice) {
            return Err(HashError::Params(
                "password.hash_thread_nice must be 0–19".into(),
            ));
        }
        let (nice, idle) = (cfg.hash_thread_nice, cfg.hash_thread_idle);
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let memory = Arc::new(Memory::default());
        for i in 0..threads {
            let rx = rx.clone();
            let memory = memory.clone();
            std::thread::Builder::new()
                .name(format!("gatehouse-hash-{i}"))
                .spawn(move || {
                    if nice > 0 {
                        lower_this_threads_priority(nice, "hashing");
                    }
                    if idle {
                        idle_this_thread();
                    }
                    MEMORY.with(|m| *m.borrow_mut() = Some(memory.clone()));
                    loop {
                        // The lock is held only while taking a job, not while running it: the
                        // thread holding it waits for the next job, the others for the lock.
                        let job = match rx.lock() {
                            Ok(r) => r.recv_timeout(keep),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            // No hash asked for in `keep`: nothing else is waiting for a job.
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => memory.release(),
                            // Every sender dropped: shut down.
                            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                    }
                })
                .map_err(|e| HashError::Hash(e.to_string()))?;
        }
        // The dummy hash is made on the pool too, so its buffer lands in a pool thread's arena.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let p = params.clone();
        tx.send(Box::new(move || {
            let _ = done_tx.send(hash_blocking(&p, &storage::random_string(24)));
        }))
        .map_err(|e| HashError::Hash(e.to_string()))?;
        let dummy = done_rx
            .recv()
            .map_err(|e| HashError::Hash(e.to_string()))??;
        Ok(Self {
            params,
            jobs: tx,
            dummy: dummy.into(),
            #[cfg(test)]
            memory,
            queue: None,
            seconds: None,
        })
    }

    /// Reports the queue depth and each hash's time to these metrics.
    pub fn with_metrics(
        mut self,
        queue: prometheus::IntGauge,
        seconds: prometheus::Histogram,
    ) -> Self {
        self.queue = Some(queue);
        self.seconds = Some(seconds);
        self
    }

    /// The PHC string of an argon2id hash of `password`.
    pub async fn hash(&self, password: String) -> Result<String, HashError> {
        let params = self.params.clone();
        self.run(move || hash_blocking(&params, &password)).await
    }

    /// Whether `password` matches the PHC string `hash`. A malformed hash never matches.
    pub async fn verify(&self, password: String, hash: String) -> Result<bool, HashError> {
        self.run(move || Ok(verify_blocking(&password, &hash)))
            .await
    }

    /// Spends the time of one verification and answers `false`.
    pub async fn verify_dummy(&self, password: String) -> Result<bool, HashError> {
        let dummy = self.dummy.to_string();
        self.verify(password, dummy).await.map(|_| false)
    }

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, HashError> + Send + 'static,
    ) -> Result<T, HashError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Some(q) = &self.queue {
            q.inc();
        }
        let _queued = Queued(self.queue.clone());
        let seconds = self.seconds.clone();
        self.jobs
            .send(Box::new(move || {
                let started = std::time::Instant::now();
                let out = f();
                if let Some(h) = &seconds {
                    h.observe(started.elapsed().as_secs_f64());
                }
                let _ = tx.send(out);
            }))
            .map_err(|e| HashError::Hash(e.to_string()))?;
        rx.await.map_err(|e| HashError::Hash(e.to_string()))?
    }
}

/// Puts the calling thread in the idle scheduling class (Linux `SCHED_IDLE`): it runs on a core
/// only when no other thread wants it, and a thread that wakes up takes the core at once.
/// Needs no privilege; where it still fails, the thread keeps its nice value and a warning
/// says so.
fn idle_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; the call reads `param` only.
        let done = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if done != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "could not put the hashing thread in the idle scheduling class"
            );
        }
    }
}

/// Raises the calling thread's nice value by `by` (Linux applies nice values per thread; at
/// most to 19). A higher nice value needs no privilege; where it still fails, the thread keeps
/// its priority and a warning says so.
pub(crate) fn lower_this_threads_priority(by: i32, what: &str) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; getpriority and setpriority read only their
        // integer arguments and concern this thread alone (PRIO_PROCESS with a thread id).
        let done = unsafe {
            let tid = libc::gettid() as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19))
        };
        if done != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "could not lower the {what} thread's priority"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (by, what);
}

/// argon2id of `password` with `salt` into `out`, in the working memory this thread's hasher
/// keeps.
fn argon2_into(
    algorithm: Algorithm,
    version: Version,
    params: &Params,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> Result<(), argon2::Error> {
    let argon = Argon2::new(algorithm, version, params.clone());
    let need = params.block_count();
    let memory = MEMORY.with(|m| m.borrow().clone()).unwrap_or_default();
    let mut blocks = memory.take(need);
    let done = argon.hash_password_into_with_memory(password, salt, out, &mut blocks[..need]);
    memory.give_back(blocks);
    done
}

fn hash_blocking(params: &Params, password: &str) -> Result<String, HashError> {
    let err = |e: &dyn std::fmt::Display| HashError::Hash(e.to_string());
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    let mut salt_buf = [0u8; 64];
    let salt_bytes = salt
        .as_salt()
        .decode_b64(&mut salt_buf)
        .map_err(|e| err(&e))?;
    let len = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
    let output = argon2::password_hash::Output::init_with(len, |out| {
        argon2_into(
            Algorithm::Argon2id,
            Version::V0x13,
            params,
            password.as_bytes(),
            salt_bytes,
            out,
        )
        .map_err(|_| argon2::password_hash::Error::Crypto)
    })
    .map_err(|e| err(&e))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: argon2::password_hash::ParamsString::try_from(params).map_err(|e| err(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(phc.to_string())
}

fn verify_blocking(password: &str, hash: &str) -> bool {
    // The parameters are read from the PHC string, so hashes made under older settings verify.
    let check = || -> Option<bool> {
        let parsed = PasswordHash::new(hash).ok()?;
        let algorithm = Algorithm::try_from(parsed.algorithm).ok()?;
        let version = match parsed.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::V0x13,
        };
        let params = Params::try_from(&parsed).ok()?;
        let expected = parsed.hash?;
        let mut salt_buf = [0u8; 64];
        let salt = parsed.salt?.decode_b64(&mut salt_buf).ok()?;
        let mut out = vec![0u8; expected.len()];
        argon2_into(
            algorithm,
            version,
            &params,
            password.as_bytes(),
            salt,
            &mut out,
        )
        .ok()?;
        // `Output` equality is constant-time.
        Some(argon2::password_hash::Output::new(&out).ok()? == expected)
    };
    check().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nice value in a `/proc/…/stat` line (`tid (comm) state ppid …`: the 19th field)
    /// and the thread's name.
    #[cfg(target_os = "linux")]
    fn nice_of(stat: &str) -> (String, i64) {
        let (head, rest) = stat.rsplit_once(')').unwrap();
        let name = head.split_once('(').unwrap().1.to_owned();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        (name, fields[16].parse().unwrap())
    }

    /// The nice values of this process's threads named `gatehouse-hash-*`.
    #[cfg(target_os = "linux")]
    fn hash_thread_nices() -> Vec<i64> {
        let mut out = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            let (name, nice) = nice_of(&stat);
            if name.starts_with("gatehouse-hash") {
                out.push(nice);
            }
        }
        out
    }

    /// The scheduling policy of the hashing thread that runs the next job of `h`.
    #[cfg(target_os = "linux")]
    fn policy_of_a_hashing_thread(h: &PasswordHasher) -> i32 {
        let (tx, rx) = std::sync::mpsc::channel();
        h.jobs
            .send(Box::new(move || {
                // SAFETY: pid 0 is the calling thread.
                let _ = tx.send(unsafe { libc::sched_getscheduler(0) });
            }))
            .unwrap();
        rx.recv().unwrap()
    }

    /// By default the hashing threads are in the idle scheduling class; turned off, they keep
    /// the normal one.
    #[cfg(target_os = "linux")]
    #[test]
    fn hashing_threads_are_idle_class_by_default() {
        let cfg = PasswordConfig {
            argon2_memory_kib: 1024,
            argon2_iterations: 1,
            max_concurrent_hashes: 2,
            ..PasswordConfig::default()
        };
        assert!(cfg.hash_thread_idle);
        let h = PasswordHasher::new(&cfg).unwrap();
        for _ in 0..4 {
            assert_eq!(policy_of_a_hashing_thread(&h), libc::SCHED_IDLE);
        }
        let h = PasswordHasher::new(&PasswordConfig {
            hash_thread_idle: false,
            ..cfg
        })
        .unwrap();
        for _ in 0..4 {
            assert_eq!(policy_of_a_hashing_thread(&h), libc::SCHED_OTHER);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn hashing_threads_run_at_the_configured_nice_value() {
        let cfg = PasswordConfig {
            argon2_memory_kib: 1024,
            argon2_iterations: 1,
            max_concurrent_hashes: 3,
            hash_thread_nice: 7,
            ..PasswordConfig::default()
        };
        // Seven above the process's own (whatever nice value the tests run at).
        let base = nice_of(&std::fs::read_to_string("/proc/self/stat").unwrap()).1;
        let want = (base + 7).min(19);
        let _h = PasswordHasher::new(&cfg).unwrap();
        let mut lowered = 0;
        for _ in 0..100 {
            lowered = hash_thread_nices().iter().filter(|n| **n == want).count();
            if lowered >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(lowered >= 3, "{want}: {:?}", hash_thread_nices());
        let bad = PasswordConfig {
            hash_thread_nice: 20,
            ..cfg
        };
        assert!(PasswordHasher::new(&bad).is_err());
    }

    /// A hash's working memory is kept for the next one, and let go once hashing has been
    /// idle for the keep time.
    #[tokio::test]
    async fn working_memory_is_kept_between_hashes_and_let_go_when_idle() {
        let cfg = PasswordConfig {
            argon2_memory_kib: 1024,
            argon2_iterations: 1,
            max_concurrent_hashes: 2,
            // Not starved by the other tests: the keep time counts from the last job taken.
            hash_thread_idle: false,
            ..PasswordConfig::default()
        };
        let keep = std::time::Duration::from_secs(1);
        let h = PasswordHasher::keeping_memory(&cfg, keep).unwrap();
        for _ in 0..3 {
            let hash = h.hash("pw".into()).await.unwrap();
            // Kept right after a hash (the dummy's buffer, reused since: one at a time).
            assert_eq!(h.memory.kept(), 1);
            assert!(h.verify("pw".into(), hash).await.unwrap());
        }
        let started = std::time::Instant::now();
        while h.memory.kept() > 0 {
            assert!(started.elapsed() < keep * 20, "still kept");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(started.elapsed() >= keep / 2, "let go at once");
        // Hashing goes on with memory of its own again.
        let hash = h.hash("pw".into()).await.unwrap();
        assert!(h.verify("pw".into(), hash).await.unwrap());
        assert_eq!(h.memory.kept(), 1);
    }

    #[tokio::test]
    async fn hash_and_verify() {
        let cfg = PasswordConfig {
            argon2_memory_kib: 1024,
            argon2_iterations: 1,
            ..PasswordConfig::default()
        };
        let h = PasswordHasher::new(&cfg).unwrap();
        let hash = h.hash("correct horse".into()).await.unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"));
        assert!(h
            .verify("correct horse".into(), hash.clone())
            .await
            .unwrap());
        assert!(!h.verify("wrong horse".into(), hash.clone()).await.unwrap());
        assert!(!h.verify("x".into(), "not a hash".into()).await.unwrap());
        assert!(!h.verify_dummy("x".into()).await.unwrap());
        // Interoperable with the standard PHC encoding of other argon2 implementations.
        use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
        let salt = SaltString::generate(&mut rand::rngs::OsRng);
        let standard = Argon2::default()
            .hash_password(b"interop pw", &salt)
            .unwrap()
            .to_string();
        assert!(h
            .verify("interop pw".into(), standard.clone())
            .await
            .unwrap());
        assert!(!h.verify("other pw".into(), standard).await.unwrap());
        let ours = PasswordHash::new(&hash).unwrap().to_string();
        assert!(Argon2::default()
            .verify_password(b"correct horse", &PasswordHash::new(&ours).unwrap())
            .is_ok());
    }
}
