//! Alerts: the pager hears about an incident, its decisions and its end. Every alert is
//! a row of the state database's outbox, written in the transaction that puts on the
//! chain what it announces (`engine/alerts.rs`); a relay (`relay.rs`) sends the rows in
//! order per destination, retries what a fault or a rate limit held up, and marks each
//! delivered. Each sender is a small translation between an [`Alert`] and one API:
//! `pagerduty.rs` (Events API v2), `opsgenie.rs` (Alert API, US and EU), `jsm.rs` (Jira
//! Service Management's ops alerts, Opsgenie's successor) and `slack.rs` (incoming
//! webhooks). One HTTP client is shared by all of them.
//!
//! A crash between "sent" and "marked delivered" sends the row again at restart: the
//! dedup key (PagerDuty's `dedup_key`, Opsgenie's and JSM's `alias`) makes that resend
//! land on the alert the first one opened. Slack has none (see README).

pub mod jsm;
pub mod opsgenie;
pub mod outbox;
pub mod pagerduty;
pub mod relay;

pub mod slack;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::config::{AlertConfig, Config, SecretRef};
use crate::sanitize::{clean_in_place, clean_multiline_in_place, Sanitize, Sanitized};

/// What an alert does to the alert the API keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Opens it (or, with the same dedup key, lands on the one already open).
    Trigger,
    /// Says something happened to it (a first approval, an escalation, an expiry).
    Update,
    /// Closes it, with the receipt.
    Resolve,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Trigger => "trigger",
            Action::Update => "update",
            Action::Resolve => "resolve",
        }
    }
}

/// Why the alert was sent: the chain record it announces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "occasion", rename_all = "snake_case")]
pub enum Occasion {
    Opened,
    Reopened,
    /// The incident's first approval: someone is on it.
    FirstApproval {
        proposal: String,
        by: String,
    },
    /// A request went unanswered and now also waits for `to`.
    Escalated {
        proposal: String,
        to: String,
    },
    /// `to` is paged: its own alert, closed with the incident.
    Paged {
        proposal: String,
        to: String,
    },
    /// A request ran out of people to escalate to; nothing was granted.
    Expired {
        proposal: String,
    },
    /// A person forwarded a note to the owner of another system (`to`): the note is
    /// the update's text.
    Forwarded {
        proposal: String,
        to: String,
    },
    Resolved,
}

impl Occasion {
    pub fn as_str(&self) -> &'static str {
        match self {
            Occasion::Opened => "opened",
            Occasion::Reopened => "reopened",
            Occasion::FirstApproval { .. } => "first_approval",
            Occasion::Escalated { .. } => "escalated",
            Occasion::Paged { .. } => "paged",
            Occasion::Expired { .. } => "expired",
            Occasion::Forwarded { .. } => "forwarded",
            Occasion::Resolved => "resolved",
        }
    }
}

/// One alert, rendered from the incident as it stood when the chain record it announces
/// was written. Text in it came from a warehouse, a manifest, the notes or a person: it
/// leaves only as [`Sanitized<Alert>`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub incident: String,
    /// The API's dedup key (PagerDuty `dedup_key`, Opsgenie and JSM `alias`): at most
    /// 255 characters.
    pub dedup_key: String,
    pub action: Action,
    #[serde(flatten)]
    pub occasion: Occasion,
    /// "critical", "error" or "warning" (see `engine/alerts.rs`).
    pub severity: String,
    /// The incident's title, as the console shows it.
    pub title: String,
    pub table: String,
    pub domain: Option<String>,
    pub status: String,
    pub cause: String,
    pub evidence: Vec<String>,
    pub blast: Blast,
    /// Proposals still waiting for a decision, and for whom.
    pub waiting: Vec<Waiting>,
    /// What this update says, in a line ("INC-0001-P1 approved by alice (uid 1001)").
    pub update: Option<String>,
    /// On resolve: what the receipt holds.
    pub receipt: Option<ReceiptDigest>,
    /// The chain record it announces.
    pub chain_seq: u64,
    pub chain_hash: String,
    /// When that record was written (the engine's clock).
    pub at: crate::clock::Timestamp,
}

