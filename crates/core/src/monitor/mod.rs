//! Monitors: run each configured check against its warehouse, judge it with the
//! detectors, and store the observation. A warehouse that cannot be reached becomes the
//! monitor's health, never a data verdict.

pub mod baseline;
pub mod builds;
pub mod checks;
pub mod cli;
pub mod inject;
pub mod minutes;
pub mod older_days;
pub mod poller;

use crate::store::prelude::*;
use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::config::{CheckKind, MonitorConfig};
use crate::detect::{self, volume, Range, SchemaChange, VerdictKind};
use crate::warehouse::{Column, WarehouseError};

pub use checks::Measurement;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    Ok,
    Unreachable,
    Error,
    /// Not run: the poll's query guard (`max_queries_per_poll`) had been reached.
    Skipped,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Unreachable => "unreachable",
            Health::Error => "error",
            Health::Skipped => "skipped",
        }
    }

    pub(crate) fn parse(text: &str) -> Health {
        match text {
            "ok" => Health::Ok,
            "unreachable" => Health::Unreachable,
            "skipped" => Health::Skipped,
            _ => Health::Error,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    pub monitor: String,
    pub table: String,
    pub check: CheckKind,
    pub at: Timestamp,
    pub value: Option<f64>,
    pub verdict: VerdictKind,
    pub expected: Option<Range>,
    pub health: Health,
    /// Schema snapshots: the columns seen and what changed since the last snapshot.
    pub detail: Detail,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<Column>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<SchemaChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// null_rate: the column this observation is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// volume: the day judged ("2024-05-11").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
    /// volume: the day judged is today, up to the observation's time (`at`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// volume: the last seven complete days and today so far, oldest first, each
    /// against its own prior same weekdays: a later poll can tell whether a day
    /// recovered (it was reloaded, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub days: Vec<DayVolume>,
    /// null_rate: measured over the rows whose timestamp is at or after this, not the
    /// whole table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    /// Robust standard deviations from the baseline, where the detector has a spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// volume: the run of breaches the day judged is part of (a new level, when long
    /// enough: `dataward accept` makes it the normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<volume::Shift>,
    /// row_count, null_rate: why the baseline is learned from dataward's own polls
    /// rather than the table's days ("no timestamp_column").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_polls: Option<String>,
    /// volume: the days short but not yet built by the table's job, and its last build
    /// ("2024-05-14 not yet built: model.shop.orders last built 2024-05-14T03:10:00Z").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_built: Option<String>,
    /// volume: the job whose runs' OpenLineage row counts these are, for a table
    /// dataward does not count itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
}

/// One day's volume as a volume observation saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayVolume {
    /// "2024-05-11".
    pub day: String,
    pub rows: f64,
    /// Today up to the observation's time, judged on the rows before that time of day.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub verdict: VerdictKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Range>,
    /// The day's rows are short, but the table's job has not yet built it: not judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_built: bool,
}

impl Observation {
    /// "20,113" or the expected band, for people.
    pub fn expected_text(&self) -> String {
        match (&self.expected, self.check) {
            (Some(r), CheckKind::NullRate) => {
                format!("{:.2}%..{:.2}%", r.low * 100.0, r.high * 100.0)
            }
            (Some(r), CheckKind::Freshness) => format!("within {}", human_seconds(r.high)),
            // "2,484..3,726 rows": the unit once, after the band.
            (Some(r), check) => format!("{}..{}", thousands(r.low), amount(check, r.high)),
            (None, CheckKind::Schema) => "no change".to_string(),
            (None, _) if self.verdict == VerdictKind::Unknown => "-".to_string(),
            (None, _) => match &self.detail.from_polls {
                Some(why) => format!("learning from polls ({why})"),
                None => "learning".to_string(),
            },
        }
    }

    /// The check as people name it: `null_rate(amount)` for a per-column check.
    pub fn check_label(&self) -> String {
        match &self.detail.column {
            Some(column) => format!("{}({column})", self.check.as_str()),
            None => self.check.as_str().to_string(),
        }
    }

    pub fn observed_text(&self) -> String {
        if let Some(message) = &self.detail.message {
            return message.clone();
        }
        let mut text = self.measured_text();
        if let Some(not_built) = &self.detail.not_built {
            text = format!("{text}; {not_built}");
        }
        match self.detail.shift.filter(|shift| shift.days > 1) {
            // "16,020; 9 days at 1.60x the usual since 2024-05-03".
            Some(shift) => format!(
                "{text}; {} days at {:.2}x the usual since {}",
                shift.days, shift.ratio, shift.since
            ),
            None => text,
        }
    }

