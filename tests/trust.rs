//! The trust rules on the real engine and the ticketing story: autonomy levels, the
//! org-wide stop and its race, attested identity, receipts checked against the chain.

use std::path::Path;
use std::process::Command as Process;

use chrono::TimeDelta;
use dataward::approve::{stop, Actor, LoginUid};
use dataward::engine::api::{Command, Event, EventKind, ProposalKind, ProposalState, Verdict};
use serde_json::Value;

mod story;
use story::{approve_all, names, owner, play, start};

#[test]
fn l0_records_the_breach_and_infers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = play(dir.path(), "autonomy = \"L0\"", |_, _| Vec::new());
    let names = names(&events);
    assert!(names.contains(&"incident_opened".to_string()));
    for absent in ["diagnosis", "blast_radius", "proposal"] {
        assert!(
            !names.contains(&absent.to_string()),
            "{absent} at L0: {names:?}"
        );
    }
}

#[test]
fn l1_diagnoses_and_shows_the_blast_radius_but_proposes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = play(dir.path(), "autonomy = \"L1\"", |_, _| Vec::new());
    let names = names(&events);
    assert!(names.contains(&"diagnosis".to_string()));
    assert!(names.contains(&"blast_radius".to_string()));
    assert!(!names.contains(&"proposal".to_string()), "{names:?}");
}

#[test]
fn l2_runs_nothing_until_the_owner_does() {
    let dir = tempfile::tempdir().unwrap();
    let (events, engine) = play(dir.path(), "autonomy = \"L2\"", approve_all);
    let names = names(&events);
    assert!(names.contains(&"proposal".to_string()));
    // Approved, but nobody queued the run: dataward never dispatches at L2.
    assert!(!names.contains(&"run".to_string()), "{names:?}");
    assert!(!engine.snapshot(true).incidents[0]
        .proposals
        .iter()
        .any(|p| p.state == ProposalState::Pending && p.kind != ProposalKind::Note));
}

#[test]
fn l3_dispatches_the_approved_run_itself_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = play(
        dir.path(),
        "autonomy = \"L3\"\nclasses = [\"run_job\"]",
        approve_all,
    );
    let run = events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Run { status, .. } if status == "queued"))
        .expect("dataward queued the run");
    let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let actor: String = conn
        .query_row("SELECT actor FROM chain WHERE kind = 'dispatch'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        actor.contains("dataward"),
        "the dispatch is dataward's own: {actor}"
    );
    assert!(
        run.at >= "2026-11-24T14:51:00Z".parse().unwrap(),
        "dispatched before the refill completed"
    );
    assert!(names(&events).contains(&"incident_resolved".to_string()));
}

#[test]
fn l3_without_the_run_class_waits_for_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = play(dir.path(), "autonomy = \"L3\"", approve_all);
    assert!(!names(&events).contains(&"run".to_string()));
}

#[test]
fn l4_pauses_without_approval_but_code_diffs_still_wait_for_the_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (events, engine) = play(
        dir.path(),
        "autonomy = \"L4\"\nclasses = [\"pause_job\", \"run_job\"]",
        |_, _| Vec::new(),
    );
    let autonomous: Vec<&Event> = events
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Decision {
                    verdict: Verdict::Autonomous,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(autonomous.len(), 1, "only the hold runs without approval");
    let snapshot = engine.snapshot(true);
    let incident = &snapshot.incidents[0];
    let diff = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .unwrap();
    assert_eq!(
        diff.state,
        ProposalState::Pending,
        "a code diff is never autonomous"
    );
    assert!(
        names(&events).contains(&"run".to_string()),
        "the run class is dispatched at L4"
    );
}

#[test]
fn a_stop_set_between_approval_and_dispatch_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    let mut stopped = false;
    let mut refusals = Vec::new();
    let (events, _) = play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        let mut out = approve_all(event, engine);
        let opened = !engine.snapshot(false).incidents.is_empty();
        if opened && engine.recovered("INC-0001") && !stopped {
            stopped = true;
            // Another process pulls the brake after the approvals.
            let other = dataward::store::open(&db).unwrap();
            dataward::chain::transact(&other, |tx| {
                stop::set(
                    tx,
                    &Actor::current(),
                    "vendor outage",
                    "2026-11-24T14:55:00Z".parse().unwrap(),
                )
            })
            .unwrap();
            let refused = engine.handle(
                Command::QueueRun {
                    incident: "INC-0001".into(),
                },
                &owner(),
            );
            refusals.extend(refused.clone());
            out.extend(refused);
        }
        out
    });
    assert!(stopped, "the row count never recovered");
    let reason = refusals
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("the dispatch was refused");
    assert!(reason.contains("org-wide stop"), "{reason}");
    assert!(!names(&events).contains(&"run".to_string()));
    let conn = dataward::store::open(&db).unwrap();
    let dispatches: i64 = conn
        .query_row(
            "SELECT count(*) FROM chain WHERE kind = 'dispatch'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dispatches, 0);
}

