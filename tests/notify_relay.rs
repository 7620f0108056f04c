//! The relay against local stand-ins of each API (tests/support/http.rs), one carrier
//! step at a time on a clock the test moves: 429 with Retry-After, 500s, timeouts,
//! connection refused, a slow server, a destination down for many retries then up,
//! permanent refusals, and Opsgenie's and JSM's request statuses read back. Nothing here
//! waits for a backoff: the clock is the test's.

#[path = "support/http.rs"]
mod http;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dataward::config::Config;
use dataward::notify::outbox;
use dataward::notify::relay::{Backoff, Carrier, Done, Jitter, Marks, Next, Options, Relay};
use dataward::notify::{Action, Alert, Blast, Occasion, ReceiptDigest, Waiting};
use http::{Api, Behaviour, FakeApi};

const T0: i64 = 1_790_000_000_000;

fn alert(incident: &str, seq: u64, action: Action, occasion: Occasion) -> Alert {
    Alert {
        incident: incident.into(),
        dedup_key: format!("dataward-0a1b2c3d4e5f-{incident}"),
        action,
        occasion,
        severity: "critical".into(),
        title: "RAW.EVENTS row count 120 (expected 9,000 to 15,000)".into(),
        table: "RAW.EVENTS".into(),
        domain: Some("analytics".into()),
        status: "open".into(),
        cause: "RAW.EVENTS stalled at 13:50".into(),
        evidence: vec!["freshness late at 14:00".into()],
        blast: Blast {
            models: vec!["fct_events".into()],
            dashboards: vec!["Daily events".into()],
            jobs: vec!["nightly dbt job".into()],
            other: Vec::new(),
            owners: vec!["analytics-owner".into()],
            break_risks: Vec::new(),
        },
        waiting: vec![Waiting {
            proposal: format!("{incident}-P1"),
            kind: "hold".into(),
            title: "pause the nightly dbt job".into(),
            waits_for: vec!["analytics-owner".into()],
        }],
        update: None,
        receipt: (action == Action::Resolve).then(|| ReceiptDigest {
            how: "verified".into(),
            approvals: vec![format!("{incident}-P1 approved by alice")],
            runs: vec!["run #1 success".into()],
            checks: vec!["row count within baseline: passed".into()],
            undo: vec!["resumed the nightly dbt job".into()],
            receipt_hash: "feedbeef".into(),
        }),
        chain_seq: seq,
        chain_hash: format!("hash{seq}"),
        at: "2026-11-24T14:00:00Z".parse().unwrap(),
    }
}

/// The three alerts of one incident's life: opened, first approval, resolved.
fn lifecycle(incident: &str) -> Vec<Alert> {
    vec![
        alert(incident, 1, Action::Trigger, Occasion::Opened),
        alert(
            incident,
            5,
            Action::Update,
            Occasion::FirstApproval {
                proposal: format!("{incident}-P1"),
                by: "alice".into(),
            },
        ),
        alert(incident, 9, Action::Resolve, Occasion::Resolved),
    ]
}

struct Setup {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    carrier: Carrier,
}

/// A state database, a config with one destination pointed at `server`, its secret in
/// a variable of the test's own, and a carrier for it.
fn setup(server: &FakeApi, kind: &str, var: &str, timeout: Duration) -> Setup {
    setup_marking(server, kind, var, timeout, None)
}

