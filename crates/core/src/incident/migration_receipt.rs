//! The receipt of a migration wave (`MIG-<migration>-<wave>`), read back from the chain
//! records naming it, so it never says more than the chain holds: each sign-off with
//! the parity hash it was given on and each table's figures, each time a reading
//! closed the gate again (with what failed), each rejection, and each repoint: its
//! diff, its hash, who decided it, and its rollback (the same diff reversed).

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;

use super::receipt::{ChainRange, DecisionEntry};
use crate::chain::Record;
use crate::clock::Timestamp;
use crate::sanitize::for_terminal;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MigrationReceipt {
    pub wave: String,
    pub sign_offs: Vec<ParityDecision>,
    pub rejections: Vec<ParityDecision>,
    pub gate_closed: Vec<GateClosed>,
    pub repoints: Vec<RepointEntry>,
    /// Each time the whole wave was rolled back (its applied repoints put back, its
    /// gate closed again).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rollbacks: Vec<WaveRolledBack>,
    pub chain: ChainRange,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaveRolledBack {
    pub repoints: Vec<String>,
    pub files: Vec<String>,
    /// The parity hash of the sign-off it withdrew, if the wave was signed off.
    pub withdrawn_sign_off: Option<String>,
    pub reason: String,
    pub actor: Value,
    pub at: Timestamp,
    pub seq: u64,
}

/// A sign-off or a rejection of the wave, on one reading of its parity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParityDecision {
    pub parity_hash: String,
    /// Each table's figures as signed off (rows, columns, days), or the failures
    /// a rejection was given on.
    pub parity: Value,
    pub reason: String,
    pub actor: Value,
    pub at: Timestamp,
    pub seq: u64,
}

/// A reading whose hash was not the one signed off: the gate closed again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateClosed {
    pub signed_on: String,
    pub now: String,
    pub failures: Vec<String>,
    pub at: Timestamp,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepointEntry {
    pub proposal: String,
    pub content_hash: String,
    pub reader: String,
    pub file: String,
    pub old: String,
    pub new: String,
    pub proposed_at: Timestamp,
    pub decisions: Vec<DecisionEntry>,
    /// Whether the file stands repointed after the last decision recorded.
    pub applied: bool,
}

