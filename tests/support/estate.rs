//! A small estate of its own on a real PostgreSQL, for end-to-end tests that break it
//! the ways a new user broke a jaffle_shop-like project.
//!
//! In database `dw`: raw tables `raw.payments` and `raw.orders`, loaded hourly for eight
//! weeks (quieter at night and at weekends; every figure deterministic), and four dbt
//! models built into schema `analytics`: three tables and `fct_payments`, a microbatch
//! incremental model (dbt 1.9) in daily batches with a lookback of one day. On disk,
//! under the estate's folder:
//!
//!     project/               a dbt-like project: dbt_project.yml, models/**.sql,
//!                              models/**.yml (sources, model properties)
//!       target/                manifest.json (v12) and run_results.json (v6)
//!     notes.toml             context notes: a dashboard, the dbt job, owners, a writer
//!     dataward.toml          the config watching all of it
//!
//! `load_hour` is the live loader and `dbt_run` an honest stand-in for `dbt run`: it
//! reads the model files as they are now, renders `ref()`/`source()`/`config()`, builds
//! each model in dependency order (a microbatch model batch by batch, as dbt does),
//! records PostgreSQL's own error for a model that fails and skips its children, and
//! writes both artifacts in dbt's format. `dbt_backfill` stands in for `dbt build
//! --select MODEL+ --event-time-start .. --event-time-end ..`. The fault injectors are
//! plain SQL on the estate.
//!
//! One estate per server: it creates the database `dw`.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use chrono::{Datelike, Months, NaiveDate, NaiveDateTime, TimeDelta, Timelike};
use postgres::error::ErrorPosition;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::pg::PgServer;

/// The warehouse database the estate lives in.
pub const DATABASE: &str = "dw";
/// The dbt project's name: unique_ids are `model.shop.<name>`, `source.shop.raw.<table>`.
pub const PROJECT: &str = "shop";
/// The schema dbt builds the models into.
pub const TARGET_SCHEMA: &str = "analytics";
/// The dbt release whose artifacts the estate writes (microbatch models came with 1.9).
pub const DBT_VERSION: &str = "1.9.1";
/// How much history `build` loads.
pub const HISTORY: TimeDelta = TimeDelta::weeks(8);

/// dbt sources: (source name = schema, table, loaded_at_field).
const SOURCES: &[(&str, &str, &str)] = &[
    ("raw", "payments", "loaded_at"),
    ("raw", "orders", "loaded_at"),
];

/// The project's models as first written: (path in the project, SQL).
const MODELS: &[(&str, &str)] = &[
    (
        "models/staging/stg_payments.sql",
        "select
    id as payment_id,
    order_id,
    payment_method,
    amount / 100 as amount,
    loaded_at
from {{ source('raw', 'payments') }}
",
    ),
    (
        "models/staging/stg_orders.sql",
        "select
    id as order_id,
    customer_id,
    status,
    loaded_at
from {{ source('raw', 'orders') }}
",
    ),
    (
        "models/marts/orders.sql",
        "with payments as (

    select
        order_id,
        sum(amount) as amount
    from {{ ref('stg_payments') }}
    group by order_id

)

select
    stg_orders.order_id,
    stg_orders.customer_id,
    stg_orders.status,
    payments.amount,
    stg_orders.loaded_at
from {{ ref('stg_orders') }} as stg_orders
left join payments on payments.order_id = stg_orders.order_id
",
    ),
];

/// The microbatch model: payments in daily batches by `loaded_at`, from `begin` (the first
/// day of history) on; each run rebuilds the day it runs in and `lookback` days before.
pub const MICROBATCH_MODEL: &str = "fct_payments";
const MICROBATCH_PATH: &str = "models/marts/fct_payments.sql";

fn microbatch_model_sql(begin: NaiveDate) -> String {
    format!(
        "{{{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    event_time='loaded_at',
    batch_size='day',
    lookback=1,
    begin='{begin}'
) }}}}

select
    payment_id,
    order_id,
    amount,
    loaded_at
from {{{{ ref('stg_payments') }}}}
"
    )
}

/// Model configs the project sets in a properties file, as (model, key, value): dbt
/// filters a microbatch model's input per batch only for parents that name their
/// `event_time`.
const MODEL_PROPERTIES: &[(&str, &str, &str)] = &[("stg_payments", "event_time", "loaded_at")];
const PROPERTIES_PATH: &str = "models/staging/models.yml";

/// `MODEL_PROPERTIES` as the properties file dbt reads them from.
fn properties_yml() -> String {
    let mut by_model: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (model, key, value) in MODEL_PROPERTIES {
        by_model.entry(model).or_default().push((key, value));
    }
    let mut text = String::from("version: 2\n\nmodels:\n");
    for (model, settings) in by_model {
        text.push_str(&format!("  - name: {model}\n    config:\n"));
        for (key, value) in settings {
            text.push_str(&format!("      {key}: {value}\n"));
        }
    }
    text
}

const DBT_PROJECT_YML: &str = "name: shop
version: '1.0.0'
config-version: 2
profile: shop

model-paths: [\"models\"]
target-path: target

models:
  shop:
    +materialized: table
";

const SOURCES_YML: &str = "version: 2

sources:
  - name: raw
    schema: raw
    loaded_at_field: loaded_at
    freshness:
      warn_after: {count: 2, period: hour}
      error_after: {count: 6, period: hour}
    tables:
      - name: payments
      - name: orders
";

const NOTES: &str = r#"# Written by the test estate: what the team knows that dbt does not.

[[reader]]
id = "dashboard.orders_overview"
kind = "dashboard"
name = "Orders overview"
reads = ["model.shop.orders"]
owner = "analytics-owner"

[[reader]]
id = "job.dbt_every_ten_minutes"
kind = "job"
name = "dbt every ten minutes"
reads = ["model.shop.stg_payments", "model.shop.stg_orders", "model.shop.orders", "model.shop.fct_payments"]
owner = "analytics-owner"
schedule = "*/10 * * * *"

[[owner]]
role = "analytics-owner"
covers = ["model.shop.*", "analytics.*"]

[[owner]]
role = "platform-owner"
covers = ["source.shop.*", "raw.*"]

[[writer]]
id = "loader.payments"
name = "payments loader"
writes = ["raw.payments", "raw.orders"]
owner = "platform-owner"
setting = "on_type_change"
value = "recreate"

[[writer.option]]
value = "recreate"
effect = "recreate"

[[writer.option]]
value = "pause"
effect = "pause_table"

[[writer.option]]
value = "alter"
effect = "apply_in_place"
"#;

/// The dataward config watching the estate; `{url_env}` names the variable holding the
/// server's URL.
fn config_text(url_env: &str) -> String {
    format!(
        r#"# Written by the test estate: the config that watches it.

[warehouse.dw]
kind = "postgres"
url_env = "{url_env}"
max_concurrent = 4
check_timeout = "10s"

[[monitor]]
name = "raw_payments"
warehouse = "dw"
table = "raw.payments"
checks = ["row_count", "volume", "freshness", "null_rate", "schema"]
every = "5m"
timestamp_column = "loaded_at"
null_columns = ["amount", "payment_method"]

[[monitor]]
name = "raw_orders"
warehouse = "dw"
table = "raw.orders"
checks = ["row_count", "volume", "freshness", "null_rate", "schema"]
every = "5m"
timestamp_column = "loaded_at"
null_columns = ["customer_id", "status"]

[[monitor]]
name = "stg_payments"
warehouse = "dw"
table = "analytics.stg_payments"
checks = ["row_count", "volume", "freshness", "null_rate", "schema"]
every = "5m"
timestamp_column = "loaded_at"
null_columns = ["amount", "payment_method"]

[[monitor]]
name = "stg_orders"
warehouse = "dw"
table = "analytics.stg_orders"
checks = ["row_count", "freshness", "schema"]
every = "5m"
timestamp_column = "loaded_at"

[[monitor]]
name = "orders"
warehouse = "dw"
table = "analytics.orders"
checks = ["row_count", "volume", "freshness", "null_rate", "schema"]
every = "5m"
timestamp_column = "loaded_at"
null_columns = ["amount"]

[[monitor]]
name = "fct_payments"
warehouse = "dw"
table = "analytics.fct_payments"
checks = ["row_count", "volume", "freshness", "schema"]
every = "5m"
timestamp_column = "loaded_at"

[lineage]
manifest = "project/target/manifest.json"
notes = "notes.toml"
project_dir = "project"
run_results = "project/target/run_results.json"

[verify]
settle = "10m"

[people.estate-analyst]
name = "Estate Analyst"
roles = ["analytics-owner"]

[people.estate-platform]
name = "Estate Platform"
roles = ["platform-owner"]

[people.estate-lead]
name = "Estate Lead"
roles = ["analytics-lead"]

[[domain]]
name = "analytics"
covers = ["analytics.*", "model.shop.*", "job.dbt_every_ten_minutes", "dashboard.orders_overview"]
owners = ["analytics-owner"]
escalation = ["analytics-lead"]
approval_ttl = "30m"
autonomy = "L2"

[[domain]]
name = "ingestion"
covers = ["raw.*", "source.shop.*", "loader.payments"]
owners = ["platform-owner"]
escalation = ["analytics-lead"]
approval_ttl = "30m"
autonomy = "L2"
"#
    )
}

/// What one `dbt_run` did, model by model, in the order they ran.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub results: Vec<ModelRun>,
    /// The run_results.json it wrote.
    pub run_results: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelRun {
    pub unique_id: String,
    pub name: String,
    pub status: RunStatus,
    /// `SELECT n` on success, dbt's "Database Error in model ..." text on error, none
    /// when skipped. For a microbatch model, what dbt writes for it: `SUCCESS`, `ERROR`
    /// or `PARTIAL SUCCESS (n/m)` (each failed batch's error is in `batches`).
    pub message: Option<String>,
    /// Rows in the rebuilt table, on success; for a microbatch model, the rows its
    /// batches inserted.
    pub rows: Option<u64>,
    /// A microbatch model's batches, as dbt reports them; none for any other model, and
    /// for one that was skipped or did not compile.
    pub batches: Option<BatchResults>,
}

/// The batches one run of a microbatch model ran, each as its event-time window
/// `[start, end)` in UTC, oldest first (dbt's `batch_results`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchResults {
    pub successful: Vec<(NaiveDateTime, NaiveDateTime)>,
    pub failed: Vec<(NaiveDateTime, NaiveDateTime)>,
    /// dbt's "Database Error in model ..." for each failed batch that ran, as its log
    /// prints it (run_results.json says only `ERROR`).
    pub errors: Vec<String>,
}

