//! The rows per minute of each monitor's timestamp column, kept in the state database
//! between polls: freshness takes its load times from them and volume its days, so a
//! warm poll reads only the last few days of the table instead of the whole lookback.
//!
//! Each poll re-reads today and the `reread_days` before it (late rows for recent days
//! are normal). Older days keep the counts first read, and the same scan counts the
//! table's rows in that older stretch: when they no longer add up to what is stored
//! (rows deleted, a model rebuilt, rows that arrived late for an old day), the whole
//! lookback is read again in the same poll. So what a check reports never depends on
//! what was stored.

use crate::store::prelude::*;
use crate::store::Connection;
use anyhow::{Context, Result};
use chrono::{DateTime, NaiveDate, NaiveTime, Timelike, Utc};

use crate::warehouse::{DayCount, MinuteCount, MinuteWindow};

/// Today and the day before are read again each poll unless the monitor says otherwise.
pub const DEFAULT_REREAD_DAYS: u32 = 1;

const DAY: i64 = 86_400;

/// Which stretch of a monitor's table one poll reads per minute, and what the older
/// stretch it does not re-read must add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What the minutes are read from: the table and its timestamp column. Stored
    /// minutes of anything else are not this table's history.
    pub source: String,
    pub column: String,
    /// The start of the lookback's first day (Unix seconds): nothing older is kept.
    pub start: i64,
    /// Rows from here on are read per minute; between `start` and here the stored
    /// minutes stand.
    pub from: i64,
    /// The rows stored for `start..from`.
    pub stored_older: u64,
    /// What the stored minutes were read from, when any are stored.
    pub stored_source: Option<String>,
}

/// One day's rows and each null column's nulls among them (see [`Plan::with_null_columns`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayNulls {
    /// Days from the epoch.
    pub day: i64,
    pub rows: u64,
    pub nulls: Vec<u64>,
}

impl Plan {
    pub fn window(&self) -> MinuteWindow<'_> {
        MinuteWindow {
            column: &self.column,
            from: self.from,
            older_from: self.start,
        }
    }

    /// The same read over the whole lookback: nothing stored is used.
    pub fn cold(&self) -> Plan {
        Plan {
            from: self.start,
            stored_older: 0,
            ..self.clone()
        }
    }

    /// The same read, counting `names`' nulls per day as well: the source names them,
    /// so stored days counted for other columns (or none) are read again, whole.
    pub fn with_null_columns(self, names: &[String]) -> Plan {
        let base = self.source.split("\nnulls\t").next().unwrap_or_default();
        let source = match names {
            [] => base.to_string(),
            names => format!("{base}\nnulls\t{}", names.join("\t")),
        };
        let plan = Plan { source, ..self };
        if plan.stored_source.as_ref() == Some(&plan.source) {
            plan
        } else {
            plan.cold()
        }
    }

    /// Whether a scan's count of the older stretch matches what is stored for it.
    pub fn still_holds(&self, older_rows: u64) -> bool {
        older_rows == self.stored_older
    }
}

/// The read for one monitor at `now`: warm (the recent days only) when the stored
/// minutes are of the same table and column and reach back to the lookback's start,
/// cold otherwise.
pub fn plan(
    state: &Connection,
    monitor: &str,
    table: &str,
    column: &str,
    lookback_start: i64,
    reread_days: u32,
    now: DateTime<Utc>,
) -> Result<Plan> {
    let source = format!("{table}\n{column}");
    let start = lookback_start.div_euclid(DAY) * DAY;
    let today = now.timestamp().div_euclid(DAY) * DAY;
    let reread_from = (today - i64::from(reread_days) * DAY).max(start);
    let stored = state.minute_source(monitor)?;
    let plan = Plan {
        source,
        column: column.to_string(),
        start,
        from: start,
        stored_older: 0,
        stored_source: stored.as_ref().map(|(source, _)| source.clone()),
    };
    // The null columns a source may name after its table and column are matched once
    // they are known (see [`Plan::with_null_columns`]).
    let same_column = |stored: &str| {
        stored == plan.source || stored.starts_with(&format!("{}\nnulls\t", plan.source))
    };
    match stored {
        Some((stored, complete_from)) if same_column(&stored) && complete_from <= start => {
            let stored_older = state.stored_rows(monitor, start / DAY, reread_from / DAY)?;
            Ok(Plan {
                from: reread_from,
                stored_older,
                ..plan
            })
        }
        _ => Ok(plan),
    }
}

