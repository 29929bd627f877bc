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
//! At most `IN_FLIGHT` queries are out at once. A read that finds one of those slots free sends
//! its query itself; a read that finds none waits in line. A query's sender, once answered,
//! hands its slot to the first read in line, which leaves with the reads behind it (at most
//! `MAX_KEYS` in one query) and answers them. No task of its own: nothing runs but the requests,
//! and a read is woken once, for its answer or for its turn to send. A request given up (its
//! client gone) gives its slot on (see [`Slot`] and [`Waiter`]); the reads it was carrying are
//! then read again, each on its own.
use super::{execute, rows_of, text, Cols, V};
use crate::{StoreError, StoreResult};
use scylla::client::caching_session::CachingSession;
use scylla::value::{CqlValue, Row};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Queries one coalescer has out at once (1, 2 and 4 measured alike on one node; 4 leaves
/// room for a slow replica on a cluster).
const IN_FLIGHT: usize = 4;
/// Keys in one query at most.
const MAX_KEYS: usize = 32;

/// What a read in line is told: its row, or that it holds a slot and sends the next query.
enum Turn {
    Answer(StoreResult<Option<Row>>),
    Send,
}

/// A read in line: its key, and where its turn is told.
struct Queued {
    key: String,
    turn: oneshot::Sender<Turn>,
}

struct Line {
    free: usize,
    /// Not empty only while no slot is free.
    reads: VecDeque<Queued>,
}

/// Reads of a table's row by its text partition key, coalesced.
pub(crate) struct Coalescer {
    statements: Statements,
    turns: Turns,
}

/// The slots and the line, under one lock (held for a few instructions, never across a query).
struct Turns(Mutex<Line>);

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
    /// `select` is the statement up to its `WHERE`; `key` the partition key's column name,
    /// selected as column `key_col`.
    pub(crate) fn new(
        session: Arc<CachingSession>,
        select: &str,
        key: &str,
        key_col: usize,
    ) -> Self {
        Self {
            statements: Statements {
                session,
                one: format!("{select} WHERE {key} = ?"),
                many: format!("{select} WHERE {key} IN ?"),
                key_col,
            },
            turns: Turns::new(IN_FLIGHT),
        }
    }

    /// The row of `key`, read in a query that leaves after this call.
    pub(crate) async fn get(&self, key: &str) -> StoreResult<Option<Row>> {
        let slot = match self.turns.take(key) {
            Ok(slot) => slot,
            Err(mut waiter) => match (&mut waiter.rx).await {
                Ok(Turn::Answer(r)) => return r,
                Ok(Turn::Send) => Slot(&self.turns),
                // The read that was carrying this one was given up: a query of its own.
                Err(_) => return Ok(self.statements.one(key).await?.into_iter().next()),
            },
        };
        let others = self.turns.next_reads();
        let r = self.statements.answer(key, others).await;
        drop(slot);
        r
    }
}

