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
    fn relations_are_quoted_not_pasted() {
        let r = Relation::parse("BILLING.PAYMENTS").unwrap();
        assert_eq!(r.quoted(), "\"BILLING\".\"PAYMENTS\"");
        let evil = Relation::parse("x\"; DROP TABLE y; --").unwrap();
        assert_eq!(evil.quoted(), "\"x\"\"; DROP TABLE y; --\"");
        assert!(Relation::parse("a.b.c").is_err());
        assert!(Relation::parse("").is_err());
    }
}
