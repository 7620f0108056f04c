//! DuckDB through its own ADBC driver (DuckDB's shared library, loaded at run time), as
//! a user runs it: a DuckDB file with history, `dataward check` (the binary) on it.
//! Needs the library `.ci/duckdb.sh` installs (/opt/dataward/duckdb, or the folder in
//! DATAWARD_DUCKDB_DIR): without it each test says so and passes, unless
//! DATAWARD_REQUIRE_ALL=1, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/binary.rs"]
mod binary;

use dataward::warehouse::duckdb::DuckdbWarehouse;
use dataward::warehouse::{
    adbc, BackfillScope, CastTarget, MinuteWindow, Relation, TableScan, Warehouse, WarehouseError,
};
use serde_json::Value;

#[path = "support/adbc.rs"]
mod adbc_support;
use adbc_support::{every_json_line, json_lines};

fn driver_folder() -> Option<PathBuf> {
    adbc_support::duckdb_folder("duckdb")
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
    adbc_support::dataward(None, args, env)
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

/// The time of day the scans' days are split at: 09:41, so rows fall either side.
const CUTOFF: i64 = 9 * 3600 + 41 * 60;

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

/// The warehouse as dataward opens it, on the installed library.
fn warehouse(folder: &Path, file: &Path) -> DuckdbWarehouse {
    DuckdbWarehouse::new(
        file.to_str().unwrap(),
        Some(folder.join("libduckdb.so").display().to_string()),
    )
}

fn refusal<T: std::fmt::Debug>(result: Result<T, WarehouseError>) -> String {
    match result {
        Err(WarehouseError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_backfills_copy_puts_the_days_it_rebuilt_back_exactly() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = estate(&folder, dir.path(), &["events"]);
    let wh = warehouse(&folder, &file);
    let events = Relation::parse("analytics.events").unwrap();
    let before = wh.day_prints(&events, Some("at")).unwrap();

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
    let rebuilt = format!("CAST(\"at\" AS DATE) = DATE '{yesterday}'");
    sql(
        &folder,
        &file,
        &[&format!(
            "UPDATE analytics.events SET kind = 'wrong', amount = NULL WHERE {rebuilt}"
        )],
    );
    version.scope = Some(BackfillScope {
        column: Some("at".into()),
        days: Some((yesterday.to_string(), today.to_string())),
    });
    version.after = Some(wh.day_prints(&events, Some("at")).unwrap());
    assert_ne!(wh.day_prints(&events, Some("at")).unwrap(), before);

    // A row loaded on a rebuilt day since the backfill: the undo would lose it.
    sql(
        &folder,
        &file,
        &[&format!(
            "INSERT INTO analytics.events VALUES (5000, 'late', '1', TIMESTAMP '{yesterday} 12:30:00')"
        )],
    );
    let refused = refusal(wh.restore_table(&events, &version));
    assert!(refused.contains("changed since the backfill"), "{refused}");
    sql(
        &folder,
        &file,
        &["DELETE FROM analytics.events WHERE id = 5000"],
    );

    // A row loaded today, outside what the backfill rebuilt, is kept.
    sql(
        &folder,
        &file,
        &[&format!(
            "INSERT INTO analytics.events VALUES (6000, 'new', '2', TIMESTAMP '{today} 00:00:01')"
        )],
    );
    let restored = wh.restore_table(&events, &version).unwrap();
    assert_eq!(restored.rows, 24, "yesterday's rows put back");
    assert_eq!(restored.kept.len(), 1, "{:?}", restored.kept);
    sql(
        &folder,
        &file,
        &["DELETE FROM analytics.events WHERE id = 6000"],
    );
    assert_eq!(wh.day_prints(&events, Some("at")).unwrap(), before);

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
fn a_dry_run_computes_every_column_and_cannot_write() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = estate(&folder, dir.path(), &["events"]);
    let wh = warehouse(&folder, &file);
    let events = Relation::parse("analytics.events").unwrap();
    assert_eq!(
        wh.dry_run("SELECT id, CAST(amount AS INTEGER) AS amount FROM analytics.events")
            .unwrap(),
        840
    );
    // A cast that fails in a column nobody counts still fails the dry run.
    let failed = wh
        .dry_run("SELECT id, CAST(kind AS INTEGER) AS kind FROM analytics.events")
        .unwrap_err();
    assert!(matches!(failed, WarehouseError::Query(_)), "{failed:?}");
    // A select that writes (a sequence's nextval): the database is opened read-only,
    // so it fails and the sequence is untouched.
    sql(&folder, &file, &["CREATE SEQUENCE analytics.ids"]);
    let wrote = wh.dry_run("SELECT nextval('analytics.ids') AS id FROM analytics.events");
    assert!(wrote.is_err(), "{wrote:?}");
    // SQL that tries to write, smuggled into the select, runs nowhere either.
    let _ = wh.dry_run("SELECT 1) AS x; DELETE FROM analytics.events; SELECT * FROM (SELECT 1");
    assert_eq!(wh.row_count(&events).unwrap(), 840);
    assert_eq!(
        first_value(&folder, &file, "SELECT nextval('analytics.ids')"),
        1,
        "the dry run advanced the sequence"
    );
}

/// The first column of the first row of a query, as a whole number.
fn first_value(folder: &Path, file: &Path, query: &str) -> i64 {
    let driver = adbc::load(
        folder.join("libduckdb.so").to_str().unwrap(),
        &dataward::warehouse::duckdb::DRIVER,
    )
    .unwrap();
    let database = driver.open(&[("path", file.to_str().unwrap())]).unwrap();
    let mut session = database.connect().unwrap();
    session.query_one(query).unwrap()[0].int().unwrap().unwrap()
}

#[test]
fn uncastable_counts_follow_the_same_shapes_as_every_engine() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wh.duckdb");
    let values = [
        "12",
        " -7 ",
        "+3",
        "99999999999",
        "1.5",
        "1e3",
        "abc",
        "NaN",
        "inf",
        "-Infinity",
        "2024-02-29",
        "2023-02-29",
        "2024-13-01",
        "0000-01-01",
        "today",
        "20240105",
        "yes",
        "of",
        "t",
        "maybe",
        "",
        "1",
        "0",
        "32768",
        "-2147483649",
    ];
    let rows: Vec<String> = values
        .iter()
        .map(|v| format!("('{}')", v.replace('\'', "''")))
        .collect();
    sql(
        &folder,
        &file,
        &[
            "CREATE TABLE raw (v VARCHAR)",
            &format!("INSERT INTO raw VALUES {}, (NULL)", rows.join(", ")),
        ],
    );
    let wh = warehouse(&folder, &file);
    let raw = Relation::parse("raw").unwrap();
    for target in [
        "smallint",
        "integer",
        "bigint",
        "numeric(10,2)",
        "date",
        "boolean",
        "text",
    ] {
        let shape = CastTarget::parse(target).unwrap();
        let mut expected: Vec<&str> = values
            .iter()
            .copied()
            .filter(|v| !shape.accepts(v))
            .collect();
        let found = wh.count_uncastable(&raw, "v", target).unwrap().unwrap();
        assert_eq!(
            found.rows,
            expected.len() as u64,
            "{target}: {found:?} vs {expected:?}"
        );
        expected.sort();
        expected.dedup();
        expected.truncate(3);
        assert_eq!(found.examples, expected, "{target}");
    }
    assert_eq!(wh.count_uncastable(&raw, "v", "timestamp").unwrap(), None);
}

#[test]
fn days_and_load_times_read_alike_from_timestamp_timestamptz_and_date_columns() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wh.duckdb");
    sql(
        &folder,
        &file,
        &[&format!(
            "CREATE TABLE loads AS SELECT n,
                CAST({now} - n * INTERVAL 7 HOUR AS TIMESTAMP) AS at_ts,
                CAST(CAST({now} - n * INTERVAL 7 HOUR AS VARCHAR) || '+00' AS TIMESTAMPTZ) AS at_tz,
                CAST({now} - n * INTERVAL 7 HOUR AS DATE) AS at_d
             FROM range(1, 200) AS t(n)",
            now = hours_ago(0)
        )],
    );
    // Whatever the machine's zone, days are UTC days.
    let wh = warehouse(&folder, &file);
    let loads = Relation::parse("loads").unwrap();
    let since = (chrono::Utc::now() - chrono::TimeDelta::days(30)).timestamp();
    let cutoff = chrono::NaiveTime::from_hms_opt(12, 0, 0).unwrap();
    let ts = wh.daily_counts(&loads, "at_ts", since, cutoff).unwrap();
    let tz = wh.daily_counts(&loads, "at_tz", since, cutoff).unwrap();
    assert_eq!(ts, tz);
    let total: u64 = ts.iter().map(|d| d.rows).sum();
    assert!(total >= 100, "{ts:?}");
    let dates = wh.daily_counts(&loads, "at_d", since, cutoff).unwrap();
    assert!(dates
        .iter()
        .all(|d| d.at_midnight == d.rows && d.before_cutoff == d.rows));
    assert_eq!(
        wh.load_times(&loads, "at_ts", since, 10).unwrap(),
        wh.load_times(&loads, "at_tz", since, 10).unwrap()
    );

    // The binary on a machine whose zone is not UTC reads the same days: d + 1 rows
    // at 02:00 UTC d days ago, so a day read in New York's zone counts differently.
    let midnight = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(2, 0, 0)
        .unwrap();
    sql(
        &folder,
        &file,
        &[
            "DROP TABLE loads",
            &format!(
                "CREATE TABLE loads AS SELECT d,
                    TIMESTAMP '{midnight}' - d * INTERVAL 1 DAY AS at_ts,
                    CAST(CAST(TIMESTAMP '{midnight}' - d * INTERVAL 1 DAY AS VARCHAR) || '+00' AS TIMESTAMPTZ) AS at_tz
                 FROM range(1, 36) AS t(d), range(0, 36) AS u(k) WHERE k <= d"
            ),
        ],
    );
    let config = dir.path().join("dataward.toml");
    let volume = |column: &str| {
        format!(
            "[[monitor]]\nname = \"{column}\"\nwarehouse = \"duck\"\ntable = \"loads\"\n\
             checks = [\"volume\"]\ntimestamp_column = \"{column}\"\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "[warehouse.duck]\nkind = \"duckdb\"\npath = \"wh.duckdb\"\ndriver = \"{}\"\n\n{}\n{}",
            folder.join("libduckdb.so").display(),
            volume("at_ts"),
            volume("at_tz")
        ),
    )
    .unwrap();
    let out = check_once(dir.path(), &config, &[("TZ", "America/New_York")]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    for field in ["day", "observed", "verdict"] {
        assert_eq!(lines[0][field], lines[1][field], "{lines:#?}");
    }
}

#[test]
fn an_in_memory_database_is_no_file_to_look_for() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.duck]\nkind = \"duckdb\"\npath = \":memory:\"\ndriver = \"{}\"\n\n\
             [[monitor]]\nwarehouse = \"duck\"\ntable = \"information_schema.schemata\"\n\
             checks = [\"row_count\"]\nexpected_rows = 1\n",
            folder.join("libduckdb.so").display()
        ),
    )
    .unwrap();
    let out = check_once(dir.path(), &config, &[]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines[0]["health"], "ok", "{lines:#?}");
    assert!(lines[0]["observed"].as_f64().unwrap() >= 1.0, "{lines:#?}");
}

