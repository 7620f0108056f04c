//! Every check against a real PostgreSQL server started by the test itself, a type
//! change made with ALTER TABLE, and a server stopped in the middle of polling.
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use dataward::approve::Actor;
use dataward::config::{CheckKind, Config};
use dataward::detect::{SchemaChange, VerdictKind};
use dataward::engine::api::EventKind;
use dataward::engine::Engine;
use dataward::monitor::poller::Poller;
use dataward::monitor::{Health, Observation};
use dataward::warehouse::postgres::PostgresWarehouse;
use dataward::warehouse::{
    CastTarget, DayCount, KeyGap, Relation, TableVersion, Warehouse, WarehouseError,
};
use support::pg::{start_or_skip, PgServer};

/// Sunday 02:30 UTC: Saturday is the last complete day.
fn sunday_night() -> DateTime<Utc> {
    "2024-05-12T02:30:00Z".parse().unwrap()
}

/// Ten weeks of hourly loads into shop."Orders" (20 rows an hour on weekdays, 8 at
/// weekends), with the writer stalled on Saturday 2024-05-11 after 13:00, so Saturday
/// holds 14 of its usual 24 hours: 58%.
fn load_orders(pg: &PgServer) {
    pg.execute(
        "CREATE SCHEMA shop;
         CREATE TABLE shop.\"Orders\" (
             id bigserial PRIMARY KEY,
             zip_code smallint,
             email text,
             loaded_at timestamptz NOT NULL);
         INSERT INTO shop.\"Orders\" (zip_code, email, loaded_at)
         SELECT (g % 40)::smallint,
                CASE WHEN (extract(epoch FROM h)::bigint / 3600 + g) % 50 = 0
                     THEN NULL ELSE 'someone@example.com' END,
                h
         FROM generate_series(timestamptz '2024-03-03 00:00Z',
                              timestamptz '2024-05-11 13:00Z', interval '1 hour') AS h
         CROSS JOIN LATERAL generate_series(
             1, CASE WHEN extract(isodow FROM h) >= 6 THEN 8 ELSE 20 END) AS g;",
    );
}

fn config(extra: &str) -> Config {
    let text = format!(
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n\n\
         [[monitor]]\nname = \"orders\"\nwarehouse = \"pg\"\ntable = \"shop.Orders\"\n\
         checks = [\"row_count\", \"null_rate\", \"freshness\", \"volume\", \"schema\"]\n\
         timestamp_column = \"loaded_at\"\nnull_columns = [\"email\", \"zip_code\"]\n{extra}"
    );
    Config::parse(&text, Path::new("test.toml")).unwrap()
}

fn poller_for(pg: &PgServer) -> Poller {
    let mut poller = Poller::new().unwrap();
    // Recover on the very next poll: these tests restart the server at once.
    poller.set_backoff(Duration::ZERO);
    let warehouse = PostgresWarehouse::new(&pg.url, 4, Duration::from_secs(10)).unwrap();
    poller.add_warehouse("pg", Arc::new(warehouse), 4, Duration::from_secs(10));
    poller
}

fn find<'a>(obs: &'a [Observation], check: CheckKind, column: Option<&str>) -> &'a Observation {
    obs.iter()
        .find(|o| o.check == check && o.detail.column.as_deref() == column)
        .unwrap_or_else(|| panic!("no {} observation in {obs:#?}", check.as_str()))
}

#[test]
fn every_check_runs_against_postgres_and_sees_an_alter_table() {
    let Some(pg) = start_or_skip("every_check_runs_against_postgres") else {
        return;
    };
    load_orders(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let poller = poller_for(&pg);
    let config = config("");
    let now = sunday_night();

    let first = poller.poll(&state, &config.monitor, now).unwrap();
    assert!(first.iter().all(|o| o.health == Health::Ok), "{first:#?}");
    // Judged at once from the table's own days: the stalled writer left the last 24
    // hours short of what the same hours of earlier weeks added.
    let count = find(&first, CheckKind::RowCount, None);
    assert_eq!(count.verdict, VerdictKind::Low, "{count:#?}");
    assert!(count.expected.unwrap().baseline > count.value.unwrap() + 50.0);
    assert_eq!(
        find(&first, CheckKind::Schema, None).verdict,
        VerdictKind::Learning
    );
    assert_eq!(
        find(&first, CheckKind::NullRate, Some("email")).verdict,
        VerdictKind::Ok
    );
    // Freshness and volume judge on the first run, from the table's own history.
    let fresh = find(&first, CheckKind::Freshness, None);
    assert_eq!(fresh.verdict, VerdictKind::Late, "{fresh:#?}");
    assert_eq!(fresh.value, Some(13.5 * 3600.0));
    assert_eq!(fresh.expected.unwrap().high, 1.5 * 3600.0);
    // The writer is still stalled: Sunday so far has none of the 24 rows Sundays have by
    // 02:30, and that is the headline; Saturday, listed beside it, holds 14 of 24 hours.
    let volume = find(&first, CheckKind::Volume, None);
    assert_eq!(volume.verdict, VerdictKind::Low, "{volume:#?}");
    assert!(volume.detail.partial);
    assert_eq!(volume.detail.day.as_deref(), Some("2024-05-12"));
    assert_eq!(volume.value, Some(0.0));
    assert_eq!(volume.expected.unwrap().baseline, 3.0 * 8.0);
    let saturday = &volume.detail.days[6];
    assert_eq!(saturday.day, "2024-05-11");
    assert_eq!(saturday.verdict, VerdictKind::Low);
    assert_eq!(saturday.rows, 14.0 * 8.0);
    assert_eq!(saturday.expected.unwrap().baseline, 24.0 * 8.0);

    for step in 1..=3 {
        let later = now + TimeDelta::minutes(5 * step);
        poller.poll(&state, &config.monitor, later).unwrap();
    }
    let steady = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(20))
        .unwrap();
    // Still stalled.
    assert_eq!(
        find(&steady, CheckKind::RowCount, None).verdict,
        VerdictKind::Low
    );
    assert_eq!(
        find(&steady, CheckKind::Schema, None).verdict,
        VerdictKind::Ok
    );
    let email = find(&steady, CheckKind::NullRate, Some("email"));
    assert_eq!(email.verdict, VerdictKind::Ok, "{email:#?}");
    assert!(email.value.unwrap() > 0.01 && email.value.unwrap() < 0.03);

    // The app's migration: a new type, most rows gone, emails blanked.
    pg.execute(
        "ALTER TABLE shop.\"Orders\" ALTER COLUMN zip_code TYPE varchar(12);
         DELETE FROM shop.\"Orders\" WHERE id % 5 <> 0;
         UPDATE shop.\"Orders\" SET email = NULL WHERE id % 2 = 0;",
    );
    let after = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(25))
        .unwrap();
    let schema = find(&after, CheckKind::Schema, None);
    assert_eq!(schema.verdict, VerdictKind::Changed);
    assert_eq!(
        schema.detail.changes,
        vec![SchemaChange::TypeChanged {
            column: "zip_code".into(),
            from: "SMALLINT".into(),
            to: "CHARACTER VARYING(12)".into()
        }]
    );
    assert_eq!(
        find(&after, CheckKind::RowCount, None).verdict,
        VerdictKind::Low
    );
    assert_eq!(
        find(&after, CheckKind::NullRate, Some("email")).verdict,
        VerdictKind::High
    );
    assert_eq!(
        find(&after, CheckKind::NullRate, Some("zip_code")).verdict,
        VerdictKind::Ok
    );
}

