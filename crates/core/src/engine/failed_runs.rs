//! Failed runs as incidents. A job whose run failed (a dbt node dbt could not build, a
//! job the scheduler reports failed; an OpenLineage FAIL once the listener feeds
//! [`Engine::failed_run`]) opens one incident, unless an incident open at the time
//! already covers the tables it writes. Once per run: the run's key is kept in its
//! incident, so a poll reading it again or a restart reading it anew opens nothing.
//!
//! The diagnosis joins its error with the schema snapshots of what it reads and their
//! writers; the blast radius starts at its outputs; the proposals are a diff of the
//! failing model and its rerun; it is verified when a later run succeeds and the checks
//! on its outputs hold.

use super::*;
use crate::incident::diagnosis::failed_run::{self as rule, ColumnCause, RunFacts};
use crate::incident::failed_run::FailedRun;
use crate::lineage::run_results::NodeStatus;
use crate::lineage::NodeKind;
use crate::propose::failed_run as proposals;

/// A failed run as its incident keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct FailedRunState {
    pub run: FailedRun,
    /// The column change the cause rests on, if any.
    pub column: Option<ColumnCause>,
    /// When a later run of the same job succeeded, as its source reported it.
    pub succeeded_at: Option<Timestamp>,
}

impl Engine {
    /// A failed run heard of outside the turn (an OpenLineage FAIL the listener read,
    /// mapped by [`FailedRun::from_openlineage`]): opens its incident, in a transaction
    /// of its own, unless it is known or explained.
    pub fn failed_run(&mut self, run: FailedRun) -> Result<Vec<Event>> {
        let mut events = self.transact(|e| e.failed_run_seen(run))?;
        let (more, _) = self.run_intents()?;
        events.extend(more);
        Ok(events)
    }

    /// Reads the failed runs the turn can see without calling out: dbt's
    /// run_results.json when it changed (the same file `read_run_results` reads after),
    /// and the pipelines bar as last read. Marks later successes on the incidents they
    /// opened.
    pub(super) fn read_failed_runs(&mut self) -> Result<Vec<Event>> {
        let mut failed = Vec::new();
        let mut succeeded: Vec<(String, Timestamp)> = Vec::new();
        if let Some(results) = self.changed_run_results() {
            for result in &results.results {
                let outputs = self.relation_of(&result.unique_id).into_iter().collect();
                if let Some(run) = FailedRun::from_run_result(result, outputs) {
                    failed.push(run);
                } else if result.status == NodeStatus::Success {
                    if let Some(at) = result.completed_at.or(results.generated_at) {
                        succeeded.push((result.unique_id.clone(), at));
                    }
                }
            }
        }
        for pipeline in &self.pipelines {
            let Some(at) = pipeline.last_run_at else {
                continue;
            };
            match pipeline.last_status {
                api::RunStatus::Failed => failed.push(FailedRun::from_orchestrator(
                    &pipeline.name,
                    at,
                    pipeline.last_failure.as_deref().unwrap_or_default(),
                    self.written_by(&pipeline.name),
                )),
                api::RunStatus::Success => succeeded.push((pipeline.name.clone(), at)),
                _ => {}
            }
        }
        for (job, at) in succeeded {
            for i in 0..self.incidents.len() {
                let later = self.incidents[i]
                    .failed_run
                    .as_ref()
                    .is_some_and(|f| f.run.job == job && at > f.run.at && f.succeeded_at.is_none());
                if later {
                    // By index, so only this incident is marked changed.
                    if let Some(f) = self.incidents[i].failed_run.as_mut() {
                        f.succeeded_at = Some(at);
                    }
                }
            }
        }
        let mut events = Vec::new();
        for run in failed {
            events.extend(self.failed_run_seen(run)?);
        }
        Ok(events)
    }

    /// One failed run, from whichever source: opens its incident unless it is known
    /// (its own incident, any status) or explained (an incident open when it failed
    /// covers a table it writes).
    pub(super) fn failed_run_seen(&mut self, run: FailedRun) -> Result<Vec<Event>> {
        let key = run.key();
        let known = self
            .incidents
            .iter()
            .any(|i| i.failed_run.as_ref().is_some_and(|f| f.run.key() == key));
        if known || self.superseded_before_watching(&run)? {
            return Ok(Vec::new());
        }
        if let Some(i) = self.explaining_incident(&run) {
            return self.adopt_failed_run(i, run);
        }
        self.open_failed_run(run)
    }

