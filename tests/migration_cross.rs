//! A wave from PostgreSQL to DuckDB (through DuckDB's ADBC driver) holding the same
//! rows: every kind of column the parity check reads (integers of two widths, a
//! decimal at two scales, a float, booleans, text, a date, timestamps with and without
//! a zone written in another zone, nulls in each) must read the same day hashes on
//! both engines, and a changed value must still show on its day.
//! Skips (with a message) when the PostgreSQL binaries or DuckDB's library are missing,
//! unless DATAWARD_REQUIRE_ALL=1.

#[path = "support/adbc.rs"]
mod adbc_support;
#[path = "support/pg.rs"]
mod pg;

use std::path::Path;

use dataward::config::Config;
use dataward::migration::parity::{read_wave, WaveParity};
use dataward::warehouse::{self, adbc, Warehouse, WarehouseError};

fn duckdb_sql(folder: &Path, file: &Path, statements: &[&str]) {
    let driver = adbc::load(
        folder.join("libduckdb.so").to_str().unwrap(),
        &dataward::warehouse::duckdb::DRIVER,
    )
    .unwrap();
    let database = driver.open(&[("path", file.to_str().unwrap())]).unwrap();
    let mut session = database.connect().unwrap();
    for statement in statements {
        session
            .execute(statement)
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

fn read(config: &Config) -> WaveParity {
    let migration = &config.migration[0];
    let mut open = |name: &str| -> Result<Box<dyn Warehouse + Sync>, WarehouseError> {
        warehouse::open(config, name).map_err(|e| WarehouseError::Query(format!("{e:#}")))
    };
    read_wave(migration, &migration.waves[0], &mut open).unwrap()
}

/// The same 48 rows on both sides, spelled in each engine's SQL: every tenth value
/// null, hours across three UTC days, timestamps written at +05:30.
const ROWS: &str = "generate_series(1, 48)";

#[test]
fn a_wave_from_postgresql_to_duckdb_holding_the_same_rows_reads_equal_day_hashes() {
    let test = "cross-warehouse day hashes";
    let Some(folder) = adbc_support::duckdb_folder(test) else {
        return;
    };
    let Some(pg) = pg::start_or_skip(test) else {
        return;
    };
    let null_every = |expr: &str| format!("CASE WHEN i % 10 = 0 THEN NULL ELSE {expr} END");
    let columns = [
        ("small", "smallint", "int2", "SMALLINT", "i".to_string()),
        (
            "big",
            "bigint",
            "int8",
            "BIGINT",
            "i * 100000000000".to_string(),
        ),
        (
            "price",
            "numeric(10,2)",
            "",
            "DECIMAL(12,4)",
            "i * 1.25".to_string(),
        ),
        (
            "whole",
            "numeric(10,2)",
            "",
            "DECIMAL(18,3)",
            "i * 2".to_string(),
        ),
        (
            "ratio",
            "double precision",
            "",
            "DOUBLE",
            "i / 8.0".to_string(),
        ),
        ("paid", "boolean", "", "BOOLEAN", "i % 3 = 0".to_string()),
        (
            "note",
            "text",
            "",
            "VARCHAR",
            "'n' || i || ' é,\"x'".to_string(),
        ),
        (
            "due",
            "date",
            "",
            "DATE",
            "DATE '2026-03-01' + CAST(i AS INTEGER)".to_string(),
        ),
        (
            "at_local",
            "timestamp",
            "",
            "TIMESTAMP",
            "TIMESTAMP '2026-03-01 00:00:00' + i * INTERVAL '1 hour'".to_string(),
        ),
    ];
    let zoned = "TIMESTAMPTZ '2026-03-01 05:30:00+05:30' + i * INTERVAL '1 hour'";
    let mut pg_select = vec![];
    let mut duck_select = vec![];
    for (name, pg_type, _, duck_type, expr) in &columns {
        let expr = null_every(expr);
        pg_select.push(format!("({expr})::{pg_type} AS {name}"));
        duck_select.push(format!("CAST({expr} AS {duck_type}) AS {name}"));
    }
    pg_select.push(format!("({zoned}) AS ordered_at"));
    duck_select.push(format!("({zoned}) AS ordered_at"));
    pg.execute(&format!(
        "SET TIME ZONE 'Asia/Kolkata';
         CREATE SCHEMA legacy;
         CREATE TABLE legacy.orders AS SELECT {} FROM {ROWS} AS t(i);",
        pg_select.join(", ")
    ));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new_side.duckdb");
    let duck_create = format!(
        "CREATE TABLE core.orders AS SELECT {} FROM range(1, 49) AS t(i)",
        duck_select.join(", ")
    );
    duckdb_sql(&folder, &file, &["CREATE SCHEMA core", &duck_create]);
    std::env::set_var("DW_CROSS_TEST_PG_URL", &pg.url);
    let config_text = format!(
        r#"
[warehouse.pg]
kind = "postgres"
url_env = "DW_CROSS_TEST_PG_URL"

[warehouse.duck]
kind = "duckdb"
path = "{}"
driver = "{}"

[[domain]]
name = "sales"
covers = ["legacy.*", "core.*"]
owners = ["sales-owner"]

[[migration]]
name = "to-duck"
domain = "sales"
warehouse = "pg"

[[migration.waves]]
name = "first"
tables = [{{ old = "legacy.orders", new = "core.orders", new_warehouse = "duck", day_column = "ordered_at" }}]
"#,
        file.display(),
        folder.join("libduckdb.so").display()
    );
    let path = dir.path().join("dataward.toml");
    std::fs::write(&path, &config_text).unwrap();
    let config = Config::parse(&config_text, &path).unwrap();

    let parity = read(&config);
    let table = &parity.tables[0];
    assert_eq!(table.old.rows, 48);
    assert_eq!(table.old.days.len(), 3, "{:?}", table.old.days);
    assert_eq!(table.old.days, table.new.days, "{:#?}", table.differences);
    assert_eq!(table.differences, Vec::<String>::new());
    assert!(parity.holds());

    // One value changed on the new side shows on its day, and only there.
    duckdb_sql(
        &folder,
        &file,
        &["UPDATE core.orders SET note = 'changed' WHERE small = 5"],
    );
    let parity = read(&config);
    let table = &parity.tables[0];
    let differing: Vec<_> = (table.old.days.iter().zip(&table.new.days))
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.day.clone())
        .collect();
    assert_eq!(
        differing,
        vec![Some("2026-03-01".to_string())],
        "{table:#?}"
    );
    assert!(!parity.holds());
}

/// Row `i` of the estate as SQL literals, the same text for every engine: every
/// tenth value null.
fn row_literals(i: u32) -> String {
    let null_every = |value: String| match i % 10 {
        0 => "NULL".to_string(),
        _ => value,
    };
    let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap() + chrono::Days::new(i.into());
    let values = [
        null_every(i.to_string()),
        null_every((u64::from(i) * 100_000_000_000).to_string()),
        null_every(format!("{}", f64::from(i) * 1.25)),
        null_every((i * 2).to_string()),
        null_every(format!("{}", f64::from(i) / 8.0)),
        null_every(i.is_multiple_of(3).to_string().to_uppercase()),
        null_every(format!("'n{i} é,\"x'")),
        null_every(format!("'{day}'")),
        null_every(format!("'2026-03-01 {:02}:00:00'", i % 24)),
        format!("'2026-03-{:02} {:02}:30:00+05:30'", 1 + i / 24, i % 24),
    ];
    format!("({})", values.join(", "))
}

#[test]
fn postgresql_and_snowflake_holding_the_same_rows_read_the_same_print() {
    let test = "PostgreSQL and Snowflake prints";
    let Some(venv) = adbc_support::snowflake_venv(test) else {
        return;
    };
    let Some(pg) = pg::start_or_skip(test) else {
        return;
    };
    let rows: Vec<String> = (1..=48).map(row_literals).collect();
    pg.execute(&format!(
        "CREATE SCHEMA legacy;
         CREATE TABLE legacy.orders (small smallint, big bigint, price numeric(10,2),
             whole numeric(10,2), ratio double precision, paid boolean, note text, due date,
             at_local timestamp, ordered_at timestamptz);
         INSERT INTO legacy.orders VALUES {};",
        rows.join(", ")
    ));
    let server = adbc_support::Fakesnow::start(&venv.fakesnow);
    let port = server.port.to_string();
    {
        let driver = adbc::load(
            venv.library.to_str().unwrap(),
            &dataward::warehouse::snowflake::DRIVER,
        )
        .unwrap();
        let database = driver
            .open(&[
                ("adbc.snowflake.sql.account", "fakesnow"),
                ("adbc.snowflake.sql.uri.host", "127.0.0.1"),
                ("adbc.snowflake.sql.uri.port", &port),
                ("adbc.snowflake.sql.uri.protocol", "http"),
                ("adbc.snowflake.sql.db", "DW"),
                ("username", "fake"),
                ("password", "snow"),
                ("adbc.snowflake.sql.client_option.disable_telemetry", "true"),
                ("adbc.snowflake.sql.client_option.login_timeout", "5s"),
            ])
            .unwrap();
        let mut session = database.connect().unwrap();
        for statement in [
            "CREATE DATABASE IF NOT EXISTS DW".to_string(),
            "CREATE SCHEMA IF NOT EXISTS DW.CORE".to_string(),
            "CREATE TABLE DW.CORE.ORDERS (SMALL NUMBER(38,0), BIG NUMBER(38,0), \
             PRICE NUMBER(12,4), WHOLE NUMBER(18,3), RATIO FLOAT, PAID BOOLEAN, NOTE VARCHAR, \
             DUE DATE, AT_LOCAL TIMESTAMP_NTZ, ORDERED_AT TIMESTAMP_TZ)"
                .to_string(),
            format!("INSERT INTO DW.CORE.ORDERS VALUES {}", rows.join(", ")),
        ] {
            session
                .execute(&statement)
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
    }
    std::env::set_var("DW_CROSS_TEST_SNOW_PG_URL", &pg.url);
    std::env::set_var("DW_CROSS_TEST_SNOW_PASSWORD", "snow");
    let dir = tempfile::tempdir().unwrap();
    // Snowflake folds the names to upper case: `ordered_at` finds `ORDERED_AT`, and the
    // columns of both sides are matched by name whatever its case.
    let config_text = format!(
        r#"
[warehouse.pg]
kind = "postgres"
url_env = "DW_CROSS_TEST_SNOW_PG_URL"

[warehouse.snow]
kind = "snowflake"
driver = "{}"
account = "fakesnow"
host = "127.0.0.1"
port = {port}
protocol = "http"
database = "DW"
user = "fake"
password_env = "DW_CROSS_TEST_SNOW_PASSWORD"

[[domain]]
name = "sales"
covers = ["legacy.*", "core.*"]
owners = ["sales-owner"]

[[migration]]
name = "to-snow"
domain = "sales"
warehouse = "pg"

[[migration.waves]]
name = "first"
tables = [{{ old = "legacy.orders", new = "core.orders", new_warehouse = "snow", day_column = "ordered_at" }}]
"#,
        venv.library.display()
    );
    let path = dir.path().join("dataward.toml");
    std::fs::write(&path, &config_text).unwrap();
    let config = Config::parse(&config_text, &path).unwrap();
    let parity = read(&config);
    let table = &parity.tables[0];
    assert_eq!(table.old.rows, 48);
    assert_eq!(table.new.rows, 48);
    assert!(table.old.days.len() > 1, "by day: {table:#?}");
    assert_eq!(table.old.days, table.new.days, "{table:#?}");
    assert_eq!(table.differences, Vec::<String>::new(), "{table:#?}");
}
