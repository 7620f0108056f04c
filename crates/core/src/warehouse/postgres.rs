//! PostgreSQL as a warehouse, through the synchronous `postgres` crate.
//!
//! The trait is synchronous, so the poller runs each check on a blocking thread and
//! bounds how many run at once. Connections are kept in a small pool (one per allowed
//! concurrent check): opening a connection costs more than a count on a small table.
//! A connection that broke is dropped, so the next check reconnects and a server that
//! came back is seen at once.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{NaiveDate, NaiveTime};
use postgres::{Client, NoTls};

pub mod grant;
mod scan;
pub(crate) mod server;

use super::{
    changed_copy, check_restorable, check_unchanged_since, column_list, null_counts_sql, query_log,
    quote_ident, CastTarget, ChangeMarks, Column, DayCount, DayPrint, KeyGap, NullCounts, Relation,
    Restored, Stripe, TableCounts, TableScan, TableVersion, Uncastable, Warehouse, WarehouseError,
    BOOLEAN_WORDS, DATE_WORDS, UNCASTABLE_EXAMPLES, VERSIONS,
};

pub struct PostgresWarehouse {
    config: postgres::Config,
    /// Idle connections, ready for the next check.
    idle: Mutex<Vec<Pooled>>,
    max_idle: usize,
    statement_timeout: Duration,
    queries: AtomicU64,
}

/// A connection with the statements prepared on it: a query asked of every table each
/// poll (the columns from the catalog) is parsed and planned by the server once per
/// connection instead of every time.
struct Pooled {
    client: Client,
    prepared: std::collections::HashMap<&'static str, postgres::Statement>,
}

