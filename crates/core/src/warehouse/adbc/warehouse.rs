//! One warehouse for every ADBC driver: what DuckDB and Snowflake share (the driver
//! loaded once, sessions kept for a poll, transactions, every check read back from its
//! rows, snapshots and restores), with each warehouse's SQL and set-up in its
//! [`Dialect`].
//!
//! Sessions: a poll's calls share the sessions it opened, each taken by one call at a
//! time and given back when the call ends, so a poll opens no more sessions than it
//! runs calls at once (its `max_concurrent`, or one where the dialect runs one call at
//! a time), and its queries run back to back: a suspended warehouse resumes once per
//! poll, not once per table. Outside a poll every call has a session of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::NaiveTime;

use super::{Driver, DriverKind, Found, OpenDatabase, Session, Value};
use crate::warehouse::{
    changed_copy, check_restorable, check_unchanged_since, CastTarget, CheckQuery, Column,
    DayCount, DayPrint, KeyGap, Limit, NullCounts, Planned, Relation, Restored, TableCounts,
    TableScan, TableVersion, Uncastable, Warehouse, WarehouseError, PRUNING_SLACK,
    UNCASTABLE_EXAMPLES, VERSIONS,
};

/// What one warehouse kind says and does differently: its SQL, how its sessions are
/// set up, and the few places its engine behaves otherwise.
pub trait Dialect: Send + Sync + Sized + 'static {
    /// How its driver is found.
    const DRIVER: DriverKind;
    /// Only one call at a time (DuckDB: one instance, its attached file shared by
    /// every connection).
    const ONE_CALL_AT_A_TIME: bool;
    /// What starts a transaction.
    const BEGIN: &'static str;
    /// A write needs a session of its own, opened for writing (DuckDB attaches the
    /// file read-only for reads).
    const WRITES_APART: bool;
    /// DDL runs in the write's transaction (Snowflake commits each DDL statement on its
    /// own, so there it runs without one).
    const DDL_IN_TRANSACTION: bool;
    /// A plain read could write (DuckDB's `:memory:` is opened for writing): catalog
    /// reads then run in a transaction always rolled back.
    const READS_CAN_WRITE: bool;
    /// The driver says how many rows an INSERT wrote.
    const COUNTS_WRITTEN_ROWS: bool;

    /// The database's options, secrets read now. Asked before the driver is looked
    /// for: a secret missing is the config's problem, said first.
    fn database_options(&self) -> Result<Vec<(String, String)>, WarehouseError>;
    /// What a failed opening of the database says (Snowflake names the key's settings
    /// when the driver could not read the private key).
    fn open_failed(&self, e: WarehouseError) -> WarehouseError {
        e
    }
    /// Sets up a new session (opened for writing when `write`).
    fn prepare(&self, session: &mut Session, write: bool) -> Result<(), WarehouseError>;
    /// Ends a session's use (DuckDB detaches its file); always sent, past any guard.
    fn release(&self, session: &mut Session) -> Result<(), WarehouseError>;

    /// A name as the warehouse stores it when written unquoted.
    fn fold(name: &str) -> String;
    /// A name as a quoted identifier.
    fn quote(name: &str) -> String;
    /// A text literal.
    fn literal(text: &str) -> String;
    /// A relation as quoted identifiers.
    fn quoted(relation: &Relation) -> String {
        match &relation.schema {
            Some(schema) => format!("{}.{}", Self::quote(schema), Self::quote(&relation.table)),
            None => Self::quote(&relation.table),
        }
    }
    fn column_list(columns: &[Column]) -> String {
        columns
            .iter()
            .map(|c| Self::quote(&c.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// A timestamp column as Unix seconds, per row.
    fn epoch_sql(column: &str) -> String;
    /// Unix seconds as a constant to compare a raw time column with.
    fn timestamp(seconds: i64) -> String;
    /// `column` at or after `since`, exactly, and by the raw column against a constant.
    fn at_or_after(column: &str, since: i64) -> String;
    /// A value as text.
    fn to_text(sql: &str) -> String;
    /// True for the text `value` when it would not cast to `target`.
    fn uncastable_sql(target: CastTarget) -> String;

    fn scan_sql(scan: &TableScan) -> String;
    fn row_count_sql(relation: &Relation) -> String;
    fn null_counts_sql(
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> String;
    fn load_times_sql(relation: &Relation, column: &str, since: i64, limit: usize) -> String;
    fn daily_counts_sql(relation: &Relation, column: &str, since: i64, cutoff: NaiveTime)
        -> String;
    /// One catalog query for the columns of a schema's tables: table, column, then
    /// whatever [`Self::column`] reads.
    fn columns_sql(&self, schema: Option<&str>, tables: &[String]) -> String;
    /// A column from a row of [`Self::columns_sql`].
    fn column(row: &[Value]) -> Column;
    /// `SELECT what FROM` the catalog's tables `WHERE` the relation's schema and name.
    fn tables_sql(&self, what: &str, relation: &Relation) -> String;
    /// Counts every row of `select`, every column computed.
    fn dry_run_sql(select: &str) -> String;
    /// Each row hashed, the low 32 bits summed per UTC day of `day` (a SQL text day).
    fn prints_sql(source: &Relation, columns: &[Column], day: Option<&str>) -> String;
    /// Where the copy of `source` (as found) tagged `tag` lives.
    fn versions_copy(source: &Relation, tag: &str) -> Result<Relation, WarehouseError>;
    /// Makes `copy`, a copy of `source` as it is now.
    fn snapshot(
        wh: &AdbcWarehouse<Self>,
        s: &mut Session,
        source: &Relation,
        copy: &Relation,
    ) -> Result<(), WarehouseError>;
    /// The time a snapshot was taken, by the warehouse's clock.
    fn now(s: &mut Session) -> Result<crate::clock::Timestamp, WarehouseError>;
    /// Drops a copy made by [`Self::snapshot`] if it exists.
    fn drop_copy(
        wh: &AdbcWarehouse<Self>,
        s: &mut Session,
        copy: &Relation,
    ) -> Result<(), WarehouseError>;
    /// The plan of a query, or why there is none.
    fn plan(wh: &AdbcWarehouse<Self>, sql: &str) -> Result<Planned, WarehouseError>;
}

/// A warehouse reached through an ADBC driver, its SQL and set-up its dialect's.
pub struct AdbcWarehouse<D: Dialect> {
    pub(crate) dialect: D,
    /// The driver as the config names it: a resolved path or a manifest name.
    driver: String,
    opened: Mutex<Opened>,
    pool: Mutex<Pool>,
    /// Held over each call where the dialect runs one at a time.
    one_at_a_time: Mutex<()>,
    queries: AtomicU64,
    /// When a statement is cancelled (None: never).
    limit: Option<Limit>,
}

#[derive(Default)]
struct Opened {
    driver: Option<Driver>,
    database: Option<Arc<OpenDatabase>>,
}

/// The poll's sessions not in use, and whether a poll is under way; one lock, so a
/// session given back as the poll ends is closed rather than left open.
#[derive(Default)]
struct Pool {
    polling: bool,
    idle: Vec<Session>,
}

impl<D: Dialect> AdbcWarehouse<D> {
    /// Nothing is loaded, read or logged in to until the first call.
    pub fn with_dialect(dialect: D, driver: Option<String>) -> Self {
        AdbcWarehouse {
            dialect,
            driver: driver.unwrap_or_else(|| D::DRIVER.name.to_string()),
            opened: Mutex::new(Opened::default()),
            pool: Mutex::new(Pool::default()),
            one_at_a_time: Mutex::new(()),
            queries: AtomicU64::new(0),
            limit: None,
        }
    }

    /// Every statement sent from now on is cancelled through the driver once it runs
    /// past `limit` (the warehouse's check_timeout).
    pub fn cancel_after(mut self, limit: Limit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Calls made so far.
    pub fn queries_issued(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Loads the driver (once) and says where it was found.
    pub fn driver_found(&self) -> Result<Found, WarehouseError> {
        let mut opened = self.opened.lock().expect("adbc lock");
        Ok(self.loaded(&mut opened)?.found.clone())
    }

    /// Runs `f` with the driver, loaded once.
    pub(crate) fn with_driver<T>(
        &self,
        f: impl FnOnce(&Driver) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        let mut opened = self.opened.lock().expect("adbc lock");
        f(self.loaded(&mut opened)?)
    }

    fn loaded<'a>(&self, opened: &'a mut Opened) -> Result<&'a Driver, WarehouseError> {
        if opened.driver.is_none() {
            opened.driver = Some(super::load(&self.driver, &D::DRIVER)?);
        }
        Ok(opened.driver.as_ref().expect("just loaded"))
    }

    /// The database, opened (logged in) once for the warehouse's life.
    fn database(&self) -> Result<Arc<OpenDatabase>, WarehouseError> {
        let mut opened = self.opened.lock().expect("adbc lock");
        if let Some(database) = &opened.database {
            return Ok(database.clone());
        }
        let options = self.dialect.database_options()?;
        let options: Vec<(&str, &str)> = options
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let database = self
            .loaded(&mut opened)?
            .open(&options)
            .map_err(|e| self.dialect.open_failed(e))?;
        let database = Arc::new(database);
        opened.database = Some(database.clone());
        Ok(database)
    }

    /// A new session, set up by the dialect.
    fn open(&self, write: bool) -> Result<Session, WarehouseError> {
        // Logged in outside the lock: sessions of one poll log in side by side.
        let mut session = self.database()?.connect()?;
        session.set_limit(self.limit.clone());
        self.dialect.prepare(&mut session, write)?;
        Ok(session)
    }

    fn close(&self, mut session: Session) -> Result<(), WarehouseError> {
        self.dialect.release(&mut session)
    }

    /// Runs `f` on a session, opened for writing when `write`. In a poll, reads take
    /// one of the poll's sessions (or open one when all are in use) and give it back.
    pub(crate) fn with_session<T>(
        &self,
        write: bool,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        let _one = D::ONE_CALL_AT_A_TIME.then(|| self.one_at_a_time.lock().expect("adbc lock"));
        self.queries.fetch_add(1, Ordering::Relaxed);
        let apart = write && D::WRITES_APART;
        let held = {
            let mut pool = self.pool.lock().expect("adbc lock");
            if apart {
                std::mem::take(&mut pool.idle)
            } else {
                pool.idle.pop().into_iter().collect()
            }
        };
        let mut session = match held {
            held if apart => {
                for session in held {
                    self.close(session)?;
                }
                self.open(write)?
            }
            mut held => match held.pop() {
                Some(session) => session,
                None => self.open(write)?,
            },
        };
        let result = f(&mut session);
        if matches!(result, Err(WarehouseError::Unreachable(_))) {
            let _ = self.close(session);
            return result;
        }
        // A session whose statement was cancelled may still be busy in the warehouse.
        if !apart && !session.was_cancelled() {
            let mut pool = self.pool.lock().expect("adbc lock");
            // A poll that ended meanwhile left this session for this call to close.
            if pool.polling {
                pool.idle.push(session);
                return result;
            }
        }
        match result {
            Ok(value) => self.close(session).map(|()| value),
            Err(e) => {
                let _ = self.close(session);
                Err(e)
            }
        }
    }

    /// `f` in one transaction on a session opened for writing: committed when it
    /// returns Ok, rolled back otherwise (a refusal included).
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(true, |s| {
            s.execute(D::BEGIN)?;
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

    /// DDL: in a write's transaction where the dialect has DDL in transactions.
    fn ddl<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        if D::DDL_IN_TRANSACTION {
            self.write(f)
        } else {
            self.with_session(true, f)
        }
    }

    /// A read that must not write: in a transaction always rolled back.
    pub(crate) fn read_only<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(false, |s| {
            s.execute(D::BEGIN)?;
            let result = f(s);
            let _ = crate::warehouse::query_log::unguarded(|| s.execute("ROLLBACK"));
            result
        })
    }

    /// A catalog read around a snapshot's copy: read-only where a plain read could
    /// write.
    fn catalog_read<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        if D::READS_CAN_WRITE {
            self.read_only(f)
        } else {
            self.with_session(false, f)
        }
    }

    /// The SQL a poll sends for `query`.
    pub fn query_sql(&self, query: &CheckQuery) -> String {
        match query {
            CheckQuery::Scan(scan) => D::scan_sql(scan),
            CheckQuery::RowCount(relation) => D::row_count_sql(relation),
            CheckQuery::NullCounts {
                relation,
                columns,
                since,
            } => D::null_counts_sql(relation, columns, *since),
            CheckQuery::LoadTimes {
                relation,
                column,
                since,
                limit,
            } => D::load_times_sql(relation, column, *since, *limit),
            CheckQuery::DailyCounts {
                relation,
                column,
                since,
                cutoff,
            } => D::daily_counts_sql(relation, column, *since, *cutoff),
            CheckQuery::Columns { schema, tables } => self.dialect.columns_sql(*schema, tables),
        }
    }

    fn columns_in(
        &self,
        s: &mut Session,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        let rows = s.query(&self.dialect.columns_sql(schema, tables))?;
        let mut found: std::collections::HashMap<String, Vec<Column>> = Default::default();
        for row in rows {
            let table = row[0].text().unwrap_or_default();
            found.entry(table).or_default().push(D::column(&row));
        }
        Ok(tables
            .iter()
            .map(|t| found.get(&D::fold(t)).cloned().unwrap_or_default())
            .collect())
    }

    pub(crate) fn table_columns(
        &self,
        s: &mut Session,
        relation: &Relation,
    ) -> Result<Vec<Column>, WarehouseError> {
        let mut found = self.columns_in(
            s,
            relation.schema.as_deref(),
            std::slice::from_ref(&relation.table),
        )?;
        Ok(found.pop().unwrap_or_default())
    }

    /// `relation` as the warehouse resolves it, with its schema, when it is a table;
    /// refused otherwise.
    fn find_table(&self, s: &mut Session, relation: &Relation) -> Result<Relation, WarehouseError> {
        let sql = self
            .dialect
            .tables_sql("table_schema, table_name, table_type", relation);
        match s.query(&sql)?.first() {
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

    pub(crate) fn exists(
        &self,
        s: &mut Session,
        relation: &Relation,
    ) -> Result<bool, WarehouseError> {
        let row = s.query_one(&self.dialect.tables_sql("count(*)", relation))?;
        Ok(row[0].count()? > 0)
    }

    /// [`Warehouse::day_prints`] of `source` (as found).
    fn prints(
        &self,
        s: &mut Session,
        source: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        let columns = self.table_columns(s, source)?;
        s.query(&D::prints_sql(source, &columns, column))?
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
}

pub(crate) fn count_rows<D: Dialect>(
    s: &mut Session,
    relation: &Relation,
) -> Result<u64, WarehouseError> {
    s.query_one(&D::row_count_sql(relation))?[0].count()
}

/// A relation with its names folded as the warehouse stores them.
fn folded<D: Dialect>(relation: &Relation) -> Relation {
    Relation {
        schema: relation.schema.as_deref().map(D::fold),
        table: D::fold(&relation.table),
    }
}

impl<D: Dialect> Warehouse for AdbcWarehouse<D> {
    fn calls_at_once(&self) -> Option<usize> {
        D::ONE_CALL_AT_A_TIME.then_some(1)
    }

    fn begin_poll(&self) {
        self.pool.lock().expect("adbc lock").polling = true;
    }

    fn end_poll(&self) {
        let idle = {
            let mut pool = self.pool.lock().expect("adbc lock");
            pool.polling = false;
            std::mem::take(&mut pool.idle)
        };
        // A call still running closes its session as it ends.
        for session in idle {
            let _ = self.close(session);
        }
    }

    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError> {
        self.with_session(false, |s| count_rows::<D>(s, relation))
    }

    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        self.with_session(false, |s| self.columns_in(s, schema, tables))
    }

    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError> {
        let sql = D::scan_sql(scan);
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
        Ok(TableCounts::from_groups(groups, scan))
    }

    fn plan_scan(&self, scan: &TableScan) -> Result<String, WarehouseError> {
        match D::plan(self, &D::scan_sql(scan))? {
            Planned::Plan(plan) | Planned::Unplanned(plan) => Ok(plan),
            Planned::NotPlanned => Ok("planned".to_string()),
        }
    }

    fn plan(&self, query: &CheckQuery) -> Result<Planned, WarehouseError> {
        D::plan(self, &self.query_sql(query))
    }

    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError> {
        let sql = D::dry_run_sql(select);
        self.read_only(|s| s.query_one(&sql)?[0].count())
    }

    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError> {
        let sql = D::null_counts_sql(relation, columns, since);
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
        let sql = D::load_times_sql(relation, column, since, limit);
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
        let sql = D::daily_counts_sql(relation, column, since, cutoff);
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
            "WITH vals AS (SELECT {value} AS value FROM {table} WHERE {col} IS NOT NULL),
                  bad AS (SELECT value FROM vals WHERE {condition})
             SELECT 0 AS kind, {count} AS value FROM bad
             UNION ALL
             SELECT 1, value FROM (SELECT DISTINCT value FROM bad ORDER BY value LIMIT {UNCASTABLE_EXAMPLES})
             ORDER BY kind, value",
            col = D::quote(column),
            value = D::to_text(&D::quote(column)),
            count = D::to_text("count(*)"),
            table = D::quoted(relation),
            condition = D::uncastable_sql(target),
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
        let (from, into) = (folded::<D>(gap.from), folded::<D>(gap.into));
        let folded = KeyGap {
            from: &from,
            into: &into,
            ..*gap
        };
        let sql = folded.sql(
            D::quote,
            &D::epoch_sql(gap.from_time),
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
        self.ddl(|s| {
            let source = self.find_table(s, relation)?;
            let copy = D::versions_copy(&source, tag)?;
            s.execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {}",
                D::quote(VERSIONS)
            ))?;
            if self.exists(s, &copy)? {
                return Err(WarehouseError::Refused(format!(
                    "a version of {relation} tagged {tag:?} exists already ({copy}); a \
                     version is never overwritten"
                )));
            }
            D::snapshot(self, s, &source, &copy)?;
            let rows = count_rows::<D>(s, &copy)?;
            Ok(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows,
                taken_at: Some(D::now(s)?),
                scope: None,
                after: None,
            })
        })
    }

    /// The DELETE and the INSERT are one transaction: no reader sees the table empty,
    /// no load lands in between.
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError> {
        let copy =
            crate::warehouse::own_copy(relation, version, crate::warehouse::own_versions_copy)?;
        self.write(|s| {
            let source = self.find_table(s, relation)?;
            if !self.exists(s, &copy)? {
                return Err(WarehouseError::Refused(format!(
                    "cannot restore {relation}: its copy {copy} is missing (dropped, or \
                     never taken in this warehouse)"
                )));
            }
            let table_columns_now = self.table_columns(s, &source)?;
            let copy_columns = self.table_columns(s, &copy)?;
            check_restorable(
                &relation.to_string(),
                &table_columns_now,
                &version.copy,
                &copy_columns,
            )?;
            let copied = count_rows::<D>(s, &copy)?;
            if copied != version.rows {
                return Err(changed_copy(relation, version, copied));
            }
            let scope = version.scope.as_ref();
            let now = self.prints(s, &source, scope.and_then(|sc| sc.column.as_deref()))?;
            let kept = check_unchanged_since(relation, version, &now)?;
            let within = match scope.and_then(|sc| sc.range()) {
                Some((column, start, end)) => format!(
                    " WHERE {} AND {raw} < {constant} AND {epoch} < {end}",
                    D::at_or_after(column, start),
                    raw = D::quote(column),
                    constant = D::timestamp(end + PRUNING_SLACK),
                    epoch = D::epoch_sql(column)
                ),
                None => String::new(),
            };
            let list = D::column_list(&table_columns_now);
            s.execute(&format!("DELETE FROM {}{within}", D::quoted(&source)))?;
            let inserted = s.execute(&format!(
                "INSERT INTO {} ({list}) SELECT {list} FROM {}{within}",
                D::quoted(&source),
                D::quoted(&copy)
            ))?;
            let rows = match inserted.filter(|_| D::COUNTS_WRITTEN_ROWS) {
                Some(rows) => rows,
                None => s.query_one(&format!(
                    "SELECT count(*) FROM {}{within}",
                    D::quoted(&copy)
                ))?[0]
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
        self.catalog_read(|s| {
            let source = self.find_table(s, relation)?;
            self.prints(s, &source, column)
        })
    }

    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError> {
        let copy = crate::warehouse::own_versions_copy(&version.copy)?;
        self.ddl(|s| D::drop_copy(self, s, &copy))
    }

    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError> {
        self.catalog_read(|s| {
            let source = self.find_table(s, relation)?;
            let copy = D::versions_copy(&source, tag)?;
            if !self.exists(s, &copy)? {
                return Ok(None);
            }
            Ok(Some(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows: count_rows::<D>(s, &copy)?,
                taken_at: None,
                scope: None,
                after: None,
            }))
        })
    }
}

/// The driver the config names, a path resolved against the config's folder.
pub fn driver_wanted(config: &crate::config::Config, driver: Option<&str>) -> Option<String> {
    driver.map(|d| {
        if super::is_path(d) {
            config
                .resolve(&std::path::PathBuf::from(d))
                .display()
                .to_string()
        } else {
            d.to_string()
        }
    })
}
