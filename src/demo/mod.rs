//! `dataward demo`: the real engine on an embedded estate, with a virtual clock. Two
//! stories play on it (PRODUCT.md's A and B): each builds its own estate and plays its
//! own outside world, which only changes data and schema; everything on screen comes
//! from the engine.

pub mod control;
pub mod payouts;
pub mod scenario;
pub mod ticketing;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{NaiveDateTime, TimeDelta};

use crate::approve::Actor;
use crate::config::Config;
use crate::engine::api::{
    Command, Event, EventKind, IncidentStatus, Outcome, ProposalKind, ProposalState, Request,
};
use crate::engine::hub::{Driver, Hub, HubMessage};
use crate::engine::server;
use crate::engine::{Answer, Engine};
use crate::store::place::STATE_FILE;
use scenario::{Scenario, WorldThread};

/// The stories `dataward demo` can play, the first by default.
pub const STORIES: &[&str] = &["ticketing", "payouts"];

/// The shape of a story: when it plays, how fast, and who its owner is.
pub struct Plot {
    pub name: &'static str,
    /// Monitors learn from here, ten times faster; the story proper starts at `start`.
    pub warm_up: NaiveDateTime,
    pub start: NaiveDateTime,
    pub end: NaiveDateTime,
    /// Virtual time each turn plays.
    pub turn: TimeDelta,
    /// Virtual seconds per real second when `--speed` is not given.
    pub speed: f64,
    /// The role the story's owner holds: the only one `--approve-as` plays.
    pub owner_role: &'static str,
    /// What the owner approves in the story (notes are forwarded; nothing else is
    /// decided, as nobody did in the story).
    pub approves: &'static [ProposalKind],
}

/// The plot of a story by its name.
pub fn plot(story: &str) -> Result<Plot> {
    match story {
        "ticketing" => Ok(ticketing::plot()),
        "payouts" => Ok(payouts::plot()),
        other => anyhow::bail!(
            "no demo story {other:?}; the stories are {}",
            STORIES.join(", ")
        ),
    }
}

/// Builds a story's estate from nothing under `dir` (the estate's config is
/// `dir/dataward.toml`, its scheduler `dir/control.db`).
fn build_estate(story: &str, dir: &Path, console_user: Option<&str>) -> Result<()> {
    match story {
        "payouts" => payouts::build(dir, console_user),
        _ => ticketing::build(dir, console_user),
    }
}

/// The outside world of a story whose estate is in `dir`.
fn world(story: &str, dir: &Path) -> Scenario {
    Scenario::new(match story {
        "payouts" => payouts::world(dir),
        _ => ticketing::world(dir),
    })
}

pub struct DemoOptions {
    pub data_dir: PathBuf,
    /// The story to play (one of [`STORIES`]).
    pub story: String,
    /// Virtual seconds per real second (60: a minute a second); the story's own when
    /// None.
    pub speed: Option<f64>,
    /// Headless: play the owner as this role (approve, forward, queue the run).
    pub approve_as: Option<String>,
    /// The console looks but cannot decide (`dataward --read-only demo`).
    pub read_only: bool,
    /// The person's config, for the console's `[console]` and `[keys]` (the demo's engine
    /// has a config of its own).
    pub console_config: Option<PathBuf>,
    /// `--theme NAME|FILE`.
    pub theme: Option<String>,
}

/// Marks a state database as a demo's, and keeps the demo's virtual clock.
const DEMO_MARK: &str = "demo.story";
const DEMO_CLOCK: &str = "demo.clock";
const DEMO_FINISHED: &str = "demo.finished";

fn estate_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("estate")
}

/// The engine on a demo estate: its config, state database and scheduler.
fn engine_on(data_dir: &Path, state: rusqlite::Connection, actor: &Actor) -> Result<Engine> {
    let estate = estate_dir(data_dir);
    let config = Config::load(&estate.join("dataward.toml"))?;
    let orchestrator = Box::new(control::ControlPlane::new(estate.join("control.db")));
    Engine::new(config, state, Some(orchestrator), actor)
}

