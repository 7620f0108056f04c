//! `[orchestrator]`: where approved runs are queued and job schedules paused.
//!
//! ```toml
//! [orchestrator]
//! kind = "dbt_cloud"                 # dbt_cloud | dbt_core | demo (airflow: issue 15)
//! account_id = 43
//! token_env = "DBT_CLOUD_TOKEN"      # the variable holding the API token, never the token
//! base_url = "https://emea.dbt.com"  # optional; https, plain http only to loopback
//! timeout = "30s"                    # optional; one API call, default 30s
//!
//! # The notes' job readers (`[[reader]] kind = "job"`) -> the dbt Cloud job each one is.
//! [orchestrator.jobs]
//! "job.hourly_orders" = 1187
//! ```
//!
//! dbt Core has no scheduler: a run is the job's approved dbt command, run by dataward
//! in the project, so each job maps to its command rather than to an id:
//!
//! ```toml
//! [orchestrator]
//! kind = "dbt_core"
//! project_dir = "../analytics"        # the dbt project, relative to this file
//! dbt = "/opt/dbt/bin/dbt"            # optional; default `dbt` on PATH
//! profiles_dir = "../analytics"       # optional; DBT_PROFILES_DIR for every run
//! target = "prod"                     # optional; --target for every run
//!
//! [orchestrator.jobs]
//! "job.hourly_orders" = "dbt build --select tag:hourly"
//! ```
//!
//! The mapping lives here, not in the notes: a job id is a dispatch target, meaningful
//! only inside `account_id` and with the token beside it, and this file is the policy
//! `dataward serve` owns and refuses when others can write it. The notes say who reads
//! what; they can be edited by anyone the team lets, and a wrong id there would send
//! an approved run to someone else's job.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::{alert::check_base_url, duration_key, is_env_var_name, redact, Bad, Config, Step};

/// Every `[orchestrator] kind` the config takes (airflow is refused when built, until
/// it is supported).
pub const ORCHESTRATOR_KINDS: &[&str] = &["airflow", "dbt_cloud", "dbt_core", "demo"];
/// dbt Cloud's multi-tenant US address; other regions and single tenants name theirs.
pub const DBT_CLOUD_URL: &str = "https://cloud.getdbt.com";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestratorConfig {
    /// "dbt_cloud", "dbt_core", "airflow", or "demo" for the embedded estate's scheduler.
    pub kind: String,
    /// demo: the scheduler's database.
    pub path: Option<PathBuf>,
    /// dbt Cloud: the numeric account id.
    pub account_id: Option<u64>,
    /// dbt Cloud: the environment variable holding the API token (read at each call).
    pub token_env: Option<String>,
    /// dbt Cloud: the API's address (default [`DBT_CLOUD_URL`]).
    pub base_url: Option<String>,
    /// How long one API call may take ("30s").
    pub timeout: Option<String>,
    /// dbt Core: the dbt project the approved commands run in.
    pub project_dir: Option<PathBuf>,
    /// dbt Core: the dbt executable (default `dbt` on PATH).
    pub dbt: Option<PathBuf>,
    /// dbt Core: DBT_PROFILES_DIR for every run.
    pub profiles_dir: Option<PathBuf>,
    /// dbt Core: `--target` for every run.
    pub target: Option<String>,
    /// The notes' job ids -> the orchestrator's own job ids (dbt Core: the job's command).
    #[serde(default)]
    pub jobs: BTreeMap<String, JobTarget>,
    /// A token written inline: caught to be refused by name, never quoted back.
    #[serde(default)]
    token: Option<toml::Value>,
}

/// What a job maps to: a number (a dbt Cloud job id) or text (dbt Core: its command).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum JobTarget {
    Id(u64),
    Text(String),
}

impl std::fmt::Display for JobTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobTarget::Id(id) => write!(f, "{id}"),
            JobTarget::Text(text) => write!(f, "{text:?}"),
        }
    }
}

impl OrchestratorConfig {
    /// The jobs as numeric ids (dbt Cloud); text there is a mistake validation names.
    pub fn job_ids(&self) -> BTreeMap<String, u64> {
        self.jobs
            .iter()
            .filter_map(|(job, target)| match target {
                JobTarget::Id(id) => Some((job.clone(), *id)),
                JobTarget::Text(_) => None,
            })
            .collect()
    }

