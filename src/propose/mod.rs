//! Proposals: what dataward suggests doing about an incident, each with its undo and its
//! verification plan, bound to a hash of its exact content. Generated from the diagnosis
//! and the blast radius by rules; nothing here runs anything.

pub mod rewrite;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::engine::api::{ProposalBody, ProposalKind, ProposalState, ProposalView};
use crate::incident::diagnosis::{CauseKind, Diagnosis};
use crate::lineage::{BlastRadius, Lineage, NodeKind};
use petgraph::graph::NodeIndex;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub id: String,
    pub incident: String,
    pub kind: ProposalKind,
    pub title: String,
    /// The role that decides (for a note: who receives it).
    pub owner: String,
    /// The job, model or system it changes: decides the policy domain.
    pub target: String,
    pub body: ProposalBody,
    pub undo: String,
    pub verify: String,
    pub content_hash: String,
    pub state: ProposalState,
}

impl Proposal {
    pub fn view(&self) -> ProposalView {
        ProposalView {
            id: self.id.clone(),
            kind: self.kind,
            title: self.title.clone(),
            owner: self.owner.clone(),
            content_hash: self.content_hash.clone(),
            state: self.state,
            undo: self.undo.clone(),
            verify: self.verify.clone(),
            deciders: vec![self.owner.clone()],
            body: self.body.clone(),
        }
    }
}

/// The hash an approval is bound to: every field a person reads before deciding.
pub fn content_hash(p: &Proposal) -> String {
    let content = json!({
        "kind": p.kind, "title": p.title, "owner": p.owner, "target": p.target,
        "body": p.body, "undo": p.undo, "verify": p.verify,
    });
    let digest = Sha256::digest(content.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the rules need to know about the incident.
pub struct Context<'a> {
    pub incident: &'a str,
    pub table: &'a str,
    pub opened_at: &'a str,
    pub observed_share: Option<f64>,
    pub diagnosis: &'a Diagnosis,
    pub lineage: &'a Lineage,
    pub from: NodeIndex,
    pub blast: &'a BlastRadius,
    /// The latest run time of each job, from the scheduler.
    pub job_last_run: &'a dyn Fn(&str) -> Option<String>,
    /// May a diff change this project file? (It must resolve inside the project.)
    pub file_allowed: &'a dyn Fn(&str) -> bool,
}

/// A proposal before it is numbered and hashed.
struct Draft {
    kind: ProposalKind,
    title: String,
    owner: String,
    target: String,
    body: ProposalBody,
    undo: String,
    verify: String,
}

pub fn propose(ctx: &Context) -> Vec<Proposal> {
    let mut proposals: Vec<Draft> = Vec::new();
    let refill = ctx.diagnosis.kind == CauseKind::RefillAfterTypeChange;
    if refill {
        for impact in ctx.blast.nodes.iter().filter(|n| n.kind == NodeKind::Job) {
            let owner = impact
                .owner
                .clone()
                .unwrap_or_else(|| "unknown-owner".to_string());
            proposals.push(Draft {
                kind: ProposalKind::Hold,
                title: format!("Pause the {} until {} is refilled", impact.name, ctx.table),
                owner,
                target: impact.unique_id.clone(),
                body: ProposalBody::Hold {
                    job: impact.unique_id.clone(),
                    plan: format!(
                        "Pause the {name} schedule now, so no model is rebuilt from a half-loaded {table}. \
                         When the {table} row count is back within its baseline, run the job once on the full table. \
                         Resume the schedule when verification passes.",
                        name = impact.name,
                        table = ctx.table
                    ),
                },
                undo: format!("resume the {} schedule", impact.name),
                verify: format!(
                    "{} row count back within baseline; one run of the {} succeeds after the refill; checks hold for the settle window",
                    ctx.table, impact.name
                ),
            });
        }
    }
    if let Some(change) = &ctx.diagnosis.column_change {
        for impact in &ctx.blast.nodes {
            let Some(finding) = &impact.column else {
                continue;
            };
            let risky: Vec<&str> = finding
                .casts
                .iter()
                .filter(|c| c.break_risk)
                .map(|c| c.expression.as_str())
                .collect();
            if risky.is_empty() {
                continue;
            }
            let Ok(index) = ctx.lineage.resolve(&impact.unique_id) else {
                continue;
            };
            let node = ctx.lineage.node(index);
            let (Some(file), Some(raw)) = (&node.file, &node.raw_sql) else {
                continue;
            };
            if !(ctx.file_allowed)(file) {
                continue;
            }
            let new = rewrite::keep_as_text(raw, &risky, &change.to);
            if new == *raw {
                continue;
            }
            proposals.push(Draft {
                kind: ProposalKind::Diff,
                title: format!(
                    "Keep {} as text in {}: compare on {} instead of casting",
                    change.column, impact.name, change.to
                ),
                owner: impact
                    .owner
                    .clone()
                    .unwrap_or_else(|| "unknown-owner".to_string()),
                target: impact.unique_id.clone(),
                body: ProposalBody::Diff {
                    file: file.clone(),
                    old: raw.clone(),
                    new,
                },
                undo: format!("revert {file} to the version above"),
                verify: format!(
                    "{} runs on today's data, including {} values the old cast would have refused",
                    impact.name, change.column
                ),
            });
        }
        for writer in ctx.lineage.writers_of(ctx.from) {
            let (Some(setting), Some(value)) = (&writer.setting, &writer.value) else {
                continue;
            };
            let owner = writer
                .owner
                .clone()
                .unwrap_or_else(|| "unknown-owner".to_string());
            let name = writer.name.clone().unwrap_or_else(|| writer.id.clone());
            proposals.push(Draft {
                kind: ProposalKind::Note,
                title: format!("Note for {owner}: {setting} on the {name}"),
                owner: owner.clone(),
                target: writer.id.clone(),
                body: ProposalBody::Note {
                    to: owner,
                    text: setting_note(ctx, &name, setting, value, change),
                },
                undo: "nothing to undo: a note changes nothing".to_string(),
                verify: "the owner answers; any setting change is theirs to make".to_string(),
            });
        }
    }
    proposals
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let mut p = Proposal {
                id: format!("{}-P{}", ctx.incident, i + 1),
                incident: ctx.incident.to_string(),
                kind: d.kind,
                title: d.title,
                owner: d.owner,
                target: d.target,
                body: d.body,
                undo: d.undo,
                verify: d.verify,
                content_hash: String::new(),
                state: ProposalState::Pending,
            };
            p.content_hash = content_hash(&p);
            p
        })
        .collect()
}

