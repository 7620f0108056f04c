//! SQL rewrites behind diff proposals. Token-level and conservative: when a rewrite is
//! not clearly right, the SQL comes back unchanged and no diff is proposed.

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

/// `cast(o.seat_section as integer)` -> `o.seat_section`; `seat_section::int` -> `seat_section`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_on_a_cast_becomes_a_join_on_text() {
        let sql =
            "from o\nleft join m\n    on cast(o.seat_section as integer) = m.section_number\n";
        assert_eq!(
            keep_as_text(sql, &["cast(o.seat_section as integer)"], "VARCHAR(12)"),
            "from o\nleft join m\n    on o.seat_section = cast(m.section_number as varchar(12))\n"
        );
    }

    #[test]
    fn a_cast_outside_a_comparison_casts_to_the_new_type() {
        assert_eq!(
            keep_as_text(
                "select seat_section::int as s",
                &["seat_section::int"],
                "TEXT"
            ),
            "select cast(seat_section as text) as s"
        );
    }

    #[test]
    fn an_unknown_cast_changes_nothing() {
        assert_eq!(
            keep_as_text("select 1", &["cast(x as int)"], "TEXT"),
            "select 1"
        );
    }
}
