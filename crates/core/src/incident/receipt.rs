//! Receipts: what happened in an incident, read back from the chain records that prove
//! it, so a receipt can never say more than the chain holds.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::chain::Record;
use crate::clock::Timestamp;
use crate::config::CheckKind;
use crate::incident::diagnosis::amount;
use crate::sanitize::{fenced_block, for_terminal, for_terminal_block, Sanitize, Sanitized};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Receipt {
    pub incident: String,
    pub table: String,
    pub monitor: String,
    pub opened_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub observed: Value,
    pub expected: Value,
    /// The check that opened it, for the unit of `observed` and `expected`. Not in the
    /// JSON: it is read from the same chain record, and receipts saved before it still
    /// match.
    #[serde(skip)]
    pub check: Option<CheckKind>,
    pub cause: String,
    pub evidence: Vec<String>,
    pub blast_radius: BlastSummary,
    pub proposals: Vec<ProposalEntry>,
    pub runs: Vec<Value>,
    pub verification: Vec<Value>,
    pub undo: Vec<Value>,
    pub chain: ChainRange,
    /// Closed by the owner rather than by a passing verification: who, and why. Left
    /// out of the JSON otherwise, so receipts made before it existed still match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by_hand: Option<ClosedByHand>,
    /// Its checks came back and held with no proposal carried out. Left out when false,
    /// like `closed_by_hand`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered_without_intervention: bool,
    /// Breaches downstream that joined it, as the chain recorded them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symptoms: Vec<Value>,
    /// Closed as a symptom of this incident, whose root cause was found after it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
    /// Backfills queued: the command, the run, the copies taken and the undo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backfills: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClosedByHand {
    /// The actor as recorded: attested uid and account, and what was only claimed.
    pub by: Value,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlastSummary {
    pub nodes: usize,
    pub by_kind: std::collections::BTreeMap<String, usize>,
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
    pub at: Timestamp,
    pub reason: String,
    /// The actor as recorded: attested uid and account, and what was only claimed.
    pub actor: Value,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainRange {
    pub first_seq: u64,
    pub last_seq: u64,
    pub head_hash: String,
}

/// A field as people read it: a string as it is, a number (a run id an earlier
/// dataward stored) in digits, anything else nothing.
/// Who acted, as receipts show a chain record's actor: their name (control characters
/// escaped) and uid.
pub(crate) fn actor_line(actor: &Value) -> String {
    format!(
        "{} (uid {})",
        for_terminal(actor["user"].as_str().unwrap_or("unknown")),
        actor["uid"]
    )
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
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
        opened_at: opened.at,
        resolved_at: None,
        observed: open_payload["observed"].clone(),
        expected: open_payload["expected"].clone(),
        check: serde_json::from_value(open_payload["check"].clone()).ok(),
        cause: String::new(),
        evidence: Vec::new(),
        blast_radius: BlastSummary {
            nodes: 0,
            by_kind: Default::default(),
            names: Vec::new(),
        },
        proposals: Vec::new(),
        runs: Vec::new(),
        verification: Vec::new(),
        undo: Vec::new(),
        chain: ChainRange {
            first_seq: opened.seq,
            last_seq: opened.seq,
            head_hash: opened.hash.clone(),
        },
        closed_by_hand: None,
        recovered_without_intervention: false,
        symptoms: Vec::new(),
        merged_into: None,
        backfills: Vec::new(),
    };
    for (record, payload) in &mine {
        // The receipt record names the receipt; it is not part of what the receipt says.
        if record.kind == "receipt" {
            continue;
        }
        receipt.chain.last_seq = record.seq;
        receipt.chain.head_hash = record.hash.clone();
        match record.kind.as_str() {
            "diagnosis" => {
                receipt.cause = text(payload, "cause");
                receipt.evidence =
                    serde_json::from_value(payload["evidence"].clone()).unwrap_or_default();
            }
            "blast_radius" => {
                let nodes = payload["nodes"].as_array().cloned().unwrap_or_default();
                let mut by_kind = std::collections::BTreeMap::new();
                for n in &nodes {
                    *by_kind.entry(text(n, "kind")).or_insert(0) += 1;
                }
                receipt.blast_radius = BlastSummary {
                    nodes: nodes.len(),
                    by_kind,
                    names: nodes.iter().map(|n| text(n, "name")).collect(),
                };
            }
            "proposal" => {
                let entry = ProposalEntry {
                    proposal: text(payload, "proposal"),
                    kind: text(payload, "kind"),
                    title: text(payload, "title"),
                    owner: text(payload, "owner"),
                    content_hash: text(payload, "content_hash"),
                    undo: text(payload, "undo"),
                    decisions: Vec::new(),
                };
                // Proposed again (a changed policy gave it another owner): the latest
                // content is what was decided, after the decisions made before.
                match receipt
                    .proposals
                    .iter_mut()
                    .find(|p| p.proposal == entry.proposal)
                {
                    Some(p) => {
                        let decisions = std::mem::take(&mut p.decisions);
                        *p = ProposalEntry { decisions, ..entry };
                    }
                    None => receipt.proposals.push(entry),
                }
            }
            // A withdrawal is the engine's last word on a request nobody answered.
            "decision" | "withdrawn" => {
                let id = text(payload, "proposal");
                if let Some(p) = receipt.proposals.iter_mut().find(|p| p.proposal == id) {
                    let (verdict, reason) = match record.kind.as_str() {
                        "withdrawn" => ("withdrawn".to_string(), text(payload, "why")),
                        _ => (text(payload, "verdict"), text(payload, "reason")),
                    };
                    p.decisions.push(DecisionEntry {
                        verdict,
                        at: record.at,
                        reason,
                        actor: serde_json::from_str(&record.actor).unwrap_or(Value::Null),
                        seq: record.seq,
                    });
                }
            }
            "run" => receipt.runs.push(with_seq(payload, record)),
            "verification" => receipt.verification.push(with_seq(payload, record)),
            "undo" => receipt.undo.push(with_seq(payload, record)),
            "incident_resolved" => {
                receipt.resolved_at = Some(record.at);
                receipt.recovered_without_intervention =
                    payload["how"] == "recovered_without_intervention";
                receipt.merged_into = (payload["how"] == "merged").then(|| text(payload, "into"));
                if payload["how"] == "by_hand" {
                    receipt.closed_by_hand = Some(ClosedByHand {
                        by: serde_json::from_str(&record.actor).unwrap_or(Value::Null),
                        reason: text(payload, "reason"),
                    });
                }
            }
            "symptom" => receipt.symptoms.push(with_seq(payload, record)),
            "backfill_queued" => receipt.backfills.push(with_seq(payload, record)),
            "incident_reopened" => {
                receipt.resolved_at = None;
                receipt.closed_by_hand = None;
                receipt.recovered_without_intervention = false;
                receipt.merged_into = None;
            }
            _ => {}
        }
    }
    Ok(receipt)
}

/// The hash the chain records for a receipt: SHA-256 of its canonical JSON (sorted
/// keys, no spaces), so anyone can recompute it from the JSON alone.
pub fn digest(receipt: &Receipt) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::to_value(receipt)
        .expect("receipts serialize")
        .to_string();
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The receipt of `id` from the chain, whatever it names: an access request
/// (`ACC-n`), a migration wave (`MIG-...`) or an incident. As JSON, and as markdown.
pub fn build_any(records: &[Record], id: &str) -> Result<(Value, String)> {
    use super::{access_receipt, migration_receipt};
    if access_receipt::is_access_request(id) {
        let built = access_receipt::build(records, id)?;
        return Ok((serde_json::to_value(&built)?, built.to_markdown()));
    }
    if migration_receipt::is_wave(id) {
        let built = migration_receipt::build(records, id)?;
        return Ok((serde_json::to_value(&built)?, built.to_markdown()));
    }
    let built = build(records, id)?;
    Ok((serde_json::to_value(&built)?, built.to_markdown()))
}

/// Checks a saved JSON receipt (an incident's, an access request's or a migration
/// wave's) against the chain: rebuilt from the records it covers, it must be
/// identical, and an incident's digest must be the one the chain recorded when the
/// incident closed. Returns what differs, or None when the receipt stands.
pub fn check_saved(records: &[Record], saved: &Value) -> Result<Option<String>> {
    let id = ["incident", "request", "wave"]
        .iter()
        .find_map(|key| saved[key].as_str())
        .context("the receipt names no \"incident\", \"request\" or \"wave\"")?;
    let last_seq = saved["chain"]["last_seq"]
        .as_u64()
        .context("the receipt has no chain.last_seq")?;
    let covered: Vec<Record> = records
        .iter()
        .filter(|r| r.seq <= last_seq)
        .cloned()
        .collect();
    let (rebuilt_value, _) = build_any(&covered, id)?;
    if &rebuilt_value != saved {
        let field = rebuilt_value
            .as_object()
            .into_iter()
            .flatten()
            .find(|(k, v)| saved.get(k.as_str()) != Some(v))
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| "an extra field".to_string());
        return Ok(Some(format!(
            "the receipt differs from what the chain records in `{field}`"
        )));
    }
    if saved.get("incident").is_none() {
        return Ok(None);
    }
    let rebuilt = build(&covered, id)?;
    let incident = id;
    let recorded = records.iter().find_map(|r| {
        let p: Value = serde_json::from_str(&r.payload).ok()?;
        (r.kind == "receipt" && p["incident"] == incident)
            .then(|| p["receipt_hash"].as_str().map(str::to_string))?
    });
    if let Some(recorded) = recorded {
        if recorded != digest(&rebuilt) {
            return Ok(Some(format!(
                "the chain recorded receipt digest {recorded}, but the records it covers give {}",
                digest(&rebuilt)
            )));
        }
    }
    Ok(None)
}

