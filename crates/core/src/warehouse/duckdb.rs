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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use chrono::NaiveTime;

use super::adbc::{self, DriverKind, Found, OpenDatabase, Session, Value};
use super::{
    changed_copy, check_restorable, check_unchanged_since, column_list, null_counts_sql,
    quote_ident, versions_copy, CastTarget, CheckQuery, Column, DayCount, DayPrint, KeyGap,
    NullCounts, Planned, Relation, Restored, TableCounts, TableScan, TableVersion, Uncastable,
    Warehouse, WarehouseError, BOOLEAN_WORDS, DATE_WORDS, EARLIER, PRUNING_SLACK,
    UNCASTABLE_EXAMPLES, VERSIONS,
};

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

pub struct DuckdbWarehouse {
    /// The driver as the config names it: a resolved path or a manifest name.
    driver: String,
    /// The database file, or `:memory:`.
    path: String,
    state: Mutex<State>,
    queries: AtomicU64,
    /// When a statement is cancelled (None: never).
    limit: Option<super::Limit>,
    /// A poll is under way: its reads share one session (see [`Warehouse::begin_poll`]).
    polling: AtomicBool,
}

#[derive(Default)]
struct State {
    driver: Option<adbc::Driver>,
    /// The in-memory instance every call runs in; a file is attached to it per session.
    memory: Option<OpenDatabase>,
    /// The poll's read-only session, the file attached, kept between its calls.
    held: Option<Session>,
}

impl DuckdbWarehouse {
    /// `driver`: a path (resolved) or a manifest name; None for `duckdb`. Nothing is
    /// loaded or opened until the first call.
    pub fn new(path: &str, driver: Option<String>) -> DuckdbWarehouse {
        DuckdbWarehouse {
            driver: driver.unwrap_or_else(|| DRIVER.name.to_string()),
            path: path.to_string(),
            state: Mutex::new(State::default()),
            queries: AtomicU64::new(0),
            limit: None,
            polling: AtomicBool::new(false),
        }
    }

    /// Every statement sent from now on is cancelled through the driver once it runs
    /// past `limit` (the warehouse's check_timeout).
    pub fn cancel_after(mut self, limit: super::Limit) -> Self {
        self.limit = Some(limit);
        self
    }

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

