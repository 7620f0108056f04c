//! Duplicate load: a count rose to about a whole multiple of its usual value, the shape
//! of a load that ran twice (or a re-sync that appended instead of replacing).

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

/// How close to a whole multiple the ratio must be.
const TOLERANCE: f64 = 0.15;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    if breach.verdict != VerdictKind::High
        || !matches!(breach.check, CheckKind::RowCount | CheckKind::Volume)
    {
        return None;
    }
    let baseline = breach.expected?.baseline;
    if baseline <= 0.0 {
        return None;
    }
    let ratio = breach.value / baseline;
    let copies = ratio.round();
    if copies < 2.0 || (ratio - copies).abs() > TOLERANCE {
        return None;
    }
    let mut cause = format!(
        "{} came to {} (measured {}), {ratio:.1}x the usual {}: about {} whole extra {} of the load landed, as when a load runs twice",
        breach.subject(),
        breach.amount(breach.value),
        figure::when(breach.at),
        breach.amount(baseline),
        copies - 1.0,
        if copies == 2.0 { "copy" } else { "copies" }
    );
    if let Some(writers) = writers_text(facts) {
        cause.push_str(&format!("; written by {writers}"));
    }
    let mut evidence = vec![breach.sentence()];
    evidence.extend(other_breaches(facts));
    Some(Diagnosis::of(CauseKind::DuplicateLoad, cause, evidence))
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;

    #[test]
    fn twice_the_usual_day_is_a_duplicate_load() {
        let mut volume = figure(CheckKind::Volume, 6_180.0, VerdictKind::High, 3_100.0);
        volume.day = Some("2026-11-23".into());
        let d = diagnose(&facts(volume)).unwrap();
        assert_eq!(d.kind, CauseKind::DuplicateLoad);
        assert!(
            d.cause.starts_with("rows loaded into raw.payments on 2026-11-23 came to 6,180 rows (measured 2026-11-24 14:10), 2.0x the usual 3,100 rows: about 1 whole extra copy"),
            "{}",
            d.cause
        );
    }

    #[test]
    fn one_and_a_half_times_is_not_a_whole_copy() {
        let volume = figure(CheckKind::Volume, 4_650.0, VerdictKind::High, 3_100.0);
        assert!(diagnose(&facts(volume)).is_none());
    }
}
