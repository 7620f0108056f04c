//! What a poll reads of each monitor's timestamp column, and the load times kept in the
//! state database between polls.
//!
//! Each poll's one scan counts the rows of every minute of today and the `reread_days`
//! before it, and of every day of the older stretch back to the lookback's start, each
//! day with its rows before the time of day now (see [`crate::warehouse::MinuteWindow`]):
//! volume's days, "today so far" and the row count's history are the server's counts
//! at every poll, never a stored copy, and an older day costs the server one hash entry,
//! not one per minute. Freshness learns its cadence from the newest [`LOAD_TIMES`]
//! minutes with rows: those the recent minutes do not hold are kept here, with the rows
//! of each day they were read from. When an older day's rows no longer add up to what
//! was kept (rows deleted, a model rebuilt, rows that arrived late), or nothing is kept
//! yet, one query reads the load times again. So what a check reports never depends on
//! what was stored, and a table keeps at most a few kilobytes of state.

use crate::store::prelude::*;
use anyhow::{Context, Result};
use chrono::{DateTime, NaiveDate, Utc};

use crate::warehouse::{DayCount, DayRows, MinuteWindow, TableCounts};

pub use super::checks::LOAD_TIMES;

/// Today and the day before are read per minute each poll unless the monitor says
/// otherwise.
pub const DEFAULT_REREAD_DAYS: u32 = 1;

const DAY: i64 = 86_400;

/// What one poll reads of a monitor's table, and the load times kept from before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What the minutes are read from: the table and its timestamp column. Kept
    /// minutes of anything else are not this table's.
    pub source: String,
    pub column: String,
    /// The start of the lookback's first day (Unix seconds): the older stretch's start.
    pub start: i64,
    /// Rows from here on (a whole day) are read per minute, older ones per day.
    pub from: i64,
    /// Seconds into the day now, a whole minute: each day's rows before it are counted.
    pub cutoff: i64,
    /// Freshness's load times are the minutes at or after this (the lookback's start).
    pub since: i64,
    /// The load times kept by earlier polls of the same table and column.
    pub kept: Option<Kept>,
    /// The older days' counts an earlier poll kept (see [`super::older_days`]); once
    /// the poll has read, those it keeps for the next.
    pub older_days: Option<super::older_days::OlderDays>,
}

/// Load times kept in the state database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Every minute with rows from here on was kept (Unix seconds).
    pub complete_from: i64,
    /// (day from the epoch, its rows then, its minutes kept), oldest first.
    pub days: Vec<(i64, u64, Vec<i64>)>,
}

/// One day's rows and each null column's nulls among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayNulls {
    /// Days from the epoch.
    pub day: i64,
    pub rows: u64,
    pub nulls: Vec<u64>,
}

/// The older load times a poll found, and from which minute they are complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Older {
    /// Minutes with rows before [`Plan::from`], oldest first.
    pub minutes: Vec<i64>,
    pub complete_from: i64,
}

impl Older {
    /// None read, for a monitor without freshness: the minutes kept are complete only
    /// from the recent stretch on.
    pub fn unread(plan: &Plan) -> Older {
        Older {
            minutes: Vec::new(),
            complete_from: plan.from,
        }
    }
}

