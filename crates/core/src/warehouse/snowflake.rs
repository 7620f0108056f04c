//! Snowflake as a warehouse, through the ADBC Snowflake driver (the Go driver's shared
//! library, `AdbcDriverInit`), loaded at run time (see [`super::adbc`]).
//!
//! Names in the config are read as Snowflake reads SQL: a plain name (letters, digits,
//! `_`, `$`) is folded to upper case, as Snowflake stores an unquoted identifier; any
//! other is taken exactly as written. Every name reaches SQL quoted.
//!
//! Times are read as Unix seconds (`DATE_PART(EPOCH_SECOND, ...)`), so days and
//! minutes are UTC whatever the session's zone; a `TIMESTAMP_NTZ` is taken as UTC.
//!
//! Snowflake has no read-only transaction: reads that must not write (a dry run, the
//! uncastable count) run in a transaction always rolled back, one statement per query
//! (the driver refuses several), and a read-only role is the real guard.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use chrono::NaiveTime;

use super::adbc::{self, DriverKind, Found, OpenDatabase, Session, Value};
use super::{
    changed_copy, check_restorable, check_unchanged_since, CastTarget, CheckQuery, Column,
    DayCount, DayPrint, KeyGap, NullCounts, Planned, Relation, Restored, TableCounts, TableScan,
    TableVersion, Uncastable, Warehouse, WarehouseError, EARLIER, PRUNING_SLACK,
    UNCASTABLE_EXAMPLES, VERSIONS,
};

mod sql;
use sql::*;
pub use sql::{
    daily_counts_sql, fold, load_times_sql, null_counts_sql, quote, row_count_sql, scan_sql,
};

/// How the Snowflake driver is found when the config names none.
pub const DRIVER: DriverKind = DriverKind {
    name: "snowflake",
    entrypoint: None,
    install: "Install the ADBC Snowflake driver with `dbc install snowflake`, or set \
              `driver` in the warehouse's section to the path of \
              libadbc_driver_snowflake.so (in PyPI's adbc-driver-snowflake wheel)",
};

/// How to log in; the secret itself is read only when the warehouse is first used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// The environment variable holding the password.
    Password { env: String },
    /// A PKCS#8 private key file, which must be readable by its owner only.
    KeyPair { file: PathBuf },
    /// The environment variable holding an OAuth token.
    OAuth { env: String },
}

/// Where and as whom, as the config gives it.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub account: String,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub protocol: Option<String>,
    pub database: String,
    pub schema: Option<String>,
    pub warehouse: Option<String>,
    pub role: Option<String>,
    pub user: String,
    pub login: Option<Login>,
}

pub struct SnowflakeWarehouse {
    /// The driver as the config names it: a resolved path or a manifest name.
    driver: String,
    settings: Settings,
    state: Mutex<State>,
    queries: AtomicU64,
    /// When a statement is cancelled (None: never).
    limit: Option<super::Limit>,
    /// A poll is under way: its calls share one session (see [`Warehouse::begin_poll`]).
    polling: AtomicBool,
}

#[derive(Default)]
struct State {
    driver: Option<adbc::Driver>,
    database: Option<OpenDatabase>,
    /// The poll's session, kept between its calls: its checks run back to back on
    /// one connection, so a suspended warehouse resumes once per poll.
    held: Option<Session>,
}

