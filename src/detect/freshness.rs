//! Freshness: how long since the table last loaded, against its own load cadence and
//! the team's optional SLA.
//!
//! The cadence is learned from the gaps between recent distinct load times. A table that
//! loads hourly but pauses every night must not be late every night, so the allowance is
//! the longest pause the table normally takes: the second-longest gap seen (the longest
//! may itself be an outage we should not learn from), with half as much again for slack.

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
