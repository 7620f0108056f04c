use super::super::{find_with_tokens, ColumnChange, Dialect, Risk, UseKind};
use super::*;

fn change() -> ColumnChange {
    ColumnChange {
        column: "amount".into(),
        new_type: "VARCHAR(12)".into(),
    }
}

fn find(sql: &str) -> super::super::ColumnFinding {
    find_with_tokens(sql, &change(), Dialect::Postgres)
}

/// (kind, exact text) of every use the scan finds.
fn uses(sql: &str) -> Vec<(UseKind, String)> {
    scan(sql, "amount")
        .uses
        .into_iter()
        .map(|u| (u.detail.kind(), u.expression))
        .collect()
}

fn texts(sql: &str) -> Vec<String> {
    uses(sql).into_iter().map(|(_, text)| text).collect()
}

#[test]
fn finds_plain_and_qualified_casts() {
    let sql = "select CAST(p.Amount AS integer) as amount_no, amount::numeric(4, 0) as n\n\
                   from {{ ref('stg_payments') }} p";
    let finding = find(sql);
    assert!(finding.reads);
    let casts: Vec<(UseKind, &str, &str, &Risk)> = finding
        .uses
        .iter()
        .map(|u| (u.kind, u.expression.as_str(), u.column.as_str(), &u.risk))
        .collect();
    assert_eq!(
        casts,
        vec![
            (
                UseKind::Cast,
                "CAST(p.Amount AS integer)",
                "p.Amount",
                &Risk::DependsOnData {
                    target_type: "integer".into()
                }
            ),
            (
                UseKind::Cast,
                "amount::numeric(4, 0)",
                "amount",
                &Risk::DependsOnData {
                    target_type: "numeric(4, 0)".into()
                }
            ),
        ]
    );
}

#[test]
fn safe_casts_are_reported_without_risk() {
    let sql = "select try_cast(amount as int) a, safe_cast(x.amount as int64) b from t x";
    let finding = find(sql);
    assert_eq!(finding.uses.len(), 2);
    assert!(finding.uses.iter().all(|u| u.kind == UseKind::Cast));
    assert!(finding.uses.iter().all(|u| u.risk == Risk::Safe));
}

#[test]
fn casts_to_text_or_from_a_wider_number_are_no_risk() {
    let sql = "select cast(amount as varchar) from t";
    assert_eq!(find(sql).uses[0].risk, Risk::Safe);
    let to_bigint = ColumnChange {
        column: "amount".into(),
        new_type: "bigint".into(),
    };
    let sql = "select cast(amount as bigint), amount / 100 from t";
    let finding = find_with_tokens(sql, &to_bigint, Dialect::Postgres);
    assert!(finding.uses.iter().all(|u| u.risk == Risk::Safe));
}

#[test]
fn strings_comments_jinja_and_aliases_are_not_reads() {
    let sql = "-- amount / 100 is below\n/* sum(amount) */\n\
                   select 'amount / 100' as label, cast(x as int) as amount,\n\
                   {{ var('amount') }} from {% if amount > 0 %}t{% endif %}";
    let finding = find(sql);
    assert!(!finding.reads, "{finding:?}");
    assert!(finding.uses.is_empty());
}

#[test]
fn casts_of_other_columns_or_expressions_are_not_findings() {
    let sql = "select cast(amount_id as int), cast(trim(amount) as int), \
                   amounts::int, (amount)::int, amount(1) from t";
    let finding = find(sql);
    assert!(finding.reads);
    assert!(
        finding.uses.iter().all(|u| u.kind != UseKind::Cast),
        "{:?}",
        finding.uses
    );
    // `trim(amount)` is a string function of it, which text keeps working with.
    assert_eq!(texts(sql), vec!["trim(amount)"]);
}

#[test]
fn two_word_types_and_non_ascii_text() {
    let sql = "select amount::double precision as d, 'è → ü' as s, größe from t";
    let finding = find(sql);
    assert_eq!(finding.uses[0].expression, "amount::double precision");
    assert_eq!(
        finding.uses[0].risk,
        Risk::DependsOnData {
            target_type: "double precision".into()
        }
    );
}

