//! One trait over every warehouse engine. Checks are pushed down as SQL; identifiers are
//! always quoted, never pasted. Besides the checks, which only read, the trait has three
//! narrow writing calls for table versions (a copy to undo a backfill to): no call runs
//! arbitrary SQL.

pub mod adbc;
pub mod duckdb;
pub mod postgres;
pub mod privileges;
pub mod query_log;
pub mod row_print;
pub mod snowflake;
pub mod sqlite;
mod versions;
pub use versions::*;

use std::fmt;

use chrono::{NaiveDate, NaiveTime};
use serde::Serialize;

use crate::clock::Timestamp;

/// A table name as the team writes it: `table` or `schema.table`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Relation {
    pub schema: Option<String>,
    pub table: String,
}

impl Relation {
    pub fn parse(name: &str) -> Result<Relation, WarehouseError> {
        let parts: Vec<&str> = name.split('.').map(str::trim).collect();
        let bad =
            || WarehouseError::Query(format!("{name:?} is not a table name like schema.table"));
        match parts.as_slice() {
            [table] if !table.is_empty() => Ok(Relation {
                schema: None,
                table: table.to_string(),
            }),
            [schema, table] if !schema.is_empty() && !table.is_empty() => Ok(Relation {
                schema: Some(schema.to_string()),
                table: table.to_string(),
            }),
            _ => Err(bad()),
        }
    }

    /// The relation as quoted SQL identifiers.
    pub fn quoted(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&self.table)),
            None => quote_ident(&self.table),
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.table),
            None => f.write_str(&self.table),
        }
    }
}

/// Quotes an identifier for SQL: wrapped in double quotes, inner quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Column {
    pub name: String,
    pub data_type: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarehouseError {
    /// The warehouse could not be reached: a monitor health problem, never an incident.
    Unreachable(String),
    /// The query ran and failed.
    Query(String),
    /// Not done, on purpose: a table version that would be overwritten, a copy that is
    /// missing or no longer fits its table. Nothing was changed.
    Refused(String),
    /// Not sent: the poll had already sent as many queries as the warehouse's
    /// `max_queries_per_poll` allows. Says nothing of the table or the warehouse.
    Skipped(String),
}

/// The time a warehouse's clock gave, asked for as dataward writes times; anything
/// else is the warehouse's error, naming the text.
fn read_now(text: &str) -> Result<Timestamp, WarehouseError> {
    Timestamp::parse(text).map_err(|e| WarehouseError::Query(format!("the warehouse's clock: {e}")))
}

impl fmt::Display for WarehouseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarehouseError::Unreachable(m) => write!(f, "unreachable: {m}"),
            WarehouseError::Query(m) => write!(f, "query failed: {m}"),
            WarehouseError::Refused(m) => write!(f, "refused: {m}"),
            WarehouseError::Skipped(m) => write!(f, "skipped by the query guard: {m}"),
        }
    }
}

impl WarehouseError {
    /// The message, without the kind's prefix.
    pub fn message(&self) -> &str {
        match self {
            WarehouseError::Unreachable(m)
            | WarehouseError::Query(m)
            | WarehouseError::Refused(m)
            | WarehouseError::Skipped(m) => m,
        }
    }
}

impl std::error::Error for WarehouseError {}

/// How long one query may run before the warehouse itself stops it (through the ADBC
/// driver's cancel, or SQLite's interrupt), and the warehouse the error then names. A
/// query the warehouse never finishes would otherwise hold its connection, and every
/// call queued behind it, for as long as it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// The warehouse's name in the config.
    pub warehouse: String,
    /// Its `check_timeout`.
    pub timeout: std::time::Duration,
}

impl Limit {
    /// What a query stopped at the limit fails with.
    pub fn timed_out(&self) -> WarehouseError {
        WarehouseError::Query(format!(
            "timed out: warehouse {:?} was still running the query after {}s (its \
             check_timeout), so it was cancelled",
            self.warehouse,
            self.timeout.as_secs_f64()
        ))
    }
}

