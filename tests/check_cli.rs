//! `dataward check` and `dataward backtest` through the real binary: JSON lines, exit
//! codes, and errors that name the file and line.

#[path = "support/binary.rs"]
mod binary;
mod support;

use std::path::Path;
use std::process::{Command, Output};

use chrono::Datelike;
use serde_json::Value;

fn dataward(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run dataward")
}

/// The lines of the checks (not the poll's cost, `{"poll": ...}`, nor the statements
/// `--explain` lists).
fn json_lines(output: &Output) -> Vec<Value> {
    every_json_line(output)
        .into_iter()
        .filter(|l| l.get("poll").is_none() && l.get("statement").is_none())
        .collect()
}

fn every_json_line(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

const FIELDS: [&str; 8] = [
    "monitor",
    "table",
    "check",
    "verdict",
    "observed",
    "expected_low",
    "expected_high",
    "health",
];

/// A SQLite warehouse with an hourly-loaded table for the last five weeks.
fn sqlite_estate(dir: &Path) {
    let conn = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, at TEXT NOT NULL);
         WITH RECURSIVE h(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM h WHERE n < 840)
         INSERT INTO events (kind, at)
         SELECT CASE WHEN n % 10 = 0 THEN NULL ELSE 'click' END,
                strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-' || n || ' hours')
         FROM h;",
    )
    .unwrap();
}

