//! Snowflake through the ADBC Snowflake driver (the Go driver's shared library, from
//! PyPI's adbc-driver-snowflake), against fakesnow's server (`fakesnow -s`: Snowflake's
//! HTTP protocol on loopback, DuckDB underneath), as a user runs it: tables with
//! history built through the driver, then `dataward check` (the binary) on them.
//! Needs the venv `.ci/snowflake.sh` installs (/opt/dataward/snowflake, or the folder in
//! SNOWFLAKE_VENV): without it each test says so and passes, unless
//! DATAWARD_REQUIRE_ALL=1, where it fails.
//!
//! fakesnow cannot EXPLAIN: plain `EXPLAIN` ends in an HTTP 500 the driver retries for
//! half a minute, and `EXPLAIN USING TEXT` (what dataward sends) is a syntax error to
//! DuckDB underneath; doctor's answer to that is tested in tests/init_snowflake.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dataward::warehouse::snowflake::{Login, Settings, SnowflakeWarehouse};
use dataward::warehouse::{
    adbc, BackfillScope, MinuteWindow, Relation, TableScan, Warehouse, WarehouseError,
};
use serde_json::Value;

#[path = "support/adbc.rs"]
mod adbc_support;
use adbc_support::{every_json_line, json_lines};

/// A fakesnow server of this test's own and the driver's library.
struct Fakesnow {
    server: adbc_support::Fakesnow,
    port: u16,
    library: PathBuf,
}

fn fakesnow() -> Option<Fakesnow> {
    let venv = adbc_support::snowflake_venv("snowflake")?;
    let server = adbc_support::Fakesnow::start(&venv.fakesnow);
    Some(Fakesnow {
        port: server.port,
        server,
        library: venv.library,
    })
}

const PASSWORD_ENV: &str = "DATAWARD_TEST_SNOWFLAKE_PASSWORD";

impl Fakesnow {
    fn settings(&self) -> Settings {
        Settings {
            name: "snow".into(),
            account: "fakesnow".into(),
            host: Some("127.0.0.1".into()),
            port: Some(self.port),
            protocol: Some("http".into()),
            database: "DW".into(),
            schema: None,
            warehouse: None,
            role: None,
            user: "fake".into(),
            login: Some(Login::Password {
                env: PASSWORD_ENV.into(),
            }),
        }
    }

