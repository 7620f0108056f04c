//! Warehouse evidence and verification dry runs, off the engine's thread. What a
//! diagnosis or a check wants from a warehouse (how many values would not convert, the
//! rows a model is missing, whether a model's SQL runs) is a probe: a job against one
//! warehouse, with that warehouse's check timeout. The engine asks by a key and reads
//! the answer when it has it; it never waits for one.
//!
//! In `dataward serve` each probe runs on a thread of its own and its answer comes back
//! to the engine as a hub message (`Engine::take_evidence`), which re-states the
//! diagnosis that waited for it, or verifies what waited. Inline (the demo, the console
//! without a server, where `tick` polls inline too) the same probe runs at once on the
//! caller's thread, with the same timeout, and its answer is read at once.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::incident::diagnosis::MissingRows;
use crate::monitor::poller::{SharedWarehouse, DEFAULT_TIMEOUT};
use crate::monitor::Observation;
use crate::warehouse::{DayPrint, Uncastable, Warehouse, WarehouseError};

/// What a probe found.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Values of a column that would not convert to a type (None: the warehouse cannot
    /// tell for that type).
    Uncastable(Option<Uncastable>),
    /// What an upstream table holds on a day that a model has on no day (None: no key
    /// to compare by).
    MissingRows(Option<MissingRows>),
    /// A dry run's row count.
    DryRun(u64),
    /// A table day by day, as a backfill's run left it (what its undo compares with).
    DayPrints(Vec<DayPrint>),
    /// A warehouse's tables, roles and grants (access requests).
    Access(crate::warehouse::privileges::AccessCatalog),
    /// One side of a moved table, for a migration wave's parity.
    MigrationSide(crate::migration::parity::Side),
}

/// A probe's answer on its way back to the engine.
#[derive(Debug, Clone)]
pub struct Found {
    key: String,
    warehouse: String,
    answer: Result<Answer, String>,
}

/// What the engine has of a probe's answer.
#[derive(Debug, Clone)]
pub(super) enum Lookup {
    Known(Answer),
    /// Asked, not answered yet: its answer comes back as an input.
    Pending,
    /// The probe failed or timed out: which warehouse, and why.
    Unavailable {
        warehouse: String,
        why: String,
    },
}

impl Lookup {
    /// "pg: timed out: ...", as a diagnosis says it after "evidence unavailable: ".
    pub(super) fn unavailable(&self) -> Option<String> {
        match self {
            Lookup::Unavailable { warehouse, why } => Some(format!("{warehouse}: {why}")),
            _ => None,
        }
    }
}

/// Who waits for an answer: the diagnosis of an observation, verification, or the
/// prints of a finished backfill.
#[derive(Debug, Clone)]
pub(super) enum Waiter {
    Diagnosis(Box<Observation>),
    Verification,
    Backfill,
}

impl Waiter {
    fn same(&self, other: &Waiter) -> bool {
        match (self, other) {
            (Waiter::Verification, Waiter::Verification) => true,
            (Waiter::Backfill, Waiter::Backfill) => true,
            (Waiter::Diagnosis(a), Waiter::Diagnosis(b)) => {
                (&a.monitor, a.check, &a.detail.column, &a.detail.day, &a.at)
                    == (&b.monitor, b.check, &b.detail.column, &b.detail.day, &b.at)
            }
            _ => false,
        }
    }
}

pub(super) type Job =
    Box<dyn FnOnce(&(dyn Warehouse + Sync)) -> Result<Answer, WarehouseError> + Send>;

/// Where a probe's answer goes when it runs on a worker: the hub, in `serve`.
pub type Post = Arc<dyn Fn(Found) + Send + Sync>;

/// A job against one warehouse, bounded by its timeout.
struct Probe {
    key: String,
    warehouse: String,
    shared: SharedWarehouse,
    timeout: Duration,
    job: Job,
}

