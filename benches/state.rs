//! A chain append, one record per transaction, with the state on SQLite (the host's
//! file, `synchronous=FULL`) and on PostgreSQL (the team's shared database, each
//! transaction fenced by the lease's term): the cost a decision pays to be recorded.
//! Prints the median and worst latency of each. Starts its own PostgreSQL server
//! (fsync off, as the tests run it: the figure is the round trips and the fence, not
//! the disk).

#[path = "../tests/support/pg.rs"]
mod pg;

use std::time::{Duration, Instant};

use dataward::chain;
use dataward::store::postgres::{Contender, PgState, Role, Source};

const APPENDS: usize = 2_000;

fn noon() -> dataward::clock::Timestamp {
    "2026-11-24T12:00:00Z".parse().unwrap()
}

fn payload(i: usize) -> serde_json::Value {
    serde_json::json!({ "incident": format!("INC-{}", i % 50), "verdict": "approved", "i": i })
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: {APPENDS} appends, median {:.2} ms, p99 {:.2} ms, worst {:.2} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(*times.last().unwrap())
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();

    let sqlite = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let times = (0..APPENDS)
        .map(|i| {
            let started = Instant::now();
            chain::append(&sqlite, noon(), "decision", "{}", &payload(i)).unwrap();
            started.elapsed()
        })
        .collect();
    report("SQLite (synchronous=FULL)", times);

    let server = pg::PgServer::start();
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
    report("PostgreSQL 15 (fenced by term, loopback)", times);
    let started = Instant::now();
    let verified = chain::verify_of(&state).unwrap();
    assert!(verified.ok, "{verified:?}");
    println!(
        "PostgreSQL verify: {} records in {:.1} ms",
        verified.records,
        started.elapsed().as_secs_f64() * 1000.0
    );
}