    /// Runs SQL statements through the driver, as the loads would.
    fn sql(&self, statements: &[&str]) {
        let driver = adbc::load(
            self.library.to_str().unwrap(),
            &dataward::warehouse::snowflake::DRIVER,
        )
        .unwrap();
        let port = self.port.to_string();
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
        for statement in statements {
            session
                .execute(statement)
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
    }

    fn warehouse(&self) -> SnowflakeWarehouse {
        std::env::set_var(PASSWORD_ENV, "snow");
        SnowflakeWarehouse::new(self.settings(), Some(self.library.display().to_string()))
    }

    fn config(&self, dir: &Path, monitors: &[String]) -> PathBuf {
        let config = dir.join("dataward.toml");
        let mut text = format!(
            "[warehouse.snow]\nkind = \"snowflake\"\ndriver = \"{}\"\naccount = \"fakesnow\"\n\
             host = \"127.0.0.1\"\nport = {}\nprotocol = \"http\"\ndatabase = \"DW\"\n\
             user = \"fake\"\npassword_env = \"{PASSWORD_ENV}\"\n",
            self.library.display(),
            self.port
        );
        for monitor in monitors {
            text.push_str(&format!("\n[[monitor]]\nwarehouse = \"snow\"\n{monitor}"));
        }
        std::fs::write(&config, text).unwrap();
        config
    }
}

/// View ANALYTICS.ENDLESS: EVENTS joined with itself four times, half a trillion rows
/// that fakesnow (DuckDB underneath) counts for as long as it is let.
fn endless_view(server: &Fakesnow) {
    server.sql(&[
        "CREATE VIEW DW.ANALYTICS.ENDLESS AS SELECT A.ID * B.ID * C.ID * D.ID AS X \
         FROM DW.ANALYTICS.EVENTS A, DW.ANALYTICS.EVENTS B, DW.ANALYTICS.EVENTS C, \
         DW.ANALYTICS.EVENTS D",
    ]);
}

/// A timestamp literal for now less `hours`.
fn hours_ago(hours: i64) -> String {
    let at = chrono::Utc::now() - chrono::TimeDelta::hours(hours);
    format!("'{}'::TIMESTAMP_NTZ", at.format("%Y-%m-%d %H:%M:%S"))
}

/// Tables in schema ANALYTICS, each loaded hourly for the last five weeks (840 rows),
/// every tenth row's kind null.
fn estate(server: &Fakesnow, tables: &[&str]) {
    let mut statements = vec![
        "CREATE DATABASE IF NOT EXISTS DW".to_string(),
        "CREATE SCHEMA IF NOT EXISTS DW.ANALYTICS".to_string(),
    ];
    for table in tables {
        statements.push(format!(
            "CREATE TABLE DW.ANALYTICS.{table} (ID NUMBER(38,0), KIND VARCHAR, AMOUNT VARCHAR, LOADED_AT TIMESTAMP_NTZ)"
        ));
        let rows: Vec<String> = (1..=840)
            .map(|n| {
                let kind = if n % 10 == 0 { "NULL" } else { "'click'" };
                format!("({n}, {kind}, '{}', {})", n * 3, hours_ago(n))
            })
            .collect();
        statements.push(format!(
            "INSERT INTO DW.ANALYTICS.{table} VALUES {}",
            rows.join(", ")
        ));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    server.sql(&statements);
}

fn monitor(table: &str, checks: &str) -> String {
    format!(
        "table = \"analytics.{table}\"\nchecks = [{checks}]\n\
         timestamp_column = \"loaded_at\"\nnull_window = \"10d\"\n"
    )
}

/// The config at `path` with `settings` (`key = value` lines) added to the warehouse.
fn with_settings(path: &Path, settings: &str) {
    let text = std::fs::read_to_string(path).unwrap().replace(
        "[warehouse.snow]\n",
        &format!("[warehouse.snow]\n{settings}\n"),
    );
    std::fs::write(path, text).unwrap();
}

fn check_once(dir: &Path, config: &Path) -> Output {
    let data = dir.join("data");
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--json",
        ])
        .args(["--data-dir", data.to_str().unwrap()])
        .env(PASSWORD_ENV, "snow")
        .output()
        .expect("run dataward")
}

/// The time of day the scans' days are split at: 09:41, so rows fall either side.
const CUTOFF: i64 = 9 * 3600 + 41 * 60;

#[test]
fn every_check_runs_on_snowflake() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&server, &["events"]);
    let config = server.config(
        dir.path(),
        &[monitor(
            "events",
            "\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"",
        )],
    );
    let out = check_once(dir.path(), &config);
    let lines = json_lines(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(lines.len(), 8, "{lines:#?}\n{stderr}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "{line}\n{stderr}");
    }
    let kind = lines.iter().find(|l| l["column"] == "KIND").unwrap();
    assert!(
        (kind["observed"].as_f64().unwrap() - 0.1).abs() < 0.01,
        "{kind}"
    );
    let rows = lines.iter().find(|l| l["check"] == "row_count").unwrap();
    assert_eq!(rows["observed"], 840.0, "{rows}");
    let schema = lines.iter().find(|l| l["check"] == "schema").unwrap();
    assert_eq!(schema["observed"], 4.0, "{schema}");
    assert_eq!(out.status.code(), Some(0), "{lines:#?}");
}

