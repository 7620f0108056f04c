//! A persistent level shift on a real SQLite warehouse: one incident whose figures
//! update, not weeks of alarms; the owner accepts the new level (a decision on the
//! chain, refused to anyone else, taken from any breach, one day's included), and from
//! then on the new level is normal and a return to the old one is a drop. The
//! acceptance survives a restart of the engine. A table whose history starts with an
//! old backfill and empty days is judged from its first steady loads.

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::config::Config;
use dataward::engine::api::{Command, EventKind, IncidentStatus, Outcome, RefusalKind};
use dataward::engine::Engine;
use rusqlite::Connection;

const CONFIG: &str = r#"
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
autonomy = "L0"
"#;

/// A Monday, ten weeks before the shift.
fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 8, 3).unwrap()
}

/// The first day at the new level: a Wednesday.
fn shift_day() -> NaiveDate {
    first_day() + TimeDelta::days(72)
}

/// Orders a day: 200 on weekdays and 80 at weekends, times `level`.
fn orders_on(day: NaiveDate, level: f64) -> i64 {
    use chrono::Datelike;
    let usual = if day.weekday().number_from_monday() >= 6 {
        80.0
    } else {
        200.0
    };
    (usual * level).round() as i64
}

/// Loads `day`'s orders, spread evenly over the day.
fn load_day(shop: &Connection, day: NaiveDate, level: f64) {
    let count = orders_on(day, level);
    let midnight = day.and_hms_opt(0, 0, 0).unwrap();
    let mut insert = shop
        .prepare("INSERT INTO orders (placed_at) VALUES (?1)")
        .unwrap();
    for i in 0..count {
        let at = midnight + TimeDelta::seconds(i * 86_400 / count);
        insert
            .execute([at.format("%Y-%m-%d %H:%M:%S").to_string()])
            .unwrap();
    }
}

fn morning(day: NaiveDate) -> NaiveDateTime {
    day.and_hms_opt(6, 0, 0).unwrap()
}

fn owner() -> Actor {
    let mut actor = Actor::current();
    actor.user = Some("analyst".into());
    actor.stand_in = None;
    actor
}

fn accept(engine: &mut Engine, actor: &Actor, reason: &str) -> Outcome {
    engine.request(
        Command::Accept {
            incident: "INC-0001".into(),
            reason: reason.into(),
        },
        actor,
    )
}

fn refusal(outcome: Outcome) -> dataward::engine::api::Refusal {
    match outcome {
        Outcome::Refused { reason } => reason,
        Outcome::Accepted { events, .. } => panic!("accepted: {events:#?}"),
    }
}

