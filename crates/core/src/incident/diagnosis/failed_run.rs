//! A failed run's cause: its error joined with what dataward knows. A column the error
//! names that a recent schema snapshot of a table the job reads shows removed, renamed
//! or retyped; a path or a name it uses that the notes say moved; a table the job reads
//! whose writer stalled; else the error as it stands, saying what it could not be joined
//! with.
//!
//! Pure, like every rule: the engine gathers [`RunFacts`].

use super::*;
use crate::incident::failed_run::{named_in, FailedRun, Named};

/// What the engine knows around a failed run.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// The tables the job reads (by lineage), `schema.table`.
    pub reads: Vec<String>,
    /// Schema changes recent snapshots show on those tables: (table, when seen, change),
    /// oldest first.
    pub schema_changes: Vec<(String, Timestamp, SchemaChange)>,
    /// Tables the job reads whose writer stalled, each with what shows it.
    pub stalled: Vec<(String, String)>,
    /// What the notes say moved.
    pub moved: Vec<crate::lineage::Moved>,
}

/// The change a failed run's cause rests on, for the proposals that answer it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum ColumnCause {
    Removed {
        table: String,
        column: String,
        data_type: String,
    },
    Renamed {
        table: String,
        column: String,
        to: String,
    },
    Retyped {
        table: String,
        column: String,
        from: String,
        to: String,
    },
}

pub fn diagnose(run: &FailedRun, facts: &RunFacts) -> (Diagnosis, Option<ColumnCause>) {
    let failed = format!(
        "{} failed at {} ({}): {}",
        run.job,
        when(run.at),
        run.source.as_str(),
        if run.reason().is_empty() {
            "it gave no error"
        } else {
            run.reason()
        }
    );
    let named = named_in(&run.error);
    let mut evidence = vec![failed.clone()];
    if let Some((cause, seen, change)) = column_cause(&named, facts) {
        evidence.push(seen);
        evidence.extend(stalled_lines(facts));
        let headline = match &change {
            ColumnCause::Removed { table, column, .. } => {
                format!("{} fails: {table}.{column} was removed", run.job)
            }
            ColumnCause::Renamed { table, column, to } => {
                format!("{} fails: {table}.{column} was renamed to {to}", run.job)
            }
            ColumnCause::Retyped {
                table,
                column,
                from,
                to,
            } => format!(
                "{} fails: {table}.{column} changed type from {from} to {to}",
                run.job
            ),
        };
        let mut diagnosis = Diagnosis::of(CauseKind::FailedRun, cause, evidence);
        diagnosis.headline = headline;
        match &change {
            ColumnCause::Retyped {
                table,
                column,
                from,
                to,
            } => {
                diagnosis.column_change = Some(ColumnChange {
                    table: table.clone(),
                    column: column.clone(),
                    from: from.clone(),
                    to: to.clone(),
                })
            }
            ColumnCause::Removed { column, .. } | ColumnCause::Renamed { column, .. } => {
                diagnosis.removed_column = Some(column.clone())
            }
        }
        return (diagnosis, Some(change));
    }
    if let Some((used, moved)) = named.iter().find_map(|n| {
        let used = match n {
            Named::Path(p) | Named::Relation(p) => p,
            Named::Column(_) => return None,
        };
        Some((used, facts.moved.iter().find(|m| m.covers(used))?))
    }) {
        evidence.push(format!(
            "the notes say {} moved to {}{}",
            moved.from,
            moved.to,
            moved
                .note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ));
        evidence.extend(stalled_lines(facts));
        let mut diagnosis = Diagnosis::of(
            CauseKind::FailedRun,
            format!(
                "{} still uses {used}, but {} moved to {}",
                run.job, moved.from, moved.to
            ),
            evidence,
        );
        diagnosis.headline = format!("{} fails: {} moved to {}", run.job, moved.from, moved.to);
        return (diagnosis, None);
    }
    if let Some((table, seen)) = facts.stalled.first() {
        evidence.extend(stalled_lines(facts));
        let mut diagnosis = Diagnosis::of(
            CauseKind::FailedRun,
            format!("{failed}; it reads {table}, whose writer stalled: {seen}"),
            evidence,
        );
        diagnosis.headline = format!("{} fails: {table} stopped loading", run.job);
        return (diagnosis, None);
    }
    // Nothing known joins it: say what the error named and that no snapshot shows it.
    for name in &named {
        evidence.push(match name {
            Named::Column(c) => format!(
                "the error names column {c}; no recent schema snapshot of {} shows it changed",
                reads_text(facts)
            ),
            Named::Relation(r) => format!("the error names relation {r}"),
            Named::Path(p) => format!("the error names path {p}"),
        });
    }
    let mut diagnosis = Diagnosis::of(CauseKind::FailedRun, failed, evidence);
    diagnosis.headline = format!("{} failed: {}", run.job, first_words(run.reason()));
    (diagnosis, None)
}

