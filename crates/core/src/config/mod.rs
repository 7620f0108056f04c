//! The TOML config: warehouses, monitors, lineage inputs, people and domains. Every
//! error names the file and what is wrong; unknown keys are refused so a typo never
//! silently turns a rule off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

mod access;
mod alert;
mod maintenance;
mod migration;
mod openlineage;
mod orchestrator;
mod redact;
mod state;
mod warehouse;
pub use access::{AccessConfig, DEFAULT_DAYS as DEFAULT_ACCESS_DAYS, PRIVILEGES};
pub use alert::{check_base_url, AlertConfig, SecretRef, ALERT_KINDS, SEVERITIES};
pub use maintenance::{Cron, MaintenanceConfig, OpenWindow, MAX_WINDOW};
pub use migration::{MigrationConfig, TableMove, WaveConfig};
pub use openlineage::OpenLineageConfig;
pub use orchestrator::{
    is_dbt_command, JobRef, OrchestratorConfig, DBT_CLOUD_URL, ORCHESTRATOR_KINDS,
};
pub use redact::*;
pub use state::StateConfig;
pub use warehouse::WarehouseConfig;

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
    /// Who may attach to `dataward serve`.
    #[serde(default)]
    pub serve: ServeConfig,
    /// The team's holidays ("2026-12-25"): volume judges a holiday as it would the
    /// table's quietest weekday, so Christmas is not an incident.
    #[serde(default)]
    pub holidays: Vec<String>,
    /// Where incidents are announced: PagerDuty, Opsgenie, JSM, Slack (see `alert.rs`).
    #[serde(default)]
    pub alert: Vec<AlertConfig>,
    /// Planned work: breaches inside a window page nobody (see `maintenance.rs`).
    #[serde(default)]
    pub maintenance: Vec<MaintenanceConfig>,
    /// Who may be granted what on which tables (see `access.rs`).
    #[serde(default)]
    pub access: Vec<AccessConfig>,
    /// Tables moved to new names in gated waves (see `migration.rs`).
    #[serde(default)]
    pub migration: Vec<MigrationConfig>,
    /// OpenLineage run events in: a listener and/or a tailed file (`openlineage.rs`).
    pub openlineage: Option<OpenLineageConfig>,
    /// Where the team's state lives: absent, the SQLite file in the data directory; with
    /// `url_env`, a shared PostgreSQL database (see `state.rs`).
    pub state: Option<StateConfig>,
    /// The person's console: theme and mouse. Read (and checked) by the console, not the
    /// engine (`console/prefs.rs`).
    #[serde(default)]
    pub console: Option<toml::Value>,
    /// The person's key overrides, read by the console likewise.
    #[serde(default)]
    pub keys: Option<toml::Value>,
    /// The file this was read from; relative paths inside resolve against its folder.
    #[serde(skip)]
    pub origin: PathBuf,
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
    /// The column holding each row's load or event time: freshness and volume read it,
    /// and null_rate measures the rows it says were loaded within `null_window`.
    pub timestamp_column: Option<String>,
    /// null_rate: the columns to watch (default: every column of the table).
    pub null_columns: Option<Vec<String>>,
    /// freshness: an SLA on top of the learned cadence ("6h"): past it the verdict is `warn`.
    pub warn_after: Option<String>,
    /// freshness: past this the verdict is `late` whatever the cadence says.
    pub error_after: Option<String>,
    /// volume and freshness: how far back the timestamp column is read (default "98d").
    pub lookback: Option<String>,
    /// null_rate with a `timestamp_column`: the rows measured are those loaded within
    /// this long before the check (default "1d"), so a bad load shows in its own rows
    /// instead of being diluted by the whole table.
    pub null_window: Option<String>,
    /// row_count: a baseline recorded by the team; without it the baseline is learned.
    pub expected_rows: Option<u64>,
    /// The config's `holidays`, read as dates: every monitor carries the calendar.
    #[serde(skip)]
    pub holidays: Vec<chrono::NaiveDate>,
    /// freshness and volume: each poll reads today and this many days before it per
    /// minute (default 1) and the older days of the lookback per day (see
    /// `monitor::minutes`).
    pub reread_days: Option<u32>,
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
    /// A run that failed: what an incident opened by a failed run (not a monitor's
    /// breach) is about. No monitor runs it; the config refuses it in `checks`.
    FailedRun,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::RowCount => "row_count",
            CheckKind::Schema => "schema",
            CheckKind::NullRate => "null_rate",
            CheckKind::Freshness => "freshness",
            CheckKind::Volume => "volume",
            CheckKind::FailedRun => "failed_run",
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
    /// dbt's run_results.json: a model a run could not build (error, skipped) below an
    /// open incident is one of its symptoms, with dbt's message; a monitored model's
    /// day is judged for volume and row count once a build finished after it.
    pub run_results: Option<PathBuf>,
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

