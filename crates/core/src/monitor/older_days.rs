//! What a poll keeps of its table's older days, so that the next polls of the same day
//! read only the recent days.
//!
//! A whole-table scan (see [`crate::warehouse::Warehouse::scan`]) reads every row of
//! the lookback to count each older day again. Those days rarely change, so each poll
//! keeps their counts here with the table's write counters as they were before it read
//! (see [`crate::warehouse::Warehouse::change_marks`]). A later poll on the same day
//! reads the recent days and, of each older day, only the rows stamped between the time
//! of day the counts were kept at and now (a day's rows before the time of day now are
//! what "today so far" is compared with). It uses the kept counts only when the table
//! is the same file, no row was updated or deleted since, and exactly as many rows were
//! inserted as the recent days gained: a row backfilled into an older day, or with no
//! time, or a deleted day, or a TRUNCATE, and the poll reads the whole table again.
//! The first poll of each day reads the whole table too, so yesterday's late rows and
//! counters that lag a moment behind the writes are caught at least once a day.
//!
//! Without an index on the column that read costs a pass over the table, so where the
//! warehouse says where the recent rows lie (a [`Tail`]: PostgreSQL's pages) a poll
//! reads only the pages from the first recent row on, and takes the older days' rows at
//! the times of day it moved past from the minutes ahead the whole read kept. It keeps
//! the older days only when those pages gained exactly the rows inserted, all recent.
//!
//! The counts are the server's own from an earlier read, kept exactly: a check's result
//! is what a whole-table scan would give.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::minutes::{put_varint, take_varint, Plan};
use crate::store::prelude::*;
use crate::warehouse::{
    ChangeMarks, DayRows, Stripe, TableCounts, TableScan, Tail, Warehouse, WarehouseError,
};

/// The older days of one monitor's table as a poll read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OlderDays {
    /// What was read (see [`key`]): another table, column or null columns are not these.
    key: String,
    /// The plan's older stretch, [start, from), and the time of day the days were split
    /// at (see [`Plan`]).
    start: i64,
    from: i64,
    cutoff: i64,
    /// Every row of the table, and those from `from` on.
    rows: u64,
    recent_rows: u64,
    /// The table's counters before the read.
    marks: ChangeMarks,
    days: Vec<Day>,
    /// Where the recent rows lie, when the warehouse said (see [`Tail`]).
    #[serde(default)]
    tail: Option<KeptTail>,
}

/// A [`Tail`] as kept: its older days' minutes ahead as varints in hex, per day with
/// any (days since the previous such day, entries), then per entry the minutes since
/// the previous entry or `ahead_from`, doubled, plus one when the rows follow (not
/// one): a byte a minute with a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct KeptTail {
    page: i64,
    rows: u64,
    not_recent: u64,
    ahead_from: i64,
    ahead_until: i64,
    ahead: String,
}

/// At most this many (day, minute) entries of the hour ahead are kept: past them the
/// hour is cut short (and the next whole read comes sooner), so they stay near 3 KB in
/// hex however many rows a minute holds (the tables, a row every 3 minutes:
/// the whole hour of 70 days, 1,400 entries).
const AHEAD_ENTRIES: usize = 1_500;