#[test]
fn a_breach_of_each_kind_and_a_schema_change_on_snowflake() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(
        &server,
        &["shrunk", "nulled", "stopped", "thinned", "altered"],
    );
    let config = server.config(
        dir.path(),
        &[
            monitor("shrunk", "\"row_count\""),
            monitor("nulled", "\"null_rate\""),
            monitor("stopped", "\"freshness\""),
            monitor("thinned", "\"volume\""),
            monitor("altered", "\"schema\""),
        ],
    );
    // Three clean polls: the baselines that learn from polls have their history.
    for poll in 0..3 {
        let out = check_once(dir.path(), &config);
        let lines = json_lines(&out);
        assert!(
            lines.len() == 8
                && lines.iter().all(|l| l["health"] == "ok"
                    && ["ok", "learning"].contains(&l["verdict"].as_str().unwrap())),
            "poll {poll}: {lines:#?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "poll {poll}: {lines:#?}");
    }
    let yesterday = (chrono::Utc::now() - chrono::TimeDelta::days(1)).date_naive();
    let nulls: Vec<String> = (0..200)
        .map(|n| format!("({}, NULL, '1', {})", 1000 + n, hours_ago(0)))
        .collect();
    server.sql(&[
        // Half the rows gone.
        "DELETE FROM DW.ANALYTICS.SHRUNK WHERE MOD(ID, 2) = 0",
        // A load of 200 rows, the kind of each null.
        &format!("INSERT INTO DW.ANALYTICS.NULLED VALUES {}", nulls.join(", ")),
        // Nothing loaded for the last two days of an hourly table.
        &format!(
            "DELETE FROM DW.ANALYTICS.STOPPED WHERE LOADED_AT > {}",
            hours_ago(48)
        ),
        // Yesterday (UTC) lost most of its rows.
        &format!(
            "DELETE FROM DW.ANALYTICS.THINNED WHERE LOADED_AT::DATE = '{yesterday}'::DATE AND MOD(ID, 5) <> 0"
        ),
        "ALTER TABLE DW.ANALYTICS.ALTERED ADD COLUMN NOTE VARCHAR",
    ]);
    let out = check_once(dir.path(), &config);
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
        verdict("nulled", "null_rate", Some("KIND")),
        "high",
        "{lines:#?}"
    );
    assert_eq!(
        verdict("nulled", "null_rate", Some("ID")),
        "ok",
        "{lines:#?}"
    );
    assert_eq!(verdict("stopped", "freshness", None), "late", "{lines:#?}");
    assert_eq!(verdict("thinned", "volume", None), "low", "{lines:#?}");
    assert_eq!(verdict("altered", "schema", None), "changed", "{lines:#?}");
    let schema = lines.iter().find(|l| l["check"] == "schema").unwrap();
    assert_eq!(schema["observed"], 5.0, "{schema}");
    assert_eq!(out.status.code(), Some(1), "{lines:#?}");
}