#[test]
fn lifting_the_stop_takes_two_different_people() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let mut alice = Actor::current();
    alice.uid = 1001;
    alice.loginuid = LoginUid::Set(1001);
    alice.user = Some("alice".into());
    let mut bob = alice.clone();
    bob.uid = 1002;
    bob.loginuid = LoginUid::Unset;
    bob.user = Some("bob".into());
    let set = |conn: &mut rusqlite::Connection, who: &Actor, minute: u32| {
        let at = format!("2026-11-24T15:{minute:02}:00Z").parse().unwrap();
        dataward::chain::transact(conn, |tx| stop::set(tx, who, "incident", at))
    };
    let lift = |conn: &mut rusqlite::Connection, who: &Actor, minute: u32| {
        let at = format!("2026-11-24T15:{minute:02}:00Z").parse().unwrap();
        dataward::chain::transact(conn, |tx| stop::lift(tx, who, at))
    };
    set(&mut conn, &alice, 1).unwrap();
    assert!(lift(&mut conn, &alice, 2).unwrap().active);
    let err = lift(&mut conn, &alice, 3).unwrap_err().to_string();
    assert!(err.contains("second, different person"), "{err}");
    // A claimed name does not make a second person.
    let mut alice_again = alice.clone();
    alice_again.claims.insert("USER".into(), "bob".into());
    assert!(lift(&mut conn, &alice_again, 4).is_err());
    // Nor does another account reached with sudo: the login uid is still alice's.
    let mut alice_as_svc = alice.clone();
    alice_as_svc.uid = 1003;
    alice_as_svc.user = Some("svc".into());
    alice_as_svc.loginuid = LoginUid::Set(1001);
    let err = lift(&mut conn, &alice_as_svc, 5).unwrap_err().to_string();
    assert!(err.contains("second, different person"), "{err}");
    assert!(!lift(&mut conn, &bob, 6).unwrap().active);
    assert!(stop::ensure_not_stopped(&conn).is_ok());
    assert!(dataward::chain::verify(&conn).unwrap().ok);
}

fn dataward(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The whole story, headless, with the owner played by the demo stand-in.
fn headless_story(dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let args = [
        "demo",
        "--headless",
        "--json",
        "--approve-as",
        "analytics-owner",
        "--speed",
        "1000000",
    ];
    dataward(&args, dir, env)
}

#[test]
fn a_false_user_name_is_recorded_as_a_claim_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = headless_story(dir.path(), &[("USER", "mallory"), ("SUDO_USER", "mallory")]);
    assert!(out.status.success());
    let decision: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "decision")
        .unwrap();
    let shown = decision["actor"].as_str().unwrap();
    let real = Actor::current();
    assert!(
        shown.starts_with(&real.display().split(" (").next().unwrap().to_string()),
        "{shown}"
    );
    assert!(
        shown.contains("claims USER=mallory (unverified)")
            || real.user.as_deref() == Some("mallory"),
        "{shown}"
    );
    let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let actor: String = conn
        .query_row(
            "SELECT actor FROM chain WHERE kind = 'decision' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let actor: Value = serde_json::from_str(&actor).unwrap();
    assert_eq!(
        actor["uid"].as_u64(),
        Some(u64::from(real.uid)),
        "the attested uid"
    );
    assert_eq!(actor["user"].as_str(), real.user.as_deref());
    assert_eq!(actor["claims"]["USER"], "mallory");
    assert_eq!(actor["claims"]["SUDO_USER"], "mallory");
}

