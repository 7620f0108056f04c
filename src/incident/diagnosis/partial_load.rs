//! Partial load or reload: fewer rows than usual, and no schema change here or upstream
//! to explain it. Says whether the count is rising (a reload under way) or not.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    if breach.verdict != VerdictKind::Low
        || !matches!(breach.check, CheckKind::RowCount | CheckKind::Volume)
        || type_change(&facts.table_changes).is_some()
    {
        return None;
    }
    let rising = facts
        .recent_counts
        .windows(2)
        .last()
        .is_some_and(|w| w[1].1 > w[0].1);
    let mut cause = format!(
        "{} fell to {} (measured {}){}, with no schema change on {}{}: rows are missing, not re-shaped",
        breach.subject(),
        breach.amount(breach.value),
        figure::when(&breach.at),
        breach
            .share()
            .map(|s| format!(", {s}% of the usual"))
            .unwrap_or_default(),
        facts.table,
        facts
            .source_table
            .as_deref()
            .map(|s| format!(" or {s}"))
            .unwrap_or_default(),
    );
    cause.push_str(if rising {
        "; the count is rising again, so a reload is under way"
    } else {
        "; a partial load or a delete"
    });
    if let Some(writers) = writers_text(facts) {
        cause.push_str(&format!("; written by {writers}"));
    }
    let mut evidence = vec![breach.sentence()];
    if let [.., (first_at, first), (last_at, last)] = facts.recent_counts.as_slice() {
        evidence.push(format!(
            "rows in {}: {} at {}, {} at {}",
            facts.table,
            crate::monitor::thousands(*first),
            figure::when(first_at),
            crate::monitor::thousands(*last),
            figure::when(last_at)
        ));
    }
    evidence.extend(other_breaches(facts));
    Some(Diagnosis::of(CauseKind::PartialLoad, cause, evidence))
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;

    #[test]
    fn a_short_day_without_a_schema_change_is_a_partial_load_in_its_own_units() {
        let mut volume = figure(CheckKind::Volume, 1_214.0, VerdictKind::Low, 3_105.0);
        volume.day = Some("2026-11-23".into());
        let d = diagnose(&facts(volume)).unwrap();
        assert_eq!(d.kind, CauseKind::PartialLoad);
        assert_eq!(
            d.cause,
            "rows loaded into raw.payments on 2026-11-23 fell to 1,214 rows (measured 2026-11-24 14:10), 39% of the usual, with no schema change on raw.payments: \
             rows are missing, not re-shaped; a partial load or a delete"
        );
        assert!(!d.cause.contains("row count"));
    }

    #[test]
    fn a_rising_count_is_a_reload() {
        let mut f = facts(figure(
            CheckKind::RowCount,
            9_000.0,
            VerdictKind::Low,
            20_000.0,
        ));
        f.recent_counts = vec![
            ("2026-11-24T14:05:00Z".into(), 6_000.0),
            ("2026-11-24T14:10:00Z".into(), 9_000.0),
        ];
        assert!(diagnose(&f).unwrap().cause.contains("reload is under way"));
    }
}