fn refusal<T: std::fmt::Debug>(result: Result<T, WarehouseError>) -> String {
    match result {
        Err(WarehouseError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_backfills_clone_puts_the_days_it_rebuilt_back_exactly() {
    let Some(server) = fakesnow() else {
        return;
    };
    estate(&server, &["events"]);
    let wh = server.warehouse();
    let events = Relation::parse("analytics.events").unwrap();
    let before = wh.day_prints(&events, Some("loaded_at")).unwrap();
    assert!(before.len() >= 35, "{before:?}");

    let mut version = wh.snapshot_table(&events, "INC-0001-P1").unwrap();
    assert_eq!(version.rows, 840);
    assert_eq!(
        version.copy,
        "dataward_versions.analytics__events__inc_0001_p1"
    );
    let again = refusal(wh.snapshot_table(&events, "inc-0001-p1"));
    assert!(again.contains("never overwritten"), "{again}");

    // The backfill rebuilds yesterday (UTC) wrongly.
    let today = chrono::Utc::now().date_naive();
    let yesterday = today.pred_opt().unwrap();
    server.sql(&[&format!(
        "UPDATE DW.ANALYTICS.EVENTS SET KIND = 'wrong', AMOUNT = NULL \
         WHERE LOADED_AT::DATE = '{yesterday}'::DATE"
    )]);
    version.scope = Some(BackfillScope {
        column: Some("loaded_at".into()),
        days: Some((yesterday.to_string(), today.to_string())),
    });
    version.after = Some(wh.day_prints(&events, Some("loaded_at")).unwrap());
    assert_ne!(version.after.as_ref().unwrap(), &before);

    // A row loaded on a rebuilt day since the backfill: the undo would lose it.
    server.sql(&[&format!(
        "INSERT INTO DW.ANALYTICS.EVENTS VALUES (5000, 'late', '1', '{yesterday} 12:30:00'::TIMESTAMP_NTZ)"
    )]);
    let refused = refusal(wh.restore_table(&events, &version));
    assert!(refused.contains("changed since the backfill"), "{refused}");
    server.sql(&["DELETE FROM DW.ANALYTICS.EVENTS WHERE ID = 5000"]);

    // A row loaded today, outside what the backfill rebuilt, is kept.
    server.sql(&[&format!(
        "INSERT INTO DW.ANALYTICS.EVENTS VALUES (6000, 'new', '2', '{today} 00:00:01'::TIMESTAMP_NTZ)"
    )]);
    let restored = wh.restore_table(&events, &version).unwrap();
    assert_eq!(restored.rows, 24, "yesterday's rows put back");
    assert_eq!(restored.kept.len(), 1, "{:?}", restored.kept);
    server.sql(&["DELETE FROM DW.ANALYTICS.EVENTS WHERE ID = 6000"]);
    assert_eq!(wh.day_prints(&events, Some("loaded_at")).unwrap(), before);

    // Found again by a retry, then dropped with its retention.
    let found = wh.find_version(&events, "INC-0001-P1").unwrap().unwrap();
    assert_eq!(
        (found.copy.as_str(), found.rows),
        (version.copy.as_str(), 840)
    );
    wh.drop_version(&version).unwrap();
    assert_eq!(wh.find_version(&events, "INC-0001-P1").unwrap(), None);
    wh.drop_version(&version).unwrap();

    // A stored version edited to name a real table is refused before anything runs.
    let mut forged = version.clone();
    forged.copy = "analytics.events".into();
    refusal(wh.restore_table(&events, &forged));
    refusal(wh.drop_version(&forged));
    assert_eq!(wh.row_count(&events).unwrap(), 840);
}

#[test]
fn a_dry_run_and_uncastable_counts_on_snowflake() {
    let Some(server) = fakesnow() else {
        return;
    };
    estate(&server, &["events"]);
    server.sql(&[
        "CREATE TABLE DW.ANALYTICS.RAW (V VARCHAR)",
        "INSERT INTO DW.ANALYTICS.RAW VALUES ('12'), (' 7 '), ('x1'), ('2024-02-30'), \
         ('2024-02-29'), ('3.5'), ('yes'), ('99999999999'), (NULL)",
    ]);
    let wh = server.warehouse();
    assert_eq!(
        wh.dry_run("SELECT ID, TRY_CAST(AMOUNT AS INTEGER) AS AMOUNT FROM DW.ANALYTICS.EVENTS")
            .unwrap(),
        840
    );
    let failed = wh
        .dry_run("SELECT ID, CAST(KIND AS INTEGER) AS KIND FROM DW.ANALYTICS.EVENTS")
        .unwrap_err();
    assert!(matches!(failed, WarehouseError::Query(_)), "{failed:?}");
    // SQL that tries to write, smuggled into the select, runs nowhere.
    let _ = wh.dry_run("SELECT 1) AS x; DELETE FROM DW.ANALYTICS.EVENTS; SELECT * FROM (SELECT 1");
    let events = Relation::parse("analytics.events").unwrap();
    assert_eq!(wh.row_count(&events).unwrap(), 840);

    let raw = Relation::parse("analytics.raw").unwrap();
    let values = [
        "12",
        " 7 ",
        "x1",
        "2024-02-30",
        "2024-02-29",
        "3.5",
        "yes",
        "99999999999",
    ];
    for target in [
        "integer",
        "bigint",
        "numeric(10,2)",
        "date",
        "boolean",
        "varchar",
    ] {
        let cast = dataward::warehouse::CastTarget::parse(target).unwrap();
        let mut expected: Vec<String> = values
            .iter()
            .filter(|v| !cast.accepts(v))
            .map(|v| v.to_string())
            .collect();
        expected.sort();
        let found = wh.count_uncastable(&raw, "v", target).unwrap().unwrap();
        assert_eq!(found.rows, expected.len() as u64, "{target}: {found:?}");
        expected.truncate(3);
        assert_eq!(found.examples, expected, "{target}");
    }
    assert_eq!(wh.count_uncastable(&raw, "v", "timestamp").unwrap(), None);
}

/// A config for a Snowflake warehouse with `login` as its way in, and one monitor.
fn login_config(dir: &Path, login: &str) -> PathBuf {
    let config = dir.join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.snow]\nkind = \"snowflake\"\naccount = \"fakesnow\"\n\
             host = \"127.0.0.1\"\nport = 9\nprotocol = \"http\"\ndatabase = \"DW\"\n\
             user = \"fake\"\n{login}\n\n[[monitor]]\nwarehouse = \"snow\"\n\
             table = \"analytics.events\"\nchecks = [\"row_count\"]\n"
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_secret_written_in_the_config_is_refused_by_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (line, key) in [
        ("password = \"hunter2-secret\"", "password"),
        ("token = \"hunter2-secret\"", "token"),
        ("private_key = \"hunter2-secret\"", "private_key"),
        (
            "private_key_passphrase = \"hunter2-secret\"",
            "private_key_passphrase",
        ),
    ] {
        let config = login_config(dir.path(), line);
        let out = check_once(dir.path(), &config);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {said}");
        assert!(said.contains("line 9"), "{key}: {said}");
        assert!(
            said.contains(&format!("warehouse.snow.{key}"))
                && said.contains("never written in the config"),
            "{key}: {said}"
        );
        assert!(
            !said.contains("hunter2"),
            "{key}: the secret was echoed: {said}"
        );
    }
    // No way to log in, or two: each named.
    let out = check_once(dir.path(), &login_config(dir.path(), ""));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("one way to log in"), "{said}");
    let both = "password_env = \"A\"\ntoken_env = \"B\"";
    let out = check_once(dir.path(), &login_config(dir.path(), both));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("password_env and token_env"), "{said}");
}

