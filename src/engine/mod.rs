//! The engine wires the stages of the loop together: monitors are polled on the clock
//! it is given, breaches open incidents with a diagnosis, a blast radius and proposals,
//! commands from people are checked against the policy, and every decision goes to the
//! chain. Commands in, events out; it never draws.

mod alerts;
pub mod api;
pub mod attach;
mod autonomy;
mod backfill;
mod commands;
mod edge;
pub mod effects;
pub mod evidence;
pub mod hub;
mod intent;
pub mod live;
mod memory;
mod policy;
mod reads;
mod state_file;
pub use memory::stored_incidents;
pub mod cli;
pub mod client;
mod facts;
mod incidents;
pub mod orchestrator;
pub mod poll_task;
mod recovery;
pub mod server;
mod symptoms;
mod timeline;
mod verification;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::store::prelude::*;
use crate::store::Connection;
use anyhow::{anyhow, Context, Result};
use chrono::{NaiveDateTime, TimeDelta};
use serde_json::json;

use crate::approve::request::{ApprovalRequest, Lapse, RequestState};
use crate::approve::{self, stop, Actor, ENGINE_ACTOR};
use crate::chain;
use crate::config::{CheckKind, Config};
use crate::detect::SchemaChange;
use crate::incident::diagnosis::{self, Diagnosis, Facts};
use crate::incident::receipt;
use crate::lineage::{ColumnChange, Lineage};
use crate::monitor::poller::Poller;
use crate::monitor::{self, Observation};
use crate::propose::{self, Proposal};
use crate::warehouse::Warehouse;
use api::*;
use orchestrator::{Orchestrator, RunRecord};

pub use crate::clock::timestamp;
pub use intent::{Answer, Settled};

fn short_time(at: &str) -> &str {
    at.get(11..16).unwrap_or(at)
}

/// A run queued for an incident, and what the scheduler said of it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct RunState {
    /// The orchestrator's own run id.
    #[serde(deserialize_with = "orchestrator::run_id")]
    id: String,
    job: String,
    /// The incident's row count was back within baseline when the run was queued.
    after_recovery: bool,
    finished: Option<RunRecord>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Incident {
    id: String,
    monitor: String,
    table: String,
    opened_at: String,
    observed: f64,
    /// The check whose breach opened it.
    check: CheckKind,
    /// The latest breaching observation, as people read it ("row_count 9,120").
    current: Option<String>,
    expected: String,
    status: IncidentStatus,
    diagnosis: Diagnosis,
    blast: Vec<BlastNode>,
    proposals: Vec<Proposal>,
    run: Option<RunState>,
    checks: Vec<Check>,
    receipt: Option<String>,
    /// Its chain records as who did what, drafted with the receipt.
    #[serde(default)]
    timeline: Vec<crate::engine::api::TimelineEntry>,
    /// Verification passed (or the owner closed it); it resolves once its holds are
    /// resumed.
    #[serde(default)]
    verified: bool,
    /// Closed by hand: by whom (as the chain records actors) and why.
    #[serde(default)]
    closed_by_hand: Option<(String, String)>,
    /// null_rate: the column whose breach opened it.
    #[serde(default)]
    column: Option<String>,
    /// volume: the day whose breach opened it.
    #[serde(default)]
    day: Option<String>,
    /// The opening breach as people read it, for the title ("null_rate(amount) 50.00% null").
    #[serde(default)]
    headline: String,
    /// Breaches this incident explains, oldest first.
    #[serde(default)]
    symptoms: Vec<symptoms::Symptom>,
    /// Since when every one of its own checks has been back within range.
    #[serde(default)]
    recovered_since: Option<String>,
    /// It resolved because its checks recovered and held, with no run.
    #[serde(default)]
    recovered_by_itself: bool,
    /// Since when its own table's check has been back (the opening check).
    #[serde(default)]
    root_back_at: Option<String>,
    /// Closed as a symptom of the incident named here, found after it.
    #[serde(default)]
    merged_into: Option<String>,
    /// The copies an approved backfill took before it ran: its undo.
    #[serde(default)]
    versions: Vec<crate::warehouse::TableVersion>,
    /// When it resolved: the copies are dropped once `[verify] retention` has passed.
    #[serde(default)]
    resolved_at: Option<String>,
    /// What its diagnosis rests on ([`diagnosis::Facts::grounds`]): when these change,
    /// the cause is re-stated.
    #[serde(default)]
    grounds: Vec<String>,
}

