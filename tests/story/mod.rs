//! The demo stories for tests: the ticketing story driven through the library, minute
//! by minute, for tests that need to act between the engine's turns; and either story
//! played headless through the real binary.

#![allow(dead_code)]

use std::path::Path;

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::engine::api::{Command, Event, EventKind, ProposalKind};
use dataward::engine::Engine;

pub fn owner() -> Actor {
    let mut actor = Actor::current();
    actor.stand_in = Some("analytics-owner".into());
    actor
}

pub fn start() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 24)
        .unwrap()
        .and_hms_opt(13, 30, 0)
        .unwrap()
}

/// Plays minutes `from..=to` of the story, letting `decide` answer each event, and once
/// a minute with no event. Returns every event.
pub fn play_minutes(
    scenario: &mut dataward::demo::scenario::Scenario,
    engine: &mut Engine,
    from: NaiveDateTime,
    to: NaiveDateTime,
    mut decide: impl FnMut(Option<&Event>, &mut Engine) -> Vec<Event>,
) -> Vec<Event> {
    let mut events = Vec::new();
    let mut now = from;
    while now <= to {
        scenario.step(now).unwrap();
        let mut pending = engine.tick(now).unwrap();
        pending.extend(decide(None, engine));
        while let Some(event) = pending.pop() {
            pending.extend(decide(Some(&event), engine));
            events.push(event);
        }
        now += TimeDelta::minutes(1);
    }
    events
}

/// Plays the story to 15:10 with the domain's autonomy line replaced.
pub fn play(
    dir: &Path,
    autonomy: &str,
    decide: impl FnMut(Option<&Event>, &mut Engine) -> Vec<Event>,
) -> (Vec<Event>, Engine) {
    let (mut scenario, mut engine) = dataward::demo::prepare_with(dir, &owner(), |text| {
        text.replacen("autonomy = \"L2\"", autonomy, 1)
    })
    .unwrap();
    let events = play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(100),
        decide,
    );
    (events, engine)
}

pub fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Approves every hold and diff the moment it is proposed.
pub fn approve_all(event: Option<&Event>, engine: &mut Engine) -> Vec<Event> {
    match event.map(|e| &e.kind) {
        Some(EventKind::Proposal {
            proposal,
            kind,
            content_hash,
            ..
        }) if *kind != ProposalKind::Note => engine.handle(
            Command::Approve {
                proposal: proposal.clone(),
                content_hash: content_hash.clone(),
                reason: "ok".into(),
            },
            &owner(),
        ),
        _ => Vec::new(),
    }
}

/// Counts chain records of one kind in a data directory's state database.
pub fn count(dir: &Path, kind: &str) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("dataward.db")).unwrap();
    conn.query_row("SELECT count(*) FROM chain WHERE kind = ?1", [kind], |r| {
        r.get(0)
    })
    .unwrap()
}

/// Runs the binary with `args` on the data directory `dir`.
pub fn dataward(args: &[&str], dir: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("the binary runs")
}

/// Plays `story` headless as fast as it goes, with the stand-in playing `owner`; every
/// line of the timeline, parsed.
pub fn headless(story: &str, owner: &str, dir: &Path) -> Vec<serde_json::Value> {
    let out = dataward(
        &[
            "demo",
            story,
            "--headless",
            "--json",
            "--approve-as",
            owner,
            "--speed",
            "100000000",
        ],
        dir,
    );
    assert!(
        out.status.success(),
        "demo {story} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

/// The first event named `name`.
pub fn first<'a>(events: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    events
        .iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name} event"))
}

/// Every event named `name`.
pub fn all<'a>(events: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

/// When an event happened.
pub fn at(e: &serde_json::Value) -> &str {
    e["at"].as_str().unwrap()
}

/// A story's words that must never show up in another's output.
pub fn assert_none_of(words: &[&str], events: &[serde_json::Value]) {
    let text = serde_json::to_string(events).unwrap().to_lowercase();
    for word in words {
        assert!(
            !text.contains(&word.to_lowercase()),
            "{word:?} reached another story's output"
        );
    }
}

/// The ticketing story's own words.
pub const TICKETING_WORDS: &[&str] = &["ticketing", "seat_section", "FLOOR-A", "int_seat_map"];
/// The courier payouts story's own words.
pub const PAYOUTS_WORDS: &[&str] = &["courier", "payout", "fct_deliveries", "signing key"];
