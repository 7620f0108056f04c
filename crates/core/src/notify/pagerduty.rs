//! PagerDuty Events API v2: `POST /v2/enqueue` with the integration's `routing_key`, an
//! `event_action` (`trigger`, `acknowledge`, `resolve`) and the incident's `dedup_key`
//! (at most 255 characters). A trigger carries `payload.summary` (at most 1,024),
//! `payload.source` and `payload.severity`, with the cause, blast radius and waiting
//! proposals in `payload.custom_details`. 202 is accepted; 400 is refused for good; 429,
//! 5xx and network faults are retried.
//!
//! Updates: the first approval acknowledges the alert (someone is on it); an escalation
//! or an expiry is a trigger with the same dedup key, which PagerDuty logs on the open
//! alert instead of opening another. Resolve closes it. The payload is required on a
//! trigger and allowed on the others: every event carries it, so the resolve brings the
//! receipt (approvals, runs, checks, undo, the chain record) into the alert's log.

use serde_json::{json, Value};

use super::{
    judge_status_code, truncate, Action, Alert, Occasion, Request, Response, Sender, Verdict,
};
use crate::sanitize::Sanitized;

pub const DEFAULT_BASE: &str = "https://events.pagerduty.com";
pub const MAX_SUMMARY: usize = 1024;
pub const MAX_DEDUP_KEY: usize = 255;
/// PagerDuty takes events up to 512 KB; the details are kept well inside that.
const MAX_DETAIL: usize = 2_000;
const MAX_LIST: usize = 50;

pub struct PagerDuty {
    base: String,
}

impl PagerDuty {
    pub fn new(base: Option<String>) -> PagerDuty {
        PagerDuty {
            base: base
                .unwrap_or_else(|| DEFAULT_BASE.to_string())
                .trim_end_matches('/')
                .to_string(),
        }
    }

    /// The event's JSON body.
    pub fn body(alert: &Alert, routing_key: &str) -> Value {
        let event_action = match (alert.action, &alert.occasion) {
            (Action::Resolve, _) => "resolve",
            (Action::Update, Occasion::FirstApproval { .. }) => "acknowledge",
            _ => "trigger",
        };
        let mut body = json!({
            "routing_key": routing_key,
            "event_action": event_action,
            "dedup_key": truncate(&alert.dedup_key, MAX_DEDUP_KEY),
        });
        // Every event carries the payload (required on a trigger, allowed on the
        // others): the resolve brings the receipt.
        body["payload"] = json!({
            "summary": truncate(&alert.headline(), MAX_SUMMARY),
            "source": format!("dataward:{}", alert.table),
            "severity": match alert.severity.as_str() {
                "critical" => "critical",
                "warning" => "warning",
                _ => "error",
            },
            "timestamp": alert.at,
            "component": alert.table,
            "group": alert.domain.clone().unwrap_or_default(),
            "class": alert.occasion.as_str(),
            "custom_details": details(alert),
        });
        body
    }
}

fn list(items: &[String]) -> Vec<String> {
    let mut out: Vec<String> = items
        .iter()
        .take(MAX_LIST)
        .map(|s| truncate(s, MAX_DETAIL))
        .collect();
    if items.len() > MAX_LIST {
        out.push(format!(
            "{} more {}",
            items.len() - MAX_LIST,
            super::TRUNCATED
        ));
    }
    out
}