/// Whether the process has loaded DuckDB's library: its first warehouse call began.
fn driver_loaded(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .is_ok_and(|maps| maps.contains("libduckdb.so"))
}

#[test]
fn each_quit_signal_during_a_driver_query_leaves_serve_cleanly() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wh.duckdb");
    // A view whose every read takes seconds (144 million rows computed): the query is
    // still running when the signal comes.
    sql(
        &folder,
        &file,
        &["CREATE VIEW slow AS SELECT a.range * b.range AS x FROM range(12000) AS a, range(12000) AS b"],
    );
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.duck]\nkind = \"duckdb\"\npath = \"wh.duckdb\"\ndriver = \"{}\"\n\n\
             [[monitor]]\nwarehouse = \"duck\"\ntable = \"slow\"\nchecks = [\"row_count\", \"null_rate\"]\n",
            folder.join("libduckdb.so").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
        let data = dir.path().join(format!("data-{signal}"));
        let mut serve = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !driver_loaded(serve.id()) {
            assert!(Instant::now() < deadline, "the driver was never loaded");
            assert!(serve.try_wait().unwrap().is_none(), "serve ended early");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(serve.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = serve.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "serve never left after signal {signal}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "signal {signal}: {status}\n{stderr}");
        assert!(!stderr.contains("panicked"), "signal {signal}: {stderr}");
        assert!(!data.join("dataward.sock").exists(), "signal {signal}");
    }
}

