//! `dataward demo`: the real engine on an embedded estate, with a virtual clock that
//! plays Tuesday 14:00 to 15:10 in about 70 seconds. The scenario only changes data and
//! schema; everything on screen comes from the engine.

pub mod control;
pub mod estate;
pub mod scenario;

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

use crate::approve::Actor;
use crate::config::Config;
use crate::engine::api::{Command, Event, EventKind, IncidentStatus, ProposalKind, ProposalState};
use crate::engine::hub::{Driver, Hub, HubMessage};
use crate::engine::server;
use crate::engine::Engine;
use scenario::Scenario;

pub struct DemoOptions {
    pub data_dir: PathBuf,
    /// Virtual seconds per real second (60: a minute a second).
    pub speed: f64,
    /// Headless: play the owner as this role (approve, forward, queue the run).
    pub approve_as: Option<String>,
}

/// The story's day: Tuesday 24 November 2026.
fn at(hour: u32, minute: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 24)
        .and_then(|d| d.and_hms_opt(hour, minute, 0))
        .expect("valid time")
}

/// Monitors learn their baseline from 13:30; the story proper starts at 14:00.
pub fn warm_up_start() -> NaiveDateTime {
    at(13, 30)
}
fn story_start() -> NaiveDateTime {
    at(14, 0)
}
fn story_end() -> NaiveDateTime {
    at(15, 10)
}

/// The role the story's owner holds: the only one `--approve-as` plays.
pub const OWNER_ROLE: &str = "analytics-owner";

/// The stories `dataward demo` can play, the first by default.
pub const STORIES: &[&str] = &["ticketing"];

/// Marks a state database as a demo's, and keeps the demo's virtual clock.
const DEMO_MARK: &str = "demo.story";
const DEMO_CLOCK: &str = "demo.clock";
const DEMO_FINISHED: &str = "demo.finished";

/// Builds the estate and the engine on it, starting the story afresh.
pub fn prepare(data_dir: &std::path::Path, actor: &Actor) -> Result<(Scenario, Engine)> {
    prepare_with(data_dir, actor, |config| config)
}

/// Like [`prepare`], with the estate's config text edited first (tests try other
/// policies on the same story this way).
pub fn prepare_with(
    data_dir: &std::path::Path,
    actor: &Actor,
    edit_config: impl FnOnce(String) -> String,
) -> Result<(Scenario, Engine)> {
    refuse_live_chain(data_dir)?;
    // A demo directory holds only the demo: starting over clears it whole (no
    // connection is open on it here).
    for name in [
        "dataward.db",
        "dataward.db-wal",
        "dataward.db-shm",
        "dataward.db.checkpoint",
    ] {
        let path = data_dir.join(name);
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("clearing the old demo: {}", path.display()))?;
        }
    }
    let estate = estate::build(&data_dir.join("estate"), actor.user.as_deref())?;
    let text = std::fs::read_to_string(estate.config())?;
    std::fs::write(estate.config(), edit_config(text))?;
    let config = Config::load(&estate.config())?;
    let state = crate::store::open(&data_dir.join("dataward.db"))?;
    state.execute(
        "INSERT INTO meta (key, value) VALUES (?1, 'ticketing')",
        [DEMO_MARK],
    )?;
    let orchestrator = Box::new(control::ControlPlane::new(estate.control_db()));
    let engine = Engine::new(config, state, Some(orchestrator), actor)?;
    Ok((Scenario::new(estate), engine))
}

/// The demo never shares a data directory with a live engine: a chain that is not a
/// demo's is refused, never cleared or mixed with stand-in approvals.
fn refuse_live_chain(data_dir: &std::path::Path) -> Result<()> {
    let path = data_dir.join("dataward.db");
    if !path.exists() {
        return Ok(());
    }
    let state = crate::store::open(&path)?;
    let records: u64 = state.query_row("SELECT count(*) FROM chain", [], |r| r.get(0))?;
    let demo: Option<String> = state
        .query_row("SELECT value FROM meta WHERE key = ?1", [DEMO_MARK], |r| {
            r.get(0)
        })
        .ok();
    anyhow::ensure!(
        records == 0 || demo.is_some(),
        "{} holds a live chain of {records} records, not a demo's; the demo plays in a data \
         directory of its own (leave out --data-dir for the default, or name an empty one)",
        data_dir.display()
    );
    Ok(())
}

