//! The engine on its clock, the wall's (`dataward serve`).

use std::time::{Duration, Instant};

use anyhow::Result;

use super::Engine;

/// How often the engine looks at the clock: monitors are due on their own schedules,
/// this only bounds how late a due one can start.
const TICK: Duration = Duration::from_secs(15);

/// The engine on the wall clock: a turn every `TICK`, and at once when the poller
/// stored something new. A turn that cannot be recorded (a chain that does not verify,
/// a full disk) is shown and tried again; the engine keeps serving.
pub struct WallClock {
    next: Instant,
}

impl WallClock {
    pub fn new() -> WallClock {
        WallClock {
            next: Instant::now(),
        }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}

impl super::hub::Driver for WallClock {
    fn next_turn(&self) -> Instant {
        self.next
    }

    fn turn(&mut self, engine: &mut Engine) -> Result<Vec<super::api::Event>> {
        self.next = Instant::now() + TICK;
        self.react(engine)
    }

    fn react(&mut self, engine: &mut Engine) -> Result<Vec<super::api::Event>> {
        let now = engine.clock().naive();
        match engine.tick(now) {
            Ok(events) => Ok(events),
            Err(e) => {
                engine.notice(format!("this turn was not recorded: {e:#}"));
                Ok(Vec::new())
            }
        }
    }
}
