//! Polling on its own thread: the monitors run on their schedules with a poller of
//! their own and a read-only state-database connection (for the minutes already stored
//! and the runs to follow), and what a poll read goes to the engine as it is
//! ([`PollNews::Observed`]). The engine judges and stores it in its own transaction
//! (`Engine::store_polled`), the one writer to the state database, and acts on it at its
//! next `tick`; so a check blocked on a locked table delays no command, and the
//! pipelines bar is read here too, so no snapshot calls the orchestrator.
//! The engine asks it to poll or read the scheduler now ([`PollTask::ask`]) rather than
//! read either itself; a task started on demand turns only when asked, for a clock that
//! waits for the answer ([`PollNews::Answered`]).
//!
//! Start the `Engine` (with `set_inline_polling(false)`) before the task: the task opens
//! the state database the engine made, and only reads it.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{NaiveDateTime, TimeDelta};

use super::api::FirstPoll;
use crate::clock::Clock;
use crate::config::{parse_duration, CheckKind, Config, MonitorConfig};
use crate::effects::orchestrator::{self, Orchestrator};
use crate::monitor::poller::{PollRead, Poller};
use crate::monitor::{self, Health, Observation};
use crate::progress::Throttle;
use crate::store::place::StatePlace;
use crate::store::{State, Store};

/// How often the task looks at the clock and re-reads the pipelines. Monitors are due
/// on their own schedules; this only bounds how late a due one starts (`poke` starts a
/// turn at once, for a clock that moves faster than the wall's).
pub const TURN: Duration = Duration::from_secs(5);

/// What the task tells the engine's owner.
#[derive(Debug)]
pub enum PollNews {
    /// What a poll read, for `Engine::store_polled`: the engine's next `tick` acts on it.
    Observed(PollRead),
    /// What the orchestrator said just now, for `Engine::set_reading`.
    Scheduler(orchestrator::Reading),
    /// How far the first poll has got, for `Engine::set_first_poll`: only once it has
    /// taken a second, then at most once a second, then its end.
    FirstPoll(FirstPoll),
    /// One [`PollTask::ask`] is answered: what it read was told just before this.
    Answered,
}

/// What the engine asks of the task now, rather than at its next turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollAsk {
    /// Poll the monitors that are due and read the scheduler.
    Poll,
    /// Read the scheduler only (after an effect changed it).
    Scheduler,
}

pub struct PollTask {
    shared: Arc<Shared>,
    thread: JoinHandle<()>,
}

struct Shared {
    flags: Mutex<Flags>,
    wake: Condvar,
}

#[derive(Default)]
struct Flags {
    /// Inside a turn: polling or reading the pipelines (either may block outside).
    busy: bool,
    stopped: bool,
    poked: bool,
    /// Asks not answered yet, and how many of them asked for a poll.
    asks: usize,
    polls_asked: usize,
}

impl PollTask {
    /// Starts polling the monitors of `config` on its own thread, on `clock`,
    /// reading (never writing) the state at `state` (a session of its own). The first turn runs at once. `notify` is
    /// called on the task's thread; it must not block for long or call `stop`, and it
    /// is never called once `stop` has returned.
    pub fn start(
        config: Config,
        state: impl Into<StatePlace>,
        clock: Clock,
        notify: impl Fn(PollNews) + Send + Sync + 'static,
    ) -> Result<PollTask> {
        PollTask::start_as(config, state.into(), clock, notify, false)
    }

    /// Like [`PollTask::start`], but the task polls and reads only when asked
    /// ([`PollTask::ask`]), never on a timer: for a clock that stands still until it is
    /// told what was read (the demo's story).
    pub fn start_on_demand(
        config: Config,
        state: impl Into<StatePlace>,
        clock: Clock,
        notify: impl Fn(PollNews) + Send + Sync + 'static,
    ) -> Result<PollTask> {
        PollTask::start_as(config, state.into(), clock, notify, true)
    }