pub struct Engine {
    config: Config,
    state: Connection,
    /// Runs the checks: bounded concurrency per warehouse, a timeout per check, backoff
    /// for a warehouse that is down.
    poller: Poller,
    lineage: Option<Lineage>,
    /// Shared with the effect workers (`effects::Shared`), which call it.
    orchestrator: Option<Arc<dyn Orchestrator>>,
    /// What the effect workers share: the orchestrator, and the org stop as committed.
    effects: Arc<effects::Shared>,
    next_due: BTreeMap<String, NaiveDateTime>,
    /// The latest observation per (monitor, check, column): null_rate has one per column.
    latest: BTreeMap<(String, CheckKind, Option<String>), Observation>,
    /// Marks which incidents changed, so a change costs the views of those only.
    incidents: incidents::Incidents,
    notices: Vec<String>,
    console_actor: String,
    now: String,
    now_time: NaiveDateTime,
    /// The approval request behind each hold and diff proposal, by proposal id.
    requests: BTreeMap<String, ApprovalRequest>,
    /// The policy files' hashes (the config's, the notes') as last recorded on the chain.
    policy_hash: String,
    /// The policy files as they were when last read (see [`policy::FileStamp`]).
    policy_stamp: Vec<policy::FileStamp>,
    /// Why the last change to the policy files was refused (the running policy stays).
    policy_refused: Option<String>,
    /// The state database file as opened, and why nothing is accepted once it is gone.
    database_file: state_file::OpenedFile,
    database_alarm: Option<String>,
    /// Why the policy cannot be evaluated, if it cannot: then every decision is denied.
    policy_error: Option<String>,
    /// Why the chain cannot be trusted, if it cannot: then nothing is appended to it.
    chain_alarm: Option<String>,
    /// Resolved incidents and answered requests already written: they do not change.
    settled: BTreeSet<String>,
    /// `tick` polls the due monitors itself (the demo, the console without a server).
    /// Off when a `PollTask` polls on its own thread and stores the observations.
    inline_polling: bool,
    /// The pipelines bar as last read from the orchestrator: a snapshot shows this and
    /// never calls out, so a slow scheduler cannot delay one.
    pipelines: Vec<PipelineView>,
    /// The followed runs as the orchestrator last reported them, by (job, run id):
    /// a turn follows its runs from here, never calling out.
    run_reports: BTreeMap<(String, String), RunRecord>,
    /// Since when, and why, the orchestrator has not answered.
    orchestrator_down: Option<(String, String)>,
    /// The first poll's progress while it is slow and unfinished (see [`FirstPoll`]).
    first_poll: Option<api::FirstPoll>,
    /// The chain head when the open incidents' receipts were last drafted.
    drafted_at: u64,
    /// dbt's run_results.json size and modification time when it was last read.
    run_results_stamp: Option<(u64, Option<std::time::SystemTime>)>,
    /// Alerts queued in a transaction wake the relay once it commits (`alerts.rs`).
    alerts: alerts::AlertHook,
    /// Whose intents are whose: a person's is carried out by their own request only.
    in_flight: intent::InFlight,
    /// Warehouse probes asked and answered (`evidence.rs`): the engine never waits
    /// for one.
    evidence: evidence::Evidence,
    /// The health of each check the poll task read, so an outage is logged once.
    poll_health: poll_task::HealthLog,
    /// How many incident views were built, so a test can see what a change costs.
    views_built: std::sync::atomic::AtomicU64,
}

impl Engine {
    /// Builds the engine from a config. The orchestrator is passed in: which scheduler
    /// to talk to is decided by whoever starts the engine.
    pub fn new(
        config: Config,
        state: Connection,
        orchestrator: Option<Box<dyn Orchestrator>>,
        console_actor: &Actor,
    ) -> Result<Engine> {
        Engine::new_telling(config, state, orchestrator, console_actor, &mut |_, _| {})
    }

    /// [`Engine::new`], telling `progress` how much of the manifest is loaded (`(bytes,
    /// the file's size)`; see [`Lineage::load_telling`]).
    pub fn new_telling(
        config: Config,
        state: Connection,
        orchestrator: Option<Box<dyn Orchestrator>>,
        console_actor: &Actor,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine> {
        crate::sanitize::remember_config_secrets(&config);
        let poller = Poller::from_config(&config)?;
        crate::monitor::minutes::forget_others(&state, &config.monitor_names())?;
        let lineage = policy::load_lineage(&config, progress)?;
        let database_file = state_file::opened_file(&state);
        let orchestrator: Option<Arc<dyn Orchestrator>> = orchestrator.map(Arc::from);
        let effects = Arc::new(effects::Shared::new(orchestrator.clone()));
        let mut engine = Engine {
            config,
            state,
            poller,
            lineage,
            orchestrator,
            effects,
            next_due: BTreeMap::new(),
            latest: BTreeMap::new(),
            incidents: Default::default(),
            notices: Vec::new(),
            console_actor: console_actor.display(),
            now: String::new(),
            now_time: chrono::Utc::now().naive_utc(),
            requests: BTreeMap::new(),
            policy_hash: String::new(),
            policy_stamp: Vec::new(),
            policy_refused: None,
            database_file,
            database_alarm: None,
            policy_error: None,
            chain_alarm: None,
            settled: BTreeSet::new(),
            inline_polling: true,
            pipelines: Vec::new(),
            run_reports: BTreeMap::new(),
            orchestrator_down: None,
            first_poll: None,
            drafted_at: 0,
            run_results_stamp: None,
            alerts: Default::default(),
            in_flight: Default::default(),
            evidence: Default::default(),
            poll_health: Default::default(),
            views_built: Default::default(),
        };
        // The chain is held against its checkpoint before anything is appended: a
        // cut-off tail or a rewrite must stop the engine from writing past it.
        let report = chain::verify(&engine.state)?;
        if let Some(bad) = report.first_bad {
            engine.chain_alarm = Some(format!(
                "CHAIN BROKEN at record #{}: {}; dataward records nothing until it is repaired",
                bad.seq, bad.reason
            ));
        }
        engine.init_observation_mark()?;
        engine.load()?;
        if engine.chain_alarm.is_none() {
            engine.transact(|e| e.record_policy())?;
        }
        Ok(engine)
    }

    /// A line for the people watching (the latest few are in every snapshot).
    pub fn notice(&mut self, text: String) {
        self.notices.push(text);
    }

    /// Keeps a small fact in the state database's `meta` (the demo's clock, the
    /// engine's observation mark).
    pub fn remember(&self, key: &str, value: &str) -> Result<()> {
        self.state.set_meta(key, value)
    }

    /// With `false`, `tick` neither polls nor asks the orchestrator anything: a
    /// `PollTask` stores the observations (`tick` acts on them) and reads the
    /// orchestrator, and the caller hands its reading over with `set_reading`. On by
    /// default.
    pub fn set_inline_polling(&mut self, on: bool) {
        self.inline_polling = on;
    }

    /// Judges and stores what the poll task read, in a transaction of the engine's own:
    /// the engine is the one writer to the state database. The next `tick` acts on it
    /// (a crash in between loses nothing: it is acted on by its mark).
    pub fn store_polled(&mut self, read: crate::monitor::poller::PollRead) -> Result<()> {
        self.ensure_database()?;
        let observations = read.store(&self.state)?;
        self.poll_health.log(&observations);
        Ok(())
    }

    /// From now on warehouse probes (evidence for diagnoses, verification dry runs) run
    /// on threads of their own, and each answer goes to `post`, to come back through
    /// [`Engine::take_evidence`]. Until then they run at once on the caller's thread.
    pub fn set_evidence_worker(&mut self, post: evidence::Post) {
        self.evidence.on_worker(post);
    }

    /// A probe's answer: the diagnoses that waited for it are re-stated with it (an
    /// incident a schema change opens only on what the data says opens now), and
    /// incidents whose verification waited for a dry run are verified, in one
    /// transaction.
    pub fn take_evidence(&mut self, found: evidence::Found) -> Result<Vec<Event>> {
        let waiters = self.evidence.arrived(found);
        if waiters.is_empty() || self.ensure_database().is_err() {
            return Ok(Vec::new());
        }
        let mut events = self.transact(|e| e.evidence_arrived(waiters))?;
        let (more, _) = self.run_intents()?;
        events.extend(more);
        Ok(events)
    }

    fn evidence_arrived(&mut self, waiters: Vec<evidence::Waiter>) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let mut verify = false;
        for waiter in waiters {
            let observation = match waiter {
                evidence::Waiter::Verification => {
                    verify = true;
                    continue;
                }
                evidence::Waiter::Diagnosis(observation) => *observation,
            };
            let own = self.incidents.iter().position(|i| {
                i.monitor == observation.monitor
                    && i.table == observation.table
                    && i.status != IncidentStatus::Resolved
            });
            match own {
                Some(i) => {
                    let facts = self.facts(&observation)?;
                    events.extend(self.rediagnose(i, Some(facts), true)?);
                }
                None if observation.check == CheckKind::Schema => {
                    events.extend(self.breach(&observation)?)
                }
                None => {}
            }
        }
        if verify {
            let now = self.now_time;
            events.extend(self.verify_incidents(now)?);
            events.extend(self.settle_recovered(now)?);
        }
        Ok(events)
    }

