//! Measuring a check: the SQL pushed down to the warehouse, and nothing else. No state
//! database here, so measurements can run on any thread while the results are judged and
//! stored in one place.
//!
//! Freshness and volume need no stored history: they read the table's own timestamp
//! column over the lookback window, so the very first run can already judge them.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, Timelike, Utc};

use super::DayVolume;
use crate::config::{parse_duration, CheckKind, MonitorConfig};
use crate::detect::{self, freshness, volume};
use crate::warehouse::{Column, DayCount, Relation, Warehouse, WarehouseError};

/// Ten weeks: enough same-weekday history for the volume baseline.
pub const DEFAULT_LOOKBACK: Duration = Duration::from_secs(70 * 86_400);
/// null_rate with a timestamp column: the rows loaded in the last day.
pub const DEFAULT_NULL_WINDOW: Duration = Duration::from_secs(86_400);
/// How many recent distinct load times the cadence is learned from.
pub const LOAD_TIMES: usize = 500;

#[derive(Debug, Clone)]
pub enum Measurement {
    Count(u64),
    Columns(Vec<Column>),
    Nulls {
        rows: u64,
        /// (column, null count), in the order the columns were asked for.
        columns: Vec<(String, u64)>,
        /// Counted over the rows loaded at or after this (Unix seconds); None: the
        /// whole table.
        since: Option<i64>,
    },
    /// Judged here already: the lookback is the history.
    Freshness {
        verdict: detect::Verdict,
    },
    /// The headline day (today so far when it breaches, else yesterday) and the recent
    /// days, each judged against the same weekday in prior weeks.
    Volume {
        day: String,
        /// The headline day is today up to the time measured.
        partial: bool,
        verdict: detect::Verdict,
        days: Vec<DayVolume>,
    },
}

/// Runs one check's SQL against the warehouse. `now` decides the lookback and null
/// windows, the age of the newest load, which day is the last complete one and how far
/// into today the day has come.
pub fn measure(
    warehouse: &dyn Warehouse,
    monitor: &MonitorConfig,
    check: CheckKind,
    now: DateTime<Utc>,
) -> Result<Measurement, WarehouseError> {
    let relation = Relation::parse(&monitor.table)?;
    let lookback = monitor
        .lookback
        .as_deref()
        .and_then(|text| parse_duration(text).ok())
        .unwrap_or(DEFAULT_LOOKBACK);
    let since = now.timestamp() - lookback.as_secs() as i64;
    let null_window = monitor
        .null_window
        .as_deref()
        .and_then(|text| parse_duration(text).ok())
        .unwrap_or(DEFAULT_NULL_WINDOW);
    let timestamp_column = || {
        monitor.timestamp_column.as_deref().ok_or_else(|| {
            WarehouseError::Query(format!(
                "the {} check needs timestamp_column",
                check.as_str()
            ))
        })
    };
    match check {
        CheckKind::RowCount => warehouse.row_count(&relation).map(Measurement::Count),
        CheckKind::Schema => {
            // A table without columns does not exist: a health problem to show, never
            // an empty snapshot that reads as "ok, 0 columns".
            let columns = warehouse.columns(&relation)?;
            if columns.is_empty() {
                return Err(missing_table(&relation));
            }
            Ok(Measurement::Columns(columns))
        }
        CheckKind::NullRate => {
            let names = match &monitor.null_columns {
                Some(names) => names.clone(),
                None => {
                    let columns = warehouse.columns(&relation)?;
                    if columns.is_empty() {
                        return Err(missing_table(&relation));
                    }
                    columns.into_iter().map(|c| c.name).collect()
                }
            };
            // With a timestamp column, the rows loaded lately: a bad load shows in its
            // own rows at once instead of being diluted by years of good ones.
            let window = monitor
                .timestamp_column
                .as_deref()
                .map(|column| (column, now.timestamp() - null_window.as_secs() as i64));
            let counts = warehouse.null_counts(&relation, &names, window)?;
            Ok(Measurement::Nulls {
                rows: counts.rows,
                columns: names.into_iter().zip(counts.nulls).collect(),
                since: window.map(|(_, at)| at),
            })
        }
        CheckKind::Freshness => {
            let times = warehouse.load_times(&relation, timestamp_column()?, since, LOAD_TIMES)?;
            let seconds = |text: &Option<String>| {
                text.as_deref()
                    .and_then(|t| parse_duration(t).ok())
                    .map(|d| d.as_secs_f64())
            };
            let sla = freshness::Sla {
                warn_after: seconds(&monitor.warn_after),
                error_after: seconds(&monitor.error_after),
            };
            Ok(Measurement::Freshness {
                verdict: freshness::judge(&times, now.timestamp(), sla),
            })
        }
        CheckKind::Volume => {
            let since_day = DateTime::from_timestamp(since, 0)
                .expect("in range")
                .date_naive();
            // Whole seconds: every engine compares times of day at that precision.
            let cutoff = now.time().with_nanosecond(0).expect("zero is in range");
            let counts = warehouse.daily_counts(
                &relation,
                timestamp_column()?,
                since_day_start(since_day),
                cutoff,
            )?;
            Ok(judge_recent_days(&counts, now.date_naive()))
        }
    }
}

fn missing_table(relation: &Relation) -> WarehouseError {
    WarehouseError::Query(format!("table {relation} does not exist"))
}

fn since_day_start(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc()
        .timestamp()
}

/// The last seven complete days and today so far, each against the same weekday in the
/// weeks before it (see [`volume::recent`]); the headline is today when it breaches,
/// else yesterday. The series starts at the first day with rows: before it the table
/// was empty or did not exist, which is not weeks of zero-volume days. (It reaches back
/// a week at least, so the recent days are all listed; a series that short is learning
/// throughout.) Timestamps that are all at midnight are dates with no time of day, so
/// today is not judged until it is complete.
pub fn judge_recent_days(counts: &[DayCount], today: NaiveDate) -> Measurement {
    let first = counts
        .iter()
        .map(|c| c.day)
        .min()
        .unwrap_or(today)
        .min(today - Days::new(volume::RECENT_DAYS as u64));
    let series = |count: fn(&DayCount) -> u64| {
        let pairs: Vec<(NaiveDate, u64)> = counts.iter().map(|c| (c.day, count(c))).collect();
        volume::fill_days(&pairs, first, today)
    };
    let days = series(|c| c.rows);
    let so_far = series(|c| c.before_cutoff);
    let timed = counts.iter().any(|c| c.at_midnight < c.rows);
    let judged = volume::recent(&days, timed.then_some(so_far.as_slice()));
    let headline = volume::headline(&judged).expect("a week of complete days");
    Measurement::Volume {
        day: volume::date_at(first, headline.index).to_string(),
        partial: headline.partial,
        verdict: headline.verdict,
        days: judged
            .iter()
            .map(|d| DayVolume {
                day: volume::date_at(first, d.index).to_string(),
                rows: d.verdict.observed,
                partial: d.partial,
                verdict: d.verdict.kind,
                expected: d.verdict.expected,
            })
            .collect(),
    }
}
