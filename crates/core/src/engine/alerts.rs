//! Alerts, on the engine's side: whatever a transaction appended to the chain that a
//! pager should hear of is queued in the outbox (`notify::outbox`) before that
//! transaction commits, so an alert exists exactly when the record it announces does.
//! `transact` calls [`Engine::enqueue_alerts`] with the chain's head as it was when the
//! transaction began; the alert is rendered from the incident as it stands at the end
//! of the transaction (an incident is opened with its diagnosis, blast radius and
//! proposals in one turn, and the pager gets all of them).
//!
//! What is announced, per `[[alert]]` destination:
//! - `incident_opened` and `incident_reopened`: a trigger, to every destination whose
//!   `domains` and `severities` take the incident;
//! - the incident's first approval, each escalation and each expiry: an update, to the
//!   destinations its trigger went to; an escalation also pages the destinations whose
//!   `escalation_to` names the role it reached (an alert of its own);
//! - `receipt` (the incident resolved, its receipt on the chain): a resolve with the
//!   receipt, wherever a trigger for it (or a page) went.
//!
//! - `access_requested` with the verdict review: a page of its own (severity
//!   `warning`), to the destinations that take the domain's incidents of that
//!   severity: nothing is granted until an owner looks, so the owners hear of it
//!   where they hear of their incidents; `access_review_decision` resolves that page
//!   (the same dedup key, where it was opened).
//!
//! Severity: `critical` when the blast radius holds a break risk or reaches a dashboard
//! or an exposure (people read it), `error` when it reaches anything else, `warning`
//! when nothing downstream is reached.

use super::api::{DestinationView, RowView};
use super::*;
use crate::notify::outbox;
use crate::notify::{Action, Alert, Blast, Occasion, ReceiptDigest, Waiting};
use crate::store::prelude::*;

/// The chain records that may make an alert.
const ANNOUNCED: &[&str] = &[
    "incident_opened",
    "incident_reopened",
    "decision",
    "escalation",
    "expiry",
    "receipt",
    "access_requested",
    "access_review_decision",
];

/// How the engine wakes the relay when it queued alerts.
#[derive(Default)]
pub(super) struct AlertHook {
    waker: Option<Box<dyn Fn() + Send>>,
    queued: bool,
}

struct Announced {
    seq: u64,
    kind: String,
    payload: serde_json::Value,
    hash: String,
    at: Timestamp,
    actor: String,
}

impl Engine {
    /// Called after each transaction that queued alerts (the relay's wake-up).
    pub fn set_alert_waker(&mut self, wake: impl Fn() + Send + 'static) {
        self.alerts.waker = Some(Box::new(wake));
    }

    /// The chain's head as a transaction begins: records after it are this
    /// transaction's. None when no `[[alert]]` is configured (nothing is ever queued).
    pub(super) fn alert_mark(&self) -> Result<Option<u64>> {
        if self.config.alert.is_empty() {
            return Ok(None);
        }
        Ok(Some(chain::head(&*self.state)?.map(|h| h.seq).unwrap_or(0)))
    }

    /// After a successful commit: the relay hears of the new rows.
    pub(super) fn wake_relay(&mut self) {
        if std::mem::take(&mut self.alerts.queued) {
            if let Some(wake) = &self.alerts.waker {
                wake();
            }
        }
    }

    /// Queues the alerts for every record appended since `mark`, inside the current
    /// transaction.
    pub(super) fn enqueue_alerts(&mut self, mark: Option<u64>) -> Result<()> {
        let Some(mark) = mark else {
            return Ok(());
        };
        self.alerts.queued = false;
        let records: Vec<Announced> = self
            .state
            .records_after(mark, ANNOUNCED)?
            .into_iter()
            .map(|r| Announced {
                seq: r.seq,
                kind: r.kind,
                payload: serde_json::from_str(&r.payload).unwrap_or(serde_json::Value::Null),
                hash: r.hash,
                at: r.at,
                actor: r.actor,
            })
            .collect();
        for record in records {
            self.announce(&record)?;
        }
        Ok(())
    }

