//! The test estate itself (tests/support/estate.rs) is right: it builds, dataward reads
//! its manifest, notes and config, its dbt stand-in builds the models and writes real
//! run results, and every fault injector does what it says. Needs PostgreSQL server
//! binaries; skips without them unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::time::Instant;

use chrono::{Datelike, NaiveDate, NaiveDateTime, TimeDelta, Weekday};
use dataward::approve::Actor;
use dataward::engine::api::{MonitorHealth, VerdictKind};
use dataward::engine::Engine;
use dataward::lineage::run_results::{self, NodeStatus};
use dataward::lineage::{Dialect, Lineage, NodeKind};
use support::estate::{hour_of, Estate, RunStatus, HISTORY};
use support::pg::{start_or_skip, PgServer};

/// Wednesday 2024-05-15 09:40 UTC: the last complete day is a Tuesday.
fn now() -> NaiveDateTime {
    "2024-05-15T09:40:00".parse().unwrap()
}

fn hours(n: i64) -> TimeDelta {
    TimeDelta::hours(n)
}

fn build(test: &str) -> Option<(PgServer, tempfile::TempDir, Estate)> {
    let pg = start_or_skip(test)?;
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let estate = Estate::build(&pg, dir.path(), now());
    eprintln!("{test}: the estate built in {:?}", started.elapsed());
    Some((pg, dir, estate))
}

/// Rows of `table` loaded in the hour starting at `hour`.
fn count_in_hour(estate: &Estate, table: &str, hour: NaiveDateTime) -> i64 {
    estate.scalar(&format!(
        "SELECT count(*) FROM {table} WHERE loaded_at >= timestamp '{hour}' \
         AND loaded_at < timestamp '{hour}' + interval '1 hour'"
    ))
}

#[test]
fn the_estate_holds_eight_weeks_of_hourly_loads_with_quiet_weekends() {
    let Some((_pg, _dir, estate)) = build("the_estate_holds_eight_weeks") else {
        return;
    };
    let last = hour_of(now());
    for table in ["raw.orders", "raw.payments"] {
        let loads = estate.scalar(&format!("SELECT count(DISTINCT loaded_at) FROM {table}"));
        assert_eq!(loads, 8 * 7 * 24, "{table}: one load every hour");
        let newest = estate.text(&format!("SELECT max(loaded_at)::text FROM {table}"));
        let oldest = estate.text(&format!("SELECT min(loaded_at)::text FROM {table}"));
        assert_eq!(newest, Some(last.to_string()));
        assert_eq!(oldest, Some((last - HISTORY + hours(1)).to_string()));
    }
    // A few hundred rows a day; weekends quieter than weekdays.
    let day = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
    let tuesday = estate.count_on("raw.orders", day("2024-05-14"));
    let sunday = estate.count_on("raw.orders", day("2024-05-12"));
    assert_eq!(day("2024-05-12").weekday(), Weekday::Sun);
    assert!(
        (250..=450).contains(&tuesday),
        "{tuesday} orders on a Tuesday"
    );
    assert!((100..=220).contains(&sunday), "{sunday} orders on a Sunday");
    let payments = estate.count_on("raw.payments", day("2024-05-14"));
    assert!(
        payments > tuesday && payments < tuesday * 3 / 2,
        "one payment per order, two for some: {payments} for {tuesday} orders"
    );
    // Every payment belongs to an order; amounts are cents.
    assert_eq!(
        estate.scalar(
            "SELECT count(*) FROM raw.payments p
             WHERE NOT EXISTS (SELECT 1 FROM raw.orders o WHERE o.id = p.order_id)"
        ),
        0
    );
    assert_eq!(
        estate.scalar("SELECT count(*) FROM raw.payments WHERE amount NOT BETWEEN 500 AND 4999"),
        0
    );
    assert_eq!(estate.column_type("raw.payments", "amount"), "integer");
    // Deterministic: the same figures on another build.
    let Some((_pg2, _dir2, again)) = build("the_estate_holds_eight_weeks (again)") else {
        return;
    };
    for table in ["raw.orders", "raw.payments"] {
        assert_eq!(estate.count(table), again.count(table));
    }
    assert_eq!(
        estate.scalar("SELECT sum(amount) FROM raw.payments"),
        again.scalar("SELECT sum(amount) FROM raw.payments")
    );
}

