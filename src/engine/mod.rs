//! The engine wires the stages of the loop together: monitors are polled on the clock
//! it is given, breaches open incidents with a diagnosis, a blast radius and proposals,
//! commands from people are checked against the policy, and every decision goes to the
//! chain. Commands in, events out; it never draws.

pub mod api;
pub mod live;
pub mod orchestrator;
pub mod session;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use chrono::{NaiveDateTime, TimeDelta};
use rusqlite::Connection;
use serde_json::json;

use crate::approve::request::{ApprovalRequest, Lapse};
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

pub fn timestamp(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn short_time(at: &str) -> &str {
    at.get(11..16).unwrap_or(at)
}

/// A run queued for an incident, and what the scheduler said of it.
struct RunState {
    id: i64,
    job: String,
    /// The incident's row count was back within baseline when the run was queued.
    after_recovery: bool,
    finished: Option<RunRecord>,
}

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
}

pub struct Engine {
    config: Config,
    state: Connection,
    /// Runs the checks: bounded concurrency per warehouse, a timeout per check, backoff
    /// for a warehouse that is down.
    poller: Poller,
    lineage: Option<Lineage>,
    orchestrator: Option<Box<dyn Orchestrator>>,
    next_due: BTreeMap<String, NaiveDateTime>,
    /// The latest observation per (monitor, check, column): null_rate has one per column.
    latest: BTreeMap<(String, CheckKind, Option<String>), Observation>,
    incidents: Vec<Incident>,
    notices: Vec<String>,
    console_actor: String,
    now: String,
    now_time: NaiveDateTime,
    /// The approval request behind each hold and diff proposal, by proposal id.
    requests: BTreeMap<String, ApprovalRequest>,
    /// The config file's hash as last recorded on the chain.
    policy_hash: String,
    /// Why the policy cannot be evaluated, if it cannot: then every decision is denied.
    policy_error: Option<String>,
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
        let poller = Poller::from_config(&config)?;
        let lineage = match &config.lineage {
            Some(l) => {
                let notes: Option<PathBuf> = l.notes.as_ref().map(|n| config.resolve(n));
                let mut lineage = Lineage::load(&config.resolve(&l.manifest), notes.as_deref())
                    .map_err(|e| anyhow!("{e}"))?;
                if let Some(catalog) = &l.catalog {
                    lineage = lineage
                        .with_catalog(&config.resolve(catalog))
                        .map_err(|e| anyhow!("{e}"))?;
                }
                Some(lineage)
            }
            None => None,
        };
        let mut engine = Engine {
            config,
            state,
            poller,
            lineage,
            orchestrator,
            next_due: BTreeMap::new(),
            latest: BTreeMap::new(),
            incidents: Vec::new(),
            notices: Vec::new(),
            console_actor: console_actor.display(),
            now: String::new(),
            now_time: chrono::Utc::now().naive_utc(),
            requests: BTreeMap::new(),
            policy_hash: String::new(),
            policy_error: None,
        };
        engine.record_policy()?;
        Ok(engine)
    }

    /// The chain holds the hash of the policy in force whenever it changes. A config
    /// that no longer parses leaves the old monitors running but denies every decision,
    /// with the reason, until it is fixed.
    fn record_policy(&mut self) -> Result<()> {
        use sha2::{Digest, Sha256};
        let text = std::fs::read(&self.config.origin).unwrap_or_default();
        let hash: String = Sha256::digest(&text)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if hash == self.policy_hash {
            return Ok(());
        }
        let error = if self.policy_hash.is_empty() {
            None
        } else {
            match Config::load(&self.config.origin) {
                Ok(config) => {
                    self.config = config;
                    None
                }
                Err(e) => Some(format!("{e:#}")),
            }
        };
        let last: Option<String> = self
            .state
            .query_row(
                "SELECT json_extract(payload, '$.config_hash') FROM chain WHERE kind = 'policy' ORDER BY seq DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok();
        if last.as_deref() != Some(hash.as_str()) {
            let payload = json!({"config": self.config.origin.display().to_string(), "config_hash": hash, "error": error});
            let at = self.now_or_wall();
            chain::append(&mut self.state, &at, "policy", ENGINE_ACTOR, &payload)?;
        }
        if let Some(e) = &error {
            self.notices.push(format!(
                "policy cannot be evaluated, every decision is denied: {e}"
            ));
        }
        self.policy_error = error;
        self.policy_hash = hash;
        Ok(())
    }

    fn now_or_wall(&self) -> String {
        if self.now.is_empty() {
            timestamp(chrono::Utc::now().naive_utc())
        } else {
            self.now.clone()
        }
    }

    fn record(&mut self, kind: &str, actor: &str, payload: serde_json::Value) -> Result<u64> {
        let at = self.now.clone();
        Ok(chain::append(&mut self.state, &at, kind, actor, &payload)?.seq)
    }

    fn event(&self, kind: EventKind) -> Event {
        Event {
            at: self.now.clone(),
            kind,
        }
    }

    /// One turn of the clock: poll what is due, open incidents on breaches, follow runs,
    /// verify. Returns what happened.
    pub fn tick(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        self.now = timestamp(now);
        self.now_time = now;
        self.record_policy()?;
        let mut events = self.lapse_requests()?;
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
        let polled = if due.is_empty() {
            Vec::new()
        } else {
            self.poller.poll(&self.state, &due, now.and_utc())?
        };
        for observation in &polled {
            self.latest.insert(
                (
                    observation.monitor.clone(),
                    observation.check,
                    observation.detail.column.clone(),
                ),
                observation.clone(),
            );
        }
        for observation in &polled {
            // A schema change is evidence for a diagnosis, not an incident by itself.
            if !observation.verdict.is_breach() || observation.check == CheckKind::Schema {
                continue;
            }
            // One incident per (monitor, table): a further breach updates it.
            match self.incidents.iter_mut().find(|i| {
                i.monitor == observation.monitor
                    && i.table == observation.table
                    && i.status != IncidentStatus::Resolved
            }) {
                Some(incident) => incident.update(observation),
                None => events.extend(self.open_incident(observation)?),
            }
        }
        events.extend(self.follow_runs()?);
        events.extend(self.dispatch_autonomous_runs()?);
        if !polled.is_empty() {
            events.extend(self.verify_incidents(now)?);
        }
        Ok(events)
    }

    fn open_incident(&mut self, observation: &Observation) -> Result<Vec<Event>> {
        let count: u64 = self.state.query_row(
            "SELECT count(*) FROM chain WHERE kind = 'incident_opened'",
            [],
            |r| r.get(0),
        )?;
        let id = format!("INC-{:04}", count + 1);
        let expected = observation.expected_text();
        let seq_payload = json!({
            "incident": id, "table": observation.table, "monitor": observation.monitor,
            "observed": observation.value, "expected": expected,
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
        if approve::autonomy(&self.config, &observation.table) == 0 {
            let diagnosis = Diagnosis {
                kind: diagnosis::CauseKind::Unexplained,
                cause: "L0: monitors only; no diagnosis".to_string(),
                evidence: Vec::new(),
                column_change: None,
            };
            let incident = Incident::opened(&id, observation, &expected, &self.now, diagnosis);
            self.incidents.push(incident);
            return Ok(events);
        }
        let facts = self.facts(observation)?;
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
        if let Some(lineage) = &self.lineage {
            match lineage.resolve(&observation.table) {
                Ok(from) => {
                    let column = incident
                        .diagnosis
                        .column_change
                        .as_ref()
                        .map(|c| ColumnChange {
                            column: c.column.clone(),
                            new_type: c.to.clone(),
                        });
                    let blast = lineage.blast_radius(from, column.as_ref());
                    incident.blast = blast.nodes.iter().map(blast_node).collect();
                    if approve::autonomy(&self.config, &observation.table) >= 2 {
                        let orchestrator = &self.orchestrator;
                        let last_run = |job: &str| -> Option<String> {
                            let pipelines = orchestrator.as_ref()?.pipelines().ok()?;
                            let name = lineage
                                .resolve(job)
                                .ok()
                                .map(|i| lineage.node(i).name.clone())?;
                            pipelines
                                .into_iter()
                                .find(|p| p.name == name)
                                .and_then(|p| p.last_run_at)
                                .map(|at| short_time(&at).to_string())
                        };
                        let share = facts.baseline.map(|b| (facts.observed / b * 100.0).round());
                        incident.proposals = propose::propose(&propose::Context {
                            incident: &id,
                            table: &observation.table,
                            opened_at: short_time(&self.now),
                            observed_share: share,
                            diagnosis: &incident.diagnosis,
                            lineage,
                            from,
                            blast: &blast,
                            job_last_run: &last_run,
                        });
                    }
                }
                Err(e) => self.notices.push(format!("{id}: no blast radius: {e}")),
            }
        }
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
        events.push(self.event(EventKind::BlastRadius {
            incident: id.clone(),
            nodes: incident.blast.clone(),
        }));
        for p in &incident.proposals {
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
        }
        for p in &incident.proposals {
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
        self.incidents.push(incident);
        let i = self.incidents.len() - 1;
        events.extend(self.act_autonomously(i)?);
        Ok(events)
    }

    /// At L4, a hold of the `pause_job` class is carried out at once, without approval,
    /// and recorded as dataward's own act. Code diffs always wait for the owner.
    fn act_autonomously(&mut self, i: usize) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for p in 0..self.incidents[i].proposals.len() {
            let proposal = self.incidents[i].proposals[p].clone();
            if proposal.kind != ProposalKind::Hold
                || approve::autonomy(&self.config, &proposal.target) < 4
                || !approve::class_allowed(&self.config, &proposal.target, "pause_job")
            {
                continue;
            }
            self.apply_effect(&proposal.body, true)?;
            let seq = self.record(
                "decision",
                ENGINE_ACTOR,
                json!({"incident": self.incidents[i].id, "proposal": proposal.id, "verdict": Verdict::Autonomous,
                       "content_hash": proposal.content_hash, "reason": "L4: pause_job runs without approval"}),
            )?;
            self.incidents[i].proposals[p].state = ProposalState::Approved;
            events.push(self.event(EventKind::Decision {
                proposal: proposal.id.clone(),
                verdict: Verdict::Autonomous,
                actor: "dataward".to_string(),
                seq,
            }));
        }
        Ok(events)
    }

    /// Unanswered requests expire and escalate as time passes; never granted.
    fn lapse_requests(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let ids: Vec<String> = self.requests.keys().cloned().collect();
        for id in ids {
            let lapses = {
                let request = self.requests.get_mut(&id).expect("listed");
                request.tick(&self.config, self.now_time)
            };
            for lapse in lapses {
                let (i, p) = self.find_proposal(&id)?;
                let incident = self.incidents[i].id.clone();
                match lapse {
                    Lapse::Escalated { to, at } => {
                        let seq = self.record(
                            "escalation",
                            ENGINE_ACTOR,
                            json!({"incident": incident, "proposal": id, "to": to, "due": at}),
                        )?;
                        self.notices
                            .push(format!("{id} unanswered: escalated to {to}"));
                        events.push(self.event(EventKind::Escalated {
                            proposal: id.clone(),
                            to,
                            seq,
                        }));
                    }
                    Lapse::Expired { at } => {
                        let seq = self.record(
                            "expiry",
                            ENGINE_ACTOR,
                            json!({"incident": incident, "proposal": id, "due": at}),
                        )?;
                        self.incidents[i].proposals[p].state = ProposalState::Expired;
                        self.notices
                            .push(format!("{id} expired unanswered; nothing was granted"));
                        events.push(self.event(EventKind::Expired {
                            proposal: id.clone(),
                            seq,
                        }));
                    }
                }
            }
        }
        Ok(events)
    }

    /// At L3 and L4, dataward queues the run an approved hold planned as soon as the
    /// table is back at its baseline, when the domain allows the `run_job` class.
    fn dispatch_autonomous_runs(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            if incident.status == IncidentStatus::Resolved
                || incident.run.is_some()
                || !self.recovered(&incident.monitor)
            {
                continue;
            }
            let Some(hold) = incident
                .proposals
                .iter()
                .find(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved)
            else {
                continue;
            };
            if approve::autonomy(&self.config, &hold.target) < 3
                || !approve::class_allowed(&self.config, &hold.target, "run_job")
            {
                continue;
            }
            let id = incident.id.clone();
            match self.queue_run(&id, None) {
                Ok(more) => events.extend(more),
                Err(e) => {
                    let reason = format!("{e:#}");
                    self.notices
                        .push(format!("{id}: dataward did not dispatch the run: {reason}"));
                    events.push(self.event(EventKind::Refused {
                        command: format!("autonomous run for {id}"),
                        reason,
                    }));
                }
            }
        }
        Ok(events)
    }

    /// Gathers what diagnosis needs from stored observations.
    fn facts(&self, observation: &Observation) -> Result<Facts> {
        let changes = |monitor: &str| -> Result<Vec<(String, SchemaChange)>> {
            Ok(monitor::history(&self.state, monitor, CheckKind::Schema)?
                .into_iter()
                .flat_map(|o| {
                    let at = short_time(&o.at).to_string();
                    o.detail.changes.into_iter().map(move |c| (at.clone(), c))
                })
                .collect())
        };
        let config = self
            .config
            .monitor
            .iter()
            .find(|m| Config::monitor_name(m) == observation.monitor);
        let source_monitor = config.and_then(|m| m.source.as_ref()).and_then(|s| {
            self.config
                .monitor
                .iter()
                .find(|m| m.warehouse == s.warehouse && m.table == s.table)
        });
        let (source_table, source_changes, source_rows) = match source_monitor {
            Some(m) => {
                let name = Config::monitor_name(m);
                let rows = self
                    .latest
                    .get(&(name.clone(), CheckKind::RowCount, None))
                    .and_then(|o| o.value);
                (Some(m.table.clone()), changes(&name)?, rows)
            }
            None => (None, Vec::new(), None),
        };
        let counts = monitor::history(&self.state, &observation.monitor, CheckKind::RowCount)?;
        let recent_counts = counts
            .iter()
            .rev()
            .take(2)
            .rev()
            .filter_map(|o| o.value.map(|v| (short_time(&o.at).to_string(), v)))
            .collect();
        Ok(Facts {
            table: observation.table.clone(),
            observed: observation.value.unwrap_or_default(),
            baseline: observation.expected.map(|r| r.baseline),
            opened_at: short_time(&observation.at).to_string(),
            source_table,
            source_changes,
            table_changes: changes(&observation.monitor)?,
            source_rows,
            recent_counts,
        })
    }

    fn follow_runs(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let Some(run) = &self.incidents[i].run else {
                continue;
            };
            if run.finished.is_some() {
                continue;
            }
            let Some(orchestrator) = &self.orchestrator else {
                continue;
            };
            let Some(record) = orchestrator.run(run.id)? else {
                continue;
            };
            if record.status == "queued" {
                continue;
            }
            let id = self.incidents[i].id.clone();
            let seq = self.record(
                "run",
                ENGINE_ACTOR,
                json!({"incident": id, "run": record.id, "job": record.job, "status": record.status,
                       "started_at": record.started_at, "finished_at": record.finished_at, "detail": record.detail}),
            )?;
            events.push(self.event(EventKind::Run {
                incident: id,
                job: record.job.clone(),
                status: record.status.clone(),
                seq,
            }));
            let incident = &mut self.incidents[i];
            incident.status = if record.status == "success" {
                IncidentStatus::Verifying
            } else {
                IncidentStatus::Open
            };
            incident.run.as_mut().expect("checked above").finished = Some(record);
        }
        Ok(events)
    }

    /// Re-runs the checks for incidents whose run finished at least the settle window
    /// ago. Only a pass closes the incident; a failure sends it back to people.
    fn verify_incidents(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let settle = crate::config::parse_duration(&self.config.verify.settle).expect("validated");
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            if incident.status != IncidentStatus::Verifying {
                continue;
            }
            let Some(finished_at) = incident
                .run
                .as_ref()
                .and_then(|r| r.finished.as_ref())
                .and_then(|r| r.finished_at.as_deref())
                .and_then(|at| NaiveDateTime::parse_from_str(at, "%Y-%m-%dT%H:%M:%SZ").ok())
            else {
                continue;
            };
            if now < finished_at + TimeDelta::from_std(settle).expect("small") {
                continue;
            }
            let checks = self.checks(i);
            let passed = checks.iter().all(|c| c.passed);
            let id = self.incidents[i].id.clone();
            self.record(
                "verification",
                ENGINE_ACTOR,
                json!({"incident": id, "passed": passed, "checks": checks}),
            )?;
            events.push(self.event(EventKind::Verification {
                incident: id.clone(),
                passed,
                checks: checks.clone(),
            }));
            self.incidents[i].checks = checks;
            if passed {
                events.extend(self.resolve(i)?);
            } else {
                self.incidents[i].status = IncidentStatus::Open;
                self.notices.push(format!(
                    "{id}: verification failed; the incident stays open"
                ));
            }
        }
        Ok(events)
    }

    fn checks(&self, i: usize) -> Vec<Check> {
        let incident = &self.incidents[i];
        let mut checks = Vec::new();
        if let Some(o) = self
            .latest
            .get(&(incident.monitor.clone(), CheckKind::RowCount, None))
        {
            checks.push(Check {
                name: format!("{} row count within baseline", incident.table),
                passed: o.verdict.as_str() == "ok",
                detail: format!(
                    "{} observed, expected {}",
                    o.observed_text(),
                    o.expected_text()
                ),
            });
        }
        if let Some(change) = &incident.diagnosis.column_change {
            let seen = self
                .latest
                .get(&(incident.monitor.clone(), CheckKind::Schema, None))
                .and_then(|o| o.detail.columns.clone())
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.name.eq_ignore_ascii_case(&change.column));
            let passed = seen
                .as_ref()
                .is_some_and(|c| c.data_type.eq_ignore_ascii_case(&change.to));
            checks.push(Check {
                name: format!(
                    "{}.{} type recorded as {}",
                    incident.table, change.column, change.to
                ),
                passed,
                detail: match seen {
                    Some(c) => format!(
                        "warehouse column is {}, source is {}",
                        c.data_type, change.to
                    ),
                    None => "column not found in the warehouse".to_string(),
                },
            });
        }
        if let Some(run) = &incident.run {
            let record = run.finished.as_ref();
            checks.push(Check {
                name: format!("run #{} of {} after the refill", run.id, run.job),
                passed: run.after_recovery && record.is_some_and(|r| r.status == "success"),
                detail: match record {
                    Some(r) if !run.after_recovery => format!(
                        "{}, but queued while {} was still below baseline: the models were built on a partial table",
                        r.status, incident.table
                    ),
                    Some(r) => format!("{}: {}", r.status, r.detail),
                    None => "not finished".to_string(),
                },
            });
        }
        for p in &incident.proposals {
            let ProposalBody::Diff { file, .. } = &p.body else {
                continue;
            };
            checks.push(self.model_check(p, file));
        }
        checks
    }

    /// Does the model's SQL, as it stands in the project now, run on today's data?
    fn model_check(&self, proposal: &Proposal, file: &str) -> Check {
        let name = format!("{} runs on today's data", proposal.target);
        let result = (|| -> Result<u64> {
            let lineage = self.lineage.as_ref().context("no lineage")?;
            let project = self
                .config
                .lineage
                .as_ref()
                .and_then(|l| l.project_dir.as_ref())
                .map(|d| self.config.resolve(d))
                .context("no project_dir in [lineage]")?;
            let raw = std::fs::read_to_string(project.join(file))
                .with_context(|| format!("{}", project.join(file).display()))?;
            let sql = lineage.render_inline(&raw).map_err(|e| anyhow!("{e}"))?;
            let target = lineage
                .resolve(&proposal.target)
                .map_err(|e| anyhow!("{e}"))?;
            let warehouse = self
                .warehouse_for(lineage.node(target).relation_name.as_deref())
                .context("no warehouse")?;
            Ok(warehouse.dry_run(&sql)?)
        })();
        match result {
            Ok(rows) => Check {
                name,
                passed: true,
                detail: format!("{rows} rows, no error"),
            },
            Err(e) => Check {
                name,
                passed: false,
                detail: format!("{e:#}"),
            },
        }
    }

    /// The warehouse holding dbt's relations: the first one a monitor watches a dbt
    /// source in. With one warehouse, that one.
    fn warehouse_for(&self, _relation: Option<&str>) -> Option<&(dyn Warehouse + Sync)> {
        let monitored = self.config.monitor.iter().find(|m| m.source.is_some());
        let name = monitored
            .map(|m| m.warehouse.clone())
            .or_else(|| self.config.warehouse.keys().next().cloned())?;
        self.poller.warehouse(&name).map(|w| w.as_ref())
    }

    fn resolve(&mut self, i: usize) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let id = self.incidents[i].id.clone();
        for p in 0..self.incidents[i].proposals.len() {
            let proposal = &self.incidents[i].proposals[p];
            if proposal.state != ProposalState::Approved {
                continue;
            }
            if let ProposalBody::Hold { job, .. } = &proposal.body {
                let job = job.clone();
                let pid = proposal.id.clone();
                if let Some(o) = &self.orchestrator {
                    o.set_paused(&job, false)?;
                }
                let action = format!("resumed the {job} schedule");
                let seq = self.record(
                    "undo",
                    ENGINE_ACTOR,
                    json!({"incident": id, "proposal": pid, "action": action}),
                )?;
                events.push(self.event(EventKind::Undo {
                    proposal: pid,
                    action,
                    seq,
                }));
                self.incidents[i].proposals[p].state = ProposalState::Completed;
            }
        }
        self.record("incident_resolved", ENGINE_ACTOR, json!({"incident": id}))?;
        events.push(self.event(EventKind::IncidentResolved {
            incident: id.clone(),
        }));
        let records = chain::records(&self.state)?;
        let receipt = receipt::build(&records, &id)?;
        let digest = receipt::digest(&receipt);
        self.record(
            "receipt",
            ENGINE_ACTOR,
            json!({"incident": id, "receipt_hash": digest}),
        )?;
        self.incidents[i].receipt = Some(receipt.to_markdown());
        self.incidents[i].status = IncidentStatus::Resolved;
        events.push(self.event(EventKind::Receipt { incident: id }));
        Ok(events)
    }

    /// Applies a person's command. A refused command changes nothing and says why.
    pub fn handle(&mut self, command: Command, actor: &Actor) -> Vec<Event> {
        let described = format!("{command:?}");
        match self.apply(command, actor) {
            Ok(events) => events,
            Err(e) => {
                let reason = format!("{e:#}");
                self.notices.push(format!("refused: {reason}"));
                vec![self.event(EventKind::Refused {
                    command: described,
                    reason,
                })]
            }
        }
    }

    fn find_proposal(&self, id: &str) -> Result<(usize, usize)> {
        for (i, incident) in self.incidents.iter().enumerate() {
            if let Some(p) = incident.proposals.iter().position(|p| p.id == id) {
                return Ok((i, p));
            }
        }
        Err(anyhow!("no proposal {id}"))
    }

    fn apply(&mut self, command: Command, actor: &Actor) -> Result<Vec<Event>> {
        match command {
            Command::Approve {
                proposal,
                content_hash,
                reason,
            } => self.decide(&proposal, &content_hash, &reason, actor, Verdict::Approved),
            Command::Reject {
                proposal,
                content_hash,
                reason,
            } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a rejection needs a reason");
                self.decide(&proposal, &content_hash, &reason, actor, Verdict::Rejected)
            }
            Command::RollBack { proposal, reason } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a roll back needs a reason");
                let (i, p) = self.find_proposal(&proposal)?;
                let hash = self.incidents[i].proposals[p].content_hash.clone();
                self.decide(&proposal, &hash, &reason, actor, Verdict::RolledBack)
            }
            Command::Forward { proposal } => {
                let (i, p) = self.find_proposal(&proposal)?;
                let prop = &self.incidents[i].proposals[p];
                anyhow::ensure!(
                    prop.kind == ProposalKind::Note,
                    "only notes are forwarded; {proposal} is a {:?}",
                    prop.kind
                );
                anyhow::ensure!(
                    prop.state == ProposalState::Pending,
                    "{proposal} was already {:?}",
                    prop.state
                );
                anyhow::ensure!(
                    !actor.roles(&self.config).is_empty(),
                    "{} has no role in the policy",
                    actor.display()
                );
                let payload = json!({"incident": self.incidents[i].id, "proposal": proposal, "verdict": "forwarded",
                    "content_hash": prop.content_hash, "to": prop.owner, "reason": ""});
                let seq = self.record("decision", &actor.to_json(), payload)?;
                self.incidents[i].proposals[p].state = ProposalState::Forwarded;
                Ok(vec![self.event(EventKind::Decision {
                    proposal,
                    verdict: Verdict::Forwarded,
                    actor: actor.display(),
                    seq,
                })])
            }
            Command::QueueRun { incident } => self.queue_run(&incident, Some(actor)),
            Command::OrgStop { reason } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a stop needs a reason");
                let at = self.now.clone();
                stop::set(&mut self.state, actor, &reason, &at)?;
                self.org_stop_event("set", actor)
            }
            Command::LiftStop => {
                let at = self.now.clone();
                let state = stop::lift(&mut self.state, actor, &at)?;
                self.org_stop_event(if state.active { "lift_request" } else { "lift" }, actor)
            }
        }
    }

    fn org_stop_event(&mut self, action: &str, actor: &Actor) -> Result<Vec<Event>> {
        let seq = chain::head(&self.state)?.map(|h| h.seq).unwrap_or_default();
        self.notices.push(match action {
            "set" => format!(
                "org-wide stop set by {}: nothing is dispatched",
                actor.display()
            ),
            "lift_request" => format!(
                "{} asked to lift the stop; a second person must confirm",
                actor.display()
            ),
            _ => format!("org-wide stop lifted by {}", actor.display()),
        });
        Ok(vec![self.event(EventKind::OrgStop {
            action: action.to_string(),
            actor: actor.display(),
            seq,
        })])
    }

    fn decide(
        &mut self,
        id: &str,
        content_hash: &str,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        let (i, p) = self.find_proposal(id)?;
        let proposal = self.incidents[i].proposals[p].clone();
        anyhow::ensure!(
            proposal.content_hash == content_hash,
            "{id} changed since it was shown (hash {} now, {} seen); the decision is void",
            &proposal.content_hash[..12],
            content_hash.get(..12).unwrap_or(content_hash)
        );
        anyhow::ensure!(
            proposal.kind != ProposalKind::Note || verdict == Verdict::Rejected,
            "a note is forwarded (f), not approved or rolled back"
        );
        if let Some(e) = &self.policy_error {
            anyhow::bail!("the policy cannot be evaluated, so nothing may be decided: {e}");
        }
        let mut request = self
            .requests
            .get(id)
            .cloned()
            .ok_or_else(|| anyhow!("{id} has no approval request"))?;
        match verdict {
            Verdict::Approved | Verdict::Rejected => request
                .decide(
                    &self.config,
                    actor,
                    content_hash,
                    verdict == Verdict::Approved,
                )
                .map_err(|e| anyhow!("{id}: {e}"))?,
            _ => {
                anyhow::ensure!(
                    proposal.state == ProposalState::Approved,
                    "{id} is {:?}; only an approved proposal can be rolled back",
                    proposal.state
                );
                request
                    .may_act(&self.config, actor)
                    .map_err(|e| anyhow!("{id}: {e}"))?;
            }
        }
        // The effect first: if pausing the job or writing the file fails, nothing is
        // recorded as done.
        match verdict {
            Verdict::Approved => self.apply_effect(&proposal.body, true)?,
            Verdict::RolledBack => self.apply_effect(&proposal.body, false)?,
            _ => {}
        }
        self.requests.insert(id.to_string(), request);
        let payload = json!({"incident": self.incidents[i].id, "proposal": id, "verdict": verdict,
            "content_hash": content_hash, "reason": reason});
        let seq = self.record("decision", &actor.to_json(), payload)?;
        self.incidents[i].proposals[p].state = match verdict {
            Verdict::Approved => ProposalState::Approved,
            Verdict::Rejected => ProposalState::Rejected,
            Verdict::RolledBack => ProposalState::RolledBack,
            Verdict::Forwarded => ProposalState::Forwarded,
            Verdict::Autonomous => ProposalState::Approved,
        };
        let mut events = vec![self.event(EventKind::Decision {
            proposal: id.to_string(),
            verdict,
            actor: actor.display(),
            seq,
        })];
        if verdict == Verdict::RolledBack {
            let action = match &proposal.body {
                ProposalBody::Hold { job, .. } => format!("resumed the {job} schedule"),
                ProposalBody::Diff { file, .. } => format!("reverted {file}"),
                ProposalBody::Note { .. } => "nothing".to_string(),
            };
            let seq = self.record(
                "undo",
                &actor.to_json(),
                json!({"incident": self.incidents[i].id, "proposal": id, "action": action}),
            )?;
            events.push(self.event(EventKind::Undo {
                proposal: id.to_string(),
                action,
                seq,
            }));
        }
        Ok(events)
    }

    /// Does (or undoes) what an approved proposal says.
    fn apply_effect(&self, body: &ProposalBody, forward: bool) -> Result<()> {
        match body {
            ProposalBody::Hold { job, .. } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured to pause jobs")?;
                orchestrator.set_paused(job, forward)
            }
            ProposalBody::Diff { file, old, new } => {
                let project = self
                    .config
                    .lineage
                    .as_ref()
                    .and_then(|l| l.project_dir.as_ref())
                    .map(|d| self.config.resolve(d))
                    .context("no project_dir in [lineage] to apply the diff to")?;
                let path = project.join(file);
                let (from, to) = if forward { (old, new) } else { (new, old) };
                let current = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}", path.display()))?;
                anyhow::ensure!(
                    current == *from,
                    "{} no longer matches the proposal; it was changed by someone else",
                    path.display()
                );
                let tmp = path.with_extension("sql.dataward-tmp");
                std::fs::write(&tmp, to).with_context(|| format!("{}", tmp.display()))?;
                std::fs::rename(&tmp, &path).with_context(|| format!("{}", path.display()))?;
                Ok(())
            }
            ProposalBody::Note { .. } => Ok(()),
        }
    }

    /// Queues the run an approved hold planned: for a person (`Some(actor)`, who must
    /// be eligible on the hold) or for dataward itself at L3/L4. The org-wide stop is
    /// re-checked inside the transaction that records the dispatch, so a stop set
    /// between approval and run wins.
    fn queue_run(&mut self, incident: &str, actor: Option<&Actor>) -> Result<Vec<Event>> {
        let i = self
            .incidents
            .iter()
            .position(|x| x.id == incident)
            .ok_or_else(|| anyhow!("no incident {incident}"))?;
        anyhow::ensure!(
            self.incidents[i].status != IncidentStatus::Resolved,
            "{incident} is resolved"
        );
        if let Some(run) = &self.incidents[i].run {
            anyhow::ensure!(run.finished.is_some(), "run #{} is already queued", run.id);
        }
        let hold = self.incidents[i]
            .proposals
            .iter()
            .find(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved)
            .cloned()
            .ok_or_else(|| anyhow!("{incident} has no approved hold whose plan includes a run"))?;
        if let Some(e) = &self.policy_error {
            anyhow::bail!("the policy cannot be evaluated, so nothing is dispatched: {e}");
        }
        let actor_json = match actor {
            Some(actor) => {
                let request = self
                    .requests
                    .get(&hold.id)
                    .context("the hold has no request")?;
                request
                    .may_act(&self.config, actor)
                    .map_err(|e| anyhow!("{e}"))?;
                actor.to_json()
            }
            None => ENGINE_ACTOR.to_string(),
        };
        let ProposalBody::Hold { job, .. } = &hold.body else {
            unreachable!("a hold")
        };
        let after_recovery = self.recovered(&self.incidents[i].monitor);
        let at = self.now.clone();
        let dispatch = chain::append_checked(
            &mut self.state,
            &at,
            "dispatch",
            &actor_json,
            &json!({"incident": incident, "job": job, "proposal": hold.id,
                    "content_hash": hold.content_hash, "after_recovery": after_recovery}),
            |tx| stop::ensure_not_stopped(tx),
        )?;
        let by = actor
            .map(Actor::display)
            .unwrap_or_else(|| "dataward".to_string());
        let orchestrator = self
            .orchestrator
            .as_ref()
            .context("no orchestrator configured")?;
        let run_id = match orchestrator.queue_run(job, &self.now, &by) {
            Ok(id) => id,
            Err(e) => {
                self.record("dispatch_failed", ENGINE_ACTOR, json!({"incident": incident, "dispatch": dispatch.seq, "error": format!("{e:#}")}))?;
                return Err(e.context("the scheduler refused the run"));
            }
        };
        let seq = self.record(
            "run_queued",
            &actor_json,
            json!({"incident": incident, "run": run_id, "job": job, "dispatch": dispatch.seq}),
        )?;
        self.incidents[i].run = Some(RunState {
            id: run_id,
            job: job.clone(),
            after_recovery,
            finished: None,
        });
        Ok(vec![self.event(EventKind::Run {
            incident: incident.to_string(),
            job: job.clone(),
            status: "queued".into(),
            seq,
        })])
    }

    pub fn snapshot(&self, finished: bool) -> Snapshot {
        let pipelines = self
            .orchestrator
            .as_ref()
            .and_then(|o| o.pipelines().ok())
            .unwrap_or_default();
        Snapshot {
            now: self.now.clone(),
            actor: self.console_actor.clone(),
            chain_head: chain::head(&self.state).ok().flatten(),
            pipelines,
            monitors: self
                .latest
                .values()
                .map(|o| MonitorView {
                    name: o.monitor.clone(),
                    table: o.table.clone(),
                    check: match &o.detail.column {
                        Some(column) => format!("{}({column})", o.check.as_str()),
                        None => o.check.as_str().to_string(),
                    },
                    verdict: o.verdict.as_str().to_string(),
                    observed: o.observed_text(),
                    expected: o.expected_text(),
                    health: o.health.as_str().to_string(),
                })
                .collect(),
            incidents: self
                .incidents
                .iter()
                .map(|i| self.incident_view(i))
                .collect(),
            notices: self.notices.iter().rev().take(5).rev().cloned().collect(),
            finished,
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

    fn incident_view(&self, i: &Incident) -> IncidentView {
        IncidentView {
            id: i.id.clone(),
            title: format!(
                "{} {} {} ({})",
                i.table,
                i.check.as_str().replace('_', " "),
                monitor::thousands(i.observed),
                i.expected
            ),
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
                    if let Some(Ok(roles)) = self
                        .requests
                        .get(&p.id)
                        .map(|r| r.eligible_roles(&self.config))
                    {
                        view.deciders = roles;
                    }
                    view
                })
                .collect(),
            checks: i.checks.clone(),
            receipt: i.receipt.clone(),
        }
    }

    /// Is the monitor's row count back at its baseline (not merely inside the band)?
    /// A run queued before that builds on a partial table.
    pub fn recovered(&self, monitor: &str) -> bool {
        self.latest
            .get(&(monitor.to_string(), CheckKind::RowCount, None))
            .is_some_and(|o| {
                o.verdict.as_str() == "ok"
                    && matches!((o.value, o.expected), (Some(v), Some(r)) if v >= r.baseline)
            })
    }
}

impl Incident {
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
        }
    }

    /// A further breach on the same (monitor, table) updates the open incident rather
    /// than opening another: the latest value, and a line of evidence per new kind of
    /// breach.
    fn update(&mut self, o: &Observation) {
        self.current = Some(format!("{} {}", o.check.as_str(), o.observed_text()));
        let kind = format!("{} {}", o.check.as_str(), o.verdict.as_str());
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

fn blast_node(impact: &crate::lineage::Impact) -> BlastNode {
    let risky = impact
        .column
        .as_ref()
        .map(|c| c.casts.iter().filter(|x| x.break_risk).collect::<Vec<_>>());
    let finding = impact.column.as_ref().and_then(|c| {
        if let Some(cast) = c.casts.first() {
            Some(format!(
                "casts to {}: `{}` ({})",
                cast.target_type, cast.expression, cast.method
            ))
        } else if c.reads {
            Some("reads the column".to_string())
        } else {
            None
        }
    });
    BlastNode {
        id: impact.unique_id.clone(),
        name: impact.name.clone(),
        kind: impact.kind.as_str().to_string(),
        depth: impact.depth,
        parents: impact.parents.clone(),
        finding,
        break_risk: risky.is_some_and(|r| !r.is_empty()),
    }
}
