//! OpenLineage run events as received (`lineage_event`, with each event's datasets in
//! `lineage_event_dataset`), and how far each tailed file transport's JSONL was read
//! (`lineage_file`). An event is kept once: the same event again (a sender's retry, a
//! file read again after a restart) is the same run, job, type and time, and is ignored.

use std::collections::BTreeMap;

use anyhow::Result;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Timestamp;
use crate::lineage::openlineage::{Dataset, JobName, Position, RunEvent};
use crate::lineage::LearnedJob;

pub trait LineageEventStore {
    /// Keep `events` (received at `received_at`, `via` the listener or a file's line);
    /// returns how many were new.
    fn insert_lineage_events(
        &self,
        events: &[(String, RunEvent)],
        received_at: Timestamp,
    ) -> Result<usize>;
    /// How many events are kept.
    fn lineage_event_count(&self) -> Result<u64>;
    /// Where the next read of a tailed file starts (`None`: from its start).
    fn lineage_file_position(&self, path: &str) -> Result<Option<Position>>;
    fn set_lineage_file_position(&self, path: &str, position: Position) -> Result<()>;
    /// Every job seen in events, with the datasets it read and wrote and when it was
    /// last seen (by the producer's clock), sorted by job.
    fn learned_jobs(&self) -> Result<Vec<LearnedJob>>;
    /// The rows each run wrote to each output, as the producer counted them, once per
    /// run and output (from the run's latest event that counts them: dbt-ol puts the
    /// count on the START too), oldest first.
    fn output_row_counts(&self) -> Result<Vec<RunRows>>;
    /// [`output_row_counts`](Self::output_row_counts) of one job's one output.
    fn run_rows_of(&self, job: &JobName, dataset: &Dataset) -> Result<Vec<RunRows>>;
    /// When each run that ended (COMPLETE, FAIL or ABORT) at or after `since` ended, by
    /// the producer's clock, once per run, with the job of its parent run; oldest first.
    fn run_ends(&self, since: DateTime<Utc>) -> Result<Vec<RunEnd>>;
}

/// One run's end, as its latest terminal event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    pub job: JobName,
    /// The parent run's job (an Airflow task's DAG, a dbt model's invocation).
    pub parent: Option<JobName>,
    pub at: DateTime<Utc>,
}

/// The rows one run of a job wrote to one output, as the producer counted them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRows {
    pub job: JobName,
    pub dataset: Dataset,
    /// The event's time, by the producer's clock.
    pub at: DateTime<Utc>,
    pub rows: u64,
}

/// Times kept to the nanosecond in a fixed width, so text order is time order and the
/// same event's time is the same text.
pub(crate) fn time_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// An event time as [`time_text`] wrote it.
pub(crate) fn parse_event_time(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc))
}

fn read_event_time(text: &str) -> rusqlite::Result<DateTime<Utc>> {
    parse_event_time(text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
    })
}

impl LineageEventStore for Connection {
    fn insert_lineage_events(
        &self,
        events: &[(String, RunEvent)],
        received_at: Timestamp,
    ) -> Result<usize> {
        let mut insert = self.prepare_cached(
            "INSERT INTO lineage_event (run_id, job_namespace, job_name, event_type,
                 event_time, parent_run_id, parent_job_namespace, parent_job_name,
                 error_message, stack_trace, dbt_invocation_id, producer, received_at, via)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT (run_id, job_namespace, job_name, event_type, event_time) DO NOTHING",
        )?;
        let mut dataset = self.prepare_cached(
            "INSERT OR IGNORE INTO lineage_event_dataset (event, direction, namespace, name, row_count)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut new = 0;
        for (via, event) in events {
            let parent = event.run.parent.as_ref();
            let error = event.run.error.as_ref();
            let inserted = insert.execute(params![
                event.run.run_id,
                event.job.namespace,
                event.job.name,
                event.event_type.as_str(),
                time_text(event.event_time),
                parent.map(|p| &p.run_id),
                parent.map(|p| &p.job.namespace),
                parent.map(|p| &p.job.name),
                error.map(|e| &e.message),
                error.and_then(|e| e.stack_trace.as_ref()),
                event.run.dbt_invocation_id,
                event.producer,
                received_at.to_string(),
                via,
            ])?;
            if inserted == 0 {
                continue;
            }
            new += 1;
            let id = self.last_insert_rowid();
            for input in &event.inputs {
                dataset.execute(params![
                    id,
                    "input",
                    input.namespace,
                    input.name,
                    None::<i64>
                ])?;
            }
            for output in &event.outputs {
                let rows = output.row_count.map(|r| r as i64);
                dataset.execute(params![
                    id,
                    "output",
                    output.dataset.namespace,
                    output.dataset.name,
                    rows
                ])?;
            }
        }
        Ok(new)
    }

    fn lineage_event_count(&self) -> Result<u64> {
        let count: i64 = self.query_row("SELECT COUNT(*) FROM lineage_event", [], |r| r.get(0))?;
        Ok(count as u64)
    }

    fn lineage_file_position(&self, path: &str) -> Result<Option<Position>> {
        Ok(self
            .prepare_cached("SELECT offset, lines, file_id FROM lineage_file WHERE path = ?1")?
            .query_row([path], |r| {
                Ok(Position {
                    offset: r.get::<_, i64>(0)? as u64,
                    lines: r.get::<_, i64>(1)? as u64,
                    file_id: r.get::<_, Option<i64>>(2)?.map(|id| id as u64),
                })
            })
            .optional()?)
    }

