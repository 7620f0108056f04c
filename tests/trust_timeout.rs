//! Issue 26, item 3, through the binary: an approval refused because the orchestrator
//! timed out is withdrawn with its refusal. `dataward serve` runs the ticketing demo's
//! estate and state (played until its incident has proposals) with `[orchestrator]` of
//! kind airflow, pointed at the Airflow stand-in of tests/support/http.rs on
//! 127.0.0.1. The stand-in takes the pause (the DAG is paused at once) and answers
//! later than dataward's `timeout`: what a slow Airflow does.

mod any_user;
#[path = "support/binary.rs"]
mod binary;
#[path = "support/http.rs"]
mod http;
#[path = "support/state.rs"]
mod state_db;

use binary::{dataward, text, Engine};
use state_db::{decisions, pending_intents, proposal, state};

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use http::{Api, FakeApi, Recorded, AIRFLOW_USER};
use serde_json::Value;

const PASSWORD: &str = "af-timeout-Qm81xZ";
const PASSWORD_ENV: &str = "DW_TEST_AIRFLOW_TIMEOUT_PASSWORD";
const DAG: &str = "dw_hourly_dbt";

use any_user::{as_user, team};

fn needs_root(test: &str) -> bool {
    any_user::needs_root(test, "a second unix user")
}