#[test]
fn a_private_key_others_can_read_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("snowflake.p8");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = login_config(dir.path(), "private_key_file = \"snowflake.p8\"");
    let out = check_once(dir.path(), &config);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("readable by others") && said.contains("chmod 600"),
        "{said}"
    );
    assert_ne!(out.status.code(), Some(0), "{said}");
}

#[test]
fn a_missing_driver_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let config = login_config(dir.path(), &format!("password_env = \"{PASSWORD_ENV}\""));
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--json",
        ])
        .args(["--data-dir", dir.path().join("data").to_str().unwrap()])
        .env(PASSWORD_ENV, "snow")
        .env("ADBC_DRIVER_PATH", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .output()
        .unwrap();
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines[0]["health"], "unreachable", "{lines:#?}");
    let said = lines[0]["message"].as_str().unwrap();
    for needed in [
        "no ADBC driver \"snowflake\" found",
        &dir.path().display().to_string(),
        "dbc install snowflake",
    ] {
        assert!(said.contains(needed), "{needed:?} not in: {said}");
    }
    assert_ne!(out.status.code(), Some(0), "{said}");
}

/// `doctor` on a Snowflake warehouse: the driver on a line of its own (where it was
/// found), and the warehouse reached as the account, database and user the config
/// names; never taken for a SQLite file.
#[test]
fn doctor_names_the_snowflake_driver_and_the_login() {
    let Some(server) = fakesnow() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = server.config(dir.path(), &[]);
    std::env::set_var(PASSWORD_ENV, "snow");
    let output = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["doctor", "--config"])
        .arg(&config)
        .env(PASSWORD_ENV, "snow")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    let library = server.library.display().to_string();
    assert!(
        text.lines()
            .any(|l| l.contains("✓") && l.contains("driver snow") && l.contains(&library)),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("✓")
            && l.contains("warehouse snow")
            && l.contains("snowflake fakesnow/DW as fake")),
        "{text}"
    );
    assert!(!text.contains("sqlite"), "{text}");
}

/// A query past the warehouse's check_timeout is cancelled through the driver and
/// fails with a timeout naming the warehouse and the timeout, rather than waiting for
/// fakesnow (DuckDB underneath) to count half a trillion rows. The warehouse is opened
/// from the config as every command opens it.
#[test]
fn a_query_past_check_timeout_is_cancelled_through_the_driver() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&server, &["events"]);
    endless_view(&server);
    let path = server.config(dir.path(), &[monitor("events", "\"row_count\"")]);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[warehouse.snow]\n",
        "[warehouse.snow]\ncheck_timeout = \"2s\"\n",
    );
    let config = dataward::config::Config::parse(&text, &path).unwrap();
    std::env::set_var(PASSWORD_ENV, "snow");
    let warehouse = dataward::warehouse::open(&config, "snow").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let counted = warehouse.row_count(&Relation {
            schema: Some("analytics".into()),
            table: "endless".into(),
        });
        let _ = tx.send(counted);
    });
    let counted = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the query was not cancelled: still running after 120s");
    let message = match counted {
        Err(WarehouseError::Query(message)) => message,
        other => panic!("expected a timeout, got {other:?}"),
    };
    for needed in ["timed out", "\"snow\"", "2s", "check_timeout", "cancelled"] {
        assert!(message.contains(needed), "{needed:?} not in {message:?}");
    }
}

