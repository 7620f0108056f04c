//! The engine's memory is the state database: a restart, or SIGKILL at any moment,
//! loses nothing and repeats nothing; effects outside the database are reconciled; a
//! chain that does not verify is never appended to; only approved content runs.

use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use chrono::TimeDelta;
use dataward::approve::Actor;
use dataward::config::Config;
use dataward::demo::control::ControlPlane;
use dataward::effects::orchestrator::Orchestrator;
use dataward::engine::api::{
    Command, EventKind, IncidentStatus, MonitorHealth, ProposalKind, ProposalState, Verdict,
};
use dataward::engine::Engine;
use serde_json::Value;

mod story;
use story::{approve_all, count, owner, play, play_minutes, start};

fn dataward(args: &[&str], dir: &Path) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("the binary runs")
}

const HEADLESS: &[&str] = &[
    "demo",
    "ticketing",
    "--headless",
    "--json",
    "--approve-as",
    "analytics-owner",
    "--speed",
    "1000000",
];

/// The engine on a demo directory as a restarted process would build it.
fn reopen(dir: &Path) -> Engine {
    let estate = dir.join("estate");
    let config = Config::load(&estate.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&dir.join("dataward.db")).unwrap();
    let orchestrator = Box::new(ControlPlane::new(estate.join("control.db")));
    Engine::new(config, state, Some(orchestrator), &owner()).unwrap()
}

#[test]
fn an_approved_hold_survives_a_restart_and_the_incident_still_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    // Up to 14:30: the incident is open, the hold and the diff approved, the job paused.
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(60),
        approve_all,
    );
    let before = engine.snapshot(false);
    assert_eq!(before.incidents.len(), 1);
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    assert!(control.is_paused("job.hourly_dbt").unwrap());
    drop(engine);

    // The console crashed; a new engine reads everything back.
    let mut engine = reopen(dir.path());
    let after = engine.snapshot(false);
    assert_eq!(after.incidents, before.incidents, "nothing forgotten");
    let states: Vec<_> = after.incidents[0]
        .proposals
        .iter()
        .map(|p| (p.kind, p.state))
        .collect();
    assert!(states.contains(&(ProposalKind::Hold, ProposalState::Approved)));
    assert!(states.contains(&(ProposalKind::Diff, ProposalState::Approved)));

    // The story goes on: the run once the refill is back, verification, the resume.
    let mut queued = false;
    play_minutes(
        &mut scenario,
        &mut engine,
        start() + TimeDelta::minutes(61),
        start() + TimeDelta::minutes(100),
        |event, engine| {
            if event.is_none() && !queued && engine.recovered("INC-0001") {
                queued = true;
                return engine.handle(
                    Command::QueueRun {
                        incident: "INC-0001".into(),
                    },
                    &owner(),
                );
            }
            Vec::new()
        },
    );
    let end = engine.snapshot(true);
    assert_eq!(end.incidents.len(), 1, "no incident opened twice");
    assert_eq!(end.incidents[0].status, IncidentStatus::Resolved);
    assert!(!control.is_paused("job.hourly_dbt").unwrap(), "resumed");
    assert_eq!(count(dir.path(), "incident_opened"), 1);
    assert_eq!(count(dir.path(), "decision"), 2);
    assert_eq!(count(dir.path(), "run_queued"), 1);
    assert_eq!(count(dir.path(), "receipt"), 1);
}

/// The demo's scheduler, as one that starts no run of a paused job (Airflow).
struct NoRunWhilePaused(ControlPlane);

