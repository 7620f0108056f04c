//! Proposals: what dataward suggests doing about an incident, each with its undo and its
//! verification plan, bound to a hash of its exact content. Generated from the diagnosis
//! and the blast radius by rules; nothing here runs anything.

pub mod rewrite;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::engine::api::{ProposalBody, ProposalKind, ProposalState, ProposalView};
use crate::incident::diagnosis::{CauseKind, Diagnosis, Facts};
use crate::lineage::{BlastRadius, Lineage, NodeKind};
use crate::lineage::{OptionEffect, Writer};
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
    /// What the diagnosis was made from: the breach with its figures, the writers.
    pub facts: &'a Facts,
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
    let mut proposals: Vec<Draft> = holds(ctx);
    proposals.extend(diffs(ctx));
    proposals.extend(backfill(ctx));
    proposals.extend(lookback_diff(ctx));
    proposals.extend(notes(ctx));
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

fn owner_of(owner: &Option<String>) -> String {
    owner.clone().unwrap_or_else(|| "unknown-owner".to_string())
}

/// What the table is like while the incident lasts, for a hold's plan: "a half-loaded
/// raw.payments". None when nothing in the table is wrong (the cause is elsewhere).
fn damaged(ctx: &Context) -> Option<String> {
    let table = ctx.table;
    Some(match ctx.diagnosis.kind {
        CauseKind::RefillAfterTypeChange => format!("a half-loaded {table}"),
        CauseKind::PartialLoad => format!("a {table} that is missing rows"),
        CauseKind::StalledWriter => format!("a {table} that stopped loading"),
        CauseKind::DuplicateLoad => format!("a {table} holding a load twice"),
        CauseKind::NullSpike => format!("a {table} whose new rows lost their values"),
        CauseKind::SchemaBreak => format!("a {table} its models cannot read"),
        // A lookback gap: the runs are right to run; what is missing needs a backfill.
        CauseKind::Upstream | CauseKind::LookbackGap | CauseKind::Unexplained => return None,
    })
}

/// When a hold's job may run again, in the incident's own checks.
fn recovery(ctx: &Context) -> String {
    let breach = &ctx.facts.breach;
    match ctx.diagnosis.kind {
        CauseKind::RefillAfterTypeChange => {
            format!("the {} row count is back at its baseline", ctx.table)
        }
        CauseKind::SchemaBreak => match &ctx.diagnosis.column_change {
            Some(c) => format!("the models that read {}.{} run on it", ctx.table, c.column),
            None => format!("the models that read {} run on it", ctx.table),
        },
        CauseKind::StalledWriter => format!("{} loads again within its cadence", ctx.table),
        _ => format!("the {} is back within its usual range", breach.subject()),
    }
}

/// Pause each scheduled job that reads the table (the notes' job readers), so nothing
/// is built from it while it is wrong. The undo resumes only what the hold paused.
fn holds(ctx: &Context) -> Vec<Draft> {
    let Some(damaged) = damaged(ctx) else {
        return Vec::new();
    };
    let recovery = recovery(ctx);
    ctx.blast
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Job)
        .map(|job| Draft {
            kind: ProposalKind::Hold,
            title: if ctx.diagnosis.kind == CauseKind::RefillAfterTypeChange {
                format!("Pause the {} until {} is refilled", job.name, ctx.table)
            } else {
                format!("Pause the {} until {} recovers", job.name, ctx.table)
            },
            owner: owner_of(&job.owner),
            target: job.unique_id.clone(),
            body: ProposalBody::Hold {
                job: job.unique_id.clone(),
                plan: format!(
                    "Pause the {name} schedule now, so no model is rebuilt from {damaged}. \
                     When {recovery}, run the job once. \
                     Resume the schedule when verification passes.",
                    name = job.name,
                ),
            },
            undo: format!(
                "resume the {} schedule (only if this hold paused it)",
                job.name
            ),
            verify: format!(
                "{recovery}; one run of the {} succeeds after that; checks hold for the settle window",
                job.name
            ),
        })
        .collect()
}

/// A dbt diff for every model whose SQL the column change breaks.
fn diffs(ctx: &Context) -> Vec<Draft> {
    let Some(change) = &ctx.diagnosis.column_change else {
        return Vec::new();
    };
    let mut drafts = Vec::new();
    for impact in &ctx.blast.nodes {
        let Some(finding) = &impact.column else {
            continue;
        };
        if !ctx.blast.sees_column(&impact.unique_id) {
            continue;
        }
        let risky: Vec<&crate::lineage::UseFinding> = finding
            .uses
            .iter()
            .filter(|u| u.risk != crate::lineage::Risk::Safe)
            .collect();
        if risky.is_empty() {
            continue;
        }
        let Ok(index) = ctx.lineage.resolve(&impact.unique_id) else {
            continue;
        };
        let expressions: Vec<String> = risky
            .iter()
            .map(|u| format!("`{}`", u.expression))
            .collect();
        drafts.extend(model_diff(
            ctx,
            ctx.lineage.node(index),
            |raw| {
                Some(rewrite::fix_uses(
                    raw,
                    &risky,
                    &change.to,
                    ctx.lineage.dialect(),
                ))
            },
            format!(
                "Read {} as {} in {}: {}",
                change.column,
                change.to,
                impact.name,
                expressions.join(", ")
            ),
            format!(
                "{} runs on today's data, including {} values that are not {}",
                impact.name, change.column, change.from
            ),
        ));
    }
    drafts
}