/// An interrupted demo in `data_dir`, ready to carry on: the estate as it was, the
/// engine read back from its state database, and the minute to play next. None when
/// there is no demo there or it finished (then it starts afresh).
pub fn resume(
    data_dir: &std::path::Path,
    actor: &Actor,
) -> Result<Option<(Scenario, Engine, NaiveDateTime)>> {
    let path = data_dir.join("dataward.db");
    let estate_dir = data_dir.join("estate");
    if !path.exists() || !estate_dir.join("dataward.toml").exists() {
        return Ok(None);
    }
    refuse_live_chain(data_dir)?;
    let state = crate::store::open(&path)?;
    let meta = |key: &str| -> Option<String> {
        state
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .ok()
    };
    let clock = meta(DEMO_CLOCK)
        .and_then(|at| NaiveDateTime::parse_from_str(&at, "%Y-%m-%dT%H:%M:%SZ").ok());
    let (Some(_), Some(clock), None) = (meta(DEMO_MARK), clock, meta(DEMO_FINISHED)) else {
        return Ok(None);
    };
    let estate = estate::Estate { dir: estate_dir };
    let config = Config::load(&estate.config())?;
    let orchestrator = Box::new(control::ControlPlane::new(estate.control_db()));
    let engine = Engine::new(config, state, Some(orchestrator), actor)?;
    Ok(Some((
        Scenario::new(estate),
        engine,
        clock + TimeDelta::minutes(1),
    )))
}

/// Resumes an interrupted demo in `data_dir`, or starts one.
fn open_story(
    data_dir: &std::path::Path,
    actor: &Actor,
) -> Result<(Scenario, Engine, NaiveDateTime)> {
    if let Some(resumed) = resume(data_dir, actor)? {
        return Ok(resumed);
    }
    let (scenario, engine) = prepare(data_dir, actor)?;
    Ok((scenario, engine, warm_up_start()))
}

/// The story as the engine's clock: one virtual minute a turn, at the demo's speed.
/// Each minute the outside world moves (the scenario), the engine takes its turn, the
/// stand-in (if any) decides, and the clock is kept in the state database, so a demo
/// killed at any moment resumes where it was.
pub struct Story {
    scenario: Scenario,
    stand_in: Option<StandIn>,
    now: NaiveDateTime,
    speed: f64,
    next: Instant,
    finished: bool,
}

impl Story {
    pub fn new(
        options: &DemoOptions,
        scenario: Scenario,
        actor: &Actor,
        from: NaiveDateTime,
    ) -> Story {
        Story {
            scenario,
            stand_in: options
                .approve_as
                .as_ref()
                .map(|role| StandIn::new(actor, role)),
            now: from,
            speed: options.speed,
            next: Instant::now(),
            finished: from > story_end(),
        }
    }

    /// The last minute played.
    pub fn clock(&self) -> NaiveDateTime {
        self.now - TimeDelta::minutes(1)
    }

    /// Plays one virtual minute and says what happened.
    pub fn minute(&mut self, engine: &mut Engine) -> Result<Vec<Event>> {
        let now = self.now;
        let mut events: Vec<Event> = self
            .scenario
            .step(now)?
            .into_iter()
            .map(|step| Event {
                at: crate::engine::timestamp(now),
                kind: EventKind::Scenario { step },
            })
            .collect();
        events.extend(engine.tick(now)?);
        if let Some(stand_in) = self.stand_in.as_mut() {
            for command in stand_in.react(engine) {
                events.extend(engine.handle(command, &stand_in.actor));
            }
        }
        engine.remember(DEMO_CLOCK, &crate::engine::timestamp(now))?;
        // Before the story starts, the monitors only learn: play it ten times faster.
        let speed = if now < story_start() {
            self.speed * 10.0
        } else {
            self.speed
        };
        self.next = Instant::now() + Duration::from_secs_f64(60.0 / speed.max(0.001));
        self.now += TimeDelta::minutes(1);
        if self.now > story_end() {
            engine.remember(DEMO_FINISHED, &crate::engine::timestamp(story_end()))?;
            self.finished = true;
        }
        Ok(events)
    }
}