#[test]
fn a_query_that_fails_is_an_error_not_unreachable() {
    let Some(pg) = start_or_skip("a_query_that_fails_is_an_error") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let observations = poller_for(&pg)
        .poll(&state, &config("").monitor, sunday_night())
        .unwrap();
    // A missing table is a health problem for every check, the schema snapshot too
    // (never "ok, 0 columns").
    for o in &observations {
        assert_eq!(o.health, Health::Error, "{o:#?}");
        assert_eq!(o.verdict, VerdictKind::Unknown);
        assert!(o
            .detail
            .message
            .as_deref()
            .unwrap()
            .contains("does not exist"));
    }
}

#[test]
fn a_server_stopped_mid_polling_is_unreachable_never_an_incident_and_recovers() {
    let Some(pg) = start_or_skip("a_server_stopped_mid_polling") else {
        return;
    };
    load_orders(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let poller = poller_for(&pg);
    let config = config("");
    let now = sunday_night();
    let mut before = Vec::new();
    for step in 0..4 {
        before = poller
            .poll(&state, &config.monitor, now + TimeDelta::minutes(5 * step))
            .unwrap();
    }

    pg.stop();
    let down = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(20))
        .unwrap();
    assert_eq!(
        down.len(),
        5,
        "one unknown observation per check: {down:#?}"
    );
    for o in &down {
        assert_eq!(o.health, Health::Unreachable, "{o:#?}");
        assert_eq!(o.verdict, VerdictKind::Unknown);
        assert!(!o.verdict.is_breach());
        assert!(o.detail.message.as_deref().unwrap().contains("unreachable"));
    }

    pg.resume();
    let back = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(25))
        .unwrap();
    assert!(back.iter().all(|o| o.health == Health::Ok), "{back:#?}");
    // The outage did not enter the baseline: the row count is judged as before.
    let count = |obs: &[Observation]| {
        let o = find(obs, CheckKind::RowCount, None);
        (o.verdict, o.expected)
    };
    assert_eq!(count(&back), count(&before));
}

/// An engine watching `shop.Orders` on `pg` every five minutes with `checks`. Each test
/// names its own URL variable, so setting it cannot race another test.
fn engine_on(pg: &PgServer, url_env: &str, checks: &str) -> (tempfile::TempDir, Engine) {
    std::env::set_var(url_env, &pg.url);
    let text = format!(
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"{url_env}\"\n\
         [[monitor]]\nname = \"orders\"\nwarehouse = \"pg\"\ntable = \"shop.Orders\"\n\
         {checks}\nevery = \"5m\"\n"
    );
    let config = Config::parse(&text, Path::new("engine.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    (dir, engine)
}

#[test]
fn the_engine_opens_no_incident_while_postgres_is_down() {
    let Some(pg) = start_or_skip("the_engine_opens_no_incident") else {
        return;
    };
    load_orders(&pg);
    let (_dir, mut engine) = engine_on(
        &pg,
        "DATAWARD_TEST_ENGINE_PG_URL",
        "checks = [\"row_count\", \"schema\"]",
    );
    let start: NaiveDateTime = sunday_night().naive_utc();
    let mut tick = |minutes: i64| engine.tick(start + TimeDelta::minutes(minutes)).unwrap();
    for minutes in [0, 5, 10, 15] {
        tick(minutes);
    }
    pg.stop();
    let events = tick(20);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::IncidentOpened { .. })),
        "{events:#?}"
    );
    pg.resume();
    let events = tick(25);
    assert!(!events
        .iter()
        .any(|e| matches!(e.kind, EventKind::IncidentOpened { .. })));
    let snapshot = engine.snapshot(false);
    assert!(snapshot.incidents.is_empty());
}

#[test]
fn the_engine_opens_one_incident_per_monitor_and_table_and_updates_it() {
    let Some(pg) = start_or_skip("the_engine_opens_one_incident") else {
        return;
    };
    load_orders(&pg);
    let (_dir, mut engine) = engine_on(
        &pg,
        "DATAWARD_TEST_ENGINE_DEDUP_URL",
        "checks = [\"row_count\", \"null_rate\"]\nnull_columns = [\"email\"]",
    );
    let start: NaiveDateTime = sunday_night().naive_utc();
    let mut opened = 0;
    let tick = |minutes: i64, engine: &mut Engine| {
        let events = engine.tick(start + TimeDelta::minutes(minutes)).unwrap();
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::IncidentOpened { .. }))
            .count()
    };
    for minutes in [0, 5, 10, 15] {
        tick(minutes, &mut engine);
    }
    assert_eq!(
        engine.snapshot(false).incidents.len(),
        0,
        "a steady table opens nothing"
    );
    // Half the rows vanish: a row-count drop opens the incident.
    pg.execute("DELETE FROM shop.\"Orders\" WHERE id % 2 = 0");
    opened += tick(20, &mut engine);
    // Then the emails go null too: the same monitor and table, so the same incident.
    pg.execute("UPDATE shop.\"Orders\" SET email = NULL WHERE id % 3 = 0");
    opened += tick(25, &mut engine);
    opened += tick(30, &mut engine);
    let snapshot = engine.snapshot(false);
    assert_eq!(snapshot.incidents.len(), 1, "{:#?}", snapshot.incidents);
    let incident = &snapshot.incidents[0];
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.starts_with("null_rate(email) high")),
        "the null-rate breach was added to the open incident: {:?}",
        incident.evidence
    );
    assert_eq!(opened, 1);
}

