//! Freshness: how long since the table last loaded, against its own load cadence and
//! the team's optional SLA.
//!
//! The cadence is learned from the gaps between recent distinct load times, at the time
//! of day of the newest load: a table that loads hourly but pauses every night is
//! allowed its night after its last evening load, and an hour and a half in the
//! afternoon. The allowance is the pause that nine in ten gaps after loads at that time
//! of day on other days stayed within (the rest may be outages we must not learn
//! from), with half as much again for slack. Without enough of those (a stream whose
//! recent loads cover less than a day), it is the second-longest gap seen.

use super::{Range, Verdict, VerdictKind};

/// Fewer gaps than this and the learned cadence says `learning`.
pub const MIN_GAPS: usize = 3;
/// Slack on top of the longest normal pause.
pub const SLACK: f64 = 1.5;

/// The team's SLA, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sla {
    pub warn_after: Option<f64>,
    pub error_after: Option<f64>,
}

/// Pauses that began within this long of the newest load's time of day, on other
/// days, say what pause is normal now: an hourly table that stops for the night is
/// allowed its night after its last evening load, and an hour in the afternoon.
pub const SAME_TIME_OF_DAY: i64 = 45 * 60;
/// Fewer such pauses than this and the longest normal pause of any time of day is
/// allowed instead.
pub const MIN_SAME_TIME_GAPS: usize = 5;
/// The share of the pauses at this time of day taken as normal: the longest tenth may
/// be outages, and an outage must not teach that outages are normal.
pub const NORMAL_SHARE: f64 = 0.9;

/// The gaps after every load (but the newest) whose time of day is within
/// [`SAME_TIME_OF_DAY`] of the newest's.
fn pauses_at_this_time_of_day(times: &[i64], newest: i64) -> Vec<f64> {
    let day = 86_400;
    let near = |t: i64| {
        let apart = (t - newest).rem_euclid(day);
        apart.min(day - apart) <= SAME_TIME_OF_DAY
    };
    times
        .windows(2)
        .filter(|w| near(w[0]))
        .map(|w| (w[1] - w[0]) as f64)
        .collect()
}

