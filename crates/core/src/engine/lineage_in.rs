//! OpenLineage run events in. The listener and the file tail run on threads of their
//! own (in the binary) and hand the events they read to the engine, the state
//! database's one writer, which keeps them and, for a tailed file, where its next read
//! starts, in one transaction: a crash loses neither and repeats nothing. What was kept
//! joins the lineage graph (`lineage::learned`), so blast radii reach the jobs the
//! events name, and the rows a job's runs report writing are judged by the volume
//! detector (`detect::run_rows`) for tables no monitor reads. A FAIL is a failed run
//! (`engine/failed_runs.rs`), heard once the events are kept.

use std::collections::BTreeMap;

use anyhow::Result;

use super::api::Event;
use super::Engine;
use crate::config::CheckKind;
use crate::detect::run_rows::judge_runs;
use crate::detect::VerdictKind;
use crate::incident::failed_run::FailedRun;
use crate::lineage::openlineage::{
    table_in, Dataset, EventType, JobName, Place, Position, RunEvent,
};
use crate::lineage::{LearnedJob, Lineage};
use crate::monitor::{Detail, Health, Observation};
use crate::store::prelude::*;

/// Events read together: from one request, or one read of a tailed file.
#[derive(Debug, Clone, Default)]
pub struct EventBatch {
    /// Each event with where it came from (`http`, `FILE:LINE`), for the record.
    pub events: Vec<(String, RunEvent)>,
    /// The tailed file these came from and where its next read starts: kept with them.
    pub file: Option<(String, Position)>,
}

impl Engine {
    /// Keep a batch of events (once each: one seen before is skipped) and, for a file,
    /// its next position, in one transaction; then join what they say to the lineage.
    /// Returns how many events were new.
    pub fn store_lineage_events(&mut self, batch: EventBatch) -> Result<usize> {
        self.ensure_database()?;
        let received_at = self.clock.timestamp();
        let new = self.state.transact(|tx| {
            let new = tx.insert_lineage_events(&batch.events, received_at)?;
            if let Some((path, position)) = &batch.file {
                tx.set_lineage_file_position(path, *position)?;
            }
            if new > 0 {
                for observation in self.run_row_observations(tx, &batch.events, received_at)? {
                    tx.insert_observation(&observation)?;
                }
            }
            Ok(new)
        })?;
        if new > 0 {
            let learned = learned_from(&batch.events);
            self.lineage = Some(
                self.lineage
                    .take()
                    .unwrap_or_else(Lineage::empty)
                    .with_learned(&learned),
            );
        }
        Ok(new)
    }

    /// Where the next read of the tailed file `path` starts, as last kept.
    pub fn lineage_file_position(&self, path: &str) -> Result<Position> {
        Ok(self.state.lineage_file_position(path)?.unwrap_or_default())
    }

    /// How many OpenLineage events are kept.
    pub fn lineage_event_count(&self) -> Result<u64> {
        self.state.lineage_event_count()
    }

