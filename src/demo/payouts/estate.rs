//! The courier estate: the warehouse with the raw event table the stream writes and the
//! two dbt models built from it, the scheduler, a dbt project with its manifest (a
//! microbatch model and an exposure for finance's workbook), the team's notes and the
//! dataward config that watches it all. Built from scratch on every demo start, with
//! ten weeks of deliveries behind it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{Datelike, NaiveDate, NaiveDateTime, TimeDelta, Weekday};
use rusqlite::{params, Connection};
use serde_json::{json, Value};

use crate::clock::timestamp as ts;
use crate::demo::control::ControlPlane;

/// The nightly dbt job, as the scheduler and the notes name it.
pub const NIGHTLY_JOB: &str = "job.nightly_dbt";
/// The event stream that writes raw.courier_events.
pub const STREAM: &str = "stream.courier_events";
/// The first day of deliveries, and of the microbatch model (`begin`): four weeks and
/// a day before the story's Saturday, so it has four Saturdays before it.
pub fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 10, 25).expect("valid date")
}

pub struct Estate {
    pub dir: PathBuf,
}

impl Estate {
    pub fn warehouse_db(&self) -> PathBuf {
        self.dir.join("warehouse.db")
    }
    pub fn control_db(&self) -> PathBuf {
        self.dir.join("control.db")
    }
    pub fn project_dir(&self) -> PathBuf {
        self.dir.join("dbt")
    }
    pub fn manifest(&self) -> PathBuf {
        self.project_dir().join("target").join("manifest.json")
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join("dataward.toml")
    }

    /// Opens the warehouse the way the dbt job, the stream and the monitors see it: the
    /// `raw` and `analytics` schemas are attached databases.
    pub fn warehouse(&self) -> Result<Connection> {
        let attach = std::collections::BTreeMap::from([
            ("raw".to_string(), self.dir.join("raw.db")),
            ("analytics".to_string(), self.dir.join("analytics.db")),
        ]);
        crate::warehouse::sqlite::connect(&self.warehouse_db(), &attach)
            .map_err(|e| anyhow::anyhow!("demo warehouse: {e}"))
    }
}

/// One delivery: picked up, then delivered.
pub struct Delivery {
    pub id: String,
    pub courier: i64,
    pub fee_cents: i64,
    pub delivered_at: NaiveDateTime,
}

/// A small deterministic hash, so every demo run makes the same deliveries.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb33fe1a85ec9);
    x ^ (x >> 33)
}

/// How many deliveries a day brings: busiest at the weekend, a few percent either way.
fn deliveries_on(day: NaiveDate) -> u64 {
    let usual = match day.weekday() {
        Weekday::Sat => 420.0,
        Weekday::Sun => 380.0,
        Weekday::Fri => 370.0,
        _ => 310.0,
    };
    let jitter = (mix(day.num_days_from_ce() as u64) % 61) as f64 / 1_000.0 - 0.03;
    (usual * (1.0 + jitter)).round() as u64
}

/// The day's deliveries, spread over its minutes (couriers deliver around the clock).
pub fn deliveries(day: NaiveDate) -> Vec<Delivery> {
    let n = deliveries_on(day);
    let midnight = day.and_hms_opt(0, 0, 0).expect("midnight");
    (0..n)
        .map(|i| {
            let h = mix((day.num_days_from_ce() as u64) << 20 | i);
            Delivery {
                id: format!("D{}-{i:04}", day.format("%Y%m%d")),
                courier: 1 + (h % 60) as i64,
                fee_cents: 350 + ((h >> 12) % 400) as i64,
                delivered_at: midnight + TimeDelta::minutes((i * 1_440 / n) as i64),
            }
        })
        .collect()
}

/// The pick-up comes this long before the delivery.
const RIDE: TimeDelta = TimeDelta::minutes(18);

