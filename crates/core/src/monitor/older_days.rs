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
//! The counts are the server's own from an earlier read, kept exactly: a check's result
//! is what a whole-table scan would give.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::minutes::Plan;
use crate::store::prelude::*;
use crate::warehouse::{
    ChangeMarks, DayRows, Stripe, TableCounts, TableScan, Warehouse, WarehouseError,
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
        let was = self.marks;
        let same_file =
            (marks.table, marks.file, marks.indexed) == (was.table, was.file, was.indexed);
        let only_appended = marks.updated == was.updated
            && marks.deleted == was.deleted
            && marks.inserted - was.inserted == recent_rows as i64 - self.recent_rows as i64;
        let known_days = stripe_rows
            .iter()
            .all(|(day, _)| self.days.iter().any(|d| d.0 == *day));
        if !(same_file && only_appended && known_days) {
            return None;
        }
        let moved = |day: i64| {
            stripe_rows
                .iter()
                .find(|(d, _)| *d == day)
                .map_or(0, |(_, rows)| *rows)
        };
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
