//! The SQL Snowflake is sent: names folded and quoted as Snowflake stores them, types
//! named, and each check's query, every time window comparing the raw column with a
//! constant so micro-partitions are pruned.

use chrono::NaiveTime;

use super::super::{
    CastTarget, Relation, TableScan, WarehouseError, BOOLEAN_WORDS, DATE_WORDS, PRUNING_SLACK,
};

/// A name as Snowflake stores it when written unquoted: a plain identifier upper
/// cased; anything else as it is (it could only have been made quoted).
pub fn fold(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        name.to_ascii_uppercase()
    } else {
        name.to_string()
    }
}

/// A name, folded, as a quoted identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", fold(name).replace('"', "\"\""))
}

/// A relation as quoted identifiers.
pub(super) fn quoted(relation: &Relation) -> String {
    match &relation.schema {
        Some(schema) => format!("{}.{}", quote(schema), quote(&relation.table)),
        None => quote(&relation.table),
    }
}

/// A text literal: single quotes doubled, backslashes doubled (Snowflake reads escapes
/// in strings).
pub(super) fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// A timestamp column as Unix seconds, per row (UTC; a `TIMESTAMP_NTZ` as UTC).
pub(super) fn epoch_sql(column: &str) -> String {
    format!("DATE_PART(EPOCH_SECOND, {})", quote(column))
}

/// A type as `information_schema` has it, with its size where it matters:
/// `NUMBER(38,0)`, `TEXT(20)` (a TEXT of the largest size is plain `TEXT`),
/// `TIMESTAMP_NTZ`.
pub(super) fn type_name(
    base: &str,
    length: Option<i64>,
    precision: Option<i64>,
    scale: Option<i64>,
) -> String {
    match (base, length, precision, scale) {
        ("NUMBER", _, Some(p), Some(s)) => format!("NUMBER({p},{s})"),
        ("TEXT", Some(len), _, _) if len != 16_777_216 => format!("TEXT({len})"),
        _ => base.to_string(),
    }
}

/// The one query that reads a table for every check (see [`Warehouse::scan`]).
pub fn scan_sql(scan: &TableScan) -> String {
    // Per minute from the window's start, per day over the older stretch (as for
    // PostgreSQL), days and times of day from the epoch seconds.
    let (minute, at_midnight, older, cut) = match &scan.minutes {
        Some(window) => {
            let epoch = epoch_sql(window.column);
            let recent = format!("{epoch} >= {}", window.from);
            let older = format!("{epoch} >= {}", window.older_from);
            let time_of_day = format!("MOD(MOD({epoch}, 86400) + 86400, 86400)");
            (
                format!(
                    "IFF({recent}, FLOOR({epoch} / 60) * 60, \
                     IFF({older}, FLOOR({epoch} / 86400) * 86400, NULL))"
                ),
                format!("COUNT_IF(MOD({epoch}, 86400) = 0)"),
                format!("COUNT_IF({older})"),
                format!(
                    ",\n COUNT_IF({time_of_day} < {}) AS before_cutoff,\n \
                     CAST(COALESCE(MIN({epoch}), 0) AS BIGINT) AS earliest",
                    window.cutoff,
                ),
            )
        }
        None => (
            "CAST(NULL AS NUMBER(38,0))".into(),
            "0".into(),
            "0".into(),
            ", 0, 0".into(),
        ),
    };
    let counted = match scan.nulls_since {
        Some((column, since)) => format!("{} >= {since}", epoch_sql(column)),
        None => "TRUE".to_string(),
    };
    let nulls: String = scan
        .null_columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                ",\n COUNT_IF({counted} AND {} IS NULL) AS nulls_{i}",
                quote(c)
            )
        })
        .collect();
    let per_minute = scan
        .minute_nulls_sql(&|condition| format!("COUNT_IF({condition})"), &|_, c| {
            quote(c)
        });
    let nulls = format!("{nulls}{per_minute}{cut}");
    let table = quoted(scan.relation);
    let Some((column, bound)) = scan.pruning_bound() else {
        return format!(
            "SELECT {minute} AS minute, COUNT(*), {at_midnight}, {older},
                    COUNT_IF({counted}){nulls}
             FROM {table} GROUP BY 1"
        );
    };
    // Only the recent rows are read, by the raw column against a constant, so
    // Snowflake prunes the micro-partitions before it. The rows before it (and those
    // without a time) count only towards the total: the table's count, which
    // Snowflake answers from metadata, less the rows read.
    // BIGINT: a sum is wider than a count (under fakesnow, DuckDB's HUGEINT comes
    // back a float).
    let before = format!(
        "CAST((SELECT COUNT(*) FROM {table}) - (SELECT COALESCE(SUM(total), 0) FROM recent) AS BIGINT)"
    );
    let counted_before = match scan.nulls_since {
        Some(_) => "0".to_string(),
        None => before.clone(),
    };
    let no_nulls = ", 0".repeat(scan.width() - 4);
    format!(
        "WITH recent AS (
           SELECT {minute} AS minute, COUNT(*) AS total, {at_midnight} AS at_midnight,
                  {older} AS older, COUNT_IF({counted}) AS counted{nulls}
           FROM {table} WHERE {raw} >= {constant} GROUP BY 1)
         SELECT * FROM recent
         UNION ALL
         SELECT NULL, {before}, 0, 0, {counted_before}{no_nulls}",
        raw = quote(column),
        constant = timestamp_ntz(bound),
    )
}

