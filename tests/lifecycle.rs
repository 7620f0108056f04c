//! An incident's life on any estate: the owner can close it by hand with a reason (its
//! approved holds resumed, the receipt saying who and why), reopen it, and a rejection
//! is final for that content, not for the incident.

use chrono::TimeDelta;
use dataward::approve::Actor;
use dataward::demo::control::ControlPlane;
use dataward::engine::api::{
    Command, EventKind, IncidentStatus, Outcome, ProposalKind, RefusalKind,
};
use dataward::engine::Engine;

mod story;
use story::{approve_all, owner, play_minutes, start};

fn incident(engine: &Engine) -> dataward::engine::api::IncidentView {
    engine.snapshot(false).incidents[0].clone()
}

#[test]
fn the_owner_closes_an_incident_by_hand_and_can_reopen_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(50),
        approve_all,
    );
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    assert!(
        control.is_paused("job.hourly_dbt").unwrap(),
        "the hold paused it"
    );

    // Someone the policy does not name as an owner may not close it.
    let mut stranger = Actor::current();
    stranger.user = Some("nobody-here".into());
    stranger.uid = 4242;
    let Outcome::Refused { reason } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: "looks fine to me".into(),
        },
        &stranger,
    ) else {
        panic!("a stranger closed it");
    };
    assert_eq!(reason.kind, RefusalKind::Policy, "{reason:?}");
    // A reason is required.
    let Outcome::Refused { .. } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: " ".into(),
        },
        &owner(),
    ) else {
        panic!("closed without a reason");
    };

    let Outcome::Accepted { events, .. } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: "the vendor confirmed the refill; the job reruns tonight".into(),
        },
        &owner(),
    ) else {
        panic!("the owner could not close it");
    };
    assert!(events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Undo { action, .. } if action.contains("resumed"))));
    assert!(events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::IncidentResolved { .. })));
    assert!(!control.is_paused("job.hourly_dbt").unwrap(), "resumed");
    let closed = incident(&engine);
    assert_eq!(closed.status, IncidentStatus::Resolved);
    let receipt = closed.receipt.expect("a receipt");
    assert!(
        receipt.contains("Closed by hand") && receipt.contains("the vendor confirmed the refill"),
        "{receipt}"
    );
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["receipt", "INC-0001", "--json", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(
        saved["closed_by_hand"]["reason"],
        "the vendor confirmed the refill; the job reruns tonight"
    );
    // Closing it twice is told so.
    let Outcome::Refused { reason } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: "again".into(),
        },
        &owner(),
    ) else {
        panic!("closed twice");
    };
    assert_eq!(reason.kind, RefusalKind::AlreadyDecided);

    // Reopened: open again, and the next turns treat it as any open incident.
    let Outcome::Accepted { .. } = engine.request(
        Command::Reopen {
            incident: "INC-0001".into(),
            reason: "pacing still looks short".into(),
        },
        &owner(),
    ) else {
        panic!("the owner could not reopen it");
    };
    let reopened = incident(&engine);
    assert_eq!(reopened.status, IncidentStatus::Open);
    // Open again, it carries the receipt drafted from the chain so far, reopening and all.
    let draft = reopened.receipt.as_deref().unwrap();
    assert!(draft.contains("is not resolved"), "{draft}");
    assert!(draft.contains("Resolved: not yet"), "{draft}");
    drop(engine);
    // ...and that is what a restarted engine reads back.
    let config = dataward::config::Config::load(&dir.path().join("estate/dataward.toml")).unwrap();
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let engine = Engine::new(config, state, Some(Box::new(control)), &owner()).unwrap();
    assert_eq!(incident(&engine).status, IncidentStatus::Open);
}