/// Access to the engine's socket. It is 0600 (only the server's own account) unless a
/// group is named: then 0660 and owned by that group.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    pub group: Option<String>,
    /// Let an account `[people]` does not name attach read-only (else it is refused).
    #[serde(default)]
    pub observers: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// How long the checks must keep passing after a run before the incident closes.
    #[serde(default = "default_settle")]
    pub settle: String,
    /// How long the copies a backfill took are kept after its incident resolves.
    #[serde(default = "default_retention")]
    pub retention: String,
}

fn default_settle() -> String {
    "10m".to_string()
}

fn default_retention() -> String {
    "7d".to_string()
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            settle: default_settle(),
            retention: default_retention(),
        }
    }
}

/// Why a policy was not taken.
#[derive(Debug)]
pub enum PolicyError {
    /// A file it comes from could have been written by someone other than the engine's
    /// account: it is not read at all.
    Untrusted(anyhow::Error),
    /// The files are trusted but the config does not load.
    Invalid(anyhow::Error),
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyError::Untrusted(e) | PolicyError::Invalid(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for PolicyError {}

impl Config {
    /// Loads the policy the way the engine takes it, at start and at every reload
    /// alike: each file it comes from (the config, the notes it names) must be the
    /// engine's account's, writable by nobody else, in a folder nobody else can write
    /// (see [`crate::store::files::check_policy_file`]). The notes are checked, not
    /// read: the lineage reads them.
    pub fn load_policy(path: &Path) -> Result<Config, PolicyError> {
        crate::store::files::check_policy_file(path, "config").map_err(PolicyError::Untrusted)?;
        let config = Config::load(path).map_err(PolicyError::Invalid)?;
        for (what, file) in config.policy_files().into_iter().skip(1) {
            if file.exists() {
                crate::store::files::check_policy_file(&file, what)
                    .map_err(PolicyError::Untrusted)?;
            }
        }
        Ok(config)
    }

    /// Every file the policy comes from, the config first: who decides what is in the
    /// config, and the notes give tables their owner roles.
    pub fn policy_files(&self) -> Vec<(&'static str, PathBuf)> {
        let mut files = vec![("config", self.origin.clone())];
        if let Some(notes) = self.lineage.as_ref().and_then(|l| l.notes.as_ref()) {
            files.push(("notes file", self.resolve(notes)));
        }
        files
    }

    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        let config = Config::parse(&text, path)?;
        config
            .check_paths(&text)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        Ok(config)
    }

    /// Parses and validates config text. Every error names `origin`, and the line and
    /// key where it can; whatever looks like a secret in it is redacted, because TOML
    /// errors quote the offending line.
    pub fn parse(text: &str, origin: &Path) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            anyhow!(
                "{}: {}",
                origin.display(),
                redact_secrets(e.to_string().trim_end())
            )
        })?;
        config.origin = origin.to_path_buf();
        config
            .validate(text)
            .map_err(|e| anyhow!("{}: {}", origin.display(), redact_secrets(&e.to_string())))?;
        let holidays = config
            .holidays(text)
            .map_err(|e| anyhow!("{}: {e}", origin.display()))?;
        for monitor in &mut config.monitor {
            monitor.holidays = holidays.clone();
        }
        Ok(config)
    }

    /// The `holidays` as dates; a bad one names its line.
    fn holidays(&self, text: &str) -> Result<Vec<chrono::NaiveDate>> {
        self.holidays
            .iter()
            .map(|day| {
                chrono::NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d").map_err(|_| {
                    Bad::key(
                        "holidays",
                        format!("holidays: {day:?} is not a date like 2026-12-25"),
                    )
                    .at(text, &[])
                })
            })
            .collect()
    }

    fn validate(&self, text: &str) -> Result<()> {
        for (name, wh) in &self.warehouse {
            self.validate_warehouse(name, wh)
                .map_err(|bad| bad.at(text, &[Step::Key("warehouse"), Step::Key(name)]))?;
        }
        for (index, monitor) in self.monitor.iter().enumerate() {
            self.validate_monitor(index, monitor)
                .map_err(|bad| bad.at(text, &[Step::Key("monitor"), Step::Index(index)]))?;
        }
        for (index, domain) in self.domain.iter().enumerate() {
            validate_domain(domain)
                .map_err(|bad| bad.at(text, &[Step::Key("domain"), Step::Index(index)]))?;
        }
        duration_key("settle", "verify.settle", &self.verify.settle, MAX_DURATION)
            .map_err(|bad| bad.at(text, &[Step::Key("verify")]))?;
        duration_key(
            "retention",
            "verify.retention",
            &self.verify.retention,
            MAX_DURATION,
        )
        .map_err(|bad| bad.at(text, &[Step::Key("verify")]))?;
        alert::validate(self, text)?;
        orchestrator::validate(self, text)?;
        maintenance::validate(self, text)?;
        access::validate(self, text)?;
        migration::validate(self, text)?;
        openlineage::validate(self, text)?;
        state::validate(self, text)?;
        Ok(())
    }

    fn validate_monitor(&self, index: usize, monitor: &MonitorConfig) -> Result<(), Bad> {
        let at = match &monitor.name {
            Some(name) => format!("monitor[{index}] {name} ({})", monitor.table),
            None => format!("monitor[{index}] ({})", monitor.table),
        };
        if !self.warehouse.contains_key(&monitor.warehouse) {
            return Err(Bad::key(
                "warehouse",
                format!("{at}: unknown warehouse {:?}", monitor.warehouse),
            ));
        }
        if let Some(source) = &monitor.source {
            if !self.warehouse.contains_key(&source.warehouse) {
                return Err(Bad::key(
                    "source",
                    format!(
                        "{at}: source names unknown warehouse {:?}",
                        source.warehouse
                    ),
                ));
            }
        }
        duration_key(
            "every",
            &format!("{at}.every"),
            &monitor.every,
            MAX_DURATION,
        )?;
        for (key, value) in [
            ("warn_after", &monitor.warn_after),
            ("error_after", &monitor.error_after),
            ("lookback", &monitor.lookback),
            ("null_window", &monitor.null_window),
        ] {
            if let Some(text) = value {
                duration_key(key, &format!("{at}.{key}"), text, MAX_DURATION)?;
            }
        }
        if monitor
            .reread_days
            .is_some_and(|days| days > MAX_REREAD_DAYS)
        {
            return Err(Bad::key(
                "reread_days",
                format!("{at}.reread_days: at most {MAX_REREAD_DAYS} days (a longer re-read is the whole lookback: set lookback instead)"),
            ));
        }
        if monitor.checks.contains(&CheckKind::FailedRun) {
            return Err(Bad::key(
                "checks",
                format!(
                    "{at}.checks: failed_run is not a check a monitor runs (a failed run \
                     opens its incident by itself); use row_count, schema, null_rate, \
                     freshness or volume"
                ),
            ));
        }
        if let Some(check) = monitor.checks.iter().find(|c| c.needs_timestamp_column()) {
            if monitor.timestamp_column.is_none() {
                return Err(Bad::section(format!(
                    "{at}: the {} check needs `timestamp_column`",
                    check.as_str()
                )));
            }
        }
        Ok(())
    }

    /// Every file or folder the config names must exist: a typo in a path must never
    /// turn into an empty database or scheduler created in its place.
    fn check_paths(&self, text: &str) -> Result<()> {
        let mut named: Vec<(Vec<Step>, String, &Path)> = Vec::new();
        for (name, wh) in &self.warehouse {
            let section = || vec![Step::Key("warehouse"), Step::Key(name)];
            // DuckDB's in-memory database is no file.
            let memory = wh.kind == "duckdb"
                && wh.path.as_deref() == Some(Path::new(crate::warehouse::duckdb::MEMORY));
            if let Some(path) = wh.path.as_ref().filter(|_| !memory) {
                let mut at = section();
                at.push(Step::Key("path"));
                named.push((at, format!("warehouse.{name}.path"), path));
            }
            if let Some(path) = &wh.private_key_file {
                let mut at = section();
                at.push(Step::Key("private_key_file"));
                named.push((at, format!("warehouse.{name}.private_key_file"), path));
            }
            for (schema, path) in &wh.attach {
                let mut at = section();
                at.extend([Step::Key("attach"), Step::Key(schema)]);
                named.push((at, format!("warehouse.{name}.attach.{schema}"), path));
            }
        }
        if let Some(o) = &self.orchestrator {
            // `dbt` names a file only when it is a path; a bare name is looked up on
            // PATH when the orchestrator is built.
            let dbt = o.dbt.as_deref().filter(|d| d.components().count() > 1);
            for (key, path) in [
                ("path", o.path.as_deref()),
                ("project_dir", o.project_dir.as_deref()),
                ("profiles_dir", o.profiles_dir.as_deref()),
                ("dbt", dbt),
            ] {
                if let Some(path) = path {
                    let at = vec![Step::Key("orchestrator"), Step::Key(key)];
                    named.push((at, format!("orchestrator.{key}"), path));
                }
            }
        }
        if let Some(l) = &self.lineage {
            for (key, path) in [
                ("manifest", Some(&l.manifest)),
                ("catalog", l.catalog.as_ref()),
                ("notes", l.notes.as_ref()),
                ("project_dir", l.project_dir.as_ref()),
            ] {
                if let Some(path) = path {
                    let at = vec![Step::Key("lineage"), Step::Key(key)];
                    named.push((at, format!("lineage.{key}"), path));
                }
            }
        }
        for (at, key, path) in named {
            let resolved = self.resolve(path);
            if !resolved.exists() {
                return Err(at_line(
                    line_of(text, &at),
                    anyhow!("{key}: {} does not exist", resolved.display()),
                ));
            }
        }
        Ok(())
    }

    /// A path from the config, resolved against the config file's folder.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match self.origin.parent() {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// Every monitor's name, in config order.
    pub fn monitor_names(&self) -> Vec<String> {
        self.monitor.iter().map(Config::monitor_name).collect()
    }

    pub fn monitor_name(monitor: &MonitorConfig) -> String {
        monitor
            .name
            .clone()
            .unwrap_or_else(|| format!("{}.{}", monitor.warehouse, monitor.table))
    }
}