impl Turns {
    fn new(slots: usize) -> Self {
        Self(Mutex::new(Line {
            free: slots,
            reads: VecDeque::new(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Line> {
        // The lock guards two plain fields and no code that can panic holds it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A free slot, or a place in line for `key`.
    fn take(&self, key: &str) -> Result<Slot<'_>, Waiter<'_>> {
        let mut line = self.lock();
        if line.free > 0 {
            line.free -= 1;
            return Ok(Slot(self));
        }
        let (turn, rx) = oneshot::channel();
        line.reads.push_back(Queued {
            key: key.to_owned(),
            turn,
        });
        Err(Waiter { rx, turns: self })
    }

    /// The reads a slot's holder takes along: the first in line, at most `MAX_KEYS - 1`.
    fn next_reads(&self) -> Vec<Queued> {
        let mut line = self.lock();
        let n = line.reads.len().min(MAX_KEYS - 1);
        line.reads.drain(..n).collect()
    }

    /// A slot given back: to the first read in line still waiting, else free.
    fn give_back(&self) {
        let mut line = self.lock();
        while let Some(next) = line.reads.pop_front() {
            if next.turn.send(Turn::Send).is_ok() {
                return;
            }
        }
        line.free += 1;
    }
}

/// A slot held: given back when its query is answered, or when the request holding it is given
/// up mid-query.
struct Slot<'a>(&'a Turns);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

/// A read in line. Given up after its turn to send was told but before it took it, it gives
/// the slot back.
struct Waiter<'a> {
    rx: oneshot::Receiver<Turn>,
    turns: &'a Turns,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.rx.close();
        if let Ok(Turn::Send) = self.rx.try_recv() {
            self.turns.give_back();
        }
    }
}

impl Statements {
    async fn one(&self, key: &str) -> StoreResult<Vec<Row>> {
        self.run(&self.one, vec![text(key)]).await
    }

    async fn run(&self, cql: &str, values: Vec<V>) -> StoreResult<Vec<Row>> {
        rows_of(execute(&self.session, "query", cql, values).await?)
    }

    /// Reads `key` and the keys of `others` in one query; answers `others`, returns `key`'s row.
    async fn answer(&self, key: &str, others: Vec<Queued>) -> StoreResult<Option<Row>> {
        if others.is_empty() {
            return Ok(self.one(key).await?.into_iter().next());
        }
        let mut keys: Vec<CqlValue> = Vec::with_capacity(others.len() + 1);
        for k in std::iter::once(key).chain(others.iter().map(|q| q.key.as_str())) {
            let k = CqlValue::Text(k.to_owned());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        // A key asked twice (one cookie, two requests) is answered to both from one row.
        let repeated = keys.len() <= others.len();
        let rows = match self.run(&self.many, vec![Some(CqlValue::List(keys))]).await {
            Ok(rows) => rows,
            Err(e) => return Err(fail(others, e)),
        };
        let mut by_key: HashMap<String, Row> = HashMap::with_capacity(rows.len());
        for row in rows {
            match Cols(&row).text(self.key_col) {
                Ok(k) => {
                    by_key.insert(k, row);
                }
                Err(e) => return Err(fail(others, e)),
            }
        }
        for q in others {
            let row = if repeated {
                by_key.get(&q.key).map(|r| Row {
                    columns: r.columns.clone(),
                })
            } else {
                by_key.remove(&q.key)
            };
            let _ = q.turn.send(Turn::Answer(Ok(row)));
        }
        Ok(by_key.remove(key))
    }
}

/// Tells every read carried the error; returns it for the sender's own read.
fn fail(others: Vec<Queued>, e: StoreError) -> StoreError {
    for q in others {
        let _ = q.turn.send(Turn::Answer(Err(e.clone())));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told_to_send(w: &mut Waiter<'_>) -> bool {
        matches!(w.rx.try_recv(), Ok(Turn::Send))
    }

    /// One slot, held; two reads in line behind it.
    fn held_and_two_in_line(turns: &Turns) -> (Slot<'_>, Waiter<'_>, Waiter<'_>) {
        let Ok(slot) = turns.take("a") else {
            panic!("a free slot")
        };
        let (Err(first), Err(second)) = (turns.take("b"), turns.take("c")) else {
            panic!("no slot free: in line")
        };
        (slot, first, second)
    }

    #[test]
    fn a_slot_goes_to_the_first_read_still_waiting_else_back_to_free() {
        let turns = Turns::new(1);
        let (slot, gone, mut next) = held_and_two_in_line(&turns);
        // The first in line was given up before its turn: the slot skips it.
        drop(gone);
        drop(slot);
        assert!(told_to_send(&mut next));
        let held = Slot(&turns);
        drop(next);
        assert!(turns.lock().reads.is_empty());
        assert_eq!(turns.lock().free, 0);
        drop(held);
        assert_eq!(turns.lock().free, 1);
        assert!(turns.take("d").is_ok());
    }

    #[test]
    fn a_read_given_up_after_its_turn_was_told_passes_the_slot_on() {
        let turns = Turns::new(1);
        let (slot, told, mut after) = held_and_two_in_line(&turns);
        drop(slot);
        // Told to send, given up before it looked: the slot is not lost.
        drop(told);
        assert!(told_to_send(&mut after));
        drop(Slot(&turns));
        drop(after);
        assert_eq!(turns.lock().free, 1);
    }

    #[test]
    fn a_sender_takes_along_at_most_max_keys_less_its_own() {
        let turns = Turns::new(1);
        let Ok(_slot) = turns.take("a") else {
            panic!("a free slot")
        };
        let waiting: Vec<_> = (0..MAX_KEYS + 3)
            .map(|i| turns.take(&format!("k{i}")).err())
            .collect();
        assert!(waiting.iter().all(Option::is_some));
        let first = turns.next_reads();
        assert_eq!(first.len(), MAX_KEYS - 1);
        assert_eq!(first[0].key, "k0");
        assert_eq!(turns.next_reads().len(), 4);
    }
}
