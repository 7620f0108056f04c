//! Detectors: pure functions from an observation and its history to a verdict with the
//! expected range beside it. No I/O here, so every rule is tested on numbers alone.

use serde::{Deserialize, Serialize};

use crate::warehouse::Column;

pub mod freshness;
pub mod labelled;
pub mod reference;
pub mod run_rows;
pub mod synthetic;
pub mod volume;

/// Fewer clean observations than this and the detector says `learning`, never a breach.
pub const MIN_HISTORY: usize = 3;
/// How many recent clean observations make the baseline.
pub const BASELINE_WINDOW: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Ok,
    Learning,
    Low,
    High,
    /// Freshness: the table has not loaded for longer than its cadence or its error SLA.
    Late,
    /// Freshness: past the team's `warn_after` SLA, still inside the learned cadence.
    Warn,
    Changed,
    /// The check could not run (see the monitor's health); neither ok nor a breach.
    Unknown,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Ok => "ok",
            VerdictKind::Learning => "learning",
            VerdictKind::Low => "low",
            VerdictKind::High => "high",
            VerdictKind::Late => "late",
            VerdictKind::Warn => "warn",
            VerdictKind::Changed => "changed",
            VerdictKind::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> VerdictKind {
        match text {
            "ok" => VerdictKind::Ok,
            "learning" => VerdictKind::Learning,
            "low" => VerdictKind::Low,
            "high" => VerdictKind::High,
            "late" => VerdictKind::Late,
            "warn" => VerdictKind::Warn,
            "changed" => VerdictKind::Changed,
            _ => VerdictKind::Unknown,
        }
    }

    pub fn is_breach(self) -> bool {
        !matches!(
            self,
            VerdictKind::Ok | VerdictKind::Learning | VerdictKind::Unknown
        )
    }
}

impl std::fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read as [`VerdictKind::parse`] does: a verdict a later version added is `unknown`,
/// never a stored document that cannot be read.
impl<'de> Deserialize<'de> for VerdictKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(VerdictKind::parse(&text))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub low: f64,
    pub high: f64,
    /// The baseline the range is built around.
    pub baseline: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub observed: f64,
    pub expected: Option<Range>,
    /// How far the value sits from its baseline, in robust standard deviations (signed:
    /// below zero is a drop). None while learning and for checks without a spread.
    pub score: Option<f64>,
}

impl Verdict {
    /// A verdict from an expected band: below is low, above is high, inside is ok.
    pub fn banded(
        observed: f64,
        low: f64,
        high: f64,
        baseline: f64,
        score: Option<f64>,
    ) -> Verdict {
        Verdict {
            kind: direction(observed, low, high),
            observed,
            expected: Some(Range {
                low,
                high,
                baseline,
            }),
            score,
        }
    }

    pub fn learning(observed: f64) -> Verdict {
        Verdict {
            kind: VerdictKind::Learning,
            observed,
            expected: None,
            score: None,
        }
    }
}

/// The scale factor that makes the median absolute deviation estimate a standard
/// deviation for normally distributed data.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// Median and robust standard deviation (scaled MAD) of a sample.
pub fn median_and_spread(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    let center = median(&mut sorted);
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    (center, median(&mut deviations) * MAD_TO_SIGMA)
}