/// Lands the events of `from < event_at <= to` in raw.courier_events, as the stream
/// does; events already there are left alone. Returns how many landed.
pub fn land_events(
    wh: &Connection,
    from: NaiveDateTime,
    to: NaiveDateTime,
    loaded_at: NaiveDateTime,
) -> Result<usize> {
    let mut insert = wh.prepare_cached(
        "INSERT OR IGNORE INTO raw.courier_events
         (event_id, delivery_id, courier_id, event_type, fee_cents, event_at, loaded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut landed = 0;
    let mut day = (from - RIDE).date();
    while day <= (to + RIDE).date() {
        for d in deliveries(day) {
            for (kind, at) in [
                ("picked_up", d.delivered_at - RIDE),
                ("delivered", d.delivered_at),
            ] {
                if at > from && at <= to {
                    landed += insert.execute(params![
                        format!("{}-{kind}", d.id),
                        d.id,
                        d.courier,
                        kind,
                        d.fee_cents,
                        ts(at),
                        ts(loaded_at)
                    ])?;
                }
            }
        }
        day = day.succ_opt().expect("a next day");
    }
    Ok(landed)
}

/// Builds the estate from nothing under `dir`, up to `now` (the stream has landed every
/// event until then and the nightly job last ran at 02:00).
pub fn build(dir: &Path, console_user: Option<&str>, now: NaiveDateTime) -> Result<Estate> {
    let estate = Estate {
        dir: dir.to_path_buf(),
    };
    for db in ["warehouse.db", "raw.db", "analytics.db"] {
        Connection::open(dir.join(db))?.execute_batch("PRAGMA journal_mode=WAL;")?;
    }
    let mut wh = estate.warehouse()?;
    wh.execute_batch(
        "CREATE TABLE raw.courier_events (
            event_id    TEXT PRIMARY KEY,
            delivery_id TEXT NOT NULL,
            courier_id  INTEGER NOT NULL,
            event_type  TEXT NOT NULL,
            fee_cents   INTEGER NOT NULL,
            event_at    TEXT NOT NULL,
            loaded_at   TEXT NOT NULL
         );
         CREATE INDEX raw.courier_events_event_at ON courier_events (event_at);",
    )?;
    // Every event up to the nightly run's 02:00 has landed; the models are built from
    // them below, and then the morning's events land.
    let last_run = now.date().and_hms_opt(2, 0, 0).expect("02:00");
    let begin = first_day().and_hms_opt(0, 0, 0).expect("midnight");
    let tx = wh.transaction()?;
    land_events(&tx, begin - TimeDelta::seconds(1), last_run, last_run)?;
    tx.commit()?;
    ControlPlane::create(
        estate.control_db(),
        &[
            (STREAM, "courier event stream", "stream", "running"),
            (NIGHTLY_JOB, "nightly dbt job", "job", "scheduled"),
        ],
    )?;
    write_project(&estate)?;
    // The models as the nightly runs have built them, every day since `begin`.
    super::dbt::build_all(&estate, last_run)
        .map_err(|e| anyhow::anyhow!("building the demo models: {e}"))?;
    land_events(&wh, last_run, now, now)?;
    drop(wh);
    let control = ControlPlane::new(estate.control_db());
    control.record_pipeline(NIGHTLY_JOB, "success", &ts(last_run))?;
    control.record_pipeline(STREAM, "success", &ts(now))?;
    std::fs::write(estate.dir.join("notes.toml"), NOTES)?;
    std::fs::write(estate.config(), config_text(console_user))
        .with_context(|| format!("writing {}", estate.config().display()))?;
    Ok(estate)
}

/// A dbt model of the estate: its file and raw SQL.
pub struct ModelFile {
    pub name: &'static str,
    pub path: &'static str,
    pub sql: &'static str,
}

pub const DELIVERIES: ModelFile = ModelFile {
    name: "fct_deliveries",
    path: "models/marts/fct_deliveries.sql",
    sql: "{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='delivered_at', batch_size='day', lookback=1, begin='2026-10-25', unique_key='delivery_id') }}

select
    delivery_id,
    courier_id,
    event_at as delivered_at,
    substr(event_at, 1, 10) as delivered_on,
    fee_cents
from {{ source('couriers', 'courier_events') }}
where event_type = 'delivered'
",
};

pub const PAYOUTS: ModelFile = ModelFile {
    name: "fct_courier_payouts",
    path: "models/marts/fct_courier_payouts.sql",
    sql: "{{ config(materialized='table') }}

select
    courier_id,
    date(delivered_on, 'weekday 1', '-7 days') as week_start,
    count(*) as deliveries,
    sum(fee_cents) / 100.0 as payout
from {{ ref('fct_deliveries') }}
group by 1, 2
",
};

pub const MODELS: &[&ModelFile] = &[&DELIVERIES, &PAYOUTS];

const NOTES: &str = r#"# What the team knows that dbt does not.

[[reader]]
id = "job.nightly_dbt"
kind = "job"
name = "nightly dbt job"
reads = ["model.payouts.fct_deliveries", "model.payouts.fct_courier_payouts"]
owner = "payouts-owner"
schedule = "0 2 * * *"

[[writer]]
id = "stream.courier_events"
name = "courier event stream"
writes = ["raw.courier_events"]
owner = "platform-owner"

[[owner]]
role = "payouts-owner"
covers = ["model.payouts.*", "analytics.*"]
"#;

fn write_project(estate: &Estate) -> Result<()> {
    let project = estate.project_dir();
    for model in MODELS {
        let path = project.join(model.path);
        std::fs::create_dir_all(path.parent().expect("model files live in folders"))?;
        std::fs::write(&path, model.sql)?;
    }
    std::fs::create_dir_all(project.join("target"))?;
    std::fs::write(
        project.join("dbt_project.yml"),
        "name: payouts\nversion: '1.0.0'\nprofile: demo\n",
    )?;
    std::fs::write(
        estate.manifest(),
        serde_json::to_string_pretty(&manifest())?,
    )?;
    Ok(())
}

/// The relation a node builds, as the compiled SQL names it.
fn relation(schema: &str, name: &str) -> String {
    format!("\"{schema}\".\"{name}\"")
}

/// Renders `{{ ref(...) }}` and `{{ source(...) }}` for the estate, and drops the
/// `config(...)` call (dbt reads it; it is not SQL).
pub fn compile(raw: &str) -> String {
    let sql = match (raw.find("{{ config("), raw.find(") }}")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &raw[..start], &raw[end + ") }}".len()..])
        }
        _ => raw.to_string(),
    };
    sql.replace(
        "{{ source('couriers', 'courier_events') }}",
        &relation("raw", "courier_events"),
    )
    .replace(
        "{{ ref('fct_deliveries') }}",
        &relation("analytics", "fct_deliveries"),
    )
}