#[test]
fn a_dry_run_computes_every_column_so_a_failing_cast_is_seen() {
    let Some(pg) = start_or_skip("a_dry_run_computes_every_column") else {
        return;
    };
    pg.execute(
        "CREATE TABLE zips (z varchar(12));
         INSERT INTO zips VALUES ('12'), ('7');",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let model = "select cast(z as integer) as n, 1 as one from zips";
    assert_eq!(warehouse.dry_run(model).unwrap(), 2);
    pg.execute("INSERT INTO zips VALUES ('SW1A-1AA')");
    let err = warehouse.dry_run(model).unwrap_err().to_string();
    assert!(err.contains("SW1A-1AA"), "{err}");
}

/// Two monitors on separate tables, every check on the first, with a short check
/// timeout: the lock and backoff tests.
fn two_tables(pg: &PgServer) -> Config {
    load_orders(pg);
    pg.execute("CREATE TABLE shop.other (id int); INSERT INTO shop.other VALUES (1), (2);");
    config(
        "\n[[monitor]]\nname = \"other\"\nwarehouse = \"pg\"\ntable = \"shop.other\"\n\
         checks = [\"row_count\", \"schema\"]\n",
    )
}

fn poller_with(pg: &PgServer, backoff: Duration, timeout: Duration) -> Poller {
    let mut poller = Poller::new().unwrap();
    poller.set_backoff(backoff);
    let warehouse = PostgresWarehouse::new(&pg.url, 4, timeout).unwrap();
    poller.add_warehouse("pg", Arc::new(warehouse), 4, timeout);
    poller
}

#[test]
fn backoff_counts_connection_attempts_so_a_server_back_is_polled_after_one_step() {
    let Some(pg) = start_or_skip("backoff_counts_connection_attempts") else {
        return;
    };
    let config = two_tables(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let step = Duration::from_secs(2);
    let poller = poller_with(&pg, step, Duration::from_secs(10));
    let now = sunday_night();
    // Warm: the pool holds connections that the restart will break.
    for minutes in [0, 5] {
        let obs = poller
            .poll(&state, &config.monitor, now + TimeDelta::minutes(minutes))
            .unwrap();
        assert!(obs.iter().all(|o| o.health == Health::Ok), "{obs:#?}");
    }

    pg.stop();
    // Seven checks fail together, and a second poll comes while backing off: one
    // connection attempt failed, so one backoff step, not seven or eight doublings.
    for minutes in [10, 11] {
        let down = poller
            .poll(&state, &config.monitor, now + TimeDelta::minutes(minutes))
            .unwrap();
        assert!(
            down.iter().all(|o| o.health == Health::Unreachable),
            "{down:#?}"
        );
    }
    pg.resume();
    std::thread::sleep(step + Duration::from_millis(200));
    let back = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(15))
        .unwrap();
    assert!(back.iter().all(|o| o.health == Health::Ok), "{back:#?}");
}

#[test]
fn a_locked_table_times_out_its_own_check_and_never_marks_the_warehouse_down() {
    let Some(pg) = start_or_skip("a_locked_table_times_out_its_own_check") else {
        return;
    };
    let config = two_tables(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    // A long backoff: were the warehouse marked unreachable, the next poll would show it.
    let poller = poller_with(&pg, Duration::from_secs(600), Duration::from_secs(1));
    let now = sunday_night();

    let mut holder = pg.client();
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE shop.\"Orders\" IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    for minutes in [0, 5] {
        let obs = poller
            .poll(&state, &config.monitor, now + TimeDelta::minutes(minutes))
            .unwrap();
        let locked = find(&obs, CheckKind::RowCount, None);
        assert_eq!(locked.monitor, "orders");
        assert_eq!(locked.health, Health::Error, "{locked:#?}");
        assert!(!locked.verdict.is_breach());
        let message = locked.detail.message.as_deref().unwrap();
        assert!(
            message.contains("timeout") || message.contains("timed out"),
            "{message}"
        );
        for o in obs.iter().filter(|o| o.monitor == "other") {
            assert_eq!(o.health, Health::Ok, "{o:#?}");
        }
        assert!(
            obs.iter().all(|o| o.health != Health::Unreachable),
            "{obs:#?}"
        );
    }
    lock.rollback().unwrap();
    let after = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(10))
        .unwrap();
    assert!(after.iter().all(|o| o.health == Health::Ok), "{after:#?}");
}

#[test]
fn a_restart_between_polls_is_not_an_outage() {
    let Some(pg) = start_or_skip("a_restart_between_polls_is_not_an_outage") else {
        return;
    };
    let config = two_tables(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    // A long backoff: one check wrongly finding the warehouse down would show at once.
    let poller = poller_with(&pg, Duration::from_secs(600), Duration::from_secs(10));
    let now = sunday_night();
    let first = poller.poll(&state, &config.monitor, now).unwrap();
    assert!(first.iter().all(|o| o.health == Health::Ok), "{first:#?}");
    // Every pooled connection dies with the restart; the server itself is back.
    pg.stop();
    pg.resume();
    let after = poller
        .poll(&state, &config.monitor, now + TimeDelta::minutes(5))
        .unwrap();
    assert!(after.iter().all(|o| o.health == Health::Ok), "{after:#?}");
}

#[test]
fn a_dry_run_cannot_write() {
    let Some(pg) = start_or_skip("a_dry_run_cannot_write") else {
        return;
    };
    pg.execute(
        "CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2);
         CREATE SEQUENCE s;
         CREATE FUNCTION wipe() RETURNS int LANGUAGE sql AS 'DELETE FROM t; SELECT 1';",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    for sql in [
        "delete from t returning 1",
        "select wipe()",
        "select nextval('s')",
        "with gone as (delete from t returning 1) select * from gone",
    ] {
        let result = warehouse.dry_run(sql);
        assert!(result.is_err(), "{sql} ran: {result:?}");
    }
    let mut client = pg.client();
    let rows: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 2, "the table is unchanged");
    // A read still runs, on the same pooled connection.
    assert_eq!(warehouse.dry_run("select id from t").unwrap(), 2);
}

