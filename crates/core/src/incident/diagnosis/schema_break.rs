//! A column changed type in place and models downstream read it in ways the new type
//! breaks: an incident by itself, before any row count moves.

use super::*;
use crate::config::CheckKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    if facts.breach.check != CheckKind::Schema || facts.broken_uses.is_empty() {
        return None;
    }
    let table = &facts.table;
    let mut models: Vec<&str> = facts.broken_uses.iter().map(|u| u.model.as_str()).collect();
    models.dedup();
    let readers = format!(
        "{} downstream {} {} it in ways that break: {}",
        models.len(),
        if models.len() == 1 { "model" } else { "models" },
        if models.len() == 1 { "reads" } else { "read" },
        models.join(", ")
    );
    let (cause, seen, column_change, removed_column) = match latest_column_change(facts)? {
        Change::Type {
            at,
            column,
            from,
            to,
        } => (
            format!("{table}.{column} changed type from {from} to {to} in place; {readers}"),
            format!(
                "schema of {table} at {}: {column} is now {to} (was {from})",
                figure::when(at)
            ),
            Some(ColumnChange {
                table: table.clone(),
                column,
                from,
                to,
            }),
            None,
        ),
        Change::Removed { at, column, was } => (
            format!("{table}.{column} was removed; {readers}"),
            format!(
                "schema of {table} at {}: {column} ({was}) is gone",
                figure::when(at)
            ),
            None,
            Some(column),
        ),
    };
    let mut evidence = vec![seen];
    evidence.extend(
        facts
            .broken_uses
            .iter()
            .map(|u| format!("{}: `{}`: {}", u.model, u.expression, u.reason)),
    );
    if let Some(writers) = writers_text(facts) {
        evidence.push(format!("{table} is written by {writers}"));
    }
    evidence.extend(other_breaches(facts));
    Some(Diagnosis {
        kind: CauseKind::SchemaBreak,
        headline: String::new(),
        cause,
        evidence,
        column_change,
        removed_column,
    })
}

enum Change {
    Type {
        at: Timestamp,
        column: String,
        from: String,
        to: String,
    },
    Removed {
        at: Timestamp,
        column: String,
        was: String,
    },
}

/// The latest change to a column of the table: a new type, or the column gone.
fn latest_column_change(facts: &Facts) -> Option<Change> {
    facts
        .table_changes
        .iter()
        .rev()
        .find_map(|(at, change)| match change {
            SchemaChange::TypeChanged { column, from, to } => Some(Change::Type {
                at: *at,
                column: column.clone(),
                from: from.clone(),
                to: to.clone(),
            }),
            SchemaChange::Removed { column, data_type } => Some(Change::Removed {
                at: *at,
                column: column.clone(),
                was: data_type.clone(),
            }),
            SchemaChange::Added { .. } => None,
        })
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;
    use crate::detect::VerdictKind;

    #[test]
    fn an_in_place_change_that_breaks_a_model_names_the_model_and_why() {
        let mut f = facts(figure(CheckKind::Schema, 5.0, VerdictKind::Changed, 5.0));
        f.table_changes = vec![(
            "2026-11-24T14:05:00Z".parse().unwrap(),
            SchemaChange::TypeChanged {
                column: "amount".into(),
                from: "integer".into(),
                to: "text".into(),
            },
        )];
        f.broken_uses = vec![BrokenUse {
            model: "stg_payments".into(),
            expression: "amount / 100".into(),
            reason: "PostgreSQL has no operator text / integer".into(),
        }];
        let d = diagnose(&f).unwrap();
        assert_eq!(d.kind, CauseKind::SchemaBreak);
        assert_eq!(
            d.cause,
            "raw.payments.amount changed type from integer to text in place; 1 downstream model reads it in ways that break: stg_payments"
        );
        assert!(d.evidence.contains(
            &"stg_payments: `amount / 100`: PostgreSQL has no operator text / integer".to_string()
        ));
        f.broken_uses.clear();
        assert!(
            diagnose(&f).is_none(),
            "a change nothing reads badly is no incident"
        );
    }

    #[test]
    fn a_removed_column_that_models_read_is_named_with_them() {
        let mut f = facts(figure(CheckKind::Schema, 4.0, VerdictKind::Changed, 5.0));
        f.table_changes = vec![(
            "2026-11-24T14:05:00Z".parse().unwrap(),
            SchemaChange::Removed {
                column: "payment_method".into(),
                data_type: "text".into(),
            },
        )];
        f.broken_uses = vec![BrokenUse {
            model: "stg_payments".into(),
            expression: "payment_method".into(),
            reason: "raw.payments no longer has payment_method".into(),
        }];
        let d = diagnose(&f).unwrap();
        assert_eq!(
            d.cause,
            "raw.payments.payment_method was removed; 1 downstream model reads it in ways that break: stg_payments"
        );
        assert_eq!(d.removed_column.as_deref(), Some("payment_method"));
        assert!(d.column_change.is_none());
    }
}
