//! Measuring a check: the SQL pushed down to the warehouse, and nothing else. No state
//! database here, so measurements can run on any thread while the results are judged and
//! stored in one place.
//!
//! Freshness and volume need no stored history: they read the table's own timestamp
//! column over the lookback window, so the very first run can already judge them.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, NaiveTime, Timelike, Utc};

use super::minutes::{self, DayNulls};
use super::DayVolume;
use crate::config::{parse_duration, CheckKind, MonitorConfig};
use crate::detect::{self, freshness, volume, VerdictKind};
use crate::warehouse::DayRows;
use crate::warehouse::{
    Column, DayCount, NullCounts, Relation, TableCounts, Warehouse, WarehouseError,
};

/// Fourteen weeks: eight same-weekday values behind each of the last seven days judged,
/// and the same place in the two months before for a day near a month's end.
pub const DEFAULT_LOOKBACK: Duration = Duration::from_secs(98 * 86_400);
/// null_rate with a timestamp column: the rows loaded in the last day.
pub const DEFAULT_NULL_WINDOW: Duration = Duration::from_secs(86_400);
/// How many recent distinct load times the cadence is learned from.
pub const LOAD_TIMES: usize = 500;

#[derive(Debug, Clone)]
pub enum Measurement {
    Count {
        rows: u64,
        /// What the table's timestamp column says of its past rows, for a first poll;
        /// None without one.
        days: Option<CountHistory>,
        /// Why `days` are no baseline: the table's history was rewritten.
        rewritten: Option<String>,
    },
    Columns(Vec<Column>),
    Nulls {
        rows: u64,
        /// (column, null count), in the order the columns were asked for.
        columns: Vec<(String, u64)>,
        /// Counted over the rows loaded at or after this (Unix seconds); None: the
        /// whole table.
        since: Option<i64>,
        /// The table's own days (by its timestamp column) with each column's nulls in
        /// `columns`' order, what the baseline learns from; None without a timestamp
        /// column (or when they could not be read with the rest): the baseline is
        /// learned from dataward's polls.
        days: Option<Vec<DayNulls>>,
        /// Why `days` are no baseline: the table's history was rewritten.
        rewritten: Option<String>,
    },
    /// Judged here already: the lookback is the history.
    Freshness {
        verdict: detect::Verdict,
    },
    /// The rows of every day of the lookback up to `today`: judged where the stored
    /// calendar is read (incident days, accepted levels), by [`judge_recent_days`].
    Volume {
        counts: Vec<DayCount>,
        today: NaiveDate,
    },
}

/// A row count's history as the table's own timestamps tell it (see
/// [`detect::row_count_from_days`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CountHistory {
    /// The rows stamped before this time yesterday: the table a day ago.
    pub day_ago: u64,
    /// The rows stamped in the same 24 hours one, two, ... weeks earlier, oldest first;
    /// only weeks the table had rows in.
    pub growths: Vec<u64>,
}

impl CountHistory {
    /// From every day of the timestamp column's lookback with rows (oldest first, each
    /// split at `now`'s time of day, or `now` a midnight) and the table's rows (`rows`:
    /// those without a time, or older than the days read, count as old), at `now`,
    /// over [`super::HISTORY_DAYS`]. A day's 24 hours from a time of day are the rows
    /// of one day from it and of the next before it.
    pub fn of(days: &[DayRows], rows: u64, now: i64) -> CountHistory {
        const DAY: i64 = 86_400;
        let now = now.div_euclid(60) * 60;
        let (today, cutoff) = (now.div_euclid(DAY), now.rem_euclid(DAY));
        let before = |d: &DayRows| if cutoff == 0 { 0 } else { d.before_cutoff };
        let day = |n: i64| days.iter().find(|d| d.day == n);
        // The 24 hours up to the time of day now on day `end`.
        let day_up_to = |end: i64| -> u64 {
            day(end - 1).map_or(0, |d| d.rows - before(d)) + day(end).map_or(0, before)
        };
        let since_day_ago = day(today - 1).map_or(0, |d| d.rows - before(d))
            + days
                .iter()
                .filter(|d| d.day >= today)
                .map(|d| d.rows)
                .sum::<u64>();
        let first = days
            .iter()
            .find(|d| d.rows > 0)
            .map_or(i64::MAX, |d| d.day * DAY + d.first_minute);
        let weeks = super::HISTORY_DAYS / 7;
        let growths = (1..=weeks)
            .rev()
            .map(|week| today - week * 7)
            .filter(|&end| (end - 1) * DAY + cutoff >= first)
            .map(day_up_to)
            .collect();
        CountHistory {
            day_ago: rows.saturating_sub(since_day_ago),
            growths,
        }
    }
}