/// A lookback gap: rebuild the missing day of the model and everything built from it,
/// through the scheduled job that runs the model, with the exact dbt command. Its undo
/// is the tables as they were just before it ran.
fn backfill(ctx: &Context) -> Option<Draft> {
    if ctx.diagnosis.kind != CauseKind::LookbackGap {
        return None;
    }
    let batches = ctx.facts.batches.as_ref()?;
    let day = ctx.facts.breach.day.as_deref()?;
    let end = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")
        .ok()?
        .succ_opt()?;
    let job = ctx.blast.nodes.iter().find(|n| n.kind == NodeKind::Job)?;
    let node = ctx.lineage.node(ctx.from);
    let mut tables: Vec<String> = std::iter::once(node)
        .chain(
            ctx.blast
                .nodes
                .iter()
                .filter(|n| n.kind == NodeKind::Model)
                .filter_map(|n| Some(ctx.lineage.node(ctx.lineage.resolve(&n.unique_id).ok()?))),
        )
        .filter(|n| n.materialized.as_deref() != Some("view"))
        .filter_map(|n| n.relation_name.as_deref().map(schema_and_table))
        .collect();
    tables.dedup();
    let command = format!(
        "dbt build --select {}+ --event-time-start {day} --event-time-end {end}",
        batches.model
    );
    Some(Draft {
        kind: ProposalKind::Backfill,
        title: format!("Backfill {} for {day}: `{command}`", batches.model),
        owner: owner_of(&node.owner),
        target: node.unique_id.clone(),
        body: ProposalBody::Backfill {
            job: job.unique_id.clone(),
            command,
            tables: tables.clone(),
        },
        undo: format!(
            "restore {} from the copies taken just before it runs",
            tables.join(", ")
        ),
        verify: format!(
            "{}'s daily volumes for the last seven days match upstream within the band",
            batches.model
        ),
    })
}

/// `"dw"."analytics"."fct"` -> `analytics.fct`: how monitors and the warehouse name it.
fn schema_and_table(relation: &str) -> String {
    let parts: Vec<String> = relation
        .split('.')
        .map(|p| p.trim_matches(|c| c == '"' || c == '`').to_string())
        .collect();
    parts[parts.len().saturating_sub(2)..].join(".")
}

/// A lookback gap: a diff of the model's config raising `lookback` so the next daily run
/// reaches back to the missing day. Only where the model's own file sets it.
fn lookback_diff(ctx: &Context) -> Option<Draft> {
    if ctx.diagnosis.kind != CauseKind::LookbackGap {
        return None;
    }
    let batches = ctx.facts.batches.as_ref()?;
    let breach = &ctx.facts.breach;
    let day = breach.day.as_deref()?;
    // The next daily run is a day later than now: it must reach one batch further.
    let needed = crate::incident::diagnosis::lookback_needed(day, &breach.at)? + 1;
    model_diff(
        ctx,
        ctx.lineage.node(ctx.from),
        |raw| rewrite::set_config_number(raw, "lookback", needed),
        format!(
            "Raise {}'s lookback from {} to {needed}: the next run rebuilds {day}",
            batches.model, batches.lookback
        ),
        format!(
            "{} runs; its daily volumes for the last seven days match upstream within the band",
            batches.model
        ),
    )
}

/// A diff of a model's own file, inside the project, when `change` makes one (None, or
/// the SQL unchanged: no clear change, no diff). Undone by reverting the file.
fn model_diff(
    ctx: &Context,
    node: &crate::lineage::Node,
    change: impl FnOnce(&str) -> Option<String>,
    title: String,
    verify: String,
) -> Option<Draft> {
    let (Some(file), Some(raw)) = (&node.file, &node.raw_sql) else {
        return None;
    };
    if !(ctx.file_allowed)(file) {
        return None;
    }
    let new = change(raw).filter(|new| new != raw)?;
    Some(Draft {
        kind: ProposalKind::Diff,
        title,
        owner: owner_of(&node.owner),
        target: node.unique_id.clone(),
        body: ProposalBody::Diff {
            file: file.clone(),
            old: raw.clone(),
            new,
        },
        undo: format!("revert {file} to the version above"),
        verify,
    })
}

