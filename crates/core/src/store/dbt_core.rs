//! The dbt Core runner's own database, `DATA/dbt-core.db`: dbt Core has no scheduler to
//! remember what dataward queued, ran and held, so its runner keeps that itself, as
//! Airflow keeps its metadata database (see `effects::orchestrator::dbt_core`). It is
//! not the state database: the engine alone writes that, recording the runs as the
//! orchestrator reports them. Same durability as the state database (WAL,
//! `synchronous=FULL`, read back; a 0600 file in the private data directory).
//!
//! Runs and holds an older dataward kept in the state database (`dbt_core_run`,
//! `dbt_core_hold`) are carried over once, with their ids, the first time this
//! database is opened: the state database is only read for it.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::clock::Timestamp;

/// The runner's database, in the data directory beside the state database.
pub const FILE: &str = "dbt-core.db";

/// Each entry moves the schema one version forward; never edit a shipped entry.
const MIGRATIONS: &[&str] = &[
    // 1: a run is queued once per key, carried out by the process that queued it
    // (`owner`: boot id, pid, start time), one at a time per project; its output streams
    // to `log` and its tail is kept in `output` at the end. A hold is a job dataward
    // refuses to run until the hold is lifted. `meta` says whether the state database's
    // rows were carried over.
    "CREATE TABLE run (
        id           INTEGER PRIMARY KEY,
        project      TEXT NOT NULL,
        job          TEXT NOT NULL,
        request_key  TEXT NOT NULL UNIQUE,
        command      TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'success', 'failed')),
        owner        TEXT NOT NULL,
        started_at   TEXT,
        finished_at  TEXT,
        exit_code    INTEGER,
        log          TEXT,
        output       TEXT NOT NULL DEFAULT '',
        detail       TEXT NOT NULL DEFAULT ''
     );
     CREATE INDEX run_by_job ON run (job, id);
     CREATE INDEX run_by_project ON run (project, status, id);
     CREATE TABLE hold (
        job     TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        held_at TEXT NOT NULL
     );
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
];

/// A run's columns, the same in the state database's old `dbt_core_run`.
const RUN_COLUMNS: &str = "id, project, job, request_key, command, requested_by, requested_at, \
     status, owner, started_at, finished_at, exit_code, log, output, detail";
const HOLD_COLUMNS: &str = "job, command, held_at";
/// `meta`'s key once the state database's rows were carried over (or there were none).
const CARRIED: &str = "carried_over_from_state_database";

/// A run as the runner keeps it.
#[derive(Debug, Clone)]
pub struct DbtCoreRun {
    pub id: i64,
    pub job: String,
    pub command: String,
    pub requested_at: Timestamp,
    /// queued, running, success or failed.
    pub status: String,
    /// The process that queued it (see `dbt_core::me`).
    pub owner: String,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
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
    pub at: Timestamp,
    pub owner: &'a str,
}

/// How a run ended.
pub struct DbtCoreEnd<'a> {
    pub status: &'a str,
    pub at: Timestamp,
    pub exit_code: Option<i32>,
    pub output: &'a str,
    pub detail: &'a str,
}

/// A connection to the runner's database. A type of its own, so the runner's calls
/// cannot be made on the state database.
pub struct DbtCoreDb {
    conn: Connection,
}

/// Opens (creating if needed, 0600) the runner's database at `path`, and carries over
/// the runs and holds the state database `state_db` still holds from an older dataward.
pub fn open(path: &Path, state_db: &Path) -> Result<DbtCoreDb> {
    let mut conn = super::open_private(path, "dbt Core runner's database", MIGRATIONS)?;
    carry_over(&mut conn, state_db).with_context(|| {
        format!(
            "carrying dbt Core's runs and holds over from {} to {}",
            state_db.display(),
            path.display()
        )
    })?;
    Ok(DbtCoreDb { conn })
}

