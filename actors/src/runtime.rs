//! What every actor shares: the envelope a request travels in, idle passivation, and the call
//! path — spawn on demand, a bound on waiting requests, and no retry that could apply a change
//! twice.
//!
//! Each request carries a *ticket*. The actor takes it (queued → started) before any work; a
//! caller that gives up takes it first (queued → cancelled), and the actor then skips the
//! request. Exactly one side wins, so "the caller was told 503" means "nothing was applied",
//! and a request that had started is waited for instead of being reported as failed.
use crate::events::Ctx;
use crate::ActorError;
use ractor::{Actor, ActorRef, RpcReplyPort, SpawnErr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const QUEUED: u8 = 0;
const STARTED: u8 = 1;
const CANCELLED: u8 = 2;

/// What an actor's mailbox carries: a request with its ticket and what the request adds to
/// the decision (its audit records and mail, see `events`), or the idle timer's tick.
pub(crate) enum Envelope<M> {
    Call {
        ticket: Arc<AtomicU8>,
        msg: M,
        ctx: Arc<Ctx>,
    },
    IdleCheck,
}

/// Idle passivation: an actor that handled nothing for `timeout` stops itself, so memory
/// follows the active set of users and organizations, not all of them.
pub(crate) struct Idle {
    last_active: Instant,
    timeout: Duration,
}

impl Idle {
    /// Starts the idle timer of `myself` (it ends with the actor).
    pub(crate) fn start<M: Send + 'static>(
        myself: &ActorRef<Envelope<M>>,
        timeout: Duration,
    ) -> Self {
        myself.send_interval((timeout / 2).max(Duration::from_millis(10)), || {
            Envelope::IdleCheck
        });
        Self {
            last_active: Instant::now(),
            timeout,
        }
    }

    /// The request to handle now, if any: `None` for the idle tick (stopping the actor when it
    /// has been idle long enough) and for a request whose caller already gave up.
    pub(crate) fn open<M: Send + 'static>(
        &mut self,
        myself: &ActorRef<Envelope<M>>,
        envelope: Envelope<M>,
    ) -> Option<(M, Arc<Ctx>)> {
        match envelope {
            Envelope::IdleCheck => {
                if self.last_active.elapsed() >= self.timeout {
                    myself.stop(Some("idle".into()));
                }
                None
            }
            Envelope::Call { ticket, msg, ctx } => {
                self.last_active = Instant::now();
                ticket
                    .compare_exchange(QUEUED, STARTED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                    .then_some((msg, ctx))
            }
        }
    }
}

/// Requests waiting for (or being handled by) each actor, by name: beyond the bound a new one
/// is refused at once (`Overloaded`) instead of queueing without end.
#[derive(Default)]
pub(crate) struct Pending(Mutex<HashMap<String, usize>>);

/// One counted request; uncounted when dropped.
pub(crate) struct PendingGuard<'a> {
    pending: &'a Pending,
    name: String,
}

impl Pending {
    pub(crate) fn enter(&self, name: &str, max: usize) -> Result<PendingGuard<'_>, ActorError> {
        let mut map = self
            .0
            .lock()
            .map_err(|_| ActorError::Internal("pending map poisoned".into()))?;
        let n = map.entry(name.to_owned()).or_insert(0);
        if *n >= max {
            return Err(ActorError::Overloaded);
        }
        *n += 1;
        Ok(PendingGuard {
            pending: self,
            name: name.to_owned(),
        })
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut map) = self.pending.0.lock() {
            if let Some(n) = map.get_mut(&self.name) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    map.remove(&self.name);
                }
            }
        }
    }
}

/// How one request to a named actor is made (see [`crate::Actors::call`]).
pub(crate) struct CallSpec<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub timeout: Duration,
    pub supervisor: &'a ActorRef<()>,
    pub ctx: &'a Arc<Ctx>,
}

