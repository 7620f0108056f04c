//! Decisions people send from the command line, against the hostile cases: a disk that
//! fills while a decision is carried out, an engine killed mid-request, a team in group
//! mode pulling the org-wide stop, a shortened hash. The engine is the ticketing demo's,
//! played until its incident has proposals and then resumed with its clock all but
//! stopped, so nothing but the test's own requests happens while it looks.

mod any_user;
#[path = "support/binary.rs"]
mod binary;
#[path = "support/state.rs"]
mod state_db;
mod story;

use binary::{dataward, text, Engine};
use state_db::{decisions, pending_intents, proposal, state};

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;

fn spawn_dataward(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs")
}

/// The headless ticketing demo on `dir` at `speed`.
fn demo(dir: &Path, speed: &str) -> Engine {
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

fn wait_for_socket(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if UnixStream::connect(dir.join("dataward.sock")).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the engine never listened on {}", dir.display());
}

/// The demo's engine with INC-0001 and its three proposals pending, its clock all but
/// stopped: played at speed 600 until the proposals are there, stopped (SIGTERM), and
/// resumed at a speed whose next turn is hours away.
fn engine_with_pending_proposals(dir: &Path) -> (Engine, Value) {
    engine_with_pending_proposals_then(dir, |_| {})
}

/// [`engine_with_pending_proposals`], calling `meanwhile` while no engine runs.
fn engine_with_pending_proposals_then(
    dir: &Path,
    meanwhile: impl FnOnce(&Path),
) -> (Engine, Value) {
    let mut playing = demo(dir, "600");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "no incident with its proposals");
        let out = dataward(&["show", "INC-0001", "--json"], dir);
        if out.status.success() {
            let incident: Value = serde_json::from_slice(&out.stdout).unwrap();
            if incident["proposals"]
                .as_array()
                .is_some_and(|p| p.len() == 3)
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(playing.0.id() as i32, libc::SIGTERM) };
    assert!(playing.0.wait().unwrap().success());
    meanwhile(dir);
    (resume(dir), show(dir))
}

/// The same demo resumed with its clock all but stopped; returns once it serves and
/// its first turn (made at once on start) is done.
fn resume(dir: &Path) -> Engine {
    let engine = demo(dir, "0.0001");
    wait_for_socket(dir);
    // The first turn is made at once; a `show` answered after it sees its result.
    std::thread::sleep(Duration::from_millis(300));
    engine
}

fn show(dir: &Path) -> Value {
    let out = dataward(&["show", "INC-0001", "--json"], dir);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn incident_status(dir: &Path) -> String {
    state(dir)
        .query_row(
            "SELECT status FROM incident WHERE id = 'INC-0001'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

fn needs_root(test: &str) -> bool {
    any_user::needs_root(test, "mount, unix users")
}

/// A small tmpfs of its own: a disk that really fills. Unmounted when dropped.
struct SmallDisk {
    _mountpoint: tempfile::TempDir,
    path: PathBuf,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let mountpoint = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(mountpoint.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "mount: {}", text(&out));
        let path = mountpoint.path().to_path_buf();
        SmallDisk {
            _mountpoint: mountpoint,
            path,
        }
    }

    /// Writes a filler file until the disk says it is full.
    fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.path.join("filler")).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            if let Err(e) = filler.write_all(&block) {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
        // The last bytes, down to nothing left.
        let small = [0u8; 512];
        while filler.write_all(&small).is_ok() {}
        let _ = filler.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.path.join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).output();
    }
}

/// Holds the demo scheduler's database locked for writing: a pause asked meanwhile
/// waits (the demo scheduler waits up to 5 s for the lock), then goes on or fails.
fn lock_scheduler(dir: &Path) -> Connection {
    let conn = Connection::open(dir.join("estate/control.db")).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    conn
}

