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
    /// "sqlite" for now.
    pub kind: String,
    pub path: Option<PathBuf>,
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
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::RowCount => "row_count",
            CheckKind::Schema => "schema",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineageConfig {
    pub manifest: PathBuf,
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
            .validate()
            .map_err(|e| anyhow!("{}: {e}", origin.display()))?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        for (name, wh) in &self.warehouse {
            if wh.kind != "sqlite" {
                bail!(
                    "warehouse.{name}.kind: unknown kind {:?} (expected \"sqlite\")",
                    wh.kind
                );
            }
            if wh.path.is_none() {
                bail!("warehouse.{name}: a sqlite warehouse needs `path`");
            }
        }
        for (index, monitor) in self.monitor.iter().enumerate() {
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
        }
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
pub fn data_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    directories::ProjectDirs::from("", "", "dataward")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or_else(|| anyhow!("no home directory to put data in; pass --data-dir DIR"))
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
}