/// Copies the state database's `dbt_core_run` and `dbt_core_hold` rows, ids and all,
/// once: in one transaction with the mark that says it was done, so two instances
/// opening at once (the engine's and the poll task's) copy them once, and a crash
/// half way copies them again whole.
fn carry_over(conn: &mut Connection, state_db: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let done: Option<String> = tx
        .query_row("SELECT value FROM meta WHERE key = ?1", [CARRIED], |r| {
            r.get(0)
        })
        .optional()?;
    if done.is_some() {
        return Ok(());
    }
    let (runs, holds) = old_rows(state_db)?;
    for (table, columns, rows) in [("run", RUN_COLUMNS, &runs), ("hold", HOLD_COLUMNS, &holds)] {
        let marks = vec!["?"; columns.split(',').count()].join(", ");
        let mut insert =
            tx.prepare(&format!("INSERT INTO {table} ({columns}) VALUES ({marks})"))?;
        for row in rows {
            insert.execute(rusqlite::params_from_iter(row))?;
        }
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        params![
            CARRIED,
            format!("{} runs and {} holds", runs.len(), holds.len())
        ],
    )?;
    tx.commit()?;
    Ok(())
}

type Rows = Vec<Vec<Value>>;

/// The runs and holds an older dataward kept in the state database, read on a
/// read-only connection: none when there is no state database yet, or it predates them.
fn old_rows(state_db: &Path) -> Result<(Rows, Rows)> {
    // An empty file is one the engine is creating now: nothing was kept in it.
    let exists = std::fs::metadata(state_db).is_ok_and(|m| m.len() > 0);
    if !exists {
        return Ok((Vec::new(), Vec::new()));
    }
    let state = super::open_read_only(state_db)?;
    let kept: bool = state.query_row(
        "SELECT count(*) = 2 FROM sqlite_master
         WHERE type = 'table' AND name IN ('dbt_core_run', 'dbt_core_hold')",
        [],
        |r| r.get(0),
    )?;
    if !kept {
        return Ok((Vec::new(), Vec::new()));
    }
    let read = |table: &str, columns: &str| -> Result<Rows> {
        let width = columns.split(',').count();
        let mut stmt = state.prepare(&format!("SELECT {columns} FROM {table}"))?;
        let rows = stmt.query_map([], |r| (0..width).map(|i| r.get::<_, Value>(i)).collect())?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    Ok((
        read("dbt_core_run", RUN_COLUMNS)?,
        read("dbt_core_hold", HOLD_COLUMNS)?,
    ))
}

const RUN: &str =
    "id, job, command, requested_at, status, owner, started_at, finished_at, log, detail";

fn run(r: &rusqlite::Row) -> Result<DbtCoreRun> {
    let id: i64 = r.get(0)?;
    let time = |column: usize, what: &str| -> Result<Option<Timestamp>> {
        r.get::<_, Option<String>>(column)?
            .map(|text| {
                Timestamp::parse(&text)
                    .map_err(|e| anyhow::anyhow!("the dbt Core runner's run {id} ({what}): {e}"))
            })
            .transpose()
    };
    Ok(DbtCoreRun {
        id,
        job: r.get(1)?,
        command: r.get(2)?,
        requested_at: time(3, "requested_at")?
            .with_context(|| format!("the dbt Core runner's run {id} has no requested_at"))?,
        status: r.get(4)?,
        owner: r.get(5)?,
        started_at: time(6, "started_at")?,
        finished_at: time(7, "finished_at")?,
        log: r.get(8)?,
        detail: r.get(9)?,
    })
}

/// Every row `query` finds, read as runs.
fn runs(mut rows: rusqlite::Rows) -> Result<Vec<DbtCoreRun>> {
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(run(row)?);
    }
    Ok(out)
}

