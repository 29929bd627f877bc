//! The event stream on CQL (see `crate::events`). A change here is one or more lightweight
//! transactions on its own partition, and CQL has no transaction spanning partitions, so a
//! decision's events cannot share its write. Instead each decision is a row of `event_log`,
//! written **before** the change as `pending`, with a *probe*: how to tell from the store
//! whether the change happened. Then:
//! - the change applied: the row becomes `done` in one logged batch with its audit records
//!   (so they are in the audit log once the write returns);
//! - it certainly did not (a condition failed, a conflict): the row becomes `void`;
//! - the outcome is unknown (a timeout, the process died): the row stays `pending`, and the
//!   first reader that finds it older than [`RESOLVE_AFTER`] asks the probe and settles it
//!   (writing its audit records when it applied).
//!
//! Readers walk a shard in time order and stop at a younger pending row, so no event is passed
//! over before its decision is known; a decision's row is written before its change, so a row
//! whose time a reader has passed can only come from a write older than [`SETTLE`] that has
//! not finished (a CQL write is answered or timed out well within it).
//!
//! Probes are exact for versioned decisions (an organization's or a user's row records which
//! decision made each version, for a day) and for rows only the decision could create or
//! delete; a row created by a decision and deleted again before an unknown outcome is settled
//! reads as not applied.
use super::*;
use crate::events::{Delivery, Event, EventStore, Lease, Payload, Read, Topic};
use crate::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Shards of the stream: a consumer's lease and progress are per shard.
pub(crate) const SHARDS: u32 = 8;
/// Rows of a shard are partitioned by this much time (milliseconds): ten minutes.
const BUCKET_MS: i64 = 600_000;
/// A reader reads rows at least this old (milliseconds): see the module.
const SETTLE: i64 = 5_000;
/// A pending row older than this (milliseconds) is settled by its reader through its probe.
pub(crate) const RESOLVE_AFTER: i64 = 30_000;
/// How long a version keeps the id of the decision that made it (seconds).
pub(crate) const DECISION_TTL: i32 = 86_400;
/// How far back a consumer without progress starts (milliseconds): an hour — what a consumer
/// that never ran needs is what was decided since its deployment started, not the week the
/// rows are kept (walking that would cost a thousand reads per shard).
const FRESH_MS: i64 = 3_600_000;
/// The most buckets one read walks (six hours): a consumer far behind records its progress
/// between reads instead of walking a week of buckets at once.
const WALK: i64 = 36;

/// How to tell whether a decision's change happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Probe {
    /// Nothing can fail once the row is written (events on their own).
    Always,
    /// The organization's row records this decision for `version`.
    OrgDecision {
        org: String,
        version: u64,
    },
    /// The user's row records this decision for `version`.
    UserDecision {
        user: String,
        version: u64,
    },
    OrgExists {
        org: String,
    },
    OrgGone {
        org: String,
    },
    UserExists {
        user: String,
    },
    UserGone {
        user: String,
    },
    SessionExists {
        token: String,
    },
    SessionGone {
        token: String,
    },
    AccountExists {
        user: String,
        provider: String,
        account: String,
    },
    /// The account's password is this one (a compare-and-set of the password).
    AccountPassword {
        user: String,
        provider: String,
        account: String,
        password: String,
    },
    VerificationExists {
        identifier: String,
    },
    /// The user's second factor records this decision for `version`.
    TwoFactorDecision {
        user: String,
        version: u64,
    },
    TwoFactorGone {
        user: String,
    },
    /// The passkey of this credential records this decision for `version`.
    PasskeyDecision {
        credential: String,
        version: u64,
    },
    /// The API key records this decision for `version`.
    ApiKeyDecision {
        id: String,
        version: u64,
    },
    ApiKeyGone {
        id: String,
    },
    /// The webhook endpoint records this decision for `version`.
    WebhookDecision {
        id: String,
        version: u64,
    },
    WebhookGone {
        id: String,
    },
}

/// A decision's row, ready to be written: its key, and the decision id the probe looks for.
pub(crate) struct Decision {
    pub(crate) id: String,
    shard: u32,
    bucket: i64,
    at: i64,
}

