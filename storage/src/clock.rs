//! The one place that reads the wall clock; everything with an expiry takes a `Clock`.
use chrono::{DateTime, Duration, DurationRound, Utc};
use std::sync::Mutex;

/// A source of "now", truncated to milliseconds (the precision every backend stores).
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::milliseconds(1)).unwrap_or(t)
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        millis(Utc::now())
    }
}

/// A clock that tests move by hand instead of sleeping.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Mutex::new(millis(start)))
    }
    pub fn advance(&self, by: Duration) {
        if let Ok(mut t) = self.0.lock() {
            *t += by;
        }
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(Utc::now())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        match self.0.lock() {
            Ok(t) => *t,
            Err(p) => *p.into_inner(),
        }
    }
}
