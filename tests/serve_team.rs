//! `dataward serve` on team state: two engines on one throwaway PostgreSQL, each with
//! a data directory of its own as if on its own host. One leads (its socket answers)
//! and the other stands by, its socket refusing every request with who leads and
//! where; the leader killed with -9 is replaced by the standby, which records the
//! takeover on the chain (who, term, from whom) and answers the same request on the
//! same socket; the chain verifies after every takeover and the terms only grow.
//!
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1. Nothing waits on a clock: each condition is polled for with a
//! generous limit.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::pg::{start_or_skip, PgServer};
use support::team::{signal, state_section, Team};

const PATIENCE: Duration = Duration::from_secs(90);

/// A team watching one SQLite table, its config under a fresh folder.
fn team(pg: &PgServer) -> (tempfile::TempDir, Team) {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_path_buf();
    let warehouse = rusqlite::Connection::open(root.join("wh.db")).unwrap();
    warehouse
        .execute_batch(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, at TEXT);
             INSERT INTO events (kind, at) VALUES ('a', '2026-01-01T00:00:00Z');",
        )
        .unwrap();
    let me = support::team::me();
    let config = format!(
        "{}[warehouse.wh]\nkind = \"sqlite\"\npath = \"{}\"\n\n\
         [[monitor]]\nname = \"events\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
         checks = [\"row_count\"]\nevery = \"5m\"\n\n\
         [people.{me:?}]\nname = \"On call\"\nroles = [\"owner\"]\n",
        state_section(),
        root.join("wh.db").display()
    );
    let team = Team::new(pg, &root, &config);
    (dir, team)
}

