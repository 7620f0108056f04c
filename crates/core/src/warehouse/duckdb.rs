//! DuckDB as a warehouse, through DuckDB's own ADBC driver (`duckdb_adbc_init` in the
//! DuckDB shared library), loaded at run time (see [`super::adbc`]).
//!
//! A DuckDB file is opened by one process at a time when it is written, so the file is
//! opened for each call and closed after it: between polls dbt (or anything else)
//! can write to it. The checks attach it read-only (`ATTACH ... (READ_ONLY)`), so
//! nothing a check or a dry run sends can write; only the three table-version calls
//! open it for writing. All calls of one warehouse run one after another: two DuckDB
//! instances on one file in one process would not see each other's writes.
//! `:memory:` is one database kept open for the warehouse's life.

use std::path::Path;

use chrono::NaiveTime;

use super::adbc::warehouse::{AdbcWarehouse, Dialect};
use super::adbc::{DriverKind, Session, Value};
use super::{
    null_counts_sql, quote_ident, CastTarget, Column, Planned, Relation, TableScan, WarehouseError,
    BOOLEAN_WORDS, DATE_WORDS, PRUNING_SLACK,
};

pub use super::adbc::warehouse::driver_wanted;

/// How DuckDB's driver is found when the config names none.
pub const DRIVER: DriverKind = DriverKind {
    name: "duckdb",
    entrypoint: Some(b"duckdb_adbc_init"),
    install: "Install DuckDB's ADBC driver with `dbc install duckdb`, or set `driver` in \
              the warehouse's section to the path of DuckDB's shared library \
              (libduckdb.so, from DuckDB's releases or npm's @duckdb/node-bindings-linux-x64)",
};

/// The name a database file is attached under.
const CATALOG: &str = "dataward_warehouse";

/// The in-memory database's name in the config.
pub const MEMORY: &str = ":memory:";

/// DuckDB's dialect, and the database file it opens (or `:memory:`).
pub struct DuckDb {
    path: String,
}

pub type DuckdbWarehouse = AdbcWarehouse<DuckDb>;

impl AdbcWarehouse<DuckDb> {
    /// `driver`: a path (resolved) or a manifest name; None for `duckdb`. Nothing is
    /// loaded or opened until the first call.
    pub fn new(path: &str, driver: Option<String>) -> DuckdbWarehouse {
        AdbcWarehouse::with_dialect(
            DuckDb {
                path: path.to_string(),
            },
            driver,
        )
    }

    /// The DuckDB library's own version (`v1.5.6`), from the library: `doctor` shows it.
    pub fn library_version(&self) -> Result<String, WarehouseError> {
        self.with_driver(|driver| {
            let mut session = driver.open(&[("path", MEMORY)])?.connect()?;
            let row = session.query_one("SELECT library_version FROM pragma_version()")?;
            Ok(row[0].text().unwrap_or_default())
        })
    }
}

impl Dialect for DuckDb {
    const DRIVER: DriverKind = DRIVER;
    // One DuckDB instance per warehouse, its file attached for every connection.
    const ONE_CALL_AT_A_TIME: bool = true;
    const BEGIN: &'static str = "BEGIN TRANSACTION";
    const WRITES_APART: bool = true;
    const DDL_IN_TRANSACTION: bool = true;
    const READS_CAN_WRITE: bool = true;
    const COUNTS_WRITTEN_ROWS: bool = true;

    /// One in-memory instance for the warehouse's life: starting DuckDB costs more
    /// than a count on a small table. A file is attached to it per session.
    fn database_options(&self) -> Result<Vec<(String, String)>, WarehouseError> {
        Ok(vec![("path".to_string(), MEMORY.to_string())])
    }