impl KeptTail {
    fn of(tail: &Tail) -> KeptTail {
        let mut until = tail.ahead_until;
        if tail.ahead.len() > AHEAD_ENTRIES {
            // Cut at the earliest time of day that would go past the limit.
            let mut times: Vec<i64> = tail.ahead.iter().map(|e| e.1).collect();
            times.sort_unstable();
            until = times[AHEAD_ENTRIES];
        }
        let kept: Vec<&(i64, i64, u64)> = tail.ahead.iter().filter(|e| e.1 < until).collect();
        let mut blob = Vec::new();
        let mut previous_day = 0;
        for day in kept.chunk_by(|a, b| a.0 == b.0) {
            put_varint(&mut blob, (day[0].0 - previous_day) as u64);
            put_varint(&mut blob, day.len() as u64);
            let mut time = tail.ahead_from;
            for &&(_, at, rows) in day {
                let minutes = ((at - time) / 60) as u64;
                put_varint(&mut blob, minutes * 2 + u64::from(rows != 1));
                if rows != 1 {
                    put_varint(&mut blob, rows);
                }
                time = at;
            }
            previous_day = day[0].0;
        }
        KeptTail {
            page: tail.page,
            rows: tail.rows,
            not_recent: tail.not_recent,
            ahead_from: tail.ahead_from,
            ahead_until: until,
            ahead: blob.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    fn tail(&self) -> Option<Tail> {
        let bytes: Vec<u8> = (0..self.ahead.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(self.ahead.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        let mut blob = bytes.as_slice();
        let mut ahead = Vec::new();
        let mut day = 0i64;
        while !blob.is_empty() {
            day += take_varint(&mut blob).ok()? as i64;
            let mut time = self.ahead_from;
            for _ in 0..take_varint(&mut blob).ok()? {
                let step = take_varint(&mut blob).ok()?;
                time += 60 * (step / 2) as i64;
                let rows = match step % 2 {
                    0 => 1,
                    _ => take_varint(&mut blob).ok()?,
                };
                ahead.push((day, time, rows));
            }
        }
        Some(Tail {
            page: self.page,
            rows: self.rows,
            not_recent: self.not_recent,
            ahead_from: self.ahead_from,
            ahead_until: self.ahead_until,
            ahead,
        })
    }
}

/// (day from the epoch, rows, rows at midnight, rows before the cutoff, first minute
/// (seconds into the day), each null column's nulls): an array per day keeps a table's
/// 70 days to a few kilobytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Day(i64, u64, u64, u64, i64, Vec<u64>);

/// What a monitor's read is of: the table and timestamp column, the null columns and
/// the column the null window is on.
pub fn key(plan: &Plan, scan: &TableScan) -> String {
    format!(
        "{}\n{}\n{}",
        plan.source,
        scan.null_columns.join("\u{1f}"),
        scan.nulls_since.map_or("", |(column, _)| column)
    )
}

impl OlderDays {
    /// The older days of `counts`, what a poll read with `plan` and `scan` (whole or
    /// through [`read_recent`]) after reading `marks`.
    pub fn of(plan: &Plan, scan: &TableScan, counts: &TableCounts, marks: ChangeMarks) -> Self {
        let nulls = |day: i64| {
            counts
                .day_nulls
                .iter()
                .find(|(d, _)| *d == day)
                .map_or_else(Vec::new, |(_, n)| n.clone())
        };
        OlderDays {
            key: key(plan, scan),
            start: plan.start,
            from: plan.from,
            cutoff: plan.cutoff,
            rows: counts.rows,
            recent_rows: counts.minutes.iter().map(|m| m.rows).sum(),
            marks,
            days: counts
                .days
                .iter()
                .map(|d| {
                    Day(
                        d.day,
                        d.rows,
                        d.at_midnight,
                        d.before_cutoff,
                        d.first_minute,
                        nulls(d.day),
                    )
                })
                .collect(),
            tail: counts.tail.as_ref().map(KeptTail::of),
        }
    }

    /// The rows of each older day to read this poll: those between the kept cutoff and
    /// this poll's, and whether they are added (the cutoff moved on) or taken off.
    /// None: the kept days are not this read's (another day, table or column).
    fn stripe(&self, plan: &Plan, scan: &TableScan) -> Option<(Stripe, bool)> {
        let nulls_recent = scan.nulls_since.is_none_or(|(_, at)| at >= plan.from);
        let nulls_whole = scan.nulls_since.is_none() && !scan.null_columns.is_empty();
        (self.key == key(plan, scan)
            && self.start == plan.start
            && self.from == plan.from
            && nulls_recent
            && !nulls_whole)
            .then(|| {
                let forward = plan.cutoff >= self.cutoff;
                let (start, end) = if forward {
                    (self.cutoff, plan.cutoff)
                } else {
                    (plan.cutoff, self.cutoff)
                };
                (Stripe { start, end }, forward)
            })
    }

    /// The whole table's counts from the kept days and `recent`, the recent days read
    /// now after `marks`, with `stripe_rows` of each older day. None when the counters
    /// say rows outside the recent days can have changed.
    fn merge(
        &self,
        scan: &TableScan,
        recent: TableCounts,
        stripe_rows: &[(i64, u64)],
        forward: bool,
        marks: ChangeMarks,
    ) -> Option<TableCounts> {
        let recent_rows: u64 = recent.minutes.iter().map(|m| m.rows).sum();
        let only_appended = self.unmoved(marks)
            && marks.inserted - self.marks.inserted == recent_rows as i64 - self.recent_rows as i64;
        let known_days = stripe_rows
            .iter()
            .all(|(day, _)| self.days.iter().any(|d| d.0 == *day));
        if !(only_appended && known_days) {
            return None;
        }
        let moved = |day: i64| {
            stripe_rows
                .iter()
                .find(|(d, _)| *d == day)
                .map_or(0, |(_, rows)| *rows)
        };
        self.combine(scan, recent, &moved, forward)
    }

    /// The same file, and no row updated or deleted since the kept read.
    fn unmoved(&self, marks: ChangeMarks) -> bool {
        let was = self.marks;
        (
            marks.table,
            marks.file,
            marks.indexed,
            marks.updated,
            marks.deleted,
        ) == (was.table, was.file, was.indexed, was.updated, was.deleted)
    }

    /// The whole table's counts from the kept days and `read`, the pages of the kept
    /// tail read now after `marks`: when every row inserted since is on them and is a
    /// recent one, those pages hold every recent row, and the older days are as kept
    /// but for the stripe, whose rows the kept minutes ahead give.
    fn merge_tail(
        &self,
        scan: &TableScan,
        read: TableCounts,
        stripe: Stripe,
        marks: ChangeMarks,
    ) -> Option<TableCounts> {
        let kept = self.tail.as_ref()?.tail()?;
        let recent_rows: u64 = read.minutes.iter().map(|m| m.rows).sum();
        let inserted = read.rows as i64 - kept.rows as i64;
        let only_recent_inserted = self.unmoved(marks)
            && marks.inserted - self.marks.inserted == inserted
            && read.rows - recent_rows == kept.not_recent;
        let within = stripe.start >= kept.ahead_from && stripe.end <= kept.ahead_until;
        if !(only_recent_inserted && within) {
            return None;
        }
        let moved = |day: i64| {
            kept.ahead
                .iter()
                .filter(|&&(d, time, _)| d == day && (stripe.start..stripe.end).contains(&time))
                .map(|e| e.2)
                .sum()
        };
        let tail = Tail {
            rows: read.rows,
            ..kept.clone()
        };
        let from_day = self.from.div_euclid(86_400);
        let mut recent = read;
        recent.rows = recent_rows;
        recent.day_nulls.retain(|(day, _)| *day >= from_day);
        let mut counts = self.combine(scan, recent, &moved, true)?;
        counts.tail = Some(tail);
        Some(counts)
    }

    /// The whole table's counts from the kept days, each with `moved` of its rows
    /// added before the cutoff (`forward`) or taken off, and `recent`, every row from
    /// the recent stretch on.
    fn combine(
        &self,
        scan: &TableScan,
        recent: TableCounts,
        moved: &dyn Fn(i64) -> u64,
        forward: bool,
    ) -> Option<TableCounts> {
        let recent_rows: u64 = recent.minutes.iter().map(|m| m.rows).sum();
        let days = self
            .days
            .iter()
            .map(|d| {
                let before_cutoff = if forward {
                    d.3 + moved(d.0)
                } else {
                    d.3.checked_sub(moved(d.0))?
                };
                Some(DayRows {
                    day: d.0,
                    rows: d.1,
                    at_midnight: d.2,
                    before_cutoff,
                    first_minute: d.4,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let mut counts = recent;
        counts.rows = self.rows - self.recent_rows + recent_rows;
        counts.older_rows = days.iter().map(|d| d.rows).sum();
        counts.days = days;
        if scan.nulls_per_minute() {
            let mut day_nulls: Vec<(i64, Vec<u64>)> =
                self.days.iter().map(|d| (d.0, d.5.clone())).collect();
            day_nulls.append(&mut counts.day_nulls);
            counts.day_nulls = day_nulls;
        }
        if scan.nulls_since.is_none() {
            // Without a null window every row is counted (there are no null columns).
            counts.nulls.rows = counts.rows;
        }
        Some(counts)
    }
}

/// The table's counts from the recent days and the kept older days, when `plan` kept
/// some for this read and `marks` (read before this) say they still hold; None: scan
/// the whole table.
pub fn read_recent(
    warehouse: &(dyn Warehouse + Sync),
    scan: &TableScan,
    plan: &Plan,
    marks: ChangeMarks,
) -> Result<Option<TableCounts>, WarehouseError> {
    let Some((kept, (stripe, forward))) = plan
        .older_days
        .as_ref()
        .and_then(|kept| Some((kept, kept.stripe(plan, scan)?)))
    else {
        return Ok(None);
    };
    // Without an index on the column, the kept tail's pages, when the time of day has
    // only moved on within the kept minutes ahead (the nulls counted are the recent
    // rows', on the same column).
    let same_column = scan
        .nulls_since
        .is_none_or(|(column, _)| column == plan.column);
    if let (false, true, true, Some(tail)) = (marks.indexed, forward, same_column, &kept.tail) {
        return Ok(match warehouse.scan_tail(scan, tail.page)? {
            Some(read) => kept.merge_tail(scan, read, stripe, marks),
            None => None,
        });
    }
    let Some((recent, stripe_rows)) = warehouse.scan_recent(scan, stripe, marks.indexed)? else {
        return Ok(None);
    };
    Ok(kept.merge(scan, recent, &stripe_rows, forward, marks))
}

/// The older days kept for `monitor`; none when they cannot be read back (they are only
/// a saving: the poll reads the whole table instead).
pub fn load(state: &dyn Store, monitor: &str) -> Result<Option<OlderDays>> {
    let Some(json) = state.older_days(monitor)? else {
        return Ok(None);
    };
    Ok(serde_json::from_str(&json)
        .inspect_err(|e| tracing::warn!("kept older days of {monitor} unreadable, read again: {e}"))
        .ok())
}

/// Keeps `days` for `monitor`'s next poll, in the caller's transaction (after the
/// minutes are stored: storing them forgets these).
pub fn store(state: &dyn Store, monitor: &str, days: &OlderDays) -> Result<()> {
    state.set_older_days(monitor, &serde_json::to_string(days)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(ahead: Vec<(i64, i64, u64)>) -> Tail {
        Tail {
            page: 7,
            rows: 100,
            not_recent: 3,
            ahead_from: 12 * 3600,
            ahead_until: 13 * 3600,
            ahead,
        }
    }

    #[test]
    fn the_minutes_ahead_round_trip_and_are_cut_short_past_the_limit() {
        let few = tail(vec![
            (19_800, 43_200, 1),
            (19_800, 43_380, 2),
            (19_802, 45_000, 300),
        ]);
        assert_eq!(KeptTail::of(&few).tail(), Some(few));
        // A row every minute of the hour on 70 days: 4,200 entries, cut to the minutes
        // that keep them within the limit, earliest first.
        let busy: Vec<(i64, i64, u64)> = (19_800..19_870)
            .flat_map(|day| (0..60).map(move |m| (day, 12 * 3600 + 60 * m, 1)))
            .collect();
        let kept = KeptTail::of(&tail(busy.clone())).tail().unwrap();
        assert_eq!(kept.ahead_until, 12 * 3600 + 60 * 21);
        assert_eq!(kept.ahead.len(), 1_470);
        let within: Vec<_> = busy
            .into_iter()
            .filter(|e| e.1 < kept.ahead_until)
            .collect();
        assert_eq!(kept.ahead, within);
    }
}
