//! The incident screen as the real engine fills it on the embedded demo estate. It
//! lives here rather than beside the view: the demo story's words belong to src/demo
//! and to tests, and this snapshot is full of them.

mod story;

use dataward::console::state::{update, Action, App};
use dataward::console::theme::Theme;
use dataward::console::view;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn draw(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view::render(frame, app)).unwrap();
    terminal.backend().to_string()
}

/// The engine's snapshot of the ticketing demo `minutes` after 13:30 on its day, as
/// the engine would send it to a console, and the folder it lives in.
fn demo_snapshot_after(minutes: i64) -> (tempfile::TempDir, dataward::engine::api::Snapshot) {
    let dir = tempfile::tempdir().unwrap();
    let actor = dataward::approve::Actor {
        uid: 1000,
        loginuid: dataward::approve::LoginUid::Unset,
        user: Some("tester".into()),
        claims: Default::default(),
        stand_in: None,
    };
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &actor).unwrap();
    let start = chrono::NaiveDate::from_ymd_opt(2026, 11, 24)
        .unwrap()
        .and_hms_opt(13, 30, 0)
        .unwrap();
    for minute in 0..=minutes {
        let now = start + chrono::TimeDelta::minutes(minute);
        scenario.step(now).unwrap();
        engine.tick(now).unwrap();
    }
    let snapshot = engine.snapshot(false);
    (dir, snapshot)
}

/// At 14:12 on the demo's day, the diff proposal selected. Only what differs between
/// machines (the chain's hashes, which cover wall-clock times and a random log id) is
/// pinned.
#[test]
fn the_engines_incident_screen() {
    let (_dir, mut snapshot) = demo_snapshot_after(42);
    if let Some(head) = &mut snapshot.chain_head {
        head.hash = "0".repeat(64);
    }
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    update(&mut app, Action::Open);
    update(&mut app, Action::Down);
    for (width, height) in [(120, 40), (80, 24)] {
        insta::assert_snapshot!(
            format!("engine_incident_{width}x{height}"),
            draw(&app, width, height)
        );
    }
    // The timeline the engine read from the chain so far: seen, diagnosed, proposed.
    update(&mut app, Action::ToggleTimeline);
    insta::assert_snapshot!("engine_timeline_120x40", draw(&app, 120, 40));
    update(&mut app, Action::ToggleTimeline);
    // The list, with the monitors as the engine words them: the words a fixture must use.
    update(&mut app, Action::Back);
    insta::assert_snapshot!("engine_list_120x40", draw(&app, 120, 40));
}

/// Left alone until 15:00, the table refills: the header says the row count is back
/// within its band now, measured at the latest poll, instead of repeating the breach
/// that opened the incident.
#[test]
fn the_header_says_when_the_table_is_back() {
    let (_dir, snapshot) = demo_snapshot_after(90);
    let incident = &snapshot.incidents[0];
    let latest = incident
        .latest
        .as_ref()
        .expect("the engine sends the latest figure");
    assert_eq!(
        latest.verdict,
        dataward::engine::api::VerdictKind::Ok,
        "{latest:?}"
    );
    assert!(latest.at > incident.opened_at, "{latest:?}");
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(
        &mut app,
        Action::SnapshotArrived(Box::new(snapshot.clone())),
    );
    update(&mut app, Action::Open);
    let screen = draw(&app, 120, 40);
    let header = screen.lines().nth(2).unwrap();
    let expected = format!(
        " now {} ✓ within {} · measured {}",
        latest.observed,
        latest.band.as_deref().unwrap(),
        &latest.at.to_string()[11..16]
    );
    assert!(header.contains(&expected), "{expected:?} in\n{screen}");
}

/// The whole story, headless: the incident's timeline, as `show --json` gives it, holds
/// its chain records in order from the breach seen to the receipt, with who decided.
#[test]
fn the_timeline_runs_from_the_breach_to_the_receipt() {
    let dir = tempfile::tempdir().unwrap();
    story::headless("ticketing", "analytics-owner", dir.path());
    let out = story::dataward(&["show", "INC-0001", "--json"], dir.path());
    assert!(out.status.success(), "{out:?}");
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let timeline = shown["timeline"].as_array().expect("a timeline");
    let steps: Vec<&str> = timeline
        .iter()
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    let mut seqs: Vec<u64> = timeline
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let sorted = {
        let mut sorted = seqs.clone();
        sorted.sort();
        sorted
    };
    assert_eq!(seqs, sorted, "in chain order");
    seqs.dedup();
    assert_eq!(seqs.len(), timeline.len(), "each record once");
    let at = |step: &str| {
        steps
            .iter()
            .position(|s| *s == step)
            .unwrap_or_else(|| panic!("no {step} in {steps:?}"))
    };
    assert_eq!(steps[0], "saw");
    assert!(at("saw") < at("diagnosed") && at("diagnosed") < at("proposed"));
    assert!(at("proposed") < at("decided") && at("decided") < at("ran"));
    assert!(at("ran") < at("verified") && at("verified") < at("resolved"));
    assert_eq!(steps.last(), Some(&"receipt"), "{steps:?}");
    let decided = &timeline[at("decided")];
    assert!(
        decided["who"].as_str().unwrap().contains("(uid "),
        "the attested account: {decided}"
    );
}