#[test]
fn dataward_reads_the_manifest_notes_and_config_and_watches_a_healthy_estate() {
    let Some((_pg, _dir, estate)) = build("dataward_reads_the_estate") else {
        return;
    };
    let lineage = Lineage::load(&estate.manifest, Some(&estate.notes)).unwrap();
    assert_eq!(lineage.dialect(), Dialect::Postgres);
    let raw_payments = lineage.resolve("raw.payments").unwrap();
    assert_eq!(
        lineage.node(raw_payments).unique_id,
        "source.shop.raw.payments"
    );
    assert_eq!(
        lineage.node(raw_payments).owner.as_deref(),
        Some("platform-owner")
    );
    let blast = lineage.blast_radius(raw_payments, None);
    let downstream: Vec<&str> = blast.nodes.iter().map(|n| n.unique_id.as_str()).collect();
    assert_eq!(
        downstream,
        vec![
            "model.shop.stg_payments",
            "job.dbt_every_ten_minutes",
            "model.shop.fct_payments",
            "model.shop.orders",
            "dashboard.orders_overview",
        ],
        "{blast:#?}"
    );
    assert!(!downstream.contains(&"model.shop.stg_orders"));
    let stg_payments = lineage
        .node(lineage.resolve("analytics.stg_payments").unwrap())
        .clone();
    assert_eq!(stg_payments.kind, NodeKind::Model);
    assert_eq!(stg_payments.owner.as_deref(), Some("analytics-owner"));
    assert_eq!(stg_payments.materialized.as_deref(), Some("table"));
    assert_eq!(
        stg_payments.file.as_deref(),
        Some("models/staging/stg_payments.sql")
    );
    assert_eq!(
        stg_payments.relation_name.as_deref(),
        Some("\"dw\".\"analytics\".\"stg_payments\"")
    );
    assert!(stg_payments
        .raw_sql
        .as_deref()
        .unwrap()
        .contains("amount / 100 as amount"));
    // ref() and source() render to what the estate built.
    let rendered = lineage
        .render(
            lineage
                .node(lineage.resolve("model.shop.orders").unwrap())
                .raw_sql
                .as_deref()
                .unwrap(),
        )
        .unwrap();
    assert!(
        rendered.contains("\"analytics\".\"stg_payments\""),
        "{rendered}"
    );
    let writers: Vec<&str> = lineage
        .writers_of(raw_payments)
        .iter()
        .map(|w| w.id.as_str())
        .collect();
    assert_eq!(writers, vec!["loader.payments"]);

    let config = estate.load_config();
    assert_eq!(config.monitor.len(), 6);
    assert_eq!(
        std::env::var(&estate.url_env).as_deref(),
        Ok(estate.url.as_str())
    );

    // Every check of every monitor runs against the estate, and an hour of hourly
    // loads with dbt every ten minutes open nothing.
    let data = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&data.path().join("state.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    for step in 0..=12 {
        let at = now() + TimeDelta::minutes(5 * step);
        estate.load_hour(at);
        if step % 2 == 0 {
            assert!(estate.dbt_run(at).all_succeeded());
        }
        engine.tick(at).unwrap();
    }
    let snapshot = engine.snapshot(false);
    let checks: Vec<String> = snapshot
        .monitors
        .iter()
        .map(|m| format!("{} {} {} {}", m.name, m.check, m.health, m.verdict))
        .collect();
    // Six checks on each raw table and on stg_payments (null rate per column), three on
    // stg_orders, five on orders, four on the microbatch model.
    assert_eq!(snapshot.monitors.len(), 30, "{checks:#?}");
    assert!(
        snapshot
            .monitors
            .iter()
            .all(|m| m.health == MonitorHealth::Ok && m.verdict == VerdictKind::Ok),
        "{checks:#?}"
    );
    assert!(
        snapshot.incidents.is_empty(),
        "a healthy estate opens nothing: {:#?}\n{checks:#?}",
        snapshot.incidents
    );
}

