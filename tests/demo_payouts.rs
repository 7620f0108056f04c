//! The courier payouts story, headless, through the real binary: a stalled stream found
//! while it happens, a reload that fixes raw but not the microbatch model, the lookback
//! window read from the manifest, and a backfill whose undo is the tables as they were.
//! The engine must tell it on its own from what the scenario does to the data.

use std::path::Path;

use serde_json::Value;

mod story;
use story::{all, at, dataward, first};

/// The story's Saturday, Sunday and Monday.
const SATURDAY: &str = "2026-11-28";

fn step<'a>(events: &'a [Value], words: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"] == "scenario" && e["step"].as_str().unwrap().contains(words))
        .unwrap_or_else(|| panic!("no scenario step with {words:?}"))
}

/// The two columns of each row `sql` selects, from the estate's warehouse.
fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
    dir: &Path,
    sql: &str,
) -> Vec<(A, B)> {
    let estate = dir.join("estate");
    let conn = rusqlite::Connection::open(estate.join("warehouse.db")).unwrap();
    for (name, file) in [("raw", "raw.db"), ("analytics", "analytics.db")] {
        conn.execute(
            "ATTACH DATABASE ?1 AS ?2",
            [estate.join(file).to_string_lossy().to_string(), name.into()],
        )
        .unwrap();
    }
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows
}

