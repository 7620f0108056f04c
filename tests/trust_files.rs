//! The files the engine's trust rests on, against a second account in the team's unix
//! group: the policy files (config, notes) at start and at every reload, the state
//! database deleted from under a running engine, the state files nobody else opens,
//! and time on the chain that never steps back.

mod any_user;
#[path = "support/binary.rs"]
mod binary;

use binary::{dataward, text, Engine};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use dataward::engine::api::{ClientMessage, PROTOCOL_VERSION};
use dataward::engine::wire;
use serde_json::Value;

use any_user::{as_user, with_team as team};

/// A shell command run as `user`.
fn sh_as(user: &str, script: &str) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", user, "--", "sh", "-c", script])
        .current_dir("/")
        .output()
        .unwrap()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chgrp(path: &Path, group: &str) {
    let out = Command::new("chgrp").arg(group).arg(path).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// The demo's estate, played to its end, with the team's policy beside its own: alice
/// owns the domain, the group reaches the socket, accounts the policy does not name
/// watch read-only. Returns the estate folder.
fn team_estate(dir: &Path) -> PathBuf {
    chmod(dir, 0o755);
    let demo = dir.join("demo");
    let mut engine = start_demo(&demo, "1000000");
    assert!(engine.0.wait().unwrap().success());
    // The team can reach the estate (the demo keeps its own folder private).
    chmod(&demo, 0o755);
    let estate = demo.join("estate");
    let mut policy = std::fs::read_to_string(estate.join("dataward.toml")).unwrap();
    policy.push_str(
        "\n[people.dw-alice]\nname = \"Alice\"\nroles = [\"analytics-owner\"]\n\n\
         [serve]\ngroup = \"dw-team\"\nobservers = true\n",
    );
    std::fs::write(estate.join("team.toml"), policy).unwrap();
    chmod(&estate.join("team.toml"), 0o600);
    estate
}

/// `dataward serve` on the estate's team policy, its log in `log`.
fn serve(estate: &Path, data: &Path, log: &Path) -> Engine {
    let server = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(estate.join("team.toml"))
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut server = Engine(server);
    for _ in 0..800 {
        if UnixStream::connect(data.join("dataward.sock")).is_ok() {
            return server;
        }
        if let Some(status) = server.0.try_wait().unwrap() {
            panic!(
                "serve exited {status}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("serve never listened");
}

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
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Engine(child)
}

/// `dataward serve` expected to refuse to start: its output once it exits (a bound, not
/// a timing: one that is still serving after it has started is a failure).
fn refused_start(config: &Path, data: &Path) -> std::process::Output {
    let mut child = Engine(
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--config"])
            .arg(config)
            .arg("--data-dir")
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    for _ in 0..1200 {
        if child.0.try_wait().unwrap().is_some() {
            let child = std::mem::replace(&mut child.0, Command::new("true").spawn().unwrap());
            return child.wait_with_output().unwrap();
        }
        if UnixStream::connect(data.join("dataward.sock")).is_ok() {
            panic!("serve started with {}", config.display());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("serve neither started nor refused");
}

/// The engine's snapshot as a console receives it, read-only, as JSON.
fn snapshot(data: &Path) -> Value {
    let stream = UnixStream::connect(data.join("dataward.sock")).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    wire::send(
        &mut writer,
        &ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            read_only: true,
        },
    )
    .unwrap();
    let mut reader = std::io::BufReader::new(stream);
    loop {
        let message: Value = wire::receive(&mut reader, 64 << 20).unwrap();
        if message["type"] == "snapshot" {
            return message["snapshot"].clone();
        }
    }
}

/// The chain's records of `kind`, read as the test's root.
fn records(data: &Path, kind: &str) -> Vec<Value> {
    let conn = rusqlite::Connection::open_with_flags(
        data.join("dataward.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = conn
        .prepare("SELECT payload FROM chain WHERE kind = ?1 ORDER BY seq")
        .unwrap();
    let rows = stmt
        .query_map([kind], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|p| serde_json::from_str(&p.unwrap()).unwrap())
        .collect();
    rows
}

#[test]
fn a_config_a_group_member_swapped_in_is_refused_and_the_running_policy_stays() {
    if !team("a_config_a_group_member_swapped_in_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let estate = team_estate(dir.path());
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let _server = serve(&estate, &data, &log);
    let before = as_user("dw-obs", &["run", "INC-0001"], &data);
    assert!(
        text(&before).contains("refused (read_only)"),
        "{}",
        text(&before)
    );

    // Later the config's folder is opened to the group (to let the team edit), and a
    // group member puts a policy of his own in place: one naming him the owner.
    chgrp(&estate, "dw-team");
    chmod(&estate, 0o770);
    let mut hostile = std::fs::read_to_string(estate.join("team.toml")).unwrap();
    hostile.push_str("\n[people.dw-obs]\nname = \"Obs\"\nroles = [\"analytics-owner\"]\n");
    let planted = dir.path().join("hostile.toml");
    std::fs::write(&planted, hostile).unwrap();
    chmod(&planted, 0o644);
    let swap = sh_as(
        "dw-obs",
        &format!(
            "cp {} {e}/.next.toml && mv -f {e}/.next.toml {e}/team.toml",
            planted.display(),
            e = estate.display()
        ),
    );
    assert!(swap.status.success(), "{}", text(&swap));

    // Within a few turns the engine looks at it, refuses it, and says so on the chain.
    let mut refused = Vec::new();
    for _ in 0..400 {
        let attempt = as_user("dw-obs", &["run", "INC-0001"], &data);
        assert!(
            !text(&attempt).contains("refused (not_found)"),
            "the swapped-in policy was taken: dw-obs may decide: {}",
            text(&attempt)
        );
        refused = records(&data, "policy_refused");
        if !refused.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(refused.len(), 1, "no refusal on the chain");
    let reason = refused[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("team.toml") && reason.contains("owned by uid"),
        "{reason}"
    );
    // The running policy stays: he still only watches, and alice still decides.
    let after = as_user("dw-obs", &["run", "INC-0001"], &data);
    assert!(
        text(&after).contains("refused (read_only)"),
        "{}",
        text(&after)
    );
    let alice = as_user("dw-alice", &["run", "INC-0001"], &data);
    assert!(
        text(&alice).contains("refused (not_found)"),
        "{}",
        text(&alice)
    );
    // Every console's top line says it, and so does the log.
    let top = snapshot(&data);
    let alarm = top["trust_alarm"].as_str().unwrap_or_default();
    assert!(alarm.contains("POLICY CHANGE REFUSED"), "{top}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("policy change refused"), "{logged}");
    // And a restart is held to the same check.
    drop(_server);
    let restart = refused_start(&estate.join("team.toml"), &data);
    assert!(!restart.status.success(), "{}", text(&restart));
    assert!(text(&restart).contains("team.toml"), "{}", text(&restart));
}

#[test]
fn serve_refuses_notes_another_account_owns_or_its_group_can_write() {
    if !team("serve_refuses_notes_another_account_owns") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let estate = team_estate(dir.path());
    let notes = estate.join("notes.toml");
    let start = |data: &str| refused_start(&estate.join("team.toml"), &dir.path().join(data));
    let out = Command::new("chown")
        .arg("dw-obs")
        .arg(&notes)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let refused = start("data1");
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains("notes.toml") && text(&refused).contains("owned by uid"),
        "{}",
        text(&refused)
    );
    let out = Command::new("chown")
        .arg("root")
        .arg(&notes)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    chgrp(&notes, "dw-team");
    chmod(&notes, 0o664);
    let refused = start("data2");
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains("notes.toml") && text(&refused).contains("writable by its group"),
        "{}",
        text(&refused)
    );
}

/// Polls `dataward show INC-0001 --json` until the incident and its proposals are there.
fn wait_for_incident(dir: &Path) -> Value {
    for _ in 0..1200 {
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

fn proposal(incident: &Value, kind: &str) -> Value {
    incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind)
        .unwrap()
        .clone()
}

#[test]
fn changed_notes_give_a_pending_proposal_its_new_owner_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Slow enough that the story is still running (and the hold undecided) when the
    // notes change: it ends some fifty story minutes after the incident opens.
    let _engine = start_demo(d, "60");
    let incident = wait_for_incident(d);
    let hold = proposal(&incident, "hold");
    assert_eq!(hold["owner"], "analytics-owner", "{hold}");
    // The team hands the hourly job (the hold's target, a job the notes describe) to an
    // owner of its own.
    let notes = d.join("estate/notes.toml");
    let written = std::fs::read_to_string(&notes).unwrap();
    let handed = written.replace(
        "owner = \"analytics-owner\"\nschedule",
        "owner = \"jobs-owner\"\nschedule",
    );
    assert_ne!(handed, written);
    std::fs::write(&notes, handed).unwrap();
    let mut now = hold.clone();
    for _ in 0..400 {
        let out = dataward(&["show", "INC-0001", "--json"], d);
        if out.status.success() {
            now = proposal(&serde_json::from_slice(&out.stdout).unwrap(), "hold");
            if now["owner"] == "jobs-owner" {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        now["owner"], "jobs-owner",
        "the notes were not reloaded: {now}"
    );
    assert_ne!(now["content_hash"], hold["content_hash"]);
    // An approval of what was shown before (the old owner) no longer matches.
    let stale = dataward(
        &[
            "approve",
            hold["id"].as_str().unwrap(),
            "--hash",
            hold["content_hash"].as_str().unwrap(),
        ],
        d,
    );
    assert!(
        text(&stale).contains("refused (stale_hash)"),
        "{}",
        text(&stale)
    );
    // The chain says so, and the receipt names the new owner once.
    let receipt = dataward(&["receipt", "INC-0001", "--json"], d);
    assert!(receipt.status.success(), "{}", text(&receipt));
    let receipt: Value = serde_json::from_slice(&receipt.stdout).unwrap();
    let entries: Vec<&Value> = receipt["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["proposal"] == hold["id"])
        .collect();
    assert_eq!(entries.len(), 1, "{receipt}");
    assert_eq!(entries[0]["owner"], "jobs-owner");
    let verify = dataward(&["verify"], d);
    assert!(verify.status.success(), "{}", text(&verify));
}

#[test]
fn a_state_database_deleted_under_the_engine_stops_it_accepting_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _engine = start_demo(d, "120");
    let incident = wait_for_incident(d);
    let hold = proposal(&incident, "hold");
    std::fs::remove_file(d.join("dataward.db")).unwrap();
    let approve = dataward(
        &[
            "approve",
            hold["id"].as_str().unwrap(),
            "--hash",
            hold["content_hash"].as_str().unwrap(),
        ],
        d,
    );
    assert_eq!(
        approve.status.code(),
        Some(1),
        "a decision was accepted into a deleted database: {}",
        text(&approve)
    );
    assert!(
        text(&approve).contains("dataward.db") && text(&approve).contains("deleted"),
        "{}",
        text(&approve)
    );
    let top = snapshot(d);
    let alarm = top["trust_alarm"].as_str().unwrap_or_default();
    assert!(alarm.contains("dataward.db"), "{top}");
}

#[test]
fn verify_names_the_first_record_whose_time_steps_back() {
    use dataward::chain;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dataward(&["stop", "--reason", "maintenance window"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    {
        let conn = dataward::store::open(&data.join("dataward.db")).unwrap();
        let head = chain::head(&conn).unwrap().unwrap();
        let log_id: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'log_id'", [], |r| {
                r.get(0)
            })
            .unwrap();
        let mut prev = head.hash;
        // #2 recorded at noon in 2099, #3 an hour before it: the clock was set back
        // (and the record appended by something that does not hold time forward).
        for (seq, at) in [
            (2, "2099-12-02T12:00:00.000000Z"),
            (3, "2099-12-02T11:00:00.000000Z"),
        ] {
            let mut record = chain::Record {
                seq,
                prev_hash: prev.clone(),
                log_id: log_id.clone(),
                schema_version: chain::SCHEMA_VERSION,
                // The event's time to the second, as the engine writes it.
                at: format!("{}Z", &at[..19]).parse().unwrap(),
                kind: "note".to_string(),
                actor: "{}".to_string(),
                payload: "{}".to_string(),
                recorded_at: at.to_string(),
                clock: at.to_string(),
                hash: String::new(),
            };
            record.hash = chain::hash_record(&record);
            chain::insert(&conn, &record).unwrap();
            prev = record.hash;
        }
        chain::save_checkpoint(&conn).unwrap();
    }
    let verify = dataward(&["verify"], &data);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    assert!(
        text(&verify).contains("BROKEN at record #3") && text(&verify).contains("steps back"),
        "{}",
        text(&verify)
    );
}

#[test]
fn in_group_mode_the_state_files_are_the_engines_alone_and_the_group_reads_through_the_socket() {
    if !team("in_group_mode_the_state_files_are_the_engines_alone") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let estate = team_estate(dir.path());
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let _server = serve(&estate, &data, &log);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // The group reaches the socket through the data directory, and nothing else in it.
    assert_eq!(mode(&data), 0o750);
    assert_eq!(mode(&data.join("dataward.sock")), 0o660);
    for name in [
        "dataward.db",
        "dataward.db-wal",
        "dataward.db-shm",
        "dataward.db.checkpoint",
    ] {
        let path = data.join(name);
        assert!(path.exists(), "{name}");
        assert_eq!(mode(&path), 0o600, "{name} is {:o}", mode(&path));
    }
    // A group member reads what the engine serves.
    let listed = as_user("dw-obs", &["incidents"], &data);
    assert!(listed.status.success(), "{}", text(&listed));
    let shown = as_user("dw-obs", &["show", "INC-0001"], &data);
    assert!(
        text(&shown).contains("no incident INC-0001"),
        "{}",
        text(&shown)
    );
    let verified = as_user("dw-obs", &["verify"], &data);
    assert_eq!(verified.status.code(), Some(0), "{}", text(&verified));
    assert!(
        String::from_utf8_lossy(&verified.stdout).starts_with("chain ok: "),
        "{}",
        text(&verified)
    );
    let stop = as_user("dw-obs", &["stop"], &data);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop));
    assert!(text(&stop).contains("no org-wide stop"), "{}", text(&stop));
    let receipt = as_user("dw-obs", &["receipt", "INC-0001"], &data);
    assert_eq!(receipt.status.code(), Some(2), "{}", text(&receipt));
    assert!(
        text(&receipt).contains("no incident INC-0001"),
        "{}",
        text(&receipt)
    );
}
