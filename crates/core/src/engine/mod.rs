//! The engine wires the stages of the loop together: monitors are polled on the clock
//! it is given, breaches open incidents with a diagnosis, a blast radius and proposals,
//! commands from people are checked against the policy, and every decision goes to the
//! chain. Commands in, events out; it never draws.

mod access;
mod alerts;
mod waves;
/// The protocol, converted at this edge (engine/edge.rs, views.rs).
pub use dataward_api as api;
mod autonomy;
mod backfill;
mod by_hand;
mod commands;
mod edge;
pub mod effects;
pub mod evidence;
mod evidence_answers;
mod intent;
pub mod lineage_in;
mod memory;
mod policy;
mod reads;
mod state_file;
pub use memory::stored_incidents;
mod facts;
mod failed_runs;
mod feedback;
pub use feedback::MAX_SNOOZE_SECONDS;
mod incident;
mod incidents;
pub mod poll_task;
mod recovery;
mod run_cadence;
mod symptoms;
mod takeover;
pub use takeover::Predecessor;
mod timeline;
use incident::{blast_node, Incident, RunState};
mod verification;
mod views;
pub use dataward_api::wire;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use chrono::{NaiveDateTime, TimeDelta};
use serde_json::json;

use crate::approve::request::{ApprovalRequest, Lapse, RequestState};
use crate::approve::{self, stop, Actor, ENGINE_ACTOR};
use crate::chain;
use crate::config::{CheckKind, Config};
use crate::detect::SchemaChange;
use crate::effects::orchestrator;
use crate::incident::diagnosis::{self, Diagnosis, Facts};
use crate::incident::receipt;
use crate::lineage::{ColumnChange, Lineage};
use crate::monitor::poller::Poller;
use crate::monitor::{self, Observation};
use crate::propose::{self, Proposal, ProposalBody, ProposalKind, ProposalState};
use crate::warehouse::Warehouse;
use api::*;
use orchestrator::{Orchestrator, RunRecord};

pub use intent::{Answer, Settled};

fn short_time(at: Timestamp) -> String {
    at.hour_minute()
}

pub struct Engine {
    config: Config,
    state: crate::store::State,
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
    latest: views::Latest,
    /// Marks which incidents changed, so a change costs the views of those only.
    incidents: incidents::Incidents,
    notices: Vec<String>,
    console_actor: String,
    /// The time of the turn in hand (None before the first).
    now: Option<Timestamp>,
    now_time: NaiveDateTime,
    /// Where the engine reads "now" between turns: the wall's, or the demo's story.
    clock: crate::clock::Clock,
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
    /// Asks the poll task to poll or read the scheduler now (`set_poll_worker`), and
    /// how many asks it has not answered yet.
    poll_worker: Option<std::sync::Arc<dyn Fn(poll_task::PollAsk) + Send + Sync>>,
    polls_asked: usize,
    /// The pipelines bar as last read from the orchestrator: a snapshot shows this and
    /// never calls out, so a slow scheduler cannot delay one.
    pipelines: Vec<PipelineView>,
    /// The followed runs as the orchestrator last reported them, by (job, run id):
    /// a turn follows its runs from here, never calling out.
    run_reports: BTreeMap<(String, String), RunRecord>,
    /// Since when, and why, the orchestrator has not answered.
    orchestrator_down: Option<(Timestamp, String)>,
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
    /// What the latest poll of each warehouse cost it, by warehouse name.
    poll_costs: BTreeMap<String, crate::monitor::poller::PollCost>,
    /// Access requests, and the catalogs they are judged and watched by (`access.rs`).
    access: access::Access,
    /// Migration waves: their sides as read and their sign-offs (`waves.rs`).
    waves: waves::Waves,
}

impl Engine {
    /// Builds the engine from a config. The orchestrator is passed in: which scheduler
    /// to talk to is decided by whoever starts the engine.
    pub fn new(
        config: Config,
        state: impl Into<crate::store::State>,
        orchestrator: Option<Box<dyn Orchestrator>>,
        console_actor: &Actor,
    ) -> Result<Engine> {
        Engine::new_telling(config, state, orchestrator, console_actor, &mut |_, _| {})
    }

