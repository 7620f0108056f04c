//! One trait over every warehouse engine. Checks are pushed down as SQL; identifiers are
//! always quoted, never pasted.

pub mod sqlite;

use std::fmt;

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_are_quoted_not_pasted() {
        let r = Relation::parse("TICKETING.ORDERS").unwrap();
        assert_eq!(r.quoted(), "\"TICKETING\".\"ORDERS\"");
        let evil = Relation::parse("x\"; DROP TABLE y; --").unwrap();
        assert_eq!(evil.quoted(), "\"x\"\"; DROP TABLE y; --\"");
        assert!(Relation::parse("a.b.c").is_err());
        assert!(Relation::parse("").is_err());
    }
}