#[test]
fn a_level_shift_is_one_incident_until_its_owner_accepts_the_new_level() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("dataward.toml"), CONFIG).unwrap();
    let shop = Connection::open(root.join("shop.db")).unwrap();
    shop.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_at TEXT NOT NULL)")
        .unwrap();
    let mut day = first_day();
    while day < shift_day() {
        load_day(&shop, day, 1.0);
        day = day.succ_opt().unwrap();
    }
    load_day(&shop, shift_day(), 1.6);
    let config = Config::load(&root.join("dataward.toml")).unwrap();
    let state_path = root.join("data/dataward.db");
    let state = dataward::store::open(&state_path).unwrap();
    let mut engine = Engine::new(config.clone(), state, None, &Actor::current()).unwrap();

    // A week at 1.6 times the usual: each morning the engine polls yesterday and
    // today so far, and the same incident stays open with its figures updated. (A
    // day's rows are loaded the day before, so today so far is there at 06:00.)
    for days_in in 0..7 {
        let day = shift_day() + TimeDelta::days(days_in);
        load_day(&shop, day + TimeDelta::days(1), 1.6);
        engine.tick(morning(day + TimeDelta::days(1))).unwrap();
        let incidents = engine.snapshot(false).incidents;
        assert_eq!(incidents.len(), 1, "day {days_in}: {incidents:#?}");
        assert_eq!(incidents[0].status, IncidentStatus::Open);
    }
    let open = engine.snapshot(false).incidents[0].clone();
    let current = &open.observed;
    assert!(
        current.contains("7 days at 1.60x the usual since 2026-10-14"),
        "{open:#?}"
    );

    // Only the table's owners may accept it, and only with a reason.
    let mut stranger = Actor::current();
    stranger.user = Some("nobody-here".into());
    stranger.stand_in = None;
    stranger.uid = 4242;
    let refused = refusal(accept(&mut engine, &stranger, "looks fine"));
    assert_eq!(refused.kind, RefusalKind::Policy, "{refused:?}");
    refusal(accept(&mut engine, &owner(), "  "));

    let Outcome::Accepted { events, seq } = accept(
        &mut engine,
        &owner(),
        "the new pricing page doubled checkouts",
    ) else {
        panic!("the owner could not accept the new level");
    };
    let accepted = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::LevelAccepted { since, ratio, .. } => Some((*since, *ratio)),
            _ => None,
        })
        .expect("a level_accepted event");
    assert_eq!(accepted.0.to_string(), "2026-10-14");
    assert!((1.55..1.65).contains(&accepted.1), "{accepted:?}");
    assert!(events.iter().any(
        |e| matches!(&e.kind, EventKind::IncidentResolved { incident } if incident == "INC-0001")
    ));
    let state = Connection::open(&state_path).unwrap();
    let (kind, payload): (String, String) = state
        .query_row(
            "SELECT kind, payload FROM chain WHERE seq <= ?1 AND kind = 'level_accepted'",
            [seq.unwrap() as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(kind, "level_accepted");
    assert!(payload.contains("the new pricing page doubled checkouts"));
    let receipt = engine.snapshot(false).incidents[0].receipt.clone().unwrap();
    assert!(receipt.contains("new level accepted"), "{receipt}");

    // The new level is the normal from its first day, across a restart of the engine.
    drop(engine);
    let state = dataward::store::open(&state_path).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    let mut day = shift_day() + TimeDelta::days(7);
    for _ in 0..5 {
        load_day(&shop, day + TimeDelta::days(1), 1.6);
        engine.tick(morning(day + TimeDelta::days(1))).unwrap();
        day = day.succ_opt().unwrap();
    }
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 1, "{incidents:#?}");

    // A whole day back at the old level is now a drop.
    load_day(&shop, day + TimeDelta::days(1), 1.0);
    load_day(&shop, day + TimeDelta::days(2), 1.0);
    engine.tick(morning(day + TimeDelta::days(2))).unwrap();
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 2, "{incidents:#?}");
    assert_eq!(incidents[1].status, IncidentStatus::Open);
    assert!(
        incidents[1]
            .title
            .starts_with("rows loaded into orders on ")
            && incidents[1].title.contains(" fell to "),
        "{:?}",
        incidents[1]
    );
}

fn engine_for(root: &std::path::Path) -> (Connection, Config, Engine) {
    std::fs::write(root.join("dataward.toml"), CONFIG).unwrap();
    let shop = Connection::open(root.join("shop.db")).unwrap();
    shop.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_at TEXT NOT NULL)")
        .unwrap();
    let config = Config::load(&root.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&root.join("data/dataward.db")).unwrap();
    let engine = Engine::new(config.clone(), state, None, &Actor::current()).unwrap();
    (shop, config, engine)
}

#[test]
fn an_old_backfill_then_empty_days_then_steady_loads_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (shop, _, mut engine) = engine_for(dir.path());
    // 98 days back (the default lookback) a backfill landed in one go; nothing came
    // for six weeks; then the loader started and has run for eight weeks.
    let backfill = first_day();
    let midnight = backfill.and_hms_opt(3, 0, 0).unwrap();
    shop.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO orders (placed_at) SELECT ?1 FROM n",
        [midnight.format("%Y-%m-%d %H:%M:%S").to_string()],
    )
    .unwrap();
    let loads_begin = backfill + TimeDelta::days(42);
    let mut day = loads_begin;
    while day < loads_begin + TimeDelta::days(56) {
        load_day(&shop, day, 1.0);
        day = day.succ_opt().unwrap();
    }
    // Each morning of the last week (today's rows land the day before).
    for back in (1..=7).rev() {
        let today = day - TimeDelta::days(back);
        engine.tick(morning(today)).unwrap();
        let incidents = engine.snapshot(false).incidents;
        assert!(incidents.is_empty(), "{today}: {incidents:#?}");
    }
}

