//! Symptoms: a breach downstream of an open incident's table, or a model its run could
//! not build, joins that incident instead of opening one of its own. One incident per
//! root cause; each symptom keeps its own check, so the incident recovers only when
//! they all do.

use super::facts::figure;
use super::*;
use crate::lineage::run_results::NodeStatus;

/// What a symptom is about, so a later poll or run can say it recovered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub(super) enum SymptomSource {
    /// A monitor's check (and column, for null_rate).
    Check {
        monitor: String,
        check: CheckKind,
        column: Option<String>,
    },
    /// A dbt node a run could not build.
    Run { node: String },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Symptom {
    pub source: SymptomSource,
    pub table: String,
    pub label: String,
    pub observed: String,
    pub explanation: String,
    pub at: Timestamp,
    pub recovered: bool,
    /// volume: the day that breached, judged on that day until it recovers.
    #[serde(default)]
    pub day: Option<String>,
}

impl Symptom {
    pub fn view(&self) -> SymptomView {
        SymptomView {
            table: self.table.clone(),
            check: self.label.clone(),
            observed: self.observed.clone(),
            explanation: self.explanation.clone(),
            at: self.at,
            recovered: self.recovered,
        }
    }
}

impl Engine {
    /// Joins a breach to the open incident `i` upstream of it. `facts` explain it (None
    /// at L0, where only the link to the root is said).
    pub(super) fn join_symptom(
        &mut self,
        i: usize,
        o: &Observation,
        facts: Option<&Facts>,
    ) -> Result<Vec<Event>> {
        let source = SymptomSource::Check {
            monitor: o.monitor.clone(),
            check: o.check,
            column: o.detail.column.clone(),
        };
        let observed = figure(o).sentence();
        let explanation = match facts {
            Some(facts) => diagnosis::diagnose(facts).cause,
            None => self.reads_root(i, &o.table),
        };
        self.add_symptom(
            i,
            source,
            o.detail.day.clone(),
            &o.table,
            &o.check_label(),
            observed,
            explanation,
        )
    }