#[test]
fn quoted_identifiers_count() {
    let finding = find(r#"select "AMOUNT"::int, "amount" / 100 from t"#);
    assert!(finding.reads);
    assert_eq!(finding.uses[0].kind, UseKind::Cast);
    assert_eq!(finding.uses[0].expression, r#""AMOUNT"::int"#);
    assert_eq!(finding.uses[1].expression, r#""amount" / 100"#);
}

#[test]
fn arithmetic_takes_the_operand_precedence_gives_it() {
    let sql = "select amount / 100, 1 + amount * 2, total - amount - fee, \
                   a * b - amount, x / amount * 100, amount * 1.0 / n, -amount, \
                   amount % 7 = 0, amount + {{ var('fee') }}, (a + b) * amount, \
                   amount / nullif(n, 0), amount - case when x then 1 else 2 end, \
                   coalesce(x, 0)::int + amount, p.amount+1 from t";
    assert_eq!(
        texts(sql),
        vec![
            "amount / 100",
            "amount * 2",
            "total - amount",
            "a * b - amount",
            "x / amount",
            "amount * 1.0",
            "-amount",
            "amount % 7",
            "amount + {{ var('fee') }}",
            "(a + b) * amount",
            "amount / nullif(n, 0)",
            "amount - case when x then 1 else 2 end",
            "coalesce(x, 0)::int + amount",
            "p.amount+1",
        ]
    );
    assert!(uses(sql)
        .iter()
        .all(|(kind, _)| *kind == UseKind::Arithmetic));
}

#[test]
fn comparisons_with_literals_only() {
    let sql = "select * from t where amount > 0 and amount = 'A-3' and 5 <= amount \
                   and amount <> -1 and amount = other and amount > 0 + x";
    assert_eq!(
        uses(sql),
        vec![
            (UseKind::Comparison, "amount > 0".to_string()),
            (UseKind::Comparison, "amount = 'A-3'".to_string()),
            (UseKind::Comparison, "5 <= amount".to_string()),
            (UseKind::Comparison, "amount <> -1".to_string()),
            // `0 + x` is not a literal; the other comparison is with a column.
        ]
    );
    let found = scan(sql, "amount").uses;
    assert_eq!(
        found[1].detail,
        UseDetail::Comparison {
            op: "=".into(),
            literal: Literal::Text("A-3".into()),
            column_first: true
        }
    );
    assert_eq!(
        found[3].detail,
        UseDetail::Comparison {
            op: "<>".into(),
            literal: Literal::Number("-1".into()),
            column_first: true
        }
    );
}

#[test]
fn functions_and_string_operators() {
    let sql = "select sum(amount), avg(distinct p.amount), round(amount, 2), \
                   power(2, amount), lower(amount), substr(amount, 1, 3), substr(x, amount), \
                   amount || '-x', amount like '1%', amount not ilike 'a%', \
                   count(amount), sum(amount) over (partition by y) from t";
    assert_eq!(
        uses(sql),
        vec![
            (UseKind::Function, "sum(amount)".to_string()),
            (UseKind::Function, "avg(distinct p.amount)".to_string()),
            (UseKind::Function, "round(amount, 2)".to_string()),
            (UseKind::Function, "power(2, amount)".to_string()),
            (UseKind::Function, "lower(amount)".to_string()),
            (UseKind::Function, "substr(amount, 1, 3)".to_string()),
            (UseKind::Function, "amount || '-x'".to_string()),
            (UseKind::Function, "amount like '1%'".to_string()),
            (UseKind::Function, "amount not ilike 'a%'".to_string()),
            (UseKind::Function, "sum(amount)".to_string()),
        ]
    );
}

#[test]
fn jinja_models_are_scanned_like_plain_sql() {
    let sql = "select p.amount / 100 as units, sum(p.amount) as total\n\
                   from {{ source('billing', 'payments') }} p\n\
                   join {{ ref('rates') }} r on r.id = p.rate_id\n\
                   where p.amount > 0 {% if is_incremental() %} and p.loaded_at > 0 {% endif %}";
    assert_eq!(
        texts(sql),
        vec!["p.amount / 100", "sum(p.amount)", "p.amount > 0"]
    );
}

#[test]
fn operators_split_like_postgres() {
    let kinds: Vec<(Kind, String)> = tokenize("a*-1 <> b||'x' >= .5e3 -- c\n")
        .into_iter()
        .map(|t| (t.kind, t.text))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (Kind::Identifier, "a".into()),
            (Kind::Operator, "*".into()),
            (Kind::Operator, "-".into()),
            (Kind::Number, "1".into()),
            (Kind::Operator, "<>".into()),
            (Kind::Identifier, "b".into()),
            (Kind::Operator, "||".into()),
            (Kind::String, "x".into()),
            (Kind::Operator, ">=".into()),
            (Kind::Number, ".5e3".into()),
        ]
    );
}
