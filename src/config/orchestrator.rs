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
    /// The notes' job ids -> the orchestrator's own job ids.
    #[serde(default)]
    pub jobs: BTreeMap<String, u64>,
    /// A token written inline: caught to be refused by name, never quoted back.
    #[serde(default)]
    token: Option<toml::Value>,
}

impl OrchestratorConfig {
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
    for (job, id) in &o.jobs {
        let fine = !job.trim().is_empty() && *id > 0;
        if !fine {
            return Err(Bad::key(
                "jobs",
                format!("orchestrator.jobs: {job:?} = {id}: a job id of the notes and a job id above zero"),
            )
            .at(text, &[Step::Key("orchestrator"), Step::Key("jobs"), Step::Key(job)]));
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
    let given: [(&'static str, bool); 7] = [
        ("path", o.path.is_some()),
        ("account_id", o.account_id.is_some()),
        ("token_env", o.token_env.is_some()),
        ("base_url", o.base_url.is_some()),
        ("timeout", o.timeout.is_some()),
        ("project_dir", o.project_dir.is_some()),
        ("jobs", !o.jobs.is_empty()),
    ];
    let takes: &[&str] = match o.kind.as_str() {
        "demo" => &["path"],
        "dbt_cloud" => &["account_id", "token_env", "base_url", "timeout", "jobs"],
        "dbt_core" => &["project_dir", "timeout", "jobs"],
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
        assert_eq!(o.jobs["job.hourly"], 1187);
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
        ] {
            let err = error(&text);
            assert!(err.contains("team.toml"), "{text}: {err}");
            assert!(err.contains(&format!("line {line}:")), "{text}: {err}");
            assert!(err.contains(says), "{text}: {err}");
        }
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
