//! Partial load or reload: fewer rows than usual, and no schema change here or upstream
//! to explain it. Says what the table's recent counts show since: a reload only when
//! rows were taken out and are coming back, the loader appending when new batches keep
//! landing on schedule.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;
use crate::monitor::thousands;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    if breach.verdict != VerdictKind::Low
        || !matches!(breach.check, CheckKind::RowCount | CheckKind::Volume)
        || type_change(&facts.table_changes).is_some()
    {
        return None;
    }
    let mut cause = format!(
        "{} fell to {} (measured {}){}, with no schema change on {}{}: rows are missing, not re-shaped",
        breach.subject(),
        breach.amount(breach.value),
        figure::when(breach.at),
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
    cause.push_str(&what_the_counts_show(facts));
    if let Some(writers) = writers_text(facts) {
        cause.push_str(&format!("; written by {writers}"));
    }
    let mut evidence = vec![breach.sentence()];
    if let [.., (first_at, first), (last_at, last)] = facts.recent_counts.as_slice() {
        evidence.push(format!(
            "rows in {}: {} at {}, {} at {}",
            facts.table,
            thousands(*first),
            figure::when(*first_at),
            thousands(*last),
            figure::when(*last_at)
        ));
    }
    evidence.extend(other_breaches(facts));
    Some(Diagnosis::of(CauseKind::PartialLoad, cause, evidence))
}

/// What the table's recent row counts show, in the words the figures allow. A count
/// rising while batches land on schedule is the loader appending; only a count that fell
/// (rows taken out) and then rose is a reload.
fn what_the_counts_show(facts: &Facts) -> String {
    let counts = &facts.recent_counts;
    let (Some((first_at, first)), Some((last_at, last))) = (counts.first(), counts.last()) else {
        return "; a partial load or a delete".to_string();
    };
    // The latest fall in the window: rows taken out.
    if let Some(w) = counts.windows(2).rev().find(|w| w[1].1 < w[0].1) {
        let (fell_at, bottom) = (&w[1].0, w[1].1);
        return if *last > bottom {
            format!(
                "; the count fell to {} at {} and is rising again ({} at {}): a reload is under way",
                thousands(bottom),
                figure::when(*fell_at),
                thousands(*last),
                figure::when(*last_at)
            )
        } else {
            format!(
                "; rows were deleted: the count fell from {} at {} to {} at {}",
                thousands(w[0].1),
                figure::when(w[0].0),
                thousands(bottom),
                figure::when(*fell_at)
            )
        };
    }
    if last <= first {
        return "; a partial load or a delete".to_string();
    }
    let rise = format!(
        "{} at {}, {} at {}",
        thousands(*first),
        figure::when(*first_at),
        thousands(*last),
        figure::when(*last_at)
    );
    let on_schedule = std::iter::once(&facts.breach)
        .chain(&facts.others)
        .find(|f| {
            f.check == CheckKind::Freshness
                && matches!(f.verdict, VerdictKind::Ok | VerdictKind::Warn)
        });
    match on_schedule {
        Some(fresh) => format!(
            "; new batches keep landing on schedule (the last {} ago), so the count rising ({rise}) is the loader appending; nothing shows the missing rows being reloaded",
            fresh.amount(fresh.value),
        ),
        None => format!(
            "; the count is rising ({rise}), and nothing shows whether that is new batches or the missing rows being reloaded"
        ),
    }
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

    fn short_day_with_counts(counts: &[(&str, f64)]) -> Facts {
        let mut volume = figure(CheckKind::Volume, 1_214.0, VerdictKind::Low, 3_105.0);
        volume.day = Some("2026-11-24".into());
        volume.partial = true;
        let mut f = facts(volume);
        f.recent_counts = counts
            .iter()
            .map(|(at, n)| (at.parse().unwrap(), *n))
            .collect();
        f
    }

    #[test]
    fn a_count_rising_while_batches_land_on_schedule_is_the_loader_appending_not_a_reload() {
        let mut f = short_day_with_counts(&[
            ("2026-11-24T14:05:00Z", 6_000.0),
            ("2026-11-24T14:10:00Z", 6_040.0),
        ]);
        f.others = vec![figure(CheckKind::Freshness, 120.0, VerdictKind::Ok, 300.0)];
        let cause = diagnose(&f).unwrap().cause;
        assert!(!cause.contains("reload is under way"), "{cause}");
        assert!(
            cause.ends_with(
                "; new batches keep landing on schedule (the last 2m ago), so the count rising \
                 (6,000 at 2026-11-24 14:05, 6,040 at 2026-11-24 14:10) is the loader appending; \
                 nothing shows the missing rows being reloaded"
            ),
            "{cause}"
        );
        // A batch a poll before, nothing since: still the loader appending.
        f.recent_counts
            .push(("2026-11-24T14:15:00Z".parse().unwrap(), 6_040.0));
        let cause = diagnose(&f).unwrap().cause;
        assert!(
            cause.contains("so the count rising (6,000 at 2026-11-24 14:05, 6,040 at 2026-11-24 14:15) is the loader appending"),
            "{cause}"
        );
        // Without a freshness figure nothing tells new batches from a reload.
        f.others.clear();
        let cause = diagnose(&f).unwrap().cause;
        assert!(!cause.contains("reload is under way"), "{cause}");
        assert!(
            cause.contains(
                "nothing shows whether that is new batches or the missing rows being reloaded"
            ),
            "{cause}"
        );
    }

    #[test]
    fn only_a_count_that_fell_and_rises_again_is_a_reload() {
        let f = short_day_with_counts(&[
            ("2026-11-24T14:00:00Z", 6_000.0),
            ("2026-11-24T14:05:00Z", 4_000.0),
            ("2026-11-24T14:10:00Z", 5_500.0),
        ]);
        let cause = diagnose(&f).unwrap().cause;
        assert!(
            cause.ends_with(
                "; the count fell to 4,000 at 2026-11-24 14:05 and is rising again (5,500 at 2026-11-24 14:10): a reload is under way"
            ),
            "{cause}"
        );
        let f = short_day_with_counts(&[
            ("2026-11-24T14:05:00Z", 6_000.0),
            ("2026-11-24T14:10:00Z", 4_000.0),
        ]);
        let cause = diagnose(&f).unwrap().cause;
        assert!(cause.ends_with("; rows were deleted: the count fell from 6,000 at 2026-11-24 14:05 to 4,000 at 2026-11-24 14:10"), "{cause}");
    }
}
