//! The parser method: the SQL is parsed with sqlparser and the expression tree is
//! walked for references to the column and the expressions they are a direct operand
//! or argument of.
//!
//! sqlparser prints expressions in its own spelling (`CAST(p.amount AS INTEGER)`), and
//! its spans do not cover a whole cast, call or parenthesis. A proposal has to find the
//! use in the model's file as written, so the exact text comes from the token scan's
//! use of the same column reference (the parser's span of a plain identifier is exact);
//! only when the scan missed it do we fall back to sqlparser's print.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, CastKind, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Spanned, UnaryOperator, Value,
};
use sqlparser::dialect::{
    BigQueryDialect, Dialect as SqlDialect, GenericDialect, PostgreSqlDialect, SnowflakeDialect,
};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Location;

use super::{Dialect, FoundUse, Literal, Operand, UseDetail, NUMERIC_FUNCTIONS, STRING_FUNCTIONS};

pub(super) struct Scan {
    pub reads: bool,
    pub uses: Vec<FoundUse>,
}

/// `None` when the SQL does not parse in `dialect`. `column` must be lowercase;
/// `token_uses` are the token scan's uses in the same SQL, for their exact text.
pub(super) fn scan(
    sql: &str,
    column: &str,
    dialect: Dialect,
    token_uses: &[FoundUse],
) -> Option<Scan> {
    let statements = Parser::parse_sql(sql_dialect(dialect).as_ref(), sql).ok()?;
    let line_starts = line_starts(sql);
    let mut scan = Scan {
        reads: false,
        uses: Vec::new(),
    };
    let _ = visit_expressions(&statements, |expr: &Expr| {
        if is_column_reference(expr, column) {
            scan.reads = true;
        }
        for (reference, detail) in uses_in(expr, column) {
            let column_at = byte_offset(sql, &line_starts, reference.span().start);
            let exact = column_at.and_then(|at| {
                token_uses.iter().find(|found| {
                    found.column_span.start == at && found.detail.kind() == detail.kind()
                })
            });
            scan.uses.push(match exact {
                Some(found) => FoundUse {
                    // The cast's kind is the parser's to say; the rest is the same use.
                    detail: match (&found.detail, &detail) {
                        (
                            UseDetail::Cast { target_type, .. },
                            UseDetail::Cast { fails_loudly, .. },
                        ) => UseDetail::Cast {
                            target_type: target_type.clone(),
                            fails_loudly: *fails_loudly,
                        },
                        (written, _) => written.clone(),
                    },
                    ..found.clone()
                },
                None => {
                    let at = column_at.unwrap_or(0);
                    FoundUse {
                        detail,
                        expression: expr.to_string(),
                        span: at..at,
                        column: reference.to_string(),
                        column_span: at..at,
                    }
                }
            });
        }
        ControlFlow::<()>::Continue(())
    });
    // The walk visits a parent before its operands; findings read in SQL order.
    scan.uses.sort_by_key(|found| found.column_span.start);
    Some(scan)
}

