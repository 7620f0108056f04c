//! SQLite as a warehouse: the embedded demo estate, and small teams' local marts.
//!
//! SQLite's CAST never fails: `CAST('N/A' AS INTEGER)` is 0. Every real warehouse
//! raises an error instead, and that error is exactly what breaks a model downstream of a
//! type change. So model SQL run here goes through [`strict_casts`], which turns numeric
//! casts into a function that fails the way Snowflake or PostgreSQL would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, OpenFlags};

use chrono::{NaiveTime, Timelike};

use super::{
    null_counts_sql, parse_day, quote_ident, CastTarget, Column, DayCount, NullCounts, Relation,
    Uncastable, Warehouse, WarehouseError, UNCASTABLE_EXAMPLES,
};

pub struct SqliteWarehouse {
    path: PathBuf,
    attach: BTreeMap<String, PathBuf>,
}

impl SqliteWarehouse {
    pub fn new(path: &Path, attach: BTreeMap<String, PathBuf>) -> SqliteWarehouse {
        SqliteWarehouse {
            path: path.to_path_buf(),
            attach,
        }
    }

    /// A fresh connection per check: a file that went away shows up as unreachable on
    /// the next poll instead of hiding behind an old handle.
    pub fn connect(&self) -> Result<Connection, WarehouseError> {
        connect(&self.path, &self.attach)
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
    let conn = Connection::open_with_flags(path, flags).map_err(|e| unreachable(path, e))?;
    conn.busy_timeout(Duration::from_secs(5))
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
    Ok(conn)
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

    fn columns(&self, relation: &Relation) -> Result<Vec<Column>, WarehouseError> {
        let conn = self.connect()?;
        // The schema goes in as an argument: as a prefix, SQLite may find a same-named
        // table in another attached database (names are case-insensitive).
        let schema = relation.schema.as_deref().unwrap_or("main");
        let mut stmt = conn
            .prepare("SELECT name, type FROM pragma_table_info(?1, ?2) ORDER BY cid")
            .map_err(query_error)?;
        let rows = stmt
            .query_map([relation.table.as_str(), schema], |r| {
                Ok(Column {
                    name: r.get(0)?,
                    data_type: r.get::<_, String>(1)?.to_uppercase(),
                })
            })
            .map_err(query_error)?;
        rows.collect::<Result<_, _>>().map_err(query_error)
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
}

const STRICT_CAST: &str = "dataward_strict_cast";

fn register_strict_cast(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        STRICT_CAST,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let target: String = ctx.get(1)?;
            let integer = !is_fractional_type(&target);
            match ctx.get_raw(0) {
                ValueRef::Null => Ok(Value::Null),
                ValueRef::Integer(i) => Ok(Value::Integer(i)),
                ValueRef::Real(f) if integer => Ok(Value::Integer(f as i64)),
                ValueRef::Real(f) => Ok(Value::Real(f)),
                ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                    let text = String::from_utf8_lossy(bytes);
                    let trimmed = text.trim();
                    let parsed = if integer {
                        trimmed.parse::<i64>().map(Value::Integer).ok()
                    } else {
                        trimmed.parse::<f64>().map(Value::Real).ok()
                    };
                    parsed.ok_or_else(|| {
                        rusqlite::Error::UserFunctionError(
                            format!("Numeric value '{text}' is not recognized (cast to {target})")
                                .into(),
                        )
                    })
                }
            }
        },
    )
}

fn is_fractional_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    ["real", "float", "double", "decimal", "numeric", "number"]
        .iter()
        .any(|t| ty.starts_with(t))
}

fn is_numeric_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    is_fractional_type(&ty)
        || ["int", "integer", "smallint", "bigint", "tinyint"]
            .iter()
            .any(|t| ty == *t)
}

