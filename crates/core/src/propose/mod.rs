//! Proposals: what dataward suggests doing about an incident, each with its undo and its
//! verification plan, bound to a hash of its exact content. Generated from the diagnosis
//! and the blast radius by rules; nothing here runs anything.

pub mod failed_run;
pub mod file_text;
pub mod rewrite;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::incident::diagnosis::{CauseKind, Diagnosis, Facts};
use crate::lineage::{BlastRadius, Lineage, NodeKind, Period, WindowSource};
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

/// What a proposal does. Stored and hashed with the same words the protocol sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// Pause a job schedule; undo resumes it.
    Hold,
    /// A dbt SQL change; undo reverts it.
    Diff,
    /// A note for the owner of another system; nothing runs.
    Note,
    /// Rebuild a range of a model's batches, or the whole model when nothing narrower
    /// can; undo restores the tables as they were.
    Backfill,
}

/// Where a proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    Pending,
    Approved,
    Rejected,
    Forwarded,
    RolledBack,
    /// Approved and its undo already applied because the incident closed (hold resumed).
    Completed,
    /// Nobody answered in time, up the whole escalation chain. Never granted.
    Expired,
    /// The incident closed before anyone decided; nothing was granted.
    Withdrawn,
}

/// The exact content a person approves: its serde form is part of the content hash, so
/// a field renamed here changes every hash (and unbinds every stored approval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProposalBody {
    Hold {
        job: String,
        plan: String,
    },
    Diff {
        file: String,
        old: String,
        new: String,
    },
    Note {
        to: String,
        text: String,
    },
    Backfill {
        /// The scheduled job that runs it.
        job: String,
        /// The exact command, as the owner approves it.
        command: String,
        /// The relations it rebuilds: each is copied just before it runs.
        tables: Vec<String>,
    },
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
    finish(ctx.incident, proposals)
}

/// Drafts numbered in order under the incident, each bound to its content's hash.
fn finish(incident: &str, drafts: Vec<Draft>) -> Vec<Proposal> {
    drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let mut p = Proposal {
                id: format!("{}-P{}", incident, i + 1),
                incident: incident.to_string(),
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

/// Proposals made for an incident that already has `after`: numbered on from there,
/// each bound anew to its content's hash.
pub fn numbered_after(
    after: usize,
    proposals: impl IntoIterator<Item = Proposal>,
) -> Vec<Proposal> {
    proposals
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.id = format!("{}-P{}", p.incident, after + i + 1);
            p.content_hash = content_hash(&p);
            p
        })
        .collect()
}

