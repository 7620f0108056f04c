//! DuckDB through its own ADBC driver (DuckDB's shared library, loaded at run time), as
//! a user runs it: a DuckDB file with history, `dataward check` (the binary) on it.
//! Needs the library `.ci/duckdb.sh` installs (/opt/dataward/duckdb, or the folder in
//! DATAWARD_DUCKDB_DIR): without it each test says so and passes, unless
//! DATAWARD_REQUIRE_ALL=1, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dataward::warehouse::adbc;
use serde_json::Value;

/// The folder holding libduckdb.so and its manifest duckdb.toml, when installed.
fn driver_folder() -> Option<PathBuf> {
    let folder = PathBuf::from(
        std::env::var("DATAWARD_DUCKDB_DIR").unwrap_or_else(|_| "/opt/dataward/duckdb".into()),
    );
    if folder.join("libduckdb.so").is_file() && folder.join("duckdb.toml").is_file() {
        return Some(folder);
    }
    let missing = format!(
        "DuckDB's library is not in {} (run .ci/duckdb.sh)",
        folder.display()
    );
    if std::env::var("DATAWARD_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{missing}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("skipped: {missing}");
    None
}

/// Runs SQL statements on a DuckDB file through the same driver, then closes it (a
/// DuckDB file is written by one process at a time).
fn sql(folder: &Path, file: &Path, statements: &[&str]) {
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

fn dataward(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command
        .args(args)
        .env_remove("ADBC_DRIVER_PATH")
        .env_remove("XDG_CONFIG_HOME");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run dataward")
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// `TIMESTAMP '...'` for now less `hours`.
fn hours_ago(hours: i64) -> String {
    let at = chrono::Utc::now() - chrono::TimeDelta::hours(hours);
    format!("TIMESTAMP '{}'", at.format("%Y-%m-%d %H:%M:%S"))
}

/// A DuckDB file with tables in schema analytics, each loaded hourly for the last five
/// weeks, every tenth row's kind null.
fn estate(folder: &Path, dir: &Path, tables: &[&str]) -> PathBuf {
    let file = dir.join("wh.duckdb");
    let mut statements = vec!["CREATE SCHEMA analytics".to_string()];
    for table in tables {
        statements.push(format!(
            "CREATE TABLE analytics.{table} AS
             SELECT n AS id, CASE WHEN n % 10 = 0 THEN NULL ELSE 'click' END AS kind,
                    CAST(n * 3 AS VARCHAR) AS amount,
                    {now} - n * INTERVAL 1 HOUR AS \"at\"
             FROM range(1, 841) AS t(n)",
            now = hours_ago(0)
        ));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    sql(folder, &file, &statements);
    file
}

fn write_config(dir: &Path, extra_warehouse: &str, monitor: &str) -> PathBuf {
    let config = dir.join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.duck]\nkind = \"duckdb\"\npath = \"wh.duckdb\"\n{extra_warehouse}\n\
             [[monitor]]\nwarehouse = \"duck\"\n{monitor}\n"
        ),
    )
    .unwrap();
    config
}

fn check_once(dir: &Path, config: &Path, env: &[(&str, &str)]) -> Output {
    let data = dir.join("data");
    dataward(
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--json",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        env,
    )
}

#[test]
fn every_check_runs_on_a_duckdb_file() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&folder, dir.path(), &["events"]);
    let config = write_config(
        dir.path(),
        "",
        "table = \"analytics.events\"\n\
         checks = [\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"]\n\
         timestamp_column = \"at\"\nnull_window = \"10d\"",
    );
    let folder_text = folder.to_str().unwrap();
    let out = check_once(dir.path(), &config, &[("ADBC_DRIVER_PATH", folder_text)]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 8, "{lines:#?}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "{line}");
    }
    let kind = lines.iter().find(|l| l["column"] == "kind").unwrap();
    assert!(
        (kind["observed"].as_f64().unwrap() - 0.1).abs() < 0.01,
        "{kind}"
    );
    assert_eq!(out.status.code(), Some(0), "{lines:#?}");
}

fn monitor(table: &str, checks: &str) -> String {
    format!(
        "table = \"analytics.{table}\"\nchecks = [{checks}]\n\
         timestamp_column = \"at\"\nnull_window = \"10d\"\n"
    )
}