impl Plan {
    pub fn window(&self) -> MinuteWindow<'_> {
        MinuteWindow {
            column: &self.column,
            from: self.from,
            older_from: self.start,
            cutoff: self.cutoff,
        }
    }

    /// The kept load times older than the minutes `counts` read, when they still hold
    /// and are enough: with the recent minutes, the newest [`LOAD_TIMES`] at or after
    /// [`Plan::since`]. None: read them again ([`Plan::read_older`]).
    pub fn kept_older(&self, counts: &TableCounts) -> Option<Older> {
        let recent = counts
            .minutes
            .iter()
            .filter(|m| m.minute >= self.since)
            .count();
        let needed = LOAD_TIMES.saturating_sub(recent);
        let older_rows: u64 = counts.days.iter().map(|d| d.rows).sum();
        if needed == 0 {
            return Some(Older::unread(self));
        }
        if older_rows == 0 {
            return Some(Older {
                minutes: Vec::new(),
                complete_from: self.since,
            });
        }
        let kept = self.kept.as_ref()?;
        // Every older day from the one the kept minutes start in (within the lookback)
        // must have the rows it had when they were kept.
        let first_day = kept.complete_from.max(self.start).div_euclid(DAY);
        let from_day = self.from.div_euclid(DAY);
        let rows_now = |day: i64| {
            counts
                .days
                .iter()
                .find(|d| d.day == day)
                .map_or(0, |d| d.rows)
        };
        let changed = counts
            .days
            .iter()
            .map(|d| d.day)
            .chain(kept.days.iter().map(|(day, _, _)| *day))
            .filter(|&day| day >= first_day && day < from_day)
            .any(|day| kept.rows_then(day) != rows_now(day));
        if changed {
            return None;
        }
        let lower = kept.complete_from.max(self.since);
        let minutes: Vec<i64> = kept
            .days
            .iter()
            .flat_map(|(_, _, minutes)| minutes.iter().copied())
            .filter(|&m| m >= lower && m < self.from)
            .collect();
        (kept.complete_from <= self.since || minutes.len() >= needed).then_some(Older {
            minutes,
            complete_from: kept.complete_from,
        })
    }

    /// The older load times from `newest_first`, what the warehouse's own load-times
    /// query gave for [`Plan::since`] and [`LOAD_TIMES`].
    pub fn read_older(&self, newest_first: &[i64]) -> Older {
        let complete_from = if newest_first.len() >= LOAD_TIMES {
            newest_first.last().copied().unwrap_or(self.since)
        } else {
            self.since
        };
        let mut minutes: Vec<i64> = newest_first
            .iter()
            .copied()
            .filter(|&m| m < self.from)
            .collect();
        minutes.reverse();
        Older {
            minutes,
            complete_from,
        }
    }
}

impl Kept {
    /// The rows `day` (from the epoch) had when it was kept; 0 for a day not kept.
    fn rows_then(&self, day: i64) -> u64 {
        self.days
            .iter()
            .find(|(d, _, _)| *d == day)
            .map_or(0, |(_, rows, _)| *rows)
    }
}

/// A table whose past days lost most of their rows between two polls: rewritten whole
/// (a full refresh that stamped every row anew) or its history truncated. Its days no
/// longer tell its past, so no baseline learns from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The complete days kept by the last poll, first and last (from the epoch).
    pub first_day: i64,
    pub last_day: i64,
    /// Their rows then, and now.
    pub rows_then: u64,
    pub rows_now: u64,
}

impl Rewrite {
    pub fn describe(&self) -> String {
        let span = if self.first_day == self.last_day {
            day_of(self.first_day).to_string()
        } else {
            format!("{} to {}", day_of(self.first_day), day_of(self.last_day))
        };
        format!(
            "{HISTORY_REWRITTEN}: {span} held {} rows at an earlier poll and {} now \
             (a full refresh or a truncation); its days are no baseline",
            self.rows_then, self.rows_now
        )
    }
}

/// How a rewrite's note begins (see [`Rewrite::describe`]).
pub const HISTORY_REWRITTEN: &str = "history rewritten";

impl Plan {
    /// Whether the complete days the last poll kept (before `now`'s day) hold less than
    /// half the rows they held then, as `days` (every day read now, see [`days`]) tells.
    /// Rows may arrive late, and a retention job deletes only the oldest days: neither
    /// halves them. None when nothing was kept of this table and column.
    pub fn rewritten(&self, days: &[DayRows], now: DateTime<Utc>) -> Option<Rewrite> {
        let kept = self.kept.as_ref()?;
        let today = now.timestamp().div_euclid(DAY);
        let complete: Vec<i64> = kept
            .days
            .iter()
            .map(|(day, _, _)| *day)
            .filter(|&day| day < today && day >= self.start.div_euclid(DAY))
            .collect();
        let rows_now = |day: i64| days.iter().find(|d| d.day == day).map_or(0, |d| d.rows);
        let rewrite = Rewrite {
            first_day: *complete.first()?,
            last_day: *complete.last()?,
            rows_then: complete.iter().map(|&day| kept.rows_then(day)).sum(),
            rows_now: complete.iter().map(|&day| rows_now(day)).sum(),
        };
        (rewrite.rows_now.saturating_mul(2) < rewrite.rows_then).then_some(rewrite)
    }
}