    /// The jobs as commands (dbt Core); a number there is a mistake validation names.
    pub fn job_commands(&self) -> BTreeMap<String, String> {
        self.jobs
            .iter()
            .filter_map(|(job, target)| match target {
                JobTarget::Text(command) => Some((job.clone(), command.trim().to_string())),
                JobTarget::Id(_) => None,
            })
            .collect()
    }

    /// The API's address, without a trailing slash.
    pub fn base_url(&self) -> String {
        self.base_url
            .as_deref()
            .unwrap_or(DBT_CLOUD_URL)
            .trim_end_matches('/')
            .to_string()
    }

    /// How long one call may take (validated).
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout
            .as_deref()
            .and_then(|t| super::parse_duration(t).ok())
            .unwrap_or(std::time::Duration::from_secs(30))
    }
}

/// The longest one API call may be given.
const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Checks `[orchestrator]`; an error names its line.
pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    let Some(o) = &config.orchestrator else {
        return Ok(());
    };
    let at = [Step::Key("orchestrator")];
    validate_one(o).map_err(|bad| bad.at(text, &at))?;
    for (job, target) in &o.jobs {
        let wrong = match (o.kind.as_str(), target) {
            _ if job.trim().is_empty() => Some("a job id of the notes"),
            ("dbt_core", JobTarget::Text(command)) => {
                let command = command.trim();
                (!command.starts_with("dbt ") || command.contains(['\n', '\r', '\0']))
                    .then_some("a job id of the notes and its dbt command on one line, like \"dbt build --select tag:hourly\"")
            }
            ("dbt_core", JobTarget::Id(_)) => {
                Some("a job id of the notes and its dbt command, like \"dbt build --select tag:hourly\" (dbt Core has no job ids)")
            }
            ("dbt_cloud", JobTarget::Id(id)) => {
                (*id == 0).then_some("a job id of the notes and a job id above zero")
            }
            ("dbt_cloud", JobTarget::Text(_)) => {
                Some("a job id of the notes and a dbt Cloud job id, a number above zero")
            }
            (_, JobTarget::Id(0)) => Some("a job id of the notes and a job id above zero"),
            (_, JobTarget::Text(t)) if t.trim().is_empty() => {
                Some("a job id of the notes and the orchestrator's job id")
            }
            _ => None,
        };
        if let Some(wrong) = wrong {
            return Err(Bad::key(
                "jobs",
                format!("orchestrator.jobs: {job:?} = {target}: {wrong}"),
            )
            .at(
                text,
                &[Step::Key("orchestrator"), Step::Key("jobs"), Step::Key(job)],
            ));
        }
    }
    Ok(())
}

