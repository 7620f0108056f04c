//! The TOML config: warehouses, monitors, lineage inputs, people and domains. Every
//! error names the file and what is wrong; unknown keys are refused so a typo never
//! silently turns a rule off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub warehouse: BTreeMap<String, WarehouseConfig>,
    #[serde(default)]
    pub monitor: Vec<MonitorConfig>,
    pub lineage: Option<LineageConfig>,
    /// Unix user name -> the person and their roles.
    #[serde(default)]
    pub people: BTreeMap<String, PersonConfig>,
    #[serde(default)]
    pub domain: Vec<DomainConfig>,
    /// Where runs are dispatched and jobs paused.
    pub orchestrator: Option<OrchestratorConfig>,
    #[serde(default)]
    pub verify: VerifyConfig,
    /// The file this was read from; relative paths inside resolve against its folder.
    #[serde(skip)]
    pub origin: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarehouseConfig {
    /// "sqlite" or "postgres".
    pub kind: String,
    pub path: Option<PathBuf>,
    /// PostgreSQL: the name of the environment variable holding the connection URL. The
    /// URL (and its password) never sits in a shared file.
    pub url_env: Option<String>,
    /// PostgreSQL: how many checks may run against this warehouse at once.
    pub max_concurrent: Option<usize>,
    /// PostgreSQL: how long one check may take before it is abandoned ("30s").
    pub check_timeout: Option<String>,
    /// Extra SQLite files attached under a schema name, e.g. TICKETING = "ticketing.db".
    #[serde(default)]
    pub attach: BTreeMap<String, PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorConfig {
    /// Defaults to "<warehouse>.<table>".
    pub name: Option<String>,
    pub warehouse: String,
    pub table: String,
    pub checks: Vec<CheckKind>,
    #[serde(default = "default_every")]
    pub every: String,
    /// The upstream table this one is loaded from, for diagnosis: its schema and row
    /// count tell a refill from a loss.
    pub source: Option<SourceRef>,
    /// The column holding each row's load or event time: freshness and volume read it.
    pub timestamp_column: Option<String>,
    /// null_rate: the columns to watch (default: every column of the table).
    pub null_columns: Option<Vec<String>>,
    /// freshness: an SLA on top of the learned cadence ("6h"): past it the verdict is `warn`.
    pub warn_after: Option<String>,
    /// freshness: past this the verdict is `late` whatever the cadence says.
    pub error_after: Option<String>,
    /// volume and freshness: how far back the timestamp column is read (default "70d").
    pub lookback: Option<String>,
    /// row_count: a baseline recorded by the team; without it the baseline is learned.
    pub expected_rows: Option<u64>,
}

fn default_every() -> String {
    "5m".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRef {
    pub warehouse: String,
    pub table: String,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    RowCount,
    Schema,
    NullRate,
    Freshness,
    Volume,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::RowCount => "row_count",
            CheckKind::Schema => "schema",
            CheckKind::NullRate => "null_rate",
            CheckKind::Freshness => "freshness",
            CheckKind::Volume => "volume",
        }
    }

    /// Freshness and volume read the table's own timestamp column.
    pub fn needs_timestamp_column(self) -> bool {
        matches!(self, CheckKind::Freshness | CheckKind::Volume)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineageConfig {
    pub manifest: PathBuf,
    /// dbt's catalog.json, for column types.
    pub catalog: Option<PathBuf>,
    pub notes: Option<PathBuf>,
    /// The dbt project folder, where SQL diffs are applied.
    pub project_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonConfig {
    pub name: String,
    #[serde(default)]
    pub roles: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainConfig {
    pub name: String,
    /// Globs over table names and dbt unique ids ('*' matches any run of characters).
    pub covers: Vec<String>,
    /// The roles that may approve.
    pub owners: Vec<String>,
    /// Who an unanswered request goes to next, in order, one step per expiry.
    #[serde(default)]
    pub escalation: Vec<String>,
    /// How long a request waits for an answer before it expires and escalates.
    #[serde(default = "default_ttl")]
    pub approval_ttl: String,
    #[serde(default = "default_autonomy")]
    pub autonomy: String,
    /// The change classes dataward may carry out itself at L3 (once approved) and L4
    /// (without approval): `pause_job`, `run_job`. Code diffs are never among them.
    #[serde(default)]
    pub classes: Vec<String>,
}

fn default_autonomy() -> String {
    "L2".to_string()
}

fn default_ttl() -> String {
    "30m".to_string()
}

/// Change classes dataward knows how to carry out; a typo must not silently allow nothing.
pub const CHANGE_CLASSES: &[&str] = &["pause_job", "run_job"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestratorConfig {
    /// "demo" for the embedded estate's scheduler.
    pub kind: String,
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// How long the checks must keep passing after a run before the incident closes.
    #[serde(default = "default_settle")]
    pub settle: String,
}

fn default_settle() -> String {
    "10m".to_string()
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            settle: default_settle(),
        }
    }
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        Config::parse(&text, path)
    }

    pub fn parse(text: &str, origin: &Path) -> Result<Config> {
        let mut config: Config = toml::from_str(text)
            .map_err(|e| anyhow!("{}: {}", origin.display(), e.to_string().trim_end()))?;
        config.origin = origin.to_path_buf();
        config
            .validate(text)
            .map_err(|e| anyhow!("{}: {e}", origin.display()))?;
        Ok(config)
    }

    fn validate(&self, text: &str) -> Result<()> {
        for (name, wh) in &self.warehouse {
            self.validate_warehouse(name, wh)
                .map_err(|e| at_line(section_line(text, &format!("[warehouse.{name}]"), 0), e))?;
        }
        for (index, monitor) in self.monitor.iter().enumerate() {
            self.validate_monitor(index, monitor)
                .map_err(|e| at_line(section_line(text, "[[monitor]]", index), e))?;
        }
        self.validate_rest()
    }

    fn validate_warehouse(&self, name: &str, wh: &WarehouseConfig) -> Result<()> {
        {
            match wh.kind.as_str() {
                "sqlite" => {
                    if wh.path.is_none() {
                        bail!("warehouse.{name}: a sqlite warehouse needs `path`");
                    }
                }
                "postgres" => {
                    if wh.path.is_some() || !wh.attach.is_empty() {
                        bail!("warehouse.{name}: `path` and `attach` are for sqlite; a postgres warehouse takes `url_env`");
                    }
                    let Some(var) = &wh.url_env else {
                        bail!("warehouse.{name}: a postgres warehouse needs `url_env`, the name of an environment variable holding its URL");
                    };
                    if !is_env_var_name(var) {
                        bail!("warehouse.{name}.url_env: {:?} is not an environment variable name; put the URL in the environment, never in this file", redact(var));
                    }
                }
                other => bail!(
                    "warehouse.{name}.kind: unknown kind {other:?} (expected \"sqlite\" or \"postgres\")"
                ),
            }
            if wh.max_concurrent == Some(0) {
                bail!("warehouse.{name}.max_concurrent must be at least 1");
            }
            if let Some(t) = &wh.check_timeout {
                parse_duration(t).map_err(|e| anyhow!("warehouse.{name}.check_timeout: {e}"))?;
            }
        }
        Ok(())
    }

    fn validate_monitor(&self, index: usize, monitor: &MonitorConfig) -> Result<()> {
        {
            let at = format!("monitor[{index}] ({})", monitor.table);
            if !self.warehouse.contains_key(&monitor.warehouse) {
                bail!("{at}: unknown warehouse {:?}", monitor.warehouse);
            }
            if let Some(source) = &monitor.source {
                if !self.warehouse.contains_key(&source.warehouse) {
                    bail!(
                        "{at}: source names unknown warehouse {:?}",
                        source.warehouse
                    );
                }
            }
            parse_duration(&monitor.every).map_err(|e| anyhow!("{at}.every: {e}"))?;
            for (key, value) in [
                ("warn_after", &monitor.warn_after),
                ("error_after", &monitor.error_after),
                ("lookback", &monitor.lookback),
            ] {
                if let Some(text) = value {
                    parse_duration(text).map_err(|e| anyhow!("{at}.{key}: {e}"))?;
                }
            }
            if let Some(check) = monitor.checks.iter().find(|c| c.needs_timestamp_column()) {
                if monitor.timestamp_column.is_none() {
                    bail!(
                        "{at}: the {} check needs `timestamp_column`",
                        check.as_str()
                    );
                }
            }
        }
        Ok(())
    }

    fn validate_rest(&self) -> Result<()> {
        for domain in &self.domain {
            if !matches!(domain.autonomy.as_str(), "L0" | "L1" | "L2" | "L3" | "L4") {
                bail!(
                    "domain {}: autonomy {:?} is not one of L0, L1, L2, L3, L4",
                    domain.name,
                    domain.autonomy
                );
            }
            if domain.owners.is_empty() {
                bail!("domain {}: needs at least one owner role", domain.name);
            }
            parse_duration(&domain.approval_ttl)
                .map_err(|e| anyhow!("domain {}: approval_ttl: {e}", domain.name))?;
            for class in &domain.classes {
                if !CHANGE_CLASSES.contains(&class.as_str()) {
                    bail!(
                        "domain {}: unknown change class {class:?} (known: {})",
                        domain.name,
                        CHANGE_CLASSES.join(", ")
                    );
                }
            }
        }
        parse_duration(&self.verify.settle).map_err(|e| anyhow!("verify.settle: {e}"))?;
        Ok(())
    }

    /// A path from the config, resolved against the config file's folder.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match self.origin.parent() {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }

    pub fn monitor_name(monitor: &MonitorConfig) -> String {
        monitor
            .name
            .clone()
            .unwrap_or_else(|| format!("{}.{}", monitor.warehouse, monitor.table))
    }
}

/// The 1-based line of the `nth` occurrence of a section header, if it is written plainly.
fn section_line(text: &str, header: &str, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with(header))
        .nth(nth)
        .map(|(i, _)| i + 1)
}

fn at_line(line: Option<usize>, error: anyhow::Error) -> anyhow::Error {
    match line {
        Some(line) => anyhow!("line {line}: {error}"),
        None => error,
    }
}

/// An environment variable name, not a value: a URL or password pasted here is refused.
fn is_env_var_name(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What the error shows of a refused value: never the secret itself.
fn redact(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://..."),
        None if text.len() > 12 => format!(
            "{}...",
            &text[..text.char_indices().nth(8).map_or(text.len(), |(i, _)| i)]
        ),
        None => text.to_string(),
    }
}

/// "30s", "5m", "2h", "1d".
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| anyhow!("{text:?} needs a unit (s, m, h, d)"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| anyhow!("{text:?} is not a duration like 30s, 5m, 2h"))?;
    let seconds = match unit {
        "s" => number,
        "m" => number * 60,
        "h" => number * 3600,
        "d" => number * 86_400,
        _ => bail!("{text:?}: unknown unit {unit:?} (s, m, h, d)"),
    };
    if seconds == 0 {
        bail!("{text:?} must be longer than zero");
    }
    Ok(Duration::from_secs(seconds))
}

