//! SQLite as a warehouse: the embedded demo estate, and small teams' local marts.
//!
//! SQLite's CAST never fails: `CAST('N/A' AS INTEGER)` is 0. Every real warehouse
//! raises an error instead, and that error is exactly what breaks a model downstream of a
//! type change. So model SQL run here goes through [`strict_casts`], which turns numeric
//! casts into a function that fails the way Snowflake or PostgreSQL would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use chrono::{NaiveTime, Timelike};

mod strict_cast;
pub use strict_cast::strict_casts;
use strict_cast::*;

use super::{
    changed_copy, check_restorable, check_unchanged_since, column_list, is_version_name,
    null_counts_sql, parse_day, quote_ident, version_name, CastTarget, Column, DayCount, DayPrint,
    KeyGap, Limit, NullCounts, Relation, Restored, TableCounts, TableScan, TableVersion,
    Uncastable, Warehouse, WarehouseError, UNCASTABLE_EXAMPLES, VERSIONS,
};

pub struct SqliteWarehouse {
    path: PathBuf,
    attach: BTreeMap<String, PathBuf>,
    /// When a call's connection is interrupted (None: never).
    limit: Option<Limit>,
}

impl SqliteWarehouse {
    pub fn new(path: &Path, attach: BTreeMap<String, PathBuf>) -> SqliteWarehouse {
        SqliteWarehouse {
            path: path.to_path_buf(),
            attach,
            limit: None,
        }
    }

    /// Every call from now on is interrupted (sqlite3_interrupt) once it has run past
    /// `limit` (the warehouse's check_timeout).
    pub fn cancel_after(mut self, limit: Limit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// A fresh connection per check: a file that went away shows up as unreachable on
    /// the next poll instead of hiding behind an old handle.
    /// Each call connects, so the poll's query guard is asked here: a call sends its
    /// statements or none.
    pub fn connect(&self) -> Result<Watched, WarehouseError> {
        super::query_log::may_send()?;
        let conn = connect(&self.path, &self.attach)?;
        let Some(limit) = self.limit.clone() else {
            return Ok(Watched { conn, _done: None });
        };
        let interrupt = conn.get_interrupt_handle();
        let (done, watch) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = watch.recv_timeout(limit.timeout) {
                interrupt.interrupt();
            }
        });
        Ok(Watched {
            conn,
            _done: Some(done),
        })
    }
}

/// A warehouse connection, interrupted if it is still in use when the warehouse's
/// limit has passed: whatever query it then runs fails as SQLite's "interrupted".
pub struct Watched {
    conn: Connection,
    /// Dropped with the connection, which ends its watchdog.
    _done: Option<mpsc::Sender<()>>,
}

impl std::ops::Deref for Watched {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl std::ops::DerefMut for Watched {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// Opens an existing SQLite warehouse (never creates one) with its attached schemas and
/// the strict cast function registered.
pub fn connect(
    path: &Path,
    attach: &BTreeMap<String, PathBuf>,
) -> Result<Connection, WarehouseError> {
    let unreachable = |what: &Path, e: rusqlite::Error| {
        WarehouseError::Unreachable(format!("{}: {e}", what.display()))
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(path, flags).map_err(|e| unreachable(path, e))?;
    super::query_log::session_opened();
    log_statements(&mut conn).map_err(|e| unreachable(path, e))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| unreachable(path, e))?;
    // A double-quoted name that matches no column is an error, as in every other
    // engine; SQLite would otherwise read a misspelt column as a string that is never
    // null, and a null_rate on it would report 0% for ever.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DQS_DML, false)
        .map_err(|e| unreachable(path, e))?;
    for (schema, file) in attach {
        if !file.exists() {
            return Err(WarehouseError::Unreachable(format!(
                "{}: attached schema {schema} is missing",
                file.display()
            )));
        }
        // mode=rw: ATTACH would otherwise create an empty database in place of one
        // that vanished since the check above.
        conn.execute(
            &format!("ATTACH DATABASE ?1 AS {}", quote_ident(schema)),
            [uri_rw(file)],
        )
        .map_err(|e| unreachable(file, e))?;
    }
    register_strict_cast(&conn).map_err(|e| unreachable(path, e))?;
    register_row_hash(&conn).map_err(|e| unreachable(path, e))?;
    Ok(conn)
}

/// Every statement the connection runs, as SQLite runs it (parameters bound), and the
/// rows it returns, into the query log (see [`super::query_log`]).
fn log_statements(conn: &mut Connection) -> rusqlite::Result<()> {
    use rusqlite::trace::{TraceEvent, TraceEventCodes};
    // The statement rows are counted for: SQLite's own nested statements (a pragma
    // table runs one) produce rows too, which are not the statement's.
    let mut current = String::new();
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT | TraceEventCodes::SQLITE_TRACE_ROW,
        Some(move |event: TraceEvent<'_>| match event {
            // A trigger's program is announced as `-- name`: part of its statement.
            TraceEvent::Stmt(_, sql) if sql.starts_with("--") => {}
            TraceEvent::Stmt(statement, sql) => {
                current = statement.sql().into_owned();
                let sql = statement.expanded_sql().unwrap_or_else(|| sql.to_string());
                super::query_log::sent(&sql, 0, None);
            }
            TraceEvent::Row(statement) if statement.sql() == current.as_str() => {
                super::query_log::add_rows(1)
            }
            _ => {}
        }),
    )
}

