//! dbt Core's runs and holds (`dbt_core_run`, `dbt_core_hold`): dataward runs dbt
//! itself, so what it queued, ran and held lives here (see
//! `effects::orchestrator::dbt_core`).

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

/// A run as the store holds it.
#[derive(Debug, Clone)]
pub struct DbtCoreRun {
    pub id: i64,
    pub job: String,
    pub command: String,
    pub requested_at: String,
    /// queued, running, success or failed.
    pub status: String,
    /// The process that queued it (see `dbt_core::me`).
    pub owner: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub log: Option<String>,
    pub detail: String,
}

impl DbtCoreRun {
    pub fn in_flight(&self) -> bool {
        matches!(self.status.as_str(), "queued" | "running")
    }
}

/// A run to queue, once per `key`.
pub struct NewDbtCoreRun<'a> {
    pub project: &'a str,
    pub job: &'a str,
    pub key: &'a str,
    pub command: &'a str,
    pub by: &'a str,
    pub at: &'a str,
    pub owner: &'a str,
}

/// How a run ended.
pub struct DbtCoreEnd<'a> {
    pub status: &'a str,
    pub at: &'a str,
    pub exit_code: Option<i32>,
    pub output: &'a str,
    pub detail: &'a str,
}

pub trait DbtCoreStore {
    /// When the hold on `job` was asked, if it stands.
    fn dbt_core_held_at(&self, job: &str) -> Result<Option<String>>;
    /// Records a hold on `job`; one already standing is kept as it is.
    fn dbt_core_hold(&self, job: &str, command: &str, at: &str) -> Result<()>;
    fn dbt_core_lift(&self, job: &str) -> Result<()>;
    /// Was one of dataward's runs running at `at`?
    fn dbt_core_ran_at(&self, at: &str) -> Result<bool>;
    fn dbt_core_run(&self, id: i64) -> Result<Option<DbtCoreRun>>;
    fn dbt_core_run_by_key(&self, key: &str) -> Result<Option<DbtCoreRun>>;
    /// `job`'s latest runs, newest first.
    fn dbt_core_runs_of(&self, job: &str, limit: usize) -> Result<Vec<DbtCoreRun>>;
    /// The project's runs recorded as running.
    fn dbt_core_running(&self, project: &str) -> Result<Vec<DbtCoreRun>>;
    /// Queues a run unless one has `key` already; returns the run's id either way.
    fn dbt_core_queue(&self, run: &NewDbtCoreRun) -> Result<i64>;
    /// A queued run is carried out by `owner` now.
    fn dbt_core_adopt(&self, id: i64, owner: &str) -> Result<()>;
    /// `owner`'s oldest queued run of the project: its id and command.
    fn dbt_core_next_queued(&self, project: &str, owner: &str) -> Result<Option<(i64, String)>>;
    fn dbt_core_started(&self, id: i64, at: &str, log: &str) -> Result<()>;
    /// A run left running by a process that is gone: failed, with its output so far.
    fn dbt_core_abandoned(&self, id: i64, detail: &str, output: &str) -> Result<()>;
    fn dbt_core_finished(&self, id: i64, end: &DbtCoreEnd) -> Result<()>;
}

const RUN: &str =
    "id, job, command, requested_at, status, owner, started_at, finished_at, log, detail";

fn run(r: &rusqlite::Row) -> rusqlite::Result<DbtCoreRun> {
    Ok(DbtCoreRun {
        id: r.get(0)?,
        job: r.get(1)?,
        command: r.get(2)?,
        requested_at: r.get(3)?,
        status: r.get(4)?,
        owner: r.get(5)?,
        started_at: r.get(6)?,
        finished_at: r.get(7)?,
        log: r.get(8)?,
        detail: r.get(9)?,
    })
}

