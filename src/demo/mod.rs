//! `dataward demo`: the real engine on an embedded estate, with a virtual clock that
//! plays Tuesday 14:00 to 15:10 in about 70 seconds. The scenario only changes data and
//! schema; everything on screen comes from the engine.

pub mod control;
pub mod estate;
pub mod scenario;

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

use crate::approve::Actor;
use crate::config::Config;
use crate::engine::api::{Command, Event, EventKind, ProposalKind, Snapshot};
use crate::engine::session::{publish, serve_until, with_console};
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
fn warm_up_start() -> NaiveDateTime {
    at(13, 30)
}
fn story_start() -> NaiveDateTime {
    at(14, 0)
}
fn story_end() -> NaiveDateTime {
    at(15, 10)
}

/// Builds the estate and the engine on it.
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
    let estate = estate::build(&data_dir.join("estate"), actor.user.as_deref())?;
    let text = std::fs::read_to_string(estate.config())?;
    std::fs::write(estate.config(), edit_config(text))?;
    let config = Config::load(&estate.config())?;
    let state = crate::store::open(&data_dir.join("dataward.db"))?;
    // Observations belong to the estate, which was just rebuilt; the chain is kept.
    state
        .execute("DELETE FROM observation", [])
        .context("clearing the previous demo's observations")?;
    let orchestrator = Box::new(control::ControlPlane::new(estate.control_db()));
    let engine = Engine::new(config, state, Some(orchestrator), actor)?;
    Ok((Scenario::new(estate), engine))
}

/// Plays the story minute by minute. `commands` carries what people (or the headless
/// stand-in) decide; every event goes to `emit`; a snapshot after each change goes to
/// `snapshots`. Returns when the story is over and, for a console, when it hangs up.
pub fn play(
    options: &DemoOptions,
    scenario: &mut Scenario,
    engine: &mut Engine,
    actor: &Actor,
    commands: &Receiver<Command>,
    emit: &mut dyn FnMut(&Event),
    snapshots: Option<&Sender<Snapshot>>,
) -> Result<()> {
    let mut stand_in = options
        .approve_as
        .as_ref()
        .map(|role| StandIn::new(actor, role));
    let mut now = warm_up_start();
    while now <= story_end() {
        for step in scenario.step(now)? {
            emit(&Event {
                at: crate::engine::timestamp(now),
                kind: EventKind::Scenario { step },
            });
        }
        let events = engine.tick(now)?;
        for event in &events {
            emit(event);
        }
        if let Some(stand_in) = stand_in.as_mut() {
            for command in stand_in.react(&events, engine) {
                for event in engine.handle(command, &stand_in.actor) {
                    emit(&event);
                }
            }
        }
        publish(engine, snapshots, false);
        // Before the story starts, the monitors only learn: play it ten times faster.
        let speed = if now < story_start() {
            options.speed * 10.0
        } else {
            options.speed
        };
        let deadline = Instant::now() + Duration::from_secs_f64(60.0 / speed.max(0.001));
        if !serve_until(engine, commands, actor, deadline, emit, snapshots, false) {
            return Ok(()); // the console quit
        }
        now += TimeDelta::minutes(1);
    }
    publish(engine, snapshots, true);
    // The clock has stopped; a console can still decide and read until it quits.
    if snapshots.is_some() {
        let forever = Instant::now() + Duration::from_secs(100 * 365 * 86_400);
        while serve_until(engine, commands, actor, forever, emit, snapshots, true) {}
    }
    Ok(())
}

/// Plays the owner the way the story does: approves the hold and the diff, forwards the
/// note, and queues the approved run once the row count is back at its baseline. Its
/// commands go through the same policy as a person's.
struct StandIn {
    actor: Actor,
    queued: Vec<String>,
    open: Vec<(String, String)>,
}

impl StandIn {
    fn new(actor: &Actor, role: &str) -> StandIn {
        let mut actor = actor.clone();
        actor.stand_in = Some(role.to_string());
        StandIn {
            actor,
            queued: Vec::new(),
            open: Vec::new(),
        }
    }

    fn react(&mut self, events: &[Event], engine: &Engine) -> Vec<Command> {
        let mut commands = Vec::new();
        for event in events {
            match &event.kind {
                EventKind::IncidentOpened {
                    incident, monitor, ..
                } => self.open.push((incident.clone(), monitor.clone())),
                EventKind::Proposal {
                    proposal,
                    kind,
                    content_hash,
                    ..
                } => commands.push(match kind {
                    ProposalKind::Note => Command::Forward {
                        proposal: proposal.clone(),
                    },
                    _ => Command::Approve {
                        proposal: proposal.clone(),
                        content_hash: content_hash.clone(),
                        reason: "demo stand-in: approved as in the story".to_string(),
                    },
                }),
                EventKind::IncidentResolved { incident } => {
                    self.open.retain(|(i, _)| i != incident)
                }
                _ => {}
            }
        }
        for (incident, monitor) in &self.open {
            if engine.recovered(monitor) && !self.queued.contains(incident) {
                self.queued.push(incident.clone());
                commands.push(Command::QueueRun {
                    incident: incident.clone(),
                });
            }
        }
        commands
    }
}

/// `dataward demo --headless`: the timeline on stdout, JSON lines or text.
pub fn run_headless(options: DemoOptions, json: bool) -> Result<()> {
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (mut scenario, mut engine) = prepare(&options.data_dir, &actor)?;
    let (_tx, rx) = mpsc::channel::<Command>();
    let mut emit = |event: &Event| {
        if json {
            println!(
                "{}",
                serde_json::to_string(event).expect("events serialize")
            );
        } else {
            println!("{}", describe(event));
        }
    };
    play(
        &options,
        &mut scenario,
        &mut engine,
        &actor,
        &rx,
        &mut emit,
        None,
    )
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

/// `dataward demo`: the console on the live engine. The engine plays on its own thread;
/// the console only sends commands and draws snapshots.
pub fn run_console(options: DemoOptions) -> Result<()> {
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let actor = Actor::current();
    let (mut scenario, mut engine) = prepare(&options.data_dir, &actor)?;
    with_console(false, move |commands, snapshots| {
        let mut emit = |_: &Event| {};
        play(
            &options,
            &mut scenario,
            &mut engine,
            &actor,
            &commands,
            &mut emit,
            Some(&snapshots),
        )
    })
}
