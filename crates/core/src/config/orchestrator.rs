//! `[orchestrator]`: where approved runs are queued and job schedules paused.
//!
//! ```toml
//! [orchestrator]
//! kind = "dbt_cloud"                 # dbt_cloud | airflow | dbt_core | demo
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
//! Airflow (the stable REST API of Airflow 3, or of Airflow 2 with `api = "v1"`):
//!
//! ```toml
//! [orchestrator]
//! kind = "airflow"
//! base_url = "https://airflow.example.com"  # required; https, plain http only to loopback
//! username = "dataward"
//! password_env = "AIRFLOW_PASSWORD"  # the variable holding the password, never the password
//! api = "v2"                         # optional; "v1" for Airflow 2 (basic auth)
//! timeout = "30s"
//!
//! [orchestrator.jobs]                # the notes' job ids -> DAG ids (text)
//! "job.hourly_orders" = "hourly_orders"
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

/// Every `[orchestrator] kind` the config takes.
pub const ORCHESTRATOR_KINDS: &[&str] = &["airflow", "dbt_cloud", "dbt_core", "demo"];
/// dbt Cloud's multi-tenant US address; other regions and single tenants name theirs.
pub const DBT_CLOUD_URL: &str = "https://cloud.getdbt.com";
/// The longest DAG id Airflow stores.
const DAG_ID_MAX: usize = 250;

/// A job as the orchestrator knows it: dbt Cloud's numeric job id, Airflow's DAG id, or
/// dbt Core's command (it has no job ids: a job is what it runs).
/// Which one a kind takes is checked with the rest of the config.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a job id: a number (dbt Cloud's job id) or text (Airflow's DAG id, dbt Core's command)"
)]
pub enum JobRef {
    Number(i64),
    Name(String),
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobRef::Number(n) => write!(f, "{n}"),
            JobRef::Name(name) => write!(f, "{name:?}"),
        }
    }
}

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
    /// The API's address (dbt Cloud's default [`DBT_CLOUD_URL`]; Airflow has none).
    pub base_url: Option<String>,
    /// Airflow: the user dataward signs in as.
    pub username: Option<String>,
    /// Airflow: the environment variable holding that user's password (read at each
    /// sign-in).
    pub password_env: Option<String>,
    /// Airflow: "v2" (Airflow 3, the default) or "v1" (Airflow 2).
    pub api: Option<String>,
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
    /// The notes' job ids -> the orchestrator's own job ids (dbt Cloud: numbers;
    /// Airflow: DAG ids; dbt Core: the job's dbt command).
    #[serde(default)]
    pub jobs: BTreeMap<String, JobRef>,
    /// A token written inline: caught to be refused by name, never quoted back.
    #[serde(default)]
    token: Option<toml::Value>,
    /// A password written inline: the same.
    #[serde(default)]
    password: Option<toml::Value>,
}

