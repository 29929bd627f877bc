//! The ScyllaDB backend (also runs on Apache Cassandra 5, the stand-in the tests use): the same
//! storage traits as the embedded SQLite backend, on CQL tables keyed for their access paths.
//!
//! How the invariants hold across processes, with no multi-partition transaction:
//! - **Claims** (an email, a slug, a provider account, a session token, a single-use value) are
//!   lightweight transactions: `INSERT … IF NOT EXISTS`, released with `DELETE … IF <owner>`.
//!   Writes that span partitions claim first, then write data, and are idempotent on retry.
//! - **An organization is one partition** (`org_rows`): the organization's own fields are static
//!   columns, its members, invitations, teams, team members and roles clustering rows. Every
//!   change is one conditional batch on that partition (`IF version = ?`): atomic and isolated,
//!   so the last-owner rule, the membership limit, role-in-use and the last team hold when
//!   several processes write at once. Lookups by other keys (slug, user, invitation, team) are
//!   separate tables, written after the claim and repaired lazily: a lookup that points at a
//!   row that is gone reads as nothing.
//! - **A user's row** carries its version, compare-and-set by every decision on the user.
//! - Tables with lightweight transactions are written only with them (mixing LWT and plain
//!   writes on one row is not linearizable); lookup tables only with plain, idempotent writes.
//! - Sessions and single-use values carry a TTL (reads also check `expires_at`), so purging is
//!   a no-op here.
//!
//! `[applied]` is read as the first column of the first row: Cassandra and ScyllaDB answer a
//! conditional statement with different columns after it.
//!
//! Files: `schema.rs` (keyspace and tables, versioned), `users.rs` (users, accounts),
//! `sessions.rs` (session reads coalesced by `coalesce.rs`), `verifications.rs`,
//! `organizations.rs`, `keys.rs`.
mod api_keys;
mod audit;
mod coalesce;
mod invitations;
mod keys;
mod members;
mod org_store;
mod organizations;
mod passkeys;
mod rate_limits;
mod roles;
mod scan;
mod schema;
mod sessions;
mod stream;
mod teams;
pub mod testing;
mod two_factor;
mod users;
mod verifications;
mod webhooks;

use crate::{StoreError, StoreResult};
use chrono::{DateTime, Utc};
use scylla::client::caching_session::CachingSession;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::ExecutionError;
use scylla::response::query_result::QueryResult;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::unprepared::Statement;
use scylla::value::{CqlValue, Row};
use std::time::Duration;

pub use schema::SCHEMA_VERSION;
pub(crate) use stream::{Decision, Probe};

/// Keeps the events of every successful write.
pub(crate) fn always<T>(_: &T) -> bool {
    true
}
pub use scylla::statement::{Consistency, SerialConsistency};

/// How to reach the cluster and how to write to it.
#[derive(Debug, Clone)]
pub struct ScyllaOptions {
    /// `host:port` of one or more nodes.
    pub nodes: Vec<String>,
    pub keyspace: String,
    /// The keyspace's replication, as CQL: e.g. `{'class': 'NetworkTopologyStrategy', 'dc1': 3}`.
    pub replication: String,
    /// Prefer nodes of this datacenter (and use it for `LOCAL_*` consistency).
    pub local_datacenter: Option<String>,
    /// For reads and plain writes (`LOCAL_QUORUM` by default).
    pub consistency: Consistency,
    /// For lightweight transactions (`LOCAL_SERIAL` by default).
    pub serial_consistency: SerialConsistency,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
}