/// `file:PATH?mode=rw`: opens an existing file, never creates one.
fn uri_rw(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri + "?mode=rw"
}

fn query_error(e: rusqlite::Error) -> WarehouseError {
    // Only a connection's watchdog interrupts it (see [`SqliteWarehouse::connect`]).
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
        return WarehouseError::Query(
            "timed out: the query ran past the warehouse's check_timeout, so SQLite \
             interrupted it"
                .to_string(),
        );
    }
    WarehouseError::Query(e.to_string())
}

/// A timestamp column as Unix seconds: SQLite keeps times as ISO text or as numbers.
fn epoch_sql(column: &str) -> String {
    let c = quote_ident(column);
    format!(
        "CASE WHEN typeof({c}) IN ('integer', 'real') THEN CAST({c} AS INTEGER) \
         ELSE CAST(strftime('%s', {c}) AS INTEGER) END"
    )
}

/// The one query that reads a table for every check (see [`Warehouse::scan`]).
fn scan_sql(scan: &TableScan) -> String {
    // As for PostgreSQL: one read, grouped by minute only from the window's start and
    // by day over the older stretch.
    // Minutes and days are floored, also before 1970 (% keeps the sign). The
    // bounds are the engine's own integers.
    let time = |column: &str| format!("{} AS t", epoch_sql(column));
    let (minute, at_midnight, older, cut, t) = match &scan.minutes {
        Some(window) => (
            format!(
                "CASE WHEN t >= {} THEN t - (t % 60 + 60) % 60
                      WHEN t >= {} THEN t - (t % 86400 + 86400) % 86400 END",
                window.from, window.older_from
            ),
            "count(*) FILTER (WHERE t % 86400 = 0)".to_string(),
            format!("count(*) FILTER (WHERE t >= {})", window.older_from),
            format!(
                ", count(*) FILTER (WHERE (t % 86400 + 86400) % 86400 < {}), \
                 coalesce(min(t), 0)",
                window.cutoff,
            ),
            time(window.column),
        ),
        None => (
            "NULL".into(),
            "0".into(),
            "0".into(),
            ", 0, 0".into(),
            "NULL AS t".into(),
        ),
    };
    let (counted, since) = match scan.nulls_since {
        Some((column, at)) => (
            format!("since >= {at}"),
            format!("{} AS since", epoch_sql(column)),
        ),
        None => ("1".to_string(), "NULL AS since".to_string()),
    };
    let picked: String = (0..scan.null_columns.len())
        .map(|i| format!(", count(*) FILTER (WHERE {counted} AND c{i} IS NULL)"))
        .collect();
    let columns: String = scan
        .null_columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!(", {} AS c{i}", quote_ident(c)))
        .collect();
    let per_minute = scan.minute_nulls_sql(
        &|condition| format!("count(*) FILTER (WHERE {condition})"),
        &|i, _| format!("c{i}"),
    );
    format!(
        "SELECT {minute} AS minute, count(*), {at_midnight}, {older},
                count(*) FILTER (WHERE {counted}){picked}{per_minute}{cut}
         FROM (SELECT {t}, {since}{columns} FROM {table}) GROUP BY 1",
        table = scan.relation.quoted(),
    )
}

