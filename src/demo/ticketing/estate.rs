//! The embedded demo estate: the ticketing app's source database, the warehouse with its
//! raw table and dbt models, the scheduler's control database, a dbt project with its
//! manifest, the team's context notes and the dataward config that watches it all.
//! Everything here is built from scratch on every demo start.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use serde_json::{json, Value};

/// The hourly dbt job, as the scheduler and the notes name it.
pub const HOURLY_JOB: &str = "job.hourly_dbt";
/// The CDC mover that copies the app's orders into the warehouse.
pub const MOVER: &str = "mover.ticketing_cdc";
/// Orders already sold when the story starts (240 million in real life).
pub const INITIAL_ORDERS: i64 = 20_000;

pub struct Estate {
    pub dir: PathBuf,
}

impl Estate {
    pub fn source_db(&self) -> PathBuf {
        self.dir.join("source.db")
    }
    pub fn warehouse_db(&self) -> PathBuf {
        self.dir.join("warehouse.db")
    }
    pub fn ticketing_db(&self) -> PathBuf {
        self.dir.join("ticketing.db")
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

    /// Opens the warehouse the way the dbt job and the monitors see it.
    pub fn warehouse(&self) -> Result<Connection> {
        let attach =
            std::collections::BTreeMap::from([("TICKETING".to_string(), self.ticketing_db())]);
        crate::warehouse::sqlite::connect(&self.warehouse_db(), &attach)
            .map_err(|e| anyhow::anyhow!("demo warehouse: {e}"))
    }
}

/// A dbt model of the estate: its file, materialization and raw SQL.
pub struct ModelFile {
    pub name: &'static str,
    pub path: &'static str,
    pub materialized: &'static str,
    pub sql: &'static str,
}

pub const MODELS: &[ModelFile] = &[
    ModelFile {
        name: "stg_orders",
        path: "models/staging/stg_orders.sql",
        materialized: "table",
        sql: "select
    order_id,
    event_id,
    seat_section,
    price_cents / 100.0 as price,
    sold_at
from {{ source('ticketing', 'orders') }}
",
    },
    ModelFile {
        name: "int_seat_map",
        path: "models/intermediate/int_seat_map.sql",
        materialized: "table",
        sql: "select
    o.order_id,
    o.event_id,
    o.seat_section,
    m.zone,
    m.capacity
from {{ ref('stg_orders') }} o
left join {{ ref('seat_map') }} m
    on cast(o.seat_section as integer) = m.section_number
",
    },
    ModelFile {
        name: "fct_sales_pacing",
        path: "models/marts/fct_sales_pacing.sql",
        materialized: "table",
        sql: "select
    event_id,
    substr(sold_at, 1, 13) || ':00' as sold_hour,
    count(*) as tickets_sold,
    sum(price) as revenue
from {{ ref('stg_orders') }}
group by 1, 2
",
    },
];

/// Which refs each model reads (what dbt would parse out of the Jinja).
fn depends_on(model: &str) -> Vec<&'static str> {
    match model {
        "stg_orders" => vec!["source.ticketing.ticketing.orders"],
        "int_seat_map" => vec!["model.ticketing.stg_orders", "seed.ticketing.seat_map"],
        "fct_sales_pacing" => vec!["model.ticketing.stg_orders"],
        _ => vec![],
    }
}

const NOTES: &str = r#"# What the team knows that dbt does not.

[[reader]]
id = "dashboard.onsale_pacing"
kind = "dashboard"
name = "On-sale pacing"
reads = ["model.ticketing.fct_sales_pacing"]
owner = "analytics-owner"

[[reader]]
id = "job.hourly_dbt"
kind = "job"
name = "hourly dbt job"
reads = ["model.ticketing.stg_orders", "model.ticketing.int_seat_map", "model.ticketing.fct_sales_pacing"]
owner = "analytics-owner"
schedule = "15 * * * *"

[[owner]]
role = "analytics-owner"
covers = ["model.ticketing.*", "seed.ticketing.*", "TICKETING.*"]
"#;