    /// The file attached (read-only unless `write`) and in use.
    fn prepare(&self, session: &mut Session, write: bool) -> Result<(), WarehouseError> {
        // Days are UTC days whatever the machine's zone: a TIMESTAMP WITH TIME ZONE is
        // read in the session's zone (DuckDB's ICU sets it from the machine's). A
        // DuckDB built without ICU has no zones, and reads UTC.
        if let Err(e @ WarehouseError::Skipped(_)) = session.execute("SET TimeZone = 'UTC'") {
            return Err(e);
        }
        if self.path == MEMORY {
            return Ok(());
        }
        if !Path::new(&self.path).is_file() {
            return Err(WarehouseError::Unreachable(format!(
                "no DuckDB database at {}",
                self.path
            )));
        }
        // The file is attached for this session and detached after it, under a name of
        // our own rather than opened by path: DuckDB names a file's database after the
        // file, so in analytics.duckdb `analytics.events` could be the catalog's table
        // or the schema's, and DuckDB refuses to guess.
        let mode = if write { "" } else { " (READ_ONLY)" };
        session
            .execute(&format!(
                "ATTACH {} AS {CATALOG}{mode}",
                literal(&self.path)
            ))
            .map_err(|e| match e {
                WarehouseError::Skipped(_) => e,
                e => WarehouseError::Unreachable(format!("{}: {}", self.path, e.message())),
            })?;
        if let Err(e) = session.execute(&format!("USE {CATALOG}")) {
            let _ = self.release(session);
            return Err(e);
        }
        Ok(())
    }

    /// Detaches the file (from the instance's own catalog: a database in use cannot
    /// be), so between polls others can write it.
    fn release(&self, session: &mut Session) -> Result<(), WarehouseError> {
        if self.path == MEMORY {
            return Ok(());
        }
        super::query_log::unguarded(|| {
            session
                .execute("USE memory")
                .and_then(|_| session.execute(&format!("DETACH {CATALOG}")))
        })
        .map(|_| ())
        .map_err(|e| {
            WarehouseError::Unreachable(format!(
                "{}: could not be closed: {}",
                self.path,
                e.message()
            ))
        })
    }

