//! One incident's life on the real engine (the embedded estate, driven minute by minute)
//! with `[[alert]]` destinations of every kind pointed at local stand-ins of their APIs:
//! the alerts are queued in the transactions that put their records on the chain, and
//! the relay's carriers deliver them, in order, each as its API's contract says.

#[path = "support/http.rs"]
mod http;
mod story;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use dataward::config::Config;
use dataward::engine::api::Command;
use dataward::notify::relay::{Backoff, Carrier, Done, Jitter, Marks, Next};
use http::{Api, FakeApi};
use story::{approve_all, owner, play_minutes, start};

struct Apis {
    pd: FakeApi,
    og: FakeApi,
    jsm: FakeApi,
    slack: FakeApi,
    lead: FakeApi,
}

fn apis(tag: &str) -> (Apis, String) {
    let apis = Apis {
        pd: FakeApi::start(Api::PagerDuty, "pd-routing-key"),
        og: FakeApi::start(Api::Opsgenie, "og-key"),
        jsm: FakeApi::start(Api::Jsm, "jsm-key"),
        slack: FakeApi::start(Api::Slack, "T0/B0/slacksecret"),
        lead: FakeApi::start(Api::PagerDuty, "lead-routing-key"),
    };
    let var = |name: &str| format!("DATAWARD_TEST_{tag}_{name}");
    std::env::set_var(var("PD"), &apis.pd.secret);
    std::env::set_var(var("OG"), &apis.og.secret);
    std::env::set_var(var("JSM"), &apis.jsm.secret);
    std::env::set_var(var("SLACK"), apis.slack.base_url());
    std::env::set_var(var("LEAD"), &apis.lead.secret);
    let config = format!(
        r#"
[[alert]]
name = "pd"
kind = "pagerduty"
routing_key_env = "{}"
base_url = "{}"

[[alert]]
name = "og"
kind = "opsgenie"
api_key_env = "{}"
base_url = "{}"

[[alert]]
name = "jsm"
kind = "jsm"
api_key_env = "{}"
base_url = "{}"

[[alert]]
name = "slack"
kind = "slack"
webhook_url_env = "{}"
severities = ["critical", "error"]

# The lead's own pager: only escalations to the lead come here.
[[alert]]
name = "lead"
kind = "pagerduty"
routing_key_env = "{}"
base_url = "{}"
domains = ["ingestion"]
escalation_to = ["analytics-lead"]
"#,
        var("PD"),
        apis.pd.base_url(),
        var("OG"),
        apis.og.base_url(),
        var("JSM"),
        apis.jsm.base_url(),
        var("SLACK"),
        var("LEAD"),
        apis.lead.base_url(),
    );
    (apis, config)
}

/// Delivers everything pending for every destination, as the relay would.
fn deliver(dir: &Path) {
    let config =
        Arc::new(Config::load(&dir.join("estate/dataward.toml")).expect("the estate's config"));
    let client = dataward::notify::client(Duration::from_secs(5)).unwrap();
    let mut now = 1_790_000_000_000;
    for (name, _) in config.alert_destinations() {
        let mut carrier = Carrier::new(
            config.clone(),
            &name,
            dir.join("dataward.db"),
            // The test writes the marks, as the engine does beside a relay.
            Marks::on(dataward::store::open(&dir.join("dataward.db")).unwrap()),
            client.clone(),
            Backoff::default(),
            Jitter::new(1),
        )
        .unwrap();
        for _ in 0..200 {
            let (done, next) = carrier.step(now).unwrap();
            if let Done::GaveUp { error, .. } = &done {
                panic!("{name}: {error}");
            }
            match next {
                Next::Idle => break,
                Next::Now => {}
                Next::At(at) => now = now.max(at),
            }
        }
    }
}