/// Sends a request to the actor registered as `spec.name`, spawning it under the supervisor
/// when it is not running, and waits for the answer (see the module documentation for what a
/// timeout means). A request that was never started — the send failed, or the actor stopped
/// (idle) before taking it — is sent again to a fresh actor; one that started is never resent.
pub(crate) async fn call<A, M, T>(
    spec: CallSpec<'_>,
    args: &A::Arguments,
    make: impl Fn() -> A,
    build: impl Fn(RpcReplyPort<Result<T, ActorError>>) -> M,
) -> Result<T, ActorError>
where
    A: Actor<Msg = Envelope<M>>,
    A::Arguments: Clone,
    M: Send + 'static,
    T: Send + 'static,
{
    let kind = spec.kind;
    let mut last = ActorError::Unavailable(format!("{kind} actor unavailable"));
    for attempt in 0..5u32 {
        if attempt > 0 {
            // The actor was stopping; give the registry a moment to forget its name.
            tokio::time::sleep(Duration::from_millis(2 << attempt)).await;
        }
        let actor = match ActorRef::<Envelope<M>>::where_is(spec.name) {
            Some(a) => a,
            None => match Actor::spawn_linked(
                Some(spec.name.to_owned()),
                make(),
                args.clone(),
                spec.supervisor.get_cell(),
            )
            .await
            {
                Ok((a, _)) => a,
                Err(SpawnErr::ActorAlreadyRegistered(_)) => {
                    match ActorRef::<Envelope<M>>::where_is(spec.name) {
                        Some(a) => a,
                        None => continue,
                    }
                }
                Err(e) => return Err(ActorError::Internal(e.to_string())),
            },
        };
        let ticket = Arc::new(AtomicU8::new(QUEUED));
        let (tx, mut rx) = ractor::concurrency::oneshot();
        let envelope = Envelope::Call {
            ticket: ticket.clone(),
            msg: build(tx.into()),
            ctx: spec.ctx.clone(),
        };
        if actor.send_message(envelope).is_err() {
            // Never enqueued.
            last = ActorError::Unavailable(format!("{kind} actor stopped"));
            continue;
        }
        match tokio::time::timeout(spec.timeout, &mut rx).await {
            Ok(Ok(result)) => return result,
            Ok(Err(_)) => {
                if ticket.load(Ordering::Acquire) == STARTED {
                    // It began (and crashed, or stopped) midway: resending could apply it twice.
                    return Err(ActorError::Unavailable(format!(
                        "{kind} actor stopped while handling the request"
                    )));
                }
                last = ActorError::Unavailable(format!("{kind} actor stopped"));
                continue;
            }
            Err(_) => {
                if ticket
                    .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Err(ActorError::Unavailable(format!(
                        "{kind} actor busy: request not started within the call timeout"
                    )));
                }
                // Already being handled: its outcome is the answer.
                return match tokio::time::timeout(spec.timeout, &mut rx).await {
                    Ok(Ok(result)) => result,
                    _ => Err(ActorError::Unavailable(format!(
                        "{kind} actor did not finish the request in time"
                    ))),
                };
            }
        }
    }
    Err(last)
}

/// How long a request keeps deciding again after losing compare-and-set races before it is
/// answered 503. A time, not a count: a process that loses keeps losing for as long as another
/// process streams its own queue of changes to the same organization or user, which lasts as
/// long as that queue, not a fixed number of rounds.
pub(crate) const CONTENTION_BUDGET: Duration = Duration::from_secs(5);

/// At least this many attempts, however slow each one is.
pub(crate) const MIN_ATTEMPTS: u32 = 16;

/// The attempts at a compare-and-set decision: until [`CONTENTION_BUDGET`] is spent (and at
/// least [`MIN_ATTEMPTS`]), with a short random pause before each retry that grows with every
/// lost race (up to 0.5 ms, 1 ms, … 16 ms), so that processes deciding on the same version at
/// the same moment fall out of step, while a loser is not left sleeping long enough for the
/// other process to win every round.
pub(crate) struct Attempts {
    made: u32,
    started: Instant,
}

impl Attempts {
    pub(crate) fn new() -> Self {
        Self {
            made: 0,
            started: Instant::now(),
        }
    }

    /// Whether another attempt may run (pausing first if it is a retry).
    pub(crate) async fn next(&mut self) -> bool {
        if self.made >= MIN_ATTEMPTS && self.started.elapsed() >= CONTENTION_BUDGET {
            return false;
        }
        if self.made > 0 {
            let cap_us = 500u64 << (self.made - 1).min(5);
            let pause = rand::Rng::gen_range(&mut rand::thread_rng(), 0..=cap_us);
            tokio::time::sleep(Duration::from_micros(pause)).await;
        }
        self.made += 1;
        true
    }

    /// The attempt just made does not count: the next one runs at once (it was not a lost
    /// race, only a decision to make again on fresher data).
    pub(crate) fn again_now(&mut self) {
        self.made = self.made.saturating_sub(1);
    }
}
