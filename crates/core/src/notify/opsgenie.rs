//! Opsgenie's Alert API (v2), US (`api.opsgenie.com`) or EU (`api.eu.opsgenie.com`,
//! by `base_url`), with `Authorization: GenieKey KEY`. An alert is created with the
//! incident's `alias` as its dedup key (one open alert per alias: a create sent again
//! lands on it), a `message` of at most 130 characters and a `priority`; the first
//! approval acknowledges it, an escalation or expiry adds a note, the resolve closes it
//! by alias with the receipt as its note. Every write is answered 202 with a
//! `requestId`: its outcome is read back from `/v2/alerts/requests/{id}` before the row
//! counts as delivered. JSM's ops alerts (`jsm.rs`) are the same contract under another
//! address.

use serde_json::{json, Value};

use super::{
    answer_text, judge_status_code, truncate, Action, Alert, Method, Occasion, Request, Response,
    Sender, Verdict,
};
use crate::sanitize::Sanitized;

pub const US_BASE: &str = "https://api.opsgenie.com";
pub const EU_BASE: &str = "https://api.eu.opsgenie.com";
pub const MAX_MESSAGE: usize = 130;
pub const MAX_ALIAS: usize = 512;
pub const MAX_DESCRIPTION: usize = 15_000;
pub const MAX_NOTE: usize = 25_000;
const MAX_TAG: usize = 50;
const MAX_DETAIL: usize = 8_000;

pub struct Opsgenie {
    /// `https://api.opsgenie.com`, or the EU host, or JSM's.
    base: String,
    /// Before `/v2/alerts`: empty for Opsgenie, `/jsm/ops/integration` for JSM.
    prefix: &'static str,
    /// For messages: "Opsgenie" or "JSM".
    api: &'static str,
}

impl Opsgenie {
    pub fn new(base: Option<String>) -> Opsgenie {
        Opsgenie::at(base, US_BASE, "", "Opsgenie")
    }

    pub(super) fn at(
        base: Option<String>,
        default: &str,
        prefix: &'static str,
        api: &'static str,
    ) -> Opsgenie {
        Opsgenie {
            base: base
                .unwrap_or_else(|| default.to_string())
                .trim_end_matches('/')
                .to_string(),
            prefix,
            api,
        }
    }

    fn alerts(&self) -> String {
        format!("{}{}/v2/alerts", self.base, self.prefix)
    }

    /// The path and body of the write an alert makes.
    pub fn write(&self, alert: &Alert) -> (String, Value) {
        let alias = truncate(&alert.dedup_key, MAX_ALIAS);
        let by_alias = |verb: &str| {
            format!(
                "{}/{}/{verb}?identifierType=alias",
                self.alerts(),
                percent_encode(&alias)
            )
        };
        let note = truncate(&alert.details_text(), MAX_NOTE);
        match (alert.action, &alert.occasion) {
            (Action::Trigger, _) => (self.alerts(), create_body(alert, &alias)),
            (Action::Update, Occasion::FirstApproval { .. }) => (
                by_alias("acknowledge"),
                json!({"source": "dataward", "note": note}),
            ),
            (Action::Update, _) => (
                by_alias("notes"),
                json!({"source": "dataward", "note": note}),
            ),
            (Action::Resolve, _) => (
                by_alias("close"),
                json!({"source": "dataward", "note": note}),
            ),
        }
    }
}

fn create_body(alert: &Alert, alias: &str) -> Value {
    let mut details = serde_json::Map::new();
    for (key, value) in [
        ("incident", alert.incident.clone()),
        ("table", alert.table.clone()),
        ("severity", alert.severity.clone()),
        ("cause", alert.cause.clone()),
        ("blast_radius", alert.blast_line()),
        ("waiting_for_decision", alert.waiting_lines().join("; ")),
        (
            "chain_record",
            format!("#{} {}", alert.chain_seq, alert.chain_hash),
        ),
    ] {
        details.insert(key.into(), json!(truncate(&value, MAX_DETAIL)));
    }
    let mut tags = vec!["dataward".to_string(), alert.severity.clone()];
    if let Some(domain) = &alert.domain {
        tags.push(domain.clone());
    }
    json!({
        "message": truncate(&alert.headline(), MAX_MESSAGE),
        "alias": alias,
        "description": truncate(&alert.details_text(), MAX_DESCRIPTION),
        "priority": match alert.severity.as_str() {
            "critical" => "P1",
            "warning" => "P3",
            _ => "P2",
        },
        "source": "dataward",
        "entity": truncate(&alert.table, 512),
        "tags": tags.iter().map(|t| truncate(t, MAX_TAG)).collect::<Vec<_>>(),
        "details": details,
    })
}

/// Everything but unreserved characters percent-encoded: an alias is a path segment.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn auth(secret: &str) -> (&'static str, String) {
    ("Authorization", format!("GenieKey {secret}"))
}

impl Sender for Opsgenie {
    fn request(&self, alert: &Sanitized<Alert>, secret: &str) -> Request {
        let (url, body) = self.write(alert);
        let mut request = Request::post_json(url, &body);
        request.headers.push(auth(secret));
        request
    }

    fn judge(&self, response: &Response) -> Verdict {
        if let Some(verdict) = judge_status_code(response, self.api) {
            return verdict;
        }
        // 202 {"result":"Request will be processed","took":0.1,"requestId":"..."}
        let answer: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        match answer["requestId"].as_str() {
            Some(id) if !id.is_empty() => Verdict::Accepted {
                request_id: id.to_string(),
            },
            _ => Verdict::Delivered,
        }
    }