/// The uses `expr` makes of the column as a direct operand or argument, each with the
/// column reference.
fn uses_in<'a>(expr: &'a Expr, column: &str) -> Vec<(&'a Expr, UseDetail)> {
    let is_column = |e: &Expr| is_column_reference(e, column);
    let mut uses = Vec::new();
    match expr {
        Expr::Cast {
            kind,
            expr: argument,
            data_type,
            ..
        } if is_column(argument) => uses.push((
            argument.as_ref(),
            UseDetail::Cast {
                target_type: data_type.to_string(),
                fails_loudly: fails_loudly(kind),
            },
        )),
        Expr::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr: operand,
        } if is_column(operand) => uses.push((
            operand.as_ref(),
            UseDetail::Arithmetic {
                op: op.to_string(),
                other: None,
                column_first: false,
            },
        )),
        Expr::BinaryOp { left, op, right } => {
            for (side, other, column_first) in [(left, right, true), (right, left, false)] {
                if !is_column(side) {
                    continue;
                }
                let detail = match op {
                    BinaryOperator::Plus
                    | BinaryOperator::Minus
                    | BinaryOperator::Multiply
                    | BinaryOperator::Divide
                    | BinaryOperator::Modulo => UseDetail::Arithmetic {
                        op: op.to_string(),
                        other: Some(literal(other).map_or(Operand::Expression, Operand::Literal)),
                        column_first,
                    },
                    BinaryOperator::Eq
                    | BinaryOperator::NotEq
                    | BinaryOperator::Lt
                    | BinaryOperator::Gt
                    | BinaryOperator::LtEq
                    | BinaryOperator::GtEq => match literal(other) {
                        Some(literal) => UseDetail::Comparison {
                            op: op.to_string(),
                            literal,
                            column_first,
                        },
                        None => continue,
                    },
                    BinaryOperator::StringConcat => UseDetail::Function {
                        name: "||".to_string(),
                    },
                    _ => continue,
                };
                uses.push((side.as_ref(), detail));
            }
        }
        Expr::Like { expr: operand, .. } if is_column(operand) => uses.push((
            operand.as_ref(),
            UseDetail::Function {
                name: "like".to_string(),
            },
        )),
        Expr::ILike { expr: operand, .. } if is_column(operand) => uses.push((
            operand.as_ref(),
            UseDetail::Function {
                name: "ilike".to_string(),
            },
        )),
        Expr::Ceil { expr: operand, .. } | Expr::Floor { expr: operand, .. }
            if is_column(operand) =>
        {
            let name = if matches!(expr, Expr::Ceil { .. }) {
                "ceil"
            } else {
                "floor"
            };
            uses.push((
                operand.as_ref(),
                UseDetail::Function {
                    name: name.to_string(),
                },
            ));
        }
        Expr::Substring { expr: operand, .. } if is_column(operand) => uses.push((
            operand.as_ref(),
            UseDetail::Function {
                name: "substring".to_string(),
            },
        )),
        Expr::Trim { expr: operand, .. } if is_column(operand) => uses.push((
            operand.as_ref(),
            UseDetail::Function {
                name: "trim".to_string(),
            },
        )),
        Expr::Function(function) => {
            let Some(name) = function
                .name
                .0
                .last()
                .and_then(|part| part.as_ident())
                .map(|ident| ident.value.to_lowercase())
            else {
                return uses;
            };
            let FunctionArguments::List(list) = &function.args else {
                return uses;
            };
            let numeric = NUMERIC_FUNCTIONS.contains(&name.as_str());
            let string = STRING_FUNCTIONS.contains(&name.as_str());
            for (position, argument) in list.args.iter().enumerate() {
                let FunctionArg::Unnamed(FunctionArgExpr::Expr(argument)) = argument else {
                    continue;
                };
                if is_column(argument) && (numeric || (string && position == 0)) {
                    uses.push((argument, UseDetail::Function { name: name.clone() }));
                }
            }
        }
        _ => {}
    }
    uses
}

/// A number (with its sign) or a string literal.
fn literal(expr: &Expr) -> Option<Literal> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(number, _) => Some(Literal::Number(number.to_string())),
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => {
                Some(Literal::Text(text.clone()))
            }
            _ => None,
        },
        Expr::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr,
        } => match literal(expr)? {
            Literal::Number(number) => Some(Literal::Number(format!("{op}{number}"))),
            Literal::Text(_) => None,
        },
        _ => None,
    }
}

pub(super) fn sql_dialect(dialect: Dialect) -> Box<dyn SqlDialect> {
    match dialect {
        Dialect::Snowflake => Box::new(SnowflakeDialect),
        Dialect::BigQuery => Box::new(BigQueryDialect),
        Dialect::Postgres => Box::new(PostgreSqlDialect {}),
        Dialect::Generic => Box::new(GenericDialect {}),
    }
}

/// `CAST` and `::` fail the model on a bad value; `TRY_CAST` and `SAFE_CAST` give null.
fn fails_loudly(kind: &CastKind) -> bool {
    matches!(kind, CastKind::Cast | CastKind::DoubleColon)
}

/// `col` or `alias.col` (any number of qualifiers), compared without case.
fn is_column_reference(expr: &Expr, column: &str) -> bool {
    let last = match expr {
        Expr::Identifier(ident) => ident,
        Expr::CompoundIdentifier(idents) => match idents.last() {
            Some(ident) => ident,
            None => return false,
        },
        _ => return false,
    };
    last.value.to_lowercase() == column
}

/// Byte offset where each line starts.
fn line_starts(sql: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(at, _)| at + 1))
        .collect()
}

/// sqlparser locations are 1-based lines and characters; line 0 means "no location".
fn byte_offset(sql: &str, line_starts: &[usize], location: Location) -> Option<usize> {
    let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
    let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
    let start = *line_starts.get(line)?;
    sql[start..]
        .char_indices()
        .nth(column)
        .map(|(offset, _)| start + offset)
}

#[cfg(test)]
mod tests {
    use super::super::{tokens, UseKind};
    use super::*;

    fn parse(sql: &str, dialect: Dialect) -> Option<Scan> {
        let token_uses = tokens::scan(sql, "amount").uses;
        scan(sql, "amount", dialect, &token_uses)
    }