/// The latest schema change of a table the job reads on a column the error names.
fn column_cause(named: &[Named], facts: &RunFacts) -> Option<(String, String, ColumnCause)> {
    let columns: Vec<&str> = named
        .iter()
        .filter_map(|n| match n {
            Named::Column(c) => Some(bare(c)),
            _ => None,
        })
        .collect();
    for (table, at, change) in facts.schema_changes.iter().rev() {
        let same = |c: &str| columns.iter().any(|n| n.eq_ignore_ascii_case(c));
        let seen = |what: String| format!("schema snapshot of {table} at {}: {what}", when(*at));
        match change {
            SchemaChange::Removed { column, data_type } if same(column) => {
                // A column of the same type added in the same snapshot took its place.
                let renamed = facts.schema_changes.iter().find_map(|(t, a, c)| match c {
                    SchemaChange::Added {
                        column: added,
                        data_type: added_type,
                    } if t == table && a == at && added_type.eq_ignore_ascii_case(data_type) => {
                        Some(added.clone())
                    }
                    _ => None,
                });
                return Some(match renamed {
                    Some(to) => (
                        format!("{table}.{column} was renamed to {to} ({data_type}), and the job still reads {column}"),
                        seen(format!("{column} ({data_type}) is gone and {to} ({data_type}) is new")),
                        ColumnCause::Renamed {
                            table: table.clone(),
                            column: column.clone(),
                            to,
                        },
                    ),
                    None => (
                        format!("{table}.{column} was removed, and the job still reads it"),
                        seen(format!("{column} ({data_type}) is gone")),
                        ColumnCause::Removed {
                            table: table.clone(),
                            column: column.clone(),
                            data_type: data_type.clone(),
                        },
                    ),
                });
            }
            SchemaChange::TypeChanged { column, from, to } if same(column) => {
                return Some((
                    format!("{table}.{column} changed type from {from} to {to}, and the job reads it as {from}"),
                    seen(format!("{column} is now {to} (was {from})")),
                    ColumnCause::Retyped {
                        table: table.clone(),
                        column: column.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    },
                ));
            }
            _ => {}
        }
    }
    None
}