    fn status_request(&self, request_id: &str, secret: &str) -> Option<Request> {
        Some(Request {
            method: Method::Get,
            url: format!("{}/requests/{}", self.alerts(), percent_encode(request_id)),
            headers: vec![auth(secret)],
            body: None,
        })
    }

    fn judge_status(&self, response: &Response) -> Verdict {
        // Not processed yet: the request is looked up again later, never sent again.
        if response.status == 404 {
            return Verdict::Retry {
                after: response.retry_after,
                error: format!(
                    "{} has not processed the request yet{}",
                    self.api,
                    answer_text(&response.body)
                ),
            };
        }
        if let Some(verdict) = judge_status_code(response, self.api) {
            return verdict;
        }
        let answer: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        let data = &answer["data"];
        let status = data["status"].as_str().unwrap_or_default();
        match data["isSuccess"].as_bool().or(data["success"].as_bool()) {
            Some(true) => Verdict::Delivered,
            // Sent again after a crash: the first one already did it.
            Some(false) if status.to_ascii_lowercase().contains("already") => Verdict::Delivered,
            Some(false) => Verdict::Permanent(format!(
                "{} processed it and refused: {}",
                self.api,
                crate::sanitize::for_terminal(&truncate(status, 300))
            )),
            None => Verdict::Retry {
                after: None,
                error: format!(
                    "{} answered the request status without an outcome{}",
                    self.api,
                    answer_text(&response.body)
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::sample;

    fn answer(status: u16, body: &str) -> Response {
        Response {
            status,
            retry_after: None,
            body: body.into(),
        }
    }

    #[test]
    fn a_create_fits_the_limits_and_names_its_alias() {
        let og = Opsgenie::new(Some(EU_BASE.into()));
        let mut alert = sample();
        alert.evidence = vec!["e".repeat(20_000)];
        let request = og.request(&Sanitized::new(alert), "KEY");
        assert_eq!(request.url, "https://api.eu.opsgenie.com/v2/alerts");
        assert!(request
            .headers
            .contains(&("Authorization", "GenieKey KEY".to_string())));
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["alias"], "dataward-0123456789ab-INC-0001");
        assert_eq!(body["priority"], "P1");
        let message = body["message"].as_str().unwrap();
        assert!(message.chars().count() <= MAX_MESSAGE, "{message}");
        assert!(message.starts_with("[dataward] INC-0001"), "{message}");
        let description = body["description"].as_str().unwrap();
        assert_eq!(description.chars().count(), MAX_DESCRIPTION);
        assert!(description.ends_with(crate::notify::TRUNCATED));
    }

    #[test]
    fn updates_and_the_close_go_by_alias() {
        let og = Opsgenie::new(None);
        let mut alert = sample();
        alert.dedup_key = "dataward-x-INC-0001-escalated-data lead".into();
        alert.action = Action::Update;
        alert.occasion = Occasion::FirstApproval {
            proposal: "P1".into(),
            by: "alice".into(),
        };
        assert_eq!(
            og.write(&alert).0,
            "https://api.opsgenie.com/v2/alerts/dataward-x-INC-0001-escalated-data%20lead/acknowledge?identifierType=alias"
        );
        alert.occasion = Occasion::Expired {
            proposal: "P1".into(),
        };
        assert!(og.write(&alert).0.ends_with("/notes?identifierType=alias"));
        alert.action = Action::Resolve;
        alert.occasion = Occasion::Resolved;
        let (url, body) = og.write(&alert);
        assert!(url.ends_with("/close?identifierType=alias"), "{url}");
        assert!(body["note"].as_str().unwrap().contains("Chain record #42"));
    }

    #[test]
    fn accepted_then_read_back() {
        let og = Opsgenie::new(None);
        assert_eq!(
            og.judge(&answer(
                202,
                r#"{"result":"Request will be processed","took":0.2,"requestId":"r-1"}"#
            )),
            Verdict::Accepted {
                request_id: "r-1".into()
            }
        );
        let status = og.status_request("r-1", "K").unwrap();
        assert_eq!(
            status.url,
            "https://api.opsgenie.com/v2/alerts/requests/r-1"
        );
        assert_eq!(status.method, Method::Get);
        assert_eq!(
            og.judge_status(&answer(
                200,
                r#"{"data":{"success":true,"isSuccess":true,"status":"Created alert","action":"Create"}}"#
            )),
            Verdict::Delivered
        );
        assert!(matches!(
            og.judge_status(&answer(404, r#"{"message":"Request not found"}"#)),
            Verdict::Retry { .. }
        ));
        assert!(matches!(
            og.judge_status(&answer(200, r#"{"data":{"isSuccess":false,"status":"Alert does not exist"}}"#)),
            Verdict::Permanent(e) if e.contains("Alert does not exist")
        ));
        assert_eq!(
            og.judge_status(&answer(
                200,
                r#"{"data":{"isSuccess":false,"status":"Alert is already closed"}}"#
            )),
            Verdict::Delivered
        );
        assert!(matches!(
            og.judge(&answer(422, "{}")),
            Verdict::Permanent(_)
        ));
        assert!(matches!(og.judge(&answer(429, "")), Verdict::Retry { .. }));
    }
}