fn with_seq(payload: &Value, record: &Record) -> Value {
    let mut v = payload.clone();
    v["seq"] = record.seq.into();
    v["at"] = record.at.to_string().into();
    v
}

/// Every field, destructured without `..`: see [`Sanitize`].
impl Sanitize for Receipt {
    fn sanitize(&mut self) {
        let Receipt {
            incident,
            table,
            monitor,
            // Times: nobody's text.
            opened_at: _,
            resolved_at: _,
            observed,
            expected,
            check: _,
            cause,
            evidence,
            blast_radius:
                BlastSummary {
                    nodes: _,
                    by_kind,
                    names,
                },
            proposals,
            runs,
            verification,
            undo,
            chain:
                ChainRange {
                    first_seq: _,
                    last_seq: _,
                    head_hash,
                },
            closed_by_hand,
            recovered_without_intervention: _,
            symptoms,
            merged_into,
            backfills,
        } = self;
        if let Some(ClosedByHand { by, reason }) = closed_by_hand {
            by.sanitize();
            keep_lines(reason);
        }
        for text in [incident, table, monitor, cause, head_hash] {
            text.sanitize();
        }
        for value in [observed, expected] {
            value.sanitize();
        }
        // Run output keeps its lines (shown in a fenced block); every other field is one line.
        for run in runs {
            sanitize_keeping_lines(run, &["detail"]);
        }
        for v in verification {
            let mut checks = v["checks"].take();
            v.sanitize();
            for check in checks.as_array_mut().into_iter().flatten() {
                sanitize_keeping_lines(check, &["detail"]);
            }
            v["checks"] = checks;
        }
        for list in [undo, symptoms, backfills] {
            list.sanitize();
        }
        merged_into.sanitize();
        evidence.sanitize();
        by_kind.sanitize();
        names.sanitize();
        for ProposalEntry {
            proposal,
            kind,
            title,
            owner,
            content_hash,
            undo,
            decisions,
        } in proposals
        {
            for text in [proposal, kind, title, owner, content_hash, undo] {
                text.sanitize();
            }
            for DecisionEntry {
                verdict,
                at: _,
                reason,
                actor,
                seq: _,
            } in decisions
            {
                verdict.sanitize();
                keep_lines(reason);
                actor.sanitize();
            }
        }
    }
}