impl Pooled {
    fn prepared(&mut self, sql: &'static str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Tables' columns, in order, as `information_schema` names their types. Compared as
/// they are (no casts), so the server finds the tables through the catalog's index.
const COLUMNS_SQL: &str = "SELECT table_name::text, column_name::text, upper(data_type::text),
        character_maximum_length::int4,
        numeric_precision::int4, numeric_scale::int4
 FROM information_schema.columns
 WHERE table_schema = coalesce($1, current_schema()) AND table_name = ANY($2)
 ORDER BY table_name, ordinal_position";

impl PostgresWarehouse {
    /// `url` is a libpq-style URL or key=value string. It is parsed here, never logged:
    /// it may hold a password.
    pub fn new(
        url: &str,
        max_connections: usize,
        timeout: Duration,
    ) -> Result<PostgresWarehouse, WarehouseError> {
        let mut config = postgres::Config::from_str(url).map_err(|e| {
            // The parser's message may quote part of the URL.
            WarehouseError::Unreachable(format!(
                "the connection URL does not parse: {}",
                crate::config::redact_secrets(&e.to_string())
            ))
        })?;
        // Well inside the check's own timeout, so a host that does not answer is seen
        // as unreachable rather than as a check that ran too long.
        config.connect_timeout(
            (timeout / 2).clamp(Duration::from_millis(500), Duration::from_secs(10)),
        );
        config.application_name("dataward");
        Ok(PostgresWarehouse {
            config,
            idle: Mutex::new(Vec::new()),
            max_idle: max_connections.max(1),
            statement_timeout: timeout,
            queries: AtomicU64::new(0),
        })
    }

    /// Reads the URL from the environment variable the config names.
    pub fn from_env(
        var: &str,
        max_connections: usize,
        timeout: Duration,
    ) -> Result<PostgresWarehouse, WarehouseError> {
        let url = std::env::var(var).map_err(|_| {
            WarehouseError::Unreachable(format!(
                "environment variable {var} (the warehouse's url_env) is not set"
            ))
        })?;
        PostgresWarehouse::new(&url, max_connections, timeout)
    }

    /// Queries sent to the server so far (connection setup not included).
    pub fn queries_issued(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Runs `f` on a pooled connection, returning it to the pool unless it broke.
    fn with_client<T>(
        &self,
        f: impl Fn(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, WarehouseError> {
        self.with_pooled(|pooled| f(&mut pooled.client))
    }

    /// [`Self::with_client`], with the connection's prepared statements at hand.
    fn with_pooled<T>(
        &self,
        f: impl Fn(&mut Pooled) -> Result<T, postgres::Error>,
    ) -> Result<T, WarehouseError> {
        query_log::may_send()?;
        let pooled = self.idle.lock().expect("pool lock").pop();
        let (pooled, result) = match pooled.filter(|p| !p.client.is_closed()) {
            Some(mut pooled) => {
                self.queries.fetch_add(1, Ordering::Relaxed);
                let result = f(&mut pooled);
                match result {
                    // A pooled connection that broke while idle (a server restart
                    // closes them all) is not a failed connection attempt: run once
                    // more on a fresh one before calling the warehouse unreachable.
                    Err(e) if pooled.client.is_closed() || is_io(&e) => self.run_fresh(&f)?,
                    result => (pooled, result),
                }
            }
            None => self.run_fresh(&f)?,
        };
        if !pooled.client.is_closed() {
            let mut idle = self.idle.lock().expect("pool lock");
            if idle.len() < self.max_idle {
                idle.push(pooled);
            }
        }
        result.map_err(classify)
    }

    fn run_fresh<T>(
        &self,
        f: &impl Fn(&mut Pooled) -> Result<T, postgres::Error>,
    ) -> Result<(Pooled, Result<T, postgres::Error>), WarehouseError> {
        let mut pooled = Pooled {
            client: self.connect()?,
            prepared: std::collections::HashMap::new(),
        };
        self.queries.fetch_add(1, Ordering::Relaxed);
        let result = f(&mut pooled);
        Ok((pooled, result))
    }

    fn connect(&self) -> Result<Client, WarehouseError> {
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|e| WarehouseError::Unreachable(describe(&e)))?;
        query_log::session_opened();
        // Days are UTC days whatever the server's zone; a runaway check is cut off by
        // the server as well as by the poller.
        // The server's version comes back in the same round trip: the scan bins with
        // date_bin, which older servers lack, and that is said once, plainly. No
        // parallel workers: a check's reads are many and small, and the planner takes the
        // recent read's probe a day for thousands of rows (parallel, it cost 30 times the
        // CPU).
        let setup = format!(
            "SET TimeZone = 'UTC'; SET statement_timeout = {}; \
             SET max_parallel_workers_per_gather = 0; SHOW server_version_num",
            self.statement_timeout.as_millis()
        );
        let answered = client
            .simple_query(&setup)
            .map_err(|e| WarehouseError::Unreachable(describe(&e)))?;
        query_log::sent(&setup, 1, None);
        let version = answered.iter().find_map(|message| match message {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        });
        if let Some(too_old) = version.as_deref().and_then(server::too_old) {
            return Err(WarehouseError::Unreachable(too_old));
        }
        Ok(client)
    }
}

/// What a query returned, counted in rows for the query log.
trait Returned {
    fn rows(&self) -> u64;
}

impl Returned for Vec<postgres::Row> {
    fn rows(&self) -> u64 {
        self.len() as u64
    }
}

impl Returned for postgres::Row {
    fn rows(&self) -> u64 {
        1
    }
}

impl Returned for Option<postgres::Row> {
    fn rows(&self) -> u64 {
        u64::from(self.is_some())
    }
}

/// Statements that return no rows (the rows they changed are not what they returned).
impl Returned for u64 {
    fn rows(&self) -> u64 {
        0
    }
}

impl Returned for () {
    fn rows(&self) -> u64 {
        0
    }
}

/// A transaction whose every statement is recorded in the query log as it is sent,
/// its start and its end included: COMMIT, or the ROLLBACK the client sends when it is
/// dropped uncommitted (a refusal, a failure).
struct Tx<'a> {
    tx: Option<postgres::Transaction<'a>>,
}

impl<'a> Tx<'a> {
    /// `BEGIN`, or `START TRANSACTION READ ONLY`.
    fn begin(client: &'a mut Client, read_only: bool) -> Result<Tx<'a>, postgres::Error> {
        let (sql, tx) = if read_only {
            let tx = client.build_transaction().read_only(true).start();
            ("START TRANSACTION READ ONLY", tx)
        } else {
            ("BEGIN", client.transaction())
        };
        query_log::sent(sql, 0, None);
        Ok(Tx { tx: Some(tx?) })
    }

    fn open(&mut self) -> &mut postgres::Transaction<'a> {
        self.tx.as_mut().expect("open until it ends")
    }

    fn query(&mut self, sql: &str, params: &[&Param]) -> Result<Vec<Row>, postgres::Error> {
        sent(sql, self.open().query(sql, params))
    }

    fn query_one(&mut self, sql: &str, params: &[&Param]) -> Result<Row, postgres::Error> {
        sent(sql, self.open().query_one(sql, params))
    }

    fn query_opt(&mut self, sql: &str, params: &[&Param]) -> Result<Option<Row>, postgres::Error> {
        sent(sql, self.open().query_opt(sql, params))
    }

    fn execute(&mut self, sql: &str, params: &[&Param]) -> Result<u64, postgres::Error> {
        sent(sql, self.open().execute(sql, params))
    }

    fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        sent(sql, self.open().batch_execute(sql))
    }

    fn commit(mut self) -> Result<(), postgres::Error> {
        let tx = self.tx.take().expect("open until it ends");
        sent("COMMIT", tx.commit())
    }

    fn rollback(mut self) -> Result<(), postgres::Error> {
        let tx = self.tx.take().expect("open until it ends");
        sent("ROLLBACK", tx.rollback())
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        // The client rolls an unfinished transaction back as it is dropped.
        if self.tx.is_some() {
            query_log::sent("ROLLBACK", 0, None);
        }
    }
}

type Param = dyn postgres::types::ToSql + Sync;
type Row = postgres::Row;

/// Records a check's query in the query log (see [`query_log`]) once sent, failed or
/// not. The SQL as sent: its values go separately, as `$1`, `$2`.
fn sent<T: Returned>(sql: &str, result: Result<T, postgres::Error>) -> Result<T, postgres::Error> {
    query_log::sent(sql, result.as_ref().map_or(0, Returned::rows), None);
    result
}

/// A broken connection or a server shutting down is `Unreachable`; an error the server
/// raised about the query itself is `Query`.
fn classify(e: postgres::Error) -> WarehouseError {
    let message = describe(&e);
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            // 08: connection exception; 57P01-57P03: admin shutdown, crash, cannot connect now.
            if code.starts_with("08") || code.starts_with("57P") {
                WarehouseError::Unreachable(message)
            } else {
                WarehouseError::Query(message)
            }
        }
        None if e.is_closed() || is_io(&e) => WarehouseError::Unreachable(message),
        None => WarehouseError::Query(message),
    }
}