    fn measured_text(&self) -> String {
        match self.check {
            CheckKind::Volume if self.detail.partial => match (self.value, &self.detail.day) {
                // Today so far: "4,120 rows by 14:05 on 2024-05-14".
                (Some(v), Some(day)) => {
                    let time = self.at.hour_minute();
                    format!("{} by {time} on {day}", amount(self.check, v))
                }
                _ => String::new(),
            },
            CheckKind::RowCount | CheckKind::Volume => self
                .value
                .map(|v| amount(self.check, v))
                .unwrap_or_default(),
            CheckKind::NullRate => match (self.value, &self.detail.since) {
                (Some(v), Some(since)) => {
                    format!("{:.2}% null in rows loaded since {since}", v * 100.0)
                }
                (Some(v), None) => format!("{:.2}% null", v * 100.0),
                (None, _) => String::new(),
            },
            CheckKind::Freshness => self
                .value
                .map(|v| format!("{} since the last load", human_seconds(v)))
                .unwrap_or_else(|| "no loads in the lookback".to_string()),
            CheckKind::Schema if self.detail.changes.is_empty() => {
                let count = self.detail.columns.as_ref().map_or(0, Vec::len);
                format!("{count} column{}", if count == 1 { "" } else { "s" })
            }
            CheckKind::Schema => self
                .detail
                .changes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            // No monitor measures it (the config refuses it in `checks`).
            CheckKind::FailedRun => String::new(),
        }
    }
}

/// Unix seconds as "2024-05-11T02:30:00Z".
/// A value of a check in its unit: "1,214 rows", "1d02h" (of time), "50.0%". The one
/// place a figure gets its unit: what monitors show, causes, evidence and receipts.
pub fn amount(check: CheckKind, value: f64) -> String {
    match check {
        CheckKind::RowCount | CheckKind::Volume => format!("{} rows", thousands(value)),
        CheckKind::Freshness => human_seconds(value),
        CheckKind::NullRate => format!("{:.1}%", value * 100.0),
        CheckKind::Schema => format!("{} columns", thousands(value)),
        CheckKind::FailedRun if value == 1.0 => "1 failed run".to_string(),
        CheckKind::FailedRun => format!("{} failed runs", thousands(value)),
    }
}