/// Stores what a poll read (`minutes`, every minute from `plan.from` on, and
/// `day_nulls`, each day's nulls per column when the plan names null columns) in place
/// of the days it covers, forgets the days before the lookback, and returns every
/// stored minute from the lookback's start on, oldest first, with each stored day's
/// nulls. In the caller's transaction.
pub fn store(
    state: &Connection,
    monitor: &str,
    plan: &Plan,
    minutes: &[MinuteCount],
    day_nulls: &[(i64, Vec<u64>)],
) -> Result<(Vec<MinuteCount>, Vec<DayNulls>)> {
    let from_day = plan.from / DAY;
    state.forget_days_outside(monitor, plan.start / DAY, from_day)?;
    let read: Vec<MinuteCount> = minutes
        .iter()
        .filter(|m| m.minute >= plan.from)
        .copied()
        .collect();
    for day in read.chunk_by(|a, b| a.minute.div_euclid(DAY) == b.minute.div_euclid(DAY)) {
        let rows: u64 = day.iter().map(|m| m.rows).sum();
        let number = day[0].minute.div_euclid(DAY);
        let nulls = day_nulls
            .iter()
            .find(|(d, _)| *d == number)
            .map(|(_, nulls)| {
                let text: Vec<String> = nulls.iter().map(u64::to_string).collect();
                text.join(",")
            })
            .unwrap_or_default();
        state.insert_day(monitor, number, rows, &encode(day), &nulls)?;
    }
    state.set_minute_source(monitor, &plan.source, plan.start)?;
    let mut all = Vec::new();
    let mut nulls = Vec::new();
    for (day, blob, counted) in state.days(monitor)? {
        let damaged = || format!("stored minutes of {monitor} on day {day} are damaged");
        let first = all.len();
        decode(day * DAY, &blob, &mut all).with_context(damaged)?;
        if counted.is_empty() {
            continue;
        }
        let counts = counted
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<u64>, _>>()
            .with_context(damaged)?;
        nulls.push(DayNulls {
            day,
            rows: all[first..].iter().map(|m| m.rows).sum(),
            nulls: counts,
        });
    }
    Ok((all, nulls))
}

/// Forgets the minutes of monitors the config no longer has (removed or renamed):
/// nothing would read them again.
pub fn forget_others(state: &Connection, configured: &[String]) -> Result<()> {
    let stored = state.monitors_with_minutes()?;
    for monitor in stored.iter().filter(|m| !configured.contains(m)) {
        state.forget_minutes(monitor)?;
    }
    Ok(())
}

/// The load times freshness learns from: the distinct minutes at or after `since`,
/// newest first, at most `limit` (as [`crate::warehouse::Warehouse::load_times`]).
pub fn load_times(minutes: &[MinuteCount], since: i64, limit: usize) -> Vec<i64> {
    minutes
        .iter()
        .rev()
        .map(|m| m.minute)
        .filter(|&m| m >= since)
        .take(limit)
        .collect()
}

/// Rows per UTC day from `since` on, each with the rows before the time of day
/// `cutoff` (a whole minute), as [`crate::warehouse::Warehouse::daily_counts`] gives them.
pub fn daily_counts(minutes: &[MinuteCount], since: i64, cutoff: NaiveTime) -> Vec<DayCount> {
    let cutoff = i64::from(cutoff.num_seconds_from_midnight());
    let mut days: Vec<DayCount> = Vec::new();
    for m in minutes.iter().filter(|m| m.minute >= since) {
        let day = day_of(m.minute);
        if days.last().is_none_or(|d| d.day != day) {
            days.push(DayCount {
                day,
                rows: 0,
                before_cutoff: 0,
                at_midnight: 0,
            });
        }
        let entry = days.last_mut().expect("pushed");
        entry.rows += m.rows;
        entry.at_midnight += m.at_midnight;
        if m.minute.rem_euclid(DAY) < cutoff {
            entry.before_cutoff += m.rows;
        }
    }
    days
}