/// The CDC mover that writes TICKETING.ORDERS, and the setting that decides what it does
/// on a column change the warehouse cannot apply in place.
pub const MOVER_NOTES: &str = r#"
[[writer]]
id = "mover.ticketing_cdc"
name = "ticketing CDC mover"
writes = ["TICKETING.ORDERS"]
owner = "mover-owner"
setting = "onIncompatibleSchemaChange"
value = "backfill"

[[writer.option]]
value = "backfill"
effect = "recreate"

[[writer.option]]
value = "disableBinding"
effect = "pause_table"
note = "someone re-binds it once the change is planned"

[[writer.option]]
value = "disableTask"
effect = "pause_writer"

[[writer.option]]
value = "abort"
effect = "fail"
"#;

/// Builds the estate from nothing under `dir` (replacing any earlier one).
pub fn build(dir: &Path, console_user: Option<&str>) -> Result<Estate> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("cannot clear the old demo estate {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let estate = Estate {
        dir: dir.to_path_buf(),
    };
    build_source(&estate.source_db())?;
    build_warehouse(&estate)?;
    super::super::control::ControlPlane::create(
        estate.control_db(),
        &[
            (MOVER, "ticketing CDC mover", "mover", "running"),
            (HOURLY_JOB, "hourly dbt job", "job", "scheduled"),
        ],
    )?;
    write_project(&estate)?;
    // The 13:15 run of the hourly job: the models exist before the story starts.
    run_models(&estate).map_err(|e| anyhow::anyhow!("building the demo models: {e}"))?;
    super::super::control::ControlPlane::new(estate.control_db()).record_pipeline(
        HOURLY_JOB,
        "success",
        "2026-11-24T13:15:00Z",
    )?;
    std::fs::write(
        estate.dir.join("notes.toml"),
        format!("{NOTES}{MOVER_NOTES}"),
    )?;
    std::fs::write(estate.config(), config_text(console_user))?;
    Ok(estate)
}

/// A small deterministic generator, so every demo run lands the same orders.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }
    pub fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