/// `orders.amount` or `"AMOUNT"` is the column `amount`.
fn bare(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

fn stalled_lines(facts: &RunFacts) -> Vec<String> {
    facts
        .stalled
        .iter()
        .map(|(table, seen)| format!("{table}, which the job reads, stalled: {seen}"))
        .collect()
}

fn reads_text(facts: &RunFacts) -> String {
    if facts.reads.is_empty() {
        "the tables it reads".to_string()
    } else {
        facts.reads.join(", ")
    }
}

/// A title keeps to the error's first dozen words.
fn first_words(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= 12 {
        words.join(" ")
    } else {
        format!("{} ...", words[..12].join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::incident::failed_run::RunSource;

    fn run(error: &str) -> FailedRun {
        FailedRun {
            source: RunSource::DbtRunResults,
            job: "model.shop.order_amounts".into(),
            run_id: "1".into(),
            at: Timestamp::parse("2026-12-03T02:10:00Z").unwrap(),
            error: error.into(),
            outputs: vec!["analytics.order_amounts".into()],
            parent_run: None,
        }
    }

    const DROPPED: &str = "Database Error in model order_amounts (models/order_amounts.sql)\n  column \"amount\" does not exist\n  LINE 4: select id, customer_id, amount from \"shop\".\"raw\".\"orders\"";

    fn seen(changes: Vec<SchemaChange>) -> RunFacts {
        let at = Timestamp::parse("2026-12-03T02:05:00Z").unwrap();
        RunFacts {
            reads: vec!["raw.orders".into()],
            schema_changes: changes
                .into_iter()
                .map(|c| ("raw.orders".to_string(), at, c))
                .collect(),
            stalled: vec![],
            moved: vec![],
        }
    }

    #[test]
    fn a_column_the_error_names_that_a_snapshot_shows_removed_is_the_cause() {
        let facts = seen(vec![SchemaChange::Removed {
            column: "amount".into(),
            data_type: "numeric".into(),
        }]);
        let (diagnosis, change) = diagnose(&run(DROPPED), &facts);
        assert_eq!(diagnosis.kind, CauseKind::FailedRun);
        assert_eq!(
            diagnosis.cause,
            "raw.orders.amount was removed, and the job still reads it"
        );
        assert_eq!(
            diagnosis.evidence,
            vec![
                "model.shop.order_amounts failed at 2026-12-03 02:10 (dbt's run_results.json): column \"amount\" does not exist",
                "schema snapshot of raw.orders at 2026-12-03 02:05: amount (numeric) is gone",
            ]
        );
        assert_eq!(diagnosis.removed_column.as_deref(), Some("amount"));
        assert!(matches!(change, Some(ColumnCause::Removed { .. })));
    }

    #[test]
    fn a_removed_column_with_one_of_its_type_added_beside_it_was_renamed() {
        let facts = seen(vec![
            SchemaChange::Removed {
                column: "amount".into(),
                data_type: "numeric".into(),
            },
            SchemaChange::Added {
                column: "amount_total".into(),
                data_type: "numeric".into(),
            },
        ]);
        let (diagnosis, change) = diagnose(&run(DROPPED), &facts);
        assert!(
            diagnosis.cause.contains("renamed to amount_total"),
            "{}",
            diagnosis.cause
        );
        assert_eq!(
            change,
            Some(ColumnCause::Renamed {
                table: "raw.orders".into(),
                column: "amount".into(),
                to: "amount_total".into()
            })
        );
    }

    #[test]
    fn a_retyped_column_is_a_column_change() {
        let facts = seen(vec![SchemaChange::TypeChanged {
            column: "AMOUNT".into(),
            from: "numeric".into(),
            to: "text".into(),
        }]);
        let (diagnosis, _) = diagnose(
            &run("operator does not exist: text * integer; column \"amount\" is of type text"),
            &facts,
        );
        let change = diagnosis.column_change.expect("a column change");
        assert_eq!(
            (change.from.as_str(), change.to.as_str()),
            ("numeric", "text")
        );
    }

    #[test]
    fn an_error_nothing_known_explains_is_quoted_with_what_it_could_not_be_joined_with() {
        let (diagnosis, change) = diagnose(&run(DROPPED), &seen(vec![]));
        assert_eq!(change, None);
        assert!(diagnosis.cause.contains("column \"amount\" does not exist"));
        assert!(
            diagnosis.evidence[1]
                .contains("no recent schema snapshot of raw.orders shows it changed"),
            "{:?}",
            diagnosis.evidence
        );
    }

    #[test]
    fn a_path_the_notes_say_moved_is_the_cause() {
        let mut facts = seen(vec![]);
        facts.moved = vec![crate::lineage::Moved {
            from: "/mnt/exports/".into(),
            to: "/data/exports".into(),
            note: Some("storage migration".into()),
        }];
        let mut failed = run("FileNotFoundError: [Errno 2] No such file or directory: '/mnt/exports/invoices/2026-11-01.csv'");
        failed.job = "billing_daily.export_invoices".into();
        let (diagnosis, _) = diagnose(&failed, &facts);
        assert_eq!(
            diagnosis.cause,
            "billing_daily.export_invoices still uses /mnt/exports/invoices/2026-11-01.csv, but /mnt/exports/ moved to /data/exports"
        );
        assert_eq!(
            diagnosis.evidence[1],
            "the notes say /mnt/exports/ moved to /data/exports (storage migration)"
        );
        // A path beside the moved one is not under it.
        let beside = crate::lineage::Moved {
            from: "/mnt/exports".into(),
            to: "/x".into(),
            note: None,
        };
        assert!(!beside.covers("/mnt/exports2/a.csv"));
        assert!(beside.covers("/mnt/exports/a.csv"));
    }

    #[test]
    fn a_stalled_writer_upstream_is_joined_when_no_column_explains_it() {
        let mut facts = seen(vec![]);
        facts.stalled = vec![("raw.orders".into(), "no rows loaded since 01:12".into())];
        let (diagnosis, _) = diagnose(&run("division by zero"), &facts);
        assert!(
            diagnosis
                .cause
                .ends_with("it reads raw.orders, whose writer stalled: no rows loaded since 01:12"),
            "{}",
            diagnosis.cause
        );
    }
}
