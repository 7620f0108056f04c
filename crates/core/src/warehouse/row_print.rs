//! The text a row is hashed by in a day's print (`Warehouse::day_prints`), the same on
//! every engine, so a table moved from one warehouse to another holding the same rows
//! prints the same days (a migration wave's parity) and any changed value shows on its
//! day. Each value is spelled by its kind (`migration::parity::type_kind`), not by how
//! the engine would print its type:
//! - integers, and decimals without trailing zeros (`1.25` at any scale, `3` for
//!   `3.00`): digits, as both engines print them;
//! - floats as the engine prints them (the shortest text that reads back the same),
//!   less trailing zeros (`1.0` is `1`); past 1e15 or below 1e-4 engines may switch
//!   to an exponent at different points, so such floats may still print apart;
//! - booleans `true` or `false`;
//! - dates `YYYY-MM-DD`;
//! - timestamps, with a zone or without (taken as UTC), as microseconds since the
//!   Unix epoch: the same instant whatever zone it was written or is read in;
//! - text, and anything else, as its text.
//!
//! Each value is its length in characters, `:`, and its text; a null is `N` (never a length,
//! so never a value); values follow each other with nothing between (the lengths keep
//! them apart, so no text can pass for two values). The row's hash is the first 32 bits
//! of the MD5 of that text, read as an unsigned number; a day's print sums them.

use super::Column;
use crate::migration::parity::type_kind;

/// How an engine spells the pieces of the canonical text in its SQL.
pub struct Spelling {
    /// An expression as text.
    pub text: fn(&str) -> String,
    /// The length of a text expression in characters.
    pub chars: &'static str,
    /// A timestamp (with or without a zone) as microseconds since the epoch, as text.
    pub epoch_micros: fn(&str) -> String,
    /// A date as `YYYY-MM-DD`.
    pub date: fn(&str) -> String,
    /// The first 32 bits of the MD5 of a text expression, as an unsigned BIGINT.
    pub md5_32: fn(&str) -> String,
}

/// The value of `column` (a quoted name) as canonical text, before its length.
fn value_text(spelling: &Spelling, quoted: &str, data_type: &str) -> String {
    let text = spelling.text;
    match type_kind(data_type).as_str() {
        // The engine's digits, less the zeros a scale adds: 1.2500 and 1.25 alike (and a
        // float's 1.0, which one engine prints as 1). No backslash in the
        // patterns: the engines read backslashes in literals apart (and fakesnow's
        // RTRIM with characters is not Snowflake's). A float in exponent form
        // (`1.5e+20`) keeps its digits.
        "decimal" | "float" => {
            let t = text(quoted);
            format!(
                "CASE WHEN {t} LIKE '%.%' AND {t} NOT LIKE '%e%' AND {t} NOT LIKE '%E%' \
                 THEN regexp_replace(regexp_replace({t}, '0+$', ''), '[.]$', '') ELSE {t} END"
            )
        }
        "timestamp" | "timestamptz" => (spelling.epoch_micros)(quoted),
        "date" => (spelling.date)(quoted),
        _ => text(quoted),
    }
}

/// The first 32 bits of the MD5 of `text` from its hex digits, in SQL any engine reads
/// (for one that cannot read hex as a number: Snowflake's `TO_NUMBER(..., 'XXXXXXXX')`
/// is not in fakesnow, which its tests run on).
pub fn md5_32_from_hex_digits(md5: &str) -> String {
    let digits: Vec<String> = (1..=8u32)
        .map(|k| {
            format!(
                "(POSITION(SUBSTR({md5}, {k}, 1), '0123456789abcdef') - 1) * {}",
                16u64.pow(8 - k)
            )
        })
        .collect();
    format!("({})", digits.join(" + "))
}

/// The SQL of one row's hash: `quote` quotes a column name for the engine.
pub fn row_hash_sql(spelling: &Spelling, columns: &[Column], quote: fn(&str) -> String) -> String {
    let values: Vec<String> = (columns.iter())
        .map(|c| {
            let quoted = quote(&c.name);
            let value = value_text(spelling, &quoted, &c.data_type);
            format!(
                "CASE WHEN {quoted} IS NULL THEN 'N' ELSE {} || ':' || {value} END",
                (spelling.text)(&format!("{}({value})", spelling.chars))
            )
        })
        .collect();
    let row = match values.is_empty() {
        true => "''".to_string(),
        false => values.join(" || "),
    };
    (spelling.md5_32)(&row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelling() -> Spelling {
        Spelling {
            text: |e| format!("TXT({e})"),
            chars: "LEN",
            epoch_micros: |e| format!("US({e})"),
            date: |e| format!("DAY({e})"),
            md5_32: |e| format!("H({e})"),
        }
    }

    #[test]
    fn each_kind_is_spelled_by_its_kind_and_a_null_is_never_a_value() {
        let columns = [
            ("price", "numeric(10,2)"),
            ("at", "TIMESTAMP WITH TIME ZONE"),
            ("due", "date"),
            ("n", "text"),
        ]
        .map(|(name, data_type)| Column {
            name: name.into(),
            data_type: data_type.into(),
        });
        let sql = row_hash_sql(&spelling(), &columns, |n| format!("\"{n}\""));
        assert!(
            sql.starts_with("H(CASE WHEN \"price\" IS NULL THEN 'N'"),
            "{sql}"
        );
        assert!(
            sql.contains("regexp_replace(regexp_replace(TXT(\"price\"), '0+$', ''), '[.]$', '')"),
            "{sql}"
        );
        assert!(
            sql.contains("TXT(LEN(US(\"at\"))) || ':' || US(\"at\")"),
            "{sql}"
        );
        assert!(sql.contains("DAY(\"due\")"), "{sql}");
        assert!(
            sql.contains("TXT(LEN(TXT(\"n\"))) || ':' || TXT(\"n\")"),
            "{sql}"
        );
    }
}
