//! Baselines from the table's own history: a fault already present when dataward is
//! installed is seen at its first poll. Through the real binary (`dataward check`)
//! against a real PostgreSQL server holding 70 days of rows, and against SQLite.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn check(config: &Path, data: &Path, env: &[(&str, &str)]) -> (Output, Vec<Value>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command.args([
        "check",
        "--config",
        config.to_str().unwrap(),
        "--once",
        "--json",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("run dataward");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .filter(|l| l.get("poll").is_none() && l.get("statement").is_none())
        .collect();
    (out, lines)
}

fn line<'a>(lines: &'a [Value], check: &str, column: Option<&str>) -> &'a Value {
    lines
        .iter()
        .find(|l| l["check"] == check && column.is_none_or(|c| l["column"] == c))
        .unwrap_or_else(|| panic!("no {check} {column:?} in {lines:#?}"))
}

/// 70 days of trips up to now, one every ten minutes (one in two at weekends), about
/// one in a hundred without a driver.
fn load_trips(pg: &support::pg::PgServer) {
    pg.execute(
        "CREATE TABLE trips (id bigserial PRIMARY KEY, driver_id int, fare numeric,
                             loaded_at timestamptz NOT NULL);
         INSERT INTO trips (driver_id, fare, loaded_at)
         SELECT CASE WHEN n % 97 = 0 THEN NULL ELSE n % 500 END, n % 40,
                now() - make_interval(mins => n * 10)
         FROM generate_series(1, 70 * 144) AS n
         WHERE extract(isodow FROM now() - make_interval(mins => n * 10)) < 6 OR n % 2 = 0;",
    );
}

fn pg_config(dir: &Path, checks: &str) -> std::path::PathBuf {
    let config = dir.join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.main]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n\n\
             [[monitor]]\nname = \"trips\"\nwarehouse = \"main\"\ntable = \"public.trips\"\n\
             checks = {checks}\ntimestamp_column = \"loaded_at\"\n\
             null_columns = [\"driver_id\", \"fare\"]\n"
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_null_spike_in_the_last_day_is_high_at_the_first_poll() {
    let Some(pg) = support::pg::start_or_skip("a_null_spike_in_the_last_day") else {
        return;
    };
    load_trips(&pg);
    // The last 36 hours: three in five trips without a driver.
    pg.execute(
        "UPDATE trips SET driver_id = NULL
         WHERE loaded_at >= now() - interval '36 hours' AND id % 5 < 3",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = pg_config(dir.path(), "[\"row_count\", \"null_rate\"]");
    let (out, lines) = check(
        &config,
        &dir.path().join("data"),
        &[("DATAWARD_PG_URL", &pg.url)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let driver = line(&lines, "null_rate", Some("driver_id"));
    assert_eq!(driver["verdict"], "high", "{driver}\n{stderr}");
    let observed = driver["observed"].as_f64().unwrap();
    assert!((observed - 0.6).abs() < 0.05, "{driver}");
    // Against its usual rate, learned from the table's days: about one in a hundred.
    let usual = driver["expected_baseline"].as_f64().unwrap();
    assert!((usual - 1.0 / 97.0).abs() < 0.005, "{driver}");
    assert!(driver.get("from_polls").is_none(), "{driver}");
    // The other column, and the table's growth, are as usual.
    let fare = line(&lines, "null_rate", Some("fare"));
    assert_eq!(fare["verdict"], "ok", "{fare}");
    assert_eq!(
        line(&lines, "row_count", None)["verdict"],
        "ok",
        "{lines:#?}"
    );
    assert_eq!(out.status.code(), Some(1), "a breach: {stderr}");

    // Read again from what was stored (only the recent days re-read): the same verdict.
    let (_, again) = check(
        &config,
        &dir.path().join("data"),
        &[("DATAWARD_PG_URL", &pg.url)],
    );
    let driver = line(&again, "null_rate", Some("driver_id"));
    assert_eq!(driver["verdict"], "high", "{driver}");
    assert_eq!(driver["expected_baseline"].as_f64().unwrap(), usual);
}

#[test]
fn a_row_count_short_of_its_last_day_is_low_at_the_first_poll() {
    let Some(pg) = support::pg::start_or_skip("a_row_count_short_of_its_last_day") else {
        return;
    };
    load_trips(&pg);
    // Nine in ten of the last day's trips are gone.
    pg.execute("DELETE FROM trips WHERE loaded_at >= now() - interval '1 day' AND id % 10 > 0");
    let dir = tempfile::tempdir().unwrap();
    let config = pg_config(dir.path(), "[\"row_count\"]");
    let (out, lines) = check(
        &config,
        &dir.path().join("data"),
        &[("DATAWARD_PG_URL", &pg.url)],
    );
    let count = line(&lines, "row_count", None);
    assert_eq!(
        count["verdict"],
        "low",
        "{count}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: f64 = pg
        .client()
        .query_one("SELECT count(*) FROM trips", &[])
        .unwrap()
        .get::<_, i64>(0) as f64;
    assert_eq!(count["observed"].as_f64().unwrap(), rows);
    // Usually a day adds 144 trips (72 at a weekend): the baseline is the table a day
    // ago plus one such day.
    let usual = count["expected_baseline"].as_f64().unwrap();
    let short = usual - rows;
    assert!((60.0..=144.0).contains(&short), "{count}");
    assert_eq!(out.status.code(), Some(1));
}

/// Without a timestamp column the table's days cannot be read: the baselines are
/// learned from dataward's polls, and each check says so.
#[test]
fn without_a_timestamp_column_the_baselines_learn_from_polls_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("wh.db")).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, at TEXT NOT NULL);
         WITH RECURSIVE h(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM h WHERE n < 840)
         INSERT INTO events (kind, at)
         SELECT CASE WHEN n % 10 = 0 THEN NULL ELSE 'click' END,
                strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-' || n || ' hours')
         FROM h;",
    )
    .unwrap();
    let monitor = |extra: &str| {
        format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
             checks = [\"row_count\", \"null_rate\"]\nnull_columns = [\"kind\"]\n{extra}"
        )
    };
    let config = dir.path().join("dataward.toml");
    std::fs::write(&config, monitor("")).unwrap();
    let (out, lines) = check(&config, &dir.path().join("data"), &[]);
    for l in &lines {
        assert_eq!(l["verdict"], "learning", "{l}");
        assert_eq!(l["from_polls"], "no timestamp_column", "{l}");
    }
    assert_eq!(lines.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));

    // With one, the same table is judged at once from its 35 days.
    std::fs::write(&config, monitor("timestamp_column = \"at\"\n")).unwrap();
    let (_, lines) = check(&config, &dir.path().join("data2"), &[]);
    let kind = line(&lines, "null_rate", Some("kind"));
    assert_eq!(kind["verdict"], "ok", "{kind}");
    assert!(
        (kind["expected_baseline"].as_f64().unwrap() - 0.1).abs() < 0.02,
        "{kind}"
    );
    assert_eq!(
        line(&lines, "row_count", None)["verdict"],
        "ok",
        "{lines:#?}"
    );
}