#[test]
fn a_poll_runs_a_snowflake_warehouse_checks_in_one_session_and_explains_them() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&server, &["alpha", "beta", "gamma"]);
    let monitors: Vec<String> = ["alpha", "beta", "gamma"]
        .iter()
        .map(|t| monitor(t, "\"row_count\", \"freshness\", \"schema\""))
        .collect();
    let config = server.config(dir.path(), &monitors);
    // One call at a time: the poll's calls all take its one session in turn.
    with_settings(&config, "max_concurrent = 1");
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["check", "--config", config.to_str().unwrap()])
        .args(["--once", "--json", "--explain"])
        .args(["--data-dir", data.to_str().unwrap()])
        .env(PASSWORD_ENV, "snow")
        .output()
        .expect("run dataward");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let every = every_json_line(&out);
    let poll = every.iter().find_map(|l| l.get("poll")).unwrap();
    // One catalog read and three table reads, back to back on one connection: a
    // suspended warehouse is resumed once for the poll, not once per table.
    assert_eq!(poll["sessions"], 1, "{poll}");
    // fakesnow keeps no query history: nothing to say what was scanned, so nothing
    // is said.
    assert_eq!(poll["scanned"], "not reported", "{poll}");
    let statements: Vec<&Value> = every.iter().filter_map(|l| l.get("statement")).collect();
    assert_eq!(poll["queries"], statements.len() as u64, "{poll}");
    for table in ["ALPHA", "BETA", "GAMMA"] {
        let lower = table.to_lowercase();
        let monitor =
            format!("monitor snow.analytics.{lower} (table analytics.{lower}: row_count, freshness, schema)");
        let sent: Vec<&str> = statements
            .iter()
            .filter(|s| s["for"] == monitor.as_str())
            .map(|s| s["sql"].as_str().unwrap())
            .collect();
        // Snowflake's dialect: plain names folded to upper case, every one quoted.
        assert!(
            sent.iter()
                .any(|sql| sql.contains(&format!("\"ANALYTICS\".\"{table}\""))),
            "{table}: {sent:#?}\n{statements:#?}"
        );
    }
}

