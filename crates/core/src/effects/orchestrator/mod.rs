//! Where runs are dispatched and job schedules paused: dbt Cloud, dbt Core, Airflow, or
//! a kind the binary registers (the demo's scheduler). The engine only ever speaks this
//! trait.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::config::is_dbt_command;

pub mod airflow;
pub mod cron_runs;
pub mod dbt_cloud;
pub mod dbt_core;
mod http;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The orchestrator's own run id (a dbt Cloud run number, an Airflow dag_run_id).
    #[serde(deserialize_with = "run_id")]
    pub id: String,
    pub job: String,
    /// queued (in flight), success, failed or cancelled.
    pub status: String,
    /// Where people see the run at the orchestrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// When it was asked for, started and finished, read once from the orchestrator's
    /// own form of RFC 3339 ([`run_time`]); `None` when it has not said (yet).
    #[serde(default, deserialize_with = "kept_run_time")]
    pub requested_at: Option<Timestamp>,
    #[serde(default, deserialize_with = "kept_run_time")]
    pub started_at: Option<Timestamp>,
    #[serde(default, deserialize_with = "kept_run_time")]
    pub finished_at: Option<Timestamp>,
    pub detail: String,
}

/// How a job's schedule stood before dataward paused it: enough to put it back exactly
/// (a job that was already paused stays paused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub paused: bool,
    /// What else the orchestrator needs to put the schedule back (dbt Cloud: the job's
    /// triggers as they were); `null` when nothing.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub saved: serde_json::Value,
}

impl Schedule {
    pub fn running() -> Schedule {
        Schedule {
            paused: false,
            saved: serde_json::Value::Null,
        }
    }
}

/// One job as its orchestrator reports it: what the pipelines bar shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub state: PipelineState,
    /// The last run's outcome; pipelines report green while data is wrong.
    pub last_status: RunStatus,
    /// When it last ran, read from the orchestrator's own form of RFC 3339
    /// ([`run_time`]): compared with incidents' times as times, never as text.
    pub last_run_at: Option<Timestamp>,
    /// `HoldAsked` only: when the job ran after the hold was asked, by its own record:
    /// the schedule dataward cannot pause still runs.
    pub ran_after_hold: Option<Timestamp>,
    /// `HoldAsked` only: dataward cannot tell whether the job ran after the hold (its
    /// orchestrator's record does not say which job ran), and why: neither confirmed
    /// nor broken.
    pub hold_unconfirmed: Option<String>,
    /// Its last run failed: why, as the orchestrator tells it (Airflow: each failed
    /// task with the error its log ends on); `None` when it did not fail or says nothing.
    pub last_failure: Option<String>,
}

/// A run time as an orchestrator wrote it (`2026-11-24 14:58:40.000000+00:00`,
/// `2026-12-01T10:00:09.000000Z`), read as the instant it names; `None` when it gave
/// none (or an empty one). A time that is not RFC 3339 is an error naming `whose` and
/// the text.
pub fn run_time(text: Option<String>, whose: impl std::fmt::Display) -> Result<Option<Timestamp>> {
    text.filter(|text| !text.trim().is_empty())
        .map(|text| {
            Timestamp::from_rfc3339(&text).map_err(|e| {
                anyhow::anyhow!("{whose}: run time {:?} is not an RFC 3339 time", e.text)
            })
        })
        .transpose()
}

/// A run time as an incident kept it: since times had a type, as dataward writes them;
/// before, as the orchestrator wrote it (any RFC 3339), or "" for none.
fn kept_run_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    match Option::<String>::deserialize(d)?.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => Timestamp::from_rfc3339(text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A job's schedule as its orchestrator reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineState {
    /// A run is in flight (or, for a mover, it streams).
    Running,
    /// Its schedule is paused.
    Paused,
    /// Its schedule is on and nothing runs now.
    Scheduled,
    /// Held by dataward, but on a scheduler dataward cannot pause (a cron running dbt
    /// Core): people were asked to stop it, and its runs say whether they did.
    HoldAsked,
    /// A word dataward does not know.
    Unknown,
}

impl PipelineState {
    /// The word for it, as a console and `dataward doctor` show it.
    pub fn as_str(self) -> &'static str {
        match self {
            PipelineState::Running => "running",
            PipelineState::Paused => "paused",
            PipelineState::Scheduled => "scheduled",
            PipelineState::HoldAsked => "hold_asked",
            PipelineState::Unknown => "unknown",
        }
    }

    /// Reads the word [`PipelineState::as_str`] gives (a scheduler of ours stores it).
    pub fn parse(word: &str) -> PipelineState {
        match word {
            "running" => PipelineState::Running,
            "paused" => PipelineState::Paused,
            "scheduled" => PipelineState::Scheduled,
            "hold_asked" => PipelineState::HoldAsked,
            _ => PipelineState::Unknown,
        }
    }
}