#[test]
fn check_prints_one_json_object_per_check_and_exits_1_on_a_breach() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
         checks = [\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"]\n\
         timestamp_column = \"at\"\nnull_window = \"10d\"\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let args = [
        "check",
        "--config",
        config.to_str().unwrap(),
        "--once",
        "--json",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    let out = dataward(&args, &[]);
    let lines = json_lines(&out);
    // row_count, null_rate for id, kind, at, freshness, volume, schema.
    assert_eq!(lines.len(), 7, "{lines:#?}");
    for line in &lines {
        for field in FIELDS {
            assert!(line.get(field).is_some(), "{field} missing in {line}");
        }
        assert_eq!(line["health"], "ok", "{line}");
    }
    // Every tenth row null, over the rows loaded in the last ten days.
    let kind = lines.iter().find(|l| l["column"] == "kind").unwrap();
    assert_eq!(kind["check"], "null_rate");
    assert!((kind["observed"].as_f64().unwrap() - 0.1).abs() < 0.01);
    let checks: Vec<&str> = lines.iter().map(|l| l["check"].as_str().unwrap()).collect();
    assert!(checks.contains(&"freshness") && checks.contains(&"volume"));
    assert_eq!(out.status.code(), Some(0), "{lines:#?}");
    // Each null rate says the window it measured: rows loaded in the last ten days.
    let ten_days_ago = chrono::Utc::now() - chrono::TimeDelta::days(10);
    for line in lines.iter().filter(|l| l["check"] == "null_rate") {
        let since = line["since"].as_str().unwrap_or_else(|| panic!("{line}"));
        let since = chrono::DateTime::parse_from_rfc3339(since).unwrap();
        let off = (since.to_utc() - ten_days_ago).num_seconds().abs();
        assert!(off < 120, "{line}");
    }
    // Nothing breached, so the volume headline is yesterday, a complete day.
    let volume = lines.iter().find(|l| l["check"] == "volume").unwrap();
    assert_eq!(volume["partial"], false, "{volume}");
    for line in lines.iter().filter(|l| l["check"] != "volume") {
        assert!(line.get("partial").is_none(), "only a volume says: {line}");
    }
    for line in lines.iter().filter(|l| l["check"] != "null_rate") {
        assert!(line.get("since").is_none(), "only a null rate says: {line}");
    }

    // A recorded baseline far above the table: a breach, exit 1.
    let text = std::fs::read_to_string(&config).unwrap() + "expected_rows = 100000\n";
    std::fs::write(&config, text).unwrap();
    let out = dataward(&args, &[]);
    let lines = json_lines(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(lines
        .iter()
        .any(|l| l["check"] == "row_count" && l["verdict"] == "low"));
}

#[test]
fn bad_config_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(
        &config,
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"postgres://me:hunter2@db/x\"\n",
    )
    .unwrap();
    let out = dataward(
        &["check", "--config", config.to_str().unwrap(), "--once"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml: line 3"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    std::fs::write(
        &config,
        "[[monitor]]\nwarehouse = \"x\"\ntable = \"t\"\nchecks = [\"nope\"]\n",
    )
    .unwrap();
    let out = dataward(
        &["check", "--config", config.to_str().unwrap(), "--once"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("line 4"), "{err}");

    std::fs::write(
        &config,
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nname = \"events_nulls\"\nwarehouse = \"local\"\ntable = \"events\"\n\
         checks = [\"null_rate\"]\ntimestamp_column = \"at\"\nnull_window = \"a day\"\n",
    )
    .unwrap();
    let out = dataward(
        &["check", "--config", config.to_str().unwrap(), "--once"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml: line 11"), "{err}");
    assert!(
        err.contains("events_nulls") && err.contains("null_window"),
        "{err}"
    );
}

#[test]
fn check_reads_the_postgres_url_from_the_environment() {
    let Some(pg) = support::pg::start_or_skip("check_reads_the_postgres_url") else {
        return;
    };
    pg.execute("CREATE TABLE t (id int, at timestamptz); INSERT INTO t VALUES (1, now());");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pg.toml");
    std::fs::write(
        &config,
        "[warehouse.main]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n\n\
         [[monitor]]\nwarehouse = \"main\"\ntable = \"public.t\"\n\
         checks = [\"row_count\", \"freshness\"]\ntimestamp_column = \"at\"\n",
    )
    .unwrap();
    let args = [
        "check",
        "--config",
        config.to_str().unwrap(),
        "--once",
        "--json",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ];
    let out = dataward(&args, &[("DATAWARD_PG_URL", pg.url.as_str())]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines[0]["observed"], 1.0);
    assert_eq!(lines[0]["verdict"], "learning");
    assert_eq!(out.status.code(), Some(0));

    // Without the variable the command says which one is missing.
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    let out = command
        .args(args)
        .env_remove("DATAWARD_PG_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("DATAWARD_PG_URL"));
}

fn weekly_csv(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("date,value\n");
    let start = chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(); // a Monday
    for i in 0..42 {
        let day = start + chrono::Days::new(i);
        let mut value = if i % 7 >= 5 {
            400.0
        } else {
            1000.0 + (i % 3) as f64 * 10.0
        };
        if i == 40 {
            value *= 0.58; // a Saturday at 58%
        }
        text.push_str(&format!("{day},{value}\n"));
    }
    let path = dir.join("history.csv");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn backtest_prints_a_verdict_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let csv = weekly_csv(dir.path());
    let out = dataward(
        &[
            "backtest",
            "--csv",
            csv.to_str().unwrap(),
            "--monitor",
            "volume",
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 42);
    for field in [
        "date",
        "value",
        "verdict",
        "expected_low",
        "expected_high",
        "score",
    ] {
        assert!(lines[30].get(field).is_some(), "{field}");
    }
    assert_eq!(lines[0]["verdict"], "learning");
    assert_eq!(lines[40]["date"], "2024-02-10");
    assert_eq!(lines[40]["verdict"], "low");
    let breaches = lines
        .iter()
        .filter(|l| l["verdict"] != "ok" && l["verdict"] != "learning");
    assert_eq!(breaches.count(), 1);

    let out = dataward(&["backtest", "--csv", csv.to_str().unwrap()], &[]);
    let table = String::from_utf8_lossy(&out.stdout);
    let marked: Vec<&str> = table.lines().filter(|l| l.starts_with("!!")).collect();
    assert_eq!(marked.len(), 1, "{table}");
    assert!(marked[0].contains("2024-02-10") && marked[0].contains("low"));
}

#[test]
fn backtest_scores_its_flags_against_labelled_windows() {
    let dir = tempfile::tempdir().unwrap();
    let csv = weekly_csv(dir.path());
    let labels = dir.path().join("windows.json");
    // The short Saturday is labelled, and so is a Monday-Tuesday nothing flags.
    std::fs::write(
        &labels,
        r#"{"history.csv": [["2024-02-10", "2024-02-10"], ["2024-02-05", "2024-02-06"]],
            "other.csv": []}"#,
    )
    .unwrap();
    let args = |json: bool| {
        let mut args = vec![
            "backtest",
            "--csv",
            csv.to_str().unwrap(),
            "--labels",
            labels.to_str().unwrap(),
        ];
        if json {
            args.push("--json");
        }
        dataward(&args, &[])
    };
    let out = args(true);
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 43, "a verdict per row, then the score");
    let score = &lines[42]["score"];
    assert_eq!(score["windows"], 2);
    assert_eq!(score["caught"], 1);
    assert_eq!(score["flags"], 1);
    assert_eq!(score["flags_in_windows"], 1);
    assert_eq!(score["precision"], 1.0);
    assert_eq!(score["recall"], 0.5);
    let table = String::from_utf8_lossy(&args(false).stdout).to_string();
    assert!(
        table.contains("1/2 windows caught (recall 0.500); 1/1 flagged days inside a window (precision 1.000); F1 0.667"),
        "{table}"
    );

    // A labels file that cannot be used says why, naming itself, and prints nothing else.
    for (text, says) in [
        (r#"{"other.csv": []}"#, "no windows for \"history.csv\""),
        (
            r#"{"history.csv": [["2024-02-10", "2024-02-01"]]}"#,
            "window 1: its last day comes before its first",
        ),
        (
            r#"{"history.csv": [["10/02/2024", "2024-02-11"]]}"#,
            "is not a date like 2024-05-11",
        ),
        (r#"["history.csv"]"#, "expected {"),
    ] {
        std::fs::write(&labels, text).unwrap();
        let out = args(false);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("windows.json") && err.contains(says),
            "{text}: {err}"
        );
        assert!(out.stdout.is_empty(), "{text}");
    }
}

#[test]
fn a_bad_csv_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "date,value\n2024-01-01,5\n2024-01-02,five\n").unwrap();
    let out = dataward(&["backtest", "--csv", csv.to_str().unwrap(), "--json"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv: line 3"), "{err}");

    std::fs::write(&csv, "2024-01-01,5\n").unwrap();
    let out = dataward(&["backtest", "--csv", csv.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("header"));
}

fn check_once(config: &Path, data: &Path, env: &[(&str, &str)]) -> Output {
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
fn a_check_that_cannot_run_exits_3_and_a_missing_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let config = dir.path().join("dataward.toml");
    let base = "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\nchecks = [\"row_count\"]\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"gone\"\nchecks = [\"row_count\", \"schema\"]\n";
    std::fs::write(&config, base).unwrap();
    let data = dir.path().join("data");
    let out = check_once(&config, &data, &[]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert_eq!(lines[0]["health"], "ok");
    for line in &lines[1..] {
        assert_eq!(line["table"], "gone");
        assert_eq!(line["health"], "error", "{line}");
        assert_eq!(line["verdict"], "unknown", "{line}");
        assert!(line["observed"].is_null(), "never a count of 0: {line}");
        let message = line["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("gone"),
            "the message names the table: {line}"
        );
    }
    assert_eq!(out.status.code(), Some(3), "{lines:#?}");

    // A breach elsewhere wins: exit 1.
    let text = base.replace(
        "checks = [\"row_count\"]\n",
        "checks = [\"row_count\"]\nexpected_rows = 100000\n",
    );
    std::fs::write(&config, text).unwrap();
    let out = check_once(&config, &data, &[]);
    assert_eq!(out.status.code(), Some(1), "{:#?}", json_lines(&out));
}

#[test]
fn nulls_in_the_last_loads_are_a_breach_named_by_their_window() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\nchecks = [\"null_rate\"]\n\
         timestamp_column = \"at\"\nnull_columns = [\"kind\"]\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    // Judged from the first poll on, against the table's own days.
    for _ in 0..3 {
        let out = check_once(&config, &data, &[]);
        let lines = json_lines(&out);
        assert_eq!(lines[0]["verdict"], "ok", "{lines:#?}");
        assert_eq!(out.status.code(), Some(0));
    }
    // The last two hourly loads lose their kind: 2 more nulls in a day of 24 rows,
    // nothing next to five weeks of them.
    rusqlite::Connection::open(dir.path().join("wh.db"))
        .unwrap()
        .execute(
            "UPDATE events SET kind = NULL
             WHERE at >= strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-150 minutes')",
            [],
        )
        .unwrap();
    let out = dataward(
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--once",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("events.kind"), "{text}");
    assert!(text.contains("high"), "{text}");
    assert!(text.contains("% null in rows loaded since "), "{text}");
}

#[test]
fn a_config_without_monitors_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let config = dir.path().join("empty.toml");
    for text in [
        "",
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n",
    ] {
        std::fs::write(&config, text).unwrap();
        let out = check_once(&config, &dir.path().join("data"), &[]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("empty.toml") && err.contains("no [[monitor]]"),
            "{err}"
        );
    }
}

#[test]
fn a_path_in_the_config_that_does_not_exist_is_bad_input_and_never_created() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
    let config = dir.path().join("paths.toml");
    let monitor =
        "\n[[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\nchecks = [\"row_count\"]\n";
    for (text, key, missing) in [
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"typo.db\"\n".to_string(),
            "warehouse.local.path",
            "typo.db",
        ),
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\nattach = { RAW = \"raw.db\" }\n"
                .to_string(),
            "warehouse.local.attach.RAW",
            "raw.db",
        ),
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n[orchestrator]\nkind = \"demo\"\npath = \"control.db\"\n"
                .to_string(),
            "orchestrator.path",
            "control.db",
        ),
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n[lineage]\nmanifest = \"target/manifest.json\"\n"
                .to_string(),
            "lineage.manifest",
            "target/manifest.json",
        ),
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n[lineage]\nmanifest = \"manifest.json\"\nnotes = \"notes.toml\"\n"
                .to_string(),
            "lineage.notes",
            "notes.toml",
        ),
        (
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n[lineage]\nmanifest = \"manifest.json\"\ncatalog = \"catalog.json\"\n"
                .to_string(),
            "lineage.catalog",
            "catalog.json",
        ),
    ] {
        std::fs::write(&config, format!("{text}{monitor}")).unwrap();
        let out = check_once(&config, &dir.path().join("data"), &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {err}");
        assert!(err.contains("paths.toml: line "), "{key}: {err}");
        assert!(err.contains(key) && err.contains(missing), "{key}: {err}");
        assert!(!dir.path().join(missing).exists(), "{missing} was created");
    }
}

#[test]
fn postgres_checks_that_cannot_run_exit_3() {
    let Some(pg) = support::pg::start_or_skip("postgres_checks_that_cannot_run_exit_3") else {
        return;
    };
    pg.execute("CREATE TABLE t (id int); INSERT INTO t VALUES (1); CREATE TABLE locked (id int);");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pg.toml");
    let write = |table: &str| {
        std::fs::write(
            &config,
            format!(
                "[warehouse.main]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\ncheck_timeout = \"1s\"\n\n\
                 [[monitor]]\nwarehouse = \"main\"\ntable = \"public.t\"\nchecks = [\"row_count\"]\n\n\
                 [[monitor]]\nwarehouse = \"main\"\ntable = \"{table}\"\nchecks = [\"row_count\"]\n"
            ),
        )
        .unwrap()
    };
    let data = dir.path().join("data");
    let url = pg.url.clone();
    let run = |url: &str| {
        let out = check_once(&config, &data, &[("DATAWARD_PG_URL", url)]);
        let lines = json_lines(&out);
        (out.status.code(), lines)
    };

    write("public.t");
    let (code, lines) = run(&url);
    assert_eq!(code, Some(0), "{lines:#?}");

    // A relation that does not exist.
    write("public.nope");
    let (code, lines) = run(&url);
    assert_eq!(lines[1]["health"], "error", "{lines:#?}");
    assert_eq!(code, Some(3), "{lines:#?}");

    // A lock held on one table: that check times out, the other is ok.
    write("public.locked");
    let mut holder = pg.client();
    let mut tx = holder.transaction().unwrap();
    tx.batch_execute("LOCK TABLE locked IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let (code, lines) = run(&url);
    tx.rollback().unwrap();
    assert_eq!(lines[0]["health"], "ok", "{lines:#?}");
    assert_ne!(lines[1]["health"], "ok", "{lines:#?}");
    assert_eq!(code, Some(3), "{lines:#?}");

    // A failed login.
    let wrong = url.replace("postgres@", "nobody@");
    let (code, lines) = run(&wrong);
    assert!(
        lines.iter().all(|l| l["health"] == "unreachable"),
        "{lines:#?}"
    );
    assert_eq!(code, Some(3), "{lines:#?}");

    // The server down.
    pg.stop();
    let (code, lines) = run(&url);
    assert!(
        lines.iter().all(|l| l["health"] == "unreachable"),
        "{lines:#?}"
    );
    assert_eq!(code, Some(3), "{lines:#?}");
}

/// A SQLite warehouse `wh.db` in `dir` with `table`: `days` days of rows ending
/// yesterday, each weekday its own level (a quiet weekend) give or take a little, and a
/// few rows at today's midnight (a day still loading, which no backtest judges).
fn volume_table(dir: &Path, table: &str, days: u32) {
    let today = ["(date('now') || 'T00:00:00Z')"; 5].join(", ");
    let conn = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, at TEXT NOT NULL);
         WITH RECURSIVE
           d(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM d WHERE n < {days}),
           day(day, rows) AS (
             SELECT date('now', '-' || n || ' days'),
                    CASE strftime('%w', 'now', '-' || n || ' days')
                      WHEN '0' THEN 600 WHEN '1' THEN 2200 WHEN '2' THEN 2000
                      WHEN '3' THEN 2050 WHEN '4' THEN 1900 WHEN '5' THEN 1700
                      ELSE 900 END + (n * 37) % 101 - 50
             FROM d),
           k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 2500)
         INSERT INTO {table} (at)
         SELECT day || 'T' || printf('%02d:%02d:00Z', i % 24, (i * 7) % 60)
         FROM day JOIN k ON k.i < day.rows;
         INSERT INTO {table} (at) VALUES {today};"
    ))
    .unwrap();
}

