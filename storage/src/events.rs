//! The event stream: what each decision emits — its audit record, its domain events, the mail
//! it sends — written in the same store write as the change it describes, so that an event
//! exists exactly when its change does. Consumers (mail, webhooks, metrics…) read the stream
//! with their own progress, at least once and in order per aggregate, several processes sharing
//! the work through a lease per consumer and shard.
//!
//! Audit records are not read from the stream: a backend writes them to the audit log with the
//! change (or, where it cannot in one write, as soon as it knows the change happened), so they
//! are in [`crate::AuditStore::list_audit`] once the write returns.
use crate::audit::AuditEvent;
use crate::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One event a decision emits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Random (20 characters); an audit record keeps the id of its event.
    pub id: String,
    pub at: DateTime<Utc>,
    /// What the event belongs to (`user:{id}`, `org:{id}`, `server`): events of one aggregate
    /// are read in the order they were written, and live in one shard.
    pub aggregate: String,
    pub payload: Payload,
}

/// What an event says, by who reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "topic", rename_all = "lowercase", try_from = "PayloadWire")]
pub enum Payload {
    /// A record of the audit log, kept at least `keep_for_secs`.
    Audit {
        record: Box<AuditEvent>,
        keep_for_secs: u64,
    },
    /// A domain event: a stable name (`member.added`) and the object it is about, as JSON with
    /// no secret in it (no token, no hash): what webhooks deliver.
    Domain { name: String, data: Json },
    /// A message to send once the change is stored. It may hold a single-use link: only the
    /// mail consumer reads it.
    Mail { data: serde_json::Value },
}

/// The parts of the stream a consumer reads (audit records are not in it: see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    Domain,
    Mail,
}

impl Topic {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Domain => "domain",
            Self::Mail => "mail",
        }
    }
}

/// A JSON value kept as its text: an event's object is written once, when the decision
/// makes it, copied into the stored body as it is, and parsed only by a consumer that needs
/// its fields ([`Json::value`]) — not built as a tree to be serialized, nor read back as one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Json(Box<serde_json::value::RawValue>);

impl Json {
    /// `v` as JSON text (`null` if it cannot be: a map with keys that are not strings).
    pub fn of<T: Serialize + ?Sized>(v: &T) -> Self {
        serde_json::value::to_raw_value(v).map_or_else(|_| Self::null(), Self)
    }

    pub fn null() -> Self {
        Self(serde_json::value::RawValue::NULL.to_owned())
    }

    /// The text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Parsed (`Null` if the text is not JSON, which [`Json::of`] and a read never make).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.get()).unwrap_or_default()
    }
}

/// The same text (an object written from a struct and the same object parsed and written again
/// may differ in the order of their keys).
impl PartialEq for Json {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Self {
        Self::of(&v)
    }
}

/// A payload as stored: read as a plain struct and then told apart by its topic, so that
/// [`Json`] reads straight from the text (the tagged enum's derived reader would first copy
/// every field into a buffer of its own, where a raw value cannot be taken).
#[derive(Deserialize)]
struct PayloadWire {
    topic: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    data: Option<Json>,
    #[serde(default)]
    record: Option<Box<AuditEvent>>,
    #[serde(default)]
    keep_for_secs: Option<u64>,
}

impl TryFrom<PayloadWire> for Payload {
    type Error = String;

    fn try_from(w: PayloadWire) -> Result<Self, String> {
        let data = w.data.unwrap_or_else(Json::null);
        match w.topic.as_str() {
            "domain" => Ok(Self::Domain {
                name: w.name.ok_or("a domain event without its name")?,
                data,
            }),
            "mail" => Ok(Self::Mail { data: data.value() }),
            "audit" => Ok(Self::Audit {
                record: w.record.ok_or("an audit event without its record")?,
                keep_for_secs: w
                    .keep_for_secs
                    .ok_or("an audit event without keep_for_secs")?,
            }),
            other => Err(format!("an event of unknown topic {other:?}")),
        }
    }
}

