//! A poll reads each table once for all its checks, and on later polls only its recent
//! days. Every result must stay what the checks' own queries give: here both run side
//! by side, poll after poll, on the same tables (nulls, an empty table, a table with
//! no row inside the lookback, timestamps with and without a time zone, dates, numbers
//! of seconds), while rows arrive, arrive late for old days, and are deleted. SQLite
//! always; PostgreSQL when its server binaries are here (required in CI).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use dataward::config::Config;
use dataward::monitor::checks::measure;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::{judge, Health, Observation};
use dataward::warehouse::postgres::PostgresWarehouse;
use dataward::warehouse::sqlite::SqliteWarehouse;
use dataward::warehouse::Warehouse;

/// Wednesday 12:30 UTC; the tables hold hourly loads from ten weeks before up to noon.
fn first_poll() -> DateTime<Utc> {
    "2024-05-15T12:30:00Z".parse().unwrap()
}

/// What changes between two polls, as SQL for the engine at hand.
struct Step {
    after: TimeDelta,
    sql: &'static str,
    what: &'static str,
    /// Where the engine counts its queries: whether this poll reads the whole tables
    /// again (None: not asserted).
    whole: Option<bool>,
}

/// Polls `monitors` both ways at each step and asserts every observation is the same.
/// `queries`, where the engine counts them, is how many queries the warehouse has been
/// sent so far: a poll sends one per table and one per schema for the catalog.
fn assert_one_read_matches_separate_queries(
    warehouse: Arc<dyn Warehouse + Sync>,
    config: &Config,
    steps: &[Step],
    apply: &dyn Fn(&str),
    queries: Option<&dyn Fn() -> u64>,
) {
    let dir = tempfile::tempdir().unwrap();
    let combined = dataward::store::open(&dir.path().join("combined.db")).unwrap();
    let separate = dataward::store::open(&dir.path().join("separate.db")).unwrap();
    let mut poller = Poller::new().unwrap();
    poller.add_warehouse(
        "wh",
        warehouse.clone() as SharedWarehouse,
        2,
        Duration::from_secs(30),
    );
    let mut now = first_poll();
    for step in steps {
        now += step.after;
        apply(step.sql);
        let sent = queries.map(|count| count());
        let polled = poller.poll(&combined, &config.monitor, now).unwrap();
        // A step that changes nothing reads no more than a steady poll, unless it is
        // said to read whole tables (the time of day moved past what was kept).
        let unchanged = step.sql.is_empty() && step.whole != Some(true);
        if let (Some(before), Some(count), true) = (sent, queries, unchanged) {
            let sent = count() - before;
            // Per table its write counters and one read; one for the catalog.
            let one_read = 2 * config.monitor.len() as u64 + 1;
            if step.after.is_zero() {
                // The first poll: besides, freshness's load times once for a table
                // whose recent minutes hold too few of them.
                assert!(
                    (one_read..=one_read + config.monitor.len() as u64).contains(&sent),
                    "{}: {sent} queries",
                    step.what
                );
            } else {
                // Nothing changed: the kept load times stand.
                assert_eq!(
                    sent, one_read,
                    "{}: one read per monitor's table and one for the catalog",
                    step.what
                );
            }
        }
        if let (Some(before), Some(count), Some(whole)) = (sent, queries, step.whole) {
            // A steady poll reads each table's counters and its recent days; one that
            // must read a whole table again reads its recent days first.
            let sent = count() - before;
            let steady = 2 * config.monitor.len() as u64 + 1;
            assert_eq!(sent > steady, whole, "{}: {sent} queries", step.what);
        }
        let at = dataward::clock::Timestamp::from_utc(now);
        let mut expected: Vec<Observation> = Vec::new();
        for monitor in &config.monitor {
            for &check in &monitor.checks {
                let measured = measure(warehouse.as_ref(), monitor, check, now);
                expected.extend(judge(&separate, monitor, check, at, None, measured).unwrap());
            }
        }
        assert_eq!(polled.len(), expected.len(), "{}", step.what);
        for (got, want) in polled.iter().zip(&expected) {
            // A check's own query reads no days, so where the one read judged a row
            // count or null rate from the table's days, the own query can only learn
            // from polls, and says so. The figure must still be the same.
            let own_query_learns = want.detail.from_polls.as_deref()
                == Some(dataward::monitor::OWN_QUERY_NO_DAYS)
                && got.detail.from_polls.is_none();
            if own_query_learns && got != want {
                assert_eq!(
                    (got.value, got.health),
                    (want.value, want.health),
                    "{}: {} {:?} measures otherwise than its own query",
                    step.what,
                    got.monitor,
                    got.check
                );
                continue;
            }
            let mut want = want.clone();
            if own_query_learns {
                want.detail.from_polls = None;
            }
            assert_eq!(
                got, &want,
                "{}: {} {:?} differs from its own query",
                step.what, got.monitor, got.check
            );
        }
    }
    poller.shut_down();
}