/// What the bad data reaches, by kind, and who owns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Blast {
    pub models: Vec<String>,
    pub dashboards: Vec<String>,
    pub jobs: Vec<String>,
    pub other: Vec<String>,
    pub owners: Vec<String>,
    /// Nodes whose use of the data will break ("int_x: casts y to integer").
    pub break_risks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    pub proposal: String,
    pub kind: String,
    pub title: String,
    /// The roles that may decide it now.
    pub waits_for: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiptDigest {
    /// "resolved by hand: REASON", "verified", "recovered without intervention", ...
    pub how: String,
    pub approvals: Vec<String>,
    pub runs: Vec<String>,
    pub checks: Vec<String>,
    pub undo: Vec<String>,
    /// The receipt's digest as the chain records it, and that record's seq.
    pub receipt_hash: String,
}

impl Sanitize for Alert {
    fn sanitize(&mut self) {
        let Alert {
            incident,
            dedup_key,
            action: _,
            occasion,
            severity,
            title,
            table,
            domain,
            status,
            cause,
            evidence,
            blast,
            waiting,
            update,
            receipt,
            chain_seq: _,
            chain_hash,
            // A time: nobody's text.
            at: _,
        } = self;
        for text in [
            incident, dedup_key, severity, title, table, status, cause, chain_hash,
        ] {
            clean_in_place(text);
        }
        match occasion {
            Occasion::Opened | Occasion::Reopened | Occasion::Resolved => {}
            Occasion::FirstApproval { proposal, by } => {
                clean_in_place(proposal);
                clean_in_place(by);
            }
            Occasion::Escalated { proposal, to } | Occasion::Paged { proposal, to } => {
                clean_in_place(proposal);
                clean_in_place(to);
            }
            Occasion::Expired { proposal } => clean_in_place(proposal),
            Occasion::Forwarded { proposal, to } => {
                clean_in_place(proposal);
                clean_in_place(to);
            }
        }
        domain.sanitize();
        evidence.sanitize();
        update.sanitize();
        let Blast {
            models,
            dashboards,
            jobs,
            other,
            owners,
            break_risks,
        } = blast;
        for list in [models, dashboards, jobs, other, owners, break_risks] {
            list.sanitize();
        }
        for w in waiting {
            let Waiting {
                proposal,
                kind,
                title,
                waits_for,
            } = w;
            clean_in_place(proposal);
            clean_in_place(kind);
            clean_in_place(title);
            waits_for.sanitize();
        }
        if let Some(r) = receipt {
            let ReceiptDigest {
                how,
                approvals,
                runs,
                checks,
                undo,
                receipt_hash,
            } = r;
            clean_multiline_in_place(how);
            clean_in_place(receipt_hash);
            for list in [approvals, runs, checks, undo] {
                list.sanitize();
            }
        }
    }
}

/// What every sender puts at the end of a truncated text.
pub const TRUNCATED: &str = "… [truncated]";

/// `text` cut to at most `max` characters, the cut marked with [`TRUNCATED`].
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let marker = TRUNCATED.chars().count();
    if max <= marker {
        return text.chars().take(max).collect();
    }
    let mut out: String = text.chars().take(max - marker).collect();
    out.push_str(TRUNCATED);
    out
}