    fn start_as(
        config: Config,
        state: StatePlace,
        clock: Clock,
        notify: impl Fn(PollNews) + Send + Sync + 'static,
        on_demand: bool,
    ) -> Result<PollTask> {
        // Everything that can fail is built here, so the caller hears of it.
        let poller = Poller::from_config(&config)?;
        let conn = state.open_reader()?;
        let orchestrator = orchestrator::from_config(&config, &state.data_dir())?;
        let next_due = next_due_from_store(&config, &*conn)?;
        let shared = Arc::new(Shared {
            flags: Mutex::new(Flags::default()),
            wake: Condvar::new(),
        });
        let notify: Arc<dyn Fn(PollNews) + Send + Sync> = Arc::new(notify);
        let mut poller = poller;
        poller.set_progress(Some(first_poll_news(
            Instant::now,
            shared.clone(),
            notify.clone(),
        )));
        let mut worker = Worker {
            config,
            poller: Some(poller),
            conn,
            orchestrator,
            next_due,
            clock,
            on_demand,
        };
        let task_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dataward-poll".into())
            .spawn(move || worker.run(&task_shared, notify.as_ref()))
            .context("cannot start the poll task's thread")?;
        tracing::info!(state = %state.describe(), "poll task started");
        Ok(PollTask { shared, thread })
    }

    /// Starts a turn now instead of at the end of the current wait.
    pub fn poke(&self) {
        self.shared.flags.lock().expect("poll task flags").poked = true;
        self.shared.wake.notify_all();
    }

    /// Asks for `what` now: the task reads it at once (after the turn in hand), tells
    /// what it read, then [`PollNews::Answered`], once per ask.
    pub fn ask(&self, what: PollAsk) {
        ask(&self.shared, what);
    }

    /// [`PollTask::ask`] for whoever holds no `PollTask` (the engine, through
    /// `Engine::set_poll_worker`).
    pub fn asker(&self) -> std::sync::Arc<dyn Fn(PollAsk) + Send + Sync> {
        let shared = self.shared.clone();
        Arc::new(move |what| ask(&shared, what))
    }

    /// Stops the task: no poll starts and nothing is notified after this returns. An
    /// idle task is joined. One in the middle of a turn is left to finish on its own
    /// (its checks end at their timeout; what it measured is let go, and measured
    /// again by the next engine): waiting would hold the caller behind a blocked
    /// check.
    pub fn stop(self) {
        let busy = {
            let mut flags = self.shared.flags.lock().expect("poll task flags");
            flags.stopped = true;
            flags.busy
        };
        self.shared.wake.notify_all();
        if busy {
            tracing::info!("poll task stopped; a poll in flight ends at its check timeout");
            return; // detached
        }
        if self.thread.join().is_err() {
            tracing::warn!("the poll task had panicked");
        }
        tracing::info!("poll task stopped");
    }
}

fn ask(shared: &Shared, what: PollAsk) {
    let mut flags = shared.flags.lock().expect("poll task flags");
    flags.asks += 1;
    if what == PollAsk::Poll {
        flags.polls_asked += 1;
    }
    shared.wake.notify_all();
}

struct Worker {
    /// Turns only when asked (see `PollTask::start_on_demand`).
    on_demand: bool,
    config: Config,
    /// Taken at the end, to let go of its runtime without waiting for blocked checks.
    poller: Option<Poller>,
    /// Read only: the engine writes the state database.
    conn: State,
    orchestrator: Option<Box<dyn Orchestrator>>,
    next_due: BTreeMap<String, NaiveDateTime>,
    clock: Clock,
}