impl ScyllaOptions {
    /// Defaults for `nodes` (a single node, replication 1: tests and development).
    pub fn new(nodes: Vec<String>, keyspace: &str) -> Self {
        Self {
            nodes,
            keyspace: keyspace.to_owned(),
            replication: "{'class': 'SimpleStrategy', 'replication_factor': 1}".into(),
            local_datacenter: None,
            consistency: Consistency::LocalQuorum,
            serial_consistency: SerialConsistency::LocalSerial,
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// The ScyllaDB store. Cheap to clone.
#[derive(Clone)]
pub struct ScyllaStore {
    session: std::sync::Arc<CachingSession>,
    ks: std::sync::Arc<str>,
    /// Session reads by token, coalesced while many are asked at once.
    sessions_by_token: std::sync::Arc<coalesce::Coalescer>,
}

pub(crate) type V = Option<CqlValue>;

#[async_trait::async_trait]
impl crate::HealthStore for ScyllaStore {
    /// Reachable and at this build's schema version: an older (or missing) one needs
    /// `gatehouse migrate` first, a newer one a newer Gatehouse.
    async fn check_health(&self) -> StoreResult<()> {
        let at = schema::current(self).await?;
        match at.cmp(&SCHEMA_VERSION) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(StoreError::Internal(format!(
                "the keyspace {} is at schema version {at}, this Gatehouse needs \
                 {SCHEMA_VERSION}: run `gatehouse migrate` first",
                self.ks
            ))),
            std::cmp::Ordering::Greater => Err(schema::newer(&self.ks, at)),
        }
    }
}

impl ScyllaStore {
    /// Connects to a keyspace at this build's schema version: one that is older (or missing)
    /// needs `gatehouse migrate` first, one that is newer a newer Gatehouse; both are refused.
    /// Servers never change the schema themselves: concurrent DDL from several processes
    /// starting at once can leave a cluster with disagreeing table definitions.
    pub async fn connect(opts: &ScyllaOptions) -> StoreResult<Self> {
        let store = Self::session(opts).await?;
        crate::HealthStore::check_health(&store).await?;
        Ok(store)
    }

    /// Connects, creates the keyspace and tables when missing or applies the migrations it has
    /// not had (what `gatehouse migrate` runs), and refuses a schema newer than this build's.
    pub async fn migrate(opts: &ScyllaOptions) -> StoreResult<Self> {
        let store = Self::session(opts).await?;
        schema::migrate(&store, &opts.replication).await?;
        Ok(store)
    }

    pub(crate) async fn session(opts: &ScyllaOptions) -> StoreResult<Self> {
        if !valid_identifier(&opts.keyspace) {
            return Err(StoreError::Internal(format!(
                "keyspace name {:?}: letters, digits and _ only",
                opts.keyspace
            )));
        }
        let mut profile = ExecutionProfile::builder()
            .consistency(opts.consistency)
            .serial_consistency(Some(opts.serial_consistency))
            .request_timeout(Some(opts.request_timeout));
        if let Some(dc) = &opts.local_datacenter {
            let policy = scylla::policies::load_balancing::DefaultPolicy::builder()
                .prefer_datacenter(dc.clone())
                .build();
            profile = profile.load_balancing_policy(policy);
        }
        let builder = SessionBuilder::new()
            .known_nodes(&opts.nodes)
            .connection_timeout(opts.connect_timeout)
            .default_execution_profile_handle(profile.build().into_handle());
        let session = builder.build().await.map_err(|e| {
            StoreError::Unavailable(format!("cannot connect to {:?}: {e}", opts.nodes))
        })?;
        let session = std::sync::Arc::new(CachingSession::from(session, 512));
        Ok(Self {
            sessions_by_token: std::sync::Arc::new(sessions::by_token(
                session.clone(),
                &opts.keyspace,
            )),
            session,
            ks: opts.keyspace.clone().into(),
        })
    }

    /// The schema version the keyspace is at.
    pub async fn schema_version(&self) -> StoreResult<i32> {
        schema::current(self).await
    }

    /// Drops the keyspace with everything in it (tests; an operator's tool).
    pub async fn drop_keyspace(&self) -> StoreResult<()> {
        self.ddl(&format!("DROP KEYSPACE IF EXISTS {}", self.ks))
            .await
    }

    /// `keyspace.table`.
    pub(crate) fn t(&self, table: &str) -> String {
        format!("{}.{table}", self.ks)
    }

    pub(crate) async fn exec(&self, cql: &str, values: Vec<V>) -> StoreResult<QueryResult> {
        self.exec_as("query", cql, values).await
    }

    /// A statement, observed as `call` (`query`, or `lwt` for a conditional one).
    async fn exec_as(
        &self,
        call: &'static str,
        cql: &str,
        values: Vec<V>,
    ) -> StoreResult<QueryResult> {
        execute(&self.session, call, cql, values).await
    }

    /// A schema statement: not prepared (it runs once), and the driver waits until every node
    /// agrees on the schema before it returns.
    pub(crate) async fn ddl(&self, cql: &str) -> StoreResult<()> {
        self.session
            .get_session()
            .query_unpaged(cql.to_owned(), ())
            .await
            .map(|_| ())
            .map_err(unavailable)
    }

    /// A read at the serial consistency: sees every committed lightweight transaction.
    pub(crate) async fn exec_serial(&self, cql: &str, values: Vec<V>) -> StoreResult<QueryResult> {
        let mut st = Statement::new(cql.to_owned());
        st.set_consistency(Consistency::LocalSerial);
        let started = crate::observe::start();
        let r = self
            .session
            .execute_unpaged(st, values)
            .await
            .map_err(unavailable);
        crate::observe::done("scylla", "serial", started, r.is_ok());
        r
    }

    pub(crate) async fn rows(&self, cql: &str, values: Vec<V>) -> StoreResult<Vec<Row>> {
        rows_of(self.exec(cql, values).await?)
    }

    pub(crate) async fn row(&self, cql: &str, values: Vec<V>) -> StoreResult<Option<Row>> {
        Ok(self.rows(cql, values).await?.into_iter().next())
    }

    /// A lightweight transaction: whether it applied.
    pub(crate) async fn lwt(&self, cql: &str, values: Vec<V>) -> StoreResult<bool> {
        applied(self.exec_as("lwt", cql, values).await?)
    }

    /// A logged batch of plain writes (applied together, eventually, across partitions).
    pub(crate) async fn batch(&self, statements: Vec<(String, Vec<V>)>) -> StoreResult<()> {
        self.run_batch("batch", statements).await.map(|_| ())
    }

    /// A conditional batch on one partition: whether it applied.
    pub(crate) async fn batch_lwt(&self, statements: Vec<(String, Vec<V>)>) -> StoreResult<bool> {
        applied(self.run_batch("batch_lwt", statements).await?)
    }

    async fn run_batch(
        &self,
        call: &'static str,
        statements: Vec<(String, Vec<V>)>,
    ) -> StoreResult<QueryResult> {
        let mut batch = Batch::new(BatchType::Logged);
        let mut values = Vec::with_capacity(statements.len());
        for (cql, v) in statements {
            batch.append_statement(cql.as_str());
            values.push(v);
        }
        let started = crate::observe::start();
        let r = self
            .session
            .batch(&batch, values)
            .await
            .map_err(unavailable);
        crate::observe::done("scylla", call, started, r.is_ok());
        r
    }
}

/// A consistency level by its CQL name (`LOCAL_QUORUM`, `QUORUM`, `ONE`…), any case.
pub fn consistency_named(name: &str) -> Option<Consistency> {
    Some(match name.to_ascii_uppercase().as_str() {
        "ANY" => Consistency::Any,
        "ONE" => Consistency::One,
        "TWO" => Consistency::Two,
        "THREE" => Consistency::Three,
        "QUORUM" => Consistency::Quorum,
        "ALL" => Consistency::All,
        "LOCAL_QUORUM" => Consistency::LocalQuorum,
        "EACH_QUORUM" => Consistency::EachQuorum,
        "LOCAL_ONE" => Consistency::LocalOne,
        _ => return None,
    })
}

/// A serial consistency level by its CQL name (`LOCAL_SERIAL` or `SERIAL`), any case.
pub fn serial_consistency_named(name: &str) -> Option<SerialConsistency> {
    match name.to_ascii_uppercase().as_str() {
        "SERIAL" => Some(SerialConsistency::Serial),
        "LOCAL_SERIAL" => Some(SerialConsistency::LocalSerial),
        _ => None,
    }
}

fn valid_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 48
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// Calls made side by side at most (each usually one partition's round trip).
const SIDE_BY_SIDE: usize = 32;

/// `f` of every item, [`SIDE_BY_SIDE`] at a time side by side instead of one after another;
/// the results in the items' order.
pub(crate) async fn side_by_side<'a, T, R, F, Fut>(items: &'a [T], f: F) -> StoreResult<Vec<R>>
where
    F: Fn(&'a T) -> Fut,
    Fut: std::future::Future<Output = StoreResult<R>>,
{
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(SIDE_BY_SIDE) {
        out.extend(futures::future::try_join_all(chunk.iter().map(&f)).await?);
    }
    Ok(out)
}

/// A statement (prepared once by the caching session), observed as `call` (`query`, or `lwt`
/// for a conditional one).
pub(crate) async fn execute(
    session: &CachingSession,
    call: &'static str,
    cql: &str,
    values: Vec<V>,
) -> StoreResult<QueryResult> {
    // A read may be retried on another node (after a broken connection, an overloaded or
    // timed-out replica); a write is never sent twice.
    let read = cql.starts_with("SELECT ");
    let mut st = Statement::new(cql.to_owned());
    st.set_is_idempotent(read);
    let started = crate::observe::start();
    let r = if read {
        selected(session, &st, values).await
    } else {
        session.execute_unpaged(st, values).await
    }
    .map_err(unavailable);
    crate::observe::done("scylla", call, started, r.is_ok());
    r
}

/// A `SELECT` whose answers come without the columns' descriptions: the node sends them with
/// every answer unless asked not to, and describing the columns (their keyspace, table, names
/// and types) was 7.7 % of the node's Java samples under organization reads (bench/README,
/// "#36: answers without their columns' descriptions…"). Safe for every `SELECT` here: each
/// names its columns (none is `SELECT *`), and a column's type never changes, so the columns
/// described when the statement was prepared are the ones every answer has. Cassandra
/// (protocol v4) leaves the description out only while the answer's columns are the prepared
/// ones, ScyllaDB checks with its metadata id; a conditional write (whose answer's columns
/// depend on whether it applied) keeps them, as every write does.
async fn selected(
    session: &CachingSession,
    st: &Statement,
    values: Vec<V>,
) -> Result<QueryResult, ExecutionError> {
    let mut prepared = session.add_prepared_statement(st).await?;
    prepared.set_use_cached_result_metadata(true);
    session
        .get_session()
        .execute_unpaged(&prepared, values)
        .await
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn rows_of(r: QueryResult) -> StoreResult<Vec<Row>> {
    let rows = r
        .into_rows_result()
        .map_err(|e| StoreError::Internal(e.to_string()))?;
    rows.rows::<Row>()
        .map_err(|e| StoreError::Internal(e.to_string()))?
        .collect::<Result<Vec<Row>, _>>()
        .map_err(|e| StoreError::Internal(e.to_string()))
}

/// `[applied]` of a conditional statement or batch: the first column of the first row (the
/// columns after it differ between Cassandra and ScyllaDB).
pub(crate) fn applied(r: QueryResult) -> StoreResult<bool> {
    let rows = rows_of(r)?;
    match rows.first().and_then(|row| row.columns.first()) {
        Some(Some(CqlValue::Boolean(b))) => Ok(*b),
        other => Err(StoreError::Internal(format!(
            "unexpected answer to a conditional statement: {other:?}"
        ))),
    }
}

// Values.
pub(crate) fn text(s: &str) -> V {
    Some(CqlValue::Text(s.to_owned()))
}
pub(crate) fn otext(s: Option<&str>) -> V {
    s.map(|s| CqlValue::Text(s.to_owned()))
}
pub(crate) fn boolean(b: bool) -> V {
    Some(CqlValue::Boolean(b))
}
pub(crate) fn big(n: i64) -> V {
    Some(CqlValue::BigInt(n))
}
pub(crate) fn int(n: i32) -> V {
    Some(CqlValue::Int(n))
}
pub(crate) fn ms(t: &DateTime<Utc>) -> V {
    big(t.timestamp_millis())
}
pub(crate) fn oms(t: &Option<DateTime<Utc>>) -> V {
    t.as_ref().and_then(ms)
}
/// Seconds a row with this expiry should live (at least 1: CQL refuses a TTL of 0 or less
/// meaning "expire now", and 0 would mean "forever").
pub(crate) fn ttl(expires_at: &DateTime<Utc>) -> V {
    let secs = (*expires_at - Utc::now())
        .num_seconds()
        .clamp(1, 630_720_000);
    int(secs as i32)
}

/// Typed access to the columns of a dynamic row, by position.
pub(crate) struct Cols<'a>(pub &'a Row);

impl Cols<'_> {
    fn get(&self, i: usize) -> Option<&CqlValue> {
        self.0.columns.get(i).and_then(|c| c.as_ref())
    }
    pub(crate) fn otext(&self, i: usize) -> Option<String> {
        match self.get(i) {
            Some(CqlValue::Text(s)) | Some(CqlValue::Ascii(s)) => Some(s.clone()),
            _ => None,
        }
    }
    pub(crate) fn text(&self, i: usize) -> StoreResult<String> {
        self.otext(i)
            .ok_or_else(|| StoreError::Internal(format!("column {i}: text expected")))
    }
    pub(crate) fn boolean(&self, i: usize) -> bool {
        matches!(self.get(i), Some(CqlValue::Boolean(true)))
    }
    pub(crate) fn obig(&self, i: usize) -> Option<i64> {
        match self.get(i) {
            Some(CqlValue::BigInt(n)) => Some(*n),
            Some(CqlValue::Int(n)) => Some(i64::from(*n)),
            _ => None,
        }
    }
    pub(crate) fn big(&self, i: usize) -> i64 {
        self.obig(i).unwrap_or(0)
    }
    pub(crate) fn ots(&self, i: usize) -> Option<DateTime<Utc>> {
        self.obig(i).and_then(DateTime::from_timestamp_millis)
    }
    pub(crate) fn ts(&self, i: usize) -> StoreResult<DateTime<Utc>> {
        self.ots(i)
            .ok_or_else(|| StoreError::Internal(format!("column {i}: timestamp expected")))
    }
}

/// Whether a comma-separated role list holds the owner role (as `owner_count` counts it).
pub(crate) fn holds_owner(roles: &str) -> bool {
    roles.split(',').any(|r| r.trim() == crate::OWNER_ROLE)
}

#[cfg(test)]
mod tests {
    #[test]
    fn keyspace_names() {
        assert!(super::valid_identifier("gatehouse"));
        assert!(super::valid_identifier("gh_test_1"));
        assert!(!super::valid_identifier("1x"));
        assert!(!super::valid_identifier("a;DROP"));
        assert!(!super::valid_identifier(""));
    }
}