    /// How far the first poll has got, as the poll task tells it; its end clears it.
    pub fn set_first_poll(&mut self, progress: api::FirstPoll) {
        self.first_poll = (progress.done < progress.total).then_some(progress);
    }

    /// The first poll's progress while it runs slow: what a console draws as "first
    /// poll: 37 of 120 tables" (the snapshot is to carry it as `first_poll`).
    pub fn first_poll(&self) -> Option<api::FirstPoll> {
        self.first_poll
    }

    /// What the orchestrator said, read in the background or inline. One that does not
    /// answer shows no pipelines rather than stale ones, and is a health state on the
    /// bar until it answers again.
    pub fn set_reading(&mut self, reading: orchestrator::Reading) {
        self.pipelines = reading.pipelines.unwrap_or_default();
        for mut run in reading.runs {
            // Stored with the incident, shown by `show --json` and the receipt.
            run.detail = crate::sanitize::mask_secrets(&run.detail).into_owned();
            self.run_reports
                .insert((run.job.clone(), run.id.clone()), run);
        }
        match (reading.error, &self.orchestrator_down) {
            (Some(error), None) => {
                tracing::warn!(%error, "the orchestrator does not answer");
                self.orchestrator_down = Some((self.now.clone(), error));
            }
            (Some(error), Some((since, _))) => {
                self.orchestrator_down = Some((since.clone(), error));
            }
            (None, Some(_)) => {
                tracing::info!("the orchestrator answers again");
                self.orchestrator_down = None;
            }
            (None, None) => {}
        }
    }

    /// The runs queued for incidents and not yet finished: (job, run id).
    pub fn followed_runs(&self) -> Vec<(String, String)> {
        self.incidents
            .iter()
            .filter_map(|i| i.run.as_ref())
            .filter(|run| run.finished.is_none())
            .map(|run| (run.job.clone(), run.id.clone()))
            .collect()
    }

    /// Reads the orchestrator, when polling inline.
    fn refresh_scheduler(&mut self) {
        if !self.inline_polling {
            return;
        }
        if let Some(orchestrator) = &self.orchestrator {
            let reading = orchestrator::read(orchestrator.as_ref(), &self.followed_runs());
            self.set_reading(reading);
        }
    }

    /// Why the chain cannot be trusted, when it cannot.
    pub fn chain_alarm(&self) -> Option<&str> {
        self.chain_alarm.as_deref()
    }

    fn now_or_wall(&self) -> String {
        if self.now.is_empty() {
            timestamp(chrono::Utc::now().naive_utc())
        } else {
            self.now.clone()
        }
    }

    /// The dbt project folder: where diffs are applied and read back for verification.
    fn project_dir(&self) -> Result<PathBuf> {
        self.config
            .lineage
            .as_ref()
            .and_then(|l| l.project_dir.as_ref())
            .map(|d| self.config.resolve(d))
            .context("no project_dir in [lineage]: there is no dbt project to change")
    }

    /// Appends a chain record inside the current transaction (see `transact`).
    fn record(&mut self, kind: &str, actor: &str, payload: serde_json::Value) -> Result<u64> {
        let at = self.now.clone();
        self.record_at(&at, kind, actor, payload)
    }