    fn fold(name: &str) -> String {
        name.to_string()
    }
    fn quote(name: &str) -> String {
        quote_ident(name)
    }
    fn literal(text: &str) -> String {
        literal(text)
    }
    fn epoch_sql(column: &str) -> String {
        epoch_sql(column)
    }
    fn timestamp(seconds: i64) -> String {
        at(seconds)
    }
    fn at_or_after(column: &str, since: i64) -> String {
        at_or_after(column, since)
    }
    fn to_text(sql: &str) -> String {
        format!("CAST({sql} AS VARCHAR)")
    }
    fn uncastable_sql(target: CastTarget) -> String {
        uncastable_sql(target)
    }
    fn scan_sql(scan: &TableScan) -> String {
        scan_sql(scan)
    }
    fn row_count_sql(relation: &Relation) -> String {
        row_count_sql(relation)
    }
    fn null_counts_sql(
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> String {
        nulls_sql(relation, columns, since)
    }
    fn load_times_sql(relation: &Relation, column: &str, since: i64, limit: usize) -> String {
        load_times_sql(relation, column, since, limit)
    }
    fn daily_counts_sql(
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> String {
        daily_counts_sql(relation, column, since, cutoff)
    }
    fn columns_sql(&self, schema: Option<&str>, tables: &[String]) -> String {
        columns_sql(schema, tables)
    }
    fn column(row: &[Value]) -> Column {
        Column {
            name: row[1].text().unwrap_or_default(),
            data_type: row[2].text().unwrap_or_default(),
        }
    }
    fn tables_sql(&self, what: &str, relation: &Relation) -> String {
        format!(
            "SELECT {what} FROM information_schema.tables
             WHERE table_catalog = current_database() AND table_schema = {} AND table_name = {}",
            schema_sql(relation.schema.as_deref()),
            literal(&relation.table)
        )
    }
    fn dry_run_sql(select: &str) -> String {
        // Every column computed: each row turned into text references them all, so a
        // failing cast in a column nobody counts still fails here.
        format!("SELECT count(CAST(dry_run AS VARCHAR)) FROM ({select}) AS dry_run")
    }
    /// Each row's canonical text (`row_print`) hashed as every engine hashes it, summed
    /// per UTC day.
    fn prints_sql(source: &Relation, columns: &[Column], column: Option<&str>) -> String {
        let day = match column {
            Some(column) => format!("CAST(CAST({} AS DATE) AS VARCHAR)", ts(column)),
            None => "CAST(NULL AS VARCHAR)".to_string(),
        };
        format!(
            "SELECT {day}, count(*), CAST(coalesce(sum({hash}), 0) AS BIGINT)
             FROM {table} GROUP BY 1 ORDER BY 1 NULLS FIRST",
            hash = super::row_print::row_hash_sql(&ROW_PRINT, columns, quote_ident),
            table = source.quoted()
        )
    }
    fn versions_copy(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
        super::versions_copy(source, tag)
    }
    /// One statement, one snapshot of the table; CREATE TABLE AS keeps each column's
    /// type (DECIMAL(10,2), VARCHAR, TIMESTAMP WITH TIME ZONE).
    fn snapshot(
        wh: &DuckdbWarehouse,
        s: &mut Session,
        source: &Relation,
        copy: &Relation,
    ) -> Result<(), WarehouseError> {
        let columns = wh.table_columns(s, source)?;
        s.execute(&format!(
            "CREATE TABLE {} AS SELECT {} FROM {}",
            copy.quoted(),
            Self::column_list(&columns),
            source.quoted()
        ))?;
        Ok(())
    }
    /// DuckDB runs in this process: its clock is ours.
    fn now(_s: &mut Session) -> Result<crate::clock::Timestamp, WarehouseError> {
        Ok(crate::clock::Clock::wall().timestamp())
    }
    /// A schema never made means no copy either.
    fn drop_copy(
        wh: &DuckdbWarehouse,
        s: &mut Session,
        copy: &Relation,
    ) -> Result<(), WarehouseError> {
        if wh.exists(s, copy)? {
            s.execute(&format!("DROP TABLE {}", copy.quoted()))?;
        }
        Ok(())
    }
    fn plan(wh: &DuckdbWarehouse, sql: &str) -> Result<Planned, WarehouseError> {
        wh.explain(sql).map(Planned::Plan)
    }
}

impl AdbcWarehouse<DuckDb> {
    /// `EXPLAIN`: the plan's first operator; nothing is read.
    fn explain(&self, sql: &str) -> Result<String, WarehouseError> {
        let sql = format!("EXPLAIN {sql}");
        let rows = self.with_session(false, |s| s.query(&sql))?;
        // DuckDB's plan is one drawing of boxes: its first named operator stands for it.
        let plan = rows
            .first()
            .and_then(|row| row.last().and_then(Value::text))
            .unwrap_or_default();
        Ok(plan
            .lines()
            .map(|line| line.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
            .find(|line| !line.is_empty())
            .unwrap_or("planned")
            .to_string())
    }
}

/// A text literal: single quotes doubled (DuckDB's strings take backslashes as they
/// are).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The canonical row text in DuckDB's SQL. A timestamp with a zone is an instant
/// (`epoch_us` needs no zone); one without is read as UTC.
const ROW_PRINT: super::row_print::Spelling = super::row_print::Spelling {
    text: |e| format!("CAST({e} AS VARCHAR)"),
    chars: "length",
    epoch_micros: |e| format!("CAST(epoch_us({e}) AS VARCHAR)"),
    date: |e| format!("strftime({e}, '%Y-%m-%d')"),
    md5_32: |e| format!("CAST('0x' || substr(md5({e}), 1, 8) AS BIGINT)"),
};

/// A timestamp, timestamptz or date column as a plain (UTC) TIMESTAMP.
fn ts(column: &str) -> String {
    format!("CAST({} AS TIMESTAMP)", quote_ident(column))
}

/// Unix seconds as a TIMESTAMP literal, to compare a column with in its own terms (a
/// conversion per row would cost the scan).
fn at(seconds: i64) -> String {
    let when = chrono::DateTime::from_timestamp(seconds, 0).unwrap_or_default();
    format!("TIMESTAMP '{}'", when.format("%Y-%m-%d %H:%M:%S"))
}

/// A timestamp column as Unix seconds, per row.
fn epoch_sql(column: &str) -> String {
    format!("epoch({})", ts(column))
}

/// The schema the relation names, or the database's default one.
fn schema_sql(schema: Option<&str>) -> String {
    match schema {
        Some(schema) => literal(schema),
        None => "current_schema()".to_string(),
    }
}

/// The one query that reads a table for every check (see [`Warehouse::scan`]), as
/// PostgreSQL's: grouped by minute only from the window's start.
pub fn scan_sql(scan: &TableScan) -> String {
    // Per minute from the window's start, per day over the older stretch (as for
    // PostgreSQL); times of day as daily_counts reads them.
    let (minute, at_midnight, older, cut) = match &scan.minutes {
        Some(window) => {
            let col = ts(window.column);
            let recent = format!("{col} >= {}", at(window.from));
            let older = format!("{col} >= {}", at(window.older_from));
            let cutoff = format!(
                "TIME '{:02}:{:02}:00'",
                window.cutoff.div_euclid(3600),
                window.cutoff.rem_euclid(3600) / 60
            );
            (
                format!(
                    "CASE WHEN {recent} THEN date_trunc('minute', {col})
                          WHEN {older} THEN date_trunc('day', {col}) END"
                ),
                format!("count(*) FILTER (WHERE CAST({col} AS TIME) = TIME '00:00:00')"),
                format!("count(*) FILTER (WHERE {older})"),
                format!(
                    ",\n count(*) FILTER (WHERE CAST({col} AS TIME) < {cutoff}),\n \
                     coalesce(CAST(epoch(min({col})) AS BIGINT), CAST(0 AS BIGINT))"
                ),
            )
        }
        None => (
            "CAST(NULL AS TIMESTAMP)".into(),
            "CAST(0 AS BIGINT)".into(),
            "CAST(0 AS BIGINT)".into(),
            ", CAST(0 AS BIGINT), CAST(0 AS BIGINT)".into(),
        ),
    };
    let counted = match scan.nulls_since {
        Some((column, since)) => format!("{} >= {}", ts(column), at(since)),
        None => "true".to_string(),
    };
    let nulls: String = scan
        .null_columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                ",\n count(*) FILTER (WHERE {counted} AND {} IS NULL) AS nulls_{i}",
                quote_ident(c)
            )
        })
        .collect();
    let per_minute = scan.minute_nulls_sql(
        &|condition| format!("count(*) FILTER (WHERE {condition})"),
        &|_, c| quote_ident(c),
    );
    let nulls = format!("{nulls}{per_minute}{cut}");
    let table = scan.relation.quoted();
    let Some((column, bound)) = scan.pruning_bound() else {
        return format!(
            "SELECT CAST(epoch(minute) AS BIGINT), * EXCLUDE (minute) FROM (
               SELECT {minute} AS minute, count(*), {at_midnight}, {older},
                      count(*) FILTER (WHERE {counted}){nulls}
               FROM {table} GROUP BY 1) AS per_minute"
        );
    };
    // Only the recent rows are read, by the raw column against a constant, which
    // DuckDB skips row groups by (their zone maps). The rows before it (and those
    // without a time) count only towards the total: the table's count less the rows
    // read.
    let before = format!(
        "CAST((SELECT count(*) FROM {table}) - (SELECT coalesce(sum(total), 0) FROM recent) AS BIGINT)"
    );
    let counted_before = match scan.nulls_since {
        Some(_) => "CAST(0 AS BIGINT)".to_string(),
        None => before.clone(),
    };
    let no_nulls = ", CAST(0 AS BIGINT)".repeat(scan.width() - 4);
    format!(
        "WITH recent AS (
           SELECT {minute} AS minute, count(*) AS total, {at_midnight} AS at_midnight,
                  {older} AS older, count(*) FILTER (WHERE {counted}) AS counted{nulls}
           FROM {table} WHERE {raw} >= {constant} GROUP BY 1)
         SELECT CAST(epoch(minute) AS BIGINT), * EXCLUDE (minute) FROM recent
         UNION ALL
         SELECT CAST(NULL AS BIGINT), {before}, CAST(0 AS BIGINT), CAST(0 AS BIGINT),
                {counted_before}{no_nulls}",
        raw = quote_ident(column),
        constant = at(bound),
    )
}

