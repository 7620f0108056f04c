//! Volume from the rows a job's runs report writing (OpenLineage's
//! `outputStatistics.rowCount`), for tables dataward cannot query itself: the runs'
//! rows are added up per day (UTC, by the producer's clock) and judged by the volume
//! detector as a table's days are, each day against the same weekday before it. A day
//! with no run wrote nothing: a daily job that did not run is a low day.
//!
//! The newest day is judged as it stands when a run finishes: with `k` runs so far, each
//! earlier day counts its first `k` runs only, so the first of a job's two runs a day
//! is compared with the first runs before it, not with whole days (the table volume
//! check's "today so far", by runs rather than by clock: a run's time wobbles).

use chrono::{DateTime, NaiveDate, Utc};

use super::volume::{fill_days, judge_all, Calendar};
use super::Verdict;

/// The newest day's verdict (with its date), or `None` without runs.
pub fn judge_runs(
    runs: &[(DateTime<Utc>, u64)],
    holidays: &[NaiveDate],
) -> Option<(NaiveDate, Verdict)> {
    let mut sorted: Vec<&(DateTime<Utc>, u64)> = runs.iter().collect();
    sorted.sort_by_key(|(at, _)| *at);
    let newest = sorted.last()?.0.date_naive();
    let so_far = sorted
        .iter()
        .filter(|(at, _)| at.date_naive() == newest)
        .count();
    // (day, rows, runs counted)
    let mut per_day: Vec<(NaiveDate, u64, usize)> = Vec::new();
    for (at, rows) in sorted {
        let day = at.date_naive();
        match per_day.last_mut() {
            Some((last, total, counted)) if *last == day => {
                if *counted < so_far {
                    *total += rows;
                    *counted += 1;
                }
            }
            _ => per_day.push((day, *rows, 1)),
        }
    }
    let per_day: Vec<(NaiveDate, u64)> = per_day.into_iter().map(|(d, r, _)| (d, r)).collect();
    let (first, last) = (per_day.first()?.0, per_day.last()?.0);
    let days = fill_days(&per_day, first, last);
    let calendar = Calendar {
        holidays,
        excluded: &[],
        restarts: &[],
    };
    judge_all(&days, first, &calendar)
        .last()
        .map(|verdict| (last, *verdict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::VerdictKind;
    use chrono::TimeZone;

    /// A daily job writing about a thousand rows (two runs on Mondays) for five weeks:
    /// a usual day is ok, a day it wrote a tenth of that is low, and a first week is
    /// still learning.
    #[test]
    fn a_jobs_runs_are_judged_as_days() {
        let start = Utc.with_ymd_and_hms(2026, 9, 7, 2, 10, 0).unwrap(); // a Monday
        let mut runs = Vec::new();
        for day in 0..35i64 {
            let at = start + chrono::Duration::days(day);
            let rows = 1_000 + (day as u64 * 37) % 60;
            if day % 7 == 0 {
                runs.push((at, rows / 2));
                runs.push((at + chrono::Duration::hours(12), rows / 2));
            } else {
                runs.push((at, rows));
            }
        }
        // A Tuesday, with a run a day.
        let usual = start + chrono::Duration::days(36);
        let mut ok = runs.clone();
        ok.push((usual, 1_020));
        let (day, verdict) = judge_runs(&ok, &[]).unwrap();
        assert_eq!(day, usual.date_naive());
        assert_eq!(verdict.kind, VerdictKind::Ok, "{verdict:?}");

        let mut short = runs.clone();
        short.push((usual, 100));
        let (_, verdict) = judge_runs(&short, &[]).unwrap();
        assert_eq!(verdict.kind, VerdictKind::Low, "{verdict:?}");
        assert_eq!(verdict.observed, 100.0);

        // Mondays run twice: the first of them is judged against the first runs of
        // the Mondays before it, not against their whole days.
        let monday = start + chrono::Duration::days(35);
        let mut first_of_two = runs.clone();
        first_of_two.push((monday, 510));
        let (_, verdict) = judge_runs(&first_of_two, &[]).unwrap();
        assert_eq!(verdict.kind, VerdictKind::Ok, "{verdict:?}");
        first_of_two.push((monday + chrono::Duration::hours(12), 505));
        let (_, verdict) = judge_runs(&first_of_two, &[]).unwrap();
        assert_eq!(verdict.kind, VerdictKind::Ok, "{verdict:?}");
        assert_eq!(verdict.observed, 1_015.0);

        let (_, verdict) = judge_runs(&runs[..5], &[]).unwrap();
        assert_eq!(verdict.kind, VerdictKind::Learning);
        assert!(judge_runs(&[], &[]).is_none());
    }
}