    /// History is not news: a failure that ended before the engine first watched (a
    /// tailed file read from its start, a listener's sender catching up) opens nothing
    /// when a later run of the same job is known, so a first start opens at most one
    /// incident per job still failing. run_results.json and the scheduler's bar hold
    /// only each job's latest run already; OpenLineage events hold every run.
    fn superseded_before_watching(&self, run: &FailedRun) -> Result<bool> {
        if run.source != crate::incident::failed_run::RunSource::OpenLineage
            || run.at >= self.watching_since()
        {
            return Ok(false);
        }
        Ok(self.state.learned_jobs()?.iter().any(|learned| {
            learned.job.name == run.job && Timestamp::from_utc(learned.last_seen) > run.at
        }))
    }

    /// When the engine first watched: its chain's first record (none yet: now).
    fn watching_since(&self) -> Timestamp {
        let mut first = None;
        let _ = self.state.scan_records(&mut |record| {
            first = Timestamp::parse(record.at).ok();
            Ok(false)
        });
        first.unwrap_or_else(|| self.now())
    }

    /// A failed run an open incident explains, whose own cause is a column change that
    /// incident is about (a schema monitor saw the column go before the model failed on
    /// it): the incident takes on the run, so it gets what only the failure makes
    /// possible (the failing model's diff and its rerun) and resolves as a failed run
    /// does, once a later run succeeds and the checks on its outputs hold. Any other
    /// explained failure adds nothing beyond the symptom it already is.
    fn adopt_failed_run(&mut self, i: usize, run: FailedRun) -> Result<Vec<Event>> {
        let incident = self.incidents[i].clone();
        if incident.status == IncidentStatus::Resolved || incident.failed_run.is_some() {
            return Ok(Vec::new());
        }
        let facts = self.run_facts(&run, run.at + TimeDelta::hours(1));
        let (diagnosis, column) = rule::diagnose(&run, &facts);
        let Some(cause) = column else {
            return Ok(Vec::new());
        };
        let mut taken = incident.clone();
        taken.proposals.clear();
        taken.failed_run = Some(FailedRunState {
            run,
            column: Some(cause),
            succeeded_at: None,
        });
        self.assess_failed_run(&mut taken);
        let first = incident.proposals.len();
        let mut adopted = incident.clone();
        adopted.failed_run = taken.failed_run;
        adopted.proposals.extend(crate::propose::numbered_after(
            first,
            taken
                .proposals
                .into_iter()
                .filter(|p| matches!(p.kind, ProposalKind::Diff | ProposalKind::Backfill)),
        ));
        for line in diagnosis.evidence.into_iter().chain(
            taken.diagnosis.evidence[incident.diagnosis.evidence.len()..]
                .iter()
                .cloned(),
        ) {
            if !adopted.diagnosis.evidence.contains(&line) {
                adopted.diagnosis.evidence.push(line);
            }
        }
        let mut events = vec![self.record_diagnosis(&adopted.id, &adopted.diagnosis)?];
        events.extend(self.record_assessment(&adopted, first)?);
        self.incidents[i] = adopted;
        Ok(events)
    }

    /// Why a failed run's rerun would fail again now, if it would: the column change its
    /// cause rests on still holds (no diff of the incident applied, and no schema
    /// snapshot since showing the column back).
    pub(super) fn rerun_blocked(&self, i: usize) -> Option<String> {
        let incident = &self.incidents[i];
        let state = incident.failed_run.as_ref()?;
        let cause = state.column.as_ref()?;
        let fixed_by_diff = incident.proposals.iter().any(|p| {
            p.kind == ProposalKind::Diff
                && matches!(p.state, ProposalState::Approved | ProposalState::Completed)
        });
        if fixed_by_diff {
            return None;
        }
        let (table, column, now) = match cause {
            ColumnCause::Removed { table, column, .. } => {
                (table, column, format!("{table}.{column} is still missing"))
            }
            ColumnCause::Renamed { table, column, to } => (
                table,
                column,
                format!("{table}.{column} is still renamed to {to}"),
            ),
            ColumnCause::Retyped {
                table, column, to, ..
            } => (table, column, format!("{table}.{column} is still {to}")),
        };
        if self.column_back_since(table, column, state.run.at) {
            return None;
        }
        let diffs: Vec<&str> = incident
            .proposals
            .iter()
            .filter(|p| p.kind == ProposalKind::Diff && p.state == ProposalState::Pending)
            .map(|p| p.id.as_str())
            .collect();
        let fix = if diffs.is_empty() {
            "bring the column back upstream first".to_string()
        } else {
            format!(
                "approve the diff ({}) first, or bring the column back upstream",
                diffs.join(", ")
            )
        };
        Some(format!(
            "the rerun would fail again: {now} and the failing model's diff is not applied; {fix}"
        ))
    }

