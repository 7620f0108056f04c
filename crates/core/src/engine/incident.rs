//! One incident as the engine keeps it (stored whole in the state database), and the
//! run queued for it.

use super::*;

/// A run queued for an incident, and what the scheduler said of it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct RunState {
    /// The orchestrator's own run id.
    #[serde(deserialize_with = "orchestrator::run_id")]
    pub(super) id: String,
    pub(super) job: String,
    /// The incident's row count was back within baseline when the run was queued.
    pub(super) after_recovery: bool,
    pub(super) finished: Option<RunRecord>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Incident {
    pub(super) id: String,
    pub(super) monitor: String,
    pub(super) table: String,
    pub(super) opened_at: Timestamp,
    pub(super) observed: f64,
    /// The check whose breach opened it.
    pub(super) check: CheckKind,
    /// The latest breaching observation, as people read it ("row_count 9,120").
    pub(super) current: Option<String>,
    pub(super) expected: String,
    pub(super) status: IncidentStatus,
    pub(super) diagnosis: Diagnosis,
    pub(super) blast: Vec<BlastNode>,
    pub(super) proposals: Vec<Proposal>,
    pub(super) run: Option<RunState>,
    pub(super) checks: Vec<Check>,
    pub(super) receipt: Option<String>,
    /// Its chain records as who did what, drafted with the receipt.
    #[serde(default)]
    pub(super) timeline: Vec<crate::engine::api::TimelineEntry>,
    /// Verification passed (or the owner closed it); it resolves once its holds are
    /// resumed.
    #[serde(default)]
    pub(super) verified: bool,
    /// Closed by hand: by whom (as the chain records actors) and why.
    #[serde(default)]
    pub(super) closed_by_hand: Option<(String, String)>,
    /// null_rate: the column whose breach opened it.
    #[serde(default)]
    pub(super) column: Option<String>,
    /// volume: the day whose breach opened it.
    #[serde(default)]
    pub(super) day: Option<String>,
    /// The opening breach as people read it, for the title ("null_rate(amount) 50.00% null").
    #[serde(default)]
    pub(super) headline: String,
    /// Breaches this incident explains, oldest first.
    #[serde(default)]
    pub(super) symptoms: Vec<symptoms::Symptom>,
    /// Since when every one of its own checks has been back within range.
    #[serde(default)]
    pub(super) recovered_since: Option<Timestamp>,
    /// It resolved because its checks recovered and held, with no run.
    #[serde(default)]
    pub(super) recovered_by_itself: bool,
    /// Since when its own table's check has been back (the opening check).
    #[serde(default)]
    pub(super) root_back_at: Option<Timestamp>,
    /// Closed as a symptom of the incident named here, found after it.
    #[serde(default)]
    pub(super) merged_into: Option<String>,
    /// The copies an approved backfill took before it ran: its undo.
    #[serde(default)]
    pub(super) versions: Vec<crate::warehouse::TableVersion>,
    /// When it resolved: the copies are dropped once `[verify] retention` has passed.
    #[serde(default, deserialize_with = "no_time_if_empty")]
    pub(super) resolved_at: Option<Timestamp>,
    /// What its diagnosis rests on ([`diagnosis::Facts::grounds`]): when these change,
    /// the cause is re-stated.
    #[serde(default)]
    pub(super) grounds: Vec<String>,
    /// Opened by a failed run (`failed_runs.rs`): the run, and what its cause rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) failed_run: Option<super::failed_runs::FailedRunState>,
}

impl Incident {
    /// An incident opened on a breach.
    pub(super) fn opened(
        id: &str,
        o: &Observation,
        expected: &str,
        now: Timestamp,
        diagnosis: Diagnosis,
    ) -> Incident {
        Incident {
            observed: o.value.unwrap_or_default(),
            expected: expected.to_string(),
            column: o.detail.column.clone(),
            day: o.detail.day.clone(),
            headline: format!(
                "{} {}",
                o.check_label().replace('_', " "),
                o.observed_text()
            ),
            ..Incident::new(id, &o.monitor, &o.table, o.check, now, diagnosis)
        }
    }

    /// An open incident with nothing observed, assessed or decided yet: what every
    /// opening starts from.
    pub(super) fn new(
        id: &str,
        monitor: &str,
        table: &str,
        check: CheckKind,
        now: Timestamp,
        diagnosis: Diagnosis,
    ) -> Incident {
        Incident {
            id: id.to_string(),
            monitor: monitor.to_string(),
            table: table.to_string(),
            opened_at: now,
            check,
            observed: 0.0,
            current: None,
            expected: String::new(),
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
            column: None,
            day: None,
            headline: String::new(),
            symptoms: Vec::new(),
            recovered_since: None,
            recovered_by_itself: false,
            root_back_at: None,
            merged_into: None,
            versions: Vec::new(),
            resolved_at: None,
            grounds: Vec::new(),
            failed_run: None,
        }
    }

    /// A further breach on the same (monitor, table) updates the open incident rather
    /// than opening another: the latest value, and a line of evidence per new kind of
    /// breach.
    pub(super) fn update(&mut self, o: &Observation) {
        self.current = Some(format!("{} {}", o.check_label(), o.observed_text()));
        let kind = format!("{} {}", o.check_label(), o.verdict.as_str());
        if !self.diagnosis.evidence.iter().any(|e| e.starts_with(&kind)) {
            self.diagnosis.evidence.push(format!(
                "{kind} at {}: {} (expected {})",
                o.at.hour_minute(),
                o.observed_text(),
                o.expected_text()
            ));
        }
    }
}

/// A node of the blast radius as clients draw it. `sees_column`: the node reads the
/// changed column itself, so what it does with it is a finding.
pub(super) fn blast_node(impact: &crate::lineage::Impact, sees_column: bool) -> BlastNode {
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
        learned: impact
            .learned
            .map(|at| Timestamp::from_naive(at.naive_utc())),
    }
}

/// An incident closed by hand before an engine's first turn was kept with an empty
/// `resolved_at` (that engine had no time yet): read as no time, as it always acted.
fn no_time_if_empty<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Timestamp>, D::Error> {
    use serde::Deserialize;
    match Option::<String>::deserialize(deserializer)?.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => Timestamp::parse(text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Doc {
        #[serde(default, deserialize_with = "no_time_if_empty")]
        resolved_at: Option<Timestamp>,
    }

    /// What older engines kept still reads: an empty time as none, a missing one as
    /// none; a time is a time, and anything else is refused with its text.
    #[test]
    fn a_resolved_time_kept_empty_reads_as_none() {
        let read = |doc: &str| serde_json::from_str::<Doc>(doc).map(|d| d.resolved_at);
        assert_eq!(read(r#"{"resolved_at": ""}"#).unwrap(), None);
        assert_eq!(read(r#"{"resolved_at": null}"#).unwrap(), None);
        assert_eq!(read("{}").unwrap(), None);
        assert_eq!(
            read(r#"{"resolved_at": "2026-03-01T09:00:00Z"}"#).unwrap(),
            Some("2026-03-01T09:00:00Z".parse().unwrap())
        );
        let error = read(r#"{"resolved_at": "noon"}"#).unwrap_err().to_string();
        assert!(error.contains("\"noon\""), "{error}");
    }
}
