//! SQL rewrites behind diff proposals. Token-level and conservative: when a rewrite is
//! not clearly right, the SQL comes back unchanged and no diff is proposed.

use std::ops::Range;

use crate::lineage::{filter_numbers, use_sites, Dialect, Risk, UseFinding, UseSite, Wants};
use crate::warehouse::CastTarget;

/// Sets a number in a dbt `config(...)` call: `lookback=1` becomes `lookback=3`. None
/// when the key is not set there as a plain number (it may live in a YAML file).
pub fn set_config_number(sql: &str, key: &str, value: u32) -> Option<String> {
    let config = sql.find("config(")?;
    let end = config + sql[config..].find(')')?;
    let inside = &sql[config..end];
    let mut at = 0;
    while let Some(found) = inside[at..].find(key) {
        let start = config + at + found;
        at += found + key.len();
        let before = sql[..start].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &sql[start + key.len()..];
        let spaced = rest.len() - rest.trim_start().len();
        let Some(after_equals) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let gap = after_equals.len() - after_equals.trim_start().len();
        let digits = after_equals.trim_start();
        let len = digits.chars().take_while(char::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        let number_at = start + key.len() + spaced + 1 + gap;
        return Some(format!(
            "{}{value}{}",
            &sql[..number_at],
            &sql[number_at + len..]
        ));
    }
    None
}

/// Sets the number of periods in an incremental model's filter (every filter under
/// `is_incremental()`, as [`Window::of_filter`](crate::lineage::Window::of_filter) reads
/// them): `- interval '1 day'` becomes `- interval '3 day'`, `current_date - 1`
/// becomes `current_date - 3`. None when the SQL has no such filter or its filter
/// has no number (`> (select max(c) from {{ this }})`): there is nothing to raise.
pub fn set_filter_days(sql: &str, value: u32) -> Option<String> {
    let mut numbers = filter_numbers(sql)?;
    if numbers.is_empty() {
        return None;
    }
    numbers.sort_by_key(|n| n.start);
    let mut out = sql.to_string();
    // From the last, so the earlier spans still hold.
    for number in numbers.into_iter().rev() {
        out.replace_range(number, &value.to_string());
    }
    Some(out)
}

/// Replaces each risky cast of the changed column so the column stays text:
/// `cast(o.col as integer) = m.other` becomes `o.col = cast(m.other as varchar(12))`, and a
/// cast outside a comparison becomes a cast to the new type.
pub fn keep_as_text(sql: &str, risky_casts: &[&str], new_type: &str) -> String {
    let new_type = new_type.to_ascii_lowercase();
    let mut out = sql.to_string();
    for cast in risky_casts {
        let Some(column) = cast_argument(cast) else {
            continue;
        };
        let Some(at) = out.find(cast) else { continue };
        let after = &out[at + cast.len()..];
        let trimmed = after.trim_start();
        if let Some(rest) = trimmed.strip_prefix('=') {
            let rest_trimmed = rest.trim_start();
            let other_len = rest_trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest_trimmed.len());
            if other_len > 0 {
                let other = &rest_trimmed[..other_len];
                let tail = &rest_trimmed[other_len..];
                out = format!("{}{column} = cast({other} as {new_type}){tail}", &out[..at]);
                continue;
            }
        }
        out = format!("{}cast({column} as {new_type}){after}", &out[..at]);
    }
    out
}

/// `cast(o.amount as integer)` -> `o.amount`; `amount::int` -> `amount`.
fn cast_argument(cast: &str) -> Option<String> {
    if let Some(colons) = cast.find("::") {
        return Some(cast[..colons].trim().to_string());
    }
    let open = cast.find('(')?;
    let inner = &cast[open + 1..cast.rfind(')')?];
    let lower = inner.to_ascii_lowercase();
    let as_at = lower.rfind(" as ")?;
    Some(inner[..as_at].trim().to_string())
}

