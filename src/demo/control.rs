//! The demo's scheduler: the stand-in for dbt Cloud or Airflow, shared by every story.
//! dataward talks to it only through the engine's `Orchestrator` trait, the way it would
//! talk to a real scheduler's API. It keeps pipelines and runs; each story's world
//! carries the queued runs out (its own dbt stand-in builds the models).

use std::path::PathBuf;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Timestamp;
use crate::effects::orchestrator::{
    run_time, Orchestrator, Pipeline, PipelineState, RunRecord, RunStatus, Schedule,
};

/// A run the scheduler holds, waiting to be carried out.
pub struct QueuedRun {
    pub id: i64,
    pub job: String,
    /// The exact command to run instead of the job's own.
    pub command: Option<String>,
}

pub struct ControlPlane {
    path: PathBuf,
}

/// Makes `[orchestrator] kind = "demo"` (its `path` the scheduler's database) one the
/// engine can build, for `dataward serve` and `check` on a demo estate. The binary calls
/// this at start; the engine knows no demo.
pub fn register() {
    crate::effects::orchestrator::register("demo", |config, o| {
        let path = o
            .path
            .as_ref()
            .map(|p| config.resolve(p))
            .context("[orchestrator] kind = \"demo\" needs a path")?;
        Ok(Box::new(ControlPlane::new(path)))
    });
}

impl ControlPlane {
    pub fn new(path: PathBuf) -> ControlPlane {
        ControlPlane { path }
    }

    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open(&self.path)
            .with_context(|| format!("demo scheduler {}", self.path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(conn)
    }

    /// Creates the scheduler's tables with its pipelines: `(id, name, kind, state)`.
    pub fn create(path: PathBuf, pipelines: &[(&str, &str, &str, &str)]) -> Result<ControlPlane> {
        let control = ControlPlane::new(path);
        let conn = control.connect()?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE pipeline (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL,
                state TEXT NOT NULL, last_status TEXT NOT NULL, last_run_at TEXT
             );
             CREATE TABLE run (
                id INTEGER PRIMARY KEY, job TEXT NOT NULL, command TEXT,
                requested_at TEXT NOT NULL, requested_by TEXT NOT NULL, started_at TEXT,
                finished_at TEXT, status TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '',
                request_key TEXT UNIQUE
             );
             CREATE TABLE mover (refill_upto INTEGER);",
        )?;
        for (id, name, kind, state) in pipelines {
            conn.execute(
                "INSERT INTO pipeline VALUES (?1, ?2, ?3, ?4, 'success', NULL)",
                params![id, name, kind, state],
            )?;
        }
        drop(conn);
        Ok(control)
    }

    pub fn is_paused(&self, job: &str) -> Result<bool> {
        let state: String =
            self.connect()?
                .query_row("SELECT state FROM pipeline WHERE id = ?1", [job], |r| {
                    r.get(0)
                })?;
        Ok(state == "paused")
    }

    pub fn record_pipeline(&self, id: &str, status: &str, at: &str) -> Result<()> {
        self.connect()?.execute(
            "UPDATE pipeline SET last_status = ?2, last_run_at = ?3 WHERE id = ?1",
            params![id, status, at],
        )?;
        Ok(())
    }

    /// Where the CDC mover's current refill ends (the source's last id when it began),
    /// or None while it streams.
    pub fn mover_refill(&self) -> Result<Option<i64>> {
        Ok(self
            .connect()?
            .query_row("SELECT refill_upto FROM mover", [], |r| r.get(0))
            .optional()?
            .flatten())
    }

    pub fn set_mover_refill(&self, upto: Option<i64>) -> Result<()> {
        let conn = self.connect()?;
        conn.execute_batch("BEGIN IMMEDIATE; DELETE FROM mover;")?;
        conn.execute("INSERT INTO mover (refill_upto) VALUES (?1)", [upto])?;
        conn.execute_batch("COMMIT")?;
        Ok(())
    }