const VOLUME_CONFIG: &str = "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
    [[monitor]]\nname = \"orders_volume\"\nwarehouse = \"local\"\ntable = \"orders\"\n\
    checks = [\"volume\", \"row_count\"]\ntimestamp_column = \"at\"\n\n\
    [[monitor]]\nname = \"orders_rows\"\nwarehouse = \"local\"\ntable = \"orders\"\n\
    checks = [\"row_count\"]\n\n\
    [[monitor]]\nwarehouse = \"local\"\ntable = \"young\"\n\
    checks = [\"volume\"]\ntimestamp_column = \"at\"\n";

fn inject(config: &Path, monitor: &str, json: bool) -> Output {
    let mut args = vec![
        "backtest",
        "--inject",
        "--monitor",
        monitor,
        "--config",
        config.to_str().unwrap(),
    ];
    if json {
        args.push("--json");
    }
    dataward(&args, &[])
}

#[test]
fn backtest_inject_replays_a_monitored_table_with_each_fault_kind() {
    let dir = tempfile::tempdir().unwrap();
    volume_table(dir.path(), "orders", 120);
    volume_table(dir.path(), "young", 10);
    let config = dir.path().join("dataward.toml");
    std::fs::write(&config, VOLUME_CONFIG).unwrap();

    let out = inject(&config, "orders_volume", true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let lines = json_lines(&out);
    assert_eq!(
        lines.len(),
        6,
        "a line per fault kind, then the summary: {lines:#?}"
    );
    let kinds: Vec<&str> = lines[..5]
        .iter()
        .map(|l| l["fault"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "drop",
            "spike",
            "missed_load",
            "partial_load",
            "level_shift"
        ]
    );
    for line in &lines[..5] {
        let injected = line["injected"].as_u64().unwrap();
        assert!(injected >= 5, "several positions: {line}");
        assert!(line["caught"].as_u64().is_some(), "{line}");
        let windows = line["windows"].as_array().unwrap();
        assert_eq!(windows.len() as u64, injected, "{line}");
        // Each on a weekday of its own, all inside the history read.
        let mut weekdays: Vec<chrono::Weekday> = windows
            .iter()
            .map(|w| {
                chrono::NaiveDate::parse_from_str(w["first_day"].as_str().unwrap(), "%Y-%m-%d")
                    .unwrap()
                    .weekday()
            })
            .collect();
        weekdays.sort_by_key(|d| d.num_days_from_monday());
        weekdays.dedup();
        assert_eq!(weekdays.len() as u64, injected, "{line}");
        // A clean table: nothing but the faults is flagged.
        assert_eq!(line["false_alarms"], 0, "{line}");
    }
    for kind in ["missed_load", "level_shift"] {
        let line = lines.iter().find(|l| l["fault"] == kind).unwrap();
        assert_eq!(
            line["caught"], line["injected"],
            "caught at every position: {line}"
        );
        assert_eq!(line["recall"], 1.0, "{line}");
    }
    let summary = &lines[5]["summary"];
    assert_eq!(summary["monitor"], "orders_volume", "{summary}");
    assert_eq!(summary["table"], "orders", "{summary}");
    assert_eq!(summary["flags_as_is"], serde_json::json!([]), "{summary}");
    assert_eq!(summary["false_alarms"], 0, "{summary}");
    assert_eq!(summary["false_alarms_per_1000_days"], 0.0, "{summary}");
    // The monitor's lookback: the 98 whole days before today, which is still loading.
    assert_eq!(summary["days"], 98, "{summary}");
    let yesterday = (chrono::Utc::now().date_naive() - chrono::Days::new(1)).to_string();
    assert_eq!(summary["last_day"], yesterday.as_str(), "{summary}");

    // The same as a table a person reads: every kind with its caught count.
    let out = inject(&config, "orders_volume", false);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "one-day drop",
        "spike",
        "missed load",
        "two-day partial load",
        "level shift",
    ] {
        let row = text
            .lines()
            .find(|l| l.trim_start_matches("!!").trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}: {text}"));
        assert!(
            row.split_whitespace()
                .filter(|w| w.parse::<u64>().is_ok())
                .count()
                >= 2,
            "injected and caught on the {name} row: {text}"
        );
    }
    assert!(
        text.contains("flags on the history as it is: none"),
        "{text}"
    );
    assert!(text.contains("false alarms: 0"), "{text}");
    assert!(text.contains("verdict:"), "{text}");
}