/// The value below which `share` of `values` lie (the nearest rank).
fn quantile(mut values: Vec<f64>, share: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let rank = ((share * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// `load_times` are distinct load times in seconds, in any order; `now` in the same
/// unit. The observed value is the age of the newest load in seconds.
pub fn judge(load_times: &[i64], now: i64, sla: Sla) -> Verdict {
    let mut times = load_times.to_vec();
    times.sort_unstable();
    times.dedup();
    let Some(&newest) = times.last() else {
        // Nothing loaded within the lookback: late if the team set an SLA, else unknown
        // cadence; there is no age to report.
        return Verdict {
            kind: if sla.error_after.is_some() {
                VerdictKind::Late
            } else {
                VerdictKind::Learning
            },
            observed: f64::INFINITY,
            expected: None,
            score: None,
        };
    };
    let age = (now - newest).max(0) as f64;
    let mut gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let learned = (gaps.len() >= MIN_GAPS).then(|| {
        let at_this_time = pauses_at_this_time_of_day(&times, newest);
        if at_this_time.len() >= MIN_SAME_TIME_GAPS {
            return quantile(at_this_time, NORMAL_SHARE) * SLACK;
        }
        gaps.sort_by(|a, b| b.total_cmp(a));
        let typical = super::median(&mut gaps.clone());
        gaps[1].max(typical) * SLACK
    });
    let allowed = match (learned, sla.error_after) {
        (Some(l), Some(e)) => Some(l.min(e)),
        (l, e) => l.or(e),
    };
    let Some(allowed) = allowed else {
        return Verdict {
            kind: match sla.warn_after {
                Some(w) if age > w => VerdictKind::Warn,
                _ => VerdictKind::Learning,
            },
            observed: age,
            expected: None,
            score: None,
        };
    };
    let kind = if age > allowed {
        VerdictKind::Late
    } else if sla.warn_after.is_some_and(|w| age > w) {
        VerdictKind::Warn
    } else {
        VerdictKind::Ok
    };
    Verdict {
        kind,
        observed: age,
        expected: Some(Range {
            low: 0.0,
            high: allowed,
            baseline: learned.map_or(allowed, |l| l / SLACK),
        }),
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3600;

    /// Hourly loads for three days, pausing from 22:00 to 06:00 every night.
    fn hourly_with_nights() -> Vec<i64> {
        (0..72)
            .map(|h| h * HOUR)
            .filter(|t| (6..22).contains(&((t / HOUR) % 24)))
            .collect()
    }

    #[test]
    fn a_nightly_pause_is_normal_and_a_stalled_writer_is_late() {
        let times = hourly_with_nights();
        let newest = *times.last().unwrap(); // 21:00 on day 3
                                             // At 05:30 the next morning: the usual night pause.
        let v = judge(&times, newest + 8 * HOUR + HOUR / 2, Sla::default());
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        // Stalled since 21:00 and still nothing the next afternoon.
        let v = judge(&times, newest + 20 * HOUR, Sla::default());
        assert_eq!(v.kind, VerdictKind::Late, "{v:?}");
        assert_eq!(v.observed, (20 * HOUR) as f64);
        assert!(v.expected.unwrap().high < (20 * HOUR) as f64);
    }

    #[test]
    fn one_past_outage_does_not_teach_that_outages_are_normal() {
        let mut times: Vec<i64> = (0..48).map(|h| h * HOUR).collect();
        times.retain(|t| !(10 * HOUR..40 * HOUR).contains(t)); // a 30 hour outage
        let newest = *times.last().unwrap();
        assert_eq!(
            judge(&times, newest + 5 * HOUR, Sla::default()).kind,
            VerdictKind::Late
        );
    }

    /// Hourly loads from 06:00 to 21:00 for `days` days.
    fn days_of_hourly_with_nights(days: i64) -> Vec<i64> {
        (0..days * 24)
            .map(|h| h * HOUR)
            .filter(|t| (6..22).contains(&((t / HOUR) % 24)))
            .collect()
    }

    #[test]
    fn an_afternoon_stall_is_late_though_the_table_pauses_every_night() {
        let mut times = days_of_hourly_with_nights(14);
        // The last load at 14:00 on the fifteenth day; three hours later nothing since.
        times.extend((6..=14).map(|h| 14 * 24 * HOUR + h * HOUR));
        let newest = *times.last().unwrap();
        let v = judge(&times, newest + 3 * HOUR, Sla::default());
        assert_eq!(v.kind, VerdictKind::Late, "{v:?}");
        assert_eq!(v.expected.unwrap().high, 1.5 * HOUR as f64);
        // After the evening's last load the night is still allowed.
        let evening = 13 * 24 * HOUR + 21 * HOUR;
        let before: Vec<i64> = times.iter().copied().filter(|&t| t <= evening).collect();
        let v = judge(&before, evening + 8 * HOUR + HOUR / 2, Sla::default());
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
    }

    #[test]
    fn two_past_outages_do_not_teach_that_outages_are_normal() {
        let mut times: Vec<i64> = (0..14 * 24).map(|h| h * HOUR).collect();
        // Two afternoons with eight hours lost, a week apart.
        times.retain(|t| !(2 * 24 * HOUR + 13 * HOUR..2 * 24 * HOUR + 21 * HOUR).contains(t));
        times.retain(|t| !(9 * 24 * HOUR + 13 * HOUR..9 * 24 * HOUR + 21 * HOUR).contains(t));
        let newest = *times.last().unwrap();
        let v = judge(&times, newest + 3 * HOUR, Sla::default());
        assert_eq!(v.kind, VerdictKind::Late, "{v:?}");
    }

    #[test]
    fn slas_warn_and_error() {
        let times: Vec<i64> = (0..10).map(|h| h * HOUR).collect();
        let sla = Sla {
            warn_after: Some(1800.0),
            error_after: Some(5400.0),
        };
        let newest = 9 * HOUR;
        assert_eq!(judge(&times, newest + 600, sla).kind, VerdictKind::Ok);
        assert_eq!(judge(&times, newest + 2400, sla).kind, VerdictKind::Warn);
        // The SLA is tighter than the learned 1.5 hours here.
        let v = judge(&times, newest + 5500, sla);
        assert_eq!(v.kind, VerdictKind::Late);
        assert_eq!(v.expected.unwrap().high, 5400.0);
    }

    #[test]
    fn short_history_is_learning() {
        assert_eq!(
            judge(&[0, HOUR], 10 * HOUR, Sla::default()).kind,
            VerdictKind::Learning
        );
        assert_eq!(judge(&[], 10, Sla::default()).kind, VerdictKind::Learning);
    }
}