#[test]
fn doctor_says_which_driver_was_found_where_and_its_version_or_what_to_install() {
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
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let data = dir.path().join("data");
    let doctor = |env: &[(&str, &str)]| {
        let out = dataward(
            &[
                "--data-dir",
                data.to_str().unwrap(),
                "doctor",
                "--config",
                config.to_str().unwrap(),
            ],
            env,
        );
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (code, said) = doctor(&[("ADBC_DRIVER_PATH", folder.to_str().unwrap())]);
    let driver = said
        .lines()
        .find(|l| l.contains("driver duck"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(driver.starts_with("✓"), "{said}");
    for needed in [
        "DuckDB v1.5.6".to_string(),
        folder.join("libduckdb.so").display().to_string(),
        folder.join("duckdb.toml").display().to_string(),
    ] {
        assert!(driver.contains(&needed), "{needed:?} not in {driver}");
    }
    assert!(
        said.lines()
            .any(|l| l.starts_with("✓") && l.contains("warehouse duck")),
        "{said}"
    );
    assert_eq!(code, Some(0), "{said}");

    let empty = dir.path().join("none");
    std::fs::create_dir(&empty).unwrap();
    let home = dir.path().join("home");
    let (code, said) = doctor(&[
        ("ADBC_DRIVER_PATH", empty.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
    ]);
    let at = said
        .lines()
        .position(|l| l.contains("driver duck"))
        .unwrap_or_else(|| panic!("{said}"));
    let lines: Vec<&str> = said.lines().collect();
    assert!(lines[at].starts_with("✗"), "{said}");
    assert!(lines[at].contains(&empty.display().to_string()), "{said}");
    assert!(lines[at + 1].contains("dbc install duckdb"), "{said}");
    assert_eq!(code, Some(1), "{said}");
}

#[test]
fn a_file_named_like_its_schema_is_read_all_the_same() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    estate(&folder, dir.path(), &["events"]);
    // DuckDB names a database after its file: analytics.duckdb holds catalog
    // `analytics`, and `analytics.events` could be either.
    std::fs::rename(
        dir.path().join("wh.duckdb"),
        dir.path().join("analytics.duckdb"),
    )
    .unwrap();
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.duck]\nkind = \"duckdb\"\npath = \"analytics.duckdb\"\ndriver = \"{}\"\n\n\
             [[monitor]]\nwarehouse = \"duck\"\ntable = \"analytics.events\"\n\
             checks = [\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"]\n\
             timestamp_column = \"at\"\n",
            folder.join("libduckdb.so").display()
        ),
    )
    .unwrap();
    let out = check_once(dir.path(), &config, &[]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 8, "{lines:#?}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "{line}");
    }
}

