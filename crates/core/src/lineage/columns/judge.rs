//! The judgement: what a column's new type does to one use of it, per dialect.
//!
//! PostgreSQL converts nothing on its own: an operator or function that does not exist
//! for the new type fails the model on its next run. BigQuery does not convert either.
//! Snowflake converts text to a number (and a number to text) where an operator or
//! function needs it, so the model runs until the first value that does not convert.
//! The generic dialect is judged like Snowflake: it depends on the warehouse and on the
//! data. A cast from text to a strict type depends on the data in every dialect.

use super::{Dialect, Literal, Operand, Risk, UseDetail};

/// The risk of one use when the column's type becomes `new_type`, and why.
pub(super) fn judge(detail: &UseDetail, new_type: &str, dialect: Dialect) -> (Risk, String) {
    if new_type.trim().is_empty() {
        return (Risk::Safe, "new type unknown: not judged".to_string());
    }
    let Some(new) = family(new_type) else {
        return (
            Risk::Safe,
            format!("new type {} unknown: not judged", new_type.trim()),
        );
    };
    let judged = Judged {
        new,
        new_type: new_type.trim(),
        dialect,
    };
    match detail {
        UseDetail::Cast {
            target_type,
            fails_loudly,
        } => judged.cast(target_type, *fails_loudly),
        UseDetail::Arithmetic {
            op,
            other,
            column_first,
        } => judged.arithmetic(op, other.as_ref(), *column_first),
        UseDetail::Comparison {
            op,
            literal,
            column_first,
        } => judged.comparison(op, literal, *column_first),
        UseDetail::Function { name } => judged.function(name),
    }
}

/// What a type is, as far as conversions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Text,
    /// Whole numbers of this many bytes (2, 4 or 8).
    Integer {
        bytes: u8,
    },
    /// numeric, decimal, number: the digits it holds before the point, when declared.
    Exact {
        whole_digits: Option<u32>,
    },
    Float,
    Date,
    /// time, timestamp, datetime, with or without a zone.
    Timestamp,
    Boolean,
}

impl Family {
    fn is_number(self) -> bool {
        matches!(
            self,
            Family::Integer { .. } | Family::Exact { .. } | Family::Float
        )
    }

    fn is_temporal(self) -> bool {
        matches!(self, Family::Date | Family::Timestamp)
    }

    /// The type's name in the dialect's own error messages.
    fn name(self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Postgres | Dialect::Generic => match self {
                Family::Text => "text",
                Family::Integer { bytes: 2 } => "smallint",
                Family::Integer { bytes: 8 } => "bigint",
                Family::Integer { .. } => "integer",
                Family::Exact { .. } => "numeric",
                Family::Float => "double precision",
                Family::Date => "date",
                Family::Timestamp => "timestamp",
                Family::Boolean => "boolean",
            },
            Dialect::Snowflake => match self {
                Family::Text => "VARCHAR",
                Family::Integer { .. } | Family::Exact { .. } => "NUMBER",
                Family::Float => "FLOAT",
                Family::Date => "DATE",
                Family::Timestamp => "TIMESTAMP",
                Family::Boolean => "BOOLEAN",
            },
            Dialect::BigQuery => match self {
                Family::Text => "STRING",
                Family::Integer { .. } => "INT64",
                Family::Exact { .. } => "NUMERIC",
                Family::Float => "FLOAT64",
                Family::Date => "DATE",
                Family::Timestamp => "TIMESTAMP",
                Family::Boolean => "BOOL",
            },
        }
    }
}