    fn record_at(
        &mut self,
        at: &str,
        kind: &str,
        actor: &str,
        payload: serde_json::Value,
    ) -> Result<u64> {
        if let Some(alarm) = &self.chain_alarm {
            return Err(Refusal::new(RefusalKind::ChainBroken, alarm.clone()).into());
        }
        // Every record, whatever put a secret in it (a run's output, an error quoting
        // a URL): the chain is never rewritten, so a secret on it would stay for good.
        let mut payload = payload;
        crate::sanitize::mask_json(&mut payload);
        Ok(chain::append_in(&self.state, at, kind, actor, &payload)?.seq)
    }

    fn event(&self, kind: EventKind) -> Event {
        Event {
            at: self.now.clone(),
            kind,
        }
    }

    /// One turn of the clock: carry out intents left from before, poll what is due
    /// (unless a `PollTask` does), act on what was stored (in one transaction), then
    /// carry out the intents that made. Returns what happened.
    pub fn tick(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        self.now = timestamp(now);
        self.now_time = now;
        // A state database gone from under the engine: nothing more is done (the alarm
        // is on the top line), rather than done into a file nobody reads.
        if self.ensure_database().is_err() {
            return Ok(Vec::new());
        }
        let (mut events, _) = self.run_intents()?;
        if self.chain_alarm.is_none() {
            self.transact(|e| e.record_policy())?;
        }
        if self.inline_polling {
            // Before the turn: proposals read the jobs' last runs from this list.
            self.refresh_scheduler();
            self.poll_due(now)?;
        }
        events.extend(self.transact(|e| e.turn(now))?);
        let (more, _) = self.run_intents()?;
        events.extend(more);
        Ok(events)
    }

    /// Polls the monitors that are due, storing what they measured.
    fn poll_due(&mut self, now: NaiveDateTime) -> Result<()> {
        let mut due = Vec::new();
        for monitor in &self.config.monitor {
            let name = Config::monitor_name(monitor);
            if self.next_due.get(&name).is_some_and(|at| now < *at) {
                continue;
            }
            let every = crate::config::parse_duration(&monitor.every).expect("validated");
            self.next_due
                .insert(name, now + TimeDelta::from_std(every).expect("small"));
            due.push(monitor.clone());
        }
        if !due.is_empty() {
            // The poll stores what it measured in a transaction of its own; the turn
            // acts on stored observations after it, so a crash in between loses nothing.
            self.poller.poll(&self.state, &due, now.and_utc())?;
        }
        Ok(())
    }

    /// Everything one turn decides, inside one transaction.
    fn turn(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let mut events = self.lapse_requests()?;
        let polled = self.unseen_observations()?;
        if !polled.is_empty() {
            // What the warehouses said is asked again for what the new poll raises.
            self.evidence.forget_answers();
        }
        for (_, observation) in &polled {
            self.note_latest(observation.clone());
        }
        for (_, observation) in &polled {
            if observation.verdict.is_breach() {
                events.extend(self.breach(observation)?);
            }
        }
        if let Some((last, _)) = polled.last() {
            self.mark_observations_done(*last)?;
        }
        events.extend(self.read_run_results()?);
        events.extend(self.read_pipeline_failures()?);
        events.extend(self.rediagnose_what_remains()?);
        events.extend(self.drop_expired_versions(now)?);
        events.extend(self.follow_runs()?);
        events.extend(self.print_finished_backfills()?);
        events.extend(self.dispatch_autonomous_runs()?);
        if !polled.is_empty() {
            events.extend(self.verify_incidents(now)?);
            events.extend(self.settle_recovered(now)?);
        }
        Ok(events)
    }

    /// One incident per root cause: a further breach on the incident's own monitor
    /// updates it (and may sharpen its diagnosis); a breach downstream of an open
    /// incident joins it as a symptom; anything else opens an incident. A schema change
    /// is an incident only when it breaks a model that reads the table.
    fn breach(&mut self, observation: &Observation) -> Result<Vec<Event>> {
        // Gathered once for whichever path follows: they read the state database and,
        // for a schema change, count values in the warehouse. At L0 nothing is inferred.
        let facts = if approve::autonomy(&self.config, &observation.table) == 0 {
            None
        } else {
            Some(self.facts(observation)?)
        };
        if observation.check == CheckKind::Schema
            && facts.as_ref().is_none_or(|f| f.broken_uses.is_empty())
        {
            return Ok(Vec::new());
        }
        let own = self.incidents.iter().position(|i| {
            i.monitor == observation.monitor
                && i.table == observation.table
                && i.status != IncidentStatus::Resolved
        });
        if let Some(i) = own {
            self.incidents[i].update(observation);
            return self.rediagnose(i, facts, false);
        }
        if let Some(i) = self
            .root_incident(&observation.table)
            .or_else(|| self.stalled_writer_incident(&observation.table))
        {
            return self.join_symptom(i, observation, facts.as_ref());
        }
        self.open_incident(observation, facts)
    }

