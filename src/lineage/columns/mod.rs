//! Column-level findings: does a model's SQL read a changed column, and where does it
//! cast it?
//!
//! Two methods find them. The parser method (`parsed`) reads the SQL with sqlparser in
//! the warehouse's dialect, so strings, comments, aliases and look-alike names are
//! never mistaken for the column. SQL that does not parse (unrendered Jinja, a dialect
//! feature sqlparser lacks) falls back to the token method (`tokens`). Every finding
//! says which method made it.
//!
//! Whether a cast is a break risk is decided here, the same way for both methods.

mod parsed;
mod tokens;

use serde::Serialize;

/// A changed column: its name and the type it has now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnChange {
    pub column: String,
    /// The column's new type. Empty when it is not known: casts are then reported
    /// without a break-risk judgement (every `break_risk` is false).
    pub new_type: String,
}

/// What one model's SQL does with the changed column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnFinding {
    /// The column name appears as an identifier (not only as an output alias).
    pub reads: bool,
    pub casts: Vec<CastFinding>,
    /// How `reads` and the casts were found: [`PARSER`] or [`TOKENS`].
    pub method: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CastFinding {
    /// As written, e.g. `integer` or `numeric(10,2)`.
    pub target_type: String,
    /// The exact cast text from the SQL, e.g. `cast(o.seat_section as integer)`.
    pub expression: String,
    /// The cast will fail on values of the new type (e.g. text cast to an integer).
    pub break_risk: bool,
    /// How the finding was made: [`PARSER`] or [`TOKENS`].
    pub method: &'static str,
}

/// The method name for findings made by parsing the SQL with sqlparser.
pub const PARSER: &str = "sqlparser";
/// The method name for findings made by the token scan.
pub const TOKENS: &str = "tokens";

/// The SQL dialect a project's models are written in, from the manifest's
/// `metadata.adapter_type`. Casting syntax differs (`SAFE_CAST` is BigQuery's,
/// `TRY_CAST` Snowflake's), so parsing in the right dialect matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    Snowflake,
    BigQuery,
    Postgres,
    /// Anything else (duckdb, redshift, ...), read with sqlparser's generic dialect.
    #[default]
    Generic,
}

impl Dialect {
    pub fn from_adapter_type(adapter_type: Option<&str>) -> Dialect {
        match adapter_type.map(str::to_lowercase).as_deref() {
            Some("snowflake") => Dialect::Snowflake,
            Some("bigquery") => Dialect::BigQuery,
            Some("postgres") | Some("postgresql") => Dialect::Postgres,
            _ => Dialect::Generic,
        }
    }
}

/// A cast of the column as a method saw it, before the break-risk judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FoundCast {
    target_type: String,
    expression: String,
    /// `CAST` and `::` fail the model on a bad value; `TRY_CAST` and `SAFE_CAST`
    /// return null instead.
    fails_loudly: bool,
    /// Byte offset in the SQL where the cast's argument (the column reference) starts;
    /// this is how a parser finding is matched to the token scan's exact text.
    column_at: usize,
}

/// What `sql` does with the changed column: parsed in `dialect` when it parses, by
/// tokens otherwise.
pub fn find_column_use(sql: &str, change: &ColumnChange, dialect: Dialect) -> ColumnFinding {
    let column = change.column.to_lowercase();
    let scan = tokens::scan(sql, &column);
    // Jinja is never valid SQL, and some dialects would read `{...}` as a struct
    // literal, so do not let the parser guess.
    let has_jinja = sql.contains("{{") || sql.contains("{%");
    let parsed = if has_jinja {
        None
    } else {
        parsed::scan(sql, &column, dialect, &scan.casts)
    };
    match parsed {
        Some(parsed) => judge(parsed.reads, parsed.casts, change, PARSER),
        None => judge(scan.reads, scan.casts, change, TOKENS),
    }
}