fn day_of(seconds: i64) -> NaiveDate {
    DateTime::from_timestamp(seconds.div_euclid(DAY) * DAY, 0)
        .expect("a minute the warehouse returned")
        .date_naive()
}

/// One day's minutes as (minutes since the previous one, rows, rows at midnight)
/// varints: a day of hourly loads takes about a hundred bytes, a busy stream's a few
/// kilobytes.
fn encode(day: &[MinuteCount]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut previous = day[0].minute.div_euclid(DAY) * DAY;
    for m in day {
        put_varint(&mut out, ((m.minute - previous) / 60) as u64);
        put_varint(&mut out, m.rows);
        put_varint(&mut out, m.at_midnight);
        previous = m.minute;
    }
    out
}

fn decode(day_start: i64, mut blob: &[u8], out: &mut Vec<MinuteCount>) -> Result<()> {
    let mut minute = day_start;
    while !blob.is_empty() {
        minute += 60 * take_varint(&mut blob)? as i64;
        let rows = take_varint(&mut blob)?;
        let at_midnight = take_varint(&mut blob)?;
        anyhow::ensure!(minute < day_start + DAY, "a minute past the day's end");
        out.push(MinuteCount {
            minute,
            rows,
            at_midnight,
        });
    }
    Ok(())
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_varint(blob: &mut &[u8]) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = blob.split_first().context("a number cut short")?;
        *blob = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    anyhow::bail!("a number longer than 64 bits")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    fn counts(list: &[(&str, u64)]) -> Vec<MinuteCount> {
        list.iter()
            .map(|&(at, rows)| MinuteCount {
                minute: minute(at),
                rows,
                at_midnight: u64::from(at.ends_with("T00:00:00Z")) * rows,
            })
            .collect()
    }

    #[test]
    fn a_day_of_minutes_round_trips_through_its_encoding() {
        let day = counts(&[
            ("2024-05-11T00:00:00Z", 3),
            ("2024-05-11T00:01:00Z", 300),
            ("2024-05-11T23:59:00Z", u64::MAX),
        ]);
        let mut back = Vec::new();
        decode(minute("2024-05-11T00:00:00Z"), &encode(&day), &mut back).unwrap();
        assert_eq!(back, day);
        let cut = &encode(&day)[..4];
        assert!(decode(0, cut, &mut Vec::new()).is_err());
    }

    #[test]
    fn days_split_at_the_cutoff_minute_and_load_times_are_newest_first() {
        let minutes = counts(&[
            ("1969-12-31T23:59:00Z", 1),
            ("2024-05-10T09:59:00Z", 2),
            ("2024-05-10T10:00:00Z", 4),
            ("2024-05-11T00:00:00Z", 8),
        ]);
        let cutoff = NaiveTime::from_hms_opt(10, 0, 0).unwrap();
        let days = daily_counts(&minutes, -DAY, cutoff);
        let day = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
        assert_eq!(
            days.iter()
                .map(|d| (d.day, d.rows, d.before_cutoff, d.at_midnight))
                .collect::<Vec<_>>(),
            [
                (day("1969-12-31"), 1, 0, 0),
                (day("2024-05-10"), 6, 2, 0),
                (day("2024-05-11"), 8, 8, 8)
            ]
        );
        assert_eq!(
            load_times(&minutes, minute("2024-05-10T10:00:00Z"), 10),
            [
                minute("2024-05-11T00:00:00Z"),
                minute("2024-05-10T10:00:00Z")
            ]
        );
        assert_eq!(load_times(&minutes, 0, 1), [minute("2024-05-11T00:00:00Z")]);
    }

    #[test]
    fn a_poll_reads_the_recent_days_once_the_whole_lookback_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        let now: DateTime<Utc> = "2024-05-15T12:30:00Z".parse().unwrap();
        let lookback = minute("2024-03-06T12:30:00Z");
        let start = minute("2024-03-06T00:00:00Z");
        let plan_for = |column: &str, since: i64| {
            plan(&state, "orders", "shop.orders", column, since, 1, now).unwrap()
        };

        let cold = plan_for("at", lookback);
        assert_eq!(
            (cold.start, cold.from, cold.stored_older),
            (start, start, 0)
        );
        let read = counts(&[
            ("2024-03-01T10:00:00Z", 1),
            ("2024-03-06T10:00:00Z", 2),
            ("2024-05-13T23:59:00Z", 4),
            ("2024-05-14T00:00:00Z", 8),
            ("2024-05-15T12:00:00Z", 16),
        ]);
        let (kept, _) = store(&state, "orders", &cold, &read, &[]).unwrap();
        assert_eq!(kept, read[1..], "nothing before the lookback's first day");

        // Warm: today and yesterday again; the older stretch must still add up to 6.
        let warm = plan_for("at", lookback);
        assert_eq!(warm.from, minute("2024-05-14T00:00:00Z"));
        assert_eq!(warm.stored_older, 6);
        assert!(warm.still_holds(6) && !warm.still_holds(7));
        let (kept, _) = store(
            &state,
            "orders",
            &warm,
            &counts(&[("2024-05-15T12:01:00Z", 32)]),
            &[],
        )
        .unwrap();
        assert_eq!(
            kept,
            counts(&[
                ("2024-03-06T10:00:00Z", 2),
                ("2024-05-13T23:59:00Z", 4),
                ("2024-05-15T12:01:00Z", 32),
            ]),
            "the re-read days replaced, the older ones kept"
        );

        // Another column, or a lookback reaching further back than what is stored,
        // is read whole.
        assert_eq!(plan_for("loaded_at", lookback).from, start);
        let further = plan_for("at", lookback - 10 * DAY);
        assert_eq!(further.from, further.start);

        // Counting nulls names the columns: stored days counted for none are read
        // again, whole, and then kept with each day's nulls.
        let names = ["email".to_string()];
        let counted = plan_for("at", lookback).with_null_columns(&names);
        assert_eq!(counted.from, start);
        let day = |at: &str| minute(at).div_euclid(DAY);
        let (_, nulls) = store(
            &state,
            "orders",
            &counted,
            &read[1..],
            &[
                (day("2024-03-06T00:00:00Z"), vec![1]),
                (day("2024-05-14T00:00:00Z"), vec![3]),
            ],
        )
        .unwrap();
        // A day the scan gave no nulls for (none of its columns counted) has none.
        assert_eq!(
            nulls
                .iter()
                .map(|d| (d.day, d.rows, d.nulls.clone()))
                .collect::<Vec<_>>(),
            [
                (day("2024-03-06T00:00:00Z"), 2, vec![1]),
                (day("2024-05-14T00:00:00Z"), 8, vec![3]),
            ]
        );
        let warm = plan_for("at", lookback).with_null_columns(&names);
        assert_eq!(
            warm.from,
            minute("2024-05-14T00:00:00Z"),
            "the same columns: warm"
        );
        let other = plan_for("at", lookback).with_null_columns(&["zip".to_string()]);
        assert_eq!(other.from, start, "other columns: cold");

        // A monitor no longer configured is forgotten.
        forget_others(&state, &["orders".to_string()]).unwrap();
        assert_eq!(plan_for("at", lookback).from, warm.from);
        forget_others(&state, &[]).unwrap();
        assert_eq!(plan_for("at", lookback).from, start);
        let left: i64 = state
            .query_row("SELECT count(*) FROM minute_day", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