/// The read for one monitor at `now`: per minute from `reread_days` before today, per
/// day back to the lookback's first day, with the load times kept when they are of the
/// same table and column.
pub fn plan(
    state: &dyn Store,
    monitor: &str,
    table: &str,
    column: &str,
    lookback_since: i64,
    reread_days: u32,
    now: DateTime<Utc>,
) -> Result<Plan> {
    let source = format!("{table}\n{column}");
    let start = lookback_since.div_euclid(DAY) * DAY;
    let now = now.timestamp();
    let today = now.div_euclid(DAY) * DAY;
    let kept = match state.minute_source(monitor)? {
        Some((stored, complete_from)) if stored == source => {
            let mut days = Vec::new();
            for (day, rows, blob) in state.days(monitor)? {
                let mut minutes = Vec::new();
                decode(day * DAY, &blob, &mut minutes).with_context(|| {
                    format!("stored minutes of {monitor} on day {day} are damaged")
                })?;
                days.push((day, rows, minutes));
            }
            Some(Kept {
                complete_from,
                days,
            })
        }
        _ => None,
    };
    Ok(Plan {
        source,
        column: column.to_string(),
        start,
        from: (today - i64::from(reread_days) * DAY).max(start),
        cutoff: now.rem_euclid(DAY) / 60 * 60,
        since: lookback_since,
        kept,
        older_days: super::older_days::load(state, monitor)?,
    })
}

/// Every day of the lookback with rows, oldest first: the older days as the scan
/// counted them, the recent ones added up from their minutes (split at the plan's
/// cutoff as the server splits the older ones).
pub fn days(counts: &TableCounts, cutoff: i64) -> Vec<DayRows> {
    let mut days = counts.days.clone();
    for m in &counts.minutes {
        let day = m.minute.div_euclid(DAY);
        let time = m.minute.rem_euclid(DAY);
        if days.last().is_none_or(|d| d.day != day) {
            days.push(DayRows {
                day,
                first_minute: time,
                ..DayRows::default()
            });
        }
        let entry = days.last_mut().expect("pushed");
        entry.rows += m.rows;
        entry.at_midnight += m.at_midnight;
        if time < cutoff {
            entry.before_cutoff += m.rows;
        }
    }
    days
}

/// Each day's nulls per column (the scan's, by day) with the day's rows.
pub fn day_nulls(counts: &TableCounts, days: &[DayRows]) -> Vec<DayNulls> {
    counts
        .day_nulls
        .iter()
        .map(|(day, nulls)| DayNulls {
            day: *day,
            rows: days.iter().find(|d| d.day == *day).map_or(0, |d| d.rows),
            nulls: nulls.clone(),
        })
        .collect()
}

/// Keeps what the next polls need of this one's read: the newest [`LOAD_TIMES`]
/// minutes at or after the plan's `since` (the recent minutes and `older`), with the
/// rows of every day from the first of them on. In the caller's transaction. Returns
/// the load times, newest first, as [`crate::warehouse::Warehouse::load_times`] gives
/// them.
pub fn store(
    state: &dyn Store,
    monitor: &str,
    plan: &Plan,
    counts: &TableCounts,
    older: &Older,
) -> Result<Vec<i64>> {
    let all: Vec<i64> = older
        .minutes
        .iter()
        .copied()
        .chain(counts.minutes.iter().map(|m| m.minute))
        .filter(|&m| m >= plan.since)
        .collect();
    let newest = &all[all.len().saturating_sub(LOAD_TIMES)..];
    let complete_from = if all.len() > LOAD_TIMES {
        newest[0]
    } else {
        older.complete_from.max(plan.since)
    };
    state.forget_minutes(monitor)?;
    let first_day = complete_from.div_euclid(DAY);
    for day in days(counts, plan.cutoff)
        .iter()
        .filter(|d| d.day >= first_day)
    {
        let minutes: Vec<i64> = newest
            .iter()
            .copied()
            .filter(|m| m.div_euclid(DAY) == day.day)
            .collect();
        state.insert_day(monitor, day.day, day.rows, &encode(day.day * DAY, &minutes))?;
    }
    state.set_minute_source(monitor, &plan.source, complete_from)?;
    Ok(newest.iter().rev().copied().collect())
}

