//! A chain append, one record per transaction, with the state on SQLite (the host's
//! file, `synchronous=FULL`) and on PostgreSQL (the team's shared database, each
//! transaction fenced by the lease's term): the cost a decision pays to be recorded.
//! Then what a person waits for: a decision (a snooze of a monitor, recorded on the
//! chain with its row) sent through the socket of a real `dataward serve` until its
//! answer, the state on SQLite and then on PostgreSQL. Prints the median, p99 and worst
//! latency of each. Starts its own PostgreSQL server (fsync off, as the tests run it:
//! the figure is the round trips and the fence, not the disk).
//!
//! `cargo bench --bench state` (release); a debug build's figures, for a shared machine:
//! `cargo test --bench state -- --decisions-only`.

#[path = "../tests/support/pg.rs"]
mod pg;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataward::chain;
use dataward::engine::api::{Command as Command_, Outcome};
use dataward::engine::client::Client;
use dataward::store::postgres::{Contender, PgState, Role, Source};

const APPENDS: usize = 2_000;
/// Decisions sent through the socket per state.
const DECISIONS: usize = 300;

fn noon() -> dataward::clock::Timestamp {
    "2026-11-24T12:00:00Z".parse().unwrap()
}

fn payload(i: usize) -> serde_json::Value {
    serde_json::json!({ "incident": format!("INC-{}", i % 50), "verdict": "approved", "i": i })
}

/// Prints `times` of `what`, each one of `unit` (appends, decisions).
fn report(what: &str, unit: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: {} {unit}, median {:.2} ms, p99 {:.2} ms, worst {:.2} ms",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(*times.last().unwrap())
    );
}

fn main() {
    let server = pg::PgServer::start();
    if !std::env::args().any(|arg| arg == "--decisions-only") {
        appends(&server);
    }
    decisions(&server);
}

fn appends(server: &pg::PgServer) {
    let dir = tempfile::tempdir().unwrap();

    let sqlite = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let times = (0..APPENDS)
        .map(|i| {
            let started = Instant::now();
            chain::append(&sqlite, noon(), "decision", "{}", &payload(i)).unwrap();
            started.elapsed()
        })
        .collect();
    report("SQLite (synchronous=FULL)", "appends", times);

    let source = Source {
        url: server.url.clone(),
        named_by: "bench".to_string(),
    };
    let lease = Duration::from_secs(30);
    let state = PgState::open(&source, "bench", &dir.path().join("host"), lease).unwrap();
    let mut contender = Contender::new(source, "bench", "bench", "bench", lease);
    let Role::Leader { term } = contender.step().unwrap() else {
        panic!("nobody else contends");
    };
    state.set_term(Some(term));
    let times = (0..APPENDS)
        .map(|i| {
            let started = Instant::now();
            state
                .transact(|s| chain::append_to(s, noon(), "decision", "{}", &payload(i)))
                .unwrap();
            started.elapsed()
        })
        .collect();
    report("PostgreSQL 15 (fenced by term, loopback)", "appends", times);
    let started = Instant::now();
    let verified = chain::verify_of(&state).unwrap();
    assert!(verified.ok, "{verified:?}");
    println!(
        "PostgreSQL verify: {} records in {:.1} ms",
        verified.records,
        started.elapsed().as_secs_f64() * 1000.0
    );
}

/// A `dataward serve` watching one SQLite table, its state on SQLite (`state_url`
/// None) or on the team's PostgreSQL; this account owns the table.
fn serve(root: &Path, state_url: Option<&str>) -> Child {
    let warehouse = rusqlite::Connection::open(root.join("wh.db")).unwrap();
    warehouse
        .execute_batch("CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT);")
        .unwrap();
    let me = dataward::approve::Actor::current()
        .user
        .expect("a named account");
    let state = match state_url {
        Some(_) => "[state]\nurl_env = \"BENCH_STATE_URL\"\nteam = \"bench-decisions\"\n\n",
        None => "",
    };
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "{state}[warehouse.wh]\nkind = \"sqlite\"\npath = \"{}\"\n\n\
             [[monitor]]\nname = \"events\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
             checks = [\"row_count\"]\nevery = \"1h\"\n\n\
             [people.{me:?}]\nname = \"On call\"\nroles = [\"owner\"]\n\n\
             [[domain]]\nname = \"events\"\ncovers = [\"events\"]\nowners = [\"owner\"]\n",
            root.join("wh.db").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(root.join("data"))
        .arg("--log-stderr")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("serve.log")).unwrap());
    if let Some(url) = state_url {
        command.env("BENCH_STATE_URL", url);
    }
    command.spawn().unwrap()
}

/// Decisions through the socket of a real engine: each a snooze of the monitor, sent
/// and waited for as `dataward snooze` does, timed from sending to the answer.
fn decisions(server: &pg::PgServer) {
    for (what, url) in [
        ("decision through the socket, state on SQLite", None),
        (
            "decision through the socket, state on PostgreSQL 15 (loopback)",
            Some(server.url.as_str()),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = serve(dir.path(), url);
        let data = dir.path().join("data");
        let started = Instant::now();
        let mut client = loop {
            // The engine answers once it leads (on PostgreSQL) and has loaded.
            if let Ok(Some(client)) = Client::connect(&data, false) {
                break client;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the engine did not serve: {}",
                std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let times = (0..DECISIONS)
            .map(|i| {
                let command = Command_::Snooze {
                    target: "events".to_string(),
                    seconds: 1800 + i as u64,
                    reason: "bench".to_string(),
                };
                let started = Instant::now();
                let outcome = client.request(command).unwrap();
                let took = started.elapsed();
                assert!(
                    matches!(outcome, Outcome::Accepted { seq: Some(_), .. }),
                    "{outcome:?}"
                );
                took
            })
            .collect();
        report(what, "decisions", times);
        let _ = engine.kill();
        let _ = engine.wait();
    }
}
