//! Where runs are dispatched and job schedules paused: dbt Cloud, Airflow, or the demo's
//! scheduler. The engine only ever speaks this trait.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::api::PipelineView;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub job: String,
    /// queued, success or failed.
    pub status: String,
    pub requested_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub detail: String,
}

pub trait Orchestrator: Send {
    /// Every pipeline the scheduler knows, with its state and last result.
    fn pipelines(&self) -> Result<Vec<PipelineView>>;
    fn set_paused(&self, job: &str, paused: bool) -> Result<()>;
    /// Queues one run of `job`. Idempotent on `key`: asking again with the same key
    /// returns the run the first ask made (and `true`), as Airflow's dag_run_id does.
    fn queue_run(&self, job: &str, at: &str, by: &str, key: &str) -> Result<(i64, bool)>;
    /// Queues one run of `job` with an exact command instead of its own (a backfill's
    /// `dbt build --select ... --event-time-start ...`). Idempotent on `key`.
    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: &str,
        by: &str,
        key: &str,
    ) -> Result<(i64, bool)> {
        let _ = (command, at, by, key);
        anyhow::bail!("this scheduler cannot run a command for {job}")
    }
    fn run(&self, id: i64) -> Result<Option<RunRecord>>;
}

/// The orchestrator a config names, built the same way for the engine and for the
/// poll task that refreshes the pipelines bar in the background (each holds its own).
pub fn from_config(config: &crate::config::Config) -> Result<Option<Box<dyn Orchestrator>>> {
    use anyhow::Context;
    match &config.orchestrator {
        Some(o) if o.kind == "demo" => {
            let path = o
                .path
                .as_ref()
                .map(|p| config.resolve(p))
                .context("[orchestrator] kind = \"demo\" needs a path")?;
            Ok(Some(Box::new(crate::demo::control::ControlPlane::new(
                path,
            ))))
        }
        Some(o) => anyhow::bail!(
            "{}: [orchestrator] kind {:?} is not supported yet (\"demo\" is)",
            config.origin.display(),
            o.kind
        ),
        None => Ok(None),
    }
}