/// Text a person wrote or a run printed, cleaned for a fenced block: its lines kept.
fn keep_lines(text: &mut String) {
    if let std::borrow::Cow::Owned(clean) = for_terminal_block(text) {
        *text = clean;
    }
}

/// A record's payload cleaned as single lines, but for the text fields named, which keep
/// their lines.
fn sanitize_keeping_lines(payload: &mut Value, multiline: &[&str]) {
    let kept: Vec<(&str, String)> = multiline
        .iter()
        .filter_map(|key| Some((*key, payload.get(*key)?.as_str()?.to_string())))
        .collect();
    payload.sanitize();
    for (key, mut text) in kept {
        keep_lines(&mut text);
        payload[key] = Value::String(text);
    }
}

/// Text after a label: inline when it is one line, else a fenced block below the line
/// (indented to sit in the list item), so run output reads as it was printed.
fn after_label(text: &str, indent: &str) -> String {
    if text.contains('\n') {
        format!("\n{}", fenced_block(text, indent).trim_end_matches('\n'))
    } else if text.is_empty() {
        String::new()
    } else {
        format!(" {text}")
    }
}

/// "86,863" from the chain as people read it, in its check's unit: "1d00h since the
/// last load", "1,214 rows".
fn observed_text(r: &Receipt) -> String {
    match (r.observed.as_f64(), r.check) {
        (Some(v), Some(CheckKind::Freshness)) => {
            format!("{} since the last load", amount(CheckKind::Freshness, v))
        }
        (Some(v), Some(check)) => amount(check, v),
        (Some(v), None) => crate::monitor::thousands(v),
        (None, _) => r.observed.to_string(),
    }
}

