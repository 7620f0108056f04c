//! Polling on its own task: a check blocked on a locked PostgreSQL table delays no
//! command, the engine stores and acts on what the task read (the task never writes the
//! state database), and no snapshot calls the orchestrator. The PostgreSQL test starts its own server and skips (with a message)
//! when the server binaries are missing, unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use chrono::{NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::clock::{Clock, VirtualTime};
use dataward::config::Config;
use dataward::demo::control::ControlPlane;
use dataward::effects::orchestrator::{
    Orchestrator, Pipeline, PipelineState, Reading, RunRecord, RunStatus, Schedule,
};
use dataward::engine::api::{Command, EventKind, MonitorHealth, PipelineView};
use dataward::engine::poll_task::{PollAsk, PollNews, PollTask};
use dataward::engine::Engine;
use support::pg::start_or_skip;

/// Only bounds a wait for something that must happen, so a broken build fails
/// instead of hanging; nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(120);

fn t0() -> NaiveDateTime {
    "2024-05-12T02:30:00".parse().unwrap()
}

/// A clock the test moves.
fn test_clock() -> (VirtualTime, Clock) {
    let clock = Clock::starting_at(t0());
    (clock.hands().unwrap().clone(), clock)
}

fn news_channel() -> (impl Fn(PollNews) + Send + 'static, Receiver<PollNews>) {
    let (tx, rx) = mpsc::channel();
    (
        move |news| {
            let _ = tx.send(news);
        },
        rx,
    )
}

fn observation_count(state_db: &Path) -> i64 {
    let conn = dataward::store::open(state_db).unwrap();
    conn.query_row("SELECT count(*) FROM observation", [], |r| r.get(0))
        .unwrap()
}

/// Backends waiting for a lock on table `t`: the task's check, blocked.
fn waiting_on_t(watcher: &mut postgres::Client) -> i64 {
    watcher
        .query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
             WHERE c.relname = 't' AND NOT l.granted",
            &[],
        )
        .unwrap()
        .get(0)
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + PATIENCE;
    while !done() {
        assert!(
            std::time::Instant::now() < give_up,
            "never happened: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stop_is_recorded_while_a_check_is_blocked_on_a_locked_table() {
    let Some(pg) = start_or_skip("a_stop_is_recorded_while_a_check_is_blocked") else {
        return;
    };
    pg.execute("CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 7);");
    std::env::set_var("DATAWARD_TEST_POLL_TASK_PG_URL", &pg.url);
    let dir = tempfile::tempdir().unwrap();
    // The check timeout is long enough that the check is still blocked whenever the
    // test looks; the test releases the lock itself rather than waiting for it.
    let config = Config::parse(
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_TEST_POLL_TASK_PG_URL\"\n\
         check_timeout = \"60s\"\n\n\
         [[monitor]]\nname = \"t\"\nwarehouse = \"pg\"\ntable = \"t\"\n\
         checks = [\"row_count\"]\nevery = \"1m\"\n",
        &dir.path().join("dataward.toml"),
    )
    .unwrap();
    let state_db = dir.path().join("dataward.db");
    let actor = Actor::current();
    let mut engine = Engine::new(
        config.clone(),
        dataward::store::open(&state_db).unwrap(),
        None,
        &actor,
    )
    .unwrap();
    engine.set_inline_polling(false);
    engine.tick(t0()).unwrap();

    let mut holder = pg.client();
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let (minutes, clock) = test_clock();
    let (notify, news) = news_channel();
    let task = PollTask::start(config, state_db.clone(), clock, notify).unwrap();
    let mut watcher = pg.client();
    until("the task's check waits for the lock", || {
        waiting_on_t(&mut watcher) > 0
    });

    // The stop, on this thread, while the check is blocked.
    let events = engine.handle(
        Command::OrgStop {
            reason: "bad data everywhere".into(),
        },
        &actor,
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::OrgStop { action, .. } if action == "set")),
        "{events:#?}"
    );
    let reader = dataward::store::open(&state_db).unwrap();
    let stop = dataward::approve::stop::state(&reader).unwrap();
    assert!(stop.active, "{stop:?}");
    assert_eq!(stop.reason.as_deref(), Some("bad data everywhere"));
    // ...and the check is still blocked: nothing measured, nothing told.
    assert!(waiting_on_t(&mut watcher) > 0, "the check is still waiting");
    assert_eq!(observation_count(&state_db), 0);
    assert!(
        news.try_recv().is_err(),
        "no news while the check is blocked"
    );

    // Released: the check answers, the engine is told what it read and stores it.
    lock.rollback().unwrap();
    let PollNews::Observed(read) = news.recv_timeout(PATIENCE).unwrap() else {
        panic!("expected what the poll read");
    };
    assert_eq!(observation_count(&state_db), 0, "the task stored nothing");
    engine.store_polled(read).unwrap();
    assert_eq!(observation_count(&state_db), 1);
    engine.tick(t0()).unwrap();
    let snapshot = engine.snapshot(false);
    let row_count = snapshot
        .monitors
        .iter()
        .find(|m| m.name == "t" && m.check == "row_count")
        .unwrap_or_else(|| panic!("{:#?}", snapshot.monitors));
    assert_eq!(row_count.observed, "7 rows");
    assert_eq!(row_count.health, MonitorHealth::Ok);
    assert!(snapshot.org_stop.is_some());

    // Blocked again, then stopped: `stop` returns while the check is still blocked,
    // and once that check ends what it measured is let go: nobody is told.
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    minutes.set(t0() + TimeDelta::minutes(1));
    task.poke();
    until("the next check waits for the lock", || {
        waiting_on_t(&mut watcher) > 0
    });
    task.stop();
    assert!(
        waiting_on_t(&mut watcher) > 0,
        "stop did not wait for the check"
    );
    lock.rollback().unwrap();
    until("the detached poll's check ends", || {
        waiting_on_t(&mut watcher) == 0
    });
    // The task's thread ends (its sender is dropped) without a word after stop.
    assert!(
        matches!(
            news.recv_timeout(PATIENCE),
            Err(RecvTimeoutError::Disconnected)
        ),
        "nothing told after stop"
    );
    assert_eq!(observation_count(&state_db), 1, "nothing stored after stop");
}

