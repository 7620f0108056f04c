//! Column-level findings: does a model's SQL read a changed column, what does it do with
//! it, and which of those uses would the new type break?
//!
//! Two methods find the uses. The parser method (`parsed`) reads the SQL with sqlparser
//! in the warehouse's dialect, so strings, comments, aliases, look-alike names and
//! operator precedence are never mistaken. SQL that does not parse (unrendered Jinja, a
//! dialect feature sqlparser lacks) falls back to the token method (`tokens`). Every
//! finding says which method made it.
//!
//! A use is a cast of the column, arithmetic on it, a comparison of it with a literal,
//! or a function (or string operator) applied to it. Whether the new type breaks a use
//! is judged in `judge`, the same way for both methods, per dialect.

mod judge;
pub(super) mod origin;
mod parsed;
pub(super) mod tokens;

use std::ops::Range;

use serde::Serialize;

/// A changed column: its name and the type it has now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnChange {
    pub column: String,
    /// The column's new type. Empty when it is not known: uses are then reported
    /// without a judgement (every risk is [`Risk::Safe`]).
    pub new_type: String,
}

/// What one model's SQL does with the changed column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnFinding {
    /// The column name appears as an identifier (not only as an output alias).
    pub reads: bool,
    /// Every use of the column the new type could break, judged, in SQL order.
    pub uses: Vec<UseFinding>,
    /// How `reads` and the uses were found: [`PARSER`] or [`TOKENS`].
    pub method: &'static str,
}

/// One use of the changed column, and what the new type does to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UseFinding {
    pub kind: UseKind,
    /// Exact text as written in the SQL, e.g. `amount / 100`, `cast(p.amount as
    /// integer)`, `sum(amount)`, `amount > 0`.
    pub expression: String,
    /// The column reference inside `expression` as written, e.g. `p.amount`.
    pub column: String,
    pub risk: Risk,
    /// For people, e.g. "PostgreSQL has no operator text / integer: the model fails on
    /// its next run".
    pub reason: String,
    /// How the finding was made: [`PARSER`] or [`TOKENS`].
    pub method: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UseKind {
    /// `cast(c as T)`, `c::T`, `try_cast`, `safe_cast`.
    Cast,
    /// `c + x`, `c - x`, `c * x`, `c / x`, `c % x`, `-c`.
    Arithmetic,
    /// `c > 0`, `c = 'A-3'`: the column against a literal.
    Comparison,
    /// A numeric or string function of the column (`sum(c)`, `lower(c)`), or a string
    /// operator (`c || 'x'`, `c like 'x%'`).
    Function,
}

impl UseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UseKind::Cast => "cast",
            UseKind::Arithmetic => "arithmetic",
            UseKind::Comparison => "comparison",
            UseKind::Function => "function",
        }
    }
}

/// What the new type does to a use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "level", rename_all = "snake_case")]
pub enum Risk {
    /// Runs on every value of the new type (or was not judged: see the reason).
    Safe,
    /// Runs while every value converts to `target_type`; fails (or, for a literal,
    /// may fail) on the first that does not. The warehouse can count those values.
    DependsOnData { target_type: String },
    /// Fails on the new type whatever the data.
    Breaks,
}

impl Risk {
    pub fn is_breaks(&self) -> bool {
        matches!(self, Risk::Breaks)
    }
}

/// The method name for findings made by parsing the SQL with sqlparser.
pub const PARSER: &str = "sqlparser";
/// The method name for findings made by the token scan.
pub const TOKENS: &str = "tokens";

/// The SQL dialect a project's models are written in, from the manifest's
/// `metadata.adapter_type`. Casting syntax differs (`SAFE_CAST` is BigQuery's,
/// `TRY_CAST` Snowflake's), and so does what each engine converts on its own.
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

/// Where a use sits in a SQL text, as the token scan finds it: what a rewrite needs to
/// edit the model's file as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseSite {
    pub kind: UseKind,
    /// Byte range of the use's expression; `&sql[expression]` is its exact text.
    pub expression: Range<usize>,
    /// Byte range of the column reference inside it.
    pub column: Range<usize>,
    pub wants: Wants,
}

/// What a use needs the column to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wants {
    /// A number: arithmetic, a numeric function, a comparison with a number.
    Number,
    /// Text: a string function or operator, a comparison with a string literal.
    Text,
    /// A value that casts to this type (as written).
    Cast { target_type: String },
}