impl Alert {
    /// One line for a pager: what happened to which incident.
    pub fn headline(&self) -> String {
        let what = match &self.occasion {
            Occasion::Opened => format!("{}: {}", self.title, self.cause),
            Occasion::Reopened => format!("reopened: {}: {}", self.title, self.cause),
            Occasion::FirstApproval { proposal, by } => {
                format!("{proposal} approved by {by}: {}", self.title)
            }
            Occasion::Escalated { proposal, to } => {
                format!("{proposal} unanswered, escalated to {to}: {}", self.title)
            }
            Occasion::Paged { proposal, to } => {
                format!("{to}: {proposal} waits for you: {}", self.title)
            }
            Occasion::Expired { proposal } => {
                format!("{proposal} expired unanswered: {}", self.title)
            }
            Occasion::Forwarded { proposal, to } => {
                format!("{to}: a note for you, {proposal}: {}", self.title)
            }
            Occasion::Resolved => format!(
                "resolved ({}): {}",
                self.receipt
                    .as_ref()
                    .map(|r| r.how.as_str())
                    .unwrap_or("resolved"),
                self.title
            ),
        };
        format!("[dataward] {} {what}", self.incident)
    }

    /// The blast radius in a line: "3 models (a, b, c); 1 dashboard (d); owners: x".
    pub fn blast_line(&self) -> String {
        let b = &self.blast;
        let mut parts = Vec::new();
        for (word, list) in [
            ("model", &b.models),
            ("dashboard", &b.dashboards),
            ("job", &b.jobs),
            ("other node", &b.other),
        ] {
            if !list.is_empty() {
                let plural = if list.len() == 1 { "" } else { "s" };
                parts.push(format!(
                    "{} {word}{plural} ({})",
                    list.len(),
                    list.join(", ")
                ));
            }
        }
        if parts.is_empty() {
            parts.push("nothing downstream".to_string());
        }
        if !b.owners.is_empty() {
            parts.push(format!("owners: {}", b.owners.join(", ")));
        }
        parts.join("; ")
    }

    /// Each waiting proposal in a line: "INC-0001-P1 (hold) pause x: waits for owner".
    pub fn waiting_lines(&self) -> Vec<String> {
        self.waiting
            .iter()
            .map(|w| {
                format!(
                    "{} ({}) {}: waits for {}",
                    w.proposal,
                    w.kind,
                    w.title,
                    if w.waits_for.is_empty() {
                        "nobody the policy names".to_string()
                    } else {
                        w.waits_for.join(" or ")
                    }
                )
            })
            .collect()
    }

    /// The whole alert as plain text: cause, evidence, blast radius, who decides, and
    /// on resolve the receipt. Senders cut it to their API's limit.
    pub fn details_text(&self) -> String {
        let mut out = String::new();
        if let Some(update) = &self.update {
            out.push_str(&format!("{update}\n\n"));
        }
        out.push_str(&format!(
            "Incident {} ({}, severity {}) on {}\n",
            self.incident, self.status, self.severity, self.table
        ));
        out.push_str(&format!("Cause: {}\n", self.cause));
        for e in &self.evidence {
            out.push_str(&format!("  - {e}\n"));
        }
        out.push_str(&format!("Blast radius: {}\n", self.blast_line()));
        for risk in &self.blast.break_risks {
            out.push_str(&format!("  ! {risk}\n"));
        }
        let waiting = self.waiting_lines();
        if !waiting.is_empty() {
            out.push_str("Waiting for a decision:\n");
            for w in waiting {
                out.push_str(&format!("  - {w}\n"));
            }
        }
        if let Some(r) = &self.receipt {
            out.push_str(&format!("Receipt: {}\n", r.how));
            for (label, list) in [
                ("Approvals", &r.approvals),
                ("Runs", &r.runs),
                ("Checks", &r.checks),
                ("Undo", &r.undo),
            ] {
                if !list.is_empty() {
                    out.push_str(&format!("{label}:\n"));
                    for line in list {
                        out.push_str(&format!("  - {line}\n"));
                    }
                }
            }
            out.push_str(&format!("Receipt hash: {}\n", r.receipt_hash));
        }
        out.push_str(&format!(
            "Chain record #{} ({})\n",
            self.chain_seq, self.chain_hash
        ));
        out
    }
}

// ---- the seam every sender goes through -------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
}

impl Method {
    pub fn verb(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
        }
    }
}

/// One HTTP request, as a sender builds it: the transport only carries it out.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    /// JSON text.
    pub body: Option<String>,
}

