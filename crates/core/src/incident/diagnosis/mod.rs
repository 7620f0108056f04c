//! Diagnosis: join the evidence around a breach into one cause, with the evidence
//! listed under it. Pure: the engine gathers the facts, the rules decide what they mean.
//!
//! One rule per cause, each in its own file: a function from the facts to a diagnosis
//! when the facts fit it. The rules are tried from the most specific to the least; the
//! first that matches wins, and the fallback says exactly what breached.

mod duplicate_load;
pub mod failed_run;
mod fallback;
mod figure;
mod lookback_gap;
mod null_spike;
mod partial_load;
mod refill;
mod schema_break;
mod stalled_writer;
mod upstream;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::detect::SchemaChange;
use crate::monitor::thousands;
pub use figure::{amount, breach_headline, when, Figure};
pub use lookback_gap::{gap_days, reach_needed};

/// What the engine found around a breach.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub table: String,
    /// The breach being diagnosed, as measured.
    pub breach: Figure,
    /// The latest current figure of each of the table's other checks (never a stale one).
    pub others: Vec<Figure>,
    /// volume: each day of the table's latest volume check that is short, oldest first.
    /// The check's headline names one day; a stall leaves several short.
    pub short_days: Vec<Figure>,
    /// The upstream table the monitor names as its source, if any.
    pub source_table: Option<String>,
    /// Schema changes seen on the upstream table, with when they were seen.
    pub source_changes: Vec<(Timestamp, SchemaChange)>,
    /// Schema changes seen on the breached table itself.
    pub table_changes: Vec<(Timestamp, SchemaChange)>,
    /// The upstream table's latest row count.
    pub source_rows: Option<Figure>,
    /// This table's recent row counts, oldest first: (when, rows).
    pub recent_counts: Vec<(Timestamp, f64)>,
    /// The systems the team's notes say write this table.
    pub writers: Vec<WriterFact>,
    /// An open incident on a table upstream of this one (by lineage).
    pub upstream_incident: Option<UpstreamIncident>,
    /// Uses of a changed column in downstream models that break on its new type.
    pub broken_uses: Vec<BrokenUse>,
    /// The breached table is an incremental dbt model whose runs reach back a known
    /// window: the window, and what its parents loaded on the same days.
    pub incremental: Option<IncrementalFacts>,
    /// Warehouse evidence asked for and not answered yet, by what it is: the cause is
    /// re-stated once it comes.
    pub pending: Vec<String>,
    /// Warehouse evidence that could not be had: (what it was, "pg: why not").
    pub unavailable: Vec<(String, String)>,
}

impl Facts {
    /// What a diagnosis rests on, in kind: which checks breach, on which days, and
    /// whether a day was still going. A cause is re-stated when these change, not each
    /// time its figures move within them.
    pub fn grounds(&self) -> Vec<String> {
        let mut grounds: Vec<String> = std::iter::once(&self.breach)
            .chain(&self.others)
            .chain(&self.short_days)
            .filter(|f| f.verdict.is_breach())
            .map(|f| {
                format!(
                    "{}{}{}{}",
                    f.check.as_str(),
                    f.column
                        .as_deref()
                        .map(|c| format!("({c})"))
                        .unwrap_or_default(),
                    f.day
                        .as_deref()
                        .map(|d| format!(" {d}"))
                        .unwrap_or_default(),
                    if f.partial { " so far" } else { "" }
                )
            })
            .collect();
        // Evidence that came, or failed to, is new ground for the cause.
        grounds.extend(self.pending.iter().map(|p| format!("pending {p}")));
        // Why not is left out: a timeout and the server's own cancel are one ground.
        grounds.extend(
            self.unavailable
                .iter()
                .map(|(what, _)| format!("unavailable {what}")),
        );
        grounds.sort();
        grounds.dedup();
        grounds
    }
}

/// An incremental model and how far back its runs reach, for the lookback rule.
#[derive(Debug, Clone, PartialEq)]
pub struct IncrementalFacts {
    pub model: String,
    /// The model's file, where its config or filter can be changed.
    pub file: Option<String>,
    pub window: crate::lineage::Window,
    /// The nearest upstream tables with a volume check, and how each day looked there.
    pub parents: Vec<ParentDay>,
    /// What an upstream table holds on the short day that the model has not got.
    pub missing: Option<MissingRows>,
}

/// Rows an upstream table holds on a day that a model is missing, by the model's key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MissingRows {
    pub from: String,
    pub day: String,
    /// The model's key column, and how many of its values are missing.
    pub key: (String, u64),
    /// Other id columns both tables hold, and across how many of their values the
    /// missing rows fall.
    pub across: Vec<(String, u64)>,
}

impl MissingRows {
    /// "62 payment_id values".
    pub fn keys(&self) -> String {
        format!("{} {} values", thousands(self.key.1 as f64), self.key.0)
    }

