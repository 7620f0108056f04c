//! Pairing at scale: `dataward serve` with 1,000 open incidents and 20 attached
//! consoles. Prints the bytes each change costs on the socket and the time from a
//! decision until every console has a snapshot that shows it.
//!
//!     cargo bench --bench pairing

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dataward::engine::api::{Command as EngineCommand, Outcome, ServerMessage};
use dataward::engine::client::Client;

#[path = "support/stop_while_hanging.rs"]
mod stop_while_hanging;

const INCIDENTS: usize = 1_000;
const CONSOLES: usize = 20;
const ROUNDS: usize = 5;

fn estate(dir: &Path) {
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    let mut config = String::from(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\nmax_concurrent = 4\n\n",
    );
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let me = users_name().unwrap_or(user);
    config.push_str(&format!(
        "[people.{me:?}]\nname = \"bench\"\nroles = [\"owner\"]\n\n"
    ));
    wh.execute_batch("BEGIN").unwrap();
    for t in 0..INCIDENTS {
        wh.execute_batch(&format!(
            "CREATE TABLE t{t} (id INTEGER); INSERT INTO t{t} VALUES (1), (2), (3);"
        ))
        .unwrap();
        // A recorded baseline far above what is there: every table opens an incident.
        config.push_str(&format!(
            "[[monitor]]\nwarehouse = \"local\"\ntable = \"t{t}\"\nchecks = [\"row_count\"]\nevery = \"1h\"\nexpected_rows = 100000\n\n"
        ));
    }
    wh.execute_batch("COMMIT").unwrap();
    std::fs::write(dir.join("bench.toml"), config).unwrap();
}

fn users_name() -> Option<String> {
    let uid = unsafe { libc::geteuid() };
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path());
    let data = dir.path().join("data");
    let mut server = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(dir.path().join("bench.toml"))
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the engine and its first poll: 1,000 incidents open.
    let started = Instant::now();
    let mut watcher = loop {
        if let Ok(Some(client)) = Client::connect(&data, true) {
            break client;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no engine");
        std::thread::sleep(Duration::from_millis(50));
    };
    loop {
        let snapshot = watcher.snapshot().unwrap();
        if snapshot.incidents.len() >= INCIDENTS {
            break;
        }
    }
    println!(
        "engine up with {INCIDENTS} open incidents after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Twenty consoles, each reading every frame and telling when a snapshot arrived
    // and which chain record it shows.
    let (seen_tx, seen_rx) = mpsc::channel::<(usize, u64, Instant, usize)>();
    // What one change costs on the wire: the frame the engine sends every console.
    let bytes = dataward::engine::wire::encode(&ServerMessage::Snapshot(Box::new(
        watcher.snapshot().unwrap(),
    )))
    .len();
    for console in 0..CONSOLES {
        let mut client = Client::connect(&data, true).unwrap().unwrap();
        let seen_tx = seen_tx.clone();
        std::thread::spawn(move || loop {
            let Ok(message) = client.receive() else {
                return;
            };
            if let ServerMessage::Snapshot(snapshot) = &message {
                let head = snapshot.chain_head.as_ref().map(|h| h.seq).unwrap_or(0);
                if seen_tx.send((console, head, Instant::now(), 0)).is_err() {
                    return;
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500));
    while seen_rx.try_recv().is_ok() {}

    // Each round is one decision on the chain (the org stop set with a new reason);
    // it counts once every console has a snapshot showing that record.
    let mut decider = Client::connect(&data, false).unwrap().unwrap();
    let mut latencies = Vec::new();
    for round in 0..ROUNDS {
        let sent = Instant::now();
        let outcome = decider
            .request(EngineCommand::OrgStop {
                reason: format!("bench round {round}"),
            })
            .unwrap();
        let Outcome::Accepted { seq: Some(seq), .. } = outcome else {
            panic!("{outcome:?}");
        };
        let mut shown = vec![None; CONSOLES];
        while shown.iter().any(Option::is_none) {
            let (console, head, at, _) = seen_rx.recv_timeout(Duration::from_secs(60)).unwrap();
            if head >= seq && shown[console].is_none() {
                shown[console] = Some(at);
            }
        }
        let last = shown.into_iter().flatten().max().unwrap();
        latencies.push(last.saturating_duration_since(sent));
    }
    let _ = server.kill();
    let _ = server.wait();
    latencies.sort();
    println!(
        "{CONSOLES} consoles, {INCIDENTS} open incidents: a decision shows on every console in {:.1} ms median, {:.1} ms worst ({ROUNDS} rounds)",
        latencies[ROUNDS / 2].as_secs_f64() * 1000.0,
        latencies[ROUNDS - 1].as_secs_f64() * 1000.0,
    );
    println!(
        "bytes per change: {bytes} per console (a whole snapshot), {} for all {CONSOLES}; serialized once by the engine",
        bytes * CONSOLES
    );
    stop_while_hanging::run();
}