impl Request {
    pub fn post_json(url: String, body: &serde_json::Value) -> Request {
        Request {
            method: Method::Post,
            url,
            headers: vec![("Content-Type", "application/json".to_string())],
            body: Some(body.to_string()),
        }
    }
}

/// What the API answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    /// `Retry-After`, read as seconds or as an HTTP date.
    pub retry_after: Option<Duration>,
    pub body: String,
}

/// What became of a send.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Delivered,
    /// Taken for later processing (Opsgenie, JSM): its outcome is read back by its id.
    Accepted {
        request_id: String,
    },
    /// Try again: after `after` when the API said (Retry-After), else after the backoff.
    Retry {
        after: Option<Duration>,
        error: String,
    },
    /// The API refused it for good; retrying would not change that.
    Permanent(String),
}

/// One API: an alert into a request, and an answer into a verdict.
pub trait Sender: Send {
    fn request(&self, alert: &Sanitized<Alert>, secret: &str) -> Request;
    fn judge(&self, response: &Response) -> Verdict;
    /// For APIs that answer "accepted" (Opsgenie, JSM): where the outcome is read.
    fn status_request(&self, _request_id: &str, _secret: &str) -> Option<Request> {
        None
    }
    fn judge_status(&self, response: &Response) -> Verdict {
        self.judge(response)
    }
    /// The least time between two messages to this destination (Slack: one a second).
    fn pace(&self) -> Duration {
        Duration::ZERO
    }
}

/// The sender for one `[[alert]]`.
pub fn sender_for(alert: &AlertConfig) -> Box<dyn Sender> {
    let base = alert.base_url.clone();
    match alert.kind.as_str() {
        "pagerduty" => Box::new(pagerduty::PagerDuty::new(base)),
        "opsgenie" => Box::new(opsgenie::Opsgenie::new(base)),
        "jsm" => Box::new(jsm::jsm(base)),
        _ => Box::new(slack::Slack),
    }
}

/// A status the common rules settle: 429 and 5xx (and 408) are retried, honouring
/// Retry-After; other 4xx are permanent. `None` for 2xx, which each sender reads.
pub fn judge_status_code(response: &Response, api: &str) -> Option<Verdict> {
    let status = response.status;
    if (200..300).contains(&status) {
        return None;
    }
    let said = answer_text(&response.body);
    let error = format!("{api} answered {status}{said}");
    Some(match status {
        408 | 425 | 429 | 500..=599 => Verdict::Retry {
            after: response.retry_after,
            error,
        },
        _ => Verdict::Permanent(error),
    })
}

/// An API's answer for an error message: one line, escapes visible, secrets hidden, cut.
pub fn answer_text(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return String::new();
    }
    let line: String = crate::sanitize::for_terminal(body).into_owned();
    format!(": {}", truncate(&crate::config::redact_secrets(&line), 300))
}

// ---- the transport -----------------------------------------------------------------

/// The one HTTP client every sender shares: rustls with ring, a timeout per request,
/// no redirects (an API that moves is a configuration to fix, not to follow blindly with
/// a secret in hand).
pub fn client(timeout: Duration) -> Result<reqwest::blocking::Client> {
    // Installed once per process; a second install (another client) is refused, fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("dataward/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("cannot build the HTTP client for alerts")
}

/// Carries out one request. A network fault (refused, reset, timed out) is an `Err`
/// with what went wrong, never the URL (a Slack webhook's URL is its secret).
pub fn exchange(
    client: &reqwest::blocking::Client,
    request: &Request,
    now: chrono::DateTime<chrono::Utc>,
) -> std::result::Result<Response, String> {
    let mut builder = match request.method {
        Method::Get => client.get(&request.url),
        Method::Post => client.post(&request.url),
        Method::Patch => client.patch(&request.url),
    };
    for (name, value) in &request.headers {
        builder = builder.header(*name, value);
    }
    if let Some(body) = &request.body {
        builder = builder.body(body.clone());
    }
    let response = builder.send().map_err(network_error)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, now));
    let body = response.text().map_err(network_error)?;
    Ok(Response {
        status,
        retry_after,
        body,
    })
}