/// `column` at or after `since` (Unix seconds), exactly (as a UTC TIMESTAMP), and by
/// the raw column against a constant [`PRUNING_SLACK`] earlier, which holds for every
/// such row whatever the column's type and which DuckDB skips row groups by.
fn at_or_after(column: &str, since: i64) -> String {
    format!(
        "{raw} >= {loose} AND {col} >= {exact}",
        raw = quote_ident(column),
        loose = at(since - PRUNING_SLACK),
        col = ts(column),
        exact = at(since),
    )
}

/// A condition on the text `value` that is true when it would not cast to `target`:
/// the shapes of [`CastTarget::accepts`], as PostgreSQL's patterns in DuckDB's regular
/// expressions (RE2, matched whole).
fn uncastable_sql(target: CastTarget) -> String {
    let matches = |pattern: &str| format!("regexp_full_match(value, '{pattern}', 'i')");
    match target {
        CastTarget::Text => "false".to_string(),
        CastTarget::Integer { min, max } => format!(
            r"CASE WHEN {} THEN coalesce(TRY_CAST(regexp_replace(value, '^\s+|\s+$', '', 'g') AS HUGEINT) NOT BETWEEN {min} AND {max}, true) ELSE true END",
            matches(r"\s*[-+]?[0-9]+\s*")
        ),
        CastTarget::Number => format!(
            "NOT {}",
            matches(
                r"\s*([-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(e[-+]?[0-9]+)?|nan|[-+]?inf(inity)?)\s*"
            )
        ),
        // The shape first, then the day: CASE keeps make_date from ever seeing a month
        // 13 or a year 0.
        CastTarget::Date => {
            let words = DATE_WORDS.join("|");
            let year = r"CAST(regexp_extract(value, '[0-9]{4}') AS INTEGER)";
            let month = r"CAST(regexp_extract(value, '-([0-9]{1,2})-', 1) AS INTEGER)";
            let day = r"CAST(regexp_extract(value, '-([0-9]{1,2})\s*$', 1) AS INTEGER)";
            format!(
                r"CASE WHEN {} THEN false WHEN NOT {} THEN true WHEN {year} = 0 OR {month} NOT BETWEEN 1 AND 12 THEN true ELSE {day} NOT BETWEEN 1 AND day(last_day(make_date({year}, {month}, 1))) END",
                matches(&format!(r"\s*({words})\s*")),
                matches(r"\s*[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}\s*"),
            )
        }
        CastTarget::Boolean => format!(
            "NOT {}",
            matches(&format!(r"\s*({})\s*", BOOLEAN_WORDS.join("|")))
        ),
    }
}