impl Orchestrator for NoRunWhilePaused {
    fn pipelines(&self) -> anyhow::Result<Vec<dataward::effects::orchestrator::Pipeline>> {
        self.0.pipelines()
    }
    fn schedule(&self, job: &str) -> anyhow::Result<dataward::effects::orchestrator::Schedule> {
        self.0.schedule(job)
    }
    fn pause(&self, job: &str) -> anyhow::Result<Option<String>> {
        self.0.pause(job)
    }
    fn restore(
        &self,
        job: &str,
        before: &dataward::effects::orchestrator::Schedule,
    ) -> anyhow::Result<()> {
        self.0.restore(job, before)
    }
    fn queue_run(
        &self,
        job: &str,
        at: dataward::clock::Timestamp,
        by: &str,
        key: &str,
    ) -> anyhow::Result<(String, bool)> {
        anyhow::ensure!(
            !self.0.is_paused(job)?,
            "{job} is paused: this run would never start"
        );
        self.0.queue_run(job, at, by, key)
    }
    fn run(
        &self,
        job: &str,
        id: &str,
    ) -> anyhow::Result<Option<dataward::effects::orchestrator::RunRecord>> {
        self.0.run(job, id)
    }
    fn starts_runs_while_paused(&self) -> bool {
        false
    }
}

/// The story to its end on a scheduler that starts no run of a paused job, the hold's
/// run queued by the owner once the table is back. `paused_first`: someone paused the
/// job before the hold.
fn story_on_a_scheduler_that_runs_nothing_paused(dir: &Path, paused_first: bool) -> Engine {
    let (mut scenario, engine) = dataward::demo::prepare(dir, &owner()).unwrap();
    drop(engine);
    let estate = dir.join("estate");
    let control = ControlPlane::new(estate.join("control.db"));
    let config = Config::load(&estate.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&dir.join("dataward.db")).unwrap();
    let orchestrator = Box::new(NoRunWhilePaused(ControlPlane::new(
        estate.join("control.db"),
    )));
    let mut engine = Engine::new(config, state, Some(orchestrator), &owner()).unwrap();
    let mut queued = false;
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(100),
        |event, engine| {
            if paused_first && event.is_none() && !control.is_paused("job.hourly_dbt").unwrap() {
                // Before anything was proposed: paused at the scheduler by someone.
                if engine.snapshot(false).incidents.is_empty() {
                    control.pause("job.hourly_dbt").unwrap();
                }
            }
            if event.is_none() && !queued && engine.recovered("INC-0001") {
                queued = true;
                return engine.handle(
                    Command::QueueRun {
                        incident: "INC-0001".into(),
                    },
                    &owner(),
                );
            }
            approve_all(event, engine)
        },
    );
    engine
}

#[test]
fn a_holds_run_resumes_the_job_where_a_paused_job_runs_nothing_and_the_undo_puts_it_back() {
    for paused_first in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let engine = story_on_a_scheduler_that_runs_nothing_paused(dir.path(), paused_first);
        let end = engine.snapshot(true);
        assert_eq!(
            end.incidents[0].status,
            IncidentStatus::Resolved,
            "paused first: {paused_first}; {:?}",
            end.notices
        );
        assert_eq!(count(dir.path(), "run_queued"), 1);
        let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
        let effect: String = conn
            .query_row(
                "SELECT json_extract(payload, '$.effect') FROM chain WHERE kind = 'run_queued'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            effect.contains("resumed the job.hourly_dbt schedule for the run"),
            "{effect}"
        );
        let control = ControlPlane::new(dir.path().join("estate/control.db"));
        assert_eq!(
            control.is_paused("job.hourly_dbt").unwrap(),
            paused_first,
            "the undo put the schedule back as it was before the hold"
        );
    }
}

/// A story played headless by the crash tests, and what it must leave behind once.
struct Headless {
    args: &'static [&'static str],
    /// The story proper starts here (the warm-up before it is not worth a kill).
    start: chrono::NaiveDateTime,
    /// Each decision, once: proposal and verdict.
    decisions: &'static [(&'static str, &'static str)],
    /// Chain records of these kinds, once each.
    once: &'static [&'static str],
}

fn ticketing() -> Headless {
    Headless {
        args: HEADLESS,
        start: start(),
        decisions: &[
            ("INC-0001-P1", "approved"),
            ("INC-0001-P2", "approved"),
            ("INC-0001-P3", "forwarded"),
        ],
        once: &[
            "dispatch",
            "run_queued",
            "run",
            "incident_resolved",
            "receipt",
        ],
    }
}