impl SnowflakeWarehouse {
    /// Nothing is loaded, read or logged in to until the first call.
    pub fn new(settings: Settings, driver: Option<String>) -> SnowflakeWarehouse {
        SnowflakeWarehouse {
            driver: driver.unwrap_or_else(|| DRIVER.name.to_string()),
            settings,
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

    /// Queries sent so far.
    pub fn queries_issued(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Loads the driver (once) and says where it was found.
    pub fn driver_found(&self) -> Result<Found, WarehouseError> {
        let mut state = self.state.lock().expect("snowflake lock");
        if state.driver.is_none() {
            state.driver = Some(adbc::load(&self.driver, &DRIVER)?);
        }
        Ok(state.driver.as_ref().expect("loaded").found.clone())
    }

    /// The driver's options: the account, where it answers, and the login with its
    /// secret read now.
    fn options(&self) -> Result<Vec<(String, String)>, WarehouseError> {
        let s = &self.settings;
        let mut options = vec![
            ("adbc.snowflake.sql.account".to_string(), s.account.clone()),
            ("adbc.snowflake.sql.db".to_string(), s.database.clone()),
            ("username".to_string(), s.user.clone()),
            (
                "adbc.snowflake.sql.client_option.disable_telemetry".to_string(),
                "true".to_string(),
            ),
            (
                "adbc.snowflake.sql.client_option.login_timeout".to_string(),
                "30s".to_string(),
            ),
        ];
        let optional = [
            ("adbc.snowflake.sql.uri.host", s.host.clone()),
            ("adbc.snowflake.sql.uri.port", s.port.map(|p| p.to_string())),
            ("adbc.snowflake.sql.uri.protocol", s.protocol.clone()),
            ("adbc.snowflake.sql.schema", s.schema.as_deref().map(fold)),
            (
                "adbc.snowflake.sql.warehouse",
                s.warehouse.as_deref().map(fold),
            ),
            ("adbc.snowflake.sql.role", s.role.as_deref().map(fold)),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                options.push((key.to_string(), value));
            }
        }
        let secret = |env: &str, what: &str| {
            std::env::var(env).map_err(|_| {
                WarehouseError::Unreachable(format!(
                    "{env} is not set: the Snowflake {what} is read from it"
                ))
            })
        };
        match &s.login {
            Some(Login::Password { env }) => {
                options.push(("password".to_string(), secret(env, "password")?));
            }
            Some(Login::OAuth { env }) => {
                options.push((
                    "adbc.snowflake.sql.auth_type".to_string(),
                    "auth_oauth".to_string(),
                ));
                options.push((
                    "adbc.snowflake.sql.client_option.auth_token".to_string(),
                    secret(env, "OAuth token")?,
                ));
            }
            Some(Login::KeyPair { file }) => {
                private_key_readable_by_owner_only(file)?;
                options.push((
                    "adbc.snowflake.sql.auth_type".to_string(),
                    "auth_jwt".to_string(),
                ));
                options.push((
                    "adbc.snowflake.sql.client_option.jwt_private_key".to_string(),
                    file.display().to_string(),
                ));
            }
            None => {}
        }
        Ok(options)
    }

    /// Runs `f` on a connection: the database is opened (logged in) once for the
    /// warehouse's life, a connection per call, or per poll while one is under way.
    fn with_session<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        let mut state = self.state.lock().expect("snowflake lock");
        self.queries.fetch_add(1, Ordering::Relaxed);
        if state.database.is_none() {
            // The login first: a secret missing or exposed is the config's problem,
            // said before any driver is looked for.
            let options = self.options()?;
            if state.driver.is_none() {
                state.driver = Some(adbc::load(&self.driver, &DRIVER)?);
            }
            let options: Vec<(&str, &str)> = options
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let driver = state.driver.as_ref().expect("loaded");
            state.database = Some(driver.open(&options)?);
        }
        let mut session = match state.held.take() {
            Some(held) => held,
            None => state.database.as_ref().expect("opened").connect()?,
        };
        session.set_limit(self.limit.clone());
        let result = f(&mut session);
        // Kept for the poll's next call unless the connection failed; a poll that
        // ended meanwhile left it for this call to close (dropped).
        if self.polling.load(Ordering::SeqCst)
            && !matches!(result, Err(WarehouseError::Unreachable(_)))
        {
            state.held = Some(session);
        }
        result
    }

    /// `f` in one transaction: committed when it returns Ok, rolled back otherwise.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(|s| {
            s.execute("BEGIN")?;
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

    /// A read that must not write: in a transaction always rolled back.
    fn read_only<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        self.with_session(|s| {
            s.execute("BEGIN")?;
            let result = f(s);
            let _ = super::query_log::unguarded(|| s.execute("ROLLBACK"));
            result
        })
    }

    /// The schema a relation is in: its own, the config's, or the session's.
    fn schema_sql(&self, schema: Option<&str>) -> String {
        match schema.or(self.settings.schema.as_deref()) {
            Some(schema) => literal(&fold(schema)),
            None => "CURRENT_SCHEMA()".to_string(),
        }
    }

