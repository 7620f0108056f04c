//! An incremental model that is not microbatch, with the window it re-reads set by a
//! filter in its SQL, on a real SQLite warehouse: a day reloaded upstream after it left
//! that window is a lookback gap, and its backfill is a full refresh that says why.

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::config::Config;
use dataward::engine::api::{IncidentView, ProposalBody, ProposalKind};
use dataward::engine::Engine;
use rusqlite::Connection;

/// The filter the model applies on incremental runs: one day before its newest row.
const FILTER: &str = "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'";

/// Rows a day, one every 432 seconds.
const PER_DAY: i64 = 200;

/// The day that goes short: a Wednesday.
fn short_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 25).unwrap()
}

fn at(day: NaiveDate, hour: u32) -> NaiveDateTime {
    day.and_hms_opt(hour, 0, 0).unwrap()
}

/// Three rows in five of the short day are missing from the load that went wrong.
fn lost(t: NaiveDateTime) -> bool {
    let seq = (t - t.date().and_hms_opt(0, 0, 0).unwrap()).num_seconds() / (86_400 / PER_DAY);
    t.date() == short_day() && seq % 5 >= 2
}

/// Loads a row every 432 seconds in `[from, to)` into `table`, for each time `keep` takes.
fn load(
    conn: &mut Connection,
    table: &str,
    from: NaiveDateTime,
    to: NaiveDateTime,
    keep: impl Fn(NaiveDateTime) -> bool,
) {
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx
            .prepare(&format!(
                "INSERT INTO {table} (id, loaded_at) VALUES (?1, ?2)"
            ))
            .unwrap();
        let mut t = from;
        while t < to {
            if keep(t) {
                insert
                    .execute((
                        t.and_utc().timestamp(),
                        t.format("%Y-%m-%d %H:%M:%S").to_string(),
                    ))
                    .unwrap();
            }
            t += TimeDelta::seconds(86_400 / PER_DAY);
        }
    }
    tx.commit().unwrap();
}

/// The manifest as dbt 1.9 writes it (v12), cut to what the estate holds: the raw
/// table as a source and the incremental model built from it, with its SQL as written.
fn manifest(model_sql: &str) -> String {
    serde_json::json!({
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "dbt_version": "1.9.1",
            "adapter_type": "sqlite"
        },
        "nodes": {
            "model.shop.fct_events": {
                "database": "wh",
                "schema": "analytics",
                "name": "fct_events",
                "resource_type": "model",
                "package_name": "shop",
                "path": "marts/fct_events.sql",
                "original_file_path": "models/marts/fct_events.sql",
                "unique_id": "model.shop.fct_events",
                "fqn": ["shop", "marts", "fct_events"],
                "alias": "fct_events",
                "config": {
                    "enabled": true,
                    "materialized": "incremental",
                    "incremental_strategy": "delete+insert",
                    "unique_key": "id",
                    "on_schema_change": "ignore",
                    "batch_size": null,
                    "lookback": 1,
                    "begin": null,
                    "event_time": null,
                    "meta": {"owner": "analytics-owner"}
                },
                "unrendered_config": {
                    "materialized": "incremental",
                    "incremental_strategy": "delete+insert",
                    "unique_key": "id"
                },
                "relation_name": "\"wh\".\"analytics\".\"fct_events\"",
                "raw_code": model_sql,
                "language": "sql",
                "refs": [],
                "sources": [["raw", "events"]],
                "depends_on": {"macros": ["macro.dbt.is_incremental"], "nodes": ["source.shop.raw.events"]}
            }
        },
        "sources": {
            "source.shop.raw.events": {
                "database": "wh",
                "schema": "raw",
                "name": "events",
                "resource_type": "source",
                "package_name": "shop",
                "source_name": "raw",
                "identifier": "events",
                "unique_id": "source.shop.raw.events",
                "relation_name": "\"wh\".\"raw\".\"events\"",
                "config": {"enabled": true, "event_time": null}
            }
        },
        "exposures": {},
        "metrics": {},
        "parent_map": {
            "model.shop.fct_events": ["source.shop.raw.events"],
            "source.shop.raw.events": []
        },
        "child_map": {
            "source.shop.raw.events": ["model.shop.fct_events"],
            "model.shop.fct_events": []
        }
    })
    .to_string()
}

const NOTES: &str = r#"
[[reader]]
id = "job.nightly_dbt"
kind = "job"
name = "nightly dbt"
reads = ["model.shop.fct_events"]
owner = "analytics-owner"
schedule = "0 1 * * *"
"#;

const CONFIG: &str = r#"
[warehouse.wh]
kind = "sqlite"
path = "wh.db"
attach = { raw = "raw.db", analytics = "analytics.db" }

[[monitor]]
name = "raw_events"
warehouse = "wh"
table = "raw.events"
checks = ["volume"]
every = "5m"
timestamp_column = "loaded_at"

[[monitor]]
name = "fct_events"
warehouse = "wh"
table = "analytics.fct_events"
checks = ["volume"]
every = "5m"
timestamp_column = "loaded_at"

[lineage]
manifest = "dbt/target/manifest.json"
notes = "notes.toml"
project_dir = "dbt"

[verify]
settle = "5m"

[people.analyst]
name = "Analyst"
roles = ["analytics-owner"]

[[domain]]
name = "analytics"
covers = ["analytics.*", "raw.*", "model.shop.*", "source.shop.*", "job.nightly_dbt"]
owners = ["analytics-owner"]
autonomy = "L2"
"#;