impl BatchResults {
    /// The days the successful batches start on.
    pub fn successful_days(&self) -> Vec<NaiveDate> {
        self.successful
            .iter()
            .map(|(start, _)| start.date())
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Success,
    Error,
    Skipped,
    /// A microbatch model some of whose batches failed.
    PartialSuccess,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Skipped => "skipped",
            RunStatus::PartialSuccess => "partial success",
        }
    }
}

impl RunOutcome {
    /// The result for a model by name; panics when the run has none.
    pub fn model(&self, name: &str) -> &ModelRun {
        self.results
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no result for {name} in {:#?}", self.results))
    }

    pub fn all_succeeded(&self) -> bool {
        self.results.iter().all(|r| r.status == RunStatus::Success)
    }
}

/// Rows one `load_hour` appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loaded {
    pub orders: u64,
    pub payments: u64,
}

/// The estate. Every method panics on a failure of the estate itself (the server gone, a
/// file not writable): a broken fixture must fail the test loudly.
pub struct Estate {
    /// The folder holding the project, the notes and the config.
    pub dir: PathBuf,
    /// `dir/project`, the dbt-like project (dataward's `lineage.project_dir`).
    pub project: PathBuf,
    pub manifest: PathBuf,
    pub run_results: PathBuf,
    pub notes: PathBuf,
    /// `dir/dataward.toml`.
    pub config: PathBuf,
    /// The password-less URL of database `dw`.
    pub url: String,
    /// The environment variable the config names for the URL; `build` sets it.
    pub url_env: String,
    /// The `now` the estate was built at: history ends in this hour.
    pub built_at: NaiveDateTime,
    loader: Mutex<Loader>,
    runs: Mutex<u64>,
}

/// The loader's state and the faults that change what it does.
struct Loader {
    /// The last hour loaded; `load_hour` for it, or an earlier one, does nothing.
    loaded_through: NaiveDateTime,
    /// Hours from this one on are skipped until `resume`.
    stalled_from: Option<NaiveDateTime>,
    /// Tables the loader stopped writing while it keeps loading the others.
    stopped_tables: BTreeSet<String>,
    /// table -> share of each new hour's rows that lands (a short batch, on schedule).
    short_loads: BTreeMap<String, f64>,
    /// (table, column) -> share of each new hour's rows loaded with that column null.
    nulling: BTreeMap<(String, String), f64>,
    refill: Option<Refill>,
}

/// A table dropped and being refilled from its old rows, oldest first.
struct Refill {
    table: String,
    /// The old rows, kept where no monitor looks.
    backup: String,
    /// The select list copying a backup row into the new table (the changed column cast).
    select: String,
    columns: String,
    total: u64,
    copied: u64,
}

/// The top of the hour `at` falls in.
pub fn hour_of(at: NaiveDateTime) -> NaiveDateTime {
    at.date()
        .and_hms_opt(at.hour(), 0, 0)
        .expect("a valid hour")
}

fn sql_timestamp(at: NaiveDateTime) -> String {
    format!("timestamp '{}'", at.format("%Y-%m-%d %H:%M:%S"))
}