/// The role named on a proposal for a node with this owner.
pub(crate) fn owner_of(owner: &Option<String>) -> String {
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
        CauseKind::Upstream
        | CauseKind::LookbackGap
        | CauseKind::Unexplained
        | CauseKind::FailedRun => return None,
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
        _ => breach.back_within_range(),
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
///
/// A microbatch model rebuilds that day alone (`--event-time-start`/`--event-time-end`).
/// dbt has no such flags for any other incremental model, so the narrowest command that
/// rebuilds the day there is a full refresh, and the proposal says so.
fn backfill(ctx: &Context) -> Option<Draft> {
    if ctx.diagnosis.kind != CauseKind::LookbackGap {
        return None;
    }
    let model = ctx.facts.incremental.as_ref()?;
    // Every day beyond the runs' reach, as one range: a day between two short ones is
    // rebuilt as it is.
    let days = crate::incident::diagnosis::gap_days(ctx.facts);
    let (first, last) = (days.first()?, days.last()?);
    let end = chrono::NaiveDate::parse_from_str(last, "%Y-%m-%d")
        .ok()?
        .succ_opt()?;
    let day = if first == last {
        first.clone()
    } else {
        format!("{first} to {last}")
    };
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
    let name = &model.model;
    let copies = format!(
        "restore {} from the copies taken just before it runs",
        tables.join(", ")
    );
    let (command, title, undo) = match &model.window.source {
        WindowSource::Microbatch { .. } => {
            let command = format!(
                "dbt build --select {name}+ --event-time-start {first} --event-time-end {end}"
            );
            let title = format!("Backfill {name} for {day}: `{command}`");
            (command, title, copies)
        }
        WindowSource::Filter { .. } => {
            let command = format!("dbt build --select {name}+ --full-refresh");
            let title = format!(
                "Backfill {name} for {day} by a full refresh: `{command}`: {name} is incremental with a filter in its SQL, not microbatch, \
                 so dbt cannot rebuild one day of it; the whole table is rebuilt"
            );
            let undo = format!(
                "{copies} (a full refresh rebuilds them whole from what their upstream holds now, not only {day})"
            );
            (command, title, undo)
        }
    };
    Some(Draft {
        kind: ProposalKind::Backfill,
        title,
        owner: owner_of(&node.owner),
        target: node.unique_id.clone(),
        body: ProposalBody::Backfill {
            job: job.unique_id.clone(),
            command,
            tables: tables.clone(),
        },
        undo,
        verify: format!(
            "{name}'s daily volumes for the last seven days match upstream within the band"
        ),
    })
}

/// `"dw"."analytics"."fct"` -> `analytics.fct`: how monitors and the warehouse name it.
pub(crate) fn schema_and_table(relation: &str) -> String {
    let parts: Vec<String> = relation
        .split('.')
        .map(|p| p.trim_matches(|c| c == '"' || c == '`').to_string())
        .collect();
    parts[parts.len().saturating_sub(2)..].join(".")
}

/// A lookback gap: a diff of the model's file so the next daily run reaches back to the
/// missing day: microbatch's `lookback` raised in its config, or the number of days in
/// its incremental filter. Only where the model's own file sets it, in days: a filter
/// with no number (`> (select max(..) from {{ this }})`) gets none, since adding one
/// re-reads rows the model already holds and duplicates them unless it merges on a key.
/// Hourly batches get none either: how many hours the next run must reach depends on
/// when it runs.
fn lookback_diff(ctx: &Context) -> Option<Draft> {
    if ctx.diagnosis.kind != CauseKind::LookbackGap {
        return None;
    }
    let model = ctx.facts.incremental.as_ref()?;
    let window = &model.window;
    if window.period != Some(Period::Day) {
        return None;
    }
    let breach = &ctx.facts.breach;
    // The oldest day beyond reach: the others are nearer.
    let days = crate::incident::diagnosis::gap_days(ctx.facts);
    let day = days.first()?.as_str();
    // The next daily run is a day later than now: it must reach one batch further.
    let needed = crate::incident::diagnosis::reach_needed(day, breach.at, Period::Day)? + 1;
    let verify = format!(
        "{} runs; its daily volumes for the last seven days match upstream within the band",
        model.model
    );
    match &window.source {
        WindowSource::Microbatch { .. } => model_diff(
            ctx,
            ctx.lineage.node(ctx.from),
            |raw| rewrite::set_config_number(raw, "lookback", needed),
            format!(
                "Raise {}'s lookback from {} to {needed}: the next run rebuilds {day}",
                model.model, window.lookback
            ),
            verify,
        ),
        WindowSource::Filter { .. } => model_diff(
            ctx,
            ctx.lineage.node(ctx.from),
            |raw| rewrite::set_filter_days(raw, needed),
            format!(
                "Widen {}'s incremental filter from {} to {needed} days: the next run re-reads {day}",
                model.model, window.lookback
            ),
            verify,
        ),
    }
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
                crate::incident::diagnosis::when(breach.at)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CheckKind;
    use crate::detect::{Range, VerdictKind};
    use crate::incident::diagnosis::{self, Figure, IncrementalFacts, ParentDay};

    /// A source, two incremental models read from it (one with a filter in its SQL,
    /// one in daily batches) and a table built from the first; a job runs them all.
    fn lineage(filter: &str, batch_size: &str) -> Lineage {
        let model = |name: &str, config: &str, raw: &str, parent: &str| {
            format!(
                r#""model.shop.{name}": {{"resource_type": "model", "name": "{name}",
                   "relation_name": "\"dw\".\"analytics\".\"{name}\"",
                   "original_file_path": "models/{name}.sql", "config": {config},
                   "raw_code": {raw}, "depends_on": {{"nodes": ["{parent}"]}}}}"#,
                raw = serde_json::to_string(raw).unwrap()
            )
        };
        let filtered = model(
            "fct_filtered",
            r#"{"materialized": "incremental", "unique_key": "id", "meta": {"owner": "analytics-owner"}}"#,
            &format!(
                "select * from {{{{ source('raw', 'events') }}}}\n{{% if is_incremental() %}}\nwhere {filter}\n{{% endif %}}\n"
            ),
            "source.shop.raw.events",
        );
        let batched = model(
            "fct_batched",
            &format!(
                r#"{{"materialized": "incremental", "incremental_strategy": "microbatch", "event_time": "loaded_at",
                    "batch_size": "{batch_size}", "lookback": 1, "begin": "2026-01-01", "meta": {{"owner": "analytics-owner"}}}}"#
            ),
            &format!("{{{{ config(materialized='incremental', incremental_strategy='microbatch', lookback=1, batch_size='{batch_size}') }}}}\nselect * from {{{{ source('raw', 'events') }}}}\n"),
            "source.shop.raw.events",
        );
        let agg = model(
            "agg_filtered",
            r#"{"materialized": "table"}"#,
            "select count(*) from {{ ref('fct_filtered') }}",
            "model.shop.fct_filtered",
        );
        let manifest = format!(
            r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json", "adapter_type": "postgres"}},
               "nodes": {{{filtered}, {batched}, {agg}}},
               "sources": {{"source.shop.raw.events": {{"resource_type": "source", "name": "events",
                  "relation_name": "\"dw\".\"raw\".\"events\""}}}}}}"#
        );
        let notes = r#"