/// Wednesday 2024-05-15, half past noon UTC: today is half loaded.
fn wednesday_noon() -> DateTime<Utc> {
    "2024-05-15T12:30:00Z".parse().unwrap()
}

/// Eight weeks of hourly loads into billing.payments up to Wednesday noon: 20 rows an
/// hour on weekdays, 8 at weekends, every amount and zip code set.
fn load_payments(pg: &PgServer) {
    pg.execute(
        "CREATE SCHEMA billing;
         CREATE TABLE billing.payments (
             id bigserial PRIMARY KEY,
             amount numeric(10, 2),
             zip_code text,
             loaded_at timestamptz NOT NULL);
         INSERT INTO billing.payments (amount, zip_code, loaded_at)
         SELECT g * 1.5, '10' || g, h
         FROM generate_series(timestamptz '2024-03-20 12:00Z',
                              timestamptz '2024-05-15 12:00Z', interval '1 hour') AS h
         CROSS JOIN LATERAL generate_series(
             1, CASE WHEN extract(isodow FROM h) >= 6 THEN 8 ELSE 20 END) AS g;",
    );
}

fn payments_config() -> Config {
    let text = "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n\n\
                [[monitor]]\nname = \"payments\"\nwarehouse = \"pg\"\ntable = \"billing.payments\"\n\
                checks = [\"volume\", \"null_rate\"]\ntimestamp_column = \"loaded_at\"\n\
                null_columns = [\"amount\", \"zip_code\"]\n";
    Config::parse(text, Path::new("payments.toml")).unwrap()
}

/// A clean table: volume ok (yesterday is the headline, today so far listed and ok),
/// null rates learning then ok, every rate measured over the last day's rows.
fn poll_clean(poller: &Poller, state: &rusqlite::Connection, config: &Config) {
    let now = wednesday_noon();
    for step in 0..4 {
        let obs = poller
            .poll(state, &config.monitor, now + TimeDelta::minutes(5 * step))
            .unwrap();
        assert!(obs.iter().all(|o| o.health == Health::Ok), "{obs:#?}");
        let volume = find(&obs, CheckKind::Volume, None);
        assert_eq!(volume.verdict, VerdictKind::Ok, "{volume:#?}");
        assert!(!volume.detail.partial);
        assert_eq!(volume.detail.day.as_deref(), Some("2024-05-14"));
        let today = volume.detail.days.last().unwrap();
        assert!(today.partial, "{volume:#?}");
        assert_eq!(
            (today.day.as_str(), today.rows),
            ("2024-05-15", 13.0 * 20.0)
        );
        assert_eq!(today.verdict, VerdictKind::Ok);
        for column in ["amount", "zip_code"] {
            let nulls = find(&obs, CheckKind::NullRate, Some(column));
            // From the first poll on, against the table's own days.
            assert_eq!(nulls.verdict, VerdictKind::Ok, "{nulls:#?}");
            assert_eq!(nulls.value, Some(0.0));
            assert!(nulls.detail.since.is_some());
        }
    }
}

