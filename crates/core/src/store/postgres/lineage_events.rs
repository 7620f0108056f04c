//! OpenLineage run events on PostgreSQL, each kept once (see `store::lineage_events`).
//! Where SQLite takes a run's row count from the row of its latest event (bare columns
//! beside `MAX`), this takes each run's latest row with `DISTINCT ON`.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use postgres::types::ToSql;

use super::PgState;
use crate::clock::Timestamp;
use crate::lineage::openlineage::{Dataset, JobName, Position, RunEvent};
use crate::lineage::LearnedJob;
use crate::store::lineage_events::{
    parse_event_time, time_text, LineageEventStore, RunEnd, RunRows,
};

fn event_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    parse_event_time(text)
        .with_context(|| format!("the state database's lineage event time {text:?}"))
}

impl PgState {
    fn select_run_rows(&self, of: Option<(&JobName, &Dataset)>) -> Result<Vec<RunRows>> {
        let params: [&(dyn ToSql + Sync); 5] = [
            &self.team,
            &of.map(|(job, _)| job.namespace.as_str()),
            &of.map(|(job, _)| job.name.as_str()),
            &of.map(|(_, dataset)| dataset.namespace.as_str()),
            &of.map(|(_, dataset)| dataset.name.as_str()),
        ];
        self.query(
            "SELECT job_namespace, job_name, namespace, name, event_time, row_count FROM (
               SELECT DISTINCT ON (e.run_id, e.job_namespace, e.job_name, d.namespace, d.name)
                      e.job_namespace, e.job_name, d.namespace, d.name, e.event_time, d.row_count
               FROM lineage_event_dataset d JOIN lineage_event e ON e.id = d.event
               WHERE e.team = $1 AND d.direction = 'output' AND d.row_count IS NOT NULL
                 AND ($2::text IS NULL OR (e.job_namespace = $2 AND e.job_name = $3
                                           AND d.namespace = $4 AND d.name = $5))
               ORDER BY e.run_id, e.job_namespace, e.job_name, d.namespace, d.name,
                        e.event_time DESC) latest
             ORDER BY event_time",
            &params,
        )?
        .iter()
        .map(|r| {
            Ok(RunRows {
                job: JobName {
                    namespace: r.get(0),
                    name: r.get(1),
                },
                dataset: Dataset {
                    namespace: r.get(2),
                    name: r.get(3),
                },
                at: event_time(r.get(4))?,
                rows: r.get::<_, i64>(5) as u64,
            })
        })
        .collect()
    }
}