pub trait Warehouse: Send {
    /// How many calls the warehouse can run at once, when it runs them one after
    /// another itself (None: as many as it is sent). The poller sends no more than
    /// this, so no check's timeout runs out while it only waits for another's.
    fn calls_at_once(&self) -> Option<usize> {
        None
    }
    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError>;
    /// Columns in table order; empty when the table does not exist.
    fn columns(&self, relation: &Relation) -> Result<Vec<Column>, WarehouseError> {
        let mut found = self.columns_of(
            relation.schema.as_deref(),
            std::slice::from_ref(&relation.table),
        )?;
        Ok(found.pop().unwrap_or_default())
    }
    /// The columns of several tables of one schema (None: the default schema) in one
    /// catalog query: a poll asks once per schema, not once per table. In the order
    /// asked, each in table order, empty for a table that does not exist.
    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError>;
    /// Every count the checks that read rows need, in one query that reads the table
    /// once: its rows, the null counts as [`Self::null_counts`] gives them, and with
    /// `scan.minutes` the rows of each minute of the timestamp column from its start
    /// and of each day of the older stretch before it (see [`MinuteWindow`]).
    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError>;
    /// Plans the query [`Self::scan`] would run without running it (`EXPLAIN`, nothing
    /// read): a table that is gone, a grant that is missing, a misspelt column or a
    /// type the query cannot use fails here as it would in the poll. Returns the plan's
    /// first line.
    fn plan_scan(&self, scan: &TableScan) -> Result<String, WarehouseError>;
    /// What the warehouse counts of the table's writes, read before a poll's read of
    /// its rows: a later poll that sees no more rows inserted than it finds new in the
    /// recent days (and none updated or deleted) knows the older days are as they were.
    /// None (the default, and for a view, a standby, counting off): every poll reads the
    /// whole table. `column` is the timestamp column (whether an index leads with it).
    fn change_marks(
        &self,
        _relation: &Relation,
        _column: &str,
    ) -> Result<Option<ChangeMarks>, WarehouseError> {
        Ok(None)
    }
    /// [`Self::scan`] of only the rows from the window's recent stretch on, with
    /// `stripe`'s rows of each older day: those whose time of day is in [start, end)
    /// seconds, (day from the epoch, rows). None: the warehouse reads only whole tables.
    fn scan_recent(
        &self,
        _scan: &TableScan,
        _stripe: Stripe,
        _indexed: bool,
    ) -> Result<Option<RecentRead>, WarehouseError> {
        Ok(None)
    }
    /// [`Self::scan`] of only the pages from `page` on (a [`Tail`]'s): the recent rows
    /// when no row was written elsewhere since. None: the warehouse reads no pages.
    fn scan_tail(
        &self,
        _scan: &TableScan,
        _page: i64,
    ) -> Result<Option<TableCounts>, WarehouseError> {
        Ok(None)
    }
    /// Plans one query a poll can send for a monitor, without running it. A warehouse
    /// that plans only the scan (the default) says [`Planned::NotPlanned`] for the rest.
    fn plan(&self, query: &CheckQuery) -> Result<Planned, WarehouseError> {
        match query {
            CheckQuery::Scan(scan) => self.plan_scan(scan).map(Planned::Plan),
            _ => Ok(Planned::NotPlanned),
        }
    }
    /// Runs a SELECT to completion and counts its rows: proves a model's SQL still
    /// runs on today's data.
    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError>;
    /// The table's rows and, for each named column in order, how many are null: one
    /// scan for every column's null rate. With `since` = (timestamp column, Unix
    /// seconds), only the rows whose timestamp is at or after it: the rows loaded lately.
    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError>;
    /// Distinct values of the timestamp `column` at or after `since` (Unix seconds),
    /// truncated to the minute, newest first, at most `limit`: the table's load times.
    fn load_times(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        limit: usize,
    ) -> Result<Vec<i64>, WarehouseError>;
    /// Rows per UTC calendar day of the timestamp `column`, from `since` (Unix seconds),
    /// oldest first, each with how many of them fall before the time of day `cutoff`:
    /// one scan for every day's volume and for today so far. Days without rows are
    /// simply absent.
    fn daily_counts(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> Result<Vec<DayCount>, WarehouseError>;
    /// How many non-null values of `column` would not cast to `target_type` (as written
    /// in a model: `integer`, `numeric(10,2)`, `date`, `boolean`, ...), with a few of
    /// them. One read-only query. `None` when the target type is not one we can judge
    /// (see [`CastTarget`]).
    fn count_uncastable(
        &self,
        relation: &Relation,
        column: &str,
        target_type: &str,
    ) -> Result<Option<Uncastable>, WarehouseError>;

    /// What one table holds on a day that another has not got: the distinct values of
    /// `gap.key` in `gap.from` on that UTC day (by its timestamp `gap.from_time`) that
    /// `gap.into` holds on no day, and across how many distinct values of each of
    /// `gap.also` they fall. Counts in that order, the key's first. One read-only
    /// query.
    fn missing_keys(&self, gap: &KeyGap) -> Result<Vec<u64>, WarehouseError>;

    // The only writing calls: a copy of a table before a change, the table put back from
    // it, the copy dropped. Each is one transaction and touches only the table named and
    // copies named by [`version_name`].

    /// Copies every row of `relation` (same columns, same declared types) into a new
    /// table named for it and `tag` (see [`version_name`]), in one transaction. Refused
    /// when a copy with that name exists: a version is never overwritten.
    fn snapshot_table(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<TableVersion, WarehouseError>;
    /// Puts `relation` back as the copy holds it: its rows deleted and the copy's
    /// inserted, in one transaction, so a reader sees the table before or after,
    /// never empty. The table itself (its identity, grants, constraints) stays. Refused
    /// when the version is of another table, its copy is missing, or the columns differ
    /// (name or type) between the copy and the table. Returns the rows restored.
    ///
    /// Only what `version.scope` says the backfill rebuilt is put back (rows outside
    /// its days stay as they are), and only when none of that changed since the
    /// backfill's run (see [`check_unchanged_since`]), checked inside the transaction.
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError>;
    /// The table day by day of the UTC days of `column` (None: as one whole), as
    /// [`DayPrint`]s: compared after a backfill and at its undo.
    fn day_prints(
        &self,
        relation: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError>;
    /// Drops a version's copy (its retention ended). A copy already gone is fine.
    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError>;
    /// The copy of `relation` tagged `tag`, if one was taken: a retry after a crash or
    /// a refused run finds its undo again instead of taking (or refusing) a second one.
    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError>;

    /// A poll starts: the calls until [`Self::end_poll`] may share one session, so a
    /// poll's checks run back to back in it (a suspended warehouse resumes once per
    /// poll, a file is attached once). Nothing to do for a warehouse whose sessions
    /// cost nothing.
    fn begin_poll(&self) {}
    /// The catalog's tables and roles, and whether each grant in `checks` is in place
    /// (see [`privileges`]): what access requests are judged and watched by. A
    /// warehouse whose catalog dataward does not read says so.
    fn access_catalog(
        &self,
        _checks: &[privileges::GrantCheck],
    ) -> Result<privileges::AccessCatalog, WarehouseError> {
        Err(WarehouseError::Refused(
            "dataward reads the privileges of PostgreSQL warehouses only".to_string(),
        ))
    }
    /// The poll ended: its session is closed, at once when no call is running, else
    /// as the last call still running ends. Never waits for a call.
    fn end_poll(&self) {}
}

/// What one read of a table counts, for [`Warehouse::scan`].
pub struct TableScan<'a> {
    pub relation: &'a Relation,
    /// Columns whose nulls are counted, in this order.
    pub null_columns: &'a [String],
    /// As for [`Warehouse::null_counts`]: (timestamp column, Unix seconds) to count
    /// nulls only over the rows stamped at or after it.
    pub nulls_since: Option<(&'a str, i64)>,
    pub minutes: Option<MinuteWindow<'a>>,
}

/// How far before a window's start a raw-column bound is put, so it holds whatever the
/// column's type: a time zone offset (at most 14 hours) moves a zoned column's instant
/// against a plain timestamp constant, and a DATE compares as its midnight. A day
/// covers both.
pub const PRUNING_SLACK: i64 = 86_400;

impl TableScan<'_> {
    /// Whether the scan also counts each column's nulls per minute (over every row of
    /// the minute, whatever `nulls_since`): the days' null rates a null_rate baseline
    /// learns from, read in the same pass as the minutes.
    pub fn nulls_per_minute(&self) -> bool {
        self.minutes.is_some() && !self.null_columns.is_empty()
    }

    /// How many counts each group of the scan's query carries after its minute (or
    /// day): rows, rows at midnight, older rows, rows whose nulls were counted, each
    /// column's nulls, then (see [`Self::nulls_per_minute`]) each column's nulls in the
    /// group, then the group's rows before the cutoff (see [`MinuteWindow::cutoff`])
    /// and its earliest time (Unix seconds: one comparison a row, where a time of day
    /// would cost a conversion a row).
    pub fn width(&self) -> usize {
        let per_minute = if self.nulls_per_minute() {
            self.null_columns.len()
        } else {
            0
        };
        4 + self.null_columns.len() + per_minute + 2
    }

    /// The per-minute null counts' select items, `count` the dialect's count of the
    /// rows of a group where its condition holds (`count(*) FILTER (WHERE {})`, or
    /// `COUNT_IF({})`), `column` its quoting of a column name. Empty unless
    /// [`Self::nulls_per_minute`].
    pub fn minute_nulls_sql(
        &self,
        count: &dyn Fn(&str) -> String,
        column: &dyn Fn(usize, &str) -> String,
    ) -> String {
        if !self.nulls_per_minute() {
            return String::new();
        }
        self.null_columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    ",\n {} AS minute_nulls_{i}",
                    count(&format!("{} IS NULL", column(i, c)))
                )
            })
            .collect()
    }

    /// The raw timestamp column and the constant (Unix seconds) every row the scan
    /// counts beyond its row total lies at or after, when there is one: then the scan
    /// reads only the rows whose raw column is at or after it (a filter the warehouse
    /// prunes storage by: Snowflake's micro-partitions, DuckDB's zone maps), and the
    /// rows before it add to the total alone. It is [`PRUNING_SLACK`] before the
    /// earliest window, so the exact per-row conditions decide as before.
    ///
    /// None when some count reads every row: nulls counted over the whole table, or
    /// windows on different columns.
    pub fn pruning_bound(&self) -> Option<(&str, i64)> {
        let window = self.minutes.as_ref()?;
        let mut earliest = window.from.min(window.older_from);
        match self.nulls_since {
            Some((column, since)) if column == window.column => earliest = earliest.min(since),
            Some(_) => return None,
            None if !self.null_columns.is_empty() => return None,
            None => {}
        }
        Some((window.column, earliest - PRUNING_SLACK))
    }
}