/// A table rewritten whole between polls (a dbt full refresh: every row stamped anew)
/// has days that no longer tell its past. The poll after sees its complete days lose
/// their rows, says so, and judges the row count against the polls before the rewrite:
/// a refresh that kept every row is ok, one that lost two rows in five is low, and the
/// days stay no baseline at the polls after it.
#[test]
fn a_full_refresh_is_seen_and_the_row_count_relearns_from_the_polls() {
    let Some(pg) = support::pg::start_or_skip("a_full_refresh_is_seen") else {
        return;
    };
    load_trips(&pg);
    let dir = tempfile::tempdir().unwrap();
    let config = pg_config(dir.path(), "[\"row_count\", \"null_rate\"]");
    let env = [("DATAWARD_PG_URL", pg.url.as_str())];
    let data = dir.path().join("data");
    let (out, lines) = check(&config, &data, &env);
    let first = line(&lines, "row_count", None);
    assert_eq!(
        first["verdict"],
        "ok",
        "{first}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.get("from_polls").is_none(), "{first}");

    // The full refresh: the same rows, every one stamped now.
    pg.execute("UPDATE trips SET loaded_at = now()");
    let (out, lines) = check(&config, &data, &env);
    let count = line(&lines, "row_count", None);
    assert_eq!(
        count["verdict"],
        "ok",
        "{count}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let why = count["from_polls"]
        .as_str()
        .unwrap_or_else(|| panic!("{count}"));
    assert!(why.starts_with("history rewritten: "), "{why}");
    assert!(why.contains(" 0 now"), "yesterday lost every row: {why}");
    let driver = line(&lines, "null_rate", Some("driver_id"));
    assert_eq!(driver["verdict"], "learning", "{driver}");
    assert!(
        driver["from_polls"]
            .as_str()
            .is_some_and(|w| w.starts_with("history rewritten")),
        "{driver}"
    );

    // The next refresh loses two rows in five: low against the polls, although the
    // days (every row today) now show no rewrite of their own.
    pg.execute("DELETE FROM trips WHERE id % 5 < 2");
    let (_, lines) = check(&config, &data, &env);
    let count = line(&lines, "row_count", None);
    assert_eq!(count["verdict"], "low", "{count}");
    assert_eq!(
        count["expected_baseline"].as_f64().unwrap(),
        first["observed"].as_f64().unwrap(),
        "{count}"
    );
    assert!(
        count["from_polls"]
            .as_str()
            .is_some_and(|w| w.starts_with("history rewritten")),
        "{count}"
    );
}