    /// Whether a schema snapshot of `table` since `at` shows `column` added back (or
    /// its type changed back).
    fn column_back_since(&self, table: &str, column: &str, at: Timestamp) -> bool {
        self.config
            .monitor
            .iter()
            .filter(|m| m.table.eq_ignore_ascii_case(table))
            .filter_map(|m| {
                monitor::history(&*self.state, &Config::monitor_name(m), CheckKind::Schema).ok()
            })
            .flatten()
            .filter(|o| o.at > at)
            .flat_map(|o| o.detail.changes)
            .any(|change| match change {
                crate::detect::SchemaChange::Added { column: c, .. }
                | crate::detect::SchemaChange::TypeChanged { column: c, .. } => {
                    c.eq_ignore_ascii_case(column)
                }
                _ => false,
            })
    }

    /// An incident open when `run` failed or since (still open, or resolved after) whose
    /// tables (its own, its symptoms', its blast radius) include one the run writes, or
    /// one open on an earlier failure of the same job, of its parent run or of a run it
    /// spawned.
    fn explaining_incident(&self, run: &FailedRun) -> Option<usize> {
        let family = self.incidents.iter().position(|i| {
            i.status != IncidentStatus::Resolved
                && i.failed_run.as_ref().is_some_and(|f| {
                    f.run.job == run.job
                        || f.run.parent_run.as_deref() == Some(run.run_id.as_str())
                        || run.parent_run.as_deref() == Some(f.run.run_id.as_str())
                })
        });
        if family.is_some() {
            return family;
        }
        let ids: Vec<String> = run
            .outputs
            .iter()
            .chain(std::iter::once(&run.job))
            .filter_map(|t| self.unique_id_of(t))
            .collect();
        self.incidents.iter().position(|i| {
            // Resolved after the failure: it covered it, whenever it opened (the bar
            // keeps showing a job's last failure long after the incident that
            // explained it has closed).
            let open_then =
                i.status != IncidentStatus::Resolved || i.resolved_at.is_some_and(|r| r >= run.at);
            let tables = std::iter::once(&i.table).chain(i.symptoms.iter().map(|s| &s.table));
            let covers = tables
                .filter_map(|t| {
                    self.unique_id_of(t)
                        .or_else(|| Some(t.to_ascii_lowercase()))
                })
                .chain(i.blast.iter().map(|n| n.id.clone()))
                .any(|id| {
                    ids.contains(&id) || run.outputs.iter().any(|o| o.eq_ignore_ascii_case(&id))
                });
            open_then && covers
        })
    }

    fn open_failed_run(&mut self, run: FailedRun) -> Result<Vec<Event>> {
        let count = self.state.count_of_kind("incident_opened")?;
        let id = format!("INC-{:04}", count + 1);
        let table = run
            .outputs
            .first()
            .cloned()
            .unwrap_or_else(|| run.job.clone());
        let monitor = format!("run of {}", run.job);
        self.record(
            "incident_opened",
            ENGINE_ACTOR,
            json!({"incident": id, "table": table, "monitor": monitor,
                   "check": CheckKind::FailedRun, "observed": 1.0,
                   "expected": "a successful run", "failed_run": run}),
        )?;
        let mut events = vec![self.event(EventKind::IncidentOpened {
            incident: id.clone(),
            table: table.clone(),
            monitor: monitor.clone(),
            observed: 0.0,
            expected: "a successful run".to_string(),
        })];
        let facts = self.run_facts(&run, run.at + TimeDelta::hours(1));
        let (diagnosis, column) = rule::diagnose(&run, &facts);
        events.push(self.record_diagnosis(&id, &diagnosis)?);
        let mut incident = Incident {
            // What people read as observed: the failure, not a figure.
            current: Some(format!(
                "failed at {}",
                crate::incident::diagnosis::when(run.at)
            )),
            expected: "a successful run".to_string(),
            headline: format!("run of {} failed", run.job),
            failed_run: Some(FailedRunState {
                run,
                column,
                succeeded_at: None,
            }),
            // Its root check is the run's own (`failed_run_back`).
            ..Incident::new(
                &id,
                &monitor,
                &table,
                CheckKind::FailedRun,
                self.now(),
                diagnosis,
            )
        };
        self.assess_failed_run(&mut incident);
        events.extend(self.record_assessment(&incident, 0)?);
        self.notices
            .push(format!("{id}: {}", incident.diagnosis.headline));
        self.incidents.push(incident);
        Ok(events)
    }