/// What a poll's one read tells of a table's timestamp column over the lookback.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every day with rows, oldest first (see [`minutes::days`]).
    pub days: Vec<DayRows>,
    /// The newest distinct minutes with rows, newest first, at most [`LOAD_TIMES`].
    pub load_times: Vec<i64>,
    /// Each day's nulls per null column, when the read counted them.
    pub day_nulls: Option<Vec<DayNulls>>,
    /// Why the days no longer tell the table's past, when they lost most of their rows
    /// since an earlier poll (see [`minutes::Rewrite`]).
    pub rewritten: Option<String>,
}

/// A volume check's verdict: the headline day (today so far when it breaches, else the
/// last complete day rows were expected on) and the recent days, each judged against
/// the same weekday in prior weeks.
pub struct VolumeDays {
    pub day: String,
    /// The headline day is today up to the time measured.
    pub partial: bool,
    pub verdict: detect::Verdict,
    pub days: Vec<DayVolume>,
    /// The run of breaches the headline is part of.
    pub shift: Option<volume::Shift>,
}

/// What a monitor's settings mean at one moment: the windows its checks read.
pub struct Windows {
    /// Unix seconds: the lookback's start, for freshness.
    pub lookback_since: i64,
    /// Unix seconds: the start of the lookback's first day, for volume.
    pub first_day: i64,
    /// null_rate with a timestamp column: (column, Unix seconds) of the rows counted.
    pub nulls_since: Option<(String, i64)>,
    /// Today's time of day in whole minutes: today so far is the rows before it, and
    /// the prior weeks are cut at the same time.
    pub cutoff: NaiveTime,
}

impl Windows {
    pub fn of(monitor: &MonitorConfig, now: DateTime<Utc>) -> Windows {
        let setting = |text: &Option<String>, default| {
            text.as_deref()
                .and_then(|t| parse_duration(t).ok())
                .unwrap_or(default)
        };
        let lookback_since =
            now.timestamp() - setting(&monitor.lookback, DEFAULT_LOOKBACK).as_secs() as i64;
        let null_window = setting(&monitor.null_window, DEFAULT_NULL_WINDOW);
        let first_day = DateTime::from_timestamp(lookback_since, 0)
            .expect("in range")
            .date_naive();
        Windows {
            lookback_since,
            first_day: since_day_start(first_day),
            nulls_since: monitor
                .timestamp_column
                .clone()
                .map(|column| (column, now.timestamp() - null_window.as_secs() as i64)),
            cutoff: now
                .time()
                .with_second(0)
                .and_then(|t| t.with_nanosecond(0))
                .expect("zero is in range"),
        }
    }
}