/// The demo's scheduler (a real SQLite file), counting how often it is asked for its
/// pipelines.
struct Counting {
    inner: ControlPlane,
    asked: Arc<AtomicUsize>,
    /// Answer nothing, as a scheduler that is down.
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl Orchestrator for Counting {
    fn pipelines(&self) -> Result<Vec<Pipeline>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            anyhow::bail!("scheduler GET /pipelines: could not connect");
        }
        self.inner.pipelines()
    }
    fn schedule(&self, job: &str) -> Result<Schedule> {
        self.inner.schedule(job)
    }
    fn pause(&self, job: &str) -> Result<Option<String>> {
        self.inner.pause(job)
    }
    fn restore(&self, job: &str, before: &Schedule) -> Result<()> {
        self.inner.restore(job, before)
    }
    fn queue_run(
        &self,
        job: &str,
        at: dataward::clock::Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        self.inner.queue_run(job, at, by, key)
    }
    fn run(&self, job: &str, id: &str) -> Result<Option<RunRecord>> {
        self.inner.run(job, id)
    }
}

/// A local estate: a SQLite warehouse with table `orders` (`rows` rows) and the demo
/// scheduler's database with one pipeline. Returns the config.
fn local_estate(dir: &Path, rows: i64) -> Config {
    dataward::demo::control::register();
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    wh.execute_batch("CREATE TABLE orders (id INTEGER);")
        .unwrap();
    for id in 0..rows {
        wh.execute("INSERT INTO orders VALUES (?1)", [id]).unwrap();
    }
    let control = rusqlite::Connection::open(dir.join("control.db")).unwrap();
    control
        .execute_batch(
            "CREATE TABLE pipeline (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL,
                state TEXT NOT NULL, last_status TEXT NOT NULL, last_run_at TEXT);
             INSERT INTO pipeline VALUES
                ('load_orders', 'load_orders', 'job', 'scheduled', 'success', '2024-05-12T02:00:00Z');",
        )
        .unwrap();
    Config::parse(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [orchestrator]\nkind = \"demo\"\npath = \"control.db\"\n\n\
         [[monitor]]\nname = \"orders\"\nwarehouse = \"local\"\ntable = \"orders\"\n\
         checks = [\"row_count\"]\nevery = \"1m\"\n",
        &dir.join("dataward.toml"),
    )
    .unwrap()
}