/// The expected band as the chain recorded it ("2,484..3,726"), with its unit where the
/// words left it out: only counts of rows are written bare.
fn expected_text(r: &Receipt) -> String {
    let text = r.expected.as_str().unwrap_or_default();
    let bare_range = text.split_once("..").is_some_and(|(low, high)| {
        [low, high]
            .iter()
            .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == ','))
    });
    match r.check {
        Some(CheckKind::RowCount | CheckKind::Volume) if bare_range => format!("{text} rows"),
        _ => text.to_string(),
    }
}

impl Receipt {
    /// The receipt for a person: every string from the chain shown with its control
    /// characters and bidi overrides as visible escapes.
    pub fn to_markdown(&self) -> String {
        markdown(&Sanitized::new(self.clone()))
    }
}

fn markdown(receipt: &Sanitized<Receipt>) -> String {
    let r: &Receipt = receipt;
    let mut md = format!("# Receipt for {}\n\n", r.incident);
    if r.resolved_at.is_none() {
        md.push_str(&format!(
            "**Open**: {} is not resolved; this is what the chain holds so far (up to chain #{}).\n\n",
            r.incident, r.chain.last_seq
        ));
    }
    md.push_str(&format!(
        "- Table: `{}` (monitor `{}`)\n- Opened: {}\n- Resolved: {}\n- Observed: {} (expected {})\n\n",
        r.table,
        r.monitor,
        r.opened_at,
        r.resolved_at
            .map_or("not yet".to_string(), |at| at.to_string()),
        observed_text(r),
        expected_text(r)
    ));
    if let Some(closed) = &r.closed_by_hand {
        md.push_str(&format!(
            "Closed by hand by {} (uid {}):{}\n\n",
            closed.by["user"].as_str().unwrap_or("unknown"),
            closed.by["uid"],
            after_label(&closed.reason, "")
        ));
    }
    if let Some(root) = &r.merged_into {
        md.push_str(&format!(
            "Merged into {root}: a symptom of that incident's root cause, found after this opened.\n\n"
        ));
    }
    if r.recovered_without_intervention {
        md.push_str(
            "Recovered without intervention: its checks came back within range and held for the settle window; no proposal was carried out.\n\n",
        );
    }
    md.push_str(&format!("## Cause\n\n{}\n\n", r.cause));
    for e in &r.evidence {
        md.push_str(&format!("- {e}\n"));
    }
    if !r.symptoms.is_empty() {
        md.push_str("\n## Symptoms\n\n");
        for s in &r.symptoms {
            md.push_str(&format!(
                "- {} {} {}: {} (chain #{})\n",
                text(s, "at"),
                text(s, "table"),
                text(s, "check"),
                text(s, "observed"),
                s["seq"]
            ));
        }
    }
    md.push_str(&format!(
        "\n## Blast radius\n\n{} nodes ({}): {}\n\n## Proposals and decisions\n\n",
        r.blast_radius.nodes,
        r.blast_radius
            .by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        r.blast_radius.names.join(", ")
    ));
    for p in &r.proposals {
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
                match d.reason.as_str() {
                    "" => String::new(),
                    reason if reason.contains('\n') => format!(":{}", after_label(reason, "    ")),
                    reason => format!(": \"{reason}\""),
                }
            ));
        }
    }
    md.push_str("\n## Runs\n\n");
    for b in &r.backfills {
        let copies: Vec<String> = b["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                format!(
                    "{} as {} ({} rows)",
                    text(v, "table"),
                    text(v, "copy"),
                    v["rows"]
                )
            })
            .collect();
        md.push_str(&format!(
            "- {} backfill `{}` queued as run {} of {} (chain #{}); copies taken first: {}; undo: {}\n",
            text(b, "at"),
            text(b, "command"),
            text(b, "run"),
            text(b, "job"),
            b["seq"],
            copies.join(", "),
            text(b, "undo")
        ));
    }
    for r in &r.runs {
        let link = match text(r, "link") {
            link if link.is_empty() => String::new(),
            link => format!(" <{link}>"),
        };
        let detail = text(r, "detail");
        let (inline, block) = match detail.contains('\n') {
            true => (String::new(), after_label(&detail, "  ")),
            false => (after_label(&detail, ""), String::new()),
        };
        md.push_str(&format!(
            "- {} run {} of {}: {}{inline}{link} (chain #{}){block}\n",
            text(r, "at"),
            text(r, "run"),
            text(r, "job"),
            text(r, "status"),
            r["seq"]
        ));
    }
    md.push_str("\n## Verification\n\n");
    for v in &r.verification {
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
                "  - [{}] {}:{}\n",
                if c["passed"].as_bool() == Some(true) {
                    "x"
                } else {
                    " "
                },
                text(c, "name"),
                after_label(&text(c, "detail"), "    ")
            ));
        }
    }
    md.push_str("\n## Undo\n\n");
    if r.undo.is_empty() {
        md.push_str("- Nothing was rolled back; each change above names its undo.\n");
    }
    for u in &r.undo {
        md.push_str(&format!(
            "- {} {} (chain #{})\n",
            text(u, "at"),
            text(u, "action"),
            u["seq"]
        ));
    }
    md.push_str(&format!(
        "\n## Chain\n\nRecords #{} to #{}; last hash `{}`. Check with `dataward verify`.\n",
        r.chain.first_seq, r.chain.last_seq, r.chain.head_hash
    ));
    md
}