fn incident(engine: &Engine) -> IncidentView {
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    incidents[0].clone()
}

#[test]
fn a_day_reloaded_upstream_beyond_an_incremental_filter_is_a_gap_and_its_backfill_a_full_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let model_sql = format!(
        "{{{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='id') }}}}\n\n\
         select id, loaded_at\nfrom {{{{ source('raw', 'events') }}}}\n\n\
         {{% if is_incremental() %}}\n  where {FILTER}\n{{% endif %}}\n"
    );
    std::fs::create_dir_all(root.join("dbt/target")).unwrap();
    std::fs::create_dir_all(root.join("dbt/models/marts")).unwrap();
    std::fs::write(root.join("dbt/models/marts/fct_events.sql"), &model_sql).unwrap();
    std::fs::write(root.join("dbt/target/manifest.json"), manifest(&model_sql)).unwrap();
    std::fs::write(root.join("notes.toml"), NOTES).unwrap();
    std::fs::write(root.join("dataward.toml"), CONFIG).unwrap();
    Connection::open(root.join("wh.db")).unwrap();
    let mut raw = Connection::open(root.join("raw.db")).unwrap();
    let mut fct = Connection::open(root.join("analytics.db")).unwrap();
    raw.execute_batch("CREATE TABLE events (id INTEGER PRIMARY KEY, loaded_at TEXT NOT NULL)")
        .unwrap();
    fct.execute_batch("CREATE TABLE fct_events (id INTEGER PRIMARY KEY, loaded_at TEXT NOT NULL)")
        .unwrap();

    // Ten weeks of history, and Thursday up to 03:00. Wednesday's load went wrong:
    // raw holds 40% of it, and so does the model built from it.
    let wednesday = short_day();
    let thursday = wednesday.succ_opt().unwrap();
    let friday = thursday.succ_opt().unwrap();
    let history = at(wednesday - TimeDelta::days(70), 0);
    load(&mut raw, "events", history, at(thursday, 3), |t| !lost(t));
    load(&mut fct, "fct_events", history, at(thursday, 3), |t| {
        !lost(t)
    });

    let config = Config::load(&root.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&root.join("data/dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    engine.tick(at(thursday, 3)).unwrap();
    let opened = incident(&engine);
    assert_eq!(opened.table, "raw.events", "{opened:#?}");
    assert!(
        opened
            .symptoms
            .iter()
            .any(|s| s.table == "analytics.fct_events" && s.check == "volume"),
        "{:#?}",
        opened.symptoms
    );

    // Thursday night Wednesday is reloaded into raw. The model's runs re-read only a
    // day before its newest row, so its Wednesday stays as it was.
    load(&mut raw, "events", at(wednesday, 0), at(thursday, 0), lost);
    load(&mut raw, "events", at(thursday, 3), at(friday, 3), |_| true);
    load(
        &mut fct,
        "fct_events",
        at(thursday, 3),
        at(friday, 3),
        |_| true,
    );
    engine.tick(at(friday, 3)).unwrap();
    engine.tick(at(friday, 3) + TimeDelta::minutes(1)).unwrap();

    let gap = incident(&engine);
    let cause = gap.cause.as_deref().unwrap_or_default();
    assert!(
        cause.starts_with(&format!("fct_events is still short on {wednesday} (")),
        "{cause}\n{:#?}",
        gap.evidence
    );
    assert!(cause.contains("while raw.events holds 200 rows"), "{cause}");
    assert!(
        cause.ends_with(&format!(
            "fct_events is incremental and its filter `{FILTER}` reaches back 1 day from the newest row it holds, \
             so each run re-reads only the last 2 days and {wednesday}, 2 days back, is never rebuilt"
        )),
        "{cause}"
    );
    assert!(
        gap.evidence.iter().any(|e| e
            == &format!(
                "fct_events is incremental, not microbatch: under `is_incremental()` its SQL filters `{FILTER}`"
            )),
        "{:#?}",
        gap.evidence
    );

    // dbt cannot rebuild one day of it: the backfill is a full refresh, and says so.
    let backfill = gap
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Backfill)
        .unwrap_or_else(|| panic!("{:#?}", gap.proposals));
    let ProposalBody::Backfill {
        job,
        command,
        tables,
    } = &backfill.body
    else {
        panic!("{backfill:?}");
    };
    assert_eq!(command, "dbt build --select fct_events+ --full-refresh");
    assert_eq!(job, "job.nightly_dbt");
    assert_eq!(tables, &vec!["analytics.fct_events".to_string()]);
    assert!(
        backfill.title.ends_with(
            "fct_events is incremental with a filter in its SQL, not microbatch, so dbt cannot rebuild one day of it; \
             the whole table is rebuilt"
        ),
        "{}",
        backfill.title
    );
    assert!(
        backfill.undo.contains("a full refresh rebuilds them whole"),
        "{}",
        backfill.undo
    );

    // And the filter widened so the next run re-reads Wednesday, in the model's file.
    let diff = gap
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .unwrap_or_else(|| panic!("{:#?}", gap.proposals));
    assert_eq!(
        diff.title,
        format!("Widen fct_events's incremental filter from 1 to 3 days: the next run re-reads {wednesday}")
    );
    let ProposalBody::Diff { file, old, new } = &diff.body else {
        panic!("{diff:?}");
    };
    assert_eq!(file, "models/marts/fct_events.sql");
    assert_eq!(old, &model_sql);
    assert_eq!(
        new,
        &model_sql.replace("interval '1 day'", "interval '3 day'")
    );
}