/// The family of a type as written (`VARCHAR(12)`, `numeric(10, 2)`, `double
/// precision`, `int64`); `None` for a type we do not judge (json, variant, ...).
fn family(type_text: &str) -> Option<Family> {
    let lower = type_text.trim().to_lowercase();
    let base = lower
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or("");
    let family = match base {
        "varchar" | "char" | "character" | "text" | "string" | "nvarchar" | "nchar" | "bpchar"
        | "varchar2" | "nvarchar2" | "clob" => Family::Text,
        "tinyint" | "byteint" | "smallint" | "int2" => Family::Integer { bytes: 2 },
        "int" | "integer" | "int4" | "mediumint" => Family::Integer { bytes: 4 },
        "bigint" | "int8" | "int64" => Family::Integer { bytes: 8 },
        "number" | "numeric" | "decimal" | "dec" | "bignumeric" | "bigdecimal" => {
            let params: Vec<u32> = lower
                .split_once('(')
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(inside, _)| {
                    inside
                        .split(',')
                        .filter_map(|p| p.trim().parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            let whole_digits = match params.as_slice() {
                [precision] => Some(*precision),
                [precision, scale] => Some(precision.saturating_sub(*scale)),
                _ => None,
            };
            Family::Exact { whole_digits }
        }
        "float" | "float4" | "float8" | "float64" | "double" | "real" => Family::Float,
        "date" => Family::Date,
        "time" | "timetz" | "datetime" | "timestamp" | "timestamptz" | "timestamp_ntz"
        | "timestamp_ltz" | "timestamp_tz" | "smalldatetime" => Family::Timestamp,
        "bool" | "boolean" => Family::Boolean,
        _ => return None,
    };
    Some(family)
}

/// Decimal digits of the largest whole number a type holds.
fn whole_digits(family: Family) -> Option<u32> {
    match family {
        Family::Integer { bytes: 2 } => Some(5),
        Family::Integer { bytes: 4 } => Some(10),
        Family::Integer { .. } => Some(19),
        Family::Exact { whole_digits } => whole_digits,
        _ => None,
    }
}

const FAILS_NOW: &str = "the model fails on its next run";

/// The type of a literal in the dialect's messages.
fn literal_name(literal: &Literal, dialect: Dialect) -> &'static str {
    match literal {
        Literal::Number(_) if literal.is_integer() => Family::Integer { bytes: 4 }.name(dialect),
        // BigQuery reads `1.5` as a FLOAT64.
        Literal::Number(_) if dialect == Dialect::BigQuery => "FLOAT64",
        Literal::Number(_) => Family::Exact { whole_digits: None }.name(dialect),
        Literal::Text(_) => Family::Text.name(dialect),
    }
}

fn engine(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "PostgreSQL",
        Dialect::Snowflake => "Snowflake",
        Dialect::BigQuery => "BigQuery",
        Dialect::Generic => "the warehouse",
    }
}

fn depends(target_type: &str, reason: String) -> (Risk, String) {
    (
        Risk::DependsOnData {
            target_type: target_type.to_string(),
        },
        reason,
    )
}

fn breaks(reason: String) -> (Risk, String) {
    (Risk::Breaks, reason)
}

fn safe(reason: String) -> (Risk, String) {
    (Risk::Safe, reason)
}

struct Judged<'a> {
    new: Family,
    new_type: &'a str,
    dialect: Dialect,
}