    /// Queued runs, oldest first.
    pub fn queued(&self) -> Result<Vec<QueuedRun>> {
        let conn = self.connect()?;
        let mut stmt =
            conn.prepare("SELECT id, job, command FROM run WHERE status = 'queued' ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok(QueuedRun {
                id: r.get(0)?,
                job: r.get(1)?,
                command: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Queues a run once per `key`: a second ask with the same key finds the first.
    /// `command` replaces the job's own (a backfill's exact dbt command).
    pub fn insert_run(
        &self,
        job: &str,
        command: Option<&str>,
        at: &str,
        by: &str,
        key: &str,
    ) -> Result<(i64, bool)> {
        let conn = self.connect()?;
        let known: bool = conn.query_row(
            "SELECT count(*) > 0 FROM pipeline WHERE id = ?1 AND kind = 'job'",
            [job],
            |r| r.get(0),
        )?;
        anyhow::ensure!(known, "the scheduler has no job {job}");
        let inserted = conn.execute(
            "INSERT INTO run (job, command, requested_at, requested_by, status, request_key)
             VALUES (?1, ?2, ?3, ?4, 'queued', ?5) ON CONFLICT (request_key) DO NOTHING",
            params![job, command, at, by, key],
        )?;
        let id = conn.query_row("SELECT id FROM run WHERE request_key = ?1", [key], |r| {
            r.get(0)
        })?;
        Ok((id, inserted == 0))
    }

    /// Carries out every queued run with `build` (given the exact command a run was
    /// queued with, if any), records each as a scheduler would, and says what happened.
    pub fn carry_out_queued(
        &self,
        now: &str,
        mut build: impl FnMut(Option<&str>) -> Result<String, String>,
    ) -> Result<Vec<String>> {
        let mut happened = Vec::new();
        for run in self.queued()? {
            let (status, detail) = status_of(build(run.command.as_deref()));
            self.finish_run(run.id, now, now, status, &detail)?;
            self.record_pipeline(&run.job, status, now)?;
            happened.push(format!(
                "scheduler: run #{} of {} {status}: {detail}",
                run.id, run.job
            ));
        }
        Ok(happened)
    }

    pub fn finish_run(
        &self,
        id: i64,
        started: &str,
        finished: &str,
        status: &str,
        detail: &str,
    ) -> Result<()> {
        self.connect()?.execute(
            "UPDATE run SET started_at = ?2, finished_at = ?3, status = ?4, detail = ?5 WHERE id = ?1",
            params![id, started, finished, status, detail],
        )?;
        Ok(())
    }
}

impl Orchestrator for ControlPlane {
    fn pipelines(&self) -> Result<Vec<Pipeline>> {
        let conn = self.connect()?;
        let mut stmt = conn.prepare(
            "SELECT name, state, last_status, last_run_at FROM pipeline ORDER BY kind DESC, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        let mut pipelines = Vec::new();
        for row in rows {
            let (name, state, last_status, last_run_at) = row?;
            pipelines.push(Pipeline {
                last_run_at: run_time(last_run_at, format!("{}: {name}", self.path.display()))?,
                name,
                state: PipelineState::parse(&state),
                last_status: RunStatus::parse(&last_status),
                ran_after_hold: None,
                hold_unconfirmed: None,
                last_failure: None,
            });
        }
        Ok(pipelines)
    }

    fn schedule(&self, job: &str) -> Result<Schedule> {
        let state: Option<String> = self
            .connect()?
            .query_row("SELECT state FROM pipeline WHERE id = ?1", [job], |r| {
                r.get(0)
            })
            .optional()?;
        let state = state.with_context(|| format!("the scheduler has no job {job}"))?;
        Ok(Schedule {
            paused: state == "paused",
            saved: serde_json::Value::Null,
        })
    }

    fn pause(&self, job: &str) -> Result<Option<String>> {
        self.set_paused(job, true)?;
        Ok(None)
    }

    fn restore(&self, job: &str, before: &Schedule) -> Result<()> {
        self.set_paused(job, before.paused)
    }

    fn queue_run(&self, job: &str, at: Timestamp, by: &str, key: &str) -> Result<(String, bool)> {
        let (id, existed) = self.insert_run(job, None, &at.to_string(), by, key)?;
        Ok((id.to_string(), existed))
    }

    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        let (id, existed) = self.insert_run(job, Some(command), &at.to_string(), by, key)?;
        Ok((id.to_string(), existed))
    }

    fn run(&self, _job: &str, id: &str) -> Result<Option<RunRecord>> {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(None);
        };
        let found = self
            .connect()?
            .query_row(
                "SELECT job, status, requested_at, started_at, finished_at, detail FROM run WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, [r.get(2)?, r.get(3)?, r.get(4)?], r.get(5)?)),
            )
            .optional()?;
        let Some((job, status, times, detail)) = found else {
            return Ok(None);
        };
        let [requested_at, started_at, finished_at]: [Option<String>; 3] = times;
        let time = |text| run_time(text, format!("the scheduler's run {id}"));
        Ok(Some(RunRecord {
            id: id.to_string(),
            job,
            status,
            link: None,
            requested_at: time(requested_at)?,
            started_at: time(started_at)?,
            finished_at: time(finished_at)?,
            detail,
        }))
    }
}

impl ControlPlane {
    fn set_paused(&self, job: &str, paused: bool) -> Result<()> {
        let changed = self.connect()?.execute(
            "UPDATE pipeline SET state = ?2 WHERE id = ?1",
            params![job, if paused { "paused" } else { "scheduled" }],
        )?;
        anyhow::ensure!(changed == 1, "the scheduler has no job {job}");
        Ok(())
    }
}

/// A build's outcome as the scheduler reports it: its status, and what it built or why
/// it failed.
pub fn status_of(outcome: Result<String, String>) -> (&'static str, String) {
    match outcome {
        Ok(detail) => ("success", detail),
        Err(e) => ("failed", e),
    }
}