/// Low when below the range, high when above, ok inside.
pub fn direction(observed: f64, low: f64, high: f64) -> VerdictKind {
    if observed < low {
        VerdictKind::Low
    } else if observed > high {
        VerdictKind::High
    } else {
        VerdictKind::Ok
    }
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Row count against the median of recent clean observations. `history` must not hold
/// the value under test, nor observations taken while the table was in breach: a table
/// refilling for an hour must not teach the baseline that it is small.
///
/// The band is the wider of 3 scaled MADs and a floor (10% down, 50% up): row counts of a
/// healthy table barely move, so a MAD alone would alarm on ordinary growth.
pub fn row_count(history: &[f64], observed: f64) -> Verdict {
    if history.len() < MIN_HISTORY {
        return Verdict::learning(observed);
    }
    let recent = &history[history.len().saturating_sub(BASELINE_WINDOW)..];
    let (baseline, spread) = median_and_spread(recent);
    let low = (baseline - (3.0 * spread).max(0.10 * baseline)).max(0.0);
    let high = baseline + (3.0 * spread).max(0.50 * baseline);
    Verdict::banded(
        observed,
        low,
        high,
        baseline,
        (spread > 0.0).then(|| (observed - baseline) / spread),
    )
}

/// Row count against the table's own history, read from its timestamp column before
/// dataward has polled it: the rows it held a day ago (`day_ago`) plus what the same 24
/// hours of earlier weeks added (`growths`, oldest first). A table that lost its last
/// day's load is low; a loss spread over every day, which the timestamps cannot tell
/// apart from a table always that size, is not seen here.
///
/// The band is the wider of 3 scaled MADs of the day's growth and half a usual day (a
/// tenth of a percent of the table at least, for a table that does not grow).
pub fn row_count_from_days(day_ago: f64, growths: &[f64], observed: f64) -> Verdict {
    if growths.len() < MIN_HISTORY {
        return Verdict::learning(observed);
    }
    let recent = &growths[growths.len().saturating_sub(BASELINE_WINDOW)..];
    let (growth, spread) = median_and_spread(recent);
    let baseline = day_ago + growth;
    let floor = 0.001 * baseline;
    let low = baseline - (3.0 * spread).max(0.5 * growth).max(floor);
    let high = baseline + (3.0 * spread).max(growth).max(floor);
    Verdict::banded(
        observed,
        low.max(0.0),
        high,
        baseline,
        (spread > 0.0).then(|| (observed - baseline) / spread),
    )
}

/// Row count of a table whose history was rewritten (a full refresh that stamped every
/// row anew), so its days are no baseline, against the `polls` taken before and since
/// (clean, oldest first): their median with a recorded baseline's tolerances until
/// they are enough for [`row_count`]; learning with none.
pub fn row_count_since_rewrite(polls: &[f64], observed: f64) -> Verdict {
    if polls.len() >= MIN_HISTORY {
        return row_count(polls, observed);
    }
    if polls.is_empty() {
        return Verdict::learning(observed);
    }
    row_count_recorded(median(&mut polls.to_vec()), observed)
}

/// Row count against a baseline the team recorded (`expected_rows`), with the same
/// tolerances as a learned one: a refill that loses a tenth is a drop, growth is normal.
pub fn row_count_recorded(baseline: f64, observed: f64) -> Verdict {
    let low = 0.9 * baseline;
    let high = 1.5 * baseline;
    Verdict::banded(observed, low, high, baseline, None)
}

/// A column's null rate (0..1) against its own recent history. A rate that barely
/// moves has a tiny spread, so the band never narrows below two percentage points.
pub fn null_rate(history: &[f64], observed: f64) -> Verdict {
    if history.len() < MIN_HISTORY {
        return Verdict::learning(observed);
    }
    let recent = &history[history.len().saturating_sub(BASELINE_WINDOW)..];
    let (baseline, spread) = median_and_spread(recent);
    let width = (3.0 * spread).max(0.02).max(0.10 * baseline);
    let low = (baseline - width).max(0.0);
    let high = (baseline + width).min(1.0);
    Verdict::banded(
        observed,
        low,
        high,
        baseline,
        (spread > 0.0).then(|| (observed - baseline) / spread),
    )
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum SchemaChange {
    Added {
        column: String,
        data_type: String,
    },
    Removed {
        column: String,
        data_type: String,
    },
    TypeChanged {
        column: String,
        from: String,
        to: String,
    },
}

impl std::fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaChange::Added { column, data_type } => {
                write!(f, "column {column} added ({data_type})")
            }
            SchemaChange::Removed { column, data_type } => {
                write!(f, "column {column} removed (was {data_type})")
            }
            SchemaChange::TypeChanged { column, from, to } => {
                write!(f, "column {column} changed type from {from} to {to}")
            }
        }
    }
}