/// A query a poll sends for a monitor, as doctor plans it: the scan every row-reading
/// check shares, the schema check's catalog query, and each check's own query, which
/// a poll falls back to when the scan fails (see `monitor::checks::measure`).
pub enum CheckQuery<'a> {
    Scan(TableScan<'a>),
    RowCount(&'a Relation),
    NullCounts {
        relation: &'a Relation,
        columns: &'a [String],
        since: Option<(&'a str, i64)>,
    },
    LoadTimes {
        relation: &'a Relation,
        column: &'a str,
        since: i64,
        limit: usize,
    },
    DailyCounts {
        relation: &'a Relation,
        column: &'a str,
        since: i64,
        cutoff: NaiveTime,
    },
    Columns {
        schema: Option<&'a str>,
        tables: &'a [String],
    },
}

/// What planning a query found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// The plan's first line.
    Plan(String),
    /// The warehouse refused `EXPLAIN` itself, and the query compiled without it
    /// (nothing read): why there is no plan.
    Unplanned(String),
    /// This warehouse plans only the scan.
    NotPlanned,
}

/// Rows per minute of a timestamp column's recent stretch and per day of the older one:
/// freshness takes its load times from the minutes, volume and the row count's history
/// their days, and the older days cost the server one hash entry a day, not one a
/// minute.
pub struct MinuteWindow<'a> {
    pub column: &'a str,
    /// Rows stamped at or after this (Unix seconds, a whole day) are counted per minute.
    pub from: i64,
    /// Rows stamped at or after this and before `from` are counted per UTC day.
    pub older_from: i64,
    /// Seconds into the day (a whole minute): each group also counts its rows whose
    /// time of day is before it (a day's rows before the time of day now are what
    /// "today so far" is compared with), and says when its first minute is.
    pub cutoff: i64,
}