#[test]
fn the_loader_appends_each_hour_once_and_dbt_run_builds_the_models() {
    let Some((pg, _dir, estate)) = build("dbt_run_builds_the_models") else {
        return;
    };
    // The build ran dbt once: the models exist and the run results say so.
    let first = run_results::load(&estate.run_results).unwrap();
    assert_eq!(first.results.len(), 4);
    assert!(first
        .results
        .iter()
        .all(|r| r.status == NodeStatus::Success));
    assert_eq!(estate.count("analytics.orders"), estate.count("raw.orders"));

    let next = hour_of(now()) + hours(1);
    let loaded = estate.load_hour(next + TimeDelta::minutes(2));
    assert!(
        loaded.orders > 0 && loaded.payments >= loaded.orders,
        "{loaded:?}"
    );
    assert_eq!(
        count_in_hour(&estate, "raw.orders", next),
        loaded.orders as i64
    );
    let again = estate.load_hour(next + TimeDelta::minutes(7));
    assert_eq!((again.orders, again.payments), (0, 0), "once an hour");

    let at = next + TimeDelta::minutes(10);
    let outcome = estate.dbt_run(at);
    let order: Vec<(&str, RunStatus)> = outcome
        .results
        .iter()
        .map(|r| (r.name.as_str(), r.status))
        .collect();
    assert_eq!(
        order,
        vec![
            ("stg_orders", RunStatus::Success),
            ("stg_payments", RunStatus::Success),
            ("fct_payments", RunStatus::Success),
            ("orders", RunStatus::Success),
        ],
        "parents first"
    );
    let raw_payments = estate.count("raw.payments");
    assert_eq!(estate.count("analytics.stg_payments"), raw_payments);
    assert_eq!(estate.count("analytics.orders"), estate.count("raw.orders"));
    // The new hour is in today's batch, which the microbatch model rebuilt.
    assert_eq!(estate.count("analytics.fct_payments"), raw_payments);
    assert_eq!(
        outcome.model("stg_payments").rows,
        Some(raw_payments as u64)
    );
    // Amounts are whole units summed per order.
    assert_eq!(
        estate.scalar("SELECT sum(amount)::bigint FROM analytics.orders"),
        estate.scalar("SELECT sum(amount / 100)::bigint FROM raw.payments")
    );

    let read = run_results::load(&outcome.run_results).unwrap();
    assert!(read
        .generated_at
        .unwrap()
        .to_string()
        .starts_with("2024-05-15T10:10:"));
    let statuses: Vec<(&str, &NodeStatus)> = read
        .results
        .iter()
        .map(|r| (r.unique_id.as_str(), &r.status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("model.shop.stg_orders", &NodeStatus::Success),
            ("model.shop.stg_payments", &NodeStatus::Success),
            ("model.shop.fct_payments", &NodeStatus::Success),
            ("model.shop.orders", &NodeStatus::Success),
        ]
    );
    let stg_payments = read.get("model.shop.stg_payments").unwrap();
    assert_eq!(
        stg_payments.message.as_deref(),
        Some(format!("SELECT {raw_payments}").as_str())
    );
    assert!(stg_payments
        .completed_at
        .unwrap()
        .to_string()
        .starts_with("2024-05-15T10:10:"));
    // The raw file is dbt's shape: the keys other tools read are there.
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.run_results).unwrap()).unwrap();
    assert_eq!(
        raw["metadata"]["dbt_schema_version"],
        "https://schemas.getdbt.com/dbt/run-results/v6.json"
    );
    assert_eq!(raw["args"]["which"], "run");
    assert!(raw["elapsed_time"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        raw["results"][1]["adapter_response"]["rows_affected"],
        raw_payments
    );

    // The model files are read on every run: a model changed on disk runs as changed,
    // and the manifest is rewritten from it.
    let path = estate.project.join("models/marts/orders.sql");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "payments.amount,",
            "coalesce(payments.amount, 0) as amount,",
        ),
    )
    .unwrap();
    assert!(estate.dbt_run(at + TimeDelta::minutes(10)).all_succeeded());
    let lineage = Lineage::load(&estate.manifest, Some(&estate.notes)).unwrap();
    let orders = lineage.node(lineage.resolve("model.shop.orders").unwrap());
    assert!(orders
        .raw_sql
        .as_deref()
        .unwrap()
        .contains("coalesce(payments.amount, 0)"));

    // With the server down every model that runs fails, and the rest are skipped.
    pg.stop();
    let down = estate.dbt_run(at + TimeDelta::minutes(20));
    assert_eq!(down.model("stg_orders").status, RunStatus::Error);
    assert_eq!(down.model("stg_payments").status, RunStatus::Error);
    assert_eq!(down.model("orders").status, RunStatus::Skipped);
    assert_eq!(down.model("fct_payments").status, RunStatus::Skipped);
    let message = down.model("stg_orders").message.clone().unwrap();
    assert!(
        message.starts_with("Database Error in model stg_orders (models/staging/stg_orders.sql)\n"),
        "{message}"
    );
    pg.resume();
    assert!(estate.dbt_run(at + TimeDelta::minutes(30)).all_succeeded());
}