    /// A further breach may explain the incident better than the one that opened it
    /// (a short table whose schema changed is a refill): a more specific cause replaces
    /// the diagnosis, on the chain, and new evidence can bring new proposals.
    /// `arrived`: a probe's answer came (see `evidence.rs`): what it adds to the
    /// evidence re-states the cause even when the cause's words stay the same.
    fn rediagnose(&mut self, i: usize, facts: Option<Facts>, arrived: bool) -> Result<Vec<Event>> {
        let Some(facts) = facts.filter(|_| self.incidents[i].status == IncidentStatus::Open) else {
            return Ok(Vec::new());
        };
        let diagnosis = diagnosis::diagnose(&facts);
        let grounds = facts.grounds();
        let sharper = diagnosis
            .kind
            .more_specific_than(self.incidents[i].diagnosis.kind);
        // The same cause on new grounds (a check joined the breach, a short day ended)
        // is re-stated with its figures; its proposals stand.
        let before = &self.incidents[i].diagnosis;
        let adds_evidence = arrived
            && diagnosis
                .evidence
                .iter()
                .any(|line| !before.evidence.contains(line));
        let restated = diagnosis.kind == before.kind
            && grounds != self.incidents[i].grounds
            && (diagnosis.cause != before.cause || adds_evidence);
        if !sharper && !restated {
            return Ok(Vec::new());
        }
        let id = self.incidents[i].id.clone();
        self.record(
            "diagnosis",
            ENGINE_ACTOR,
            json!({"incident": id, "cause": diagnosis.cause, "evidence": diagnosis.evidence}),
        )?;
        let mut events = vec![self.event(EventKind::Diagnosis {
            incident: id.clone(),
            cause: diagnosis.cause.clone(),
            evidence: diagnosis.evidence.clone(),
        })];
        let mut incident = self.incidents[i].clone();
        incident.grounds = grounds;
        if !sharper {
            // Evidence accumulates: what was shown before (with the notes its
            // assessment added) stays, and the new figures follow it.
            incident.diagnosis.cause = diagnosis.cause;
            incident.diagnosis.headline = diagnosis.headline;
            for line in diagnosis.evidence {
                if !incident.diagnosis.evidence.contains(&line) {
                    incident.diagnosis.evidence.push(line);
                }
            }
            self.incidents[i] = incident;
            return Ok(events);
        }
        incident.diagnosis = diagnosis;
        let before = incident.proposals.len();
        self.assess(&mut incident, &facts);
        events.extend(self.record_assessment(&incident, before)?);
        self.incidents[i] = incident;
        Ok(events)
    }

    /// `facts` is None at L0, where nothing is inferred.
    fn open_incident(
        &mut self,
        observation: &Observation,
        facts: Option<Facts>,
    ) -> Result<Vec<Event>> {
        let count = self.state.count_of_kind("incident_opened")?;
        let id = format!("INC-{:04}", count + 1);
        let expected = observation.expected_text();
        let seq_payload = json!({
            "incident": id, "table": observation.table, "monitor": observation.monitor,
            "check": observation.check, "column": observation.detail.column,
            "observed": observation.value, "observed_text": observation.observed_text(),
            "expected": expected,
        });
        self.record("incident_opened", ENGINE_ACTOR, seq_payload)?;
        let mut events = vec![self.event(EventKind::IncidentOpened {
            incident: id.clone(),
            table: observation.table.clone(),
            monitor: observation.monitor.clone(),
            observed: observation.value.unwrap_or_default(),
            expected: expected.clone(),
        })];

        // L0: monitors only. The breach is recorded and shown; nothing is inferred.
        let Some(facts) = facts else {
            let mut diagnosis = Diagnosis::of(
                diagnosis::CauseKind::Unexplained,
                "L0: monitors only; no diagnosis".to_string(),
                Vec::new(),
            );
            // Nothing inferred: the title is the breach itself.
            diagnosis.headline = diagnosis::breach_headline(
                &facts::figure(observation),
                &observation.detail.changes,
            );
            let incident = Incident::opened(&id, observation, &expected, &self.now, diagnosis);
            self.incidents.push(incident);
            return Ok(events);
        };
        let diagnosis = diagnosis::diagnose(&facts);
        self.record(
            "diagnosis",
            ENGINE_ACTOR,
            json!({"incident": id, "cause": diagnosis.cause, "evidence": diagnosis.evidence}),
        )?;
        events.push(self.event(EventKind::Diagnosis {
            incident: id.clone(),
            cause: diagnosis.cause.clone(),
            evidence: diagnosis.evidence.clone(),
        }));

        let mut incident = Incident::opened(&id, observation, &expected, &self.now, diagnosis);
        incident.grounds = facts.grounds();
        self.assess(&mut incident, &facts);
        events.extend(self.record_assessment(&incident, 0)?);
        self.incidents.push(incident);
        let i = self.incidents.len() - 1;
        events.extend(self.fold_downstream(i)?);
        events.extend(self.act_autonomously(i)?);
        Ok(events)
    }

    /// Puts an incident's blast radius and its proposals from `first` on on the chain,
    /// and opens an approval request for each that needs one.
    fn record_assessment(&mut self, incident: &Incident, first: usize) -> Result<Vec<Event>> {
        let id = incident.id.clone();
        let nodes: Vec<_> = incident
            .blast
            .iter()
            .map(|n| json!({"id": n.id, "name": n.name, "kind": n.kind, "depth": n.depth}))
            .collect();
        self.record(
            "blast_radius",
            ENGINE_ACTOR,
            json!({"incident": id, "nodes": nodes}),
        )?;
        let mut events = vec![self.event(EventKind::BlastRadius {
            incident: id.clone(),
            nodes: incident.blast.clone(),
        })];
        for p in &incident.proposals[first..] {
            self.record(
                "proposal",
                ENGINE_ACTOR,
                json!({
                    "incident": id, "proposal": p.id, "kind": p.kind, "title": p.title,
                    "owner": p.owner, "target": p.target, "content_hash": p.content_hash,
                    "content": p.body, "undo": p.undo, "verify": p.verify,
                }),
            )?;
            events.push(self.event(EventKind::Proposal {
                incident: id.clone(),
                proposal: p.id.clone(),
                kind: p.kind,
                content_hash: p.content_hash.clone(),
            }));
            if p.kind != ProposalKind::Note {
                self.requests.insert(
                    p.id.clone(),
                    ApprovalRequest::new(
                        &p.target,
                        &p.owner,
                        "dataward",
                        &p.content_hash,
                        self.now_time,
                    ),
                );
            }
        }
        Ok(events)
    }

