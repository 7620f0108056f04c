//! A failed run: a job that ended in failure, however dataward heard of it (the
//! orchestrator's run state, dbt's run_results.json, an OpenLineage FAIL event). One type
//! for all three, so one rule opens an incident for any of them and one diagnosis reads
//! its error.
//!
//! Pure: the engine reads the sources and hands them here.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::lineage::openlineage::{Dataset, EventType, RunEvent};
use crate::lineage::run_results::NodeResult;

/// Where dataward heard of the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSource {
    /// The scheduler's own record of its job's last run (Airflow, dbt Cloud, dbt Core).
    Orchestrator,
    /// A node dbt could not build, in `run_results.json`.
    DbtRunResults,
    /// An OpenLineage FAIL event.
    OpenLineage,
}

impl RunSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RunSource::Orchestrator => "the orchestrator",
            RunSource::DbtRunResults => "dbt's run_results.json",
            RunSource::OpenLineage => "an OpenLineage FAIL event",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedRun {
    pub source: RunSource,
    /// The job as its source names it: an orchestrator job, a dbt node's unique_id, an
    /// OpenLineage job name (`dag_id.task_id`).
    pub job: String,
    /// The run as its source names it; with `source` and `job`, what makes one failure
    /// one incident however often it is read.
    pub run_id: String,
    pub at: Timestamp,
    /// What the run said as it failed; empty when the source did not say.
    pub error: String,
    /// The tables the job writes (`schema.table` where known): where the blast radius
    /// starts, and what an open incident must cover to explain the failure.
    pub outputs: Vec<String>,
    /// The run that spawned this one (an Airflow task's DAG run, a dbt model's
    /// invocation), when the source says: a failure and its parent's are one failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run: Option<String>,
}

impl FailedRun {
    /// One failure, once: the same run read again (each poll, after a restart) has the
    /// same key.
    pub fn key(&self) -> String {
        format!("{:?}:{}:{}", self.source, self.job, self.run_id)
    }

    /// dbt's error heads its message with "Database Error in model x (path)", which
    /// names the model and nothing else: the line after it says what went wrong.
    pub fn reason(&self) -> &str {
        let mut lines = self.error.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or_default();
        if first.ends_with(')') && first.contains(" Error in ") {
            lines.next().unwrap_or(first)
        } else {
            first
        }
    }

    /// A dbt node that could not build (`error`), with dbt's message. `outputs` is the
    /// node's relation as the lineage knows it. A node that built, was skipped (its
    /// parent failed: that parent is the failure) or is a test is not a failed run.
    pub fn from_run_result(result: &NodeResult, outputs: Vec<String>) -> Option<FailedRun> {
        use crate::lineage::run_results::NodeStatus;
        let runs = ["model.", "seed.", "snapshot."]
            .iter()
            .any(|p| result.unique_id.starts_with(p));
        if !runs || !matches!(result.status, NodeStatus::Error | NodeStatus::RuntimeError) {
            return None;
        }
        let at = result.completed_at?;
        Some(FailedRun {
            source: RunSource::DbtRunResults,
            job: result.unique_id.clone(),
            run_id: at.to_string(),
            at,
            error: result.message.clone().unwrap_or_default(),
            outputs,
            parent_run: None,
        })
    }

    /// A job whose last run the scheduler reports failed (`ended_at`). The pipelines
    /// bar carries no run id, so the run is named by when it ended; `detail` is what the
    /// scheduler said of it (empty when it said nothing), `outputs` what the notes say
    /// the job writes.
    pub fn from_orchestrator(
        job: &str,
        ended_at: Timestamp,
        detail: &str,
        outputs: Vec<String>,
    ) -> FailedRun {
        FailedRun {
            source: RunSource::Orchestrator,
            job: job.to_string(),
            run_id: ended_at.to_string(),
            at: ended_at,
            error: detail.to_string(),
            outputs,
            parent_run: None,
        }
    }

