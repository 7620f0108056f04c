//! Property: nothing written in a config can panic the engine. Every duration and
//! number key gets arbitrary values (huge, zero, negative, malformed); loading either
//! fails with a message naming the key and its line, or yields values the engine can
//! use: durations that convert to chrono and add to a 2026 date, a concurrency the
//! poller can build, and checks that measure without panicking.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{DateTime, TimeDelta, Utc};
use proptest::prelude::*;

use dataward::config::{parse_duration, CheckKind, Config};
use dataward::monitor::checks::measure;
use dataward::monitor::poller::Poller;
use dataward::warehouse::sqlite::SqliteWarehouse;

/// A duration as a person might write one, or mistype one.
fn duration_text() -> impl Strategy<Value = String> {
    let unit = prop::sample::select(vec!["s", "m", "h", "d"]);
    let odd_unit = prop::sample::select(vec!["", "w", "ms", " s", "D", "d "]);
    prop_oneof![
        30 => (1u64..1_000, unit.clone()).prop_map(|(n, u)| format!("{n}{u}")),
        1 => (0u64..10_000, odd_unit).prop_map(|(n, u)| format!("{n}{u}")),
        1 => (any::<u64>(), unit.clone()).prop_map(|(n, u)| format!("{n}{u}")),
        1 => (3_000u64..4_000, Just("d")).prop_map(|(n, u)| format!("{n}{u}")),
        1 => (300_000_000u64..330_000_000, Just("s")).prop_map(|(n, u)| format!("{n}{u}")),
        1 => "[0-9]{15,30}[smhd]",
        1 => "\\PC{0,8}",
    ]
}

/// An integer as TOML holds one (i64), biased to the edges.
fn number() -> impl Strategy<Value = i64> {
    prop_oneof![
        30 => 1i64..200,
        2 => -2i64..300,
        1 => any::<i64>(),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

#[derive(Debug, Clone)]
struct Values {
    check_timeout: Option<String>,
    max_concurrent: Option<i64>,
    every: String,
    warn_after: Option<String>,
    error_after: Option<String>,
    lookback: Option<String>,
    expected_rows: Option<i64>,
    approval_ttl: String,
    settle: String,
}

fn values() -> impl Strategy<Value = Values> {
    (
        (
            prop::option::of(duration_text()),
            prop::option::of(number()),
            duration_text(),
            prop::option::of(duration_text()),
            prop::option::of(duration_text()),
        ),
        (
            prop::option::of(duration_text()),
            prop::option::of(number()),
            duration_text(),
            duration_text(),
        ),
    )
        .prop_map(
            |(
                (check_timeout, max_concurrent, every, warn_after, error_after),
                (lookback, expected_rows, approval_ttl, settle),
            )| Values {
                check_timeout,
                max_concurrent,
                every,
                warn_after,
                error_after,
                lookback,
                expected_rows,
                approval_ttl,
                settle,
            },
        )
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn config_text(v: &Values, db: &Path) -> String {
    let mut text = format!(
        "[warehouse.local]\nkind = \"sqlite\"\npath = {}\n",
        quoted(&db.display().to_string())
    );
    if let Some(t) = &v.check_timeout {
        text += &format!("check_timeout = {}\n", quoted(t));
    }
    if let Some(n) = v.max_concurrent {
        text += &format!("max_concurrent = {n}\n");
    }
    text += &format!(
        "\n[[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
         checks = [\"row_count\", \"freshness\", \"volume\"]\ntimestamp_column = \"at\"\n\
         every = {}\n",
        quoted(&v.every)
    );
    for (key, value) in [
        ("warn_after", &v.warn_after),
        ("error_after", &v.error_after),
        ("lookback", &v.lookback),
    ] {
        if let Some(value) = value {
            text += &format!("{key} = {}\n", quoted(value));
        }
    }
    if let Some(n) = v.expected_rows {
        text += &format!("expected_rows = {n}\n");
    }
    text += &format!(
        "\n[[domain]]\nname = \"d\"\ncovers = [\"*\"]\nowners = [\"owner\"]\napproval_ttl = {}\n\
         \n[verify]\nsettle = {}\n",
        quoted(&v.approval_ttl),
        quoted(&v.settle)
    );
    text
}

/// One small SQLite warehouse for every case: a table loaded hourly.
fn warehouse_db() -> &'static PathBuf {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wh.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, at TEXT NOT NULL);
             WITH RECURSIVE h(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM h WHERE n < 200)
             INSERT INTO events (at)
             SELECT strftime('%Y-%m-%dT%H:%M:%SZ', '2026-03-01', '-' || n || ' hours') FROM h;",
        )
        .unwrap();
        (dir, path)
    })
    .1
}