#[test]
fn backtest_inject_refuses_what_it_cannot_replay() {
    let dir = tempfile::tempdir().unwrap();
    volume_table(dir.path(), "orders", 120);
    volume_table(dir.path(), "young", 10);
    let config = dir.path().join("dataward.toml");
    std::fs::write(&config, VOLUME_CONFIG).unwrap();
    let refused = |monitor: &str, says: &[&str]| {
        let out = inject(&config, monitor, false);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{monitor}: {err}");
        for part in says {
            assert!(err.contains(part), "{monitor}: {part:?} not in {err}");
        }
        assert!(out.stdout.is_empty(), "{monitor}");
    };
    // An unknown name: the config file named, and the monitors it has.
    refused(
        "orders_volumes",
        &[
            "dataward.toml",
            "\"orders_volumes\"",
            "orders_volume, orders_rows, local.young",
        ],
    );
    // A monitor without a volume check.
    refused("orders_rows", &["orders_rows", "volume"]);
    // Ten days of rows: the days there are and the days needed, not a table of zeros.
    refused("local.young", &["local.young", "10 complete days", "23"]);
}

#[test]
fn backtest_inject_exits_3_when_the_warehouse_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pg.toml");
    std::fs::write(
        &config,
        "[warehouse.main]\nkind = \"postgres\"\nurl_env = \"DATAWARD_INJECT_PG_URL\"\n\n\
         [[monitor]]\nname = \"t\"\nwarehouse = \"main\"\ntable = \"public.t\"\n\
         checks = [\"volume\"]\ntimestamp_column = \"at\"\n",
    )
    .unwrap();
    // Nothing listens on port 1.
    let out = dataward(
        &[
            "backtest",
            "--inject",
            "--monitor",
            "t",
            "--config",
            config.to_str().unwrap(),
        ],
        &[(
            "DATAWARD_INJECT_PG_URL",
            "postgresql://postgres@127.0.0.1:1/postgres",
        )],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("warehouse main"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn backtest_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let csv = weekly_csv(dir.path());
    let csv = csv.to_str().unwrap();
    for (args, says) in [
        (vec!["backtest"], "--csv"),
        (
            vec!["backtest", "--csv", csv, "--inject", "--monitor", "x"],
            "--inject",
        ),
        (vec!["backtest", "--inject"], "--monitor"),
        (
            vec![
                "backtest",
                "--inject",
                "--monitor",
                "x",
                "--labels",
                "w.json",
            ],
            "--labels",
        ),
    ] {
        let out = dataward(&args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A query past the warehouse's check_timeout is stopped by the warehouse (SQLite's
/// interrupt), not only given up on: with as many endless queries as the warehouse
/// runs at once, the check queued behind them still runs, and the poll ends.
#[test]
fn sqlite_queries_past_check_timeout_are_interrupted_and_the_poll_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let conn = rusqlite::Connection::open(dir.path().join("wh.db")).unwrap();
    conn.execute_batch(
        "CREATE VIEW endless AS
         WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n;",
    )
    .unwrap();
    drop(conn);
    let config = dir.path().join("dataward.toml");
    // max_concurrent endless checks, so the last check runs only once one is stopped.
    let mut text = "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\
                    max_concurrent = 2\ncheck_timeout = \"1s\"\n"
        .to_string();
    for table in ["endless", "endless", "events"] {
        text.push_str(&format!(
            "\n[[monitor]]\nwarehouse = \"local\"\ntable = \"{table}\"\nchecks = [\"row_count\"]\n"
        ));
    }
    std::fs::write(&config, text).unwrap();
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
    assert_eq!(lines.len(), 3, "{}", binary::text(&out));
    for line in &lines[..2] {
        assert_eq!(line["health"], "error", "{line}");
        let message = line["message"].as_str().unwrap_or_default();
        // The poller's word or the warehouse's, whichever came first: both say so.
        for needed in ["timed out", "check_timeout"] {
            assert!(message.contains(needed), "{needed:?} not in {message:?}");
        }
    }
    assert_eq!(lines[2]["table"], "events", "{lines:#?}");
    assert_eq!(lines[2]["health"], "ok", "{lines:#?}");
    assert_eq!(out.status.code(), Some(3), "{lines:#?}");
}

/// Two tables (one whose name needs quoting) in a SQLite warehouse, with `extra` in
/// the warehouse's section; returns the config's path.
fn two_table_config(dir: &Path, extra: &str) -> std::path::PathBuf {
    sqlite_estate(dir);
    let conn = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    conn.execute_batch(
        "CREATE TABLE \"order items\" (id INTEGER, at TEXT);
         INSERT INTO \"order items\" VALUES (1, '2024-01-01T00:00:00Z'), (2, NULL);",
    )
    .unwrap();
    let config = dir.join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n{extra}\n\
             [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
             checks = [\"row_count\", \"freshness\", \"schema\"]\ntimestamp_column = \"at\"\n\n\
             [[monitor]]\nwarehouse = \"local\"\ntable = \"order items\"\n\
             checks = [\"row_count\", \"null_rate\"]\nnull_columns = [\"at\"]\n"
        ),
    )
    .unwrap();
    config
}

fn check_once_with(config: &Path, data: &Path, more: &[&str]) -> Output {
    let mut args = vec![
        "check",
        "--config",
        config.to_str().unwrap(),
        "--once",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    dataward(&args, &[])
}

#[test]
fn check_json_says_what_each_poll_cost_each_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let config = two_table_config(dir.path(), "");
    let out = check_once_with(&config, &dir.path().join("data"), &["--json", "--explain"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let every = every_json_line(&out);
    let polls: Vec<&Value> = every.iter().filter_map(|l| l.get("poll")).collect();
    assert_eq!(polls.len(), 1, "{every:#?}");
    let poll = polls[0];
    assert_eq!(poll["warehouse"], "local", "{poll}");
    // The figure is the statements the poll sent, each one listed by --explain.
    let statements = every
        .iter()
        .filter(|l| l.get("statement").is_some())
        .count();
    assert!(statements >= 3, "{every:#?}");
    assert_eq!(poll["queries"], statements as u64, "{poll}");
    assert!(poll["sessions"].as_u64().unwrap() >= 1, "{poll}");
    // SQLite does not say what a statement scanned: said so, not made up.
    assert_eq!(poll["scanned_bytes"], Value::Null, "{poll}");
    assert_eq!(poll["scanned"], "not reported", "{poll}");
    // The check lines are as they were.
    assert_eq!(json_lines(&out).len(), 5, "{every:#?}");
}

#[test]
fn check_explain_prints_the_sql_each_monitor_sent_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let config = two_table_config(dir.path(), "");
    let out = check_once_with(&config, &dir.path().join("data"), &["--explain"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // Each monitor heads what it sent, with its table and checks.
    assert!(
        text.contains(
            "-- local: monitor local.events (table events: row_count, freshness, schema)"
        ),
        "{text}"
    );
    let items = text
        .find("-- local: monitor local.order items (table order items: row_count, null_rate)")
        .unwrap_or_else(|| panic!("{text}"));
    // The table read under its monitor, the name quoted as SQLite was sent it.
    let after_items = &text[items..];
    let next = after_items[3..]
        .find("\n-- local:")
        .map_or(after_items.len(), |i| i + 3);
    let items_sql = &after_items[..next];
    assert!(items_sql.contains("FROM \"order items\""), "{items_sql}");
    assert!(items_sql.contains(" rows returned"), "{items_sql}");
    // The catalog, asked once for the schema check.
    assert!(
        text.contains("-- local: columns of events in schema"),
        "{text}"
    );
    assert!(
        text.contains("pragma_table_info('events', 'main') ORDER BY cid;\n--   3 rows returned"),
        "{text}"
    );
    assert!(
        text.contains("-- poll cost, warehouse local: ") && text.contains("scanned not reported"),
        "{text}"
    );
}

#[test]
fn a_poll_past_max_queries_per_poll_skips_the_rest_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let config = two_table_config(dir.path(), "max_queries_per_poll = 1\n");
    let out = check_once_with(&config, &dir.path().join("data"), &["--json"]);
    let every = every_json_line(&out);
    let lines = json_lines(&out);
    let skipped: Vec<&Value> = lines.iter().filter(|l| l["health"] == "skipped").collect();
    assert!(!skipped.is_empty(), "{every:#?}");
    for line in &skipped {
        let message = line["message"].as_str().unwrap();
        assert!(
            message.contains("warehouse.local.max_queries_per_poll") && message.contains("1 "),
            "{line}"
        );
        // Not a breach, and nothing measured.
        assert_ne!(line["verdict"], "breach", "{line}");
        assert_eq!(line["observed"], Value::Null, "{line}");
    }
    // Not everything was skipped: the budget let one statement through.
    assert!(lines.iter().any(|l| l["health"] == "ok"), "{every:#?}");
    let poll = every.iter().find_map(|l| l.get("poll")).unwrap();
    assert_eq!(poll["max_queries_per_poll"], 1, "{poll}");
    assert_eq!(poll["guard_reached"], true, "{poll}");
    // A check not run is a health problem, never a breach: exit 3.
    assert_eq!(out.status.code(), Some(3), "{every:#?}");
}

#[test]
fn the_next_poll_starts_afresh_after_the_guard_stopped_one() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = two_table_config(dir.path(), "max_queries_per_poll = 1\n");
    let config = dataward::config::Config::load(&config_path).unwrap();
    let poller = dataward::monitor::poller::Poller::from_config(&config).unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    for poll in 0..2 {
        let observations = poller
            .poll(&state, &config.monitor, chrono::Utc::now())
            .unwrap();
        let ok = observations
            .iter()
            .filter(|o| o.health.as_str() == "ok")
            .count();
        let skipped = observations
            .iter()
            .filter(|o| o.health.as_str() == "skipped")
            .count();
        assert!(ok > 0 && skipped > 0, "poll {poll}: {observations:#?}");
    }
}

#[test]
fn a_bad_max_queries_per_poll_is_refused_naming_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["0", "-1", "\"ten\""] {
        let config = two_table_config(dir.path(), &format!("max_queries_per_poll = {value}\n"));
        let out = check_once_with(&config, &dir.path().join("data"), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains(config.to_str().unwrap()) && stderr.contains("max_queries_per_poll"),
            "{value}: {stderr}"
        );
        if value == "0" {
            assert!(stderr.contains("at least 1"), "{stderr}");
        }
        std::fs::remove_file(dir.path().join("wh.db")).unwrap();
    }
}

/// Rows of the state database's `observation` table, read without writing.
fn observations(data: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        data.join("dataward.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return 0;
    };
    conn.query_row("SELECT count(*) FROM observation", [], |r| r.get(0))
        .unwrap_or(0)
}

/// One writer to the state database: `check` beside a running `dataward serve` polls
/// and prints its verdicts, judged against the engine's history, and stores nothing
/// (the engine stores its own polls); with no engine, it stores what it polled.
#[test]
fn check_beside_a_serving_engine_prints_verdicts_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_estate(dir.path());
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
         checks = [\"row_count\", \"freshness\"]\ntimestamp_column = \"at\"\nevery = \"1d\"\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let engine = binary::Engine(
        std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The engine's first poll stored; the next is a day away.
    let mut stored = 0;
    for _ in 0..1200 {
        stored = observations(&data);
        if stored > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(stored > 0, "the engine never stored its first poll");

    let out = check_once(&config, &data, &[]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        binary::text(&out)
    );
    assert_eq!(json_lines(&out).len(), 2, "{}", binary::text(&out));
    assert_eq!(observations(&data), stored, "check wrote beside the engine");
    assert!(said.contains("not stored"), "{said}");
    drop(engine);

    // No engine: check is the one writer, and stores what it polled.
    let out = check_once(&config, &data, &[]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        binary::text(&out)
    );
    assert!(
        observations(&data) > stored,
        "check stored nothing with no engine"
    );
}

/// dbt's run_results.json with one model built, finished at `completed_at`.
fn run_results(completed_at: &str) -> String {
    serde_json::json!({
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
            "generated_at": completed_at,
        },
        "results": [{
            "status": "success",
            "timing": [{"name": "execute", "started_at": completed_at, "completed_at": completed_at}],
            "message": "SELECT 2000",
            "unique_id": "model.jaffle_shop.orders",
        }],
    })
    .to_string()
}

/// A model built by a nightly dbt run holds a day's rows only once the run after that
/// day has finished: before it, the day is not yet built, not short.
#[test]
fn a_day_is_judged_short_only_once_the_model_has_been_built_for_it() {
    let dir = tempfile::tempdir().unwrap();
    volume_table(dir.path(), "orders", 70);
    // Last night's run has not come yet: yesterday has no rows.
    let conn = rusqlite::Connection::open(dir.path().join("wh.db")).unwrap();
    conn.execute(
        "DELETE FROM orders WHERE substr(at, 1, 10) = date('now', '-1 day')",
        [],
    )
    .unwrap();
    let manifest = Path::new("/work/shared/fixtures/dbt/jaffle_shop-manifest.json");
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [lineage]\nmanifest = {manifest:?}\nrun_results = \"run_results.json\"\n\n\
             [[monitor]]\nwarehouse = \"local\"\ntable = \"orders\"\n\
             checks = [\"volume\", \"row_count\"]\ntimestamp_column = \"at\"\n"
        ),
    )
    .unwrap();
    let today = chrono::Utc::now().date_naive();
    let yesterday = today - chrono::Days::new(1);
    let results = dir.path().join("run_results.json");

    // The last build finished yesterday morning: it built the day before, not yesterday.
    std::fs::write(&results, run_results(&format!("{yesterday}T03:10:00Z"))).unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = check_once(&config, data.path(), &[]);
    let lines = json_lines(&out);
    let (volume, rows) = (&lines[0], &lines[1]);
    assert_eq!(out.status.code(), Some(0), "{lines:#?}");
    // The row count is judged up to yesterday's start, where the build reached.
    assert_eq!(rows["verdict"], "ok", "{rows}");
    let rows_not_built = rows["not_built"].as_str().unwrap_or_default();
    assert!(
        rows_not_built.contains(&format!("{yesterday}T00:00:00Z")),
        "{rows}"
    );
    assert_eq!(volume["verdict"], "ok", "{volume}");
    let not_built = volume["not_built"].as_str().unwrap_or_default();
    assert!(
        not_built.contains(&yesterday.to_string())
            && not_built.contains("not yet built")
            && not_built.contains("model.jaffle_shop.orders")
            && not_built.contains(&format!("{yesterday}T03:10:00Z")),
        "{volume}"
    );

    // The run for yesterday has finished (just after midnight): yesterday is short.
    std::fs::write(&results, run_results(&format!("{today}T00:00:01Z"))).unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = check_once(&config, data.path(), &[]);
    let lines = json_lines(&out);
    let (volume, rows) = (&lines[0], &lines[1]);
    assert_eq!(volume["verdict"], "low", "{volume}");
    assert_eq!(rows["verdict"], "low", "{rows}");
    assert_eq!(volume["day"], yesterday.to_string(), "{volume}");
    assert_eq!(out.status.code(), Some(1), "{lines:#?}");
}