impl Judged<'_> {
    fn new_name(&self) -> &'static str {
        self.new.name(self.dialect)
    }

    /// An operator written out as the engine's error would: `text / integer`,
    /// `- text`, or `/ for text` when the other operand's type is unknown.
    fn operator(&self, op: &str, other: Option<&str>, column_first: bool, unary: bool) -> String {
        let new = self.new_name();
        match (unary, other) {
            (true, _) => format!("operator {op} {new}"),
            (false, Some(other)) if column_first => format!("operator {new} {op} {other}"),
            (false, Some(other)) => format!("operator {other} {op} {new}"),
            (false, None) => format!("operator {op} for {new}"),
        }
    }

    /// A use that needs a number, on a column that is no longer one. `what` names the
    /// missing operator or function the way the dialect's error would.
    fn needs_a_number(&self, what: String) -> (Risk, String) {
        let new = self.new_name();
        match (self.dialect, self.new) {
            (Dialect::Postgres, _) => breaks(format!("PostgreSQL has no {what}: {FAILS_NOW}")),
            (Dialect::BigQuery, Family::Text) => breaks(format!(
                "BigQuery has no {what} (it never converts text to a number): {FAILS_NOW}"
            )),
            (Dialect::BigQuery | Dialect::Snowflake, _) if self.new != Family::Text => breaks(
                format!("{} has no {what}: {FAILS_NOW}", engine(self.dialect)),
            ),
            (Dialect::Snowflake, _) => depends(
                "number",
                format!(
                    "Snowflake converts the {new} to a NUMBER: the model fails at run time \
                     on the first value that is not numeric"
                ),
            ),
            _ => depends(
                "numeric",
                format!(
                    "the {new} must convert to a number, if the warehouse converts it at \
                     all: the model fails at run time on the first value that is not numeric"
                ),
            ),
        }
    }

    /// A use that needs text, on a column that is no longer text.
    fn needs_text(&self, name: &str) -> (Risk, String) {
        let new = self.new_name();
        let as_before = "it runs, but the text may not read as before (no leading zeros, \
                         other decimals or date formats)";
        let what = match name {
            "like" | "ilike" => format!("operator {new} {} text", name.to_uppercase()),
            "||" => format!("operator {new} || text"),
            _ => format!("function {name}({new})"),
        };
        match self.dialect {
            // PostgreSQL has `anynonarray || text`: the other side decides.
            Dialect::Postgres if name == "||" => depends(
                "text",
                format!("PostgreSQL writes the {new} as text for || with text: {as_before}"),
            ),
            Dialect::Postgres => breaks(format!("PostgreSQL has no {what}: {FAILS_NOW}")),
            Dialect::BigQuery => {
                let what = match name {
                    "like" | "ilike" | "||" => {
                        format!("operator {new} {} STRING", name.to_uppercase())
                    }
                    _ => format!("function {}({new})", name.to_uppercase()),
                };
                breaks(format!(
                    "BigQuery has no {what} (it never converts a {new} to text): {FAILS_NOW}"
                ))
            }
            Dialect::Snowflake => depends(
                "varchar",
                format!("Snowflake writes the {new} as text: {as_before}"),
            ),
            Dialect::Generic => depends(
                "text",
                format!("the warehouse must write the {new} as text: {as_before}, if it runs"),
            ),
        }
    }

    fn cast(&self, target_type: &str, fails_loudly: bool) -> (Risk, String) {
        let Some(target) = family(target_type) else {
            return safe(format!("cast to {target_type}: not judged"));
        };
        let new = self.new_name();
        let engine = engine(self.dialect);
        let gives_null = || match self.dialect {
            Dialect::BigQuery => "SAFE_CAST",
            _ => "TRY_CAST",
        };
        if target == Family::Text {
            return safe(format!("every {new} value can be written as {target_type}"));
        }
        if self.new == Family::Text {
            if !fails_loudly {
                return safe(format!(
                    "{} gives null for a value that does not convert",
                    gives_null()
                ));
            }
            let instead = match self.dialect {
                Dialect::Snowflake => " (TRY_CAST would give null)",
                Dialect::BigQuery => " (SAFE_CAST would give null)",
                _ => "",
            };
            return depends(
                target_type,
                format!(
                    "runs while every value converts to {target_type}; {engine} fails the \
                     model on the first value that does not convert, e.g. 'A-3'{instead}"
                ),
            );
        }
        if self.dialect == Dialect::Snowflake && !fails_loudly {
            return breaks(format!(
                "Snowflake's TRY_CAST takes only text: TRY_CAST of a {new} fails: {FAILS_NOW}"
            ));
        }
        let target_name = target.name(self.dialect);
        let cannot = || match self.dialect {
            Dialect::Generic => depends(
                target_type,
                format!(
                    "not every warehouse casts {new} to {target_name}: check this one \
                     (and the values)"
                ),
            ),
            _ => breaks(format!(
                "{engine} cannot cast {new} to {target_name}: {FAILS_NOW}"
            )),
        };
        match (self.new, target) {
            (new_family, target) if new_family.is_number() && target.is_number() => {
                self.number_to_number(target, target_type, fails_loudly)
            }
            (a, b) if a == b || (a.is_temporal() && b.is_temporal()) => {
                safe(format!("{new} converts to {target_name} as before"))
            }
            (Family::Integer { bytes }, Family::Boolean)
            | (Family::Boolean, Family::Integer { bytes }) => match self.dialect {
                Dialect::Postgres if bytes == 4 => {
                    safe(format!("PostgreSQL casts {new} to {target_name}"))
                }
                Dialect::Postgres => breaks(format!(
                    "PostgreSQL casts only integer to and from boolean, not {}: {FAILS_NOW}",
                    if bytes == 2 { "smallint" } else { "bigint" }
                )),
                Dialect::Generic => cannot(),
                _ => safe(format!("{engine} casts {new} to {target_name}")),
            },
            (Family::Exact { .. } | Family::Float, Family::Boolean)
            | (Family::Boolean, Family::Exact { .. } | Family::Float) => match self.dialect {
                Dialect::Snowflake => safe(format!("Snowflake casts {new} to {target_name}")),
                _ => cannot(),
            },
            (number, Family::Timestamp)
                if number.is_number() && self.dialect == Dialect::Snowflake =>
            {
                safe(format!(
                    "Snowflake reads the {new} as seconds since 1970: it runs; check it still \
                     means what it did"
                ))
            }
            _ => cannot(),
        }
    }

    fn number_to_number(
        &self,
        target: Family,
        target_type: &str,
        fails_loudly: bool,
    ) -> (Risk, String) {
        let new = self.new_name();
        let fits = match target {
            Family::Float => true,
            Family::Exact { whole_digits: None } => true,
            // Snowflake's integer types are all NUMBER(38,0).
            Family::Integer { .. } if self.dialect == Dialect::Snowflake => {
                self.new != Family::Float
            }
            Family::Integer { bytes } => {
                matches!(self.new, Family::Integer { bytes: new_bytes } if new_bytes <= bytes)
            }
            Family::Exact {
                whole_digits: Some(room),
            } => whole_digits(self.new).is_some_and(|digits| digits <= room),
            _ => false,
        };
        if fits {
            return safe(format!("every {} fits in {target_type}", self.new_type));
        }
        if !fails_loudly {
            return safe(format!(
                "gives null for a {new} that does not fit in {target_type}"
            ));
        }
        depends(
            target_type,
            format!(
                "runs while every value fits in {target_type}; {} fails the model on the \
                 first that does not",
                engine(self.dialect)
            ),
        )
    }

    fn arithmetic(&self, op: &str, other: Option<&Operand>, column_first: bool) -> (Risk, String) {
        let new = self.new_name();
        if self.new.is_number() {
            return safe(format!("{new} is a number: {op} works on it as before"));
        }
        let other_literal = match other {
            Some(Operand::Literal(literal)) => Some(literal),
            _ => None,
        };
        let other_is_whole = other_literal.is_none_or(Literal::is_integer);
        let days = self.new == Family::Date
            && other.is_some()
            && other_is_whole
            && (op == "+" || (op == "-" && column_first));
        if days {
            return safe(format!(
                "date {op} integer counts days: it runs; check it still means what it did"
            ));
        }
        let other_name = other_literal.map(|literal| literal_name(literal, self.dialect));
        let what = self.operator(op, other_name, column_first, other.is_none());
        self.needs_a_number(what)
    }

    fn comparison(&self, op: &str, literal: &Literal, column_first: bool) -> (Risk, String) {
        let new = self.new_name();
        let engine = engine(self.dialect);
        match literal {
            Literal::Number(_) if self.new.is_number() => {
                safe(format!("{new} compared with a number, as before"))
            }
            Literal::Number(_) => {
                let other = literal_name(literal, self.dialect);
                self.needs_a_number(self.operator(op, Some(other), column_first, false))
            }
            Literal::Text(_) if self.new == Family::Text => {
                safe(format!("{new} compared with text"))
            }
            Literal::Text(value) => {
                let reads = reads_as(value, self.new);
                let coerced = match self.dialect {
                    // BigQuery reads a string literal only as a date or time.
                    Dialect::BigQuery => self.new.is_temporal(),
                    _ => true,
                };
                match (reads, coerced) {
                    (true, true) => safe(format!("{engine} reads '{value}' as {new}")),
                    (_, false) => breaks(format!(
                        "BigQuery has no operator {new} {op} STRING (it never reads a string \
                         as a {new}): {FAILS_NOW}"
                    )),
                    (false, true) if self.dialect == Dialect::Generic => depends(
                        self.new_type,
                        format!("the warehouse must read '{value}' as {}: it cannot", self.new_type),
                    ),
                    (false, true) => breaks(format!(
                        "{engine} cannot read '{value}' as {new} (invalid input syntax): {FAILS_NOW}"
                    )),
                }
            }
        }
    }

    fn function(&self, name: &str) -> (Risk, String) {
        let new = self.new_name();
        if STRING_OPERATIONS.contains(&name) || !is_numeric_function(name) {
            if self.new == Family::Text {
                return safe(format!("{name} works on {new} as before"));
            }
            return self.needs_text(name);
        }
        if self.new.is_number() {
            return safe(format!("{name} works on {new} as before"));
        }
        let what = match self.dialect {
            Dialect::BigQuery => format!("function {}({new})", name.to_uppercase()),
            _ => format!("function {name}({new})"),
        };
        self.needs_a_number(what)
    }
}

