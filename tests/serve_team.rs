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
         [people.{me:?}]\nname = \"On call\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"events\"\ncovers = [\"events\"]\nowners = [\"owner\"]\n",
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

/// Waits until the leader's state session waits on a lock: the request it is carrying
/// out has reached its first write, which the test holds up.
fn wait_for_a_held_write(pg: &PgServer) {
    let mut client = pg.client();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = 'dataward state' AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no write of the leader waits");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A decision whose leader dies before answering is looked up in the team's state, not
/// in a file the host does not have. One sent while the leader's writes are held up (the
/// test holds the lease row), the leader then stopped and killed with -9: once the
/// standby leads, the CLI says it was not recorded and is safe to send again, and the
/// chain has none of it. One the leader committed before the kill is found recorded
/// under its chain record.
#[test]
fn a_decision_whose_leader_died_is_found_recorded_or_not_in_the_teams_state() {
    use dataward::engine::api::{Command, Outcome};
    use dataward::engine::client::{new_request_id, Client};
    use dataward::engine::what_happened::{what_happened, SentTo};

    let Some(pg) = start_or_skip("serve_team lost") else {
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
    let _b = team.serve("b");
    let deadline = Instant::now() + PATIENCE;
    while !team.log("b").contains("standby: ") {
        assert!(Instant::now() < deadline, "{}", team.log("b"));
        std::thread::sleep(Duration::from_millis(50));
    }
    // The first poll recorded, so the next write of the leader is the request's (the
    // monitor polls every 5 minutes).
    let deadline = Instant::now() + PATIENCE;
    while pg
        .client()
        .query_one("SELECT count(*) FROM observation", &[])
        .unwrap()
        .get::<_, i64>(0)
        == 0
    {
        assert!(Instant::now() < deadline, "no poll: {}", team.log("a"));
        std::thread::sleep(Duration::from_millis(50));
    }

    // Committed and answered, under a request id the test knows.
    let mut client = Client::connect(&team.data("a"), false).unwrap().unwrap();
    let committed_id = new_request_id().unwrap();
    let committed = client
        .request_as(
            Command::Snooze {
                target: "events".into(),
                seconds: 60,
                reason: "before the kill".into(),
            },
            Some(committed_id.clone()),
        )
        .unwrap();
    let Outcome::Accepted {
        seq: Some(committed_seq),
        ..
    } = committed
    else {
        panic!("{committed:?}")
    };

    // Sent while the leader's writes wait on the lease row the test holds.
    let mut holder = pg.client();
    let mut held = holder.transaction().unwrap();
    held.query("SELECT 1 FROM lease FOR UPDATE", &[]).unwrap();
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
        .arg("--config")
        .arg(&team.config)
        .args(["snooze", "events", "1m", "--reason", "while held"])
        .arg("--data-dir")
        .arg(team.data("a"))
        .env(support::team::URL_ENV, &team.url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_held_write(&pg);
    signal(&a, libc::SIGSTOP);
    signal(&a, libc::SIGKILL);
    a.wait().unwrap();
    held.rollback().unwrap();

    let out = cli.wait_with_output().unwrap();
    let said = support::team::text(&out);
    assert!(
        said.contains("lost before its answer")
            && said.contains("not recorded: ")
            && said.contains("safe to send again"),
        "{said}"
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    println!("the CLI said:\n{said}");
    assert_eq!(
        team.leader_within(&["b"], PATIENCE),
        Some(0),
        "{}",
        team.log("b")
    );
    let reasons: Vec<String> = support::team::records(&team.state("b"), "snoozed")
        .iter()
        .map(|(_, p)| p["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(reasons, vec!["before the kill".to_string()]);

    // With no engine on a, an org stop is not written beside the team's state: only the
    // leader records one.
    let out = team.cli("a", &["stop", "--reason", "no engine here"]);
    let said = support::team::text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("only the engine leading the team records a stop"),
        "{said}"
    );
    assert!(!team.data("a").join("dataward.db").exists(), "{said}");

    // The committed one, asked of the team's state as the CLI asks it.
    std::env::set_var(support::team::URL_ENV, &team.url);
    let sent = SentTo {
        data_dir: &team.data("a"),
        config: Some(&team.config),
        engine_pid: Some(a.id() as i32),
    };
    match what_happened(&sent, &committed_id).unwrap() {
        Outcome::Accepted { seq, .. } => assert_eq!(seq, Some(committed_seq)),
        other => panic!("{other:?}"),
    }
}
