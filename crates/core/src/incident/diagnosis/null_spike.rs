//! Null spike: a column's null rate rose in the rows loaded lately. Names the column,
//! the window measured, and a type change on that column upstream or here when one was
//! seen, since a failed conversion is a common way to land nulls.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    if breach.check != CheckKind::NullRate || breach.verdict != VerdictKind::High {
        return None;
    }
    let column = breach.column.clone()?;
    let mut cause = format!(
        "{} rose to {}",
        breach.subject(),
        breach.amount(breach.value)
    );
    if let Some(r) = breach.expected {
        cause.push_str(&format!(" from a usual {}", breach.amount(r.baseline)));
    }
    cause.push_str(&format!(" (measured {})", figure::when(breach.at)));
    let mut evidence = vec![breach.sentence()];
    let same_column = |changes: &[(Timestamp, SchemaChange)]| {
        type_change(changes).filter(|(_, c, _, _)| c.eq_ignore_ascii_case(&column))
    };
    let upstream = same_column(&facts.source_changes)
        .map(|c| (facts.source_table.clone().unwrap_or_default(), c))
        .or_else(|| same_column(&facts.table_changes).map(|c| (facts.table.clone(), c)));
    let column_change = upstream.map(|(table, (at, column, from, to))| {
        cause.push_str(&format!(
            "; {table}.{column} changed type from {from} to {to} at {}, and values that did not convert may have landed as nulls",
            figure::when(at)
        ));
        evidence.push(format!(
            "schema of {table} at {}: {column} changed type from {from} to {to}",
            figure::when(at)
        ));
        ColumnChange {
            table: facts.table.clone(),
            column,
            from,
            to,
        }
    });
    if column_change.is_none() {
        match writers_text(facts) {
            Some(writers) => cause.push_str(&format!(
                "; no schema change explains it: {writers} wrote these rows"
            )),
            None => cause.push_str("; no schema change explains it"),
        }
    }
    evidence.extend(other_breaches(facts));
    Some(Diagnosis {
        kind: CauseKind::NullSpike,
        headline: String::new(),
        cause,
        evidence,
        column_change,
        removed_column: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;
    use crate::detect::Range;

    fn spike() -> Facts {
        let mut f = figure(CheckKind::NullRate, 0.5, VerdictKind::High, 0.0);
        f.column = Some("amount".into());
        f.since = Some("2026-11-23T14:10:00Z".parse().unwrap());
        f.expected = Some(Range {
            low: 0.0,
            high: 0.02,
            baseline: 0.0,
        });
        facts(f)
    }

    #[test]
    fn a_null_spike_names_the_column_and_the_window() {
        let d = diagnose(&spike()).unwrap();
        assert_eq!(d.kind, CauseKind::NullSpike);
        assert_eq!(
            d.cause,
            "null rate of raw.payments.amount in rows loaded since 2026-11-23 14:10 rose to 50.0% from a usual 0.0% (measured 2026-11-24 14:10); no schema change explains it"
        );
        assert!(d.column_change.is_none());
    }

    #[test]
    fn an_upstream_change_to_the_same_column_is_named() {
        let mut f = spike();
        f.source_table = Some("app.payments".into());
        f.source_changes = vec![(
            "2026-11-23T14:00:00Z".parse().unwrap(),
            SchemaChange::TypeChanged {
                column: "amount".into(),
                from: "integer".into(),
                to: "text".into(),
            },
        )];
        let d = diagnose(&f).unwrap();
        assert!(
            d.cause.contains(
                "app.payments.amount changed type from integer to text at 2026-11-23 14:00"
            ),
            "{}",
            d.cause
        );
        assert_eq!(d.column_change.unwrap().column, "amount");
    }
}