/// What each option of the loader's incompatible-change setting would have meant for
/// this incident, in its own figures.
fn setting_note(
    ctx: &Context,
    writer: &str,
    setting: &str,
    value: &str,
    change: &crate::incident::diagnosis::ColumnChange,
) -> String {
    let table = ctx.table;
    let share = ctx
        .observed_share
        .map(|s| format!("{s}%"))
        .unwrap_or_else(|| "part".into());
    let job_runs: Vec<String> = ctx
        .blast
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Job)
        .filter_map(|n| {
            (ctx.job_last_run)(&n.unique_id).map(|at| format!("the {} last ran at {at}", n.name))
        })
        .collect();
    let job_runs = if job_runs.is_empty() {
        "no scheduled job has read it yet".to_string()
    } else {
        job_runs.join(", ")
    };
    let downstream = ctx.blast.nodes.len();
    format!(
        "{table} was dropped and re-created when {column} changed from {from} to {to}, because the {writer} \
         has {setting} = {value}. What each option would have meant today:\n\
         \n\
         - backfill (current): the table was refilled from scratch; it held {share} of its rows at {opened} \
         while every task stayed green ({job_runs}). Nothing was lost, but anything built from it \
         in that window ({downstream} downstream nodes) saw a partial table.\n\
         - disableBinding: only this binding stops. {table} keeps its rows and its {from} column; new orders \
         stop landing until someone re-binds it. Readers see stale but complete data, and a freshness alarm fires instead of a drop.\n\
         - disableTask: the whole capture stops. Every table this {writer} feeds goes stale, not only {table}.\n\
         - abort: the change is refused and the task fails at once. The owner is paged before anything \
         downstream moves, and the migration waits for a hand-made schema change.\n\
         \n\
         Suggestion: for tables read by scheduled jobs, disableBinding (or abort) with an alert turns a silent \
         mid-way refill into a planned one.",
        column = change.column,
        from = change.from,
        to = change.to,
        opened = ctx.opened_at,
    )
}