#[test]
fn a_breach_of_each_kind_and_a_schema_change_on_duckdb() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = estate(
        &folder,
        dir.path(),
        &["shrunk", "nulled", "stopped", "thinned", "altered"],
    );
    let monitors = [
        monitor("shrunk", "\"row_count\""),
        monitor("nulled", "\"null_rate\""),
        monitor("stopped", "\"freshness\""),
        monitor("thinned", "\"volume\""),
        monitor("altered", "\"schema\""),
    ]
    .join("\n[[monitor]]\nwarehouse = \"duck\"\n");
    let driver = format!("driver = \"{}\"", folder.join("libduckdb.so").display());
    let config = write_config(dir.path(), &driver, &monitors);
    // Three clean polls: the baselines that learn from polls have their history.
    for poll in 0..3 {
        let out = check_once(dir.path(), &config, &[]);
        let lines = json_lines(&out);
        assert!(
            lines.iter().all(|l| l["health"] == "ok"
                && ["ok", "learning"].contains(&l["verdict"].as_str().unwrap())),
            "poll {poll}: {lines:#?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "poll {poll}: {lines:#?}");
    }
    let yesterday = (chrono::Utc::now() - chrono::TimeDelta::days(1)).date_naive();
    sql(
        &folder,
        &file,
        &[
            // Half the rows gone.
            "DELETE FROM analytics.shrunk WHERE id % 2 = 0",
            // A load of 200 rows, the kind of each null.
            &format!(
                "INSERT INTO analytics.nulled SELECT 1000 + n, NULL, '1', {} FROM range(200) AS t(n)",
                hours_ago(0)
            ),
            // Nothing loaded for the last two days of an hourly table.
            &format!("DELETE FROM analytics.stopped WHERE \"at\" > {}", hours_ago(48)),
            // Yesterday (UTC) lost most of its rows.
            &format!(
                "DELETE FROM analytics.thinned WHERE CAST(\"at\" AS DATE) = DATE '{yesterday}' AND id % 5 <> 0"
            ),
            "ALTER TABLE analytics.altered ALTER amount TYPE BIGINT",
            "ALTER TABLE analytics.altered ADD COLUMN note VARCHAR",
        ],
    );
    let out = check_once(dir.path(), &config, &[]);
    let lines = json_lines(&out);
    let verdict = |table: &str, check: &str, column: Option<&str>| {
        lines
            .iter()
            .find(|l| {
                l["table"] == format!("analytics.{table}")
                    && l["check"] == check
                    && column.is_none_or(|c| l["column"] == c)
            })
            .unwrap_or_else(|| panic!("no {check} of {table}: {lines:#?}"))["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(verdict("shrunk", "row_count", None), "low", "{lines:#?}");
    assert_eq!(
        verdict("nulled", "null_rate", Some("kind")),
        "high",
        "{lines:#?}"
    );
    assert_eq!(
        verdict("nulled", "null_rate", Some("id")),
        "ok",
        "{lines:#?}"
    );
    assert_eq!(verdict("stopped", "freshness", None), "late", "{lines:#?}");
    assert_eq!(verdict("thinned", "volume", None), "low", "{lines:#?}");
    assert_eq!(verdict("altered", "schema", None), "changed", "{lines:#?}");
    // The column added is counted.
    let schema = lines.iter().find(|l| l["check"] == "schema").unwrap();
    assert_eq!(schema["observed"], 5.0, "{schema}");
    assert_eq!(out.status.code(), Some(1), "{lines:#?}");
}

#[test]
fn a_missing_driver_says_where_it_looked_and_what_to_install() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&folder, dir.path(), &["events"]);
    let config = write_config(
        dir.path(),
        "",
        "table = \"analytics.events\"\nchecks = [\"row_count\"]",
    );
    let empty = dir.path().join("no-drivers");
    std::fs::create_dir(&empty).unwrap();
    let home = dir.path().join("home");
    let out = check_once(
        dir.path(),
        &config,
        &[
            ("ADBC_DRIVER_PATH", empty.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
        ],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for needed in [
        empty.display().to_string(),
        home.join(".config/adbc/drivers").display().to_string(),
        "/etc/adbc/drivers".to_string(),
        "dbc install duckdb".to_string(),
        "duckdb.toml".to_string(),
    ] {
        assert!(said.contains(&needed), "{needed:?} not in: {said}");
    }
    assert_ne!(out.status.code(), Some(0), "{said}");

    // A path in the config that is not there: named, with what to install.
    let config = write_config(
        dir.path(),
        "driver = \"lib/libduckdb.so\"",
        "table = \"analytics.events\"\nchecks = [\"row_count\"]",
    );
    let out = check_once(dir.path(), &config, &[]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let expected = dir.path().join("lib/libduckdb.so");
    assert!(
        said.contains(&expected.display().to_string()) && said.contains("dbc install duckdb"),
        "{said}"
    );
}