fn details(alert: &Alert) -> Value {
    let mut details = json!({
        "incident": alert.incident,
        "status": alert.status,
        "table": alert.table,
        "cause": truncate(&alert.cause, MAX_DETAIL),
        "evidence": list(&alert.evidence),
        "blast_radius": {
            "summary": truncate(&alert.blast_line(), MAX_DETAIL),
            "models": list(&alert.blast.models),
            "dashboards": list(&alert.blast.dashboards),
            "jobs": list(&alert.blast.jobs),
            "owners": list(&alert.blast.owners),
            "break_risks": list(&alert.blast.break_risks),
        },
        "waiting_for_decision": list(&alert.waiting_lines()),
        "chain_record": {"seq": alert.chain_seq, "hash": alert.chain_hash},
    });
    if let Some(update) = &alert.update {
        details["update"] = json!(truncate(update, MAX_DETAIL));
    }
    if let Some(r) = &alert.receipt {
        details["receipt"] = json!({
            "how": truncate(&r.how, MAX_DETAIL),
            "approvals": list(&r.approvals),
            "runs": list(&r.runs),
            "checks": list(&r.checks),
            "undo": list(&r.undo),
            "receipt_hash": r.receipt_hash,
        });
    }
    details
}

impl Sender for PagerDuty {
    fn request(&self, alert: &Sanitized<Alert>, secret: &str) -> Request {
        Request::post_json(
            format!("{}/v2/enqueue", self.base),
            &PagerDuty::body(alert, secret),
        )
    }

    fn judge(&self, response: &Response) -> Verdict {
        if let Some(verdict) = judge_status_code(response, "PagerDuty") {
            return verdict;
        }
        // 202 {"status":"success","message":"Event processed","dedup_key":"..."}.
        Verdict::Delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::sample;

    #[test]
    fn a_trigger_carries_what_the_contract_requires_within_its_limits() {
        let mut alert = sample();
        alert.cause = "c".repeat(5_000);
        let body = PagerDuty::body(&alert, "KEY");
        assert_eq!(body["routing_key"], "KEY");
        assert_eq!(body["event_action"], "trigger");
        assert_eq!(body["dedup_key"], "dataward-0123456789ab-INC-0001");
        let summary = body["payload"]["summary"].as_str().unwrap();
        assert_eq!(summary.chars().count(), MAX_SUMMARY);
        assert!(summary.ends_with(super::super::TRUNCATED));
        assert_eq!(body["payload"]["severity"], "critical");
        assert_eq!(body["payload"]["source"], "dataward:SALES.ORDERS");
        let details = &body["payload"]["custom_details"];
        assert_eq!(details["blast_radius"]["dashboards"][0], "Pacing");
        assert!(details["waiting_for_decision"][0]
            .as_str()
            .unwrap()
            .contains("waits for analytics-owner"));
    }

    #[test]
    fn updates_acknowledge_or_log_and_resolve_closes() {
        let mut alert = sample();
        alert.action = Action::Update;
        alert.occasion = Occasion::FirstApproval {
            proposal: "INC-0001-P1".into(),
            by: "alice".into(),
        };
        assert_eq!(PagerDuty::body(&alert, "K")["event_action"], "acknowledge");
        alert.occasion = Occasion::Escalated {
            proposal: "INC-0001-P1".into(),
            to: "lead".into(),
        };
        assert_eq!(PagerDuty::body(&alert, "K")["event_action"], "trigger");
        alert.action = Action::Resolve;
        alert.occasion = Occasion::Resolved;
        assert_eq!(PagerDuty::body(&alert, "K")["event_action"], "resolve");
    }

    #[test]
    fn answers_become_verdicts() {
        let pd = PagerDuty::new(Some("http://127.0.0.1:9/".into()));
        let request = pd.request(&Sanitized::new(sample()), "K");
        assert_eq!(request.url, "http://127.0.0.1:9/v2/enqueue");
        let answer = |status: u16, body: &str| Response {
            status,
            retry_after: None,
            body: body.into(),
        };
        assert_eq!(
            pd.judge(&answer(202, r#"{"status":"success"}"#)),
            Verdict::Delivered
        );
        assert!(matches!(
            pd.judge(&answer(400, r#"{"status":"invalid event","message":"Event object is invalid"}"#)),
            Verdict::Permanent(e) if e.contains("Event object is invalid")
        ));
        assert!(matches!(pd.judge(&answer(429, "")), Verdict::Retry { .. }));
        assert!(matches!(pd.judge(&answer(502, "")), Verdict::Retry { .. }));
    }
}