/// String operators among the function uses.
const STRING_OPERATIONS: &[&str] = &["||", "like", "ilike"];

fn is_numeric_function(name: &str) -> bool {
    super::NUMERIC_FUNCTIONS.contains(&name)
}

/// Whether a string literal reads as a value of the family.
fn reads_as(value: &str, family: Family) -> bool {
    let value = value.trim();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = value.trim_start_matches(['-', '+']);
    match family {
        Family::Text => true,
        Family::Integer { .. } => digits(unsigned),
        Family::Exact { .. } | Family::Float => {
            let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
            (digits(whole) || digits(fraction))
                && (whole.is_empty() || digits(whole))
                && (fraction.is_empty() || digits(fraction))
        }
        // `YYYY-MM-DD`, with a time after it or not.
        Family::Date | Family::Timestamp => {
            let bytes = value.as_bytes();
            let digit_run =
                |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
            bytes.len() >= 10
                && digit_run(0..4)
                && bytes[4] == b'-'
                && digit_run(5..7)
                && bytes[7] == b'-'
                && digit_run(8..10)
        }
        Family::Boolean => matches!(
            value.to_lowercase().as_str(),
            "true" | "false" | "t" | "f" | "yes" | "no" | "y" | "n" | "on" | "off" | "1" | "0"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIALECTS: [Dialect; 4] = [
        Dialect::Postgres,
        Dialect::Snowflake,
        Dialect::BigQuery,
        Dialect::Generic,
    ];

    fn depends(target: &str) -> Risk {
        Risk::DependsOnData {
            target_type: target.into(),
        }
    }

    fn cast(target: &str) -> UseDetail {
        UseDetail::Cast {
            target_type: target.into(),
            fails_loudly: true,
        }
    }

    fn try_cast(target: &str) -> UseDetail {
        UseDetail::Cast {
            target_type: target.into(),
            fails_loudly: false,
        }
    }

    fn arithmetic(op: &str, other: Option<Literal>) -> UseDetail {
        UseDetail::Arithmetic {
            op: op.into(),
            other: Some(other.map_or(Operand::Expression, Operand::Literal)),
            column_first: true,
        }
    }

    fn number(text: &str) -> Literal {
        Literal::Number(text.into())
    }

    fn text(value: &str) -> Literal {
        Literal::Text(value.into())
    }

    fn compare(op: &str, literal: Literal) -> UseDetail {
        UseDetail::Comparison {
            op: op.into(),
            literal,
            column_first: true,
        }
    }

    fn function(name: &str) -> UseDetail {
        UseDetail::Function { name: name.into() }
    }

    /// The risk in each dialect, in the order of `DIALECTS`.
    fn risks(detail: &UseDetail, new_type: &str) -> Vec<Risk> {
        DIALECTS
            .iter()
            .map(|&dialect| judge(detail, new_type, dialect).0)
            .collect()
    }

    fn reason(detail: &UseDetail, new_type: &str, dialect: Dialect) -> String {
        judge(detail, new_type, dialect).1
    }

    #[test]
    fn arithmetic_on_text() {
        let divide = arithmetic("/", Some(number("100")));
        assert_eq!(
            risks(&divide, "varchar(12)"),
            vec![
                Risk::Breaks,
                depends("number"),
                Risk::Breaks,
                depends("numeric")
            ]
        );
        assert_eq!(
            reason(&divide, "text", Dialect::Postgres),
            "PostgreSQL has no operator text / integer: the model fails on its next run"
        );
        assert!(reason(&divide, "STRING", Dialect::BigQuery)
            .starts_with("BigQuery has no operator STRING / INT64"));
        assert!(reason(&divide, "VARCHAR", Dialect::Snowflake)
            .contains("fails at run time on the first value that is not numeric"));
        // The column second, a decimal, another column, a unary minus.
        let second = UseDetail::Arithmetic {
            op: "-".into(),
            other: Some(Operand::Literal(number("1.5"))),
            column_first: false,
        };
        assert!(reason(&second, "text", Dialect::Postgres)
            .starts_with("PostgreSQL has no operator numeric - text"));
        let times_rate = arithmetic("*", None);
        assert_eq!(risks(&times_rate, "text")[0], Risk::Breaks);
        assert!(reason(&times_rate, "text", Dialect::Postgres)
            .starts_with("PostgreSQL has no operator * for text"));
        let negated = UseDetail::Arithmetic {
            op: "-".into(),
            other: None,
            column_first: false,
        };
        assert_eq!(
            risks(&negated, "text"),
            vec![
                Risk::Breaks,
                depends("number"),
                Risk::Breaks,
                depends("numeric")
            ]
        );
    }

    #[test]
    fn comparison_of_text_with_a_number() {
        for op in ["=", ">", "<=", "<>"] {
            let positive = compare(op, number("0"));
            assert_eq!(
                risks(&positive, "text"),
                vec![
                    Risk::Breaks,
                    depends("number"),
                    Risk::Breaks,
                    depends("numeric")
                ],
                "{op}"
            );
        }
        assert_eq!(
            reason(&compare(">", number("0")), "text", Dialect::Postgres),
            "PostgreSQL has no operator text > integer: the model fails on its next run"
        );
        // Text against a string literal is text against text.
        assert_eq!(
            risks(&compare("=", text("A-3")), "text"),
            vec![Risk::Safe; 4]
        );
    }

    #[test]
    fn numeric_functions_on_text() {
        for name in ["sum", "avg", "round", "abs", "floor", "ceil"] {
            assert_eq!(
                risks(&function(name), "string"),
                vec![
                    Risk::Breaks,
                    depends("number"),
                    Risk::Breaks,
                    depends("numeric")
                ],
                "{name}"
            );
        }
        assert_eq!(
            reason(&function("sum"), "text", Dialect::Postgres),
            "PostgreSQL has no function sum(text): the model fails on its next run"
        );
        assert!(reason(&function("sum"), "STRING", Dialect::BigQuery)
            .starts_with("BigQuery has no function SUM(STRING)"));
    }

    #[test]
    fn casts_of_text_depend_on_the_data_unless_they_give_null() {
        for target in ["integer", "numeric(10, 2)", "date", "boolean", "int64"] {
            assert_eq!(
                risks(&cast(target), "varchar(12)"),
                vec![depends(target); 4],
                "{target}"
            );
            assert_eq!(
                risks(&try_cast(target), "varchar(12)"),
                vec![Risk::Safe; 4],
                "{target}"
            );
        }
        assert!(reason(&cast("integer"), "text", Dialect::Postgres)
            .contains("fails the model on the first value that does not convert"));
        assert!(reason(&cast("int"), "varchar", Dialect::Snowflake).contains("TRY_CAST"));
        assert!(reason(&cast("int64"), "string", Dialect::BigQuery).contains("SAFE_CAST"));
        for target in ["varchar", "text", "string", "varchar(20)"] {
            assert_eq!(
                risks(&cast(target), "text"),
                vec![Risk::Safe; 4],
                "{target}"
            );
        }
    }

    #[test]
    fn string_uses_of_a_number() {
        for name in ["lower", "upper", "substr", "trim", "like"] {
            assert_eq!(
                risks(&function(name), "integer"),
                vec![
                    Risk::Breaks,
                    depends("varchar"),
                    Risk::Breaks,
                    depends("text")
                ],
                "{name}"
            );
        }
        assert_eq!(
            reason(&function("lower"), "integer", Dialect::Postgres),
            "PostgreSQL has no function lower(integer): the model fails on its next run"
        );
        assert!(reason(&function("like"), "bigint", Dialect::Postgres)
            .starts_with("PostgreSQL has no operator bigint LIKE text"));
        // PostgreSQL has `anynonarray || text`: the number is written as text.
        assert_eq!(
            risks(&function("||"), "integer"),
            vec![
                depends("text"),
                depends("varchar"),
                Risk::Breaks,
                depends("text")
            ]
        );
        assert!(reason(&function("lower"), "int64", Dialect::BigQuery)
            .starts_with("BigQuery has no function LOWER(INT64)"));
        assert!(reason(&function("like"), "int64", Dialect::BigQuery)
            .starts_with("BigQuery has no operator INT64 LIKE STRING"));
        // Still text: nothing changes.
        assert_eq!(risks(&function("lower"), "text"), vec![Risk::Safe; 4]);
    }

    #[test]
    fn a_number_to_a_wider_number_is_safe() {
        for new_type in ["bigint", "numeric", "numeric(20, 2)", "float8"] {
            for detail in [
                arithmetic("/", Some(number("100"))),
                compare(">", number("0")),
                function("sum"),
                cast("numeric"),
                cast("double precision"),
            ] {
                assert_eq!(
                    risks(&detail, new_type),
                    vec![Risk::Safe; 4],
                    "{detail:?} on {new_type}"
                );
            }
        }
        assert_eq!(risks(&cast("bigint"), "integer"), vec![Risk::Safe; 4]);
    }

    #[test]
    fn a_number_cast_to_a_narrower_number_depends_on_the_data() {
        // Snowflake's integer types are all NUMBER(38,0).
        assert_eq!(
            risks(&cast("integer"), "bigint"),
            vec![
                depends("integer"),
                Risk::Safe,
                depends("integer"),
                depends("integer")
            ]
        );
        assert_eq!(
            risks(&cast("numeric(6, 2)"), "integer")[0],
            depends("numeric(6, 2)")
        );
        assert_eq!(risks(&cast("numeric(12, 2)"), "integer")[0], Risk::Safe);
        // SAFE_CAST gives null out of range; Snowflake's TRY_CAST takes only text.
        assert_eq!(
            risks(&try_cast("integer"), "bigint"),
            vec![Risk::Safe, Risk::Breaks, Risk::Safe, Risk::Safe]
        );
        assert!(reason(&try_cast("int"), "number", Dialect::Snowflake)
            .starts_with("Snowflake's TRY_CAST takes only text"));
    }

    #[test]
    fn a_number_compared_with_a_string_literal() {
        assert_eq!(
            risks(&compare("=", text("12")), "integer"),
            vec![Risk::Safe, Risk::Safe, Risk::Breaks, Risk::Safe]
        );
        assert_eq!(
            risks(&compare("=", text("A-3")), "integer"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("integer")]
        );
        assert_eq!(
            reason(&compare("=", text("A-3")), "integer", Dialect::Postgres),
            "PostgreSQL cannot read 'A-3' as integer (invalid input syntax): \
             the model fails on its next run"
        );
        // A decimal literal does not read as an integer, but does as a numeric.
        assert_eq!(risks(&compare("=", text("1.5")), "int")[0], Risk::Breaks);
        assert_eq!(risks(&compare("=", text("1.5")), "numeric")[0], Risk::Safe);
    }

    #[test]
    fn dates() {
        // date ± integer counts days where the engines know it.
        assert_eq!(
            risks(&arithmetic("+", Some(number("1"))), "date"),
            vec![Risk::Safe; 4]
        );
        assert_eq!(
            risks(&arithmetic("*", Some(number("2"))), "date"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("numeric")]
        );
        assert_eq!(
            reason(
                &arithmetic("*", Some(number("2"))),
                "date",
                Dialect::Postgres
            ),
            "PostgreSQL has no operator date * integer: the model fails on its next run"
        );
        assert_eq!(
            risks(&arithmetic("+", Some(number("1"))), "timestamp")[0],
            Risk::Breaks
        );
        assert_eq!(
            risks(&compare(">", number("0")), "date"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("numeric")]
        );
        assert_eq!(
            risks(&compare(">=", text("2024-01-31")), "date"),
            vec![Risk::Safe; 4]
        );
        assert_eq!(
            risks(&compare(">=", text("année 2024-1")), "date")[0],
            Risk::Breaks
        );
        assert_eq!(
            risks(&compare(">=", text("soon")), "date"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("date")]
        );
        assert_eq!(
            risks(&function("sum"), "date"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("numeric")]
        );
        assert_eq!(
            risks(&cast("integer"), "date"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("integer")]
        );
        assert_eq!(
            reason(&cast("integer"), "date", Dialect::Postgres),
            "PostgreSQL cannot cast date to integer: the model fails on its next run"
        );
        assert_eq!(risks(&cast("timestamp"), "date"), vec![Risk::Safe; 4]);
        assert_eq!(risks(&cast("varchar"), "date"), vec![Risk::Safe; 4]);
    }

    #[test]
    fn booleans() {
        assert_eq!(
            risks(&arithmetic("+", Some(number("1"))), "boolean"),
            vec![Risk::Breaks, Risk::Breaks, Risk::Breaks, depends("numeric")]
        );
        assert_eq!(
            risks(&compare("=", text("yes")), "boolean"),
            vec![Risk::Safe, Risk::Safe, Risk::Breaks, Risk::Safe]
        );
        // PostgreSQL casts integer (int4) to boolean, not bigint or numeric.
        assert_eq!(
            risks(&cast("boolean"), "integer"),
            vec![Risk::Safe, Risk::Safe, Risk::Safe, depends("boolean")]
        );
        assert_eq!(
            risks(&cast("boolean"), "numeric"),
            vec![Risk::Breaks, Risk::Safe, Risk::Breaks, depends("boolean")]
        );
        assert_eq!(risks(&cast("boolean"), "bool"), vec![Risk::Safe; 4]);
    }

    #[test]
    fn an_unknown_new_type_judges_nothing() {
        for detail in [
            cast("integer"),
            arithmetic("/", Some(number("100"))),
            compare(">", number("0")),
            function("sum"),
        ] {
            for dialect in DIALECTS {
                assert_eq!(
                    judge(&detail, "", dialect),
                    (Risk::Safe, "new type unknown: not judged".to_string())
                );
                assert_eq!(
                    judge(&detail, "geography", dialect),
                    (
                        Risk::Safe,
                        "new type geography unknown: not judged".to_string()
                    )
                );
            }
        }
        // A cast to a type we do not know is not judged either.
        assert_eq!(
            judge(&cast("variant"), "text", Dialect::Snowflake),
            (Risk::Safe, "cast to variant: not judged".to_string())
        );
    }
}