impl Warehouse for SqliteWarehouse {
    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError> {
        let conn = self.connect()?;
        conn.query_row(
            &format!("SELECT count(*) FROM {}", relation.quoted()),
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n as u64)
        .map_err(query_error)
    }

    fn columns_of(
        &self,
        schema: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Vec<Column>>, WarehouseError> {
        let conn = self.connect()?;
        // The schema goes in as an argument: as a prefix, SQLite may find a same-named
        // table in another attached database (names are case-insensitive).
        let schema = schema.unwrap_or("main");
        let mut stmt = conn
            .prepare("SELECT name, type FROM pragma_table_info(?1, ?2) ORDER BY cid")
            .map_err(query_error)?;
        tables
            .iter()
            .map(|table| {
                let rows = stmt
                    .query_map([table.as_str(), schema], |r| {
                        Ok(Column {
                            name: r.get(0)?,
                            data_type: r.get::<_, String>(1)?.to_uppercase(),
                        })
                    })
                    .map_err(query_error)?;
                rows.collect::<Result<_, _>>().map_err(query_error)
            })
            .collect()
    }

    fn scan(&self, scan: &TableScan) -> Result<TableCounts, WarehouseError> {
        let conn = self.connect()?;
        let sql = scan_sql(scan);
        let mut stmt = conn.prepare(&sql).map_err(query_error)?;
        let width = scan.width();
        // Columns: the minute, then the counts.
        let groups = stmt
            .query_map([], |r| {
                let counts = (1..=width)
                    .map(|i| r.get::<_, i64>(i).map(|n| n as u64))
                    .collect::<rusqlite::Result<_>>()?;
                Ok((r.get::<_, Option<i64>>(0)?, counts))
            })
            .map_err(query_error)?
            .collect::<Result<_, _>>()
            .map_err(query_error)?;
        Ok(TableCounts::from_groups(groups, scan))
    }

    fn plan_scan(&self, scan: &TableScan) -> Result<String, WarehouseError> {
        let conn = self.connect()?;
        let sql = format!("EXPLAIN QUERY PLAN {}", scan_sql(scan));
        let mut stmt = conn.prepare(&sql).map_err(query_error)?;
        let first = stmt
            .query_map([], |r| r.get::<_, String>(3))
            .map_err(query_error)?
            .next()
            .transpose()
            .map_err(query_error)?;
        Ok(first.unwrap_or_default())
    }

    fn dry_run(&self, select: &str) -> Result<u64, WarehouseError> {
        // Step through every row: wrapped in count(*), SQLite would skip computing the
        // columns, and with them the casts this is meant to exercise.
        let conn = self.connect()?;
        // What is checked here must never change anything, whatever the SQL says:
        // query_only refuses every write, to the main and the attached databases.
        conn.pragma_update(None, "query_only", true)
            .map_err(query_error)?;
        let mut stmt = conn.prepare(&strict_casts(select)).map_err(query_error)?;
        let mut rows = stmt.query([]).map_err(query_error)?;
        let mut count = 0;
        while rows.next().map_err(query_error)?.is_some() {
            count += 1;
        }
        Ok(count)
    }

    fn null_counts(
        &self,
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> Result<NullCounts, WarehouseError> {
        let conn = self.connect()?;
        let filter = since.map(|(column, _)| format!("{} >= ?1", epoch_sql(column)));
        let sql = null_counts_sql(relation, columns, filter.as_deref());
        let params: Vec<i64> = since.map(|(_, at)| at).into_iter().collect();
        conn.query_row(&sql, rusqlite::params_from_iter(params), |r| {
            let rows = r.get::<_, i64>(0)? as u64;
            let nulls = (1..=columns.len())
                .map(|i| r.get::<_, i64>(i).map(|n| n as u64))
                .collect::<rusqlite::Result<_>>()?;
            Ok(NullCounts { rows, nulls })
        })
        .map_err(query_error)
    }

    fn load_times(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        limit: usize,
    ) -> Result<Vec<i64>, WarehouseError> {
        let conn = self.connect()?;
        let sql = format!(
            "SELECT DISTINCT (t / 60) * 60 AS minute FROM (SELECT {} AS t FROM {}) \
             WHERE t >= ?1 ORDER BY minute DESC LIMIT ?2",
            epoch_sql(column),
            relation.quoted()
        );
        let mut stmt = conn.prepare(&sql).map_err(query_error)?;
        let rows = stmt
            .query_map(rusqlite::params![since, limit as i64], |r| r.get(0))
            .map_err(query_error)?;
        rows.collect::<Result<_, _>>().map_err(query_error)
    }

    fn daily_counts(
        &self,
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> Result<Vec<DayCount>, WarehouseError> {
        let conn = self.connect()?;
        // Seconds into the UTC day, also for times before 1970 (% keeps the sign).
        let sql = format!(
            "SELECT date(t, 'unixepoch') AS day, count(*),
                    count(*) FILTER (WHERE (t % 86400 + 86400) % 86400 < ?2),
                    count(*) FILTER (WHERE t % 86400 = 0)
             FROM (SELECT {} AS t FROM {}) WHERE t >= ?1 GROUP BY day ORDER BY day",
            epoch_sql(column),
            relation.quoted()
        );
        let mut stmt = conn.prepare(&sql).map_err(query_error)?;
        let rows = stmt
            .query_map(
                rusqlite::params![since, cutoff.num_seconds_from_midnight()],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        [
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, i64>(3)?,
                        ],
                    ))
                },
            )
            .map_err(query_error)?;
        let mut out = Vec::new();
        for row in rows {
            let (day, [rows, before_cutoff, at_midnight]) = row.map_err(query_error)?;
            out.push(DayCount {
                day: parse_day(&day)?,
                rows: rows as u64,
                before_cutoff: before_cutoff as u64,
                at_midnight: at_midnight as u64,
            });
        }
        Ok(out)
    }