/// Every use of `column` in `sql` the token scan sees, in SQL order. It reads SQL as
/// written, Jinja included, so a rewrite can find a finding's expression in a model's
/// raw file even when the finding was made on its compiled SQL.
pub fn use_sites(sql: &str, column: &str) -> Vec<UseSite> {
    tokens::scan(sql, &column.to_lowercase())
        .uses
        .into_iter()
        .map(|found| UseSite {
            kind: found.detail.kind(),
            wants: found.detail.wants(),
            expression: found.span,
            column: found.column_span,
        })
        .collect()
}

/// A use of the column as a method saw it, before the judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FoundUse {
    detail: UseDetail,
    /// The exact text (from the token scan), or sqlparser's print when the token scan
    /// did not see this use.
    expression: String,
    /// Byte range of `expression` in the SQL; empty when the text is a print.
    span: Range<usize>,
    /// The column reference as written.
    column: String,
    /// Byte range of the column reference in the SQL. Its start identifies the use: a
    /// column reference has one parent expression, so at most one use.
    column_span: Range<usize>,
}

/// What a use does, with what the judgement needs to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UseDetail {
    Cast {
        /// As written, e.g. `integer`, `numeric(10, 2)`.
        target_type: String,
        /// `CAST` and `::` fail the model on a bad value; `TRY_CAST` and `SAFE_CAST`
        /// return null instead.
        fails_loudly: bool,
    },
    Arithmetic {
        /// `+`, `-`, `*`, `/` or `%`.
        op: String,
        /// The other operand; `None` for a unary sign (`-amount`).
        other: Option<Operand>,
        /// The column is the left operand.
        column_first: bool,
    },
    Comparison {
        /// `=`, `<>`, `!=`, `<`, `>`, `<=` or `>=`.
        op: String,
        literal: Literal,
        column_first: bool,
    },
    Function {
        /// Lowercase: `sum`, `lower`, ..., or the operators `||` and `like`.
        name: String,
    },
}

impl UseDetail {
    fn kind(&self) -> UseKind {
        match self {
            UseDetail::Cast { .. } => UseKind::Cast,
            UseDetail::Arithmetic { .. } => UseKind::Arithmetic,
            UseDetail::Comparison { .. } => UseKind::Comparison,
            UseDetail::Function { .. } => UseKind::Function,
        }
    }

    fn wants(&self) -> Wants {
        match self {
            UseDetail::Cast { target_type, .. } => Wants::Cast {
                target_type: target_type.clone(),
            },
            UseDetail::Arithmetic { .. } => Wants::Number,
            UseDetail::Comparison {
                literal: Literal::Number(_),
                ..
            } => Wants::Number,
            UseDetail::Comparison { .. } => Wants::Text,
            UseDetail::Function { name } if NUMERIC_FUNCTIONS.contains(&name.as_str()) => {
                Wants::Number
            }
            UseDetail::Function { .. } => Wants::Text,
        }
    }
}

/// The other side of an arithmetic operator.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    Literal(Literal),
    /// A column, the column itself, a function call, a Jinja block...: type unknown.
    Expression,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    /// As written, with its sign: `0`, `-1`, `100.5`, `1e3`.
    Number(String),
    /// The string's content, quotes removed: `A-3`.
    Text(String),
}

impl Literal {
    fn is_integer(&self) -> bool {
        matches!(self, Literal::Number(text) if text.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit()))
    }
}

/// Functions that need a number: on text they fail or convert.
const NUMERIC_FUNCTIONS: &[&str] = &[
    "sum",
    "avg",
    "round",
    "abs",
    "floor",
    "ceil",
    "ceiling",
    "trunc",
    "truncate",
    "sqrt",
    "cbrt",
    "power",
    "pow",
    "exp",
    "ln",
    "log",
    "log10",
    "sign",
    "mod",
    "div",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
];

/// Functions (and string operators) that need text, judged on their first argument.
const STRING_FUNCTIONS: &[&str] = &[
    "lower",
    "upper",
    "initcap",
    "substr",
    "substring",
    "left",
    "right",
    "trim",
    "ltrim",
    "rtrim",
    "btrim",
    "length",
    "char_length",
    "character_length",
    "replace",
    "split_part",
    "lpad",
    "rpad",
    "reverse",
    "strpos",
    "starts_with",
    "regexp_replace",
    "||",
    "like",
    "ilike",
];

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
        parsed::scan(sql, &column, dialect, &scan.uses)
    };
    match parsed {
        Some(parsed) => judged(parsed.reads, parsed.uses, change, dialect, PARSER),
        None => judged(scan.reads, scan.uses, change, dialect, TOKENS),
    }
}

/// The token method alone, whatever the SQL (its own tests use it).
#[cfg(test)]
fn find_with_tokens(sql: &str, change: &ColumnChange, dialect: Dialect) -> ColumnFinding {
    let scan = tokens::scan(sql, &change.column.to_lowercase());
    judged(scan.reads, scan.uses, change, dialect, TOKENS)
}