    /// (kind, exact text) of each use the parser finds.
    fn uses(sql: &str, dialect: Dialect) -> Vec<(UseKind, String)> {
        parse(sql, dialect)
            .unwrap()
            .uses
            .into_iter()
            .map(|u| (u.detail.kind(), u.expression))
            .collect()
    }

    #[test]
    fn casts_in_every_spelling_keep_their_text() {
        let sql = "select\n  CAST(p.Amount AS integer) as a,\n  amount::int as b,\n  \
                   try_cast(amount as number) as c\nfrom payments p";
        let scan = parse(sql, Dialect::Snowflake).unwrap();
        assert!(scan.reads);
        let casts: Vec<(&str, UseDetail)> = scan
            .uses
            .iter()
            .map(|c| (c.expression.as_str(), c.detail.clone()))
            .collect();
        let cast = |target: &str, fails_loudly| UseDetail::Cast {
            target_type: target.into(),
            fails_loudly,
        };
        assert_eq!(
            casts,
            vec![
                ("CAST(p.Amount AS integer)", cast("integer", true)),
                ("amount::int", cast("int", true)),
                ("try_cast(amount as number)", cast("number", false)),
            ]
        );
    }

    #[test]
    fn safe_cast_in_bigquery() {
        let sql = "select safe_cast(t.amount as int64) as n from `p.d.payments` t";
        let scan = parse(sql, Dialect::BigQuery).unwrap();
        assert_eq!(scan.uses.len(), 1);
        assert_eq!(scan.uses[0].expression, "safe_cast(t.amount as int64)");
        assert!(matches!(
            scan.uses[0].detail,
            UseDetail::Cast {
                fails_loudly: false,
                ..
            }
        ));
    }

    #[test]
    fn aliases_strings_and_comments_are_not_reads() {
        let sql = "-- amount / 100\nselect 'amount > 0' as label, cast(x as int) as amount from t";
        let scan = parse(sql, Dialect::Postgres).unwrap();
        assert!(!scan.reads);
        assert!(scan.uses.is_empty());
    }

    #[test]
    fn a_parenthesised_argument_is_not_a_direct_use() {
        // The token method does not count it either: both methods agree on what a
        // use of the column is, so switching method never changes a verdict.
        let scan = parse(
            "select (amount)::int, (amount) / 100 from t",
            Dialect::Postgres,
        )
        .unwrap();
        assert!(scan.reads);
        assert!(scan.uses.is_empty());
    }

    #[test]
    fn text_after_multibyte_characters_is_found() {
        let sql = "select 'größe' as g,\n  'è' as e, cast(amount as int), amount / 100 from t";
        assert_eq!(
            uses(sql, Dialect::Generic),
            vec![
                (UseKind::Cast, "cast(amount as int)".to_string()),
                (UseKind::Arithmetic, "amount / 100".to_string()),
            ]
        );
    }

    #[test]
    fn every_kind_of_use_with_its_exact_text() {
        let sql = "select p.amount / 100 as units, -amount as refund, 1 + amount * 2 as x,\n\
                   sum(amount) as total, round(p.amount, 2) as r, ceil(amount) as c,\n\
                   lower(amount) as l, amount || 'x' as s\n\
                   from payments p\n\
                   where amount > 0 and amount <> 'A-3' and amount like '1%' and amount = other";
        assert_eq!(
            uses(sql, Dialect::Postgres),
            vec![
                (UseKind::Arithmetic, "p.amount / 100".to_string()),
                (UseKind::Arithmetic, "-amount".to_string()),
                (UseKind::Arithmetic, "amount * 2".to_string()),
                (UseKind::Function, "sum(amount)".to_string()),
                (UseKind::Function, "round(p.amount, 2)".to_string()),
                (UseKind::Function, "ceil(amount)".to_string()),
                (UseKind::Function, "lower(amount)".to_string()),
                (UseKind::Function, "amount || 'x'".to_string()),
                (UseKind::Comparison, "amount > 0".to_string()),
                (UseKind::Comparison, "amount <> 'A-3'".to_string()),
                (UseKind::Function, "amount like '1%'".to_string()),
            ]
        );
    }

    #[test]
    fn a_use_the_token_scan_misses_is_printed() {
        // `trim(both ' ' from amount)` is sqlparser's to see.
        let sql = "select trim(both ' ' from amount) from t";
        assert_eq!(
            uses(sql, Dialect::Postgres),
            vec![(UseKind::Function, "TRIM(BOTH ' ' FROM amount)".to_string())]
        );
    }

    #[test]
    fn unparseable_sql_is_none() {
        assert!(parse("select from where (", Dialect::Generic).is_none());
    }
}
