//! SQLite's CAST never fails, unlike every real warehouse: model SQL run on a SQLite
//! warehouse goes through a strict cast that raises as Snowflake would
//! (`Numeric value 'N/A' is not recognized`).

use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

pub(super) const STRICT_CAST: &str = "dataward_strict_cast";

pub(super) fn register_strict_cast(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        STRICT_CAST,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let target: String = ctx.get(1)?;
            let integer = !is_fractional_type(&target);
            match ctx.get_raw(0) {
                ValueRef::Null => Ok(Value::Null),
                ValueRef::Integer(i) => Ok(Value::Integer(i)),
                ValueRef::Real(f) if integer => Ok(Value::Integer(f as i64)),
                ValueRef::Real(f) => Ok(Value::Real(f)),
                ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                    let text = String::from_utf8_lossy(bytes);
                    let trimmed = text.trim();
                    let parsed = if integer {
                        trimmed.parse::<i64>().map(Value::Integer).ok()
                    } else {
                        trimmed.parse::<f64>().map(Value::Real).ok()
                    };
                    parsed.ok_or_else(|| {
                        rusqlite::Error::UserFunctionError(
                            format!("Numeric value '{text}' is not recognized (cast to {target})")
                                .into(),
                        )
                    })
                }
            }
        },
    )
}

pub(super) fn is_fractional_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    ["real", "float", "double", "decimal", "numeric", "number"]
        .iter()
        .any(|t| ty.starts_with(t))
}

pub(super) fn is_numeric_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    is_fractional_type(&ty)
        || ["int", "integer", "smallint", "bigint", "tinyint"]
            .iter()
            .any(|t| ty == *t)
}

/// Rewrites `CAST(expr AS <numeric type>)` into the strict cast function, at any depth.
/// Other casts are left alone.
pub fn strict_casts(sql: &str) -> String {
    let lower = sql.to_ascii_lowercase();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < sql.len() {
        let at_word_start = i == 0 || !is_ident_byte(sql.as_bytes()[i - 1]);
        if at_word_start && lower[i..].starts_with("cast") {
            if let Some((inner_start, close)) = cast_parens(&lower, i) {
                let inner = &sql[inner_start..close];
                if let Some(as_at) = last_top_level_as(&inner.to_ascii_lowercase()) {
                    let expr = &inner[..as_at];
                    let ty = inner[as_at + 4..].trim();
                    if is_numeric_type(ty) {
                        out.push_str(&format!(
                            "{STRICT_CAST}({}, '{}')",
                            strict_casts(expr.trim()),
                            ty.replace('\'', "")
                        ));
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        let ch = sql[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

pub(super) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// For `cast` at `start`, the byte range inside its parentheses.
pub(super) fn cast_parens(lower: &str, start: usize) -> Option<(usize, usize)> {
    let rest = &lower[start + 4..];
    let open = start + 4 + rest.len() - rest.trim_start().len();
    if lower.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    let mut depth = 0;
    for (offset, b) in lower.as_bytes()[open..].iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((open + 1, open + offset));
                }
            }
            _ => {}
        }
    }
    None
}

pub(super) fn last_top_level_as(inner_lower: &str) -> Option<usize> {
    let bytes = inner_lower.as_bytes();
    let mut depth = 0i32;
    let mut found = None;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            // " as " with any whitespace around it; the offset points at the space before.
            _ if depth == 0
                && b.is_ascii_whitespace()
                && inner_lower[i + 1..].starts_with("as")
                && bytes.get(i + 3).is_some_and(u8::is_ascii_whitespace) =>
            {
                found = Some(i)
            }
            _ => {}
        }
    }
    found
}