    /// The blast radius from the lineage and, from L2 up, the proposals made from it.
    /// Proposals already made stay as they are, decided or not: only content not
    /// proposed before is added, numbered after them.
    /// The table assessed is the one the facts are about: the incident's own, or a
    /// symptom's when what remains of the incident is there.
    fn assess(&mut self, incident: &mut Incident, facts: &Facts) {
        let Some(lineage) = &self.lineage else {
            return;
        };
        let from = match lineage.resolve(&facts.table) {
            Ok(from) => from,
            Err(e) => {
                let notice = format!("{}: no blast radius: {e}", incident.id);
                self.notices.push(notice);
                return;
            }
        };
        let column = incident
            .diagnosis
            .column_change
            .as_ref()
            .map(|c| ColumnChange {
                column: c.column.clone(),
                new_type: c.to.clone(),
            });
        let blast = lineage.blast_radius(from, column.as_ref());
        incident.blast = blast
            .nodes
            .iter()
            .map(|impact| blast_node(impact, blast.sees_column(&impact.unique_id)))
            .collect();
        if let Some(column) = &column {
            self.judge_against_data(incident, &blast, column);
        }
        // A model missing rows: everything built from it is short of the same rows.
        if let Some(missing) = facts.incremental.as_ref().and_then(|m| {
            let missing = m.missing.as_ref()?;
            Some(format!(
                "built from {}, which is missing {} on {}{}",
                m.model,
                missing.keys(),
                missing.day,
                missing.across()
            ))
        }) {
            for node in incident
                .blast
                .iter_mut()
                .filter(|n| matches!(n.kind.as_str(), "model" | "exposure" | "dashboard"))
            {
                node.finding.get_or_insert_with(|| missing.clone());
            }
        }
        if approve::autonomy(&self.config, &facts.table) < 2 {
            return;
        }
        // From the cached bar: opening an incident makes no call to the scheduler.
        let pipelines = &self.pipelines;
        let last_run = |job: &str| -> Option<String> {
            let name = &lineage.node(lineage.resolve(job).ok()?).name;
            let at = pipelines
                .iter()
                .find(|p| &p.name == name)?
                .last_run_at
                .as_ref()?;
            Some(short_time(at).to_string())
        };
        // A diff may only change a file inside the dbt project: a manifest naming
        // `../../x.sql`, or a symlink out of the project, gets no proposal at all.
        let refused = std::cell::RefCell::new(Vec::new());
        let file_allowed = |file: &str| match self.project_file(file) {
            Ok(_) => true,
            Err(e) => {
                refused
                    .borrow_mut()
                    .push(format!("no diff proposed: {e:#}"));
                false
            }
        };
        let fresh = propose::propose(&propose::Context {
            incident: &incident.id,
            table: &facts.table,
            facts,
            diagnosis: &incident.diagnosis,
            lineage,
            from,
            blast: &blast,
            job_last_run: &last_run,
            file_allowed: &file_allowed,
        });
        for mut proposal in fresh {
            // Content once proposed is never proposed again (a rejection is final for
            // it), and a target with a live proposal does not get a second one.
            let known = incident.proposals.iter().any(|p| {
                p.content_hash == proposal.content_hash
                    || (p.kind == proposal.kind
                        && p.target == proposal.target
                        && !matches!(p.state, ProposalState::Rejected | ProposalState::Expired))
            });
            if known {
                continue;
            }
            proposal.id = format!("{}-P{}", incident.id, incident.proposals.len() + 1);
            incident.proposals.push(proposal);
        }
        let refused = refused.into_inner();
        for reason in &refused {
            self.notices.push(format!("{}: {reason}", incident.id));
        }
        incident.diagnosis.evidence.extend(refused);
    }