/// Forgets the minutes of monitors the config no longer has (removed or renamed):
/// nothing would read them again.
pub fn forget_others(state: &dyn Store, configured: &[String]) -> Result<()> {
    let stored = state.monitors_with_minutes()?;
    let others: Vec<&String> = stored.iter().filter(|m| !configured.contains(m)).collect();
    if others.is_empty() {
        return Ok(());
    }
    // In a write transaction: on team state every write is fenced by the lease's term.
    state.transact(|tx| {
        for monitor in others {
            tx.forget_minutes(monitor)?;
        }
        Ok(())
    })
}

/// Rows per UTC day from `since` on, each with the rows before the plan's cutoff, as
/// [`crate::warehouse::Warehouse::daily_counts`] gives them.
pub fn daily_counts(days: &[DayRows], since: i64) -> Vec<DayCount> {
    days.iter()
        .filter(|d| d.day * DAY >= since)
        .map(|d| DayCount {
            day: day_of(d.day),
            rows: d.rows,
            before_cutoff: d.before_cutoff,
            at_midnight: d.at_midnight,
        })
        .collect()
}

fn day_of(day: i64) -> NaiveDate {
    DateTime::from_timestamp(day * DAY, 0)
        .expect("a day the warehouse returned")
        .date_naive()
}

/// One day's minutes with rows as varints of the minutes since the previous one: a
/// day of hourly loads takes 24 bytes.
fn encode(day_start: i64, minutes: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut previous = day_start;
    for &minute in minutes {
        put_varint(&mut out, ((minute - previous) / 60) as u64);
        previous = minute;
    }
    out
}

