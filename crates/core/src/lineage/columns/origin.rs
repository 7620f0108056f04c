//! Where a model's output column comes from, when it comes straight through: the
//! column (perhaps renamed) of one relation the model reads, with no expression on
//! the way, so a null there is a null here. `init` uses it to watch the null rate of
//! a source column a dbt test names through the models that pass it on.
//!
//! The SQL is the model's as written: `{{ ref() }}` and `{{ source() }}` become
//! placeholder tables, any other `{{ }}` an expression (a macro's output is not
//! straight through), and a `{% %}` block gives up (what it renders is unknown). The
//! trace goes backwards from the final select through CTEs, subqueries, aliases and
//! stars; wherever two relations could supply the column, it gives up rather than
//! guess.

use sqlparser::ast::{
    Expr, ObjectName, ObjectNamePart, Query, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    TableFactor,
};
use sqlparser::parser::Parser;

use super::Dialect;

/// A column read straight through from a relation the model names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassedThrough {
    /// The Jinja call naming the relation, as written inside `{{ }}`:
    /// `source('ecom', 'raw_orders')`, `ref('stg_orders')`.
    pub relation: String,
    /// The column's name in that relation, lowercase.
    pub column: String,
}

const PLACEHOLDER: &str = "dataward_relation_";

/// The relation and column `column` of the model whose SQL (as written) is `sql`
/// passes through unchanged, or `None` when it is computed, ambiguous, or the SQL
/// cannot be read.
pub fn passed_through(sql: &str, column: &str, dialect: Dialect) -> Option<PassedThrough> {
    let (sql, relations) = placeholders(sql)?;
    let statements = Parser::parse_sql(super::parsed::sql_dialect(dialect).as_ref(), &sql).ok()?;
    let [sqlparser::ast::Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    let (table, column) = trace(query, &column.to_lowercase(), &[], 0)?;
    let index: usize = table.strip_prefix(PLACEHOLDER)?.parse().ok()?;
    Some(PassedThrough {
        relation: relations.get(index)?.clone(),
        column,
    })
}

/// The SQL with each `{{ ref() }}`/`{{ source() }}` as a placeholder table and each
/// other `{{ }}` as `null`, and the calls the placeholders stand for.
fn placeholders(sql: &str) -> Option<(String, Vec<String>)> {
    let mut out = String::with_capacity(sql.len());
    let mut relations = Vec::new();
    let mut rest = sql;
    loop {
        let next = ["{{", "{%", "{#"]
            .iter()
            .filter_map(|open| rest.find(open).map(|at| (at, *open)))
            .min();
        let Some((at, open)) = next else { break };
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let close = match open {
            "{{" => "}}",
            "{%" => "%}",
            _ => "#}",
        };
        let end = after.find(close)?;
        let inner = after[..end].trim().trim_matches('-').trim();
        match open {
            "{%" => return None,
            "{#" => {}
            _ if inner.starts_with("config(") => {}
            _ if inner.starts_with("ref(") || inner.starts_with("source(") => {
                out.push_str(&format!(" {PLACEHOLDER}{} ", relations.len()));
                relations.push(inner.to_string());
            }
            _ => out.push_str(" null "),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Some((out, relations))
}

/// A named query visible to the one being traced (its CTEs and those around it).
type Ctes<'a> = [(&'a str, &'a Query)];

/// The table (a placeholder or a name not among the CTEs) and its column that
/// `column` of `query` comes from.
fn trace(query: &Query, column: &str, outer: &Ctes, depth: usize) -> Option<(String, String)> {
    if depth > 64 {
        return None;
    }
    let mut ctes: Vec<(&str, &Query)> = outer.to_vec();
    if let Some(with) = &query.with {
        if with.recursive {
            return None;
        }
        for cte in &with.cte_tables {
            if !cte.alias.columns.is_empty() {
                return None;
            }
            ctes.push((cte.alias.name.value.as_str(), &cte.query));
        }
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(select) => select,
        SetExpr::Query(inner) => return trace(inner, column, &ctes, depth + 1),
        _ => return None,
    };
    // What the FROM clause names: (the name it is referred to by, what it is).
    let mut scope: Vec<(String, &TableFactor)> = Vec::new();
    for from in &select.from {
        for factor in std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation))
        {
            let name = match factor {
                TableFactor::Table { name, alias, .. } => match alias {
                    Some(alias) if alias.columns.is_empty() => alias.name.value.to_lowercase(),
                    Some(_) => return None,
                    None => last_part(name)?,
                },
                TableFactor::Derived {
                    alias: Some(alias), ..
                } if alias.columns.is_empty() => alias.name.value.to_lowercase(),
                _ => return None,
            };
            scope.push((name, factor));
        }
    }
    // The column named in the select list, or else the one star that can carry it.
    let mut named = Vec::new();
    let mut stars = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                if let Some((_, name)) = reference(expr) {
                    if name == column {
                        named.push(expr);
                    }
                } else if output_name(expr).as_deref() == Some(column) {
                    return None;
                }
            }
            SelectItem::ExprWithAlias { expr, alias } if alias.value.to_lowercase() == column => {
                named.push(expr)
            }
            SelectItem::ExprWithAlias { .. } => {}
            SelectItem::Wildcard(_) => stars.push(None),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                stars.push(Some(last_part(name)?))
            }
            _ => return None,
        }
    }
    let (qualifier, name) = match (named.as_slice(), stars.as_slice()) {
        ([expr], _) => reference(expr)?,
        ([], [star]) => (star.clone(), column.to_string()),
        _ => return None,
    };
    let factor = match (qualifier, scope.as_slice()) {
        (Some(q), _) => scope.iter().find(|(n, _)| *n == q).map(|(_, f)| *f)?,
        (None, [(_, only)]) => *only,
        _ => return None,
    };
    match factor {
        TableFactor::Table { name: table, .. } => {
            let table = match table.0.as_slice() {
                [ObjectNamePart::Identifier(one)] => one.value.to_lowercase(),
                _ => return None,
            };
            // A CTE sees only the CTEs defined before it.
            match ctes
                .iter()
                .rposition(|(n, _)| n.eq_ignore_ascii_case(&table))
            {
                Some(at) => trace(ctes[at].1, &name, &ctes[..at], depth + 1),
                None => Some((table, name)),
            }
        }
        TableFactor::Derived { subquery, .. } => trace(subquery, &name, &ctes, depth + 1),
        _ => None,
    }
}