impl Driver for Story {
    fn next_turn(&self) -> Instant {
        if self.finished {
            // The clock has stopped; people can still decide and read.
            Instant::now() + Duration::from_secs(3600)
        } else {
            self.next
        }
    }

    fn turn(&mut self, engine: &mut Engine) -> Result<Vec<Event>> {
        self.minute(engine)
    }

    fn react(&mut self, _engine: &mut Engine) -> Result<Vec<Event>> {
        // The demo polls on its own virtual clock, in its turns.
        Ok(Vec::new())
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

/// Plays the whole story from `from` in this thread, as fast as it can, with nobody
/// deciding but the stand-in (if any); every event goes to `emit`. For tests.
pub fn play(
    options: &DemoOptions,
    scenario: Scenario,
    engine: &mut Engine,
    actor: &Actor,
    from: NaiveDateTime,
    emit: &mut dyn FnMut(&Event),
) -> Result<()> {
    let mut story = Story::new(options, scenario, actor, from);
    while !story.finished() {
        for event in story.minute(engine)? {
            emit(&event);
        }
    }
    Ok(())
}

/// Plays the owner the way the story does: approves the hold and the diff, forwards the
/// note, and queues the approved run once the row count is back at its baseline. It
/// reads what to do from the engine's state, not from events it may have missed (a
/// resumed demo replays none), and its commands go through the same policy as a
/// person's.
struct StandIn {
    actor: Actor,
    /// What it already asked for in this process: a refusal is not retried.
    asked: std::collections::BTreeSet<String>,
}

impl StandIn {
    fn new(actor: &Actor, role: &str) -> StandIn {
        let mut actor = actor.clone();
        actor.stand_in = Some(role.to_string());
        StandIn {
            actor,
            asked: std::collections::BTreeSet::new(),
        }
    }

    fn react(&mut self, engine: &Engine) -> Vec<Command> {
        let mut commands = Vec::new();
        for incident in engine.snapshot(false).incidents {
            if incident.status == IncidentStatus::Resolved {
                continue;
            }
            for p in &incident.proposals {
                if p.state != ProposalState::Pending || !self.asked.insert(p.id.clone()) {
                    continue;
                }
                commands.push(match p.kind {
                    ProposalKind::Note => Command::Forward {
                        proposal: p.id.clone(),
                    },
                    _ => Command::Approve {
                        proposal: p.id.clone(),
                        content_hash: p.content_hash.clone(),
                        reason: "demo stand-in: approved as in the story".to_string(),
                    },
                });
            }
            let hold_approved = incident
                .proposals
                .iter()
                .any(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved);
            if hold_approved
                && incident.status == IncidentStatus::Open
                && incident.run_status.is_none()
                && engine.recovered(&incident.id)
                && self.asked.insert(format!("run {}", incident.id))
            {
                commands.push(Command::QueueRun {
                    incident: incident.id.clone(),
                });
            }
        }
        commands
    }
}

/// `dataward demo --headless`: the timeline on stdout, JSON lines or text.
pub fn run_headless(options: DemoOptions, json: bool) -> Result<()> {
    check_role(&options)?;
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (scenario, engine, from) = open_story(&options.data_dir, &actor)?;
    let (hub_tx, hub_rx) = mpsc::channel();
    serve_socket(&options, &hub_tx)?;
    // A signal ends the story after the minute in hand; the same command carries on.
    crate::signals::catch()?;
    server::stop_on_signal(hub_tx.clone());
    let emit = move |event: &Event| {
        if json {
            println!(
                "{}",
                crate::sanitize::json(event, false).expect("events serialize")
            );
        } else {
            println!("{}", crate::sanitize::for_terminal(&describe(event)));
        }
    };
    let mut story = Story::new(&options, scenario, &actor, from);
    let result = Hub::new(engine, hub_rx, Box::new(emit))
        .stopping_when_finished()
        .run(&mut story);
    let _ = std::fs::remove_file(server::socket_path(&options.data_dir));
    drop(hub_tx);
    result?;
    if let Some(signal) = crate::signals::quit_signal() {
        eprintln!(
            "dataward: stopped by signal {signal} after {} (virtual); run the same command to resume",
            crate::engine::timestamp(story.clock())
        );
    }
    Ok(())
}

/// The demo serves its socket like `dataward serve`: people decide through a console
/// (`dataward --data-dir DIR`) or the CLI while it plays. Returns the estate's config.
fn serve_socket(
    options: &DemoOptions,
    hub_tx: &mpsc::Sender<HubMessage>,
) -> Result<std::sync::Arc<Config>> {
    let config = Config::load(&options.data_dir.join("estate").join("dataward.toml"))?;
    let listener = server::bind(&options.data_dir, &config)?;
    let config = std::sync::Arc::new(config);
    {
        let (config, hub_tx) = (std::sync::Arc::clone(&config), hub_tx.clone());
        std::thread::spawn(move || server::accept(listener, config, hub_tx));
    }
    Ok(config)
}

/// `--approve-as` plays the story's owner, nobody else: not an escalation target nobody
/// asked for, not a made-up role.
fn check_role(options: &DemoOptions) -> Result<()> {
    match &options.approve_as {
        Some(role) if role != OWNER_ROLE => anyhow::bail!(
            "--approve-as {role:?}: the demo's stand-in plays only the role the story's owner holds ({OWNER_ROLE})"
        ),
        _ => Ok(()),
    }
}

fn describe(event: &Event) -> String {
    let time = event.at.get(11..16).unwrap_or(&event.at);
    let body = serde_json::to_value(&event.kind).unwrap_or_default();
    let name = body["event"].as_str().unwrap_or("event").to_string();
    let rest: Vec<String> = body
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "event")
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            serde_json::Value::Array(a) => format!("{k}=[{} items]", a.len()),
            other => format!("{k}={other}"),
        })
        .collect();
    format!("{time} {name:<18} {}", rest.join("  "))
}