fn payouts() -> Headless {
    Headless {
        args: &[
            "demo",
            "payouts",
            "--headless",
            "--json",
            "--approve-as",
            "payouts-owner",
            "--speed",
            "100000000",
        ],
        start: chrono::NaiveDate::from_ymd_opt(2026, 11, 28)
            .unwrap()
            .and_hms_opt(13, 30, 0)
            .unwrap(),
        decisions: &[
            ("INC-0001-P2", "forwarded"),
            ("INC-0001-P3", "approved"),
            ("INC-0001-P4", "approved"),
        ],
        once: &["backfill_queued", "run", "incident_resolved", "receipt"],
    }
}

/// Kills the headless story with SIGKILL `kills` times, restarting it with the same
/// command each time, then lets it finish. Each kill comes once the run has played
/// `minutes(r)` more virtual minutes (r pseudo-random), plus up to `max_delay` ms: so the
/// kills spread over the whole story whatever the machine's speed, landing while it
/// starts up, reads itself back, polls, decides and runs.
fn story_survives_kills(
    story: &Headless,
    kills: u32,
    speed: &str,
    minutes: &dyn Fn(u64) -> i64,
    max_delay: u64,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x5eed;
    let mut random = |bound: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    let mut slowed: Vec<&str> = story.args.to_vec();
    let at = slowed.iter().position(|a| *a == "--speed").unwrap() + 1;
    slowed[at] = speed;
    for kill in 1..=kills {
        let from = demo_clock(dir.path());
        let mut child = Process::new(env!("CARGO_BIN_EXE_dataward"))
            .args(&slowed)
            .arg("--data-dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let advance = minutes(random(1 << 20));
        let target = from.map(|at| at + TimeDelta::minutes(advance));
        while advance > 0 && demo_clock(dir.path()) < target.or(Some(story.start)) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the story ended before kill {kill} of {kills}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(random(max_delay)));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the story ended before kill {kill} of {kills}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // The kills reached into the story: the incident opened in a run that was killed,
    // and the last run carried on rather than playing it again.
    assert_eq!(
        count(dir.path(), "incident_opened"),
        1,
        "the kills never reached the incident (demo clock at {:?})",
        demo_clock(dir.path())
    );
    let mut full_speed = story.args.to_vec();
    full_speed[at] = "100000000";
    let out = dataward(&full_speed, dir.path());
    assert!(
        out.status.success(),
        "the resumed story failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("incident_opened"),
        "the last run played the story again"
    );
    let d = dir.path();
    assert_eq!(count(d, "incident_opened"), 1, "one incident");
    let conn = rusqlite::Connection::open(d.join("dataward.db")).unwrap();
    let decisions: Vec<(String, String)> = conn
        .prepare(
            "SELECT json_extract(payload, '$.proposal'), json_extract(payload, '$.verdict')
             FROM chain WHERE kind = 'decision' ORDER BY seq",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<(String, String)> = story
        .decisions
        .iter()
        .map(|(p, v)| (p.to_string(), v.to_string()))
        .collect();
    assert_eq!(decisions, expected, "each decision once");
    for kind in story.once {
        assert_eq!(count(d, kind), 1, "one {kind}");
    }
    let runs: i64 = rusqlite::Connection::open(d.join("estate/control.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 1, "the scheduler ran the approved run once");
    let verify = dataward(&["verify", "--json"], d);
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let receipt = dataward(&["receipt", "INC-0001", "--md"], d);
    assert!(receipt.status.success());
}

/// The demo's virtual clock as its state database holds it, if it has one yet.
fn demo_clock(dir: &Path) -> Option<chrono::NaiveDateTime> {
    let conn = rusqlite::Connection::open_with_flags(
        dir.join("dataward.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .ok()?;
    let at: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'demo.clock'", [], |r| {
            r.get(0)
        })
        .ok()?;
    chrono::NaiveDateTime::parse_from_str(&at, "%Y-%m-%dT%H:%M:%SZ").ok()
}

#[test]
fn the_headless_story_killed_20_times_completes_once() {
    // One to five minutes a run: about an hour of the 100-minute story is played by
    // runs that are killed, the rest by the last one.
    story_survives_kills(&ticketing(), 20, "1200", &|r| 1 + r as i64 % 5, 40);
}

#[test]
fn the_headless_payouts_story_killed_20_times_completes_once() {
    // Half an hour to two and a half hours a run, in five-minute turns: about a day
    // of the weekend is played by runs that are killed, the rest by the last one.
    story_survives_kills(&payouts(), 20, "36000", &|r| 30 * (1 + r as i64 % 5), 40);
}

#[test]
#[ignore = "long: 200 kills (cargo test --test durability -- --ignored)"]
fn the_headless_story_killed_200_times_completes_once() {
    // A third of the runs play one more minute, the rest are killed within 30 ms of
    // starting: about 67 minutes of the story, and many kills during start-up.
    story_survives_kills(&ticketing(), 200, "600", &|r| i64::from(r % 3 == 0), 30);
}

/// Puts the engine in the state a kill leaves: an approval's intent committed, the
/// effect maybe carried out, no decision on the chain yet.
fn pending_diff_approval(dir: &Path, file_written: bool) -> (Engine, String) {
    let (mut scenario, mut engine) = dataward::demo::prepare(dir, &owner()).unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(50),
        |_, _| Vec::new(),
    );
    let diff = engine.snapshot(false).incidents[0]
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .cloned()
        .expect("a diff is proposed");
    let dataward::engine::api::ProposalBody::Diff { file, old, new } = &diff.body else {
        unreachable!()
    };
    drop(engine);
    let conn = rusqlite::Connection::open(dir.join("dataward.db")).unwrap();
    let effect = serde_json::json!({"effect": "write_file", "file": file, "from": old, "to": new});
    let completion = serde_json::json!({"then": "decision", "incident": "INC-0001", "proposal": diff.id,
        "verdict": "approved", "actor": owner().to_json(), "actor_display": owner().display(),
        "content_hash": diff.content_hash, "reason": "ok"});
    conn.execute(
        "INSERT INTO intent (created_at, subject, effect, completion, by_person) VALUES ('t', ?1, ?2, ?3, 1)",
        rusqlite::params![diff.id, effect.to_string(), completion.to_string()],
    )
    .unwrap();
    let path = dir.join("estate/dbt").join(file);
    if file_written {
        std::fs::write(&path, new).unwrap();
    }
    (reopen(dir), new.clone())
}

#[test]
fn a_kill_after_the_file_was_written_is_recorded_once_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, new) = pending_diff_approval(dir.path(), true);
    let events = engine.tick(start() + TimeDelta::minutes(51)).unwrap();
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Decision {
                verdict: Verdict::Approved,
                ..
            }
        )),
        "{events:?}"
    );
    assert_eq!(count(dir.path(), "decision"), 1);
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    assert_eq!(std::fs::read_to_string(file).unwrap(), new);
    // Nothing is left in flight, and a second turn records nothing again.
    engine.tick(start() + TimeDelta::minutes(52)).unwrap();
    assert_eq!(count(dir.path(), "decision"), 1);
}