/// The SQL of [`Warehouse::row_count`].
pub fn row_count_sql(relation: &Relation) -> String {
    format!("SELECT count(*) FROM {}", relation.quoted())
}

/// The SQL of [`Warehouse::null_counts`].
pub fn nulls_sql(relation: &Relation, columns: &[String], since: Option<(&str, i64)>) -> String {
    let filter = since.map(|(column, at_)| at_or_after(column, at_));
    null_counts_sql(relation, columns, filter.as_deref())
}

/// The SQL of [`Warehouse::load_times`].
pub fn load_times_sql(relation: &Relation, column: &str, since: i64, limit: usize) -> String {
    format!(
        "SELECT CAST(epoch(minute) AS BIGINT) FROM (
           SELECT DISTINCT date_trunc('minute', {col}) AS minute FROM {table}
           WHERE {window} ORDER BY minute DESC LIMIT {limit}) AS recent
         ORDER BY 1 DESC",
        table = relation.quoted(),
        col = ts(column),
        window = at_or_after(column, since),
    )
}

/// The SQL of [`Warehouse::daily_counts`].
pub fn daily_counts_sql(
    relation: &Relation,
    column: &str,
    since: i64,
    cutoff: NaiveTime,
) -> String {
    format!(
        "SELECT CAST(CAST({col} AS DATE) - DATE '1970-01-01' AS BIGINT) AS day, count(*),
                count(*) FILTER (WHERE CAST({col} AS TIME) < TIME '{cutoff}'),
                count(*) FILTER (WHERE CAST({col} AS TIME) = TIME '00:00:00')
         FROM {table}
         WHERE {window} GROUP BY 1 ORDER BY 1",
        table = relation.quoted(),
        col = ts(column),
        window = at_or_after(column, since),
        cutoff = cutoff.format("%H:%M:%S%.f"),
    )
}

