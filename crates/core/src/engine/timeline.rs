//! An incident's timeline: its chain records in order, each as who did what (saw,
//! diagnosed, proposed, decided, ran, verified, resolved). Like the receipt it is read
//! back from the chain, so it can never say more than the chain holds: the start of a
//! postmortem.

use serde_json::Value;

use super::api::TimelineEntry;
use crate::chain::Record;

/// A field as people read it.
fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// Who, as the chain recorded the actor: dataward itself, or the attested account.
fn who(record: &Record) -> String {
    let actor: Value = serde_json::from_str(&record.actor).unwrap_or(Value::Null);
    if actor.get("engine").is_some() {
        return "dataward".into();
    }
    let uid = text(&actor, "uid");
    match (actor.get("user").and_then(Value::as_str), uid.is_empty()) {
        (Some(user), false) => format!("{user} (uid {uid})"),
        (Some(user), true) => user.to_string(),
        (None, false) => format!("uid {uid}"),
        (None, true) => "unknown".into(),
    }
}

/// "because: reason", or nothing when no reason was given.
fn because(payload: &Value) -> String {
    match text(payload, "reason") {
        reason if reason.is_empty() => String::new(),
        reason => format!(": {reason}"),
    }
}

/// The records about `incident`, oldest first, as its timeline.
pub fn build(records: &[Record], incident: &str) -> Vec<TimelineEntry> {
    records
        .iter()
        .filter_map(|record| {
            let payload: Value = serde_json::from_str(&record.payload).ok()?;
            if payload.get("incident").and_then(Value::as_str) != Some(incident) {
                return None;
            }
            let (step, what) = describe(record, &payload);
            Some(TimelineEntry {
                seq: record.seq,
                at: record.at,
                step: step.to_string(),
                who: who(record),
                what,
            })
        })
        .collect()
}