/// Is `id` a migration wave's (`MIG-orders-to-core-first`)?
pub fn is_wave(id: &str) -> bool {
    id.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("MIG-"))
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: &Value) -> Vec<String> {
    (v.as_array().into_iter().flatten())
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Builds the receipt of wave `id` from the chain.
pub fn build(records: &[Record], id: &str) -> Result<MigrationReceipt> {
    let mine: Vec<(&Record, Value)> = records
        .iter()
        .filter(|r| r.kind.starts_with("migration_"))
        .filter_map(|r| {
            let payload: Value = serde_json::from_str(&r.payload).ok()?;
            let wave = payload.get("wave").and_then(Value::as_str)?;
            wave.eq_ignore_ascii_case(id).then_some((r, payload))
        })
        .collect();
    let Some((first, payload)) = mine.first() else {
        bail!("nothing of migration wave {id} is in the chain");
    };
    let mut receipt = MigrationReceipt {
        wave: text(payload, "wave"),
        sign_offs: Vec::new(),
        rejections: Vec::new(),
        gate_closed: Vec::new(),
        repoints: Vec::new(),
        rollbacks: Vec::new(),
        chain: ChainRange {
            first_seq: first.seq,
            last_seq: first.seq,
            head_hash: first.hash.clone(),
        },
    };
    for (record, payload) in &mine {
        let actor = || serde_json::from_str(&record.actor).unwrap_or(Value::Null);
        match record.kind.as_str() {
            "migration_sign_off" => receipt.sign_offs.push(ParityDecision {
                parity_hash: text(payload, "parity_hash"),
                parity: payload["tables"].clone(),
                reason: text(payload, "reason"),
                actor: actor(),
                at: record.at,
                seq: record.seq,
            }),
            "migration_sign_off_rejected" => receipt.rejections.push(ParityDecision {
                parity_hash: text(payload, "parity_hash"),
                parity: payload["failures"].clone(),
                reason: text(payload, "reason"),
                actor: actor(),
                at: record.at,
                seq: record.seq,
            }),
            "migration_gate_closed" => receipt.gate_closed.push(GateClosed {
                signed_on: text(payload, "signed_on"),
                now: text(payload, "now"),
                failures: strings(&payload["failures"]),
                at: record.at,
                seq: record.seq,
            }),
            "migration_wave_rolled_back" => receipt.rollbacks.push(WaveRolledBack {
                repoints: strings(&payload["repoints"]),
                files: strings(&payload["files"]),
                withdrawn_sign_off: payload["withdrawn_sign_off"].as_str().map(str::to_string),
                reason: text(payload, "reason"),
                actor: actor(),
                at: record.at,
                seq: record.seq,
            }),
            "migration_repoint_proposal" => receipt.repoints.push(RepointEntry {
                proposal: text(payload, "proposal"),
                content_hash: text(payload, "content_hash"),
                reader: text(payload, "reader"),
                file: text(payload, "file"),
                old: text(payload, "old"),
                new: text(payload, "new"),
                proposed_at: record.at,
                decisions: Vec::new(),
                applied: false,
            }),
            "migration_repoint_decision" => {
                let proposal = text(payload, "proposal");
                if let Some(entry) = (receipt.repoints.iter_mut()).find(|r| r.proposal == proposal)
                {
                    let verdict = text(payload, "verdict");
                    entry.applied = verdict == "approved";
                    entry.decisions.push(DecisionEntry {
                        verdict,
                        at: record.at,
                        reason: text(payload, "reason"),
                        actor: actor(),
                        seq: record.seq,
                    });
                }
            }
            _ => {}
        }
        receipt.chain.last_seq = record.seq;
        receipt.chain.head_hash = record.hash.clone();
    }
    Ok(receipt)
}

impl MigrationReceipt {
    /// For people and auditors; every name and reason is shown with its control
    /// characters escaped.
    pub fn to_markdown(&self) -> String {
        let t = |s: &str| for_terminal(s).into_owned();
        let who = super::receipt::actor_line;
        let mut md = format!("# Receipt for migration wave {}\n\n", t(&self.wave));
        if self.sign_offs.is_empty() {
            md.push_str("Not signed off: the gate has never opened.\n");
        }
        for s in &self.sign_offs {
            md.push_str(&format!(
                "- Signed off by {} at {} (chain #{}) on parity {}: {}\n",
                who(&s.actor),
                s.at,
                s.seq,
                s.parity_hash,
                t(&s.reason)
            ));
            for table in s.parity.as_array().into_iter().flatten() {
                md.push_str(&format!(
                    "  - {} → {}: {} rows, {} columns, {} days\n",
                    t(table["old"].as_str().unwrap_or_default()),
                    t(table["new"].as_str().unwrap_or_default()),
                    table["rows"],
                    table["columns"],
                    table["days"]
                ));
            }
        }
        for r in &self.rejections {
            md.push_str(&format!(
                "- Rejected by {} at {} (chain #{}) on parity {}: {}\n",
                who(&r.actor),
                r.at,
                r.seq,
                r.parity_hash,
                t(&r.reason)
            ));
        }
        for g in &self.gate_closed {
            md.push_str(&format!(
                "- Gate closed again at {} (chain #{}): parity read {}, not {}{}\n",
                g.at,
                g.seq,
                g.now,
                g.signed_on,
                match g.failures.is_empty() {
                    true => String::new(),
                    false => format!("; {}", t(&g.failures.join("; "))),
                }
            ));
        }
        for r in &self.rollbacks {
            md.push_str(&format!(
                "- Wave rolled back by {} at {} (chain #{}): {}; {}{}\n",
                who(&r.actor),
                r.at,
                r.seq,
                t(&r.reason),
                match r.repoints.is_empty() {
                    true => "no repoint stood applied".to_string(),
                    false => format!(
                        "put back {} ({})",
                        t(&r.repoints.join(", ")),
                        t(&r.files.join(", "))
                    ),
                },
                match &r.withdrawn_sign_off {
                    Some(hash) =>
                        format!("; the sign-off on parity {hash} withdrawn, the gate closed"),
                    None => "; the gate closed".to_string(),
                }
            ));
        }
        for r in &self.repoints {
            md.push_str(&format!(
                "\n## Repoint {} of {} (`{}`, hash {})\n\n",
                t(&r.proposal),
                t(&r.reader),
                t(&r.file),
                r.content_hash
            ));
            md.push_str(&format!(
                "Proposed at {}; the file {}. Rollback: the file put back as it was.\n",
                r.proposed_at,
                if r.applied {
                    "stands repointed"
                } else {
                    "is not repointed"
                }
            ));
            for d in &r.decisions {
                md.push_str(&format!(
                    "- {} by {} at {} (chain #{}){}\n",
                    d.verdict.replace('_', " "),
                    who(&d.actor),
                    d.at,
                    d.seq,
                    match d.reason.is_empty() {
                        true => String::new(),
                        false => format!(": {}", t(&d.reason)),
                    }
                ));
            }
        }
        md.push_str(&format!(
            "\nChain records #{} to #{} (head {}).\n",
            self.chain.first_seq, self.chain.last_seq, self.chain.head_hash
        ));
        md
    }
}