fn wait_for_pending_intent(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while pending_intents(dir) == 0 {
        assert!(
            Instant::now() < deadline,
            "the approval never got in flight"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn job_paused(dir: &Path, job: &str) -> bool {
    let conn = Connection::open(dir.join("estate/control.db")).unwrap();
    let state: String = conn
        .query_row("SELECT state FROM pipeline WHERE id = ?1", [job], |r| {
            r.get(0)
        })
        .unwrap();
    state == "paused"
}

/// Item 3: an approval refused because the disk filled while it was carried out is
/// withdrawn with its refusal; nobody's later request carries it out, and the job it
/// paused is put back. Twice: with the scheduler's files on the full disk too (the
/// pause fails), and elsewhere (the pause is done, and cannot be recorded).
#[test]
fn an_approval_refused_on_a_full_disk_is_never_carried_out_later() {
    if !needs_root("an_approval_refused_on_a_full_disk") {
        return;
    }
    for scheduler_on_the_full_disk in [true, false] {
        let elsewhere = tempfile::tempdir().unwrap();
        let disk = SmallDisk::mount("48m");
        let d = disk.path.join("demo");
        let (engine, incident) = engine_with_pending_proposals_then(&d, |d| {
            if !scheduler_on_the_full_disk {
                // The estate (the demo scheduler's database among it) moves off the
                // small disk; the engine finds it where it was.
                let moved = elsewhere.path().join("estate");
                let out = Command::new("mv")
                    .arg(d.join("estate"))
                    .arg(&moved)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", text(&out));
                std::os::unix::fs::symlink(&moved, d.join("estate")).unwrap();
            }
        });
        let (hold, hold_hash, job) = proposal(&incident, "hold");
        let (note, _, _) = proposal(&incident, "note");
        let job = job.expect("a hold names its job");
        assert!(!job_paused(&d, &job));

        // The approval gets in flight (its intent committed), then the disk fills
        // before the pause it asked for is done and recorded.
        let lock = lock_scheduler(&d);
        let approve = spawn_dataward(
            &[
                "approve", &hold, "--hash", &hold_hash, "--reason", "hold it",
            ],
            &d,
        );
        wait_for_pending_intent(&d);
        disk.fill();
        drop(lock);
        let approved = approve.wait_with_output().unwrap();
        eprintln!(
            "scheduler on the full disk: {scheduler_on_the_full_disk}: {}",
            text(&approved)
        );
        assert_eq!(approved.status.code(), Some(1), "{}", text(&approved));
        assert!(text(&approved).contains("refused"), "{}", text(&approved));

        // Room again: the next request, anyone's, is its own and nothing else.
        disk.free();
        let forwarded = dataward(&["forward", &note], &d);
        assert_eq!(forwarded.status.code(), Some(0), "{}", text(&forwarded));
        assert!(
            !text(&forwarded).contains(&format!("{hold} approved")),
            "{}",
            text(&forwarded)
        );
        assert_eq!(decisions(&d, &hold), Vec::<String>::new());
        assert_eq!(pending_intents(&d), 0);
        assert!(!job_paused(&d, &job), "the refused hold left {job} paused");
        // And the hold is still there to decide, on a disk with room.
        let again = dataward(&["approve", &hold, "--hash", &hold_hash], &d);
        assert_eq!(again.status.code(), Some(0), "{}", text(&again));
        assert_eq!(decisions(&d, &hold), ["approved"]);
        drop(engine);
    }
}

/// Item 7: an engine killed while a CLI decision is in flight. The CLI reconnects to
/// the engine that starts next and asks what came of its request: its exit status says
/// what the chain holds, every time.
#[test]
fn a_decision_whose_engine_was_killed_reports_what_the_chain_holds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut engine, incident) = engine_with_pending_proposals(d);
    let (hold, hold_hash, _) = proposal(&incident, "hold");

    // Killed while carrying the approval out (the pause waits on the scheduler).
    let lock = lock_scheduler(d);
    let approve = spawn_dataward(&["approve", &hold, "--hash", &hold_hash], d);
    wait_for_pending_intent(d);
    engine.kill();
    drop(lock);
    engine = resume(d);
    let approved = approve.wait_with_output().unwrap();
    let on_chain = decisions(d, &hold) == ["approved"];
    assert_eq!(
        approved.status.code(),
        Some(if on_chain { 0 } else { 1 }),
        "on the chain: {on_chain}; {}",
        text(&approved)
    );
    assert!(
        on_chain,
        "the engine's restart carries out the intent it found"
    );

    // Kills at any moment while closing and reopening the incident by hand: decisions
    // with nothing to carry out outside the database.
    for round in 0..12u64 {
        let before = incident_status(d);
        let reason = format!("drill {round}");
        let verb = if before == "resolved" {
            "reopen"
        } else {
            "resolve"
        };
        let cli = spawn_dataward(&[verb, "INC-0001", "--reason", &reason], d);
        std::thread::sleep(Duration::from_millis(5 + (round * 7) % 40));
        engine.kill();
        engine = resume(d);
        let out = cli.wait_with_output().unwrap();
        let after = incident_status(d);
        // Exit 2 only for a CLI that sent nothing: it found no engine (it started
        // after the kill), or lost it before its request went out.
        assert!(
            out.status.code() != Some(2)
                || text(&out).contains("no engine is running")
                || text(&out).contains("nothing was sent, so nothing was decided"),
            "{verb} {reason}: {}",
            text(&out)
        );
        eprintln!(
            "round {round}: {verb} exited {:?}, {before} -> {after}{}",
            out.status.code(),
            if text(&out).contains("asking what came of request") {
                ", answered after the kill"
            } else {
                ""
            }
        );
        assert_eq!(
            out.status.code() == Some(0),
            after != before,
            "{verb} {reason}: the incident went from {before} to {after}; the CLI said: {}",
            text(&out)
        );
    }
    drop(engine);
}

/// Item 14: a shortened hash is refused saying the whole hash is needed, not that the
/// proposal changed.
#[test]
fn a_shortened_hash_is_refused_asking_for_the_whole_hash() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (engine, incident) = engine_with_pending_proposals(d);
    let (hold, hold_hash, _) = proposal(&incident, "hold");
    let short = dataward(&["approve", &hold, "--hash", &hold_hash[..12]], d);
    assert_eq!(short.status.code(), Some(1), "{}", text(&short));
    assert!(text(&short).contains("full"), "{}", text(&short));
    assert!(!text(&short).contains("changed since"), "{}", text(&short));
    assert_eq!(decisions(d, &hold), Vec::<String>::new());
    drop(engine);
}