#[test]
fn each_fault_injector_does_what_it_says() {
    let Some((_pg, _dir, estate)) = build("each_fault_injector") else {
        return;
    };
    let last = hour_of(now());

    // A share of one day deleted, and nothing else.
    let day = NaiveDate::from_ymd_opt(2024, 5, 13).unwrap();
    let total = estate.count("raw.payments");
    let before = estate.count_on("raw.payments", day);
    let deleted = estate.delete_share_of_day("raw.payments", day, 0.3) as i64;
    let after = estate.count_on("raw.payments", day);
    assert_eq!(before - after, deleted);
    assert_eq!(estate.count("raw.payments"), total - deleted);
    let share = deleted as f64 / before as f64;
    assert!((0.22..=0.38).contains(&share), "deleted {share} of the day");

    // A stall skips hours until resumed; the skipped hours stay missing.
    estate.stall(last + hours(1));
    assert_eq!(estate.load_hour(last + hours(1)).orders, 0);
    assert_eq!(estate.load_hour(last + hours(2)).orders, 0);
    estate.resume();
    assert!(estate.load_hour(last + hours(3)).orders > 0);
    for hour in [1, 2] {
        assert_eq!(count_in_hour(&estate, "raw.orders", last + hours(hour)), 0);
    }
    assert!(count_in_hour(&estate, "raw.orders", last + hours(3)) > 0);

    // New rows arrive with a share of a column null; old rows keep theirs.
    let nulls_before = estate.count_null("raw.payments", "payment_method");
    assert_eq!(nulls_before, 0);
    estate.null_new_rows("raw.payments", "payment_method", 0.5);
    let loaded = estate.load_hour(last + hours(4));
    let nulls = estate.count_null("raw.payments", "payment_method");
    let share = nulls as f64 / loaded.payments as f64;
    assert!(
        nulls > 0 && (0.2..=0.8).contains(&share),
        "{nulls} of {loaded:?}"
    );
    assert_eq!(
        estate.scalar(&format!(
            "SELECT count(*) FROM raw.payments WHERE payment_method IS NULL \
             AND loaded_at <> timestamp '{}'",
            last + hours(4)
        )),
        0
    );
    estate.null_new_rows("raw.payments", "payment_method", 0.0);
    estate.load_hour(last + hours(5));
    assert_eq!(estate.count_null("raw.payments", "payment_method"), nulls);

    // A load inserted twice: every row of that hour duplicated exactly.
    let hour = last + hours(5);
    let in_hour = count_in_hour(&estate, "raw.orders", hour);
    let total = estate.count("raw.orders");
    let inserted = estate.duplicate_load("raw.orders", hour + TimeDelta::minutes(20)) as i64;
    assert_eq!(inserted, in_hour);
    assert_eq!(estate.count("raw.orders"), total + in_hour);
    assert_eq!(count_in_hour(&estate, "raw.orders", hour), 2 * in_hour);
    assert_eq!(
        estate.scalar("SELECT count(DISTINCT id) FROM raw.orders"),
        total
    );

    // A resync that blanked a column over the last two days.
    let recent = estate.scalar(
        "SELECT count(*) FROM raw.orders
         WHERE loaded_at > (SELECT max(loaded_at) FROM raw.orders) - interval '2 days'",
    );
    let updated = estate.resync_nulling_days("raw.orders", "status", 2) as i64;
    assert_eq!(updated, recent);
    assert_eq!(estate.count_null("raw.orders", "status"), recent);
    assert!(
        (400..=1200).contains(&recent),
        "two days of orders: {recent}"
    );

    // A type changed in place keeps every row, and the loader keeps loading.
    let total = estate.count("raw.payments");
    estate.alter_type_in_place("raw.payments", "amount", "text");
    assert_eq!(estate.column_type("raw.payments", "amount"), "text");
    assert_eq!(estate.count("raw.payments"), total);
    assert!(estate.load_hour(last + hours(6)).payments > 0);
}

