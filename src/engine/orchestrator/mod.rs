//! Where runs are dispatched and job schedules paused: dbt Cloud, Airflow, or the demo's
//! scheduler. The engine only ever speaks this trait.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::api::PipelineView;

pub mod airflow;
pub mod dbt_cloud;
mod http;
pub mod next;

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
/// `data_dir` is where an orchestrator keeps what it must remember (dbt Cloud: the
/// triggers a job had before dataward paused it).
pub fn from_config(
    config: &crate::config::Config,
    data_dir: &std::path::Path,
) -> Result<Option<Box<dyn Orchestrator>>> {
    use anyhow::Context;
    let origin = config.origin.display();
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
            let memory = data_dir.join("dbt_cloud.db");
            Ok(Some(Box::new(dbt_cloud::DbtCloud::new(settings, memory)?)))
        }
        Some(o) => anyhow::bail!(
            "{origin}: [orchestrator] kind {:?} is not supported yet (\"dbt_cloud\" and \"demo\" are)",
            o.kind
        ),
        None => Ok(None),
    }
}