/// Rewrites every use in `uses` that the column's new type breaks or leaves to the data,
/// so the model runs on the new type:
///
/// - arithmetic, numeric functions and comparisons with a number, on a column that is
///   now text, read it through a conversion that cannot fail (PostgreSQL: a pattern
///   check, then a cast to numeric; Snowflake: `try_cast`; BigQuery: `safe_cast`);
/// - a cast of it to a strict type that depends on the data becomes the dialect's safe
///   conversion, except a cast compared with another column (a join): that compares as
///   text instead, `cast(o.col as integer) = m.other` -> `o.col = cast(m.other as <new
///   type>)`;
/// - string functions and comparisons with a string, on a column that is no longer text,
///   read it as text where the dialect refuses to (PostgreSQL, BigQuery).
///
/// Safe uses are left alone, and so are uses that depend on the data where no rewrite
/// is clearly right (the generic dialect, casts to a date in PostgreSQL). If a use that
/// breaks cannot be found in `sql` or rewritten, `sql` comes back unchanged: a diff that
/// leaves the model failing is no fix.
pub fn fix_uses(
    sql: &str,
    uses: &[&UseFinding],
    column_new_type: &str,
    dialect: Dialect,
) -> String {
    fixed_uses(sql, uses, column_new_type, dialect).unwrap_or_else(|| sql.to_string())
}

/// `None` when a use that breaks cannot be fixed.
fn fixed_uses(sql: &str, uses: &[&UseFinding], new_type: &str, dialect: Dialect) -> Option<String> {
    let to_fix: Vec<&UseFinding> = uses
        .iter()
        .copied()
        .filter(|u| u.risk != Risk::Safe)
        .collect();
    let Some(first) = to_fix.first() else {
        return Some(sql.to_string());
    };
    // Every use is of one column; the scan finds them again in this SQL, as written.
    let column = column_name(&first.column);
    if to_fix.iter().any(|u| column_name(&u.column) != column) {
        return None;
    }
    let sites = use_sites(sql, &column);
    let mut claimed = vec![false; sites.len()];
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for finding in to_fix {
        let found = sites.iter().enumerate().find(|(i, site)| {
            !claimed[*i]
                && site.kind == finding.kind
                && sql[site.expression.clone()] == finding.expression
                && sql[site.column.clone()] == finding.column
        });
        let outcome = match found {
            Some((i, site)) => {
                claimed[i] = true;
                fix(sql, site, &finding.risk, new_type, dialect)
            }
            None => Fix::Cannot,
        };
        match outcome {
            Fix::Edit(range, text) => edits.push((range, text)),
            Fix::Leave => {}
            Fix::Cannot if finding.risk == Risk::Breaks => return None,
            Fix::Cannot => {}
        }
    }
    edits.sort_by_key(|(range, _)| range.start);
    if edits.windows(2).any(|pair| pair[0].0.end > pair[1].0.start) {
        return None;
    }
    let mut out = sql.to_string();
    for (range, text) in edits.into_iter().rev() {
        out.replace_range(range, &text);
    }
    Some(out)
}

enum Fix {
    /// Replace these bytes with this text.
    Edit(Range<usize>, String),
    /// Nothing to change: the use only depends on the data and no rewrite would
    /// change that.
    Leave,
    /// No rewrite is clearly right.
    Cannot,
}

/// `p."Amount"` -> `amount`.
fn column_name(reference: &str) -> String {
    let last = reference.rsplit('.').next().unwrap_or(reference);
    last.trim_matches(|c| c == '"' || c == '`').to_lowercase()
}

fn fix(sql: &str, site: &UseSite, risk: &Risk, new_type: &str, dialect: Dialect) -> Fix {
    let new_is_text = CastTarget::parse(new_type) == Some(CastTarget::Text);
    let column = &sql[site.column.clone()];
    match &site.wants {
        Wants::Cast { target_type } if new_is_text => {
            if let Some((range, text)) = join_as_text(sql, site, new_type) {
                return Fix::Edit(range, text);
            }
            match safe_cast(column, target_type, dialect) {
                Some(text) => Fix::Edit(site.expression.clone(), text),
                None => Fix::Cannot,
            }
        }
        Wants::Number if new_is_text => match safe_number(column, dialect) {
            Some(text) => Fix::Edit(site.column.clone(), text),
            None => Fix::Cannot,
        },
        Wants::Text if !new_is_text && risk == &Risk::Breaks => {
            let text_type = match dialect {
                Dialect::Postgres => "text",
                Dialect::BigQuery => "string",
                Dialect::Snowflake | Dialect::Generic => "varchar",
            };
            Fix::Edit(
                site.column.clone(),
                format!("cast({column} as {text_type})"),
            )
        }
        // Written as text by the engine on its own: an explicit cast changes nothing.
        Wants::Text if !new_is_text => Fix::Leave,
        _ => Fix::Cannot,
    }
}