fn is_io(e: &postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// The server's own message where there is one; the crate's Display alone often says
/// only "db error".
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// A timestamp, timestamptz or date column as Unix seconds.
fn epoch_sql(column: &str) -> String {
    format!("extract(epoch from {})::float8", quote_ident(column))
}

/// A SQL condition on the text `value` that is true when it would not cast to `target`,
/// with the same shapes as [`CastTarget::accepts`]. The patterns are E'' strings, so
/// they mean the same whatever `standard_conforming_strings` says.
fn uncastable_sql(target: CastTarget) -> String {
    // In an E'' string a backslash is written twice: `\\s` reaches the regex as `\s`.
    let condition = match target {
        CastTarget::Text => "false".to_string(),
        CastTarget::Integer { min, max } => format!(
            r"CASE WHEN value ~ E'^\\s*[-+]?[0-9]+\\s*$' THEN CAST(value AS numeric) NOT BETWEEN {min} AND {max} ELSE true END"
        ),
        CastTarget::Number => {
            r"NOT (value ~* E'^\\s*([-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(e[-+]?[0-9]+)?|nan|[-+]?inf(inity)?)\\s*$')"
                .to_string()
        }
        // The shape first, then the day: CASE keeps make_date from ever seeing a
        // month 13 or a year 0.
        CastTarget::Date => {
            let words = DATE_WORDS.join("|");
            let year = r"CAST(substring(value FROM E'[0-9]{4}') AS int)";
            let month = r"CAST(substring(value FROM E'-([0-9]{1,2})-') AS int)";
            let day = r"CAST(substring(value FROM E'-([0-9]{1,2})\\s*$') AS int)";
            format!(
                r"CASE WHEN value ~* E'^\\s*({words})\\s*$' THEN false WHEN NOT (value ~ E'^\\s*[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}\\s*$') THEN true WHEN {year} = 0 OR {month} NOT BETWEEN 1 AND 12 THEN true ELSE {day} NOT BETWEEN 1 AND extract(day FROM make_date({year}, {month}, 1) + interval '1 month - 1 day') END"
            )
        }
        CastTarget::Boolean => format!(
            r"NOT (value ~* E'^\\s*({})\\s*$')",
            BOOLEAN_WORDS.join("|")
        ),
    };
    condition
}

impl Warehouse for PostgresWarehouse {
    fn access_catalog(
        &self,
        checks: &[super::privileges::GrantCheck],
    ) -> Result<super::privileges::AccessCatalog, WarehouseError> {
        self.with_client(|client| grant::read(client, checks))
    }

    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError> {
        let sql = format!("SELECT count(*) FROM {}", relation.quoted());
        self.with_client(|c| sent(&sql, c.query_one(&sql, &[])))
            .map(|row| row.get::<_, i64>(0) as u64)
    }

    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        let rows = self.with_pooled(|pooled| {
            let statement = pooled.prepared(COLUMNS_SQL)?;
            sent(
                COLUMNS_SQL,
                pooled.client.query(&statement, &[&schema, &tables]),
            )
        })?;
        let mut found: std::collections::HashMap<String, Vec<Column>> = Default::default();
        for r in &rows {
            let base: String = r.get(2);
            let length: Option<i32> = r.get(3);
            let precision: Option<i32> = r.get(4);
            let scale: Option<i32> = r.get(5);
            // Only NUMERIC carries its declared precision in the type name; an
            // INTEGER's precision of 32 is implied by the type.
            let data_type = match (length, base.as_str()) {
                (Some(n), _) => format!("{base}({n})"),
                (None, "NUMERIC") => match (precision, scale) {
                    (Some(p), Some(s)) => format!("NUMERIC({p},{s})"),
                    _ => base,
                },
                _ => base,
            };
            found.entry(r.get(0)).or_default().push(Column {
                name: r.get(1),
                data_type,
            });
        }
        Ok(tables
            .iter()
            .map(|t| found.get(t).cloned().unwrap_or_default())
            .collect())
    }

    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError> {
        self.scan_where(scan, None)
    }

    fn change_marks(
        &self,
        relation: &Relation,
        column: &str,
    ) -> Result<Option<ChangeMarks>, WarehouseError> {
        self.with_pooled(|p| scan::change_marks(p, relation, column))
    }

    fn scan_recent(
        &self,
        scan: &TableScan,
        stripe: Stripe,
        indexed: bool,
    ) -> Result<Option<super::RecentRead>, WarehouseError> {
        let Some(window) = &scan.minutes else {
            return Ok(None);
        };
        let rows = scan::recent_only(scan.relation, window, stripe, indexed);
        let mut counts = self.scan_where(scan, Some(&rows))?;
        // The older days read are the stripe's rows, not the days'.
        let stripe_rows = counts.days.iter().map(|d| (d.day, d.rows)).collect();
        counts.rows -= counts.older_rows;
        counts.older_rows = 0;
        counts.days.clear();
        let from_day = window.from.div_euclid(86_400);
        counts.day_nulls.retain(|(day, _)| *day >= from_day);
        Ok(Some((counts, stripe_rows)))
    }

    fn scan_tail(
        &self,
        scan: &TableScan,
        page: i64,
    ) -> Result<Option<TableCounts>, WarehouseError> {
        // A TID range: the pages from `page` on, whatever the indexes.
        let rows = format!(
            "(SELECT * FROM {} WHERE ctid >= '({page},0)'::tid) AS tail",
            scan.relation.quoted()
        );
        self.scan_where(scan, Some(&rows)).map(Some)
    }

    fn plan_scan(&self, scan: &TableScan) -> Result<String, WarehouseError> {
        let sql = format!("EXPLAIN {}", scan::scan_sql(scan, None));
        let rows = self.with_client(|c| sent(&sql, c.query(&sql, &[])))?;
        Ok(rows
            .first()
            .map(|r| r.get::<_, String>(0))
            .unwrap_or_default())
    }

    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError> {
        // Every column must be computed, or a failing cast in one nobody counts would
        // pass: the planner drops unreferenced columns of a subquery. Turning each row
        // into JSON references them all, without shipping the rows here.
        let sql = format!("SELECT count(row_to_json(dry_run)) FROM ({select}) AS dry_run");
        // In a read-only transaction, always rolled back: a function the SQL calls
        // cannot write either.
        self.with_client(|c| {
            let mut tx = Tx::begin(c, true)?;
            let row = tx.query_one(&sql, &[]);
            tx.rollback()?;
            row
        })
        .map(|row| row.get::<_, i64>(0) as u64)
    }

    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError> {
        let filter =
            since.map(|(column, _)| format!("{} >= to_timestamp($1::float8)", quote_ident(column)));
        let sql = null_counts_sql(relation, columns, filter.as_deref());
        let row = match since {
            Some((_, at)) => {
                self.with_client(|c| sent(&sql, c.query_one(&sql, &[&(at as f64)])))?
            }
            None => self.with_client(|c| sent(&sql, c.query_one(&sql, &[])))?,
        };
        Ok(NullCounts {
            rows: row.get::<_, i64>(0) as u64,
            nulls: (1..=columns.len())
                .map(|i| row.get::<_, i64>(i) as u64)
                .collect(),
        })
    }

    fn load_times(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        limit: usize,
    ) -> Result<Vec<i64>, WarehouseError> {
        // Truncated to the minute per row, and turned into seconds only for the minutes
        // kept: an epoch computed in floating point for every row cost twice as much.
        let sql = format!(
            "SELECT extract(epoch from minute)::int8 FROM (
               SELECT DISTINCT date_trunc('minute', {col}::timestamptz) AS minute FROM {table}
               WHERE {col} >= to_timestamp($1::float8) ORDER BY minute DESC LIMIT $2) AS recent
             ORDER BY 1 DESC",
            table = relation.quoted(),
            col = quote_ident(column),
        );
        let rows =
            self.with_client(|c| sent(&sql, c.query(&sql, &[&(since as f64), &(limit as i64)])))?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
    }

    fn daily_counts(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> Result<Vec<DayCount>, WarehouseError> {
        // The time of day through ::timestamp, so a date column reads as midnight rather
        // than failing the cast; a timestamptz is read in the session's zone, UTC. Days
        // are grouped as dates and come back as days since 1970, formatted here: a
        // to_char per row costs the server several times the count itself.
        let sql = format!(
            "SELECT ({col}::date - date '1970-01-01')::int4 AS day, count(*),
                    count(*) FILTER (WHERE {col}::timestamp::time < $2::text::time),
                    count(*) FILTER (WHERE {col}::timestamp::time = time '00:00')
             FROM {table}
             WHERE {col} >= to_timestamp($1::float8) GROUP BY 1 ORDER BY 1",
            table = relation.quoted(),
            col = quote_ident(column),
        );
        let cutoff = cutoff.format("%H:%M:%S%.f").to_string();
        let rows = self.with_client(|c| sent(&sql, c.query(&sql, &[&(since as f64), &cutoff])))?;
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date");
        rows.iter()
            .map(|r| {
                let days = r.get::<_, i32>(0);
                Ok(DayCount {
                    day: epoch
                        .checked_add_signed(chrono::TimeDelta::days(days.into()))
                        .ok_or_else(|| {
                            WarehouseError::Query(format!("a day out of range: {days}"))
                        })?,
                    rows: r.get::<_, i64>(1) as u64,
                    before_cutoff: r.get::<_, i64>(2) as u64,
                    at_midnight: r.get::<_, i64>(3) as u64,
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
        let condition = uncastable_sql(target);
        // The bad values once, then their count and the first few in byte order.
        let sql = format!(
            "WITH vals AS (SELECT CAST({col} AS text) AS value FROM {table} WHERE {col} IS NOT NULL), \
                  bad AS (SELECT value FROM vals WHERE {condition}) \
             SELECT (SELECT count(*) FROM bad), \
                    ARRAY(SELECT DISTINCT value COLLATE \"C\" AS value FROM bad ORDER BY 1 LIMIT {UNCASTABLE_EXAMPLES})",
            col = quote_ident(column),
            table = relation.quoted(),
        );
        let row = self.with_client(|c| {
            let mut tx = Tx::begin(c, true)?;
            let row = tx.query_one(&sql, &[]);
            tx.rollback()?;
            row
        })?;
        Ok(Some(Uncastable {
            rows: row.get::<_, i64>(0) as u64,
            examples: row.get(1),
        }))
    }

    fn missing_keys(&self, gap: &KeyGap) -> Result<Vec<u64>, WarehouseError> {
        let sql = gap.sql(
            quote_ident,
            &epoch_sql(gap.from_time),
            ("$1::float8", "$2::float8"),
        );
        let (start, end) = gap.bounds();
        let row = self.with_client(|c| {
            let mut tx = Tx::begin(c, true)?;
            let row = tx.query_one(&sql, &[&(start as f64), &(end as f64)]);
            tx.rollback()?;
            row
        })?;
        Ok((0..=gap.also.len())
            .map(|i| row.get::<_, i64>(i) as u64)
            .collect())
    }

    fn snapshot_table(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<TableVersion, WarehouseError> {
        self.with_client(|c| {
            let mut tx = Tx::begin(c, false)?;
            let source = match find_table(&mut tx, relation)? {
                Ok(source) => source,
                Err(refused) => return Ok(Err(refused)),
            };
            let copy = match copy_relation(&source, tag) {
                Ok(copy) => copy,
                Err(refused) => return Ok(Err(refused)),
            };
            // One snapshot at a time in this database: two would race to create the
            // schema, or the same copy (the loser failing on a unique index).
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&VERSIONS_LOCK])?;
            // Made by the role dataward connects as, with no grant to anyone: a copy
            // is readable by that role (and superusers) only, whoever reads the table.
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {}",
                quote_ident(VERSIONS)
            ))?;
            if exists(&mut tx, &copy)? {
                return Ok(Err(WarehouseError::Refused(format!(
                    "a version of {relation} tagged {tag:?} exists already ({copy}); a \
                     version is never overwritten"
                ))));
            }
            // Generated columns are left out: the table computes them again on restore.
            let columns = writable_columns(&mut tx, &source)?;
            let list = column_list(&columns);
            // One statement, one snapshot of the table. CREATE TABLE AS keeps each
            // column's type with its modifier (varchar(12), numeric(10,2)).
            let rows = tx.execute(
                &format!(
                    "CREATE TABLE {} AS SELECT {list} FROM {}",
                    copy.quoted(),
                    source.quoted()
                ),
                &[],
            )?;
            // The transaction's start by the server's clock, in UTC (the session's zone).
            let taken_at: String = tx
                .query_one(
                    "SELECT to_char(now(), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
                    &[],
                )?
                .get(0);
            let taken_at = match super::read_now(&taken_at) {
                Ok(at) => at,
                Err(e) => return Ok(Err(e)),
            };
            tx.commit()?;
            Ok(Ok(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows,
                taken_at: Some(taken_at),
                scope: None,
                after: None,
            }))
        })?
    }

    /// A concurrent reader never sees the table empty: the DELETE and the INSERT are one
    /// transaction, and under MVCC every other session reads the rows as they were until
    /// it commits, then the restored ones. The table is locked in EXCLUSIVE mode, which
    /// lets plain SELECTs through and keeps writers out, so no row written meanwhile
    /// survives beside the restored ones. (TRUNCATE would not do: its lock blocks
    /// readers, and it is not MVCC-safe for those already in a snapshot.)
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError> {
        let copy = own_copy(relation, version)?;
        self.with_client(|c| {
            let mut tx = Tx::begin(c, false)?;
            let source = match find_table(&mut tx, relation)? {
                Ok(source) => source,
                Err(refused) => return Ok(Err(refused)),
            };
            if !exists(&mut tx, &copy)? {
                return Ok(Err(WarehouseError::Refused(format!(
                    "cannot restore {relation}: its copy {copy} is missing (dropped, or \
                     never taken in this warehouse)"
                ))));
            }
            // Locked before the columns are read, so they cannot change until commit.
            tx.batch_execute(&format!(
                "LOCK TABLE {} IN EXCLUSIVE MODE; LOCK TABLE {} IN SHARE MODE",
                source.quoted(),
                copy.quoted()
            ))?;
            let table_columns = writable_columns(&mut tx, &source)?;
            let copy_columns = writable_columns(&mut tx, &copy)?;
            if let Err(refused) = check_restorable(
                &relation.to_string(),
                &table_columns,
                &version.copy,
                &copy_columns,
            ) {
                return Ok(Err(refused));
            }
            // The DELETE must change this table only. A foreign key that cascades,
            // or sets null or a default, would change another table the copy cannot
            // put back. (One that restricts fails the DELETE on its own; a deferred
            // one is checked at commit, against the restored rows.)
            let referencing: Vec<String> = tx
                .query(
                    "SELECT DISTINCT conrelid::regclass::text FROM pg_constraint
                     WHERE contype = 'f' AND confrelid = to_regclass($1::text)
                       AND confdeltype IN ('c', 'n', 'd') AND conrelid <> confrelid
                     ORDER BY 1",
                    &[&source.quoted()],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if !referencing.is_empty() {
                return Ok(Err(WarehouseError::Refused(format!(
                    "cannot restore {relation}: deleting its rows would change {} through \
                     a foreign key that cascades or sets values on delete",
                    referencing.join(", ")
                ))));
            }
            let copied: i64 = tx
                .query_one(&format!("SELECT count(*) FROM {}", copy.quoted()), &[])?
                .get(0);
            if copied as u64 != version.rows {
                return Ok(Err(changed_copy(relation, version, copied as u64)));
            }
            // Under the EXCLUSIVE lock: no load can land between this check and the
            // commit.
            let scope = version.scope.as_ref();
            let now = prints(&mut tx, &source, scope.and_then(|s| s.column.as_deref()))?;
            let kept = match check_unchanged_since(relation, version, &now) {
                Ok(kept) => kept,
                Err(refused) => return Ok(Err(refused)),
            };
            // Only the days the backfill rebuilt, when it rebuilt only some.
            let within = match scope.and_then(|s| s.range()) {
                Some((column, start, end)) => format!(
                    " WHERE {epoch} >= {start} AND {epoch} < {end}",
                    epoch = epoch_sql(column)
                ),
                None => String::new(),
            };
            let list = column_list(&table_columns);
            tx.execute(&format!("DELETE FROM {}{within}", source.quoted()), &[])?;
            // The copy's identity values, not new ones: the rows as they were.
            let rows = tx.execute(
                &format!(
                    "INSERT INTO {} ({list}) OVERRIDING SYSTEM VALUE SELECT {list} FROM {}{within}",
                    source.quoted(),
                    copy.quoted()
                ),
                &[],
            )?;
            tx.commit()?;
            Ok(Ok(Restored { rows, kept }))
        })?
    }

    fn day_prints(
        &self,
        relation: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        self.with_client(|c| {
            let mut tx = Tx::begin(c, false)?;
            let source = match find_table(&mut tx, relation)? {
                Ok(source) => source,
                Err(refused) => return Ok(Err(refused)),
            };
            Ok(Ok(prints(&mut tx, &source, column)?))
        })?
    }

    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError> {
        let copy = own_copy_name(&version.copy)?;
        // IF EXISTS also covers a schema never made: the server notes it and goes on.
        let sql = format!("DROP TABLE IF EXISTS {}", copy.quoted());
        self.with_client(|c| sent(&sql, c.batch_execute(&sql)))
    }

    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError> {
        self.with_client(|c| {
            let mut tx = Tx::begin(c, false)?;
            let source = match find_table(&mut tx, relation)? {
                Ok(source) => source,
                Err(refused) => return Ok(Err(refused)),
            };
            let copy = match copy_relation(&source, tag) {
                Ok(copy) => copy,
                Err(refused) => return Ok(Err(refused)),
            };
            if !exists(&mut tx, &copy)? {
                return Ok(Ok(None));
            }
            let rows: i64 = tx
                .query_one(&format!("SELECT count(*) FROM {}", copy.quoted()), &[])?
                .get(0);
            Ok(Ok(Some(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows: rows as u64,
                taken_at: None,
                scope: None,
                after: None,
            })))
        })?
    }
}