    fn set_lineage_file_position(&self, path: &str, position: Position) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO lineage_file (path, offset, lines, file_id) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (path) DO UPDATE SET offset = ?2, lines = ?3, file_id = ?4",
        )?
        .execute(params![
            path,
            position.offset as i64,
            position.lines as i64,
            position.file_id.map(|id| id as i64)
        ])?;
        Ok(())
    }

    fn learned_jobs(&self) -> Result<Vec<LearnedJob>> {
        let mut jobs: BTreeMap<JobName, LearnedJob> = BTreeMap::new();
        let mut seen = self.prepare_cached(
            "SELECT job_namespace, job_name, MAX(event_time) FROM lineage_event
             GROUP BY job_namespace, job_name",
        )?;
        let rows = seen.query_map([], |r| {
            Ok((
                JobName {
                    namespace: r.get(0)?,
                    name: r.get(1)?,
                },
                read_event_time(&r.get::<_, String>(2)?)?,
            ))
        })?;
        for row in rows {
            let (job, last_seen) = row?;
            jobs.insert(
                job.clone(),
                LearnedJob {
                    job,
                    last_seen,
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                },
            );
        }
        let mut datasets = self.prepare_cached(
            "SELECT DISTINCT e.job_namespace, e.job_name, d.direction, d.namespace, d.name
             FROM lineage_event_dataset d JOIN lineage_event e ON e.id = d.event
             ORDER BY d.namespace, d.name",
        )?;
        let rows = datasets.query_map([], |r| {
            Ok((
                JobName {
                    namespace: r.get(0)?,
                    name: r.get(1)?,
                },
                r.get::<_, String>(2)?,
                Dataset {
                    namespace: r.get(3)?,
                    name: r.get(4)?,
                },
            ))
        })?;
        for row in rows {
            let (job, direction, dataset) = row?;
            if let Some(learned) = jobs.get_mut(&job) {
                match direction.as_str() {
                    "input" => learned.inputs.push(dataset),
                    _ => learned.outputs.push(dataset),
                }
            }
        }
        Ok(jobs.into_values().collect())
    }

    fn output_row_counts(&self) -> Result<Vec<RunRows>> {
        self.select_run_rows(None)
    }

    fn run_rows_of(&self, job: &JobName, dataset: &Dataset) -> Result<Vec<RunRows>> {
        self.select_run_rows(Some((job, dataset)))
    }

    fn run_ends(&self, since: DateTime<Utc>) -> Result<Vec<RunEnd>> {
        let mut select = self.prepare_cached(
            // SQLite takes the bare columns from the row whose event_time is the MAX.
            "SELECT job_namespace, job_name, parent_job_namespace, parent_job_name,
                    MAX(event_time)
             FROM lineage_event
             WHERE event_type IN ('COMPLETE', 'FAIL', 'ABORT') AND event_time >= ?1
             GROUP BY run_id, job_namespace, job_name
             ORDER BY 5",
        )?;
        let rows = select.query_map(params![time_text(since)], |r| {
            let parent = match (r.get::<_, Option<String>>(2)?, r.get(3)?) {
                (Some(namespace), Some(name)) => Some(JobName { namespace, name }),
                _ => None,
            };
            Ok(RunEnd {
                job: JobName {
                    namespace: r.get(0)?,
                    name: r.get(1)?,
                },
                parent,
                at: read_event_time(&r.get::<_, String>(4)?)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

trait SelectRunRows {
    fn select_run_rows(&self, of: Option<(&JobName, &Dataset)>) -> Result<Vec<RunRows>>;
}

impl SelectRunRows for Connection {
    fn select_run_rows(&self, of: Option<(&JobName, &Dataset)>) -> Result<Vec<RunRows>> {
        let mut select = self.prepare_cached(
            // SQLite takes the bare columns from the row whose event_time is the MAX.
            "SELECT e.job_namespace, e.job_name, d.namespace, d.name, MAX(e.event_time),
                    d.row_count
             FROM lineage_event_dataset d JOIN lineage_event e ON e.id = d.event
             WHERE d.direction = 'output' AND d.row_count IS NOT NULL
               AND (?1 IS NULL OR (e.job_namespace = ?1 AND e.job_name = ?2
                                   AND d.namespace = ?3 AND d.name = ?4))
             GROUP BY e.run_id, e.job_namespace, e.job_name, d.namespace, d.name
             ORDER BY 5",
        )?;
        let rows = select.query_map(
            params![
                of.map(|(job, _)| &job.namespace),
                of.map(|(job, _)| &job.name),
                of.map(|(_, dataset)| &dataset.namespace),
                of.map(|(_, dataset)| &dataset.name),
            ],
            |r| {
                Ok(RunRows {
                    job: JobName {
                        namespace: r.get(0)?,
                        name: r.get(1)?,
                    },
                    dataset: Dataset {
                        namespace: r.get(2)?,
                        name: r.get(3)?,
                    },
                    at: read_event_time(&r.get::<_, String>(4)?)?,
                    rows: r.get::<_, i64>(5)? as u64,
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