impl Worker {
    fn run(&mut self, shared: &Shared, notify: &dyn Fn(PollNews)) {
        // On a timer the first turn polls at once; on demand, the first ask does.
        let mut timer_turn = !self.on_demand;
        loop {
            let (asks, polls_asked) = {
                let mut flags = shared.flags.lock().expect("poll task flags");
                if self.on_demand {
                    flags = shared
                        .wake
                        .wait_while(flags, |f| !f.stopped && f.asks == 0)
                        .expect("poll task flags");
                }
                if flags.stopped {
                    break;
                }
                flags.busy = true;
                flags.poked = false;
                (
                    std::mem::take(&mut flags.asks),
                    std::mem::take(&mut flags.polls_asked),
                )
            };
            // Asked for the scheduler only, the monitors wait for their turn.
            let observed = if timer_turn || polls_asked > 0 {
                self.poll_due()
            } else {
                None
            };
            // Only the first turn's poll is told (a restarted engine's first turn may
            // have nothing due: then none is); later ones are the routine.
            if let Some(poller) = self.poller.as_mut() {
                poller.set_progress(None);
            }
            let reading = self.read_scheduler();
            let mut flags = shared.flags.lock().expect("poll task flags");
            // Stopped while this turn ran: the caller has moved on; tell it nothing.
            if flags.stopped {
                break;
            }
            if let Some(read) = observed {
                notify(PollNews::Observed(read));
            }
            if let Some(reading) = reading {
                notify(PollNews::Scheduler(reading));
            }
            for _ in 0..asks {
                notify(PollNews::Answered);
            }
            flags.busy = false;
            if self.on_demand {
                continue; // the next ask, at the top
            }
            let (flags, waited) = shared
                .wake
                .wait_timeout_while(flags, TURN, |f| !f.stopped && !f.poked && f.asks == 0)
                .expect("poll task flags");
            if flags.stopped {
                break;
            }
            timer_turn = waited.timed_out() || flags.poked;
        }
        if let Some(poller) = self.poller.take() {
            poller.shut_down();
        }
    }

    /// Reads the monitors that are due: what they read, if any were.
    fn poll_due(&mut self) -> Option<PollRead> {
        let now = self.clock.naive();
        let due: Vec<MonitorConfig> = self
            .config
            .monitor
            .iter()
            .filter(|m| {
                let name = Config::monitor_name(m);
                if self.next_due.get(&name).is_some_and(|at| now < *at) {
                    return false;
                }
                let every = parse_duration(&m.every).expect("validated");
                self.next_due
                    .insert(name, now + TimeDelta::from_std(every).expect("small"));
                true
            })
            .cloned()
            .collect();
        if due.is_empty() {
            return None;
        }
        let poller = self.poller.as_ref().expect("present until the end");
        match poller.read(&*self.conn, &due, now.and_utc()) {
            Ok(read) => Some(read),
            Err(e) => {
                // The stored minutes could not be read; the next turn polls again.
                tracing::warn!(error = %format!("{e:#}"), "poll not read");
                None
            }
        }
    }

    /// The pipelines, and the runs the engine follows as it last stored them.
    fn read_scheduler(&self) -> Option<orchestrator::Reading> {
        let orchestrator = self.orchestrator.as_ref()?;
        let follow = super::memory::followed_runs(&*self.conn).unwrap_or_else(|e| {
            tracing::warn!(error = %format!("{e:#}"), "cannot read the runs to follow");
            Vec::new()
        });
        Some(orchestrator::read(orchestrator.as_ref(), &follow))
    }
}

/// The last health of each check, so an outage is logged when it starts and ends
/// rather than at every poll (the engine logs what the poll task read as it stores it).
#[derive(Default)]
pub(super) struct HealthLog(BTreeMap<(String, CheckKind, Option<String>), Health>);

impl HealthLog {
    pub(super) fn log(&mut self, observations: &[Observation]) {
        for o in observations {
            let key = (o.monitor.clone(), o.check, o.detail.column.clone());
            let before = self.0.insert(key, o.health);
            if before == Some(o.health) {
                continue;
            }
            let message = o.detail.message.as_deref().unwrap_or("");
            match o.health {
                Health::Ok if before.is_some() => tracing::info!(
                    monitor = %o.monitor, check = o.check.as_str(), "check answers again"
                ),
                Health::Ok => {}
                _ => tracing::warn!(
                    monitor = %o.monitor, check = o.check.as_str(),
                    health = o.health.as_str(), message, "check could not run"
                ),
            }
        }
    }
}