/// Builds the ticketing estate and the engine on it, starting the story afresh.
pub fn prepare(data_dir: &Path, actor: &Actor) -> Result<(Scenario, Engine)> {
    prepare_story(data_dir, "ticketing", actor, |config| config)
}

/// Like [`prepare`], with the estate's config text edited first (tests try other
/// policies on the same story this way).
pub fn prepare_with(
    data_dir: &Path,
    actor: &Actor,
    edit_config: impl FnOnce(String) -> String,
) -> Result<(Scenario, Engine)> {
    prepare_story(data_dir, "ticketing", actor, edit_config)
}

/// Builds a story's estate and the engine on it, starting the story afresh.
pub fn prepare_story(
    data_dir: &Path,
    story: &str,
    actor: &Actor,
    edit_config: impl FnOnce(String) -> String,
) -> Result<(Scenario, Engine)> {
    plot(story)?;
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
    let dir = estate_dir(data_dir);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot clear the old demo estate {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    build_estate(story, &dir, actor.user.as_deref())?;
    let config_path = dir.join("dataward.toml");
    let text = std::fs::read_to_string(&config_path)?;
    std::fs::write(&config_path, edit_config(text))?;
    let state = crate::store::open(&data_dir.join("dataward.db"))?;
    state.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        [DEMO_MARK, story],
    )?;
    let engine = engine_on(data_dir, state, actor)?;
    Ok((world(story, &dir), engine))
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

/// An interrupted demo of `story` in `data_dir`, ready to carry on: the estate as it
/// was, the engine read back from its state database, and the time to play next. None
/// when there is no demo of that story there or it finished (then it starts afresh).
pub fn resume(
    data_dir: &Path,
    story: &str,
    actor: &Actor,
) -> Result<Option<(Scenario, Engine, NaiveDateTime)>> {
    let path = data_dir.join("dataward.db");
    let dir = estate_dir(data_dir);
    if !path.exists() || !dir.join("dataward.toml").exists() {
        return Ok(None);
    }
    refuse_live_chain(data_dir)?;
    let plot = plot(story)?;
    let state = crate::store::open(&path)?;
    let meta = |key: &str| -> Option<String> {
        state
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .ok()
    };
    let clock = meta(DEMO_CLOCK)
        .and_then(|at| crate::clock::Timestamp::parse(&at).ok())
        .map(crate::clock::Timestamp::naive);
    let (Some(played), Some(clock), None) = (meta(DEMO_MARK), clock, meta(DEMO_FINISHED)) else {
        return Ok(None);
    };
    if played != story {
        return Ok(None);
    }
    let engine = engine_on(data_dir, state, actor)?;
    Ok(Some((world(story, &dir), engine, clock + plot.turn)))
}

/// Resumes an interrupted demo of the story in `data_dir`, or starts one.
fn open_story(
    data_dir: &Path,
    story: &str,
    actor: &Actor,
) -> Result<(Scenario, Engine, NaiveDateTime)> {
    if let Some(resumed) = resume(data_dir, story, actor)? {
        return Ok(resumed);
    }
    let (scenario, engine) = prepare_story(data_dir, story, actor, |config| config)?;
    Ok((scenario, engine, plot(story)?.warm_up))
}

/// The story as the engine's clock: one turn of virtual time at a time, at the demo's
/// speed. Each turn the outside world moves (the scenario, on its own thread), the
/// engine takes its turn, the stand-in (if any) decides, and the clock is kept in the
/// state database, so a demo killed at any moment resumes where it was.
pub struct Story {
    plot: Plot,
    /// The story's world until it is started on its thread (`Driver::start`).
    scenario: Option<Scenario>,
    world: Option<WorldThread>,
    stand_in: Option<StandIn>,
    /// The stand-in's commands not sent yet (see `stand_in_decides`).
    queued: std::collections::VecDeque<Command>,
    now: NaiveDateTime,
    /// The engine's clock, which this moves turn by turn.
    time: crate::clock::VirtualTime,
    speed: f64,
    next: Instant,
    finished: bool,
    /// What the turn in hand waits for, if anything (see `turn`).
    waiting: Option<Waiting>,
}

/// What a turn in hand waits for before it goes on.
#[derive(Clone, Copy, PartialEq)]
enum Waiting {
    /// The world to take its step, on its thread.
    World,
    /// The poll task to read the estate as the world left it.
    Poll,
}

impl Story {
    pub fn new(
        options: &DemoOptions,
        scenario: Scenario,
        actor: &Actor,
        from: NaiveDateTime,
        engine: &mut Engine,
    ) -> Result<Story> {
        let plot = plot(&options.story)?;
        let time = crate::clock::VirtualTime::new(from);
        engine.set_clock(crate::clock::Clock::Virtual(time.clone()));
        Ok(Story {
            time,
            scenario: Some(scenario),
            world: None,
            stand_in: options
                .approve_as
                .as_ref()
                .map(|role| StandIn::new(actor, role, plot.approves)),
            queued: Default::default(),
            now: from,
            speed: options.speed.unwrap_or(plot.speed),
            next: Instant::now(),
            finished: from > plot.end,
            waiting: None,
            plot,
        })
    }

    /// The stand-in's commands, in order: one whose change is on a worker is answered
    /// before the next is sent, as a person waits for their answer (its report brings
    /// the story back here, at the same time in the story).
    fn stand_in_decides(&mut self, engine: &mut Engine, now: NaiveDateTime) -> Vec<Event> {
        let mut events = Vec::new();
        let Some(stand_in) = self.stand_in.as_mut() else {
            return events;
        };
        self.queued.extend(stand_in.react(engine));
        while !engine.awaiting_workers() {
            let Some(command) = self.queued.pop_front() else {
                break;
            };
            events.extend(stand_in.decide(engine, command, now));
        }
        events
    }

    /// The last time played.
    pub fn clock(&self) -> NaiveDateTime {
        self.now - self.plot.turn
    }

    /// Starts the story's world on its thread, reporting each step's events to
    /// `moved`.
    fn start_world(&mut self, moved: impl Fn(Result<Vec<Event>>) + Send + 'static) -> Result<()> {
        let scenario = (self.scenario.take()).context("the story's world is started once")?;
        self.world = Some(WorldThread::start(scenario, move |now, happened| {
            moved(happened.map(|steps| {
                (steps.into_iter())
                    .map(|step| Event {
                        at: crate::clock::Timestamp::from_naive(now),
                        kind: EventKind::Scenario { step },
                    })
                    .collect()
            }))
        })?);
        Ok(())
    }

    /// Starts one turn: the world is asked to move to the turn's time on its thread,
    /// and the turn goes on when it reports (`world_moved`). Behind a hub the engine's
    /// poll is then asked of the poll task, and the turn goes on when it answers
    /// (`after_effect`): the engine's thread moves no world and reads no warehouse and
    /// no scheduler, and the clock stands still until each answer, so the story plays
    /// the same however long a step or a read takes.
    pub fn turn(&mut self, _engine: &mut Engine) -> Result<Vec<Event>> {
        let now = self.now;
        self.time.set(now);
        (self.world.as_ref())
            .context("the story's world was not started")?
            .step(now)?;
        self.waiting = Some(Waiting::World);
        Ok(Vec::new())
    }

    /// The world took the turn's step: what happened, then the poll (see `turn`).
    fn world_moved(
        &mut self,
        engine: &mut Engine,
        happened: Result<Vec<Event>>,
    ) -> Result<Vec<Event>> {
        let mut events = happened?;
        if engine.ask_poll() {
            self.waiting = Some(Waiting::Poll);
            return Ok(events);
        }
        events.extend(self.finish_turn(engine)?);
        Ok(events)
    }

    /// The rest of the turn, once what was polled is stored: the engine acts on it,
    /// the stand-in decides, and the clock is kept and moved on.
    fn finish_turn(&mut self, engine: &mut Engine) -> Result<Vec<Event>> {
        self.waiting = None;
        let now = self.now;
        let mut events = engine.tick(now)?;
        events.extend(self.stand_in_decides(engine, now));
        engine.remember(DEMO_CLOCK, &crate::clock::timestamp(now))?;
        // Before the story starts, the monitors only learn: play it ten times faster.
        let speed = if now < self.plot.start {
            self.speed * 10.0
        } else {
            self.speed
        };
        let turn_seconds = self.plot.turn.num_seconds() as f64;
        self.next = Instant::now() + Duration::from_secs_f64(turn_seconds / speed.max(0.001));
        self.now += self.plot.turn;
        if self.now > self.plot.end {
            engine.remember(DEMO_FINISHED, &crate::clock::timestamp(self.plot.end))?;
            self.finished = true;
        }
        Ok(events)
    }
}

impl Driver for Story {
    fn start(&mut self, post: mpsc::Sender<HubMessage>) -> Result<()> {
        self.start_world(move |happened| {
            let _ = post.send(HubMessage::WorldMoved(happened));
        })
    }

    fn next_turn(&self) -> Instant {
        if self.finished || self.waiting.is_some() {
            // The clock has stopped, or the turn in hand goes on when its answer comes
            // (a message); people can still decide and read.
            Instant::now() + Duration::from_secs(3600)
        } else {
            self.next
        }
    }

    fn turn(&mut self, engine: &mut Engine) -> Result<Vec<Event>> {
        Story::turn(self, engine)
    }

    fn world_moved(
        &mut self,
        engine: &mut Engine,
        happened: Result<Vec<Event>>,
    ) -> Result<Vec<Event>> {
        Story::world_moved(self, engine, happened)
    }

    fn react(&mut self, _engine: &mut Engine) -> Result<Vec<Event>> {
        // The demo polls on its own virtual clock, in its turns.
        Ok(Vec::new())
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn waits_for_workers(&self) -> bool {
        true
    }

    fn after_effect(
        &mut self,
        engine: &mut Engine,
        settled: Option<(i64, &Outcome)>,
    ) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let at = self.clock();
        if let (Some(stand_in), Some((intent, answer))) = (self.stand_in.as_mut(), settled) {
            events.extend(stand_in.answered(intent, answer, at));
        }
        if self.waiting == Some(Waiting::Poll) && !engine.awaiting_poll() {
            events.extend(self.finish_turn(engine)?);
            return Ok(events);
        }
        events.extend(self.stand_in_decides(engine, at));
        Ok(events)
    }
}

/// Plays the whole story from `from` in this thread (its world on its own), as fast as
/// it can, with nobody deciding but the stand-in (if any); every event goes to `emit`.
/// For tests.
pub fn play(
    options: &DemoOptions,
    scenario: Scenario,
    engine: &mut Engine,
    actor: &Actor,
    from: NaiveDateTime,
    emit: &mut dyn FnMut(&Event),
) -> Result<()> {
    let mut story = Story::new(options, scenario, actor, from, engine)?;
    let (moved, world_moved) = mpsc::channel();
    story.start_world(move |happened| {
        let _ = moved.send(happened);
    })?;
    while !story.finished() {
        let mut events = story.turn(engine)?;
        let happened = world_moved
            .recv()
            .context("the story's world thread has stopped")?;
        events.extend(story.world_moved(engine, happened)?);
        for event in events {
            emit(&event);
        }
    }
    Ok(())
}

/// Plays the owner the way the story does: approves what the owner approved in it,
/// forwards notes, and queues an incident's run once its approved hold may lift (the
/// table is back). It reads what to do from the engine's state, not from events it may
/// have missed (a resumed demo replays none), and its commands go through the same
/// policy as a person's.
struct StandIn {
    actor: Actor,
    approves: &'static [ProposalKind],
    /// What it already asked for in this process: a refusal is not retried.
    asked: std::collections::BTreeSet<String>,
    /// Its commands whose change is on a worker, by intent: their answer comes later.
    held: std::collections::BTreeMap<i64, String>,
}

impl StandIn {
    fn new(actor: &Actor, role: &str, approves: &'static [ProposalKind]) -> StandIn {
        let mut actor = actor.clone();
        actor.stand_in = Some(role.to_string());
        StandIn {
            actor,
            approves,
            asked: std::collections::BTreeSet::new(),
            held: std::collections::BTreeMap::new(),
        }
    }

    fn react(&mut self, engine: &Engine) -> Vec<Command> {
        let mut commands = Vec::new();
        for incident in engine.snapshot(false).incidents {
            if incident.status == IncidentStatus::Resolved {
                continue;
            }
            for p in &incident.proposals {
                let decided = p.kind == ProposalKind::Note || self.approves.contains(&p.kind);
                if p.state != ProposalState::Pending || !decided || !self.asked.insert(p.id.clone())
                {
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

    /// Asks the engine as a person's request is asked. Its events, or its refusal as an
    /// event; none yet when its change is on a worker (behind a hub): the hub tells
    /// them once the worker reports.
    fn decide(&mut self, engine: &mut Engine, command: Command, now: NaiveDateTime) -> Vec<Event> {
        let described = format!("{command:?}");
        let request = Request {
            id: 0,
            command,
            client_request: None,
        };
        match engine.answer_or_hold(request, &self.actor) {
            Answer::Now(Outcome::Accepted { events, .. }) => events,
            Answer::Now(Outcome::Refused { reason }) => vec![refused(described, reason, now)],
            Answer::Held(intent) => {
                self.held.insert(intent, described);
                Vec::new()
            }
        }
    }

    /// A worker's answer to intent `intent`: a refusal of one of its own commands is
    /// said as a refusal it got at once is.
    fn answered(&mut self, intent: i64, answer: &Outcome, now: NaiveDateTime) -> Vec<Event> {
        match (self.held.remove(&intent), answer) {
            (Some(described), Outcome::Refused { reason }) => {
                vec![refused(described, reason.clone(), now)]
            }
            _ => Vec::new(),
        }
    }
}

/// The stand-in's command `described`, refused.
fn refused(described: String, reason: crate::engine::api::Refusal, now: NaiveDateTime) -> Event {
    Event {
        at: crate::clock::Timestamp::from_naive(now),
        kind: EventKind::Refused {
            command: described,
            reason: reason.message,
        },
    }
}

/// `dataward demo --headless`: the timeline on stdout, JSON lines or text.
pub fn run_headless(options: DemoOptions, json: bool) -> Result<()> {
    check_role(&options)?;
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (scenario, mut engine, from) = open_story(&options.data_dir, &options.story, &actor)?;
    let (hub_tx, hub_rx) = mpsc::channel();
    let config = serve_socket(&options, &hub_tx)?;
    // Alerts go out only when the estate's config has `[[alert]]`.
    let relay = relay_beside(&mut engine, &config, &options, &hub_tx)?;
    // A signal ends the story after the turn in hand; the same command carries on.
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
    let mut story = Story::new(&options, scenario, &actor, from, &mut engine)?;
    let poll_task = poll_beside(&mut engine, &config, &options, &hub_tx)?;
    let result = Hub::new(engine, hub_rx, hub_tx.clone(), Box::new(emit))
        .stopping_when_finished()
        .run(&mut story);
    poll_task.stop();
    let _ = std::fs::remove_file(server::socket_path(&options.data_dir));
    drop(hub_tx);
    if let Some(relay) = relay {
        relay.stop();
    }
    result?;
    if let Some(signal) = crate::signals::quit_signal() {
        eprintln!(
            "dataward: stopped by signal {signal} after {} (virtual); run the same command to resume",
            crate::clock::timestamp(story.clock())
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

/// The alert relay beside the demo's engine, as `dataward serve` runs it.
fn relay_beside(
    engine: &mut Engine,
    config: &Config,
    options: &DemoOptions,
    hub_tx: &mpsc::Sender<HubMessage>,
) -> Result<Option<crate::notify::relay::Relay>> {
    server::start_relay(
        engine,
        config,
        &options.data_dir.join(STATE_FILE).into(),
        hub_tx.clone(),
    )
}

/// The poll task beside the demo's engine, as `dataward serve` runs it but polling only
/// when the story asks (on its virtual clock, which waits for the answer). Started once
/// the engine is on the story's clock.
fn poll_beside(
    engine: &mut Engine,
    config: &Config,
    options: &DemoOptions,
    hub_tx: &mpsc::Sender<HubMessage>,
) -> Result<crate::engine::poll_task::PollTask> {
    server::start_poll_task(
        engine,
        config,
        &options.data_dir.join(STATE_FILE).into(),
        hub_tx.clone(),
        true,
    )
}

/// `--approve-as` plays the story's owner, nobody else: not an escalation target nobody
/// asked for, not a made-up role.
fn check_role(options: &DemoOptions) -> Result<()> {
    let owner = plot(&options.story)?.owner_role;
    match &options.approve_as {
        Some(role) if role != owner => anyhow::bail!(
            "--approve-as {role:?}: the demo's stand-in plays only the role the {} story's owner holds ({owner})",
            options.story
        ),
        _ => Ok(()),
    }
}

fn describe(event: &Event) -> String {
    let time = event.at.naive().format("%a %H:%M").to_string();
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
    // The person's theme and keys first: a broken one is said before the story starts.
    crate::console::prefs::load(options.console_config.as_deref(), options.theme.as_deref())
        .and_then(|prefs| crate::console::prefs::theme_parts(prefs.theme.as_ref()))?;
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (scenario, mut engine, from) = open_story(&options.data_dir, &options.story, &actor)?;
    let (hub_tx, hub_rx) = mpsc::channel();
    let config = serve_socket(&options, &hub_tx)?;
    let relay = relay_beside(&mut engine, &config, &options, &hub_tx)?;
    // This console is a client like any other: named and allowed as the policy says.
    let (who, read_only) = server::admit(&config, &actor, options.read_only)
        .unwrap_or_else(|_| (actor.display(), options.read_only));
    let mut story = Story::new(&options, scenario, &actor, from, &mut engine)?;
    let poll_task = poll_beside(&mut engine, &config, &options, &hub_tx)?;
    let post = hub_tx.clone();
    let hub = std::thread::Builder::new()
        .name("dataward-hub".into())
        .spawn(move || Hub::new(engine, hub_rx, post, Box::new(|_| {})).run(&mut story))?;
    let console =
        crate::engine::attach::in_process(&hub_tx, actor, who, read_only).and_then(|link| {
            crate::console::run(
                link,
                crate::console::ConsoleOptions {
                    read_only,
                    config: options.console_config.clone(),
                    theme: options.theme.clone(),
                },
            )
        });
    let _ = hub_tx.send(HubMessage::Stop);
    let engine = match hub.join() {
        Ok(result) => result.map(|_| ()),
        Err(_) => Err(anyhow::anyhow!("the engine thread panicked")),
    };
    poll_task.stop();
    let _ = std::fs::remove_file(server::socket_path(&options.data_dir));
    if let Some(relay) = relay {
        relay.stop();
    }
    console.and(engine)
}
