//! Issue 27, mostly through the binary: the demo runs its engine behind the same hub as
//! `dataward serve`, and its effects (orchestrator calls, file writes, backfill copies)
//! and warehouse probes run on workers there too, and its story's world on a thread of
//! its own, never on the engine's thread.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/state.rs"]
mod state_db;

use binary::{dataward, text, Engine};
use state_db::{pending_intents, proposal, state};

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn headless(dir: &Path, speed: &str) -> Engine {
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

/// The demo's virtual clock as it keeps it in the state database.
fn demo_clock(dir: &Path) -> Option<String> {
    state(dir)
        .query_row("SELECT value FROM meta WHERE key = 'demo.clock'", [], |r| {
            r.get(0)
        })
        .ok()
}

/// Plays the headless ticketing demo on `dir` until INC-0001 has its three proposals,
/// then stops it (SIGTERM); returns the incident as `show` gave it.
fn demo_with_pending_proposals(dir: &Path) -> Value {
    let mut playing = headless(dir, "600");
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

/// The demo's scheduler (its orchestrator) is a SQLite database; a test that holds its
/// write lock makes every change asked of it wait, as a hanging orchestrator would.
/// The demo is resumed so slowly that it plays one turn and no other: nothing but the
/// approval touches the scheduler. The approval's intent is committed and its pause
/// waits on the lock; the org stop sent then is answered while that intent is still
/// pending (on the engine's thread, the pause would have had to fail, and the intent be
/// withdrawn, before the stop was read). Once the lock is let go, the approval is
/// answered and nothing is left pending. (Order, not wall-clock.)
#[test]
fn in_the_demo_the_org_stop_is_answered_while_the_scheduler_holds_a_pause() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("demo");
    let incident = demo_with_pending_proposals(d);
    let (hold, hold_hash, _) = proposal(&incident, "hold");

    let played = demo_clock(d);
    let _demo = headless(d, "0.001");
    let deadline = Instant::now() + Duration::from_secs(60);
    while UnixStream::connect(d.join("dataward.sock")).is_err() || demo_clock(d) == played {
        assert!(Instant::now() < deadline, "the demo never took its turn");
        std::thread::sleep(Duration::from_millis(20));
    }

    let scheduler = rusqlite::Connection::open(d.join("estate/control.db")).unwrap();
    scheduler.execute_batch("BEGIN EXCLUSIVE").unwrap();
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
    while pending_intents(d) == 0 {
        assert!(Instant::now() < deadline, "the approval made no intent");
        assert!(
            approve.try_wait().unwrap().is_none(),
            "the approval was answered before its pause could be asked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let stopped = dataward(&["stop", "--reason", "drill"], d);
    let still_pending = pending_intents(d);
    let approval_unanswered = approve.try_wait().unwrap().is_none();
    assert!(
        still_pending == 1 && approval_unanswered,
        "the stop was answered only after the approval's pause had given up on the \
         scheduler: it was carried out on the engine's thread"
    );
    assert!(
        text(&stopped).contains("org-wide stop set by"),
        "{}",
        text(&stopped)
    );

    scheduler.execute_batch("ROLLBACK").unwrap();
    drop(scheduler);
    let approved = approve.wait_with_output().unwrap();
    assert!(
        text(&approved).contains(&hold),
        "the approval's answer names its proposal: {}",
        text(&approved)
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while pending_intents(d) != 0 {
        assert!(
            Instant::now() < deadline,
            "the approval's intent stayed pending"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let verify = dataward(&["verify"], d);
    assert!(verify.status.success(), "{}", text(&verify));
}

/// The demo's engine thread reads no warehouse and no scheduler: its polls and the
/// scheduler's state are read on the poll task, as `dataward serve` reads them, and the
/// story's outside world (which writes the warehouse and moves the scheduler) moves on
/// a thread of its own; what they did comes back as inputs. A debug build (this one)
/// stops the engine when either is asked on its thread, so the whole story, the
/// stand-in's approvals and their effects included, plays to its end only if none is.
fn engine_thread_reads_no_warehouse_and_no_scheduler(story: &str, owner: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "demo",
            story,
            "--headless",
            "--json",
            "--approve-as",
            owner,
            "--speed",
            "100000000",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("demo"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("on the engine's thread"),
        "the {story} demo asked the outside world on its engine's thread: {stderr}"
    );
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"event\":\"incident_resolved\""),
        "the {story} story played to its end: {stdout}"
    );
}

#[test]
fn the_demos_engine_thread_reads_no_warehouse_and_no_scheduler() {
    engine_thread_reads_no_warehouse_and_no_scheduler("ticketing", "analytics-owner");
}

#[test]
fn the_payouts_demos_engine_thread_reads_no_warehouse_and_no_scheduler() {
    engine_thread_reads_no_warehouse_and_no_scheduler("payouts", "payouts-owner");
}

/// A refusal the stand-in gets only once its change was tried on a worker is said on the
/// demo's timeline, as a refusal it gets at once is. The scheduler is made to refuse
/// every pause (a trigger: the story's outside world never pauses anything itself), so
/// the stand-in's approval of the hold is committed, its pause fails on the worker, and
/// the intent fails on the chain.
#[test]
fn a_refusal_the_stand_in_gets_from_a_worker_is_on_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("demo");
    let incident = demo_with_pending_proposals(d);
    let (hold, _, _) = proposal(&incident, "hold");
    rusqlite::Connection::open(d.join("estate/control.db"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER no_pause BEFORE UPDATE OF state ON pipeline
             WHEN NEW.state = 'paused'
             BEGIN SELECT RAISE(ABORT, 'pauses are frozen'); END;",
        )
        .unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "demo",
            "ticketing",
            "--headless",
            "--json",
            "--approve-as",
            "analytics-owner",
            "--speed",
            "100000000",
        ])
        .arg("--data-dir")
        .arg(d)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let failed: i64 = state(d)
        .query_row(
            "SELECT count(*) FROM chain WHERE kind = 'intent_failed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(failed >= 1, "the hold's pause failed on the chain");
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let refused: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "refused")
        .filter(|e| e["command"].as_str().is_some_and(|c| c.contains(&hold)))
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "the stand-in's approval of {hold}, refused once its pause failed, is on the \
         timeline once: {refused:?}"
    );
    assert!(
        refused[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("pauses are frozen")),
        "the refusal says why: {:?}",
        refused[0]
    );
}

/// The story's own outside world, held at its first step until the test lets it go:
/// it says when a step has begun, then waits.
struct HeldWorld {
    world: dataward::demo::scenario::Scenario,
    began: std::sync::mpsc::Sender<()>,
    go_on: std::sync::mpsc::Receiver<()>,
}

impl dataward::demo::scenario::World for HeldWorld {
    fn step(&mut self, now: chrono::NaiveDateTime) -> anyhow::Result<Vec<String>> {
        let _ = self.began.send(());
        // Once the test has let go (dropped its end), every step goes straight on.
        let _ = self.go_on.recv();
        self.world.step(now)
    }
}

/// Only bounds a wait for something that must happen, so a broken build fails instead
/// of hanging; nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(60);

/// The demo's story behind its hub, as `dataward demo` plays it, with its outside world
/// held in the middle of a step (as a warehouse write that hangs would hold it). An
/// org-wide stop sent then is answered while the step is still held: the engine's
/// thread does not wait for the story's world. The world is let go only after the
/// answer came (order, not wall-clock).
#[test]
fn in_the_demo_the_org_stop_is_answered_while_the_worlds_step_is_held() {
    use dataward::engine::api::ServerMessage;
    use dataward::engine::api::{ClientMessage, Command as EngineCommand, Outcome, Request};
    use dataward::engine::hub::{Hub, HubMessage};

    dataward::demo::control::register();
    let dir = tempfile::tempdir().unwrap();
    let actor = dataward::approve::Actor::current();
    let (world, mut engine) = dataward::demo::prepare(dir.path(), &actor).unwrap();
    let (began, step_began) = std::sync::mpsc::channel();
    let (let_go, go_on) = std::sync::mpsc::channel::<()>();
    let world = dataward::demo::scenario::Scenario::new(Box::new(HeldWorld {
        world,
        began,
        go_on,
    }));
    let options = dataward::demo::DemoOptions {
        data_dir: dir.path().into(),
        story: "ticketing".into(),
        speed: Some(1e9),
        approve_as: None,
        read_only: false,
        console_config: None,
        theme: None,
    };
    let from = dataward::demo::ticketing::plot().warm_up;
    let mut story = dataward::demo::Story::new(&options, world, &actor, from, &mut engine).unwrap();
    let config = dataward::config::Config::load(&dir.path().join("estate/dataward.toml")).unwrap();
    let (hub_tx, hub_rx) = std::sync::mpsc::channel();
    let poll_task = dataward::engine::server::start_poll_task(
        &mut engine,
        &config,
        &dir.path().join("dataward.db").into(),
        hub_tx.clone(),
        true,
    )
    .unwrap();
    let post = hub_tx.clone();
    let hub = std::thread::spawn(move || {
        let engine = Hub::new(engine, hub_rx, post, Box::new(|_| {})).run(&mut story);
        (engine, story)
    });

    step_began
        .recv_timeout(PATIENCE)
        .expect("the story's first step never began");
    let link =
        dataward::engine::attach::in_process(&hub_tx, actor.clone(), "on call".into(), false)
            .unwrap();
    link.to_engine
        .send(ClientMessage::Request(Request {
            id: 1,
            command: EngineCommand::OrgStop {
                reason: "drill".into(),
            },
            client_request: None,
        }))
        .unwrap();
    let answer = loop {
        match link.from_engine.recv_timeout(PATIENCE) {
            Ok(ServerMessage::Reply(reply)) if reply.id == 1 => break Some(reply.outcome),
            Ok(_) => continue,
            Err(_) => break None,
        }
    };
    // Let the world go before judging, so a failure leaves no thread held.
    drop(let_go);
    let answer = answer.expect(
        "the org stop was not answered while the story's world held its step: the \
         world moves on the engine's thread",
    );
    assert!(
        matches!(answer, Outcome::Accepted { .. }),
        "the org stop is set: {answer:?}"
    );

    hub_tx.send(HubMessage::Stop).unwrap();
    let (engine, story) = hub.join().unwrap();
    let engine = engine.unwrap();
    drop(story);
    poll_task.stop();
    assert!(
        engine.snapshot(false).org_stop.is_some(),
        "the stop is the engine's state"
    );
}