const KEYS: [&str; 9] = [
    "check_timeout",
    "max_concurrent",
    "every",
    "warn_after",
    "error_after",
    "lookback",
    "expected_rows",
    "approval_ttl",
    "settle",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_config_either_names_the_bad_key_or_is_safe_to_run(v in values()) {
        let db = warehouse_db();
        let text = config_text(&v, db);
        let config = match Config::parse(&text, Path::new("props.toml")) {
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.starts_with("props.toml: "), "{message}");
                prop_assert!(message.contains("line "), "{message}");
                prop_assert!(KEYS.iter().any(|k| message.contains(k)), "{message}");
                return Ok(());
            }
            Ok(config) => config,
        };

        // Every duration converts to chrono and moves a 2026 date both ways.
        let now: DateTime<Utc> = "2026-03-01T12:00:00Z".parse().unwrap();
        let monitor = &config.monitor[0];
        let wh = &config.warehouse["local"];
        let durations = [
            Some(&monitor.every),
            monitor.warn_after.as_ref(),
            monitor.error_after.as_ref(),
            monitor.lookback.as_ref(),
            wh.check_timeout.as_ref(),
            Some(&config.domain[0].approval_ttl),
            Some(&config.verify.settle),
        ];
        for text in durations.into_iter().flatten() {
            let d = parse_duration(text).unwrap();
            let delta = TimeDelta::from_std(d).unwrap();
            prop_assert!(now.checked_add_signed(delta).is_some(), "{text}");
            prop_assert!(now.checked_sub_signed(delta).is_some(), "{text}");
        }

        // The poller builds (its semaphore takes the concurrency), and every check
        // measures without panicking.
        Poller::from_config(&config).unwrap();
        let warehouse = SqliteWarehouse::new(db, Default::default());
        for check in [CheckKind::RowCount, CheckKind::Freshness, CheckKind::Volume] {
            let measured = measure(&warehouse, monitor, check, now);
            prop_assert!(measured.is_ok(), "{check:?}: {measured:?}");
        }
    }

    #[test]
    fn a_single_bad_value_is_named_by_its_key_and_line(key in 0..KEYS.len(), wild in duration_text(), n in number()) {
        let good = Values {
            check_timeout: Some("30s".into()),
            max_concurrent: Some(4),
            every: "5m".into(),
            warn_after: Some("6h".into()),
            error_after: Some("1d".into()),
            lookback: Some("70d".into()),
            expected_rows: Some(1000),
            approval_ttl: "30m".into(),
            settle: "10m".into(),
        };
        let mut v = good;
        match KEYS[key] {
            "check_timeout" => v.check_timeout = Some(wild),
            "max_concurrent" => v.max_concurrent = Some(n),
            "every" => v.every = wild,
            "warn_after" => v.warn_after = Some(wild),
            "error_after" => v.error_after = Some(wild),
            "lookback" => v.lookback = Some(wild),
            "expected_rows" => v.expected_rows = Some(n),
            "approval_ttl" => v.approval_ttl = wild,
            "settle" => v.settle = wild,
            _ => unreachable!(),
        }
        let text = config_text(&v, warehouse_db());
        if let Err(e) = Config::parse(&text, Path::new("props.toml")) {
            let message = e.to_string();
            let line = text
                .lines()
                .position(|l| l.starts_with(&format!("{} = ", KEYS[key])))
                .unwrap()
                + 1;
            prop_assert!(message.contains(KEYS[key]), "{message}");
            prop_assert!(message.contains(&format!("line {line}")), "{message}");
        }
    }
}