/// A dbt v12 manifest of the estate, as `dbt parse` would write it.
fn manifest() -> Value {
    let deliveries = "model.payouts.fct_deliveries";
    let payouts = "model.payouts.fct_courier_payouts";
    let source = "source.payouts.couriers.courier_events";
    let exposure = "exposure.payouts.finance_payout_workbook";
    let test = "test.payouts.not_null_fct_deliveries_delivery_id";
    let model = |model: &ModelFile, config: Value, deps: &[&str]| {
        let id = format!("model.payouts.{}", model.name);
        json!({
            "unique_id": id, "name": model.name, "resource_type": "model",
            "package_name": "payouts", "path": model.path.trim_start_matches("models/"),
            "original_file_path": model.path, "fqn": ["payouts", "marts", model.name],
            "database": "warehouse", "schema": "analytics", "alias": model.name,
            "relation_name": format!("\"warehouse\".\"analytics\".\"{}\"", model.name),
            "config": config,
            "raw_code": model.sql, "compiled_code": compile(model.sql), "language": "sql",
            "depends_on": {"macros": [], "nodes": deps},
            "columns": {}, "tags": [], "meta": {}
        })
    };
    let nodes = json!({
        deliveries: model(&DELIVERIES, json!({
            "materialized": "incremental", "incremental_strategy": "microbatch",
            "event_time": "delivered_at", "batch_size": "day", "lookback": 1,
            "begin": "2026-10-25", "unique_key": "delivery_id",
            "meta": {"owner": "payouts-owner"}
        }), &[source]),
        payouts: model(&PAYOUTS, json!({
            "materialized": "table", "meta": {"owner": "payouts-owner"}
        }), &[deliveries]),
        test: {
            "unique_id": test, "name": "not_null_fct_deliveries_delivery_id",
            "resource_type": "test", "package_name": "payouts",
            "database": "warehouse", "schema": "analytics",
            "config": {"materialized": "test", "severity": "ERROR"},
            "depends_on": {"macros": [], "nodes": [deliveries]},
            "column_name": "delivery_id", "attached_node": deliveries,
            "test_metadata": {"name": "not_null", "kwargs": {"column_name": "delivery_id"}},
            "raw_code": "{{ test_not_null(**_dbt_generic_test_kwargs) }}"
        }
    });
    json!({
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "dbt_version": "1.9.0", "generated_at": "2026-11-28T01:55:00Z",
            "project_name": "payouts", "adapter_type": "sqlite"
        },
        "nodes": nodes,
        "sources": {
            source: {
                "unique_id": source, "name": "courier_events", "source_name": "couriers",
                "resource_type": "source", "package_name": "payouts",
                "database": "warehouse", "schema": "raw", "identifier": "courier_events",
                "relation_name": "\"warehouse\".\"raw\".\"courier_events\"",
                "loaded_at_field": "loaded_at",
                "freshness": {"warn_after": {"count": 24, "period": "hour"}},
                "config": {"event_time": "event_at"}, "meta": {"owner": "platform-owner"}
            }
        },
        "exposures": {
            exposure: {
                "unique_id": exposure, "name": "finance_payout_workbook",
                "label": "Finance payout workbook", "resource_type": "exposure",
                "package_name": "payouts", "type": "analysis", "maturity": "high",
                "owner": {"name": "finance-owner", "email": "finance@example.com"},
                "description": "The weekly payout file finance approves and pays couriers from.",
                "depends_on": {"macros": [], "nodes": [payouts]}
            }
        },
        "metrics": {}, "semantic_models": {}, "macros": {}, "docs": {},
        "parent_map": {
            source: [], deliveries: [source], payouts: [deliveries], test: [deliveries],
            exposure: [payouts]
        },
        "child_map": {
            source: [deliveries], deliveries: [payouts, test], payouts: [exposure],
            test: [], exposure: []
        }
    })
}