#[test]
fn a_kill_before_the_file_was_written_is_carried_out_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, new) = pending_diff_approval(dir.path(), false);
    engine.tick(start() + TimeDelta::minutes(51)).unwrap();
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    assert_eq!(std::fs::read_to_string(file).unwrap(), new);
    assert_eq!(count(dir.path(), "decision"), 1);
    let diff = engine.snapshot(false).incidents[0]
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .cloned()
        .unwrap();
    assert_eq!(diff.state, ProposalState::Approved);
}

/// Puts the engine in the state a kill leaves during a hold's approval: its intent
/// committed, no decision on the chain. `first_try` says how far the killed try got:
/// nothing, the schedule read and kept, or the job paused too.
fn pending_hold_approval(dir: &Path, first_try: FirstTry) -> (Engine, String) {
    let (mut scenario, mut engine) = dataward::demo::prepare(dir, &owner()).unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(50),
        |_, _| Vec::new(),
    );
    let hold = engine.snapshot(false).incidents[0]
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Hold)
        .cloned()
        .expect("a hold is proposed");
    let dataward::engine::api::ProposalBody::Hold { job, .. } = &hold.body else {
        unreachable!()
    };
    drop(engine);
    let conn = rusqlite::Connection::open(dir.join("dataward.db")).unwrap();
    let effect = serde_json::json!({"effect": "set_paused", "job": job, "paused": true});
    let completion = serde_json::json!({"then": "decision", "incident": "INC-0001", "proposal": hold.id,
        "verdict": "approved", "actor": owner().to_json(), "actor_display": owner().display(),
        "content_hash": hold.content_hash, "reason": "ok"});
    conn.execute(
        "INSERT INTO intent (created_at, subject, effect, completion, by_person) VALUES ('t', ?1, ?2, ?3, 1)",
        rusqlite::params![hold.id, effect.to_string(), completion.to_string()],
    )
    .unwrap();
    let control = ControlPlane::new(dir.join("estate/control.db"));
    if first_try != FirstTry::Nothing {
        conn.execute(
            "INSERT INTO held_schedule (proposal, job, before, taken_at) VALUES (?1, ?2, '{\"paused\":false}', '2026-11-24T15:00:00Z')",
            rusqlite::params![hold.id, job],
        )
        .unwrap();
    }
    if first_try == FirstTry::Paused {
        control.pause(job).unwrap();
    }
    (reopen(dir), job.clone())
}