    /// Queries sent so far.
    pub fn queries_issued(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Loads the driver (once) and says where it was found.
    pub fn driver_found(&self) -> Result<Found, WarehouseError> {
        let mut state = self.state.lock().expect("duckdb lock");
        Ok(self.loaded(&mut state)?.found.clone())
    }

    /// The DuckDB library's own version (`v1.5.6`), from the library: `doctor` shows it.
    pub fn library_version(&self) -> Result<String, WarehouseError> {
        let mut state = self.state.lock().expect("duckdb lock");
        let driver = self.loaded(&mut state)?;
        let mut session = driver.open(&[("path", MEMORY)])?.connect()?;
        let row = session.query_one("SELECT library_version FROM pragma_version()")?;
        Ok(row[0].text().unwrap_or_default())
    }

    fn loaded<'a>(&self, state: &'a mut State) -> Result<&'a adbc::Driver, WarehouseError> {
        if state.driver.is_none() {
            state.driver = Some(adbc::load(&self.driver, &DRIVER)?);
        }
        Ok(state.driver.as_ref().expect("just loaded"))
    }

    /// Runs `f` on a connection to the database, opened read-only unless `write`. In a
    /// poll, reads share the poll's session; a write closes it and runs in its own.
    fn with_session<T>(
        &self,
        write: bool,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        let mut state = self.state.lock().expect("duckdb lock");
        self.queries.fetch_add(1, Ordering::Relaxed);
        let keep = !write && self.polling.load(Ordering::SeqCst);
        let mut session = match state.held.take() {
            Some(held) if keep => held,
            Some(held) => {
                self.close(held)?;
                self.open(&mut state, write)?
            }
            None => self.open(&mut state, write)?,
        };
        let result = f(&mut session);
        // A poll that ended meanwhile left its session for this call to close.
        let keep = keep && self.polling.load(Ordering::SeqCst);
        match result {
            Err(WarehouseError::Unreachable(_)) => {
                let _ = self.close(session);
                result
            }
            _ if keep => {
                state.held = Some(session);
                result
            }
            Ok(value) => self.close(session).map(|()| value),
            Err(e) => {
                let _ = self.close(session);
                Err(e)
            }
        }
    }

    /// A connection to the in-memory instance, the file attached (read-only unless
    /// `write`) and in use.
    fn open(&self, state: &mut State, write: bool) -> Result<Session, WarehouseError> {
        // One in-memory instance for the warehouse's life: starting DuckDB costs more
        // than a count on a small table.
        if state.memory.is_none() {
            let database = self.loaded(state)?.open(&[("path", MEMORY)])?;
            state.memory = Some(database);
        }
        let mut session = state.memory.as_ref().expect("opened").connect()?;
        session.set_limit(self.limit.clone());
        // Days are UTC days whatever the machine's zone: a TIMESTAMP WITH TIME ZONE is
        // read in the session's zone (DuckDB's ICU sets it from the machine's). A
        // DuckDB built without ICU has no zones, and reads UTC.
        if let Err(e @ WarehouseError::Skipped(_)) = session.execute("SET TimeZone = 'UTC'") {
            return Err(e);
        }
        if self.path == MEMORY {
            return Ok(session);
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
            let _ = self.close(session);
            return Err(e);
        }
        Ok(session)
    }

    /// Detaches the file (from the instance's own catalog: a database in use cannot
    /// be), so between polls others can write it. Always sent, past any guard.
    fn close(&self, mut session: Session) -> Result<(), WarehouseError> {
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

    /// `f` in one transaction on a database opened for writing: committed when it
    /// returns Ok, rolled back otherwise (a refusal included).
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(true, |s| {
            s.execute("BEGIN TRANSACTION")?;
            match f(s) {
                Ok(value) => {
                    s.execute("COMMIT")?;
                    Ok(value)
                }
                Err(e) => {
                    let _ = s.execute("ROLLBACK");
                    Err(e)
                }
            }
        })
    }

    /// A read that must not write even on `:memory:` (opened for writing): in a
    /// transaction always rolled back.
    fn read_only<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(false, |s| {
            s.execute("BEGIN TRANSACTION")?;
            let result = f(s);
            let _ = super::query_log::unguarded(|| s.execute("ROLLBACK"));
            result
        })
    }
}