impl Decision {
    /// The `decisions[version] = id` write a versioned change adds to its conditional batch.
    pub(crate) fn stamp(
        &self,
        store: &ScyllaStore,
        table: &str,
        key: (&str, &str),
        version: u64,
    ) -> (String, Vec<V>) {
        (
            format!(
                "UPDATE {} USING TTL {DECISION_TTL} SET decisions[?] = ? WHERE {} = ?",
                store.t(table),
                key.0
            ),
            vec![big(version as i64), text(&self.id), text(key.1)],
        )
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// The time of a new decision's row: the clock, but always after this process's previous
/// decision, so that decisions made one after another (as an actor makes an aggregate's)
/// are read in that order even within one millisecond.
fn next_at() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = now_ms();
    let prev = LAST
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(now);
    now.max(prev + 1)
}

fn position(bucket: i64, at: i64, id: &str) -> String {
    format!("{bucket}.{at}.{id}")
}

fn parse_position(p: &str) -> StoreResult<(i64, i64, String)> {
    let mut parts = p.splitn(3, '.');
    let (Some(b), Some(a), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(StoreError::Internal(format!(
            "not an event position: {p:?}"
        )));
    };
    match (b.parse(), a.parse()) {
        (Ok(b), Ok(a)) => Ok((b, a, id.to_owned())),
        _ => Err(StoreError::Internal(format!(
            "not an event position: {p:?}"
        ))),
    }
}

/// One row of `event_log` as read.
struct LogRow {
    at: i64,
    id: String,
    state: String,
    probe: String,
    events: String,
}

impl ScyllaStore {
    /// Runs `change` as a decision with `events` (see the module): `keep` says whether an
    /// answer means the change happened (a delete that found nothing did not).
    pub(crate) async fn decide<T, F>(
        &self,
        events: &[Event],
        probe: impl FnOnce(&Decision) -> Probe,
        keep: fn(&T) -> bool,
        change: impl FnOnce(Option<Decision>) -> F,
    ) -> StoreResult<T>
    where
        F: std::future::Future<Output = StoreResult<T>>,
    {
        let Some(first) = events.first() else {
            return change(None).await;
        };
        let at = next_at();
        let d = Decision {
            id: crate::random_string(20),
            shard: first.shard(SHARDS),
            bucket: at.div_euclid(BUCKET_MS),
            at,
        };
        let probe = serde_json::to_string(&probe(&d)).map_err(internal)?;
        let body = serde_json::to_string(events).map_err(internal)?;
        self.exec(
            &format!(
                "INSERT INTO {} (shard, bucket, at, id, state, probe, events) \
                 VALUES (?, ?, ?, ?, 'pending', ?, ?)",
                self.t("event_log")
            ),
            vec![
                int(d.shard as i32),
                big(d.bucket),
                big(d.at),
                text(&d.id),
                text(&probe),
                text(&body),
            ],
        )
        .await?;
        let (shard, bucket, id) = (d.shard, d.bucket, d.id.clone());
        match change(Some(d)).await {
            Ok(_) if mails(events) && crate::failpoint::hit("abort-before-settle") => {
                std::process::abort()
            }
            Ok(v) => {
                let settled = if keep(&v) {
                    self.settle(shard, bucket, at, &id, events, true).await
                } else {
                    self.settle(shard, bucket, at, &id, &[], false).await
                };
                if let Err(e) = settled {
                    // Its reader settles it later, through the probe.
                    tracing::warn!(error = %e, "recording a decision's outcome failed");
                }
                Ok(v)
            }
            // Unknown outcome: left pending for the probe.
            Err(e @ StoreError::Unavailable(_)) => Err(e),
            Err(e) => {
                if let Err(e) = self.settle(shard, bucket, at, &id, &[], false).await {
                    tracing::warn!(error = %e, "recording a refused decision failed");
                }
                Err(e)
            }
        }
    }

    /// Marks a decision's row `done` with its audit records written, or `void`.
    async fn settle(
        &self,
        shard: u32,
        bucket: i64,
        at: i64,
        id: &str,
        events: &[Event],
        done: bool,
    ) -> StoreResult<()> {
        let mut writes = vec![(
            format!(
                "UPDATE {} SET state = ? WHERE shard = ? AND bucket = ? AND at = ? AND id = ?",
                self.t("event_log")
            ),
            vec![
                text(if done { "done" } else { "void" }),
                int(shard as i32),
                big(bucket),
                big(at),
                text(id),
            ],
        )];
        if done {
            for e in events {
                if let Payload::Audit {
                    record,
                    keep_for_secs,
                } = &e.payload
                {
                    writes.extend(
                        self.audit_writes(record, std::time::Duration::from_secs(*keep_for_secs))?,
                    );
                }
            }
        }
        self.batch(writes).await
    }