/// [`setup`], its carrier's marks handed to `marks` (written by the test otherwise).
fn setup_marking(
    server: &FakeApi,
    kind: &str,
    var: &str,
    timeout: Duration,
    marks: Option<Marks>,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    let state = dataward::store::open(&db).unwrap();
    let (secret_key, value, base) = match kind {
        "pagerduty" => (
            "routing_key",
            server.secret.clone(),
            Some(server.base_url()),
        ),
        "slack" => ("webhook_url", server.base_url(), None),
        _ => ("api_key", server.secret.clone(), Some(server.base_url())),
    };
    std::env::set_var(var, value);
    let text = format!(
        "[[alert]]\nname = \"dest\"\nkind = \"{kind}\"\n{secret_key}_env = \"{var}\"\n{}",
        base.map(|b| format!("base_url = \"{b}\"\n"))
            .unwrap_or_default()
    );
    let config = Arc::new(Config::parse(&text, &dir.path().join("team.toml")).unwrap());
    let client = dataward::notify::client(timeout).unwrap();
    let backoff = Backoff {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(60),
    };
    // The test is the state database's writer here, as the engine is beside a relay.
    let marks = marks.unwrap_or_else(|| Marks::on(state));
    let carrier =
        Carrier::new(config, "dest", &db, marks, client, backoff, Jitter::new(42)).unwrap();
    Setup {
        _dir: dir,
        db,
        carrier,
    }
}

fn enqueue(db: &Path, kind: &str, alerts: &[Alert]) {
    let conn = dataward::store::open(db).unwrap();
    for a in alerts {
        assert!(outbox::enqueue(&conn, "dest", kind, a, T0).unwrap());
    }
}

/// Steps the carrier at each time it asks for until nothing is pending; returns what
/// each step did and the time it ended at. Bounded, so a loop that never ends fails.
fn drain(carrier: &mut Carrier, mut now: i64) -> (Vec<Done>, i64) {
    let mut done = Vec::new();
    for _ in 0..500 {
        let (did, next) = carrier.step(now).unwrap();
        if did != Done::Nothing {
            done.push(did);
        }
        match next {
            Next::Idle => return (done, now),
            Next::Now => {}
            Next::At(at) => now = now.max(at),
        }
    }
    panic!("the outbox never drained: {done:#?}");
}