/// The same tables in each engine, named by their time column's type.
fn config(tables: &[&str]) -> Config {
    // The poller is handed its warehouse; the config's kind only has to parse.
    let mut toml =
        String::from("[warehouse.wh]\nkind = \"postgres\"\nurl_env = \"ONE_READ_UNUSED\"\n");
    for table in tables {
        for (suffix, nulls) in [("", "null_columns = [\"amount\"]\n"), (" all", "")] {
            toml.push_str(&format!(
                "[[monitor]]\nname = \"{table}{suffix}\"\nwarehouse = \"wh\"\ntable = \"{table}\"\n\
                 checks = [\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"]\n\
                 timestamp_column = \"at\"\n{nulls}"
            ));
        }
    }
    // A short null window and a re-read of today only, to cross more boundaries.
    toml.push_str(
        "[[monitor]]\nname = \"short windows\"\nwarehouse = \"wh\"\ntable = \"timed\"\n\
         checks = [\"volume\", \"null_rate\", \"freshness\"]\ntimestamp_column = \"at\"\n\
         null_window = \"2h\"\nreread_days = 0\nlookback = \"30d\"\n",
    );
    Config::parse(&toml, Path::new("one_read.toml")).unwrap()
}

/// The steps, with `{t}` for the table each applies to.
fn steps() -> Vec<Step> {
    vec![
        Step {
            after: TimeDelta::zero(),
            sql: "",
            what: "the first poll reads the older days per day and the load times once",
            whole: None,
        },
        Step {
            after: TimeDelta::hours(1),
            sql: "INSERT INTO {t} VALUES (9001, NULL, 'new', {13:00 today})",
            what: "a warm poll sees the new hour",
            whole: None,
        },
        Step {
            after: TimeDelta::minutes(20),
            sql: "INSERT INTO {t} VALUES (9002, 1, 'late', {10:00 five days ago})",
            what: "a row late for a day five days ago (judged, not re-read) is counted",
            whole: None,
        },
        Step {
            after: TimeDelta::minutes(20),
            sql: "DELETE FROM {t} WHERE id % 5 = 0",
            what: "deleted rows are no longer counted",
            whole: None,
        },
        Step {
            after: TimeDelta::hours(12),
            sql: "INSERT INTO {t} VALUES (9003, 2, 'next day', {01:00 tomorrow})",
            what: "the next day begins",
            whole: None,
        },
        Step {
            after: TimeDelta::minutes(5),
            sql: "",
            what: "nothing changed",
            whole: None,
        },
    ]
}

/// Replaces the `{...}` times of a step's SQL with literals `time` makes.
fn with_times(sql: &str, table: &str, time: &dyn Fn(&str) -> String) -> String {
    let mut sql = sql.replace("{t}", table);
    for (mark, at) in [
        ("{13:00 today}", "2024-05-15 13:00:00"),
        ("{10:00 five days ago}", "2024-05-10 10:00:00"),
        ("{01:00 tomorrow}", "2024-05-16 01:00:00"),
        ("{day ten days ago}", "2024-05-05 00:00:00"),
        ("{day nine days ago}", "2024-05-06 00:00:00"),
    ] {
        sql = sql.replace(mark, &time(at));
    }
    sql
}