    /// ", across 45 customer_id values", or nothing without other id columns.
    pub fn across(&self) -> String {
        if self.across.is_empty() {
            return String::new();
        }
        let across: Vec<String> = self
            .across
            .iter()
            .map(|(column, n)| format!("{} {column} values", thousands(*n as f64)))
            .collect();
        format!(", across {}", across.join(" and "))
    }
}

/// One day of an upstream table's volume, as its latest check judged it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParentDay {
    pub table: String,
    pub day: String,
    pub rows: f64,
    /// Within the usual band for that weekday.
    pub ok: bool,
    pub share: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriterFact {
    pub name: String,
    pub owner: Option<String>,
    /// The writer's setting for changes the warehouse cannot apply in place, and its value.
    pub setting: Option<(String, String)>,
    /// The other tables the notes say it writes, each with its latest freshness figure
    /// (None: no freshness check watches it), so a stall of one table is not called a
    /// stall of the whole writer while the others keep loading.
    pub also_writes: Vec<(String, Option<Figure>)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamIncident {
    pub id: String,
    pub table: String,
    pub cause: String,
}

/// A model's use of a changed column that fails on the new type, for people.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokenUse {
    pub model: String,
    pub expression: String,
    /// Why it breaks: the dialect's rule, or how many values would not convert.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnChange {
    pub table: String,
    pub column: String,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A type change made the loader re-create the table, and it is refilling.
    RefillAfterTypeChange,
    /// A column changed type in place and downstream models read it in ways that break.
    SchemaBreak,
    /// The table's writer stopped: no loads for longer than its cadence.
    StalledWriter,
    /// Fewer rows than usual landed, with no schema change to explain it.
    PartialLoad,
    /// About a whole extra copy of a load landed.
    DuplicateLoad,
    /// A column's null rate rose in the rows loaded lately.
    NullSpike,
    /// An open incident on a table upstream explains this breach.
    Upstream,
    /// Upstream is complete for a day the model is still short of, and the model's
    /// runs reach back too few days for any scheduled run to rebuild it.
    LookbackGap,
    /// The numbers moved and nothing seen explains it yet.
    Unexplained,
    /// A job's run failed and no open incident explains it: its error, joined with what
    /// dataward knows (`failed_run.rs`).
    FailedRun,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub kind: CauseKind,
    /// The cause in one short sentence, for titles: what the incident list shows.
    #[serde(default)]
    pub headline: String,
    pub cause: String,
    pub evidence: Vec<String>,
    pub column_change: Option<ColumnChange>,
    /// A column of the table that was removed while models still read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_column: Option<String>,
}

impl Diagnosis {
    /// A cause that changed no column.
    pub fn of(kind: CauseKind, cause: String, evidence: Vec<String>) -> Diagnosis {
        Diagnosis {
            kind,
            headline: String::new(),
            cause,
            evidence,
            column_change: None,
            removed_column: None,
        }
    }
}

impl CauseKind {
    /// The order the rules are tried in: lower is more specific.
    fn rank(self) -> usize {
        match self {
            CauseKind::Upstream => 0,
            CauseKind::LookbackGap => 1,
            CauseKind::RefillAfterTypeChange => 2,
            CauseKind::SchemaBreak => 3,
            CauseKind::StalledWriter => 4,
            CauseKind::DuplicateLoad => 5,
            CauseKind::NullSpike => 6,
            CauseKind::PartialLoad => 7,
            CauseKind::Unexplained => 8,
            // Opened by a run, never by a breach: no breach's diagnosis replaces it.
            CauseKind::FailedRun => 0,
        }
    }

    /// Does a diagnosis of this kind explain more than one of `other`?
    pub fn more_specific_than(self, other: CauseKind) -> bool {
        self.rank() < other.rank()
    }
}

type Rule = fn(&Facts) -> Option<Diagnosis>;

/// Most specific first.
const RULES: &[Rule] = &[
    upstream::diagnose,
    lookback_gap::diagnose,
    refill::diagnose,
    schema_break::diagnose,
    stalled_writer::diagnose,
    duplicate_load::diagnose,
    null_spike::diagnose,
    partial_load::diagnose,
];

pub fn diagnose(facts: &Facts) -> Diagnosis {
    let mut diagnosis = RULES
        .iter()
        .find_map(|rule| rule(facts))
        .unwrap_or_else(|| fallback::diagnose(facts));
    diagnosis.headline = headline(facts, &diagnosis);
    for (what, why) in &facts.unavailable {
        diagnosis
            .evidence
            .push(format!("evidence unavailable: {why} ({what})"));
    }
    diagnosis
}

