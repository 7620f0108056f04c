//! Team state on PostgreSQL: engines on one throwaway server, each with a data directory
//! of its own as if on its own host. One leads and the others stand by; a leader killed
//! with -9 is replaced under a higher term; a leader stopped past its lease is replaced,
//! and once it runs again every write it tries is refused by term, so the chain keeps
//! one writer; a database restored from an older backup is refused against the host's
//! checkpoint. The contenders are this test binary run again as a child process
//! (`contender_child`), driven over stdin and read on stdout.
//!
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1. Nothing waits on a clock: each condition is polled for with a
//! generous limit.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dataward::chain;
use dataward::store::chain::ChainStore;
use dataward::store::postgres::{Contender, PgState, Role, Source};
use support::pg::{start_or_skip, PgServer};

/// How long any awaited condition may take before the test fails: generous, since the
/// machine may be busy; nothing here asserts how quick anything was.
const PATIENCE: Duration = Duration::from_secs(90);

const CHILD_ENV: &str = "DATAWARD_TEST_CONTENDER";

fn source(pg: &PgServer) -> Source {
    Source {
        url: pg.url.clone(),
        named_by: "test: [state] url_env (TEST_STATE_URL)".to_string(),
    }
}

fn noon() -> dataward::clock::Timestamp {
    "2026-11-24T12:00:00Z".parse().unwrap()
}