/// Kills the leader `kills` times; after each, the standby leads, and the killed one
/// comes back as the next standby.
fn leaders_killed_again_and_again(kills: usize) {
    let Some(pg) = start_or_skip("serve_team") else {
        return;
    };
    let (_dir, team) = team(&pg);
    let hosts = ["a", "b"];
    let mut engines = vec![team.serve(hosts[0])];
    let wait_for = |host: &str| {
        let deadline = Instant::now() + PATIENCE;
        while !team.leads(host) {
            assert!(
                Instant::now() < deadline,
                "{host} did not take the lead; its log:\n{}",
                team.log(host)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(hosts[0]);
    engines.push(team.serve(hosts[1]));
    let mut leader = 0;
    for round in 0..kills {
        // The standby stands by: it said so, and its socket refuses, naming the leader.
        let standby = 1 - leader;
        let deadline = Instant::now() + PATIENCE;
        while !team.log(hosts[standby]).contains("standby: ") {
            assert!(Instant::now() < deadline, "{}", team.log(hosts[standby]));
            std::thread::sleep(Duration::from_millis(50));
        }
        let (terms, _) = team.takeovers(hosts[leader]);
        let leading = terms.last().expect("the leader took over").0;
        let (code, said) = team.approve_nothing(hosts[standby]);
        let leader_socket = team.data(hosts[leader]).join("dataward.sock");
        let expected = format!(
            "leads team payments at term {leading} (socket {})",
            leader_socket.display()
        );
        assert!(
            said.contains("standby: host ") && said.contains(&expected),
            "round {round}: {said}"
        );
        assert_eq!(code, Some(2), "round {round}: {said}");
        let line = team.doctor_engine_line(hosts[standby]);
        assert!(
            line.starts_with('✓') && line.contains(&expected),
            "a standby is fine to doctor: {line}"
        );
        signal(&engines[leader], libc::SIGKILL);
        engines[leader].wait().unwrap();
        wait_for(hosts[standby]);
        // The same request on the same socket now reaches the new leader.
        let (code, said) = team.approve_nothing(hosts[standby]);
        assert_eq!(code, Some(1), "round {round}: {said}");
        assert!(!said.contains("standby"), "round {round}: {said}");
        let (terms, report) = team.takeovers(hosts[standby]);
        assert!(report.ok, "round {round}: {:?}", report.first_bad);
        assert_eq!(terms.len(), round + 2, "one takeover per lead: {terms:?}");
        let (last, before) = (terms[round + 1], terms[round]);
        assert!(last.0 > before.0, "terms only grow: {terms:?}");
        assert_eq!(
            last.1,
            Some(before.0),
            "taken over from the killed leader: {terms:?}"
        );
        engines[leader] = team.serve(hosts[leader]);
        leader = standby;
    }
    for engine in &mut engines {
        signal(engine, libc::SIGKILL);
        let _ = engine.wait();
    }
}

#[test]
fn a_leader_killed_with_9_is_replaced_by_the_standby_which_says_so_on_the_chain() {
    leaders_killed_again_and_again(3);
}

#[test]
#[ignore = "twenty takeovers: run by hand"]
fn twenty_leaders_killed_with_9() {
    leaders_killed_again_and_again(20);
}

/// How many records the team's chain holds, as `host` reads it, and the last one's kind
/// and payload; the chain verified.
fn chain_end(team: &Team, host: &str) -> (u64, String, serde_json::Value) {
    use dataward::store::chain::ChainStore;
    let state = team.state(host);
    let report = dataward::chain::verify_of(&state).unwrap();
    assert!(report.ok, "the chain: {:?}", report.first_bad);
    let records = state.records().unwrap();
    let last = records.last().expect("the chain has records");
    (
        report.records as u64,
        last.kind.clone(),
        serde_json::from_str(&last.payload).unwrap(),
    )
}

/// A leader stopped (SIGSTOP) past its lease: the standby ends its session and takes
/// over. The new leader is then stopped in turn, so nothing else writes, and the old
/// one continued (SIGCONT): it writes nothing (the chain still ends with the takeover
/// record), says `deposed: ...` and exits 1. The new leader, continued, still leads.
#[test]
fn a_paused_leader_woken_after_a_takeover_writes_nothing_and_exits_deposed() {
    let Some(pg) = start_or_skip("serve_team paused") else {
        return;
    };
    let (_dir, team) = team(&pg);
    let mut a = team.serve("a");
    assert_eq!(
        team.leader_within(&["a"], PATIENCE),
        Some(0),
        "{}",
        team.log("a")
    );
    let mut b = team.serve("b");
    let deadline = Instant::now() + PATIENCE;
    while !team.log("b").contains("standby: ") {
        assert!(Instant::now() < deadline, "{}", team.log("b"));
        std::thread::sleep(Duration::from_millis(50));
    }

    signal(&a, libc::SIGSTOP);
    assert_eq!(
        team.leader_within(&["b"], PATIENCE),
        Some(0),
        "b did not take over from the stopped a:\n{}",
        team.log("b")
    );
    let (terms, _) = team.takeovers("b");
    assert_eq!(terms, vec![(1, None), (2, Some(1))]);
    signal(&b, libc::SIGSTOP);
    let (records, kind, payload) = chain_end(&team, "b");
    assert_eq!(
        (kind.as_str(), payload["term"].as_u64()),
        ("takeover", Some(2))
    );

    signal(&a, libc::SIGCONT);
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = a.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "a never stopped:\n{}",
            team.log("a")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = team.log("a");
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("deposed: "), "{said}");
    let (after, kind, payload) = chain_end(&team, "b");
    assert_eq!(after, records, "the deposed leader wrote:\n{said}");
    assert_eq!(
        (kind.as_str(), payload["term"].as_u64()),
        ("takeover", Some(2))
    );

    signal(&b, libc::SIGCONT);
    assert_eq!(
        team.leader_within(&["b"], PATIENCE),
        Some(0),
        "{}",
        team.log("b")
    );
    assert!(!team.log("b").contains("deposed"), "{}", team.log("b"));
    signal(&b, libc::SIGKILL);
    let _ = b.wait();
}
