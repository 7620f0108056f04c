//! The one query that reads a table for every check, whole or only its recent days
//! (see [`Warehouse::scan`], [`Warehouse::scan_recent`]), and the counters that say
//! whether the rows it did not read again can have changed
//! ([`Warehouse::change_marks`]).

#[cfg(doc)]
use super::super::Warehouse;
use super::super::{
    quote_ident, ChangeMarks, MinuteWindow, Relation, Stripe, TableCounts, TableScan, Tail,
    WarehouseError,
};
use super::{sent, Pooled, PostgresWarehouse};

/// The one query that reads a table for every check (see [`Warehouse::scan`]); `rows`
/// a FROM item to read instead of the whole table.
pub(super) fn scan_sql(scan: &TableScan, rows: Option<&str>) -> String {
    // Grouped by minute only from the window's start and by day over the older
    // stretch: every other row (and every row without a time) falls into one group, so
    // the table is read once and only the recent rows cost a hash entry each. The
    // bounds are the engine's own integers. Days are UTC days, as daily_counts reads
    // them in the session's zone, UTC.
    let whole = rows.is_none();
    let (minute, at_midnight, older, cut) = match &scan.minutes {
        Some(window) => {
            let col = quote_ident(window.column);
            let recent = format!("{col} >= to_timestamp({})", window.from);
            let older = format!("{col} >= to_timestamp({})", window.older_from);
            // date_bin is arithmetic on the instant, where date_trunc and a cast to a
            // time of day work through the session's zone row by row: over every row of
            // 70 days that was most of the scan's cost.
            let bin = |width: &str| {
                format!("date_bin('{width}', {col}::timestamptz, timestamptz 'epoch')")
            };
            // A whole read also counts the older days' rows of the hour to come by
            // minute (see Tail), in groups of their own, keyed a second past the minute
            // to tell them from the days (a second grouping column made the planner
            // sort every row).
            let ahead = if whole {
                format!(
                    "WHEN {} THEN {} + interval '{AHEAD_MARK} second'",
                    ahead_sql(window),
                    bin("1 minute")
                )
            } else {
                String::new()
            };
            (
                format!(
                    "CASE WHEN {recent} THEN {minute} {ahead} WHEN {older} THEN {day} END",
                    minute = bin("1 minute"),
                    day = bin("1 day"),
                ),
                format!(
                    "count(*) FILTER (WHERE {col}::timestamptz = {day})",
                    day = bin("1 day")
                ),
                // Every row from the older stretch's start on: the recent ones are
                // taken off below, one comparison per row cheaper than a range.
                format!("count(*) FILTER (WHERE {older})"),
                format!(
                    ",\n count(*) FILTER (WHERE {col}::timestamptz < {day} + interval '{} seconds'),\n \
                     coalesce(extract(epoch from min({col})::timestamptz)::int8, 0)",
                    window.cutoff,
                    day = bin("1 day"),
                ),
            )
        }
        None => (
            "NULL::timestamptz".into(),
            "0::int8".into(),
            "0::int8".into(),
            ", 0::int8, 0::int8".into(),
        ),
    };
    let counted = match scan.nulls_since {
        Some((column, at)) => format!("{} >= to_timestamp({at})", quote_ident(column)),
        None => "true".to_string(),
    };
    let nulls: String = scan
        .null_columns
        .iter()
        .map(|c| {
            format!(
                ",\n count(*) FILTER (WHERE {counted} AND {} IS NULL)",
                quote_ident(c)
            )
        })
        .collect();
    let per_minute = scan.minute_nulls_sql(
        &|condition| format!("count(*) FILTER (WHERE {condition})"),
        &|_, c| quote_ident(c),
    );
    let table = rows.map_or_else(|| scan.relation.quoted(), str::to_string);
    let counts = format!(
        "count(*), {at_midnight}, {older},
                  count(*) FILTER (WHERE {counted}){nulls}{per_minute}{cut}"
    );
    match (&scan.minutes, whole) {
        (Some(window), true) => tail_sql(&scan.relation.quoted(), window, &minute, &counts),
        // The minute as seconds computed per group, on the group's key, and as a float:
        // extract returns a numeric, and over a subquery it cost an extra node and a numeric
        // per recent minute: about a sixth of a steady poll's read.
        _ => format!(
            "SELECT date_part('epoch', {minute})::int8, {minute} AS minute, {counts}
           FROM {table} GROUP BY 2"
        ),
    }
}

/// A tail is read only when it is at most this share of the file's pages: 1/4.
const TAIL_SHARE: i64 = 4;

/// Seconds past its minute a minute of the hour ahead is keyed at.
const AHEAD_MARK: i64 = 1;

/// How far ahead of the cutoff a whole read counts the older days' rows by minute.
const AHEAD: i64 = 3_600;

