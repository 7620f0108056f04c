//! Measuring a check: the SQL pushed down to the warehouse, and nothing else. No state
//! database here, so measurements can run on any thread while the results are judged and
//! stored in one place.
//!
//! Freshness and volume need no stored history: they read the table's own timestamp
//! column over the lookback window, so the very first run can already judge them.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, Utc};

use crate::config::{parse_duration, CheckKind, MonitorConfig};
use crate::detect::{self, freshness, volume};
use crate::warehouse::{Column, Relation, Warehouse, WarehouseError};

/// Ten weeks: enough same-weekday history for the volume baseline.
pub const DEFAULT_LOOKBACK: Duration = Duration::from_secs(70 * 86_400);
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
    },
    /// Judged here already: the lookback is the history.
    Freshness {
        verdict: detect::Verdict,
    },
    /// The last complete day, judged against the same weekday in prior weeks.
    Volume {
        day: Option<String>,
        verdict: detect::Verdict,
    },
}

/// Runs one check's SQL against the warehouse. `now` decides the lookback window, the
/// age of the newest load and which day is the last complete one.
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
            let counts = warehouse.null_counts(&relation, &names)?;
            Ok(Measurement::Nulls {
                rows: counts.rows,
                columns: names.into_iter().zip(counts.nulls).collect(),
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
            let counts = warehouse.daily_counts(
                &relation,
                timestamp_column()?,
                since_day_start(since_day),
            )?;
            Ok(judge_last_complete_day(&counts, now.date_naive()))
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

/// Yesterday (today is still loading), against the same weekday in the weeks before.
/// The series starts at the first day with rows: before it the table was empty or did
/// not exist, which is not weeks of zero-volume days.
pub fn judge_last_complete_day(counts: &[(NaiveDate, u64)], today: NaiveDate) -> Measurement {
    let yesterday = today - Days::new(1);
    let first = counts.iter().map(|(d, _)| *d).min().unwrap_or(yesterday);
    if first > yesterday {
        return Measurement::Volume {
            day: Some(yesterday.to_string()),
            verdict: detect::Verdict::learning(0.0),
        };
    }
    let days = volume::fill_days(counts, first, yesterday);
    Measurement::Volume {
        day: Some(yesterday.to_string()),
        verdict: volume::judge_day(&days, days.len() - 1),
    }
}