#[derive(PartialEq, Clone, Copy)]
enum FirstTry {
    Nothing,
    ReadTheSchedule,
    Paused,
}

/// Closes INC-0001 by hand as the owner; the undo actions it recorded.
fn close_by_hand(engine: &mut Engine) -> Vec<String> {
    let dataward::engine::api::Outcome::Accepted { events, .. } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: "the vendor refilled the feed".into(),
        },
        &owner(),
    ) else {
        panic!("the owner could not close it");
    };
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Undo { action, .. } => Some(action.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_kill_after_the_pause_still_resumes_the_job_it_found_running() {
    for first_try in [FirstTry::ReadTheSchedule, FirstTry::Paused] {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, job) = pending_hold_approval(dir.path(), first_try);
        engine.tick(start() + TimeDelta::minutes(51)).unwrap();
        let control = ControlPlane::new(dir.path().join("estate/control.db"));
        assert!(control.is_paused(&job).unwrap());
        assert_eq!(count(dir.path(), "decision"), 1);
        // The retry found the schedule kept before the first try touched it, not the
        // paused state that try left: the undo resumes it.
        let undone = close_by_hand(&mut engine);
        assert!(undone.iter().any(|a| a.contains("resumed")), "{undone:?}");
        assert!(!control.is_paused(&job).unwrap(), "resumed");
    }
}

#[test]
fn a_hold_on_a_job_someone_had_paused_leaves_it_paused_when_undone() {
    let dir = tempfile::tempdir().unwrap();
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    let (mut engine, job) = pending_hold_approval(dir.path(), FirstTry::Nothing);
    // Someone paused it at the scheduler before the approval was carried out.
    control.pause(&job).unwrap();
    let events = engine.tick(start() + TimeDelta::minutes(51)).unwrap();
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Decision {
                verdict: Verdict::Approved,
                ..
            }
        )),
        "{events:?}"
    );
    let notices = engine.snapshot(false).notices;
    assert!(
        notices.iter().any(|n| n.contains("paused it already")),
        "{notices:?}"
    );
    let undone = close_by_hand(&mut engine);
    assert!(
        undone.iter().any(|a| a.contains("paused before the hold")),
        "{undone:?}"
    );
    assert!(control.is_paused(&job).unwrap(), "still paused, as it was");
}

