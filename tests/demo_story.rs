//! The ticketing story, headless, through the real binary: the engine must tell it on
//! its own from what the scenario does to the data.

use serde_json::Value;

mod story;
use story::{at, dataward, first};

fn run_story(data_dir: &std::path::Path) -> Vec<Value> {
    let events = story::headless("ticketing", "analytics-owner", data_dir);
    // Nothing of the other story reaches this one.
    story::assert_none_of(story::PAYOUTS_WORDS, &events);
    events
}

#[test]
fn the_engine_tells_the_ticketing_story() {
    let dir = tempfile::tempdir().unwrap();
    let events = run_story(dir.path());
    for e in &events {
        assert!(e["event"].is_string() && e["at"].is_string(), "{e}");
    }
    let migration = events
        .iter()
        .find(|e| e["event"] == "scenario" && e["step"].as_str().unwrap().contains("migration"))
        .expect("the migration happened");
    // The row count stays low for forty minutes; it is one incident, updated.
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "incident_opened")
            .count(),
        1
    );
    let opened = first(&events, "incident_opened");
    assert!(at(opened) > at(migration), "opened before the migration");
    assert!(
        at(opened) < "2026-11-24T14:20:00Z",
        "opened too late: {}",
        at(opened)
    );
    assert_eq!(opened["table"], "TICKETING.ORDERS");
    let incident = opened["incident"].as_str().unwrap();

    let cause = first(&events, "diagnosis")["cause"].as_str().unwrap();
    assert!(cause.contains("seat_section"), "{cause}");
    assert!(cause.contains("SMALLINT to VARCHAR(12)"), "{cause}");
    assert!(cause.contains("re-created"), "{cause}");

    let blast = first(&events, "blast_radius")["nodes"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = blast.iter().map(|n| n["name"].as_str().unwrap()).collect();
    for expected in [
        "stg_orders",
        "int_seat_map",
        "fct_sales_pacing",
        "On-sale pacing",
        "hourly dbt job",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let seat_map = blast.iter().find(|n| n["name"] == "int_seat_map").unwrap();
    assert_eq!(seat_map["break_risk"], true, "{seat_map}");

    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "proposal")
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hold", "diff", "note"]);
    let decisions: Vec<&Value> = events.iter().filter(|e| e["event"] == "decision").collect();
    assert_eq!(decisions.len(), 3);
    assert!(decisions.iter().all(|d| d["actor"]
        .as_str()
        .unwrap()
        .contains("stand-in for analytics-owner")));

    let refilled = events
        .iter()
        .find(|e| {
            e["event"] == "scenario"
                && e["step"]
                    .as_str()
                    .unwrap()
                    .contains("refill of TICKETING.ORDERS complete")
        })
        .expect("the refill completed");
    let resolved = first(&events, "incident_resolved");
    assert!(
        at(resolved) > at(refilled),
        "resolved before the refill completed"
    );
    let verification = first(&events, "verification");
    assert_eq!(verification["passed"], true, "{verification}");
    // Verified after the new arena's FLOOR-A orders landed, and the diffed model runs
    // on them.
    let onsale = events
        .iter()
        .find(|e| e["event"] == "scenario" && e["step"].as_str().unwrap().contains("FLOOR-A"))
        .expect("the on-sale opened");
    assert!(at(verification) > at(onsale));
    let model_check = verification["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().contains("int_seat_map"))
        .expect("a check runs int_seat_map");
    assert_eq!(model_check["passed"], true, "{model_check}");

    // The receipt, read back from the chain by another process.
    let out = dataward(&["receipt", incident, "--json"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let receipt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(receipt["cause"].as_str().unwrap().contains("seat_section"));
    let proposals = receipt["proposals"].as_array().unwrap();
    assert_eq!(proposals.len(), 3);
    assert!(proposals
        .iter()
        .all(|p| p["content_hash"].as_str().unwrap().len() == 64));
    assert_eq!(proposals[0]["decisions"][0]["verdict"], "approved");
    assert_eq!(receipt["runs"][0]["status"], "success");
    assert_eq!(receipt["verification"][0]["passed"], true);
    assert!(receipt["undo"][0]["action"]
        .as_str()
        .unwrap()
        .contains("resumed"));
    let md = dataward(&["receipt", incident, "--md"], dir.path());
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Verification"));

    let out = dataward(&["verify", "--json"], dir.path());
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert!(report["first_bad"].is_null());
}

#[test]
fn decisions_go_through_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let actor = dataward::approve::Actor::current();
    let (scenario, mut engine) = dataward::demo::prepare(dir.path(), &actor).unwrap();
    let mut stand_in = actor.clone();
    stand_in.stand_in = Some("analytics-owner".into());
    let options = dataward::demo::DemoOptions {
        data_dir: dir.path().into(),
        story: "ticketing".into(),
        speed: Some(1e9),
        approve_as: None,
        read_only: false,
        console_config: None,
        theme: None,
    };
    let mut events = Vec::new();
    let mut emit = |e: &dataward::engine::api::Event| events.push(e.clone());
    // Play the whole story with nobody deciding: the incident must still be open.
    dataward::demo::play(
        &options,
        scenario,
        &mut engine,
        &stand_in,
        dataward::demo::ticketing::plot().warm_up,
        &mut emit,
    )
    .unwrap();
    let snapshot = engine.snapshot(true);
    let incident = &snapshot.incidents[0];
    assert_eq!(incident.status, dataward::engine::api::IncidentStatus::Open);
    let diff = incident
        .proposals
        .iter()
        .find(|p| p.kind == dataward::engine::api::ProposalKind::Diff)
        .unwrap();
    let hold = incident
        .proposals
        .iter()
        .find(|p| p.kind == dataward::engine::api::ProposalKind::Hold)
        .unwrap();
    use dataward::engine::api::Command;
    let reject = engine.handle(
        Command::Reject {
            proposal: diff.id.clone(),
            content_hash: diff.content_hash.clone(),
            reason: "not now".into(),
        },
        &stand_in,
    );
    assert_eq!(
        serde_json::to_value(&reject[0]).unwrap()["verdict"],
        "rejected"
    );
    // A rejection is final for that content.
    let again = engine.handle(
        Command::Approve {
            proposal: diff.id.clone(),
            content_hash: diff.content_hash.clone(),
            reason: String::new(),
        },
        &stand_in,
    );
    assert_eq!(serde_json::to_value(&again[0]).unwrap()["event"], "refused");
    // A stale hash is refused too.
    let stale = engine.handle(
        Command::Approve {
            proposal: hold.id.clone(),
            content_hash: "0".repeat(64),
            reason: String::new(),
        },
        &stand_in,
    );
    assert!(serde_json::to_value(&stale[0]).unwrap()["reason"]
        .as_str()
        .unwrap()
        .contains("void"));
    // Someone without the role is refused.
    let mut stranger = actor.clone();
    stranger.user = Some("nobody-in-the-policy".into());
    let refused = engine.handle(
        Command::Approve {
            proposal: hold.id.clone(),
            content_hash: hold.content_hash.clone(),
            reason: String::new(),
        },
        &stranger,
    );
    assert!(serde_json::to_value(&refused[0]).unwrap()["reason"]
        .as_str()
        .unwrap()
        .contains("role"));
}

#[test]
fn a_rejected_diff_fails_verification_once_floor_a_lands() {
    use chrono::{NaiveDate, TimeDelta};
    use dataward::engine::api::{Command, EventKind, ProposalKind};
    // Drive the scenario and the engine minute by minute, as `play` does, but decide
    // differently from the story: approve the pause, reject the diff.
    let dir = tempfile::tempdir().unwrap();
    let mut actor = dataward::approve::Actor::current();
    actor.stand_in = Some("analytics-owner".into());
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &actor).unwrap();
    let mut now = NaiveDate::from_ymd_opt(2026, 11, 24)
        .unwrap()
        .and_hms_opt(13, 30, 0)
        .unwrap();
    let end = now + TimeDelta::minutes(100);
    let mut incident = None;
    let mut queued = false;
    let mut verifications = Vec::new();
    while now <= end {
        scenario.step(now).unwrap();
        for event in engine.tick(now).unwrap() {
            match event.kind {
                EventKind::IncidentOpened { incident: id, .. } => incident = Some(id),
                EventKind::Proposal {
                    proposal,
                    kind,
                    content_hash,
                    ..
                } => {
                    let command = match kind {
                        ProposalKind::Hold | ProposalKind::Backfill => Command::Approve {
                            proposal,
                            content_hash,
                            reason: String::new(),
                        },
                        ProposalKind::Diff => Command::Reject {
                            proposal,
                            content_hash,
                            reason: "not today".into(),
                        },
                        ProposalKind::Note => Command::Forward { proposal },
                    };
                    let events = engine.handle(command, &actor);
                    assert!(
                        !matches!(events[0].kind, EventKind::Refused { .. }),
                        "{events:?}"
                    );
                }
                EventKind::Verification { passed, checks, .. } => {
                    verifications.push((event.at, passed, checks))
                }
                _ => {}
            }
        }
        if let Some(id) = &incident {
            if !queued && engine.recovered(id) {
                queued = true;
                engine.handle(
                    Command::QueueRun {
                        incident: id.clone(),
                    },
                    &actor,
                );
            }
        }
        now += TimeDelta::minutes(1);
    }
    let (at, passed, checks) = verifications.first().expect("verification ran");
    assert!(
        at.to_string().as_str() > "2026-11-24T15:00:00Z",
        "verified before FLOOR-A landed: {at}"
    );
    assert!(!passed);
    let model = checks
        .iter()
        .find(|c| c.name.contains("int_seat_map"))
        .unwrap();
    assert!(!model.passed);
    assert!(model.detail.contains("FLOOR-"), "{}", model.detail);
    let snapshot = engine.snapshot(true);
    assert_ne!(
        snapshot.incidents[0].status,
        dataward::engine::api::IncidentStatus::Resolved
    );
}