fn load_orders() -> Pipeline {
    Pipeline {
        name: "load_orders".into(),
        state: PipelineState::Scheduled,
        last_status: RunStatus::Success,
        last_run_at: Some("2024-05-12T02:00:00Z".parse().unwrap()),
        ran_after_hold: None,
        hold_unconfirmed: None,
        last_failure: None,
    }
}

#[test]
fn a_snapshot_never_calls_the_orchestrator() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_estate(dir.path(), 3);
    let asked = Arc::new(AtomicUsize::new(0));
    let orchestrator = Box::new(Counting {
        inner: ControlPlane::new(dir.path().join("control.db")),
        asked: asked.clone(),
        down: Arc::default(),
    });
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, Some(orchestrator), &Actor::current()).unwrap();

    // Inline (the default): the tick reads the pipelines; snapshots only read the cache.
    engine.tick(t0()).unwrap();
    let after_tick = asked.load(Ordering::SeqCst);
    assert!(after_tick > 0, "the tick refreshed the pipelines");
    for _ in 0..3 {
        assert_eq!(
            engine.snapshot(false).pipelines,
            vec![PipelineView::from(load_orders())]
        );
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        after_tick,
        "snapshots asked nobody"
    );

    // Not inline: neither the tick nor a snapshot asks; the owner hands them over.
    engine.set_inline_polling(false);
    engine.tick(t0() + TimeDelta::minutes(1)).unwrap();
    let _ = engine.snapshot(false);
    assert_eq!(asked.load(Ordering::SeqCst), after_tick);
    let mut paused = load_orders();
    paused.state = PipelineState::Paused;
    engine.set_reading(Reading {
        pipelines: Some(vec![paused.clone()]),
        ..Reading::default()
    });
    assert_eq!(
        engine.snapshot(false).pipelines,
        vec![PipelineView::from(paused)]
    );
}

#[test]
fn an_orchestrator_that_does_not_answer_is_a_health_state_not_an_incident() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_estate(dir.path(), 3);
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let orchestrator = Box::new(Counting {
        inner: ControlPlane::new(dir.path().join("control.db")),
        asked: Arc::default(),
        down: down.clone(),
    });
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, Some(orchestrator), &Actor::current()).unwrap();
    engine.tick(t0()).unwrap();
    assert_eq!(engine.snapshot(false).orchestrator_down, None);

    down.store(true, Ordering::SeqCst);
    for minute in 1..4 {
        engine.tick(t0() + TimeDelta::minutes(minute)).unwrap();
    }
    let snapshot = engine.snapshot(false);
    let said = snapshot.orchestrator_down.expect("the bar says it is down");
    // Since the first turn it did not answer, with what it said.
    assert!(said.contains("could not connect"), "{said}");
    assert!(said.starts_with("since 02:31: "), "{said}");
    assert!(snapshot.pipelines.is_empty(), "no stale pipelines");
    assert!(snapshot.incidents.is_empty(), "{:?}", snapshot.incidents);

    down.store(false, Ordering::SeqCst);
    engine.tick(t0() + TimeDelta::minutes(5)).unwrap();
    let snapshot = engine.snapshot(false);
    assert_eq!(snapshot.orchestrator_down, None);
    assert_eq!(snapshot.pipelines, vec![PipelineView::from(load_orders())]);
}