#[test]
fn an_applied_diff_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    let mut chmodded = false;
    play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        if !chmodded && file.exists() {
            chmodded = true;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        approve_all(event, engine)
    });
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
}

/// Cuts records off the chain's tail behind SQLite's back.
fn cut_tail(dir: &Path, keep: u64) {
    let conn = rusqlite::Connection::open(dir.join("dataward.db")).unwrap();
    conn.execute_batch("DROP TRIGGER chain_no_delete").unwrap();
    conn.execute("DELETE FROM chain WHERE seq > ?1", [keep])
        .unwrap();
}

#[test]
fn a_cut_tail_is_never_appended_past() {
    let dir = tempfile::tempdir().unwrap();
    let out = dataward(HEADLESS, dir.path());
    assert!(out.status.success());
    let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
    let records: u64 = conn
        .query_row("SELECT count(*) FROM chain", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    cut_tail(dir.path(), records - 3);

    // A command that appends refuses, naming the damage, and appends nothing: however
    // often it is tried, the checkpoint never moves past the cut.
    for _ in 0..5 {
        let stop = dataward(&["stop", "--reason", "test"], dir.path());
        assert_eq!(stop.status.code(), Some(1));
        let text = String::from_utf8_lossy(&stop.stdout);
        assert!(text.contains("tail was cut off"), "{text}");
    }
    // The checkpoint did not move: verify still says so.
    let verify = dataward(&["verify", "--json"], dir.path());
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert!(
        report["first_bad"]["reason"]
            .as_str()
            .unwrap()
            .contains("tail"),
        "{report}"
    );

    // The engine starts, says so, and records nothing.
    let mut engine = reopen(dir.path());
    let alarm = engine.chain_alarm().expect("the engine sees the damage");
    assert!(alarm.contains("CHAIN BROKEN"), "{alarm}");
    assert_eq!(engine.snapshot(false).chain_alarm.as_deref(), Some(alarm));
    let refused = engine.handle(Command::OrgStop { reason: "x".into() }, &owner());
    assert!(
        matches!(&refused[0].kind, EventKind::Refused { reason, .. } if reason.contains("CHAIN BROKEN"))
    );
    let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
    let after: u64 = conn
        .query_row("SELECT count(*) FROM chain", [], |r| r.get(0))
        .unwrap();
    assert_eq!(after, records - 3);
}

#[test]
fn a_missing_checkpoint_beside_a_chain_is_an_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let set = dataward(&["stop", "--reason", "drill"], dir.path());
    assert_eq!(set.status.code(), Some(1), "a stop is set");
    std::fs::remove_file(dir.path().join("dataward.db.checkpoint")).unwrap();
    let verify = dataward(&["verify", "--json"], dir.path());
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert!(
        report["first_bad"]["reason"]
            .as_str()
            .unwrap()
            .contains("checkpoint"),
        "{report}"
    );
}

#[test]
fn a_model_file_swapped_after_approval_is_not_run_and_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    let mut swapped = false;
    let mut queued = false;
    let (events, _) = play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        let mut out = approve_all(event, engine);
        let opened = !engine.snapshot(false).incidents.is_empty();
        if event.is_none() && opened && !queued && engine.recovered("INC-0001") {
            queued = true;
            out.extend(engine.handle(
                Command::QueueRun {
                    incident: "INC-0001".into(),
                },
                &owner(),
            ));
        }
        if let Some(EventKind::Run { status, .. }) = event.map(|e| &e.kind) {
            if status == "success" && !swapped {
                swapped = true;
                std::fs::write(&file, "delete from \"TICKETING\".\"ORDERS\" returning 1").unwrap();
            }
        }
        out
    });
    assert!(
        swapped,
        "the run never finished: {:?}",
        story::names(&events)
    );
    let verification = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Verification { passed, checks, .. } => Some((*passed, checks.clone())),
            _ => None,
        })
        .expect("verification ran");
    assert!(!verification.0, "{verification:?}");
    let check = verification
        .1
        .iter()
        .find(|c| c.name.contains("int_seat_map"))
        .unwrap();
    assert!(
        check.detail.contains("changed outside dataward"),
        "{check:?}"
    );
    let warehouse = rusqlite::Connection::open(dir.path().join("estate/ticketing.db")).unwrap();
    let rows: i64 = warehouse
        .query_row("SELECT count(*) FROM ORDERS", [], |r| r.get(0))
        .unwrap();
    assert!(rows > 20_000, "the table was not emptied: {rows}");
}