    /// A use that depends on the data is judged against it: the warehouse counts the
    /// values of the changed column that would not convert, and the blast radius says
    /// how many (a use that breaks on today's data is a break risk now). A count not
    /// answered yet, or not to be had, adds nothing here: the diagnosis says so.
    fn judge_against_data(
        &self,
        incident: &mut Incident,
        blast: &crate::lineage::BlastRadius,
        column: &ColumnChange,
    ) {
        let Some(warehouse) = self
            .config
            .monitor
            .iter()
            .find(|m| Config::monitor_name(m) == incident.monitor)
            .map(|m| m.warehouse.clone())
        else {
            return;
        };
        for node in &mut incident.blast {
            if !blast.sees_column(&node.id) {
                continue;
            }
            let Some(target) = blast
                .impact(&node.id)
                .and_then(|i| i.column.as_ref())
                .and_then(|c| {
                    c.uses.iter().find_map(|u| match &u.risk {
                        crate::lineage::Risk::DependsOnData { target_type } => {
                            Some(target_type.clone())
                        }
                        _ => None,
                    })
                })
            else {
                continue;
            };
            let Some((_, evidence::Lookup::Known(evidence::Answer::Uncastable(Some(found))))) =
                self.uncastable(&warehouse, &incident.table, &column.column, &target, None)
            else {
                continue;
            };
            let counted = if found.rows == 0 {
                format!("every {} value converts to {target} today", column.column)
            } else {
                node.break_risk = true;
                format!(
                    "{} values do not convert to {target} today (e.g. {})",
                    monitor::thousands(found.rows as f64),
                    found
                        .examples
                        .iter()
                        .map(|e| format!("{e:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            node.finding = Some(match &node.finding {
                Some(finding) => format!("{finding}; {counted}"),
                None => counted,
            });
        }
    }

    /// A file of the dbt project, by its path relative to `project_dir`, refused unless
    /// it resolves inside the project after following every symlink.
    fn project_file(&self, file: &str) -> Result<PathBuf> {
        effects::project_file(Some(&self.project_dir()?), file)
    }

    /// How many incident views were built so far (each costs a policy lookup per
    /// proposal): a change to one incident should build one.
    pub fn views_built(&self) -> u64 {
        self.views_built.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What clients show. Reads only the engine's own state and database: no call to a
    /// warehouse or the orchestrator, so nothing slow outside can delay it.
    pub fn snapshot(&self, finished: bool) -> Snapshot {
        let mut snapshot = self.snapshot_without_incidents(finished);
        snapshot.incidents = self
            .incidents
            .iter()
            .map(|i| self.incident_view(i))
            .collect();
        snapshot
    }

    /// The views of the incidents changed since the last call (all of them after a
    /// reload or at the first call: then `true`), so a publisher builds only those.
    pub fn changed_views(&mut self) -> (bool, Vec<IncidentView>) {
        let changed = self.incidents.take_changed();
        let views = self
            .incidents
            .iter()
            .filter(|i| changed.all || changed.ids.contains(&i.id))
            .map(|i| self.incident_view(i))
            .collect();
        (changed.all, views)
    }

    /// The incidents' ids, in the order a snapshot lists them.
    pub fn incident_ids(&self) -> impl Iterator<Item = &str> {
        self.incidents.iter().map(|i| i.id.as_str())
    }

    /// [`Engine::snapshot`] with no incidents: what is engine-wide.
    pub fn snapshot_without_incidents(&self, finished: bool) -> Snapshot {
        let pipelines = self.pipelines.clone();
        Snapshot {
            now: self.now.clone(),
            actor: self.console_actor.clone(),
            chain_head: chain::head(&self.state).ok().flatten().map(Into::into),
            pipelines,
            orchestrator_down: self
                .orchestrator_down
                .as_ref()
                .map(|(since, error)| format!("since {}: {error}", short_time(since))),
            first_poll: self.first_poll,
            monitors: self.monitor_views(),
            incidents: Vec::new(),
            notices: self.notices.iter().rev().take(5).rev().cloned().collect(),
            finished,
            chain_alarm: self.chain_alarm.clone(),
            trust_alarm: self.trust_alarm(),
            attached: Vec::new(),
            outbox: self.outbox_view(),
            org_stop: stop::state(&self.state).ok().filter(|s| s.active).map(|s| {
                format!(
                    "ORG STOP since {} by {}{}",
                    s.since.as_deref().map(short_time).unwrap_or(""),
                    s.by.unwrap_or_default(),
                    s.lift_requested_by
                        .map(|w| format!("; lift asked by {w}, needs a second person"))
                        .unwrap_or_default()
                )
            }),
        }
    }

    /// Keeps the latest observation per (monitor, check, column). A per-column check
    /// that could not run at all is stored without a column; once the columns are
    /// measured again, that row has said what it had to say.
    fn note_latest(&mut self, o: Observation) {
        // The incidents on this monitor show its latest reading.
        self.incidents.mark(|i| i.monitor == o.monitor);
        if o.detail.column.is_some() {
            self.latest.remove(&(o.monitor.clone(), o.check, None));
        }
        self.latest
            .insert((o.monitor.clone(), o.check, o.detail.column.clone()), o);
    }

    /// Each monitor's period, by name. Built once per use: a lookup per monitor would
    /// make a thousand monitors cost a million name comparisons.
    fn periods(&self) -> BTreeMap<String, TimeDelta> {
        self.config
            .monitor
            .iter()
            .filter_map(|m| {
                let every = crate::config::parse_duration(&m.every).ok()?;
                Some((Config::monitor_name(m), TimeDelta::from_std(every).ok()?))
            })
            .collect()
    }

    /// The latest figure of every check. One that is older than its monitor's latest
    /// poll (the warehouse went down, so the poll measured nothing for it), or overdue
    /// by three periods, is stale: shown with its age and health unknown, never as a
    /// fresh "ok".
    fn monitor_views(&self) -> Vec<MonitorView> {
        let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
        for o in self.latest.values() {
            let at = newest.entry(o.monitor.as_str()).or_insert(o.at.as_str());
            *at = (*at).max(o.at.as_str());
        }
        let periods = self.periods();
        let overdue = |o: &Observation| -> bool {
            let Ok(at) = NaiveDateTime::parse_from_str(&o.at, "%Y-%m-%dT%H:%M:%SZ") else {
                return false;
            };
            periods
                .get(&o.monitor)
                .is_some_and(|every| self.now_time - at > *every * 3)
        };
        self.latest
            .values()
            .map(|o| {
                let check = o.check_label();
                let stale = newest
                    .get(o.monitor.as_str())
                    .is_some_and(|n| *n > o.at.as_str())
                    || overdue(o);
                if stale {
                    let age = NaiveDateTime::parse_from_str(&o.at, "%Y-%m-%dT%H:%M:%SZ")
                        .map(|at| (self.now_time - at).num_minutes().max(0))
                        .unwrap_or_default();
                    return MonitorView {
                        name: o.monitor.clone(),
                        table: o.table.clone(),
                        check,
                        verdict: VerdictKind::Unknown,
                        observed: format!(
                            "{} as of {} ({age} min ago)",
                            o.observed_text(),
                            short_time(&o.at)
                        ),
                        expected: o.expected_text(),
                        health: MonitorHealth::Stale,
                    };
                }
                MonitorView {
                    name: o.monitor.clone(),
                    table: o.table.clone(),
                    check,
                    verdict: o.verdict.into(),
                    observed: o.observed_text(),
                    expected: o.expected_text(),
                    health: o.health.into(),
                }
            })
            .collect()
    }

    fn incident_view(&self, i: &Incident) -> IncidentView {
        self.views_built
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut view = i.view(&|proposal| {
            self.requests
                .get(proposal)
                .and_then(|r| r.eligible_roles(&self.config).ok())
        });
        // Who may close it by hand, and who may decide each proposal, by account, so a
        // console refuses anyone else up front.
        view.owner_accounts = Some(match crate::approve::domain_for(&self.config, &i.table) {
            Some(domain) => {
                let roles: Vec<String> = domain
                    .owners
                    .iter()
                    .chain(&domain.escalation)
                    .cloned()
                    .collect();
                crate::approve::accounts_holding(&self.config, &roles)
            }
            None => Vec::new(),
        });
        for proposal in &mut view.proposals {
            if let Some(request) = self.requests.get(&proposal.id) {
                proposal.decider_accounts = Some(match request.eligible_roles(&self.config) {
                    Ok(roles) => crate::approve::accounts_holding(&self.config, &roles),
                    Err(_) => Vec::new(),
                });
            }
        }
        view.latest = self.latest_reading(i);
        view
    }
}

impl Incident {
    /// What clients see of it. `deciders` gives the roles that may decide a proposal
    /// now, where the policy is at hand; without it, the proposal's owner.
    fn view(&self, deciders: &dyn Fn(&str) -> Option<Vec<String>>) -> IncidentView {
        let i = self;
        IncidentView {
            id: i.id.clone(),
            // The cause in a sentence; an incident stored before causes had one keeps
            // the words of its first breach.
            title: if !i.diagnosis.headline.is_empty() {
                i.diagnosis.headline.clone()
            } else if i.headline.is_empty() {
                format!(
                    "{} {} {}",
                    i.table,
                    i.check.as_str().replace('_', " "),
                    monitor::thousands(i.observed)
                )
            } else {
                format!("{} {}", i.table, i.headline)
            },
            table: i.table.clone(),
            monitor: i.monitor.clone(),
            status: i.status,
            opened_at: i.opened_at.clone(),
            observed: i
                .current
                .clone()
                .unwrap_or_else(|| monitor::thousands(i.observed)),
            expected: i.expected.clone(),
            cause: Some(i.diagnosis.cause.clone()),
            evidence: i.diagnosis.evidence.clone(),
            blast: i.blast.clone(),
            proposals: i
                .proposals
                .iter()
                .map(|p| {
                    let mut view = p.view();
                    if let Some(roles) = deciders(&p.id) {
                        view.deciders = roles;
                    }
                    view
                })
                .collect(),
            checks: i.checks.clone(),
            receipt: i.receipt.clone(),
            run_status: i.run.as_ref().map(|r| match &r.finished {
                Some(record) => RunStatus::parse(&record.status),
                None => RunStatus::Queued,
            }),
            symptoms: i.symptoms.iter().map(symptoms::Symptom::view).collect(),
            latest: None,
            timeline: i.timeline.clone(),
            owner_accounts: None,
        }
    }

    fn opened(
        id: &str,
        o: &Observation,
        expected: &str,
        now: &str,
        diagnosis: Diagnosis,
    ) -> Incident {
        Incident {
            id: id.to_string(),
            monitor: o.monitor.clone(),
            table: o.table.clone(),
            opened_at: now.to_string(),
            check: o.check,
            observed: o.value.unwrap_or_default(),
            current: None,
            expected: expected.to_string(),
            status: IncidentStatus::Open,
            diagnosis,
            blast: Vec::new(),
            proposals: Vec::new(),
            run: None,
            checks: Vec::new(),
            receipt: None,
            timeline: Vec::new(),
            verified: false,
            closed_by_hand: None,
            column: o.detail.column.clone(),
            day: o.detail.day.clone(),
            headline: format!(
                "{} {}",
                o.check_label().replace('_', " "),
                o.observed_text()
            ),
            symptoms: Vec::new(),
            recovered_since: None,
            recovered_by_itself: false,
            root_back_at: None,
            merged_into: None,
            versions: Vec::new(),
            resolved_at: None,
            grounds: Vec::new(),
        }
    }

    /// A further breach on the same (monitor, table) updates the open incident rather
    /// than opening another: the latest value, and a line of evidence per new kind of
    /// breach.
    fn update(&mut self, o: &Observation) {
        self.current = Some(format!("{} {}", o.check_label(), o.observed_text()));
        let kind = format!("{} {}", o.check_label(), o.verdict.as_str());
        if !self.diagnosis.evidence.iter().any(|e| e.starts_with(&kind)) {
            self.diagnosis.evidence.push(format!(
                "{kind} at {}: {} (expected {})",
                short_time(&o.at),
                o.observed_text(),
                o.expected_text()
            ));
        }
    }
}

/// A node of the blast radius as clients draw it. `sees_column`: the node reads the
/// changed column itself, so what it does with it is a finding.
fn blast_node(impact: &crate::lineage::Impact, sees_column: bool) -> BlastNode {
    use crate::lineage::Risk;
    let column = impact.column.as_ref().filter(|_| sees_column);
    let uses = column.map(|c| c.uses.as_slice()).unwrap_or_default();
    // The most serious use is what the tree shows: one that breaks, then one that
    // depends on the data.
    let worst = uses.iter().find(|u| u.risk == Risk::Breaks).or_else(|| {
        uses.iter()
            .find(|u| matches!(u.risk, Risk::DependsOnData { .. }))
    });
    let finding = match (worst, column) {
        (Some(used), _) => Some(format!("`{}`: {}", used.expression, used.reason)),
        (None, Some(c)) if c.reads => Some("reads the column".to_string()),
        _ => None,
    };
    BlastNode {
        id: impact.unique_id.clone(),
        name: impact.name.clone(),
        kind: impact.kind.as_str().to_string(),
        depth: impact.depth,
        parents: impact.parents.clone(),
        finding,
        break_risk: worst.is_some(),
    }
}