#[test]
fn a_breach_of_one_day_is_accepted_and_its_figures_are_the_new_level() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (shop, _, mut engine) = engine_for(root);
    let mut day = first_day();
    while day <= shift_day() + TimeDelta::days(1) {
        load_day(&shop, day, if day >= shift_day() { 1.6 } else { 1.0 });
        day = day.succ_opt().unwrap();
    }
    // The morning after the first day at 1.6: one incident, one day out of range.
    engine
        .tick(morning(shift_day() + TimeDelta::days(1)))
        .unwrap();
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 1, "{incidents:#?}");

    let outcome = accept(&mut engine, &owner(), "the new pricing page is live");
    let Outcome::Accepted { events, seq } = outcome else {
        panic!("the owner could not accept a one-day breach: {outcome:?}");
    };
    let (since, ratio) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::LevelAccepted { since, ratio, .. } => Some((*since, *ratio)),
            _ => None,
        })
        .expect("a level_accepted event");
    assert_eq!(since, dataward::clock::Since::Day(shift_day()));
    assert!((1.5..1.7).contains(&ratio), "{ratio}");
    let state = Connection::open(root.join("data/dataward.db")).unwrap();
    let payload: String = state
        .query_row(
            "SELECT payload FROM chain WHERE seq <= ?1 AND kind = 'level_accepted'",
            [seq.unwrap() as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        payload.contains("the new pricing page is live"),
        "{payload}"
    );

    // A week more at the new level opens nothing.
    for _ in 0..7 {
        load_day(&shop, day, 1.6);
        engine.tick(morning(day)).unwrap();
        day = day.succ_opt().unwrap();
    }
    let incidents = engine.snapshot(false).incidents;
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    assert_ne!(incidents[0].status, IncidentStatus::Open);
}

// ---------------------------------------------------------------------------------
// Every kind of breach whose band is learned from dataward's own observations (row
// count, null rate) is accepted the same way, through `dataward accept` against a
// running `dataward serve`; a freshness breach, judged against the table's cadence and
// the configured thresholds, is refused with what to change instead.

mod served {
    use std::path::PathBuf;
    use std::process::{Child, Command, Output, Stdio};
    use std::time::{Duration, Instant};

    use dataward::approve::Actor;
    use rusqlite::{Connection, OpenFlags};

    /// Only bounds a wait for something that must happen; nothing is asserted about time.
    const PATIENCE: Duration = Duration::from_secs(120);

