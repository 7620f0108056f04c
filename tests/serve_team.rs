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

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataward::chain;
use dataward::store::chain::ChainStore;
use dataward::store::postgres::{PgState, Source};
use support::pg::{start_or_skip, PgServer};

const PATIENCE: Duration = Duration::from_secs(90);

struct Team {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: PathBuf,
    url: String,
}

impl Team {
    fn new(pg: &PgServer) -> Team {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let warehouse = rusqlite::Connection::open(root.join("wh.db")).unwrap();
        warehouse
            .execute_batch(
                "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, at TEXT);
                 INSERT INTO events (kind, at) VALUES ('a', '2026-01-01T00:00:00Z');",
            )
            .unwrap();
        let me = dataward::approve::Actor::current()
            .user
            .expect("this account has a name");
        let config = root.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[state]\nurl_env = \"TEST_STATE_URL\"\nteam = \"payments\"\n\n\
                 [warehouse.wh]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
                 [[monitor]]\nname = \"events\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
                 checks = [\"row_count\"]\nevery = \"5m\"\n\n\
                 [people.{me:?}]\nname = \"On call\"\nroles = [\"owner\"]\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
        Team {
            _dir: dir,
            root,
            config,
            url: pg.url.clone(),
        }
    }

    fn data(&self, host: &str) -> PathBuf {
        self.root.join(host)
    }

    fn serve(&self, host: &str) -> Child {
        let log = std::fs::File::create(self.root.join(format!("{host}.log"))).unwrap();
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&self.config)
            .arg("--data-dir")
            .arg(self.data(host))
            .env("TEST_STATE_URL", &self.url)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn log(&self, host: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{host}.log"))).unwrap_or_default()
    }
}

/// `dataward approve` of a proposal that does not exist, sent to the engine serving
/// `data`: (exit code, stdout and stderr). A leader refuses it as not found (exit 1);
/// a standby refuses it saying who leads (exit 2, as with no engine).
fn approve(data: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "approve",
            "p-none",
            "--hash",
            "0",
            "--reason",
            "test",
            "--data-dir",
        ])
        .arg(data)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// `dataward doctor`'s line on the engine serving `data`.
fn doctor_engine_line(team: &Team, data: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["doctor", "--config"])
        .arg(&team.config)
        .arg("--data-dir")
        .arg(data)
        .env("TEST_STATE_URL", &team.url)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    said.lines()
        .find(|line| line.contains(" engine "))
        .unwrap_or_else(|| panic!("no engine line in:\n{said}"))
        .to_string()
}

/// Does the engine on `data` lead (answer a request itself)?
fn leads(data: &Path) -> bool {
    let socket = data.join("dataward.sock");
    std::os::unix::net::UnixStream::connect(socket).is_ok() && approve(data).0 == Some(1)
}

/// The chain's takeover records: (term, from_term).
fn takeovers(pg: &PgServer, data: &Path) -> (Vec<(u64, Option<u64>)>, chain::VerifyReport) {
    let source = Source {
        url: pg.url.clone(),
        named_by: "test".to_string(),
    };
    let state = PgState::open(&source, "payments", data, Duration::from_secs(5)).unwrap();
    let records = state.records_of_kind("takeover").unwrap();
    let terms = records
        .iter()
        .map(|r| {
            let payload: serde_json::Value = serde_json::from_str(&r.payload).unwrap();
            (
                payload["term"].as_u64().unwrap(),
                payload["from_term"].as_u64(),
            )
        })
        .collect();
    (terms, chain::verify_of(&state).unwrap())
}

fn kill(child: &mut Child, signal: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// Kills the leader `kills` times; after each, the standby leads, and the killed one
/// comes back as the next standby.
fn leaders_killed_again_and_again(kills: usize) {
    let Some(pg) = start_or_skip("serve_team") else {
        return;
    };
    let team = Team::new(&pg);
    let hosts = ["a", "b"];
    let mut engines = vec![team.serve(hosts[0])];
    let wait_for = |host: &str| {
        let deadline = Instant::now() + PATIENCE;
        while !leads(&team.data(host)) {
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
        let (terms, _) = takeovers(&pg, &team.data(hosts[leader]));
        let leading = terms.last().expect("the leader took over").0;
        let (code, said) = approve(&team.data(hosts[standby]));
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
        let line = doctor_engine_line(&team, &team.data(hosts[standby]));
        assert!(
            line.starts_with('✓') && line.contains(&expected),
            "a standby is fine to doctor: {line}"
        );
        kill(&mut engines[leader], libc::SIGKILL);
        engines[leader].wait().unwrap();
        wait_for(hosts[standby]);
        // The same request on the same socket now reaches the new leader.
        let (code, said) = approve(&team.data(hosts[standby]));
        assert_eq!(code, Some(1), "round {round}: {said}");
        assert!(!said.contains("standby"), "round {round}: {said}");
        let (terms, report) = takeovers(&pg, &team.data(hosts[standby]));
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
        kill(engine, libc::SIGKILL);
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
