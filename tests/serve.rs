//! One engine, several clients: the CLI's decisions against a running engine, and
//! clients that misbehave affecting nobody else. The engine here is the headless demo,
//! which serves its socket like `dataward serve` and leaves the decisions to people.

mod any_user;
#[path = "support/binary.rs"]
mod binary;

use binary::{dataward, text, Engine};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use dataward::engine::api::PROTOCOL_VERSION;
use serde_json::Value;

fn start_demo(dir: &Path, speed: &str) -> Engine {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "demo",
            "ticketing",
            "--headless",
            "--json",
            "--speed",
            speed,
        ])
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Engine(child)
}

/// Polls `dataward show INC-0001 --json` until the incident and its proposals are there.
fn wait_for_incident(dir: &Path) -> Value {
    for _ in 0..600 {
        let out = dataward(&["show", "INC-0001", "--json"], dir);
        if out.status.success() {
            let incident: Value = serde_json::from_slice(&out.stdout).unwrap();
            if incident["proposals"]
                .as_array()
                .is_some_and(|p| p.len() == 3)
            {
                return incident;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no incident with its proposals");
}

fn proposal<'a>(incident: &'a Value, kind: &str) -> (&'a str, &'a str) {
    let p = incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind)
        .unwrap();
    (
        p["id"].as_str().unwrap(),
        p["content_hash"].as_str().unwrap(),
    )
}

#[test]
fn decisions_from_the_command_line_tell_the_whole_story() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut engine = start_demo(d, "600");
    let incident = wait_for_incident(d);
    let (hold, hold_hash) = proposal(&incident, "hold");
    let (diff, diff_hash) = proposal(&incident, "diff");
    let (note, _) = proposal(&incident, "note");

    // A hash that is not what is shown now is refused, and says so.
    let stale = dataward(&["approve", diff, "--hash", "0123abcd"], d);
    assert_eq!(stale.status.code(), Some(1), "{}", text(&stale));
    assert!(
        text(&stale).contains("refused (stale_hash)"),
        "{}",
        text(&stale)
    );

    let approved = dataward(
        &["approve", hold, "--hash", hold_hash, "--reason", "refill"],
        d,
    );
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
    assert!(text(&approved).contains(&format!("{hold} approved (chain #")));
    // The second decision on the same proposal is told who came first, and where.
    let again = dataward(&["approve", hold, "--hash", hold_hash], d);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again).contains("refused (already_decided)")
            && text(&again).contains("already approved by")
            && text(&again).contains("(chain #"),
        "{}",
        text(&again)
    );
    let diffed = dataward(&["approve", diff, "--hash", diff_hash], d);
    assert_eq!(diffed.status.code(), Some(0), "{}", text(&diffed));
    let forwarded = dataward(&["forward", note], d);
    assert_eq!(forwarded.status.code(), Some(0), "{}", text(&forwarded));
    // --hash is required: a decision is bound to what the person read.
    let unbound = dataward(&["approve", diff], d);
    assert_eq!(unbound.status.code(), Some(2));

    // The run is refused until the table is back, then queued once.
    let mut queued = false;
    for _ in 0..1200 {
        let run = dataward(&["run", "INC-0001"], d);
        if run.status.success() {
            assert!(
                text(&run).contains("run of job.hourly_dbt queued"),
                "{}",
                text(&run)
            );
            queued = true;
            break;
        }
        assert_eq!(run.status.code(), Some(1), "{}", text(&run));
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(queued, "the run was never accepted");
    let status = engine.0.wait().unwrap();
    assert!(status.success());
    let mut out = String::new();
    engine
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(out.contains(r#""event":"receipt""#), "{out}");
    // With no engine running, the listings read the state database.
    let listed = dataward(&["incidents", "--all"], d);
    assert!(listed.status.success(), "{}", text(&listed));
    assert!(
        text(&listed).contains("INC-0001   resolved"),
        "{}",
        text(&listed)
    );
    let open = dataward(&["incidents"], d);
    assert!(text(&open).contains("no open incidents"), "{}", text(&open));
    // And a decision with no engine is bad input, naming what to start.
    let nobody = dataward(&["forward", note], d);
    assert_eq!(nobody.status.code(), Some(2));
    assert!(
        text(&nobody).contains("no engine is running"),
        "{}",
        text(&nobody)
    );
}

fn raw_client(dir: &Path) -> UnixStream {
    UnixStream::connect(dir.join("dataward.sock")).unwrap()
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// Reads until the server closes the connection; true when it did.
fn closed_by_server(mut stream: UnixStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut sink = Vec::new();
    stream.read_to_end(&mut sink).is_ok()
}

#[test]
fn clients_that_misbehave_affect_nobody_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _engine = start_demo(d, "120");
    let incident = wait_for_incident(d);
    let (note, _) = proposal(&incident, "note");

    // Garbage instead of a hello.
    let mut garbage = raw_client(d);
    garbage.write_all(&frame(b"{not json")).unwrap();
    assert!(closed_by_server(garbage));
    // A length of 4 GiB: refused before anything is allocated.
    let mut huge = raw_client(d);
    huge.write_all(&u32::MAX.to_be_bytes()).unwrap();
    assert!(closed_by_server(huge));
    // A good hello, then an oversized request.
    let hello = format!(r#"{{"type":"hello","protocol":{PROTOCOL_VERSION}}}"#);
    let mut oversized = raw_client(d);
    oversized.write_all(&frame(hello.as_bytes())).unwrap();
    oversized.write_all(&(1u32 << 30).to_be_bytes()).unwrap();
    assert!(closed_by_server(oversized));
    // A request cut off mid-frame, and the client gone.
    let mut vanishing = raw_client(d);
    vanishing.write_all(&frame(hello.as_bytes())).unwrap();
    let request = frame(br#"{"type":"request","id":1,"command":{"command":"lift_stop"}}"#);
    vanishing.write_all(&request[..request.len() / 2]).unwrap();
    drop(vanishing);
    // A client of another protocol is told so.
    let mut other = raw_client(d);
    other
        .write_all(&frame(br#"{"type":"hello","protocol":99}"#))
        .unwrap();
    let mut answer = Vec::new();
    other.read_to_end(&mut answer).unwrap();
    assert!(String::from_utf8_lossy(&answer).contains(&format!(
        "speaks protocol {PROTOCOL_VERSION}, the client protocol 99"
    )));

    // Everyone else is served as before.
    let forwarded = dataward(&["forward", note], d);
    assert_eq!(forwarded.status.code(), Some(0), "{}", text(&forwarded));
    let shown = dataward(&["show", "INC-0001", "--json"], d);
    let incident: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let note_state = incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "note")
        .unwrap()["state"]
        .clone();
    assert_eq!(note_state, "forwarded");
}

#[test]
fn the_socket_is_the_owners_alone_and_a_loose_config_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _engine = start_demo(d, "120");
    wait_for_incident(d);
    let mode = std::fs::metadata(d.join("dataward.sock"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // `dataward serve` refuses a config others can write: whoever can write it can
    // give themselves the owner role.
    let config = dir.path().join("estate/dataward.toml");
    let loose = tempfile::tempdir().unwrap();
    let copy = loose.path().join("team.toml");
    std::fs::copy(&config, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--config"])
        .arg(&copy)
        .arg("--data-dir")
        .arg(loose.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("writable by"), "{}", text(&out));
}

#[test]
fn serve_finishes_on_sigterm_and_a_killed_engine_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The demo builds an estate and stops; its config then runs under `dataward serve`.
    {
        let mut engine = start_demo(d, "1000000");
        assert!(engine.0.wait().unwrap().success());
    }
    let config = d.join("estate/dataward.toml");
    let data = tempfile::tempdir().unwrap();
    let serve = || {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(data.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_for_socket = || {
        for _ in 0..400 {
            if UnixStream::connect(data.path().join("dataward.sock")).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("the engine never listened");
    };
    let mut first = serve();
    wait_for_socket();
    let stop = dataward(&["stop", "--reason", "drill"], data.path());
    assert_eq!(
        stop.status.code(),
        Some(1),
        "a stop is set: {}",
        text(&stop)
    );
    // SIGKILL: nothing to finish, nothing lost.
    first.kill().unwrap();
    first.wait().unwrap();
    let mut second = serve();
    wait_for_socket();
    let shown = dataward(&["stop"], data.path());
    assert!(
        text(&shown).contains("org-wide stop SET"),
        "{}",
        text(&shown)
    );
    // SIGTERM: the turn in hand is finished, the socket removed, exit 0.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(second.id() as i32, libc::SIGTERM) };
    let status = second.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!data.path().join("dataward.sock").exists());
    let verify = dataward(&["verify"], data.path());
    assert!(verify.status.success(), "{}", text(&verify));
}

use any_user::{as_user, with_team as team};

#[test]
fn the_team_reaches_the_engine_through_its_group_and_the_policy_decides_who_decides() {
    use std::os::unix::fs::PermissionsExt;
    if !team("the_team_reaches_the_engine") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo = dir.path().join("demo");
    {
        let mut engine = start_demo(&demo, "1000000");
        assert!(engine.0.wait().unwrap().success());
    }
    // The team's policy: alice owns the domain; the group reaches the socket; accounts
    // the policy does not name watch read-only.
    let estate = demo.join("estate");
    let mut policy = std::fs::read_to_string(estate.join("dataward.toml")).unwrap();
    policy.push_str(
        "\n[people.dw-alice]\nname = \"Alice\"\nroles = [\"analytics-owner\"]\n\n\
         [serve]\ngroup = \"dw-team\"\nobservers = true\n",
    );
    std::fs::write(estate.join("team.toml"), policy).unwrap();
    let data = dir.path().join("data");
    let server = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(estate.join("team.toml"))
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Engine(server);
    for _ in 0..400 {
        if UnixStream::connect(data.join("dataward.sock")).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o750);
    assert_eq!(mode(&data.join("dataward.sock")), 0o660);

    // Alice decides: her request reaches the policy (no such incident here).
    let alice = as_user("dw-alice", &["run", "INC-0001"], &data);
    assert_eq!(alice.status.code(), Some(1), "{}", text(&alice));
    assert!(
        text(&alice).contains("refused (not_found)"),
        "{}",
        text(&alice)
    );
    // A group member the policy does not name watches, and decides nothing.
    let watcher = as_user("dw-obs", &["run", "INC-0001"], &data);
    assert_eq!(watcher.status.code(), Some(1), "{}", text(&watcher));
    assert!(
        text(&watcher).contains("refused (read_only)"),
        "{}",
        text(&watcher)
    );
    let listed = as_user("dw-obs", &["incidents"], &data);
    assert!(listed.status.success(), "{}", text(&listed));
    // The policy is the server's, as it is now: named in it, the same account decides.
    let mut policy = std::fs::read_to_string(estate.join("team.toml")).unwrap();
    policy.push_str("\n[people.dw-obs]\nname = \"Obs\"\nroles = []\n");
    std::fs::write(estate.join("team.toml"), policy).unwrap();
    let named = as_user("dw-obs", &["run", "INC-0001"], &data);
    assert!(
        text(&named).contains("refused (not_found)"),
        "{}",
        text(&named)
    );
    // Someone outside the group cannot reach the socket at all.
    let outsider = as_user("dw-out", &["run", "INC-0001"], &data);
    assert_eq!(outsider.status.code(), Some(2), "{}", text(&outsider));
    assert!(
        text(&outsider).contains("ermission denied"),
        "{}",
        text(&outsider)
    );
}

/// The org stop's records in the chain, read without writing.
fn org_stops(dir: &Path) -> i64 {
    rusqlite::Connection::open_with_flags(
        dir.join("dataward.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap()
    .query_row(
        "SELECT count(*) FROM chain WHERE kind = 'org_stop'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// One writer to the state database: with no engine, `dataward stop` writes the stop
/// itself under the engine's lock; while an engine holds the data directory but does
/// not answer on its socket (as one starting up does), the stop is refused with a
/// clear message and nothing recorded, never written beside it.
#[test]
fn stop_without_an_engine_writes_under_the_engine_lock_and_never_beside_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = dataward(&["stop", "--reason", "drill"], d);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert!(
        text(&first).contains("no engine is serving"),
        "{}",
        text(&first)
    );
    assert_eq!(org_stops(d), 1);

    // Held as an engine holds it from its start, before its socket listens.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(d.join("engine.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let beside = binary::dataward_within(
        &[
            "stop",
            "--reason",
            "again",
            "--data-dir",
            d.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let said = text(&beside);
    assert_eq!(
        org_stops(d),
        1,
        "a stop was written beside an engine: {said}"
    );
    assert_eq!(beside.status.code(), Some(2), "{said}");
    assert!(
        said.contains("does not answer on its socket") && said.contains("nothing was recorded"),
        "{said}"
    );
    drop(lock);
}