fn network_error(e: reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "network error"
    };
    let e = e.without_url();
    // The innermost cause says what the network did ("Connection refused"); the
    // layers above it only say that a request was being sent.
    let mut innermost = None;
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        innermost = Some(c.to_string());
        cause = c.source();
    }
    let said = innermost.unwrap_or_else(|| e.to_string());
    crate::config::redact_secrets(&format!("{kind}: {said}"))
}

/// `Retry-After`: a number of seconds, or an HTTP date (RFC 9110). A date in the past
/// means now.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

// ---- secrets -----------------------------------------------------------------------

/// The secret of one destination, read now: from the environment variable it names, or
/// from its file, which must be a plain file the engine's account owns and nobody else
/// can read (0600 or 0400). Errors say what to fix and never hold the value.
pub fn read_secret(config: &Config, alert: &AlertConfig) -> Result<String> {
    match alert.secret() {
        Some(SecretRef::Env(var)) => match std::env::var(&var) {
            Ok(value) if !value.trim().is_empty() => Ok(value.trim().to_string()),
            Ok(_) => anyhow::bail!("{var} is empty in the engine's environment"),
            Err(_) => anyhow::bail!(
                "{var} is not set in the engine's environment (it holds this destination's {})",
                alert.secret_key().replace('_', " ")
            ),
        },
        Some(SecretRef::File(path)) => {
            let path = config.resolve(&path);
            check_secret_file(&path)?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut crate::store::files::open_read(&path)?, &mut text)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let value = text.trim().to_string();
            anyhow::ensure!(!value.is_empty(), "{} is empty", path.display());
            Ok(value)
        }
        None => anyhow::bail!("no secret is named for this destination"),
    }
}

/// A secret file must be ours alone: owned by this account, and neither group nor
/// others may read or write it.
pub fn check_secret_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("the secret file {}", path.display()))?;
    anyhow::ensure!(
        !meta.file_type().is_symlink(),
        "the secret file {} is a symlink; name the file itself",
        path.display()
    );
    anyhow::ensure!(
        meta.is_file(),
        "the secret file {} is not a regular file",
        path.display()
    );
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    anyhow::ensure!(
        meta.uid() == me,
        "the secret file {} is owned by uid {}, not by the engine's account (uid {me})",
        path.display(),
        meta.uid()
    );
    let mode = meta.mode() & 0o777;
    anyhow::ensure!(
        mode & 0o077 == 0,
        "the secret file {} can be read by {} (mode {mode:o}); refused. Run `chmod 600 {}`",
        path.display(),
        if mode & 0o007 != 0 {
            "others"
        } else {
            "its group"
        },
        path.display()
    );
    Ok(())
}

