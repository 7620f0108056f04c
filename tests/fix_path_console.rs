//! The fix path as a new user meets it (issue 34): what the console and the command
//! line say is so. Here: a forwarded note says where it went, or that it went nowhere
//! and what to configure. The engine is the headless demo, which serves its socket like
//! `dataward serve` and, with no `[[alert]]` in its config, has nowhere to send a note.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/http.rs"]
mod http;
mod story;
#[path = "support/tmux.rs"]
mod terminal;

use binary::{dataward, text, Engine};

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use dataward::engine::api::{EventKind, ProposalKind};
use dataward::notify::relay::{Backoff, Carrier, Jitter, Marks, Next};
use http::{Api, FakeApi};
use serde_json::Value;
use story::{owner, play_minutes, start};
use terminal::{tmux, tmux_available, wait_for, Session};

fn start_demo(dir: &Path) -> Engine {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["demo", "ticketing", "--headless", "--json", "--speed", "60"])
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Engine(child)
}

/// The note proposal of INC-0001, once the engine has proposed it.
fn note_of_the_first_incident(dir: &Path) -> String {
    for _ in 0..1200 {
        let out = dataward(&["show", "INC-0001", "--json"], dir);
        if out.status.success() {
            let incident: Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(note) = incident["proposals"]
                .as_array()
                .and_then(|p| p.iter().find(|p| p["kind"] == "note"))
            {
                return note["id"].as_str().unwrap().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no note proposed");
}

/// `f` (and `dataward forward`) said "forwarded" with no alert destination configured:
/// the note went nowhere. Now the answer says it went nowhere and what to configure,
/// and the chain records where it was sent (nowhere).
#[test]
fn a_note_forwarded_with_nowhere_to_go_says_so_and_what_to_configure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _engine = start_demo(d);
    let note = note_of_the_first_incident(d);
    let forwarded = dataward(&["forward", &note], d);
    let said = text(&forwarded);
    assert_eq!(forwarded.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "{note} went nowhere: no [[alert]] destination is configured"
        )) && said.contains("add an [[alert]]"),
        "{said}"
    );
    // The chain says where it went: nowhere.
    let shown = dataward(&["show", "INC-0001", "--json"], d);
    assert!(shown.status.success(), "{}", text(&shown));
    let conn = rusqlite::Connection::open(d.join("dataward.db")).unwrap();
    let sent_to: String = conn
        .query_row(
            "SELECT json_extract(payload, '$.sent_to') FROM chain WHERE kind = 'decision'
               AND json_extract(payload, '$.verdict') = 'forwarded'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(sent_to, "[]");
}

/// With a destination configured, a forwarded note says where it went, and goes: the
/// Slack stand-in receives it, with the note's text, after the incident's own alert.
#[test]
fn a_forwarded_note_says_where_it_went_and_arrives_there() {
    let dir = tempfile::tempdir().unwrap();
    let slack = FakeApi::start(Api::Slack, "T0/B0/notesecret");
    std::env::set_var("DATAWARD_TEST_NOTE_SLACK", slack.base_url());
    let alerts = "\n[[alert]]\nname = \"oncall\"\nkind = \"slack\"\nwebhook_url_env = \"DATAWARD_TEST_NOTE_SLACK\"\n";
    let (mut scenario, mut engine) =
        dataward::demo::prepare_with(dir.path(), &owner(), |text| text + alerts).unwrap();
    let events = play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(60),
        |event, engine| match event.map(|e| &e.kind) {
            Some(EventKind::Proposal { proposal, kind, .. }) if *kind == ProposalKind::Note => {
                engine.handle(
                    dataward::engine::api::Command::Forward {
                        proposal: proposal.clone(),
                    },
                    &owner(),
                )
            }
            _ => Vec::new(),
        },
    );
    let sent = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::NoteSent {
                destinations,
                nowhere,
                to,
                ..
            } => Some((destinations.clone(), nowhere.clone(), to.clone())),
            _ => None,
        })
        .expect("the note was forwarded");
    assert_eq!(sent.0, ["oncall (slack)"], "{sent:?}");
    assert_eq!(sent.1, None);
    drop(engine);

    let config =
        Arc::new(dataward::config::Config::load(&dir.path().join("estate/dataward.toml")).unwrap());
    let client = dataward::notify::client(Duration::from_secs(5)).unwrap();
    let mut carrier = Carrier::new(
        config,
        "oncall",
        dir.path().join("dataward.db"),
        // The test writes the marks, as the engine does beside a relay.
        Marks::on(dataward::store::open(&dir.path().join("dataward.db")).unwrap()),
        client,
        Backoff::default(),
        Jitter::new(1),
    )
    .unwrap();
    let mut now = 1_790_000_000_000;
    for _ in 0..50 {
        let (_, next) = carrier.step(now).unwrap();
        match next {
            Next::Idle => break,
            Next::Now => {}
            Next::At(at) => now = now.max(at),
        }
    }
    let messages: Vec<String> = slack
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect();
    let note = messages
        .iter()
        .find(|m| m.contains(&format!("a note for {}", sent.2)))
        .unwrap_or_else(|| panic!("no note among {messages:#?}"));
    assert!(note.contains("forwarded by"), "{note}");
}

/// The real console, read-only, attached to a running engine at 160x45: every key it
/// does not act on says why on the status line. `C` said nothing in a read-only
/// console.
#[test]
fn a_read_only_console_says_why_each_deciding_key_does_nothing() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _engine = start_demo(d);
    note_of_the_first_incident(d);
    let session = Session::open(
        &format!("dataward-fixpath-{}", std::process::id()),
        (160, 45),
        &format!(
            "{} --read-only --data-dir {}",
            env!("CARGO_BIN_EXE_dataward"),
            d.display()
        ),
    );
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "Blast radius");
    tmux(&["send-keys", "-t", s, "C"]);
    wait_for(s, "read-only console: C (close the incident by hand");
    tmux(&["send-keys", "-t", s, "a"]);
    wait_for(s, "read-only console: a (approve the selected proposal");
    tmux(&["send-keys", "-t", s, "x"]);
    wait_for(s, "x does nothing here (? lists every key)");
}