/// The token method alone, whatever the SQL (its own tests use it).
#[cfg(test)]
fn find_with_tokens(sql: &str, change: &ColumnChange) -> ColumnFinding {
    let scan = tokens::scan(sql, &change.column.to_lowercase());
    judge(scan.reads, scan.casts, change, TOKENS)
}

fn judge(
    reads: bool,
    casts: Vec<FoundCast>,
    change: &ColumnChange,
    method: &'static str,
) -> ColumnFinding {
    let new_type_is_text = TEXT_TYPES.contains(&base_type(&change.new_type).as_str());
    let casts = casts
        .into_iter()
        .map(|cast| CastFinding {
            break_risk: cast.fails_loudly
                && new_type_is_text
                && STRICT_TYPES.contains(&base_type(&cast.target_type).as_str()),
            target_type: cast.target_type,
            expression: cast.expression,
            method,
        })
        .collect();
    ColumnFinding {
        reads,
        casts,
        method,
    }
}

/// Types a text value may fail to convert to. Booleans are in because `'FLOOR-A'` fails
/// a boolean cast just as it fails an integer one.
const STRICT_TYPES: &[&str] = &[
    "int",
    "integer",
    "smallint",
    "bigint",
    "tinyint",
    "byteint",
    "int2",
    "int4",
    "int8",
    "int64",
    "number",
    "numeric",
    "decimal",
    "float",
    "float4",
    "float8",
    "float64",
    "double",
    "real",
    "date",
    "datetime",
    "time",
    "timestamp",
    "timestamptz",
    "timestamp_ntz",
    "timestamp_ltz",
    "timestamp_tz",
    "bool",
    "boolean",
];

const TEXT_TYPES: &[&str] = &[
    "varchar",
    "char",
    "character",
    "text",
    "string",
    "nvarchar",
    "nchar",
    "bpchar",
];

/// `VARCHAR(12)` -> `varchar`, `double precision` -> `double`.
fn base_type(type_text: &str) -> String {
    type_text
        .trim()
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(new_type: &str) -> ColumnChange {
        ColumnChange {
            column: "seat_section".into(),
            new_type: new_type.into(),
        }
    }

    #[test]
    fn plain_sql_is_parsed_and_jinja_falls_back_to_tokens() {
        let sql = "select cast(o.seat_section as integer) as n from orders o";
        let finding = find_column_use(sql, &change("VARCHAR(12)"), Dialect::Postgres);
        assert_eq!(finding.method, PARSER);
        assert_eq!(finding.casts[0].method, PARSER);
        assert_eq!(
            finding.casts[0].expression,
            "cast(o.seat_section as integer)"
        );
        assert!(finding.casts[0].break_risk);

        let jinja = "select cast(o.seat_section as integer) as n from {{ ref('orders') }} o";
        let finding = find_column_use(jinja, &change("VARCHAR(12)"), Dialect::Postgres);
        assert_eq!(finding.method, TOKENS);
        assert_eq!(finding.casts[0].method, TOKENS);
        assert!(finding.casts[0].break_risk);
    }

    #[test]
    fn an_unknown_new_type_judges_nothing() {
        let sql = "select seat_section::int from orders";
        let finding = find_column_use(sql, &change(""), Dialect::Postgres);
        assert_eq!(finding.casts.len(), 1);
        assert!(!finding.casts[0].break_risk);
    }

    #[test]
    fn dialects_from_adapter_types() {
        assert_eq!(
            Dialect::from_adapter_type(Some("Snowflake")),
            Dialect::Snowflake
        );
        assert_eq!(
            Dialect::from_adapter_type(Some("bigquery")),
            Dialect::BigQuery
        );
        assert_eq!(
            Dialect::from_adapter_type(Some("postgres")),
            Dialect::Postgres
        );
        assert_eq!(Dialect::from_adapter_type(Some("duckdb")), Dialect::Generic);
        assert_eq!(Dialect::from_adapter_type(None), Dialect::Generic);
    }
}
