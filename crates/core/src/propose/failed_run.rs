//! What a failed run's incident proposes: a diff of the failing dbt model where its
//! cause is a column it reads that was removed or renamed upstream, then a rerun of the
//! model through the scheduled job that runs it, to approve once the cause is fixed.
//!
//! The rerun is a [`ProposalKind::Backfill`] of the model's tables with the exact dbt
//! command: the same mechanism (copies taken just before it runs as its undo, the run
//! followed at the scheduler) as any rebuild dataward proposes.

use super::*;
use crate::incident::diagnosis::failed_run::ColumnCause;
use crate::incident::failed_run::FailedRun;

pub struct RunContext<'a> {
    pub incident: &'a str,
    pub run: &'a FailedRun,
    pub cause: Option<&'a ColumnCause>,
    pub lineage: &'a Lineage,
    /// The dbt model that failed, when the run is one.
    pub model: Option<NodeIndex>,
    /// The scheduled job (a notes reader of kind job) that runs the model.
    pub job: Option<&'a str>,
    pub file_allowed: &'a dyn Fn(&str) -> bool,
}

pub fn propose(ctx: &RunContext) -> Vec<Proposal> {
    let drafts: Vec<Draft> = diff(ctx).into_iter().chain(rerun(ctx)).collect();
    finish(ctx.incident, drafts)
}

fn diff(ctx: &RunContext) -> Option<Draft> {
    let node = ctx.lineage.node(ctx.model?);
    let (Some(file), Some(raw)) = (&node.file, &node.raw_sql) else {
        return None;
    };
    if !(ctx.file_allowed)(file) {
        return None;
    }
    let (new, title) = match ctx.cause? {
        ColumnCause::Removed {
            table,
            column,
            data_type,
        } => (
            keep_column(raw, column, &format!("cast(null as {data_type})"), None)?,
            format!(
                "Keep {column} in {} as an empty {data_type} while {table} no longer has it",
                node.name
            ),
        ),
        ColumnCause::Renamed { table, column, to } => (
            keep_column(raw, column, to, Some(to))?,
            format!("Read {table}.{to} (formerly {column}) in {}", node.name),
        ),
        // A type change is what the schema-break diffs answer (`rewrite::fix_uses`).
        ColumnCause::Retyped { .. } => return None,
    };
    (new != *raw).then(|| Draft {
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
        verify: format!("{} builds again", node.name),
    })
}

fn rerun(ctx: &RunContext) -> Option<Draft> {
    let node = ctx.lineage.node(ctx.model?);
    let job = ctx.job?;
    let command = format!("dbt run --select {}", node.name);
    let tables = ctx.run.outputs.clone();
    Some(Draft {
        kind: ProposalKind::Backfill,
        title: format!(
            "Rerun {} through {job} once its cause is fixed: `{command}`",
            node.name
        ),
        owner: owner_of(&node.owner),
        target: node.unique_id.clone(),
        body: ProposalBody::Backfill {
            job: job.to_string(),
            command,
            tables: tables.clone(),
        },
        undo: format!(
            "restore {} from the copies taken just before it runs",
            tables.join(", ")
        ),
        verify: format!(
            "the run succeeds and the checks on {} hold",
            tables.join(", ")
        ),
    })
}

/// The model keeps `column` as it was named: each place it is selected becomes
/// `expression as column`. Anywhere else it is read (a filter, a join) becomes
/// `elsewhere`, or, with nothing to read instead, there is no diff: dataward will not
/// guess what a filter on a column that is gone should mean.
fn keep_column(
    sql: &str,
    column: &str,
    expression: &str,
    elsewhere: Option<&str>,
) -> Option<String> {
    let uses = uses_of(sql, column);
    if uses.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 32);
    let mut last = 0;
    for (range, qualifier, selected) in uses {
        out.push_str(&sql[last..range.start]);
        // A column read instead keeps the table it is read from; an expression
        // (`cast(null as ...)`) takes none.
        let qualifier = if elsewhere.is_some() {
            qualifier
        } else {
            String::new()
        };
        let instead = match (selected, elsewhere) {
            (true, _) => format!("{qualifier}{expression} as {column}"),
            (false, Some(name)) => format!("{qualifier}{name}"),
            (false, None) => return None,
        };
        out.push_str(&instead);
        last = range.end;
    }
    out.push_str(&sql[last..]);
    Some(out)
}

/// Each whole-word use of `column` outside quotes and Jinja: its span (with any
/// `alias.` before it), that qualifier, and whether it is a plain item of a select list
/// (after `select` or `,`, before `,`, `from` or the end).
fn uses_of(sql: &str, column: &str) -> Vec<(std::ops::Range<usize>, String, bool)> {
    let bytes = sql.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut uses = Vec::new();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == b'\'' || c == b'"' {
            quote = Some(c);
            i += 1;
            continue;
        }
        if sql[i..].starts_with("{{") || sql[i..].starts_with("{%") {
            i = sql[i..].find(['}']).map_or(bytes.len(), |end| i + end + 1);
            continue;
        }
        let end = i + column.len();
        let at_word = (i == 0 || !word(bytes[i - 1]))
            && end <= bytes.len()
            && sql[i..end].eq_ignore_ascii_case(column)
            && (end == bytes.len() || !word(bytes[end]));
        if !at_word {
            i += 1;
            continue;
        }
        let mut start = i;
        if start > 0 && bytes[start - 1] == b'.' {
            start -= 1;
            while start > 0 && word(bytes[start - 1]) {
                start -= 1;
            }
        }
        let qualifier = sql[start..i].to_string();
        let before = sql[..start].trim_end();
        let after = sql[end..].trim_start();
        let lower_before = before.to_ascii_lowercase();
        let lower_after = after.to_ascii_lowercase();
        let item_starts = before.ends_with(',')
            || lower_before.ends_with("select")
                && lower_before[..lower_before.len() - 6]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric());
        let item_ends = after.is_empty()
            || after.starts_with(',')
            || lower_after.starts_with("from")
                && lower_after[4..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        uses.push((start..end, qualifier, item_starts && item_ends));
        i = end;
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "{{ config(materialized='table') }}\nselect id, customer_id, amount from {{ source('raw', 'orders') }}\n";

    #[test]
    fn a_removed_column_is_kept_as_an_empty_one_of_its_type() {
        assert_eq!(
            keep_column(MODEL, "amount", "cast(null as numeric)", None).unwrap(),
            "{{ config(materialized='table') }}\nselect id, customer_id, cast(null as numeric) as amount from {{ source('raw', 'orders') }}\n"
        );
    }

    #[test]
    fn a_renamed_column_is_read_by_its_new_name_everywhere() {
        let sql = "select o.id, o.amount\nfrom orders o\nwhere o.amount > 0";
        assert_eq!(
            keep_column(sql, "amount", "amount_total", Some("amount_total")).unwrap(),
            "select o.id, o.amount_total as amount\nfrom orders o\nwhere o.amount_total > 0"
        );
    }

    #[test]
    fn a_removed_column_read_in_a_filter_gets_no_guess() {
        let sql = "select id, amount from orders where amount > 0";
        assert_eq!(
            keep_column(sql, "amount", "cast(null as numeric)", None),
            None
        );
        // Nor does a model that never names it, or names it only in a string.
        assert_eq!(
            keep_column("select 'amount' as x, amounts from t", "amount", "0", None),
            None
        );
    }
}