fn decode(day_start: i64, mut blob: &[u8], out: &mut Vec<i64>) -> Result<()> {
    let mut minute = day_start;
    while !blob.is_empty() {
        minute += 60 * take_varint(&mut blob)? as i64;
        anyhow::ensure!(minute < day_start + DAY, "a minute past the day's end");
        out.push(minute);
    }
    Ok(())
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(super) fn take_varint(blob: &mut &[u8]) -> Result<u64> {
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
    use crate::warehouse::MinuteCount;

    fn minute(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    fn counts(minutes: &[(&str, u64)], days: &[(&str, u64, u64)]) -> TableCounts {
        TableCounts {
            minutes: minutes
                .iter()
                .map(|&(at, rows)| MinuteCount {
                    minute: minute(at),
                    rows,
                    at_midnight: u64::from(at.ends_with("T00:00:00Z")) * rows,
                })
                .collect(),
            days: days
                .iter()
                .map(|&(at, rows, before_cutoff)| DayRows {
                    day: minute(at).div_euclid(DAY),
                    rows,
                    at_midnight: 0,
                    before_cutoff,
                    first_minute: minute(at).rem_euclid(DAY),
                })
                .collect(),
            ..TableCounts::default()
        }
    }

    #[test]
    fn a_day_of_minutes_round_trips_through_its_encoding() {
        let start = minute("2024-05-11T00:00:00Z");
        let day = [start, start + 60, start + DAY - 60];
        let mut back = Vec::new();
        decode(start, &encode(start, &day), &mut back).unwrap();
        assert_eq!(back, day);
        let mut past = Vec::new();
        assert!(decode(start, &encode(start, &[start + DAY]), &mut past).is_err());
        assert!(
            decode(start, &[0x80], &mut Vec::new()).is_err(),
            "cut short"
        );
    }

    #[test]
    fn the_recent_minutes_add_up_to_days_beside_the_older_days() {
        let read = counts(
            &[
                ("2024-05-14T00:00:00Z", 8),
                ("2024-05-14T09:59:00Z", 2),
                ("2024-05-14T10:00:00Z", 4),
                ("2024-05-15T08:00:00Z", 16),
            ],
            &[("2024-05-10T03:00:00Z", 5, 3)],
        );
        let days = days(&read, 10 * 3600);
        let day = |d: &str| minute(&format!("{d}T00:00:00Z")).div_euclid(DAY);
        assert_eq!(
            days.iter()
                .map(|d| (
                    d.day,
                    d.rows,
                    d.before_cutoff,
                    d.at_midnight,
                    d.first_minute
                ))
                .collect::<Vec<_>>(),
            [
                (day("2024-05-10"), 5, 3, 0, 3 * 3600),
                (day("2024-05-14"), 14, 10, 8, 0),
                (day("2024-05-15"), 16, 16, 0, 8 * 3600),
            ]
        );
        let volume = daily_counts(&days, minute("2024-05-14T00:00:00Z"));
        assert_eq!(
            volume.iter().map(|d| d.rows).collect::<Vec<_>>(),
            [14, 16],
            "from the day asked on"
        );
    }

    #[test]
    fn load_times_are_kept_while_the_older_days_hold_and_read_again_when_not() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        let now: DateTime<Utc> = "2024-05-15T12:30:00Z".parse().unwrap();
        let lookback = minute("2024-03-06T12:30:00Z");
        let plan_for =
            |column: &str| plan(&state, "orders", "shop.orders", column, lookback, 1, now).unwrap();
        let first = plan_for("at");
        assert_eq!(first.start, minute("2024-03-06T00:00:00Z"));
        assert_eq!(first.from, minute("2024-05-14T00:00:00Z"));
        assert_eq!(first.cutoff, 12 * 3600 + 30 * 60);
        assert_eq!(first.kept, None);

        // Two recent minutes and two older days: too few load times, none kept.
        let read = counts(
            &[("2024-05-14T06:00:00Z", 1), ("2024-05-15T06:00:00Z", 1)],
            &[
                ("2024-03-06T13:00:00Z", 1, 0),
                ("2024-05-01T09:00:00Z", 2, 2),
            ],
        );
        assert_eq!(first.kept_older(&read), None, "nothing kept: read them");
        // The warehouse's load times, newest first (one before the lookback's start
        // time is not among them).
        let older = first.read_older(&[
            minute("2024-05-15T06:00:00Z"),
            minute("2024-05-14T06:00:00Z"),
            minute("2024-05-01T09:00:00Z"),
            minute("2024-03-06T13:00:00Z"),
        ]);
        assert_eq!(older.complete_from, lookback, "fewer than asked: every one");
        let times = store(&state, "orders", &first, &read, &older).unwrap();
        assert_eq!(
            times,
            [
                minute("2024-05-15T06:00:00Z"),
                minute("2024-05-14T06:00:00Z"),
                minute("2024-05-01T09:00:00Z"),
                minute("2024-03-06T13:00:00Z"),
            ]
        );

        // The next poll: the older days hold, so the kept ones stand.
        let next = plan_for("at");
        assert!(next.kept.is_some());
        let kept = next.kept_older(&read).expect("the days still hold");
        assert_eq!(
            kept.minutes,
            [
                minute("2024-03-06T13:00:00Z"),
                minute("2024-05-01T09:00:00Z")
            ]
        );
        // A late row on an old day, or one gone: read again.
        let late = counts(
            &[("2024-05-15T06:00:00Z", 1)],
            &[
                ("2024-03-06T13:00:00Z", 1, 0),
                ("2024-05-01T09:00:00Z", 3, 3),
            ],
        );
        assert_eq!(next.kept_older(&late), None);
        let gone = counts(&[], &[("2024-03-06T13:00:00Z", 1, 0)]);
        assert_eq!(next.kept_older(&gone), None);
        // Another column's are not this one's.
        assert_eq!(plan_for("loaded_at").kept, None);
        // Without older rows nothing older is needed.
        let none_older = counts(&[("2024-05-15T06:00:00Z", 1)], &[]);
        assert_eq!(
            first.kept_older(&none_older).map(|o| o.minutes),
            Some(vec![])
        );

        // A monitor no longer configured is forgotten.
        forget_others(&state, &["orders".to_string()]).unwrap();
        assert!(plan_for("at").kept.is_some());
        forget_others(&state, &[]).unwrap();
        assert_eq!(plan_for("at").kept, None);
    }

    #[test]
    fn a_table_whose_kept_days_lost_most_of_their_rows_was_rewritten() {
        let now: DateTime<Utc> = "2024-05-15T12:30:00Z".parse().unwrap();
        let day = |text: &str| minute(&format!("{text}T00:00:00Z")).div_euclid(DAY);
        let plan = Plan {
            source: "shop.orders\nat".into(),
            column: "at".into(),
            start: minute("2024-03-06T00:00:00Z"),
            from: minute("2024-05-14T00:00:00Z"),
            cutoff: 12 * 3600 + 30 * 60,
            since: minute("2024-03-06T12:30:00Z"),
            kept: Some(Kept {
                complete_from: minute("2024-05-12T00:00:00Z"),
                days: ["2024-05-12", "2024-05-13", "2024-05-14", "2024-05-15"]
                    .iter()
                    .map(|d| (day(d), if d.ends_with("15") { 40 } else { 100 }, vec![]))
                    .collect(),
            }),
            older_days: None,
        };
        let read = |rows: [u64; 4]| -> Vec<DayRows> {
            ["2024-05-12", "2024-05-13", "2024-05-14", "2024-05-15"]
                .iter()
                .zip(rows)
                .filter(|(_, rows)| *rows > 0)
                .map(|(d, rows)| DayRows {
                    day: day(d),
                    rows,
                    ..DayRows::default()
                })
                .collect()
        };
        // As kept, with rows that came late, or with the oldest day gone to a
        // retention job: the days still tell the table's past. Today only grows.
        assert_eq!(plan.rewritten(&read([100, 100, 100, 55]), now), None);
        assert_eq!(plan.rewritten(&read([100, 130, 100, 40]), now), None);
        assert_eq!(plan.rewritten(&read([0, 100, 100, 40]), now), None);
        // A full refresh stamped every row today: the complete days hold none.
        let refresh = plan
            .rewritten(&read([0, 0, 0, 340]), now)
            .expect("rewritten");
        assert_eq!(
            refresh,
            Rewrite {
                first_day: day("2024-05-12"),
                last_day: day("2024-05-14"),
                rows_then: 300,
                rows_now: 0,
            }
        );
        assert!(
            refresh
                .describe()
                .starts_with("history rewritten: 2024-05-12 to 2024-05-14 held 300 rows"),
            "{}",
            refresh.describe()
        );
        // History truncated to the last day: most of the kept rows are gone.
        assert!(plan.rewritten(&read([0, 0, 100, 40]), now).is_some());
        // Nothing kept of this table: nothing to compare with.
        let fresh = Plan { kept: None, ..plan };
        assert_eq!(fresh.rewritten(&read([0, 0, 0, 340]), now), None);
    }

    #[test]
    fn at_most_the_newest_load_times_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        let now: DateTime<Utc> = "2024-05-15T23:59:00Z".parse().unwrap();
        let since = minute("2024-05-01T00:00:00Z");
        let plan = plan(&state, "busy", "t", "at", since, 1, now).unwrap();
        // A row every minute of two days: 2,879 minutes.
        let start = minute("2024-05-14T00:00:00Z");
        let read = TableCounts {
            minutes: (0..2879)
                .map(|n| MinuteCount {
                    minute: start + 60 * n,
                    rows: 1,
                    at_midnight: 0,
                })
                .collect(),
            ..TableCounts::default()
        };
        let older = plan.kept_older(&read).expect("enough recent minutes");
        let times = store(&state, "busy", &plan, &read, &older).unwrap();
        assert_eq!(times.len(), LOAD_TIMES);
        assert_eq!(times[0], start + 60 * 2878);
        let kept = state.minute_source("busy").unwrap().unwrap().1;
        assert_eq!(kept, start + 60 * (2879 - LOAD_TIMES as i64));
        let stored: usize = state
            .days("busy")
            .unwrap()
            .iter()
            .map(|(_, _, b)| b.len())
            .sum();
        assert!(stored <= 2 * LOAD_TIMES, "{stored} bytes of minutes");
    }
}