#[test]
fn a_type_changed_in_place_fails_the_staging_model_and_skips_its_child() {
    let Some((_pg, _dir, estate)) = build("a_type_changed_in_place") else {
        return;
    };
    let built = estate.count("analytics.stg_payments");
    estate.alter_type_in_place("raw.payments", "amount", "text");
    estate.load_hour(now() + hours(1));
    let outcome = estate.dbt_run(now() + hours(1));
    let failed = outcome.model("stg_payments");
    assert_eq!(failed.status, RunStatus::Error);
    let message = failed.message.as_deref().unwrap();
    assert!(
        message.starts_with(
            "Database Error in model stg_payments (models/staging/stg_payments.sql)\n  \
             operator does not exist: text / integer\n"
        ),
        "{message}"
    );
    assert!(message.contains("amount / 100 as amount"), "{message}");
    assert!(message.contains("HINT:"), "{message}");
    assert_eq!(outcome.model("orders").status, RunStatus::Skipped);
    assert_eq!(outcome.model("fct_payments").status, RunStatus::Skipped);
    assert_eq!(outcome.model("stg_orders").status, RunStatus::Success);
    // The failed model keeps yesterday's table, as dbt leaves it.
    assert_eq!(estate.count("analytics.stg_payments"), built);

    let read = run_results::load(&estate.run_results).unwrap();
    let stg_payments = read.get("model.shop.stg_payments").unwrap();
    assert_eq!(stg_payments.status, NodeStatus::Error);
    assert!(stg_payments
        .message
        .as_deref()
        .unwrap()
        .contains("operator does not exist: text / integer"));
    let orders = read.get("model.shop.orders").unwrap();
    assert_eq!(orders.status, NodeStatus::Skipped);
    assert_eq!(orders.message, None);
    assert_eq!(orders.completed_at, None);
    assert_eq!(
        read.get("model.shop.stg_orders").unwrap().status,
        NodeStatus::Success
    );
}

#[test]
fn a_recreated_table_is_refilled_oldest_first_a_share_at_a_time() {
    let Some((_pg, _dir, estate)) = build("a_recreated_table_is_refilled") else {
        return;
    };
    let total = estate.count("raw.payments");
    let oldest = estate.scalar("SELECT min(id) FROM raw.payments");
    let copied = estate.recreate_with_type_and_refill("raw.payments", "amount", "text", 0.4);
    assert_eq!(estate.column_type("raw.payments", "amount"), "text");
    assert_eq!(estate.count("raw.payments"), copied as i64);
    let share = copied as f64 / total as f64;
    assert!((0.39..=0.41).contains(&share), "{share}");
    assert_eq!(estate.scalar("SELECT min(id) FROM raw.payments"), oldest);
    assert!(
        estate.scalar(
            "SELECT count(*) FROM raw.payments
             WHERE loaded_at > timestamp '2024-04-15 00:00:00'"
        ) == 0,
        "the newest rows come last"
    );
    // Values come back cast, not lost.
    assert_eq!(
        estate.scalar("SELECT count(*) FROM raw.payments WHERE amount IS NULL"),
        0
    );

    // The loader writes into the new table meanwhile.
    let loaded = estate.load_hour(now() + hours(1));
    assert!(loaded.payments > 0);
    let more = estate.refill_more(0.3);
    assert_eq!(
        estate.count("raw.payments"),
        (copied + more + loaded.payments) as i64
    );
    let rest = estate.refill_more(1.0);
    assert_eq!(
        copied + more + rest,
        total as u64,
        "capped at what there was"
    );
    assert_eq!(estate.count("raw.payments"), total + loaded.payments as i64);
    assert_eq!(estate.refill_more(0.5), 0);
}