impl DbtCoreStore for Connection {
    fn dbt_core_held_at(&self, job: &str) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT held_at FROM dbt_core_hold WHERE job = ?1")?
            .query_row([job], |r| r.get(0))
            .optional()?)
    }

    fn dbt_core_hold(&self, job: &str, command: &str, at: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO dbt_core_hold (job, command, held_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (job) DO NOTHING",
        )?
        .execute(params![job, command, at])?;
        Ok(())
    }

    fn dbt_core_lift(&self, job: &str) -> Result<()> {
        self.prepare_cached("DELETE FROM dbt_core_hold WHERE job = ?1")?
            .execute([job])?;
        Ok(())
    }

    fn dbt_core_ran_at(&self, at: &str) -> Result<bool> {
        Ok(self
            .prepare_cached(
                "SELECT count(*) > 0 FROM dbt_core_run WHERE started_at <= ?1
                   AND (finished_at IS NULL OR finished_at >= ?1)",
            )?
            .query_row([at], |r| r.get(0))?)
    }

    fn dbt_core_run(&self, id: i64) -> Result<Option<DbtCoreRun>> {
        Ok(self
            .prepare_cached(&format!("SELECT {RUN} FROM dbt_core_run WHERE id = ?1"))?
            .query_row([id], run)
            .optional()?)
    }

    fn dbt_core_run_by_key(&self, key: &str) -> Result<Option<DbtCoreRun>> {
        Ok(self
            .prepare_cached(&format!(
                "SELECT {RUN} FROM dbt_core_run WHERE request_key = ?1"
            ))?
            .query_row([key], run)
            .optional()?)
    }

    fn dbt_core_runs_of(&self, job: &str, limit: usize) -> Result<Vec<DbtCoreRun>> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {RUN} FROM dbt_core_run WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![job, limit as i64], run)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn dbt_core_running(&self, project: &str) -> Result<Vec<DbtCoreRun>> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {RUN} FROM dbt_core_run WHERE project = ?1 AND status = 'running'"
        ))?;
        let rows = stmt.query_map([project], run)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn dbt_core_queue(&self, new: &NewDbtCoreRun) -> Result<i64> {
        self.prepare_cached(
            "INSERT INTO dbt_core_run
               (project, job, request_key, command, requested_by, requested_at, status, owner)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)
             ON CONFLICT (request_key) DO NOTHING",
        )?
        .execute(params![
            new.project,
            new.job,
            new.key,
            new.command,
            new.by,
            new.at,
            new.owner
        ])?;
        Ok(self
            .prepare_cached("SELECT id FROM dbt_core_run WHERE request_key = ?1")?
            .query_row([new.key], |r| r.get(0))?)
    }

    fn dbt_core_adopt(&self, id: i64, owner: &str) -> Result<()> {
        self.prepare_cached(
            "UPDATE dbt_core_run SET owner = ?2 WHERE id = ?1 AND status = 'queued'",
        )?
        .execute(params![id, owner])?;
        Ok(())
    }

    fn dbt_core_next_queued(&self, project: &str, owner: &str) -> Result<Option<(i64, String)>> {
        Ok(self
            .prepare_cached(
                "SELECT id, command FROM dbt_core_run
                 WHERE project = ?1 AND status = 'queued' AND owner = ?2 ORDER BY id LIMIT 1",
            )?
            .query_row(params![project, owner], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    fn dbt_core_started(&self, id: i64, at: &str, log: &str) -> Result<()> {
        self.prepare_cached(
            "UPDATE dbt_core_run SET status = 'running', started_at = ?2, log = ?3 WHERE id = ?1",
        )?
        .execute(params![id, at, log])?;
        Ok(())
    }

    fn dbt_core_abandoned(&self, id: i64, detail: &str, output: &str) -> Result<()> {
        self.prepare_cached(
            "UPDATE dbt_core_run SET status = 'failed', detail = ?2,
               output = ?3 WHERE id = ?1 AND status = 'running'",
        )?
        .execute(params![id, detail, output])?;
        Ok(())
    }

    fn dbt_core_finished(&self, id: i64, end: &DbtCoreEnd) -> Result<()> {
        self.prepare_cached(
            "UPDATE dbt_core_run SET status = ?2, finished_at = ?3, exit_code = ?4,
               output = ?5, detail = ?6 WHERE id = ?1",
        )?
        .execute(params![
            id,
            end.status,
            end.at,
            end.exit_code,
            end.output,
            end.detail
        ])?;
        Ok(())
    }
}