/// The scan reads only the rows at or after a constant a day before its earliest
/// window (by the raw column, so Snowflake prunes), and still counts exactly what it
/// counted reading every row: here against the counts worked out from the rows
/// themselves, for a TIMESTAMP_NTZ, a TIMESTAMP_TZ and a DATE column, over 400 days
/// (far before the 98-day lookback) with rows that have no time at all.
#[test]
fn a_scan_that_reads_only_recent_rows_counts_as_one_that_reads_them_all() {
    let Some(server) = fakesnow() else {
        return;
    };
    let now = chrono::Utc::now().timestamp();
    let day = 86_400;
    // (table, column type, Unix seconds of each row's time, as SQL)
    let every_7_hours: Vec<i64> = (0..400 * 24 / 7).map(|k| now - k * 7 * 3600).collect();
    let midnights: Vec<i64> = (0..400).map(|k| (now / day - k) * day).collect();
    let stamp = |at: i64, zone: &str| {
        let when = chrono::DateTime::from_timestamp(at, 0).unwrap();
        match zone {
            "TIMESTAMP_NTZ" => format!("'{}'::TIMESTAMP_NTZ", when.format("%Y-%m-%d %H:%M:%S")),
            "TIMESTAMP_TZ" => format!(
                "'{}'::TIMESTAMP_TZ",
                when.format("%Y-%m-%d %H:%M:%S +00:00")
            ),
            _ => format!("'{}'::DATE", when.format("%Y-%m-%d")),
        }
    };
    let tables = [
        ("PRUNED_NTZ", "TIMESTAMP_NTZ", &every_7_hours),
        ("PRUNED_TZ", "TIMESTAMP_TZ", &every_7_hours),
        ("PRUNED_DATE", "DATE", &midnights),
    ];
    let mut statements = vec![
        "CREATE DATABASE IF NOT EXISTS DW".to_string(),
        "CREATE SCHEMA IF NOT EXISTS DW.ANALYTICS".to_string(),
    ];
    for (table, kind, times) in &tables {
        statements.push(format!(
            "CREATE TABLE DW.ANALYTICS.{table} (ID NUMBER(38,0), KIND VARCHAR, LOADED_AT {kind})"
        ));
        let mut rows: Vec<String> = times
            .iter()
            .enumerate()
            .map(|(n, at)| {
                let kind_value = if n % 10 == 0 { "NULL" } else { "'click'" };
                format!("({n}, {kind_value}, {})", stamp(*at, kind))
            })
            .collect();
        // Rows with no time: counted in the table's rows, in no window.
        rows.extend((0..5).map(|n| format!("({}, NULL, NULL)", 10_000 + n)));
        statements.push(format!(
            "INSERT INTO DW.ANALYTICS.{table} VALUES {}",
            rows.join(", ")
        ));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    server.sql(&statements);

    let warehouse = server.warehouse();
    let null_columns = vec!["KIND".to_string()];
    let (nulls_since, from, older_from) = (now - 10 * day, now - 2 * day, now - 98 * day);
    for (table, kind, times) in &tables {
        let relation = Relation::parse(&format!("analytics.{table}")).unwrap();
        let scan = TableScan {
            relation: &relation,
            null_columns: &null_columns,
            nulls_since: Some(("LOADED_AT", nulls_since)),
            minutes: Some(MinuteWindow {
                column: "LOADED_AT",
                from,
                older_from,
                cutoff: CUTOFF,
            }),
        };
        assert!(scan.pruning_bound().is_some(), "the scan prunes");
        let counted = warehouse.scan(&scan).unwrap();
        // The same counts from the rows as written.
        let expected =
            adbc_support::counts_from_rows(times, 5, (from, older_from, CUTOFF), nulls_since);
        assert_eq!(counted, expected, "{table} ({kind})");
    }
}

/// Two calls to one Snowflake warehouse run at once: a count of a table finishes while
/// a query that never finishes on its own (cancelled at check_timeout) is still under
/// way on another session. Run one after another, the count would wait for the
/// endless query to be cancelled, and finish after it.
#[test]
fn a_snowflake_warehouse_runs_its_calls_at_once() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&server, &["events"]);
    endless_view(&server);
    let path = server.config(dir.path(), &[monitor("events", "\"row_count\"")]);
    with_settings(&path, "check_timeout = \"5s\"\nmax_concurrent = 2");
    let config = dataward::config::Config::load(&path).unwrap();
    std::env::set_var(PASSWORD_ENV, "snow");
    let warehouse: std::sync::Arc<dyn Warehouse + Sync> =
        std::sync::Arc::from(dataward::warehouse::open(&config, "snow").unwrap());
    let (tx, finished) = std::sync::mpsc::channel();
    let count = |table: &str| {
        let (warehouse, tx) = (warehouse.clone(), tx.clone());
        let relation = Relation::parse(&format!("analytics.{table}")).unwrap();
        let table = table.to_string();
        std::thread::spawn(move || {
            let counted = warehouse.row_count(&relation);
            let _ = tx.send((table, counted));
        })
    };
    let logins = server.server.logins();
    count("endless");
    // The endless query's session has logged in: it holds the warehouse from here on
    // if calls run one after another.
    let waited = std::time::Instant::now();
    while server.server.logins() == logins {
        assert!(waited.elapsed().as_secs() < 60, "no login within a minute");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    count("events");
    let bound = std::time::Duration::from_secs(120);
    let (first, counted) = finished.recv_timeout(bound).expect("neither call ended");
    assert_eq!(
        first, "events",
        "the count waited for the endless query: {counted:?}"
    );
    assert_eq!(counted.unwrap(), 840);
    let (second, counted) = finished.recv_timeout(bound).expect("not cancelled");
    assert_eq!(second, "endless");
    let message = counted.unwrap_err().to_string();
    assert!(message.contains("timed out"), "{message}");
}