    /// Whether the change a probe describes happened.
    async fn probe(&self, probe: &Probe, decision: &str) -> StoreResult<bool> {
        let exists = |table: &'static str, key: &'static str, value: String| async move {
            Ok::<bool, StoreError>(
                self.row(
                    &format!("SELECT {key} FROM {} WHERE {key} = ?", self.t(table)),
                    vec![text(&value)],
                )
                .await?
                .is_some(),
            )
        };
        Ok(match probe {
            Probe::Always => true,
            Probe::OrgDecision { org, version } => {
                self.decision_of("org_rows", "org_id", org, *version)
                    .await?
                    == Some(decision.into())
            }
            Probe::UserDecision { user, version } => {
                self.decision_of("users", "id", user, *version).await? == Some(decision.into())
            }
            Probe::OrgExists { org } => self.get_organization(&OrgId(org.clone())).await?.is_some(),
            Probe::OrgGone { org } => self.get_organization(&OrgId(org.clone())).await?.is_none(),
            Probe::TwoFactorDecision { user, version } => {
                self.decision_of("two_factors", "user_id", user, *version)
                    .await?
                    == Some(decision.into())
            }
            Probe::TwoFactorGone { user } => {
                !exists("two_factors", "user_id", user.clone()).await?
            }
            Probe::PasskeyDecision {
                credential,
                version,
            } => {
                self.decision_of("passkeys", "credential_id", credential, *version)
                    .await?
                    == Some(decision.into())
            }
            Probe::ApiKeyDecision { id, version } => {
                self.decision_of("api_keys", "id", id, *version).await? == Some(decision.into())
            }
            Probe::ApiKeyGone { id } => !exists("api_keys", "id", id.clone()).await?,
            Probe::WebhookDecision { id, version } => {
                self.decision_of("webhooks", "id", id, *version).await? == Some(decision.into())
            }
            Probe::WebhookGone { id } => !exists("webhooks", "id", id.clone()).await?,
            Probe::UserExists { user } => exists("users", "id", user.clone()).await?,
            Probe::UserGone { user } => !exists("users", "id", user.clone()).await?,
            Probe::SessionExists { token } => {
                exists("sessions", "session_token", token.clone()).await?
            }
            Probe::SessionGone { token } => {
                !exists("sessions", "session_token", token.clone()).await?
            }
            Probe::VerificationExists { identifier } => {
                exists("verifications", "identifier", identifier.clone()).await?
            }
            Probe::AccountExists {
                user,
                provider,
                account,
            } => self
                .account_password(user, provider, account)
                .await?
                .is_some(),
            Probe::AccountPassword {
                user,
                provider,
                account,
                password,
            } => self
                .account_password(user, provider, account)
                .await?
                .flatten()
                .is_some_and(|p| &p == password),
        })
    }

    /// The decision recorded for `version` of a row (at the serial consistency: it was written
    /// by a lightweight transaction).
    async fn decision_of(
        &self,
        table: &str,
        key: &str,
        value: &str,
        version: u64,
    ) -> StoreResult<Option<String>> {
        let rows = super::rows_of(
            self.exec_serial(
                &format!(
                    "SELECT decisions[?] FROM {} WHERE {key} = ? LIMIT 1",
                    self.t(table)
                ),
                vec![big(version as i64), text(value)],
            )
            .await?,
        )?;
        Ok(rows.first().and_then(|r| Cols(r).otext(0)))
    }

    /// The rows of one bucket of a shard after `after` (time, id), up to `until`, oldest first.
    async fn log_rows(
        &self,
        shard: u32,
        bucket: i64,
        after: Option<(i64, &str)>,
        until: i64,
        limit: u32,
    ) -> StoreResult<Vec<LogRow>> {
        let (cond, mut values) = match after {
            Some((at, id)) => (
                " AND (at, id) > (?, ?)",
                vec![int(shard as i32), big(bucket), big(at), text(id)],
            ),
            None => ("", vec![int(shard as i32), big(bucket)]),
        };
        values.push(big(until));
        values.push(int(limit.min(10_000) as i32));
        self.rows(
            &format!(
                "SELECT at, id, state, probe, events FROM {} WHERE shard = ? AND bucket = ?{cond} \
                 AND at <= ? ORDER BY at, id LIMIT ?",
                self.t("event_log")
            ),
            values,
        )
        .await?
        .iter()
        .map(|r| {
            let c = Cols(r);
            Ok(LogRow {
                at: c.big(0),
                id: c.text(1)?,
                state: c.otext(2).unwrap_or_default(),
                probe: c.otext(3).unwrap_or_default(),
                events: c.otext(4).unwrap_or_default(),
            })
        })
        .collect()
    }
}

#[async_trait]
impl EventStore for ScyllaStore {
    async fn append_events(&self, events: &[Event]) -> StoreResult<()> {
        self.decide(
            events,
            |_| Probe::Always,
            |_: &()| true,
            |_| async { Ok(()) },
        )
        .await
    }

    fn event_shards(&self) -> u32 {
        SHARDS
    }

