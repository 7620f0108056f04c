//! The receipt of an access request, read back from the chain records naming it, so
//! it can never say more than the chain holds: the request, the policy's verdict, the
//! proposal with its statements and hash, who decided, when the grant was seen, and
//! the revoke.

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;

use super::receipt::{ChainRange, DecisionEntry};
use crate::chain::Record;
use crate::clock::Timestamp;
use crate::sanitize::for_terminal;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessReceipt {
    pub request: String,
    pub filed_at: Timestamp,
    /// The asker as recorded: attested uid and account, and what was only claimed.
    pub asked_by: Value,
    /// target, privilege, grantee, reason, days as asked.
    pub ask: Value,
    /// propose or review, and what the policy made of the ask.
    pub verdict: String,
    pub warehouse: String,
    pub tables: Vec<String>,
    pub left_out: Vec<String>,
    pub rules: Vec<String>,
    pub days: u64,
    pub to: Vec<String>,
    /// The owner's decision on a request the policy sent to review, with the review's
    /// hash (absent when the policy proposed it, or while it waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// The hash the review is decided on, when the policy sent the request to review.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub review_hash: String,
    pub grant: Option<Statements>,
    pub decisions: Vec<DecisionEntry>,
    pub grant_seen_at: Option<Timestamp>,
    pub revoke: Option<Statements>,
    pub revoke_why: Option<String>,
    pub revoke_seen_at: Option<Timestamp>,
    pub chain: ChainRange,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Statements {
    pub proposal: String,
    pub content_hash: String,
    pub statements: Vec<String>,
    pub proposed_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    pub review_hash: String,
    #[serde(flatten)]
    pub decision: DecisionEntry,
}

/// Is `id` an access request's (`ACC-0001`)?
pub fn is_access_request(id: &str) -> bool {
    id.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("ACC-"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn statements(record: &Record, payload: &Value) -> Statements {
    Statements {
        proposal: text(payload, "proposal"),
        content_hash: text(payload, "content_hash"),
        statements: strings(&payload["content"]["statements"]),
        proposed_at: record.at,
    }
}

/// Builds the receipt of access request `id` from the chain.
pub fn build(records: &[Record], id: &str) -> Result<AccessReceipt> {
    let id = id.to_ascii_uppercase();
    let mine: Vec<(&Record, Value)> = records
        .iter()
        .filter(|r| r.kind.starts_with("access_"))
        .filter_map(|r| {
            let payload: Value = serde_json::from_str(&r.payload).ok()?;
            (payload.get("request").and_then(Value::as_str) == Some(id.as_str()))
                .then_some((r, payload))
        })
        .collect();
    let Some((filed, asked)) = mine.iter().find(|(r, _)| r.kind == "access_requested") else {
        bail!("no access request {id} in the chain");
    };
    let mut receipt = AccessReceipt {
        request: id.clone(),
        filed_at: filed.at,
        asked_by: serde_json::from_str(&filed.actor).unwrap_or(Value::Null),
        ask: asked["ask"].clone(),
        verdict: text(asked, "verdict"),
        warehouse: text(asked, "warehouse"),
        tables: strings(&asked["tables"]),
        left_out: strings(&asked["left_out"]),
        rules: strings(&asked["rules"]),
        days: asked["days"].as_u64().unwrap_or_default(),
        to: strings(&asked["to"]),
        review: None,
        review_hash: text(asked, "review_hash"),
        grant: None,
        decisions: Vec::new(),
        grant_seen_at: None,
        revoke: None,
        revoke_why: None,
        revoke_seen_at: None,
        chain: ChainRange {
            first_seq: filed.seq,
            last_seq: filed.seq,
            head_hash: filed.hash.clone(),
        },
    };
    for (record, payload) in &mine {
        match record.kind.as_str() {
            "access_review_decision" => {
                receipt.review = Some(Review {
                    review_hash: text(payload, "review_hash"),
                    decision: DecisionEntry {
                        verdict: text(payload, "verdict"),
                        at: record.at,
                        reason: text(payload, "reason"),
                        actor: serde_json::from_str(&record.actor).unwrap_or(Value::Null),
                        seq: record.seq,
                    },
                })
            }
            "access_proposal" => receipt.grant = Some(statements(record, payload)),
            "access_decision" => receipt.decisions.push(DecisionEntry {
                verdict: text(payload, "verdict"),
                at: record.at,
                reason: text(payload, "reason"),
                actor: serde_json::from_str(&record.actor).unwrap_or(Value::Null),
                seq: record.seq,
            }),
            "access_grant_seen" => receipt.grant_seen_at = Some(record.at),
            "access_revoke_proposed" => {
                receipt.revoke = Some(statements(record, payload));
                receipt.revoke_why = Some(text(payload, "why"));
            }
            "access_revoke_seen" => receipt.revoke_seen_at = Some(record.at),
            _ => {}
        }
        receipt.chain.last_seq = record.seq;
        receipt.chain.head_hash = record.hash.clone();
    }
    Ok(receipt)
}

impl AccessReceipt {
    /// For people and auditors; every name from a request or a catalog is shown with
    /// its control characters escaped.
    pub fn to_markdown(&self) -> String {
        let t = |s: &str| for_terminal(s).into_owned();
        let who = super::receipt::actor_line;
        let mut md = format!("# Receipt for access request {}\n\n", t(&self.request));
        md.push_str(&format!(
            "- Asked by {} at {}: {} on `{}` for `{}`, {} days asked\n- Reason: {}\n",
            who(&self.asked_by),
            self.filed_at,
            t(self.ask["privilege"].as_str().unwrap_or_default()),
            t(self.ask["target"].as_str().unwrap_or_default()),
            t(self.ask["grantee"].as_str().unwrap_or_default()),
            self.ask["days"]
                .as_u64()
                .map_or("no".to_string(), |d| d.to_string()),
            t(self.ask["reason"].as_str().unwrap_or_default()),
        ));
        md.push_str(&format!(
            "- Policy: {} (rules: {}); tables: {}; lasts {} days; to {}\n",
            self.verdict,
            t(&self.rules.join(", ")),
            t(&self.tables.join(", ")),
            self.days,
            t(&self.to.join(", "))
        ));
        if !self.left_out.is_empty() {
            md.push_str(&format!(
                "- Left out (no rule allows them): {}\n",
                t(&self.left_out.join(", "))
            ));
        }
        if let Some(review) = &self.review {
            let d = &review.decision;
            md.push_str(&format!(
                "- Review {} by {} at {} (chain #{}, review hash {}){}\n",
                d.verdict.replace('_', " "),
                who(&d.actor),
                d.at,
                d.seq,
                review.review_hash,
                if d.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", t(&d.reason))
                }
            ));
        }
        if let Some(grant) = &self.grant {
            md.push_str(&format!(
                "\n## Grant {} (hash {})\n\n",
                t(&grant.proposal),
                grant.content_hash
            ));
            for sql in &grant.statements {
                md.push_str(&format!("    {}\n", t(sql)));
            }
        } else if self.verdict == "review" && self.review.is_none() {
            md.push_str(&format!(
                "\nNothing was proposed: the policy asks the owners to review it \
                 (review hash {}).\n",
                self.review_hash
            ));
        } else if self.verdict == "review" {
            md.push_str("\nNothing was proposed: the review was rejected.\n");
        }
        for d in &self.decisions {
            md.push_str(&format!(
                "- {} by {} at {} (chain #{}){}\n",
                d.verdict.replace('_', " "),
                who(&d.actor),
                d.at,
                d.seq,
                if d.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", t(&d.reason))
                }
            ));
        }
        if let Some(at) = self.grant_seen_at {
            md.push_str(&format!("- Grant seen in the catalog at {at}\n"));
        }
        if let Some(revoke) = &self.revoke {
            md.push_str(&format!(
                "\n## Revoke {} ({}, hash {})\n\n",
                t(&revoke.proposal),
                self.revoke_why.as_deref().unwrap_or_default(),
                revoke.content_hash
            ));
            for sql in &revoke.statements {
                md.push_str(&format!("    {}\n", t(sql)));
            }
            match self.revoke_seen_at {
                Some(at) => md.push_str(&format!("- Revoke seen in the catalog at {at}\n")),
                None => md.push_str("- The catalog still shows the grant\n"),
            }
        }
        md.push_str(&format!(
            "\nChain records #{} to #{} (head {}).\n",
            self.chain.first_seq, self.chain.last_seq, self.chain.head_hash
        ));
        md
    }
}