/// A query past the warehouse's check_timeout is cancelled through the driver: the
/// check says it timed out, naming the warehouse and the timeout, and the checks queued
/// behind it on the same DuckDB file run as usual instead of waiting for it forever.
#[test]
fn a_query_past_check_timeout_is_cancelled_and_the_poll_goes_on() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = estate(&folder, dir.path(), &["events", "orders", "users"]);
    // A trillion rows: no count of it ends while anyone waits.
    sql(
        &folder,
        &file,
        &[
            "CREATE VIEW analytics.endless AS SELECT a.range * b.range AS x \
           FROM range(1000000) AS a, range(1000000) AS b",
        ],
    );
    let mut monitors = "table = \"analytics.endless\"\nchecks = [\"row_count\"]".to_string();
    for table in ["events", "orders", "users"] {
        monitors.push_str(&format!(
            "\n\n[[monitor]]\nwarehouse = \"duck\"\n{}",
            monitor(table, "\"row_count\"")
        ));
    }
    let config = write_config(
        dir.path(),
        &format!(
            "driver = \"{}\"\ncheck_timeout = \"2s\"",
            folder.join("libduckdb.so").display()
        ),
        &monitors,
    );
    let data = dir.path().join("data");
    let out = binary::dataward_within(
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--json",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(120),
    );
    let lines = json_lines(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(lines.len(), 4, "{lines:#?}\n{stderr}");
    let endless = &lines[0];
    assert_eq!(endless["table"], "analytics.endless", "{lines:#?}");
    assert_eq!(endless["health"], "error", "{endless}");
    let message = endless["message"].as_str().unwrap_or_default();
    for needed in ["timed out", "\"duck\"", "2s", "check_timeout"] {
        assert!(message.contains(needed), "{needed:?} not in {message:?}");
    }
    for line in &lines[1..] {
        assert_eq!(line["health"], "ok", "{line}\n{stderr}");
    }
    assert_eq!(out.status.code(), Some(3), "{lines:#?}\n{stderr}");
}