#[test]
fn a_diff_whose_file_leads_out_of_the_project_is_never_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.sql");
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    let mut planted = false;
    let (_, engine) = play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        if !planted && file.exists() {
            planted = true;
            std::fs::copy(&file, &victim).unwrap();
            std::fs::remove_file(&file).unwrap();
            std::os::unix::fs::symlink(&victim, &file).unwrap();
        }
        approve_all(event, engine)
    });
    let incident = &engine.snapshot(true).incidents[0];
    assert!(
        incident
            .proposals
            .iter()
            .all(|p| p.kind != ProposalKind::Diff),
        "{:?}",
        incident.proposals
    );
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.contains("outside the dbt project")),
        "{:?}",
        incident.evidence
    );
    let victim_text = std::fs::read_to_string(&victim).unwrap();
    assert!(victim_text.contains("cast(o.seat_section as integer)"));
}

#[test]
fn approve_as_plays_only_the_story_owner() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = HEADLESS.to_vec();
    let role = args.iter().position(|a| *a == "analytics-owner").unwrap();
    args[role] = "analytics-lead";
    let out = dataward(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("analytics-owner"), "{err}");
}

#[test]
fn the_demo_refuses_a_live_chain() {
    let dir = tempfile::tempdir().unwrap();
    // A live data directory: a stop set there is on its chain.
    let set = dataward(&["stop", "--reason", "drill"], dir.path());
    assert_eq!(set.status.code(), Some(1));
    let out = dataward(HEADLESS, dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a demo's"), "{err}");
    assert_eq!(
        count(dir.path(), "org_stop"),
        1,
        "the live chain is untouched"
    );
}

#[test]
fn l4_does_not_pause_while_the_org_stop_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    let mut stopped = false;
    let (events, engine) = play(
        dir.path(),
        "autonomy = \"L4\"\nclasses = [\"pause_job\"]",
        |_, _| {
            if !stopped {
                stopped = true;
                let conn = dataward::store::open(&db).unwrap();
                dataward::chain::transact(&conn, |tx| {
                    dataward::approve::stop::set(
                        tx,
                        &Actor::current(),
                        "drill",
                        "2026-11-24T15:00:00Z".parse().unwrap(),
                    )
                })
                .unwrap();
            }
            Vec::new()
        },
    );
    assert!(
        !events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Decision {
                verdict: Verdict::Autonomous,
                ..
            }
        )),
        "dataward acted while stopped"
    );
    assert!(events.iter().any(
        |e| matches!(&e.kind, EventKind::Refused { reason, .. } if reason.contains("org-wide stop"))
    ));
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    assert!(!control.is_paused("job.hourly_dbt").unwrap());
    drop(engine);
}