/// A run's outcome as its orchestrator reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Queued or running.
    Queued,
    Success,
    Failed,
    Cancelled,
    /// The job has never run.
    NeverRun,
    /// A word dataward does not know.
    Unknown,
}

impl RunStatus {
    /// The word for it: a run record's status word, or `none` for a job that never ran.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Success => "success",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::NeverRun => "none",
            RunStatus::Unknown => "unknown",
        }
    }

    /// Reads the word [`RunStatus::as_str`] gives.
    pub fn parse(word: &str) -> RunStatus {
        match word {
            "queued" => RunStatus::Queued,
            "success" => RunStatus::Success,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "none" => RunStatus::NeverRun,
            _ => RunStatus::Unknown,
        }
    }
}

pub trait Orchestrator: Send + Sync {
    /// Every pipeline the scheduler knows, with its state and last result.
    fn pipelines(&self) -> Result<Vec<Pipeline>>;
    /// The job's schedule as it stands now.
    fn schedule(&self, job: &str) -> Result<Schedule>;
    /// Pauses the job's schedule (doing it twice is doing it once). What the people on
    /// the incident must do themselves, when the orchestrator cannot pause it alone (a
    /// cron), comes back as an instruction.
    fn pause(&self, job: &str) -> Result<Option<String>>;
    /// Puts the job's schedule back as `before` found it.
    fn restore(&self, job: &str, before: &Schedule) -> Result<()>;
    /// Queues one run of `job`. Idempotent on `key`: asking again with the same key
    /// returns the run the first ask made (and `true`), as Airflow's dag_run_id does.
    fn queue_run(&self, job: &str, at: Timestamp, by: &str, key: &str) -> Result<(String, bool)>;
    /// Queues one run of `job` with an exact command instead of its own (a backfill's
    /// `dbt build --select ... --event-time-start ...`). Idempotent on `key`.
    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        let _ = (command, at, by, key);
        anyhow::bail!("this scheduler cannot run a command for {job}")
    }
    /// The run `id` of `job` as it stands, or `None` when the orchestrator has no such run.
    fn run(&self, job: &str, id: &str) -> Result<Option<RunRecord>>;
    /// Asks the orchestrator whether it answers and takes the credentials, touching no
    /// job: what `dataward doctor` checks even when no job is mapped. dbt Cloud reads
    /// the account, Airflow signs in and lists one DAG; a local one (dbt Core, the
    /// demo's) has nothing to reach.
    fn reach(&self) -> Result<()> {
        Ok(())
    }
    /// Does a run queued on a paused job start? Airflow starts no run of a paused DAG:
    /// the engine resumes a job its own hold paused before it queues the hold's run.
    fn starts_runs_while_paused(&self) -> bool {
        true
    }
}

/// A command an orchestrator is asked to run: one line starting with `dbt ` (a
/// backfill's `dbt build --select ... --event-time-start ...`), trimmed. Every
/// orchestrator and the config take only this; `who` says who refuses anything else.
pub fn dbt_command<'a>(command: &'a str, who: &str) -> Result<&'a str> {
    let command = command.trim();
    anyhow::ensure!(
        is_dbt_command(command),
        "{who} runs only dbt commands, on one line; refused {command:?}"
    );
    Ok(command)
}

/// What the orchestrator said in one reading: the pipelines bar and the runs dataward
/// follows. Read in the background (the poll task) or at the start of an engine's turn
/// (inline), and applied the same way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// `None` when it did not list them.
    pub pipelines: Option<Vec<Pipeline>>,
    /// The followed runs it reported (one it does not know is left out).
    pub runs: Vec<RunRecord>,
    /// Why a call failed: the orchestrator is down, a health state and never a data
    /// incident.
    pub error: Option<String>,
}

/// Reads the pipelines and each of `follow` (job, run id).
pub fn read(orchestrator: &dyn Orchestrator, follow: &[(String, String)]) -> Reading {
    crate::blocking::outside_world("the orchestrator");
    let mut reading = Reading::default();
    match orchestrator.pipelines() {
        Ok(pipelines) => reading.pipelines = Some(pipelines),
        Err(e) => reading.error = Some(format!("{e:#}")),
    }
    for (job, id) in follow {
        if reading.error.is_some() {
            break; // down: one error is enough, and every call would wait its timeout
        }
        match orchestrator.run(job, id) {
            Ok(record) => reading.runs.extend(record),
            Err(e) => reading.error = Some(format!("{e:#}")),
        }
    }
    reading
}