/// The XDG data directory, unless the user named one.
/// An existing data directory that group or others can write is refused here, before
/// any command reads it; writers also refuse one owned by another user, and create a
/// missing one 0700 (`store::files`). Nothing is created here: a reading command must
/// not leave a directory behind.
pub fn data_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    let dir = match explicit {
        Some(dir) => dir.to_path_buf(),
        None => directories::ProjectDirs::from("", "", "dataward")
            .map(|dirs| dirs.data_dir().to_path_buf())
            .ok_or_else(|| anyhow!("no home directory to put data in; pass --data-dir DIR"))?,
    };
    if dir.exists() {
        crate::store::files::check_private(&dir, crate::store::files::Use::Read)?;
    }
    Ok(dir)
}

/// The XDG config file path.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "dataward")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("0m").is_err());
        assert!(parse_duration("5 weeks").is_err());
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let origin = Path::new("/etc/dataward.toml");
        let err = Config::parse(
            "[[monitor]]\nwarehouse = \"x\"\ntable = \"t\"\nchecks = [\"row_count\"]\n",
            origin,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/etc/dataward.toml"), "{err}");
        assert!(err.contains("unknown warehouse"), "{err}");

        let err = Config::parse(
            "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\ntypo = 1\n",
            origin,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("typo"), "{err}");
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn a_postgres_url_in_the_file_is_refused() {
        let origin = Path::new("/etc/dataward.toml");
        let err = Config::parse(
            "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"postgres://u:secret@h/db\"\n",
            origin,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not an environment variable name"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        let ok = Config::parse(
            "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n",
            origin,
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn the_example_config_is_valid() {
        let text = include_str!("../../config.example.toml");
        let config = Config::parse(text, Path::new("config.example.toml")).unwrap();
        assert!(config.warehouse.values().any(|w| w.kind == "postgres"));
    }

    #[test]
    fn volume_needs_a_timestamp_column() {
        let err = Config::parse(
            "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\n[[monitor]]\nwarehouse = \"a\"\ntable = \"t\"\nchecks = [\"volume\"]\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("needs `timestamp_column`"), "{err}");
        assert!(err.contains("c.toml: line 4"), "{err}");
    }
}
