//! Progress of long first work (loading a large manifest, the first poll of a big
//! estate): one rule for when a count is worth telling, shared by the CLI's stderr
//! lines and the engine's first-poll figure, so a quick run says nothing and a slow one
//! says how far it got without flooding a terminal or a socket.

use std::time::{Duration, Instant};

/// When a count is worth telling: only once the work has taken a second (small work
/// says nothing), then at most once a second, and the last count. Time is passed in,
/// so tests move it.
#[derive(Debug, Clone)]
pub struct Throttle {
    started: Instant,
    last: Option<Instant>,
}

impl Throttle {
    pub fn new(started: Instant) -> Throttle {
        Throttle {
            started,
            last: None,
        }
    }

    /// Whether `done` of `total` is worth telling at `now`.
    pub fn due(&mut self, now: Instant, done: u64, total: u64) -> bool {
        let second = Duration::from_secs(1);
        let due = match self.last {
            None => now.duration_since(self.started) >= second,
            Some(at) => now.duration_since(at) >= second || done == total,
        };
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// `12 of 41 MB`: whole megabytes from 10 MB, else one decimal.
pub fn megabytes(done: u64, total: u64) -> String {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    if total >= 10_000_000 {
        format!("{} of {} MB", done / 1_000_000, total / 1_000_000)
    } else {
        format!("{:.1} of {:.1} MB", mb(done), mb(total))
    }
}

/// A byte count told on stderr as `{what}: 12 of 41 MB`, throttled from now.
pub fn bytes_on_stderr(what: &str) -> impl FnMut(u64, u64) {
    bytes_told(what, Instant::now, |line| eprintln!("{line}"))
}

/// A byte count told to `say` as `{what}: 12 of 41 MB` when [`Throttle`] finds it due
/// on `clock` (started at the first reading of it).
pub fn bytes_told(
    what: &str,
    mut clock: impl FnMut() -> Instant,
    mut say: impl FnMut(&str),
) -> impl FnMut(u64, u64) {
    let what = what.to_string();
    let mut throttle = Throttle::new(clock());
    move |done, total| {
        if throttle.due(clock(), done, total) {
            say(&format!("{what}: {}", megabytes(done, total)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_after_a_second_then_once_a_second_and_the_end() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut throttle = Throttle::new(t0);
        assert!(!throttle.due(at(400), 1, 120));
        assert!(throttle.due(at(1_100), 37, 120));
        assert!(!throttle.due(at(1_500), 40, 120));
        assert!(throttle.due(at(2_200), 80, 120));
        assert!(throttle.due(at(2_300), 120, 120));
        // Work done within the second says nothing at all.
        let mut quick = Throttle::new(t0);
        assert!(!quick.due(at(300), 3, 3));
    }

    #[test]
    fn a_slow_load_is_told_in_megabytes_a_quick_one_not_at_all() {
        let t0 = Instant::now();
        // Each reading of the clock is 300 ms after the one before.
        let ticking = |step: u64| {
            let mut at = t0;
            move || {
                let now = at;
                at += Duration::from_millis(step);
                now
            }
        };
        let mut lines = Vec::new();
        let mut tell = bytes_told("loading manifest", ticking(300), |l| {
            lines.push(l.to_string())
        });
        for done in (0..=41).map(|mb| mb * 1_000_000) {
            tell(done, 41_000_000);
        }
        drop(tell);
        assert_eq!(
            lines[..2],
            [
                "loading manifest: 3 of 41 MB",
                "loading manifest: 7 of 41 MB"
            ]
        );
        assert_eq!(lines.last().unwrap(), "loading manifest: 41 of 41 MB");
        // 3, 7, ... 39 (every 1.2 s), then the end.
        assert_eq!(lines.len(), 11, "{lines:?}");

        let mut lines = Vec::new();
        let mut tell = bytes_told("loading manifest", ticking(1), |l| {
            lines.push(l.to_string())
        });
        for done in (0..=41).map(|mb| mb * 1_000_000) {
            tell(done, 41_000_000);
        }
        drop(tell);
        assert!(lines.is_empty(), "{lines:?}");
    }

    #[test]
    fn megabytes_read_as_people_write_them() {
        assert_eq!(megabytes(12_400_000, 41_900_000), "12 of 41 MB");
        assert_eq!(megabytes(1_250_000, 4_100_000), "1.2 of 4.1 MB");
    }
}