/// The advisory lock snapshots take, one at a time: "dwvers" in ASCII.
const VERSIONS_LOCK: i64 = 0x6477_7665_7273;

/// `relation` as the server resolves it (an unqualified name through the search path),
/// with its schema, when it is a table or a partitioned table; refused otherwise.
fn find_table(
    tx: &mut Tx<'_>,
    relation: &Relation,
) -> Result<Result<Relation, WarehouseError>, postgres::Error> {
    let row = tx.query_opt(
        "SELECT n.nspname::text, c.relname::text, c.relkind::text
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.oid = to_regclass($1::text)",
        &[&relation.quoted()],
    )?;
    Ok(match row {
        None => Err(WarehouseError::Refused(format!(
            "table {relation} does not exist"
        ))),
        Some(row) if matches!(row.get::<_, &str>(2), "r" | "p") => Ok(Relation {
            schema: Some(row.get(0)),
            table: row.get(1),
        }),
        Some(_) => Err(WarehouseError::Refused(format!(
            "{relation} is not a table (a view, or another kind of relation): only a \
             table's rows are copied and restored"
        ))),
    })
}

fn exists(tx: &mut Tx<'_>, relation: &Relation) -> Result<bool, postgres::Error> {
    Ok(tx
        .query_one(
            "SELECT to_regclass($1::text) IS NOT NULL",
            &[&relation.quoted()],
        )?
        .get(0))
}