/// The older stretch's rows stamped at a time of day from the cutoff to [`AHEAD`] after
/// it (not past midnight): one date_bin a row, from the cutoff.
fn ahead_sql(window: &MinuteWindow) -> String {
    let col = quote_ident(window.column);
    format!(
        "{col} >= to_timestamp({}) AND {col} < to_timestamp({}) \
         AND {col}::timestamptz < date_bin('1 day', {col}::timestamptz, to_timestamp({})) \
         + interval '{} seconds'",
        window.older_from,
        window.from,
        window.cutoff,
        ahead_width(window)
    )
}

fn ahead_width(window: &MinuteWindow) -> i64 {
    AHEAD.min(DAY - window.cutoff)
}

/// The whole read: the scan's groups (`counts` their select items), each saying
/// whether it is a minute of the hour ahead, and, in the same statement (one snapshot),
/// the first page holding a recent row and the rows on the pages from it on (see
/// [`Tail`]). With no recent row, the file's last page: rows inserted later fill it
/// first, then pages past it. No tail (a NULL page) when it would be more than a
/// [`TAIL_SHARE`]th of the file (recent rows near its start: rows written newest first,
/// or into freed space): reading it would cost more than the recent days by their time.
fn tail_sql(table: &str, window: &MinuteWindow, minute: &str, counts: &str) -> String {
    let col = quote_ident(window.column);
    // The page of a recent row only: a page number as a by-value integer (a tid
    // aggregate made the planner sort every row) costs a conversion a row.
    let literal = table.replace('\'', "''");
    format!(
        "WITH read_groups AS MATERIALIZED (
           SELECT {minute} AS minute, {counts},
                  min((ctid::text::point)[0]::int8)
                    FILTER (WHERE {col} >= to_timestamp({from})) AS first_page
           FROM {table} GROUP BY 1),
         pages AS (
           SELECT greatest(pg_relation_size('{literal}'::regclass)
                             / current_setting('block_size')::int8, 1) AS pages),
         first_recent AS (
           SELECT coalesce(min(first_page), pages - 1) AS page, pages
           FROM read_groups, pages GROUP BY pages),
         tail_rows AS (
           SELECT count(*) AS rows,
                  count(*) FILTER (WHERE ({col} >= to_timestamp({from})) IS NOT TRUE) AS not_recent
           FROM {table} WHERE ctid >= format('(%s,0)', (SELECT page FROM first_recent))::tid
             AND (SELECT page >= pages - pages / {TAIL_SHARE} FROM first_recent))
         SELECT date_part('epoch', minute)::int8, read_groups.*,
                CASE WHEN page >= pages - pages / {TAIL_SHARE} THEN page END, rows, not_recent
         FROM read_groups, first_recent, tail_rows",
        from = window.from,
    )
}

const DAY: i64 = 86_400;

/// What [`Warehouse::scan_recent`] reads, as the scan's FROM item: every row of the
/// recent stretch, and of each older day those stamped at a time of day within
/// `stripe`. With an index that leads with the column, the recent stretch is one range
/// of it and each older day another, probed one day at a time (a list of ranges in one
/// condition costs the planner more than the rows cost); without one the table is read
/// once in any case, and the time of day is arithmetic on each older row.
pub(super) fn recent_only(
    relation: &Relation,
    window: &MinuteWindow,
    stripe: Stripe,
    indexed: bool,
) -> String {
    let table = relation.quoted();
    let col = quote_ident(window.column);
    let recent = format!(
        "SELECT * FROM {table} WHERE {col} >= to_timestamp({})",
        window.from
    );
    if stripe.start >= stripe.end || window.older_from >= window.from {
        return format!("({recent}) AS recent");
    }
    if indexed {
        return format!(
            "({recent} UNION ALL SELECT stripe.* FROM generate_series({}::int8, {}::int8, {DAY}) AS day, \
             LATERAL (SELECT * FROM {table} WHERE {col} >= to_timestamp(day + {}) \
             AND {col} < to_timestamp(day + {})) AS stripe) AS recent",
            window.older_from,
            window.from - DAY,
            stripe.start,
            stripe.end
        );
    }
    // The day binned from the stripe's start: a row is in the stripe when it is less
    // than the stripe's width after that (one date_bin a row, not two).
    format!(
        "(SELECT * FROM {table} WHERE {col} >= to_timestamp({from}) OR ({col} >= to_timestamp({}) \
         AND {col} < to_timestamp({from}) \
         AND {col}::timestamptz < date_bin('1 day', {col}::timestamptz, to_timestamp({})) \
         + interval '{} seconds')) AS recent",
        window.older_from,
        stripe.start,
        stripe.end - stripe.start,
        from = window.from,
    )
}