/// The first poll's progress as news: said as [`Throttle`] allows, its end only when
/// something was said before it (a quick poll says nothing), and never once the task is
/// stopped (checked under the flags' lock, as the task's own news is).
fn first_poll_news(
    clock: impl Fn() -> Instant + Send + Sync + 'static,
    shared: Arc<Shared>,
    notify: Arc<dyn Fn(PollNews) + Send + Sync>,
) -> crate::monitor::poller::Progress {
    let throttle = Mutex::new((Throttle::new(clock()), false));
    Arc::new(move |done: usize, total: usize| {
        let mut throttle = throttle.lock().expect("first poll throttle");
        let (ref mut rule, ref mut told) = *throttle;
        if !rule.due(clock(), done as u64, total as u64) || (done == total && !*told) {
            return;
        }
        *told = true;
        let flags = shared.flags.lock().expect("poll task flags");
        if !flags.stopped {
            notify(PollNews::FirstPoll(FirstPoll { done, total }));
        }
    })
}

/// When each monitor is next due, from its latest stored observation: a restarted task
/// does not poll everything again at once.
fn next_due_from_store(
    config: &Config,
    conn: &dyn Store,
) -> Result<BTreeMap<String, NaiveDateTime>> {
    let mut next_due = BTreeMap::new();
    for o in monitor::latest_all(conn)? {
        let at = o.at.naive();
        let every = config
            .monitor
            .iter()
            .find(|m| Config::monitor_name(m) == o.monitor)
            .and_then(|m| parse_duration(&m.every).ok())
            .and_then(|every| TimeDelta::from_std(every).ok());
        if let Some(every) = every {
            let due = next_due.entry(o.monitor.clone()).or_insert(at + every);
            *due = (*due).max(at + every);
        }
    }
    Ok(next_due)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The news a first poll of `total` tables tells when table n is read at `at(n)` ms.
    fn told(total: usize, at: impl Fn(usize) -> u64, stop_after: Option<usize>) -> Vec<FirstPoll> {
        let t0 = Instant::now();
        let ms = Arc::new(AtomicU64::new(0));
        let clock = {
            let ms = ms.clone();
            move || t0 + Duration::from_millis(ms.load(Ordering::SeqCst))
        };
        let shared = Arc::new(Shared {
            flags: Mutex::new(Flags::default()),
            wake: Condvar::new(),
        });
        let heard = Arc::new(Mutex::new(Vec::new()));
        let into = heard.clone();
        let progress = first_poll_news(
            clock,
            shared.clone(),
            Arc::new(move |news| into.lock().unwrap().push(news)),
        );
        for done in 1..=total {
            ms.store(at(done), Ordering::SeqCst);
            progress(done, total);
            if stop_after == Some(done) {
                shared.flags.lock().unwrap().stopped = true;
            }
        }
        let heard: Vec<FirstPoll> = heard
            .lock()
            .unwrap()
            .iter()
            .map(|news| match news {
                PollNews::FirstPoll(progress) => *progress,
                other => panic!("only progress is told here: {other:?}"),
            })
            .collect();
        heard
    }

    fn first(done: usize, total: usize) -> FirstPoll {
        FirstPoll { done, total }
    }

    #[test]
    fn a_slow_first_poll_is_told_once_a_second_and_its_end() {
        // 120 tables, one every 50 ms: six seconds.
        let heard = told(120, |n| n as u64 * 50, None);
        assert_eq!(heard.first(), Some(&first(20, 120)));
        assert_eq!(heard.get(1), Some(&first(40, 120)));
        assert_eq!(heard.last(), Some(&first(120, 120)));
        assert_eq!(heard.len(), 6, "20, 40, 60, 80, 100 and 120: {heard:?}");
    }

    #[test]
    fn a_quick_first_poll_tells_nothing_not_even_its_end() {
        assert_eq!(told(120, |n| n as u64, None), []);
        // Slow only at its last table: nothing was in progress to show.
        assert_eq!(told(3, |n| if n == 3 { 5_000 } else { 10 }, None), []);
    }

    #[test]
    fn a_stopped_task_tells_nothing_more() {
        let heard = told(120, |n| n as u64 * 50, Some(30));
        assert_eq!(heard, [first(20, 120)]);
    }
}
