//! Volume from the rows a job's runs report writing (OpenLineage's
//! `outputStatistics.rowCount`), for tables dataward cannot query itself: the runs'
//! rows are added up per day (UTC, by the producer's clock) and judged by the volume
//! detector as a table's days are, each day against the same weekday before it. A day
//! with no run wrote nothing: a daily job that did not run is a low day.

use chrono::{DateTime, NaiveDate, Utc};

use super::volume::{fill_days, judge_all, Calendar};
use super::Verdict;

/// The newest day's verdict (with its date), or `None` without runs.
pub fn judge_runs(
    runs: &[(DateTime<Utc>, u64)],
    holidays: &[NaiveDate],
) -> Option<(NaiveDate, Verdict)> {
    let mut per_day: Vec<(NaiveDate, u64)> = Vec::new();
    let mut sorted: Vec<&(DateTime<Utc>, u64)> = runs.iter().collect();
    sorted.sort_by_key(|(at, _)| *at);
    for (at, rows) in sorted {
        let day = at.date_naive();
        match per_day.last_mut() {
            Some((last, total)) if *last == day => *total += rows,
            _ => per_day.push((day, *rows)),
        }
    }
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
        let usual = start + chrono::Duration::days(35);
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

        let (_, verdict) = judge_runs(&runs[..5], &[]).unwrap();
        assert_eq!(verdict.kind, VerdictKind::Learning);
        assert!(judge_runs(&[], &[]).is_none());
    }
}
