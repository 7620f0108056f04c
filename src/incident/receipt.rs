//! Receipts: what happened in an incident, read back from the chain records that prove
//! it, so a receipt can never say more than the chain holds.

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;

use crate::chain::Record;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Receipt {
    pub incident: String,
    pub table: String,
    pub monitor: String,
    pub opened_at: String,
    pub resolved_at: Option<String>,
    pub observed: Value,
    pub expected: Value,
    pub cause: String,
    pub evidence: Vec<String>,
    pub blast_radius: BlastSummary,
    pub proposals: Vec<ProposalEntry>,
    pub runs: Vec<Value>,
    pub verification: Vec<Value>,
    pub undo: Vec<Value>,
    pub chain: ChainRange,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlastSummary {
    pub nodes: usize,
    pub names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalEntry {
    pub proposal: String,
    pub kind: String,
    pub title: String,
    pub owner: String,
    pub content_hash: String,
    pub undo: String,
    pub decisions: Vec<DecisionEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionEntry {
    pub verdict: String,
    pub at: String,
    pub reason: String,
    /// The actor as recorded: attested uid and account, and what was only claimed.
    pub actor: Value,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainRange {
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_hash: String,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Builds the receipt of `incident` from the chain.
pub fn build(records: &[Record], incident: &str) -> Result<Receipt> {
    let mine: Vec<(&Record, Value)> = records
        .iter()
        .filter_map(|r| {
            let payload: Value = serde_json::from_str(&r.payload).ok()?;
            (payload.get("incident").and_then(Value::as_str) == Some(incident))
                .then_some((r, payload))
        })
        .collect();
    let Some((opened, open_payload)) = mine.iter().find(|(r, _)| r.kind == "incident_opened")
    else {
        bail!("no incident {incident} in the chain");
    };
    let mut receipt = Receipt {
        incident: incident.to_string(),
        table: text(open_payload, "table"),
        monitor: text(open_payload, "monitor"),
        opened_at: opened.at.clone(),
        resolved_at: None,
        observed: open_payload["observed"].clone(),
        expected: open_payload["expected"].clone(),
        cause: String::new(),
        evidence: Vec::new(),
        blast_radius: BlastSummary {
            nodes: 0,
            names: Vec::new(),
        },
        proposals: Vec::new(),
        runs: Vec::new(),
        verification: Vec::new(),
        undo: Vec::new(),
        chain: ChainRange {
            first_seq: opened.seq,
            last_seq: opened.seq,
            last_hash: opened.hash.clone(),
        },
    };
    for (record, payload) in &mine {
        receipt.chain.last_seq = record.seq;
        receipt.chain.last_hash = record.hash.clone();
        match record.kind.as_str() {
            "diagnosis" => {
                receipt.cause = text(payload, "cause");
                receipt.evidence =
                    serde_json::from_value(payload["evidence"].clone()).unwrap_or_default();
            }
            "blast_radius" => {
                let nodes = payload["nodes"].as_array().cloned().unwrap_or_default();
                receipt.blast_radius = BlastSummary {
                    nodes: nodes.len(),
                    names: nodes.iter().map(|n| text(n, "name")).collect(),
                };
            }
            "proposal" => receipt.proposals.push(ProposalEntry {
                proposal: text(payload, "proposal"),
                kind: text(payload, "kind"),
                title: text(payload, "title"),
                owner: text(payload, "owner"),
                content_hash: text(payload, "content_hash"),
                undo: text(payload, "undo"),
                decisions: Vec::new(),
            }),
            "decision" => {
                let id = text(payload, "proposal");
                if let Some(p) = receipt.proposals.iter_mut().find(|p| p.proposal == id) {
                    p.decisions.push(DecisionEntry {
                        verdict: text(payload, "verdict"),
                        at: record.at.clone(),
                        reason: text(payload, "reason"),
                        actor: serde_json::from_str(&record.actor).unwrap_or(Value::Null),
                        seq: record.seq,
                    });
                }
            }
            "run" => receipt.runs.push(with_seq(payload, record)),
            "verification" => receipt.verification.push(with_seq(payload, record)),
            "undo" => receipt.undo.push(with_seq(payload, record)),
            "incident_resolved" => receipt.resolved_at = Some(record.at.clone()),
            _ => {}
        }
    }
    Ok(receipt)
}

fn with_seq(payload: &Value, record: &Record) -> Value {
    let mut v = payload.clone();
    v["seq"] = record.seq.into();
    v["at"] = record.at.clone().into();
    v
}

impl Receipt {
    pub fn to_markdown(&self) -> String {
        let mut md = format!("# Receipt for {}\n\n", self.incident);
        md.push_str(&format!(
            "- Table: `{}` (monitor `{}`)\n- Opened: {}\n- Resolved: {}\n- Observed: {} (expected {})\n\n",
            self.table,
            self.monitor,
            self.opened_at,
            self.resolved_at.as_deref().unwrap_or("not yet"),
            self.observed,
            self.expected.as_str().unwrap_or_default()
        ));
        md.push_str(&format!("## Cause\n\n{}\n\n", self.cause));
        for e in &self.evidence {
            md.push_str(&format!("- {e}\n"));
        }
        md.push_str(&format!(
            "\n## Blast radius\n\n{} nodes: {}\n\n## Proposals and decisions\n\n",
            self.blast_radius.nodes,
            self.blast_radius.names.join(", ")
        ));
        for p in &self.proposals {
            md.push_str(&format!(
                "- **{}** ({}) {}\n  - owner: {}; content hash `{}`\n  - undo: {}\n",
                p.proposal, p.kind, p.title, p.owner, p.content_hash, p.undo
            ));
            for d in &p.decisions {
                md.push_str(&format!(
                    "  - {} at {} by {} (chain #{}){}\n",
                    d.verdict,
                    d.at,
                    actor_text(&d.actor),
                    d.seq,
                    if d.reason.is_empty() {
                        String::new()
                    } else {
                        format!(": \"{}\"", d.reason)
                    }
                ));
            }
        }
        md.push_str("\n## Runs\n\n");
        for r in &self.runs {
            md.push_str(&format!(
                "- {} run #{} of {}: {} {} (chain #{})\n",
                text(r, "at"),
                r["run"],
                text(r, "job"),
                text(r, "status"),
                text(r, "detail"),
                r["seq"]
            ));
        }
        md.push_str("\n## Verification\n\n");
        for v in &self.verification {
            md.push_str(&format!(
                "- {} {} (chain #{})\n",
                text(v, "at"),
                if v["passed"].as_bool() == Some(true) {
                    "PASSED"
                } else {
                    "FAILED"
                },
                v["seq"]
            ));
            for c in v["checks"].as_array().into_iter().flatten() {
                md.push_str(&format!(
                    "  - [{}] {}: {}\n",
                    if c["passed"].as_bool() == Some(true) {
                        "x"
                    } else {
                        " "
                    },
                    text(c, "name"),
                    text(c, "detail")
                ));
            }
        }
        md.push_str("\n## Undo\n\n");
        for u in &self.undo {
            md.push_str(&format!(
                "- {} {} (chain #{})\n",
                text(u, "at"),
                text(u, "action"),
                u["seq"]
            ));
        }
        md.push_str(&format!(
            "\n## Chain\n\nRecords #{} to #{}; last hash `{}`. Check with `dataward verify`.\n",
            self.chain.first_seq, self.chain.last_seq, self.chain.last_hash
        ));
        md
    }
}

/// The attested identity first; claims are marked as claims.
fn actor_text(actor: &Value) -> String {
    let mut s = format!(
        "{} (uid {})",
        actor
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or("unknown"),
        actor
            .get("uid")
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    if let Some(role) = actor.get("stand_in").and_then(Value::as_str) {
        s.push_str(&format!(", demo stand-in for {role}"));
    }
    if let Some(user) = actor.pointer("/claims/USER").and_then(Value::as_str) {
        s.push_str(&format!(", claimed USER={user}"));
    }
    s
}