fn build_source(path: &Path) -> Result<()> {
    let mut conn = Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         CREATE TABLE orders (
            order_id     INTEGER PRIMARY KEY,
            event_id     INTEGER NOT NULL,
            seat_section SMALLINT NOT NULL,
            price_cents  INTEGER NOT NULL,
            sold_at      TEXT NOT NULL
         );",
    )?;
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO orders (order_id, event_id, seat_section, price_cents, sold_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut rng = Lcg::new(7);
        // Sales over the three days before the story, oldest first.
        for id in 1..=INITIAL_ORDERS {
            let minute = id * (3 * 24 * 60) / INITIAL_ORDERS;
            let sold_at = chrono::NaiveDate::from_ymd_opt(2026, 11, 21)
                .expect("valid date")
                .and_hms_opt(14, 0, 0)
                .expect("valid time")
                + chrono::Duration::minutes(minute);
            insert.execute(params![
                id,
                1 + rng.next(3) as i64,
                1 + rng.next(40) as i64,
                4_500 + rng.next(9_000) as i64,
                crate::clock::Timestamp::from_naive(sold_at).to_string()
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn build_warehouse(estate: &Estate) -> Result<()> {
    Connection::open(estate.ticketing_db())?.execute_batch("PRAGMA journal_mode=WAL;")?;
    let conn = Connection::open(estate.warehouse_db())?;
    conn.execute_batch("PRAGMA journal_mode=WAL;")?;
    drop(conn);
    let wh = estate.warehouse()?;
    wh.execute_batch(
        "CREATE TABLE TICKETING.ORDERS (
            order_id     INTEGER,
            event_id     INTEGER,
            seat_section SMALLINT,
            price_cents  INTEGER,
            sold_at      TEXT
         );
         CREATE TABLE main.seat_map (section_number INTEGER, zone TEXT, capacity INTEGER);",
    )?;
    wh.execute(
        "ATTACH DATABASE ?1 AS src",
        [estate.source_db().to_string_lossy()],
    )?;
    wh.execute_batch(
        "INSERT INTO TICKETING.ORDERS SELECT order_id, event_id, seat_section, price_cents, sold_at FROM src.orders;
         DETACH DATABASE src;",
    )?;
    let mut insert = wh.prepare("INSERT INTO main.seat_map VALUES (?1, ?2, ?3)")?;
    for section in 1..=40 {
        let zone = match section {
            1..=10 => "lower bowl",
            11..=30 => "upper bowl",
            _ => "club",
        };
        insert.execute(params![section, zone, 400])?;
    }
    Ok(())
}

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
        "name: ticketing\nversion: '1.0.0'\nprofile: demo\n",
    )?;
    let manifest = manifest();
    std::fs::write(estate.manifest(), serde_json::to_string_pretty(&manifest)?)?;
    Ok(())
}

/// The relation a node builds, as the compiled SQL names it.
fn relation(schema: &str, name: &str) -> String {
    format!("\"{schema}\".\"{name}\"")
}

/// Renders `{{ ref('x') }}` and `{{ source('a', 'b') }}` for the estate.
pub fn compile(raw: &str) -> String {
    let mut sql = raw.to_string();
    for model in MODELS {
        sql = sql.replace(
            &format!("{{{{ ref('{}') }}}}", model.name),
            &relation("main", model.name),
        );
    }
    sql = sql.replace("{{ ref('seat_map') }}", &relation("main", "seat_map"));
    sql.replace(
        "{{ source('ticketing', 'orders') }}",
        &relation("TICKETING", "ORDERS"),
    )
}

/// A dbt v12 manifest of the estate, as `dbt parse` would write it.
fn manifest() -> Value {
    let mut nodes = serde_json::Map::new();
    let mut parent_map = serde_json::Map::new();
    for model in MODELS {
        let id = format!("model.ticketing.{}", model.name);
        let deps = depends_on(model.name);
        nodes.insert(
            id.clone(),
            json!({
                "unique_id": id, "name": model.name, "resource_type": "model",
                "package_name": "ticketing", "path": model.path.trim_start_matches("models/"),
                "original_file_path": model.path, "fqn": ["ticketing", model.name],
                "database": "warehouse", "schema": "main", "alias": model.name,
                "relation_name": format!("\"warehouse\".\"main\".\"{}\"", model.name),
                "config": {"materialized": model.materialized, "meta": {"owner": "analytics-owner"}},
                "raw_code": model.sql, "compiled_code": compile(model.sql), "language": "sql",
                "depends_on": {"macros": [], "nodes": deps},
                "columns": {}, "tags": [], "meta": {}
            }),
        );
        parent_map.insert(id, json!(deps));
    }
    nodes.insert(
        "seed.ticketing.seat_map".into(),
        json!({
            "unique_id": "seed.ticketing.seat_map", "name": "seat_map", "resource_type": "seed",
            "package_name": "ticketing", "path": "seat_map.csv", "original_file_path": "seeds/seat_map.csv",
            "database": "warehouse", "schema": "main", "alias": "seat_map",
            "relation_name": "\"warehouse\".\"main\".\"seat_map\"",
            "config": {"materialized": "seed"}, "depends_on": {"macros": [], "nodes": []}
        }),
    );
    parent_map.insert("seed.ticketing.seat_map".into(), json!([]));
    let test_id = "test.ticketing.not_null_stg_orders_order_id";
    nodes.insert(
        test_id.into(),
        json!({
            "unique_id": test_id, "name": "not_null_stg_orders_order_id", "resource_type": "test",
            "package_name": "ticketing", "database": "warehouse", "schema": "main",
            "config": {"materialized": "test", "severity": "ERROR"},
            "depends_on": {"macros": [], "nodes": ["model.ticketing.stg_orders"]},
            "raw_code": "{{ test_not_null(**_dbt_generic_test_kwargs) }}"
        }),
    );
    parent_map.insert(test_id.into(), json!(["model.ticketing.stg_orders"]));
    parent_map.insert("source.ticketing.ticketing.orders".into(), json!([]));
    let mut child_map = serde_json::Map::new();
    for id in parent_map.keys() {
        child_map.insert(id.clone(), json!([]));
    }
    for (child, parents) in &parent_map {
        for parent in parents.as_array().expect("arrays") {
            let parent = parent.as_str().expect("ids");
            child_map[parent]
                .as_array_mut()
                .expect("arrays")
                .push(json!(child));
        }
    }
    json!({
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "dbt_version": "1.8.0", "generated_at": "2026-11-24T13:00:00Z",
            "project_name": "ticketing", "adapter_type": "sqlite"
        },
        "nodes": nodes,
        "sources": {
            "source.ticketing.ticketing.orders": {
                "unique_id": "source.ticketing.ticketing.orders", "name": "orders",
                "source_name": "ticketing", "resource_type": "source", "package_name": "ticketing",
                "database": "warehouse", "schema": "TICKETING", "identifier": "ORDERS",
                "relation_name": "\"warehouse\".\"TICKETING\".\"ORDERS\"",
                "loaded_at_field": "sold_at",
                "freshness": {"warn_after": {"count": 24, "period": "hour"}},
                "config": {}, "meta": {"owner": "mover-owner"}
            }
        },
        "exposures": {}, "metrics": {}, "semantic_models": {}, "macros": {}, "docs": {},
        "parent_map": parent_map, "child_map": child_map
    })
}

