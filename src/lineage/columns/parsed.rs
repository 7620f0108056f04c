//! The parser method: the SQL is parsed with sqlparser and the expression tree is
//! walked for references to the column and casts of it.
//!
//! sqlparser prints casts in its own spelling (`CAST(o.seat_section AS INTEGER)`), and a
//! cast's span covers only its argument. A proposal has to find the cast in the model's
//! file as written, so the exact text comes from the token scan's cast that starts at
//! the same place; only when the scan missed it do we fall back to sqlparser's print.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, CastKind, Expr, Spanned};
use sqlparser::dialect::{
    BigQueryDialect, Dialect as SqlDialect, GenericDialect, PostgreSqlDialect, SnowflakeDialect,
};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Location;

use super::{Dialect, FoundCast};

pub(super) struct Scan {
    pub reads: bool,
    pub casts: Vec<FoundCast>,
}

/// `None` when the SQL does not parse in `dialect`. `column` must be lowercase;
/// `token_casts` are the token scan's casts of the same SQL, for their exact text.
pub(super) fn scan(
    sql: &str,
    column: &str,
    dialect: Dialect,
    token_casts: &[FoundCast],
) -> Option<Scan> {
    let statements = Parser::parse_sql(sql_dialect(dialect).as_ref(), sql).ok()?;
    let line_starts = line_starts(sql);
    let mut scan = Scan {
        reads: false,
        casts: Vec::new(),
    };
    let _ = visit_expressions(&statements, |expr: &Expr| {
        if is_column_reference(expr, column) {
            scan.reads = true;
        }
        if let Expr::Cast {
            kind,
            expr: argument,
            data_type,
            ..
        } = expr
        {
            if is_column_reference(argument, column) {
                let column_at = byte_offset(sql, &line_starts, argument.span().start);
                let exact =
                    column_at.and_then(|at| token_casts.iter().find(|cast| cast.column_at == at));
                scan.casts.push(match exact {
                    Some(cast) => FoundCast {
                        fails_loudly: fails_loudly(kind),
                        ..cast.clone()
                    },
                    None => FoundCast {
                        target_type: data_type.to_string(),
                        expression: expr.to_string(),
                        fails_loudly: fails_loudly(kind),
                        column_at: column_at.unwrap_or(0),
                    },
                });
            }
        }
        ControlFlow::<()>::Continue(())
    });
    Some(scan)
}

fn sql_dialect(dialect: Dialect) -> Box<dyn SqlDialect> {
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
    use super::super::tokens;
    use super::*;

    fn parse(sql: &str, dialect: Dialect) -> Option<Scan> {
        let token_casts = tokens::scan(sql, "seat_section").casts;
        scan(sql, "seat_section", dialect, &token_casts)
    }

    #[test]
    fn casts_in_every_spelling_keep_their_text() {
        let sql = "select\n  CAST(o.Seat_Section AS integer) as a,\n  seat_section::int as b,\n  \
                   try_cast(seat_section as number) as c\nfrom orders o";
        let scan = parse(sql, Dialect::Snowflake).unwrap();
        assert!(scan.reads);
        let casts: Vec<(&str, &str, bool)> = scan
            .casts
            .iter()
            .map(|c| {
                (
                    c.expression.as_str(),
                    c.target_type.as_str(),
                    c.fails_loudly,
                )
            })
            .collect();
        assert_eq!(
            casts,
            vec![
                ("CAST(o.Seat_Section AS integer)", "integer", true),
                ("seat_section::int", "int", true),
                ("try_cast(seat_section as number)", "number", false),
            ]
        );
    }

    #[test]
    fn safe_cast_in_bigquery() {
        let sql = "select safe_cast(t.seat_section as int64) as n from `p.d.orders` t";
        let scan = parse(sql, Dialect::BigQuery).unwrap();
        assert_eq!(scan.casts.len(), 1);
        assert_eq!(
            scan.casts[0].expression,
            "safe_cast(t.seat_section as int64)"
        );
        assert!(!scan.casts[0].fails_loudly);
    }

    #[test]
    fn aliases_strings_and_comments_are_not_reads() {
        let sql = "-- seat_section\nselect 'seat_section' as label, cast(x as int) as seat_section from t";
        let scan = parse(sql, Dialect::Postgres).unwrap();
        assert!(!scan.reads);
        assert!(scan.casts.is_empty());
    }

    #[test]
    fn a_parenthesised_argument_is_not_a_column_cast() {
        // The token method does not count it either: both methods agree on what a
        // cast of the column is, so switching method never changes a verdict.
        let scan = parse("select (seat_section)::int from t", Dialect::Postgres).unwrap();
        assert!(scan.reads);
        assert!(scan.casts.is_empty());
    }

    #[test]
    fn text_after_multibyte_characters_is_found() {
        let sql = "select 'größe' as g,\n  'è' as e, cast(seat_section as int) from t";
        let scan = parse(sql, Dialect::Generic).unwrap();
        assert_eq!(scan.casts[0].expression, "cast(seat_section as int)");
    }

    #[test]
    fn unparseable_sql_is_none() {
        assert!(parse("select from where (", Dialect::Generic).is_none());
    }
}
