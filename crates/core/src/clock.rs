//! Time in dataward: the one type a stored or sent time has ([`Timestamp`], the
//! protocol's), and the one clock everything that schedules reads ([`Clock`]): monitors'
//! schedules, the expiry of holds and requests, the outbox's retries. This file is the
//! only one that reads the time of day (tests/layers.rs holds that).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

pub use crate::engine::api::time::{BadTimestamp, Since, Timestamp, FORMAT};

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

    /// Calls `moved` after every move of a virtual clock, so whoever waits for a time
    /// on it (the relay's threads) looks again then; the wall moves by itself and calls
    /// nothing, as a wait on it is a real wait.
    pub fn on_move(&self, moved: impl Fn() + Send + Sync + 'static) {
        if let Clock::Virtual(time) = self {
            time.0
                .watchers
                .lock()
                .expect("virtual time")
                .push(Box::new(moved));
        }
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
#[derive(Clone)]
pub struct VirtualTime(Arc<Hands>);

struct Hands {
    at: Mutex<DateTime<Utc>>,
    /// Told after each move ([`Clock::on_move`]).
    watchers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for VirtualTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VirtualTime").field(&self.now()).finish()
    }
}

impl VirtualTime {
    pub fn new(at: NaiveDateTime) -> VirtualTime {
        VirtualTime(Arc::new(Hands {
            at: Mutex::new(at.and_utc()),
            watchers: Mutex::new(Vec::new()),
        }))
    }

    pub fn now(&self) -> DateTime<Utc> {
        *self.0.at.lock().expect("virtual time")
    }

    pub fn set(&self, at: NaiveDateTime) {
        *self.0.at.lock().expect("virtual time") = at.and_utc();
        self.moved();
    }

    pub fn advance(&self, by: TimeDelta) {
        *self.0.at.lock().expect("virtual time") += by;
        self.moved();
    }

    /// Tells the watchers, once the time is written and its lock let go.
    fn moved(&self) {
        for watcher in self.0.watchers.lock().expect("virtual time").iter() {
            watcher();
        }
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

    /// Whoever waits on a virtual clock is told each time it moves, by any clone.
    #[test]
    fn a_moved_virtual_clock_tells_its_watchers() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let clock = Clock::starting_at("2026-03-01T09:00:00".parse().unwrap());
        let told = Arc::new(AtomicUsize::new(0));
        let counter = told.clone();
        clock.on_move(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let hands = clock.clone();
        hands.hands().unwrap().advance(TimeDelta::seconds(1));
        hands
            .hands()
            .unwrap()
            .set("2026-03-01T10:00:00".parse().unwrap());
        assert_eq!(told.load(Ordering::SeqCst), 2);
        Clock::wall().on_move(|| unreachable!("the wall tells nobody"));
    }
}