/// Three monitored tables in one DuckDB file, polled once with `--json --explain`.
fn three_tables_polled(folder: &Path, dir: &Path) -> Output {
    estate(folder, dir, &["alpha", "beta", "gamma"]);
    let monitors = ["alpha", "beta", "gamma"]
        .map(|t| monitor(t, "\"row_count\", \"freshness\", \"null_rate\", \"schema\""))
        .join("\n[[monitor]]\nwarehouse = \"duck\"\n");
    let driver = format!("driver = \"{}\"", folder.join("libduckdb.so").display());
    let config = write_config(dir, &driver, &monitors);
    let data = dir.join("data");
    dataward(
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--json",
            "--explain",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        &[],
    )
}

#[test]
fn check_explain_lists_the_duckdb_sql_each_monitor_sent() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = three_tables_polled(&folder, dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let every = every_json_line(&out);
    let statements: Vec<&Value> = every.iter().filter_map(|l| l.get("statement")).collect();
    // Each table's read, under its monitor, in DuckDB's dialect, names quoted.
    for table in ["alpha", "beta", "gamma"] {
        let monitor = format!("monitor duck.analytics.{table} (table analytics.{table}: row_count, freshness, null_rate, schema)");
        let sent: Vec<&str> = statements
            .iter()
            .filter(|s| s["for"] == monitor.as_str())
            .map(|s| s["sql"].as_str().unwrap())
            .collect();
        assert!(
            sent.iter().any(
                |sql| sql.contains(&format!("FROM \"analytics\".\"{table}\""))
                    && sql.contains("FILTER (WHERE")
            ),
            "{table}: {sent:#?}\n{statements:#?}"
        );
    }
    // The catalog, once for the schema.
    let catalog: Vec<&&Value> = statements
        .iter()
        .filter(|s| s["for"] == "columns of alpha, beta, gamma in schema analytics")
        .filter(|s| {
            s["sql"]
                .as_str()
                .unwrap()
                .contains("information_schema.columns")
        })
        .collect();
    assert_eq!(catalog.len(), 1, "{statements:#?}");
    assert!(catalog[0]["sql"]
        .as_str()
        .unwrap()
        .contains("information_schema.columns"));
    assert_eq!(catalog[0]["rows"], 12, "{statements:#?}");
    let poll = every.iter().find_map(|l| l.get("poll")).unwrap();
    assert_eq!(poll["queries"], statements.len() as u64, "{poll}");
    assert_eq!(poll["scanned"], "not reported", "{poll}");
}

