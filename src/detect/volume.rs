//! Daily volume: rows per day, each day judged against the same weekday in prior weeks,
//! so a quiet Sunday is not an incident and a Saturday at 58% is.
//!
//! The baseline is the median of up to [`WEEKS`] prior same-weekday values and the spread
//! their scaled median absolute deviation: one bad week in the history (a holiday, an
//! outage) moves neither. The day under test is never part of its own baseline.

use chrono::{Duration, NaiveDate};

use super::{median_and_spread, Verdict};

/// How many prior same-weekday values make the baseline (eight weeks).
pub const WEEKS: usize = 8;
/// Fewer prior same-weekday values than this and the verdict is `learning`.
pub const MIN_WEEKS: usize = 3;
/// How many robust standard deviations from the baseline is a breach.
pub const THRESHOLD: f64 = 4.0;
/// The band is never narrower than this share of the baseline: eight quiet weeks can
/// have a tiny spread by chance, and a 10% wobble is not worth waking anyone for.
pub const MIN_RELATIVE_WIDTH: f64 = 0.2;

/// Calendar days from `first` to `last` inclusive, with each day's count; days with no
/// rows are zero-volume days, not skipped.
pub fn fill_days(counts: &[(NaiveDate, u64)], first: NaiveDate, last: NaiveDate) -> Vec<f64> {
    let len = (last - first).num_days() + 1;
    let mut days = vec![0.0; len.max(0) as usize];
    for (day, count) in counts {
        let offset = (*day - first).num_days();
        if (0..len).contains(&offset) {
            days[offset as usize] += *count as f64;
        }
    }
    days
}

/// The date of index `i` in a series starting at `first`.
pub fn date_at(first: NaiveDate, i: usize) -> NaiveDate {
    first + Duration::days(i as i64)
}

/// Judges `days[index]` against the same weekday in the weeks before it. `days` is one
/// value per calendar day, oldest first.
pub fn judge_day(days: &[f64], index: usize) -> Verdict {
    let observed = days[index];
    let prior: Vec<f64> = (1..=WEEKS)
        .filter_map(|week| index.checked_sub(7 * week))
        .map(|i| days[i])
        .collect();
    if prior.len() < MIN_WEEKS {
        return Verdict::learning(observed);
    }
    let (baseline, spread) = median_and_spread(&prior);
    // Counts are counts: a day of 20 rows wobbles by more than a fifth, so small
    // baselines get a Poisson-like floor as well.
    let floor = (MIN_RELATIVE_WIDTH * baseline).max((baseline + 1.0).sqrt());
    let sigma = spread.max(floor / THRESHOLD);
    let width = THRESHOLD * sigma;
    let low = (baseline - width).max(0.0);
    let high = baseline + width;
    Verdict::banded(
        observed,
        low,
        high,
        baseline,
        Some((observed - baseline) / sigma),
    )
}

/// Every day of a history judged in turn, as a backtest does.
pub fn backtest(days: &[f64]) -> Vec<Verdict> {
    (0..days.len()).map(|i| judge_day(days, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::synthetic::{weekly_series, SeriesShape};
    use crate::detect::VerdictKind;

    fn shape() -> SeriesShape {
        SeriesShape {
            days: 84,
            level: 10_000.0,
            weekend_factor: 0.45,
            noise: 0.04,
            trend_per_week: 0.0,
            seed: 7,
        }
    }

    #[test]
    fn quiet_weekends_are_ok_and_a_saturday_at_58_percent_is_low() {
        let mut days = weekly_series(&shape());
        let saturday = 82; // day 0 is a Monday
        assert_eq!(
            date_at(NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(), saturday)
                .format("%a")
                .to_string(),
            "Sat"
        );
        let verdicts = backtest(&days);
        let breaches = verdicts[28..].iter().filter(|v| v.kind.is_breach()).count();
        assert_eq!(
            breaches, 0,
            "a clean weekly pattern raised {breaches} breaches"
        );
        days[saturday] *= 0.58;
        let v = judge_day(&days, saturday);
        assert_eq!(v.kind, VerdictKind::Low, "{v:?}");
        let range = v.expected.unwrap();
        assert!(
            range.low > days[saturday] && range.baseline < 6_000.0,
            "{range:?}"
        );
        assert!(v.score.unwrap() < -THRESHOLD);
    }

    #[test]
    fn a_spike_is_high() {
        let mut days = weekly_series(&shape());
        days[80] *= 2.5;
        assert_eq!(judge_day(&days, 80).kind, VerdictKind::High);
    }

    #[test]
    fn a_stalled_writer_is_low_on_every_day_it_stays_stalled() {
        let mut days = weekly_series(&shape());
        days[75] *= 0.4;
        for day in &mut days[76..] {
            *day = 0.0;
        }
        for (i, v) in backtest(&days).iter().enumerate().skip(75) {
            assert_eq!(v.kind, VerdictKind::Low, "day {i}: {v:?}");
        }
    }

    #[test]
    fn a_holiday_dip_does_not_drag_the_weeks_after_it() {
        let mut days = weekly_series(&shape());
        // A Monday holiday at a fifth of normal: flagged on the day (without a holiday
        // calendar it is unusual), but the Mondays after it are judged as usual.
        days[63] *= 0.2;
        assert_eq!(judge_day(&days, 63).kind, VerdictKind::Low);
        for monday in [70, 77] {
            let v = judge_day(&days, monday);
            assert_eq!(v.kind, VerdictKind::Ok, "day {monday}: {v:?}");
        }
    }

    #[test]
    fn a_level_shift_is_flagged_then_becomes_the_new_normal() {
        let mut days = weekly_series(&SeriesShape {
            days: 140,
            ..shape()
        });
        for day in &mut days[70..] {
            *day *= 1.6;
        }
        let verdicts = backtest(&days);
        assert_eq!(verdicts[70].kind, VerdictKind::High);
        // Once most of the baseline weeks are at the new level, it is normal.
        let late = verdicts[110..]
            .iter()
            .filter(|v| v.kind.is_breach())
            .count();
        assert_eq!(late, 0);
    }

    #[test]
    fn short_history_is_learning_not_a_breach() {
        let days = [100.0, 120.0, 90.0, 0.0, 100.0, 110.0, 95.0, 100.0, 5.0];
        for v in backtest(&days) {
            assert_eq!(v.kind, VerdictKind::Learning);
            assert!(v.expected.is_none());
        }
    }

    #[test]
    fn missing_days_are_zero() {
        let d = |n| NaiveDate::from_ymd_opt(2024, 1, n).unwrap();
        let days = fill_days(&[(d(1), 5), (d(3), 7)], d(1), d(4));
        assert_eq!(days, vec![5.0, 0.0, 7.0, 0.0]);
    }
}