/// `cast(o.col as integer) = m.other` -> `o.col = cast(m.other as <new type>)`, and the
/// mirror image, when the other side is a plain column.
fn join_as_text(sql: &str, site: &UseSite, new_type: &str) -> Option<(Range<usize>, String)> {
    let column = &sql[site.column.clone()];
    let new_type = new_type.trim().to_ascii_lowercase();
    let as_text = |other: &str| format!("cast({other} as {new_type})");
    // The cast first: `cast(...) = m.other`.
    let forward = || {
        let rest = sql[site.expression.end..].trim_start().strip_prefix('=')?;
        if rest.starts_with(['=', '>']) {
            return None;
        }
        let other_start = sql.len() - rest.trim_start().len();
        let other_len = reference_len(&sql[other_start..]);
        let other_end = other_start + other_len;
        (other_len > 0 && operand_ends(&sql[other_end..])).then(|| {
            (
                site.expression.start..other_end,
                format!("{column} = {}", as_text(&sql[other_start..other_end])),
            )
        })
    };
    // The cast second: `m.other = cast(...)`.
    let backward = || {
        let before = sql[..site.expression.start].trim_end().strip_suffix('=')?;
        if before.ends_with(['<', '>', '!', '=', ':']) {
            return None;
        }
        let before = before.trim_end();
        let other_start = before.len() - reference_len_back(before);
        let other = &before[other_start..];
        let preceding = before[..other_start].trim_end();
        let plain = preceding.is_empty()
            || preceding.ends_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | '(' | ','));
        (!other.is_empty() && plain).then(|| {
            (
                other_start..site.expression.end,
                format!("{} = {column}", as_text(other)),
            )
        })
    };
    forward().or_else(backward)
}

/// The length of a column reference (`m.other`, `"M"."Other id"`) at the start of
/// `text`; 0 if there is none.
fn reference_len(text: &str) -> usize {
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let segment = match rest.chars().next() {
            Some(quote @ ('"' | '`')) => match rest[1..].find(quote) {
                Some(close) => close + 2,
                None => return 0,
            },
            Some(c) if c.is_alphabetic() || c == '_' => rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(rest.len()),
            _ => return 0,
        };
        at += segment;
        if !text[at..].starts_with('.') {
            return at;
        }
        at += 1;
    }
}

/// The length of the column reference ending `text`; 0 if there is none.
fn reference_len_back(text: &str) -> usize {
    let mut start = text.len();
    loop {
        let before = &text[..start];
        let segment_start = match before.chars().next_back() {
            Some(quote @ ('"' | '`')) => match before[..before.len() - 1].rfind(quote) {
                Some(open) => open,
                None => return 0,
            },
            Some(c) if c.is_alphanumeric() || c == '_' || c == '$' => {
                let word_start = before
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .map_or(0, |at| {
                        at + before[at..].chars().next().map_or(1, char::len_utf8)
                    });
                if !before[word_start..].starts_with(|c: char| c.is_alphabetic() || c == '_') {
                    return 0;
                }
                word_start
            }
            _ => return 0,
        };
        start = segment_start;
        if !text[..start].ends_with('.') {
            return text.len() - start;
        }
        start -= 1;
    }
}

/// Whether what follows a reference ends it as an operand of `=`: no call, cast,
/// subscript or tighter operator continues it.
fn operand_ends(rest: &str) -> bool {
    let rest = rest.trim_start();
    !rest.starts_with(['(', '.', ':', '[', '+', '-', '*', '/', '%', '|', '^'])
}