/// The columns a row is written through, in table order, each with its exact type as
/// the server spells it (`character varying(12)`, `numeric(10,2)`, `text[]`): not
/// information_schema's, which says only ARRAY for every array. Dropped and generated
/// columns are left out.
/// [`Warehouse::day_prints`] of `source` (as found): each row hashed as the text of its
/// columns in table order, 32 bits of its MD5 summed per UTC day.
fn prints(
    tx: &mut Tx<'_>,
    source: &Relation,
    column: Option<&str>,
) -> Result<Vec<DayPrint>, postgres::Error> {
    let columns = writable_columns(tx, source)?;
    let day = match column {
        Some(column) => format!("to_char(to_timestamp({}), 'YYYY-MM-DD')", epoch_sql(column)),
        None => "NULL::text".to_string(),
    };
    // Each row hashed by its canonical text (`row_print`), as every engine hashes it.
    let sql = format!(
        "SELECT {day}, count(*), coalesce(sum({hash}), 0)::bigint FROM {table} GROUP BY 1",
        hash = super::row_print::row_hash_sql(&ROW_PRINT, &columns, quote_ident),
        table = source.quoted()
    );
    Ok(tx
        .query(&sql, &[])?
        .iter()
        .map(|r| DayPrint {
            day: r.get(0),
            rows: r.get::<_, i64>(1) as u64,
            sum: r.get(2),
        })
        .collect())
}