/// At start: every `*_file` secret the config names must be private. An environment
/// variable that is missing is not fatal: it shows on its destination until it is set.
pub fn check_secrets(config: &Config) -> Result<()> {
    for (name, alert) in config.alert_destinations() {
        if let Some(SecretRef::File(path)) = alert.secret() {
            check_secret_file(&config.resolve(&path))
                .with_context(|| format!("{}: [[alert]] {name}", config.origin.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Alert {
        Alert {
            incident: "INC-0001".into(),
            dedup_key: "dataward-0123456789ab-INC-0001".into(),
            action: Action::Trigger,
            occasion: Occasion::Opened,
            severity: "critical".into(),
            title: "SALES.ORDERS row count 9,120 (expected 36,000 to 60,000)".into(),
            table: "SALES.ORDERS".into(),
            domain: Some("analytics".into()),
            status: "open".into(),
            cause: "SALES.ORDERS was re-created and is refilling".into(),
            evidence: vec!["row_count low at 14:17: 9,120".into()],
            blast: Blast {
                models: vec!["fct_pacing".into(), "int_map".into()],
                dashboards: vec!["Pacing".into()],
                jobs: vec!["hourly dbt job".into()],
                other: Vec::new(),
                owners: vec!["analytics-owner".into()],
                break_risks: vec!["int_map: casts code to integer".into()],
            },
            waiting: vec![Waiting {
                proposal: "INC-0001-P1".into(),
                kind: "hold".into(),
                title: "pause the hourly dbt job".into(),
                waits_for: vec!["analytics-owner".into()],
            }],
            update: None,
            receipt: None,
            chain_seq: 42,
            chain_hash: "ab12".into(),
            at: "2026-11-24T14:17:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn truncation_is_marked_and_within_the_limit() {
        assert_eq!(truncate("short", 10), "short");
        let cut = truncate(&"x".repeat(200), 130);
        assert_eq!(cut.chars().count(), 130);
        assert!(cut.ends_with(TRUNCATED));
        // Characters, not bytes: a multi-byte text is never cut inside a character.
        let cut = truncate(&"é".repeat(300), 100);
        assert_eq!(cut.chars().count(), 100);
    }

    #[test]
    fn text_from_outside_leaves_with_its_escapes_visible() {
        let mut alert = sample();
        alert.cause = "refill\x1b[2J\u{202e}evil".into();
        alert.blast.models.push("m\x07".into());
        alert.occasion = Occasion::FirstApproval {
            proposal: "P1".into(),
            by: "alice\x1b]0;x\x07".into(),
        };
        let clean = Sanitized::new(alert);
        assert_eq!(clean.cause, "refill\\x1b[2J\\u{202e}evil");
        assert!(clean.blast.models.contains(&"m\\x07".to_string()));
        assert!(!clean.headline().contains('\x1b'));
        assert!(!clean.details_text().contains('\u{202e}'));
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-24T14:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Tue, 24 Nov 2026 14:00:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Tue, 24 Nov 2026 13:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn statuses_are_retried_or_given_up_as_the_contracts_say() {
        let answer = |status| Response {
            status,
            retry_after: Some(Duration::from_secs(3)),
            body: "{\"message\":\"nope\"}".into(),
        };
        assert_eq!(judge_status_code(&answer(202), "x"), None);
        assert!(matches!(
            judge_status_code(&answer(429), "x"),
            Some(Verdict::Retry { after: Some(d), .. }) if d == Duration::from_secs(3)
        ));
        assert!(matches!(
            judge_status_code(&answer(503), "x"),
            Some(Verdict::Retry { .. })
        ));
        assert!(matches!(
            judge_status_code(&answer(400), "x"),
            Some(Verdict::Permanent(e)) if e.contains("400") && e.contains("nope")
        ));
    }

    #[test]
    fn a_secret_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pd.key");
        std::fs::write(&path, "R0utingKey\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = check_secret_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("its group") && err.contains("chmod 600"),
            "{err}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
        let err = check_secret_file(&path).unwrap_err().to_string();
        assert!(err.contains("others"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        check_secret_file(&path).unwrap();
        let config = Config::parse(
            "[[alert]]\nkind = \"pagerduty\"\nrouting_key_file = \"pd.key\"\n",
            &dir.path().join("team.toml"),
        )
        .unwrap();
        assert_eq!(
            read_secret(&config, &config.alert[0]).unwrap(),
            "R0utingKey"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = format!("{:#}", check_secrets(&config).unwrap_err());
        assert!(err.contains("[[alert]] pagerduty-1"), "{err}");
        assert!(!err.contains("R0utingKey"), "{err}");
    }

    #[test]
    fn a_missing_environment_variable_says_which() {
        let config = Config::parse(
            "[[alert]]\nkind = \"opsgenie\"\napi_key_env = \"DATAWARD_TEST_NOT_SET_ANYWHERE\"\n",
            Path::new("team.toml"),
        )
        .unwrap();
        let err = read_secret(&config, &config.alert[0])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("DATAWARD_TEST_NOT_SET_ANYWHERE is not set"),
            "{err}"
        );
    }
}