    /// Evidence that came after the failure: a failed run seen before the schema
    /// snapshot that shows the column its error names removed, renamed or retyped got
    /// the weaker cause (the error alone). Once a snapshot since shows it, the open
    /// incident takes the stronger cause, on the chain, and the proposals that cause
    /// brings (the failing model's diff; a rerun if it had none), numbered after those
    /// it has, as an incident opened after the snapshot would have had them. Once: the
    /// column cause, kept, is not looked for again. Run after a poll stored snapshots and
    /// before its breaches are acted on, so the snapshot's own breach joins this incident
    /// rather than opening another.
    pub(super) fn rediagnose_failed_runs(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            let Some(state) = incident
                .failed_run
                .as_ref()
                .filter(|f| f.column.is_none() && incident.status == IncidentStatus::Open)
            else {
                continue;
            };
            let run = state.run.clone();
            let facts = self.run_facts(&run, self.now());
            let (diagnosis, column) = rule::diagnose(&run, &facts);
            if column.is_none() {
                continue;
            }
            let before = self.incidents[i].clone();
            let mut taken = before.clone();
            taken.proposals.clear();
            taken.diagnosis = diagnosis.clone();
            if let Some(f) = taken.failed_run.as_mut() {
                f.column = column;
            }
            self.assess_failed_run(&mut taken);
            let first = before.proposals.len();
            let brought: Vec<Proposal> = taken
                .proposals
                .into_iter()
                .filter(|p| !before.proposals.iter().any(|had| had.kind == p.kind))
                .collect();
            let mut sharper = before;
            sharper.failed_run = taken.failed_run;
            sharper.diagnosis = taken.diagnosis;
            sharper.blast = taken.blast;
            sharper
                .proposals
                .extend(crate::propose::numbered_after(first, brought));
            events.push(self.record_diagnosis(&sharper.id, &diagnosis)?);
            events.extend(self.record_assessment(&sharper, first)?);
            self.incidents[i] = sharper;
        }
        Ok(events)
    }

    /// The blast radius from the run's outputs, and from L2 up its proposals.
    fn assess_failed_run(&mut self, incident: &mut Incident) {
        let Some(lineage) = &self.lineage else {
            return;
        };
        let Some(state) = &incident.failed_run else {
            return;
        };
        let run = &state.run;
        let model = lineage
            .resolve(&run.job)
            .ok()
            .filter(|&n| lineage.node(n).kind == NodeKind::Model);
        let Some(from) = model.or_else(|| run.outputs.iter().find_map(|t| lineage.resolve(t).ok()))
        else {
            return;
        };
        let blast = lineage.blast_radius(from, None);
        incident.blast = blast.nodes.iter().map(|n| blast_node(n, false)).collect();
        if approve::autonomy(&self.config, &incident.table) < 2 {
            return;
        }
        let job = blast
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Job)
            .map(|n| n.unique_id.clone());
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
        incident.proposals = proposals::propose(&proposals::RunContext {
            incident: &incident.id,
            run,
            cause: state.column.as_ref(),
            lineage,
            model,
            job: job.as_deref(),
            file_allowed: &file_allowed,
        });
        if model.is_some() && job.is_none() {
            incident.diagnosis.evidence.push(format!(
                "no scheduled job in the notes runs {}: no rerun proposed",
                run.job
            ));
        }
        incident.diagnosis.evidence.extend(refused.into_inner());
    }

    /// What the run reads, the recent schema changes there (in snapshots taken up to
    /// `until`) and the writers that stalled.
    fn run_facts(&self, run: &FailedRun, until: Timestamp) -> RunFacts {
        let mut facts = RunFacts::default();
        let Some(lineage) = &self.lineage else {
            return facts;
        };
        facts.moved = lineage.moved().to_vec();
        let Ok(node) = lineage.resolve(&run.job).or_else(|e| {
            run.outputs
                .iter()
                .find_map(|t| lineage.resolve(t).ok())
                .ok_or(e)
        }) else {
            return facts;
        };
        let graph = lineage.graph();
        let parents: Vec<_> = graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .collect();
        let reads: Vec<_> = parents.iter().map(|&p| lineage.node(p)).collect();
        facts.reads = reads
            .iter()
            .filter_map(|n| n.relation_name.as_deref())
            .map(propose::schema_and_table)
            .collect();
        // A type change weeks ago explains nothing about today's failure.
        let recent = run.at - TimeDelta::days(1);
        for monitor in &self.config.monitor {
            let watched = lineage.resolve(&monitor.table).ok();
            if !watched.is_some_and(|w| parents.contains(&w)) {
                continue;
            }
            let name = Config::monitor_name(monitor);
            if let Ok(history) = monitor::history(&*self.state, &name, CheckKind::Schema) {
                for o in history
                    .into_iter()
                    .filter(|o| o.at >= recent && o.at <= until)
                {
                    for change in o.detail.changes {
                        facts
                            .schema_changes
                            .push((monitor.table.clone(), o.at, change));
                    }
                }
            }
            let stalled = self
                .latest
                .get(&(name.clone(), CheckKind::Freshness, None))
                .filter(|o| o.verdict.is_breach());
            if let Some(o) = stalled {
                facts
                    .stalled
                    .push((monitor.table.clone(), facts::figure(o).sentence()));
            }
        }
        facts
    }

    /// A breach on a table whose change an open failed run's incident already names as
    /// its cause (the schema snapshot that showed the column gone): that incident's
    /// symptom, not an incident of its own.
    pub(super) fn failed_run_caused_by(&self, table: &str) -> Option<usize> {
        self.incidents.iter().position(|i| {
            i.status != IncidentStatus::Resolved
                && i.failed_run.as_ref().is_some_and(|f| match &f.column {
                    Some(ColumnCause::Removed { table: t, .. })
                    | Some(ColumnCause::Renamed { table: t, .. })
                    | Some(ColumnCause::Retyped { table: t, .. }) => t.eq_ignore_ascii_case(table),
                    None => false,
                })
        })
    }

    /// A failed run's own check: a later run of its job succeeded (read from its
    /// source, or the run dataward queued for it), and every check on its outputs holds.
    pub(super) fn failed_run_back(&self, i: usize) -> Check {
        let incident = &self.incidents[i];
        let state = incident
            .failed_run
            .as_ref()
            .expect("a failed run's incident");
        let run = &state.run;
        let queued = incident
            .run
            .as_ref()
            .and_then(|r| r.finished.as_ref())
            .filter(|r| r.status == "success")
            .and_then(|r| r.finished_at.or(r.started_at));
        let succeeded = state.succeeded_at.or(queued);
        let breaching: Vec<String> = self
            .latest
            .values()
            .filter(|o| run.outputs.iter().any(|t| t.eq_ignore_ascii_case(&o.table)))
            .filter(|o| o.verdict.is_breach())
            .map(|o| format!("{} {}", o.table, o.check_label()))
            .collect();
        let name = format!(
            "{} runs again successfully and the checks on {} hold",
            run.job,
            if run.outputs.is_empty() {
                "its outputs".to_string()
            } else {
                run.outputs.join(", ")
            }
        );
        let (passed, detail) = match (succeeded, breaching.is_empty()) {
            (Some(at), true) => (
                true,
                format!("succeeded at {}", crate::incident::diagnosis::when(at)),
            ),
            (Some(at), false) => (
                false,
                format!(
                    "succeeded at {}, but {} still breach",
                    crate::incident::diagnosis::when(at),
                    breaching.join(", ")
                ),
            ),
            (None, _) => (
                false,
                format!(
                    "no successful run since it failed at {}",
                    crate::incident::diagnosis::when(run.at)
                ),
            ),
        };
        Check {
            name,
            passed,
            detail,
        }
    }

    /// dbt's run_results.json, when it changed since `read_run_results` last read it
    /// (which records that it did, later in the same turn).
    fn changed_run_results(&mut self) -> Option<crate::lineage::run_results::RunResults> {
        let path = self
            .config
            .lineage
            .as_ref()
            .and_then(|l| l.run_results.as_ref())
            .map(|p| self.config.resolve(p))?;
        let stamp = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if stamp.is_none() || stamp == self.run_results_stamp {
            return None;
        }
        // A file that does not read is said by `read_run_results`.
        crate::lineage::run_results::load(&path).ok()
    }

    /// `schema.table` of a lineage node, as monitors name tables.
    fn relation_of(&self, name: &str) -> Option<String> {
        let lineage = self.lineage.as_ref()?;
        let node = lineage.node(lineage.resolve(name).ok()?);
        node.relation_name.as_deref().map(propose::schema_and_table)
    }

    fn unique_id_of(&self, name: &str) -> Option<String> {
        let lineage = self.lineage.as_ref()?;
        Some(lineage.node(lineage.resolve(name).ok()?).unique_id.clone())
    }

    /// The tables the notes say a job writes: a writer named or id'd as the job.
    fn written_by(&self, job: &str) -> Vec<String> {
        let Some(lineage) = &self.lineage else {
            return Vec::new();
        };
        let mut tables: Vec<String> = lineage
            .writers()
            .iter()
            .filter(|w| w.id == job || w.name.as_deref() == Some(job))
            .flat_map(|w| w.writes.iter().cloned())
            .collect();
        tables.sort();
        tables.dedup();
        tables
    }
}