/// Unix seconds as a `TIMESTAMP_NTZ` constant (UTC wall-clock time), to compare a raw
/// timestamp column with: a filter on the column as stored is one Snowflake prunes
/// micro-partitions by; one on a function of it reads every partition.
pub(super) fn timestamp_ntz(seconds: i64) -> String {
    let at = chrono::DateTime::from_timestamp(seconds, 0).unwrap_or_default();
    format!("'{}'::TIMESTAMP_NTZ", at.format("%Y-%m-%d %H:%M:%S"))
}

/// `column` at or after `since` (Unix seconds), exactly (the column's Unix seconds:
/// a `TIMESTAMP_NTZ` as UTC, a zoned one as its instant, a DATE as its midnight), and
/// by the raw column against a constant [`PRUNING_SLACK`] earlier, which holds for
/// every such row whatever the column's type and lets Snowflake prune.
pub(super) fn at_or_after(column: &str, since: i64) -> String {
    format!(
        "{raw} >= {constant} AND {epoch} >= {since}",
        raw = quote(column),
        constant = timestamp_ntz(since - PRUNING_SLACK),
        epoch = epoch_sql(column),
    )
}

/// A condition on the text `value` that is true when it would not cast to `target`:
/// the shapes of [`CastTarget::accepts`] in Snowflake's regular expressions (matched
/// whole; no backslashes, which Snowflake's strings would read as escapes).
pub(super) fn uncastable_sql(target: CastTarget) -> String {
    let matches = |pattern: &str| format!("REGEXP_LIKE(value, '{pattern}', 'i')");
    let space = "[[:space:]]*";
    match target {
        CastTarget::Text => "FALSE".to_string(),
        CastTarget::Integer { min, max } => format!(
            "IFF({}, COALESCE(TRY_TO_NUMBER(TRIM(value, ' ' || CHR(9) || CHR(10) || CHR(13) || CHR(11) || CHR(12)), 38, 0) NOT BETWEEN {min} AND {max}, TRUE), TRUE)",
            matches(&format!("{space}[-+]?[0-9]+{space}"))
        ),
        CastTarget::Number => format!(
            "NOT {}",
            matches(&format!(
                "{space}([-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)(e[-+]?[0-9]+)?|nan|[-+]?inf(inity)?){space}"
            ))
        ),
        CastTarget::Date => format!(
            "CASE WHEN {} THEN FALSE WHEN NOT {} THEN TRUE \
             ELSE TRY_TO_DATE(TRIM(value, ' ' || CHR(9) || CHR(10) || CHR(13) || CHR(11) || CHR(12)), 'YYYY-MM-DD') IS NULL END",
            matches(&format!("{space}({}){space}", DATE_WORDS.join("|"))),
            matches(&format!("{space}[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}{space}")),
        ),
        CastTarget::Boolean => format!(
            "NOT {}",
            matches(&format!("{space}({}){space}", BOOLEAN_WORDS.join("|")))
        ),
    }
}

/// Where the copy of `source` (as found) tagged `tag` lives: schema
/// `dataward_versions`, named by [`super::version_name`] from the lower-cased names
/// (Snowflake's unquoted names ignore case, as SQLite's do).
pub(super) fn versions_copy(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
    let lower = Relation {
        schema: source.schema.as_ref().map(|s| s.to_lowercase()),
        table: source.table.to_lowercase(),
    };
    super::super::versions_copy(&lower, tag)
}

/// The SQL of [`Warehouse::row_count`].
pub fn row_count_sql(relation: &Relation) -> String {
    format!("SELECT COUNT(*) FROM {}", quoted(relation))
}

/// The SQL of [`Warehouse::null_counts`].
pub fn null_counts_sql(
    relation: &Relation,
    columns: &[String],
    since: Option<(&str, i64)>,
) -> String {
    let mut sql = String::from("SELECT COUNT(*)");
    for column in columns {
        sql.push_str(&format!(", COUNT_IF({} IS NULL)", quote(column)));
    }
    sql.push_str(&format!(" FROM {}", quoted(relation)));
    if let Some((column, at)) = since {
        sql.push_str(&format!(" WHERE {}", at_or_after(column, at)));
    }
    sql
}

/// The SQL of [`Warehouse::load_times`].
pub fn load_times_sql(relation: &Relation, column: &str, since: i64, limit: usize) -> String {
    format!(
        "SELECT DISTINCT FLOOR({epoch} / 60) * 60 AS minute FROM {table}
         WHERE {window} ORDER BY minute DESC LIMIT {limit}",
        table = quoted(relation),
        epoch = epoch_sql(column),
        window = at_or_after(column, since),
    )
}

/// The SQL of [`Warehouse::daily_counts`].
pub fn daily_counts_sql(
    relation: &Relation,
    column: &str,
    since: i64,
    cutoff: NaiveTime,
) -> String {
    use chrono::Timelike;
    format!(
        "SELECT FLOOR({epoch} / 86400) AS day, COUNT(*),
                COUNT_IF(MOD({epoch}, 86400) < {cutoff}),
                COUNT_IF(MOD({epoch}, 86400) = 0)
         FROM {table}
         WHERE {window} GROUP BY 1 ORDER BY 1",
        table = quoted(relation),
        epoch = epoch_sql(column),
        window = at_or_after(column, since),
        cutoff = cutoff.num_seconds_from_midnight(),
    )
}