impl LineageEventStore for PgState {
    fn insert_lineage_events(
        &self,
        events: &[(String, RunEvent)],
        received_at: Timestamp,
    ) -> Result<usize> {
        let mut new = 0;
        for (via, event) in events {
            let parent = event.run.parent.as_ref();
            let error = event.run.error.as_ref();
            let inserted = self.write_query(
                "INSERT INTO lineage_event (team, run_id, job_namespace, job_name, event_type,
                     event_time, parent_run_id, parent_job_namespace, parent_job_name,
                     error_message, stack_trace, dbt_invocation_id, producer, received_at, via)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                 ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &self.team,
                    &event.run.run_id,
                    &event.job.namespace,
                    &event.job.name,
                    &event.event_type.as_str(),
                    &time_text(event.event_time),
                    &parent.map(|p| &p.run_id),
                    &parent.map(|p| &p.job.namespace),
                    &parent.map(|p| &p.job.name),
                    &error.map(|e| &e.message),
                    &error.and_then(|e| e.stack_trace.as_ref()),
                    &event.run.dbt_invocation_id,
                    &event.producer,
                    &received_at.to_string(),
                    via,
                ],
            )?;
            let Some(row) = inserted.first() else {
                continue; // kept already
            };
            new += 1;
            let id: i64 = row.get(0);
            let inputs = event.inputs.iter().map(|d| ("input", d, None));
            let outputs = event
                .outputs
                .iter()
                .map(|o| ("output", &o.dataset, o.row_count.map(|r| r as i64)));
            for (direction, dataset, rows) in inputs.chain(outputs) {
                self.execute(
                    "INSERT INTO lineage_event_dataset (event, direction, namespace, name, row_count)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    &[&id, &direction, &dataset.namespace, &dataset.name, &rows],
                )?;
            }
        }
        Ok(new)
    }

    fn lineage_event_count(&self) -> Result<u64> {
        let rows = self.query(
            "SELECT count(*) FROM lineage_event WHERE team = $1",
            &[&self.team],
        )?;
        Ok(rows[0].get::<_, i64>(0) as u64)
    }

    fn lineage_file_position(&self, path: &str) -> Result<Option<Position>> {
        Ok(self
            .query(
                "SELECT byte_offset, lines, file_id FROM lineage_file WHERE team = $1 AND path = $2",
                &[&self.team, &path],
            )?
            .first()
            .map(|r| Position {
                offset: r.get::<_, i64>(0) as u64,
                lines: r.get::<_, i64>(1) as u64,
                file_id: r.get::<_, Option<i64>>(2).map(|id| id as u64),
            }))
    }

    fn set_lineage_file_position(&self, path: &str, position: Position) -> Result<()> {
        self.execute(
            "INSERT INTO lineage_file (team, path, byte_offset, lines, file_id)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (team, path) DO UPDATE SET byte_offset = excluded.byte_offset,
               lines = excluded.lines, file_id = excluded.file_id",
            &[
                &self.team,
                &path,
                &(position.offset as i64),
                &(position.lines as i64),
                &position.file_id.map(|id| id as i64),
            ],
        )?;
        Ok(())
    }

    fn learned_jobs(&self) -> Result<Vec<LearnedJob>> {
        let mut jobs: BTreeMap<JobName, LearnedJob> = BTreeMap::new();
        for r in self.query(
            "SELECT job_namespace, job_name, max(event_time) FROM lineage_event WHERE team = $1
             GROUP BY job_namespace, job_name",
            &[&self.team],
        )? {
            let job = JobName {
                namespace: r.get(0),
                name: r.get(1),
            };
            let last_seen = event_time(r.get(2))?;
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
        for r in self.query(
            "SELECT DISTINCT e.job_namespace, e.job_name, d.direction, d.namespace, d.name
             FROM lineage_event_dataset d JOIN lineage_event e ON e.id = d.event
             WHERE e.team = $1 ORDER BY d.namespace, d.name",
            &[&self.team],
        )? {
            let job = JobName {
                namespace: r.get(0),
                name: r.get(1),
            };
            let dataset = Dataset {
                namespace: r.get(3),
                name: r.get(4),
            };
            if let Some(learned) = jobs.get_mut(&job) {
                match r.get::<_, &str>(2) {
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

    fn run_ends(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<RunEnd>> {
        self.query(
            "SELECT job_namespace, job_name, parent_job_namespace, parent_job_name, event_time
             FROM (
               SELECT DISTINCT ON (run_id, job_namespace, job_name)
                      job_namespace, job_name, parent_job_namespace, parent_job_name, event_time
               FROM lineage_event
               WHERE team = $1 AND event_type IN ('COMPLETE', 'FAIL', 'ABORT')
                 AND event_time >= $2
               ORDER BY run_id, job_namespace, job_name, event_time DESC) latest
             ORDER BY event_time",
            &[&self.team, &time_text(since)],
        )?
        .iter()
        .map(|r| {
            let parent = match (r.get::<_, Option<String>>(2), r.get::<_, Option<String>>(3)) {
                (Some(namespace), Some(name)) => Some(JobName { namespace, name }),
                _ => None,
            };
            Ok(RunEnd {
                job: JobName {
                    namespace: r.get(0),
                    name: r.get(1),
                },
                parent,
                at: event_time(r.get(4))?,
            })
        })
        .collect()
    }
}