    fn missing_keys(&self, gap: &KeyGap) -> Result<Vec<u64>, WarehouseError> {
        let conn = self.connect()?;
        let sql = gap.sql(quote_ident, &epoch_sql(gap.from_time), ("?1", "?2"));
        let (start, end) = gap.bounds();
        let columns = 1 + gap.also.len();
        conn.query_row(&sql, rusqlite::params![start, end], |r| {
            (0..columns)
                .map(|i| r.get::<_, i64>(i).map(|n| n as u64))
                .collect()
        })
        .map_err(query_error)
    }

    /// SQLite has no regular expressions: the values come back as text and are checked
    /// here, the way the strict cast reads them (a stored number casts to any number).
    fn count_uncastable(
        &self,
        relation: &Relation,
        column: &str,
        target_type: &str,
    ) -> Result<Option<Uncastable>, WarehouseError> {
        let Some(target) = CastTarget::parse(target_type) else {
            return Ok(None);
        };
        let conn = self.connect()?;
        conn.pragma_update(None, "query_only", true)
            .map_err(query_error)?;
        // Qualified, so a column that is not there is an error: SQLite reads an unknown
        // bare "name" as the string 'name'.
        let col = format!("src.{}", quote_ident(column));
        let sql = format!(
            "SELECT typeof({col}), CAST({col} AS TEXT) FROM {} AS src WHERE {col} IS NOT NULL",
            relation.quoted()
        );
        let mut stmt = conn.prepare(&sql).map_err(query_error)?;
        let mut rows = stmt.query([]).map_err(query_error)?;
        let mut bad = 0;
        let mut examples = std::collections::BTreeSet::new();
        while let Some(row) = rows.next().map_err(query_error)? {
            let stored: String = row.get(0).map_err(query_error)?;
            let text: String = row.get(1).map_err(query_error)?;
            let converts = match (stored.as_str(), target) {
                ("integer", CastTarget::Number | CastTarget::Text) => true,
                ("real", CastTarget::Number | CastTarget::Text) => true,
                // The strict cast truncates a stored real: only its range matters.
                ("real", CastTarget::Integer { min, max }) => text
                    .parse::<f64>()
                    .is_ok_and(|n| n.trunc() >= min as f64 && n.trunc() <= max as f64),
                _ => target.accepts(&text),
            };
            if !converts {
                bad += 1;
                examples.insert(text);
                if examples.len() > UNCASTABLE_EXAMPLES {
                    examples.pop_last();
                }
            }
        }
        Ok(Some(Uncastable {
            rows: bad,
            examples: examples.into_iter().collect(),
        }))
    }
    fn snapshot_table(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<TableVersion, WarehouseError> {
        let mut conn = self.connect()?;
        // IMMEDIATE: the write lock first, so the copy is of one state of the table.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(query_error)?;
        let source = find_table(&tx, relation)?;
        let copy = copy_relation(&source, tag)?;
        if let Some(kind) = kind_of(&tx, &copy)? {
            return Err(WarehouseError::Refused(format!(
                "a version of {relation} tagged {tag:?} exists already ({copy}, a {kind}); \
                 a version is never overwritten"
            )));
        }
        let columns = declared_columns(&tx, &source)?;
        // SQLite keeps a declared type as the text that was written. The copy repeats
        // it (CREATE TABLE AS would write its own, and the restore check would then
        // fail), so only a type that is plainly a type name goes into the DDL.
        if let Some(odd) = columns.iter().find(|c| !is_plain_type(&c.data_type)) {
            return Err(WarehouseError::Refused(format!(
                "cannot copy {relation}: column {} has a declared type ({:?}) that is not \
                 a plain type name",
                odd.name, odd.data_type
            )));
        }
        let definitions = columns
            .iter()
            .map(|c| format!("{} {}", quote_ident(&c.name), c.data_type))
            .collect::<Vec<_>>()
            .join(", ");
        tx.execute(
            &format!("CREATE TABLE {} ({definitions})", copy.quoted()),
            [],
        )
        .map_err(query_error)?;
        let list = column_list(&columns);
        let rows = tx
            .execute(
                &format!(
                    "INSERT INTO {} ({list}) SELECT {list} FROM {}",
                    copy.quoted(),
                    source.quoted()
                ),
                [],
            )
            .map_err(query_error)?;
        let taken_at: String = tx
            .query_row("SELECT strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", [], |r| {
                r.get(0)
            })
            .map_err(query_error)?;
        tx.commit().map_err(query_error)?;
        Ok(TableVersion {
            table: relation.to_string(),
            copy: copy.to_string(),
            rows: rows as u64,
            taken_at: Some(super::read_now(&taken_at)?),
            scope: None,
            after: None,
        })
    }

    /// Readers never see the table empty: until the commit they read the rows as they
    /// were (WAL: their snapshot; a rollback journal: the database file, which the
    /// writer only touches once it holds the exclusive lock that keeps readers out).
    fn restore_table(
        &self,
        relation: &Relation,
        version: &TableVersion,
    ) -> Result<Restored, WarehouseError> {
        let copy = own_copy(relation, version)?;
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(query_error)?;
        let source = find_table(&tx, relation)?;
        if kind_of(&tx, &copy)?.is_none() {
            return Err(WarehouseError::Refused(format!(
                "cannot restore {relation}: its copy {copy} is missing (dropped, or never \
                 taken in this warehouse)"
            )));
        }
        let upper = |columns: Vec<Column>| -> Vec<Column> {
            columns
                .into_iter()
                .map(|c| Column {
                    data_type: c.data_type.to_uppercase(),
                    ..c
                })
                .collect()
        };
        let table_columns = upper(declared_columns(&tx, &source)?);
        let copy_columns = upper(declared_columns(&tx, &copy)?);
        check_restorable(
            &relation.to_string(),
            &table_columns,
            &version.copy,
            &copy_columns,
        )?;
        let copied: i64 = tx
            .query_row(
                &format!("SELECT count(*) FROM {}", copy.quoted()),
                [],
                |r| r.get(0),
            )
            .map_err(query_error)?;
        if copied as u64 != version.rows {
            return Err(changed_copy(relation, version, copied as u64));
        }
        let scope = version.scope.as_ref();
        let now = prints(&tx, &source, scope.and_then(|s| s.column.as_deref()))?;
        let kept = check_unchanged_since(relation, version, &now)?;
        // Only the days the backfill rebuilt, when it rebuilt only some.
        let within = match scope.and_then(|s| s.range()) {
            Some((column, start, end)) => {
                format!(
                    " WHERE {epoch} >= {start} AND {epoch} < {end}",
                    epoch = epoch_sql(column)
                )
            }
            None => String::new(),
        };
        let list = column_list(&table_columns);
        tx.execute(&format!("DELETE FROM {}{within}", source.quoted()), [])
            .map_err(query_error)?;
        let rows = tx
            .execute(
                &format!(
                    "INSERT INTO {} ({list}) SELECT {list} FROM {}{within}",
                    source.quoted(),
                    copy.quoted()
                ),
                [],
            )
            .map_err(query_error)? as u64;
        tx.commit().map_err(query_error)?;
        Ok(Restored { rows, kept })
    }

    fn day_prints(
        &self,
        relation: &Relation,
        column: Option<&str>,
    ) -> Result<Vec<DayPrint>, WarehouseError> {
        let conn = self.connect()?;
        let source = find_table(&conn, relation)?;
        prints(&conn, &source, column)
    }

    fn drop_version(&self, version: &TableVersion) -> Result<(), WarehouseError> {
        let copy = own_copy_name(&version.copy)?;
        self.connect()?
            .execute(&format!("DROP TABLE IF EXISTS {}", copy.quoted()), [])
            .map_err(query_error)?;
        Ok(())
    }

    fn find_version(
        &self,
        relation: &Relation,
        tag: &str,
    ) -> Result<Option<TableVersion>, WarehouseError> {
        let conn = self.connect()?;
        let source = find_table(&conn, relation)?;
        let copy = copy_relation(&source, tag)?;
        if kind_of(&conn, &copy)?.as_deref() != Some("table") {
            return Ok(None);
        }
        let rows: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM {}", copy.quoted()),
                [],
                |r| r.get(0),
            )
            .map_err(query_error)?;
        Ok(Some(TableVersion {
            table: relation.to_string(),
            copy: copy.to_string(),
            rows: rows as u64,
            taken_at: None,
            scope: None,
            after: None,
        }))
    }
}

