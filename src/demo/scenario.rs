//! The outside world a story plays against the engine. Each story's world only changes
//! data and schema the way the real systems would (an app writes, a loader copies, a
//! scheduler runs dbt); it never opens incidents, writes causes or proposes anything:
//! that is the engine's work.

use anyhow::Result;
use chrono::NaiveDateTime;

/// One story's outside world. It keeps no state of its own in memory: everything it
/// needs is in the estate's databases, so a demo killed at any moment carries on where
/// it was, and a turn played twice does nothing twice.
pub trait World: Send {
    /// Moves the world to `now`. Returns what happened, for the timeline.
    fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>>;
}

/// The world of the story being played.
pub struct Scenario {
    world: Box<dyn World>,
}

impl Scenario {
    pub fn new(world: Box<dyn World>) -> Scenario {
        Scenario { world }
    }

    pub fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        self.world.step(now)
    }
}