    /// A run that finished and counted the rows it wrote to a table no monitor reads:
    /// the days of that job's writes to it judged by the volume detector, as a volume
    /// observation of its own (monitor `JOB rows into DATASET`). The turn acts on it as
    /// on any poll's: a breach opens one incident per job and dataset (a further short
    /// run updates it), and a later usual run is its check back, so it resolves as a
    /// table's volume incident does. Read inside the transaction that keeps the events.
    fn run_row_observations(
        &self,
        tx: &dyn Store,
        events: &[(String, RunEvent)],
        at: crate::clock::Timestamp,
    ) -> Result<Vec<Observation>> {
        let holidays: Vec<chrono::NaiveDate> = self
            .config
            .holidays
            .iter()
            .filter_map(|day| chrono::NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d").ok())
            .collect();
        let mut judged: Vec<(&JobName, &Dataset)> = Vec::new();
        let mut observations = Vec::new();
        for (_, event) in events {
            if event.event_type != EventType::Complete {
                continue;
            }
            for output in &event.outputs {
                let key = (&event.job, &output.dataset);
                if output.row_count.is_none()
                    || judged.contains(&key)
                    || self.monitored(&output.dataset)
                {
                    continue;
                }
                judged.push(key);
                let runs: Vec<_> = tx
                    .run_rows_of(&event.job, &output.dataset)?
                    .into_iter()
                    .map(|run| (run.at, run.rows))
                    .collect();
                let Some((day, verdict)) = judge_runs(&runs, &holidays) else {
                    continue;
                };
                // Names were cleaned where the event was read.
                let message = match verdict.kind {
                    VerdictKind::Learning => format!(
                        "learning: {} of {}'s runs kept so far; judged once {} prior weeks of them are",
                        runs.len(),
                        event.job.name,
                        crate::detect::volume::MIN_WEEKS
                    ),
                    kind => format!(
                        "{} wrote {:.0} rows to {} on {day}: {} by its runs' OpenLineage row counts",
                        event.job.name,
                        verdict.observed,
                        output.dataset.name,
                        kind.as_str()
                    ),
                };
                observations.push(Observation {
                    monitor: run_rows_monitor(&event.job, &output.dataset),
                    table: output.dataset.name.clone(),
                    check: CheckKind::Volume,
                    at,
                    value: Some(verdict.observed),
                    verdict: verdict.kind,
                    expected: verdict.expected,
                    health: Health::Ok,
                    detail: Detail {
                        expected: verdict.expected,
                        message: Some(message),
                        score: verdict.score,
                        writer: Some(event.job.name.clone()),
                        ..Detail::default()
                    },
                });
            }
        }
        Ok(observations)
    }

    /// Whether a monitor reads this dataset's table, so the monitor's own volume check
    /// judges it: the dataset is in the monitor's warehouse (its namespace and database
    /// per the naming spec, `naming::table_in`) and names the monitor's table, any case.
    /// A warehouse whose place cannot be told (no URL in its `url_env`, a Unix-socket
    /// host) matches by `schema.table` alone, so a table it watches is never judged
    /// twice.
    fn monitored(&self, dataset: &Dataset) -> bool {
        let table = schema_table(dataset);
        self.config.monitor.iter().any(|m| {
            let names = |t: &str| m.table.eq_ignore_ascii_case(t);
            match self.place_of(&m.warehouse) {
                Some(place) => table_in(dataset, &place).is_some_and(|t| names(&t)),
                None => names(&table) || names(&dataset.name),
            }
        })
    }

    /// Where the config's warehouse `name` is, as an event names it. A PostgreSQL
    /// warehouse's is in the URL its `url_env` names (read as the poller reads it to
    /// connect); a file's path is the config's, resolved.
    fn place_of(&self, name: &str) -> Option<Place> {
        let mut warehouse = self.config.warehouse.get(name)?.clone();
        warehouse.path = warehouse.path.map(|path| self.config.resolve(&path));
        let url = warehouse
            .url_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok());
        Place::of(&warehouse, url.as_deref())
    }

    /// The failed runs among kept events (FAILs), each opening its incident unless it is
    /// known or explained. dbt-ol's FAIL for a model carries neither the error nor the
    /// model's table, and names the job differently from the manifest: where the engine
    /// reads dbt's run_results.json, that failure is read from there (with both), so the
    /// event is left to it rather than opening a second incident for one failure.
    pub fn failed_runs_in(&mut self, events: &[(String, RunEvent)]) -> Result<Vec<Event>> {
        let reads_run_results = self
            .config
            .lineage
            .as_ref()
            .is_some_and(|l| l.run_results.is_some());
        let mut opened = Vec::new();
        for (_, event) in events {
            if reads_run_results && event.run.dbt_invocation_id.is_some() {
                continue;
            }
            let table = |dataset: &Dataset| Some(schema_table(dataset));
            if let Some(run) = FailedRun::from_openlineage(event, &table) {
                opened.extend(self.failed_run(run)?);
            }
        }
        Ok(opened)
    }

    /// Join every job the kept events name to the lineage (at start, and when the
    /// manifest or notes are read again).
    pub(super) fn join_learned_lineage(&mut self) -> Result<()> {
        let learned = self.state.learned_jobs()?;
        if learned.is_empty() {
            return Ok(());
        }
        let base = self.lineage.take().unwrap_or_else(Lineage::empty);
        self.lineage = Some(base.with_learned(&learned));
        Ok(())
    }
}

/// The monitor a job's row counts into one dataset are observed under: what its
/// incident names.
pub fn run_rows_monitor(job: &JobName, dataset: &Dataset) -> String {
    format!("{} rows into {}", job.name, dataset.name)
}

/// A dataset's table as monitors and notes name it: the last two parts of its name
/// (`shop.raw.orders` is `raw.orders`).
fn schema_table(dataset: &Dataset) -> String {
    let parts: Vec<&str> = dataset.name.split('.').collect();
    parts[parts.len().saturating_sub(2)..].join(".")
}