/// [`Warehouse::day_prints`] of `source` (as found), on `conn` or inside a transaction.
fn prints(
    conn: &Connection,
    source: &Relation,
    column: Option<&str>,
) -> Result<Vec<DayPrint>, WarehouseError> {
    let columns = declared_columns(conn, source)?;
    let day = match column {
        Some(column) => format!("date({}, 'unixepoch')", epoch_sql(column)),
        None => "NULL".to_string(),
    };
    let sql = format!(
        "SELECT {day}, count(*), sum({ROW_HASH}({list})) FROM {table} GROUP BY 1",
        list = column_list(&columns),
        table = source.quoted()
    );
    let mut stmt = conn.prepare(&sql).map_err(query_error)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(DayPrint {
                day: r.get(0)?,
                rows: r.get::<_, i64>(1)? as u64,
                sum: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
            })
        })
        .map_err(query_error)?;
    rows.collect::<Result<_, _>>().map_err(query_error)
}

const ROW_HASH: &str = "dataward_row_hash";

/// `dataward_row_hash(a, b, ...)`: 32 bits of a SHA-256 of the values with their types,
/// so a day's sum of them changes when any row of it does, and a sum over any table
/// fits in 64 bits.
fn register_row_hash(conn: &Connection) -> rusqlite::Result<()> {
    use sha2::{Digest, Sha256};
    conn.create_scalar_function(
        ROW_HASH,
        -1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let mut hash = Sha256::new();
            for i in 0..ctx.len() {
                match ctx.get_raw(i) {
                    ValueRef::Null => hash.update([0]),
                    ValueRef::Integer(n) => {
                        hash.update([1]);
                        hash.update(n.to_le_bytes());
                    }
                    ValueRef::Real(x) => {
                        hash.update([2]);
                        hash.update(x.to_le_bytes());
                    }
                    ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                        hash.update([3]);
                        hash.update((bytes.len() as u64).to_le_bytes());
                        hash.update(bytes);
                    }
                }
            }
            let digest = hash.finalize();
            Ok(i64::from(u32::from_le_bytes([
                digest[0], digest[1], digest[2], digest[3],
            ])))
        },
    )
}