/// Runs one check's SQL against the warehouse, a query of its own: the reference the
/// poll's single read per table ([`from_counts`]) is tested against, and what a poll
/// falls back to when that read fails, so each check reports its own error. `now`
/// decides the lookback and null windows, the age of the newest load, which day is the
/// last complete one and how far into today the day has come.
pub fn measure(
    warehouse: &dyn Warehouse,
    monitor: &MonitorConfig,
    check: CheckKind,
    now: DateTime<Utc>,
) -> Result<Measurement, WarehouseError> {
    let relation = Relation::parse(&monitor.table)?;
    let windows = Windows::of(monitor, now);
    let timestamp_column = || timestamp_column(monitor, check);
    match check {
        CheckKind::RowCount => warehouse
            .row_count(&relation)
            .map(|rows| Measurement::Count {
                rows,
                days: None,
                rewritten: None,
            }),
        CheckKind::Schema => {
            table_columns(warehouse.columns(&relation)?, &relation).map(Measurement::Columns)
        }
        CheckKind::NullRate => {
            let names = match &monitor.null_columns {
                Some(names) => names.clone(),
                None => column_names(warehouse.columns(&relation)?, &relation)?,
            };
            let window = windows
                .nulls_since
                .as_ref()
                .map(|(column, at)| (column.as_str(), *at));
            let counts = warehouse.null_counts(&relation, &names, window)?;
            Ok(nulls(names, counts, &windows, None, None))
        }
        CheckKind::Freshness => {
            let times = warehouse.load_times(
                &relation,
                timestamp_column()?,
                windows.lookback_since,
                LOAD_TIMES,
            )?;
            Ok(freshness(monitor, &times, now))
        }
        CheckKind::Volume => {
            let counts = warehouse.daily_counts(
                &relation,
                timestamp_column()?,
                windows.first_day,
                windows.cutoff,
            )?;
            Ok(Measurement::Volume {
                counts,
                today: now.date_naive(),
            })
        }
        // The config refuses it in a monitor's checks.
        CheckKind::FailedRun => Err(WarehouseError::Refused(
            "failed_run is not measured in a warehouse".to_string(),
        )),
    }
}

/// One check measured from the poll's single read of its table: `counts` from
/// [`Warehouse::scan`] (nulls counted for `null_names`), `history` what it read of the
/// timestamp column. The same measurement [`measure`] takes from separate queries.
/// None for the schema check, which reads the catalog instead. `now` is the poll's
/// time, or for a row count a midnight before it (see [`CountHistory::of`]).
pub fn from_counts(
    monitor: &MonitorConfig,
    check: CheckKind,
    counts: &TableCounts,
    null_names: &[String],
    history: &History,
    now: DateTime<Utc>,
) -> Option<Measurement> {
    let windows = Windows::of(monitor, now);
    Some(match check {
        CheckKind::RowCount => Measurement::Count {
            rows: counts.rows,
            days: (monitor.timestamp_column.is_some() && !history.days.is_empty())
                .then(|| CountHistory::of(&history.days, counts.rows, now.timestamp())),
            rewritten: history.rewritten.clone(),
        },
        CheckKind::NullRate => nulls(
            null_names.to_vec(),
            counts.nulls.clone(),
            &windows,
            history.day_nulls.clone(),
            history.rewritten.clone(),
        ),
        CheckKind::Freshness => freshness(monitor, &history.load_times, now),
        CheckKind::Volume => Measurement::Volume {
            counts: minutes::daily_counts(&history.days, windows.first_day),
            today: now.date_naive(),
        },
        CheckKind::Schema | CheckKind::FailedRun => return None,
    })
}

fn timestamp_column(monitor: &MonitorConfig, check: CheckKind) -> Result<&str, WarehouseError> {
    monitor.timestamp_column.as_deref().ok_or_else(|| {
        WarehouseError::Query(format!(
            "the {} check needs timestamp_column",
            check.as_str()
        ))
    })
}

/// A table's columns as the catalog gave them. A table without columns does not
/// exist: a health problem to show, never an empty snapshot that reads as "ok, 0
/// columns".
pub fn table_columns(
    columns: Vec<Column>,
    relation: &Relation,
) -> Result<Vec<Column>, WarehouseError> {
    if columns.is_empty() {
        return Err(missing_table(relation));
    }
    Ok(columns)
}

/// null_rate without `null_columns`: every column of the table.
pub fn column_names(
    columns: Vec<Column>,
    relation: &Relation,
) -> Result<Vec<String>, WarehouseError> {
    Ok(table_columns(columns, relation)?
        .into_iter()
        .map(|c| c.name)
        .collect())
}

/// With a timestamp column, the rows loaded lately: a bad load shows in its own rows at
/// once instead of being diluted by years of good ones.
fn nulls(
    names: Vec<String>,
    counts: NullCounts,
    windows: &Windows,
    days: Option<Vec<DayNulls>>,
    rewritten: Option<String>,
) -> Measurement {
    Measurement::Nulls {
        rows: counts.rows,
        columns: names.into_iter().zip(counts.nulls).collect(),
        since: windows.nulls_since.as_ref().map(|(_, at)| *at),
        days,
        rewritten,
    }
}

