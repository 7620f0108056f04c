//! A small estate of its own on a real PostgreSQL, for end-to-end tests that break it
//! the ways a new user broke a jaffle_shop-like project.
//!
//! In database `dw`: raw tables `raw.payments` and `raw.orders`, loaded hourly for eight
//! weeks (quieter at night and at weekends; every figure deterministic), and three dbt
//! models built into schema `analytics`. On disk, under the estate's folder:
//!
//!     project/               a dbt-like project: dbt_project.yml, models/**.sql,
//!       target/                manifest.json (v12) and run_results.json (v6)
//!     notes.toml             context notes: a dashboard, the dbt job, owners, a writer
//!     dataward.toml          the config watching all of it
//!
//! `load_hour` is the live loader and `dbt_run` an honest stand-in for `dbt run`: it
//! reads the model files as they are now, renders `ref()`/`source()`, builds each model
//! in dependency order, records PostgreSQL's own error for a model that fails and skips
//! its children, and writes both artifacts in dbt's format. The fault injectors are
//! plain SQL on the estate.
//!
//! One estate per server: it creates the database `dw`.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use chrono::{NaiveDate, NaiveDateTime, TimeDelta, Timelike};
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
reads = ["model.shop.stg_payments", "model.shop.stg_orders", "model.shop.orders"]
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
    /// when skipped.
    pub message: Option<String>,
    /// Rows in the rebuilt table, on success.
    pub rows: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Success,
    Error,
    Skipped,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Skipped => "skipped",
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
                let args: Vec<String> = args[..args.len() - 1]
                    .split(',')
                    .map(|a| a.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
                    .collect();
                match (function.trim(), args.as_slice()) {
                    ("ref", [name]) => Call::Ref(name.clone()),
                    ("source", [source, table]) => Call::Source(source.clone(), table.clone()),
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
        for (path, sql) in MODELS {
            write(&estate.project.join(path), sql);
        }
        estate.write_manifest(now);
        write(&estate.notes, NOTES);
        write(&estate.config, &config_text(&estate.url_env));
        let first = estate.dbt_run(now);
        assert!(first.all_succeeded(), "the first dbt run: {first:#?}");
        estate
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
        let orders = tx
            .execute(&orders_sql, &[])
            .unwrap_or_else(|e| panic!("loading raw.orders: {e:?}"));
        let payments = tx
            .execute(&payments_sql, &[])
            .unwrap_or_else(|e| panic!("loading raw.payments: {e:?}"));
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
                for (_, call) in jinja_calls(&raw) {
                    match call {
                        Call::Ref(name) => refs.push(name),
                        Call::Source(s, t) => sources.push((s, t)),
                        Call::Other(_) => {}
                    }
                }
                Model {
                    name,
                    path,
                    raw,
                    refs,
                    sources,
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

    /// The model's SQL with `ref()` and `source()` rendered to relation names, or dbt's
    /// compilation error.
    fn compile(&self, model: &Model, names: &BTreeSet<String>) -> Result<String, String> {
        let mut out = String::new();
        let mut last = 0;
        for (span, call) in jinja_calls(&model.raw) {
            out.push_str(&model.raw[last..span.start]);
            let rendered = match call {
                Call::Ref(name) if names.contains(&name) => model_relation(&name),
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
                Call::Other(body) => {
                    return Err(format!(
                        "Compilation Error in model {} ({})\n  the test estate renders only \
                         ref() and source(), not {{{{ {body} }}}}",
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
    /// every model in dependency order, each in its own transaction (drop, then
    /// `create table ... as`). A model PostgreSQL refuses is `error` with the server's
    /// message and keeps its old table; its descendants are `skipped`. Writes
    /// `target/run_results.json` (schema v6) with `at` as the clock.
    pub fn dbt_run(&self, at: NaiveDateTime) -> RunOutcome {
        let started = Instant::now();
        let clock = |instant: Instant| {
            at + TimeDelta::from_std(instant.duration_since(started)).unwrap_or_default()
        };
        let invocation = {
            let mut runs = self.runs.lock().unwrap();
            *runs += 1;
            invocation_id(&format!("{}#{runs}", dbt_time(at)))
        };
        let models = self.models();
        self.write_manifest_of(&models, at);
        let names: BTreeSet<String> = models.iter().map(|m| m.name.clone()).collect();
        // A server out of reach fails every model that runs, as it would fail dbt's.
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).and_then(|mut c| {
            c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {TARGET_SCHEMA}"))?;
            Ok(c)
        });

        let mut outcome = Vec::new();
        let mut json_results = Vec::new();
        let mut not_built: BTreeSet<String> = BTreeSet::new();
        for (thread, model) in models.iter().enumerate() {
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
                });
                json_results.push(json!({
                    "status": "skipped", "timing": [], "thread_id": "Thread-1 (worker)",
                    "execution_time": 0.0, "adapter_response": {}, "message": null,
                    "failures": null, "unique_id": unique_id, "compiled": false,
                    "compiled_code": null, "relation_name": relation, "batch_results": null
                }));
                continue;
            }
            let compile_start = Instant::now();
            let compiled = self.compile(model, &names);
            let compile_end = Instant::now();
            let mut timing = vec![json!({
                "name": "compile",
                "started_at": dbt_time(clock(compile_start)),
                "completed_at": dbt_time(clock(compile_end)),
            })];
            let (status, message, rows, compiled_code) = match compiled {
                Err(message) => (RunStatus::Error, message, None, None),
                Ok(sql) => {
                    write(
                        &self
                            .project
                            .join(format!("target/compiled/{PROJECT}/{}", model.path)),
                        &sql,
                    );
                    let statement = format!("\n  create table {relation}\n  as\n  (\n{sql}\n  )");
                    write(
                        &self
                            .project
                            .join(format!("target/run/{PROJECT}/{}", model.path)),
                        &statement,
                    );
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
                        Ok(rows) => (
                            RunStatus::Success,
                            format!("SELECT {rows}"),
                            Some(rows),
                            Some(sql),
                        ),
                        Err(message) => (RunStatus::Error, message, None, Some(sql)),
                    }
                }
            };
            if status != RunStatus::Success {
                not_built.insert(model.name.clone());
            }
            let adapter_response = match rows {
                Some(rows) => json!({
                    "_message": format!("SELECT {rows}"), "code": "SELECT", "rows_affected": rows
                }),
                None => json!({}),
            };
            json_results.push(json!({
                "status": status.as_str(),
                "timing": timing,
                "thread_id": format!("Thread-{} (worker)", thread % 4 + 1),
                "execution_time": compile_start.elapsed().as_secs_f64(),
                "adapter_response": adapter_response,
                "message": message,
                "failures": null,
                "unique_id": unique_id,
                "compiled": compiled_code.is_some(),
                "compiled_code": compiled_code,
                "relation_name": relation,
                "batch_results": null,
            }));
            outcome.push(ModelRun {
                unique_id,
                name: model.name.clone(),
                status,
                message: Some(message),
                rows,
            });
        }

        let document = json!({
            "metadata": {
                "dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
                "dbt_version": "1.8.7",
                "generated_at": dbt_time(clock(Instant::now())),
                "invocation_id": invocation,
                "env": {},
            },
            "results": json_results,
            "elapsed_time": started.elapsed().as_secs_f64(),
            "args": {
                "which": "run",
                "invocation_command": "dbt run",
                "project_dir": self.project.display().to_string(),
                "profiles_dir": self.project.display().to_string(),
                "target": "dev",
                "threads": 4,
                "select": [],
                "exclude": [],
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
            nodes.insert(
                unique_id.clone(),
                json!({
                    "database": DATABASE, "schema": TARGET_SCHEMA, "name": model.name,
                    "resource_type": "model", "package_name": PROJECT,
                    "path": model.path.trim_start_matches("models/"),
                    "original_file_path": model.path,
                    "unique_id": unique_id, "fqn": fqn, "alias": model.name,
                    "checksum": {"name": "sha256", "checksum": sha256_hex(&model.raw)},
                    "config": {
                        "enabled": true, "alias": null, "schema": null, "database": null,
                        "tags": [], "meta": {}, "group": null, "materialized": "table",
                        "incremental_strategy": null, "persist_docs": {}, "post-hook": [],
                        "pre-hook": [], "quoting": {}, "column_types": {},
                        "full_refresh": null, "unique_key": null,
                        "on_schema_change": "ignore", "on_configuration_change": "apply",
                        "grants": {}, "packages": [],
                        "docs": {"show": true, "node_color": null},
                        "contract": {"enforced": false, "alias_types": true},
                        "access": "protected"
                    },
                    "tags": [], "description": "", "columns": {}, "meta": {}, "group": null,
                    "docs": {"show": true, "node_color": null}, "patch_path": null,
                    "build_path": null, "unrendered_config": {"materialized": "table"},
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
                "dbt_version": "1.8.7",
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