fn statuses(db: &Path) -> Vec<(String, u32, Option<String>)> {
    let conn = dataward::store::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT status, attempts, last_error FROM outbox ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn pagerduty_one_incident_through_429_500_and_a_slow_answer() {
    let server = FakeApi::start(Api::PagerDuty, "R0UTINGKEY0123456789abcdef012345");
    let mut s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_1",
        Duration::from_secs(5),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0001"));
    server.plan([
        Behaviour::Status(429, Some("7".into()), r#"{"status":"throttle event","message":"Requests for this service are arriving too quickly"}"#.into()),
        Behaviour::Status(500, None, String::new()),
        Behaviour::Slow(Duration::from_millis(300)),
    ]);
    // 429: tried again exactly when Retry-After said, not before.
    let (done, next) = s.carrier.step(T0).unwrap();
    assert!(
        matches!(&done, Done::Retrying { at, error, .. } if *at == T0 + 7_000 && error.contains("429")),
        "{done:?}"
    );
    assert_eq!(next, Next::At(T0 + 7_000));
    assert_eq!(
        s.carrier.step(T0 + 6_999).unwrap(),
        (Done::Nothing, Next::At(T0 + 7_000))
    );
    assert_eq!(server.requests().len(), 1);
    // 500: the backoff's second step, 1 to 2 s with its jitter.
    let (done, _) = s.carrier.step(T0 + 7_000).unwrap();
    let Done::Retrying { at, error, .. } = done else {
        panic!("{done:?}")
    };
    assert!((T0 + 8_000..T0 + 9_000).contains(&at), "{at}");
    assert!(error.contains("PagerDuty answered 500"), "{error}");
    // Slow but within the timeout: delivered; then the rest, in order.
    let (done, _) = drain(&mut s.carrier, at);
    assert_eq!(done.len(), 3, "{done:#?}");
    let actions: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["event_action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        actions,
        ["trigger", "trigger", "trigger", "acknowledge", "resolve"]
    );
    let alerts = server.alerts();
    assert_eq!(alerts.len(), 1, "one alert: {alerts:#?}");
    assert_eq!(alerts[0].state, "resolved");
    assert_eq!(alerts[0].key, "dataward-0a1b2c3d4e5f-INC-0001");
    let resolve = server.requests().last().unwrap().json();
    assert_eq!(
        resolve["payload"]["custom_details"]["receipt"]["how"],
        "verified"
    );
    assert!(statuses(&s.db).iter().all(|(st, _, _)| st == "delivered"));
}

#[test]
fn a_timeout_is_retried_and_the_resend_lands_on_the_same_alert() {
    let server = FakeApi::start(Api::PagerDuty, "K2");
    let mut s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_2",
        Duration::from_millis(300),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0002")[..1]);
    // The server takes the event, but answers after the client gave up waiting.
    server.plan([Behaviour::Slow(Duration::from_millis(1_500))]);
    let (done, _) = s.carrier.step(T0).unwrap();
    assert!(
        matches!(&done, Done::Retrying { error, .. } if error.contains("timed out")),
        "{done:?}"
    );
    let (done, _) = drain(&mut s.carrier, T0 + 60_000);
    assert!(matches!(done[..], [Done::Delivered { .. }]), "{done:?}");
    // Wait for the slow handler to have acted, then look: two triggers, one alert.
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.alerts().len(), 1, "{:#?}", server.alerts());
}

#[test]
fn a_destination_down_for_an_hour_gets_everything_in_order_once_it_is_back() {
    let server = FakeApi::start(Api::PagerDuty, "K3");
    let mut s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_3",
        Duration::from_secs(2),
    );
    let mut alerts = lifecycle("INC-0003");
    alerts.extend(lifecycle("INC-0004").into_iter().map(|mut a| {
        a.chain_seq += 100;
        a
    }));
    enqueue(&s.db, "pagerduty", &alerts);
    server.down();
    // An hour of the test's clock: the carrier retries whenever it asks to.
    let mut now = T0;
    let mut tries = 0;
    while now < T0 + 3_600_000 {
        let (done, next) = s.carrier.step(now).unwrap();
        if let Done::Retrying { error, .. } = &done {
            tries += 1;
            assert!(error.contains("could not connect"), "{error}");
        }
        let Next::At(at) = next else {
            panic!("{next:?}")
        };
        assert!(at - now <= 60_000, "the backoff is capped at a minute");
        now = at;
    }
    assert!(tries >= 60, "{tries} tries in an hour");
    assert_eq!(statuses(&s.db)[0].1, tries, "attempts are counted");
    assert!(server.requests().is_empty());
    server.up();
    let (done, _) = drain(&mut s.carrier, now);
    assert_eq!(done.len(), 6, "{done:#?}");
    let sent: Vec<(String, String)> = server
        .requests()
        .iter()
        .map(|r| {
            let e = r.json();
            (
                e["dedup_key"].as_str().unwrap().to_string(),
                e["event_action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let key = |i: &str| format!("dataward-0a1b2c3d4e5f-{i}");
    assert_eq!(
        sent,
        [
            (key("INC-0003"), "trigger".to_string()),
            (key("INC-0003"), "acknowledge".into()),
            (key("INC-0003"), "resolve".into()),
            (key("INC-0004"), "trigger".into()),
            (key("INC-0004"), "acknowledge".into()),
            (key("INC-0004"), "resolve".into()),
        ],
        "each once, in order"
    );
    assert_eq!(server.alerts().len(), 2);
}

#[test]
fn a_refusal_is_given_up_shown_and_the_next_alert_goes() {
    let server = FakeApi::start(Api::PagerDuty, "K4");
    let mut s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_4",
        Duration::from_secs(2),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0005")[..1]);
    enqueue(
        &s.db,
        "pagerduty",
        &lifecycle("INC-0006")[..1]
            .iter()
            .map(|a| {
                let mut a = a.clone();
                a.chain_seq = 50;
                a
            })
            .collect::<Vec<_>>(),
    );
    server.plan([Behaviour::Status(
        400,
        None,
        r#"{"status":"invalid event","message":"Event object is invalid","errors":["Length of 'routing_key' is incorrect"]}"#.into(),
    )]);
    let (done, _) = drain(&mut s.carrier, T0);
    assert!(
        matches!(&done[0], Done::GaveUp { error, .. } if error.contains("400") && error.contains("Length of 'routing_key' is incorrect")),
        "{done:?}"
    );
    assert!(matches!(done[1], Done::Delivered { .. }));
    assert_eq!(server.requests().len(), 2, "a 400 is never sent again");
    let st = statuses(&s.db);
    assert_eq!(st[0].0, "failed");
    assert_eq!(st[1].0, "delivered");
    let conn = dataward::store::open(&s.db).unwrap();
    let view = outbox::view(&conn, T0, &[]).unwrap();
    assert_eq!((view[0].failed, view[0].delivered), (1, 1));
    assert!(view[0].last_error.as_deref().unwrap().contains("400"));
}

#[test]
fn a_missing_secret_is_shown_on_the_destination_and_nothing_is_lost() {
    let server = FakeApi::start(Api::PagerDuty, "K5");
    let mut s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_5",
        Duration::from_secs(2),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0007")[..1]);
    std::env::remove_var("DATAWARD_TEST_RELAY_PD_5");
    let (done, next) = s.carrier.step(T0).unwrap();
    assert!(
        matches!(&done, Done::Retrying { error, .. } if error.contains("DATAWARD_TEST_RELAY_PD_5 is not set")),
        "{done:?}"
    );
    assert_eq!(next, Next::At(T0 + 30_000));
    assert!(server.requests().is_empty());
    std::env::set_var("DATAWARD_TEST_RELAY_PD_5", "K5");
    let (done, _) = drain(&mut s.carrier, T0 + 30_000);
    assert!(matches!(done[..], [Done::Delivered { .. }]));
}

fn opsgenie_lifecycle(api: Api, kind: &str, var: &str, prefix: &str) {
    let server = FakeApi::start(api, "0a1b2c3d-genie-key");
    let mut s = setup(&server, kind, var, Duration::from_secs(2));
    enqueue(&s.db, kind, &lifecycle("INC-0010"));
    // The first read of the create's outcome finds it not processed yet.
    server.unprocessed_reads(1);
    server.plan([Behaviour::Status(429, Some("3".into()), "{}".into())]);
    let (done, _) = drain(&mut s.carrier, T0);
    let accepted = done
        .iter()
        .filter(|d| matches!(d, Done::Accepted { .. }))
        .count();
    assert_eq!(accepted, 3, "{done:#?}");
    let requests: Vec<String> = server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    let alias = "dataward-0a1b2c3d4e5f-INC-0010";
    assert_eq!(
        requests,
        [
            format!("POST {prefix}/v2/alerts"),
            format!("POST {prefix}/v2/alerts"),
            format!("GET {prefix}/v2/alerts/requests/req-0001"),
            format!("GET {prefix}/v2/alerts/requests/req-0001"),
            format!("POST {prefix}/v2/alerts/{alias}/acknowledge?identifierType=alias"),
            format!("GET {prefix}/v2/alerts/requests/req-0002"),
            format!("POST {prefix}/v2/alerts/{alias}/close?identifierType=alias"),
            format!("GET {prefix}/v2/alerts/requests/req-0003"),
        ]
    );
    let create = server.requests()[1].json();
    assert!(create["message"].as_str().unwrap().chars().count() <= 130);
    assert_eq!(create["alias"], alias);
    assert_eq!(create["priority"], "P1");
    let close = server.requests()[6].json();
    assert!(close["note"]
        .as_str()
        .unwrap()
        .contains("resumed the nightly dbt job"));
    let alerts = server.alerts();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].state, "closed");
    assert!(statuses(&s.db).iter().all(|(st, _, _)| st == "delivered"));
}

#[test]
fn opsgenie_one_incident_with_its_outcomes_read_back() {
    opsgenie_lifecycle(Api::Opsgenie, "opsgenie", "DATAWARD_TEST_RELAY_OG_1", "");
}

#[test]
fn jsm_one_incident_through_the_ops_alert_api() {
    opsgenie_lifecycle(
        Api::Jsm,
        "jsm",
        "DATAWARD_TEST_RELAY_JSM_1",
        "/jsm/ops/integration",
    );
}

#[test]
fn an_opsgenie_refusal_read_back_is_given_up() {
    let server = FakeApi::start(Api::Opsgenie, "gk");
    let mut s = setup(
        &server,
        "opsgenie",
        "DATAWARD_TEST_RELAY_OG_2",
        Duration::from_secs(2),
    );
    // A close for an alert Opsgenie never had.
    enqueue(&s.db, "opsgenie", &lifecycle("INC-0011")[2..]);
    let (done, _) = drain(&mut s.carrier, T0);
    assert!(
        matches!(&done[1], Done::GaveUp { error, .. } if error.contains("Alert does not exist")),
        "{done:?}"
    );
}

#[test]
fn slack_keeps_its_pace_and_honours_retry_after() {
    let server = FakeApi::start(Api::Slack, "T000/B000/XXXXSECRET");
    let mut s = setup(
        &server,
        "slack",
        "DATAWARD_TEST_RELAY_SLACK_1",
        Duration::from_secs(2),
    );
    enqueue(&s.db, "slack", &lifecycle("INC-0020"));
    let (done, next) = s.carrier.step(T0).unwrap();
    assert!(matches!(done, Done::Delivered { .. }));
    assert_eq!(next, Next::Now);
    // The next message waits a second after the last one.
    assert_eq!(
        s.carrier.step(T0 + 10).unwrap(),
        (Done::Nothing, Next::At(T0 + 1_000))
    );
    server.plan([Behaviour::Status(
        429,
        Some("30".into()),
        "rate_limited".into(),
    )]);
    let (done, _) = s.carrier.step(T0 + 1_000).unwrap();
    assert!(
        matches!(&done, Done::Retrying { at, error, .. } if *at == T0 + 31_000 && error.contains("429")),
        "{done:?}"
    );
    let (done, _) = drain(&mut s.carrier, T0 + 31_000);
    assert_eq!(done.len(), 2);
    let messages = server.slack_messages();
    assert_eq!(messages.len(), 3);
    let texts: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
    assert!(texts[0].contains("INC-0020 opened") && texts[0].contains("Blast radius"));
    assert!(texts[0].contains("Waiting for a decision"));
    assert!(texts[2].contains("INC-0020 resolved") && texts[2].contains("Receipt"));
    // The webhook's URL is the secret: no error or row ever shows it.
    let conn = dataward::store::open(&s.db).unwrap();
    let view = serde_json::to_string(&outbox::view(&conn, T0, &[]).unwrap()).unwrap();
    assert!(!view.contains("XXXXSECRET"), "{view}");
}

#[test]
fn a_refused_connection_never_shows_the_webhook_url() {
    let server = FakeApi::start(Api::Slack, "T1/B1/HIDDENSECRET");
    let mut s = setup(
        &server,
        "slack",
        "DATAWARD_TEST_RELAY_SLACK_2",
        Duration::from_secs(2),
    );
    enqueue(&s.db, "slack", &lifecycle("INC-0021")[..1]);
    server.down();
    let (done, _) = s.carrier.step(T0).unwrap();
    let Done::Retrying { error, .. } = done else {
        panic!("{done:?}")
    };
    assert!(error.contains("could not connect"), "{error}");
    assert!(
        !error.contains("HIDDENSECRET") && !error.contains("127.0.0.1"),
        "{error}"
    );
}

/// Beside an engine, the relay writes nothing: each mark is handed over, the engine
/// writes it (it is the state database's one writer), and the row stays where it was
/// until then. A mark the engine could not write is an error, and the row is still
/// pending: sent again, never lost.
#[test]
fn marks_handed_to_the_engine_are_written_by_it_not_by_the_relay() {
    let server = FakeApi::start(Api::PagerDuty, "R0UTINGKEY0123456789abcdef012345");
    let handed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let refuse = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (kept, refusing) = (handed.clone(), refuse.clone());
    let s = setup_marking(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_MARKS",
        Duration::from_secs(5),
        Some(Marks::to(move |mark| {
            anyhow::ensure!(
                !refusing.load(std::sync::atomic::Ordering::SeqCst),
                "the engine refused the mark"
            );
            kept.lock().unwrap().push(mark);
            Ok(())
        })),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0001")[..1]);
    let mut carrier = s.carrier;
    let err = carrier.step(T0).unwrap_err();
    assert!(format!("{err:#}").contains("refused the mark"), "{err:#}");
    assert_eq!(statuses(&s.db), [("pending".to_string(), 0, None)]);
    refuse.store(false, std::sync::atomic::Ordering::SeqCst);
    let (done, _) = carrier.step(T0 + 1).unwrap();
    assert!(matches!(done, Done::Delivered { .. }), "{done:?}");
    assert_eq!(
        statuses(&s.db),
        [("pending".to_string(), 0, None)],
        "the relay wrote the row itself"
    );
    let marks = std::mem::take(&mut *handed.lock().unwrap());
    assert!(
        matches!(&marks[..], [outbox::Mark::Delivered { at, note: None, .. }] if *at == T0 + 1),
        "{marks:?}"
    );
    let conn = dataward::store::open(&s.db).unwrap();
    marks[0].write(&conn).unwrap();
    assert_eq!(statuses(&s.db), [("delivered".to_string(), 1, None)]);
    assert_eq!(carrier.step(T0 + 2).unwrap(), (Done::Nothing, Next::Idle));
}

/// A Retry-After given as a date is a wait counted from the relay's clock, the one its
/// backoff and due times are on: on a virtual clock the retry is due when that clock
/// reaches the date, and happens then, with no wait on the wall.
#[test]
fn a_retry_after_date_is_counted_from_the_relays_clock() {
    let server = FakeApi::start(Api::Slack, "T2/B2/DATESECRET");
    let mut s = setup(
        &server,
        "slack",
        "DATAWARD_TEST_RELAY_SLACK_DATE",
        Duration::from_secs(2),
    );
    enqueue(&s.db, "slack", &lifecycle("INC-0021")[..1]);
    let start = chrono::DateTime::from_timestamp_millis(T0).unwrap();
    let clock = dataward::clock::Clock::starting_at(start.naive_utc());
    let asked_date = (start + chrono::TimeDelta::seconds(30)).to_rfc2822();
    server.plan([Behaviour::Status(
        429,
        Some(asked_date),
        "rate_limited".into(),
    )]);
    let (done, next) = s.carrier.step(clock.millis()).unwrap();
    assert!(
        matches!(&done, Done::Retrying { at, .. } if *at == T0 + 30_000),
        "{done:?}"
    );
    assert_eq!(next, Next::At(T0 + 30_000));
    clock
        .hands()
        .unwrap()
        .advance(chrono::TimeDelta::seconds(29));
    assert_eq!(
        s.carrier.step(clock.millis()).unwrap().0,
        Done::Nothing,
        "not due before the date"
    );
    clock
        .hands()
        .unwrap()
        .advance(chrono::TimeDelta::seconds(1));
    let (done, _) = s.carrier.step(clock.millis()).unwrap();
    assert!(matches!(done, Done::Delivered { .. }), "{done:?}");
    assert_eq!(server.slack_messages().len(), 1);
}

/// The relay's threads wait on the relay's clock: on a virtual one (the demo's story) a
/// retry is due when that clock reaches it, and happens once it does, however far off
/// the wall is. The backoff here is ten minutes; only the virtual clock is moved, and
/// the waits below are bounds against a hang, never a measure.
#[test]
fn the_relay_threads_retry_on_a_virtual_clock_when_it_moves() {
    const PATIENCE: Duration = Duration::from_secs(60);
    let server = FakeApi::start(Api::PagerDuty, "R0UTINGKEY0123456789abcdef012345");
    let s = setup(
        &server,
        "pagerduty",
        "DATAWARD_TEST_RELAY_PD_VIRTUAL",
        Duration::from_secs(5),
    );
    enqueue(&s.db, "pagerduty", &lifecycle("INC-0031")[..1]);
    server.plan([Behaviour::Status(500, None, "down for a moment".into())]);
    let start = chrono::DateTime::from_timestamp_millis(T0).unwrap();
    let clock = dataward::clock::Clock::starting_at(start.naive_utc());
    // The carrier's own config, for the relay's thread.
    let config = Config::parse(
        &format!(
            "[[alert]]\nname = \"dest\"\nkind = \"pagerduty\"\n\
             routing_key_env = \"DATAWARD_TEST_RELAY_PD_VIRTUAL\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
        &s.db.with_file_name("team.toml"),
    )
    .unwrap();
    let options = Options {
        backoff: Backoff {
            base: Duration::from_secs(600),
            cap: Duration::from_secs(600),
        },
        timeout: Duration::from_secs(5),
        clock: clock.clone(),
        marks: Marks::on(dataward::store::open(&s.db).unwrap()),
    };
    let relay = Relay::start(&config, &s.db, options, Arc::new(|| {}))
        .unwrap()
        .expect("a relay for the one destination");
    type Rows = [(String, u32, Option<String>)];
    let until = |what: &str, done: &dyn Fn(&Rows) -> bool| {
        let bound = std::time::Instant::now() + PATIENCE;
        loop {
            let now = statuses(&s.db);
            if done(&now) {
                return;
            }
            assert!(
                std::time::Instant::now() < bound,
                "{what}: still {now:?} after the virtual clock moved"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    until("the first try", &|rows| {
        rows.first()
            .is_some_and(|(status, attempts, _)| status == "pending" && *attempts == 1)
    });
    // Ten virtual minutes and a second: the backoff is over on the relay's clock.
    clock
        .hands()
        .unwrap()
        .advance(chrono::TimeDelta::seconds(601));
    until("the retry", &|rows| {
        rows.first()
            .is_some_and(|(status, _, _)| status == "delivered")
    });
    relay.stop();
    assert_eq!(statuses(&s.db)[0].1, 2, "tried twice: once down, once up");
}

/// The relay never writes the state database (the engine is its one writer): a carrier
/// reads its outbox on a read-only connection, so one pointed at a database that is not
/// there does not create one, it says there is none.
#[test]
fn a_carrier_only_reads_the_state_database_and_never_creates_one() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[[alert]]\nname = \"dest\"\nkind = \"slack\"\n\
                webhook_url_env = \"DATAWARD_TEST_RELAY_NEVER_SET\"\n";
    let config = Arc::new(Config::parse(text, &dir.path().join("team.toml")).unwrap());
    let missing = dir.path().join("dataward.db");
    let made = Carrier::new(
        config,
        "dest",
        &missing,
        Marks::to(|_| Ok(())),
        dataward::notify::client(Duration::from_secs(5)).unwrap(),
        Backoff::default(),
        Jitter::new(1),
    );
    assert!(!missing.exists(), "the relay created the state database");
    let err = made.err().expect("no state database to read");
    assert!(format!("{err:#}").contains("no state database"), "{err:#}");
}