/// `relation` as SQLite spells it (schema included: `main` when the name has none),
/// when it is an ordinary table; refused otherwise.
fn find_table(conn: &Connection, relation: &Relation) -> Result<Relation, WarehouseError> {
    let schema = relation.schema.as_deref().unwrap_or("main");
    let found = conn
        .query_row(
            "SELECT schema, name, type FROM pragma_table_list
             WHERE schema = ?1 COLLATE NOCASE AND name = ?2 COLLATE NOCASE",
            [schema, relation.table.as_str()],
            |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, String>(2)?)),
        )
        .optional()
        .map_err(query_error)?;
    match found {
        Some((schema, table, kind)) if kind == "table" => Ok(Relation {
            schema: Some(schema),
            table,
        }),
        Some((_, _, kind)) => Err(WarehouseError::Refused(format!(
            "{relation} is a {kind}, not a table: only a table's rows are copied and restored"
        ))),
        None => Err(WarehouseError::Refused(format!(
            "table {relation} does not exist"
        ))),
    }
}

/// What `relation` (schema-qualified) is, if it exists: `table`, `view`, ...
fn kind_of(conn: &Connection, relation: &Relation) -> Result<Option<String>, WarehouseError> {
    conn.query_row(
        "SELECT type FROM pragma_table_list
         WHERE schema = ?1 COLLATE NOCASE AND name = ?2 COLLATE NOCASE",
        [
            relation.schema.as_deref().unwrap_or("main"),
            &relation.table,
        ],
        |r| r.get(0),
    )
    .optional()
    .map_err(query_error)
}