/// The attested identity first; claims are marked as claims.
fn actor_text(actor: &Value) -> String {
    if let Some(engine) = actor.get("engine").and_then(Value::as_str) {
        return engine.to_string();
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(records: &[(&str, Value)]) -> Vec<Record> {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("state.db")).unwrap();
        for (kind, payload) in records {
            crate::chain::append(
                &conn,
                "2026-11-24T03:10:00Z".parse().unwrap(),
                kind,
                "{}",
                payload,
            )
            .unwrap();
        }
        crate::chain::records(&conn).unwrap()
    }

    #[test]
    fn a_run_shows_the_orchestrators_own_id_and_link() {
        let records = chain(&[
            (
                "incident_opened",
                json!({"incident": "INC-0001", "table": "fct_orders", "monitor": "orders"}),
            ),
            (
                "run",
                json!({"incident": "INC-0001", "run": "dataward__INC-0001-run-1",
                       "job": "hourly_orders", "status": "success", "detail": "dag run success",
                       "link": "http://127.0.0.1:8080/dags/hourly_orders/runs/dataward__INC-0001-run-1"}),
            ),
            // A run an earlier dataward recorded by number, without a link.
            (
                "run",
                json!({"incident": "INC-0001", "run": 7, "job": "hourly_orders",
                       "status": "failed", "detail": "exit 1"}),
            ),
        ]);
        let markdown = build(&records, "INC-0001").unwrap().to_markdown();
        assert!(
            markdown.contains(
                "run dataward__INC-0001-run-1 of hourly_orders: success dag run success \
                 <http://127.0.0.1:8080/dags/hourly_orders/runs/dataward__INC-0001-run-1>"
            ),
            "{markdown}"
        );
        assert!(
            markdown.contains("run 7 of hourly_orders: failed exit 1 (chain"),
            "{markdown}"
        );
    }
    /// What a dbt run prints, with the kind of text a model or a hostile name can put in it.
    const RUN_OUTPUT: &str = "Running with dbt=1.8.7\n\
        1 of 2 START sql table model main.customers\t[RUN]\n\
        ```\n\
        2 of 2 ERROR creating sql table model main.orders\x1b[31m\u{202e}\r\n\
        Done. PASS=1 ERROR=1";

    #[test]
    fn run_output_keeps_its_lines_in_a_fence_nothing_in_it_can_close() {
        let records = chain(&[
            (
                "incident_opened",
                json!({"incident": "INC-0001", "table": "raw.orders", "monitor": "orders",
                       "check": "freshness", "observed": 86_863.0,
                       "expected": "within 1h30m"}),
            ),
            (
                "proposal",
                json!({"incident": "INC-0001", "proposal": "P-1", "kind": "hold",
                       "title": "pause the dbt job", "owner": "analytics",
                       "content_hash": "abc", "undo": "resume it"}),
            ),
            (
                "decision",
                json!({"incident": "INC-0001", "proposal": "P-1", "verdict": "approved",
                       "reason": "orders stopped at 02:10;\nthe loader's disk is full"}),
            ),
            (
                "run",
                json!({"incident": "INC-0001", "run": "r-1", "job": "jaffle_shop",
                       "status": "error", "detail": RUN_OUTPUT}),
            ),
            (
                "verification",
                json!({"incident": "INC-0001", "passed": false, "checks": [
                    {"name": "run r-1 of jaffle_shop after raw.orders recovered",
                     "passed": false, "detail": format!("error: {RUN_OUTPUT}")},
                    {"name": "raw.orders freshness", "passed": true,
                     "detail": "4m since the last load"}]}),
            ),
        ]);
        let receipt = build(&records, "INC-0001").unwrap();
        // Each chain has its own log id, so its hashes differ from run to run.
        let markdown = receipt
            .to_markdown()
            .replace(&receipt.chain.head_hash, "(head hash)");
        assert!(!markdown
            .chars()
            .any(|c| c != '\n' && c != '\t' && crate::sanitize::is_unsafe(c)));
        assert!(!markdown.contains("\\x0a"), "{markdown}");
        insta::assert_snapshot!(markdown);
    }

    #[test]
    fn every_figure_in_a_receipt_carries_its_unit() {
        for (check, observed, expected, line) in [
            (
                "freshness",
                86_863.0,
                "within 1h30m",
                "- Observed: 1d00h since the last load (expected within 1h30m)",
            ),
            (
                "row_count",
                1_214.0,
                "2,484..3,726",
                "- Observed: 1,214 rows (expected 2,484..3,726 rows)",
            ),
            (
                "volume",
                0.0,
                "learning",
                "- Observed: 0 rows (expected learning)",
            ),
            (
                "null_rate",
                0.5,
                "0.00%..2.00%",
                "- Observed: 50.0% (expected 0.00%..2.00%)",
            ),
        ] {
            let records = chain(&[(
                "incident_opened",
                json!({"incident": "INC-0001", "table": "raw.orders", "monitor": "orders",
                       "check": check, "observed": observed, "expected": expected}),
            )]);
            let markdown = build(&records, "INC-0001").unwrap().to_markdown();
            assert!(markdown.contains(line), "{line} in {markdown}");
        }
    }
}