/// A model node of the manifest as written, by name.
fn manifest_node(estate: &Estate, name: &str) -> serde_json::Value {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&estate.manifest).unwrap()).unwrap();
    manifest["nodes"][format!("model.shop.{name}")].clone()
}

/// The raw run_results.json.
fn run_results_json(estate: &Estate) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(&estate.run_results).unwrap()).unwrap()
}

/// The result for `unique_id` in a raw run_results.json.
fn result_of<'a>(document: &'a serde_json::Value, unique_id: &str) -> &'a serde_json::Value {
    document["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["unique_id"] == unique_id)
        .unwrap_or_else(|| panic!("no result for {unique_id}: {document:#}"))
}

/// A day's batch as dbt writes it in `batch_results`.
fn batch(day: NaiveDate) -> serde_json::Value {
    serde_json::json!([
        format!("{day}T00:00:00+00:00"),
        format!("{}T00:00:00+00:00", day + TimeDelta::days(1))
    ])
}

#[test]
fn the_microbatch_model_carries_its_config_where_dbt_puts_it_and_is_built_from_begin() {
    let Some((_pg, _dir, estate)) = build("the_microbatch_model_config") else {
        return;
    };
    let begin = estate.history_begins();
    assert_eq!(begin, NaiveDate::from_ymd_opt(2024, 3, 20).unwrap());

    // dataward reads it as an incremental model with the microbatch strategy, below
    // stg_payments.
    let lineage = Lineage::load(&estate.manifest, Some(&estate.notes)).unwrap();
    let fct = lineage.resolve("analytics.fct_payments").unwrap();
    let node = lineage.node(fct);
    assert_eq!(node.unique_id, "model.shop.fct_payments");
    assert_eq!(node.kind, NodeKind::Model);
    assert_eq!(node.materialized.as_deref(), Some("incremental"));
    assert_eq!(node.incremental_strategy.as_deref(), Some("microbatch"));
    assert_eq!(node.file.as_deref(), Some("models/marts/fct_payments.sql"));
    assert_eq!(
        node.relation_name.as_deref(),
        Some("\"dw\".\"analytics\".\"fct_payments\"")
    );
    assert_eq!(node.owner.as_deref(), Some("analytics-owner"));
    let stg_payments = lineage.resolve("model.shop.stg_payments").unwrap();
    assert!(lineage.is_downstream(stg_payments, fct));
    assert_eq!(
        lineage.node(stg_payments).materialized.as_deref(),
        Some("table")
    );
    assert_eq!(lineage.node(stg_payments).incremental_strategy, None);

    // The manifest as dbt 1.9 writes it: the settings in the node's config (begin parsed
    // to a datetime, lookback an integer), as written in unrendered_config.
    let fct_json = manifest_node(&estate, "fct_payments");
    let config = &fct_json["config"];
    assert_eq!(config["materialized"], "incremental");
    assert_eq!(config["incremental_strategy"], "microbatch");
    assert_eq!(config["event_time"], "loaded_at");
    assert_eq!(config["batch_size"], "day");
    assert!(config["lookback"].is_u64(), "{config:#}");
    assert_eq!(config["lookback"], 1);
    assert_eq!(config["begin"], "2024-03-20T00:00:00");
    assert!(config["concurrent_batches"].is_null());
    assert_eq!(config["on_schema_change"], "ignore");
    let unrendered = &fct_json["unrendered_config"];
    assert_eq!(unrendered["begin"], "2024-03-20");
    assert_eq!(unrendered["lookback"], 1);
    assert_eq!(unrendered["incremental_strategy"], "microbatch");
    assert_eq!(
        fct_json["depends_on"]["nodes"],
        serde_json::json!(["model.shop.stg_payments"])
    );
    assert!(fct_json["raw_code"]
        .as_str()
        .unwrap()
        .contains("incremental_strategy='microbatch'"));
    // Its parent names its event_time (from the properties file), so dbt can filter it
    // per batch; the other models keep dbt's defaults.
    let stg_json = manifest_node(&estate, "stg_payments");
    assert_eq!(stg_json["config"]["event_time"], "loaded_at");
    assert_eq!(stg_json["config"]["materialized"], "table");
    assert_eq!(stg_json["patch_path"], "shop://models/staging/models.yml");
    assert!(
        std::fs::read_to_string(estate.project.join("models/staging/models.yml"))
            .unwrap()
            .contains("  - name: stg_payments\n    config:\n      event_time: loaded_at\n")
    );
    let orders_json = manifest_node(&estate, "orders");
    assert!(orders_json["config"]["event_time"].is_null());
    assert!(orders_json["config"]["batch_size"].is_null());
    assert_eq!(orders_json["config"]["lookback"], 1);
    assert!(orders_json["patch_path"].is_null());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&estate.manifest).unwrap()).unwrap();
    assert_eq!(manifest["metadata"]["dbt_version"], "1.9.1");
    assert_eq!(
        manifest["child_map"]["model.shop.stg_payments"],
        serde_json::json!(["model.shop.fct_payments", "model.shop.orders"])
    );

    // The first build made the table from every daily batch since begin.
    assert_eq!(
        estate.count("analytics.fct_payments"),
        estate.count("raw.payments")
    );
    assert_eq!(
        estate.text("SELECT min(loaded_at)::date::text FROM analytics.fct_payments"),
        Some(begin.to_string())
    );
    assert_eq!(
        estate.scalar("SELECT sum(amount)::bigint FROM analytics.fct_payments"),
        estate.scalar("SELECT sum(amount)::bigint FROM analytics.stg_payments")
    );
    let document = run_results_json(&estate);
    let result = result_of(&document, "model.shop.fct_payments");
    assert_eq!(result["status"], "success");
    assert_eq!(result["message"], "SUCCESS");
    assert_eq!(result["failures"], 0);
    let successful = result["batch_results"]["successful"].as_array().unwrap();
    let days = (now().date() - begin).num_days() + 1;
    assert_eq!(
        successful.len() as i64,
        days,
        "one batch a day, 2024-03-20 to 2024-05-15"
    );
    assert_eq!(successful[0], batch(begin));
    assert_eq!(successful[successful.len() - 1], batch(now().date()));
    assert_eq!(result["batch_results"]["failed"], serde_json::json!([]));
    // The table models say nothing of batches.
    assert!(result_of(&document, "model.shop.stg_payments")["batch_results"].is_null());
    let read = run_results::load(&estate.run_results).unwrap();
    let fct_result = read.get("model.shop.fct_payments").unwrap();
    assert_eq!(fct_result.status, NodeStatus::Success);
    assert_eq!(fct_result.message.as_deref(), Some("SUCCESS"));
}