fn judged(
    reads: bool,
    found: Vec<FoundUse>,
    change: &ColumnChange,
    dialect: Dialect,
    method: &'static str,
) -> ColumnFinding {
    let uses = found
        .into_iter()
        .map(|found| {
            let (risk, reason) = judge::judge(&found.detail, &change.new_type, dialect);
            UseFinding {
                kind: found.detail.kind(),
                expression: found.expression,
                column: found.column,
                risk,
                reason,
                method,
            }
        })
        .collect();
    ColumnFinding {
        reads,
        uses,
        method,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(new_type: &str) -> ColumnChange {
        ColumnChange {
            column: "amount".into(),
            new_type: new_type.into(),
        }
    }

    #[test]
    fn plain_sql_is_parsed_and_jinja_falls_back_to_tokens() {
        let sql = "select cast(p.amount as integer) as n, p.amount / 100 as units from payments p";
        let finding = find_column_use(sql, &change("VARCHAR(12)"), Dialect::Postgres);
        assert_eq!(finding.method, PARSER);
        let kinds: Vec<(UseKind, &str, &str)> = finding
            .uses
            .iter()
            .map(|u| (u.kind, u.expression.as_str(), u.method))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (UseKind::Cast, "cast(p.amount as integer)", PARSER),
                (UseKind::Arithmetic, "p.amount / 100", PARSER),
            ]
        );
        assert_eq!(finding.uses[1].risk, Risk::Breaks);
        assert_eq!(finding.uses[1].column, "p.amount");

        let jinja = "select cast(p.amount as integer) as n, p.amount / 100 as units \
                     from {{ ref('payments') }} p";
        let finding = find_column_use(jinja, &change("VARCHAR(12)"), Dialect::Postgres);
        assert_eq!(finding.method, TOKENS);
        assert_eq!(finding.uses.len(), 2);
        assert!(finding.uses.iter().all(|u| u.method == TOKENS));
        assert_eq!(finding.uses[0].kind, UseKind::Cast);
        assert_eq!(finding.uses[0].expression, "cast(p.amount as integer)");
        assert_eq!(finding.uses[1].expression, "p.amount / 100");
        assert_eq!(finding.uses[1].risk, Risk::Breaks);
    }

    #[test]
    fn an_unknown_new_type_judges_nothing() {
        let sql = "select amount::int, amount / 100, sum(amount) from payments";
        let finding = find_column_use(sql, &change(""), Dialect::Postgres);
        let kinds: Vec<UseKind> = finding.uses.iter().map(|u| u.kind).collect();
        assert_eq!(
            kinds,
            vec![UseKind::Cast, UseKind::Arithmetic, UseKind::Function]
        );
        for found in &finding.uses {
            assert_eq!(found.risk, Risk::Safe);
            assert_eq!(found.reason, "new type unknown: not judged");
        }
    }

    #[test]
    fn use_sites_point_at_the_text_as_written() {
        let sql = "select {{ x }}, sum(P.Amount) as s from t where amount > 0";
        let sites = use_sites(sql, "AMOUNT");
        let texts: Vec<(UseKind, &str, &str, Wants)> = sites
            .iter()
            .map(|s| {
                (
                    s.kind,
                    &sql[s.expression.clone()],
                    &sql[s.column.clone()],
                    s.wants.clone(),
                )
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                (
                    UseKind::Function,
                    "sum(P.Amount)",
                    "P.Amount",
                    Wants::Number
                ),
                (UseKind::Comparison, "amount > 0", "amount", Wants::Number),
            ]
        );
        let sql = "select lower(amount), amount = 'A-3', amount || 'x', amount::int from t";
        let wants: Vec<Wants> = use_sites(sql, "amount")
            .into_iter()
            .map(|s| s.wants)
            .collect();
        assert_eq!(
            wants,
            vec![
                Wants::Text,
                Wants::Text,
                Wants::Text,
                Wants::Cast {
                    target_type: "int".into()
                }
            ]
        );
    }

    #[test]
    fn risks_serialize_with_a_level() {
        let json = serde_json::to_value(Risk::DependsOnData {
            target_type: "integer".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"level": "depends_on_data", "target_type": "integer"})
        );
        assert_eq!(
            serde_json::to_value(Risk::Breaks).unwrap(),
            serde_json::json!({"level": "breaks"})
        );
        assert_eq!(
            serde_json::to_value(UseKind::Arithmetic).unwrap(),
            serde_json::json!("arithmetic")
        );
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