#[test]
fn a_saved_receipt_is_checked_against_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let out = headless_story(dir.path(), &[]);
    assert!(out.status.success());
    let receipt = dataward(&["receipt", "INC-0001", "--json"], dir.path(), &[]);
    let saved = dir.path().join("receipt.json");
    std::fs::write(&saved, &receipt.stdout).unwrap();
    let saved_arg = saved.to_str().unwrap();
    let ok = dataward(
        &["verify", "--json", "--receipt", saved_arg],
        dir.path(),
        &[],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    // The receipt altered: a decision's verdict.
    let text = String::from_utf8(receipt.stdout.clone()).unwrap();
    std::fs::write(&saved, text.replacen("\"approved\"", "\"rejected\"", 1)).unwrap();
    let altered = dataward(
        &["verify", "--json", "--receipt", saved_arg],
        dir.path(),
        &[],
    );
    assert_eq!(altered.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&altered.stdout).unwrap();
    assert_eq!(report["receipt"]["ok"], false);

    // The chain altered behind SQLite's back, the receipt intact.
    std::fs::write(&saved, &receipt.stdout).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
    conn.execute_batch(
        "DROP TRIGGER chain_no_update;
         UPDATE chain SET payload = replace(payload, 'approved', 'rejected') WHERE kind = 'decision';",
    )
    .unwrap();
    let broken = dataward(
        &["verify", "--json", "--receipt", saved_arg],
        dir.path(),
        &[],
    );
    assert_eq!(broken.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert!(!report["first_bad"].is_null());

    // A receipt file that is not JSON is bad input, named.
    std::fs::write(&saved, "not json").unwrap();
    let bad = dataward(&["verify", "--receipt", saved_arg], dir.path(), &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("receipt.json"));
}

#[test]
fn rolling_back_an_approved_diff_reverts_the_file_and_records_the_undo() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("estate/dbt/models/intermediate/int_seat_map.sql");
    let mut original = None;
    let mut rolled_back = Vec::new();
    let (_, engine) = play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        if original.is_none() {
            original = std::fs::read_to_string(&file).ok();
        }
        let mut out = approve_all(event, engine);
        if let Some(EventKind::Decision {
            proposal,
            verdict: Verdict::Approved,
            ..
        }) = event.map(|e| &e.kind)
        {
            if proposal.ends_with("-P2") {
                assert_ne!(
                    std::fs::read_to_string(&file).ok(),
                    original,
                    "approving applies the diff"
                );
                rolled_back = engine.handle(
                    Command::RollBack {
                        proposal: proposal.clone(),
                        reason: "wrong join".into(),
                    },
                    &owner(),
                );
                out.extend(rolled_back.clone());
            }
        }
        out
    });
    assert!(
        rolled_back.iter().any(
            |e| matches!(&e.kind, EventKind::Undo { action, .. } if action.contains("reverted"))
        ),
        "{rolled_back:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).ok(),
        original,
        "the file is back as it was"
    );
    let diff = engine.snapshot(true).incidents[0]
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .cloned()
        .unwrap();
    assert_eq!(diff.state, ProposalState::RolledBack);
    // A roll back needs a reason, like a rejection.
    let mut engine = engine;
    let refused = engine.handle(
        Command::RollBack {
            proposal: diff.id.clone(),
            reason: " ".into(),
        },
        &owner(),
    );
    assert!(matches!(refused[0].kind, EventKind::Refused { .. }));
}

#[test]
fn a_changed_policy_is_recorded_and_a_broken_one_denies_every_decision() {
    let dir = tempfile::tempdir().unwrap();
    let (mut scenario, mut engine) = dataward::demo::prepare(dir.path(), &owner()).unwrap();
    let config = dir.path().join("estate/dataward.toml");
    let policies = |dir: &Path| -> i64 {
        let conn = dataward::store::open(&dir.join("dataward.db")).unwrap();
        conn.query_row(
            "SELECT count(*) FROM chain WHERE kind = 'policy'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let mut now = start();
    let mut proposal = None;
    while proposal.is_none() {
        scenario.step(now).unwrap();
        for event in engine.tick(now).unwrap() {
            if let EventKind::Proposal {
                proposal: id,
                content_hash,
                kind: ProposalKind::Hold,
                ..
            } = event.kind
            {
                proposal = Some((id, content_hash));
            }
        }
        now += TimeDelta::minutes(1);
    }
    assert_eq!(policies(dir.path()), 1);
    // The team edits the policy: a new hash goes on the chain at the next tick.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("approval_ttl = \"45m\"", "approval_ttl = \"50m\""),
    )
    .unwrap();
    engine.tick(now).unwrap();
    assert_eq!(policies(dir.path()), 2);
    // Someone breaks it: decisions are denied, with the reason, until it is fixed.
    std::fs::write(&config, "[[domain]]\nname = 1\n").unwrap();
    engine.tick(now + TimeDelta::minutes(1)).unwrap();
    let (id, hash) = proposal.unwrap();
    let refused = engine.handle(
        Command::Approve {
            proposal: id,
            content_hash: hash,
            reason: String::new(),
        },
        &owner(),
    );
    match &refused[0].kind {
        EventKind::Refused { reason, .. } => {
            assert!(reason.contains("cannot be evaluated"), "{reason}")
        }
        other => panic!("approved under a broken policy: {other:?}"),
    }
    assert_eq!(policies(dir.path()), 3);
}

#[test]
fn a_run_asked_for_before_the_refill_is_back_is_refused_with_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let mut refusal = None;
    play(dir.path(), "autonomy = \"L2\"", |event, engine| {
        let mut out = approve_all(event, engine);
        let approved = matches!(
            event.map(|e| &e.kind),
            Some(EventKind::Decision { verdict: Verdict::Approved, proposal, .. }) if proposal.ends_with("-P1")
        );
        if approved {
            let refused = engine.handle(
                Command::QueueRun {
                    incident: "INC-0001".into(),
                },
                &owner(),
            );
            if let EventKind::Refused { reason, .. } = &refused[0].kind {
                refusal = Some(reason.clone());
            }
            out.extend(refused);
        }
        out
    });
    let reason = refusal.expect("the early run was refused");
    assert!(reason.contains("has not recovered yet"), "{reason}");
    assert!(
        reason.contains("rows in TICKETING.ORDERS back within range"),
        "{reason}"
    );
    assert!(reason.contains("expected"), "{reason}");
}