fn describe(record: &Record, p: &Value) -> (&'static str, String) {
    let t = |key: &str| text(p, key);
    match record.kind.as_str() {
        "incident_opened" => {
            let observed = match t("observed_text") {
                seen if seen.is_empty() => t("observed"),
                seen => seen,
            };
            (
                "saw",
                format!(
                    "{} on {}: {observed} (expected {})",
                    t("check").replace('_', " "),
                    t("table"),
                    t("expected")
                ),
            )
        }
        "diagnosis" => ("diagnosed", t("cause")),
        "blast_radius" => {
            let nodes = p["nodes"].as_array().map_or(0, Vec::len);
            ("mapped", format!("{nodes} downstream of it"))
        }
        "symptom" => (
            "joined",
            format!("{} {}: {}", t("table"), t("check"), t("observed")),
        ),
        "proposal" => (
            "proposed",
            format!(
                "{} {}: {} (to {})",
                t("proposal"),
                t("kind"),
                t("title"),
                t("owner")
            ),
        ),
        "decision" => (
            "decided",
            format!("{} {}{}", t("verdict"), t("proposal"), because(p)),
        ),
        "escalation" => ("escalated", format!("{} to {}", t("proposal"), t("to"))),
        "expiry" => (
            "expired",
            format!("{}: nobody answered in time", t("proposal")),
        ),
        "withdrawn" => ("withdrawn", format!("{}: {}", t("proposal"), t("why"))),
        "dispatch" => ("dispatched", format!("a run of {}", t("job"))),
        "run_queued" => ("ran", format!("queued run {} of {}", t("run"), t("job"))),
        "backfill_queued" => (
            "ran",
            format!("queued backfill {}: {}", t("run"), t("command")),
        ),
        "run" => (
            "ran",
            format!("run {} of {}: {}", t("run"), t("job"), t("status")),
        ),
        "verification" => {
            let passed = p["passed"].as_bool() == Some(true);
            let checks = p["checks"].as_array().map_or(0, Vec::len);
            let verdict = if passed { "passed" } else { "failed" };
            ("verified", format!("{checks} checks {verdict}"))
        }
        "undo" => ("undid", format!("{}: {}", t("proposal"), t("action"))),
        "level_accepted" => (
            "accepted",
            format!(
                "the new level of {} since {}{}",
                t("monitor"),
                t("since"),
                because(p)
            ),
        ),
        "snoozed" => (
            "snoozed",
            format!("{} until {}{}", t("monitor"), t("until"), because(p)),
        ),
        "incident_expected" => (
            "expected",
            format!(
                "this was fine: {} from {} to {} left the baselines{}",
                t("monitor"),
                t("from"),
                t("to"),
                because(p)
            ),
        ),
        "incident_resolved" => (
            "resolved",
            match t("how").as_str() {
                "by_hand" => format!("by hand{}", because(p)),
                "merged" => format!("merged into {}", t("into")),
                "recovered_without_intervention" => "recovered without intervention".into(),
                _ => "verified".into(),
            },
        ),
        "incident_reopened" => ("reopened", because(p).trim_start_matches(": ").to_string()),
        "receipt" => ("receipt", format!("digest {}", t("receipt_hash"))),
        "versions_dropped" => ("dropped", format!("the copies kept for undo: {}", t("why"))),
        other => ("recorded", other.replace('_', " ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, kind: &str, actor: &str, payload: Value) -> Record {
        Record {
            seq,
            prev_hash: String::new(),
            log_id: String::new(),
            schema_version: 1,
            at: format!("2026-11-24T14:{seq:02}:00Z").parse().unwrap(),
            kind: kind.into(),
            actor: actor.into(),
            payload: payload.to_string(),
            recorded_at: String::new(),
            clock: String::new(),
            hash: String::new(),
        }
    }

    #[test]
    fn who_saw_decided_ran_and_verified() {
        let engine = crate::approve::ENGINE_ACTOR;
        let alice = r#"{"uid":1000,"user":"alice","claims":{}}"#;
        let records = [
            record(
                1,
                "incident_opened",
                engine,
                serde_json::json!({"incident": "INC-1", "table": "T", "check": "row_count", "observed": 10.0, "observed_text": "10 rows", "expected": "100 – 120 rows"}),
            ),
            record(
                2,
                "incident_opened",
                engine,
                serde_json::json!({"incident": "INC-2", "table": "U"}),
            ),
            record(
                3,
                "proposal",
                engine,
                serde_json::json!({"incident": "INC-1", "proposal": "INC-1-P1", "kind": "hold", "title": "pause the job", "owner": "owner"}),
            ),
            record(
                4,
                "decision",
                alice,
                serde_json::json!({"incident": "INC-1", "proposal": "INC-1-P1", "verdict": "approved", "reason": "refilling"}),
            ),
            record(
                5,
                "run",
                engine,
                serde_json::json!({"incident": "INC-1", "run": "42", "job": "hourly", "status": "success"}),
            ),
            record(
                6,
                "verification",
                engine,
                serde_json::json!({"incident": "INC-1", "passed": true, "checks": [1, 2]}),
            ),
            record(
                7,
                "incident_resolved",
                engine,
                serde_json::json!({"incident": "INC-1"}),
            ),
        ];
        let timeline = build(&records, "INC-1");
        let lines: Vec<String> = timeline
            .iter()
            .map(|e| format!("#{} {} {}: {}", e.seq, e.who, e.step, e.what))
            .collect();
        assert_eq!(
            lines,
            [
                "#1 dataward saw: row count on T: 10 rows (expected 100 – 120 rows)",
                "#3 dataward proposed: INC-1-P1 hold: pause the job (to owner)",
                "#4 alice (uid 1000) decided: approved INC-1-P1: refilling",
                "#5 dataward ran: run 42 of hourly: success",
                "#6 dataward verified: 2 checks passed",
                "#7 dataward resolved: verified",
            ]
        );
    }
}