#[test]
fn sqlite_one_read_matches_each_checks_own_query() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wh.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Ten weeks of hourly loads, two rows each, every seventh amount null; Tuesday
    // stops at 13:00. `timed` holds ISO text, `epoch` numbers of seconds, `dated`
    // dates; `empty` nothing; `old` only rows from before the lookback.
    let hours = "WITH RECURSIVE h(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < 1596)
                 SELECT n * 2 + r AS id, CASE WHEN (n * 2 + r) % 7 = 0 THEN NULL ELSE n END AS amount,
                        'load' AS note, 1710028800 + n * 3600 AS epoch
                 FROM h, (SELECT 0 AS r UNION ALL SELECT 1)
                 WHERE NOT (1710028800 + n * 3600 BETWEEN 1715691600 AND 1715731199)";
    conn.execute_batch(&format!(
        "CREATE TABLE timed (id INTEGER, amount REAL, note TEXT, at TEXT);
         CREATE TABLE epoch (id INTEGER, amount REAL, note TEXT, at INTEGER);
         CREATE TABLE dated (id INTEGER, amount REAL, note TEXT, at TEXT);
         CREATE TABLE empty (id INTEGER, amount REAL, note TEXT, at TEXT);
         CREATE TABLE old (id INTEGER, amount REAL, note TEXT, at TEXT);
         INSERT INTO timed SELECT id, amount, note, datetime(epoch, 'unixepoch') FROM ({hours});
         INSERT INTO timed VALUES (8000, 1, 'no time', NULL);
         INSERT INTO epoch SELECT id, amount, note, epoch FROM ({hours});
         INSERT INTO dated SELECT id, amount, note, date(epoch, 'unixepoch') FROM ({hours});
         INSERT INTO old SELECT id, amount, note, datetime(epoch - 200 * 86400, 'unixepoch') FROM ({hours});"
    ))
    .unwrap();
    drop(conn);
    let tables = ["timed", "epoch", "dated", "empty", "old"];
    let warehouse = Arc::new(SqliteWarehouse::new(&path, Default::default()));
    let apply = |sql: &str| {
        if sql.is_empty() {
            return;
        }
        let conn = rusqlite::Connection::open(&path).unwrap();
        for table in tables {
            let time: &dyn Fn(&str) -> String = match table {
                "epoch" => &|at| format!("CAST(strftime('%s', '{at}') AS INTEGER)"),
                "dated" => &|at| format!("'{}'", &at[..10]),
                _ => &|at| format!("'{at}'"),
            };
            conn.execute_batch(&with_times(sql, table, time)).unwrap();
        }
    };
    assert_one_read_matches_separate_queries(warehouse, &config(&tables), &steps(), &apply, None);
}

#[test]
fn postgres_one_read_matches_each_checks_own_query() {
    postgres_one_read_matches("postgres_one_read_matches_each_checks_own_query", &steps());
}

/// A steady poll reads only the recent days and keeps the older days' counts, so each
/// change to an older day must bring the whole table to be read again.
#[test]
fn postgres_changes_to_older_days_are_seen() {
    postgres_one_read_matches(
        "postgres_changes_to_older_days_are_seen",
        &older_day_steps(),
    );
}

fn older_day_steps() -> Vec<Step> {
    let step = |sql, what, whole| Step {
        after: TimeDelta::minutes(10),
        sql,
        what,
        whole,
    };
    vec![
        Step {
            after: TimeDelta::zero(),
            sql: "",
            what: "the first poll",
            whole: None,
        },
        step("", "a steady poll reads the recent days", Some(false)),
        step(
            "INSERT INTO {t} VALUES (9101, NULL, 'backfill', {10:00 five days ago})",
            "a row backfilled into a closed day is counted",
            Some(true),
        ),
        step("", "steady again", Some(false)),
        step(
            "DELETE FROM {t} WHERE at >= {day ten days ago} AND at < {day nine days ago}",
            "a closed day deleted is gone",
            Some(true),
        ),
        step(
            "UPDATE {t} SET amount = NULL WHERE id BETWEEN 1000 AND 1010",
            "nulls set on older days are counted",
            Some(true),
        ),
        step(
            "INSERT INTO {t} VALUES (9102, 1, 'no time', NULL)",
            "a row without a time is counted",
            Some(true),
        ),
        step("", "steady again", Some(false)),
        step("TRUNCATE {t}", "an emptied table is empty", Some(true)),
        step("", "steady when empty", Some(false)),
    ]
}