impl Probe {
    /// Runs the job on a thread of its own and waits at most the timeout for it: one
    /// that does not answer by then is left to end on its own (a PostgreSQL warehouse
    /// ends it at its statement timeout, the same figure).
    fn run(self) -> Found {
        let Probe {
            key,
            warehouse,
            shared,
            timeout,
            job,
        } = self;
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("dataward-probe".into())
            .spawn(move || {
                let _ = tx.send(job(shared.as_ref()));
            });
        let answer = match spawned {
            Err(e) => Err(format!("no thread to run it: {e}")),
            Ok(_) => match rx.recv_timeout(timeout) {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => Err(e.to_string()),
                Err(RecvTimeoutError::Timeout) => Err(format!(
                    "timed out: no answer within {}s",
                    timeout.as_secs_f64()
                )),
                Err(RecvTimeoutError::Disconnected) => Err("the probe crashed".to_string()),
            },
        };
        if let Err(why) = &answer {
            tracing::warn!(%warehouse, probe = %key, %why, "evidence unavailable");
        }
        Found {
            key,
            warehouse,
            answer,
        }
    }
}

/// The probes asked and the answers at hand. Inside the engine, read through `&self`
/// (facts are gathered through a shared borrow), hence the cell.
#[derive(Default)]
pub(super) struct Evidence {
    state: RefCell<Answers>,
    /// Set in `serve`: probes run on threads of their own and post their answers.
    worker: Option<Post>,
}

#[derive(Default)]
struct Answers {
    /// Each answer with the poll it came in (see `forget_answers`).
    known: BTreeMap<String, (Lookup, u64)>,
    /// How many polls the engine has acted on.
    polls: u64,
    /// Asked on a worker and not answered yet.
    asked: BTreeSet<String>,
    waiting: BTreeMap<String, Vec<Waiter>>,
    /// How many lookups found their answer pending, ever: a caller that compares it
    /// before and after knows whether what it computed waits for an answer.
    pending_seen: u64,
}

impl Evidence {
    /// From now on probes run on threads of their own; each answer goes to `post`.
    pub(super) fn on_worker(&mut self, post: Post) {
        self.worker = Some(post);
    }

    /// The answer under `key`, asking for it (once) if there is none: at once inline,
    /// or on a worker, when `waiter` is told once it comes.
    pub(super) fn ask(
        &self,
        key: String,
        warehouse: (&str, &SharedWarehouse, Duration),
        waiter: Option<Waiter>,
        job: Job,
    ) -> Lookup {
        let mut state = self.state.borrow_mut();
        if let Some((known, _)) = state.known.get(&key) {
            return known.clone();
        }
        let (name, shared, timeout) = warehouse;
        let probe = Probe {
            key: key.clone(),
            warehouse: name.to_string(),
            shared: Arc::clone(shared),
            timeout,
            job,
        };
        let Some(post) = &self.worker else {
            let lookup = lookup_of(probe.run());
            let polls = state.polls;
            state.known.insert(key, (lookup.clone(), polls));
            return lookup;
        };
        state.pending_seen += 1;
        if let Some(waiter) = waiter {
            let waiting = state.waiting.entry(key.clone()).or_default();
            if !waiting.iter().any(|w| w.same(&waiter)) {
                waiting.push(waiter);
            }
        }
        if state.asked.insert(key.clone()) {
            let post = Arc::clone(post);
            let spawned = std::thread::Builder::new()
                .name("dataward-evidence".into())
                .spawn(move || post(probe.run()));
            if let Err(e) = spawned {
                // Asked again by the next lookup.
                state.asked.remove(&key);
                tracing::warn!(probe = %key, "no thread for the probe: {e}");
            }
        }
        Lookup::Pending
    }

    /// An answer came back: kept until the next poll, and who waited for it.
    pub(super) fn arrived(&self, found: Found) -> Vec<Waiter> {
        let mut state = self.state.borrow_mut();
        state.asked.remove(&found.key);
        let key = found.key.clone();
        let polls = state.polls;
        state.known.insert(key.clone(), (lookup_of(found), polls));
        state.waiting.remove(&key).unwrap_or_default()
    }