impl OrchestratorConfig {
    /// The jobs as commands (dbt Core); a number there is a mistake validation names.
    pub fn job_commands(&self) -> BTreeMap<String, String> {
        self.jobs
            .iter()
            .filter_map(|(job, target)| match target {
                JobRef::Name(command) => Some((job.clone(), command.trim().to_string())),
                JobRef::Number(_) => None,
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

    /// dbt Cloud: the notes' job ids -> job numbers (validated: every one is a number
    /// above zero).
    pub fn dbt_cloud_jobs(&self) -> BTreeMap<String, u64> {
        self.jobs
            .iter()
            .filter_map(|(job, id)| match id {
                JobRef::Number(n) => u64::try_from(*n).ok().map(|n| (job.clone(), n)),
                JobRef::Name(_) => None,
            })
            .collect()
    }

    /// Airflow: the notes' job ids -> DAG ids (validated: every one is a DAG id).
    pub fn dag_ids(&self) -> BTreeMap<String, String> {
        self.jobs
            .iter()
            .filter_map(|(job, id)| match id {
                JobRef::Name(dag) => Some((job.clone(), dag.clone())),
                JobRef::Number(_) => None,
            })
            .collect()
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
        if let Err(why) = check_job(&o.kind, job, id) {
            return Err(
                Bad::key("jobs", format!("orchestrator.jobs: {job:?} = {id}: {why}")).at(
                    text,
                    &[Step::Key("orchestrator"), Step::Key("jobs"), Step::Key(job)],
                ),
            );
        }
    }
    Ok(())
}

/// Is `command` one line starting with `dbt `?
pub fn is_dbt_command(command: &str) -> bool {
    let command = command.trim();
    command.starts_with("dbt ") && !command.contains(['\n', '\r', '\0'])
}

/// One `[orchestrator.jobs]` entry: a job id of the notes, and what the kind takes.
fn check_job(kind: &str, job: &str, id: &JobRef) -> Result<(), String> {
    if job.trim().is_empty() {
        return Err("a job id of the notes, not an empty name".into());
    }
    match (kind, id) {
        ("airflow", JobRef::Name(dag)) => check_dag_id(dag),
        ("dbt_core", JobRef::Name(command)) => {
            if is_dbt_command(command) {
                Ok(())
            } else {
                Err("dbt Core takes its dbt command on one line, like \"dbt build --select tag:hourly\"".into())
            }
        }
        ("dbt_core", JobRef::Number(_)) => Err(
            "dbt Core has no job ids: give the job's dbt command, like \"dbt build --select tag:hourly\"".into(),
        ),
        ("airflow", JobRef::Number(_)) => {
            Err("Airflow names a DAG by its id, in quotes (\"hourly_orders\")".into())
        }
        (_, JobRef::Number(n)) if *n > 0 => Ok(()),
        (_, JobRef::Number(_)) => Err("a job id above zero".into()),
        (_, JobRef::Name(_)) => Err("a dbt Cloud job id, a number above zero".into()),
    }
}

/// A DAG id as Airflow takes one: letters, digits, `_`, `.` and `-`, up to 250.
fn check_dag_id(dag: &str) -> Result<(), String> {
    if dag.is_empty() {
        return Err("an empty DAG id".into());
    }
    if dag.chars().count() > DAG_ID_MAX {
        return Err(format!("a DAG id is at most {DAG_ID_MAX} characters"));
    }
    if !dag
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err("a DAG id holds only letters, digits, '_', '.' and '-'".into());
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
    if o.password.is_some() {
        return Err(Bad::key(
            "password",
            "orchestrator.password: a password is never written in the config (its value is \
             not shown); put it in an environment variable named by password_env"
                .to_string(),
        ));
    }
    // What belongs to which kind: a key another kind takes is a mistake worth naming.
    let given: [(&'static str, bool); 13] = [
        ("path", o.path.is_some()),
        ("account_id", o.account_id.is_some()),
        ("token_env", o.token_env.is_some()),
        ("base_url", o.base_url.is_some()),
        ("username", o.username.is_some()),
        ("password_env", o.password_env.is_some()),
        ("api", o.api.is_some()),
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
        _ => &[
            "base_url",
            "username",
            "password_env",
            "api",
            "timeout",
            "jobs",
        ],
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
        "airflow" => validate_airflow(o)?,
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

/// Airflow's keys: where, as whom, with which password variable, which API.
fn validate_airflow(o: &OrchestratorConfig) -> Result<(), Bad> {
    let Some(url) = &o.base_url else {
        return Err(Bad::section(
            "orchestrator: kind = \"airflow\" needs `base_url`, the address of Airflow's API \
             server (https://airflow.example.com)"
                .into(),
        ));
    };
    check_base_url(url)
        .map_err(|why| Bad::key("base_url", format!("orchestrator.base_url: {why}")))?;
    match o.username.as_deref().map(str::trim) {
        None => {
            return Err(Bad::section(
                "orchestrator: kind = \"airflow\" needs `username`, the Airflow user dataward \
                 signs in as"
                    .into(),
            ))
        }
        Some(name)
            if name.is_empty() || name.chars().any(char::is_control) || name.contains(':') =>
        {
            return Err(Bad::key(
                "username",
                "orchestrator.username: not a user name (empty, or holding ':' or control \
                 characters)"
                    .into(),
            ))
        }
        Some(_) => {}
    }
    match &o.password_env {
        None => {
            return Err(Bad::section(
                "orchestrator: kind = \"airflow\" needs `password_env`, the environment \
                 variable holding the user's password"
                    .into(),
            ))
        }
        Some(var) if !is_env_var_name(var) || looks_like_token(var) => {
            return Err(Bad::key(
                "password_env",
                format!(
                    "orchestrator.password_env: {} is not an environment variable name; put \
                     the password in the environment, never in this file",
                    redact(var)
                ),
            ))
        }
        Some(_) => {}
    }
    match o.api.as_deref() {
        None | Some("v1" | "v2") => Ok(()),
        Some(other) => Err(Bad::key(
            "api",
            format!(
                "orchestrator.api: {other:?} is not an Airflow REST API (\"v2\" for Airflow 3, \
                 \"v1\" for Airflow 2)"
            ),
        )),
    }
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
        assert_eq!(o.dbt_cloud_jobs()["job.hourly"], 1187);
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

    const AIRFLOW: &str = "[orchestrator]\nkind = \"airflow\"\nbase_url = \"https://airflow.example.com/\"\nusername = \"dataward\"\npassword_env = \"AIRFLOW_PASSWORD\"\n";

    #[test]
    fn orchestrator_airflow_reads_its_keys_and_maps_jobs_to_dag_ids() {
        let text = format!(
            "{AIRFLOW}api = \"v1\"\ntimeout = \"5s\"\n\n[orchestrator.jobs]\n\"job.hourly\" = \"hourly_orders\"\n\"job.daily\" = \"team.daily-load\"\n"
        );
        let config = Config::parse(&text, Path::new("team.toml")).unwrap();
        let o = config.orchestrator.unwrap();
        assert_eq!(o.base_url(), "https://airflow.example.com");
        assert_eq!(o.username.as_deref(), Some("dataward"));
        assert_eq!(o.password_env.as_deref(), Some("AIRFLOW_PASSWORD"));
        assert_eq!(o.api.as_deref(), Some("v1"));
        assert_eq!(o.dag_ids()["job.hourly"], "hourly_orders");
        assert_eq!(o.dag_ids()["job.daily"], "team.daily-load");
        assert!(o.dbt_cloud_jobs().is_empty());
    }

    #[test]
    fn orchestrator_airflow_errors_name_the_file_line_and_key() {
        for (text, line, says) in [
            (
                "[orchestrator]\nkind = \"airflow\"\nusername = \"u\"\npassword_env = \"P\"\n"
                    .to_string(),
                1,
                "needs `base_url`",
            ),
            (
                "[orchestrator]\nkind = \"airflow\"\nbase_url = \"https://a.example\"\npassword_env = \"P\"\n"
                    .to_string(),
                1,
                "needs `username`",
            ),
            (
                "[orchestrator]\nkind = \"airflow\"\nbase_url = \"https://a.example\"\nusername = \"u\"\n"
                    .to_string(),
                1,
                "needs `password_env`",
            ),
            (
                AIRFLOW.replace("https://airflow.example.com/", "http://airflow.example.com"),
                3,
                "plain http to airflow.example.com",
            ),
            (format!("{AIRFLOW}api = \"v3\"\n"), 6, "orchestrator.api"),
            (format!("{AIRFLOW}token_env = \"T\"\n"), 6, "does not take token_env"),
            (
                format!("{AIRFLOW}[orchestrator.jobs]\n\"job.a\" = 1187\n"),
                7,
                "DAG by its id, in quotes",
            ),
            (
                format!("{AIRFLOW}[orchestrator.jobs]\n\"job.a\" = \"has space\"\n"),
                7,
                "only letters, digits",
            ),
            (
                format!("{AIRFLOW}[orchestrator.jobs]\n\"job.a\" = \"\"\n"),
                7,
                "empty DAG id",
            ),
            (
                format!("{CLOUD}[orchestrator.jobs]\n\"job.a\" = \"hourly\"\n"),
                6,
                "a dbt Cloud job id, a number",
            ),
            (
                format!("{CLOUD}[orchestrator.jobs]\n\"job.a\" = 1.5\n"),
                6,
                "a job id: a number",
            ),
        ] {
            let err = error(&text);
            assert!(err.contains("team.toml"), "{text}: {err}");
            assert!(err.contains(&format!("line {line}")), "{text}: {err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn orchestrator_airflow_password_inline_is_refused_without_quoting_it() {
        let err = error(&format!("{AIRFLOW}password = \"Zx81kQ3v-hunter\"\n"));
        assert!(err.contains("line 6"), "{err}");
        assert!(err.contains("password_env"), "{err}");
        assert!(!err.contains("Zx81kQ3v"), "{err}");
        let err = error(&AIRFLOW.replace("AIRFLOW_PASSWORD", "Zx81kQ3vLmN0pRsT4uVw"));
        assert!(err.contains("not an environment variable name"), "{err}");
        assert!(!err.contains("Zx81kQ3v"), "{err}");
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
        assert!(o.dbt_cloud_jobs().is_empty());
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