[[reader]]
id = "job.nightly_build"
kind = "job"
reads = ["model.shop.agg_filtered", "model.shop.fct_batched"]
owner = "analytics-owner"
"#;
        Lineage::from_json(&manifest, "manifest.json")
            .unwrap()
            .with_notes_str(notes, "notes.toml")
            .unwrap()
    }

    /// What is proposed when `model` is short on `day`, at 02:40 on 2026-11-30, while
    /// raw.events holds that day in full.
    fn proposed(lineage: &Lineage, model: &str, day: &str) -> Vec<Proposal> {
        proposed_with(lineage, model, day, &[])
    }

    /// As [`proposed`], with more short days of the model (`(day, upstream ok)`) in the
    /// same poll.
    fn proposed_with(
        lineage: &Lineage,
        model: &str,
        day: &str,
        more: &[(&str, bool)],
    ) -> Vec<Proposal> {
        let from = lineage.resolve(model).unwrap();
        let node = lineage.node(from);
        let table = format!("analytics.{model}");
        let facts = Facts {
            table: table.clone(),
            breach: Figure {
                table: table.clone(),
                check: CheckKind::Volume,
                value: 580.0,
                verdict: VerdictKind::Low,
                expected: Some(Range {
                    low: 800.0,
                    high: 1_200.0,
                    baseline: 1_000.0,
                }),
                at: "2026-11-30T02:40:00Z".parse().unwrap(),
                day: Some(day.into()),
                ..Figure::default()
            },
            incremental: Some(IncrementalFacts {
                model: node.name.clone(),
                file: node.file.clone(),
                window: node.window.clone().expect("a window"),
                parents: std::iter::once((day, true))
                    .chain(more.iter().copied())
                    .map(|(day, ok)| ParentDay {
                        table: "raw.events".into(),
                        day: day.into(),
                        rows: 1_010.0,
                        ok,
                        share: Some(101.0),
                    })
                    .collect(),
                missing: None,
            }),
            ..Facts::default()
        };
        let mut facts = facts;
        facts.short_days = more
            .iter()
            .map(|(day, _)| Figure {
                day: Some(day.to_string()),
                ..facts.breach.clone()
            })
            .collect();
        let diagnosis = diagnosis::diagnose(&facts);
        assert_eq!(diagnosis.kind, CauseKind::LookbackGap, "{diagnosis:?}");
        let blast = lineage.blast_radius(from, None);
        propose(&Context {
            incident: "INC-0001",
            table: &table,
            facts: &facts,
            diagnosis: &diagnosis,
            lineage,
            from,
            blast: &blast,
            job_last_run: &|_| None,
            file_allowed: &|_| true,
        })
    }

    fn of_kind(proposals: &[Proposal], kind: ProposalKind) -> Vec<&Proposal> {
        proposals.iter().filter(|p| p.kind == kind).collect()
    }

    const ONE_DAY_BACK: &str =
        "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'";

    #[test]
    fn a_filtered_models_backfill_is_a_full_refresh_and_says_why() {
        let lineage = lineage(ONE_DAY_BACK, "day");
        let proposals = proposed(&lineage, "fct_filtered", "2026-11-28");
        let backfill = of_kind(&proposals, ProposalKind::Backfill)[0];
        let ProposalBody::Backfill {
            job,
            command,
            tables,
        } = &backfill.body
        else {
            panic!("{backfill:?}");
        };
        assert_eq!(command, "dbt build --select fct_filtered+ --full-refresh");
        assert_eq!(job, "job.nightly_build");
        assert_eq!(
            tables,
            &vec![
                "analytics.fct_filtered".to_string(),
                "analytics.agg_filtered".to_string()
            ]
        );
        assert_eq!(
            backfill.title,
            "Backfill fct_filtered for 2026-11-28 by a full refresh: `dbt build --select fct_filtered+ --full-refresh`: \
             fct_filtered is incremental with a filter in its SQL, not microbatch, so dbt cannot rebuild one day of it; \
             the whole table is rebuilt"
        );
        assert_eq!(
            backfill.undo,
            "restore analytics.fct_filtered, analytics.agg_filtered from the copies taken just before it runs \
             (a full refresh rebuilds them whole from what their upstream holds now, not only 2026-11-28)"
        );
        assert_eq!(backfill.owner, "analytics-owner");
        assert_eq!(backfill.target, "model.shop.fct_filtered");
    }

    #[test]
    fn a_filtered_models_diff_widens_its_filter_to_reach_the_day() {
        let lineage = lineage(ONE_DAY_BACK, "day");
        let proposals = proposed(&lineage, "fct_filtered", "2026-11-28");
        let diffs = of_kind(&proposals, ProposalKind::Diff);
        assert_eq!(diffs.len(), 1, "{proposals:#?}");
        assert_eq!(
            diffs[0].title,
            "Widen fct_filtered's incremental filter from 1 to 3 days: the next run re-reads 2026-11-28"
        );
        let ProposalBody::Diff { file, old, new } = &diffs[0].body else {
            panic!("{:?}", diffs[0]);
        };
        assert_eq!(file, "models/fct_filtered.sql");
        assert_eq!(new, &old.replace("interval '1 day'", "interval '3 day'"));
    }

    #[test]
    fn a_filter_with_no_number_gets_a_full_refresh_and_no_diff() {
        let lineage = lineage("loaded_at > (select max(loaded_at) from {{ this }})", "day");
        let proposals = proposed(&lineage, "fct_filtered", "2026-11-29");
        assert!(of_kind(&proposals, ProposalKind::Diff).is_empty());
        let ProposalBody::Backfill { command, .. } =
            &of_kind(&proposals, ProposalKind::Backfill)[0].body
        else {
            panic!("{proposals:?}");
        };
        assert_eq!(command, "dbt build --select fct_filtered+ --full-refresh");
    }

    #[test]
    fn a_microbatch_models_backfill_rebuilds_the_day_alone() {
        let lineage = lineage(ONE_DAY_BACK, "day");
        let proposals = proposed(&lineage, "fct_batched", "2026-11-28");
        let backfill = of_kind(&proposals, ProposalKind::Backfill)[0];
        let command = "dbt build --select fct_batched+ --event-time-start 2026-11-28 --event-time-end 2026-11-29";
        let ProposalBody::Backfill { command: found, .. } = &backfill.body else {
            panic!("{backfill:?}");
        };
        assert_eq!(found, command);
        assert_eq!(
            backfill.title,
            format!("Backfill fct_batched for 2026-11-28: `{command}`")
        );
        assert_eq!(
            backfill.undo,
            "restore analytics.fct_batched from the copies taken just before it runs"
        );
        let diff = of_kind(&proposals, ProposalKind::Diff)[0];
        assert_eq!(
            diff.title,
            "Raise fct_batched's lookback from 1 to 3: the next run rebuilds 2026-11-28"
        );
    }

    #[test]
    fn every_short_day_beyond_reach_is_backfilled_as_one_range() {
        let lineage = lineage(ONE_DAY_BACK, "day");
        // Monday 02:40: Thursday and Saturday are beyond a lookback of 1 with upstream
        // whole; Friday's upstream is still short (not a gap yet); Sunday is in reach.
        let proposals = proposed_with(
            &lineage,
            "fct_batched",
            "2026-11-28",
            &[
                ("2026-11-26", true),
                ("2026-11-27", false),
                ("2026-11-29", true),
            ],
        );
        let backfill = of_kind(&proposals, ProposalKind::Backfill)[0];
        let command = "dbt build --select fct_batched+ --event-time-start 2026-11-26 --event-time-end 2026-11-29";
        let ProposalBody::Backfill { command: found, .. } = &backfill.body else {
            panic!("{backfill:?}");
        };
        assert_eq!(found, command);
        assert_eq!(
            backfill.title,
            format!("Backfill fct_batched for 2026-11-26 to 2026-11-28: `{command}`")
        );
        // The next run must reach the oldest of them.
        let diff = of_kind(&proposals, ProposalKind::Diff)[0];
        assert_eq!(
            diff.title,
            "Raise fct_batched's lookback from 1 to 5: the next run rebuilds 2026-11-26"
        );
    }

    #[test]
    fn hourly_batches_rebuild_the_days_hours_and_get_no_lookback_diff() {
        let lineage = lineage(ONE_DAY_BACK, "hour");
        let proposals = proposed(&lineage, "fct_batched", "2026-11-28");
        let ProposalBody::Backfill { command, .. } =
            &of_kind(&proposals, ProposalKind::Backfill)[0].body
        else {
            panic!("{proposals:?}");
        };
        assert_eq!(
            command,
            "dbt build --select fct_batched+ --event-time-start 2026-11-28 --event-time-end 2026-11-29"
        );
        assert!(of_kind(&proposals, ProposalKind::Diff).is_empty());
    }
}