    /// A new poll: what the warehouses said before is asked again when wanted. Inline
    /// every answer is forgotten, as each was had within the turn. On a worker an
    /// answer that came since the last poll is kept through this one: it came back for
    /// a request (the run gate's dry run, say) that is asked again after the answer,
    /// and a warehouse slower than the polls would otherwise never be heard.
    pub(super) fn forget_answers(&self) {
        let worker = self.worker.is_some();
        let mut state = self.state.borrow_mut();
        state.polls += 1;
        let polls = state.polls;
        state
            .known
            .retain(|_, (_, came)| worker && *came + 1 >= polls);
    }

    /// Whether a probe asked on a worker has not answered yet.
    pub(super) fn awaiting(&self) -> bool {
        !self.state.borrow().asked.is_empty()
    }

    /// Forgets the answer under `key` (one that said the warehouse could not be read):
    /// the next lookup asks again.
    pub(super) fn forget(&self, key: &str) {
        self.state.borrow_mut().known.remove(key);
    }

    pub(super) fn pending_seen(&self) -> u64 {
        self.state.borrow().pending_seen
    }
}

fn lookup_of(found: Found) -> Lookup {
    match found.answer {
        Ok(answer) => Lookup::Known(answer),
        Err(why) => Lookup::Unavailable {
            warehouse: found.warehouse,
            why,
        },
    }
}

/// A warehouse's check timeout, which bounds its probes too.
pub(super) fn timeout_of(config: &Config, warehouse: &str) -> Duration {
    config
        .warehouse
        .get(warehouse)
        .and_then(|w| w.check_timeout.as_deref())
        .and_then(|t| crate::config::parse_duration(t).ok())
        .unwrap_or(DEFAULT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warehouse nobody calls: the jobs below stand for what a probe does.
    fn warehouse() -> SharedWarehouse {
        Arc::new(crate::warehouse::sqlite::SqliteWarehouse::new(
            std::path::Path::new("/nonexistent/wh.db"),
            Default::default(),
        ))
    }

    /// A probe blocked on a locked table, until the test process ends.
    fn hangs(_: &(dyn Warehouse + Sync)) -> Result<Answer, WarehouseError> {
        std::thread::sleep(Duration::from_secs(3600));
        Ok(Answer::DryRun(0))
    }

    #[test]
    fn a_probe_that_does_not_answer_in_time_is_unavailable_saying_which_warehouse_and_why() {
        let evidence = Evidence::default();
        let lookup = evidence.ask(
            "dry run".into(),
            ("pg", &warehouse(), Duration::from_millis(50)),
            None,
            Box::new(hangs),
        );
        assert_eq!(
            lookup.unavailable().as_deref(),
            Some("pg: timed out: no answer within 0.05s")
        );
    }

    #[test]
    fn on_a_worker_a_probe_is_pending_asked_once_and_its_waiters_told_once_it_answers() {
        let (tx, rx) = mpsc::channel();
        let mut evidence = Evidence::default();
        evidence.on_worker(Arc::new(move |found| {
            let _ = tx.send(found);
        }));
        let shared = warehouse();
        let ask = |evidence: &Evidence| {
            evidence.ask(
                "count".into(),
                ("wh", &shared, Duration::from_secs(60)),
                Some(Waiter::Verification),
                Box::new(|_| Ok(Answer::DryRun(7))),
            )
        };
        assert!(matches!(ask(&evidence), Lookup::Pending));
        assert!(matches!(ask(&evidence), Lookup::Pending));
        assert_eq!(evidence.pending_seen(), 2);
        let found = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "asked once"
        );
        let waiters = evidence.arrived(found);
        assert_eq!(waiters.len(), 1, "{waiters:?}");
        assert!(matches!(ask(&evidence), Lookup::Known(Answer::DryRun(7))));
        evidence.forget_answers();
        assert!(
            matches!(ask(&evidence), Lookup::Known(Answer::DryRun(7))),
            "kept through the poll after it came"
        );
        evidence.forget_answers();
        assert!(
            matches!(ask(&evidence), Lookup::Pending),
            "asked again after that"
        );
    }
}
