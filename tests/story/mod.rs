//! The ticketing story driven through the library, minute by minute, for tests that
//! need to act between the engine's turns.

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