impl DbtCoreDb {
    /// Runs `work` in one `BEGIN IMMEDIATE` transaction and commits it; on an error
    /// nothing of it is kept.
    pub fn write<T>(&self, work: impl FnOnce(&DbtCoreDb) -> Result<T>) -> Result<T> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let value = work(self)?;
        tx.commit()?;
        Ok(value)
    }

    /// When the hold on `job` was asked, if it stands.
    pub fn held_at(&self, job: &str) -> Result<Option<Timestamp>> {
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT held_at FROM hold WHERE job = ?1")?
            .query_row([job], |r| r.get(0))
            .optional()?;
        text.map(|text| {
            Timestamp::parse(&text)
                .map_err(|e| anyhow::anyhow!("the dbt Core runner's hold on {job} (held_at): {e}"))
        })
        .transpose()
    }

    /// Records a hold on `job`; one already standing is kept as it is.
    pub fn hold(&self, job: &str, command: &str, at: Timestamp) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO hold (job, command, held_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (job) DO NOTHING",
            )?
            .execute(params![job, command, at.to_string()])?;
        Ok(())
    }

    pub fn lift(&self, job: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM hold WHERE job = ?1")?
            .execute([job])?;
        Ok(())
    }

    /// Was one of dataward's runs running at `at`? (Stored times are [`Timestamp`]'s
    /// text, which sorts as time does.)
    pub fn ran_at(&self, at: Timestamp) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT count(*) > 0 FROM run WHERE started_at <= ?1
                   AND (finished_at IS NULL OR finished_at >= ?1)",
            )?
            .query_row([at.to_string()], |r| r.get(0))?)
    }

    pub fn run(&self, id: i64) -> Result<Option<DbtCoreRun>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {RUN} FROM run WHERE id = ?1"))?;
        let found = runs(stmt.query([id])?)?;
        Ok(found.into_iter().next())
    }

    pub fn run_by_key(&self, key: &str) -> Result<Option<DbtCoreRun>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {RUN} FROM run WHERE request_key = ?1"))?;
        let found = runs(stmt.query([key])?)?;
        Ok(found.into_iter().next())
    }

    /// `job`'s latest runs, newest first.
    pub fn runs_of(&self, job: &str, limit: usize) -> Result<Vec<DbtCoreRun>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN} FROM run WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let found = runs(stmt.query(params![job, limit as i64])?)?;
        Ok(found)
    }

    /// The project's runs recorded as running.
    pub fn running(&self, project: &str) -> Result<Vec<DbtCoreRun>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN} FROM run WHERE project = ?1 AND status = 'running'"
        ))?;
        let found = runs(stmt.query([project])?)?;
        Ok(found)
    }

    /// Queues a run unless one has `key` already; returns the run's id either way.
    pub fn queue(&self, new: &NewDbtCoreRun) -> Result<i64> {
        self.conn
            .prepare_cached(
                "INSERT INTO run
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
                new.at.to_string(),
                new.owner
            ])?;
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM run WHERE request_key = ?1")?
            .query_row([new.key], |r| r.get(0))?)
    }

    /// A queued run is carried out by `owner` now.
    pub fn adopt(&self, id: i64, owner: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE run SET owner = ?2 WHERE id = ?1 AND status = 'queued'")?
            .execute(params![id, owner])?;
        Ok(())
    }

    /// `owner`'s oldest queued run of the project: its id and command.
    pub fn next_queued(&self, project: &str, owner: &str) -> Result<Option<(i64, String)>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, command FROM run
                 WHERE project = ?1 AND status = 'queued' AND owner = ?2 ORDER BY id LIMIT 1",
            )?
            .query_row(params![project, owner], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    pub fn started(&self, id: i64, at: Timestamp, log: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE run SET status = 'running', started_at = ?2, log = ?3 WHERE id = ?1",
            )?
            .execute(params![id, at.to_string(), log])?;
        Ok(())
    }

    /// A run left running by a process that is gone: failed, with its output so far.
    pub fn abandoned(&self, id: i64, detail: &str, output: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE run SET status = 'failed', detail = ?2,
                   output = ?3 WHERE id = ?1 AND status = 'running'",
            )?
            .execute(params![id, detail, output])?;
        Ok(())
    }

    pub fn finished(&self, id: i64, end: &DbtCoreEnd) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE run SET status = ?2, finished_at = ?3, exit_code = ?4,
                   output = ?5, detail = ?6 WHERE id = ?1",
            )?
            .execute(params![
                id,
                end.status,
                end.at.to_string(),
                end.exit_code,
                end.output,
                end.detail
            ])?;
        Ok(())
    }
}