/// A note for the owner of each writer of the table: on a column change, its setting
/// with what each of its options would have meant for this incident; on a stall, that
/// it stalled.
fn notes(ctx: &Context) -> Vec<Draft> {
    let writers = ctx.lineage.writers_of(ctx.from);
    let mut drafts = Vec::new();
    for writer in writers {
        let owner = owner_of(&writer.owner);
        let name = writer.name.clone().unwrap_or_else(|| writer.id.clone());
        let (title, text) = match (ctx.diagnosis.kind, &ctx.diagnosis.column_change) {
            (CauseKind::StalledWriter, _) => (
                format!("Note for {owner}: the {name} has stalled"),
                format!(
                    "{}\n\n{} downstream nodes read {} and see it as it was when the writer stopped.",
                    ctx.diagnosis.cause,
                    ctx.blast.nodes.len(),
                    ctx.table
                ),
            ),
            (_, Some(change)) => {
                let (Some(setting), Some(value)) = (&writer.setting, &writer.value) else {
                    continue;
                };
                (
                    format!("Note for {owner}: {setting} on the {name}"),
                    setting_note(ctx, writer, &name, setting, value, change),
                )
            }
            _ => continue,
        };
        drafts.push(Draft {
            kind: ProposalKind::Note,
            title,
            owner: owner.clone(),
            target: writer.id.clone(),
            body: ProposalBody::Note { to: owner, text },
            undo: "nothing to undo: a note changes nothing".to_string(),
            verify: "the owner answers; any setting change is theirs to make".to_string(),
        });
    }
    drafts
}

/// What each option of the writer's setting would have meant for this incident, in its
/// own figures. The options are the ones the notes list; none is assumed.
fn setting_note(
    ctx: &Context,
    writer: &Writer,
    name: &str,
    setting: &str,
    value: &str,
    change: &crate::incident::diagnosis::ColumnChange,
) -> String {
    let table = ctx.table;
    let (column, from, to) = (&change.column, &change.from, &change.to);
    let happened = match ctx.diagnosis.kind {
        CauseKind::RefillAfterTypeChange => {
            format!("{table} was dropped and re-created when {column} changed from {from} to {to}")
        }
        _ => format!("{table}.{column} changed from {from} to {to}"),
    };
    let mut text = format!("{happened}, with the {name}'s {setting} = {value}.");
    if writer.options.is_empty() {
        text.push_str(&format!(
            "\n\nThe notes list no other values for {setting}: add [[writer.option]] entries to {}'s writer entry to see what each would have meant.",
            name
        ));
        return text;
    }
    text.push_str(" What each option would have meant for this incident:\n");
    let breach = &ctx.facts.breach;
    let share = breach
        .share()
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
    let others: Vec<&str> = writer
        .writes
        .iter()
        .map(String::as_str)
        .filter(|t| !t.eq_ignore_ascii_case(table))
        .collect();
    // The table's direct readers whose SQL the new type breaks whatever the data.
    let broken: Vec<String> = ctx
        .blast
        .nodes
        .iter()
        .filter(|n| ctx.blast.sees_column(&n.unique_id))
        .filter(|n| {
            n.column
                .as_ref()
                .is_some_and(|c| c.uses.iter().any(|u| u.risk.is_breaks()))
        })
        .map(|n| n.name.clone())
        .collect();
    for option in &writer.options {
        let current = if option.value == value {
            " (current)"
        } else {
            ""
        };
        let meant = match option.effect {
            OptionEffect::Recreate => format!(
                "{table} is dropped, re-created and loaded again: it held {share} of its usual rows at {} while every task stayed green ({job_runs}); anything built from it meanwhile ({downstream} downstream nodes) saw a partial table.",
                crate::incident::diagnosis::when(&breach.at)
            ),
            OptionEffect::PauseTable => format!(
                "only {table} stops loading: it keeps its rows and its {from} column, new rows stop landing until someone resumes it; readers see complete but stale data, and the freshness check alarms instead of a drop."
            ),
            OptionEffect::PauseWriter => format!(
                "the whole {name} stops: {}.",
                if others.is_empty() {
                    format!("{table} goes stale")
                } else {
                    format!("{table} and every other table it writes ({}) go stale", others.join(", "))
                }
            ),
            OptionEffect::Fail => format!(
                "the change is refused and the {name} fails at once: its owner is paged before anything downstream moves, and the change waits for a planned migration."
            ),
            OptionEffect::ApplyInPlace => format!(
                "{column} changes to {to} in place and no rows are dropped; {}.",
                if broken.is_empty() {
                    "no model was found that breaks on it".to_string()
                } else {
                    format!("{} break on their next run", broken.join(", "))
                }
            ),
        };
        text.push_str(&format!("\n- {}{current}: {meant}", option.value));
        if let Some(note) = &option.note {
            text.push_str(&format!(" ({note})"));
        }
    }
    let has_jobs = ctx.blast.nodes.iter().any(|n| n.kind == NodeKind::Job);
    let loud: Vec<&str> = writer
        .options
        .iter()
        .filter(|o| matches!(o.effect, OptionEffect::PauseTable | OptionEffect::Fail))
        .map(|o| o.value.as_str())
        .collect();
    if has_jobs && !loud.is_empty() && !loud.contains(&value) {
        text.push_str(&format!(
            "\n\nSuggestion: scheduled jobs read {table}; {} with an alert turns a silent refill into a planned one.",
            loud.join(" or ")
        ));
    }
    text
}
