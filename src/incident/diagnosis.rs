//! Diagnosis: join the evidence around a breach into one cause, with the evidence
//! listed under it. Pure: the engine gathers the facts, this decides what they mean.

use serde::{Deserialize, Serialize};

use crate::detect::SchemaChange;
use crate::monitor::thousands;

/// What the engine found around a breach.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub table: String,
    pub observed: f64,
    pub baseline: Option<f64>,
    pub opened_at: String,
    /// The upstream table, if the monitor names one.
    pub source_table: Option<String>,
    /// Schema changes seen on the upstream table, with when they were seen.
    pub source_changes: Vec<(String, SchemaChange)>,
    /// Schema changes seen on the breached table itself.
    pub table_changes: Vec<(String, SchemaChange)>,
    /// The upstream table's latest row count.
    pub source_rows: Option<f64>,
    /// This table's recent row counts, oldest first.
    pub recent_counts: Vec<(String, f64)>,
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
    /// An upstream type change made the loader re-create and refill the table.
    RefillAfterTypeChange,
    /// The numbers moved and nothing upstream explains it yet.
    Unexplained,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub kind: CauseKind,
    pub cause: String,
    pub evidence: Vec<String>,
    pub column_change: Option<ColumnChange>,
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        0.0
    } else {
        (part / whole * 100.0).round()
    }
}

pub fn diagnose(facts: &Facts) -> Diagnosis {
    let mut evidence = Vec::new();
    let share = facts.baseline.map(|b| percent(facts.observed, b));
    if let (Some(baseline), Some(share)) = (facts.baseline, share) {
        evidence.push(format!(
            "{} holds {} rows at {}, {}% of its baseline of {} ({}% below)",
            facts.table,
            thousands(facts.observed),
            facts.opened_at,
            share,
            thousands(baseline),
            100.0 - share
        ));
    }
    let upstream_type_change =
        facts
            .source_changes
            .iter()
            .rev()
            .find_map(|(at, change)| match change {
                SchemaChange::TypeChanged { column, from, to } => {
                    Some((at.clone(), column.clone(), from.clone(), to.clone()))
                }
                _ => None,
            });
    let Some((changed_at, column, from, to)) = upstream_type_change else {
        return Diagnosis {
            kind: CauseKind::Unexplained,
            cause: format!(
                "{} row count fell to {} with no upstream schema change seen; check its writers",
                facts.table,
                thousands(facts.observed)
            ),
            evidence,
            column_change: None,
        };
    };
    let source = facts
        .source_table
        .clone()
        .unwrap_or_else(|| "the source".to_string());
    evidence.push(format!(
        "source schema snapshot at {changed_at}: {source}.{column} changed type from {from} to {to}"
    ));
    let recreated = facts
        .table_changes
        .iter()
        .find_map(|(at, change)| match change {
            SchemaChange::TypeChanged {
                column: c, to: new, ..
            } if c.eq_ignore_ascii_case(&column) => Some((at.clone(), new.clone())),
            _ => None,
        });
    if let Some((at, new)) = &recreated {
        evidence.push(format!(
            "warehouse schema snapshot at {at}: {}.{column} is now {new}; the type cannot change in place, so the table was re-created",
            facts.table
        ));
    }
    let rising = facts
        .recent_counts
        .windows(2)
        .last()
        .is_some_and(|w| w[1].1 > w[0].1);
    if let [.., (first_at, first), (last_at, last)] = facts.recent_counts.as_slice() {
        evidence.push(format!(
            "row count {} at {first_at}, {} at {last_at}: {}",
            thousands(*first),
            thousands(*last),
            if rising {
                "rising, the loader is refilling"
            } else {
                "not rising yet"
            }
        ));
    }
    let not_lost = match (facts.source_rows, facts.baseline) {
        (Some(rows), Some(baseline)) if rows >= baseline * 0.9 => {
            evidence.push(format!(
                "{source} still holds {} rows: nothing was lost at the source",
                thousands(rows)
            ));
            true
        }
        _ => false,
    };
    let mut cause = format!("Source migration changed {source}.{column} from {from} to {to}");
    if recreated.is_some() {
        cause.push_str(&format!(
            "; the warehouse table {} was re-created and is refilling",
            facts.table
        ));
        if let Some(share) = share {
            cause.push_str(&format!(" ({share}% loaded)"));
        }
    }
    if not_lost {
        cause.push_str(&format!("; no rows are lost: {source} still holds them"));
    }
    Diagnosis {
        kind: if recreated.is_some() {
            CauseKind::RefillAfterTypeChange
        } else {
            CauseKind::Unexplained
        },
        cause,
        evidence,
        column_change: Some(ColumnChange {
            table: facts.table.clone(),
            column,
            from,
            to,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refill_facts() -> Facts {
        Facts {
            table: "SALES.PAYMENTS".into(),
            observed: 4_400.0,
            baseline: Some(20_000.0),
            opened_at: "14:10".into(),
            source_table: Some("payments".into()),
            source_changes: vec![(
                "14:05".into(),
                SchemaChange::TypeChanged {
                    column: "zip_code".into(),
                    from: "SMALLINT".into(),
                    to: "VARCHAR(12)".into(),
                },
            )],
            table_changes: vec![(
                "14:10".into(),
                SchemaChange::TypeChanged {
                    column: "zip_code".into(),
                    from: "SMALLINT".into(),
                    to: "VARCHAR(12)".into(),
                },
            )],
            source_rows: Some(20_100.0),
            recent_counts: vec![("14:05".into(), 20_000.0), ("14:10".into(), 4_400.0)],
        }
    }

    #[test]
    fn a_type_change_and_a_recreated_table_is_a_refill_not_a_loss() {
        let d = diagnose(&refill_facts());
        assert_eq!(d.kind, CauseKind::RefillAfterTypeChange);
        assert!(
            d.cause
                .contains("payments.zip_code from SMALLINT to VARCHAR(12)"),
            "{}",
            d.cause
        );
        assert!(
            d.cause.contains("re-created and is refilling"),
            "{}",
            d.cause
        );
        assert!(
            d.cause
                .contains("no rows are lost: payments still holds them"),
            "{}",
            d.cause
        );
        assert_eq!(d.column_change.unwrap().to, "VARCHAR(12)");
    }

    #[test]
    fn a_lost_source_is_not_called_safe() {
        let mut f = refill_facts();
        f.source_rows = Some(3_000.0);
        assert!(!diagnose(&f).cause.contains("not lost"));
    }

    #[test]
    fn no_upstream_change_is_unexplained() {
        let mut f = refill_facts();
        f.source_changes.clear();
        let d = diagnose(&f);
        assert_eq!(d.kind, CauseKind::Unexplained);
        assert!(d.column_change.is_none());
    }
}
