//! When each monitored table was last built by its job: a model a scheduled dbt run
//! builds holds a day's rows only once the run after that day has finished, so its day
//! is judged only after that (see [`super::judge`]).
//!
//! Read from dbt's `run_results.json` (`[lineage] run_results`): a model's successful
//! result and when it completed. The manifest (`[lineage] manifest`) says which model a
//! monitored table is. A run that did not touch a model (a `dbt test`, a run of other
//! models) leaves the last build seen by this process standing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{Days, NaiveDate};

use crate::clock::Timestamp;
use crate::config::Config;
use crate::lineage::run_results::{self, NodeStatus};
use crate::lineage::{Lineage, LineageError};

/// A table's latest build as its job recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// The model that is the table: `model.shop.orders`.
    pub model: String,
    /// When its last successful build finished.
    pub finished: Timestamp,
}

impl Build {
    /// The first day this build has not built, of those a check waits for: a job
    /// builds a day in its first run after the day ends, so the build's own day on.
    /// Only today and yesterday are waited for: an older day short is a run that never
    /// came, and is judged.
    pub fn unbuilt_from(&self, today: NaiveDate) -> NaiveDate {
        self.finished.naive().date().max(today - Days::new(1))
    }
}

/// Where builds are read from, and the last build of each model seen so far.
pub struct Builds {
    lineage: Lineage,
    run_results: PathBuf,
    seen: Mutex<BTreeMap<String, Timestamp>>,
}

impl Builds {
    /// From the config's `[lineage]`: None without a run_results file, or when the
    /// manifest cannot be read (the engine and `doctor` say why; every table is then
    /// judged as having no known job).
    pub fn from_config(config: &Config) -> Option<Builds> {
        let lineage_config = config.lineage.as_ref()?;
        let run_results = config.resolve(lineage_config.run_results.as_ref()?);
        let lineage = Lineage::load(&config.resolve(&lineage_config.manifest), None).ok()?;
        Some(Builds {
            lineage,
            run_results,
            seen: Mutex::new(BTreeMap::new()),
        })
    }

    /// Reads the run results as they are now, keeping every model's newest build.
    /// A missing or unreadable file leaves what was seen before.
    pub fn refresh(&self) {
        let Ok(results) = run_results::load(&self.run_results) else {
            return;
        };
        let mut seen = self.seen.lock().expect("builds lock");
        for result in results
            .results
            .iter()
            .filter(|r| r.status == NodeStatus::Success)
        {
            let Some(finished) = result.completed_at else {
                continue;
            };
            let newest = seen.entry(result.unique_id.clone()).or_insert(finished);
            *newest = (*newest).max(finished);
        }
    }

    /// The latest build of the model that is `table`; None when no model is it or its
    /// build was never seen.
    pub fn latest(&self, table: &str) -> Option<Build> {
        let model = match self.lineage.resolve(table) {
            Ok(node) => self.lineage.node(node).unique_id.clone(),
            // A table's bare name is often a model's and a semantic model's too: the
            // one a run builds is meant, when only one is.
            Err(LineageError::Ambiguous { candidates, .. }) => {
                let mut built = candidates.into_iter().filter(|id| {
                    ["model.", "snapshot.", "seed."]
                        .iter()
                        .any(|kind| id.starts_with(kind))
                });
                match (built.next(), built.next()) {
                    (Some(only), None) => only,
                    _ => return None,
                }
            }
            Err(_) => return None,
        };
        let finished = *self.seen.lock().expect("builds lock").get(&model)?;
        Some(Build { model, finished })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(status: &str, completed_at: &str) -> String {
        serde_json::json!({
            "metadata": {
                "dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
                "generated_at": completed_at,
            },
            "results": [{
                "status": status,
                "timing": [{"name": "execute", "started_at": completed_at,
                            "completed_at": completed_at}],
                "unique_id": "model.jaffle_shop.orders",
            }],
        })
        .to_string()
    }

    #[test]
    fn only_today_and_yesterday_wait_for_a_build() {
        let today: NaiveDate = "2024-05-15".parse().unwrap();
        let built = |at: &str| Build {
            model: "model.shop.orders".to_string(),
            finished: Timestamp::from_rfc3339(at).unwrap(),
        };
        // Last night's run came: yesterday is built, today is not.
        assert_eq!(built("2024-05-15T03:10:00Z").unbuilt_from(today), today);
        // It has not come yet: yesterday waits too.
        let yesterday = today - Days::new(1);
        assert_eq!(built("2024-05-14T03:10:00Z").unbuilt_from(today), yesterday);
        // Two nights without a run: the day before yesterday is judged, short or not.
        assert_eq!(built("2024-05-12T03:10:00Z").unbuilt_from(today), yesterday);
    }

    #[test]
    fn a_model_keeps_its_newest_successful_build() {
        let dir = tempfile::tempdir().unwrap();
        let run_results = dir.path().join("run_results.json");
        let config = dir.path().join("dataward.toml");
        std::fs::write(
            &config,
            "[lineage]\nmanifest = \"/work/shared/fixtures/dbt/jaffle_shop-manifest.json\"\n\
             run_results = \"run_results.json\"\n",
        )
        .unwrap();
        let builds = Builds::from_config(&Config::load(&config).unwrap()).unwrap();
        builds.refresh();
        assert_eq!(builds.latest("orders"), None, "no run results yet");
        let at = |text: &str| Timestamp::from_rfc3339(text).unwrap();
        std::fs::write(&run_results, results("success", "2024-05-14T03:10:00Z")).unwrap();
        builds.refresh();
        let built = Build {
            model: "model.jaffle_shop.orders".to_string(),
            finished: at("2024-05-14T03:10:00Z"),
        };
        assert_eq!(builds.latest("main.orders"), Some(built.clone()));
        // A failed run later does not build it.
        std::fs::write(&run_results, results("error", "2024-05-15T03:10:00Z")).unwrap();
        builds.refresh();
        assert_eq!(builds.latest("orders"), Some(built));
        assert_eq!(builds.latest("customers"), None, "never built");
    }
}