/// Without an index a steady poll reads only the pages from the first that holds a
/// recent row, and takes each older day's rows at the time of day it moved past from
/// the minutes ahead a whole read kept: rows inserted, updated, deleted, put in freed
/// space of older pages, and the time of day moving on must give what whole reads give.
#[test]
fn postgres_steady_polls_read_the_tail_and_match_whole_reads() {
    postgres_one_read_matches(
        "postgres_steady_polls_read_the_tail_and_match_whole_reads",
        &tail_steps(),
    );
}

fn tail_steps() -> Vec<Step> {
    let step = |minutes, sql, what, whole| Step {
        after: TimeDelta::minutes(minutes),
        sql,
        what,
        whole,
    };
    vec![
        step(0, "", "the first poll", None),
        step(5, "", "steady: the tail's pages only", Some(false)),
        step(
            5,
            "INSERT INTO {t} VALUES (9201, NULL, 'new', {13:00 today})",
            "a recent row inserted is on the tail's pages",
            Some(false),
        ),
        step(
            10,
            "INSERT INTO {t} SELECT 9300 + n, n, 'new', {13:00 today} FROM generate_series(1, 40) n",
            "forty recent rows, a page's worth",
            Some(false),
        ),
        step(
            5,
            "UPDATE {t} SET amount = 1 WHERE id = 9201",
            "a recent row updated",
            Some(true),
        ),
        step(5, "", "steady again", Some(false)),
        step(70, "", "the time of day past the minutes ahead", Some(true)),
        step(20, "", "the time of day moved, no older row passed", Some(false)),
        step(
            35,
            "",
            "the time of day moved past each older day's 15:00 rows",
            Some(false),
        ),
        step(
            5,
            "DELETE FROM {t} WHERE id < 400",
            "older rows deleted, freeing the first pages",
            Some(true),
        ),
        step(1, "VACUUM {t}", "the freed space is free for inserts", Some(false)),
        step(
            1,
            "INSERT INTO {t} SELECT 9400 + n, n, 'reused', {13:00 today} FROM generate_series(1, 5) n",
            "recent rows put in the first pages' freed space are found",
            Some(true),
        ),
        step(
            5,
            "",
            "steady, recent rows near the file's start: the recent days by their time",
            Some(false),
        ),
    ]
}