/// A text literal: single quotes doubled (DuckDB's strings take backslashes as they
/// are).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

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
    let (minute, at_midnight, older) = match &scan.minutes {
        Some(window) => {
            let col = ts(window.column);
            let recent = format!("{col} >= {}", at(window.from));
            (
                format!("CASE WHEN {recent} THEN date_trunc('minute', {col}) END"),
                format!(
                    "count(*) FILTER (WHERE {recent} AND CAST({col} AS TIME) = TIME '00:00:00')"
                ),
                format!("count(*) FILTER (WHERE {col} >= {})", at(window.older_from)),
            )
        }
        None => (
            "CAST(NULL AS TIMESTAMP)".into(),
            "CAST(0 AS BIGINT)".into(),
            "CAST(0 AS BIGINT)".into(),
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
    let nulls = format!("{nulls}{per_minute}");
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

/// The SQL a poll sends for `query`.
pub fn query_sql(query: &CheckQuery) -> String {
    match query {
        CheckQuery::Scan(scan) => scan_sql(scan),
        CheckQuery::RowCount(relation) => row_count_sql(relation),
        CheckQuery::NullCounts {
            relation,
            columns,
            since,
        } => nulls_sql(relation, columns, *since),
        CheckQuery::LoadTimes {
            relation,
            column,
            since,
            limit,
        } => load_times_sql(relation, column, *since, *limit),
        CheckQuery::DailyCounts {
            relation,
            column,
            since,
            cutoff,
        } => daily_counts_sql(relation, column, *since, *cutoff),
        CheckQuery::Columns { schema, tables } => columns_sql(*schema, tables),
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

fn columns_in(
    s: &mut Session,
    schema: Option<&str>,
    tables: &[String],
) -> Result<Vec<Vec<Column>>, WarehouseError> {
    let rows = s.query(&columns_sql(schema, tables))?;
    let mut found: std::collections::HashMap<String, Vec<Column>> = Default::default();
    for row in rows {
        let text = |i: usize| row[i].text().unwrap_or_default();
        found.entry(text(0)).or_default().push(Column {
            name: text(1),
            data_type: text(2),
        });
    }
    Ok(tables
        .iter()
        .map(|t| found.get(t).cloned().unwrap_or_default())
        .collect())
}

/// `relation` as DuckDB resolves it (an unqualified name in the default schema), with
/// its schema, when it is a table; refused otherwise.
fn find_table(s: &mut Session, relation: &Relation) -> Result<Relation, WarehouseError> {
    let rows = s.query(&format!(
        "SELECT table_schema, table_name, table_type FROM information_schema.tables
         WHERE table_catalog = current_database() AND table_schema = {} AND table_name = {}",
        schema_sql(relation.schema.as_deref()),
        literal(&relation.table)
    ))?;
    match rows.first() {
        None => Err(WarehouseError::Refused(format!(
            "table {relation} does not exist"
        ))),
        Some(row) if row[2].text().as_deref() == Some("BASE TABLE") => Ok(Relation {
            schema: row[0].text(),
            table: row[1].text().unwrap_or_default(),
        }),
        Some(_) => Err(WarehouseError::Refused(format!(
            "{relation} is not a table (a view, or another kind of relation): only a \
             table's rows are copied and restored"
        ))),
    }
}

fn exists(s: &mut Session, relation: &Relation) -> Result<bool, WarehouseError> {
    let row = s.query_one(&format!(
        "SELECT count(*) FROM information_schema.tables
         WHERE table_catalog = current_database() AND table_schema = {} AND table_name = {}",
        schema_sql(relation.schema.as_deref()),
        literal(&relation.table)
    ))?;
    Ok(row[0].count()? > 0)
}

fn table_columns(s: &mut Session, relation: &Relation) -> Result<Vec<Column>, WarehouseError> {
    let mut found = columns_in(
        s,
        relation.schema.as_deref(),
        std::slice::from_ref(&relation.table),
    )?;
    Ok(found.pop().unwrap_or_default())
}

fn count_rows(s: &mut Session, relation: &Relation) -> Result<u64, WarehouseError> {
    s.query_one(&row_count_sql(relation))?[0].count()
}

/// [`Warehouse::day_prints`] of `source` (as found): each row's text hashed with MD5,
/// its low 32 bits summed per UTC day.
fn prints(
    s: &mut Session,
    source: &Relation,
    column: Option<&str>,
) -> Result<Vec<DayPrint>, WarehouseError> {
    let columns = table_columns(s, source)?;
    let day = match column {
        Some(column) => format!("CAST(CAST({} AS DATE) AS VARCHAR)", ts(column)),
        None => "CAST(NULL AS VARCHAR)".to_string(),
    };
    let sql = format!(
        "SELECT {day}, count(*), CAST(coalesce(sum(CAST(md5_number(CAST(ROW({list}) AS VARCHAR)) % 4294967296 AS BIGINT)), 0) AS BIGINT)
         FROM {table} GROUP BY 1 ORDER BY 1 NULLS FIRST",
        list = column_list(&columns),
        table = source.quoted()
    );
    s.query(&sql)?
        .into_iter()
        .map(|row| {
            Ok(DayPrint {
                day: row[0].text(),
                rows: row[1].count()?,
                sum: row[2].int()?.unwrap_or(0),
            })
        })
        .collect()
}

/// The copy a version names, when it is one of ours for this table.
fn own_copy(relation: &Relation, version: &TableVersion) -> Result<Relation, WarehouseError> {
    super::own_copy(relation, version, super::own_versions_copy)
}

impl Warehouse for DuckdbWarehouse {
    fn calls_at_once(&self) -> Option<usize> {
        // One DuckDB instance per warehouse, every call under its lock (see above).
        Some(1)
    }

    fn begin_poll(&self) {
        self.polling.store(true, Ordering::SeqCst);
    }

    fn end_poll(&self) {
        self.polling.store(false, Ordering::SeqCst);
        // A call still running closes the session as it ends.
        if let Ok(mut state) = self.state.try_lock() {
            if let Some(held) = state.held.take() {
                let _ = self.close(held);
            }
        }
    }

    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError> {
        self.with_session(false, |s| count_rows(s, relation))
    }

    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        self.with_session(false, |s| columns_in(s, schema, tables))
    }

    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError> {
        let sql = scan_sql(scan);
        let rows = self.with_session(false, |s| s.query(&sql))?;
        let width = scan.width();
        let groups = rows
            .iter()
            .map(|row| {
                let counts = row[1..1 + width]
                    .iter()
                    .map(Value::count)
                    .collect::<Result<Vec<u64>, _>>()?;
                Ok((row[0].int()?, counts))
            })
            .collect::<Result<Vec<_>, WarehouseError>>()?;
        Ok(TableCounts::from_groups(
            groups,
            scan.null_columns.len(),
            scan.nulls_per_minute(),
        ))
    }

    fn plan_scan(&self, scan: &TableScan) -> Result<String, WarehouseError> {
        self.explain(&scan_sql(scan))
    }

    fn plan(&self, query: &CheckQuery) -> Result<Planned, WarehouseError> {
        self.explain(&query_sql(query)).map(Planned::Plan)
    }

    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError> {
        // Every column computed: each row turned into text references them all, so a
        // failing cast in a column nobody counts still fails here.
        let sql = format!("SELECT count(CAST(dry_run AS VARCHAR)) FROM ({select}) AS dry_run");
        self.read_only(|s| s.query_one(&sql)?[0].count())
    }

    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError> {
        let sql = nulls_sql(relation, columns, since);
        let row = self.with_session(false, |s| s.query_one(&sql))?;
        Ok(NullCounts {
            rows: row[0].count()?,
            nulls: row[1..=columns.len()]
                .iter()
                .map(Value::count)
                .collect::<Result<_, _>>()?,
        })
    }

    fn load_times(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        limit: usize,
    ) -> Result<Vec<i64>, WarehouseError> {
        let sql = load_times_sql(relation, column, since, limit);
        let rows = self.with_session(false, |s| s.query(&sql))?;
        rows.iter()
            .map(|row| Ok(row[0].int()?.unwrap_or_default()))
            .collect()
    }

    fn daily_counts(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> Result<Vec<DayCount>, WarehouseError> {
        let sql = daily_counts_sql(relation, column, since, cutoff);
        let rows = self.with_session(false, |s| s.query(&sql))?;
        let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date");
        rows.iter()
            .map(|row| {
                let days = row[0].int()?.unwrap_or_default();
                Ok(DayCount {
                    day: epoch
                        .checked_add_signed(chrono::TimeDelta::days(days))
                        .ok_or_else(|| {
                            WarehouseError::Query(format!("a day out of range: {days}"))
                        })?,
                    rows: row[1].count()?,
                    before_cutoff: row[2].count()?,
                    at_midnight: row[3].count()?,
                })
            })
            .collect()
    }

    fn count_uncastable(
        &self,
        relation: &Relation,
        column: &str,
        target_type: &str,
    ) -> Result<Option<Uncastable>, WarehouseError> {
        let Some(target) = CastTarget::parse(target_type) else {
            return Ok(None);
        };
        // The count first (kind 0), then the first few bad values in byte order.
        let sql = format!(
            "WITH vals AS (SELECT CAST({col} AS VARCHAR) AS value FROM {table} WHERE {col} IS NOT NULL),
                  bad AS (SELECT value FROM vals WHERE {condition})
             SELECT 0 AS kind, CAST(count(*) AS VARCHAR) AS value FROM bad
             UNION ALL
             SELECT 1, value FROM (SELECT DISTINCT value FROM bad ORDER BY value LIMIT {UNCASTABLE_EXAMPLES})
             ORDER BY kind, value",
            col = quote_ident(column),
            table = relation.quoted(),
            condition = uncastable_sql(target),
        );
        let rows = self.read_only(|s| s.query(&sql))?;
        let mut rows = rows.into_iter();
        let count = rows
            .next()
            .and_then(|row| row[1].text())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Ok(Some(Uncastable {
            rows: count,
            examples: rows.filter_map(|row| row[1].text()).collect(),
        }))
    }

    fn missing_keys(&self, gap: &KeyGap) -> Result<Vec<u64>, WarehouseError> {
        let (start, end) = gap.bounds();
        let sql = gap.sql(
            quote_ident,
            &epoch_sql(gap.from_time),
            (&start.to_string(), &end.to_string()),
        );
        let row = self.read_only(|s| s.query_one(&sql))?;
        row[..=gap.also.len()].iter().map(Value::count).collect()
    }

    fn snapshot_table(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<TableVersion, WarehouseError> {
        self.write(|s| {
            let source = find_table(s, relation)?;
            let copy = versions_copy(&source, tag)?;
            s.execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {}",
                quote_ident(VERSIONS)
            ))?;
            if exists(s, &copy)? {
                return Err(WarehouseError::Refused(format!(
                    "a version of {relation} tagged {tag:?} exists already ({copy}); a \
                     version is never overwritten"
                )));
            }
            let columns = table_columns(s, &source)?;
            // One statement, one snapshot of the table; CREATE TABLE AS keeps each
            // column's type (DECIMAL(10,2), VARCHAR, TIMESTAMP WITH TIME ZONE).
            s.execute(&format!(
                "CREATE TABLE {} AS SELECT {} FROM {}",
                copy.quoted(),
                column_list(&columns),
                source.quoted()
            ))?;
            let rows = count_rows(s, &copy)?;
            Ok(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows,
                // DuckDB runs in this process: its clock is ours.
                taken_at: crate::clock::Clock::wall().timestamp().to_string(),
                scope: None,
                after: None,
            })
        })
    }

    /// The DELETE and the INSERT are one transaction, on the file opened for writing by
    /// this process alone (DuckDB lets one process write a file, and no other open it
    /// meanwhile): no reader sees the table empty, no load lands in between.
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError> {
        let copy = own_copy(relation, version)?;
        self.write(|s| {
            let source = find_table(s, relation)?;
            if !exists(s, &copy)? {
                return Err(WarehouseError::Refused(format!(
                    "cannot restore {relation}: its copy {copy} is missing (dropped, or \
                     never taken in this warehouse)"
                )));
            }
            let table_columns_now = table_columns(s, &source)?;
            let copy_columns = table_columns(s, &copy)?;
            check_restorable(
                &relation.to_string(),
                &table_columns_now,
                &version.copy,
                &copy_columns,
            )?;
            let copied = count_rows(s, &copy)?;
            if copied != version.rows {
                return Err(changed_copy(relation, version, copied));
            }
            let scope = version.scope.as_ref();
            let now = prints(s, &source, scope.and_then(|sc| sc.column.as_deref()))?;
            let kept = check_unchanged_since(relation, version, &now)?;
            let within = match scope.and_then(|sc| sc.range()) {
                Some((column, start, end)) => format!(
                    " WHERE {} AND {raw} < {loose} AND {epoch} < {end}",
                    at_or_after(column, start),
                    raw = quote_ident(column),
                    loose = at(end + PRUNING_SLACK),
                    epoch = epoch_sql(column)
                ),
                None => String::new(),
            };
            let list = column_list(&table_columns_now);
            s.execute(&format!("DELETE FROM {}{within}", source.quoted()))?;
            let inserted = s.execute(&format!(
                "INSERT INTO {} ({list}) SELECT {list} FROM {}{within}",
                source.quoted(),
                copy.quoted()
            ))?;
            let rows = match inserted {
                Some(rows) => rows,
                None => s.query_one(&format!("SELECT count(*) FROM {}{within}", copy.quoted()))?[0]
                    .count()?,
            };
            Ok(Restored { rows, kept })
        })
    }

    fn day_prints(
        &self,
        relation: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        self.read_only(|s| {
            let source = find_table(s, relation)?;
            prints(s, &source, column)
        })
    }

    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError> {
        let copy = super::own_versions_copy(&version.copy)?;
        self.write(|s| {
            // A schema never made means no copy either.
            if exists(s, &copy)? {
                s.execute(&format!("DROP TABLE {}", copy.quoted()))?;
            }
            Ok(())
        })
    }

    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError> {
        self.read_only(|s| {
            let source = find_table(s, relation)?;
            let copy = versions_copy(&source, tag)?;
            if !exists(s, &copy)? {
                return Ok(None);
            }
            Ok(Some(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows: count_rows(s, &copy)?,
                taken_at: EARLIER.to_string(),
                scope: None,
                after: None,
            }))
        })
    }
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

/// The driver the config names, a path resolved against the config's folder.
pub fn driver_wanted(config: &crate::config::Config, driver: Option<&str>) -> Option<String> {
    driver.map(|d| {
        if adbc::is_path(d) {
            config.resolve(&PathBuf::from(d)).display().to_string()
        } else {
            d.to_string()
        }
    })
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
