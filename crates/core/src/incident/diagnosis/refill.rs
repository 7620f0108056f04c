//! Refill after an incompatible type change: the table's column changed type, which a
//! warehouse cannot apply in place, so its writer dropped and re-created it and is
//! loading it again. Rows are short because they are on their way, not lost.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;
use crate::monitor::thousands;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    let short = matches!(breach.check, CheckKind::RowCount | CheckKind::Volume)
        && breach.verdict == VerdictKind::Low;
    if !short {
        return None;
    }
    let (at, column, from, to) = type_change(&facts.table_changes)?;
    let table = &facts.table;
    let mut evidence = vec![breach.sentence()];
    let upstream =
        type_change(&facts.source_changes).filter(|(_, c, _, _)| c.eq_ignore_ascii_case(&column));
    let mut cause = match (&facts.source_table, &upstream) {
        (Some(source), Some((source_at, _, source_from, source_to))) => {
            evidence.push(format!(
                "schema of {source} at {}: {column} changed type from {source_from} to {source_to}",
                figure::when(*source_at)
            ));
            format!("{source}.{column} changed type from {source_from} to {source_to}")
        }
        _ => format!("{table}.{column} changed type from {from} to {to}"),
    };
    evidence.push(format!(
        "schema of {table} at {}: {column} is now {to} (was {from}); a column's type cannot change in place while rows are this short, so the table was re-created",
        figure::when(at)
    ));
    cause.push_str(&format!("; {table} was re-created"));
    if let Some(writer) = facts.writers.first() {
        cause.push_str(&format!(" by the {}", writer.name));
        match (&writer.setting, &writer.owner) {
            (Some((name, value)), Some(owner)) => {
                cause.push_str(&format!(" ({name} = {value}; owner {owner})"))
            }
            (Some((name, value)), None) => cause.push_str(&format!(" ({name} = {value})")),
            (None, Some(owner)) => cause.push_str(&format!(" (owner {owner})")),
            (None, None) => {}
        }
    }
    let rising = facts
        .recent_counts
        .windows(2)
        .last()
        .is_some_and(|w| w[1].1 > w[0].1);
    if let [.., (first_at, first), (last_at, last)] = facts.recent_counts.as_slice() {
        evidence.push(format!(
            "rows in {table}: {} at {}, {} at {}: {}",
            thousands(*first),
            figure::when(*first_at),
            thousands(*last),
            figure::when(*last_at),
            if rising {
                "rising, the table is being refilled"
            } else {
                "not rising yet"
            }
        ));
    }
    if rising {
        cause.push_str(" and is refilling");
    }
    if let Some(share) = breach.share() {
        cause.push_str(&format!(
            "; it held {share}% of its usual rows at {}",
            figure::when(breach.at)
        ));
    }
    if let (Some(source), Some(rows), Some(baseline)) = (
        &facts.source_table,
        &facts.source_rows,
        breach.expected.map(|r| r.baseline),
    ) {
        if breach.check == CheckKind::RowCount && rows.value >= baseline * 0.9 {
            evidence.push(format!(
                "{source} still holds {} (measured {}): the rows are not lost at the source",
                rows.amount(rows.value),
                figure::when(rows.at)
            ));
            cause.push_str(&format!("; {source} still holds every row"));
        }
    }
    evidence.extend(other_breaches(facts));
    Some(Diagnosis {
        kind: CauseKind::RefillAfterTypeChange,
        headline: String::new(),
        cause,
        evidence,
        column_change: Some(ColumnChange {
            table: table.clone(),
            column,
            from,
            to,
        }),
        removed_column: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;

    fn refill() -> Facts {
        let mut f = facts(figure(
            CheckKind::RowCount,
            4_400.0,
            VerdictKind::Low,
            20_000.0,
        ));
        f.table_changes = vec![(
            "2026-11-24T14:05:00Z".parse().unwrap(),
            SchemaChange::TypeChanged {
                column: "zip_code".into(),
                from: "SMALLINT".into(),
                to: "VARCHAR(12)".into(),
            },
        )];
        f.recent_counts = vec![
            ("2026-11-24T14:05:00Z".parse().unwrap(), 2_000.0),
            ("2026-11-24T14:10:00Z".parse().unwrap(), 4_400.0),
        ];
        f
    }

    #[test]
    fn a_recreated_table_that_is_short_is_refilling() {
        let d = diagnose(&refill()).unwrap();
        assert_eq!(d.kind, CauseKind::RefillAfterTypeChange);
        assert!(
            d.cause.starts_with("raw.payments.zip_code changed type from SMALLINT to VARCHAR(12); raw.payments was re-created and is refilling; it held 22% of its usual rows"),
            "{}",
            d.cause
        );
        assert_eq!(d.column_change.unwrap().to, "VARCHAR(12)");
    }

    #[test]
    fn the_source_the_writer_and_the_rows_at_the_source_come_from_the_facts() {
        let mut f = refill();
        f.source_table = Some("app.payments".into());
        f.source_changes = f.table_changes.clone();
        f.source_rows = Some(figure(
            CheckKind::RowCount,
            20_100.0,
            VerdictKind::Ok,
            20_000.0,
        ));
        f.writers = vec![WriterFact {
            name: "payments loader".into(),
            owner: Some("platform-owner".into()),
            setting: Some(("on_change".into(), "recreate".into())),
            also_writes: Vec::new(),
        }];
        let d = diagnose(&f).unwrap();
        assert!(
            d.cause.starts_with("app.payments.zip_code changed type"),
            "{}",
            d.cause
        );
        assert!(
            d.cause.contains(
                "re-created by the payments loader (on_change = recreate; owner platform-owner)"
            ),
            "{}",
            d.cause
        );
        assert!(
            d.cause.ends_with("app.payments still holds every row"),
            "{}",
            d.cause
        );
        f.source_rows = Some(figure(
            CheckKind::RowCount,
            3_000.0,
            VerdictKind::Low,
            20_000.0,
        ));
        assert!(!diagnose(&f).unwrap().cause.contains("still holds"));
    }

    #[test]
    fn without_a_type_change_it_is_not_a_refill() {
        let mut f = refill();
        f.table_changes.clear();
        assert!(diagnose(&f).is_none());
    }
}