    /// [`Engine::new`], telling `progress` how much of the manifest is loaded (`(bytes,
    /// the file's size)`; see [`Lineage::load_telling`]).
    pub fn new_telling(
        config: Config,
        state: impl Into<crate::store::State>,
        orchestrator: Option<Box<dyn Orchestrator>>,
        console_actor: &Actor,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine> {
        crate::sanitize::remember_config_secrets(&config);
        let state = state.into();
        let poller = Poller::from_config(&config)?;
        crate::monitor::minutes::forget_others(&*state, &config.monitor_names())?;
        let lineage = policy::load_lineage(&config, progress)?;
        let database_file = state_file::opened_file(&*state);
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
            latest: Default::default(),
            incidents: Default::default(),
            notices: Vec::new(),
            console_actor: console_actor.display(),
            now: None,
            now_time: crate::clock::Clock::wall().naive(),
            clock: crate::clock::Clock::wall(),
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
            poll_worker: None,
            polls_asked: 0,
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
            poll_costs: BTreeMap::new(),
            access: Default::default(),
            waves: Default::default(),
        };
        // The chain is held against its checkpoint before anything is appended: a
        // cut-off tail or a rewrite must stop the engine from writing past it.
        let report = chain::verify(&*engine.state)?;
        if let Some(bad) = report.first_bad {
            engine.chain_alarm = Some(format!(
                "CHAIN BROKEN at record #{}: {}; dataward records nothing until it is repaired",
                bad.seq, bad.reason
            ));
        }
        engine.init_observation_mark()?;
        engine.load()?;
        engine.join_learned_lineage()?;
        engine.refresh_quiet();
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

    /// Polls and reads the scheduler through `ask` (a `PollTask`'s asker), never
    /// inline: where the engine read the scheduler itself (after an effect changed it)
    /// it asks instead, and a driver asks for its turn's poll with `ask_poll`. Each ask
    /// is answered by the task's news, then `poll_answered`.
    pub fn set_poll_worker(
        &mut self,
        ask: std::sync::Arc<dyn Fn(poll_task::PollAsk) + Send + Sync>,
    ) {
        self.inline_polling = false;
        self.poll_worker = Some(ask);
    }

    /// Asks the poll task to poll what is due now; false when there is none to ask
    /// (then `tick` polls inline).
    pub fn ask_poll(&mut self) -> bool {
        self.ask_poll_task(poll_task::PollAsk::Poll)
    }

    fn ask_poll_task(&mut self, what: poll_task::PollAsk) -> bool {
        let Some(ask) = &self.poll_worker else {
            return false;
        };
        ask(what);
        self.polls_asked += 1;
        true
    }

    /// The poll task answered one ask (what it read was handed over before).
    pub fn poll_answered(&mut self) {
        self.polls_asked = self.polls_asked.saturating_sub(1);
    }

    /// Whether an ask of the poll task is not answered yet.
    pub fn awaiting_poll(&self) -> bool {
        self.polls_asked > 0
    }

    /// Judges and stores what the poll task read, in a transaction of the engine's own:
    /// the engine is the one writer to the state database. The next `tick` acts on it
    /// (a crash in between loses nothing: it is acted on by its mark).
    pub fn store_polled(&mut self, read: crate::monitor::poller::PollRead) -> Result<()> {
        self.ensure_database()?;
        let costs = read.cost();
        let observations = read.store(&*self.state)?;
        self.poll_health.log(&observations);
        self.note_costs(costs);
        Ok(())
    }

    /// Keeps what a poll cost each warehouse it sent anything to; a warehouse it did
    /// not poll (none of its monitors due) keeps its last poll's figure.
    fn note_costs(&mut self, costs: Vec<crate::monitor::poller::PollCost>) {
        for cost in costs {
            if cost.queries > 0 || cost.sessions > 0 || cost.guard_reached {
                self.poll_costs.insert(cost.warehouse.clone(), cost);
            }
        }
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
        self.pipelines = (reading.pipelines.unwrap_or_default().into_iter())
            .map(PipelineView::from)
            .collect();
        for mut run in reading.runs {
            // Stored with the incident, shown by `show --json` and the receipt.
            run.detail = crate::sanitize::mask_secrets(&run.detail).into_owned();
            self.run_reports
                .insert((run.job.clone(), run.id.clone()), run);
        }
        match (reading.error, &self.orchestrator_down) {
            (Some(error), None) => {
                tracing::warn!(%error, "the orchestrator does not answer");
                self.orchestrator_down = Some((self.now(), error));
            }
            (Some(error), Some((since, _))) => {
                self.orchestrator_down = Some((*since, error));
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

    /// Reads the orchestrator when polling inline, or asks the poll task to (its
    /// reading comes back through `set_reading`).
    fn refresh_scheduler(&mut self) {
        if !self.inline_polling {
            self.ask_poll_task(poll_task::PollAsk::Scheduler);
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

    /// The last turn's time, or the clock's before the first turn: what a record or
    /// an event is stamped with.
    fn now(&self) -> Timestamp {
        self.now.unwrap_or_else(|| self.clock.timestamp())
    }

    /// Runs the engine on `clock` (the wall's unless told): what its turns are given,
    /// and what it reads before the first.
    pub fn set_clock(&mut self, clock: crate::clock::Clock) {
        if self.now.is_none() {
            self.now_time = clock.naive();
        }
        self.clock = clock;
    }

    pub fn clock(&self) -> &crate::clock::Clock {
        &self.clock
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
        self.record_at(self.now(), kind, actor, payload)
    }

    fn record_at(
        &mut self,
        at: Timestamp,
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
        Ok(chain::append_in(&*self.state, at, kind, actor, &payload)?.seq)
    }

    /// Records an incident's cause and evidence on the chain, and says them to the
    /// consoles.
    fn record_diagnosis(&mut self, id: &str, diagnosis: &Diagnosis) -> Result<Event> {
        self.record(
            "diagnosis",
            ENGINE_ACTOR,
            json!({"incident": id, "cause": diagnosis.cause, "evidence": diagnosis.evidence}),
        )?;
        Ok(self.event(EventKind::Diagnosis {
            incident: id.to_string(),
            cause: diagnosis.cause.clone(),
            evidence: diagnosis.evidence.clone(),
        }))
    }

    fn event(&self, kind: EventKind) -> Event {
        Event {
            at: self.now(),
            kind,
        }
    }

    /// One turn of the clock: carry out intents left from before, poll what is due
    /// (unless a `PollTask` does), act on what was stored (in one transaction), then
    /// carry out the intents that made. Returns what happened.
    pub fn tick(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        self.now = Some(Timestamp::from_naive(now));
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
            let read = self.poller.read(&*self.state, &due, now.and_utc())?;
            let costs = read.cost();
            read.store(&*self.state)?;
            self.note_costs(costs);
        }
        Ok(())
    }

    /// Everything one turn decides, inside one transaction.
    fn turn(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let mut events = self.lapse_requests()?;
        events.extend(self.end_snoozes()?);
        events.extend(self.access_turn()?);
        self.waves_turn()?;
        self.refresh_quiet();
        self.store_run_cadences(now)?;
        let polled = self.unseen_observations()?;
        if !polled.is_empty() {
            // What the warehouses said is asked again for what the new poll raises.
            self.evidence.forget_answers();
        }
        for (_, observation) in &polled {
            self.note_latest(observation.clone());
        }
        events.extend(self.read_failed_runs()?);
        if !polled.is_empty() {
            events.extend(self.rediagnose_failed_runs()?);
        }
        let snoozes = self.state.running_snoozes()?;
        for (_, observation) in &polled {
            // A snooze or a maintenance window: recorded, shown, nobody paged.
            let quiet = self.quiet_among(
                &snoozes,
                &observation.monitor,
                &observation.table,
                observation.at,
            )?;
            if let Some(quiet) = quiet {
                events.extend(self.keep_quiet(observation, &quiet)?);
            } else if observation.verdict.is_breach() {
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
            .or_else(|| self.failed_run_caused_by(&observation.table))
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
        let mut events = vec![self.record_diagnosis(&id, &diagnosis)?];
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
            let incident = Incident::opened(&id, observation, &expected, self.now(), diagnosis);
            self.incidents.push(incident);
            return Ok(events);
        };
        let diagnosis = diagnosis::diagnose(&facts);
        events.push(self.record_diagnosis(&id, &diagnosis)?);

        let mut incident = Incident::opened(&id, observation, &expected, self.now(), diagnosis);
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
                kind: p.kind.into(),
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
            let at = pipelines.iter().find(|p| &p.name == name)?.last_run_at?;
            Some(at.hour_minute())
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
}