#[test]
fn the_engine_acts_on_what_the_poll_task_stored_and_polls_nothing_itself() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_estate(dir.path(), 5);
    let state_db: PathBuf = dir.path().join("dataward.db");
    let orchestrator = dataward::effects::orchestrator::from_config(&config, dir.path()).unwrap();
    let mut engine = Engine::new(
        config.clone(),
        dataward::store::open(&state_db).unwrap(),
        orchestrator,
        &Actor::current(),
    )
    .unwrap();
    engine.set_inline_polling(false);
    engine.tick(t0()).unwrap();
    assert_eq!(observation_count(&state_db), 0, "the engine polled nothing");

    let (_minutes, clock) = test_clock();
    let (notify, news) = news_channel();
    let task = PollTask::start(config, state_db.clone(), clock, notify).unwrap();
    // Both come from the first turn, what it read first.
    let PollNews::Observed(read) = news.recv_timeout(PATIENCE).unwrap() else {
        panic!("expected what the poll read first");
    };
    let PollNews::Scheduler(reading) = news.recv_timeout(PATIENCE).unwrap() else {
        panic!("expected the pipelines");
    };
    assert_eq!(
        reading,
        Reading {
            pipelines: Some(vec![load_orders()]),
            ..Reading::default()
        }
    );
    assert_eq!(observation_count(&state_db), 0, "the task stored nothing");
    engine.store_polled(read).unwrap();
    engine.set_reading(reading);
    engine.tick(t0()).unwrap();
    let snapshot = engine.snapshot(false);
    assert_eq!(snapshot.pipelines, vec![PipelineView::from(load_orders())]);
    let orders = snapshot
        .monitors
        .iter()
        .find(|m| m.name == "orders")
        .unwrap_or_else(|| panic!("{:#?}", snapshot.monitors));
    assert_eq!(orders.observed, "5 rows");
    task.stop();
    // An idle task is joined: its thread, and so its sender, are gone.
    assert!(matches!(
        news.try_recv(),
        Err(mpsc::TryRecvError::Disconnected)
    ));
}

/// The same through `dataward serve` and its socket, as a console sends `:stop`.
#[test]
fn the_service_records_a_stop_sent_over_its_socket_while_a_check_is_blocked() {
    let Some(pg) = start_or_skip("the_service_records_a_stop_while_a_check_is_blocked") else {
        return;
    };
    pg.execute("CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 7);");
    let dir = tempfile::tempdir().unwrap();
    let me = Actor::current().user.expect("this account has a name");
    let config = dir.path().join("team.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_TEST_SERVE_PG_URL\"\n\
             check_timeout = \"60s\"\n\n\
             [[monitor]]\nname = \"t\"\nwarehouse = \"pg\"\ntable = \"t\"\n\
             checks = [\"row_count\"]\nevery = \"1m\"\n\n\
             [people.{me:?}]\nname = \"on call\"\nroles = [\"owner\"]\n"
        ),
    )
    .unwrap();
    let mut holder = pg.client();
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let data = dir.path().join("data");
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data)
        .env("DATAWARD_TEST_SERVE_PG_URL", &pg.url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut watcher = pg.client();
    until("the service's check waits for the lock", || {
        waiting_on_t(&mut watcher) > 0
    });
    let mut client = None;
    until("the service listens", || {
        client = dataward::engine::client::Client::connect(&data, false)
            .ok()
            .flatten();
        client.is_some()
    });
    let outcome = client
        .unwrap()
        .request(Command::OrgStop {
            reason: "bad data everywhere".into(),
        })
        .unwrap();
    assert!(
        matches!(outcome, dataward::engine::api::Outcome::Accepted { .. }),
        "{outcome:?}"
    );
    assert!(waiting_on_t(&mut watcher) > 0, "the check is still waiting");
    lock.rollback().unwrap();
    let _ = server.kill();
    let _ = server.wait();
}

/// Backends waiting for a lock on any of `tables`.
fn waiting_on(watcher: &mut postgres::Client, tables: &[&str]) -> i64 {
    let names: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
    watcher
        .query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
             WHERE c.relname = ANY($1) AND NOT l.granted",
            &[&names],
        )
        .unwrap()
        .get(0)
}