    fn announce(&mut self, record: &Announced) -> Result<()> {
        if record.kind == "access_requested" {
            return self.page_access_review(record);
        }
        if record.kind == "access_review_decision" {
            return self.resolve_access_review(record);
        }
        let Some(incident) = record.payload["incident"].as_str().map(str::to_string) else {
            return Ok(());
        };
        let Some(i) = self.incidents.iter().position(|x| x.id == incident) else {
            return Ok(());
        };
        let key = self.dedup_key(&incident)?;
        let text = |field: &str| {
            record.payload[field]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        match record.kind.as_str() {
            "incident_opened" | "incident_reopened" => {
                if self.pages_nobody(i)? {
                    return Ok(());
                }
                let occasion = if record.kind == "incident_opened" {
                    Occasion::Opened
                } else {
                    Occasion::Reopened
                };
                let alert = self.render(i, record, &key, Action::Trigger, occasion)?;
                for (name, kind) in self.routes(&alert) {
                    self.queue(&name, &kind, &alert)?;
                }
            }
            "decision" if text("verdict") == "approved" => {
                let earlier = self.state.approvals_before(record.seq, &incident)?;
                if earlier > 0 {
                    return Ok(());
                }
                let by = actor_name(&record.actor);
                let proposal = text("proposal");
                let mut alert = self.render(
                    i,
                    record,
                    &key,
                    Action::Update,
                    Occasion::FirstApproval {
                        proposal: proposal.clone(),
                        by: by.clone(),
                    },
                )?;
                alert.update = Some(format!(
                    "{proposal} approved by {by} (chain #{}){}",
                    record.seq,
                    reason_suffix(&text("reason"))
                ));
                self.queue_where_opened(&key, &alert)?;
            }
            "decision" if text("verdict") == "forwarded" => {
                let (proposal, to) = (text("proposal"), text("to"));
                let Some(note) = self.incidents[i]
                    .proposals
                    .iter()
                    .find(|p| p.id == proposal)
                    .map(|p| p.body.clone())
                else {
                    return Ok(());
                };
                let ProposalBody::Note { text: note, .. } = note else {
                    return Ok(());
                };
                let mut alert = self.render(
                    i,
                    record,
                    &key,
                    Action::Update,
                    Occasion::Forwarded {
                        proposal: proposal.clone(),
                        to: to.clone(),
                    },
                )?;
                // An update is one line: the note's lines follow each other.
                let note = note
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .collect::<Vec<_>>();
                alert.update = Some(format!(
                    "{proposal}: a note for {to}, forwarded by {} (chain #{}): {}",
                    actor_name(&record.actor),
                    record.seq,
                    note.join(" ")
                ));
                self.queue_where_opened(&key, &alert)?;
            }
            "escalation" => {
                let (proposal, to) = (text("proposal"), text("to"));
                let mut alert = self.render(
                    i,
                    record,
                    &key,
                    Action::Update,
                    Occasion::Escalated {
                        proposal: proposal.clone(),
                        to: to.clone(),
                    },
                )?;
                alert.update = Some(format!(
                    "{proposal} went unanswered: escalated to {to} (chain #{})",
                    record.seq
                ));
                self.queue_where_opened(&key, &alert)?;
                if self.pages_nobody(i)? {
                    return Ok(());
                }
                // The escalation target is paged: an alert of its own on each destination
                // that pages that role.
                let page_key = page_key(&key, &to);
                let mut page = alert.clone();
                page.dedup_key = page_key;
                page.action = Action::Trigger;
                page.occasion = Occasion::Paged {
                    proposal: proposal.clone(),
                    to: to.clone(),
                };
                page.update = Some(format!(
                    "{proposal} waits for {to}: the request went unanswered and escalated (chain #{})",
                    record.seq
                ));
                let pagers: Vec<(String, String)> = self
                    .config
                    .alert_destinations()
                    .into_iter()
                    .filter(|(_, a)| a.escalation_to.contains(&to))
                    .map(|(name, a)| (name, a.kind.clone()))
                    .collect();
                for (name, kind) in pagers {
                    self.queue(&name, &kind, &page)?;
                }
            }
            "expiry" => {
                let proposal = text("proposal");
                let mut alert = self.render(
                    i,
                    record,
                    &key,
                    Action::Update,
                    Occasion::Expired {
                        proposal: proposal.clone(),
                    },
                )?;
                alert.update = Some(format!(
                    "{proposal} expired unanswered: nobody was left to escalate to, and nothing was granted (chain #{})",
                    record.seq
                ));
                self.queue_where_opened(&key, &alert)?;
            }
            "receipt" => {
                let mut alert =
                    self.render(i, record, &key, Action::Resolve, Occasion::Resolved)?;
                // An alert must never keep an incident from resolving: a receipt that
                // cannot be read back is said so, and the resolve still goes.
                let digest = self
                    .receipt_digest(&incident, &text("receipt_hash"))
                    .unwrap_or_else(|e| ReceiptDigest {
                        how: format!("resolved; its receipt could not be read back: {e:#}"),
                        receipt_hash: text("receipt_hash"),
                        ..Default::default()
                    });
                alert.receipt = Some(digest);
                self.queue_where_opened(&key, &alert)?;
                for (name, kind, page) in self.state.pages_of(&incident)? {
                    let mut closed = alert.clone();
                    closed.dedup_key = page;
                    self.queue(&name, &kind, &closed)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// An access request the policy sent to review pages the domain's owners.
    fn page_access_review(&mut self, record: &Announced) -> Result<()> {
        if record.payload["verdict"] != "review" {
            return Ok(());
        }
        let alert = self.access_review_alert(record)?;
        // Where the domain's incidents go: its owners' pager.
        let pagers = self.routes(&alert);
        for (name, kind) in pagers {
            self.queue(&name, &kind, &alert)?;
        }
        Ok(())
    }

    /// The review decided: its page is resolved where it was opened.
    fn resolve_access_review(&mut self, record: &Announced) -> Result<()> {
        let mut alert = self.access_review_alert(record)?;
        let payload = &record.payload;
        let verdict = payload["verdict"].as_str().unwrap_or_default().to_string();
        let request = alert.incident.clone();
        alert.action = Action::Resolve;
        alert.occasion = Occasion::Resolved;
        alert.status = verdict.clone();
        alert.waiting.clear();
        alert.evidence = vec![format!("{verdict} by {}", actor_name(&record.actor))];
        alert.update = Some(format!(
            "{request}: the review is {verdict} by {} (chain #{}){}: `dataward receipt {request}`",
            actor_name(&record.actor),
            record.seq,
            reason_suffix(payload["reason"].as_str().unwrap_or_default())
        ));
        let key = alert.dedup_key.clone();
        self.queue_where_opened(&key, &alert)
    }

    /// The alert of a request under review, from a record naming it (the request, or
    /// the review's decision): one dedup key, so the decision resolves the page.
    fn access_review_alert(&self, record: &Announced) -> Result<Alert> {
        let payload = &record.payload;
        let strings = |v: &serde_json::Value| -> Vec<String> {
            (v.as_array().into_iter().flatten())
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let request = text(&payload["request"]);
        let domain = text(&payload["domain"]);
        let owners = strings(&payload["to"]);
        let tables = strings(&payload["tables"]).join(", ");
        let ask = &payload["ask"];
        let title = format!(
            "access request {request} needs review: {} on {tables} for {}",
            text(&ask["privilege"]),
            text(&ask["grantee"])
        );
        Ok(Alert {
            incident: request.clone(),
            dedup_key: self.dedup_key(&request)?,
            action: Action::Trigger,
            occasion: Occasion::Paged {
                proposal: request.clone(),
                to: owners.join(", "),
            },
            severity: "warning".to_string(),
            title: title.clone(),
            table: tables.clone(),
            domain: Some(domain.clone()),
            status: "review".to_string(),
            cause: format!(
                "the policy ({}) asks the owners to review it; nothing is granted or proposed",
                strings(&payload["rules"]).join(", ")
            ),
            evidence: vec![
                format!("asked by {}", actor_name(&record.actor)),
                format!("reason: {}", text(&ask["reason"])),
                format!("{} days", payload["days"]),
            ],
            blast: Blast::default(),
            waiting: vec![Waiting {
                proposal: request.clone(),
                kind: "access".to_string(),
                title,
                waits_for: owners.clone(),
            }],
            update: Some(format!(
                "{request} waits for {} to review it (chain #{}): `dataward receipt {request}`",
                owners.join(", "),
                record.seq
            )),
            receipt: None,
            chain_seq: record.seq,
            chain_hash: record.hash.clone(),
            at: record.at,
        })
    }

    /// A monitor snoozed or in a maintenance window wakes nobody: no new alert opens for
    /// its incident (an opening, a reopening, an escalation's page). Updates and the
    /// resolve still go where an alert already opened, so its thread stays whole.
    fn pages_nobody(&self, i: usize) -> Result<bool> {
        let incident = &self.incidents[i];
        Ok(self
            .quiet(&incident.monitor, &incident.table, self.now())?
            .is_some())
    }

    fn queue(&mut self, destination: &str, kind: &str, alert: &Alert) -> Result<()> {
        if outbox::enqueue(&*self.state, destination, kind, alert, self.clock.millis())? {
            self.alerts.queued = true;
        }
        Ok(())
    }

    /// Updates and the resolve go where the alert was opened.
    fn queue_where_opened(&mut self, key: &str, alert: &Alert) -> Result<()> {
        for (name, kind) in self.state.alert_opened_on(key)? {
            self.queue(&name, &kind, alert)?;
        }
        Ok(())
    }

    /// Where a note forwarded now on `incident` goes: the destinations its alert was
    /// opened on (`name (kind)`, as announcing the forward queues it), or, when there
    /// are none, why nothing carries it and what to configure.
    pub(super) fn note_routes(&self, incident: &str) -> Result<Result<Vec<String>, String>> {
        if self.config.alert.is_empty() {
            return Ok(Err(
                "no [[alert]] destination is configured, so nothing carries notes: tell its \
                 owner yourself, or add an [[alert]] (slack, pagerduty, opsgenie or jsm; \
                 config.example.toml shows each) and forward the next one"
                    .into(),
            ));
        }
        let key = self.dedup_key(incident)?;
        let opened = self.state.alert_opened_on(&key)?;
        if opened.is_empty() {
            return Ok(Err(format!(
                "no [[alert]] destination took {incident} (their domains and severities leave \
                 it out), so nothing carries its notes: tell the owner yourself, or widen an \
                 [[alert]]'s domains or severities"
            )));
        }
        Ok(Ok(opened
            .into_iter()
            .map(|(name, kind)| format!("{name} ({kind})"))
            .collect()))
    }

    /// The configured destinations that take this incident: its domain and severity.
    fn routes(&self, alert: &Alert) -> Vec<(String, String)> {
        self.config
            .alert_destinations()
            .into_iter()
            .filter(|(_, a)| {
                (a.domains.is_empty()
                    || alert.domain.as_ref().is_some_and(|d| a.domains.contains(d)))
                    && (a.severities.is_empty() || a.severities.contains(&alert.severity))
            })
            .map(|(name, a)| (name, a.kind.clone()))
            .collect()
    }

    /// The incident's dedup key: its id behind this chain's log id, so an `INC-0001` of
    /// another data directory (or of this one started afresh) never lands on this
    /// one's open alert.
    fn dedup_key(&self, incident: &str) -> Result<String> {
        let log_id = self.state.meta(chain::LOG_ID)?;
        let log = log_id.unwrap_or_default();
        Ok(format!(
            "dataward-{}-{incident}",
            log.get(..12).unwrap_or(&log)
        ))
    }

    /// The alert for one record, from the incident as it stands now.
    fn render(
        &self,
        i: usize,
        record: &Announced,
        key: &str,
        action: Action,
        occasion: Occasion,
    ) -> Result<Alert> {
        let incident = &self.incidents[i];
        let view = self.incident_view(incident);
        let mut blast = Blast::default();
        let mut owners = std::collections::BTreeSet::new();
        for node in &view.blast {
            match node.kind.as_str() {
                "model" | "seed" | "snapshot" => blast.models.push(node.name.clone()),
                "dashboard" | "exposure" | "notebook" => blast.dashboards.push(node.name.clone()),
                "job" | "sync" => blast.jobs.push(node.name.clone()),
                "test" | "source" => {}
                _ => blast.other.push(node.name.clone()),
            }
            if node.break_risk {
                blast.break_risks.push(format!(
                    "{}: {}",
                    node.name,
                    node.finding.clone().unwrap_or_default()
                ));
            }
            if let Some(lineage) = &self.lineage {
                if let Some(owner) = lineage
                    .resolve(&node.id)
                    .ok()
                    .and_then(|ix| lineage.node(ix).owner.clone())
                {
                    owners.insert(owner);
                }
            }
        }
        blast.owners = owners.into_iter().collect();
        let severity = if !blast.break_risks.is_empty() || !blast.dashboards.is_empty() {
            "critical"
        } else if view.blast.is_empty() {
            "warning"
        } else {
            "error"
        };
        let waiting = view
            .proposals
            .iter()
            .filter(|p| p.state == super::api::ProposalState::Pending)
            .map(|p| Waiting {
                proposal: p.id.clone(),
                kind: serde_json::to_value(p.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                title: p.title.clone(),
                waits_for: if p.deciders.is_empty() {
                    vec![p.owner.clone()]
                } else {
                    p.deciders.clone()
                },
            })
            .collect();
        let status = serde_json::to_value(incident.status)?
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(Alert {
            incident: incident.id.clone(),
            dedup_key: key.to_string(),
            action,
            occasion,
            severity: severity.to_string(),
            title: view.title,
            table: incident.table.clone(),
            domain: approve::domain_for(&self.config, &incident.table).map(|d| d.name.clone()),
            status,
            cause: view.cause.unwrap_or_default(),
            evidence: view.evidence,
            blast,
            waiting,
            update: None,
            receipt: None,
            chain_seq: record.seq,
            chain_hash: record.hash.clone(),
            at: record.at,
        })
    }

    /// What the resolve carries of the receipt, read back from the chain.
    fn receipt_digest(&self, incident: &str, receipt_hash: &str) -> Result<ReceiptDigest> {
        let records = chain::records_about(&*self.state, incident)?;
        let r = receipt::build(&records, incident)?;
        let value_text = |v: &serde_json::Value, key: &str| {
            v[key]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v[key].to_string())
        };
        let how = if let Some(closed) = &r.closed_by_hand {
            format!(
                "closed by hand by {}: {}",
                closed.by["user"].as_str().unwrap_or("unknown"),
                closed.reason
            )
        } else if let Some(root) = &r.merged_into {
            format!("merged into {root}, whose root cause explains it")
        } else if r.recovered_without_intervention {
            "recovered without intervention".to_string()
        } else {
            "verified and resolved".to_string()
        };
        let approvals = r
            .proposals
            .iter()
            .flat_map(|p| {
                p.decisions.iter().map(move |d| {
                    format!(
                        "{} ({}) {} by {} at {} (chain #{}){}",
                        p.proposal,
                        p.kind,
                        d.verdict,
                        d.actor["user"].as_str().unwrap_or("dataward"),
                        d.at,
                        d.seq,
                        reason_suffix(&d.reason)
                    )
                })
            })
            .collect();
        let runs = r
            .runs
            .iter()
            .map(|run| {
                format!(
                    "run {} of {}: {} (chain #{})",
                    value_text(run, "run"),
                    value_text(run, "job"),
                    value_text(run, "status"),
                    run["seq"]
                )
            })
            .collect();
        let checks = r
            .verification
            .iter()
            .flat_map(|v| {
                v["checks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| {
                        format!(
                            "{}: {} ({})",
                            value_text(&c, "name"),
                            if c["passed"] == true {
                                "passed"
                            } else {
                                "failed"
                            },
                            value_text(&c, "detail")
                        )
                    })
            })
            .collect();
        let mut undo: Vec<String> = r
            .undo
            .iter()
            .map(|u| format!("{}: {}", value_text(u, "proposal"), value_text(u, "action")))
            .collect();
        undo.extend(
            r.proposals
                .iter()
                .filter(|p| !p.undo.is_empty())
                .map(|p| format!("{} undo: {}", p.proposal, p.undo)),
        );
        Ok(ReceiptDigest {
            how,
            approvals,
            runs,
            checks,
            undo,
            receipt_hash: receipt_hash.to_string(),
        })
    }

    /// Writes what came of an outbox row, as the relay reported it, in a write of its
    /// own: the relay does not write the state database itself. Refused once the state
    /// database is gone (the mark would be lost; the row is then sent again at start).
    pub fn mark_outbox(&mut self, mark: &outbox::Mark) -> Result<()> {
        self.ensure_database()?;
        self.state.transact(|tx| mark.write(tx))
    }

    /// The outbox as the console shows it: every configured destination, with what
    /// waits, when it is next tried, its last error and its dedup key.
    pub(super) fn outbox_view(&self) -> Vec<DestinationView> {
        if self.config.alert.is_empty() {
            return Vec::new();
        }
        let configured: Vec<(String, String)> = self
            .config
            .alert_destinations()
            .into_iter()
            .map(|(name, a)| (name, a.kind.clone()))
            .collect();
        outbox::view(&*self.state, self.clock.millis(), &configured)
            .unwrap_or_default()
            .into_iter()
            .map(DestinationView::from)
            .collect()
    }
}

/// The outbox as a console or `dataward outbox` is sent it.
impl From<outbox::Destination> for DestinationView {
    fn from(d: outbox::Destination) -> DestinationView {
        let outbox::Destination {
            destination,
            kind,
            pending,
            failed,
            delivered,
            next_attempt_at,
            next_attempt_in_secs,
            last_error,
            dedup_key,
            rows,
        } = d;
        DestinationView {
            destination,
            kind,
            pending,
            failed,
            delivered,
            next_attempt_at,
            next_attempt_in_secs,
            last_error,
            dedup_key,
            rows: rows.into_iter().map(RowView::from).collect(),
        }
    }
}

impl From<outbox::ListedRow> for RowView {
    fn from(row: outbox::ListedRow) -> RowView {
        let outbox::ListedRow {
            id,
            incident,
            action,
            occasion,
            dedup_key,
            status,
            attempts,
            queued_at,
            next_attempt_at,
            delivered_at,
            last_error,
            request_id,
        } = row;
        RowView {
            id,
            incident,
            action,
            occasion,
            dedup_key,
            status,
            attempts,
            queued_at,
            next_attempt_at,
            delivered_at,
            last_error,
            request_id,
        }
    }
}

/// Destination names, errors from APIs and incident ids are outside text.
impl crate::sanitize::Sanitize for DestinationView {
    fn sanitize(&mut self) {
        let DestinationView {
            destination,
            kind,
            pending: _,
            failed: _,
            delivered: _,
            next_attempt_at: _,
            next_attempt_in_secs: _,
            last_error,
            dedup_key,
            rows,
        } = self;
        destination.sanitize();
        kind.sanitize();
        last_error.sanitize();
        dedup_key.sanitize();
        for row in rows {
            let RowView {
                id: _,
                incident,
                action,
                occasion,
                dedup_key,
                status,
                attempts: _,
                queued_at: _,
                next_attempt_at: _,
                delivered_at: _,
                last_error,
                request_id,
            } = row;
            // (Its times are Timestamps: nothing in them to clean.)
            for text in [incident, action, occasion, dedup_key, status] {
                text.sanitize();
            }
            for text in [last_error, request_id] {
                text.sanitize();
            }
        }
    }
}

/// An escalation page's own dedup key: the incident's, with the role it reached.
fn page_key(key: &str, role: &str) -> String {
    let page = format!("{key}-escalated-{role}");
    if page.chars().count() <= crate::notify::pagerduty::MAX_DEDUP_KEY {
        return page;
    }
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(role.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{key}-escalated-{digest}")
}

/// The person behind a chain actor: the attested account, or the role a demo
/// stand-in plays.
fn actor_name(actor: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(actor).unwrap_or_default();
    let user = value["user"].as_str().unwrap_or("unknown");
    match value["stand_in"].as_str() {
        Some(role) => format!("{user} (uid {}) as stand-in for {role}", value["uid"]),
        None => format!("{user} (uid {})", value["uid"]),
    }
}

fn reason_suffix(reason: &str) -> String {
    if reason.trim().is_empty() {
        String::new()
    } else {
        format!(": \"{reason}\"")
    }
}
