//! The chain under real processes: four writers at once must produce one gap-free chain,
//! and a writer killed with SIGKILL at any moment must leave a database that passes
//! `integrity_check`, a chain that verifies, and every record it acknowledged.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::json;

const CHILD: &str = "DATAWARD_CHAIN_CHILD";

/// Not a test: the body of the child process the tests below start. It appends records
/// and prints `ack <tag> <i>` after each commit.
#[test]
#[ignore = "entry point of the child writer process, started by the tests in this file"]
fn child_writer() {
    let spec = std::env::var(CHILD).expect("started by a test");
    let mut parts = spec.split('|');
    let (path, tag, count) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let count: u64 = count.parse().unwrap();
    let conn = dataward::store::open(Path::new(path)).unwrap();
    for i in 0..count {
        dataward::chain::append(
            &conn,
            "2026-11-24T14:00:00Z".parse().unwrap(),
            "test",
            "{}",
            &json!({"tag": tag, "i": i}),
        )
        .unwrap();
        println!("ack {tag} {i}");
    }
}

fn spawn(db: &Path, tag: &str, count: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{}|{tag}|{count}", db.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Parses `ack <tag> <i>`; libtest may print its own "test child_writer ... " first on
/// the same line.
fn ack(line: &str) -> Option<(String, u64)> {
    let mut words = line[line.find("ack ")?..].split_whitespace().skip(1);
    Some((words.next()?.to_string(), words.next()?.parse().ok()?))
}

/// Every (tag, i) the database holds.
fn stored(db: &Path) -> std::collections::HashSet<(String, u64)> {
    let conn = dataward::store::open(db).unwrap();
    dataward::chain::records(&conn)
        .unwrap()
        .into_iter()
        .filter_map(|r| {
            let v: serde_json::Value = serde_json::from_str(&r.payload).ok()?;
            Some((v["tag"].as_str()?.to_string(), v["i"].as_u64()?))
        })
        .collect()
}

#[test]
fn four_writers_make_one_gap_free_chain() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    dataward::store::open(&db).unwrap();
    let children: Vec<Child> = (0..4).map(|w| spawn(&db, &format!("w{w}"), 500)).collect();
    for mut child in children {
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        assert!(
            child.wait().unwrap().success(),
            "a writer failed (SQLITE_BUSY reached it?)"
        );
        assert_eq!(out.lines().filter_map(ack).count(), 500);
    }
    let conn = dataward::store::open(&db).unwrap();
    let report = dataward::chain::verify(&conn).unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 2000);
    let seqs: Vec<u64> = dataward::chain::records(&conn)
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, (1..=2000).collect::<Vec<_>>());
    assert_eq!(stored(&db).len(), 2000);
}

#[test]
fn a_writer_killed_at_any_moment_loses_nothing_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    dataward::store::open(&db).unwrap();
    let mut acked = std::collections::HashSet::new();
    let mut seed: u64 = 0x5eed;
    for round in 0..200 {
        let tag = format!("r{round}");
        let mut child = spawn(&db, &tag, 1_000_000);
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // A random moment: sometimes before the first commit, sometimes mid-stream.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(std::time::Duration::from_micros((seed >> 33) % 40_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        acked.extend(rx.try_iter().filter_map(|line| ack(&line)));
        let conn = dataward::store::open(&db).unwrap();
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok", "round {round}");
        let report = dataward::chain::verify(&conn).unwrap();
        assert!(report.ok, "round {round}: {report:?}");
    }
    let present = stored(&db);
    let missing: Vec<_> = acked.difference(&present).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    assert!(
        !acked.is_empty(),
        "no writer ever got to commit: the test proved nothing"
    );
}