/// The dataward config that watches the estate. The person running the console plays the
/// payouts owner; the stream's owner is someone else, so notes go to them.
fn config_text(console_user: Option<&str>) -> String {
    let people = match console_user {
        Some(user) => {
            format!("[people.{user:?}]\nname = \"you (demo)\"\nroles = [\"payouts-owner\"]\n")
        }
        None => String::new(),
    };
    format!(
        r#"# Written by `dataward demo payouts`: the config that watches the courier estate.

[warehouse.warehouse]
kind = "sqlite"
path = "warehouse.db"
attach = {{ raw = "raw.db", analytics = "analytics.db" }}

[[monitor]]
name = "courier_events"
warehouse = "warehouse"
table = "raw.courier_events"
checks = ["volume", "freshness", "schema"]
every = "15m"
timestamp_column = "event_at"

# Built nightly: its days are dates, so a day is judged once it is over.
[[monitor]]
name = "fct_deliveries"
warehouse = "warehouse"
table = "analytics.fct_deliveries"
checks = ["volume", "schema"]
every = "30m"
timestamp_column = "delivered_on"

[lineage]
manifest = "dbt/target/manifest.json"
notes = "notes.toml"
project_dir = "dbt"

[orchestrator]
kind = "demo"
path = "control.db"

[verify]
settle = "30m"

{people}
[[domain]]
name = "payouts"
covers = ["raw.courier_events", "analytics.*", "model.payouts.*", "job.nightly_dbt"]
owners = ["payouts-owner"]
# Unanswered for 12 hours, a request also goes to the payouts lead.
escalation = ["payouts-lead"]
approval_ttl = "12h"
autonomy = "L2"

[[domain]]
name = "platform"
covers = ["stream.*"]
owners = ["platform-owner"]
autonomy = "L1"
"#
    )
}
