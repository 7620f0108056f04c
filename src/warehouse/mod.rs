//! One trait over every warehouse engine. Checks are pushed down as SQL; identifiers are
//! always quoted, never pasted.

pub mod postgres;
pub mod sqlite;

use std::fmt;

use chrono::{NaiveDate, NaiveTime};
use serde::Serialize;

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
}

impl fmt::Display for WarehouseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarehouseError::Unreachable(m) => write!(f, "unreachable: {m}"),
            WarehouseError::Query(m) => write!(f, "query failed: {m}"),
        }
    }
}

impl std::error::Error for WarehouseError {}

pub trait Warehouse: Send {
    fn row_count(&self, relation: &Relation) -> Result<u64, WarehouseError>;
    /// Columns in table order; empty when the table does not exist.
    fn columns(&self, relation: &Relation) -> Result<Vec<Column>, WarehouseError>;
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
    match wh.kind.as_str() {
        "postgres" => {
            let var = wh.url_env.as_deref().expect("validated");
            let timeout = match &wh.check_timeout {
                Some(text) => crate::config::parse_duration(text)?,
                None => std::time::Duration::from_secs(30),
            };
            let pg =
                postgres::PostgresWarehouse::from_env(var, wh.max_concurrent.unwrap_or(4), timeout)
                    .map_err(|e| {
                        anyhow::anyhow!("{}: warehouse.{name}: {e}", config.origin.display())
                    })?;
            Ok(Box::new(pg))
        }
        _ => {
            let path = config.resolve(wh.path.as_ref().expect("validated"));
            let attach = wh
                .attach
                .iter()
                .map(|(schema, file)| (schema.clone(), config.resolve(file)))
                .collect();
            Ok(Box::new(sqlite::SqliteWarehouse::new(&path, attach)))
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
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
mod tests {
    use super::*;

    #[test]
    fn cast_targets_from_types_as_written() {
        assert_eq!(
            CastTarget::parse("INTEGER"),
            Some(CastTarget::Integer {
                min: -2147483648,
                max: 2147483647
            })
        );
        assert_eq!(
            CastTarget::parse("numeric(10, 2)"),
            Some(CastTarget::Number)
        );
        assert_eq!(
            CastTarget::parse("double precision"),
            Some(CastTarget::Number)
        );
        assert_eq!(CastTarget::parse("VARCHAR(12)"), Some(CastTarget::Text));
        assert_eq!(CastTarget::parse("date"), Some(CastTarget::Date));
        assert_eq!(CastTarget::parse("bool"), Some(CastTarget::Boolean));
        assert_eq!(CastTarget::parse("timestamp"), None);
        assert_eq!(CastTarget::parse("jsonb"), None);
    }

    #[test]
    fn which_values_cast() {
        let integer = CastTarget::parse("integer").unwrap();
        for good in ["12", " 7 ", "-3", "+0", "007", "\t5\n", "2147483647"] {
            assert!(integer.accepts(good), "{good:?}");
        }
        for bad in ["", " ", "A-3", "1.5", "1e3", "2147483648", "- 3", "１２"] {
            assert!(!integer.accepts(bad), "{bad:?}");
        }
        assert!(CastTarget::parse("bigint").unwrap().accepts("2147483648"));

        for good in [
            "12",
            " 1.5 ",
            "-.5",
            "5.",
            "1e3",
            "2.5E-3",
            "NaN",
            "-Infinity",
            "inf",
        ] {
            assert!(CastTarget::Number.accepts(good), "{good:?}");
        }
        for bad in ["", ".", "A-3", "1,5", "1e", "e3", "1.2.3", "--1"] {
            assert!(!CastTarget::Number.accepts(bad), "{bad:?}");
        }

        for good in [
            "2024-02-29",
            " 2024-01-31 ",
            "0001-01-01",
            "2024-1-5",
            "-Infinity",
            "today",
        ] {
            assert!(CastTarget::Date.accepts(good), "{good:?}");
        }
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "24-01-01",
            "0000-01-01",
            "soon",
            "2024-01-31x",
            "2024-001-01",
            "-2024-01-01",
        ] {
            assert!(!CastTarget::Date.accepts(bad), "{bad:?}");
        }

        for good in ["true", "F", " yes ", "of", "1"] {
            assert!(CastTarget::Boolean.accepts(good), "{good:?}");
        }
        for bad in ["o", "2", "", "truth"] {
            assert!(!CastTarget::Boolean.accepts(bad), "{bad:?}");
        }
        assert!(CastTarget::Text.accepts(""));
    }

    #[test]
    fn relations_are_quoted_not_pasted() {
        let r = Relation::parse("BILLING.PAYMENTS").unwrap();
        assert_eq!(r.quoted(), "\"BILLING\".\"PAYMENTS\"");
        let evil = Relation::parse("x\"; DROP TABLE y; --").unwrap();
        assert_eq!(evil.quoted(), "\"x\"\"; DROP TABLE y; --\"");
        assert!(Relation::parse("a.b.c").is_err());
        assert!(Relation::parse("").is_err());
    }
}