#[test]
fn while_the_warehouse_is_down_its_last_figures_are_stale_not_ok() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh.db");
    let conn = rusqlite::Connection::open(&wh).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT);
         INSERT INTO events (kind) VALUES ('a'), ('b'), (NULL), ('c');",
    )
    .unwrap();
    drop(conn);
    let config_path = dir.path().join("dataward.toml");
    std::fs::write(
        &config_path,
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"events\"\n\
         checks = [\"row_count\", \"null_rate\"]\nevery = \"1m\"\n",
    )
    .unwrap();
    let config = Config::load(&config_path).unwrap();
    let state = dataward::store::open(&dir.path().join("data/dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &owner()).unwrap();
    engine.tick(start()).unwrap();
    let healthy = engine.snapshot(false).monitors;
    assert!(
        healthy
            .iter()
            .any(|m| m.check == "null_rate(kind)" && m.health == MonitorHealth::Ok),
        "{healthy:?}"
    );

    // The warehouse goes away: nothing it measured before may still read as fresh.
    std::fs::rename(&wh, dir.path().join("gone.db")).unwrap();
    engine.tick(start() + TimeDelta::minutes(1)).unwrap();
    let down = engine.snapshot(false).monitors;
    for monitor in &down {
        assert_ne!(monitor.health, MonitorHealth::Ok, "{monitor:?}");
    }
    let kind = down
        .iter()
        .find(|m| m.check == "null_rate(kind)")
        .expect("the column's last figure is still shown");
    assert_eq!(kind.health, MonitorHealth::Stale);
    assert!(kind.observed.contains("as of 13:30"), "{kind:?}");

    // Back up: fresh again, and no leftover row for the failed poll. (The poller leaves
    // a warehouse it could not reach alone for its first backoff step, in real time.)
    std::fs::rename(dir.path().join("gone.db"), &wh).unwrap();
    std::thread::sleep(dataward::monitor::poller::DEFAULT_BACKOFF + Duration::from_millis(500));
    engine.tick(start() + TimeDelta::minutes(10)).unwrap();
    let back = engine.snapshot(false).monitors;
    assert!(
        back.iter().all(|m| m.health == MonitorHealth::Ok),
        "{back:?}"
    );
}

#[test]
fn sigterm_ends_the_headless_story_at_a_minute_and_the_same_command_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    // Slow enough that the signal lands mid-story: a virtual minute per 50 ms.
    let mut args: Vec<&str> = HEADLESS.to_vec();
    let speed = args.iter().position(|a| *a == "1000000").unwrap();
    args[speed] = "1200";
    let mut child = Process::new(env!("CARGO_BIN_EXE_dataward"))
        .args(&args)
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first event out means the story is playing and its signal handler is in place
    // (a fixed sleep signalled a process still starting on a loaded machine).
    let mut events = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut events, &mut first).unwrap();
    assert!(!first.is_empty(), "the story printed nothing");
    let drained = std::thread::spawn(move || std::io::copy(&mut events, &mut std::io::sink()));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    drained.join().unwrap().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run the same command to resume"), "{err}");
    let verify = dataward(&["verify"], dir.path());
    assert!(verify.status.success());
    let rest = dataward(HEADLESS, dir.path());
    assert!(rest.status.success());
    assert_eq!(count(dir.path(), "incident_opened"), 1);
    assert_eq!(count(dir.path(), "receipt"), 1);
}

#[test]
fn a_manifest_path_that_climbs_out_of_the_project_gets_no_diff() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    drop(engine);
    // A manifest someone else wrote names a file outside the project.
    let manifest_path = dir.path().join("estate/dbt/target/manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let climbing = "../../x.sql";
    manifest["nodes"]["model.ticketing.int_seat_map"]["original_file_path"] = climbing.into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    std::fs::write(dir.path().join("x.sql"), "select 1").unwrap();
    let mut engine = reopen(dir.path());
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(45),
        approve_all,
    );
    let incident = &engine.snapshot(false).incidents[0];
    assert!(
        incident
            .proposals
            .iter()
            .all(|p| p.kind != ProposalKind::Diff),
        "{:?}",
        incident.proposals
    );
    let refusal = incident
        .evidence
        .iter()
        .find(|e| e.contains("outside the dbt project"))
        .expect("the refusal is shown with the cause");
    assert!(refusal.contains(climbing), "{refusal}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x.sql")).unwrap(),
        "select 1"
    );
}