/// `dataward demo`: the story played through the engine's hub, with this console
/// attached in this process and the socket served, so `dataward --data-dir DIR` in a
/// second terminal attaches to the same live story. Quitting this console ends the demo.
pub fn run_console(options: DemoOptions) -> Result<()> {
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (scenario, engine, from) = open_story(&options.data_dir, &actor)?;
    let (hub_tx, hub_rx) = mpsc::channel();
    let config = serve_socket(&options, &hub_tx)?;
    // This console is a client like any other: named and allowed as the policy says.
    let (who, read_only) =
        server::admit(&config, &actor, false).unwrap_or_else(|_| (actor.display(), false));
    let mut story = Story::new(&options, scenario, &actor, from);
    let hub = std::thread::Builder::new()
        .name("dataward-hub".into())
        .spawn(move || Hub::new(engine, hub_rx, Box::new(|_| {})).run(&mut story))?;
    let console =
        crate::engine::attach::in_process(&hub_tx, actor, who, read_only).and_then(|link| {
            crate::console::run(
                link,
                crate::console::ConsoleOptions {
                    read_only,
                    theme: None,
                    theme_name: None,
                },
            )
        });
    let _ = hub_tx.send(HubMessage::Stop);
    let engine = match hub.join() {
        Ok(result) => result.map(|_| ()),
        Err(_) => Err(anyhow::anyhow!("the engine thread panicked")),
    };
    let _ = std::fs::remove_file(server::socket_path(&options.data_dir));
    console.and(engine)
}