fn freshness(monitor: &MonitorConfig, times: &[i64], now: DateTime<Utc>) -> Measurement {
    let seconds = |text: &Option<String>| {
        text.as_deref()
            .and_then(|t| parse_duration(t).ok())
            .map(|d| d.as_secs_f64())
    };
    let sla = freshness::Sla {
        warn_after: seconds(&monitor.warn_after),
        error_after: seconds(&monitor.error_after),
    };
    Measurement::Freshness {
        verdict: freshness::judge(times, now.timestamp(), sla),
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
/// else the last complete day. The series starts at the first day with rows: before it
/// the table was empty or did not exist, which is not weeks of zero-volume days. (It
/// reaches back a week at least, so the recent days are all listed; a series that
/// short is learning throughout.) Timestamps that are all at midnight are dates with
/// no time of day, so today is not judged until it is complete.
///
/// Days from `unbuilt_from` on are not yet built by the table's job: a day short among
/// them is not judged (verdict unknown, `not_built`), and never the headline.
pub fn judge_recent_days(
    counts: &[DayCount],
    today: NaiveDate,
    calendar: &volume::Calendar,
    unbuilt_from: Option<NaiveDate>,
) -> VolumeDays {
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
    let mut recent = volume::recent(&days, timed.then_some(so_far.as_slice()), first, calendar);
    let mut not_built = Vec::new();
    for day in &mut recent.days {
        let unbuilt = unbuilt_from.is_some_and(|from| volume::date_at(first, day.index) >= from);
        if unbuilt && day.verdict.kind == VerdictKind::Low {
            // Partial, so the headline is the newest day the job has built.
            day.partial = true;
            day.verdict.kind = VerdictKind::Unknown;
            not_built.push(day.index);
        }
    }
    let headline = recent.headline().expect("a week of complete days");
    VolumeDays {
        day: volume::date_at(first, headline.index).to_string(),
        partial: headline.partial,
        verdict: headline.verdict,
        shift: recent.headline_shift(),
        days: recent
            .days
            .iter()
            .map(|d| DayVolume {
                day: volume::date_at(first, d.index).to_string(),
                rows: d.verdict.observed,
                partial: d.partial,
                verdict: d.verdict.kind,
                expected: d.verdict.expected,
                not_built: not_built.contains(&d.index),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_count_history_is_the_table_a_day_ago_and_the_same_hours_of_earlier_weeks() {
        const DAY: i64 = 86_400;
        let now = 100 * DAY + 3600;
        // Ten rows a day for 30 days, at noon; today's not in yet. At 01:00 none of a
        // day's rows are before the time of day.
        let days: Vec<DayRows> = (70..100)
            .map(|day| DayRows {
                day,
                rows: 10,
                at_midnight: 0,
                before_cutoff: 0,
                first_minute: DAY / 2,
            })
            .collect();
        // 5 rows without a time, or older than the minutes kept.
        let history = CountHistory::of(&days, 305, now);
        assert_eq!(history.day_ago, 295, "yesterday noon's 10 rows came after");
        // The same 24 hours one to four weeks back: only weeks the table had rows in.
        assert_eq!(history.growths, vec![10, 10, 10, 10]);
        assert!(CountHistory::of(&[], 5, now).growths.is_empty());
        // At a midnight (a row count waiting for a build), whole days: day 99's rows
        // came after midnight on day 99.
        let midnight = CountHistory::of(&days, 305, 100 * DAY);
        assert_eq!(midnight.day_ago, 295);
        assert_eq!(midnight.growths, vec![10, 10, 10, 10]);
        // Split at 13:00 of the day the first rows came: the week that starts at its
        // noon counts, the one before does not.
        let at_one = 99 * DAY + 13 * 3600;
        let split: Vec<DayRows> = days
            .iter()
            .map(|d| DayRows {
                before_cutoff: 10,
                ..*d
            })
            .collect();
        let history = CountHistory::of(&split, 305, at_one);
        assert_eq!(history.day_ago, 295, "day 98's noon is more than a day ago");
        assert_eq!(
            history.growths.len(),
            4,
            "weeks ending on days 92, 85, 78, 71"
        );
    }
}