fn validate_domain(domain: &DomainConfig) -> Result<(), Bad> {
    let at = format!("domain {}", domain.name);
    if !matches!(domain.autonomy.as_str(), "L0" | "L1" | "L2" | "L3" | "L4") {
        return Err(Bad::key(
            "autonomy",
            format!(
                "{at}: autonomy {:?} is not one of L0, L1, L2, L3, L4",
                domain.autonomy
            ),
        ));
    }
    if domain.owners.is_empty() {
        return Err(Bad::key(
            "owners",
            format!("{at}: needs at least one owner role"),
        ));
    }
    duration_key(
        "approval_ttl",
        &format!("{at}: approval_ttl"),
        &domain.approval_ttl,
        MAX_DURATION,
    )?;
    for class in &domain.classes {
        if !CHANGE_CLASSES.contains(&class.as_str()) {
            return Err(Bad::key(
                "classes",
                format!(
                    "{at}: unknown change class {class:?} (known: {})",
                    CHANGE_CLASSES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The longest duration any key takes: ten years. Far beyond any sane schedule or
/// window, and far inside what dates and timers can add without overflowing, so no
/// value that validates can panic the engine later.
pub const MAX_DURATION: Duration = Duration::from_secs(3650 * 86_400);
/// reread_days: beyond a year, a re-read is a full read with extra steps.
pub const MAX_REREAD_DAYS: u32 = 366;
/// One check may run at most a day (PostgreSQL's statement_timeout cannot hold much
/// more than 24 days anyway).
pub const MAX_CHECK_TIMEOUT: Duration = Duration::from_secs(86_400);
/// Checks against one warehouse at once: each may hold a connection.
pub const MAX_CONCURRENT: usize = 256;

/// A validation error and the key it is about: the error names the key's line, or the
/// section's when the key is missing.
struct Bad {
    key: Option<&'static str>,
    message: String,
}

impl Bad {
    fn key(key: &'static str, message: String) -> Bad {
        Bad {
            key: Some(key),
            message,
        }
    }

    fn section(message: String) -> Bad {
        Bad { key: None, message }
    }

    fn at(self, text: &str, section: &[Step]) -> anyhow::Error {
        let mut path = section.to_vec();
        path.extend(self.key.map(Step::Key));
        at_line(line_of(text, &path), anyhow!("{}", self.message))
    }
}

fn duration_key(
    key: &'static str,
    label: &str,
    text: &str,
    max: Duration,
) -> Result<Duration, Bad> {
    let duration = parse_duration(text).map_err(|e| Bad::key(key, format!("{label}: {e}")))?;
    if duration > max {
        return Err(Bad::key(
            key,
            format!("{label}: {text:?} is longer than {}", describe_limit(max)),
        ));
    }
    Ok(duration)
}

fn describe_limit(max: Duration) -> String {
    if max == MAX_DURATION {
        "the limit of 3650d (10 years)".to_string()
    } else {
        format!("the limit of {}s", max.as_secs())
    }
}

/// One step into the TOML document: a table key or an array index.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The 1-based line where `path` is written, or as much of it as the text has (the
/// section, when the key itself is missing).
fn line_of(text: &str, path: &[Step]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let root = DeValue::Table(doc.into_inner());
    let mut current = &root;
    let mut start = None;
    for step in path {
        let next = match step {
            Step::Key(key) => current.get(*key),
            Step::Index(index) => current.get(*index),
        };
        let Some(next) = next else { break };
        start = Some(next.span().start);
        current = next.get_ref();
    }
    let start = start?;
    Some(text.get(..start)?.matches('\n').count() + 1)
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

/// "30s", "5m", "2h", "1d", at most ten years ([`MAX_DURATION`]).
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| anyhow!("{text:?} needs a unit (s, m, h, d)"))?;
    let (number, unit) = text.split_at(split);
    let unit_seconds: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("{text:?}: unknown unit {unit:?} (s, m, h, d)"),
    };
    if number.is_empty() {
        bail!("{text:?} is not a duration like 30s, 5m, 2h");
    }
    let too_long = || anyhow!("{text:?} is longer than {}", describe_limit(MAX_DURATION));
    // All digits here, so a failed parse can only mean too many of them.
    let number: u64 = number.parse().map_err(|_| too_long())?;
    let seconds = number.checked_mul(unit_seconds).ok_or_else(too_long)?;
    if seconds == 0 {
        bail!("{text:?} must be longer than zero");
    }
    let duration = Duration::from_secs(seconds);
    if duration > MAX_DURATION {
        return Err(too_long());
    }
    Ok(duration)
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
mod tests;
