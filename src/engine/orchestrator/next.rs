//! The orchestrator trait as the `orchestrators` branch is changing it (run ids as text,
//! a run's link, schedules read and put back exactly), copied here so Airflow can be
//! built against it before that branch lands. On merge this file goes: its types are
//! mod.rs's, and `from_config_next` becomes `from_config`'s airflow arm.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::engine::api::PipelineView;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The orchestrator's own run id.
    pub id: String,
    pub job: String,
    /// queued (in flight), success, failed or cancelled.
    pub status: String,
    /// Where people see the run at the orchestrator.
    pub link: Option<String>,
    pub requested_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub detail: String,
}

/// How a job's schedule stood before dataward paused it: enough to put it back exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub paused: bool,
    /// Orchestrator-specific, `Null` when nothing more.
    pub saved: serde_json::Value,
}

pub trait Orchestrator: Send {
    /// One per mapped job: state running|paused|scheduled, last run status and time.
    fn pipelines(&self) -> Result<Vec<PipelineView>>;
    /// The job's schedule as it stands now.
    fn schedule(&self, job: &str) -> Result<Schedule>;
    /// Idempotent.
    fn pause(&self, job: &str) -> Result<()>;
    /// Puts the schedule back exactly as before (already paused stays paused).
    fn restore(&self, job: &str, before: &Schedule) -> Result<()>;
    /// (run id, true when the key's run already existed).
    fn queue_run(&self, job: &str, at: &str, by: &str, key: &str) -> Result<(String, bool)>;
    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: &str,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)>;
    /// `None` when there is no such run.
    fn run(&self, job: &str, id: &str) -> Result<Option<RunRecord>>;
}

/// `from_config` for the orchestrators built on this trait (Airflow), until it is
/// mod.rs's.
pub fn from_config_next(
    config: &crate::config::Config,
    _data_dir: &std::path::Path,
) -> Result<Option<Box<dyn Orchestrator>>> {
    match &config.orchestrator {
        Some(o) if o.kind == "airflow" => Ok(Some(Box::new(super::airflow::Airflow::from_config(
            config, o,
        )?))),
        Some(o) => anyhow::bail!(
            "{}: [orchestrator] kind {:?} is built by from_config",
            config.origin.display(),
            o.kind
        ),
        None => Ok(None),
    }
}