/// The jobs a batch names, with what each read and wrote.
fn learned_from(events: &[(String, RunEvent)]) -> Vec<LearnedJob> {
    let mut jobs: BTreeMap<_, LearnedJob> = BTreeMap::new();
    for (_, event) in events {
        let job = jobs.entry(event.job.clone()).or_insert_with(|| LearnedJob {
            job: event.job.clone(),
            last_seen: event.event_time,
            inputs: Vec::new(),
            outputs: Vec::new(),
        });
        job.last_seen = job.last_seen.max(event.event_time);
        for input in &event.inputs {
            if !job.inputs.contains(input) {
                job.inputs.push(input.clone());
            }
        }
        for output in &event.outputs {
            if !job.outputs.contains(&output.dataset) {
                job.outputs.push(output.dataset.clone());
            }
        }
    }
    jobs.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approve::Actor;
    use crate::lineage::openlineage::parse_event;

    fn complete(day: i64, run: usize, rows: u64, table: &str) -> (String, RunEvent) {
        let at = chrono::NaiveDate::from_ymd_opt(2026, 9, 7).unwrap() + chrono::Duration::days(day);
        let text = format!(
            r#"{{"eventType": "COMPLETE", "eventTime": "{at}T02:10:00Z",
                "producer": "https://example.com/scheduler",
                "run": {{"runId": "run-{run}"}},
                "job": {{"namespace": "airflow", "name": "exports.push"}},
                "inputs": [],
                "outputs": [{{"namespace": "postgres://crm:5432", "name": "{table}",
                  "outputFacets": {{"outputStatistics": {{"rowCount": {rows}}}}}}}]}}"#
        );
        ("test".to_string(), parse_event(&text).unwrap())
    }

    fn event(kind: &str, at: &str, run: &str, job: &str) -> (String, RunEvent) {
        let text = format!(
            r#"{{"eventType": "{kind}", "eventTime": "{at}",
                "producer": "https://example.com/scheduler",
                "run": {{"runId": "{run}", "facets": {{"errorMessage": {{
                  "message": "boom", "programmingLanguage": "python"}}}}}},
                "job": {{"namespace": "airflow", "name": "{job}"}},
                "inputs": [], "outputs": []}}"#
        );
        ("test".to_string(), parse_event(&text).unwrap())
    }

    /// A file of history read at first start: a job that failed and has run cleanly
    /// since opens nothing; a job whose last run failed opens one incident, however
    /// often it failed; a failure after the engine started watching opens one even
    /// though a later run succeeded.
    #[test]
    fn history_from_before_the_first_start_opens_only_jobs_still_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dataward.toml");
        std::fs::write(&path, "").unwrap();
        let config = crate::config::Config::parse("", &path).unwrap();
        let state = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
        let events = vec![
            event("FAIL", "2026-09-01T02:10:00Z", "r1", "recovered.load"),
            event("COMPLETE", "2026-09-02T02:10:00Z", "r2", "recovered.load"),
            event("FAIL", "2026-09-01T02:10:00Z", "r3", "still.failing"),
            event("FAIL", "2026-09-02T02:10:00Z", "r4", "still.failing"),
            event(
                "FAIL",
                "2099-01-01T02:10:00Z",
                "r5",
                "failed.while.watching",
            ),
            event(
                "COMPLETE",
                "2099-01-02T02:10:00Z",
                "r6",
                "failed.while.watching",
            ),
        ];
        let batch = EventBatch {
            events: events.clone(),
            file: None,
        };
        assert_eq!(engine.store_lineage_events(batch).unwrap(), 6);
        engine.failed_runs_in(&events).unwrap();
        let mut opened: Vec<String> = engine
            .snapshot(false)
            .incidents
            .iter()
            .map(|i| i.monitor.clone())
            .collect();
        opened.sort();
        assert_eq!(
            opened,
            vec!["run of failed.while.watching", "run of still.failing"]
        );
        // The console says what the check is, not only the monitor's name.
        assert!(engine
            .snapshot(false)
            .incidents
            .iter()
            .all(|i| i.check == "failed_run"));
        // A run that failed is its own kind of check, named so on the chain (the
        // receipt reads it there), not a schema change standing in for one.
        assert!(engine
            .incidents
            .iter()
            .all(|i| i.check == crate::config::CheckKind::FailedRun));
        let opened = crate::chain::records(&*engine.state).unwrap();
        let opened: Vec<_> = opened
            .iter()
            .filter(|r| r.kind == "incident_opened")
            .collect();
        assert!(opened
            .iter()
            .all(|r| r.payload.contains(r#""check":"failed_run""#)));
    }

    /// A dataset is a monitored table only in the monitor's own warehouse: the same
    /// `schema.table` on another host, port or database is another table, judged by
    /// its job's row counts.
    #[test]
    fn a_monitored_table_is_matched_on_its_warehouse_too() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var(
            "DATAWARD_LINEAGE_IN_TEST_PG",
            "postgres://dw@crm.internal:5432/crm",
        );
        let text =
            "[warehouse.crm]\nkind = \"postgres\"\nurl_env = \"DATAWARD_LINEAGE_IN_TEST_PG\"\n\n\
                    [warehouse.lite]\nkind = \"sqlite\"\npath = \"lite.db\"\n\n\
                    [[monitor]]\nwarehouse = \"crm\"\ntable = \"public.watched\"\n\
                    checks = [\"row_count\"]\n\n\
                    [[monitor]]\nwarehouse = \"lite\"\ntable = \"events\"\n\
                    checks = [\"row_count\"]\n";
        let path = dir.path().join("dataward.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("lite.db"), "").unwrap();
        let config = crate::config::Config::parse(text, &path).unwrap();
        let state = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        let engine = Engine::new(config, state, None, &Actor::current()).unwrap();
        let dataset = |namespace: &str, name: &str| Dataset {
            namespace: namespace.into(),
            name: name.into(),
        };
        assert!(engine.monitored(&dataset(
            "postgres://crm.internal:5432",
            "crm.public.watched"
        )));
        assert!(engine.monitored(&dataset("postgres://crm.internal", "CRM.public.WATCHED")));
        assert!(!engine.monitored(&dataset("postgres://other:5432", "crm.public.watched")));
        assert!(!engine.monitored(&dataset(
            "postgres://crm.internal:5433",
            "crm.public.watched"
        )));
        assert!(!engine.monitored(&dataset(
            "postgres://crm.internal:5432",
            "shop.public.watched"
        )));
        let lite = format!("sqlite://{}", dir.path().join("lite.db").display());
        assert!(engine.monitored(&dataset(&lite, "events")));
        assert!(!engine.monitored(&dataset("sqlite:///elsewhere/lite2.db", "events")));
    }

    /// No monitor runs a failed run's check: the config says so, naming the key.
    #[test]
    fn a_monitor_cannot_list_failed_run_as_a_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dataward.toml");
        let text = "[warehouse.crm]\nkind = \"sqlite\"\npath = \"crm.db\"\n\n\
                    [[monitor]]\nwarehouse = \"crm\"\ntable = \"public.t\"\n\
                    checks = [\"failed_run\"]\n";
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("crm.db"), "").unwrap();
        let error = format!(
            "{:#}",
            crate::config::Config::parse(text, &path).unwrap_err()
        );
        assert!(
            error.contains("checks: failed_run is not a check a monitor runs"),
            "{error}"
        );
    }

    /// A job's runs write about a thousand rows a day to a table no monitor reads: each
    /// run's day is judged by the volume detector and stored as an observation under
    /// the job's own monitor (learning at first); the day one writes a hundred is low,
    /// with the band. A monitored table is left to its monitor: nothing is stored for it.
    #[test]
    fn rows_a_run_reports_are_judged_by_the_volume_detector() {
        let dir = tempfile::tempdir().unwrap();
        let me = Actor::current();
        // The events' warehouse: crm.public.watched there is the monitored table.
        std::env::set_var("DATAWARD_LINEAGE_IN_ROWS_PG", "postgres://dw@crm:5432/crm");
        let text =
            "[warehouse.crm]\nkind = \"postgres\"\nurl_env = \"DATAWARD_LINEAGE_IN_ROWS_PG\"\n\n\
                    [[monitor]]\nwarehouse = \"crm\"\ntable = \"public.watched\"\n\
                    checks = [\"row_count\"]\n";
        let path = dir.path().join("dataward.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("crm.db"), "").unwrap();
        let config = crate::config::Config::parse(text, &path).unwrap();
        let state = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        let mut engine = Engine::new(config, state, None, &me).unwrap();
        let mut run = 0;
        for day in 0..36 {
            for table in ["crm.public.accounts", "crm.public.watched"] {
                run += 1;
                let rows = if day == 35 {
                    100
                } else {
                    1_000 + (day as u64 * 37) % 60
                };
                let batch = EventBatch {
                    events: vec![complete(day, run, rows, table)],
                    file: None,
                };
                assert_eq!(engine.store_lineage_events(batch).unwrap(), 1);
            }
        }
        let stored = engine.unseen_observations().unwrap();
        assert_eq!(stored.len(), 36, "one a run, none for the watched table");
        assert!(stored.iter().all(|(_, o)| o.monitor
            == "exports.push rows into crm.public.accounts"
            && o.table == "crm.public.accounts"
            && o.check == CheckKind::Volume));
        let first = &stored[0].1;
        assert_eq!(first.verdict, VerdictKind::Learning);
        assert!(first.observed_text()
            == "learning: 1 of exports.push's runs kept so far; judged once 3 prior weeks of them are");
        assert!(stored[..35]
            .iter()
            .all(|(_, o)| matches!(o.verdict, VerdictKind::Learning | VerdictKind::Ok)));
        let last = &stored[35].1;
        assert_eq!((last.verdict, last.value), (VerdictKind::Low, Some(100.0)));
        assert!(last.expected.is_some_and(|band| band.low > 500.0));
        assert_eq!(
            last.observed_text(),
            "exports.push wrote 100 rows to crm.public.accounts on 2026-10-12: low by its runs' OpenLineage row counts"
        );
    }
}