/// The dataward config that watches the estate. The person running the console plays the
/// analytics owner; the mover's owner is someone else, so notes go to them.
fn config_text(console_user: Option<&str>) -> String {
    let people = match console_user {
        Some(user) => {
            format!("[people.{user:?}]\nname = \"you (demo)\"\nroles = [\"analytics-owner\"]\n")
        }
        None => String::new(),
    };
    format!(
        r#"# Written by `dataward demo`: the config that watches the demo estate.

[warehouse.warehouse]
kind = "sqlite"
path = "warehouse.db"
attach = {{ TICKETING = "ticketing.db" }}

[warehouse.ticketing_app]
kind = "sqlite"
path = "source.db"

[[monitor]]
name = "orders_rows"
warehouse = "warehouse"
table = "TICKETING.ORDERS"
checks = ["row_count", "schema"]
every = "5m"
source = {{ warehouse = "ticketing_app", table = "orders" }}

[[monitor]]
name = "source_orders"
warehouse = "ticketing_app"
table = "orders"
checks = ["row_count", "schema"]
every = "5m"

[lineage]
manifest = "dbt/target/manifest.json"
notes = "notes.toml"
project_dir = "dbt"

[orchestrator]
kind = "demo"
path = "control.db"

[verify]
settle = "5m"

{people}
[[domain]]
name = "ticketing"
covers = ["TICKETING.*", "model.ticketing.*", "job.hourly_dbt"]
owners = ["analytics-owner"]
# Unanswered for 45 minutes, a request also goes to the analytics lead.
escalation = ["analytics-lead"]
approval_ttl = "45m"
autonomy = "L2"

[[domain]]
name = "ingestion"
covers = ["mover.*"]
owners = ["mover-owner"]
autonomy = "L1"
"#
    )
}

/// Builds every model of the hourly job from the project files (so an applied diff takes
/// effect), each in its own transaction so a failed model keeps yesterday's table.
/// Returns the models built, or the first failure.
pub fn run_models(estate: &Estate) -> Result<Vec<String>, String> {
    let wh = estate.warehouse().map_err(|e| e.to_string())?;
    let mut built = Vec::new();
    for model in MODELS {
        let path = estate.project_dir().join(model.path);
        let raw = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let sql = crate::warehouse::sqlite::strict_casts(&compile(&raw));
        let build = format!(
            "BEGIN; DROP TABLE IF EXISTS main.\"{name}\"; CREATE TABLE main.\"{name}\" AS {sql}; COMMIT;",
            name = model.name
        );
        if let Err(e) = wh.execute_batch(&build) {
            let _ = wh.execute_batch("ROLLBACK");
            return Err(format!("model {} failed: {e}", model.name));
        }
        built.push(model.name.to_string());
    }
    Ok(built)
}