fn validate_one(o: &OrchestratorConfig) -> Result<(), Bad> {
    if !ORCHESTRATOR_KINDS.contains(&o.kind.as_str()) {
        return Err(Bad::key(
            "kind",
            format!(
                "orchestrator.kind: unknown kind {:?} (expected one of {})",
                o.kind,
                ORCHESTRATOR_KINDS.join(", ")
            ),
        ));
    }
    if o.token.is_some() {
        return Err(Bad::key(
            "token",
            "orchestrator.token: a token is never written in the config (its value is not \
             shown); put it in an environment variable named by token_env"
                .to_string(),
        ));
    }
    // What belongs to which kind: a key another kind takes is a mistake worth naming.
    let given: [(&'static str, bool); 10] = [
        ("path", o.path.is_some()),
        ("account_id", o.account_id.is_some()),
        ("token_env", o.token_env.is_some()),
        ("base_url", o.base_url.is_some()),
        ("timeout", o.timeout.is_some()),
        ("project_dir", o.project_dir.is_some()),
        ("dbt", o.dbt.is_some()),
        ("profiles_dir", o.profiles_dir.is_some()),
        ("target", o.target.is_some()),
        ("jobs", !o.jobs.is_empty()),
    ];
    let takes: &[&str] = match o.kind.as_str() {
        "demo" => &["path"],
        "dbt_cloud" => &["account_id", "token_env", "base_url", "timeout", "jobs"],
        "dbt_core" => &["project_dir", "dbt", "profiles_dir", "target", "jobs"],
        _ => &["token_env", "base_url", "timeout", "jobs"],
    };
    if let Some(&(key, _)) = given.iter().find(|(k, g)| *g && !takes.contains(k)) {
        return Err(Bad::key(
            key,
            format!(
                "orchestrator.{key}: a {} orchestrator does not take {key} (it takes {})",
                o.kind,
                takes.join(", ")
            ),
        ));
    }
    match o.kind.as_str() {
        "demo" if o.path.is_none() => {
            return Err(Bad::section(
                "orchestrator: kind = \"demo\" needs `path`, the scheduler's database".into(),
            ))
        }
        "dbt_cloud" => {
            match o.account_id {
                None => {
                    return Err(Bad::section(
                        "orchestrator: kind = \"dbt_cloud\" needs `account_id`, the numeric id \
                         in your dbt Cloud URLs"
                            .into(),
                    ))
                }
                Some(0) => {
                    return Err(Bad::key(
                        "account_id",
                        "orchestrator.account_id: 0 is not an account id".into(),
                    ))
                }
                Some(_) => {}
            }
            match &o.token_env {
                None => {
                    return Err(Bad::section(
                        "orchestrator: kind = \"dbt_cloud\" needs `token_env`, the environment \
                         variable holding the API token"
                            .into(),
                    ))
                }
                Some(var) if !is_env_var_name(var) || looks_like_token(var) => {
                    return Err(Bad::key(
                        "token_env",
                        format!(
                            "orchestrator.token_env: {} is not an environment variable name; \
                             put the token in the environment, never in this file",
                            redact(var)
                        ),
                    ))
                }
                Some(_) => {}
            }
            if let Some(url) = &o.base_url {
                check_base_url(url)
                    .map_err(|why| Bad::key("base_url", format!("orchestrator.base_url: {why}")))?;
            }
        }
        "dbt_core" if o.project_dir.is_none() => {
            return Err(Bad::section(
                "orchestrator: kind = \"dbt_core\" needs `project_dir`, the dbt project the \
                 approved commands run in"
                    .into(),
            ))
        }
        "dbt_core" => {
            if let Some(target) = &o.target {
                if target.is_empty() || target.contains(char::is_whitespace) {
                    return Err(Bad::key(
                        "target",
                        format!("orchestrator.target: {target:?} is not a dbt target name"),
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(t) = &o.timeout {
        duration_key("timeout", "orchestrator.timeout", t, MAX_TIMEOUT)?;
    }
    Ok(())
}

/// dbt Cloud's tokens (`dbtc_` service tokens, `dbtu_` personal ones) are valid
/// variable names: caught here, with any long word mixing cases and digits.
fn looks_like_token(var: &str) -> bool {
    var.starts_with("dbtc_")
        || var.starts_with("dbtu_")
        || (var.len() >= 20
            && var.chars().any(|c| c.is_ascii_digit())
            && var.chars().any(|c| c.is_ascii_uppercase())
            && var.chars().any(|c| c.is_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn error(text: &str) -> String {
        format!(
            "{:#}",
            Config::parse(text, Path::new("team.toml")).unwrap_err()
        )
    }

    const CORE: &str = "[orchestrator]\nkind = \"dbt_core\"\nproject_dir = \"analytics\"\n";

    const CLOUD: &str =
        "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = 43\ntoken_env = \"DBT_CLOUD_TOKEN\"\n";

    #[test]
    fn orchestrator_dbt_cloud_reads_its_keys_and_maps_jobs() {
        let text = format!(
            "{CLOUD}base_url = \"http://127.0.0.1:8080/\"\ntimeout = \"5s\"\n\n[orchestrator.jobs]\n\"job.hourly\" = 1187\n"
        );
        let config = Config::parse(&text, Path::new("team.toml")).unwrap();
        let o = config.orchestrator.unwrap();
        assert_eq!(o.account_id, Some(43));
        assert_eq!(o.base_url(), "http://127.0.0.1:8080");
        assert_eq!(o.timeout(), std::time::Duration::from_secs(5));
        assert_eq!(o.jobs["job.hourly"], JobTarget::Id(1187));
        assert_eq!(o.job_ids()["job.hourly"], 1187);
        let plain = Config::parse(CLOUD, Path::new("team.toml")).unwrap();
        assert_eq!(plain.orchestrator.unwrap().base_url(), DBT_CLOUD_URL);
    }

    #[test]
    fn orchestrator_errors_name_the_file_line_and_key() {
        for (text, line, says) in [
            (
                "[orchestrator]\nkind = \"dbt_cloud\"\ntoken_env = \"T\"\n".to_string(),
                1,
                "needs `account_id`",
            ),
            (
                "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = 4\n".to_string(),
                1,
                "needs `token_env`",
            ),
            (
                format!("{CLOUD}base_url = \"http://cloud.getdbt.com\"\n"),
                5,
                "plain http to cloud.getdbt.com",
            ),
            (
                format!("{CLOUD}timeout = \"1h\"\n"),
                5,
                "orchestrator.timeout",
            ),
            (
                "[orchestrator]\nkind = \"luigi\"\n".to_string(),
                2,
                "unknown kind \"luigi\"",
            ),
            (format!("{CLOUD}path = \"x.db\"\n"), 5, "does not take path"),
            (
                format!("{CLOUD}[orchestrator.jobs]\n\"job.a\" = 0\n"),
                6,
                "above zero",
            ),
            (
                "[orchestrator]\nkind = \"dbt_core\"\n".to_string(),
                1,
                "needs `project_dir`",
            ),
            (
                format!("{CLOUD}[orchestrator.jobs]\n\"job.a\" = \"dbt build\"\n"),
                6,
                "a dbt Cloud job id, a number",
            ),
            (
                format!("{CORE}[orchestrator.jobs]\n\"job.a\" = 12\n"),
                5,
                "dbt Core has no job ids",
            ),
            (
                format!("{CORE}[orchestrator.jobs]\n\"job.a\" = \"rm -rf target\"\n"),
                5,
                "its dbt command on one line",
            ),
            (
                format!("{CORE}[orchestrator.jobs]\n\"job.a\" = \"dbt run\\nrm -rf /\"\n"),
                5,
                "its dbt command on one line",
            ),
            (
                format!("{CORE}timeout = \"5s\"\n"),
                4,
                "does not take timeout",
            ),
            (
                format!("{CORE}target = \"a b\"\n"),
                4,
                "not a dbt target name",
            ),
            (format!("{CLOUD}dbt = \"dbt\"\n"), 5, "does not take dbt"),
        ] {
            let err = error(&text);
            assert!(err.contains("team.toml"), "{text}: {err}");
            assert!(err.contains(&format!("line {line}:")), "{text}: {err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn orchestrator_dbt_core_reads_its_keys_and_maps_jobs_to_commands() {
        let text = format!(
            "{CORE}dbt = \"venv/bin/dbt\"\nprofiles_dir = \"profiles\"\ntarget = \"prod\"\n\n\
             [orchestrator.jobs]\n\"job.hourly\" = \" dbt build --select tag:hourly \"\n"
        );
        let config = Config::parse(&text, Path::new("/etc/team.toml")).unwrap();
        let o = config.orchestrator.as_ref().unwrap();
        assert_eq!(o.target.as_deref(), Some("prod"));
        assert_eq!(
            config.resolve(o.dbt.as_ref().unwrap()),
            Path::new("/etc/venv/bin/dbt")
        );
        assert_eq!(
            o.job_commands()["job.hourly"],
            "dbt build --select tag:hourly"
        );
        assert!(o.job_ids().is_empty());
    }

    #[test]
    fn orchestrator_token_inline_is_refused_without_quoting_it() {
        let err = error(&format!("{CLOUD}token = \"dbtc_Zx81kQ3vLmN0pRsT4uVw\"\n"));
        assert!(err.contains("line 5"), "{err}");
        assert!(err.contains("token_env"), "{err}");
        assert!(!err.contains("Zx81kQ3v"), "{err}");
        let err = error(
            "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = 4\ntoken_env = \"dbtc_Zx81kQ3vLmN0pRsT4uVw\"\n",
        );
        assert!(err.contains("not an environment variable name"), "{err}");
        assert!(!err.contains("Zx81kQ3v"), "{err}");
    }
}