use any_user::{as_user, team};

/// Item 10: in group mode the stop is set and lifted by the team's members through
/// the engine, as every decision is; the chain says who did each.
#[test]
fn the_team_sets_and_lifts_the_stop_through_the_engine_in_group_mode() {
    use std::os::unix::fs::PermissionsExt;
    if !needs_root("the_team_sets_and_lifts_the_stop") {
        return;
    }
    team();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo_dir = dir.path().join("demo");
    {
        let mut engine = demo(&demo_dir, "1000000");
        assert!(engine.0.wait().unwrap().success());
    }
    let estate = demo_dir.join("estate");
    let mut policy = std::fs::read_to_string(estate.join("dataward.toml")).unwrap();
    policy.push_str(
        "\n[people.dw-alice]\nname = \"Alice\"\nroles = [\"analytics-owner\"]\n\n\
         [people.dw-obs]\nname = \"Obs\"\nroles = []\n\n\
         [serve]\ngroup = \"dw-team\"\n",
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
    let server = Engine(server);
    wait_for_socket(&data);

    let set = as_user("dw-alice", &["stop", "--reason", "drill"], &data);
    assert!(text(&set).contains("org-wide stop SET"), "{}", text(&set));
    assert!(text(&set).contains("Alice") || text(&set).contains("dw-alice"));
    let first = as_user("dw-alice", &["stop", "--lift"], &data);
    assert!(text(&first).contains("lift asked by"), "{}", text(&first));
    let again = as_user("dw-alice", &["stop", "--lift"], &data);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        text(&again).contains("second, different person"),
        "{}",
        text(&again)
    );
    let second = as_user("dw-obs", &["stop", "--lift"], &data);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    assert!(
        text(&second).contains("no org-wide stop"),
        "{}",
        text(&second)
    );
    let shown = as_user("dw-obs", &["stop"], &data);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown));
    let actors: Vec<String> = {
        let conn = state(&data);
        let mut stmt = conn
            .prepare("SELECT json_extract(actor, '$.user') FROM chain WHERE kind = 'org_stop' ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(actors, ["dw-alice", "dw-alice", "dw-obs"]);
    drop(server);

    // With no engine serving, the stop is written directly as before, and says so.
    let direct = dataward(&["stop", "--reason", "engine down"], &data);
    assert!(text(&direct).contains("no engine"), "{}", text(&direct));
    assert!(
        text(&direct).contains("org-wide stop SET"),
        "{}",
        text(&direct)
    );
}

/// The demo's scheduler, as one whose answer to a pause is lost: the pause lands, and
/// the call times out (an Airflow that took the PATCH and never answered).
struct PauseLandsThenTimesOut(dataward::demo::control::ControlPlane);

impl dataward::effects::orchestrator::Orchestrator for PauseLandsThenTimesOut {
    fn pipelines(&self) -> anyhow::Result<Vec<dataward::effects::orchestrator::Pipeline>> {
        self.0.pipelines()
    }
    fn schedule(&self, job: &str) -> anyhow::Result<dataward::effects::orchestrator::Schedule> {
        self.0.schedule(job)
    }
    fn pause(&self, job: &str) -> anyhow::Result<Option<String>> {
        self.0.pause(job)?;
        anyhow::bail!("PATCH /api/v2/dags/{job}: operation timed out")
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
        self.0.queue_run(job, at, by, key)
    }
    fn run(
        &self,
        job: &str,
        id: &str,
    ) -> anyhow::Result<Option<dataward::effects::orchestrator::RunRecord>> {
        self.0.run(job, id)
    }
}

/// Item 3, the orchestrator that timed out: the approval is refused, and what the
/// pause did anyway is put back; no later request or turn carries it out.
#[test]
fn an_approval_refused_for_an_orchestrator_timeout_leaves_nothing_behind() {
    use dataward::demo::control::ControlPlane;
    use dataward::engine::api::{Command, Outcome, ProposalKind};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let owner = story::owner();
    let (mut scenario, mut engine) = dataward::demo::prepare(d, &owner).unwrap();
    story::play_minutes(
        &mut scenario,
        &mut engine,
        story::start(),
        story::start() + chrono::TimeDelta::minutes(50),
        |_, _| Vec::new(),
    );
    drop(engine);
    let estate = d.join("estate");
    let config = dataward::config::Config::load(&estate.join("dataward.toml")).unwrap();
    let state = dataward::store::open(&d.join("dataward.db")).unwrap();
    let scheduler = Box::new(PauseLandsThenTimesOut(ControlPlane::new(
        estate.join("control.db"),
    )));
    let mut engine = dataward::engine::Engine::new(config, state, Some(scheduler), &owner).unwrap();
    let proposals = engine.snapshot(false).incidents[0].proposals.clone();
    let hold = proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Hold)
        .unwrap();
    let note = proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Note)
        .unwrap();
    let dataward::engine::api::ProposalBody::Hold { job, .. } = &hold.body else {
        unreachable!()
    };
    let control = ControlPlane::new(estate.join("control.db"));

    let answer = engine.request(
        Command::Approve {
            proposal: hold.id.clone(),
            content_hash: hold.content_hash.clone(),
            reason: "hold it".into(),
        },
        &owner,
    );
    let Outcome::Refused { reason } = answer else {
        panic!("accepted: {answer:?}")
    };
    assert!(reason.message.contains("timed out"), "{}", reason.message);
    assert!(!control.is_paused(job).unwrap(), "{}", reason.message);

    engine.request(
        Command::Forward {
            proposal: note.id.clone(),
        },
        &owner,
    );
    engine
        .tick(story::start() + chrono::TimeDelta::minutes(51))
        .unwrap();
    assert!(!control.is_paused(job).unwrap());
    assert_eq!(decisions(d, &hold.id), Vec::<String>::new());
    assert_eq!(pending_intents(d), 0);
}
