//! Each area's behaviour checks, run on both stores by the test beside this folder, and
//! the fixtures they and its fence checks write.

use anyhow::Result;
use dataward::clock::Timestamp;
use dataward::config::CheckKind;
use dataward::detect::{Range, VerdictKind};
use dataward::lineage::openlineage::{parse_event, Dataset, JobName, Position, RunEvent};
use dataward::monitor::{Detail, Health, Observation};
use dataward::notify::Alert;
use dataward::store::baselines::LearnedRestart;
use dataward::store::intents::NewIntent;
use dataward::store::prelude::*;
use dataward::store::quiet::Snooze;

pub fn incidents(s: &dyn Store) {
    write(s, |s| {
        s.put_incident("INC-0002", "open", r#"{"n": 2}"#)?;
        s.put_incident("INC-0001", "open", r#"{"run": {"job": "load", "id": 42}}"#)?;
        s.put_incident(
            "INC-0010",
            "open",
            r#"{"run": {"job": "x", "id": "a", "finished": "2026-03-01T09:00:00Z"}}"#,
        )?;
        s.put_incident(
            "INC-0003",
            "open",
            r#"{"run": {"job": "y", "id": "b", "finished": null}}"#,
        )?;
        s.put_incident("INC-0002", "resolved", r#"{"n": 2, "resolved": true}"#)?;
        s.put_request("INC-0001-P2", "{}")?;
        s.put_request("INC-0001-P1", r#"{"step": 0}"#)?;
        s.put_request("INC-0001-P1", r#"{"step": 1}"#)
    })
    .unwrap();
    let ids: Vec<String> = s
        .incident_docs()
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        ids,
        ["INC-0002", "INC-0001", "INC-0010", "INC-0003"],
        "first written first"
    );
    assert_eq!(
        s.incident_docs().unwrap()[0].1,
        r#"{"n": 2, "resolved": true}"#,
        "as written"
    );
    let mut requests = s.request_docs().unwrap();
    requests.sort();
    assert_eq!(
        requests,
        [
            ("INC-0001-P1".to_string(), r#"{"step": 1}"#.to_string()),
            ("INC-0001-P2".to_string(), "{}".to_string())
        ]
    );
    assert_eq!(
        s.followed_runs().unwrap(),
        [pair("load", "42"), pair("y", "b")],
        "unfinished runs, by incident"
    );
}

pub fn requests(s: &dyn Store) {
    write(s, |s| {
        s.keep_request_outcome("req-1", 70000, at("2026-03-01T09:00:00Z"), r#"{"ok": 1}"#)?;
        s.keep_request_outcome("req-1", 70000, at("2026-03-01T09:01:00Z"), r#"{"ok": 2}"#)?;
        s.add_intent(&intent("INC-0001-P1", Some("req-2")))
            .map(drop)
    })
    .unwrap();
    assert_eq!(
        s.request_outcome("req-1", 70000).unwrap().as_deref(),
        Some(r#"{"ok": 1}"#),
        "the first stands"
    );
    assert_eq!(
        s.request_outcome("req-1", 1001).unwrap(),
        None,
        "another asker's"
    );
    assert_eq!(s.request_outcome("req-9", 70000).unwrap(), None);
    assert!(s.request_in_flight("req-2").unwrap());
    assert!(!s.request_in_flight("req-1").unwrap());
    let id = s.pending_intents().unwrap()[0].id;
    write(s, |s| s.close_intent(id, "done", "{}")).unwrap();
    assert!(
        !s.request_in_flight("req-2").unwrap(),
        "done: no longer in flight"
    );
}

pub fn intents(s: &dyn Store) {
    let queue = r#"{"effect": "queue_run", "job": "load", "key": "k1"}"#;
    let (first, second) = write(s, |s| {
        let first = s.add_intent(&NewIntent {
            effect: queue,
            ..intent("INC-0001-P1", None)
        })?;
        let second = s.add_intent(&intent("INC-0002-P1", Some("req-1")))?;
        Ok((first, second))
    })
    .unwrap();
    assert!(second > first, "ids grow");
    let pending = s.pending_intents().unwrap();
    let subjects: Vec<&str> = pending.iter().map(|i| i.subject.as_str()).collect();
    assert_eq!(subjects, ["INC-0001-P1", "INC-0002-P1"], "oldest first");
    let person = &pending[1];
    assert_eq!((person.id, person.by_person), (second, true));
    assert_eq!(person.client_request.as_deref(), Some("req-1"));
    assert_eq!(person.asker_uid, Some(70000));
    assert_eq!(
        (person.effect.as_str(), person.completion.as_str()),
        ("{}", r#"{"c": 1}"#)
    );
    assert_eq!(pending[0].client_request, None);
    assert!(s.intent_pending_for("INC-0001-P1").unwrap());
    assert!(s.run_pending("load", "k1").unwrap());
    assert!(!s.run_pending("load", "k2").unwrap());
    write(s, |s| s.close_intent(first, "done", r#"{"queued": true}"#)).unwrap();
    assert!(
        !s.intent_pending_for("INC-0001-P1").unwrap(),
        "done is not pending"
    );
    assert!(!s.run_pending("load", "k1").unwrap());
    write(s, |s| s.close_intent(second, "withdrawn", "{}")).unwrap();
    assert!(s.pending_intents().unwrap().is_empty());

    write(s, |s| {
        s.keep_held_schedule(
            "P1",
            "load",
            r#"{"paused": false}"#,
            at("2026-03-01T09:00:00Z"),
        )
    })
    .unwrap();
    assert_eq!(
        s.held_schedule("P1").unwrap().as_deref(),
        Some(r#"{"paused": false}"#)
    );
    write(s, |s| s.forget_held_schedule("P1")).unwrap();
    assert_eq!(s.held_schedule("P1").unwrap(), None);
}

pub fn outbox(s: &dyn Store) {
    let added = write(s, |s| {
        Ok([
            s.enqueue_alert("pd", "pagerduty", &alert("k1", "opened", 1), 1000)?,
            s.enqueue_alert("pd", "pagerduty", &alert("k1", "opened", 1), 1001)?,
            s.enqueue_alert("og", "opsgenie", &alert("k1", "opened", 1), 1002)?,
            s.enqueue_alert("pd", "pagerduty", &alert("k1", "paged", 2), 1003)?,
            s.enqueue_alert("pd", "pagerduty", &alert("k2", "opened", 3), 1004)?,
        ])
    })
    .unwrap();
    assert_eq!(
        added,
        [true, false, true, true, true],
        "once per destination, record and key"
    );
    assert_eq!(
        s.alert_opened_on("k1").unwrap(),
        [pair("pd", "pagerduty"), pair("og", "opsgenie")]
    );
    assert_eq!(
        s.pages_of("INC-0001").unwrap(),
        [("pd".to_string(), "pagerduty".to_string(), "k1".to_string())]
    );
    let head = s.outbox_head("pd").unwrap().unwrap();
    assert_eq!(
        (head.alert.chain_seq, head.status.as_str(), head.attempts),
        (1, "pending", 0)
    );
    assert_eq!(
        head.alert,
        alert("k1", "opened", 1),
        "the alert reads back as queued"
    );

    write(s, |s| s.schedule_retry(head.id, 5000, "503")).unwrap();
    let again = s.outbox_head("pd").unwrap().unwrap();
    assert_eq!(
        (again.id, again.attempts, again.next_at),
        (head.id, 1, 5000)
    );
    assert_eq!(again.last_error.as_deref(), Some("503"));
    assert_eq!(s.outbox_next_at(head.id).unwrap(), 5000);
    write(s, |s| s.mark_accepted(head.id, "req-9", 6000)).unwrap();
    let accepted = s.outbox_head("pd").unwrap().unwrap();
    assert_eq!(
        (
            accepted.request_id.as_deref(),
            accepted.last_error.as_deref(),
            accepted.attempts
        ),
        (Some("req-9"), None, 2)
    );
    write(s, |s| s.mark_delivered(head.id, 7000, Some("ok"))).unwrap();
    let next = s.outbox_head("pd").unwrap().unwrap();
    assert_eq!(
        next.alert.chain_seq, 2,
        "delivered: the next pending row leads"
    );
    write(s, |s| s.give_up(next.id, 8000, "gone")).unwrap();
    assert_eq!(s.outbox_head("pd").unwrap().unwrap().alert.chain_seq, 3);

    let counts: Vec<_> = s
        .outbox_destinations()
        .unwrap()
        .into_iter()
        .map(|d| (d.destination, d.kind, d.pending, d.failed, d.delivered))
        .collect();
    assert_eq!(
        counts,
        [
            ("og".to_string(), "opsgenie".to_string(), 1, 0, 0),
            ("pd".to_string(), "pagerduty".to_string(), 1, 1, 1)
        ]
    );
    let listed: Vec<_> = s
        .outbox_rows("pd", 5, 5)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.status,
                r.attempts,
                r.next_attempt_at.is_some(),
                r.delivered_at.map(|t| t.to_string()),
            )
        })
        .collect();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].0, "delivered");
    assert_eq!(
        (listed[1].0.as_str(), listed[2].0.as_str(), listed[2].2),
        ("failed", "pending", true)
    );
    assert_eq!(
        s.outbox_rows("pd", 0, 1).unwrap().len(),
        1,
        "the oldest waiting only"
    );
}

pub fn observations(s: &dyn Store) {
    let mut windowed = observation("orders", 3.0, "2026-03-03T09:00:00Z");
    windowed.detail.since = Some(at("2026-03-02T00:00:00Z"));
    let mut breach = observation("orders", 50.0, "2026-03-04T09:00:00Z");
    breach.verdict = VerdictKind::High;
    breach.detail.expected = Some(Range {
        low: 0.0,
        high: 10.0,
        baseline: 2.5,
    });
    breach.expected = breach.detail.expected;
    let mut column = observation("orders", 0.1, "2026-03-04T09:00:00Z");
    column.check = CheckKind::NullRate;
    column.detail.column = Some("email".into());
    let mut schema = observation("orders", 0.0, "2026-03-04T09:00:00Z");
    schema.check = CheckKind::Schema;
    schema.value = None;
    schema.detail.message = Some("columns".into());
    let all = [
        observation("orders", 1.0, "2026-03-01T09:00:00Z"),
        observation("orders", 2.0, "2026-03-02T09:00:00Z"),
        windowed,
        breach.clone(),
        column,
        schema,
        observation("payments", 7.0, "2026-03-04T09:00:00Z"),
    ];
    write(s, |s| {
        s.start_observation_mark("before")?;
        all.iter().try_for_each(|o| s.insert_observation(o))
    })
    .unwrap();
    assert_eq!(
        s.meta("before").unwrap().as_deref(),
        Some("0"),
        "the mark started at the newest"
    );
    let history = s
        .observation_history("orders", CheckKind::RowCount)
        .unwrap();
    assert_eq!(history, all[..4], "reads back as written, oldest first");
    let latest: Vec<_> = s
        .latest_observations()
        .unwrap()
        .into_iter()
        .map(|o| (o.monitor, o.check))
        .collect();
    assert_eq!(
        latest,
        [
            ("orders".to_string(), CheckKind::RowCount),
            ("orders".to_string(), CheckKind::NullRate),
            ("orders".to_string(), CheckKind::Schema),
            ("payments".to_string(), CheckKind::RowCount)
        ]
    );
    let after = s.observations_after(0).unwrap();
    assert_eq!(after.len(), 7);
    let third = after[2].0;
    assert_eq!(s.observations_after(third).unwrap().len(), 4);
    assert_eq!(
        s.latest_schema("orders")
            .unwrap()
            .unwrap()
            .message
            .as_deref(),
        Some("columns")
    );
    assert_eq!(s.latest_schema("payments").unwrap(), None);

    let values = |windowed, through| {
        s.baseline_values("orders", CheckKind::RowCount, "", windowed, 0, through)
            .unwrap()
    };
    assert_eq!(values(false, 0), [1.0, 2.0], "the breach is not learned");
    assert_eq!(values(true, 0), [3.0], "windowed apart");
    assert_eq!(
        values(false, i64::MAX),
        [1.0, 2.0, 50.0],
        "accepted breaches are"
    );
    write(s, |s| {
        s.leave_baselines(
            "orders",
            at("2026-03-02T00:00:00Z"),
            at("2026-03-02T23:59:59Z"),
            "reload",
        )
    })
    .unwrap();
    assert_eq!(values(false, 0), [1.0], "a span that left the baselines");
    assert_eq!(
        s.baseline_values("orders", CheckKind::NullRate, "email", false, 0, 0)
            .unwrap(),
        [0.1]
    );

    let mut judged = Vec::new();
    s.judged_newest_first("orders", CheckKind::RowCount, "", &mut |j| {
        judged.push((j.value, j.verdict, j.baseline, j.at.to_string()));
        judged.len() < 3
    })
    .unwrap();
    assert_eq!(
        judged,
        [
            (
                50.0,
                VerdictKind::High,
                Some(2.5),
                "2026-03-04T09:00:00Z".to_string()
            ),
            (
                3.0,
                VerdictKind::Ok,
                None,
                "2026-03-03T09:00:00Z".to_string()
            ),
            (
                2.0,
                VerdictKind::Ok,
                None,
                "2026-03-02T09:00:00Z".to_string()
            )
        ],
        "newest first, until told to stop"
    );
}

pub fn minutes(s: &dyn Store) {
    write(s, |s| {
        s.set_minute_source("orders", "shop.orders\nat", 100)?;
        s.set_minute_source("orders", "shop.orders\nloaded_at", 200)?;
        s.set_minute_source("accounts", "shop.accounts\nat", 0)?;
        s.insert_day("orders", 20001, 5, &[0, 1, 255])?;
        s.insert_day("orders", 20000, 3, &[])?;
        s.insert_day("accounts", 20000, 1, &[9])
    })
    .unwrap();
    assert_eq!(
        s.minute_source("orders").unwrap(),
        Some(("shop.orders\nloaded_at".to_string(), 200))
    );
    assert_eq!(
        s.days("orders").unwrap(),
        [(20000, 3, vec![]), (20001, 5, vec![0, 1, 255])]
    );
    let mut monitors = s.monitors_with_minutes().unwrap();
    monitors.sort();
    assert_eq!(monitors, ["accounts", "orders"]);
    assert!(
        write(s, |s| s.insert_day("orders", 20000, 9, &[])).is_err(),
        "a day is stored once"
    );
    write(s, |s| s.forget_minutes("orders")).unwrap();
    assert_eq!(s.minute_source("orders").unwrap(), None);
    assert!(s.days("orders").unwrap().is_empty());
    assert_eq!(
        s.days("accounts").unwrap().len(),
        1,
        "another monitor's stay"
    );
}

pub fn baselines(s: &dyn Store) {
    write(s, |s| {
        s.add_volume_restart("orders", "2026-03-05", 2.0, "INC-0002", 9)?;
        s.add_volume_restart("orders", "2026-03-01", 1.5, "INC-0001", 4)?;
        s.add_learned_restart(&learned(10, 20, 4))?;
        s.add_learned_restart(&learned(30, 40, 8))?;
        s.add_learned_restart(&learned(5, 6, 12))?;
        s.put_incident("INC-0001", "resolved", r#"{"monitor": "orders", "opened_at": "2026-03-01T09:00:00Z", "day": "2026-02-28", "resolved_at": "2026-03-01T10:00:00Z"}"#)?;
        s.put_incident("INC-0002", "open", r#"{"monitor": "orders", "opened_at": "2026-03-05T09:00:00Z", "resolved_at": ""}"#)?;
        s.put_incident("INC-0003", "open", r#"{"monitor": "payments", "opened_at": "2026-03-05T09:00:00Z"}"#)
    })
    .unwrap();
    assert_eq!(
        s.volume_restarts("orders").unwrap(),
        [
            ("INC-0001".to_string(), "2026-03-01".to_string(), 1.5),
            ("INC-0002".to_string(), "2026-03-05".to_string(), 2.0)
        ]
    );
    assert!(s.volume_restarts("payments").unwrap().is_empty());
    assert_eq!(
        s.learned_restart("orders", CheckKind::RowCount, "")
            .unwrap(),
        Some((30, 40))
    );
    assert_eq!(
        s.learned_restart("orders", CheckKind::NullRate, "")
            .unwrap(),
        None
    );
    let spans: Vec<_> = s
        .incident_spans("orders")
        .unwrap()
        .into_iter()
        .map(|i| {
            (
                i.id,
                i.opened_at.to_string(),
                i.day,
                i.resolved_at.map(|t| t.to_string()),
            )
        })
        .collect();
    assert_eq!(
        spans,
        [
            (
                "INC-0001".to_string(),
                "2026-03-01T09:00:00Z".to_string(),
                Some("2026-02-28".to_string()),
                Some("2026-03-01T10:00:00Z".to_string())
            ),
            (
                "INC-0002".to_string(),
                "2026-03-05T09:00:00Z".to_string(),
                None,
                None
            )
        ]
    );
}

pub fn quiet(s: &dyn Store) {
    write(s, |s| {
        s.add_snooze(&snooze(7, "orders"))?;
        s.add_snooze(&snooze(3, "payments"))?;
        s.add_snooze(&snooze(9, "orders"))?;
        s.end_snooze(7, 11)
    })
    .unwrap();
    let running: Vec<(u64, String)> = s
        .running_snoozes()
        .unwrap()
        .into_iter()
        .map(|z| (z.seq, z.monitor))
        .collect();
    assert_eq!(
        running,
        [(3, "payments".to_string()), (9, "orders".to_string())],
        "by record, the ended left out"
    );
    assert_eq!(
        s.running_snoozes().unwrap()[0],
        snooze(3, "payments"),
        "reads back as set"
    );
    write(s, |s| {
        s.leave_baselines(
            "orders",
            at("2026-03-05T00:00:00Z"),
            at("2026-03-05T12:00:00Z"),
            "maintenance",
        )?;
        s.leave_baselines(
            "orders",
            at("2026-03-01T00:00:00Z"),
            at("2026-03-01T12:00:00Z"),
            "expected",
        )?;
        s.leave_baselines(
            "orders",
            at("2026-03-01T00:00:00Z"),
            at("2026-03-01T12:00:00Z"),
            "again",
        )
    })
    .unwrap();
    assert_eq!(
        s.left_baselines("orders").unwrap(),
        [
            (at("2026-03-01T00:00:00Z"), at("2026-03-01T12:00:00Z")),
            (at("2026-03-05T00:00:00Z"), at("2026-03-05T12:00:00Z"))
        ]
    );
    assert!(s.left_baselines("payments").unwrap().is_empty());
}

pub fn access_and_waves(s: &dyn Store) {
    write(s, |s| {
        s.put_access_request("ACC-0002", "two")?;
        s.put_access_request("ACC-0001", "one")?;
        s.put_access_request("ACC-0002", "two, granted")?;
        s.put_wave_sign_off("MIG-b-1", "b")?;
        s.put_wave_sign_off("MIG-a-1", "a")?;
        s.put_wave_sign_off("MIG-b-1", "b, signed")
    })
    .unwrap();
    assert_eq!(
        s.access_request_docs().unwrap(),
        [pair("ACC-0002", "two, granted"), pair("ACC-0001", "one")]
    );
    assert_eq!(
        s.wave_sign_offs().unwrap(),
        [pair("MIG-b-1", "b, signed"), pair("MIG-a-1", "a")]
    );
}

pub fn lineage_events(s: &dyn Store) {
    let received = at("2026-03-01T10:00:00Z");
    let batch = [
        (
            "listener".to_string(),
            event("run-1", "START", "2026-03-01T09:00:00Z", Some(5)),
        ),
        (
            "listener".to_string(),
            event("run-1", "COMPLETE", "2026-03-01T09:05:00.5Z", Some(8)),
        ),
        (
            "a.jsonl:3".to_string(),
            event("run-2", "COMPLETE", "2026-03-01T08:00:00Z", Some(2)),
        ),
        (
            "listener".to_string(),
            event("run-3", "COMPLETE", "2026-03-01T09:30:00Z", None),
        ),
    ];
    assert_eq!(
        write(s, |s| s.insert_lineage_events(&batch, received)).unwrap(),
        4
    );
    assert_eq!(
        write(s, |s| s.insert_lineage_events(&batch[1..2], received)).unwrap(),
        0,
        "a retry is ignored"
    );
    assert_eq!(s.lineage_event_count().unwrap(), 4);
    let rows: Vec<_> = s
        .output_row_counts()
        .unwrap()
        .into_iter()
        .map(|r| (r.at.to_rfc3339(), r.rows))
        .collect();
    assert_eq!(
        rows,
        [
            ("2026-03-01T08:00:00+00:00".to_string(), 2),
            ("2026-03-01T09:05:00.500+00:00".to_string(), 8)
        ],
        "once per run, from its latest counting event, oldest first"
    );
    let job = JobName {
        namespace: "dbt".into(),
        name: "shop.orders".into(),
    };
    let output = Dataset {
        namespace: "postgres://db".into(),
        name: "shop.orders".into(),
    };
    assert_eq!(s.run_rows_of(&job, &output).unwrap().len(), 2);
    let other = Dataset {
        namespace: "postgres://db".into(),
        name: "shop.other".into(),
    };
    assert!(s.run_rows_of(&job, &other).unwrap().is_empty());
    let learned = s.learned_jobs().unwrap();
    assert_eq!(learned.len(), 1);
    assert_eq!(learned[0].job, job);
    assert_eq!(
        learned[0].last_seen.to_rfc3339(),
        "2026-03-01T09:30:00+00:00"
    );
    let input = Dataset {
        namespace: "postgres://db".into(),
        name: "shop.raw_orders".into(),
    };
    assert_eq!(
        (learned[0].inputs.clone(), learned[0].outputs.clone()),
        (vec![input], vec![output])
    );

    assert_eq!(s.lineage_file_position("a.jsonl").unwrap(), None);
    let position = Position {
        offset: 120,
        lines: 3,
        file_id: Some(u64::from(u32::MAX) + 1),
    };
    write(s, |s| s.set_lineage_file_position("a.jsonl", position)).unwrap();
    let moved = Position {
        offset: 240,
        lines: 6,
        file_id: None,
    };
    write(s, |s| s.set_lineage_file_position("a.jsonl", moved)).unwrap();
    assert_eq!(s.lineage_file_position("a.jsonl").unwrap(), Some(moved));
}

/// Runs `work` in one write transaction, committed; on an error rolled back.
pub fn write<T>(s: &dyn Store, work: impl FnOnce(&dyn Store) -> Result<T>) -> Result<T> {
    s.begin_write()?;
    match work(s) {
        Ok(value) => {
            s.commit_write()?;
            Ok(value)
        }
        Err(e) => {
            s.rollback_write()?;
            Err(e)
        }
    }
}

// ---- fixtures ----

pub fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

pub fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

pub fn intent<'a>(subject: &'a str, client_request: Option<&'a str>) -> NewIntent<'a> {
    NewIntent {
        created_at: at("2026-03-01T09:00:00Z"),
        subject,
        effect: "{}",
        completion: r#"{"c": 1}"#,
        by_person: client_request.is_some(),
        client_request,
        asker_uid: client_request.map(|_| 70000),
    }
}

pub fn alert(dedup_key: &str, occasion: &str, chain_seq: u64) -> Alert {
    let occasion = match occasion {
        "paged" => {
            serde_json::json!({ "occasion": "paged", "proposal": "INC-0001-P1", "to": "bob" })
        }
        _ => serde_json::json!({ "occasion": occasion }),
    };
    let mut alert = serde_json::json!({
        "incident": "INC-0001", "dedup_key": dedup_key, "action": "trigger",
        "severity": "error", "title": "orders: rows low", "table": "shop.orders",
        "domain": null, "status": "open", "cause": "a late load", "evidence": ["rows 3"],
        "blast": { "models": [], "dashboards": [], "jobs": [], "other": [], "owners": [], "break_risks": [] },
        "waiting": [], "update": null, "receipt": null, "chain_seq": chain_seq,
        "chain_hash": "ab", "at": "2026-03-01T09:00:00Z"
    });
    alert
        .as_object_mut()
        .unwrap()
        .extend(occasion.as_object().unwrap().clone());
    serde_json::from_value(alert).unwrap()
}

pub fn observation(monitor: &str, value: f64, when: &str) -> Observation {
    Observation {
        monitor: monitor.to_string(),
        table: format!("shop.{monitor}"),
        check: CheckKind::RowCount,
        at: at(when),
        value: Some(value),
        verdict: VerdictKind::Ok,
        expected: None,
        health: Health::Ok,
        detail: Detail::default(),
    }
}

pub fn learned(since_id: i64, through_id: i64, seq: u64) -> LearnedRestart<'static> {
    LearnedRestart {
        monitor: "orders",
        check: CheckKind::RowCount,
        subject: "",
        since_id,
        through_id,
        value: 1.5,
        incident: "INC-0001",
        seq,
    }
}

pub fn snooze(seq: u64, monitor: &str) -> Snooze {
    Snooze {
        seq,
        monitor: monitor.to_string(),
        until: at("2026-03-02T09:00:00Z"),
        reason: "a migration".to_string(),
        actor: r#"{"user": "alice"}"#.to_string(),
    }
}

pub fn event(run: &str, kind: &str, when: &str, rows: Option<u64>) -> RunEvent {
    let mut output = serde_json::json!({ "namespace": "postgres://db", "name": "shop.orders" });
    if let Some(rows) = rows {
        output["outputFacets"] = serde_json::json!({ "outputStatistics": { "rowCount": rows } });
    }
    let text = serde_json::json!({
        "eventType": kind, "eventTime": when, "producer": "https://example.com/dbt-ol",
        "run": { "runId": run }, "job": { "namespace": "dbt", "name": "shop.orders" },
        "inputs": [{ "namespace": "postgres://db", "name": "shop.raw_orders" }],
        "outputs": [output]
    });
    parse_event(&text.to_string()).unwrap()
}