impl Payload {
    /// The topic the event is read under (`None`: an audit record).
    pub fn topic(&self) -> Option<Topic> {
        match self {
            Self::Audit { .. } => None,
            Self::Domain { .. } => Some(Topic::Domain),
            Self::Mail { .. } => Some(Topic::Mail),
        }
    }
}

impl Event {
    pub fn new(aggregate: impl Into<String>, at: DateTime<Utc>, payload: Payload) -> Self {
        Self {
            id: crate::random_string(20),
            at,
            aggregate: aggregate.into(),
            payload,
        }
    }

    /// An audit record as an event of `aggregate` (it keeps the record's id and time).
    pub fn audit(aggregate: impl Into<String>, record: AuditEvent, keep_for_secs: u64) -> Self {
        Self {
            id: record.id.clone(),
            at: record.at,
            aggregate: aggregate.into(),
            payload: Payload::Audit {
                record: Box::new(record),
                keep_for_secs,
            },
        }
    }

    /// The audit record, if it is one.
    pub fn audit_record(&self) -> Option<&AuditEvent> {
        match &self.payload {
            Payload::Audit { record, .. } => Some(record),
            _ => None,
        }
    }

    /// The shard of `shards` the event's aggregate lives in.
    pub fn shard(&self, shards: u32) -> u32 {
        shard_of(&self.aggregate, shards)
    }
}

/// The shard of an aggregate: a stable hash (FNV-1a), the same in every process and build.
pub fn shard_of(aggregate: &str, shards: u32) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in aggregate.as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % shards.max(1)
}

/// An event's JSON (as stored) read for a consumer that needs only its name and aggregate
/// ([`EventStore::read_event_names`]): its payload's object is skipped, not built, and comes
/// as `Null`. An audit record, which has no name, is read whole.
pub fn event_without_data(json: &str) -> serde_json::Result<Event> {
    #[derive(Deserialize)]
    struct Named {
        id: String,
        at: DateTime<Utc>,
        aggregate: String,
        payload: NamedPayload,
    }
    #[derive(Deserialize)]
    struct NamedPayload {
        topic: String,
        #[serde(default)]
        name: String,
    }
    let e: Named = serde_json::from_str(json)?;
    let payload = match e.payload.topic.as_str() {
        "domain" => Payload::Domain {
            name: e.payload.name,
            data: Json::null(),
        },
        "mail" => Payload::Mail {
            data: serde_json::Value::Null,
        },
        _ => return serde_json::from_str(json),
    };
    Ok(Event {
        id: e.id,
        at: e.at,
        aggregate: e.aggregate,
        payload,
    })
}

/// An event as a consumer reads it: its place in its shard (what the consumer's progress
/// records) and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub position: String,
    pub event: Event,
}

/// What one read of a shard found: the events of the topic, and how far it read (the
/// position to record once they are handled; `None`: nothing new). A read may pass over
/// events of other topics, so `upto` can be beyond the last event's position.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Read {
    pub events: Vec<Delivery>,
    pub upto: Option<String>,
}

/// A consumer's hold on one shard: `holder` (a process) may read and advance it until
/// `until`; another holder takes over once it has passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The consumer (`mail`, `webhooks`…): its progress is its own.
    pub consumer: String,
    pub shard: u32,
    pub holder: String,
    pub now: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