#[test]
fn a_run_rebuilds_only_the_lookback_and_a_backfill_rebuilds_the_days_it_names() {
    let Some((_pg, _dir, estate)) = build("microbatch_lookback_and_backfill") else {
        return;
    };
    let day = |n: i64| now().date() - TimeDelta::days(n);
    let (today, yesterday, two_ago, three_ago, four_ago) = (day(0), day(1), day(2), day(3), day(4));
    assert_eq!(three_ago.weekday(), Weekday::Sun);
    let fct = "analytics.fct_payments";
    let built_three_ago = estate.count_on(fct, three_ago);
    let built_yesterday = estate.count_on(fct, yesterday);
    assert_eq!(built_three_ago, estate.count_on("raw.payments", three_ago));

    // Rows go missing from raw for a day older than the lookback and for one inside it.
    assert!(estate.delete_share_of_day("raw.payments", three_ago, 0.5) > 0);
    assert!(estate.delete_share_of_day("raw.payments", yesterday, 0.5) > 0);
    let at = now() + TimeDelta::minutes(10);
    let outcome = estate.dbt_run(at);
    assert!(outcome.all_succeeded(), "{outcome:#?}");
    let run = outcome.model("fct_payments");
    assert_eq!(run.message.as_deref(), Some("SUCCESS"));
    let batches = run.batches.clone().unwrap();
    assert_eq!(
        batches.successful_days(),
        vec![yesterday, today],
        "lookback 1: the day of the run and the one before"
    );
    assert!(batches.failed.is_empty());
    assert_eq!(
        run.rows,
        Some(
            (estate.count_on("raw.payments", yesterday) + estate.count_on("raw.payments", today))
                as u64
        )
    );
    // The table model follows raw everywhere; the microbatch model only in its lookback.
    let raw_three_ago = estate.count_on("raw.payments", three_ago);
    assert!(raw_three_ago < built_three_ago);
    assert_eq!(
        estate.count_on("analytics.stg_payments", three_ago),
        raw_three_ago
    );
    assert_eq!(
        estate.count_on(fct, three_ago),
        built_three_ago,
        "a day older than the lookback keeps what it had"
    );
    let raw_yesterday = estate.count_on("raw.payments", yesterday);
    assert!(raw_yesterday < built_yesterday);
    assert_eq!(estate.count_on(fct, yesterday), raw_yesterday);
    assert_eq!(
        estate.count_on(fct, today),
        estate.count_on("raw.payments", today)
    );
    assert_eq!(
        estate.count_on(fct, two_ago),
        estate.count_on("raw.payments", two_ago)
    );
    assert_eq!(
        estate.count(fct) - estate.count("raw.payments"),
        built_three_ago - raw_three_ago
    );
    let document = run_results_json(&estate);
    assert_eq!(document["args"]["which"], "run");
    assert_eq!(
        result_of(&document, "model.shop.fct_payments")["batch_results"]["successful"],
        serde_json::json!([batch(yesterday), batch(today)])
    );

    // The backfill of that day, as `dbt build --select fct_payments+ --event-time-start
    // --event-time-end`, brings it back in line with raw and touches nothing else.
    let backfill = estate.dbt_backfill(
        at + TimeDelta::minutes(5),
        "fct_payments",
        three_ago,
        three_ago + TimeDelta::days(1),
    );
    let names: Vec<(&str, RunStatus)> = backfill
        .results
        .iter()
        .map(|r| (r.name.as_str(), r.status))
        .collect();
    assert_eq!(names, vec![("fct_payments", RunStatus::Success)]);
    assert_eq!(
        backfill
            .model("fct_payments")
            .batches
            .as_ref()
            .unwrap()
            .successful_days(),
        vec![three_ago]
    );
    assert_eq!(estate.count_on(fct, three_ago), raw_three_ago);
    assert_eq!(estate.count(fct), estate.count("raw.payments"));
    assert_eq!(
        estate.scalar("SELECT sum(amount)::bigint FROM analytics.fct_payments"),
        estate.scalar("SELECT sum(amount / 100)::bigint FROM raw.payments")
    );
    let document = run_results_json(&estate);
    assert_eq!(document["args"]["which"], "build");
    assert_eq!(
        document["args"]["invocation_command"],
        "dbt build --select fct_payments+ --event-time-start 2024-05-12 --event-time-end 2024-05-13"
    );
    assert_eq!(
        document["args"]["select"],
        serde_json::json!(["fct_payments+"])
    );
    assert_eq!(document["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        result_of(&document, "model.shop.fct_payments")["batch_results"]["successful"],
        serde_json::json!([batch(three_ago)])
    );

    // Selecting a parent with `+` builds its descendants too: the table models whole,
    // the microbatch model only in the window.
    estate.delete_share_of_day("raw.payments", four_ago, 0.5);
    let built_four_ago = estate.count_on(fct, four_ago);
    let backfill = estate.dbt_backfill(
        at + TimeDelta::minutes(7),
        "stg_payments",
        four_ago,
        three_ago,
    );
    let names: Vec<&str> = backfill.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["stg_payments", "fct_payments", "orders"]);
    assert!(backfill.all_succeeded(), "{backfill:#?}");
    assert_eq!(
        backfill
            .model("fct_payments")
            .batches
            .as_ref()
            .unwrap()
            .successful_days(),
        vec![four_ago]
    );
    let raw_four_ago = estate.count_on("raw.payments", four_ago);
    assert!(raw_four_ago < built_four_ago);
    assert_eq!(estate.count_on(fct, four_ago), raw_four_ago);
    assert_eq!(estate.count(fct), estate.count("raw.payments"));

    // A run on a day boundary rebuilds the lookback before it, not the day just begun.
    let midnight = (today + TimeDelta::days(1)).and_hms_opt(0, 0, 0).unwrap();
    let outcome = estate.dbt_run(midnight);
    assert_eq!(
        outcome
            .model("fct_payments")
            .batches
            .as_ref()
            .unwrap()
            .successful_days(),
        vec![yesterday, today]
    );
}
