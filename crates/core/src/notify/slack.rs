//! Slack incoming webhooks: `POST` a JSON message (`text` as the notification's
//! fallback, `blocks` for the layout) to the webhook's URL, which is the secret. Slack
//! answers 200 `ok`; a plain-text error with 400 (`invalid_payload`), 403
//! (`action_prohibited`), 404 (`channel_not_found`, `no_service`) or 410
//! (`channel_is_archived`) is final; 429 comes with `Retry-After`, and the relay keeps to
//! about one message a second per webhook. Section text is mrkdwn, at most 3,000
//! characters; a header at most 150. `&`, `<` and `>` are escaped as Slack asks, so text
//! from a warehouse cannot mention `<!channel>` or plant a link.
//!
//! Slack has no dedup key: a message whose send the engine did not live to mark is
//! posted again after a restart (see README).

use std::time::Duration;

use serde_json::{json, Value};

use super::{judge_status_code, truncate, Alert, Occasion, Request, Response, Sender, Verdict};
use crate::sanitize::Sanitized;

pub const MAX_SECTION: usize = 3_000;
pub const MAX_HEADER: usize = 150;
/// Slack's posting limit: about one message a second per webhook.
pub const PACE: Duration = Duration::from_secs(1);
const MAX_LINES: usize = 20;

pub struct Slack;

/// mrkdwn's three control characters, escaped.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, MAX_SECTION)}})
}

fn bullets(title: &str, lines: &[String]) -> Option<Value> {
    if lines.is_empty() {
        return None;
    }
    let mut text = format!("*{title}*");
    for line in lines.iter().take(MAX_LINES) {
        text.push_str(&format!("\n• {}", escape(line)));
    }
    if lines.len() > MAX_LINES {
        text.push_str(&format!(
            "\n• {} more {}",
            lines.len() - MAX_LINES,
            super::TRUNCATED
        ));
    }
    Some(section(&text))
}

/// The message's JSON.
pub fn message(alert: &Alert) -> Value {
    let header = match &alert.occasion {
        Occasion::Opened => format!("{} opened ({})", alert.incident, alert.severity),
        Occasion::Reopened => format!("{} reopened", alert.incident),
        Occasion::FirstApproval { .. } => format!("{}: first approval", alert.incident),
        Occasion::Escalated { to, .. } => format!("{}: escalated to {to}", alert.incident),
        Occasion::Paged { to, .. } => format!("{}: {to}, you are paged", alert.incident),
        Occasion::Expired { .. } => format!("{}: a request expired", alert.incident),
        Occasion::Forwarded { to, .. } => format!("{}: a note for {to}", alert.incident),
        Occasion::Resolved => format!("{} resolved", alert.incident),
    };
    let mut blocks = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": truncate(&header, MAX_HEADER)},
    })];
    if let Some(update) = &alert.update {
        blocks.push(section(&escape(update)));
    }
    blocks.push(section(&format!(
        "*{}*\n*Cause:* {}",
        escape(&alert.title),
        escape(&alert.cause)
    )));
    blocks.extend(bullets("Evidence", &alert.evidence));
    let mut blast = vec![escape(&alert.blast_line())];
    blast.extend(
        alert
            .blast
            .break_risks
            .iter()
            .map(|r| format!("breaks: {}", escape(r))),
    );
    blocks.push(section(&format!("*Blast radius*\n{}", blast.join("\n"))));
    blocks.extend(bullets("Waiting for a decision", &alert.waiting_lines()));
    if let Some(r) = &alert.receipt {
        blocks.push(section(&format!("*Receipt:* {}", escape(&r.how))));
        blocks.extend(bullets("Approvals", &r.approvals));
        blocks.extend(bullets("Runs", &r.runs));
        blocks.extend(bullets("Checks", &r.checks));
        blocks.extend(bullets("Undo", &r.undo));
    }
    blocks.push(json!({
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": truncate(&escape(&format!(
            "chain record #{} {} · key {}",
            alert.chain_seq, alert.chain_hash, alert.dedup_key
        )), MAX_SECTION)}],
    }));
    json!({
        "text": truncate(&escape(&alert.headline()), MAX_SECTION),
        "blocks": blocks,
    })
}

impl Sender for Slack {
    fn request(&self, alert: &Sanitized<Alert>, webhook_url: &str) -> Request {
        Request::post_json(webhook_url.to_string(), &message(alert))
    }

    fn judge(&self, response: &Response) -> Verdict {
        if let Some(verdict) = judge_status_code(response, "Slack") {
            return verdict;
        }
        Verdict::Delivered
    }

    fn pace(&self) -> Duration {
        PACE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::sample;
    use crate::notify::{Action, ReceiptDigest};

    #[test]
    fn a_message_carries_cause_blast_and_waiting_proposals() {
        let mut alert = sample();
        alert.cause = "<!channel> & <http://evil|click>".into();
        let message = message(&alert);
        let text = message.to_string();
        assert!(
            text.contains("&lt;!channel&gt; &amp; &lt;http://evil|click&gt;"),
            "{text}"
        );
        assert!(!text.contains("<!channel>"));
        assert!(text.contains("Blast radius"));
        assert!(text.contains("fct_pacing"));
        assert!(text.contains("Waiting for a decision"));
        assert!(text.contains("waits for analytics-owner"));
        for block in message["blocks"].as_array().unwrap() {
            if let Some(t) = block["text"]["text"].as_str() {
                assert!(t.chars().count() <= MAX_SECTION);
            }
        }
    }

    #[test]
    fn the_resolved_message_has_the_receipt() {
        let mut alert = sample();
        alert.action = Action::Resolve;
        alert.occasion = Occasion::Resolved;
        alert.receipt = Some(ReceiptDigest {
            how: "verified".into(),
            approvals: vec!["INC-0001-P1 approved by alice".into()],
            runs: vec!["run #1 of job success".into()],
            checks: vec!["row count within baseline: passed".into()],
            undo: vec!["resumed the job".into()],
            receipt_hash: "feed".into(),
        });
        let text = message(&alert).to_string();
        for expected in [
            "INC-0001 resolved",
            "Receipt:",
            "approved by alice",
            "run #1",
            "passed",
            "resumed the job",
            "chain record #42",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
    }

    #[test]
    fn slack_s_answers() {
        let answer = |status, body: &str| Response {
            status,
            retry_after: Some(Duration::from_secs(2)),
            body: body.into(),
        };
        assert_eq!(Slack.judge(&answer(200, "ok")), Verdict::Delivered);
        assert!(matches!(
            Slack.judge(&answer(410, "channel_is_archived")),
            Verdict::Permanent(e) if e.contains("channel_is_archived")
        ));
        assert_eq!(
            Slack.judge(&answer(429, "")),
            Verdict::Retry {
                after: Some(Duration::from_secs(2)),
                error: "Slack answered 429".into()
            }
        );
    }
}
