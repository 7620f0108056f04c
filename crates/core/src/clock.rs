//! Time in dataward: the one type a stored or sent time has ([`Timestamp`], the
//! protocol's), and the one clock everything that schedules reads ([`Clock`]): monitors'
//! schedules, the expiry of holds and requests, the outbox's retries. This file is the
//! only one that reads the time of day (tests/layers.rs holds that).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

pub use crate::engine::api::time::{BadTimestamp, Timestamp, FORMAT};

/// Where "now" comes from: the wall, or a virtual time that whoever holds it moves (the
/// demo's story, a test). Cheap to clone; clones of a virtual clock share its time.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    Wall,
    Virtual(VirtualTime),
}

impl Clock {
    pub fn wall() -> Clock {
        Clock::Wall
    }

    /// A virtual clock standing at `at` until it is moved.
    pub fn starting_at(at: NaiveDateTime) -> Clock {
        Clock::Virtual(VirtualTime::new(at))
    }

    /// Now, to the nanosecond the source gives.
    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::Wall => Utc::now(),
            Clock::Virtual(time) => time.now(),
        }
    }

    pub fn naive(&self) -> NaiveDateTime {
        self.now().naive_utc()
    }

    /// Now as it is stored and sent.
    pub fn timestamp(&self) -> Timestamp {
        Timestamp::from_utc(self.now())
    }

    /// Milliseconds since the Unix epoch (the outbox's unit).
    pub fn millis(&self) -> i64 {
        self.now().timestamp_millis()
    }

    /// The virtual time behind this clock, to move it; None on the wall.
    pub fn hands(&self) -> Option<&VirtualTime> {
        match self {
            Clock::Wall => None,
            Clock::Virtual(time) => Some(time),
        }
    }
}

/// A time that moves only when told. Every clone reads and moves the same time.
#[derive(Debug, Clone)]
pub struct VirtualTime(Arc<Mutex<DateTime<Utc>>>);

impl VirtualTime {
    pub fn new(at: NaiveDateTime) -> VirtualTime {
        VirtualTime(Arc::new(Mutex::new(at.and_utc())))
    }

    pub fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("virtual time")
    }

    pub fn set(&self, at: NaiveDateTime) {
        *self.0.lock().expect("virtual time") = at.and_utc();
    }

    pub fn advance(&self, by: TimeDelta) {
        *self.0.lock().expect("virtual time") += by;
    }
}

/// `at` as it is written (the text of a [`Timestamp`]).
pub fn timestamp(at: NaiveDateTime) -> String {
    Timestamp::from_naive(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_moves_only_when_told_and_its_clones_share_it() {
        let start: NaiveDateTime = "2026-03-01T09:00:00".parse().unwrap();
        let clock = Clock::starting_at(start);
        let copy = clock.clone();
        assert_eq!(clock.naive(), start);
        copy.hands().unwrap().advance(TimeDelta::minutes(90));
        assert_eq!(clock.timestamp().to_string(), "2026-03-01T10:30:00Z");
        clock.hands().unwrap().set(start);
        assert_eq!(copy.millis(), start.and_utc().timestamp_millis());
        assert!(Clock::wall().hands().is_none());
    }
}