/// The columns a row is written through, in table order, with their types as declared
/// (generated columns are not among them: SQLite computes those).
fn declared_columns(conn: &Connection, relation: &Relation) -> Result<Vec<Column>, WarehouseError> {
    let mut stmt = conn
        .prepare("SELECT name, type FROM pragma_table_info(?1, ?2) ORDER BY cid")
        .map_err(query_error)?;
    let rows = stmt
        .query_map(
            [
                relation.table.as_str(),
                relation.schema.as_deref().unwrap_or("main"),
            ],
            |r| {
                Ok(Column {
                    name: r.get(0)?,
                    data_type: r.get(1)?,
                })
            },
        )
        .map_err(query_error)?;
    rows.collect::<Result<_, _>>().map_err(query_error)
}

/// A type name as SQLite's grammar has it, with nothing else: words of letters, digits
/// and `_`, then at most `(n)` or `(n, m)` of signed numbers. Empty (no type) too.
fn is_plain_type(declared: &str) -> bool {
    let (words, arguments) = match declared.split_once('(') {
        Some((words, rest)) => (words, Some(rest)),
        None => (declared, None),
    };
    let word = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let words_ok = words.split_whitespace().all(word)
        && words
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ');
    let number = |n: &str| {
        let n = n.trim_matches(' ');
        let digits = n.strip_prefix(['+', '-']).unwrap_or(n);
        !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
            && digits.chars().filter(|&c| c == '.').count() <= 1
    };
    let arguments_ok = match arguments {
        None => true,
        Some(rest) => match rest.trim_end_matches(' ').strip_suffix(')') {
            Some(inner) => {
                !words.trim().is_empty()
                    && (1..=2).contains(&inner.split(',').count())
                    && inner.split(',').all(number)
            }
            None => false,
        },
    };
    words_ok && arguments_ok
}

/// Where the copy of `source` tagged `tag` lives: beside it, named by [`version_name`].
/// SQLite's names ignore ASCII case: lowercased, they name the same table, and
/// `ANALYTICS.Orders` gets a plain name rather than one with a hash.
fn copy_relation(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
    let schema = source.schema.as_deref().expect("found in a schema");
    let name = version_name(
        &schema.to_ascii_lowercase(),
        &source.table.to_ascii_lowercase(),
        tag,
    )?;
    Ok(Relation {
        schema: source.schema.clone(),
        table: format!("{VERSIONS}__{name}"),
    })
}

/// The copy a version names, when it is one of ours for this table.
fn own_copy(relation: &Relation, version: &TableVersion) -> Result<Relation, WarehouseError> {
    super::own_copy(relation, version, own_copy_name)
}

/// `schema.dataward_versions__...` and nothing else: a stored version edited to name a
/// real table is never read into one or dropped.
fn own_copy_name(copy: &str) -> Result<Relation, WarehouseError> {
    let prefix = format!("{VERSIONS}__");
    match Relation::parse(copy) {
        Ok(relation)
            if relation.schema.is_some()
                && relation.table.starts_with(&prefix)
                && relation.table.len() > prefix.len()
                && is_version_name(&relation.table) =>
        {
            Ok(relation)
        }
        _ => Err(WarehouseError::Refused(format!(
            "{copy:?} is not a table version's copy (schema.{prefix}...)"
        ))),
    }
}

#[cfg(test)]
mod tests;