/// Plays the headless ticketing demo on `dir` until INC-0001 has its three proposals,
/// then stops it (SIGTERM); returns the incident as `show` gave it.
fn demo_with_pending_proposals(dir: &Path) -> Value {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "demo",
            "ticketing",
            "--headless",
            "--json",
            "--speed",
            "600",
        ])
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut playing = Engine(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let incident = loop {
        assert!(Instant::now() < deadline, "no incident with its proposals");
        let out = dataward(&["show", "INC-0001", "--json"], dir);
        if out.status.success() {
            let incident: Value = serde_json::from_slice(&out.stdout).unwrap();
            if incident["proposals"]
                .as_array()
                .is_some_and(|p| p.len() == 3)
            {
                break incident;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(playing.0.id() as i32, libc::SIGTERM) };
    assert!(playing.0.wait().unwrap().success());
    incident
}

/// The demo estate's config with its orchestrator swapped for Airflow at `base_url`,
/// `job` mapped to [`DAG`], a one-second limit on each call, requests that do not
/// expire, and a second owner, dw-alice, reaching the engine through group dw-team.
fn airflow_config(estate: &Path, base_url: &str, job: &str) -> std::path::PathBuf {
    let demo = std::fs::read_to_string(estate.join("dataward.toml")).unwrap();
    let scheduler = "[orchestrator]\nkind = \"demo\"\npath = \"control.db\"\n";
    assert!(
        demo.contains(scheduler),
        "the demo's config changed:\n{demo}"
    );
    let airflow = format!(
        "[orchestrator]\nkind = \"airflow\"\nbase_url = \"{base_url}\"\nusername = \"{AIRFLOW_USER}\"\n\
         password_env = \"{PASSWORD_ENV}\"\ntimeout = \"1s\"\n\n[orchestrator.jobs]\n\"{job}\" = \"{DAG}\"\n"
    );
    // The demo's requests were made on its virtual clock, days behind the wall clock
    // `serve` keeps: a time-to-live of 45 minutes would find them long expired.
    let ttl = "approval_ttl = \"45m\"";
    assert!(demo.contains(ttl), "the demo's config changed:\n{demo}");
    let config = demo
        .replace(scheduler, &airflow)
        .replace(ttl, "approval_ttl = \"3650d\"");
    let config = format!(
        "{config}\n[people.dw-alice]\nname = \"Alice\"\nroles = [\"analytics-owner\"]\n\n\
         [serve]\ngroup = \"dw-team\"\n"
    );
    let path = estate.join("airflow.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn serve(config: &Path, dir: &Path) -> Engine {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(dir)
        .env(PASSWORD_ENV, PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let engine = Engine(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while UnixStream::connect(dir.join("dataward.sock")).is_err() {
        assert!(Instant::now() < deadline, "the engine never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    engine
}

/// The errors of the chain's `intent_failed` records that pause `job`.
fn failed_pauses(dir: &Path, job: &str) -> Vec<String> {
    let conn = state(dir);
    let mut stmt = conn
        .prepare(
            "SELECT json_extract(payload, '$.error') FROM chain
             WHERE kind = 'intent_failed'
               AND json_extract(payload, '$.effect.effect') = 'set_paused'
               AND json_extract(payload, '$.effect.job') = ?1
               AND json_extract(payload, '$.effect.paused') = 1",
        )
        .unwrap();
    stmt.query_map([job], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// A PATCH asking Airflow to pause the DAG.
fn is_pause(r: &Recorded) -> bool {
    r.method == "PATCH"
        && r.path.starts_with(&format!("/api/v2/dags/{DAG}?"))
        && r.json()["is_paused"] == true
}

fn pauses(airflow: &FakeApi) -> usize {
    airflow.requests().iter().filter(|r| is_pause(r)).count()
}

/// Reads of the DAG: the engine's turns (its pipelines) and schedule reads.
fn dag_reads(airflow: &FakeApi) -> usize {
    airflow
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == format!("/api/v2/dags/{DAG}"))
        .count()
}

/// Item 3: the approval's pause lands at Airflow and its answer comes after the
/// timeout. The CLI's approval is refused naming the timeout, the DAG is un-paused, the
/// chain says the intent failed; no later request (anyone's) and no turn of the
/// engine records the approval or pauses the DAG again. The hold is still there to
/// decide. (Needs root: the later requests are a second person's, a second unix user.)
#[test]
fn an_approval_refused_for_an_airflow_timeout_is_withdrawn_and_never_carried_out_later() {
    approval_refused_for_a_timeout("an_approval_refused_for_an_airflow_timeout", Late::Pause);
}

/// The same, with Airflow as slow to answer the un-pause that puts the DAG back: the
/// refusal says the putting back failed too and what to see to by hand (here the
/// un-pause landed, unanswered), and still nothing carries the approval out later.
#[test]
fn an_approval_whose_putting_back_also_timed_out_says_so_and_is_never_carried_out() {
    approval_refused_for_a_timeout(
        "an_approval_whose_putting_back_also_timed_out",
        Late::PauseAndUnpause,
    );
}

/// Which of dataward's calls Airflow answers too late.
#[derive(Clone, Copy, PartialEq)]
enum Late {
    Pause,
    PauseAndUnpause,
}

fn approval_refused_for_a_timeout(test: &str, late: Late) {
    use std::os::unix::fs::PermissionsExt;
    if !needs_root(test) {
        return;
    }
    team();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo_dir = dir.path().join("demo");
    let d = demo_dir.as_path();
    let incident = demo_with_pending_proposals(d);
    let (hold, hold_hash, job) = proposal(&incident, "hold");
    let (note, _, _) = proposal(&incident, "note");
    let third_kind = incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .find(|kind| !["hold", "note"].contains(kind))
        .unwrap();
    let (third, third_hash, _) = proposal(&incident, third_kind);
    let job = job.expect("a hold names its job");

    let airflow = FakeApi::start(Api::Airflow, PASSWORD);
    airflow.airflow_add_dag(DAG, false);
    let config = airflow_config(&d.join("estate"), &airflow.base_url(), &job);
    let engine = serve(&config, d);

    // Airflow takes every pause (and un-pause) at once and answers it after the 1s
    // timeout.
    match late {
        Late::Pause => airflow.answer_late(is_pause, Duration::from_secs(3)),
        Late::PauseAndUnpause => airflow.answer_late(
            |r| r.method == "PATCH" && r.path.starts_with(&format!("/api/v2/dags/{DAG}?")),
            Duration::from_secs(3),
        ),
    }
    let approved = dataward(
        &[
            "approve", &hold, "--hash", &hold_hash, "--reason", "hold it",
        ],
        d,
    );
    eprintln!("approve: {}", text(&approved));
    assert_eq!(approved.status.code(), Some(1), "{}", text(&approved));
    assert!(text(&approved).contains("refused"), "{}", text(&approved));
    assert!(text(&approved).contains("timed out"), "{}", text(&approved));
    let says = match late {
        Late::Pause => {
            "the job.hourly_dbt schedule was put back as it was".replace("job.hourly_dbt", &job)
        }
        Late::PauseAndUnpause => "putting it back failed too".to_string(),
    };
    assert!(text(&approved).contains(&says), "{}", text(&approved));
    assert!(pauses(&airflow) > 0, "the pause never reached Airflow");
    // From here on Airflow answers on time: nothing but a new decision may pause it.
    airflow.answer_on_time();
    let pauses_asked = pauses(&airflow);
    assert_eq!(
        airflow.airflow_dag(DAG)["is_paused"],
        false,
        "the refused approval left {DAG} paused, and its refusal said: {}",
        text(&approved)
    );
    assert_eq!(decisions(d, &hold), Vec::<String>::new());
    assert_eq!(pending_intents(d), 0);
    let failed = failed_pauses(d, &job);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("timed out"), "{failed:?}");

    // Later requests by someone else, each its own and nothing else.
    let forwarded = as_user("dw-alice", &["forward", &note], d);
    assert_eq!(forwarded.status.code(), Some(0), "{}", text(&forwarded));
    assert!(
        !text(&forwarded).contains(&format!("{hold} approved")),
        "{}",
        text(&forwarded)
    );
    let rejected = as_user(
        "dw-alice",
        &[
            "reject",
            &third,
            "--hash",
            &third_hash,
            "--reason",
            "not this one",
        ],
        d,
    );
    assert_eq!(rejected.status.code(), Some(0), "{}", text(&rejected));
    assert!(
        !text(&rejected).contains(&format!("{hold} approved")),
        "{}",
        text(&rejected)
    );
    // And the engine's next turns. `serve` reads the pipelines (the DAG) every 5 s on
    // its poll task and makes a turn every 15 s: five reads from here span 20 s, so at
    // least one turn, whatever the two clocks' phases.
    let reads = dag_reads(&airflow);
    let deadline = Instant::now() + Duration::from_secs(120);
    while dag_reads(&airflow) < reads + 5 {
        assert!(
            Instant::now() < deadline,
            "the engine stopped reading {DAG}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(pauses(&airflow), pauses_asked, "{DAG} was paused again");
    assert_eq!(airflow.airflow_dag(DAG)["is_paused"], false);
    assert_eq!(decisions(d, &hold), Vec::<String>::new());
    assert_eq!(pending_intents(d), 0);

    // The hold is still there to decide, and a new approval is carried out.
    let again = dataward(&["approve", &hold, "--hash", &hold_hash], d);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(decisions(d, &hold), ["approved"]);
    assert_eq!(airflow.airflow_dag(DAG)["is_paused"], true);
    // Its undo puts the DAG back as it was before this approval: running. (Had the
    // refused pause been left in place, this approval would have read the DAG as
    // paused, and its undo would keep it paused.)
    let rolled_back = dataward(&["rollback", &hold, "--reason", "drill over"], d);
    assert_eq!(rolled_back.status.code(), Some(0), "{}", text(&rolled_back));
    assert_eq!(airflow.airflow_dag(DAG)["is_paused"], false);
    let verify = dataward(&["verify"], d);
    assert!(verify.status.success(), "{}", text(&verify));
    drop(engine);
}

/// Issue 27: while Airflow takes the hold's pause and never answers it, the engine
/// answers everyone else. An approval of the hold is sent; then dataward's own dispatch
/// of a run is pending (as the engine writes it at L3/L4; the demo's estate is L2, so
/// the test writes the row) and is handed over behind the pause; then the org stop. The
/// stop is answered while the approval is still unanswered; the run, queued before the
/// stop, never starts (nothing asked of Airflow) and is withdrawn naming the stop; the
/// approval is refused once its call times out, with the DAG put back as it was.
/// Nothing is left half-written: no intent pending, no decision recorded, the chain
/// verifies. (Order, not wall-clock.)
#[test]
fn the_org_stop_is_answered_while_an_airflow_call_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("demo");
    let incident = demo_with_pending_proposals(d);
    let (hold, hold_hash, job) = proposal(&incident, "hold");
    let job = job.expect("a hold names its job");

    let airflow = FakeApi::start(Api::Airflow, PASSWORD);
    airflow.airflow_add_dag(DAG, false);
    let config = airflow_config(&d.join("estate"), &airflow.base_url(), &job);
    let engine = serve(&config, d);
    // Airflow takes the pause (the DAG is paused at once) and never answers it within
    // the test; everything else is answered on time.
    airflow.answer_late(is_pause, Duration::from_secs(3600));

    let mut approve = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "approve", &hold, "--hash", &hold_hash, "--reason", "hold it",
        ])
        .arg("--data-dir")
        .arg(d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pauses(&airflow) == 0 {
        assert!(Instant::now() < deadline, "the pause never reached Airflow");
        std::thread::sleep(Duration::from_millis(10));
    }
    let dispatch = pending_dispatch(d, incident["id"].as_str().unwrap(), &job);

    // The stop's own request hands the pending run over first, then sets the stop.
    let stopped = dataward(&["stop", "--reason", "drill"], d);
    let approval_unanswered = approve.try_wait().unwrap().is_none();
    assert!(
        approval_unanswered,
        "the stop was answered only after the approval, which waited on Airflow"
    );
    // Exit 1: the stop is set, as it says.
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped));
    assert!(
        text(&stopped).contains("org-wide stop set by"),
        "{}",
        text(&stopped)
    );

    // The approval: refused once its call timed out, the DAG put back.
    let approved = approve.wait_with_output().unwrap();
    let said = text(&approved);
    assert_eq!(approved.status.code(), Some(1), "{said}");
    assert!(said.contains("timed out"), "{said}");
    assert!(
        said.contains(&format!("the {job} schedule was put back as it was")),
        "{said}"
    );
    airflow.answer_on_time();
    assert_eq!(airflow.airflow_dag(DAG)["is_paused"], false);
    // The run: withdrawn, never asked of Airflow.
    let deadline = Instant::now() + Duration::from_secs(60);
    let withdrawn = loop {
        let (status, outcome): (String, Option<String>) = state(d)
            .query_row(
                "SELECT status, outcome FROM intent WHERE id = ?1",
                [dispatch],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        if status != "pending" {
            assert_eq!(status, "withdrawn", "{outcome:?}");
            break outcome.unwrap_or_default();
        }
        assert!(Instant::now() < deadline, "the run is still pending");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(withdrawn.contains("org-wide stop"), "{withdrawn}");
    assert!(
        withdrawn.contains("nothing was asked of the orchestrator"),
        "{withdrawn}"
    );
    assert_eq!(airflow.airflow_runs(), Vec::<Value>::new());
    assert!(
        !airflow
            .requests()
            .iter()
            .any(|r| r.method == "POST" && r.path.contains("dagRuns")),
        "a run was asked of Airflow after the stop"
    );
    assert_eq!(pending_intents(d), 0);
    assert_eq!(decisions(d, &hold), Vec::<String>::new());
    assert_eq!(failed_pauses(d, &job).len(), 1);
    let stop_set: i64 = state(d)
        .query_row(
            "SELECT count(*) FROM chain WHERE kind = 'org_stop'
               AND json_extract(payload, '$.action') = 'set'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stop_set, 1);
    let verify = dataward(&["verify"], d);
    assert!(verify.status.success(), "{}", text(&verify));
    drop(engine);
}

/// Writes dataward's own dispatch of a run of `job` for `incident`, pending, as the
/// engine's `queue_run` does at L3/L4 (no person's request). Returns the intent's id.
fn pending_dispatch(dir: &Path, incident: &str, job: &str) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("dataward.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let effect = serde_json::json!({"effect": "queue_run", "job": job,
        "key": format!("dataward-{incident}-test"), "by": "dataward"});
    let completion = serde_json::json!({"then": "run_queued", "incident": incident,
        "job": job, "dispatch": 0, "after_recovery": true,
        "actor": r#"{"engine":"dataward"}"#});
    conn.execute(
        "INSERT INTO intent (created_at, subject, effect, completion, by_person)
         VALUES ('2026-11-24T14:30:00Z', ?1, ?2, ?3, 0)",
        rusqlite::params![incident, effect.to_string(), completion.to_string()],
    )
    .unwrap();
    conn.last_insert_rowid()
}
