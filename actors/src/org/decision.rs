//! How the organization actor decides and writes: a [`Decision`] made on one version of the
//! organization, written only while that version is current ([`guarded!`]), else made again.
use super::events::Answer;
use super::{OrgActor, OrgState};
use crate::{ActorError, Rule};
use storage::{OrgChange, Organization, StoreError};

/// What a decision writes: the organization's next row (its version one up) and the changes
/// under it; with the value to answer.
pub(crate) struct Decision<T> {
    pub(super) next: Organization,
    pub(super) changes: Vec<OrgChange>,
    pub(super) value: T,
    /// Nothing to write (e.g. resending a pending invitation).
    pub(super) unchanged: bool,
}

impl<T> Decision<T> {
    /// Changes made on `org` (as loaded), counters and settings adjusted by the caller.
    pub(super) fn on(org: Organization, changes: Vec<OrgChange>, value: T) -> Self {
        let mut next = org;
        next.version += 1;
        Self {
            next,
            changes,
            value,
            unchanged: false,
        }
    }

    /// An answer that writes nothing.
    pub(super) fn unchanged(org: Organization, value: T) -> Self {
        Self {
            next: org,
            changes: Vec::new(),
            value,
            unchanged: true,
        }
    }

    pub(super) fn with(mut self, edit: impl FnOnce(&mut Organization)) -> Self {
        edit(&mut self.next);
        self
    }
}

/// After writing a decision: done (written, or refused), or decide again.
pub(crate) enum Step<T> {
    Done(Result<T, ActorError>),
    Again,
}

/// `guarded!(self, state, |org| async { … })`: decides on the organization (the async block
/// sees it as `org` and answers a [`Decision`]) and writes the decision only if nobody changed
/// the organization meanwhile (compare-and-set on its version); otherwise — another process
/// got there first, or what the decision relied on is gone — reloads and decides again.
///
/// The first decision is made on the organization as this actor last read or wrote it, when
/// it has it (every other write in this process goes through this actor, so it is current
/// unless another process or a user's deletion wrote since): a write made on it proves that by
/// its version check. Only a decision that writes proves it — a refusal, or an answer that
/// writes nothing, made on that copy is made again on the organization read afresh. (A macro,
/// not a method taking an async closure: the actor's handler must be `Send`, which async
/// closures cannot promise yet.)
macro_rules! guarded {
    ($actor:expr, $state:ident, |$org:ident| $decide:expr) => {{
        let mut outcome = Err($crate::ActorError::Unavailable(
            "organization changed too often to apply the request".into(),
        ));
        let mut attempts = $crate::runtime::Attempts::new();
        let mut may_keep = true;
        while attempts.next().await {
            let (kept, $org) = match $actor
                .decide_on($state, ::std::mem::take(&mut may_keep))
                .await
            {
                Ok(o) => o,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            let decision: Result<$crate::org::Decision<_>, $crate::ActorError> = $decide.await;
            match decision {
                // Proven by nothing: made again on the organization as stored now.
                Ok(d) if kept && d.unchanged => attempts.again_now(),
                Err(_) if kept => attempts.again_now(),
                Ok(d) => match $actor.commit($state, d).await {
                    $crate::org::Step::Done(r) => {
                        outcome = r;
                        break;
                    }
                    $crate::org::Step::Again => continue,
                },
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        outcome
    }};
}
pub(crate) use guarded;

/// What a lost uniqueness claim means to the client.
fn conflict_error(what: &'static str) -> ActorError {
    let rule = match what {
        "slug" => Rule::SlugInUse,
        "member" | "team member" => Rule::AlreadyMember,
        "team" => Rule::TeamExists,
        "role" => Rule::RoleExists,
        // No longer pending.
        "invitation" => Rule::InvitationNotFound,
        other => return ActorError::Conflict(other),
    };
    ActorError::Refused(rule)
}

impl OrgActor {
    /// Writes a decision under the organization's version (see [`guarded!`]).
    pub(super) async fn commit<T: Answer>(&self, state: &mut OrgState, d: Decision<T>) -> Step<T> {
        let events = self.events_of(state, &d);
        if d.unchanged {
            // Nothing changes (an invitation sent again): what the request asked to keep and
            // send still is.
            return Step::Done(match self.shared.store.append_events(&events).await {
                Ok(()) => Ok(d.value),
                Err(e) => Err(e.into()),
            });
        }
        match self
            .shared
            .store
            .change_organization(&d.next, &d.changes, &events)
            .await
        {
            Ok(()) => {
                state.members.written(d.next.version, &d.changes);
                state.known = Some(d.next);
                Step::Done(Ok(d.value))
            }
            Err(StoreError::ConcurrentModification | StoreError::NotFound) => {
                state.known = None;
                Step::Again
            }
            Err(StoreError::Conflict(what)) => Step::Done(Err(conflict_error(what))),
            Err(e) => Step::Done(Err(e.into())),
        }
    }

    /// The organization as stored now.
    pub(super) async fn org(&self, state: &mut OrgState) -> Result<Organization, ActorError> {
        state.known = None;
        let org = self
            .shared
            .store
            .get_organization(&state.id)
            .await?
            .ok_or(ActorError::Refused(Rule::OrganizationNotFound))?;
        state.members.seen(org.version);
        state.known = Some(org.clone());
        Ok(org)
    }

    /// What a write decides on (see [`guarded!`]): the organization this actor last read or
    /// wrote when `may_keep` and it has it (`true` then), else as stored now.
    pub(super) async fn decide_on(
        &self,
        state: &mut OrgState,
        may_keep: bool,
    ) -> Result<(bool, Organization), ActorError> {
        if let Some(org) = state.known.as_ref().filter(|_| may_keep).cloned() {
            state.members.seen(org.version);
            return Ok((true, org));
        }
        Ok((false, self.org(state).await?))
    }
}
