//! A run that never comes. The per-run volume check and the failed-run path hear only
//! runs that happen; a job that simply stops (one that runs twice a day stops after its
//! morning run, or stops altogether) says nothing. Each job's cadence is learned from
//! the ends of its own runs kept from OpenLineage, by the freshness detector (the gaps
//! between runs, at this time of day, with slack), and each turn judges how long it has
//! been since the last one by the engine's clock. An overdue job is a freshness
//! observation of its own (monitor `runs of JOB`), which the turn acts on as on a
//! poll's: one incident naming the job, when it last ran and how often it usually runs;
//! a run's end is its check back, and it resolves once that holds for the settle window.
//!
//! A job whose runs are children of another job's runs (an Airflow task of its DAG, a
//! dbt model of its invocation) is judged through that parent, so a DAG that stops is
//! one incident, not one per task. Observations are stored only when what they say
//! changes (and, while an incident on them is recovering, each turn, so it can settle).

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::detect::{freshness, VerdictKind};
use crate::lineage::openlineage::JobName;
use crate::monitor::{human_seconds, Detail, Health};

/// How far back runs teach a job's cadence.
const LOOKBACK_DAYS: i64 = 35;

/// The monitor an overdue job's incident names.
pub fn run_cadence_monitor(job: &str) -> String {
    format!("runs of {job}")
}

impl Engine {
    /// Judge every job's time since its last run against its learned cadence, storing
    /// an observation where the verdict changed (inside the turn's transaction, before
    /// the turn reads what is new).
    pub(super) fn store_run_cadences(&mut self, now: NaiveDateTime) -> Result<()> {
        let ends = self
            .state
            .run_ends(now.and_utc() - TimeDelta::days(LOOKBACK_DAYS))?;
        let with_runs: BTreeSet<&JobName> = ends.iter().map(|end| &end.job).collect();
        let mut runs: BTreeMap<&JobName, Vec<i64>> = BTreeMap::new();
        for end in &ends {
            let child = end
                .parent
                .as_ref()
                .is_some_and(|parent| parent != &end.job && with_runs.contains(parent));
            if !child {
                runs.entry(&end.job).or_default().push(end.at.timestamp());
            }
        }
        let at = Timestamp::from_naive(now);
        for (job, times) in runs {
            let observation = cadence_observation(&job.name, &times, at);
            let key = (observation.monitor.clone(), CheckKind::Freshness, None);
            let recovering = observation.verdict == VerdictKind::Ok
                && self.incidents.iter().any(|i| {
                    i.monitor == observation.monitor && i.status != IncidentStatus::Resolved
                });
            let changed = self.latest.get(&key).is_none_or(|latest| {
                latest.verdict != observation.verdict
                    || (observation.verdict == VerdictKind::Learning
                        && latest.detail.message != observation.detail.message)
            });
            if changed || recovering {
                self.state.insert_observation(&observation)?;
            }
        }
        Ok(())
    }
}

/// A job's runs (their ends, in seconds) judged at `at`: learning until the detector
/// has enough gaps to know a cadence, then ok or late, saying when it last ran and how
/// often it usually runs.
fn cadence_observation(job: &str, times: &[i64], at: Timestamp) -> Observation {
    let now = at.naive().and_utc().timestamp();
    let verdict = freshness::judge(times, now, freshness::Sla::default());
    let last = times.iter().max().copied().unwrap_or(now);
    let last_ran = chrono::DateTime::from_timestamp(last, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    let message = match (verdict.kind, verdict.expected) {
        (VerdictKind::Late, Some(range)) => format!(
            "{job} last ran at {last_ran}; it usually runs every {}, so a run was due within {}: none has come for {}",
            human_seconds(range.baseline),
            human_seconds(range.high),
            human_seconds(verdict.observed)
        ),
        (_, Some(range)) => format!(
            "{job} last ran at {last_ran}, within its usual cadence (every {})",
            human_seconds(range.baseline)
        ),
        (_, None) => format!(
            "learning: {} of {job}'s runs seen; a run that never comes is noticed once {} are",
            times.len(),
            freshness::MIN_GAPS + 1
        ),
    };
    Observation {
        monitor: run_cadence_monitor(job),
        table: job.to_string(),
        check: CheckKind::Freshness,
        at,
        value: Some(verdict.observed),
        verdict: verdict.kind,
        expected: verdict.expected,
        health: Health::Ok,
        detail: Detail {
            expected: verdict.expected,
            message: Some(message),
            score: verdict.score,
            writer: Some(job.to_string()),
            ..Detail::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_utc(chrono::DateTime::from_timestamp(seconds, 0).unwrap())
    }

    /// Twice a day for five days: learning at first, ok while the next run is not
    /// overdue, late once it is, naming when it last ran and how often it runs.
    #[test]
    fn a_job_that_stops_running_is_late_once_its_cadence_is_known() {
        let day = 24 * HOUR;
        let start = 1_790_000_000 - 1_790_000_000 % day + 2 * HOUR;
        let runs: Vec<i64> = (0..10).map(|n| start + n * 12 * HOUR).collect();
        let learning = cadence_observation("billing.export", &runs[..3], at(runs[2] + HOUR));
        assert_eq!(learning.verdict, VerdictKind::Learning);
        assert_eq!(
            learning.detail.message.as_deref(),
            Some("learning: 3 of billing.export's runs seen; a run that never comes is noticed once 4 are")
        );
        let last = runs[9];
        let ok = cadence_observation("billing.export", &runs, at(last + 13 * HOUR));
        assert_eq!(ok.verdict, VerdictKind::Ok);
        let late = cadence_observation("billing.export", &runs, at(last + 30 * HOUR));
        assert_eq!(late.verdict, VerdictKind::Late);
        let said = late.detail.message.unwrap();
        assert!(
            said.starts_with("billing.export last ran at ")
                && said.contains("it usually runs every 12h"),
            "{said}"
        );
    }
}