    pub fn until(what: &str, mut done: impl FnMut() -> bool) {
        let give_up = Instant::now() + PATIENCE;
        while !done() {
            assert!(Instant::now() < give_up, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A running `dataward serve`, killed when dropped.
    pub struct Served(Child);

    impl Drop for Served {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    pub struct Team {
        pub dir: tempfile::TempDir,
        pub config: PathBuf,
        pub data: PathBuf,
    }

    impl Team {
        /// `monitor` is one `[[monitor]]` table's keys on warehouse `wh` (`wh.db`); the
        /// account running the test owns every table.
        pub fn new(warehouse_sql: &str, monitor: &str) -> Team {
            let dir = tempfile::tempdir().unwrap();
            Connection::open(dir.path().join("wh.db"))
                .unwrap()
                .execute_batch(warehouse_sql)
                .unwrap();
            let me = Actor::current().user.expect("this account has a name");
            let config = dir.path().join("team.toml");
            std::fs::write(
                &config,
                format!(
                    "[warehouse.wh]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
                     [[monitor]]\nwarehouse = \"wh\"\nevery = \"1s\"\n{monitor}\n\n\
                     [people.{me:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
                     [[domain]]\nname = \"core\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n"
                ),
            )
            .unwrap();
            let data = dir.path().join("data");
            Team { dir, config, data }
        }

        pub fn serve(&self) -> Served {
            Served(
                Command::new(env!("CARGO_BIN_EXE_dataward"))
                    .args(["serve", "--log-stderr", "--config"])
                    .arg(&self.config)
                    .arg("--data-dir")
                    .arg(&self.data)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            )
        }

        pub fn dataward(&self, args: &[&str]) -> Output {
            Command::new(env!("CARGO_BIN_EXE_dataward"))
                .args(args)
                .arg("--data-dir")
                .arg(&self.data)
                .output()
                .unwrap()
        }

        pub fn warehouse(&self) -> Connection {
            Connection::open(self.dir.path().join("wh.db")).unwrap()
        }

        fn state(&self) -> Option<Connection> {
            let path = self.data.join("dataward.db");
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()
        }

        fn query<T: rusqlite::types::FromSql>(&self, sql: &str) -> Option<T> {
            self.state()?.query_row(sql, [], |r| r.get(0)).ok()
        }

        /// The newest observation's id, once the engine has acted on it.
        pub fn acted_on(&self) -> Option<i64> {
            let newest: i64 = self.query("SELECT max(id) FROM observation")?;
            let done: String =
                self.query("SELECT value FROM meta WHERE key = 'engine.observations_done'")?;
            (done.parse::<i64>().ok()? >= newest).then_some(newest)
        }

        /// Waits for `polls` more observations of `check` after `after`, all acted on by
        /// the engine; returns the newest's id.
        pub fn polls_after(&self, check: &str, after: i64, polls: i64) -> i64 {
            let mut newest = after;
            until(&format!("{polls} more {check} polls, acted on"), || {
                let seen: Option<i64> = self.query(&format!(
                    "SELECT count(*) FROM observation WHERE check_kind = '{check}' AND id > {after}"
                ));
                match (seen, self.acted_on()) {
                    (Some(seen), Some(acted)) if seen >= polls => {
                        newest = acted;
                        true
                    }
                    _ => false,
                }
            });
            newest
        }

        /// Every incident as (id, status), oldest first.
        pub fn incidents(&self) -> Vec<(String, String)> {
            let Some(state) = self.state() else {
                return Vec::new();
            };
            // The file exists a moment before the engine has made its tables: none yet.
            let Ok(mut stmt) = state.prepare("SELECT id, status FROM incident ORDER BY id") else {
                return Vec::new();
            };
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        }

        /// The payload of the newest `level_accepted` chain record.
        pub fn accepted_payload(&self) -> serde_json::Value {
            let text: String = self
                .query("SELECT payload FROM chain WHERE kind = 'level_accepted' ORDER BY seq DESC")
                .expect("a level_accepted record");
            serde_json::from_str(&text).unwrap()
        }

        /// Waits for an open incident; its id.
        pub fn open_incident(&self) -> String {
            let mut id = String::new();
            until("an incident opens", || {
                match self.incidents().into_iter().find(|(_, s)| s == "open") {
                    Some((open, _)) => {
                        id = open;
                        true
                    }
                    None => false,
                }
            });
            id
        }

        pub fn accept(&self, incident: &str, reason: &str) -> Output {
            self.dataward(&["accept", incident, "--reason", reason])
        }
    }

    pub fn text(output: &Output) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }
}

/// Accepts `check`'s open breach through the CLI, then: the next polls at the new level
/// open nothing, nor do they after a restart of the engine; and the old level, back,
/// is a breach of the new baseline. `to_new`/`to_old` move the warehouse between levels.
fn accept_learned_breach(
    team: served::Team,
    check: &str,
    to_new: &str,
    to_old: &str,
    accepted_value: f64,
    confirmation: &str,
) {
    use served::text;
    let engine = team.serve();
    // A learned baseline at the old level: a few clean polls.
    team.polls_after(check, 0, 5);
    assert!(team.incidents().is_empty(), "{:?}", team.incidents());

    team.warehouse().execute_batch(to_new).unwrap();
    let incident = team.open_incident();
    let accepted = team.accept(&incident, "the loader now keeps every row; expected");
    assert!(
        accepted.status.success(),
        "accept of a {check} breach: {}",
        text(&accepted)
    );
    assert!(
        text(&accepted).contains(confirmation),
        "{}",
        text(&accepted)
    );
    let payload = team.accepted_payload();
    assert_eq!(payload["check"], check, "{payload}");
    assert_eq!(payload["incident"], incident.as_str(), "{payload}");
    assert_eq!(
        payload["reason"], "the loader now keeps every row; expected",
        "{payload}"
    );
    assert!(
        (payload["value"].as_f64().unwrap() - accepted_value).abs() < 1e-9,
        "{payload}"
    );
    let closed = |team: &served::Team| {
        assert_eq!(
            team.incidents(),
            vec![(incident.clone(), "resolved".to_string())]
        )
    };
    closed(&team);

    // The new level is normal at the next polls...
    let mark = team.acted_on().unwrap();
    let mark = team.polls_after(check, mark, 5);
    closed(&team);
    // ...and after a restart of the engine.
    drop(engine);
    let engine = team.serve();
    team.polls_after(check, mark, 5);
    closed(&team);

    // The old level is forgotten: back at it is a breach of the new baseline.
    team.warehouse().execute_batch(to_old).unwrap();
    until_second_incident(&team);
    drop(engine);
}

fn until_second_incident(team: &served::Team) {
    served::until("the old level opens a new incident", || {
        team.incidents().len() == 2
    });
}

#[test]
fn a_row_count_breach_is_accepted_and_stays_accepted_across_a_restart() {
    let team = served::Team::new(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
         INSERT INTO customers (email) SELECT 'c' || i || '@example.com' FROM n;",
        "name = \"customers\"\ntable = \"customers\"\nchecks = [\"row_count\"]",
    );
    accept_learned_breach(
        team,
        "row_count",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
         INSERT INTO customers (email) SELECT 'n' || i || '@example.com' FROM n;",
        "DELETE FROM customers WHERE id > 1000;",
        3000.0,
        "customers: new level accepted, 3.00x the old baseline since ",
    );
}

#[test]
fn a_null_rate_breach_is_accepted_and_stays_accepted_across_a_restart() {
    let team = served::Team::new(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
         INSERT INTO customers (email) SELECT 'c' || i || '@example.com' FROM n;",
        "name = \"customers\"\ntable = \"customers\"\nchecks = [\"null_rate\"]\n\
         null_columns = [\"email\"]",
    );
    accept_learned_breach(
        team,
        "null_rate",
        "UPDATE customers SET email = NULL WHERE id % 2 = 0;",
        "UPDATE customers SET email = 'back' || id WHERE email IS NULL;",
        0.5,
        "customers: new level accepted where the old baseline was zero, since ",
    );
}

#[test]
fn a_freshness_breach_is_not_accepted_and_the_refusal_names_the_threshold() {
    // Hourly loads for two days, the newest three days ago: late.
    let newest = chrono::Utc::now() - TimeDelta::days(3);
    let loads: Vec<String> = (0..48)
        .map(|h| {
            let at = newest - TimeDelta::hours(h);
            format!("('{}')", at.format("%Y-%m-%d %H:%M:%S"))
        })
        .collect();
    let team = served::Team::new(
        &format!(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, loaded_at TEXT NOT NULL);
             INSERT INTO customers (loaded_at) VALUES {};",
            loads.join(", ")
        ),
        "name = \"customers\"\ntable = \"customers\"\nchecks = [\"freshness\"]\n\
         timestamp_column = \"loaded_at\"\nerror_after = \"6h\"",
    );
    let _engine = team.serve();
    let incident = team.open_incident();
    let refused = team.accept(&incident, "it is fine");
    let said = served::text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("refused (policy)"), "{said}");
    assert!(
        said.contains("error_after") && said.contains("customers"),
        "the refusal names what to change: {said}"
    );
    assert_eq!(
        team.incidents(),
        vec![(incident.clone(), "open".to_string())]
    );
}

#[test]
fn a_row_count_judged_against_recorded_expected_rows_is_not_accepted_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = CONFIG.replace(
        "checks = [\"volume\"]",
        "checks = [\"row_count\"]\nexpected_rows = 1000",
    );
    std::fs::write(root.join("dataward.toml"), config).unwrap();
    let shop = Connection::open(root.join("shop.db")).unwrap();
    shop.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_at TEXT NOT NULL)")
        .unwrap();
    load_day(&shop, first_day(), 1.0);
    let config = Config::load(&root.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&root.join("data/dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    engine.tick(morning(first_day())).unwrap();
    assert_eq!(engine.snapshot(false).incidents.len(), 1);
    let refused = refusal(accept(&mut engine, &owner(), "fewer orders now"));
    assert_eq!(refused.kind, RefusalKind::Policy, "{refused:?}");
    assert!(
        refused.message.contains("expected_rows") && refused.message.contains("orders"),
        "{refused:?}"
    );
    assert_eq!(
        engine.snapshot(false).incidents[0].status,
        IncidentStatus::Open
    );
}