/// The stream of events (see the module).
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Stores events that go with no other change: a refusal's audit record, a mail whose link
    /// needs nothing stored. All of them or none.
    async fn append_events(&self, events: &[Event]) -> StoreResult<()>;
    /// How many shards the stream has (fixed for a store).
    fn event_shards(&self) -> u32;
    /// Takes or renews `lease`: the position its consumer has reached in the shard (`None`:
    /// the beginning), or `Ok(None)` when another holder's lease has not expired.
    async fn claim_events(&self, lease: &Lease) -> StoreResult<Option<Option<String>>>;
    /// Events of `topic` in `shard` after `after` (`None`: the oldest kept; on a partitioned
    /// backend at most an hour back), oldest first,
    /// reading up to `limit` of the shard's entries. A backend that learns of some outcomes
    /// only after the change (see `scylla`) answers only what can no longer be preceded by an
    /// event it has not seen.
    async fn read_events(
        &self,
        topic: Topic,
        shard: u32,
        after: Option<&str>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<Read>;
    /// [`EventStore::read_events`] for a consumer that reads only each event's name and
    /// aggregate (metrics, cache invalidation): a backend may leave the payloads' objects out
    /// (`Null`; see [`event_without_data`]) — parsing them is most of a read's cost. The same
    /// events, positions and `upto`.
    async fn read_event_names(
        &self,
        topic: Topic,
        shard: u32,
        after: Option<&str>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> StoreResult<Read> {
        self.read_events(topic, shard, after, limit, now).await
    }
    /// The position of the newest event of `topic` in `shard` (`None`: none yet): where a
    /// consumer that wants only what comes from now on starts.
    async fn event_head(&self, topic: Topic, shard: u32) -> StoreResult<Option<String>>;
    /// Records that the lease's consumer handled its shard up to `position`, only while the
    /// lease is still held (`false`: it was lost, nothing recorded).
    async fn advance_events(&self, lease: &Lease, position: &str) -> StoreResult<bool>;
    /// Deletes events from before `before` (a backend that expires them itself does nothing).
    async fn purge_events(&self, before: DateTime<Utc>) -> StoreResult<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_stable_and_in_range() {
        assert_eq!(shard_of("org:abc", 8), shard_of("org:abc", 8));
        for a in ["user:1", "user:2", "org:x", "server", ""] {
            assert!(shard_of(a, 8) < 8);
            assert_eq!(shard_of(a, 1), 0);
        }
        // The FNV-1a of "a" (0xe40c292c): a change of hash would move aggregates' shards.
        assert_eq!(shard_of("a", u32::MAX), 0xe40c_292c);
    }

    #[test]
    fn payloads_round_trip_with_their_topic() {
        let e = Event::new(
            "org:1",
            DateTime::from_timestamp_millis(1_700_000_000_000).unwrap(),
            Payload::Domain {
                name: "member.added".into(),
                data: serde_json::json!({"id": "m", "n": [1, {"b": null}]}).into(),
            },
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["payload"]["topic"], "domain");
        assert_eq!(
            json["payload"]["data"]["n"][0], 1,
            "the object, not its text"
        );
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), e);
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), e);
        let Payload::Domain { data, .. } = serde_json::from_str::<Event>(&text).unwrap().payload
        else {
            panic!("not a domain event")
        };
        assert_eq!(data.value()["n"][1], serde_json::json!({"b": null}));
        // Read without its object: the same event with `data` null.
        let text = serde_json::to_string(&e).unwrap();
        let named = event_without_data(&text).unwrap();
        assert_eq!(
            named.payload,
            Payload::Domain {
                name: "member.added".into(),
                data: Json::null()
            }
        );
        assert_eq!(
            (named.id.as_str(), named.at, named.aggregate.as_str()),
            (e.id.as_str(), e.at, "org:1")
        );
        let mail = Event::new(
            "user:2",
            e.at,
            Payload::Mail {
                data: serde_json::json!({"to": "x"}),
            },
        );
        let text = serde_json::to_string(&mail).unwrap();
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), mail);
        let named = event_without_data(&text).unwrap();
        assert_eq!(
            named.payload,
            Payload::Mail {
                data: serde_json::Value::Null
            }
        );
        let a = Event::audit("user:1", AuditEvent::new("user.sign-in", e.at), 60);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), a);
        assert!(serde_json::from_str::<Event>(&text.replace("\"audit\"", "\"x\"")).is_err());
        assert_eq!(
            event_without_data(&text).unwrap(),
            a,
            "an audit record is read whole"
        );
        assert_eq!(a.payload.topic(), None);
        assert_eq!(a.id, a.audit_record().unwrap().id);
    }
}