fn dbt_time(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// `raw.payments` -> `"raw"."payments"`.
fn quote_relation(table: &str) -> String {
    table
        .split('.')
        .map(quote_ident)
        .collect::<Vec<_>>()
        .join(".")
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A deterministic pick of `share` of the rows, independent for each `salt`.
fn share_of_rows(share: f64, salt: u32) -> String {
    let per_mille = (share.clamp(0.0, 1.0) * 1000.0).round() as i64;
    format!("abs(hashint8extended(id, {salt}) % 1000) < {per_mille}")
}

/// The orders placed in each hour of `[from, to]`, one row (`loaded_at`, `id`) each:
/// on weekdays about 16 to 20 an hour in the day and 8 to 12 at night, at weekends 6 to
/// 10 and 3 to 7. Ids are `hour since the epoch * 100 + n`, so a reload collides.
fn orders_in(from: NaiveDateTime, to: NaiveDateTime) -> String {
    format!(
        "SELECT h AS loaded_at, (extract(epoch FROM h)::bigint / 3600) * 100 + g AS id
         FROM generate_series({from}, {to}, interval '1 hour') AS h
         CROSS JOIN LATERAL generate_series(1,
             (CASE WHEN extract(isodow FROM h) >= 6 THEN 3 ELSE 8 END
              * CASE WHEN extract(hour FROM h) BETWEEN 8 AND 20 THEN 2 ELSE 1 END
              + abs(hashint8extended(extract(epoch FROM h)::bigint, 7) % 5))::int) AS g",
        from = sql_timestamp(from),
        to = sql_timestamp(to),
    )
}

/// Loads the hours `[from, to]` into both raw tables: one row per order, and one
/// payment per order (two for about a fifth of them), 5 to 50 in cents.
fn load_sql(from: NaiveDateTime, to: NaiveDateTime) -> (String, String) {
    let orders = orders_in(from, to);
    let orders_sql = format!(
        "INSERT INTO raw.orders (id, customer_id, status, loaded_at)
         SELECT o.id,
                1 + abs(hashint8extended(o.id, 1) % 400),
                (ARRAY['completed', 'completed', 'completed', 'shipped', 'placed', 'returned'])
                    [(1 + abs(hashint8extended(o.id, 2) % 6))::int],
                o.loaded_at
         FROM ({orders}) AS o"
    );
    let payments_sql = format!(
        "INSERT INTO raw.payments (id, order_id, payment_method, amount, loaded_at)
         SELECT o.id * 2 + k,
                o.id,
                (ARRAY['credit_card', 'credit_card', 'bank_transfer', 'coupon', 'gift_card'])
                    [(1 + abs(hashint8extended(o.id * 2 + k, 3) % 5))::int],
                (500 + abs(hashint8extended(o.id * 2 + k, 4) % 4500))::integer,
                o.loaded_at
         FROM ({orders}) AS o
         CROSS JOIN LATERAL generate_series(0,
             CASE WHEN abs(hashint8extended(o.id, 5) % 5) = 0 THEN 1 ELSE 0 END) AS k"
    );
    (orders_sql, payments_sql)
}

/// A model found in the project.
struct Model {
    name: String,
    /// Relative to the project, e.g. `models/staging/stg_payments.sql`.
    path: String,
    raw: String,
    refs: Vec<String>,
    sources: Vec<(String, String)>,
    /// What its `config()` call and the properties file set, as written (dbt's
    /// `unrendered_config` less the project's defaults).
    config: BTreeMap<String, Value>,
    /// Whether the properties file describes it (dbt's `patch_path`).
    patched: bool,
}

impl Model {
    fn unique_id(&self) -> String {
        format!("model.{PROJECT}.{}", self.name)
    }

    fn parents(&self) -> Vec<String> {
        let mut parents: Vec<String> = self
            .sources
            .iter()
            .map(|(s, t)| format!("source.{PROJECT}.{s}.{t}"))
            .chain(self.refs.iter().map(|r| format!("model.{PROJECT}.{r}")))
            .collect();
        parents.sort();
        parents.dedup();
        parents
    }

    fn setting(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }

    /// The project makes every model a table unless the model says otherwise.
    fn materialized(&self) -> &str {
        self.setting("materialized").unwrap_or("table")
    }

    /// The column dbt filters this model on when a microbatch model reads it.
    fn event_time(&self) -> Option<&str> {
        self.setting("event_time")
    }

    /// The model's config as the manifest holds it: dbt 1.9's `NodeConfig` with its
    /// defaults, overridden by what the model sets (`begin` as the datetime dbt parses
    /// it to).
    fn manifest_config(&self) -> Value {
        let mut config = json!({
            "enabled": true, "alias": null, "schema": null, "database": null,
            "tags": [], "meta": {}, "group": null, "materialized": "table",
            "incremental_strategy": null, "batch_size": null, "lookback": 1, "begin": null,
            "persist_docs": {}, "post-hook": [], "pre-hook": [], "quoting": {},
            "column_types": {}, "full_refresh": null, "unique_key": null,
            "on_schema_change": "ignore", "on_configuration_change": "apply",
            "grants": {}, "packages": [],
            "docs": {"show": true, "node_color": null},
            "contract": {"enforced": false, "alias_types": true},
            "event_time": null, "concurrent_batches": null,
            "access": "protected"
        });
        for (key, value) in &self.config {
            let value = match (key.as_str(), value.as_str().and_then(parse_begin)) {
                ("begin", Some(begin)) => json!(begin.format("%Y-%m-%dT%H:%M:%S").to_string()),
                _ => value.clone(),
            };
            config[key] = value;
        }
        config
    }

    fn unrendered_config(&self) -> Value {
        let mut config = json!({"materialized": "table"});
        for (key, value) in &self.config {
            config[key] = value.clone();
        }
        config
    }

    /// The microbatch settings of a model whose strategy is microbatch, or dbt's parsing
    /// error for settings it refuses.
    fn microbatch(&self) -> Result<Option<Microbatch>, String> {
        if self.materialized() != "incremental"
            || self.setting("incremental_strategy") != Some("microbatch")
        {
            return Ok(None);
        }
        let refuse = |what: &str| {
            Err(format!(
                "Parsing Error\n  Microbatch model '{}' {what}",
                self.name
            ))
        };
        let Some(event_time) = self.event_time() else {
            return refuse("must provide an 'event_time' (string) config that indicates the name of the event time column.");
        };
        let batch_size =
            match self.setting("batch_size") {
                Some("hour") => BatchSize::Hour,
                Some("day") => BatchSize::Day,
                Some("month") => BatchSize::Month,
                Some("year") => BatchSize::Year,
                _ => return refuse(
                    "must provide a 'batch_size' config that is one of [hour, day, month, year].",
                ),
            };
        let lookback = match self.config.get("lookback") {
            None => 1,
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => n,
                None => {
                    return refuse("must provide the config 'lookback' as a non-negative integer.")
                }
            },
        };
        let Some(begin) = self.setting("begin").and_then(parse_begin) else {
            return refuse("must provide a 'begin' (datetime) config that indicates the earliest timestamp the microbatch model should be built from.");
        };
        Ok(Some(Microbatch {
            event_time: event_time.to_string(),
            batch_size,
            lookback,
            begin,
        }))
    }
}

/// `begin` as Python's `datetime.fromisoformat` reads it: a date, or a date and time.
fn parse_begin(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .or_else(|| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok())
        .or_else(|| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").ok())
}

/// A microbatch model's settings.
#[derive(Debug, Clone)]
struct Microbatch {
    event_time: String,
    batch_size: BatchSize,
    lookback: u32,
    begin: NaiveDateTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchSize {
    Hour,
    Day,
    Month,
    Year,
}

impl BatchSize {
    /// The start of the batch `at` falls in.
    fn truncate(self, at: NaiveDateTime) -> NaiveDateTime {
        let date = at.date();
        let day = match self {
            BatchSize::Hour => return hour_of(at),
            BatchSize::Day => date,
            BatchSize::Month => date.with_day(1).unwrap(),
            BatchSize::Year => NaiveDate::from_ymd_opt(date.year(), 1, 1).unwrap(),
        };
        day.and_hms_opt(0, 0, 0).unwrap()
    }

    /// The start of the batch `n` batches after (or before) the one `at` falls in.
    fn offset(self, at: NaiveDateTime, n: i32) -> NaiveDateTime {
        let start = self.truncate(at);
        let months = |m: i32| {
            if m >= 0 {
                start.checked_add_months(Months::new(m as u32))
            } else {
                start.checked_sub_months(Months::new(m.unsigned_abs()))
            }
            .expect("a representable batch")
        };
        match self {
            BatchSize::Hour => start + TimeDelta::hours(n.into()),
            BatchSize::Day => start + TimeDelta::days(n.into()),
            BatchSize::Month => months(n),
            BatchSize::Year => months(12 * n),
        }
    }

    /// `at` itself on a batch boundary, else the start of the next batch.
    fn ceiling(self, at: NaiveDateTime) -> NaiveDateTime {
        let start = self.truncate(at);
        if start == at {
            at
        } else {
            self.offset(at, 1)
        }
    }
}

/// The batches dbt 1.9's microbatch builder runs, each `[start, end)`: from `begin` when
/// the model's table does not exist yet, else from the batch `lookback` batches before
/// the one `now` falls in (one more when `now` is on a boundary), through the batch
/// holding `now`; `--event-time-start`/`--event-time-end` (`window`) replace both ends.
fn batches(
    microbatch: &Microbatch,
    now: NaiveDateTime,
    incremental: bool,
    window: Option<(NaiveDateTime, NaiveDateTime)>,
) -> Vec<(NaiveDateTime, NaiveDateTime)> {
    let size = microbatch.batch_size;
    let end = size.ceiling(window.map_or(now, |(_, end)| end));
    let start = match window {
        Some((start, _)) => size.truncate(start),
        None if !incremental => microbatch.begin,
        None => {
            let on_boundary = size.truncate(now) == now;
            let lookback = microbatch.lookback + u32::from(on_boundary);
            size.offset(now, -(lookback as i32))
        }
    };
    let mut batches = vec![(start, size.offset(start, 1))];
    while let Some(&(_, last_end)) = batches.last().filter(|(_, e)| *e < end) {
        batches.push((last_end, size.offset(last_end, 1)));
    }
    batches
}

/// A batch boundary as dbt renders it into SQL: a UTC timestamp with its offset.
fn batch_time(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%d %H:%M:%S+00:00").to_string()
}

/// A batch boundary as dbt writes it in `batch_results`.
fn batch_json(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
}

fn model_relation(name: &str) -> String {
    format!("\"{DATABASE}\".\"{TARGET_SCHEMA}\".\"{name}\"")
}

fn source_relation(source: &str, table: &str) -> String {
    format!("\"{DATABASE}\".\"{source}\".\"{table}\"")
}

/// A `{{ ... }}` call in a model.
enum Call {
    Ref(String),
    Source(String, String),
    /// `config(key=value, ...)`: rendered to nothing, its settings kept.
    Config(Vec<(String, Value)>),
    Other(String),
}

/// The `{{ ... }}` calls in `raw` with their byte spans.
fn jinja_calls(raw: &str) -> Vec<(std::ops::Range<usize>, Call)> {
    let mut calls = Vec::new();
    let mut at = 0;
    while let Some(open) = raw[at..].find("{{") {
        let start = at + open;
        let Some(close) = raw[start..].find("}}") else {
            calls.push((start..raw.len(), Call::Other(raw[start..].to_string())));
            break;
        };
        let end = start + close + 2;
        let body = raw[start + 2..end - 2].trim();
        let call = match body.split_once('(') {
            Some((function, args)) if args.ends_with(')') => {
                let args = &args[..args.len() - 1];
                let plain: Vec<String> = args
                    .split(',')
                    .map(|a| a.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
                    .collect();
                match (function.trim(), plain.as_slice()) {
                    ("ref", [name]) => Call::Ref(name.clone()),
                    ("source", [source, table]) => Call::Source(source.clone(), table.clone()),
                    ("config", _) => match config_args(args) {
                        Some(settings) => Call::Config(settings),
                        None => Call::Other(body.to_string()),
                    },
                    _ => Call::Other(body.to_string()),
                }
            }
            _ => Call::Other(body.to_string()),
        };
        calls.push((start..end, call));
        at = end;
    }
    calls
}

/// `materialized='incremental', lookback=1` as (key, value) pairs: quoted strings,
/// integers and booleans; anything else is not a config the estate reads.
fn config_args(args: &str) -> Option<Vec<(String, Value)>> {
    let mut settings = Vec::new();
    for arg in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let (key, value) = arg.split_once('=')?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let value = value.trim();
        let quoted = value.len() >= 2
            && (value.starts_with('\'') && value.ends_with('\'')
                || value.starts_with('"') && value.ends_with('"'));
        let value = if quoted {
            Value::String(value[1..value.len() - 1].to_string())
        } else if let Ok(n) = value.parse::<i64>() {
            json!(n)
        } else {
            match value {
                "true" | "True" => Value::Bool(true),
                "false" | "False" => Value::Bool(false),
                _ => return None,
            }
        };
        settings.push((key.to_string(), value));
    }
    Some(settings)
}

/// The `.sql` files under `dir`, recursively, as paths relative to `root`.
fn sql_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sql_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "sql") {
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A UUID-shaped id, deterministic in its seed.
fn invocation_id(seed: &str) -> String {
    let hex = sha256_hex(seed);
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// What one dbt invocation was asked to do.
struct Invocation {
    /// `run` or `build`, as dbt writes `args.which`.
    which: &'static str,
    /// The command line, as dbt writes `args.invocation_command`.
    command: String,
    /// `--select`: empty for every model.
    select: Vec<String>,
    /// `--event-time-start` and `--event-time-end`.
    event_time: Option<(NaiveDateTime, NaiveDateTime)>,
}

/// What building one model came to, for its `ModelRun` and its run_results entry.
struct Built {
    status: RunStatus,
    message: String,
    rows: Option<u64>,
    compiled_code: Option<String>,
    timing: Vec<Value>,
    adapter_response: Value,
    failures: Value,
    batches: Option<BatchResults>,
}

impl Built {
    /// A model that did not build: dbt's message, nothing compiled or run.
    fn failed(message: String) -> Built {
        Built {
            status: RunStatus::Error,
            message,
            rows: None,
            compiled_code: None,
            timing: Vec::new(),
            adapter_response: json!({}),
            failures: Value::Null,
            batches: None,
        }
    }
}

/// dbt's message for a model whose SQL PostgreSQL refused, as dbt-postgres prints it:
/// the server's message, the line it points at, and its hint.
fn database_error(model: &Model, statement: &str, error: &postgres::Error) -> String {
    let mut text = format!("Database Error in model {} ({})\n", model.name, model.path);
    match error.as_db_error() {
        Some(db) => {
            text.push_str(&format!("  {}\n", db.message()));
            if let Some(ErrorPosition::Original(position)) = db.position() {
                let before: String = statement
                    .chars()
                    .take((*position as usize).saturating_sub(1))
                    .collect();
                let line_number = before.matches('\n').count() + 1;
                let line = statement.lines().nth(line_number - 1).unwrap_or("");
                let column = before.chars().rev().take_while(|c| *c != '\n').count();
                let prefix = format!("LINE {line_number}: ");
                text.push_str(&format!(
                    "  {prefix}{line}\n  {}^\n",
                    " ".repeat(prefix.len() + column)
                ));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("  HINT:  {hint}\n"));
            }
        }
        None => text.push_str(&format!("  {error}\n")),
    }
    text.push_str(&format!(
        "  compiled code at target/run/{PROJECT}/{}",
        model.path
    ));
    text
}

impl Estate {
    /// Creates database `dw` on `pg` with eight weeks of hourly loads ending in the hour
    /// of `now`, writes the project, manifest, notes and config under `dir`, sets the
    /// URL variable the config names, and runs dbt once at `now`.
    pub fn build(pg: &PgServer, dir: &Path, now: NaiveDateTime) -> Estate {
        // CREATE DATABASE cannot share a (implicit) transaction with anything else.
        pg.execute(&format!("CREATE DATABASE {DATABASE}"));
        pg.execute(&format!("ALTER DATABASE {DATABASE} SET timezone TO 'UTC'"));
        let url = format!("postgresql://postgres@127.0.0.1:{}/{DATABASE}", pg.port);
        let url_env = format!("DATAWARD_ESTATE_URL_{}", pg.port);
        std::env::set_var(&url_env, &url);
        let project = dir.join("project");
        let last = hour_of(now);
        let estate = Estate {
            dir: dir.to_path_buf(),
            manifest: project.join("target/manifest.json"),
            run_results: project.join("target/run_results.json"),
            project,
            notes: dir.join("notes.toml"),
            config: dir.join("dataward.toml"),
            url,
            url_env,
            built_at: now,
            loader: Mutex::new(Loader {
                loaded_through: last,
                stalled_from: None,
                stopped_tables: Default::default(),
                short_loads: Default::default(),
                nulling: BTreeMap::new(),
                refill: None,
            }),
            runs: Mutex::new(0),
        };

        let (orders, payments) = load_sql(last - HISTORY + TimeDelta::hours(1), last);
        estate.execute(&format!(
            "CREATE SCHEMA raw;
             CREATE TABLE raw.payments (id bigint, order_id bigint, payment_method text,
                                        amount integer, loaded_at timestamp);
             CREATE TABLE raw.orders (id bigint, customer_id bigint, status text,
                                      loaded_at timestamp);
             {orders};
             {payments};
             ANALYZE raw.payments;
             ANALYZE raw.orders;"
        ));

        write(&estate.project.join("dbt_project.yml"), DBT_PROJECT_YML);
        write(
            &estate.project.join("models/staging/sources.yml"),
            SOURCES_YML,
        );
        write(&estate.project.join(PROPERTIES_PATH), &properties_yml());
        for (path, sql) in MODELS {
            write(&estate.project.join(path), sql);
        }
        write(
            &estate.project.join(MICROBATCH_PATH),
            &microbatch_model_sql(estate.history_begins()),
        );
        estate.write_manifest(now);
        write(&estate.notes, NOTES);
        write(&estate.config, &config_text(&estate.url_env));
        let first = estate.dbt_run(now);
        assert!(first.all_succeeded(), "the first dbt run: {first:#?}");
        estate
    }

    /// The first day of history: the microbatch model's `begin`.
    pub fn history_begins(&self) -> NaiveDate {
        (hour_of(self.built_at) - HISTORY + TimeDelta::hours(1)).date()
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to the estate: {e}"))
    }

    pub fn execute(&self, sql: &str) {
        self.client()
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    /// The first column of the first row of `sql`, as a bigint.
    pub fn scalar(&self, sql: &str) -> i64 {
        self.client()
            .query_one(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
            .get(0)
    }

    pub fn count(&self, table: &str) -> i64 {
        self.scalar(&format!("SELECT count(*) FROM {}", quote_relation(table)))
    }

    /// Rows of `table` loaded on `day` (UTC).
    pub fn count_on(&self, table: &str, day: NaiveDate) -> i64 {
        self.scalar(&format!(
            "SELECT count(*) FROM {} WHERE loaded_at >= date '{day}' \
             AND loaded_at < date '{day}' + 1",
            quote_relation(table)
        ))
    }

    /// Rows of `table` where `column` is null.
    pub fn count_null(&self, table: &str, column: &str) -> i64 {
        self.scalar(&format!(
            "SELECT count(*) FROM {} WHERE {} IS NULL",
            quote_relation(table),
            quote_ident(column)
        ))
    }

    /// The first column of the first row of `sql`, as text (`NULL` as `None`).
    pub fn text(&self, sql: &str) -> Option<String> {
        self.client()
            .query_one(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
            .get(0)
    }

    /// The column's type as PostgreSQL names it (`integer`, `text`).
    pub fn column_type(&self, table: &str, column: &str) -> String {
        let (schema, name) = table.split_once('.').expect("schema.table");
        self.client()
            .query_one(
                "SELECT data_type::text FROM information_schema.columns
                 WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
                &[&schema, &name, &column],
            )
            .unwrap_or_else(|e| panic!("the type of {table}.{column}: {e:?}"))
            .get(0)
    }

    /// The config as dataward reads it.
    pub fn load_config(&self) -> dataward::config::Config {
        dataward::config::Config::load(&self.config)
            .unwrap_or_else(|e| panic!("the estate's config: {e:#}"))
    }

    // --- The loader --------------------------------------------------------------

    /// The live loader: appends the rows of the hour `at` falls in to both raw tables,
    /// once (a second call in the same hour, or one for an hour already loaded, does
    /// nothing), unless the loader is stalled. Nulls what `null_new_rows` asked for.
    pub fn load_hour(&self, at: NaiveDateTime) -> Loaded {
        let hour = hour_of(at);
        let mut loader = self.loader.lock().unwrap();
        if hour <= loader.loaded_through || loader.stalled_from.is_some_and(|from| hour >= from) {
            return Loaded::default();
        }
        let (orders_sql, payments_sql) = load_sql(hour, hour);
        let mut client = self.client();
        let mut tx = client.transaction().unwrap();
        let load = |tx: &mut postgres::Transaction, table: &str, sql: &str| {
            if loader.stopped_tables.contains(table) {
                return 0;
            }
            tx.execute(sql, &[])
                .unwrap_or_else(|e| panic!("loading {table}: {e:?}"))
        };
        let orders = load(&mut tx, "raw.orders", &orders_sql);
        let payments = load(&mut tx, "raw.payments", &payments_sql);
        for (table, landed) in &loader.short_loads {
            let sql = format!(
                "DELETE FROM {} WHERE loaded_at = {} AND {}",
                quote_relation(table),
                sql_timestamp(hour),
                share_of_rows(1.0 - landed, 13)
            );
            tx.execute(&sql, &[])
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
        for ((table, column), share) in &loader.nulling {
            let sql = format!(
                "UPDATE {} SET {} = NULL WHERE loaded_at = {} AND {}",
                quote_relation(table),
                quote_ident(column),
                sql_timestamp(hour),
                share_of_rows(*share, 11)
            );
            tx.execute(&sql, &[])
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
        tx.commit().unwrap();
        loader.loaded_through = hour;
        Loaded { orders, payments }
    }

    // --- dbt -----------------------------------------------------------------------

    /// The models in the project as the files are now, in the order dbt would run them
    /// (parents first, then by name).
    fn models(&self) -> Vec<Model> {
        let mut paths = Vec::new();
        sql_files(&self.project, &self.project.join("models"), &mut paths);
        let mut models: Vec<Model> = paths
            .into_iter()
            .map(|path| {
                let raw = std::fs::read_to_string(self.project.join(&path)).unwrap();
                let name = Path::new(&path)
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let mut refs = Vec::new();
                let mut sources = Vec::new();
                let mut config = BTreeMap::new();
                for (_, call) in jinja_calls(&raw) {
                    match call {
                        Call::Ref(name) => refs.push(name),
                        Call::Source(s, t) => sources.push((s, t)),
                        Call::Config(settings) => config.extend(settings),
                        Call::Other(_) => {}
                    }
                }
                // The properties file, as dbt applies it: over the model's own config().
                let mut patched = false;
                for (model, key, value) in MODEL_PROPERTIES {
                    if *model == name {
                        config.insert(key.to_string(), json!(value));
                        patched = true;
                    }
                }
                Model {
                    name,
                    path,
                    raw,
                    refs,
                    sources,
                    config,
                    patched,
                }
            })
            .collect();
        models.sort_by(|a, b| a.name.cmp(&b.name));
        // Kahn's algorithm; refs to models that do not exist do not hold a model back
        // (it fails to compile when it runs).
        let names: BTreeSet<String> = models.iter().map(|m| m.name.clone()).collect();
        let mut done: BTreeSet<String> = BTreeSet::new();
        let mut ordered = Vec::new();
        while !models.is_empty() {
            let ready = models
                .iter()
                .position(|m| {
                    m.refs
                        .iter()
                        .all(|r| done.contains(r) || !names.contains(r))
                })
                .unwrap_or_else(|| panic!("the models' refs form a cycle"));
            let model = models.remove(ready);
            done.insert(model.name.clone());
            ordered.push(model);
        }
        ordered
    }

    /// The model's SQL with `ref()` and `source()` rendered to relation names and
    /// `config()` to nothing, or dbt's compilation error. `event_times` holds every
    /// model's name with its `event_time`. For one `batch` of a microbatch model, a ref to
    /// a model with an `event_time` reads only the rows of that batch, as dbt renders it.
    fn compile(
        &self,
        model: &Model,
        event_times: &BTreeMap<String, Option<String>>,
        batch: Option<(NaiveDateTime, NaiveDateTime)>,
    ) -> Result<String, String> {
        let mut out = String::new();
        let mut last = 0;
        for (span, call) in jinja_calls(&model.raw) {
            out.push_str(&model.raw[last..span.start]);
            let rendered = match call {
                Call::Ref(name) if event_times.contains_key(&name) => {
                    let relation = model_relation(&name);
                    match (batch, &event_times[&name]) {
                        (Some((start, end)), Some(column)) => format!(
                            "(select * from {relation} where {column} >= '{}' and {column} < '{}') \
                             _dbt_et_filter_subq_{name}",
                            batch_time(start),
                            batch_time(end)
                        ),
                        _ => relation,
                    }
                }
                Call::Ref(name) => {
                    return Err(format!(
                        "Compilation Error in model {} ({})\n  Model '{}' ({}) depends on a \
                         node named '{name}' which was not found",
                        model.name,
                        model.path,
                        model.unique_id(),
                        model.path
                    ))
                }
                Call::Source(source, table)
                    if SOURCES.iter().any(|(s, t, _)| *s == source && *t == table) =>
                {
                    source_relation(&source, &table)
                }
                Call::Source(source, table) => {
                    return Err(format!(
                        "Compilation Error in model {} ({})\n  Model '{}' ({}) depends on a \
                         source named '{source}.{table}' which was not found",
                        model.name,
                        model.path,
                        model.unique_id(),
                        model.path
                    ))
                }
                Call::Config(_) => String::new(),
                Call::Other(body) => {
                    return Err(format!(
                        "Compilation Error in model {} ({})\n  the test estate renders only \
                         ref(), source() and config(), not {{{{ {body} }}}}",
                        model.name, model.path
                    ))
                }
            };
            out.push_str(&rendered);
            last = span.end;
        }
        out.push_str(&model.raw[last..]);
        Ok(out)
    }

    /// Emulates `dbt run`: re-reads the project and rewrites the manifest, then builds
    /// every model in dependency order. A table model is rebuilt in one transaction
    /// (drop, then `create table ... as`). A microbatch model runs batch by batch, each in
    /// its own transaction: the first build creates its table from every batch since
    /// `begin`; later runs rebuild only the batches from `lookback` batches before the one
    /// `at` falls in through that one, deleting each batch's rows (by the model's
    /// `event_time`) and inserting them again from its parents filtered to the batch, so
    /// an older batch keeps whatever it had. A model PostgreSQL refuses is `error` with
    /// the server's message and keeps its old table; its descendants are `skipped`.
    /// Writes `target/run_results.json` (schema v6) with `at` as the clock.
    ///
    /// dbt-postgres itself runs a microbatch batch as a MERGE on a `unique_key`, which
    /// keeps rows gone from the parent; the estate replaces the batch, as dbt's adapters
    /// for Snowflake, Redshift, BigQuery and Databricks do.
    pub fn dbt_run(&self, at: NaiveDateTime) -> RunOutcome {
        self.invoke(
            at,
            Invocation {
                which: "run",
                command: "dbt run".to_string(),
                select: Vec::new(),
                event_time: None,
            },
        )
    }

    /// Emulates `dbt build --select MODEL+ --event-time-start START --event-time-end
    /// END`: rewrites the manifest, then builds only `model` and its descendants, in
    /// dependency order. A microbatch model among them rebuilds only the batches in
    /// `[START, END)` (dbt's window: `END` is exclusive), whatever its lookback; the
    /// others are built as `dbt_run` builds them. The estate has no tests for `build` to
    /// run. Writes `target/run_results.json` with `args` naming the command. Panics, as
    /// dbt refuses the command, unless `START` is before `END`.
    pub fn dbt_backfill(
        &self,
        at: NaiveDateTime,
        model: &str,
        start: NaiveDate,
        end: NaiveDate,
    ) -> RunOutcome {
        assert!(
            self.models().iter().any(|m| m.name == model),
            "no model {model} in the project"
        );
        assert!(
            start < end,
            "dbt refuses it: Value for `--event-time-start` must be less than `--event-time-end`"
        );
        self.invoke(
            at,
            Invocation {
                which: "build",
                command: format!(
                    "dbt build --select {model}+ --event-time-start {start} --event-time-end {end}"
                ),
                select: vec![format!("{model}+")],
                event_time: Some((
                    start.and_hms_opt(0, 0, 0).unwrap(),
                    end.and_hms_opt(0, 0, 0).unwrap(),
                )),
            },
        )
    }

    /// The models an invocation builds: all of them without `--select`; else each
    /// selected by name, and with `name+` its descendants too.
    fn selected(models: &[Model], select: &[String]) -> BTreeSet<String> {
        if select.is_empty() {
            return models.iter().map(|m| m.name.clone()).collect();
        }
        let mut chosen = BTreeSet::new();
        for selector in select {
            let (name, children) = match selector.strip_suffix('+') {
                Some(name) => (name, true),
                None => (selector.as_str(), false),
            };
            chosen.insert(name.to_string());
            if children {
                // Parents come first in `models`: one pass reaches every descendant.
                let mut below: BTreeSet<String> = BTreeSet::from([name.to_string()]);
                for model in models {
                    if model.refs.iter().any(|r| below.contains(r)) {
                        below.insert(model.name.clone());
                    }
                }
                chosen.extend(below);
            }
        }
        chosen
    }

    fn invoke(&self, at: NaiveDateTime, invocation: Invocation) -> RunOutcome {
        let started = Instant::now();
        let clock = |instant: Instant| {
            at + TimeDelta::from_std(instant.duration_since(started)).unwrap_or_default()
        };
        let invocation_id = {
            let mut runs = self.runs.lock().unwrap();
            *runs += 1;
            invocation_id(&format!("{}#{runs}", dbt_time(at)))
        };
        let models = self.models();
        self.write_manifest_of(&models, at);
        let selected = Self::selected(&models, &invocation.select);
        let event_times: BTreeMap<String, Option<String>> = models
            .iter()
            .map(|m| (m.name.clone(), m.event_time().map(str::to_string)))
            .collect();
        // A server out of reach fails every model that runs, as it would fail dbt's.
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).and_then(|mut c| {
            c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {TARGET_SCHEMA}"))?;
            Ok(c)
        });

        let mut outcome = Vec::new();
        let mut json_results = Vec::new();
        let mut not_built: BTreeSet<String> = BTreeSet::new();
        for (thread, model) in models
            .iter()
            .filter(|m| selected.contains(&m.name))
            .enumerate()
        {
            let unique_id = model.unique_id();
            let relation = model_relation(&model.name);
            if model.refs.iter().any(|r| not_built.contains(r)) {
                not_built.insert(model.name.clone());
                outcome.push(ModelRun {
                    unique_id: unique_id.clone(),
                    name: model.name.clone(),
                    status: RunStatus::Skipped,
                    message: None,
                    rows: None,
                    batches: None,
                });
                json_results.push(json!({
                    "status": "skipped", "timing": [], "thread_id": "Thread-1 (worker)",
                    "execution_time": 0.0, "adapter_response": {}, "message": null,
                    "failures": null, "unique_id": unique_id, "compiled": false,
                    "compiled_code": null, "relation_name": relation, "batch_results": null
                }));
                continue;
            }
            let model_start = Instant::now();
            let built = match model.microbatch() {
                Err(message) => Built::failed(message),
                Ok(None) => self.build_table(&mut client, model, &event_times, &clock),
                Ok(Some(microbatch)) => self.build_batches(
                    &mut client,
                    model,
                    &event_times,
                    &microbatch,
                    at,
                    invocation.event_time,
                ),
            };
            if built.status != RunStatus::Success {
                not_built.insert(model.name.clone());
            }
            let batch_results = built.batches.as_ref().map(|b| {
                let windows = |list: &[(NaiveDateTime, NaiveDateTime)]| {
                    list.iter()
                        .map(|(s, e)| json!([batch_json(*s), batch_json(*e)]))
                        .collect::<Vec<_>>()
                };
                json!({"successful": windows(&b.successful), "failed": windows(&b.failed)})
            });
            json_results.push(json!({
                "status": built.status.as_str(),
                "timing": built.timing,
                "thread_id": format!("Thread-{} (worker)", thread % 4 + 1),
                "execution_time": model_start.elapsed().as_secs_f64(),
                "adapter_response": built.adapter_response,
                "message": built.message,
                "failures": built.failures,
                "unique_id": unique_id,
                "compiled": built.compiled_code.is_some(),
                "compiled_code": built.compiled_code,
                "relation_name": relation,
                "batch_results": batch_results,
            }));
            outcome.push(ModelRun {
                unique_id,
                name: model.name.clone(),
                status: built.status,
                message: Some(built.message),
                rows: built.rows,
                batches: built.batches,
            });
        }

        let (start, end) = match invocation.event_time {
            Some((start, end)) => (json!(dbt_time(start)), json!(dbt_time(end))),
            None => (Value::Null, Value::Null),
        };
        let document = json!({
            "metadata": {
                "dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
                "dbt_version": DBT_VERSION,
                "generated_at": dbt_time(clock(Instant::now())),
                "invocation_id": invocation_id,
                "env": {},
            },
            "results": json_results,
            "elapsed_time": started.elapsed().as_secs_f64(),
            "args": {
                "which": invocation.which,
                "invocation_command": invocation.command,
                "project_dir": self.project.display().to_string(),
                "profiles_dir": self.project.display().to_string(),
                "target": "dev",
                "threads": 4,
                "select": invocation.select,
                "exclude": [],
                "event_time_start": start,
                "event_time_end": end,
                "full_refresh": false,
                "vars": {},
                "quiet": false,
                "log_format": "default",
                "use_colors": true,
                "printer_width": 80,
                "write_json": true,
                "partial_parse": true,
                "static_parser": true,
                "favor_state": false,
            },
        });
        write(
            &self.run_results,
            &serde_json::to_string_pretty(&document).unwrap(),
        );
        RunOutcome {
            results: outcome,
            run_results: self.run_results.clone(),
        }
    }

    /// A table model: dropped and created again from its SQL, in one transaction.
    fn build_table(
        &self,
        client: &mut Result<postgres::Client, postgres::Error>,
        model: &Model,
        event_times: &BTreeMap<String, Option<String>>,
        clock: &dyn Fn(Instant) -> NaiveDateTime,
    ) -> Built {
        let relation = model_relation(&model.name);
        let compile_start = Instant::now();
        let compiled = self.compile(model, event_times, None);
        let mut timing = vec![json!({
            "name": "compile",
            "started_at": dbt_time(clock(compile_start)),
            "completed_at": dbt_time(clock(Instant::now())),
        })];
        let sql = match compiled {
            Err(message) => {
                return Built {
                    timing,
                    ..Built::failed(message)
                }
            }
            Ok(sql) => sql,
        };
        self.write_target("compiled", model, &sql);
        let statement = format!("\n  create table {relation}\n  as\n  (\n{sql}\n  )");
        self.write_target("run", model, &statement);
        let execute_start = Instant::now();
        let built = match client.as_mut() {
            Err(e) => Err(database_error(model, &statement, e)),
            Ok(client) => (|| {
                let mut tx = client.transaction()?;
                tx.batch_execute(&format!("DROP TABLE IF EXISTS {relation}"))?;
                let rows = tx.execute(&statement, &[])?;
                tx.commit()?;
                Ok::<u64, postgres::Error>(rows)
            })()
            .map_err(|e| database_error(model, &statement, &e)),
        };
        timing.push(json!({
            "name": "execute",
            "started_at": dbt_time(clock(execute_start)),
            "completed_at": dbt_time(clock(Instant::now())),
        }));
        match built {
            Ok(rows) => Built {
                status: RunStatus::Success,
                message: format!("SELECT {rows}"),
                rows: Some(rows),
                compiled_code: Some(sql),
                timing,
                adapter_response: json!({
                    "_message": format!("SELECT {rows}"), "code": "SELECT", "rows_affected": rows
                }),
                failures: Value::Null,
                batches: None,
            },
            Err(message) => Built {
                compiled_code: Some(sql),
                timing,
                ..Built::failed(message)
            },
        }
    }

    /// A microbatch model, batch by batch as dbt 1.9 runs it, each batch in its own
    /// transaction: the first batch of a model with no table yet creates it; every other
    /// batch deletes the rows of its window and inserts them again. dbt's result for the
    /// model is `SUCCESS`, `ERROR` (no batch built) or `PARTIAL SUCCESS (n/m)`.
    fn build_batches(
        &self,
        client: &mut Result<postgres::Client, postgres::Error>,
        model: &Model,
        event_times: &BTreeMap<String, Option<String>>,
        microbatch: &Microbatch,
        now: NaiveDateTime,
        window: Option<(NaiveDateTime, NaiveDateTime)>,
    ) -> Built {
        let relation = model_relation(&model.name);
        let mut exists = match client.as_mut() {
            Ok(client) => client
                .query_one(
                    "SELECT to_regclass($1::text) IS NOT NULL",
                    &[&format!(
                        "{}.{}",
                        quote_ident(TARGET_SCHEMA),
                        quote_ident(&model.name)
                    )],
                )
                .map(|row| row.get::<_, bool>(0))
                .unwrap_or(false),
            Err(_) => false,
        };
        let column = quote_ident(&microbatch.event_time);
        let mut results = BatchResults::default();
        let mut rows = 0;
        let mut compiled_code = None;
        for batch in batches(microbatch, now, exists, window) {
            if !exists && !results.failed.is_empty() {
                // dbt skips the rest once the batch that creates the table failed.
                results.failed.push(batch);
                continue;
            }
            let sql = match self.compile(model, event_times, Some(batch)) {
                Ok(sql) => sql,
                Err(message) => return Built::failed(message),
            };
            self.write_target("compiled", model, &sql);
            let (delete, insert) = if exists {
                (
                    Some(format!(
                        "delete from {relation}\n    where {column} >= '{}' and {column} < '{}'",
                        batch_time(batch.0),
                        batch_time(batch.1)
                    )),
                    format!(
                        "insert into {relation}\n    select * from (\n{sql}\n    ) as dbt_batch"
                    ),
                )
            } else {
                (
                    None,
                    format!("\n  create table {relation}\n  as\n  (\n{sql}\n  )"),
                )
            };
            let statement = match &delete {
                Some(delete) => format!("\n    {delete};\n\n    {insert}"),
                None => insert.clone(),
            };
            self.write_target("run", model, &statement);
            let built = match client.as_mut() {
                Err(e) => Err(database_error(model, &statement, e)),
                Ok(client) => (|| {
                    let mut tx = client.transaction()?;
                    if let Some(delete) = &delete {
                        tx.execute(delete.as_str(), &[])?;
                    }
                    let rows = tx.execute(insert.as_str(), &[])?;
                    tx.commit()?;
                    Ok::<u64, postgres::Error>(rows)
                })()
                .map_err(|e| database_error(model, &insert, &e)),
            };
            compiled_code = Some(sql);
            match built {
                Ok(inserted) => {
                    rows += inserted;
                    exists = true;
                    results.successful.push(batch);
                }
                Err(message) => {
                    results.failed.push(batch);
                    results.errors.push(message);
                }
            }
        }
        let (done, failed) = (results.successful.len(), results.failed.len());
        let (status, message) = match (done, failed) {
            (_, 0) => (RunStatus::Success, "SUCCESS".to_string()),
            (0, _) => (RunStatus::Error, "ERROR".to_string()),
            _ => (
                RunStatus::PartialSuccess,
                format!("PARTIAL SUCCESS ({done}/{})", done + failed),
            ),
        };
        Built {
            status,
            message,
            rows: (done > 0).then_some(rows),
            compiled_code,
            timing: Vec::new(),
            adapter_response: json!({}),
            failures: json!(failed),
            batches: Some(results),
        }
    }

    /// Writes what dbt keeps under `target/compiled` or `target/run` for a model.
    fn write_target(&self, folder: &str, model: &Model, sql: &str) {
        write(
            &self
                .project
                .join(format!("target/{folder}/{PROJECT}/{}", model.path)),
            sql,
        );
    }

    /// Writes `target/manifest.json` from the project as it is now.
    pub fn write_manifest(&self, at: NaiveDateTime) {
        let models = self.models();
        self.write_manifest_of(&models, at);
    }

    fn write_manifest_of(&self, models: &[Model], at: NaiveDateTime) {
        let created_at = at.and_utc().timestamp() as f64;
        let mut nodes = serde_json::Map::new();
        let mut sources = serde_json::Map::new();
        let mut parent_map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut child_map: BTreeMap<String, Vec<String>> = BTreeMap::new();

        for (source, table, loaded_at_field) in SOURCES {
            let unique_id = format!("source.{PROJECT}.{source}.{table}");
            parent_map.entry(unique_id.clone()).or_default();
            child_map.entry(unique_id.clone()).or_default();
            let freshness = json!({
                "warn_after": {"count": 2, "period": "hour"},
                "error_after": {"count": 6, "period": "hour"},
                "filter": null
            });
            sources.insert(
                unique_id.clone(),
                json!({
                    "database": DATABASE, "schema": source, "name": table,
                    "resource_type": "source", "package_name": PROJECT,
                    "path": "models/staging/sources.yml",
                    "original_file_path": "models/staging/sources.yml",
                    "unique_id": unique_id,
                    "fqn": [PROJECT, "staging", source, table],
                    "source_name": source, "source_description": "", "loader": "",
                    "identifier": table,
                    "quoting": {"database": null, "schema": null, "identifier": null, "column": null},
                    "loaded_at_field": loaded_at_field,
                    "freshness": freshness,
                    "external": null, "description": "", "columns": {}, "meta": {},
                    "source_meta": {}, "tags": [],
                    "config": {"enabled": true, "event_time": null},
                    "patch_path": null, "unrendered_config": {},
                    "relation_name": source_relation(source, table),
                    "created_at": created_at,
                }),
            );
        }
        for model in models {
            let unique_id = model.unique_id();
            let parents = model.parents();
            for parent in &parents {
                child_map
                    .entry(parent.clone())
                    .or_default()
                    .push(unique_id.clone());
            }
            parent_map.insert(unique_id.clone(), parents.clone());
            child_map.entry(unique_id.clone()).or_default();
            let folder: Vec<&str> = model
                .path
                .trim_start_matches("models/")
                .split('/')
                .collect();
            let mut fqn: Vec<String> = vec![PROJECT.to_string()];
            fqn.extend(folder[..folder.len() - 1].iter().map(|s| s.to_string()));
            fqn.push(model.name.clone());
            let refs: Vec<Value> = model
                .refs
                .iter()
                .map(|r| json!({"name": r, "package": null, "version": null}))
                .collect();
            let source_calls: Vec<Value> =
                model.sources.iter().map(|(s, t)| json!([s, t])).collect();
            let patch_path = model
                .patched
                .then(|| format!("{PROJECT}://{PROPERTIES_PATH}"));
            nodes.insert(
                unique_id.clone(),
                json!({
                    "database": DATABASE, "schema": TARGET_SCHEMA, "name": model.name,
                    "resource_type": "model", "package_name": PROJECT,
                    "path": model.path.trim_start_matches("models/"),
                    "original_file_path": model.path,
                    "unique_id": unique_id, "fqn": fqn, "alias": model.name,
                    "checksum": {"name": "sha256", "checksum": sha256_hex(&model.raw)},
                    "config": model.manifest_config(),
                    "tags": [], "description": "", "columns": {}, "meta": {}, "group": null,
                    "docs": {"show": true, "node_color": null}, "patch_path": patch_path,
                    "build_path": null, "unrendered_config": model.unrendered_config(),
                    "created_at": created_at,
                    "relation_name": model_relation(&model.name),
                    "raw_code": model.raw, "language": "sql",
                    "refs": refs, "sources": source_calls, "metrics": [],
                    "depends_on": {"macros": [], "nodes": parents},
                    "compiled_path": null,
                    "contract": {"enforced": false, "alias_types": true, "checksum": null},
                    "access": "protected", "constraints": [], "version": null,
                    "latest_version": null, "deprecation_date": null
                }),
            );
        }
        for children in child_map.values_mut() {
            children.sort();
            children.dedup();
        }
        let manifest = json!({
            "metadata": {
                "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
                "dbt_version": DBT_VERSION,
                "generated_at": dbt_time(at),
                "invocation_id": invocation_id(&format!("manifest {}", dbt_time(at))),
                "env": {},
                "project_name": PROJECT,
                "project_id": &sha256_hex(PROJECT)[..32],
                "user_id": null,
                "send_anonymous_usage_stats": false,
                "adapter_type": "postgres"
            },
            "nodes": nodes,
            "sources": sources,
            "macros": {}, "docs": {}, "exposures": {}, "metrics": {}, "groups": {},
            "selectors": {}, "disabled": {},
            "parent_map": parent_map,
            "child_map": child_map,
            "group_map": {}, "saved_queries": {}, "semantic_models": {}, "unit_tests": {}
        });
        write(
            &self.manifest,
            &serde_json::to_string_pretty(&manifest).unwrap(),
        );
    }

    // --- Faults --------------------------------------------------------------------

    /// Deletes a deterministic `share` of the rows loaded on `day`; returns how many.
    pub fn delete_share_of_day(&self, table: &str, day: NaiveDate, share: f64) -> u64 {
        let sql = format!(
            "DELETE FROM {} WHERE loaded_at >= date '{day}' AND loaded_at < date '{day}' + 1 \
             AND {}",
            quote_relation(table),
            share_of_rows(share, 21)
        );
        self.client()
            .execute(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }

    /// `ALTER TABLE ... ALTER COLUMN ... TYPE new_type USING column::new_type`.
    pub fn alter_type_in_place(&self, table: &str, column: &str, new_type: &str) {
        let column = quote_ident(column);
        self.execute(&format!(
            "ALTER TABLE {} ALTER COLUMN {column} TYPE {new_type} USING {column}::{new_type}",
            quote_relation(table)
        ));
    }

    /// What a loader does with a change it cannot apply in place: drops the table,
    /// creates it again with `column` of `new_type`, and copies back the oldest
    /// `share_refilled` of the rows (by `loaded_at`, then `id`). `refill_more` copies
    /// more. Returns the rows copied.
    pub fn recreate_with_type_and_refill(
        &self,
        table: &str,
        column: &str,
        new_type: &str,
        share_refilled: f64,
    ) -> u64 {
        let relation = quote_relation(table);
        let backup = format!("estate_refill.{}", quote_ident(&table.replace('.', "__")));
        let mut client = self.client();
        let rows = client
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
                 WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped
                 ORDER BY attnum",
                &[&relation],
            )
            .unwrap_or_else(|e| panic!("the columns of {table}: {e:?}"));
        let columns: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert!(
            columns.iter().any(|(name, _)| name == column),
            "{table} has no column {column}"
        );
        let definitions: Vec<String> = columns
            .iter()
            .map(|(name, data_type)| {
                let data_type = if name == column { new_type } else { data_type };
                format!("{} {data_type}", quote_ident(name))
            })
            .collect();
        let select: Vec<String> = columns
            .iter()
            .map(|(name, _)| {
                if name == column {
                    format!("{}::{new_type}", quote_ident(name))
                } else {
                    quote_ident(name)
                }
            })
            .collect();
        let names: Vec<String> = columns.iter().map(|(name, _)| quote_ident(name)).collect();
        client
            .batch_execute(&format!(
                "BEGIN;
                 CREATE SCHEMA IF NOT EXISTS estate_refill;
                 DROP TABLE IF EXISTS {backup};
                 CREATE TABLE {backup} AS SELECT * FROM {relation};
                 DROP TABLE {relation};
                 CREATE TABLE {relation} ({});
                 COMMIT;",
                definitions.join(", ")
            ))
            .unwrap_or_else(|e| panic!("recreating {table}: {e:?}"));
        let total: i64 = client
            .query_one(&format!("SELECT count(*) FROM {backup}"), &[])
            .unwrap()
            .get(0);
        self.loader.lock().unwrap().refill = Some(Refill {
            table: table.to_string(),
            backup,
            select: select.join(", "),
            columns: names.join(", "),
            total: total as u64,
            copied: 0,
        });
        self.refill_more(share_refilled)
    }

    /// Copies the next `share` (of all the old rows) back into the recreated table;
    /// returns the rows copied.
    pub fn refill_more(&self, share: f64) -> u64 {
        let mut loader = self.loader.lock().unwrap();
        let refill = loader
            .refill
            .as_mut()
            .expect("refill_more after recreate_with_type_and_refill");
        let target = (refill.copied + (share.max(0.0) * refill.total as f64).round() as u64)
            .min(refill.total);
        let sql = format!(
            "INSERT INTO {relation} ({columns})
             SELECT {select} FROM (
                 SELECT *, row_number() OVER (ORDER BY loaded_at, id) AS estate_row
                 FROM {backup}) AS old
             WHERE estate_row > {from} AND estate_row <= {target}",
            relation = quote_relation(&refill.table),
            columns = refill.columns,
            select = refill.select,
            backup = refill.backup,
            from = refill.copied,
        );
        let copied = self
            .client()
            .execute(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        refill.copied = target;
        copied
    }

    /// The loader loads nothing for hours from the one `from` falls in, until `resume`;
    /// the hours it skipped stay missing.
    pub fn stall(&self, from: NaiveDateTime) {
        self.loader.lock().unwrap().stalled_from = Some(hour_of(from));
    }

    /// From the next load on, only `share` of each hour's rows of `table` lands: short
    /// batches, still on schedule.
    pub fn short_loads(&self, table: &str, share: f64) {
        self.loader
            .lock()
            .unwrap()
            .short_loads
            .insert(table.to_string(), share);
    }

    /// The loader stops writing `table` alone; the other raw table keeps loading.
    pub fn stop_table(&self, table: &str) {
        self.loader
            .lock()
            .unwrap()
            .stopped_tables
            .insert(table.to_string());
    }

    pub fn resume(&self) {
        self.loader.lock().unwrap().stalled_from = None;
    }

    /// From the next load on, the loader writes `column` of `table` as null in a
    /// deterministic `share` of the rows it loads (0 stops it).
    pub fn null_new_rows(&self, table: &str, column: &str, share: f64) {
        let mut loader = self.loader.lock().unwrap();
        let key = (table.to_string(), column.to_string());
        if share <= 0.0 {
            loader.nulling.remove(&key);
        } else {
            loader.nulling.insert(key, share);
        }
    }

    /// The load of the hour `at` falls in, inserted again: every row of that hour
    /// duplicated exactly. Returns the rows inserted.
    pub fn duplicate_load(&self, table: &str, at: NaiveDateTime) -> u64 {
        let hour = hour_of(at);
        let relation = quote_relation(table);
        let sql = format!(
            "INSERT INTO {relation} SELECT * FROM {relation} \
             WHERE loaded_at >= {} AND loaded_at < {}",
            sql_timestamp(hour),
            sql_timestamp(hour + TimeDelta::hours(1))
        );
        self.client()
            .execute(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }

    /// A resync that blanked a column: every row loaded in the last `days` days (before
    /// the newest load) gets `column` set to null. Returns the rows updated.
    pub fn resync_nulling_days(&self, table: &str, column: &str, days: u32) -> u64 {
        let relation = quote_relation(table);
        let sql = format!(
            "UPDATE {relation} SET {} = NULL \
             WHERE loaded_at > (SELECT max(loaded_at) FROM {relation}) - interval '{days} days'",
            quote_ident(column)
        );
        self.client()
            .execute(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }
}