    /// An OpenLineage FAIL: the job, its run, when, the `errorMessage` facet and the
    /// datasets it wrote, each named by `table` (`naming::table_in` over the configured
    /// warehouses; one it cannot place keeps its OpenLineage name). Anything but a FAIL
    /// is no failed run. dbt-ol's model FAIL carries no error text: its error is in the
    /// run_results.json of the invocation it names, which is said instead.
    pub fn from_openlineage(
        event: &RunEvent,
        table: &dyn Fn(&Dataset) -> Option<String>,
    ) -> Option<FailedRun> {
        if event.event_type != EventType::Fail {
            return None;
        }
        let error = match (&event.run.error, &event.run.dbt_invocation_id) {
            (Some(error), _) => error.message.clone(),
            (None, Some(invocation)) => {
                format!("(no error in the event: dbt invocation {invocation}'s run_results.json has it)")
            }
            (None, None) => String::new(),
        };
        let outputs = event
            .outputs
            .iter()
            .map(|o| table(&o.dataset).unwrap_or_else(|| o.dataset.name.clone()))
            .collect();
        Some(FailedRun {
            source: RunSource::OpenLineage,
            job: event.job.name.clone(),
            run_id: event.run.run_id.clone(),
            at: Timestamp::from_utc(event.event_time),
            error,
            outputs,
            parent_run: event.run.parent.as_ref().map(|p| p.run_id.clone()),
        })
    }
}

/// Something an error message names that dataward may know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// `column "amount" does not exist`, `invalid identifier 'AMOUNT'`, `Referenced
    /// column "amount" not found`.
    Column(String),
    /// `relation "raw.orders" does not exist`, `Table with name customers does not
    /// exist`, `Object 'X' does not exist`.
    Relation(String),
    /// `No such file or directory: '/mnt/exports/x.csv'`.
    Path(String),
}

/// What the error names, in the order it names them, each once. Reads the wordings of
/// PostgreSQL, Snowflake, DuckDB and Python; what it does not recognise names nothing
/// (the diagnosis then quotes the error and says what it could not join it with).
pub fn named_in(error: &str) -> Vec<Named> {
    let mut found = Vec::new();
    let mut add = |named: Named| {
        if !found.contains(&named) {
            found.push(named);
        }
    };
    for line in error.lines() {
        let lower = line.to_ascii_lowercase();
        for (lead, make) in PATTERNS {
            let mut from = 0;
            while let Some(at) = lower[from..].find(lead) {
                let start = from + at + lead.len();
                from = start;
                if let Some(name) = name_at(&line[start..]) {
                    add(make(name));
                }
            }
        }
    }
    found
}

type Make = fn(String) -> Named;

/// The words that come just before a name, and what the name is.
const PATTERNS: &[(&str, Make)] = &[
    ("column ", Named::Column),
    ("invalid identifier ", Named::Column),
    ("relation ", Named::Relation),
    ("table with name ", Named::Relation),
    ("object ", Named::Relation),
    ("no such file or directory: ", Named::Path),
];

