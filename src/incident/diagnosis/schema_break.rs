//! A column changed type in place and models downstream read it in ways the new type
//! breaks: an incident by itself, before any row count moves.

use super::*;
use crate::config::CheckKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    if facts.breach.check != CheckKind::Schema || facts.broken_uses.is_empty() {
        return None;
    }
    let (at, column, from, to) = type_change(&facts.table_changes)?;
    let table = &facts.table;
    let mut models: Vec<&str> = facts.broken_uses.iter().map(|u| u.model.as_str()).collect();
    models.dedup();
    let cause = format!(
        "{table}.{column} changed type from {from} to {to} in place; {} downstream {} {} it in ways that break: {}",
        models.len(),
        if models.len() == 1 { "model" } else { "models" },
        if models.len() == 1 { "reads" } else { "read" },
        models.join(", ")
    );
    let mut evidence = vec![format!(
        "schema of {table} at {}: {column} is now {to} (was {from})",
        figure::when(&at)
    )];
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
        cause,
        evidence,
        column_change: Some(ColumnChange {
            table: table.clone(),
            column,
            from,
            to,
        }),
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
            "2026-11-24T14:05:00Z".into(),
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
}