    /// Adds a symptom, or brings an existing one on the same source and day up to date.
    /// A volume breach on another day is a symptom of its own: a later day going short
    /// must not hide an earlier one that still is. Only a new one goes on the chain.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_symptom(
        &mut self,
        i: usize,
        source: SymptomSource,
        day: Option<String>,
        table: &str,
        label: &str,
        observed: String,
        explanation: String,
    ) -> Result<Vec<Event>> {
        let now = self.now();
        let incident = &mut self.incidents[i];
        if let Some(known) = incident
            .symptoms
            .iter_mut()
            .find(|s| s.source == source && s.day == day)
        {
            known.observed = observed;
            known.recovered = false;
            return Ok(Vec::new());
        }
        let id = incident.id.clone();
        incident.symptoms.push(Symptom {
            source,
            table: table.to_string(),
            label: label.to_string(),
            observed: observed.clone(),
            explanation: explanation.clone(),
            at: now,
            recovered: false,
            day,
        });
        // A symptom is a new reason not to call the incident recovered yet.
        incident.recovered_since = None;
        let seq = self.record(
            "symptom",
            ENGINE_ACTOR,
            json!({"incident": id, "table": table, "check": label, "observed": observed, "explanation": explanation}),
        )?;
        self.notices
            .push(format!("{id}: {table} {label} joined as a symptom"));
        Ok(vec![self.event(EventKind::Symptom {
            incident: id,
            table: table.to_string(),
            check: label.to_string(),
            seq,
        })])
    }

    /// "orders reads raw.payments, where INC-0001 is open: (its cause)".
    fn reads_root(&self, i: usize, name: &str) -> String {
        let incident = &self.incidents[i];
        format!(
            "{name} reads {}, where {} is open: {}",
            incident.table, incident.id, incident.diagnosis.cause
        )
    }

    fn mark_recovered(&mut self, i: usize, source: &SymptomSource) {
        if let Some(s) = self.incidents[i]
            .symptoms
            .iter_mut()
            .find(|s| &s.source == source)
        {
            s.recovered = true;
        }
    }

    /// The incident's own table is back but a symptom is not: what remains may have a
    /// cause of its own (a model whose runs never reach back to the day upstream now
    /// holds). Diagnosed without the root, a more specific cause replaces the
    /// incident's, on the chain, with proposals for the symptom's table.
    pub(super) fn rediagnose_what_remains(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            // Nothing but an upstream cause is more specific than a lookback gap, and
            // the root's own cause is left out here: no need to read the facts again.
            let settled = matches!(
                incident.diagnosis.kind,
                diagnosis::CauseKind::Upstream | diagnosis::CauseKind::LookbackGap
            );
            if incident.status != IncidentStatus::Open || incident.root_back_at.is_none() || settled
            {
                continue;
            }
            let remaining: Vec<Observation> = incident
                .symptoms
                .iter()
                .filter(|s| !s.recovered)
                .filter_map(|s| match &s.source {
                    SymptomSource::Check {
                        monitor,
                        check,
                        column,
                    } => self
                        .latest
                        .get(&(monitor.clone(), *check, column.clone()))
                        .map(|o| on_day(o, s.day.as_deref()))
                        .filter(|o| o.verdict.is_breach()),
                    SymptomSource::Run { .. } => None,
                })
                .collect();
            for observation in remaining {
                let asked = self.evidence.pending_seen();
                let mut facts = self.facts(&observation)?;
                if self.evidence.pending_seen() != asked {
                    // A warehouse probe has not answered yet: what remains is said
                    // once it has (its answer brings the engine back here), never
                    // without what the warehouse counted.
                    continue;
                }
                facts.upstream_incident = None;
                let found = diagnosis::diagnose(&facts);
                if !found
                    .kind
                    .more_specific_than(self.incidents[i].diagnosis.kind)
                {
                    continue;
                }
                let id = self.incidents[i].id.clone();
                let mut found = found;
                found.evidence.insert(
                    0,
                    format!(
                        "{} has been back since {}; {} is not back yet",
                        self.incidents[i].table,
                        self.incidents[i]
                            .root_back_at
                            .map(crate::incident::diagnosis::when)
                            .unwrap_or_default(),
                        observation.table
                    ),
                );
                events.push(self.record_diagnosis(&id, &found)?);
                self.notices
                    .push(format!("{id}: what remains is {}", observation.table));
                let mut incident = self.incidents[i].clone();
                incident.diagnosis = found;
                let before = incident.proposals.len();
                self.assess(&mut incident, &facts);
                events.extend(self.record_assessment(&incident, before)?);
                self.incidents[i] = incident;
                break;
            }
        }
        Ok(events)
    }

    /// A breach downstream can be seen before its root: an incident opened on it earlier,
    /// that nobody has acted on yet, becomes a symptom of the new root and is closed as
    /// merged into it, on the chain. One incident per root cause, in either order.
    pub(super) fn fold_downstream(&mut self, root: usize) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let root_id = self.incidents[root].id.clone();
        for j in 0..self.incidents.len() {
            let below = {
                let other = &self.incidents[j];
                j != root
                    && other.status == IncidentStatus::Open
                    && other.run.is_none()
                    && other.symptoms.is_empty()
                    && other
                        .proposals
                        .iter()
                        .all(|p| p.state == ProposalState::Pending)
                    && self.root_incident(&other.table) == Some(root)
            };
            if !below {
                continue;
            }
            let other = self.incidents[j].clone();
            let source = SymptomSource::Check {
                monitor: other.monitor.clone(),
                check: other.check,
                column: other.column.clone(),
            };
            let root_incident = &self.incidents[root];
            let explanation = format!(
                "{} reads {}, where {root_id} is open: {} (it was {} until the root was found)",
                other.table, root_incident.table, root_incident.diagnosis.cause, other.id
            );
            let label = match &other.column {
                Some(column) => format!("{}({column})", other.check.as_str()),
                None => other.check.as_str().to_string(),
            };
            let observed = other.current.clone().unwrap_or(other.headline.clone());
            events.extend(self.add_symptom(
                root,
                source,
                other.day.clone(),
                &other.table,
                &label,
                observed,
                explanation,
            )?);
            self.incidents[j].closed_by_hand = None;
            self.incidents[j].merged_into = Some(root_id.clone());
            self.incidents[j].verified = true;
            events.extend(self.finish_resolution(j)?);
        }
        Ok(events)
    }

    /// A scheduled job below an open incident whose last run failed, as the scheduler
    /// reports it, is a symptom; a later successful run marks it recovered.
    pub(super) fn read_pipeline_failures(&mut self) -> Result<Vec<Event>> {
        let mut found = Vec::new();
        for (i, incident) in self.incidents.iter().enumerate() {
            if incident.status == IncidentStatus::Resolved {
                continue;
            }
            for job in incident.blast.iter().filter(|n| n.kind == "job") {
                let Some(pipeline) = self.pipelines.iter().find(|p| p.name == job.name) else {
                    continue;
                };
                let Some(ran) = pipeline.last_run_at else {
                    continue;
                };
                if ran < incident.opened_at {
                    continue;
                }
                found.push((
                    i,
                    job.id.clone(),
                    job.name.clone(),
                    pipeline.last_status,
                    ran,
                ));
            }
        }
        let mut events = Vec::new();
        for (i, node, name, status, ran) in found {
            let source = SymptomSource::Run { node };
            if status != RunStatus::Failed {
                self.mark_recovered(i, &source);
                continue;
            }
            let explanation = format!("the {}", self.reads_root(i, &name));
            let observed = format!(
                "failed at {} (as the scheduler reports it)",
                crate::incident::diagnosis::when(ran)
            );
            events.extend(self.add_symptom(
                i,
                source,
                None,
                &name,
                "job run",
                observed,
                explanation,
            )?);
        }
        Ok(events)
    }

    /// Reads dbt's run_results.json when it changed: a model a run could not build
    /// below an open incident is a symptom, with dbt's message; a later success marks
    /// it recovered.
    pub(super) fn read_run_results(&mut self) -> Result<Vec<Event>> {
        let Some(path) = self
            .config
            .lineage
            .as_ref()
            .and_then(|l| l.run_results.as_ref())
            .map(|p| self.config.resolve(p))
        else {
            return Ok(Vec::new());
        };
        let stamp = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if stamp.is_none() || stamp == self.run_results_stamp {
            return Ok(Vec::new());
        }
        self.run_results_stamp = stamp;
        let results = match crate::lineage::run_results::load(&path) {
            Ok(results) => results,
            Err(e) => {
                self.notices.push(format!("dbt run results not read: {e}"));
                return Ok(Vec::new());
            }
        };
        let Some(lineage) = &self.lineage else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for result in &results.results {
            let Ok(node) = lineage.resolve(&result.unique_id) else {
                continue;
            };
            let name = lineage.node(node).name.clone();
            let built = result.status == NodeStatus::Success;
            for (i, incident) in self.incidents.iter().enumerate() {
                if incident.status == IncidentStatus::Resolved {
                    continue;
                }
                let below = lineage
                    .resolve(&incident.table)
                    .is_ok_and(|from| lineage.is_downstream(from, node));
                if below {
                    found.push((i, result.clone(), name.clone(), built));
                }
            }
        }
        let mut events = Vec::new();
        for (i, result, name, built) in found {
            let source = SymptomSource::Run {
                node: result.unique_id.clone(),
            };
            if built {
                self.mark_recovered(i, &source);
                continue;
            }
            if !(result.status.is_failure() || result.status == NodeStatus::Skipped) {
                continue;
            }
            let when = result
                .completed_at
                .map(|at| format!(" at {}", crate::incident::diagnosis::when(at)))
                .unwrap_or_default();
            let observed = match (&result.status, result.message.as_deref()) {
                (NodeStatus::Skipped, _) => format!(
                    "skipped{when}: a model it reads failed, so it still holds its last build"
                ),
                (status, Some(message)) => {
                    format!("{}{when}: {}", status.as_str(), first_reason(message))
                }
                (status, None) => format!("{}{when}", status.as_str()),
            };
            let explanation = self.reads_root(i, &name);
            events.extend(self.add_symptom(
                i,
                source,
                None,
                &name,
                "dbt run",
                observed,
                explanation,
            )?);
        }
        Ok(events)
    }
}

/// The line of a dbt error that says what went wrong: dbt heads it with "Database Error
/// in model x (path)", which names the model and nothing else.
fn first_reason(message: &str) -> &str {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    if first.ends_with(')') && first.contains(" Error in ") {
        lines.next().unwrap_or(first)
    } else {
        first
    }
}

/// A volume observation as it judged one of its days, with that day as its headline: a
/// symptom is about the day that breached, whatever day is the headline now.
pub(super) fn on_day(o: &Observation, day: Option<&str>) -> Observation {
    let mut o = o.clone();
    let Some(judged) = day
        .and_then(|d| o.detail.days.iter().find(|j| j.day == d))
        .cloned()
    else {
        return o;
    };
    o.value = Some(judged.rows);
    o.verdict = judged.verdict;
    o.expected = judged.expected;
    o.detail.expected = judged.expected;
    o.detail.day = Some(judged.day);
    o.detail.partial = judged.partial;
    o
}
