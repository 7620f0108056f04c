//! An incident's title is a sentence about what happened, never the first breach with
//! its expected value glued on ("orders volume 60 (160..240)", "… (no change)"):
//! through the engine, on a real SQLite warehouse, with and without a diagnosis.

use chrono::{Datelike, NaiveDate, TimeDelta};
use dataward::approve::Actor;
use dataward::config::Config;
use dataward::engine::Engine;
use rusqlite::Connection;

fn config(autonomy: &str) -> String {
    format!(
        r#"
[warehouse.shop]
kind = "sqlite"
path = "shop.db"

[[monitor]]
name = "orders"
warehouse = "shop"
table = "orders"
checks = ["volume"]
every = "1h"
timestamp_column = "placed_at"

[people.analyst]
name = "Analyst"
roles = ["shop-owner"]

[[domain]]
name = "shop"
covers = ["orders"]
owners = ["shop-owner"]
autonomy = "{autonomy}"
"#
    )
}

/// `share` of a day's usual orders (200 on weekdays, 80 at weekends), spread over it.
fn load_day(shop: &Connection, day: NaiveDate, share: f64) {
    let usual = if day.weekday().number_from_monday() >= 6 {
        80.0
    } else {
        200.0
    };
    let count = (usual * share).round() as i64;
    let midnight = day.and_hms_opt(0, 0, 0).unwrap();
    for i in 0..count {
        let at = midnight + TimeDelta::seconds(i * 86_400 / count);
        shop.execute(
            "INSERT INTO orders (placed_at) VALUES (?1)",
            [at.format("%Y-%m-%d %H:%M:%S").to_string()],
        )
        .unwrap();
    }
}

/// The title of the incident ten usual weeks and then a short Wednesday open, at
/// `autonomy`.
fn title_of_a_short_day(autonomy: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("dataward.toml"), config(autonomy)).unwrap();
    let shop = Connection::open(root.join("shop.db")).unwrap();
    shop.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_at TEXT NOT NULL)")
        .unwrap();
    // A Monday, and a Wednesday ten weeks on.
    let first = NaiveDate::from_ymd_opt(2026, 8, 3).unwrap();
    let short = first + TimeDelta::days(72);
    shop.execute_batch("BEGIN").unwrap();
    let mut day = first;
    while day < short {
        load_day(&shop, day, 1.0);
        day = day.succ_opt().unwrap();
    }
    load_day(&shop, short, 0.3);
    // The next day's rows land the day before, so Thursday so far is all there.
    load_day(&shop, short + TimeDelta::days(1), 1.0);
    shop.execute_batch("COMMIT").unwrap();
    let config = Config::load(&root.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&root.join("data/dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    engine
        .tick((short + TimeDelta::days(1)).and_hms_opt(6, 0, 0).unwrap())
        .unwrap();
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    incidents[0].title.clone()
}

#[test]
fn an_incident_is_titled_by_a_sentence_not_the_breach_and_its_expected_value() {
    for autonomy in ["L0", "L1"] {
        let title = title_of_a_short_day(autonomy);
        assert_eq!(
            title, "rows loaded into orders on 2026-10-14 fell to 60 rows",
            "{autonomy}"
        );
    }
}