/// A session whose query was cancelled at check_timeout is not given to the poll's
/// next call: the warehouse may still be running the query on it (fakesnow always
/// is, and refuses a busy connection), and the next check must not fail for it.
#[test]
fn a_poll_does_not_reuse_a_session_whose_query_was_cancelled() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&server, &["events"]);
    endless_view(&server);
    let path = server.config(dir.path(), &[monitor("events", "\"row_count\"")]);
    with_settings(&path, "check_timeout = \"2s\"");
    let config = dataward::config::Config::load(&path).unwrap();
    std::env::set_var(PASSWORD_ENV, "snow");
    let warehouse = dataward::warehouse::open(&config, "snow").unwrap();
    warehouse.begin_poll();
    let endless = warehouse.row_count(&Relation::parse("analytics.endless").unwrap());
    assert!(
        endless
            .as_ref()
            .is_err_and(|e| e.to_string().contains("timed out")),
        "{endless:?}"
    );
    let counted = warehouse.row_count(&Relation::parse("analytics.events").unwrap());
    warehouse.end_poll();
    assert_eq!(counted.unwrap(), 840);
}

/// A private key encrypted with a passphrase (PKCS#8, as openssl makes it), mode 0600.
fn encrypted_key(dir: &Path, passphrase: &str) -> Option<PathBuf> {
    let key = dir.join("snowflake.p8");
    let made = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .args([
            "-aes-256-cbc",
            "-pass",
            &format!("pass:{passphrase}"),
            "-out",
        ])
        .arg(&key)
        .output();
    match made {
        Ok(out) if out.status.success() => {}
        _ => return adbc_support::skip("encrypted_key", "needs openssl to make a key"),
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    Some(key)
}

/// Key-pair login with an encrypted key: the key from a file or inline from an
/// environment variable, its passphrase from another, handed to the driver, which
/// decrypts it client-side (fakesnow takes any key, so the driver's reading is what is
/// tested). The right passphrase logs in; a wrong one fails saying which warehouse and
/// which config keys, and no secret reaches what dataward says.
#[test]
fn an_encrypted_private_key_logs_in_with_its_passphrase() {
    let Some(server) = fakesnow() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (right, wrong) = ("right-5e1c-passphrase", "wrong-9a7f-passphrase");
    let Some(key) = encrypted_key(dir.path(), right) else {
        return;
    };
    let pem = std::fs::read_to_string(&key).unwrap();
    assert!(pem.contains("BEGIN ENCRYPTED PRIVATE KEY"), "{pem}");
    estate(&server, &["events"]);
    let config = server.config(dir.path(), &[monitor("events", "\"row_count\"")]);
    let with_password = std::fs::read_to_string(&config).unwrap();
    let from_file =
        "private_key_file = \"snowflake.p8\"\nprivate_key_passphrase_env = \"DW_KEY_PASS\"\n";
    let inline = "private_key_env = \"DW_KEY\"\nprivate_key_passphrase_env = \"DW_KEY_PASS\"\n";
    for (login, passphrase, logs_in) in [
        (from_file, right, true),
        (inline, right, true),
        (from_file, wrong, false),
        (inline, wrong, false),
    ] {
        let text = with_password.replace(&format!("password_env = \"{PASSWORD_ENV}\"\n"), login);
        std::fs::write(&config, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args([
                "check",
                "--config",
                config.to_str().unwrap(),
                "--once",
                "--json",
            ])
            .args(["--data-dir", dir.path().join("data").to_str().unwrap()])
            .env("DW_KEY", &pem)
            .env("DW_KEY_PASS", passphrase)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{login}: {said}");
        if logs_in {
            assert_eq!(lines[0]["health"], "ok", "{login}: {said}");
            assert_eq!(lines[0]["observed"], 840.0, "{login}: {said}");
        } else {
            let message = lines[0]["message"].as_str().unwrap();
            let key_setting = if login == from_file {
                "warehouse.snow.private_key_file"
            } else {
                "warehouse.snow.private_key_env ($DW_KEY)"
            };
            for needed in [
                "warehouse \"snow\"",
                key_setting,
                "$DW_KEY_PASS (warehouse.snow.private_key_passphrase_env)",
                "incorrect password",
            ] {
                assert!(message.contains(needed), "{needed:?} not in {message}");
            }
        }
        for secret in [right, wrong, "ENCRYPTED PRIVATE KEY", &pem[40..80]] {
            assert!(!said.contains(secret), "{login}: a secret was said: {said}");
        }
    }
}