/// A table's write counters and what its file is (see [`Warehouse::change_marks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChangeMarks {
    /// The table's identity and its file: a new table, a TRUNCATE or a rewrite change it.
    pub table: i64,
    pub file: i64,
    pub inserted: i64,
    pub updated: i64,
    pub deleted: i64,
    /// An index leads with the timestamp column, so reads by it are ranges of it.
    pub indexed: bool,
}

/// What [`Warehouse::scan_recent`] read: the recent days' counts, and the stripe's rows
/// of each older day, (day from the epoch, rows).
pub type RecentRead = (TableCounts, Vec<(i64, u64)>);

/// Seconds into the day: the older days' rows stamped at a time of day in [start, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    pub start: i64,
    pub end: i64,
}

/// One day of a scan's older stretch (see [`MinuteWindow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DayRows {
    /// Days from the epoch.
    pub day: i64,
    pub rows: u64,
    pub at_midnight: u64,
    /// Rows whose time of day is before [`MinuteWindow::cutoff`].
    pub before_cutoff: u64,
    /// Seconds into the day of its first minute with rows.
    pub first_minute: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Every row of the table.
    pub rows: u64,
    /// The rows the nulls were counted over, and each column's nulls.
    pub nulls: NullCounts,
    /// Rows in the older stretch of [`MinuteWindow`].
    pub older_rows: u64,
    /// Minutes with rows from [`MinuteWindow::from`] on, oldest first.
    pub minutes: Vec<MinuteCount>,
    /// Days with rows of the older stretch, oldest first.
    pub days: Vec<DayRows>,
    /// With [`TableScan::nulls_per_minute`], each column's nulls on each day read,
    /// minute by minute or whole (over every row of the day), by day from the epoch,
    /// oldest first.
    pub day_nulls: Vec<(i64, Vec<u64>)>,
    /// What a whole read found of where the recent rows lie and of the older days'
    /// coming minutes (see [`Tail`]); None where the warehouse does not say.
    pub tail: Option<Tail>,
}