/// The column read as a number, null where it does not read as one.
fn safe_number(column: &str, dialect: Dialect) -> Option<String> {
    match dialect {
        Dialect::Postgres => Some(format!(
            r"case when {column} ~ '^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$' then cast({column} as numeric) end"
        )),
        // NUMBER alone is NUMBER(38,0) and would round 12.50 to 13.
        Dialect::Snowflake => Some(format!("try_cast({column} as number(38, 9))")),
        Dialect::BigQuery => Some(format!("safe_cast({column} as numeric)")),
        Dialect::Generic => None,
    }
}

/// The column cast to `target_type`, null where the cast would fail.
fn safe_cast(column: &str, target_type: &str, dialect: Dialect) -> Option<String> {
    let cast = format!("cast({column} as {target_type})");
    match dialect {
        Dialect::Snowflake => Some(format!("try_{cast}")),
        Dialect::BigQuery => Some(format!("safe_{cast}")),
        Dialect::Postgres => {
            let (operator, pattern) = postgres_pattern(target_type)?;
            Some(format!(
                "case when {column} {operator} '{pattern}' then {cast} end"
            ))
        }
        Dialect::Generic => None,
    }
}

/// A pattern no value fails to cast to `target_type` when it matches: bounded digits
/// so nothing overflows. Dates have none (a pattern cannot tell a leap year).
fn postgres_pattern(target_type: &str) -> Option<(&'static str, String)> {
    let lower = target_type.trim().to_ascii_lowercase();
    let base = lower
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or("");
    let pattern = match CastTarget::parse(target_type)? {
        CastTarget::Integer { max, .. } => {
            // One digit fewer than the largest value has.
            let digits = max.to_string().len() - 1;
            format!(r"^\s*[-+]?[0-9]{{1,{digits}}}\s*$")
        }
        CastTarget::Number if matches!(base, "float" | "float4" | "float8" | "double" | "real") => {
            r"^\s*[-+]?[0-9]{1,15}(\.[0-9]{1,15})?\s*$".to_string()
        }
        CastTarget::Number => {
            let params: Vec<usize> = lower
                .split_once('(')
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(inside, _)| {
                    inside
                        .split(',')
                        .filter_map(|p| p.trim().parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            let whole = match params.as_slice() {
                [] => None,
                [precision] => Some(*precision),
                [precision, scale] => Some(precision.checked_sub(*scale)?),
                _ => return None,
            };
            match whole {
                None => r"^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$".to_string(),
                // One digit fewer than it holds: rounding may carry into another.
                Some(whole) if whole >= 2 => {
                    format!(r"^\s*[-+]?[0-9]{{1,{}}}(\.[0-9]+)?\s*$", whole - 1)
                }
                Some(_) => return None,
            }
        }
        CastTarget::Boolean => {
            return Some((
                "~*",
                r"^\s*(t|true|f|false|y|yes|n|no|on|off|1|0)\s*$".to_string(),
            ))
        }
        CastTarget::Date | CastTarget::Text => return None,
    };
    Some(("~", pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incremental_filters_days_are_set_where_it_writes_them() {
        let block = |filter: &str| {
            format!("select * from {{{{ ref('stg') }}}}\n{{% if is_incremental() %}}\n  where {filter}\n{{% endif %}}\n")
        };
        for (old, new) in [
            (
                "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'",
                "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '3 day'",
            ),
            (
                "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '12 days'",
                "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '3 days'",
            ),
            (
                "loaded_at >= current_date - 1",
                "loaded_at >= current_date - 3",
            ),
            (
                "loaded_at >= dateadd(day, -2, current_date)",
                "loaded_at >= dateadd(day, -3, current_date)",
            ),
            (
                "loaded_at >= date_sub(current_date(), interval 1 day)",
                "loaded_at >= date_sub(current_date(), interval 3 day)",
            ),
        ] {
            assert_eq!(
                set_filter_days(&block(old), 3).as_deref(),
                Some(block(new).as_str()),
                "{old}"
            );
        }
        // A number elsewhere in the SQL is left as it is; so is a filter outside the block.
        let sql = "select 1 as one from t where d >= current_date - 90\n\
                   {% if is_incremental() %} and d >= current_date - 1 {% endif %}";
        assert_eq!(
            set_filter_days(sql, 4).unwrap(),
            sql.replace("current_date - 1 ", "current_date - 4 ")
        );
        // Nothing to raise.
        assert_eq!(
            set_filter_days(
                &block("loaded_at > (select max(loaded_at) from {{ this }})"),
                3
            ),
            None
        );
        assert_eq!(set_filter_days("select 1", 3), None);
    }

    #[test]
    fn a_config_number_is_set_where_the_config_call_sets_it() {
        let sql = "{{ config(materialized='incremental', incremental_strategy='microbatch', lookback=1, batch_size='day') }}\nselect 1";
        assert_eq!(
            set_config_number(sql, "lookback", 3).unwrap(),
            sql.replace("lookback=1", "lookback=3")
        );
        let spaced = "{{ config(lookback = 12) }} select 1";
        assert_eq!(
            set_config_number(spaced, "lookback", 3).unwrap(),
            "{{ config(lookback = 3) }} select 1"
        );
        // Not in the config call, or not a plain number: no diff.
        assert_eq!(set_config_number("select lookback=1", "lookback", 3), None);
        assert_eq!(
            set_config_number("{{ config(lookback=var('lb')) }}", "lookback", 3),
            None
        );
        assert_eq!(
            set_config_number("{{ config(my_lookback=1) }}", "lookback", 3),
            None
        );
    }
    use crate::lineage::{find_column_use, ColumnChange};

    #[test]
    fn a_join_on_a_cast_becomes_a_join_on_text() {
        let sql = "from p\nleft join r\n    on cast(p.amount as integer) = r.amount_id\n";
        assert_eq!(
            keep_as_text(sql, &["cast(p.amount as integer)"], "VARCHAR(12)"),
            "from p\nleft join r\n    on p.amount = cast(r.amount_id as varchar(12))\n"
        );
    }

    #[test]
    fn a_cast_outside_a_comparison_casts_to_the_new_type() {
        assert_eq!(
            keep_as_text("select amount::int as s", &["amount::int"], "TEXT"),
            "select cast(amount as text) as s"
        );
    }

    #[test]
    fn an_unknown_cast_changes_nothing() {
        assert_eq!(
            keep_as_text("select 1", &["cast(x as int)"], "TEXT"),
            "select 1"
        );
    }

    /// Finds the uses of `column` in `sql` as lineage does, then fixes those that are
    /// not safe.
    fn fixed(sql: &str, column: &str, new_type: &str, dialect: Dialect) -> String {
        let change = ColumnChange {
            column: column.into(),
            new_type: new_type.into(),
        };
        let finding = find_column_use(sql, &change, dialect);
        let risky: Vec<&UseFinding> = finding
            .uses
            .iter()
            .filter(|u| u.risk != Risk::Safe)
            .collect();
        fix_uses(sql, &risky, new_type, dialect)
    }

    const PG_NUMBER: &str =
        r"case when amount ~ '^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$' then cast(amount as numeric) end";

    #[test]
    fn arithmetic_on_text_reads_it_through_a_conversion_that_cannot_fail() {
        let sql = "select amount / 100 as units, 1 + -amount as x from payments";
        assert_eq!(
            fixed(sql, "amount", "text", Dialect::Postgres),
            format!("select {PG_NUMBER} / 100 as units, 1 + -{PG_NUMBER} as x from payments")
        );
        assert_eq!(
            fixed(sql, "amount", "VARCHAR", Dialect::Snowflake),
            "select try_cast(amount as number(38, 9)) / 100 as units, \
             1 + -try_cast(amount as number(38, 9)) as x from payments"
        );
        assert_eq!(
            fixed(sql, "amount", "STRING", Dialect::BigQuery),
            "select safe_cast(amount as numeric) / 100 as units, \
             1 + -safe_cast(amount as numeric) as x from payments"
        );
        // The generic dialect has no conversion that is sure not to fail.
        assert_eq!(fixed(sql, "amount", "text", Dialect::Generic), sql);
    }

    #[test]
    fn aggregates_and_comparisons_on_text_too() {
        let sql = "select sum(p.amount) as total from {{ ref('payments') }} p where p.amount > 0";
        let pg_number = PG_NUMBER.replace("amount", "p.amount");
        assert_eq!(
            fixed(sql, "amount", "text", Dialect::Postgres),
            format!(
                "select sum({pg_number}) as total from {{{{ ref('payments') }}}} p \
                 where {pg_number} > 0"
            )
        );
        assert_eq!(
            fixed(sql, "amount", "varchar", Dialect::Snowflake),
            "select sum(try_cast(p.amount as number(38, 9))) as total \
             from {{ ref('payments') }} p where try_cast(p.amount as number(38, 9)) > 0"
        );
        assert_eq!(
            fixed(sql, "amount", "string", Dialect::BigQuery),
            "select sum(safe_cast(p.amount as numeric)) as total \
             from {{ ref('payments') }} p where safe_cast(p.amount as numeric) > 0"
        );
    }

    #[test]
    fn a_cast_that_depends_on_the_data_becomes_the_safe_conversion() {
        let sql = "select cast(p.amount as integer) as n, p.amount::numeric(10, 2) as m from p";
        assert_eq!(
            fixed(sql, "amount", "text", Dialect::Postgres),
            r"select case when p.amount ~ '^\s*[-+]?[0-9]{1,9}\s*$' then cast(p.amount as integer) end as n, case when p.amount ~ '^\s*[-+]?[0-9]{1,7}(\.[0-9]+)?\s*$' then cast(p.amount as numeric(10, 2)) end as m from p"
        );
        assert_eq!(
            fixed(sql, "amount", "varchar", Dialect::Snowflake),
            "select try_cast(p.amount as integer) as n, try_cast(p.amount as numeric(10, 2)) as m from p"
        );
        assert_eq!(
            fixed(
                "select cast(p.amount as int64) as n from p",
                "amount",
                "string",
                Dialect::BigQuery
            ),
            "select safe_cast(p.amount as int64) as n from p"
        );
        // Leaves what it cannot make safe: the generic dialect, a date in PostgreSQL.
        assert_eq!(fixed(sql, "amount", "text", Dialect::Generic), sql);
        let dated = "select cast(paid_on as date) from p";
        assert_eq!(fixed(dated, "paid_on", "text", Dialect::Postgres), dated);
        let flags = "select refunded::boolean, cast(rate as float8) from p";
        assert_eq!(
            fixed(flags, "refunded", "text", Dialect::Postgres),
            r"select case when refunded ~* '^\s*(t|true|f|false|y|yes|n|no|on|off|1|0)\s*$' then cast(refunded as boolean) end, cast(rate as float8) from p"
        );
        assert_eq!(
            fixed(flags, "rate", "text", Dialect::Postgres),
            r"select refunded::boolean, case when rate ~ '^\s*[-+]?[0-9]{1,15}(\.[0-9]{1,15})?\s*$' then cast(rate as float8) end from p"
        );
    }

    #[test]
    fn a_join_on_a_cast_compares_as_text_in_every_dialect() {
        let sql = "from p\nleft join r\n    on cast(p.amount as integer) = r.amount_id\n";
        for dialect in [
            Dialect::Postgres,
            Dialect::Snowflake,
            Dialect::BigQuery,
            Dialect::Generic,
        ] {
            assert_eq!(
                fixed(sql, "amount", "VARCHAR(12)", dialect),
                "from p\nleft join r\n    on p.amount = cast(r.amount_id as varchar(12))\n",
                "{dialect:?}"
            );
        }
        let mirrored = "select 1 from p join r on r.amount_id = p.amount::int";
        assert_eq!(
            fixed(mirrored, "amount", "text", Dialect::Postgres),
            "select 1 from p join r on cast(r.amount_id as text) = p.amount"
        );
        let quoted = r#"select 1 from p join r on "R"."Amount id" = cast(p.amount as int)"#;
        assert_eq!(
            fixed(quoted, "amount", "text", Dialect::Postgres),
            r#"select 1 from p join r on cast("R"."Amount id" as text) = p.amount"#
        );
        let quoted = r#"select 1 from p join r on cast(p.amount as int) = "R"."Amount id""#;
        assert_eq!(
            fixed(quoted, "amount", "text", Dialect::Postgres),
            r#"select 1 from p join r on p.amount = cast("R"."Amount id" as text)"#
        );
        // Not a plain column on the other side: the safe conversion instead.
        let computed = "select 1 from p join r on cast(p.amount as int) = r.id + 1";
        assert_eq!(
            fixed(computed, "amount", "varchar", Dialect::Snowflake),
            "select 1 from p join r on try_cast(p.amount as int) = r.id + 1"
        );
        for computed in [
            "select 1 from p join r on r.id * 2 = cast(p.amount as int)",
            "select 1 from p join r on r.id + r.x = cast(p.amount as int)",
            "select 1 from p join r on cast(p.amount as int) = f(r.id)",
            "select 1 from p join r on cast(p.amount as int) = r.id::int",
        ] {
            let fixed = fixed(computed, "amount", "varchar", Dialect::Snowflake);
            assert!(fixed.contains("try_cast(p.amount as int)"), "{fixed}");
        }
    }

    #[test]
    fn string_uses_of_a_column_that_became_a_number_read_it_as_text() {
        let sql = "select lower(zip_code) as z from a where zip_code = 'A-3'";
        assert_eq!(
            fixed(sql, "zip_code", "integer", Dialect::Postgres),
            "select lower(cast(zip_code as text)) as z from a where cast(zip_code as text) = 'A-3'"
        );
        assert_eq!(
            fixed(sql, "zip_code", "int64", Dialect::BigQuery),
            "select lower(cast(zip_code as string)) as z from a \
             where cast(zip_code as string) = 'A-3'"
        );
        // Snowflake writes the number as text on its own (the lower() is left), but
        // cannot read 'A-3' as a number.
        assert_eq!(
            fixed(sql, "zip_code", "number", Dialect::Snowflake),
            "select lower(zip_code) as z from a where cast(zip_code as varchar) = 'A-3'"
        );
    }

    #[test]
    fn a_breaking_use_with_no_fix_leaves_the_whole_model_alone() {
        // `paid_on * 2` on a date has no fix; the comparison would have one.
        let sql = "select paid_on * 2 as x from p where paid_on = 'soon'";
        assert_eq!(fixed(sql, "paid_on", "date", Dialect::Postgres), sql);
        // A use whose text is not in the SQL (sqlparser's print) is not found.
        let change = ColumnChange {
            column: "amount".into(),
            new_type: "integer".into(),
        };
        let sql = "select trim(both ' ' from amount) from t";
        let finding = find_column_use(sql, &change, Dialect::Postgres);
        assert_eq!(finding.uses[0].risk, Risk::Breaks);
        let uses: Vec<&UseFinding> = finding.uses.iter().collect();
        assert_eq!(fix_uses(sql, &uses, "integer", Dialect::Postgres), sql);
    }

    #[test]
    fn each_use_is_rewritten_once_and_comments_never() {
        let sql = "-- amount / 100 stays in this comment\n\
                   select amount / 100 as a, amount / 100 as b, amount - amount as c from t";
        assert_eq!(
            fixed(sql, "amount", "STRING", Dialect::BigQuery),
            "-- amount / 100 stays in this comment\n\
             select safe_cast(amount as numeric) / 100 as a, \
             safe_cast(amount as numeric) / 100 as b, \
             safe_cast(amount as numeric) - safe_cast(amount as numeric) as c from t"
        );
        // Safe uses and no uses at all: nothing to do.
        assert_eq!(fixed(sql, "amount", "bigint", Dialect::Postgres), sql);
        assert_eq!(fix_uses(sql, &[], "text", Dialect::Postgres), sql);
    }

    #[test]
    fn findings_on_compiled_sql_fix_the_raw_file() {
        // Lineage reads the compiled SQL; the proposal edits the model as written.
        let compiled = "select amount / 100 as units from \"db\".\"billing\".\"payments\"";
        let raw = "select amount / 100 as units from {{ source('billing', 'payments') }}";
        let change = ColumnChange {
            column: "amount".into(),
            new_type: "text".into(),
        };
        let finding = find_column_use(compiled, &change, Dialect::Postgres);
        let uses: Vec<&UseFinding> = finding.uses.iter().collect();
        assert_eq!(
            fix_uses(raw, &uses, "text", Dialect::Postgres),
            format!(
                "select {PG_NUMBER} / 100 as units from {{{{ source('billing', 'payments') }}}}"
            )
        );
    }
}