/// The columns of tables of one schema, in table order, as `information_schema` names
/// their types (`DECIMAL(10,2)`, `TIMESTAMP WITH TIME ZONE`, `VARCHAR`).
fn columns_sql(schema: Option<&str>, tables: &[String]) -> String {
    let names: Vec<String> = tables.iter().map(|t| literal(t)).collect();
    format!(
        "SELECT table_name, column_name, upper(data_type) FROM information_schema.columns
         WHERE table_catalog = current_database() AND table_schema = {schema}
           AND table_name IN ({names})
         ORDER BY table_name, ordinal_position",
        schema = schema_sql(schema),
        names = if names.is_empty() {
            "NULL".to_string()
        } else {
            names.join(", ")
        },
    )
}

/// The database path the config gives: `:memory:` as it is, a file resolved against
/// the config's folder.
pub fn database_path(config: &crate::config::Config, path: &Path) -> String {
    if path == Path::new(MEMORY) {
        MEMORY.to_string()
    } else {
        config.resolve(path).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::MinuteWindow;

    #[test]
    fn every_time_window_compares_the_raw_column_with_a_constant() {
        let relation = Relation::parse("analytics.events").unwrap();
        let null_columns = vec!["kind".to_string()];
        // 2024-05-10T12:00:00Z; the windows a day, two days and 98 days back.
        let now = 1_715_342_400;
        let scan = TableScan {
            relation: &relation,
            null_columns: &null_columns,
            nulls_since: Some(("loaded_at", now - 86_400)),
            minutes: Some(MinuteWindow {
                column: "loaded_at",
                from: now - 2 * 86_400,
                older_from: now - 98 * 86_400,
                cutoff: 12 * 3600,
            }),
        };
        let sql = scan_sql(&scan);
        // A day before the earliest window (98 days back, 2024-02-02T12:00:00Z).
        assert!(
            sql.contains(
                "FROM \"analytics\".\"events\" WHERE \"loaded_at\" >= TIMESTAMP '2024-02-01 12:00:00' GROUP BY 1"
            ),
            "{sql}"
        );
        let since = now - 86_400;
        let cutoff = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
        for sql in [
            nulls_sql(&relation, &null_columns, Some(("loaded_at", since))),
            load_times_sql(&relation, "loaded_at", since, 10),
            daily_counts_sql(&relation, "loaded_at", since, cutoff),
        ] {
            assert!(
                sql.contains(
                    "WHERE \"loaded_at\" >= TIMESTAMP '2024-05-08 12:00:00' AND \
                     CAST(\"loaded_at\" AS TIMESTAMP) >= TIMESTAMP '2024-05-09 12:00:00'"
                ),
                "{sql}"
            );
        }
    }
}