/// Where a table's recent rows lie in its file, and the older days' rows in the hour
/// of the day to come, so that the next polls read only the file's end (see
/// [`Warehouse::scan_tail`]) and need no read of the older days for the time of day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The first page holding a recent row (or the file's end when none does).
    pub page: i64,
    /// The rows on the pages from `page` on, and those of them outside the recent
    /// stretch (older, or without a time).
    pub rows: u64,
    pub not_recent: u64,
    /// Seconds into the day [from, until): each older day's rows stamped at a time of
    /// day in it, (day from the epoch, seconds into the day of the minute, rows).
    pub ahead_from: i64,
    pub ahead_until: i64,
    pub ahead: Vec<(i64, i64, u64)>,
}

impl TableCounts {
    /// Adds up the groups `scan`'s query returns, each a minute from the window's
    /// start on, a day before it (its start, Unix seconds), or None (the rows before
    /// the older stretch and those without a time), with its counts in the scan's
    /// order (see [`TableScan::width`]). The older stretch is counted from its start
    /// on, so the recent minutes are taken off it here. Per-group nulls are added up by
    /// day.
    pub fn from_groups(groups: Vec<(Option<i64>, Vec<u64>)>, scan: &TableScan) -> TableCounts {
        let columns = scan.null_columns.len();
        let per_minute = scan.nulls_per_minute();
        let from = scan.minutes.as_ref().map_or(i64::MIN, |w| w.from);
        let mut counts = TableCounts {
            nulls: NullCounts {
                rows: 0,
                nulls: vec![0; columns],
            },
            ..TableCounts::default()
        };
        let mut day_nulls: std::collections::BTreeMap<i64, Vec<u64>> = Default::default();
        for (minute, group) in groups {
            counts.rows += group[0];
            counts.older_rows += group[2];
            counts.nulls.rows += group[3];
            for (total, nulls) in counts.nulls.nulls.iter_mut().zip(&group[4..]) {
                *total += nulls;
            }
            if let (Some(minute), true) = (minute, per_minute) {
                let day = minute.div_euclid(86_400);
                let nulls = &group[4 + columns..4 + 2 * columns];
                match day_nulls.get_mut(&day) {
                    Some(total) => {
                        for (total, n) in total.iter_mut().zip(nulls) {
                            *total += n;
                        }
                    }
                    None => {
                        day_nulls.insert(day, nulls.to_vec());
                    }
                }
            }
            match minute {
                Some(minute) if minute >= from => counts.minutes.push(MinuteCount {
                    minute,
                    rows: group[0],
                    at_midnight: group[1],
                }),
                Some(day) => counts.days.push(DayRows {
                    day: day.div_euclid(86_400),
                    rows: group[0],
                    at_midnight: group[1],
                    before_cutoff: group[group.len() - 2],
                    // The earliest time, Unix seconds (a count's u64 holds its bits).
                    first_minute: (group[group.len() - 1] as i64).rem_euclid(86_400) / 60 * 60,
                }),
                None => {}
            }
        }
        counts.day_nulls = day_nulls.into_iter().collect();
        counts.minutes.sort_by_key(|m| m.minute);
        counts.days.sort_by_key(|d| d.day);
        counts.older_rows -= counts.minutes.iter().map(|m| m.rows).sum::<u64>();
        counts
    }
}