/// A quoted name (`"amount"`, `'AMOUNT'`), or a bare word for wordings that do not
/// quote (`Table with name customers does not exist`); a bare word must be followed by
/// "does not exist" / "not found" so that prose ("column order") names nothing.
fn name_at(rest: &str) -> Option<String> {
    let mut chars = rest.chars();
    match chars.next()? {
        quote @ ('"' | '\'' | '`') => {
            let inner = &rest[1..];
            let end = inner.find(quote)?;
            let name = &inner[..end];
            (!name.is_empty()).then(|| name.to_string())
        }
        _ => {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(end);
            let after = after.trim_start().to_ascii_lowercase();
            let absent = after.starts_with("does not exist") || after.starts_with("not found");
            (!name.is_empty() && absent).then(|| name.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::openlineage::parse_event;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/../../tests/fixtures/openlineage/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn events(name: &str) -> Vec<RunEvent> {
        fixture(name)
            .lines()
            .map(|line| parse_event(line).unwrap())
            .collect()
    }

    /// The recorded Airflow task failure maps whole: its job, its run, when, and the
    /// Python error naming the file it could not open.
    #[test]
    fn an_airflow_fail_event_is_a_failed_run_with_its_error() {
        let all = events("airflow_task_fail.jsonl");
        let failed: Vec<FailedRun> = all
            .iter()
            .filter_map(|e| FailedRun::from_openlineage(e, &|_| None))
            .collect();
        // The task's FAIL and its DAG run's.
        assert_eq!(failed.len(), 2, "{failed:#?}");
        let task = &failed[0];
        assert_eq!(task.source, RunSource::OpenLineage);
        assert_eq!(task.job, "billing_daily.export_invoices");
        assert_eq!(task.run_id, "0193a1c2-9b20-7d4e-9f22-2b3c4d5e6f70");
        assert_eq!(task.at, Timestamp::parse("2026-11-02T02:01:15Z").unwrap());
        assert!(
            task.error.starts_with("FileNotFoundError"),
            "{}",
            task.error
        );
        assert_eq!(
            named_in(&task.error),
            vec![Named::Path("/mnt/exports/invoices/2026-11-01.csv".into())]
        );
        // Neither START nor COMPLETE is a failure.
        let others = all.iter().filter(|e| e.event_type != EventType::Fail);
        assert!(others
            .filter_map(|e| FailedRun::from_openlineage(e, &|_| None))
            .next()
            .is_none());
    }

    /// dbt-ol sends a model's FAIL with no error text: the mapping says where the error
    /// is (the invocation's run_results.json) rather than leave it empty; datasets are
    /// named through the caller's warehouses.
    #[test]
    fn a_dbt_ol_fail_event_names_the_invocation_whose_run_results_hold_its_error() {
        let all = events("dbt_ol_postgres_column_dropped.jsonl");
        let failed: Vec<FailedRun> = all
            .iter()
            .filter_map(|e| FailedRun::from_openlineage(e, &|d| Some(format!("wh:{}", d.name))))
            .collect();
        assert!(!failed.is_empty());
        let model = failed
            .iter()
            .find(|f| f.job.ends_with("order_amounts"))
            .unwrap_or_else(|| panic!("{failed:#?}"));
        assert!(model.error.contains("run_results.json"), "{}", model.error);
        let keys: std::collections::BTreeSet<String> = failed.iter().map(|f| f.key()).collect();
        assert_eq!(keys.len(), failed.len(), "each run is its own failure");
    }

    #[test]
    fn errors_name_columns_relations_and_paths_in_each_warehouses_words() {
        assert_eq!(
            named_in(
                "Database Error in model order_amounts (models/order_amounts.sql)\n  \
                 column \"amount\" does not exist\n  LINE 6: select id, customer_id, amount from \"shop\"..."
            ),
            vec![Named::Column("amount".into())]
        );
        assert_eq!(
            named_in(
                "SQL compilation error: error line 1 at position 7\ninvalid identifier 'AMOUNT'"
            ),
            vec![Named::Column("AMOUNT".into())]
        );
        assert_eq!(
            named_in("relation \"raw.orders\" does not exist"),
            vec![Named::Relation("raw.orders".into())]
        );
        assert_eq!(
            named_in("Catalog Error: Table with name customers does not exist!"),
            vec![Named::Relation("customers".into())]
        );
        // Prose that happens to hold the words names nothing.
        assert_eq!(named_in("the column order changed in the report"), vec![]);
    }

    #[test]
    fn a_dbt_error_reads_past_the_line_that_only_names_the_model() {
        let run = FailedRun {
            source: RunSource::DbtRunResults,
            job: "model.shop.x".into(),
            run_id: "r".into(),
            at: Timestamp::default(),
            error: "Database Error in model x (models/x.sql)\n  column \"a\" does not exist".into(),
            outputs: vec![],
            parent_run: None,
        };
        assert_eq!(run.reason(), "column \"a\" does not exist");
    }
}