/// The table's identity, file and write counters, whether an index leads with the
/// column, and whether the counters can be trusted: a plain table or materialized view
/// (a view or a partitioned table has no counters of its own), counting on, and not a
/// standby (whose counters do not move with the changes it replays).
const MARKS_SQL: &str = "SELECT c.oid::int8, pg_relation_filenode(c.oid)::int8,
        pg_stat_get_tuples_inserted(c.oid), pg_stat_get_tuples_updated(c.oid),
        pg_stat_get_tuples_deleted(c.oid),
        EXISTS (SELECT 1 FROM pg_index i
                  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
                 WHERE i.indrelid = c.oid AND i.indisvalid AND i.indpred IS NULL
                   AND a.attname = $2),
        c.relkind IN ('r', 'm') AND current_setting('track_counts')::bool
          AND NOT pg_is_in_recovery()
   FROM pg_class c WHERE c.oid = to_regclass($1)";

/// Asked of every table each poll, so prepared once per connection: parsed and planned
/// by the server once, not per table.
pub(super) fn change_marks(
    pooled: &mut Pooled,
    relation: &Relation,
    column: &str,
) -> Result<Option<ChangeMarks>, postgres::Error> {
    let statement = pooled.prepared(MARKS_SQL)?;
    let row = sent(
        MARKS_SQL,
        pooled
            .client
            .query_opt(&statement, &[&relation.quoted(), &column]),
    )?;
    Ok(row.filter(|r| r.get::<_, bool>(6)).and_then(|r| {
        Some(ChangeMarks {
            table: r.get(0),
            file: r.get::<_, Option<i64>>(1)?,
            inserted: r.get(2),
            updated: r.get(3),
            deleted: r.get(4),
            indexed: r.get(5),
        })
    }))
}

/// Adds a minute's counts to its day's group (a scan's counts add up, but for the last,
/// the earliest time, which is the least).
fn add_to_day(groups: &mut Vec<(Option<i64>, Vec<u64>)>, day: i64, counts: Vec<u64>) {
    // Linear: a table has at most a few hundred older days.
    let Some((_, total)) = groups.iter_mut().find(|(key, _)| *key == Some(day)) else {
        groups.push((Some(day), counts));
        return;
    };
    let last = counts.len() - 1;
    for (i, (total, n)) in total.iter_mut().zip(&counts).enumerate() {
        if i == last {
            *total = (*total as i64).min(*n as i64) as u64;
        } else {
            *total += n;
        }
    }
}

impl PostgresWarehouse {
    /// The scan's query, over `rows` (a FROM item; the whole table: None).
    pub(super) fn scan_where(
        &self,
        scan: &TableScan,
        rows: Option<&str>,
    ) -> Result<TableCounts, WarehouseError> {
        let sql = scan_sql(scan, rows);
        let whole = rows.is_none();
        let rows = self.with_client(|c| sent(&sql, c.query(&sql, &[])))?;
        let width = scan.width();
        let count = |r: &postgres::Row, i: usize| r.get::<_, i64>(i) as u64;
        let (Some(window), true) = (&scan.minutes, whole) else {
            // Columns: the minute as seconds, the minute itself, then the counts.
            let groups = rows
                .iter()
                .map(|r| {
                    let counts = (2..2 + width).map(|i| count(r, i)).collect();
                    (r.get::<_, Option<i64>>(0), counts)
                })
                .collect();
            return Ok(TableCounts::from_groups(groups, scan));
        };
        // Columns: the minute as seconds, the minute, the counts, the group's first
        // page, then the tail's (tail_sql).
        let mut groups: Vec<(Option<i64>, Vec<u64>)> = Vec::new();
        let mut ahead = Vec::new();
        for r in &rows {
            let key = r.get::<_, Option<i64>>(0);
            let counts: Vec<u64> = (2..2 + width).map(|i| count(r, i)).collect();
            match key {
                Some(marked) if marked.rem_euclid(60) == AHEAD_MARK => {
                    let day = marked.div_euclid(DAY);
                    ahead.push((day, marked - AHEAD_MARK - day * DAY, counts[0]));
                    add_to_day(&mut groups, day * DAY, counts);
                }
                Some(day) if day < window.from => add_to_day(&mut groups, day, counts),
                _ => groups.push((key, counts)),
            }
        }
        ahead.sort_unstable();
        let tail = rows.first().and_then(|r| {
            Some(Tail {
                page: r.get::<_, Option<i64>>(3 + width)?,
                rows: count(r, 4 + width),
                not_recent: count(r, 5 + width),
                ahead_from: window.cutoff,
                ahead_until: window.cutoff + ahead_width(window),
                ahead,
            })
        });
        Ok(TableCounts {
            tail,
            ..TableCounts::from_groups(groups, scan)
        })
    }
}