/// A run id as stored: text, or the number an earlier dataward stored.
pub fn run_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(i64),
    }
    Ok(match Id::deserialize(d)? {
        Id::Text(t) => t,
        Id::Number(n) => n.to_string(),
    })
}

/// The orchestrator a config names, built the same way for the engine and for the
/// poll task that refreshes the pipelines bar in the background (each holds its own).
/// `data_dir` is where an orchestrator keeps what it must remember (dbt Core: its runs
/// and holds).
pub fn from_config(
    config: &crate::config::Config,
    data_dir: &std::path::Path,
) -> Result<Option<Box<dyn Orchestrator>>> {
    use anyhow::Context;
    let origin = config.origin.display();
    match &config.orchestrator {
        Some(o) if o.kind == "dbt_cloud" => {
            let settings = dbt_cloud::Settings {
                base_url: o.base_url(),
                account_id: o
                    .account_id
                    .with_context(|| format!("{origin}: [orchestrator] needs account_id"))?,
                token_env: o
                    .token_env
                    .clone()
                    .with_context(|| format!("{origin}: [orchestrator] needs token_env"))?,
                jobs: o.dbt_cloud_jobs(),
                timeout: o.timeout(),
            };
            Ok(Some(Box::new(dbt_cloud::DbtCloud::new(settings)?)))
        }
        Some(o) if o.kind == "airflow" => {
            Ok(Some(Box::new(airflow::Airflow::from_config(config, o)?)))
        }
        Some(o) if o.kind == "dbt_core" => {
            let settings = dbt_core::Settings::from_config(config, data_dir)?;
            Ok(Some(Box::new(dbt_core::DbtCore::new(settings)?)))
        }
        Some(o) => match registered(&o.kind) {
            Some(make) => make(config, o).map(Some),
            None => anyhow::bail!(
                "{origin}: [orchestrator] kind {:?} is not one dataward can use",
                o.kind
            ),
        },
        None => Ok(None),
    }
}

/// Builds an orchestrator of a kind this module does not know from its `[orchestrator]`
/// table (`config` resolves its paths).
pub type Maker =
    fn(&crate::config::Config, &crate::config::OrchestratorConfig) -> Result<Box<dyn Orchestrator>>;

/// The kinds registered by the binary at start: the engine names none of them.
static REGISTERED: std::sync::RwLock<Vec<(&'static str, Maker)>> =
    std::sync::RwLock::new(Vec::new());

/// Lets `from_config` build `[orchestrator] kind = <kind>` with `make` in this process
/// (the demo registers its scheduler so). A kind registered again is replaced.
pub fn register(kind: &'static str, make: Maker) {
    let mut registered = REGISTERED
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    registered.retain(|(known, _)| *known != kind);
    registered.push((kind, make));
}

fn registered(kind: &str) -> Option<Maker> {
    let registered = REGISTERED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    registered
        .iter()
        .find(|(known, _)| *known == kind)
        .map(|(_, make)| *make)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An orchestrator's run time is read in its own form; one that is no time is an
    /// error naming whose it is and the text, never a run taken as older or newer.
    #[test]
    fn a_run_time_is_read_in_the_orchestrators_form_or_refused_naming_it() {
        let read = run_time(Some("2026-11-24 14:58:40.000000+00:00".into()), "job x").unwrap();
        assert_eq!(
            read,
            Some(Timestamp::parse("2026-11-24T14:58:40Z").unwrap())
        );
        assert_eq!(run_time(None, "job x").unwrap(), None);
        let error = run_time(Some("last Tuesday".into()), "GET /dags/x/dagRuns").unwrap_err();
        assert_eq!(
            error.to_string(),
            "GET /dags/x/dagRuns: run time \"last Tuesday\" is not an RFC 3339 time"
        );
    }

    #[test]
    fn orchestrators_are_asked_to_run_one_dbt_command_only() {
        assert_eq!(
            dbt_command(" dbt build --select fct_x+ ", "dbt Cloud").unwrap(),
            "dbt build --select fct_x+"
        );
        for refused in [
            "rm -rf /",
            "dbt build\nrm -rf /",
            "dbt run\rrm x",
            "dbtx run",
            "dbt",
        ] {
            let err = dbt_command(refused, "dbt Cloud").unwrap_err().to_string();
            assert!(err.starts_with("dbt Cloud runs only dbt commands"), "{err}");
        }
    }
}
