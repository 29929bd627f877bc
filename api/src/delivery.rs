//! Mail after the commit: a decision stores the mail it sends as an event with its change
//! ([`MailJob`]); the request then delivers it at once and marks it sent. Should the process
//! die in between (or the delivery fail), the mail consumer — one process at a time, through
//! the event stream's lease — delivers every mail event that is older than a grace period and
//! not marked sent, so a stored decision's mail is never lost (and sent twice only when a
//! process died between sending and marking).
use crate::mail::{MailJob, Mailer};
use actors::consumers::{Consume, ConsumerSpec};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::{Clock, Delivery, Payload, Topic};
use tokio::sync::Notify;

/// The marker of a sent mail: `mail-sent:{job id}`, kept a week.
const SENT_PREFIX: &str = "mail-sent:";
const SENT_KEPT_DAYS: i64 = 7;
/// A mail the consumer failed to deliver this many rounds is given up (and counted failed).
const ATTEMPTS: u32 = 5;

/// The mail service: what a request asks its decision to send, and sending it after the
/// answer. Cheap to clone.
#[derive(Clone)]
pub struct Mail {
    mailer: Arc<Mailer>,
    actors: actors::Actors,
    after: Arc<AfterAnswer>,
}

/// Work a request left for after its answer, counted so that [`Mail::settled`] can wait for it.
#[derive(Default)]
struct AfterAnswer {
    running: AtomicUsize,
    done: Notify,
}

impl Mail {
    pub fn new(mailer: Arc<Mailer>, actors: actors::Actors) -> Self {
        Self {
            mailer,
            actors,
            after: Arc::default(),
        }
    }

    /// Runs `work` — looking an address up, storing what goes with its mail, sending it — after
    /// the request's answer: a route that mails "if the address has an account" answers the
    /// same, in the same time, for every address. A failure is logged (`what` names the work).
    pub fn after_answer<F>(&self, what: &'static str, work: F)
    where
        F: Future<Output = crate::error::ApiResult<()>> + Send + 'static,
    {
        let after = self.after.clone();
        after.running.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            if let Err(e) = work.await {
                tracing::warn!(error = ?e, what, "mail after the answer failed");
            }
            if after.running.fetch_sub(1, Ordering::SeqCst) == 1 {
                after.done.notify_waiters();
            }
        });
    }

    /// Waits until the work left for after the answers is done (tests; a graceful stop).
    pub async fn settled(&self) {
        loop {
            let done = self.after.done.notified();
            if self.after.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            done.await;
        }
    }

    /// Whether any sender is configured (`mail.transport` is not `none`).
    pub fn enabled(&self) -> bool {
        self.mailer.enabled()
    }

    /// Delivers mail a decision stored (in order, after the decision's answer): waits for the
    /// outbox, hands SMTP delivery to a task. A failure is logged, not answered: the mail
    /// consumer delivers it later.
    pub async fn deliver(&self, jobs: &[MailJob]) {
        if !jobs.is_empty() && storage::failpoint::hit("abort-before-mail") {
            std::process::abort();
        }
        for job in jobs {
            if self.mailer.is_remote() {
                let (mailer, actors) = (self.mailer.clone(), self.actors.clone());
                let job = job.clone();
                tokio::spawn(async move { send_and_mark(&mailer, &actors, &job).await });
            } else {
                send_and_mark(&self.mailer, &self.actors, job).await;
            }
        }
    }

    /// The request's context with `jobs` to send once its decision is stored.
    pub fn mailing(&self, mut ctx: actors::Ctx, jobs: &[MailJob]) -> actors::Ctx {
        ctx.mail.extend(jobs.iter().map(MailJob::value));
        ctx
    }

    /// Sends mail that goes with no change (its record stored first, then delivered).
    pub async fn mail_alone(&self, jobs: &[MailJob]) -> crate::error::ApiResult<()> {
        self.actors
            .record(&self.mailing(actors::Ctx::default(), jobs))
            .await?;
        self.deliver(jobs).await;
        Ok(())
    }
}

/// Delivers and marks the job sent; whether it was.
async fn send_and_mark(mailer: &Mailer, actors: &actors::Actors, job: &MailJob) -> bool {
    if let Err(e) = mailer.deliver(job).await {
        tracing::warn!(kind = job.kind.name(), error = %e, "mail not delivered now; the mail consumer retries it");
        return false;
    }
    let marker = format!("{SENT_PREFIX}{}", job.id);
    if let Err(e) = actors
        .remember(&marker, chrono::Duration::days(SENT_KEPT_DAYS))
        .await
    {
        tracing::warn!(error = %e, "a sent mail could not be marked sent; it may be sent again");
    }
    true
}

/// The mail consumer (see the module).
pub(crate) struct MailConsumer {
    pub(crate) mailer: Arc<Mailer>,
    pub(crate) actors: actors::Actors,
    pub(crate) reader: actors::Reader,
    pub(crate) clock: Arc<dyn Clock>,
    /// How long a request has to deliver its own mail before the consumer does.
    pub(crate) grace: chrono::Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl MailConsumer {
    pub(crate) fn new(
        mailer: Arc<Mailer>,
        actors: &actors::Actors,
        clock: Arc<dyn Clock>,
        redeliver_after: Duration,
    ) -> Self {
        let grace = if mailer.is_remote() {
            redeliver_after.max(mailer.longest_delivery() + Duration::from_secs(1))
        } else {
            redeliver_after
        };
        Self {
            mailer,
            actors: actors.clone(),
            reader: actors.reader(),
            clock,
            grace: chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::minutes(1)),
            failures: Mutex::default(),
        }
    }

    pub(crate) fn spec(redeliver_after: Duration) -> ConsumerSpec {
        ConsumerSpec {
            name: "mail".into(),
            topic: Topic::Mail,
            batch: 100,
            poll: (redeliver_after / 4).clamp(Duration::from_millis(200), Duration::from_secs(5)),
            lease: Duration::from_secs(30),
            shared: true,
            names_only: false,
        }
    }
}

#[async_trait::async_trait]
impl Consume for MailConsumer {
    async fn handle(&self, events: &[Delivery]) -> usize {
        let now = self.clock.now();
        for (i, d) in events.iter().enumerate() {
            if d.event.at + self.grace > now {
                return i;
            }
            let Payload::Mail { data } = &d.event.payload else {
                continue;
            };
            let Ok(job) = serde_json::from_value::<MailJob>(data.clone()) else {
                tracing::error!(event = %d.event.id, "a mail event that is not a mail job: skipped");
                continue;
            };
            let marker = format!("{SENT_PREFIX}{}", job.id);
            match self.reader.get_verification(&marker).await {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "mail consumer: cannot tell whether a mail was sent");
                    return i;
                }
            }
            if send_and_mark(&self.mailer, &self.actors, &job).await {
                tracing::info!(
                    kind = job.kind.name(),
                    "mail consumer delivered a mail its request had not"
                );
                continue;
            }
            let tries = {
                let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
                let n = f.entry(job.id.clone()).or_insert(0);
                *n += 1;
                *n
            };
            if tries < ATTEMPTS {
                return i;
            }
            tracing::error!(
                kind = job.kind.name(),
                "mail given up after {ATTEMPTS} rounds"
            );
        }
        events.len()
    }
}