/// The cause in one short sentence, the same for every rule of a kind: the title an
/// incident is listed under.
fn headline(facts: &Facts, diagnosis: &Diagnosis) -> String {
    let table = &facts.table;
    let breach = &facts.breach;
    let change = diagnosis.column_change.as_ref();
    match (diagnosis.kind, change) {
        (CauseKind::Upstream, _) => match &facts.upstream_incident {
            Some(root) => format!(
                "{table} is affected by {} on {} upstream",
                root.id, root.table
            ),
            None => breach.headline(),
        },
        (CauseKind::LookbackGap, _) => match (&facts.incremental, &breach.day) {
            (Some(model), Some(day)) => format!(
                "{} is short on {day}, further back than its runs reach",
                model.model
            ),
            _ => breach.headline(),
        },
        (CauseKind::RefillAfterTypeChange, Some(c)) => format!(
            "{table} is refilling after {} changed type from {} to {}",
            c.column, c.from, c.to
        ),
        (CauseKind::SchemaBreak, Some(c)) => format!(
            "{table}.{} changed type from {} to {}, which breaks models that read it",
            c.column, c.from, c.to
        ),
        (CauseKind::SchemaBreak, None) => match &diagnosis.removed_column {
            Some(column) => format!("{table}.{column} was removed while models still read it"),
            None => breach.headline(),
        },
        (CauseKind::StalledWriter, _) => std::iter::once(breach)
            .chain(&facts.others)
            .find(|f| f.check == crate::config::CheckKind::Freshness)
            .unwrap_or(breach)
            .headline(),
        (CauseKind::DuplicateLoad, _) => format!("{}: a load landed twice", breach.headline()),
        _ => {
            // The changes this breach saw: the ones recorded when it was measured.
            let changes: Vec<SchemaChange> = facts
                .table_changes
                .iter()
                .filter(|(at, _)| *at == breach.at)
                .map(|(_, change)| change.clone())
                .collect();
            breach_headline(breach, &changes)
        }
    }
}

/// The latest type change of a column in a list of schema changes: (when, column, from, to).
fn type_change(
    changes: &[(Timestamp, SchemaChange)],
) -> Option<(Timestamp, String, String, String)> {
    changes.iter().rev().find_map(|(at, change)| match change {
        SchemaChange::TypeChanged { column, from, to } => {
            Some((*at, column.clone(), from.clone(), to.clone()))
        }
        _ => None,
    })
}

/// The evidence line for each of the table's other breaching figures.
fn other_breaches(facts: &Facts) -> Vec<String> {
    facts
        .others
        .iter()
        .filter(|f| f.verdict.is_breach())
        .map(Figure::sentence)
        .collect()
}

/// "the payments loader (owner platform-owner)", for every writer the notes name.
fn writers_text(facts: &Facts) -> Option<String> {
    if facts.writers.is_empty() {
        return None;
    }
    Some(
        facts
            .writers
            .iter()
            .map(|w| match &w.owner {
                Some(owner) => format!("{} (owner {owner})", w.name),
                None => w.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

#[cfg(test)]
pub(crate) mod test_facts {
    use super::*;
    use crate::config::CheckKind;
    use crate::detect::{Range, VerdictKind};

    pub fn figure(check: CheckKind, value: f64, verdict: VerdictKind, baseline: f64) -> Figure {
        Figure {
            table: "raw.payments".into(),
            check,
            column: None,
            value,
            verdict,
            expected: Some(Range {
                low: baseline * 0.8,
                high: baseline * 1.2,
                baseline,
            }),
            at: "2026-11-24T14:10:00Z".parse().unwrap(),
            day: None,
            partial: false,
            since: None,
            writer: None,
        }
    }

    pub fn facts(breach: Figure) -> Facts {
        Facts {
            table: "raw.payments".into(),
            breach,
            ..Facts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_facts::*;
    use super::*;
    use crate::config::CheckKind;
    use crate::detect::VerdictKind;

    #[test]
    fn every_cause_has_a_headline_in_a_sentence_with_no_expected_value() {
        let mut schema = facts(figure(CheckKind::Schema, 4.0, VerdictKind::Changed, 4.0));
        schema.breach.expected = None;
        schema.table_changes = vec![(
            "2026-11-24T14:05:00Z".parse().unwrap(),
            SchemaChange::TypeChanged {
                column: "zip_code".into(),
                from: "INTEGER".into(),
                to: "VARCHAR".into(),
            },
        )];
        schema.broken_uses = vec![BrokenUse {
            model: "stg_payments".into(),
            expression: "zip_code + 0".into(),
            reason: "no + for text".into(),
        }];
        let mut short = figure(CheckKind::Volume, 1_214.0, VerdictKind::Low, 3_105.0);
        short.day = Some("2026-11-23".into());
        let late = figure(CheckKind::Freshness, 86_400.0, VerdictKind::Late, 300.0);
        let mut added = facts(figure(CheckKind::Schema, 5.0, VerdictKind::Changed, 4.0));
        added.table_changes = vec![(
            added.breach.at,
            SchemaChange::Added {
                column: "note".into(),
                data_type: "TEXT".into(),
            },
        )];
        let headlines: Vec<String> = [schema, facts(short), facts(late), added]
            .iter()
            .map(|f| diagnose(f).headline)
            .collect();
        assert_eq!(
            headlines,
            [
                "raw.payments.zip_code changed type from INTEGER to VARCHAR, which breaks models that read it",
                "rows loaded into raw.payments on 2026-11-23 fell to 1,214 rows",
                "raw.payments has not loaded for 1d00h",
                "raw.payments.note was added (TEXT)",
            ]
        );
    }
}