    /// The database's `INFORMATION_SCHEMA`.
    fn catalog(&self, view: &str) -> String {
        format!(
            "{}.INFORMATION_SCHEMA.{view}",
            quote(&self.settings.database)
        )
    }

    fn find_table(&self, s: &mut Session, relation: &Relation) -> Result<Relation, WarehouseError> {
        let rows = s.query(&format!(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM {}
             WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            self.catalog("TABLES"),
            self.schema_sql(relation.schema.as_deref()),
            literal(&fold(&relation.table))
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

    fn exists(&self, s: &mut Session, relation: &Relation) -> Result<bool, WarehouseError> {
        let row = s.query_one(&format!(
            "SELECT COUNT(*) FROM {} WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            self.catalog("TABLES"),
            self.schema_sql(relation.schema.as_deref()),
            literal(&fold(&relation.table))
        ))?;
        Ok(row[0].count()? > 0)
    }

    /// The SQL a poll sends for `query`.
    pub fn query_sql(&self, query: &CheckQuery) -> String {
        match query {
            CheckQuery::Scan(scan) => scan_sql(scan),
            CheckQuery::RowCount(relation) => row_count_sql(relation),
            CheckQuery::NullCounts {
                relation,
                columns,
                since,
            } => null_counts_sql(relation, columns, *since),
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
            CheckQuery::Columns { schema, tables } => self.columns_sql(*schema, tables),
        }
    }

    /// Where the account answers, as the driver is told.
    fn endpoint(&self) -> String {
        let s = &self.settings;
        let host = s
            .host
            .clone()
            .unwrap_or_else(|| format!("{}.snowflakecomputing.com", s.account));
        let protocol = s.protocol.as_deref().unwrap_or("https");
        match s.port {
            Some(port) => format!("{protocol}://{host}:{port}"),
            None => format!("{protocol}://{host}"),
        }
    }

    /// `EXPLAIN USING TEXT`: Snowflake compiles the query and reads nothing. Where
    /// EXPLAIN itself is refused (fakesnow, DuckDB underneath, cannot parse it), the
    /// query is compiled alone under `WHERE FALSE`, so a missing table, column or
    /// grant still fails here, and the answer says plainly that there is no plan and
    /// why.
    fn plan_sql(&self, sql: &str) -> Result<Planned, WarehouseError> {
        let explained = self.with_session(|s| s.query(&format!("EXPLAIN USING TEXT {sql}")));
        let refused = match explained {
            Ok(rows) => {
                let plan = rows
                    .first()
                    .and_then(|row| row.first().and_then(Value::text))
                    .unwrap_or_default();
                return Ok(Planned::Plan(
                    plan.lines()
                        .map(str::trim)
                        .find(|line| !line.is_empty())
                        .unwrap_or("planned")
                        .to_string(),
                ));
            }
            Err(WarehouseError::Query(refused)) => refused,
            Err(other) => return Err(other),
        };
        // The query's own error, if it has one, is the one to report.
        self.with_session(|s| {
            s.query(&format!(
                "SELECT COUNT(*) FROM ({sql}) AS compiled WHERE FALSE"
            ))
        })?;
        let refused = refused.split_whitespace().collect::<Vec<_>>().join(" ");
        Ok(Planned::Unplanned(format!(
            "no plan: {} refused EXPLAIN USING TEXT ({}), so each query was compiled \
             under WHERE FALSE instead (nothing read)",
            self.endpoint(),
            refused.chars().take(160).collect::<String>()
        )))
    }

    /// The SQL of [`Warehouse::columns_of`]: one catalog query for a schema's tables.
    pub fn columns_sql(&self, schema: Option<&str>, tables: &[String]) -> String {
        let names: Vec<String> = tables.iter().map(|t| literal(&fold(t))).collect();
        format!(
            "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH,
                    NUMERIC_PRECISION, NUMERIC_SCALE
             FROM {catalog}
             WHERE TABLE_SCHEMA = {schema} AND TABLE_NAME IN ({names})
             ORDER BY TABLE_NAME, ORDINAL_POSITION",
            catalog = self.catalog("COLUMNS"),
            schema = self.schema_sql(schema),
            names = if names.is_empty() {
                "NULL".to_string()
            } else {
                names.join(", ")
            },
        )
    }

    fn columns_in(
        &self,
        s: &mut Session,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        let rows = s.query(&self.columns_sql(schema, tables))?;
        let mut found: std::collections::HashMap<String, Vec<Column>> = Default::default();
        for row in rows {
            let text = |i: usize| row[i].text().unwrap_or_default();
            let number = |i: usize| row[i].int().ok().flatten();
            found.entry(text(0)).or_default().push(Column {
                name: text(1),
                data_type: type_name(&text(2), number(3), number(4), number(5)),
            });
        }
        Ok(tables
            .iter()
            .map(|t| found.get(&fold(t)).cloned().unwrap_or_default())
            .collect())
    }

    fn table_columns(
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

    /// [`Warehouse::day_prints`] of `source` (as found): each row hashed, the hashes
    /// summed per UTC day.
    fn prints(
        &self,
        s: &mut Session,
        source: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        let columns = self.table_columns(s, source)?;
        let day = match column {
            Some(column) => format!(
                "TO_VARCHAR(TO_DATE(TO_TIMESTAMP_NTZ({})))",
                epoch_sql(column)
            ),
            None => "CAST(NULL AS VARCHAR)".to_string(),
        };
        let sql = format!(
            "SELECT {day}, COUNT(*), COALESCE(SUM(MOD(HASH({list}), 4294967296)), 0)
             FROM {table} GROUP BY 1 ORDER BY 1 NULLS FIRST",
            list = column_list(&columns),
            table = quoted(source)
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
}

/// The warehouse's clock, as `YYYY-MM-DDTHH:MM:SSZ`.
fn warehouse_now(s: &mut Session) -> Result<String, WarehouseError> {
    let row = s.query_one("SELECT DATE_PART(EPOCH_SECOND, CURRENT_TIMESTAMP())")?;
    let seconds = row[0].int()?.unwrap_or_default();
    Ok(crate::clock::Timestamp::from_unix(seconds)
        .unwrap_or_else(|| crate::clock::Timestamp::from_utc(Default::default()))
        .to_string())
}

/// Refuses a private key file that anyone but its owner could read.
fn private_key_readable_by_owner_only(file: &std::path::Path) -> Result<(), WarehouseError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file)
        .map_err(|e| WarehouseError::Unreachable(format!("private key {}: {e}", file.display())))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(WarehouseError::Unreachable(format!(
            "private key {} is readable by others (mode {mode:o}): `chmod 600 {}` first",
            file.display(),
            file.display()
        )));
    }
    Ok(())
}

impl Warehouse for SnowflakeWarehouse {
    fn calls_at_once(&self) -> Option<usize> {
        // Every call runs under the warehouse's lock, on one login.
        Some(1)
    }

    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError> {
        self.with_session(|s| count_rows(s, relation))
    }

    fn begin_poll(&self) {
        self.polling.store(true, Ordering::SeqCst);
    }

    fn end_poll(&self) {
        self.polling.store(false, Ordering::SeqCst);
        // A call still running closes the session as it ends.
        if let Ok(mut state) = self.state.try_lock() {
            state.held = None;
        }
    }

    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        self.with_session(|s| self.columns_in(s, schema, tables))
    }

    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError> {
        let sql = scan_sql(scan);
        let rows = self.with_session(|s| s.query(&sql))?;
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
        match self.plan_sql(&scan_sql(scan))? {
            Planned::Plan(plan) | Planned::Unplanned(plan) => Ok(plan),
            Planned::NotPlanned => Ok("planned".to_string()),
        }
    }

    fn plan(&self, query: &CheckQuery) -> Result<Planned, WarehouseError> {
        self.plan_sql(&self.query_sql(query))
    }

    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError> {
        // Every column computed: the row turned into one value references them all,
        // so a failing cast in a column nobody counts still fails here.
        let sql = format!("SELECT COUNT(OBJECT_CONSTRUCT_KEEP_NULL(*)) FROM ({select}) AS dry_run");
        self.read_only(|s| s.query_one(&sql)?[0].count())
    }

    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError> {
        let sql = null_counts_sql(relation, columns, since);
        let row = self.with_session(|s| s.query_one(&sql))?;
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
        let rows = self.with_session(|s| s.query(&sql))?;
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
        let rows = self.with_session(|s| s.query(&sql))?;
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
            "WITH vals AS (SELECT TO_VARCHAR({col}) AS value FROM {table} WHERE {col} IS NOT NULL),
                  bad AS (SELECT value FROM vals WHERE {condition})
             SELECT 0 AS kind, TO_VARCHAR(COUNT(*)) AS value FROM bad
             UNION ALL
             SELECT 1, value FROM (SELECT DISTINCT value FROM bad ORDER BY value LIMIT {UNCASTABLE_EXAMPLES})
             ORDER BY kind, value",
            col = quote(column),
            table = quoted(relation),
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
        let quoted_from = Relation {
            schema: gap.from.schema.as_deref().map(fold),
            table: fold(&gap.from.table),
        };
        let quoted_into = Relation {
            schema: gap.into.schema.as_deref().map(fold),
            table: fold(&gap.into.table),
        };
        let folded = KeyGap {
            from: &quoted_from,
            into: &quoted_into,
            ..*gap
        };
        let sql = folded.sql(
            quote,
            &epoch_sql(gap.from_time),
            (&start.to_string(), &end.to_string()),
        );
        let row = self.read_only(|s| s.query_one(&sql))?;
        row[..=gap.also.len()].iter().map(Value::count).collect()
    }

    /// A zero-copy `CLONE`: the copy costs no storage until the table changes.
    fn snapshot_table(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<TableVersion, WarehouseError> {
        self.with_session(|s| {
            let source = self.find_table(s, relation)?;
            let copy = versions_copy(&source, tag)?;
            // DDL commits on its own in Snowflake: no transaction around these.
            s.execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote(VERSIONS)))?;
            if self.exists(s, &copy)? {
                return Err(WarehouseError::Refused(format!(
                    "a version of {relation} tagged {tag:?} exists already ({copy}); a \
                     version is never overwritten"
                )));
            }
            s.execute(&format!(
                "CREATE TABLE {} CLONE {}",
                quoted(&copy),
                quoted(&source)
            ))?;
            let rows = count_rows(s, &copy)?;
            Ok(TableVersion {
                table: relation.to_string(),
                copy: copy.to_string(),
                rows,
                taken_at: warehouse_now(s)?,
                scope: None,
                after: None,
            })
        })
    }

    /// The DELETE and the INSERT are one transaction: no reader sees the table empty.
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError> {
        let copy = super::own_copy(relation, version, super::own_versions_copy)?;
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
            let copied = count_rows(s, &copy)?;
            if copied != version.rows {
                return Err(changed_copy(relation, version, copied));
            }
            let scope = version.scope.as_ref();
            let now = self.prints(s, &source, scope.and_then(|sc| sc.column.as_deref()))?;
            let kept = check_unchanged_since(relation, version, &now)?;
            let within = match scope.and_then(|sc| sc.range()) {
                Some((column, start, end)) => format!(
                    " WHERE {} AND {raw} < {constant} AND {epoch} < {end}",
                    at_or_after(column, start),
                    raw = quote(column),
                    constant = timestamp_ntz(end + PRUNING_SLACK),
                    epoch = epoch_sql(column)
                ),
                None => String::new(),
            };
            let list = column_list(&table_columns_now);
            s.execute(&format!("DELETE FROM {}{within}", quoted(&source)))?;
            s.execute(&format!(
                "INSERT INTO {} ({list}) SELECT {list} FROM {}{within}",
                quoted(&source),
                quoted(&copy)
            ))?;
            let rows = s.query_one(&format!("SELECT COUNT(*) FROM {}{within}", quoted(&copy)))?[0]
                .count()?;
            Ok(Restored { rows, kept })
        })
    }

    fn day_prints(
        &self,
        relation: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        self.with_session(|s| {
            let source = self.find_table(s, relation)?;
            self.prints(s, &source, column)
        })
    }

    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError> {
        let copy = super::own_versions_copy(&version.copy)?;
        self.with_session(|s| {
            s.execute(&format!("DROP TABLE IF EXISTS {}", quoted(&copy)))?;
            Ok(())
        })
    }

    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError> {
        self.with_session(|s| {
            let source = self.find_table(s, relation)?;
            let copy = versions_copy(&source, tag)?;
            if !self.exists(s, &copy)? {
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

/// The warehouse the config's section describes.
pub fn from_config(
    config: &crate::config::Config,
    wh: &crate::config::WarehouseConfig,
) -> SnowflakeWarehouse {
    let login = match (&wh.password_env, &wh.private_key_file, &wh.token_env) {
        (Some(env), _, _) => Some(Login::Password { env: env.clone() }),
        (_, Some(file), _) => Some(Login::KeyPair {
            file: config.resolve(file),
        }),
        (_, _, Some(env)) => Some(Login::OAuth { env: env.clone() }),
        _ => None,
    };
    let settings = Settings {
        account: wh.account.clone().unwrap_or_default(),
        host: wh.host.clone(),
        port: wh.port,
        protocol: wh.protocol.clone(),
        database: wh.database.clone().unwrap_or_default(),
        schema: wh.schema.clone(),
        warehouse: wh.warehouse.clone(),
        role: wh.role.clone(),
        user: wh.user.clone().unwrap_or_default(),
        login,
    };
    let driver = super::duckdb::driver_wanted(config, wh.driver.as_deref());
    SnowflakeWarehouse::new(settings, driver)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::MinuteWindow;

    #[test]
    fn plain_names_fold_to_upper_case_and_every_name_is_quoted() {
        assert_eq!(quote("events"), "\"EVENTS\"");
        assert_eq!(quote("loaded_at$1"), "\"LOADED_AT$1\"");
        // Only a quoted name could hold these: taken as written.
        assert_eq!(quote("Mixed Case"), "\"Mixed Case\"");
        assert_eq!(quote("1st"), "\"1st\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("it's \\"), "'it''s \\\\'");
    }

    /// The WHERE of `sql`: what Snowflake prunes micro-partitions by.
    fn where_of(sql: &str) -> &str {
        let at = sql
            .find("WHERE ")
            .unwrap_or_else(|| panic!("no WHERE in {sql}"));
        &sql[at + "WHERE ".len()..]
    }

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
            sql.contains("WHERE \"LOADED_AT\" >= '2024-02-01 12:00:00'::TIMESTAMP_NTZ GROUP BY 1"),
            "{sql}"
        );
        // The rows before it are the table's count (metadata) less the rows read.
        assert!(
            sql.contains(
                "SELECT NULL, CAST((SELECT COUNT(*) FROM \"ANALYTICS\".\"EVENTS\") - \
                 (SELECT COALESCE(SUM(total), 0) FROM recent) AS BIGINT), 0, 0, 0, 0"
            ),
            "{sql}"
        );
        let since = now - 86_400;
        let cutoff = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
        for sql in [
            null_counts_sql(&relation, &null_columns, Some(("loaded_at", since))),
            load_times_sql(&relation, "loaded_at", since, 10),
            daily_counts_sql(&relation, "loaded_at", since, cutoff),
        ] {
            assert!(
                where_of(&sql).starts_with(
                    "\"LOADED_AT\" >= '2024-05-08 12:00:00'::TIMESTAMP_NTZ AND \
                     DATE_PART(EPOCH_SECOND, \"LOADED_AT\") >= 1715256000"
                ),
                "{sql}"
            );
        }
        // Nulls over every row: the whole table is read, as it must be.
        let whole = TableScan {
            nulls_since: None,
            ..scan
        };
        assert!(!scan_sql(&whole).contains("WHERE"), "{}", scan_sql(&whole));
    }

    #[test]
    fn types_keep_the_size_that_changes_what_fits() {
        assert_eq!(type_name("NUMBER", None, Some(38), Some(0)), "NUMBER(38,0)");
        assert_eq!(type_name("TEXT", Some(16_777_216), None, None), "TEXT");
        assert_eq!(type_name("TEXT", Some(20), None, None), "TEXT(20)");
        assert_eq!(
            type_name("TIMESTAMP_NTZ", None, None, None),
            "TIMESTAMP_NTZ"
        );
    }
}