    async fn claim_events(&self, lease: &Lease) -> StoreResult<Option<Option<String>>> {
        let table = self.t("event_consumers");
        let key = vec![text(&lease.consumer), int(lease.shard as i32)];
        let current = super::rows_of(
            self.exec_serial(
                &format!(
                    "SELECT holder, lease_until, position FROM {table} \
                     WHERE consumer = ? AND shard = ?"
                ),
                key.clone(),
            )
            .await?,
        )?;
        let until = big(lease.until.timestamp_millis());
        let took = match current.first().map(Cols) {
            None => {
                self.lwt(
                    &format!(
                        "INSERT INTO {table} (consumer, shard, holder, lease_until) \
                         VALUES (?, ?, ?, ?) IF NOT EXISTS"
                    ),
                    vec![key[0].clone(), key[1].clone(), text(&lease.holder), until],
                )
                .await?
            }
            Some(c) => {
                let holder = c.otext(0).unwrap_or_default();
                if holder != lease.holder && c.big(1) > lease.now.timestamp_millis() {
                    return Ok(None);
                }
                self.lwt(
                    &format!(
                        "UPDATE {table} SET holder = ?, lease_until = ? \
                         WHERE consumer = ? AND shard = ? IF holder = ? AND lease_until = ?"
                    ),
                    vec![
                        text(&lease.holder),
                        until,
                        key[0].clone(),
                        key[1].clone(),
                        text(&holder),
                        big(c.big(1)),
                    ],
                )
                .await?
            }
        };
        if !took {
            return Ok(None);
        }
        Ok(Some(current.first().and_then(|r| Cols(r).otext(2))))
    }

    /// Walks the shard's buckets from `after`, settling old pending rows and stopping at a
    /// young one (see the module). Every row walked counts as read, also one without an event
    /// of `topic`.
    async fn read_events(
        &self,
        topic: Topic,
        shard: u32,
        after: Option<&str>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<Read> {
        let now = now.timestamp_millis().max(now_ms());
        let until = now - SETTLE;
        let (mut bucket, mut from) = match after {
            Some(p) => {
                let (b, at, id) = parse_position(p)?;
                (b, Some((at, id)))
            }
            None => ((now - FRESH_MS).div_euclid(BUCKET_MS), None),
        };
        let last = until.div_euclid(BUCKET_MS).min(bucket + WALK);
        let mut out = Vec::new();
        let mut upto = None;
        let mut walked = 0u32;
        while bucket <= last && walked < limit {
            let rows = self
                .log_rows(
                    shard,
                    bucket,
                    from.as_ref().map(|(a, i)| (*a, i.as_str())),
                    until,
                    limit - walked,
                )
                .await?;
            let full = rows.len() as u32 >= limit - walked;
            for row in rows {
                walked += 1;
                let mut state = row.state.clone();
                if state == "pending" {
                    if now - row.at < RESOLVE_AFTER {
                        return Ok(Read { events: out, upto });
                    }
                    let probe: Probe = serde_json::from_str(&row.probe).map_err(internal)?;
                    let applied = self.probe(&probe, &row.id).await?;
                    let events: Vec<Event> = serde_json::from_str(&row.events).map_err(internal)?;
                    self.settle(shard, bucket, row.at, &row.id, &events, applied)
                        .await?;
                    state = if applied { "done" } else { "void" }.into();
                }
                let pos = position(bucket, row.at, &row.id);
                from = Some((row.at, row.id.clone()));
                upto = Some(pos.clone());
                if state != "done" {
                    continue;
                }
                let events: Vec<Event> = serde_json::from_str(&row.events).map_err(internal)?;
                out.extend(
                    events
                        .into_iter()
                        .filter(|e| e.payload.topic() == Some(topic))
                        .map(|event| Delivery {
                            position: pos.clone(),
                            event,
                        }),
                );
            }
            if !full {
                bucket += 1;
                from = None;
                // An empty bucket walked is read too: the next read starts after it.
                if bucket <= last {
                    upto = Some(position(bucket, 0, ""));
                }
            }
        }
        Ok(Read { events: out, upto })
    }

    /// The start of the bucket a moment ago: a reader starting there sees every event that is
    /// not yet readable (see the module), and a few that are.
    async fn event_head(&self, _topic: Topic, _shard: u32) -> StoreResult<Option<String>> {
        let bucket = (now_ms() - SETTLE - RESOLVE_AFTER).div_euclid(BUCKET_MS);
        Ok(Some(position(bucket, 0, "")))
    }

    async fn advance_events(&self, lease: &Lease, position: &str) -> StoreResult<bool> {
        self.lwt(
            &format!(
                "UPDATE {} SET position = ? WHERE consumer = ? AND shard = ? IF holder = ?",
                self.t("event_consumers")
            ),
            vec![
                text(position),
                text(&lease.consumer),
                int(lease.shard as i32),
                text(&lease.holder),
            ],
        )
        .await
    }

    /// Rows expire by themselves (the table's time to live).
    async fn purge_events(&self, _before: DateTime<Utc>) -> StoreResult<u64> {
        Ok(0)
    }
}

/// Whether a decision sends mail.
fn mails(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e.payload, Payload::Mail { .. }))
}

pub(super) fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(e.to_string())
}