fn postgres_one_read_matches(test: &str, steps: &[Step]) {
    let Some(pg) = support::pg::start_or_skip(test) else {
        return;
    };
    let hours = "SELECT n * 2 + r AS id,
                        CASE WHEN (n * 2 + r) % 7 = 0 THEN NULL ELSE n END AS amount,
                        'load' AS note, to_timestamp(1710028800 + n * 3600) AS at
                 FROM generate_series(0, 1596) n, generate_series(0, 1) r
                 WHERE NOT (1710028800 + n * 3600 BETWEEN 1715691600 AND 1715731199)";
    let before = write_counters(&pg);
    pg.execute(&format!(
        "CREATE TABLE timed (id bigint, amount numeric, note text, at timestamptz);
         CREATE TABLE plain (id bigint, amount numeric, note text, at timestamp);
         CREATE TABLE dated (id bigint, amount numeric, note text, at date);
         CREATE TABLE empty (id bigint, amount numeric, note text, at timestamptz);
         CREATE TABLE old (id bigint, amount numeric, note text, at timestamptz);
         SET TimeZone = 'UTC';
         INSERT INTO timed SELECT * FROM ({hours}) h;
         INSERT INTO timed VALUES (8000, 1, 'no time', NULL);
         INSERT INTO plain SELECT id, amount, note, at AT TIME ZONE 'UTC' FROM ({hours}) h;
         INSERT INTO dated SELECT id, amount, note, (at AT TIME ZONE 'UTC')::date FROM ({hours}) h;
         INSERT INTO old SELECT id, amount, note, at - interval '200 days' FROM ({hours}) h;
         -- Two tables read by ranges of the column, the others by the time of day.
         CREATE INDEX ON timed (at);
         CREATE INDEX ON dated (at);"
    ));
    stats_settled(&pg, &before, "CREATE");
    let tables = ["timed", "plain", "dated", "empty", "old"];
    let warehouse = Arc::new(PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(30)).unwrap());
    let counted = warehouse.clone();
    let queries = move || counted.queries_issued();
    let apply = |sql: &str| {
        if sql.is_empty() {
            return;
        }
        let before = write_counters(&pg);
        for table in tables {
            let time: &dyn Fn(&str) -> String = match table {
                "plain" => &|at| format!("timestamp '{at}'"),
                "dated" => &|at| format!("date '{}'", &at[..10]),
                _ => &|at| format!("timestamptz '{at}+00'"),
            };
            pg.execute(&with_times(sql, table, time));
        }
        stats_settled(&pg, &before, sql);
    };
    assert_one_read_matches_separate_queries(
        warehouse,
        &config(&tables),
        steps,
        &apply,
        Some(&queries),
    );
}

/// Every table's write counters.
fn write_counters(pg: &support::pg::PgServer) -> Vec<(String, i64, i64, i64)> {
    pg.client()
        .query(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// Waits until the server counts the writes a step made: a backend reports its counts
/// as it goes idle or exits, a moment after the client returned. (A poll in that moment
/// reads the whole table on the poll after; see monitor::older_days.) TRUNCATE and
/// VACUUM move no counter.
fn stats_settled(pg: &support::pg::PgServer, before: &[(String, i64, i64, i64)], sql: &str) {
    if sql.starts_with("TRUNCATE") || sql.starts_with("VACUUM") {
        return;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while write_counters(pg) == before {
        assert!(
            std::time::Instant::now() < deadline,
            "{sql}: the server never counted it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_query_that_fails_fails_only_the_checks_it_was_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wh.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE orders (id INTEGER, amount REAL, at TEXT);
             INSERT INTO orders VALUES (1, NULL, '2024-05-15 12:00:00'), (2, 3, '2024-05-15 12:00:00');",
        )
        .unwrap();
    let config = Config::parse(
        "[warehouse.wh]\nkind = \"postgres\"\nurl_env = \"ONE_READ_UNUSED\"\n\
         [[monitor]]\nwarehouse = \"wh\"\ntable = \"orders\"\n\
         checks = [\"row_count\", \"null_rate\", \"freshness\"]\n\
         timestamp_column = \"at\"\nnull_columns = [\"amount\", \"ammount\"]\n",
        Path::new("one_read.toml"),
    )
    .unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&state_dir.path().join("state.db")).unwrap();
    let mut poller = Poller::new().unwrap();
    poller.add_warehouse(
        "wh",
        Arc::new(SqliteWarehouse::new(&path, Default::default())) as SharedWarehouse,
        2,
        Duration::from_secs(30),
    );
    let observations = poller.poll(&state, &config.monitor, first_poll()).unwrap();
    poller.shut_down();
    let health: Vec<(String, Health, String)> = observations
        .iter()
        .map(|o| {
            (
                o.check_label(),
                o.health,
                o.detail.message.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(health[0].0, "row_count");
    assert_eq!(health[0].1, Health::Ok, "{health:?}");
    assert_eq!(observations[0].value, Some(2.0));
    assert_eq!(health[1].0, "null_rate");
    assert_eq!(health[1].1, Health::Error, "{health:?}");
    assert!(health[1].2.contains("ammount"), "{health:?}");
    assert_eq!(health[2].0, "freshness");
    assert_eq!(health[2].1, Health::Ok, "{health:?}");
}