#[test]
fn a_slow_first_poll_tells_the_engine_how_far_it_got() {
    let Some(pg) = start_or_skip("a_slow_first_poll_tells_the_engine_how_far_it_got") else {
        return;
    };
    pg.execute(
        "CREATE TABLE quick (id int); CREATE TABLE held1 (id int); CREATE TABLE held2 (id int);",
    );
    std::env::set_var("DATAWARD_TEST_FIRST_POLL_PG_URL", &pg.url);
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_TEST_FIRST_POLL_PG_URL\"\n\
                    check_timeout = \"60s\"\n"
            .to_string();
    for table in ["quick", "held1", "held2"] {
        text.push_str(&format!(
            "\n[[monitor]]\nname = \"{table}\"\nwarehouse = \"pg\"\ntable = \"{table}\"\n\
             checks = [\"row_count\"]\nevery = \"1m\"\n"
        ));
    }
    let config = Config::parse(&text, &dir.path().join("dataward.toml")).unwrap();
    let state_db = dir.path().join("dataward.db");
    let actor = Actor::current();
    let mut engine = Engine::new(
        config.clone(),
        dataward::store::open(&state_db).unwrap(),
        None,
        &actor,
    )
    .unwrap();
    engine.set_inline_polling(false);
    engine.tick(t0()).unwrap();
    assert_eq!(engine.first_poll(), None);

    // Two of the three tables are locked: the first poll reads one and waits.
    let (mut holder1, mut holder2) = (pg.client(), pg.client());
    let mut lock1 = holder1.transaction().unwrap();
    lock1
        .batch_execute("LOCK TABLE held1 IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mut lock2 = holder2.transaction().unwrap();
    lock2
        .batch_execute("LOCK TABLE held2 IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let (_minutes, clock) = test_clock();
    let (notify, news) = news_channel();
    let task = PollTask::start(config, state_db.clone(), clock, notify).unwrap();
    let mut watcher = pg.client();
    until("both held tables' checks wait", || {
        waiting_on(&mut watcher, &["held1", "held2"]) == 2
    });
    // Nothing is told in the poll's first second.
    std::thread::sleep(Duration::from_millis(1_100));
    assert!(news.try_recv().is_err(), "nothing told yet");

    // One held table is let go: past the second, the count so far is told.
    lock1.rollback().unwrap();
    let PollNews::FirstPoll(progress) = news.recv_timeout(PATIENCE).unwrap() else {
        panic!("expected the first poll's progress");
    };
    assert_eq!(progress.total, 3);
    assert!((1..3).contains(&progress.done), "{progress:?}");
    engine.set_first_poll(progress);
    assert_eq!(engine.first_poll(), Some(progress));
    assert_eq!(
        engine.snapshot(false).first_poll,
        Some(progress),
        "a console draws it"
    );

    // The last is let go: the end is told, then what the poll read.
    lock2.rollback().unwrap();
    let mut heard = Vec::new();
    let read = loop {
        match news.recv_timeout(PATIENCE).unwrap() {
            PollNews::Observed(read) => break read,
            other => heard.push(other),
        }
    };
    let end = heard
        .iter()
        .find_map(|n| match n {
            PollNews::FirstPoll(p) if p.done == p.total => Some(*p),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no end told: {heard:?}"));
    engine.set_first_poll(end);
    assert_eq!(engine.first_poll(), None, "over: nothing to draw");
    assert_eq!(engine.snapshot(false).first_poll, None);
    engine.store_polled(read).unwrap();
    assert_eq!(observation_count(&state_db), 3);
    task.stop();
}

/// The poll task never writes the state database: it polls, and tells what it measured,
/// while another connection holds the database's write lock from before it starts
/// until after it has told.
#[test]
fn the_poll_task_polls_while_another_connection_holds_the_state_database_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_estate(dir.path(), 4);
    let state_db = dir.path().join("dataward.db");
    let mut engine = Engine::new(
        config.clone(),
        dataward::store::open(&state_db).unwrap(),
        None,
        &Actor::current(),
    )
    .unwrap();
    engine.set_inline_polling(false);
    engine.tick(t0()).unwrap();

    let writer = dataward::store::open(&state_db).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (_minutes, clock) = test_clock();
    let (notify, news) = news_channel();
    let task = PollTask::start(config, state_db.clone(), clock, notify)
        .expect("the task starts without writing");
    let read = loop {
        if let PollNews::Observed(read) = news
            .recv_timeout(PATIENCE)
            .expect("the task tells its poll")
        {
            break read;
        }
    };
    writer.execute_batch("ROLLBACK").unwrap();
    task.stop();
    // The engine writes what the task read, in its own transaction.
    assert_eq!(observation_count(&state_db), 0);
    engine.store_polled(read).unwrap();
    engine.tick(t0()).unwrap();
    let snapshot = engine.snapshot(false);
    let orders = snapshot
        .monitors
        .iter()
        .find(|m| m.name == "orders")
        .unwrap_or_else(|| panic!("{:#?}", snapshot.monitors));
    assert_eq!(orders.observed, "4 rows");
}

/// What a poll cost each warehouse comes from the engine's own poll, whichever thread
/// polled: the poll task's read stored by the engine, or the engine polling inline.
#[test]
fn the_snapshot_says_what_the_engines_last_poll_cost_each_warehouse() {
    for inline in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let config = local_estate(dir.path(), 5);
        let state_db: PathBuf = dir.path().join("dataward.db");
        let orchestrator =
            dataward::effects::orchestrator::from_config(&config, dir.path()).unwrap();
        let mut engine = Engine::new(
            config.clone(),
            dataward::store::open(&state_db).unwrap(),
            orchestrator,
            &Actor::current(),
        )
        .unwrap();
        engine.set_inline_polling(inline);
        if !inline {
            let (_minutes, clock) = test_clock();
            let (notify, news) = news_channel();
            let task = PollTask::start(config, state_db.clone(), clock, notify).unwrap();
            let read = loop {
                if let PollNews::Observed(read) = news.recv_timeout(PATIENCE).unwrap() {
                    break read;
                }
            };
            engine.store_polled(read).unwrap();
            task.stop();
        }
        engine.tick(t0()).unwrap();
        let costs = engine.snapshot(false).poll_costs;
        assert_eq!(costs.len(), 1, "inline {inline}: {costs:#?}");
        let local = &costs[0];
        assert_eq!(local.warehouse, "local");
        // One monitor with one row-reading check: one statement, on one connection.
        assert_eq!(
            (local.queries, local.sessions),
            (1, 1),
            "inline {inline}: {local:#?}"
        );
        assert_eq!(local.scanned_bytes, None, "{local:#?}");
    }
}

/// A task started on demand (the demo's, whose clock waits for it) reads nothing until
/// asked: asked for the scheduler it reads only the scheduler, asked for a poll it polls
/// what is due and reads the scheduler, and each ask is answered once, after what it
/// read. (Order only: everything it told is read once the stopped task has gone.)
#[test]
fn a_task_on_demand_reads_only_what_it_is_asked_and_answers_each_ask() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_estate(dir.path(), 5);
    let state_db: PathBuf = dir.path().join("dataward.db");
    let mut engine = Engine::new(
        config.clone(),
        dataward::store::open(&state_db).unwrap(),
        None,
        &Actor::current(),
    )
    .unwrap();
    engine.set_inline_polling(false);
    engine.tick(t0()).unwrap();

    let (_minutes, clock) = test_clock();
    let (notify, news) = news_channel();
    let task = PollTask::start_on_demand(config, state_db.clone(), clock, notify).unwrap();
    task.ask(PollAsk::Scheduler);
    let told: Vec<String> = (0..2)
        .map(|_| format!("{:?}", news.recv_timeout(PATIENCE).unwrap()))
        .collect();
    assert!(
        told[0].starts_with("Scheduler(") && told[1] == "Answered",
        "the scheduler alone, then the answer: {told:?}"
    );
    task.ask(PollAsk::Poll);
    let told: Vec<String> = (0..3)
        .map(|_| format!("{:?}", news.recv_timeout(PATIENCE).unwrap()))
        .collect();
    assert!(
        told[0].starts_with("Observed(")
            && told[1].starts_with("Scheduler(")
            && told[2] == "Answered",
        "what was polled and read, then the answer: {told:?}"
    );
    task.stop();
    // Stopped while idle, the task is joined: anything more it told is here now.
    let rest: Vec<String> = news.try_iter().map(|n| format!("{n:?}")).collect();
    assert!(rest.is_empty(), "nothing unasked: {rest:?}");
    assert_eq!(observation_count(&state_db), 0, "the task stored nothing");
}