#[test]
fn today_missing_60_percent_of_its_rows_is_low_at_the_next_poll() {
    let Some(pg) = start_or_skip("today_missing_60_percent_of_its_rows") else {
        return;
    };
    load_payments(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let poller = poller_for(&pg);
    let config = payments_config();
    poll_clean(&poller, &state, &config);

    pg.execute(
        "DELETE FROM billing.payments
         WHERE loaded_at >= timestamptz '2024-05-15 00:00Z' AND id % 5 < 3",
    );
    let obs = poller
        .poll(
            &state,
            &config.monitor,
            wednesday_noon() + TimeDelta::minutes(20),
        )
        .unwrap();
    let volume = find(&obs, CheckKind::Volume, None);
    assert_eq!(volume.verdict, VerdictKind::Low, "{volume:#?}");
    assert!(volume.detail.partial);
    assert_eq!(volume.detail.day.as_deref(), Some("2024-05-15"));
    assert_eq!(volume.value, Some(104.0), "40% of 13 hours of 20 rows");
    assert_eq!(volume.expected.unwrap().baseline, 260.0);
    // Yesterday, listed beside it, is still fine: only today is short.
    let days = &volume.detail.days;
    assert_eq!(days.len(), 8);
    assert!(days[..7]
        .iter()
        .all(|d| d.verdict == VerdictKind::Ok && !d.partial));
    assert_eq!(days[7].verdict, VerdictKind::Low);
}

#[test]
fn half_the_new_rows_null_in_one_column_is_high_over_the_window() {
    let Some(pg) = start_or_skip("half_the_new_rows_null_in_one_column") else {
        return;
    };
    load_payments(&pg);
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let poller = poller_for(&pg);
    let config = payments_config();
    poll_clean(&poller, &state, &config);

    // The last two hours' loads: half their amounts missing.
    pg.execute(
        "UPDATE billing.payments SET amount = NULL
         WHERE loaded_at >= timestamptz '2024-05-15 11:00Z' AND id % 2 = 0",
    );
    let obs = poller
        .poll(
            &state,
            &config.monitor,
            wednesday_noon() + TimeDelta::minutes(20),
        )
        .unwrap();
    let amount = find(&obs, CheckKind::NullRate, Some("amount"));
    assert_eq!(amount.verdict, VerdictKind::High, "{amount:#?}");
    assert_eq!(
        amount.detail.since.map(|at| at.to_string()).as_deref(),
        Some("2024-05-14T12:50:00Z")
    );
    // 20 of the 480 rows loaded in the last day (weekday hours 13:00 to 12:00).
    assert_eq!(amount.value, Some(20.0 / 480.0));
    let zip = find(&obs, CheckKind::NullRate, Some("zip_code"));
    assert_eq!(zip.verdict, VerdictKind::Ok, "{zip:#?}");
    // Volume is unaffected.
    assert_eq!(find(&obs, CheckKind::Volume, None).verdict, VerdictKind::Ok);
}

#[test]
fn load_times_are_distinct_minutes_alike_from_timestamptz_timestamp_and_date_columns() {
    let Some(pg) = start_or_skip(
        "load_times_are_distinct_minutes_alike_from_timestamptz_timestamp_and_date_columns",
    ) else {
        return;
    };
    // Two rows in one minute, one 30 s before 1970 (a negative minute), and a null.
    pg.execute(
        "CREATE TABLE loads (tz timestamptz, ts timestamp, d date);
         INSERT INTO loads VALUES
           ('1969-12-31 23:59:30+00', '1969-12-31 23:59:30', '1969-12-31'),
           ('2026-11-28 09:30:05+00', '2026-11-28 09:30:05', '2026-11-28'),
           ('2026-11-28 09:30:55+00', '2026-11-28 09:30:55', '2026-11-28'),
           ('2026-11-28 09:45:00+00', '2026-11-28 09:45:00', '2026-11-29'),
           (NULL, NULL, NULL);",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let rel = Relation::parse("loads").unwrap();
    let (nine_thirty, nine_forty_five) = (1_795_858_200, 1_795_859_100);
    let timed = vec![nine_forty_five, nine_thirty, -60];
    assert_eq!(
        warehouse.load_times(&rel, "tz", -86_400, 10).unwrap(),
        timed
    );
    assert_eq!(
        warehouse.load_times(&rel, "ts", -86_400, 10).unwrap(),
        timed
    );
    // Newest first, at most `limit`, none before `since`.
    assert_eq!(
        warehouse.load_times(&rel, "tz", -86_400, 2).unwrap(),
        timed[..2]
    );
    assert_eq!(warehouse.load_times(&rel, "tz", 0, 10).unwrap(), timed[..2]);
    // Dates are midnights.
    assert_eq!(
        warehouse.load_times(&rel, "d", -86_400, 10).unwrap(),
        vec![1_795_910_400, 1_795_824_000, -86_400]
    );
}

#[test]
fn daily_counts_read_days_alike_from_timestamptz_timestamp_and_date_columns() {
    let Some(pg) =
        start_or_skip("daily_counts_read_days_alike_from_timestamptz_timestamp_and_date_columns")
    else {
        return;
    };
    // The same instants in three column types; one day before 1970 (a negative day
    // number), midnights, and a row just before the next day.
    pg.execute(
        "CREATE TABLE days (tz timestamptz, ts timestamp, d date);
         INSERT INTO days VALUES
           ('1969-12-31 23:00:00+00', '1969-12-31 23:00:00', '1969-12-31'),
           ('2026-11-28 00:00:00+00', '2026-11-28 00:00:00', '2026-11-28'),
           ('2026-11-28 09:30:00+00', '2026-11-28 09:30:00', '2026-11-28'),
           ('2026-11-28 23:59:59+00', '2026-11-28 23:59:59', '2026-11-28'),
           ('2026-11-29 00:00:00+00', '2026-11-29 00:00:00', '2026-11-29');",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let rel = Relation::parse("days").unwrap();
    let ten = chrono::NaiveTime::from_hms_opt(10, 0, 0).unwrap();
    let day = |d: &str, rows, before_cutoff, at_midnight| DayCount {
        day: d.parse().unwrap(),
        rows,
        before_cutoff,
        at_midnight,
    };
    let since = -86_400 * 2;
    let timed = vec![
        day("1969-12-31", 1, 0, 0),
        day("2026-11-28", 3, 2, 1),
        day("2026-11-29", 1, 1, 1),
    ];
    assert_eq!(
        warehouse.daily_counts(&rel, "tz", since, ten).unwrap(),
        timed
    );
    assert_eq!(
        warehouse.daily_counts(&rel, "ts", since, ten).unwrap(),
        timed
    );
    // Dates read as midnight: every row is before the cutoff and at midnight.
    assert_eq!(
        warehouse.daily_counts(&rel, "d", since, ten).unwrap(),
        vec![
            day("1969-12-31", 1, 1, 1),
            day("2026-11-28", 3, 3, 3),
            day("2026-11-29", 1, 1, 1),
        ]
    );
    // Only the days from `since` on.
    let from_2026 = 1_795_824_000; // 2026-11-28 00:00 UTC
    assert_eq!(
        warehouse.daily_counts(&rel, "tz", from_2026, ten).unwrap(),
        timed[1..].to_vec()
    );
}

#[test]
fn missing_keys_counts_what_upstream_holds_that_the_model_has_on_no_day() {
    let Some(pg) =
        start_or_skip("missing_keys_counts_what_upstream_holds_that_the_model_has_on_no_day")
    else {
        return;
    };
    // Upstream: events of accounts on two days, one of them a timestamptz, the other
    // column of the model a date. The model holds events 1 and 4 (the latter on the
    // wrong day: held is held) and none of account 8's.
    pg.execute(
        "CREATE SCHEMA raw; CREATE SCHEMA analytics;
         CREATE TABLE raw.\"Events\" (\"Event_id\" int, account_id int, at timestamptz);
         INSERT INTO raw.\"Events\" VALUES
           (1, 7, '2026-11-28 00:00:00+00'), (2, 7, '2026-11-28 13:00:00+00'),
           (3, 8, '2026-11-28 23:59:59+00'), (4, 8, '2026-11-28 10:00:00+00'),
           (5, 8, '2026-11-29 00:00:00+00'), (NULL, 9, '2026-11-28 12:00:00+00');
         CREATE TABLE analytics.fct (\"Event_id\" int, account_id int, day date);
         INSERT INTO analytics.fct VALUES (1, 7, '2026-11-28'), (4, 8, '2026-11-27'), (NULL, 9, '2026-11-28');",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let (from, into) = (
        Relation::parse("raw.Events").unwrap(),
        Relation::parse("analytics.fct").unwrap(),
    );
    let also = vec!["account_id".to_string()];
    let gap = |day: &str| {
        warehouse
            .missing_keys(&KeyGap {
                from: &from,
                from_time: "at",
                into: &into,
                day: day.parse().unwrap(),
                key: "Event_id",
                also: &also,
            })
            .unwrap()
    };
    // Saturday: 2 and 3 are missing, of accounts 7 and 8; a null key is no row.
    assert_eq!(gap("2026-11-28"), vec![2, 2]);
    assert_eq!(gap("2026-11-29"), vec![1, 1]);
    assert_eq!(gap("2026-11-30"), vec![0, 0]);
}

/// Values that cast and values that do not, for every target `count_uncastable` judges.
const CAST_SAMPLES: &[&str] = &[
    "12",
    " 7 ",
    "",
    " ",
    "A-3",
    "-3",
    "+0",
    "007",
    "1.5",
    "5.",
    ".5",
    "-.5",
    "1e3",
    "2.5E-3",
    "1,5",
    "1e",
    "NaN",
    "-Infinity",
    "inf",
    "3000000000",
    "40000",
    "9223372036854775808",
    "2024-02-29",
    "2023-02-29",
    " 2024-01-31 ",
    "2024-1-5",
    "2024-13-01",
    "0000-01-01",
    "soon",
    "yes",
    "of",
    "o",
    "TRUE",
    "2",
    "f",
    " no ",
];

#[test]
fn count_uncastable_agrees_with_postgres_own_casts() {
    let Some(pg) = start_or_skip("count_uncastable_agrees_with_postgres_own_casts") else {
        return;
    };
    pg.execute(
        "CREATE SCHEMA billing;
         CREATE TABLE billing.\"Payments\" (id serial, \"Amount\" varchar(24));",
    );
    let mut client = pg.client();
    for value in CAST_SAMPLES {
        client
            .execute(
                "INSERT INTO billing.\"Payments\" (\"Amount\") VALUES ($1)",
                &[value],
            )
            .unwrap();
    }
    client
        .execute(
            "INSERT INTO billing.\"Payments\" (\"Amount\") VALUES (NULL), ('A-3')",
            &[],
        )
        .unwrap();
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let rel = Relation::parse("billing.Payments").unwrap();
    for target in [
        "integer",
        "smallint",
        "BIGINT",
        "numeric",
        "double precision",
        "date",
        "boolean",
        "varchar(3)",
    ] {
        // What PostgreSQL itself refuses, value by value.
        let mut refused = Vec::new();
        for value in CAST_SAMPLES.iter().chain(&["A-3"]) {
            let casts = client
                .query_one(&format!("SELECT CAST($1::text AS {target})"), &[value])
                .is_ok();
            let shape = CastTarget::parse(target).unwrap().accepts(value);
            assert_eq!(shape, casts, "{value:?} as {target}");
            if !casts {
                refused.push(value.to_string());
            }
        }
        let uncastable = warehouse
            .count_uncastable(&rel, "Amount", target)
            .unwrap()
            .unwrap();
        assert_eq!(
            uncastable.rows,
            refused.len() as u64,
            "{target}: {refused:?}"
        );
        refused.sort();
        refused.dedup();
        refused.truncate(3);
        assert_eq!(uncastable.examples, refused, "{target}");
    }
    // '' does not cast to an integer; NULL is not a value; 'A-3' is there twice.
    let integers = warehouse
        .count_uncastable(&rel, "Amount", "integer")
        .unwrap()
        .unwrap();
    assert_eq!(integers.examples, vec!["", " ", " 2024-01-31 "]);
    assert_eq!(
        warehouse
            .count_uncastable(&rel, "Amount", "timestamp")
            .unwrap(),
        None
    );
    assert!(matches!(
        warehouse.count_uncastable(&rel, "amount", "integer"),
        Err(WarehouseError::Query(_))
    ));
    // Nothing was written.
    let rows: i64 = client
        .query_one("SELECT count(*) FROM billing.\"Payments\"", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, CAST_SAMPLES.len() as i64 + 2);
}

/// An incremental mart as dbt builds it: an identity key, a decimal, a short text, an
/// array and a generated column, 30 rows over three days; a role that may read it.
fn load_shipments(pg: &PgServer) -> Relation {
    pg.execute(
        "CREATE SCHEMA analytics;
         CREATE TABLE analytics.fct_shipments (
             id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
             day date NOT NULL,
             amount numeric(10,2),
             carrier varchar(12),
             tags text[],
             doubled numeric GENERATED ALWAYS AS (amount * 2) STORED);
         INSERT INTO analytics.fct_shipments (day, amount, carrier, tags)
         SELECT date '2024-05-10' + g % 3, g * 1.25,
                CASE WHEN g % 4 = 0 THEN NULL ELSE 'c' || g END, ARRAY['a', g::text]
         FROM generate_series(1, 30) AS g;
         CREATE ROLE reader;
         GRANT USAGE ON SCHEMA analytics TO reader;
         GRANT SELECT ON analytics.fct_shipments TO reader;",
    );
    Relation::parse("analytics.fct_shipments").unwrap()
}

/// Every row, whole, in key order.
fn shipments(client: &mut postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT t::text FROM analytics.fct_shipments AS t ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn refusal<T: std::fmt::Debug>(result: Result<T, WarehouseError>) -> String {
    match result {
        Err(WarehouseError::Refused(message)) => message,
        other => panic!("not refused: {other:?}"),
    }
}

fn exists(client: &mut postgres::Client, relation: &str) -> bool {
    client
        .query_one("SELECT to_regclass($1::text) IS NOT NULL", &[&relation])
        .unwrap()
        .get(0)
}

#[test]
fn a_table_version_puts_the_table_back_exactly() {
    let Some(pg) = start_or_skip("a_table_version_puts_the_table_back_exactly") else {
        return;
    };
    let rel = load_shipments(&pg);
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let mut client = pg.client();
    let before = shipments(&mut client);
    let oid = |client: &mut postgres::Client| -> u32 {
        client
            .query_one("SELECT 'analytics.fct_shipments'::regclass::oid", &[])
            .unwrap()
            .get(0)
    };
    let table_oid = oid(&mut client);

    let version = warehouse.snapshot_table(&rel, "INC-0003-P1").unwrap();
    assert_eq!(version.table, "analytics.fct_shipments");
    assert_eq!(
        version.copy,
        "dataward_versions.analytics__fct_shipments__inc_0003_p1"
    );
    assert_eq!(version.rows, 30);
    assert!(version.taken_at.is_some(), "{version:?}");
    // The copy has the table's columns and types; the generated one is computed again.
    let copy = Relation::parse(&version.copy).unwrap();
    let mut expected = warehouse.columns(&rel).unwrap();
    expected.retain(|c| c.name != "doubled");
    assert_eq!(warehouse.columns(&copy).unwrap(), expected);
    // Whoever may read the table may not read its copies.
    let reads_copies: bool = client
        .query_one(
            "SELECT has_schema_privilege('reader', 'dataward_versions', 'USAGE')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!reads_copies);

    // The backfill goes wrong: a day deleted, values changed, a row added.
    pg.execute(
        "DELETE FROM analytics.fct_shipments WHERE day = date '2024-05-11';
         UPDATE analytics.fct_shipments SET amount = amount + 1, carrier = upper(carrier);
         INSERT INTO analytics.fct_shipments (day) VALUES (date '2024-05-13');",
    );
    assert_ne!(shipments(&mut client), before);
    assert_eq!(restore_as_left(&warehouse, &rel, &version).unwrap(), 30);
    assert_eq!(shipments(&mut client), before);
    // The same table, not a new one: its oid and grants, its identity going on.
    assert_eq!(oid(&mut client), table_oid);
    let reader_reads: bool = client
        .query_one(
            "SELECT has_table_privilege('reader', 'analytics.fct_shipments', 'SELECT')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(reader_reads);
    let next: i32 = client
        .query_one(
            "INSERT INTO analytics.fct_shipments (day) VALUES (date '2024-05-14') RETURNING id",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(next > 31, "{next}");
    client
        .execute(
            "DELETE FROM analytics.fct_shipments WHERE id = $1",
            &[&next],
        )
        .unwrap();

    // A version is never overwritten; the first copy still holds the table as it was.
    pg.execute("DELETE FROM analytics.fct_shipments WHERE id > 10");
    for tag in ["INC-0003-P1", "inc_0003_p1"] {
        let message = refusal(warehouse.snapshot_table(&rel, tag));
        assert!(message.contains(&version.copy), "{message}");
    }
    assert_eq!(restore_as_left(&warehouse, &rel, &version).unwrap(), 30);
    assert_eq!(shipments(&mut client), before);

    // A hostile tag is only ever part of a name.
    pg.execute("CREATE TABLE public.t (a int); INSERT INTO public.t VALUES (1);");
    let hostile = warehouse
        .snapshot_table(&rel, "x\"; drop table t; --")
        .unwrap();
    assert_eq!(
        hostile.copy,
        "dataward_versions.analytics__fct_shipments__x_drop_table_t"
    );
    assert!(exists(&mut client, "public.t"));
    assert!(exists(&mut client, &copy.quoted()));

    // Retention ended: dropped, and dropped again.
    for _ in 0..2 {
        warehouse.drop_version(&version).unwrap();
        warehouse.drop_version(&hostile).unwrap();
    }
    assert!(!exists(&mut client, &copy.quoted()));
    // A stored version edited to name a real table drops nothing.
    let forged = dataward::warehouse::TableVersion {
        copy: "analytics.fct_shipments".into(),
        ..version.clone()
    };
    refusal(warehouse.drop_version(&forged));
    refusal(restore_as_left(&warehouse, &rel, &forged));
    assert_eq!(shipments(&mut client), before);
}

#[test]
fn a_restore_is_refused_when_the_copy_no_longer_fits_the_table() {
    let Some(pg) = start_or_skip("a_restore_is_refused_when_the_copy_no_longer_fits") else {
        return;
    };
    let rel = load_shipments(&pg);
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let mut client = pg.client();
    // Dropping a version whose schema was never made is already done.
    let never = dataward::warehouse::TableVersion {
        table: rel.to_string(),
        copy: "dataward_versions.analytics__fct_shipments__never".into(),
        rows: 0,
        taken_at: Some("2024-05-12T02:30:00Z".parse().unwrap()),
        scope: None,
        after: None,
    };
    warehouse.drop_version(&never).unwrap();
    refusal(restore_as_left(&warehouse, &rel, &never));

    let version = warehouse.snapshot_table(&rel, "INC-0003-P1").unwrap();
    pg.execute("ALTER TABLE analytics.fct_shipments ALTER COLUMN carrier TYPE text");
    let altered = shipments(&mut client);
    assert_eq!(
        refusal(restore_as_left(&warehouse, &rel, &version)),
        format!(
            "cannot restore analytics.fct_shipments from {}: column carrier is text in the \
             table but character varying(12) in the copy",
            version.copy
        )
    );
    assert_eq!(shipments(&mut client), altered);

    // A copy that changed since it was taken is not the table as it was.
    let later = warehouse.snapshot_table(&rel, "INC-0003-P2").unwrap();
    pg.execute(&format!(
        "DELETE FROM analytics.fct_shipments WHERE id < 5;
         INSERT INTO {} (id, day) VALUES (99, date '2024-05-13')",
        Relation::parse(&later.copy).unwrap().quoted()
    ));
    let changed = shipments(&mut client);
    let message = refusal(restore_as_left(&warehouse, &rel, &later));
    assert!(message.contains("31 rows"), "{message}");
    assert_eq!(shipments(&mut client), changed);
    // A version of another table, a copy gone, a view, no table at all.
    let orders = Relation::parse("analytics.orders").unwrap();
    pg.execute("CREATE TABLE analytics.orders (id int)");
    refusal(restore_as_left(&warehouse, &orders, &later));
    warehouse.drop_version(&later).unwrap();
    assert!(refusal(restore_as_left(&warehouse, &rel, &later)).contains("missing"));
    pg.execute("CREATE VIEW analytics.v AS SELECT 1 AS a");
    refusal(warehouse.snapshot_table(&Relation::parse("analytics.v").unwrap(), "t1"));
    refusal(warehouse.snapshot_table(&Relation::parse("analytics.nope").unwrap(), "t1"));
    assert_eq!(shipments(&mut client), changed);

    // Deleting through a cascading foreign key would change a table no copy restores.
    let version = warehouse.snapshot_table(&rel, "INC-0003-P3").unwrap();
    pg.execute(
        "CREATE TABLE analytics.payouts (
             delivery_id int REFERENCES analytics.fct_shipments ON DELETE CASCADE);
         INSERT INTO analytics.payouts VALUES (10), (11);",
    );
    let message = refusal(restore_as_left(&warehouse, &rel, &version));
    assert!(message.contains("analytics.payouts"), "{message}");
    let payouts: i64 = client
        .query_one("SELECT count(*) FROM analytics.payouts", &[])
        .unwrap()
        .get(0);
    assert_eq!(payouts, 2);
    assert_eq!(shipments(&mut client), changed);
    pg.execute("DROP TABLE analytics.payouts");
    assert_eq!(restore_as_left(&warehouse, &rel, &version).unwrap(), 26);

    // A name PostgreSQL keeps in mixed case gets a copy of its own, found again.
    pg.execute(
        "CREATE TABLE analytics.\"Orders\" (id int);
         INSERT INTO analytics.\"Orders\" VALUES (1), (2);",
    );
    let mixed = Relation::parse("analytics.Orders").unwrap();
    let version = warehouse.snapshot_table(&mixed, "INC-0003-P1").unwrap();
    assert!(
        version
            .copy
            .starts_with("dataward_versions.analytics__orders_")
            && version.copy.ends_with("__inc_0003_p1"),
        "{}",
        version.copy
    );
    assert_eq!(
        warehouse
            .snapshot_table(&orders, "INC-0003-P1")
            .unwrap()
            .rows,
        0
    );
    pg.execute("DELETE FROM analytics.\"Orders\"");
    assert_eq!(restore_as_left(&warehouse, &mixed, &version).unwrap(), 2);
}

/// The restore deletes every row and inserts the copy's in one transaction: until it
/// commits, every other session reads the rows as they were (MVCC), and the table's
/// EXCLUSIVE lock keeps writers out but not readers. Here the restore is held just after
/// its DELETE (a trigger of the table's waits on a lock the test holds) while another
/// session reads the table.
#[test]
fn a_reader_never_sees_the_table_empty_while_it_is_restored() {
    let Some(pg) = start_or_skip("a_reader_never_sees_the_table_empty") else {
        return;
    };
    let rel = load_shipments(&pg);
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let version = warehouse.snapshot_table(&rel, "INC-0003-P1").unwrap();
    pg.execute(
        "DELETE FROM analytics.fct_shipments WHERE id > 20;
         CREATE FUNCTION analytics.hold() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$;
         CREATE TRIGGER hold AFTER DELETE ON analytics.fct_shipments
             FOR EACH STATEMENT EXECUTE FUNCTION analytics.hold();",
    );
    let mut holder = pg.client();
    holder
        .execute("SELECT pg_advisory_lock(4242)", &[])
        .unwrap();
    let restore = std::thread::spawn(move || restore_as_left(&warehouse, &rel, &version));
    let mut reader = pg.client();
    // Wait (not timed: polled) until the restore has deleted and waits on the lock.
    let mut waiting = false;
    for _ in 0..2000 {
        let n: i64 = reader
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                &[],
            )
            .unwrap()
            .get(0);
        if n == 1 {
            waiting = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(waiting, "the restore never reached its DELETE");
    assert!(!restore.is_finished());
    let seen: i64 = reader
        .query_one("SELECT count(*) FROM analytics.fct_shipments", &[])
        .unwrap()
        .get(0);
    assert_eq!(seen, 20, "a reader during the restore saw {seen} rows");
    holder
        .execute("SELECT pg_advisory_unlock(4242)", &[])
        .unwrap();
    assert_eq!(restore.join().unwrap().unwrap(), 30);
    let after: i64 = reader
        .query_one("SELECT count(*) FROM analytics.fct_shipments", &[])
        .unwrap()
        .get(0);
    assert_eq!(after, 30);
}

/// Restores as the engine does once a backfill's run has finished: the table as it
/// stands now printed as the table the backfill left, so nothing changed since.
fn restore_as_left(
    wh: &(impl Warehouse + ?Sized),
    rel: &Relation,
    version: &TableVersion,
) -> Result<u64, WarehouseError> {
    let mut version = version.clone();
    version.after = Some(wh.day_prints(rel, None).unwrap_or_default());
    wh.restore_table(rel, &version).map(|r| r.rows)
}

/// Every statement the table-version calls send is in the query log, as the checks'
/// are: each call's BEGIN and its end (COMMIT, or the ROLLBACK of a refusal), the
/// snapshot's CREATE TABLE AS, the restore's locks, DELETE and INSERT, the drop.
#[test]
fn the_table_version_calls_record_every_statement_they_send() {
    use dataward::warehouse::query_log::capture;
    let test = "the_table_version_calls_record_every_statement_they_send";
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    let rel = load_shipments(&pg);
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    // What each call sent after a new connection's own set-up.
    let sent = |log: &dataward::warehouse::query_log::Log| -> Vec<String> {
        log.sent
            .iter()
            .map(|s| s.sql.clone())
            .filter(|sql| !sql.starts_with("SET TimeZone"))
            .collect()
    };
    let has = |sent: &[String], start: &str| sent.iter().any(|sql| sql.starts_with(start));

    let (version, log) = capture(None, || warehouse.snapshot_table(&rel, "INC-0009-P1"));
    let version = version.unwrap();
    let snapshot = sent(&log);
    assert_eq!(
        snapshot.first().map(String::as_str),
        Some("BEGIN"),
        "{snapshot:#?}"
    );
    assert_eq!(
        snapshot.last().map(String::as_str),
        Some("COMMIT"),
        "{snapshot:#?}"
    );
    assert!(
        has(&snapshot, "CREATE TABLE \"dataward_versions\""),
        "{snapshot:#?}"
    );
    assert!(
        has(&snapshot, "SELECT pg_advisory_xact_lock"),
        "{snapshot:#?}"
    );

    let (again, log) = capture(None, || warehouse.snapshot_table(&rel, "INC-0009-P1"));
    assert!(
        matches!(again, Err(WarehouseError::Refused(_))),
        "{again:?}"
    );
    let refused = sent(&log);
    assert_eq!(
        refused.last().map(String::as_str),
        Some("ROLLBACK"),
        "{refused:#?}"
    );

    let (restored, log) = capture(None, || restore_as_left(&warehouse, &rel, &version));
    restored.unwrap();
    let restore = sent(&log);
    for start in [
        "BEGIN",
        "LOCK TABLE",
        "DELETE FROM",
        "INSERT INTO",
        "COMMIT",
    ] {
        assert!(has(&restore, start), "{start}: {restore:#?}");
    }

    let (found, log) = capture(None, || warehouse.find_version(&rel, "INC-0009-P1"));
    assert!(found.unwrap().is_some());
    assert!(
        has(&sent(&log), "SELECT count(*) FROM"),
        "{:#?}",
        sent(&log)
    );
    let (prints, log) = capture(None, || warehouse.day_prints(&rel, None));
    prints.unwrap();
    assert!(has(&sent(&log), "SELECT NULL::text"), "{:#?}", sent(&log));
    let (dropped, log) = capture(None, || warehouse.drop_version(&version));
    dropped.unwrap();
    assert!(
        has(&sent(&log), "DROP TABLE IF EXISTS"),
        "{:#?}",
        sent(&log)
    );
}