/// Column changes between two snapshots, matched by case-insensitive name.
pub fn schema_changes(before: &[Column], after: &[Column]) -> Vec<SchemaChange> {
    let find = |cols: &[Column], name: &str| {
        cols.iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .map(|c| c.data_type.clone())
    };
    let mut changes = Vec::new();
    for old in before {
        match find(after, &old.name) {
            None => changes.push(SchemaChange::Removed {
                column: old.name.clone(),
                data_type: old.data_type.clone(),
            }),
            Some(new_type) if !new_type.eq_ignore_ascii_case(&old.data_type) => {
                changes.push(SchemaChange::TypeChanged {
                    column: old.name.clone(),
                    from: old.data_type.clone(),
                    to: new_type,
                })
            }
            Some(_) => {}
        }
    }
    for new in after {
        if find(before, &new.name).is_none() {
            changes.push(SchemaChange::Added {
                column: new.name.clone(),
                data_type: new.data_type.clone(),
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learning_until_enough_history() {
        assert_eq!(row_count(&[100.0, 101.0], 5.0).kind, VerdictKind::Learning);
    }

    #[test]
    fn a_drop_and_a_spike_are_different_verdicts() {
        let history = [20_000.0, 20_050.0, 20_100.0, 20_150.0, 20_200.0];
        let drop = row_count(&history, 4_400.0);
        assert_eq!(drop.kind, VerdictKind::Low);
        let range = drop.expected.unwrap();
        assert!(
            range.low > 17_000.0 && range.baseline == 20_100.0,
            "{range:?}"
        );
        assert_eq!(row_count(&history, 45_000.0).kind, VerdictKind::High);
        assert_eq!(row_count(&history, 20_260.0).kind, VerdictKind::Ok);
    }

    #[test]
    fn one_outlier_in_history_does_not_move_the_baseline() {
        let history = [20_000.0, 20_010.0, 2.0, 20_020.0, 20_030.0];
        let v = row_count(&history, 20_040.0);
        assert_eq!(v.kind, VerdictKind::Ok);
        assert_eq!(v.expected.unwrap().baseline, 20_010.0);
    }

    #[test]
    fn null_rate_learns_then_flags_a_jump_but_not_noise() {
        assert_eq!(null_rate(&[0.01, 0.01], 0.5).kind, VerdictKind::Learning);
        let history = [0.010, 0.012, 0.011, 0.009, 0.010];
        assert_eq!(null_rate(&history, 0.015).kind, VerdictKind::Ok);
        let jump = null_rate(&history, 0.40);
        assert_eq!(jump.kind, VerdictKind::High);
        assert!(jump.expected.unwrap().high <= 0.04);
        // The value under test is not part of its own baseline.
        assert_eq!(null_rate(&history, 0.40).expected.unwrap().baseline, 0.010);
    }

    #[test]
    fn a_row_count_from_days_is_low_when_the_last_day_did_not_load() {
        let growths = [1000.0, 1010.0, 990.0, 1005.0];
        assert_eq!(
            row_count_from_days(70_000.0, &growths[..2], 70_100.0).kind,
            VerdictKind::Learning
        );
        let usual = row_count_from_days(70_000.0, &growths, 71_000.0);
        assert_eq!(usual.kind, VerdictKind::Ok, "{usual:?}");
        assert_eq!(usual.expected.unwrap().baseline, 71_002.5);
        assert_eq!(
            row_count_from_days(70_000.0, &growths, 70_100.0).kind,
            VerdictKind::Low
        );
        assert_eq!(
            row_count_from_days(70_000.0, &growths, 73_500.0).kind,
            VerdictKind::High
        );
        // A table that does not grow keeps a band of its own.
        let still = [0.0, 0.0, 0.0];
        assert_eq!(
            row_count_from_days(5_000.0, &still, 5_002.0).kind,
            VerdictKind::Ok
        );
        assert_eq!(
            row_count_from_days(5_000.0, &still, 4_000.0).kind,
            VerdictKind::Low
        );
    }

    #[test]
    fn a_recorded_row_count_baseline_needs_no_history() {
        assert_eq!(row_count_recorded(1000.0, 500.0).kind, VerdictKind::Low);
        assert_eq!(row_count_recorded(1000.0, 1000.0).kind, VerdictKind::Ok);
    }

    fn col(name: &str, ty: &str) -> Column {
        Column {
            name: name.into(),
            data_type: ty.into(),
        }
    }

    #[test]
    fn schema_changes_name_each_column() {
        let before = [
            col("id", "INTEGER"),
            col("zip_code", "SMALLINT"),
            col("gone", "TEXT"),
        ];
        let after = [
            col("id", "INTEGER"),
            col("ZIP_CODE", "VARCHAR(12)"),
            col("new", "TEXT"),
        ];
        let changes = schema_changes(&before, &after);
        assert_eq!(
            changes,
            vec![
                SchemaChange::TypeChanged {
                    column: "zip_code".into(),
                    from: "SMALLINT".into(),
                    to: "VARCHAR(12)".into()
                },
                SchemaChange::Removed {
                    column: "gone".into(),
                    data_type: "TEXT".into()
                },
                SchemaChange::Added {
                    column: "new".into(),
                    data_type: "TEXT".into()
                },
            ]
        );
        assert!(schema_changes(&after, &after).is_empty());
    }
}
