//! Reads of one row by its partition key that many requests ask at the same moment, sent as one
//! query (`WHERE key IN ?`) instead of one query each.
//!
//! Every read costs the node a fixed amount besides the row itself (decoding the frame,
//! scheduling the request, encoding the answer), and the process a wake-up of the connection's
//! task; under load most of a session read is that fixed part. A read joins a query that has not
//! been sent yet, never one already on its way, so it sees every write that completed before it
//! was asked: the same guarantee as a query of its own. With nothing else waiting a read goes
//! alone, as the single-key statement (routed to the key's replica, as before).
//!
//! At most `IN_FLIGHT` queries are out at once; reads asked meanwhile wait and leave together
//! (at most `MAX_KEYS` in one query). Should the background task be gone (its runtime ended),
//! a read goes straight to the node instead.
use super::{execute, rows_of, text, Cols, V};
use crate::{StoreError, StoreResult};
use scylla::client::caching_session::CachingSession;
use scylla::value::{CqlValue, Row};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Queries one coalescer has out at once (1, 2 and 4 measured alike on one node; 4 leaves
/// room for a slow replica on a cluster).
const IN_FLIGHT: usize = 4;
/// Keys in one query at most.
const MAX_KEYS: usize = 32;

type Reply = oneshot::Sender<StoreResult<Option<Row>>>;

/// Reads of a table's row by its text partition key, coalesced.
pub(crate) struct Coalescer {
    tx: mpsc::UnboundedSender<(String, Reply)>,
    statements: Arc<Statements>,
}

struct Statements {
    session: Arc<CachingSession>,
    /// `SELECT … WHERE key = ?`.
    one: String,
    /// `SELECT … WHERE key IN ?`.
    many: String,
    /// The key's column in the rows both select.
    key_col: usize,
}

impl Coalescer {
    /// Starts the task that gathers reads (on the current runtime). `select` is the statement up
    /// to its `WHERE`; `key` the partition key's column name, selected as column `key_col`.
    pub(crate) fn start(
        session: Arc<CachingSession>,
        select: &str,
        key: &str,
        key_col: usize,
    ) -> Self {
        let statements = Arc::new(Statements {
            session,
            one: format!("{select} WHERE {key} = ?"),
            many: format!("{select} WHERE {key} IN ?"),
            key_col,
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(gather(rx, statements.clone()));
        Self { tx, statements }
    }

    /// The row of `key`, read in a query that leaves after this call.
    pub(crate) async fn get(&self, key: &str) -> StoreResult<Option<Row>> {
        let (reply, answer) = oneshot::channel();
        if self.tx.send((key.to_owned(), reply)).is_ok() {
            if let Ok(r) = answer.await {
                return r;
            }
        }
        // No gathering task (its runtime is gone): a query of its own.
        Ok(self.statements.one(key).await?.into_iter().next())
    }
}

async fn gather(mut rx: mpsc::UnboundedReceiver<(String, Reply)>, st: Arc<Statements>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        // While every slot is taken, reads pile up in the channel and leave together.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut reads = vec![first];
        while reads.len() < MAX_KEYS {
            match rx.try_recv() {
                Ok(r) => reads.push(r),
                Err(_) => break,
            }
        }
        let st = st.clone();
        tokio::spawn(async move {
            st.answer(reads).await;
            drop(slot);
        });
    }
}

impl Statements {
    async fn one(&self, key: &str) -> StoreResult<Vec<Row>> {
        self.run(&self.one, vec![text(key)]).await
    }

    async fn run(&self, cql: &str, values: Vec<V>) -> StoreResult<Vec<Row>> {
        rows_of(execute(&self.session, "query", cql, values).await?)
    }

    async fn answer(&self, reads: Vec<(String, Reply)>) {
        if let [(key, _)] = reads.as_slice() {
            let r = self.one(key).await.map(|rows| rows.into_iter().next());
            if let Some((_, reply)) = reads.into_iter().next() {
                let _ = reply.send(r);
            }
            return;
        }
        let mut keys: Vec<CqlValue> = Vec::with_capacity(reads.len());
        for (k, _) in &reads {
            let k = CqlValue::Text(k.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        // A key asked twice (one cookie, two requests) is answered to both from one row.
        let repeated = keys.len() < reads.len();
        let rows = self.run(&self.many, vec![Some(CqlValue::List(keys))]).await;
        match rows {
            Ok(rows) => {
                let mut by_key: HashMap<String, Row> = HashMap::with_capacity(rows.len());
                for row in rows {
                    match Cols(&row).text(self.key_col) {
                        Ok(k) => {
                            by_key.insert(k, row);
                        }
                        Err(e) => return fail(reads, e),
                    }
                }
                for (key, reply) in reads {
                    let row = if repeated {
                        by_key.get(&key).map(|r| Row {
                            columns: r.columns.clone(),
                        })
                    } else {
                        by_key.remove(&key)
                    };
                    let _ = reply.send(Ok(row));
                }
            }
            Err(e) => fail(reads, e),
        }
    }
}

fn fail(reads: Vec<(String, Reply)>, e: StoreError) {
    for (_, reply) in reads {
        let _ = reply.send(Err(e.clone()));
    }
}