/// `(qualifier, column)` of a plain column reference, lowercase.
fn reference(expr: &Expr) -> Option<(Option<String>, String)> {
    match expr {
        Expr::Identifier(id) => Some((None, id.value.to_lowercase())),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [.., table, column] => Some((
                Some(table.value.to_lowercase()),
                column.value.to_lowercase(),
            )),
            _ => None,
        },
        Expr::Nested(inner) => reference(inner),
        _ => None,
    }
}

/// The name an unaliased expression gets as an output column, where the SQL says it
/// plainly (PostgreSQL names `f(x)` after `f`): such a column shadows a star's.
fn output_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Function(f) => last_part(&f.name),
        Expr::Cast { expr, .. } => output_name(expr),
        _ => None,
    }
}

fn last_part(name: &ObjectName) -> Option<String> {
    match name.0.last()? {
        ObjectNamePart::Identifier(id) => Some(id.value.to_lowercase()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(sql: &str, column: &str) -> Option<(String, String)> {
        passed_through(sql, column, Dialect::Postgres).map(|p| (p.relation, p.column))
    }

    fn some(relation: &str, column: &str) -> Option<(String, String)> {
        Some((relation.to_string(), column.to_string()))
    }

    #[test]
    fn a_renamed_column_of_a_source_is_traced_through_ctes() {
        // jaffle_shop's stg_orders, as written.
        let sql = "with\n\nsource as (\n    select * from {{ source('ecom', 'raw_orders') }}\n),\n\
            renamed as (\n    select\n        ----------  ids\n        id as order_id,\n\
            customer as customer_id,\n        {{ cents_to_dollars('subtotal') }} as subtotal,\n\
            {{ dbt.date_trunc('day','ordered_at') }} as ordered_at\n    from source\n)\n\n\
            select * from renamed\n";
        assert_eq!(
            traced(sql, "customer_id"),
            some("source('ecom', 'raw_orders')", "customer")
        );
        assert_eq!(
            traced(sql, "order_id"),
            some("source('ecom', 'raw_orders')", "id")
        );
        // A macro's output is computed, not passed through.
        assert_eq!(traced(sql, "subtotal"), None);
        assert_eq!(traced(sql, "ordered_at"), None);
    }

    #[test]
    fn a_qualified_star_on_the_kept_side_of_a_join_passes_columns_on() {
        // jaffle_shop's orders: customer_id comes from stg_orders through `orders.*`.
        let sql = "with orders as (select * from {{ ref('stg_orders') }}),\n\
            items as (select order_id, sum(cost) as order_cost from {{ ref('order_items') }} group by 1),\n\
            joined as (select orders.*, items.order_cost from orders\n\
              left join items on orders.order_id = items.order_id),\n\
            numbered as (select *, row_number() over (partition by customer_id order by ordered_at) as n from joined)\n\
            select * from numbered";
        assert_eq!(
            traced(sql, "customer_id"),
            some("ref('stg_orders')", "customer_id")
        );
        assert_eq!(traced(sql, "order_cost"), None, "sum() is computed");
    }

    #[test]
    fn anything_that_could_come_from_two_places_is_not_guessed() {
        let join = "select * from {{ ref('a') }} a join {{ ref('b') }} b on a.id = b.id";
        assert_eq!(traced(join, "id"), None);
        let bare = "select id from {{ ref('a') }} a join {{ ref('b') }} b on a.x = b.x";
        assert_eq!(traced(bare, "id"), None);
        let union = "select id from {{ ref('a') }} union all select id from {{ ref('b') }}";
        assert_eq!(traced(union, "id"), None);
        let computed = "select coalesce(id, 0) as id from {{ ref('a') }}";
        assert_eq!(traced(computed, "id"), None);
        let jinja = "select id from {% if x %}{{ ref('a') }}{% else %}{{ ref('b') }}{% endif %}";
        assert_eq!(traced(jinja, "id"), None);
        let qualified = "select b.id from {{ ref('a') }} a join {{ ref('b') }} b on a.x = b.x";
        assert_eq!(traced(qualified, "id"), some("ref('b')", "id"));
    }
}