#[test]
fn a_poll_runs_a_duckdb_warehouse_checks_in_one_session() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = three_tables_polled(&folder, dir.path());
    let every = every_json_line(&out);
    let poll = every.iter().find_map(|l| l.get("poll")).unwrap();
    // One catalog read and three table reads, back to back in one session: the file
    // attached once, not once per call.
    assert_eq!(poll["sessions"], 1, "{poll}");
    let attaches = every
        .iter()
        .filter_map(|l| l.get("statement"))
        .filter(|s| s["sql"].as_str().unwrap().starts_with("ATTACH"))
        .count();
    assert_eq!(attaches, 1, "{every:#?}");
    // The session is closed after the poll: the file can be opened for writing again.
    sql(
        &folder,
        &dir.path().join("wh.duckdb"),
        &["CREATE TABLE analytics.after (id INTEGER)"],
    );
}

/// The scan reads only the rows at or after a constant a day before its earliest
/// window (by the raw column, which DuckDB skips row groups by), and still counts
/// exactly what it counted reading every row: here against the counts worked out from
/// the rows themselves, for TIMESTAMP, TIMESTAMPTZ and DATE columns over 400 days (far
/// before the 98-day lookback), with rows that have no time at all.
#[test]
fn a_scan_that_reads_only_recent_rows_counts_as_one_that_reads_them_all() {
    let Some(folder) = driver_folder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wh.duckdb");
    let now = chrono::Utc::now().timestamp();
    let day = 86_400;
    let every_7_hours: Vec<i64> = (0..400 * 24 / 7).map(|k| now - k * 7 * 3600).collect();
    let midnights: Vec<i64> = (0..400).map(|k| (now / day - k) * day).collect();
    let make = |table: &str, times: &[i64], value: &dyn Fn(i64) -> String| {
        let mut rows: Vec<String> = times
            .iter()
            .enumerate()
            .map(|(n, at)| {
                let kind = if n % 10 == 0 { "NULL" } else { "'click'" };
                format!("({n}, {kind}, {})", value(*at))
            })
            .collect();
        // Rows with no time: counted in the table's rows, in no window.
        rows.extend((0..5).map(|n| format!("({}, NULL, NULL)", 10_000 + n)));
        format!("INSERT INTO {table} VALUES {}", rows.join(", "))
    };
    let utc = |at: i64| {
        chrono::DateTime::from_timestamp(at, 0)
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    };
    sql(
        &folder,
        &file,
        &[
            "CREATE TABLE pruned_ts (id BIGINT, kind VARCHAR, loaded_at TIMESTAMP)",
            "CREATE TABLE pruned_tz (id BIGINT, kind VARCHAR, loaded_at TIMESTAMPTZ)",
            "CREATE TABLE pruned_date (id BIGINT, kind VARCHAR, loaded_at DATE)",
            &make("pruned_ts", &every_7_hours, &|at| {
                format!("TIMESTAMP '{}'", utc(at))
            }),
            &make("pruned_tz", &every_7_hours, &|at| {
                format!("TIMESTAMPTZ '{}+00'", utc(at))
            }),
            &make("pruned_date", &midnights, &|at| {
                format!("DATE '{}'", &utc(at)[..10])
            }),
        ],
    );
    let wh = warehouse(&folder, &file);
    let null_columns = vec!["kind".to_string()];
    let (nulls_since, from, older_from) = (now - 10 * day, now - 2 * day, now - 98 * day);
    for (table, times) in [
        ("pruned_ts", &every_7_hours),
        ("pruned_tz", &every_7_hours),
        ("pruned_date", &midnights),
    ] {
        let relation = Relation::parse(table).unwrap();
        let scan = TableScan {
            relation: &relation,
            null_columns: &null_columns,
            nulls_since: Some(("loaded_at", nulls_since)),
            minutes: Some(MinuteWindow {
                column: "loaded_at",
                from,
                older_from,
                cutoff: CUTOFF,
            }),
        };
        assert!(scan.pruning_bound().is_some(), "the scan prunes");
        let counted = wh.scan(&scan).unwrap();
        let expected =
            adbc_support::counts_from_rows(times, 5, (from, older_from, CUTOFF), nulls_since);
        assert_eq!(counted, expected, "{table}");
    }
}