#[test]
fn a_rejected_proposal_does_not_trap_its_incident() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(50),
        |_, _| Vec::new(),
    );
    for p in incident(&engine).proposals {
        if p.kind == ProposalKind::Note {
            continue;
        }
        let Outcome::Accepted { .. } = engine.request(
            Command::Reject {
                proposal: p.id.clone(),
                content_hash: p.content_hash.clone(),
                reason: "not this way".into(),
            },
            &owner(),
        ) else {
            panic!("could not reject {}", p.id);
        };
    }
    let Outcome::Accepted { .. } = engine.request(
        Command::Resolve {
            incident: "INC-0001".into(),
            reason: "handled outside dataward".into(),
        },
        &owner(),
    ) else {
        panic!("a rejected proposal trapped the incident");
    };
    assert_eq!(incident(&engine).status, IncidentStatus::Resolved);
}

#[test]
fn a_scheduled_job_below_the_incident_that_fails_is_a_symptom_until_it_runs_green() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    let opened = start() + TimeDelta::minutes(50);
    play_minutes(&mut scenario, &mut engine, start(), opened, |_, _| {
        Vec::new()
    });
    assert!(incident(&engine).symptoms.is_empty());
    // The scheduler reports the job that reads the table as failed.
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    control
        .record_pipeline("job.hourly_dbt", "failed", "2026-11-24T14:21:00Z")
        .unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        opened + TimeDelta::minutes(1),
        opened + TimeDelta::minutes(2),
        |_, _| Vec::new(),
    );
    let symptoms = incident(&engine).symptoms;
    let job = symptoms
        .iter()
        .find(|s| s.check == "job run")
        .unwrap_or_else(|| panic!("{symptoms:#?}"));
    assert_eq!(job.table, "hourly dbt job");
    assert!(
        job.observed.starts_with("failed at 2026-11-24 14:21"),
        "{job:?}"
    );
    assert!(!job.recovered);
    control
        .record_pipeline("job.hourly_dbt", "success", "2026-11-24T14:25:00Z")
        .unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        opened + TimeDelta::minutes(3),
        opened + TimeDelta::minutes(4),
        |_, _| Vec::new(),
    );
    let symptoms = incident(&engine).symptoms;
    assert!(
        symptoms.iter().any(|s| s.check == "job run" && s.recovered),
        "{symptoms:#?}"
    );
}

/// Schedulers write their times in their own RFC 3339: dbt Cloud as
/// `2026-11-24 14:21:00.000000+00:00`, Airflow with microseconds. A failed run after
/// the incident opened is a symptom, and a later green run recovers it, whatever form
/// the scheduler wrote its time in (as text, `2026-11-24 14:21` sorts before
/// `2026-11-24T14:17` and the run was taken as older than the incident).
#[test]
fn a_failed_run_is_judged_by_its_time_not_by_how_the_scheduler_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    let opened = start() + TimeDelta::minutes(50);
    play_minutes(&mut scenario, &mut engine, start(), opened, |_, _| {
        Vec::new()
    });
    assert!(incident(&engine).symptoms.is_empty());
    let control = ControlPlane::new(dir.path().join("estate/control.db"));
    control
        .record_pipeline(
            "job.hourly_dbt",
            "failed",
            "2026-11-24 14:21:00.000000+00:00",
        )
        .unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        opened + TimeDelta::minutes(1),
        opened + TimeDelta::minutes(2),
        |_, _| Vec::new(),
    );
    let symptoms = incident(&engine).symptoms;
    let job = symptoms
        .iter()
        .find(|s| s.check == "job run")
        .unwrap_or_else(|| panic!("{symptoms:#?}"));
    assert!(
        job.observed.starts_with("failed at 2026-11-24 14:21"),
        "{job:?}"
    );
    assert!(!job.recovered);
    // Airflow's form, an hour ahead of UTC: 14:25 UTC, a green run.
    control
        .record_pipeline(
            "job.hourly_dbt",
            "success",
            "2026-11-24T15:25:00.123456+01:00",
        )
        .unwrap();
    play_minutes(
        &mut scenario,
        &mut engine,
        opened + TimeDelta::minutes(3),
        opened + TimeDelta::minutes(4),
        |_, _| Vec::new(),
    );
    let symptoms = incident(&engine).symptoms;
    assert!(
        symptoms.iter().any(|s| s.check == "job run" && s.recovered),
        "{symptoms:#?}"
    );
}