#[test]
fn the_engine_tells_the_payouts_story() {
    let dir = tempfile::tempdir().unwrap();
    let events = story::headless("payouts", "payouts-owner", dir.path());
    story::assert_none_of(story::TICKETING_WORDS, &events);
    for e in &events {
        assert!(e["event"].is_string() && e["at"].is_string(), "{e}");
    }

    // Saturday 13:50 the stream stops; the incident opens while it is still stalled,
    // long before the nightly job, on the raw table, naming the stream.
    let rotated = step(&events, "signing key was rotated");
    assert_eq!(at(rotated), "2026-11-28T13:50:00Z");
    let opened = all(&events, "incident_opened");
    assert_eq!(opened.len(), 1, "one incident for the whole weekend");
    let opened = opened[0];
    assert!(at(opened) > at(rotated) && at(opened) < "2026-11-28T15:00:00Z");
    assert_eq!(opened["table"], "raw.courier_events");
    let incident = opened["incident"].as_str().unwrap();
    let stalled = first(&events, "diagnosis")["cause"].as_str().unwrap();
    assert!(
        stalled.starts_with("raw.courier_events has not loaded since 2026-11-28 13:50"),
        "{stalled}"
    );
    assert!(
        stalled.contains("its writer courier event stream (owner platform-owner) has stalled"),
        "{stalled}"
    );

    // Sunday 02:00 the nightly job is green and builds Saturday short: the model joins
    // as a symptom rather than opening an incident of its own.
    let sunday_run = step(
        &events,
        "nightly dbt job success: fct_deliveries batches 2026-11-28, 2026-11-29",
    );
    assert_eq!(at(sunday_run), "2026-11-29T02:00:00Z");
    let symptoms = all(&events, "symptom");
    assert!(
        symptoms
            .iter()
            .any(|s| s["table"] == "analytics.fct_deliveries" && s["check"] == "volume"),
        "{symptoms:?}"
    );

    // Monday 01:15 the reload; by 02:40 the cause is the lookback window.
    let reload = step(&events, "replays the error bucket");
    assert_eq!(at(reload), "2026-11-30T01:15:00Z");
    let gap = all(&events, "diagnosis")
        .into_iter()
        .find(|d| at(d) >= at(reload))
        .expect("a new diagnosis after the reload");
    assert!(at(gap) <= "2026-11-30T02:40:00Z", "too late: {}", at(gap));
    let cause = gap["cause"].as_str().unwrap();
    assert!(
        cause.starts_with(&format!("fct_deliveries is still short on {SATURDAY}")),
        "{cause}"
    );
    assert!(cause.contains("lookback = 1"), "{cause}");
    assert!(cause.contains("raw.courier_events holds"), "{cause}");

    // Blast radius through the manifest: the payouts table and finance's workbook.
    let blast = all(&events, "blast_radius")
        .into_iter()
        .rfind(|b| at(b) >= at(gap))
        .expect("the blast radius of the new cause");
    let nodes = blast["nodes"].as_array().unwrap();
    let kind_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {nodes:?}"))["kind"]
            .clone()
    };
    assert_eq!(kind_of("fct_courier_payouts"), "model");
    assert_eq!(kind_of("finance_payout_workbook"), "exposure");
    // With how many deliveries and couriers are short, counted in the warehouse by the
    // model's key against raw.
    let short = gap["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|e| e.starts_with("raw.courier_events holds "))
        .and_then(|e| e.strip_prefix("raw.courier_events holds "))
        .unwrap_or_else(|| panic!("no count of what is short: {gap}"))
        .to_string();
    let (deliveries, rest) = short
        .split_once(" delivery_id values on 2026-11-28 that fct_deliveries has on no day, across ")
        .unwrap_or_else(|| panic!("{short}"));
    let couriers = rest
        .strip_suffix(" courier_id values")
        .unwrap_or_else(|| panic!("{short}"));
    let (deliveries, couriers): (u64, u64) =
        (deliveries.parse().unwrap(), couriers.parse().unwrap());
    assert!(
        deliveries > 100 && couriers > 10 && couriers <= 60,
        "{short}"
    );
    for name in ["fct_courier_payouts", "finance_payout_workbook"] {
        let node = nodes.iter().find(|n| n["name"] == name).unwrap();
        assert_eq!(
            node["finding"],
            format!("built from fct_deliveries, which is missing {deliveries} delivery_id values on 2026-11-28, across {couriers} courier_id values"),
            "{node}"
        );
    }

    // The backfill of Saturday alone and the diff raising lookback to 3.
    let proposals: Vec<&Value> = all(&events, "proposal")
        .into_iter()
        .filter(|p| at(p) >= at(gap))
        .collect();
    let kinds: Vec<&str> = proposals
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["backfill", "diff"], "{proposals:?}");
    let show = dataward(&["show", incident, "--json"], dir.path());
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let shown: Value = serde_json::from_slice(&show.stdout).unwrap();
    let body = |kind: &str| {
        shown["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {shown}"))
            .clone()
    };
    let backfill = body("backfill");
    let command = "dbt build --select fct_deliveries+ --event-time-start 2026-11-28 --event-time-end 2026-11-29";
    assert_eq!(backfill["body"]["command"], command, "{backfill}");
    let diff = body("diff");
    assert!(
        diff["title"]
            .as_str()
            .unwrap()
            .starts_with("Raise fct_deliveries's lookback from 1 to 3"),
        "{diff}"
    );
    assert!(diff["body"]["new"].as_str().unwrap().contains("lookback=3"));

    // Approved by the stand-in, run, verified, resolved.
    let decisions = all(&events, "decision");
    for p in &proposals {
        assert!(
            decisions.iter().any(|d| d["proposal"] == p["proposal"]
                && d["verdict"] == "approved"
                && d["actor"]
                    .as_str()
                    .unwrap()
                    .contains("stand-in for payouts-owner")),
            "{p} not approved: {decisions:?}"
        );
    }
    let queued = first(&events, "backfill_queued");
    assert_eq!(queued["command"], command, "{queued}");
    let copies: Vec<&str> = queued["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        copies.iter().any(|c| c.contains("fct_deliveries")),
        "{copies:?}"
    );
    let run = first(&events, "run");
    assert!(at(run) >= at(queued));
    assert_eq!(run["status"], "success", "{run}");
    let verification = first(&events, "verification");
    assert_eq!(verification["passed"], true, "{verification}");
    let seven_days = verification["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .unwrap()
                .starts_with("analytics.fct_deliveries: daily volumes for the last seven days")
        })
        .unwrap_or_else(|| panic!("no seven-day check: {verification}"));
    assert_eq!(seven_days["passed"], true);
    assert!(at(first(&events, "incident_resolved")) >= at(run));

    // The payout file has every Saturday delivery: the model's days match raw's.
    let model = pairs::<String, i64>(
        dir.path(),
        "SELECT delivered_on, count(*) FROM analytics.fct_deliveries \
         WHERE delivered_on >= '2026-11-23' AND delivered_on < '2026-11-30' GROUP BY 1 ORDER BY 1",
    );
    let raw = pairs::<String, i64>(
        dir.path(),
        "SELECT substr(event_at, 1, 10), count(*) FROM raw.courier_events \
         WHERE event_type = 'delivered' AND event_at >= '2026-11-23' AND event_at < '2026-11-30' \
         GROUP BY 1 ORDER BY 1",
    );
    assert_eq!(model.len(), 7);
    assert_eq!(model, raw);

    // The receipt names the backfill, the copies taken and the undo.
    let receipt = dataward(&["receipt", incident, "--md"], dir.path());
    assert!(receipt.status.success());
    let md = String::from_utf8(receipt.stdout).unwrap();
    assert!(md.contains(&format!("backfill `{command}`")), "{md}");
    assert!(
        md.contains("copies taken first: analytics.fct_deliveries as "),
        "{md}"
    );
    assert!(md.contains("undo: roll back restores these copies"), "{md}");

    let verify = dataward(&["verify", "--json"], dir.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn approve_as_plays_only_the_payouts_owner() {
    let dir = tempfile::tempdir().unwrap();
    let out = dataward(
        &[
            "demo",
            "payouts",
            "--headless",
            "--approve-as",
            "analytics-owner",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("payouts-owner"), "{err}");
}
