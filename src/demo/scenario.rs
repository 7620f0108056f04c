//! The outside world a story plays against the engine. Each story's world only changes
//! data and schema the way the real systems would (an app writes, a loader copies, a
//! scheduler runs dbt); it never opens incidents, writes causes or proposes anything:
//! that is the engine's work. It moves on a thread of its own ([`WorldThread`]), never
//! the engine's: its steps write the estate's warehouse and move its scheduler.

use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
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

    /// Moves the world to `now`: it writes the estate's warehouse and moves its
    /// scheduler, so never on the engine's thread (checked in debug builds).
    pub fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        crate::blocking::outside_world("the demo's outside world (its warehouse and scheduler)");
        self.world.step(now)
    }
}

/// A story's world on its own thread (`dataward-demo-world`): asked to move to a time,
/// it takes the step there and reports what happened to `moved`, one step at a time in
/// the order asked, while the engine's thread goes on answering everyone. Dropped, it
/// finishes the step in hand (the estate is never left half-moved by a stop) and ends.
pub struct WorldThread {
    ask: Option<mpsc::Sender<NaiveDateTime>>,
    thread: Option<JoinHandle<()>>,
}

impl WorldThread {
    pub fn start(
        mut scenario: Scenario,
        moved: impl Fn(NaiveDateTime, Result<Vec<String>>) + Send + 'static,
    ) -> Result<WorldThread> {
        let (ask, asked) = mpsc::channel::<NaiveDateTime>();
        let thread = std::thread::Builder::new()
            .name("dataward-demo-world".into())
            .spawn(move || {
                for now in asked {
                    // A step that panics is reported like one that failed: the turn
                    // waiting for it must hear either way.
                    let happened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        scenario.step(now)
                    }))
                    .unwrap_or_else(|_| {
                        Err(anyhow::anyhow!(
                            "the story's world panicked moving to {now}"
                        ))
                    });
                    moved(now, happened);
                }
            })
            .context("cannot start the story's world thread")?;
        Ok(WorldThread {
            ask: Some(ask),
            thread: Some(thread),
        })
    }

    /// Asks the world to move to `now`; its report comes later, to `moved`.
    pub fn step(&self, now: NaiveDateTime) -> Result<()> {
        self.ask
            .as_ref()
            .and_then(|ask| ask.send(now).ok())
            .context("the story's world thread has stopped")
    }
}

impl Drop for WorldThread {
    fn drop(&mut self) {
        drop(self.ask.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