/// The rows stamped within one minute of a timestamp column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MinuteCount {
    /// The minute's start, Unix seconds.
    pub minute: i64,
    pub rows: u64,
    /// Rows stamped exactly midnight (see [`DayCount::at_midnight`]).
    pub at_midnight: u64,
}

/// Which rows of one table another is missing, for [`Warehouse::missing_keys`].
pub struct KeyGap<'a> {
    pub from: &'a Relation,
    pub from_time: &'a str,
    pub into: &'a Relation,
    pub day: chrono::NaiveDate,
    pub key: &'a str,
    pub also: &'a [String],
}

impl KeyGap<'_> {
    /// `count(DISTINCT col)` for the key and each of `also`, with `quote` for names.
    fn counts(&self, quote: fn(&str) -> String) -> String {
        std::iter::once(self.key)
            .chain(self.also.iter().map(String::as_str))
            .map(|c| format!("count(DISTINCT {})", quote(c)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The day as Unix seconds from its start to the next day's.
    fn bounds(&self) -> (i64, i64) {
        let start = self
            .day
            .and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp();
        (start, start + 86_400)
    }

    /// The query, with `epoch` turning the from-table's time column into seconds and
    /// `?1`/`?2` (or `$1`/`$2`) left for the day's bounds.
    fn sql(&self, quote: fn(&str) -> String, epoch: &str, params: (&str, &str)) -> String {
        let key = quote(self.key);
        format!(
            "SELECT {counts} FROM {from} WHERE {epoch} >= {start} AND {epoch} < {end} \
             AND {key} IS NOT NULL \
             AND {key} NOT IN (SELECT {key} FROM {into} WHERE {key} IS NOT NULL)",
            counts = self.counts(quote),
            from = self.from.quoted(),
            into = self.into.quoted(),
            start = params.0,
            end = params.1,
        )
    }
}

/// A quoted, comma-separated column list.
pub fn column_list(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The values of a column that would not cast to a type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uncastable {
    /// Non-null values that do not convert.
    pub rows: u64,
    /// Up to three distinct ones, as text, in byte order.
    pub examples: Vec<String>,
}

/// How many distinct examples [`Uncastable`] keeps.
pub const UNCASTABLE_EXAMPLES: usize = 3;

/// What a value must look like, as text, to cast to a target type. Each engine checks
/// the same shapes: PostgreSQL with patterns in SQL, SQLite with [`CastTarget::accepts`].
/// Precision overflow of a declared `numeric(p,s)` and the date formats other than
/// `YYYY-MM-DD` that some engines also read are not judged: such values count as
/// converting, and the other date formats (`Jan 5 2024`, `20240105`) as not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastTarget {
    /// Every value converts.
    Text,
    /// Whole numbers (signs and surrounding whitespace allowed) within these bounds.
    Integer { min: i64, max: i64 },
    /// Decimals, exponents, `NaN`, `Infinity`.
    Number,
    /// `YYYY-MM-DD` (or `YYYY-M-D`), a real day of a year from 1, or one of the
    /// [`DATE_WORDS`].
    Date,
    /// `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`, and their unique prefixes.
    Boolean,
}

impl CastTarget {
    /// The target of a type as written; `None` for types not judged (timestamps, json,
    /// arrays, ...).
    pub fn parse(target_type: &str) -> Option<CastTarget> {
        let lower = target_type.trim().to_ascii_lowercase();
        let base = lower
            .split(|c: char| c == '(' || c.is_whitespace())
            .next()
            .unwrap_or("");
        let target = match base {
            "varchar" | "char" | "character" | "text" | "string" | "nvarchar" | "nchar"
            | "bpchar" => CastTarget::Text,
            "smallint" | "int2" => CastTarget::Integer {
                min: i16::MIN.into(),
                max: i16::MAX.into(),
            },
            "int" | "integer" | "int4" => CastTarget::Integer {
                min: i32::MIN.into(),
                max: i32::MAX.into(),
            },
            "bigint" | "int8" | "int64" => CastTarget::Integer {
                min: i64::MIN,
                max: i64::MAX,
            },
            "number" | "numeric" | "decimal" | "dec" | "float" | "float4" | "float8"
            | "float64" | "double" | "real" | "bignumeric" => CastTarget::Number,
            "date" => CastTarget::Date,
            "bool" | "boolean" => CastTarget::Boolean,
            _ => return None,
        };
        Some(target)
    }

    /// Whether `value` casts to the target.
    pub fn accepts(self, value: &str) -> bool {
        let value = value.trim_matches(is_sql_space);
        match self {
            CastTarget::Text => true,
            CastTarget::Integer { min, max } => {
                let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
                !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && value
                        .parse::<i128>()
                        .is_ok_and(|n| (i128::from(min)..=i128::from(max)).contains(&n))
            }
            CastTarget::Number => {
                let lower = value.to_ascii_lowercase();
                let unsigned = lower.strip_prefix(['-', '+']).unwrap_or(&lower);
                if lower == "nan" || unsigned == "inf" || unsigned == "infinity" {
                    return true;
                }
                let (mantissa, exponent) = match unsigned.split_once('e') {
                    Some((mantissa, exponent)) => (mantissa, Some(exponent)),
                    None => (unsigned, None),
                };
                let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
                let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
                let mantissa_ok = all_digits(whole)
                    && all_digits(fraction)
                    && (!whole.is_empty() || !fraction.is_empty());
                let exponent_ok = exponent.is_none_or(|e| {
                    let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
                    !digits.is_empty() && all_digits(digits)
                });
                mantissa_ok && exponent_ok
            }
            CastTarget::Date if DATE_WORDS.contains(&value.to_ascii_lowercase().as_str()) => true,
            CastTarget::Date => {
                let parts: Vec<&str> = value.split('-').collect();
                let shaped = matches!(parts.as_slice(), [year, month, day]
                    if year.len() == 4 && (1..=2).contains(&month.len()) && (1..=2).contains(&day.len()))
                    && parts
                        .iter()
                        .all(|part| part.bytes().all(|b| b.is_ascii_digit()));
                let number = |i: usize| parts.get(i).and_then(|p| p.parse::<u32>().ok());
                shaped
                    && match (number(0), number(1), number(2)) {
                        (Some(year), Some(month), Some(day)) if year >= 1 => {
                            NaiveDate::from_ymd_opt(year as i32, month, day).is_some()
                        }
                        _ => false,
                    }
            }
            CastTarget::Boolean => BOOLEAN_WORDS.contains(&value.to_ascii_lowercase().as_str()),
        }
    }
}

/// What PostgreSQL's boolean input reads: the words and their unique prefixes.
pub const BOOLEAN_WORDS: &[&str] = &[
    "t", "tr", "tru", "true", "f", "fa", "fal", "fals", "false", "y", "ye", "yes", "n", "no", "on",
    "of", "off", "1", "0",
];

/// The special values PostgreSQL's date input reads.
pub const DATE_WORDS: &[&str] = &[
    "epoch",
    "infinity",
    "-infinity",
    "today",
    "tomorrow",
    "yesterday",
    "now",
];

/// The whitespace SQL engines skip around a number or a date (C's `isspace`).
fn is_sql_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Opens the warehouse the config names. A PostgreSQL URL is read from the environment
/// variable in `url_env`; nothing connects until the first check.
pub fn open(
    config: &crate::config::Config,
    name: &str,
) -> anyhow::Result<Box<dyn Warehouse + Sync>> {
    let wh = config
        .warehouse
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("unknown warehouse {name:?}"))?;
    let timeout = match &wh.check_timeout {
        Some(text) => crate::config::parse_duration(text)?,
        None => crate::monitor::poller::DEFAULT_TIMEOUT,
    };
    // Past its check_timeout a query is stopped by the warehouse itself (PostgreSQL's
    // statement_timeout, the ADBC driver's cancel, SQLite's interrupt), whoever sent
    // it: the poller, a dry run, doctor.
    let limit = Limit {
        warehouse: name.to_string(),
        timeout,
    };
    match wh.kind.as_str() {
        "postgres" => {
            let var = wh.url_env.as_deref().expect("validated");
            let pg =
                postgres::PostgresWarehouse::from_env(var, wh.max_concurrent.unwrap_or(4), timeout)
                    .map_err(|e| {
                        anyhow::anyhow!("{}: warehouse.{name}: {e}", config.origin.display())
                    })?;
            Ok(Box::new(pg))
        }
        "duckdb" => {
            let path = duckdb::database_path(config, wh.path.as_ref().expect("validated"));
            let driver = duckdb::driver_wanted(config, wh.driver.as_deref());
            Ok(Box::new(
                duckdb::DuckdbWarehouse::new(&path, driver).cancel_after(limit),
            ))
        }
        "snowflake" => Ok(Box::new(
            snowflake::from_config(config, name, wh).cancel_after(limit),
        )),
        _ => {
            let path = config.resolve(wh.path.as_ref().expect("validated"));
            let attach = wh
                .attach
                .iter()
                .map(|(schema, file)| (schema.clone(), config.resolve(file)))
                .collect();
            Ok(Box::new(
                sqlite::SqliteWarehouse::new(&path, attach).cancel_after(limit),
            ))
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NullCounts {
    pub rows: u64,
    pub nulls: Vec<u64>,
}

/// Rows of one UTC calendar day of a timestamp column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayCount {
    pub day: NaiveDate,
    /// Every row of the day.
    pub rows: u64,
    /// Rows whose time of day is before the cutoff asked for.
    pub before_cutoff: u64,
    /// Rows stamped exactly midnight. When every row of every day is, the column holds
    /// dates, not times, and "before a time of day" means nothing.
    pub at_midnight: u64,
}

/// `SELECT count(*), count(*) - count("a"), ... FROM <relation> [WHERE <filter>]`:
/// every name quoted; `filter` is the engine's own predicate on the timestamp column.
pub fn null_counts_sql(relation: &Relation, columns: &[String], filter: Option<&str>) -> String {
    let mut select = String::from("SELECT count(*)");
    for column in columns {
        select.push_str(&format!(", count(*) - count({})", quote_ident(column)));
    }
    match filter {
        Some(filter) => format!("{select} FROM {} WHERE {filter}", relation.quoted()),
        None => format!("{select} FROM {}", relation.quoted()),
    }
}

/// Parses "YYYY-MM-DD" as the warehouse returns a day.
pub fn parse_day(text: &str) -> Result<NaiveDate, WarehouseError> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| WarehouseError::Query(format!("unexpected day {text:?}: {e}")))
}

#[cfg(test)]
mod tests;
