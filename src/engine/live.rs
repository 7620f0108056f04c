//! `dataward --config FILE`: the engine on the wall clock, behind the console.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::session::{publish, serve_until, with_console};
use super::Engine;
use crate::approve::Actor;
use crate::config::Config;

/// How often the engine looks at the clock: monitors are due on their own schedules,
/// this only bounds how late a due one can start.
const TICK: Duration = Duration::from_secs(15);

pub fn run_console(config_path: &Path, data_dir: &Path, read_only: bool) -> Result<()> {
    let config = Config::load(config_path)?;
    let _lock = crate::store::EngineLock::acquire(data_dir)?;
    let orchestrator = super::orchestrator::from_config(&config)?;
    let state = crate::store::open(&data_dir.join("dataward.db"))?;
    let actor = Actor::current();
    let mut engine = Engine::new(config, state, orchestrator, &actor)?;
    with_console(read_only, move |commands, snapshots| {
        let mut emit = |_: &super::api::Event| {};
        loop {
            // A turn that cannot be recorded (a chain that does not verify, a full disk)
            // is shown and tried again next turn; the console keeps showing the rest.
            if let Err(e) = engine.tick(chrono::Utc::now().naive_utc()) {
                engine.notice(format!("this turn was not recorded: {e:#}"));
            }
            publish(&engine, Some(&snapshots), false);
            let deadline = Instant::now() + TICK;
            if !serve_until(
                &mut engine,
                &commands,
                &actor,
                deadline,
                &mut emit,
                Some(&snapshots),
                false,
            ) {
                return Ok(());
            }
        }
    })
}

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
        match engine.tick(chrono::Utc::now().naive_utc()) {
            Ok(events) => Ok(events),
            Err(e) => {
                engine.notice(format!("this turn was not recorded: {e:#}"));
                Ok(Vec::new())
            }
        }
    }
}