/// Rewrites `CAST(expr AS <numeric type>)` into the strict cast function, at any depth.
/// Other casts are left alone.
pub fn strict_casts(sql: &str) -> String {
    let lower = sql.to_ascii_lowercase();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < sql.len() {
        let at_word_start = i == 0 || !is_ident_byte(sql.as_bytes()[i - 1]);
        if at_word_start && lower[i..].starts_with("cast") {
            if let Some((inner_start, close)) = cast_parens(&lower, i) {
                let inner = &sql[inner_start..close];
                if let Some(as_at) = last_top_level_as(&inner.to_ascii_lowercase()) {
                    let expr = &inner[..as_at];
                    let ty = inner[as_at + 4..].trim();
                    if is_numeric_type(ty) {
                        out.push_str(&format!(
                            "{STRICT_CAST}({}, '{}')",
                            strict_casts(expr.trim()),
                            ty.replace('\'', "")
                        ));
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        let ch = sql[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// For `cast` at `start`, the byte range inside its parentheses.
fn cast_parens(lower: &str, start: usize) -> Option<(usize, usize)> {
    let rest = &lower[start + 4..];
    let open = start + 4 + rest.len() - rest.trim_start().len();
    if lower.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    let mut depth = 0;
    for (offset, b) in lower.as_bytes()[open..].iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((open + 1, open + offset));
                }
            }
            _ => {}
        }
    }
    None
}

fn last_top_level_as(inner_lower: &str) -> Option<usize> {
    let bytes = inner_lower.as_bytes();
    let mut depth = 0i32;
    let mut found = None;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            // " as " with any whitespace around it; the offset points at the space before.
            _ if depth == 0
                && b.is_ascii_whitespace()
                && inner_lower[i + 1..].starts_with("as")
                && bytes.get(i + 3).is_some_and(u8::is_ascii_whitespace) =>
            {
                found = Some(i)
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warehouse() -> (tempfile::TempDir, SqliteWarehouse) {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("wh.db");
        let raw = dir.path().join("raw.db");
        Connection::open(&main).unwrap();
        let conn = Connection::open(&raw).unwrap();
        conn.execute_batch(
            "CREATE TABLE orders (id INTEGER, zip_code VARCHAR(12));
             INSERT INTO orders VALUES (1, '12'), (2, '7');",
        )
        .unwrap();
        let attach = BTreeMap::from([("RAW".to_string(), raw)]);
        (dir, SqliteWarehouse::new(&main, attach))
    }

    #[test]
    fn counts_and_columns_through_attached_schema() {
        let (_dir, wh) = warehouse();
        let rel = Relation::parse("RAW.orders").unwrap();
        assert_eq!(wh.row_count(&rel).unwrap(), 2);
        let cols = wh.columns(&rel).unwrap();
        assert_eq!(cols[1].data_type, "VARCHAR(12)");
        assert!(wh
            .columns(&Relation::parse("RAW.nope").unwrap())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn numeric_casts_fail_like_a_real_warehouse() {
        let (_dir, wh) = warehouse();
        let sql = "select cast(zip_code as integer) as s from RAW.orders";
        assert_eq!(wh.dry_run(sql).unwrap(), 2);
        wh.connect()
            .unwrap()
            .execute("INSERT INTO RAW.orders VALUES (3, 'N/A')", [])
            .unwrap();
        let err = wh.dry_run(sql).unwrap_err().to_string();
        assert!(
            err.contains("Numeric value 'N/A' is not recognized"),
            "{err}"
        );
        // A cast to text is untouched and still runs.
        assert_eq!(
            wh.dry_run("select cast(zip_code as varchar(12)) from RAW.orders")
                .unwrap(),
            3
        );
    }

    #[test]
    fn a_dry_run_cannot_write() {
        let (_dir, wh) = warehouse();
        wh.connect()
            .unwrap()
            .execute_batch("CREATE TABLE main.t (id INTEGER); INSERT INTO main.t VALUES (1);")
            .unwrap();
        for sql in [
            "delete from t",
            "with x as (select 1) delete from t",
            "delete from RAW.orders returning 1",
            "insert into t values (2) returning id",
            "drop table t",
        ] {
            assert!(wh.dry_run(sql).is_err(), "{sql} ran");
        }
        let count = |rel: &str| wh.row_count(&Relation::parse(rel).unwrap()).unwrap();
        assert_eq!(count("t"), 1);
        assert_eq!(count("RAW.orders"), 2);
    }

    #[test]
    fn rewrite_handles_nesting_and_leaves_other_casts() {
        assert_eq!(
            strict_casts("CAST(abs(cast(x AS int)) AS bigint)"),
            "dataward_strict_cast(abs(dataward_strict_cast(x, 'int')), 'bigint')"
        );
        assert_eq!(
            strict_casts("cast(x as text), broadcast(y)"),
            "cast(x as text), broadcast(y)"
        );
    }

    /// A payments table with ISO-text, epoch-number and date-only timestamps.
    fn payments() -> (tempfile::TempDir, SqliteWarehouse) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wh.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE payments (id INTEGER, amount REAL, zip_code TEXT, at, day TEXT);
                 INSERT INTO payments VALUES
                   (1, 10.0, '1000', '2024-05-13T00:00:00Z', '2024-05-13'),
                   (2, NULL, '1000', '2024-05-13T09:30:00Z', '2024-05-13'),
                   (3, 12.0, NULL,   '2024-05-13T18:00:00Z', '2024-05-13'),
                   (4, NULL, NULL,   '2024-05-14 08:00:00',  '2024-05-14'),
                   (5, 14.0, '1000', 1715644800 + 13 * 3600, '2024-05-14'),
                   (6, NULL, '1000', '2024-05-14T11:59:59Z', '2024-05-14'),
                   (7, 16.0, '1000', '2024-05-12T23:00:00Z', '2024-05-12');",
            )
            .unwrap();
        (dir, SqliteWarehouse::new(&path, BTreeMap::new()))
    }

    fn day(text: &str) -> chrono::NaiveDate {
        parse_day(text).unwrap()
    }

    #[test]
    fn daily_counts_split_each_day_at_the_time_of_day() {
        let (_dir, wh) = payments();
        let rel = Relation::parse("payments").unwrap();
        let noon = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
        // From Monday 2024-05-13 00:00 UTC: Sunday's row is before the window.
        let counts = wh.daily_counts(&rel, "at", 1_715_558_400, noon).unwrap();
        assert_eq!(
            counts,
            vec![
                DayCount {
                    day: day("2024-05-13"),
                    rows: 3,
                    before_cutoff: 2,
                    at_midnight: 1
                },
                DayCount {
                    day: day("2024-05-14"),
                    rows: 3,
                    before_cutoff: 2,
                    at_midnight: 0
                },
            ]
        );
        // A date column: every row at midnight, all of them before any cutoff.
        let dates = wh.daily_counts(&rel, "day", 1_715_558_400, noon).unwrap();
        assert!(dates
            .iter()
            .all(|d| d.at_midnight == d.rows && d.before_cutoff == d.rows));
    }

    #[test]
    fn null_counts_can_be_limited_to_rows_loaded_since() {
        let (_dir, wh) = payments();
        let rel = Relation::parse("payments").unwrap();
        let columns = ["amount".to_string(), "zip_code".to_string()];
        let all = wh.null_counts(&rel, &columns, None).unwrap();
        assert_eq!((all.rows, all.nulls.clone()), (7, vec![3, 2]));
        // Since Tuesday 2024-05-14 00:00 UTC: rows 4, 5 and 6.
        let recent = wh
            .null_counts(&rel, &columns, Some(("at", 1_715_644_800)))
            .unwrap();
        assert_eq!((recent.rows, recent.nulls), (3, vec![2, 1]));
        let none = wh
            .null_counts(&rel, &columns, Some(("at", 1_900_000_000)))
            .unwrap();
        assert_eq!((none.rows, none.nulls), (0, vec![0, 0]));
        // The timestamp column's name is quoted, never pasted: no rows match a column
        // that does not exist (SQLite reads an unknown quoted name as a string).
        let evil = wh.null_counts(&rel, &columns, Some(("at\" OR 1=1 --", 0)));
        assert!(!matches!(evil, Ok(ref c) if c.rows > 0), "{evil:?}");
    }

    #[test]
    fn counts_the_values_that_would_not_cast() {
        let (_dir, wh) = warehouse();
        wh.connect()
            .unwrap()
            .execute_batch(
                "CREATE TABLE RAW.payments (id INTEGER, amount VARCHAR(12), paid REAL);
                 INSERT INTO RAW.payments VALUES
                   (1, '12', 1.5), (2, ' 7 ', 2), (3, '', NULL), (4, 'A-3', 3e10),
                   (5, NULL, 4), (6, 'A-3', 5), (7, '1.5', 6), (8, '3000000000', 7),
                   (9, 12, 8);",
            )
            .unwrap();
        let rel = Relation::parse("RAW.payments").unwrap();
        let count = |column: &str, target: &str| {
            wh.count_uncastable(&rel, column, target)
                .unwrap()
                .map(|u| (u.rows, u.examples))
        };
        let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
        // '' does not cast to an integer; NULL is not a value; 'A-3' counts twice.
        assert_eq!(
            count("amount", "integer"),
            Some((5, strings(&["", "1.5", "3000000000"])))
        );
        assert_eq!(
            count("amount", "BIGINT"),
            Some((4, strings(&["", "1.5", "A-3"])))
        );
        assert_eq!(
            count("amount", "numeric(10, 2)"),
            Some((3, strings(&["", "A-3"])))
        );
        assert_eq!(count("amount", "date").unwrap().0, 8);
        assert_eq!(count("amount", "varchar"), Some((0, Vec::new())));
        assert_eq!(count("amount", "timestamp"), None);
        // A stored real casts to an integer while it is in range.
        assert_eq!(
            count("paid", "integer"),
            Some((1, strings(&["30000000000.0"])))
        );
        // A column that is not there is the query's error, not a count.
        assert!(matches!(
            wh.count_uncastable(&rel, "nope", "integer"),
            Err(WarehouseError::Query(_))
        ));
        // It reads only.
        assert_eq!(wh.row_count(&rel).unwrap(), 9);
    }

    #[test]
    fn a_missing_file_is_unreachable_not_an_error() {
        let wh = SqliteWarehouse::new(Path::new("/nonexistent/wh.db"), BTreeMap::new());
        assert!(matches!(
            wh.row_count(&Relation::parse("t").unwrap()),
            Err(WarehouseError::Unreachable(_))
        ));
    }
}