/// 5400.0 -> "1h30m".
pub fn human_seconds(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// 20113.0 -> "20,113".
pub fn thousands(value: f64) -> String {
    let n = value.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Judges a measurement against the stored history and stores the result: one
/// observation per check, or per column for null_rate. A warehouse error becomes the
/// monitor's health with the message, and the verdict `unknown`.
pub fn judge(
    state: &dyn Store,
    monitor: &MonitorConfig,
    check: CheckKind,
    at: Timestamp,
    built: Option<&builds::Build>,
    measured: Result<Measurement, WarehouseError>,
) -> Result<Vec<Observation>> {
    let name = crate::config::Config::monitor_name(monitor);
    let blank = Observation {
        monitor: name.clone(),
        table: monitor.table.clone(),
        check,
        at,
        value: None,
        verdict: VerdictKind::Unknown,
        expected: None,
        health: Health::Ok,
        detail: Detail::default(),
    };
    let with_verdict = |mut o: Observation, v: detect::Verdict| {
        o.value = v.observed.is_finite().then_some(v.observed);
        o.verdict = v.kind;
        o.expected = v.expected;
        o.detail.score = v.score;
        o
    };
    let mut out = Vec::new();
    match measured {
        Ok(Measurement::Count {
            rows,
            days,
            rewritten,
        }) => {
            let count = rows as f64;
            let mut observation = blank;
            let verdict = match monitor.expected_rows {
                Some(baseline) => detect::row_count_recorded(baseline as f64, count),
                None => {
                    // Learned from the polls once there are enough of them: they see
                    // rows deleted, which the timestamps of the rows left cannot.
                    // Before that (a first poll), from the table's own days.
                    // An accepted new level restarts at the accepted polls.
                    let polls = clean_history(state, &name, check, "", false)?;
                    let accepted = baseline::learned_restart(state, &name, check, "")? != (0, 0);
                    let from_days = polls.len() < detect::MIN_HISTORY && !accepted;
                    let rewritten = match rewritten {
                        Some(why) => Some(why),
                        None if from_days && days.is_some() => {
                            rewritten_earlier(state, &name, check, None)?
                        }
                        None => None,
                    };
                    match days {
                        // The table before its rewrite, as the polls saw it, until the
                        // polls are enough: a refresh that lost rows is still low.
                        Some(_) if from_days && rewritten.is_some() => {
                            observation.detail.from_polls = rewritten;
                            // With no clean poll, the breached ones still saw how
                            // many rows the table held before (a stall is low on
                            // freshness, not on its size): rows deleted are a drop.
                            let before = if polls.is_empty() {
                                history(state, &name, check)?
                                    .iter()
                                    .filter_map(|o| o.value)
                                    .collect()
                            } else {
                                polls
                            };
                            detect::row_count_since_rewrite(&before, count)
                        }
                        Some(days) if from_days => {
                            // The poll read the day as of where the table's job built
                            // it (see `PollRead::store`).
                            if let Some(build) = built {
                                let cutoff = build.unbuilt_from(at.naive().date());
                                observation.detail.not_built = Some(format!(
                                    "judged up to {}: rows after it not yet built: {} last built {}",
                                    Timestamp::from_naive(cutoff.and_time(chrono::NaiveTime::MIN)),
                                    build.model,
                                    build.finished
                                ));
                            }
                            let growths: Vec<f64> =
                                days.growths.iter().map(|&g| g as f64).collect();
                            detect::row_count_from_days(days.day_ago as f64, &growths, count)
                        }
                        Some(_) => detect::row_count(&polls, count),
                        None => {
                            observation.detail.from_polls = Some(not_from_days(monitor));
                            detect::row_count(&polls, count)
                        }
                    }
                }
            };
            out.push(with_verdict(observation, verdict));
        }
        Ok(Measurement::Columns(columns)) => {
            let mut observation = blank;
            let previous = latest_columns(state, &name)?;
            observation.value = Some(columns.len() as f64);
            observation.verdict = match &previous {
                None => VerdictKind::Learning,
                Some(before) => {
                    observation.detail.changes = detect::schema_changes(before, &columns);
                    if observation.detail.changes.is_empty() {
                        VerdictKind::Ok
                    } else {
                        VerdictKind::Changed
                    }
                }
            };
            observation.detail.columns = Some(columns);
            out.push(observation);
        }
        Ok(Measurement::Nulls {
            rows,
            columns,
            since,
            days,
            rewritten,
        }) => {
            let window_start = since;
            let since = since.and_then(Timestamp::from_unix);
            let excluded = match &days {
                Some(_) => baseline::read(state, &name, at.naive().date())?.excluded,
                None => Vec::new(),
            };
            for (index, (column, nulls)) in columns.into_iter().enumerate() {
                let mut observation = blank.clone();
                observation.detail.column = Some(column.clone());
                observation.detail.since = since;
                if rows == 0 {
                    observation.verdict = VerdictKind::Learning;
                    observation.detail.message = Some(match &since {
                        Some(since) => format!("no rows loaded since {since}"),
                        None => "no rows to measure".to_string(),
                    });
                    out.push(observation);
                    continue;
                }
                let rate = nulls as f64 / rows as f64;
                // A rate over recent rows is judged against rates over recent rows only:
                // a whole table's rate from before the window was set is another
                // measure.
                let polls = clean_history(state, &name, check, &column, since.is_some())?;
                // Until the polls are enough, the table's own days: a fault present at
                // the first poll is judged at once. Then the polls, which also see old
                // rows rewritten (the days are re-read as they are now), and a new
                // level someone accepted.
                let accepted = baseline::learned_restart(state, &name, check, &column)? != (0, 0);
                let days_phase = polls.len() < detect::MIN_HISTORY && !accepted;
                // A table rewritten since an earlier poll: its days are no baseline.
                let rewritten = match &rewritten {
                    Some(why) => Some(why.clone()),
                    None if days_phase && days.is_some() => {
                        rewritten_earlier(state, &name, check, Some(&column))?
                    }
                    None => None,
                };
                let from_days = match (&days, window_start) {
                    _ if rewritten.is_some() => None,
                    (Some(days), Some(start)) if days_phase => {
                        Some(daily_rates(days, index, start, &excluded))
                            .filter(|rates| rates.len() >= detect::MIN_HISTORY)
                    }
                    _ => None,
                };
                let history = match from_days {
                    Some(rates) => rates,
                    None => {
                        if days.is_none() {
                            observation.detail.from_polls = Some(not_from_days(monitor));
                        } else if days_phase {
                            observation.detail.from_polls = rewritten;
                        }
                        polls
                    }
                };
                out.push(with_verdict(observation, detect::null_rate(&history, rate)));
            }
        }
        Ok(Measurement::Freshness { verdict }) => out.push(with_verdict(blank, verdict)),
        Ok(Measurement::Volume { counts, today }) => {
            let stored = baseline::read(state, &name, today)?;
            let calendar = volume::Calendar {
                holidays: &monitor.holidays,
                excluded: &stored.excluded,
                restarts: &stored.restarts,
            };
            let unbuilt_from = built.map(|b| b.unbuilt_from(today));
            let judged = checks::judge_recent_days(&counts, today, &calendar, unbuilt_from);
            let mut observation = with_verdict(blank, judged.verdict);
            if let Some(build) = built {
                let days: Vec<&str> = judged
                    .days
                    .iter()
                    .filter(|d| d.not_built)
                    .map(|d| d.day.as_str())
                    .collect();
                if !days.is_empty() {
                    observation.detail.not_built = Some(format!(
                        "{} not yet built: {} last built {}",
                        days.join(" and "),
                        build.model,
                        build.finished
                    ));
                }
            }
            observation.detail.day = Some(judged.day);
            observation.detail.partial = judged.partial;
            observation.detail.days = judged.days;
            observation.detail.shift = judged.shift;
            out.push(observation);
        }
        Err(error) => {
            let mut observation = blank;
            observation.health = match error {
                WarehouseError::Unreachable(_) => Health::Unreachable,
                WarehouseError::Query(_) | WarehouseError::Refused(_) => Health::Error,
                WarehouseError::Skipped(_) => Health::Skipped,
            };
            observation.detail.message = Some(error.to_string());
            out.push(observation);
        }
    }
    for observation in &mut out {
        observation.detail.expected = observation.expected;
        state.insert_observation(observation)?;
    }
    Ok(out)
}

/// Why a row count or null rate learns from dataward's polls rather than the table's
/// own days: it has no timestamp column, or this poll did not read its days (the
/// table's one read failed, so the check ran its own query).
pub const OWN_QUERY_NO_DAYS: &str =
    "the table's days were not read this poll (its check ran its own query)";

fn not_from_days(monitor: &MonitorConfig) -> String {
    match monitor.timestamp_column {
        None => "no timestamp_column".to_string(),
        Some(_) => OWN_QUERY_NO_DAYS.to_string(),
    }
}

/// The note of an earlier poll of `monitor`'s `check` (on `column`) that found the
/// table's history rewritten (see [`minutes::Rewrite`]): until the polls are enough to
/// learn from, the days read after a rewrite are no more the table's past than those
/// read at it. Read only while the polls are few, so the observations are few too.
fn rewritten_earlier(
    state: &dyn Store,
    monitor: &str,
    check: CheckKind,
    column: Option<&str>,
) -> Result<Option<String>> {
    Ok(history(state, monitor, check)?
        .into_iter()
        .filter(|o| o.detail.column.as_deref() == column)
        .filter_map(|o| o.detail.from_polls)
        .find(|why| why.starts_with(minutes::HISTORY_REWRITTEN)))
}

/// How many of the table's days a null_rate baseline reads back: ten weeks.
pub const HISTORY_DAYS: i64 = 70;

/// The null rates of column `index` on the table's days before the one the window
/// starts in (`window_start`, Unix seconds), the last [`HISTORY_DAYS`] of them, oldest
/// first: days without rows and days of an incident on the monitor (`excluded`) left
/// out. The window's own rows are what is judged, never part of its baseline.
fn daily_rates(
    days: &[minutes::DayNulls],
    index: usize,
    window_start: i64,
    excluded: &[std::ops::RangeInclusive<chrono::NaiveDate>],
) -> Vec<f64> {
    let first_judged = window_start.div_euclid(86_400);
    days.iter()
        .filter(|d| d.day < first_judged && d.day >= first_judged - HISTORY_DAYS && d.rows > 0)
        .filter(|d| {
            let date = chrono::DateTime::from_timestamp(d.day * 86_400, 0)
                .expect("a stored day")
                .date_naive();
            !excluded.iter().any(|span| span.contains(&date))
        })
        .filter_map(|d| Some(*d.nulls.get(index)? as f64 / d.rows as f64))
        .collect()
}

/// Values of healthy, non-breaching observations, oldest first: the baseline's input.
/// `subject` is the column for per-column checks, empty otherwise; `windowed` picks the
/// observations measured over a window of recent rows (`since`), or those that were not.
/// Once someone accepted a run of breaches as the new level, only the observations from
/// that run on count, the accepted breaches among them: the old level is forgotten.
fn clean_history(
    state: &dyn Store,
    monitor: &str,
    check: CheckKind,
    subject: &str,
    windowed: bool,
) -> Result<Vec<f64>> {
    let (since_id, through_id) = baseline::learned_restart(state, monitor, check, subject)?;
    state.baseline_values(monitor, check, subject, windowed, since_id, through_id)
}

fn latest_columns(state: &dyn Store, monitor: &str) -> Result<Option<Vec<Column>>> {
    Ok(state
        .latest_schema(monitor)?
        .and_then(|detail| detail.columns))
}

/// Every stored observation of one monitor and check, oldest first.
pub fn history(state: &dyn Store, monitor: &str, check: CheckKind) -> Result<Vec<Observation>> {
    state.observation_history(monitor, check)
}

/// The latest observation of every (monitor, check, column): what the engine shows and
/// verifies against, rebuilt from the database at start.
pub fn latest_all(state: &dyn Store) -> Result<Vec<Observation>> {
    state.latest_observations()
}

/// Observations stored after `id`, with their ids, oldest first: the engine's input,
/// consumed exactly once by moving its mark in the transaction that acts on them.
pub fn stored_after(state: &dyn Store, id: i64) -> Result<Vec<(i64, Observation)>> {
    state.observations_after(id)
}

#[cfg(test)]
mod tests {
    use crate::store::Connection;
    use std::collections::BTreeMap;
    use std::path::Path;

    use chrono::{DateTime, TimeDelta, Utc};

    use super::*;

    #[test]
    fn a_schema_snapshot_counts_its_columns_in_words() {
        let snapshot = |names: &[&str]| Observation {
            monitor: "m".into(),
            table: "t".into(),
            check: CheckKind::Schema,
            at: "2024-05-15T12:00:00Z".parse().unwrap(),
            value: None,
            verdict: VerdictKind::Ok,
            expected: None,
            health: Health::Ok,
            detail: Detail {
                columns: Some(
                    names
                        .iter()
                        .map(|n| crate::warehouse::Column {
                            name: n.to_string(),
                            data_type: "DATE".into(),
                        })
                        .collect(),
                ),
                ..Detail::default()
            },
        };
        assert_eq!(snapshot(&["day"]).observed_text(), "1 column");
        assert_eq!(snapshot(&["day", "n"]).observed_text(), "2 columns");
    }
    use crate::config::Config;
    use crate::warehouse::sqlite::SqliteWarehouse;

    /// Wednesday 2024-05-15, half past noon UTC.
    fn wednesday_noon() -> DateTime<Utc> {
        "2024-05-15T12:30:00Z".parse().unwrap()
    }

    /// Eight weeks of hourly payments up to `now`: 20 rows an hour on weekdays, 8 at
    /// weekends, no nulls.
    fn payments(dir: &Path, now: DateTime<Utc>) -> SqliteWarehouse {
        let path = dir.join("wh.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE payments (id INTEGER PRIMARY KEY, amount REAL, zip_code TEXT,
                                    loaded_at TEXT NOT NULL, day TEXT NOT NULL);",
        )
        .unwrap();
        conn.execute(
            "WITH RECURSIVE h(t) AS (SELECT ?1 - 56 * 86400 UNION ALL
                                     SELECT t + 3600 FROM h WHERE t + 3600 <= ?1),
                  g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20)
             INSERT INTO payments (amount, zip_code, loaded_at, day)
             SELECT n * 1.5, '10' || n, strftime('%Y-%m-%dT%H:%M:%SZ', t, 'unixepoch'),
                    date(t, 'unixepoch')
             FROM h JOIN g
               ON n <= CASE WHEN strftime('%w', t, 'unixepoch') IN ('0', '6') THEN 8 ELSE 20 END",
            [(now.timestamp() / 3600) * 3600],
        )
        .unwrap();
        SqliteWarehouse::new(&path, BTreeMap::new())
    }

    fn monitor(extra: &str) -> MonitorConfig {
        let text = format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\
             [[monitor]]\nname = \"payments\"\nwarehouse = \"local\"\ntable = \"payments\"\n\
             checks = [\"null_rate\"]\nnull_columns = [\"amount\", \"zip_code\"]\n{extra}"
        );
        Config::parse(&text, Path::new("test.toml"))
            .unwrap()
            .monitor
            .remove(0)
    }

    fn timed() -> MonitorConfig {
        monitor("timestamp_column = \"loaded_at\"\n")
    }

    fn poll(
        state: &Connection,
        warehouse: &SqliteWarehouse,
        monitor: &MonitorConfig,
        check: CheckKind,
        now: DateTime<Utc>,
    ) -> Vec<Observation> {
        let measured = checks::measure(warehouse, monitor, check, now);
        judge(
            state,
            monitor,
            check,
            Timestamp::from_utc(now),
            None,
            measured,
        )
        .unwrap()
    }

    fn setup() -> (tempfile::TempDir, Connection, SqliteWarehouse) {
        let dir = tempfile::tempdir().unwrap();
        let warehouse = payments(dir.path(), wednesday_noon());
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        (dir, state, warehouse)
    }

    #[test]
    fn today_short_by_60_percent_is_low_at_the_next_poll() {
        let (_dir, state, warehouse) = setup();
        let now = wednesday_noon();
        let clean = poll(&state, &warehouse, &timed(), CheckKind::Volume, now);
        let volume = &clean[0];
        assert_eq!(volume.verdict, VerdictKind::Ok, "{volume:#?}");
        assert!(!volume.detail.partial);
        assert_eq!(
            volume.detail.day.as_deref(),
            Some("2024-05-14"),
            "yesterday"
        );
        let days = &volume.detail.days;
        assert_eq!(days.len(), 8, "{days:#?}");
        assert_eq!(days[0].day, "2024-05-08");
        assert!(
            days.iter().all(|d| d.verdict == VerdictKind::Ok),
            "{days:#?}"
        );
        let today = days.last().unwrap();
        assert!(today.partial);
        assert_eq!(
            (today.day.as_str(), today.rows),
            ("2024-05-15", 13.0 * 20.0)
        );
        assert_eq!(today.expected.unwrap().baseline, 13.0 * 20.0);

        warehouse
            .connect()
            .unwrap()
            .execute(
                "DELETE FROM payments WHERE day = '2024-05-15' AND id % 5 < 3",
                [],
            )
            .unwrap();
        let later = now + TimeDelta::minutes(5);
        let short = poll(&state, &warehouse, &timed(), CheckKind::Volume, later);
        let volume = &short[0];
        assert_eq!(volume.verdict, VerdictKind::Low, "{volume:#?}");
        assert!(volume.detail.partial);
        assert_eq!(volume.detail.day.as_deref(), Some("2024-05-15"));
        assert_eq!(volume.value, Some(104.0));
        assert_eq!(volume.expected.unwrap().baseline, 260.0);
        assert!(
            volume.observed_text().contains("by 12:35"),
            "{}",
            volume.observed_text()
        );
        // Yesterday is still fine, and listed as such.
        let days = &volume.detail.days;
        assert_eq!(days[6].day, "2024-05-14");
        assert_eq!(days[6].verdict, VerdictKind::Ok);
        assert_eq!(days[7].verdict, VerdictKind::Low);

        // Stored and read back whole.
        let stored = history(&state, "payments", CheckKind::Volume).unwrap();
        assert_eq!(stored.last().unwrap().detail, volume.detail);
    }

    #[test]
    fn a_date_column_has_no_time_of_day_so_today_is_not_judged() {
        let (_dir, state, warehouse) = setup();
        let dates = monitor("timestamp_column = \"day\"\n");
        let obs = poll(
            &state,
            &warehouse,
            &dates,
            CheckKind::Volume,
            wednesday_noon(),
        );
        let volume = &obs[0];
        assert_eq!(volume.verdict, VerdictKind::Ok, "{volume:#?}");
        assert!(!volume.detail.partial);
        assert_eq!(volume.detail.days.len(), 7);
        assert!(volume.detail.days.iter().all(|d| !d.partial));
    }

    #[test]
    fn null_rate_is_measured_over_the_rows_loaded_in_the_window() {
        let (_dir, state, warehouse) = setup();
        let now = wednesday_noon();
        for step in 0..3 {
            let at = now + TimeDelta::minutes(5 * step);
            for o in poll(&state, &warehouse, &timed(), CheckKind::NullRate, at) {
                assert_eq!(o.verdict, VerdictKind::Learning, "{o:#?}");
                assert_eq!(
                    o.detail.since.map(|s| s.naive().date().to_string()),
                    Some("2024-05-14".to_string())
                );
            }
        }
        // Half the amounts of the last two hours' loads go missing.
        warehouse
            .connect()
            .unwrap()
            .execute(
                "UPDATE payments SET amount = NULL
                 WHERE loaded_at >= '2024-05-15T11:00:00Z' AND id % 2 = 0",
                [],
            )
            .unwrap();
        let later = now + TimeDelta::minutes(15);
        let obs = poll(&state, &warehouse, &timed(), CheckKind::NullRate, later);
        let amount = obs
            .iter()
            .find(|o| o.detail.column.as_deref() == Some("amount"))
            .unwrap();
        assert_eq!(amount.verdict, VerdictKind::High, "{amount:#?}");
        assert_eq!(
            amount.detail.since.map(|at| at.to_string()).as_deref(),
            Some("2024-05-14T12:45:00Z")
        );
        assert_eq!(amount.value, Some(20.0 / 480.0));
        assert!(
            amount
                .observed_text()
                .contains("since 2024-05-14T12:45:00Z"),
            "{}",
            amount.observed_text()
        );
        let zip = obs
            .iter()
            .find(|o| o.detail.column.as_deref() == Some("zip_code"))
            .unwrap();
        assert_eq!(zip.verdict, VerdictKind::Ok, "{zip:#?}");

        // Over the whole table (no timestamp column) the same rows are a rounding error.
        let whole = monitor("");
        let obs = poll(&state, &warehouse, &whole, CheckKind::NullRate, later);
        assert!(obs.iter().all(|o| o.detail.since.is_none()), "{obs:#?}");
        let amount = obs
            .iter()
            .find(|o| o.detail.column.as_deref() == Some("amount"))
            .unwrap();
        assert!(amount.value.unwrap() < 0.002, "{amount:#?}");
        // Whole-table rates are another measure: they learn a baseline of their own.
        assert_eq!(amount.verdict, VerdictKind::Learning, "{amount:#?}");
    }

    #[test]
    fn a_window_without_rows_is_learning_and_says_so() {
        let (_dir, state, warehouse) = setup();
        let quiet = monitor("timestamp_column = \"loaded_at\"\nnull_window = \"1h\"\n");
        let days_later = wednesday_noon() + TimeDelta::days(3);
        let obs = poll(&state, &warehouse, &quiet, CheckKind::NullRate, days_later);
        for o in &obs {
            assert_eq!(o.verdict, VerdictKind::Learning, "{o:#?}");
            assert_eq!(o.health, Health::Ok);
            assert_eq!(
                o.detail.message.as_deref(),
                Some("no rows loaded since 2024-05-18T11:30:00Z")
            );
        }
    }

    #[test]
    fn details_stored_before_these_fields_still_read() {
        let old =
            r#"{"expected":{"low":1.0,"high":2.0,"baseline":1.5},"day":"2024-05-11","score":-5.0}"#;
        let detail: Detail = serde_json::from_str(old).unwrap();
        assert_eq!(detail.day.as_deref(), Some("2024-05-11"));
        assert!(!detail.partial && detail.days.is_empty() && detail.since.is_none());
        // And an unset field is not written.
        let text = serde_json::to_string(&detail).unwrap();
        assert!(!text.contains("partial") && !text.contains("days") && !text.contains("since"));
        // A verdict this version does not know reads as unknown.
        let day: DayVolume =
            serde_json::from_str(r#"{"day":"2024-05-11","rows":3.0,"verdict":"sideways"}"#)
                .unwrap();
        assert_eq!(day.verdict, VerdictKind::Unknown);
    }
}