/// The canonical row text in PostgreSQL's SQL (`to_char` and `extract` do not follow
/// the session's DateStyle; a timestamp without a zone is read as UTC).
const ROW_PRINT: super::row_print::Spelling = super::row_print::Spelling {
    text: |e| format!("({e})::text"),
    chars: "char_length",
    epoch_micros: |e| format!("(extract(epoch FROM {e}) * 1000000)::bigint::text"),
    date: |e| format!("to_char({e}, 'YYYY-MM-DD')"),
    md5_32: |e| format!("('x' || substr(md5({e}), 1, 8))::bit(32)::bigint"),
};

fn writable_columns(tx: &mut Tx<'_>, relation: &Relation) -> Result<Vec<Column>, postgres::Error> {
    let rows = tx.query(
        "SELECT attname::text, format_type(atttypid, atttypmod)
         FROM pg_attribute
         WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped
           AND attgenerated = ''
         ORDER BY attnum",
        &[&relation.quoted()],
    )?;
    Ok(rows
        .iter()
        .map(|r| Column {
            name: r.get(0),
            data_type: r.get(1),
        })
        .collect())
}

/// Where the copy of `source` tagged `tag` lives.
fn copy_relation(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
    super::versions_copy(source, tag)
}

/// The copy a version names, when it is one of ours for this table.
fn own_copy(relation: &Relation, version: &TableVersion) -> Result<Relation, WarehouseError> {
    super::own_copy(relation, version, own_copy_name)
}

fn own_copy_name(copy: &str) -> Result<Relation, WarehouseError> {
    super::own_versions_copy(copy)
}