#[test]
fn one_incident_opened_approved_and_resolved_on_every_kind_of_destination() {
    let dir = tempfile::tempdir().unwrap();
    let (apis, alerts) = apis("LIFE");
    let (mut scenario, mut engine) =
        dataward::demo::prepare_with(dir.path(), &owner(), |text| text + &alerts).unwrap();
    // The owner approves what is proposed and queues the run once the table is back.
    let mut queued = false;
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(100),
        |event, engine| {
            if event.is_none() && !queued && engine.recovered("INC-0001") {
                queued = true;
                return engine.handle(
                    Command::QueueRun {
                        incident: "INC-0001".into(),
                    },
                    &owner(),
                );
            }
            approve_all(event, engine)
        },
    );
    let snapshot = engine.snapshot(false);
    let incident = &snapshot.incidents[0];
    assert_eq!(
        incident.status,
        dataward::engine::api::IncidentStatus::Resolved
    );
    // The snapshot shows the outbox: every destination, three alerts waiting on each
    // but the lead's pager, which no escalation reached.
    let waiting: Vec<(String, usize)> = snapshot
        .outbox
        .iter()
        .map(|d| (d.destination.clone(), d.pending))
        .collect();
    assert_eq!(
        waiting,
        [
            ("jsm".to_string(), 3),
            ("lead".into(), 0),
            ("og".into(), 3),
            ("pd".into(), 3),
            ("slack".into(), 3)
        ]
    );
    drop(engine);
    deliver(dir.path());

    // PagerDuty: trigger with the cause, blast radius and who decides; the first
    // approval acknowledges; the resolve carries the receipt. One alert.
    let pd: Vec<serde_json::Value> = apis.pd.requests().iter().map(|r| r.json()).collect();
    let actions: Vec<&str> = pd
        .iter()
        .map(|e| e["event_action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["trigger", "acknowledge", "resolve"]);
    let key = pd[0]["dedup_key"].as_str().unwrap();
    assert!(
        key.starts_with("dataward-") && key.ends_with("-INC-0001"),
        "{key}"
    );
    assert!(pd.iter().all(|e| e["dedup_key"] == key));
    let details = &pd[0]["payload"]["custom_details"];
    // The cause as diagnosed when it opened (it is re-stated later, as the refill goes).
    let cause = details["cause"].as_str().unwrap();
    assert!(cause.contains("was re-created"), "{cause}");
    assert_ne!(cause, incident.cause.as_deref().unwrap());
    assert!(!details["blast_radius"]["models"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!details["blast_radius"]["dashboards"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(pd[0]["payload"]["severity"], "critical");
    let waiting = details["waiting_for_decision"].as_array().unwrap();
    let waits: Vec<&str> = waiting
        .iter()
        .map(|w| w.as_str().unwrap().rsplit("waits for ").next().unwrap())
        .collect();
    assert_eq!(
        waits,
        ["analytics-owner", "analytics-owner", "mover-owner"],
        "{waiting:?}"
    );
    assert!(pd[1]["payload"]["custom_details"]["update"]
        .as_str()
        .unwrap()
        .contains("approved by"));
    let receipt = &pd[2]["payload"]["custom_details"]["receipt"];
    assert!(
        !receipt["approvals"].as_array().unwrap().is_empty(),
        "{receipt}"
    );
    assert!(!receipt["runs"].as_array().unwrap().is_empty(), "{receipt}");
    assert!(
        !receipt["checks"].as_array().unwrap().is_empty(),
        "{receipt}"
    );
    assert!(!receipt["undo"].as_array().unwrap().is_empty(), "{receipt}");
    assert_eq!(receipt["receipt_hash"].as_str().unwrap().len(), 64);
    let alerts = apis.pd.alerts();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].state, "resolved");

    // Opsgenie and JSM: create, acknowledge, close, by alias, each outcome read back.
    for (api, prefix) in [(&apis.og, ""), (&apis.jsm, "/jsm/ops/integration")] {
        let writes: Vec<String> = api
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.path.clone())
            .collect();
        assert_eq!(
            writes,
            [
                format!("{prefix}/v2/alerts"),
                format!("{prefix}/v2/alerts/{key}/acknowledge?identifierType=alias"),
                format!("{prefix}/v2/alerts/{key}/close?identifierType=alias"),
            ]
        );
        assert_eq!(
            api.requests().iter().filter(|r| r.method == "GET").count(),
            3
        );
        let kept = api.alerts();
        assert_eq!((kept.len(), kept[0].state.as_str()), (1, "closed"));
    }

    // Slack: opened, first approval, resolved with the receipt.
    let slack: Vec<String> = apis
        .slack
        .slack_messages()
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert_eq!(slack.len(), 3);
    assert!(slack[0].contains("INC-0001 opened") && slack[0].contains("Waiting for a decision"));
    assert!(slack[1].contains("first approval"));
    assert!(slack[2].contains("INC-0001 resolved") && slack[2].contains("Receipt"));
    assert!(apis.lead.requests().is_empty(), "nothing escalated");

    // What `dataward outbox` prints of it.
    let out = story::dataward(&["outbox"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("pd (pagerduty): 0 pending, 0 failed, 3 delivered"),
        "{text}"
    );
}

#[test]
fn an_unanswered_request_escalates_pages_the_lead_and_expires() {
    let dir = tempfile::tempdir().unwrap();
    let (apis, alerts) = apis("ESC");
    let (mut scenario, mut engine) =
        dataward::demo::prepare_with(dir.path(), &owner(), |text| text + &alerts).unwrap();
    // Nobody answers: 45 minutes after the proposals, the requests escalate to the lead;
    // 45 more and they expire.
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(150),
        |_, _| Vec::new(),
    );
    drop(engine);
    deliver(dir.path());
    let pd: Vec<serde_json::Value> = apis.pd.requests().iter().map(|r| r.json()).collect();
    let classes: Vec<&str> = pd
        .iter()
        .map(|e| e["payload"]["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes[0], "opened");
    assert!(classes.contains(&"escalated"), "{classes:?}");
    assert!(classes.contains(&"expired"), "{classes:?}");
    assert!(!classes.contains(&"first_approval"), "{classes:?}");
    // One alert on the team's pager however many updates.
    assert_eq!(apis.pd.alerts().len(), 1);
    // The lead is paged: an alert of its own, by its own key.
    let lead: Vec<serde_json::Value> = apis.lead.requests().iter().map(|r| r.json()).collect();
    assert!(!lead.is_empty());
    let page_key = lead[0]["dedup_key"].as_str().unwrap();
    assert!(
        page_key.ends_with("-INC-0001-escalated-analytics-lead"),
        "{page_key}"
    );
    assert_eq!(lead[0]["event_action"], "trigger");
    assert!(lead[0]["payload"]["summary"]
        .as_str()
        .unwrap()
        .contains("analytics-lead"));
    assert_eq!(apis.lead.alerts().len(), 1, "{:#?}", apis.lead.alerts());
    // Whatever became of the incident, the lead's page ends when it does.
    let resolved = pd.iter().any(|e| e["event_action"] == "resolve");
    assert_eq!(
        lead.iter().any(|e| e["event_action"] == "resolve"),
        resolved
    );
}

#[test]
fn a_snoozed_incident_pages_nobody_when_its_requests_escalate() {
    let dir = tempfile::tempdir().unwrap();
    let (apis, alerts) = apis("SNZ");
    let (mut scenario, mut engine) =
        dataward::demo::prepare_with(dir.path(), &owner(), |text| text + &alerts).unwrap();
    // The owner snoozes the incident's monitor the moment it opens, then answers
    // nothing: its requests escalate to the lead and expire inside the snooze.
    let mut snoozed = false;
    play_minutes(
        &mut scenario,
        &mut engine,
        start(),
        start() + TimeDelta::minutes(150),
        |event, engine| match event.map(|e| &e.kind) {
            Some(dataward::engine::api::EventKind::IncidentOpened { incident, .. }) if !snoozed => {
                snoozed = true;
                engine.handle(
                    Command::Snooze {
                        target: incident.clone(),
                        seconds: 6 * 3600,
                        reason: "the vendor is refilling it; we are on it".into(),
                    },
                    &owner(),
                )
            }
            _ => Vec::new(),
        },
    );
    assert!(snoozed, "the incident opened");
    drop(engine);
    deliver(dir.path());
    let pd: Vec<serde_json::Value> = apis.pd.requests().iter().map(|r| r.json()).collect();
    let classes: Vec<&str> = pd
        .iter()
        .map(|e| e["payload"]["class"].as_str().unwrap())
        .collect();
    // Opened before the snooze: that page went. Its escalation is recorded on the
    // team's alert as an update, but nobody new is woken for it.
    assert_eq!(classes[0], "opened");
    assert!(classes.contains(&"escalated"), "{classes:?}");
    assert_eq!(apis.pd.alerts().len(), 1, "{:#?}", apis.pd.alerts());
    let lead: Vec<serde_json::Value> = apis.lead.requests().iter().map(|r| r.json()).collect();
    assert!(
        lead.is_empty(),
        "the lead was paged inside the snooze: {lead:#?}"
    );
}