/// One engine's share of the team state, as the child process runs it: a contender
/// stepping on a thread of its own (renewing while it leads, polling while it stands
/// by) and a state session on the main thread, answering commands read from stdin:
/// `lead` (wait to lead, print `leader TERM`) and `append` (append a record through the
/// fence, print `appended SEQ` or `refused WHY`). The state keeps the term it won: a
/// deposed leader that wakes up writes with it, and only the fence can stop it.
#[test]
fn contender_child() {
    let Ok(holder) = std::env::var(CHILD_ENV) else {
        return; // run directly by the harness: nothing to do
    };
    let url = std::env::var("TEST_STATE_URL").unwrap();
    let data_dir = PathBuf::from(std::env::var("TEST_DATA_DIR").unwrap());
    let lease_ms: u64 = std::env::var("TEST_LEASE_MS").unwrap().parse().unwrap();
    let lease_for = Duration::from_millis(lease_ms);
    let source = Source {
        url,
        named_by: "child".to_string(),
    };
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "child: {line}").unwrap();
        out.flush().unwrap();
    };
    let state = PgState::open(&source, "payments", &data_dir, lease_for).unwrap();
    let term = Arc::new(Mutex::new(None::<u64>));
    {
        let term = term.clone();
        let holder = holder.clone();
        let host = format!("{holder}-host");
        let mut contender = Contender::new(source, "payments", &holder, &host, lease_for);
        std::thread::spawn(move || {
            let mut said_standby = false;
            loop {
                match contender.step() {
                    Ok(Role::Leader { term: t }) => *term.lock().unwrap() = Some(t),
                    Ok(Role::Standby { lease }) if !said_standby => {
                        if let Some(lease) = lease {
                            say(format!("standby {}", lease.term));
                            said_standby = true;
                        }
                    }
                    Ok(Role::Standby { .. }) => {}
                    Err(e) => eprintln!("child {holder}: step: {e:#}"),
                }
                std::thread::sleep(lease_for / 4);
            }
        });
    }
    for command in std::io::stdin().lock().lines() {
        match command.unwrap().as_str() {
            "lead" => loop {
                if let Some(t) = *term.lock().unwrap() {
                    state.set_term(Some(t));
                    say(format!("leader {t}"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            },
            "append" => {
                let appended = state.transact(|s| {
                    chain::append_to(
                        s,
                        noon(),
                        "test",
                        "{}",
                        &serde_json::json!({ "by": holder }),
                    )
                });
                match appended {
                    Ok(record) => say(format!("appended {}", record.seq)),
                    Err(e) => say(format!("refused {}", format!("{e:#}").replace('\n', " "))),
                }
            }
            other => panic!("unknown command {other:?}"),
        }
    }
}

/// A contender child process: what it prints comes in on a channel, line by line.
struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    data_dir: PathBuf,
}

impl Engine {
    fn start(pg: &PgServer, holder: &str, root: &Path, lease: Duration) -> Engine {
        let data_dir = root.join(holder);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "contender_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, holder)
            .env("TEST_STATE_URL", &pg.url)
            .env("TEST_DATA_DIR", &data_dir)
            .env("TEST_LEASE_MS", lease.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                // The harness may have begun the line ("test contender_child ... ").
                if let Some((_, said)) = line.split_once("child: ") {
                    if tx.send(said.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        Engine {
            child,
            stdin,
            lines,
            data_dir,
        }
    }

    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the child prints that starts with `prefix`; what follows it.
    fn expect(&self, prefix: &str) -> String {
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_string();
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {prefix:?} within {PATIENCE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the child ended before {prefix:?}"),
            }
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Not waited for yet: it may still be running (a test that failed midway).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The state as a host with `data_dir` opens it to read and verify.
fn verify(pg: &PgServer, data_dir: &Path) -> chain::VerifyReport {
    let state = PgState::open(&source(pg), "payments", data_dir, Duration::from_secs(5)).unwrap();
    chain::verify_of(&state).unwrap()
}

#[test]
fn a_leader_killed_with_9_is_replaced_by_the_standby_under_a_higher_term() {
    let Some(pg) = start_or_skip("a_leader_killed_with_9_is_replaced") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lease = Duration::from_secs(5);
    let mut first = Engine::start(&pg, "first", root.path(), lease);
    first.send("lead");
    assert_eq!(first.expect("leader"), "1");
    first.send("append");
    assert_eq!(first.expect("appended"), "1");

    let mut second = Engine::start(&pg, "second", root.path(), lease);
    second.send("lead");
    // It has seen the first engine's lease and stands by under it.
    assert_eq!(second.expect("standby"), "1");

    first.signal(libc::SIGKILL);
    assert_eq!(second.expect("leader"), "2");
    second.send("append");
    assert_eq!(second.expect("appended"), "2");

    let report = verify(&pg, &second.data_dir);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 2);
}

#[test]
fn a_leader_stopped_past_its_lease_is_deposed_and_its_writes_are_refused_by_term() {
    let Some(pg) = start_or_skip("a_leader_stopped_past_its_lease_is_deposed") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lease = Duration::from_secs(3);
    let mut first = Engine::start(&pg, "first", root.path(), lease);
    first.send("lead");
    assert_eq!(first.expect("leader"), "1");
    first.send("append");
    assert_eq!(first.expect("appended"), "1");
    let mut second = Engine::start(&pg, "second", root.path(), lease);
    second.send("lead");
    assert_eq!(second.expect("standby"), "1");

    // Stopped, not dead: its session and its lock live on until its lease runs out and
    // the standby ends that session.
    first.signal(libc::SIGSTOP);
    assert_eq!(second.expect("leader"), "2");
    second.send("append");
    assert_eq!(second.expect("appended"), "2");

    first.signal(libc::SIGCONT);
    first.send("append");
    let refused = first.expect("refused");
    assert!(
        refused.contains("deposed: term 2 now leads (host second-host)"),
        "{refused}"
    );
    second.send("append");
    assert_eq!(second.expect("appended"), "3");

    let report = verify(&pg, &second.data_dir);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 3);
    let state = PgState::open(&source(&pg), "payments", &second.data_dir, lease).unwrap();
    let writers: Vec<String> = state
        .records()
        .unwrap()
        .iter()
        .map(|r| r.payload.clone())
        .collect();
    assert_eq!(
        writers,
        [
            r#"{"by":"first"}"#,
            r#"{"by":"second"}"#,
            r#"{"by":"second"}"#
        ],
        "after the takeover only the new leader wrote"
    );
}

/// An engine of this test process leading with `data_dir` as its host's data directory.
fn lead_here(pg: &PgServer, holder: &str, data_dir: &Path) -> anyhow::Result<(Contender, PgState)> {
    let lease = Duration::from_secs(30);
    let state = PgState::open(&source(pg), "payments", data_dir, lease)?;
    let mut contender = Contender::new(source(pg), "payments", holder, holder, lease);
    let Role::Leader { term } = contender.step()? else {
        panic!("{holder} should lead: nobody else runs");
    };
    state.set_term(Some(term));
    Ok((contender, state))
}

fn append(state: &PgState, n: u32) -> chain::Record {
    state
        .transact(|s| chain::append_to(s, noon(), "test", "{}", &serde_json::json!({ "n": n })))
        .unwrap()
}

#[test]
fn a_restored_older_database_is_refused_against_the_hosts_checkpoint() {
    let Some(pg) = start_or_skip("a_restored_older_database_is_refused") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let host = root.path().join("host");
    {
        let (_contender, state) = lead_here(&pg, "host", &host).unwrap();
        for n in 1..=3 {
            append(&state, n);
        }
    }
    // The database as an older backup left it: the last two records never happened.
    pg.execute(
        "ALTER TABLE chain DISABLE TRIGGER USER; DELETE FROM chain WHERE seq > 1;
         ALTER TABLE chain ENABLE TRIGGER USER;",
    );
    let err = format!("{:#}", lead_here(&pg, "host", &host).err().unwrap());
    assert!(
        err.contains(
            "the chain holds 1 records but its checkpoint recorded 3: the tail was cut off"
        ),
        "{err}"
    );
    assert!(err.contains("restored from an older backup"), "{err}");

    // Another host, which never saw those records, carries on from the restored chain
    // and writes a different record 2 and 3: this host refuses that chain too.
    {
        let (_contender, other) = lead_here(&pg, "other", &root.path().join("other")).unwrap();
        append(&other, 20);
        append(&other, 30);
    }
    let err = format!("{:#}", lead_here(&pg, "host", &host).err().unwrap());
    assert!(
        err.contains("record #3 differs from the checkpoint: the chain diverged"),
        "{err}"
    );

    // A host seeing the chain for the first time takes nothing on trust: a chain that
    // does not verify is not its first checkpoint.
    pg.execute(
        "ALTER TABLE chain DISABLE TRIGGER USER;
         UPDATE chain SET payload = '{\"n\":21}' WHERE seq = 2;
         ALTER TABLE chain ENABLE TRIGGER USER;",
    );
    let newcomer = root.path().join("newcomer");
    let err = format!("{:#}", lead_here(&pg, "newcomer", &newcomer).err().unwrap());
    assert!(
        err.contains("does not verify at record #2: hash does not match"),
        "{err}"
    );
    assert!(!dataward::store::postgres::checkpoint_path(&newcomer).exists());
}

#[test]
fn a_state_url_that_is_unset_unreachable_or_refused_is_named_without_its_password() {
    let Some(pg) = start_or_skip("a_state_url_that_is_unset") else {
        return;
    };
    let config_text = "[state]\nurl_env = \"DW_TEST_PG_STATE\"\nteam = \"payments\"\n";
    let config = dataward::config::Config::parse(config_text, Path::new("/etc/dw.toml")).unwrap();
    let state = config.state.as_ref().unwrap();
    let open = || {
        dataward::store::postgres::source(state, &config.origin).and_then(|source| {
            PgState::open(
                &source,
                "payments",
                &tempfile::tempdir().unwrap().keep(),
                Duration::from_secs(5),
            )
        })
    };
    let err = format!("{:#}", open().err().unwrap());
    assert!(
        err.starts_with(
            "/etc/dw.toml: [state] url_env: environment variable DW_TEST_PG_STATE is not set"
        ),
        "{err}"
    );
    // Nothing listens on this port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // SAFETY: no other test reads or sets DW_TEST_PG_STATE.
    unsafe {
        std::env::set_var(
            "DW_TEST_PG_STATE",
            format!("postgresql://postgres:s3cret@127.0.0.1:{closed}/postgres"),
        )
    };
    let err = format!("{:#}", open().err().unwrap());
    assert!(
        err.starts_with(
            "/etc/dw.toml: [state] url_env (DW_TEST_PG_STATE): cannot reach the state database"
        ),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
    // A database that is not there, on a server that is.
    let missing = format!(
        "postgresql://postgres:s3cret@127.0.0.1:{}/no_such_db",
        pg.port
    );
    unsafe { std::env::set_var("DW_TEST_PG_STATE", &missing) };
    let err = format!("{:#}", open().err().unwrap());
    assert!(err.contains("no_such_db"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    unsafe { std::env::set_var("DW_TEST_PG_STATE", &pg.url) };
    open().unwrap();
}

#[test]
fn doctor_says_who_leads_the_team_state() {
    let Some(pg) = start_or_skip("doctor_says_who_leads_the_team_state") else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let config = root.path().join("config.toml");
    std::fs::write(
        &config,
        "[state]\nurl_env = \"DW_DOCTOR_STATE\"\nteam = \"payments\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let data = root.path().join("data");
    let doctor = || {
        let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["--data-dir", data.to_str().unwrap(), "doctor", "--config"])
            .arg(&config)
            .env("DW_DOCTOR_STATE", &pg.url)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let line = |report: &str, what: &str| -> String {
        report
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what} line in:\n{report}"))
            .to_string()
    };
    let report = doctor();
    assert!(
        line(&report, "state database").contains("reachable: PostgreSQL 15"),
        "{report}"
    );
    assert!(
        line(&report, "state lease").contains("no engine of the team has led yet"),
        "{report}"
    );

    let (contender, _state) = lead_here(&pg, "db-host-1", &root.path().join("engine")).unwrap();
    let report = doctor();
    assert!(
        line(&report, "state database").contains(&format!(
            "schema version {}",
            dataward::store::postgres::schema::latest()
        )),
        "{report}"
    );
    assert!(
        line(&report, "state lock").contains("held by server session"),
        "{report}"
    );
    let lease = line(&report, "state lease");
    assert!(lease.contains("host db-host-1 leads, term 1"), "{report}");
    assert!(lease.starts_with('✓'), "{report}");

    drop(contender);
    let report = doctor();
    let lease = line(&report, "state lease");
    assert!(
        lease.contains("nobody leads: host db-host-1 led term 1"),
        "{report}"
    );
    assert!(
        lease.contains("the next engine to start takes term 2"),
        "{report}"
    );
    assert!(line(&report, "state lock").contains("free"), "{report}");
}

#[test]
fn a_restarted_state_database_is_waited_for_and_the_leader_resumes_losing_nothing() {
    let Some(pg) = start_or_skip("a_restarted_state_database_is_waited_for") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let host = root.path().join("host");
    let (mut contender, state) = lead_here(&pg, "host", &host).unwrap();
    append(&state, 1);
    append(&state, 2);

    pg.stop();
    let down = format!(
        "{:#}",
        state
            .transact(|s| chain::append_to(s, noon(), "test", "{}", &serde_json::json!({})))
            .unwrap_err()
    );
    assert!(down.contains("cannot reach the state database"), "{down}");
    assert!(
        contender.step().is_err(),
        "nobody leads while the database is down"
    );

    pg.resume();
    // The lock went with the old session: the engine takes it again, under the next term.
    let started = std::time::Instant::now();
    let term = loop {
        if let Ok(Role::Leader { term }) = contender.step() {
            break term;
        }
        assert!(started.elapsed() < PATIENCE, "the engine never led again");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(term, 2);
    state.set_term(Some(term));
    assert_eq!(append(&state, 3).seq, 3);

    let report = verify(&pg, &host);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 3);
}

impl Engine {
    /// What follows `prefix` in a line the child printed already, if it printed one;
    /// other lines are let go.
    fn said(&self, prefix: &str) -> Option<String> {
        while let Ok(line) = self.lines.try_recv() {
            if let Some(rest) = line.strip_prefix(prefix) {
                return Some(rest.trim().to_string());
            }
        }
        None
    }
}

/// The leader killed with -9 again and again, each time while an append is on its way:
/// each time one of the others leads under a higher term, every append the dead leader
/// acknowledged is on the chain, and the chain verifies. The killed host's engine is
/// started again on the same data directory (its checkpoint kept) and stands by.
#[test]
fn the_leader_killed_again_and_again_loses_no_acknowledged_record() {
    let Some(pg) = start_or_skip("the_leader_killed_again_and_again") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lease = Duration::from_secs(5);
    let hosts = ["a", "b", "c"];
    let mut engines: Vec<Engine> = hosts
        .iter()
        .map(|host| {
            let mut engine = Engine::start(&pg, host, root.path(), lease);
            engine.send("lead");
            engine
        })
        .collect();
    let mut acknowledged: Vec<(u64, &str)> = Vec::new();
    let mut last_term = 0;
    for _round in 0..6 {
        let started = std::time::Instant::now();
        let (leader, term) = loop {
            if let Some((i, term)) = engines
                .iter()
                .enumerate()
                .find_map(|(i, e)| e.said("leader").map(|t| (i, t)))
            {
                break (i, term.parse::<u64>().unwrap());
            }
            assert!(started.elapsed() < PATIENCE, "nobody led again");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(term > last_term, "term {term} after {last_term}");
        last_term = term;
        for _ in 0..3 {
            engines[leader].send("append");
            let seq = engines[leader].expect("appended").parse().unwrap();
            acknowledged.push((seq, hosts[leader]));
        }
        // Killed with an append on its way: it may have committed or not, never half.
        engines[leader].send("append");
        engines[leader].signal(libc::SIGKILL);
        let _ = engines[leader].child.wait();
        let mut again = Engine::start(&pg, hosts[leader], root.path(), lease);
        again.send("lead");
        engines[leader] = again;
    }

    let report = verify(&pg, &root.path().join("a"));
    assert!(report.ok, "{report:?}");
    let state = PgState::open(&source(&pg), "payments", &root.path().join("b"), lease).unwrap();
    let records = state.records().unwrap();
    for (seq, host) in &acknowledged {
        let record = &records[*seq as usize - 1];
        assert_eq!(
            record.payload,
            format!(r#"{{"by":"{host}"}}"#),
            "record #{seq}"
        );
    }
    assert!(records.len() >= acknowledged.len());
    assert!(records.len() <= acknowledged.len() + 6);
}
