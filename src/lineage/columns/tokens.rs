//! The token method: the SQL is split into tokens (skipping comments, string literals
//! and Jinja blocks) and a few patterns are matched. It knows nothing about scopes, so
//! it can report a column of the same name from another table, and it misses
//! `select *` and casts of expressions that merely contain the column. It works on
//! unrendered Jinja, which is why it stays as the fallback to the parser.
//!
//! It also gives the exact text of every cast it sees, which the parser method borrows
//! (sqlparser's spans cover only the cast's argument, not the whole cast).

use super::FoundCast;

/// What the token scan saw: whether the column is read, and the casts of it.
pub(super) struct Scan {
    pub reads: bool,
    pub casts: Vec<FoundCast>,
}

/// `column` must be lowercase.
pub(super) fn scan(sql: &str, column: &str) -> Scan {
    let tokens = tokenize(sql);
    let reads = tokens.iter().enumerate().any(|(i, token)| {
        token.is_identifier(column)
            && !previous_is_word(&tokens, i, "as")
            && !next_is(&tokens, i, Kind::Dot)
    });
    let mut casts = Vec::new();
    for i in 0..tokens.len() {
        if let Some(cast) = function_cast_at(sql, &tokens, i, column) {
            casts.push(cast);
        } else if let Some(cast) = colon_cast_at(sql, &tokens, i, column) {
            casts.push(cast);
        }
    }
    Scan { reads, casts }
}

/// `cast(col as T)`, `try_cast(...)`, `safe_cast(...)` starting at token `i`.
fn function_cast_at(sql: &str, tokens: &[Token], i: usize, column: &str) -> Option<FoundCast> {
    let function = tokens[i].word()?;
    let fails_loudly = match function {
        "cast" => true,
        // These return null on a bad value instead of failing the model.
        "try_cast" | "safe_cast" => false,
        _ => return None,
    };
    if !next_is(tokens, i, Kind::OpenParen) {
        return None;
    }
    let close = matching_paren(tokens, i + 1)?;
    // The top-level `as` inside the parentheses splits the argument from the type.
    let mut depth = 0;
    let mut as_at = None;
    for (j, token) in tokens.iter().enumerate().take(close).skip(i + 2) {
        match token.kind {
            Kind::OpenParen => depth += 1,
            Kind::CloseParen => depth -= 1,
            _ if depth == 0 && token.word() == Some("as") => {
                as_at = Some(j);
                break;
            }
            _ => {}
        }
    }
    let as_at = as_at?;
    if !is_column_reference(&tokens[i + 2..as_at], column) || as_at + 1 >= close {
        return None;
    }
    Some(FoundCast {
        target_type: sql[tokens[as_at + 1].start..tokens[close - 1].end]
            .trim()
            .to_string(),
        expression: sql[tokens[i].start..tokens[close].end].to_string(),
        fails_loudly,
        column_at: tokens[i + 2].start,
    })
}

/// `col::T` or `alias.col::T`, where token `i` is the `::`.
fn colon_cast_at(sql: &str, tokens: &[Token], i: usize, column: &str) -> Option<FoundCast> {
    if tokens[i].kind != Kind::DoubleColon || i == 0 {
        return None;
    }
    // Walk back over `a.b.col`.
    let mut start = i - 1;
    while start >= 2
        && tokens[start - 1].kind == Kind::Dot
        && tokens[start - 2].kind == Kind::Identifier
    {
        start -= 2;
    }
    if !is_column_reference(&tokens[start..i], column) {
        return None;
    }
    // The type: a word, `double precision` / `character varying`, then `(...)` if any.
    let mut end = i + 1;
    let type_word = tokens.get(end)?.word()?;
    let following_word = tokens.get(end + 1).and_then(Token::word);
    if matches!(
        (type_word, following_word),
        ("double", Some("precision")) | ("character", Some("varying"))
    ) {
        end += 1;
    }
    if next_is(tokens, end, Kind::OpenParen) {
        end = matching_paren(tokens, end + 1)?;
    }
    Some(FoundCast {
        target_type: sql[tokens[i + 1].start..tokens[end].end].to_string(),
        expression: sql[tokens[start].start..tokens[end].end].to_string(),
        fails_loudly: true,
        column_at: tokens[start].start,
    })
}

/// `col`, `alias.col` or `db.schema.table.col`: identifiers joined by dots, ending in
/// the column.
fn is_column_reference(tokens: &[Token], column: &str) -> bool {
    let Some(last) = tokens.last() else {
        return false;
    };
    if !last.is_identifier(column) || tokens.len().is_multiple_of(2) {
        return false;
    }
    tokens.iter().enumerate().all(|(k, token)| {
        if k % 2 == 0 {
            token.kind == Kind::Identifier
        } else {
            token.kind == Kind::Dot
        }
    })
}

fn matching_paren(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, token) in tokens.iter().enumerate().skip(open) {
        match token.kind {
            Kind::OpenParen => depth += 1,
            Kind::CloseParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn next_is(tokens: &[Token], i: usize, kind: Kind) -> bool {
    tokens.get(i + 1).is_some_and(|t| t.kind == kind)
}

fn previous_is_word(tokens: &[Token], i: usize, word: &str) -> bool {
    i > 0 && tokens[i - 1].word() == Some(word)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A bare word or a quoted identifier; keywords are words too.
    Identifier,
    OpenParen,
    CloseParen,
    Dot,
    DoubleColon,
    /// Anything else: numbers, strings, operators, Jinja blocks.
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    /// Lowercased identifier text without quotes; empty for other kinds.
    text: String,
    quoted: bool,
}

impl Token {
    fn is_identifier(&self, lowercase_name: &str) -> bool {
        self.kind == Kind::Identifier && self.text == lowercase_name
    }

    /// The lowercased word, if this is an unquoted identifier (so `"as"` is not `as`).
    fn word(&self) -> Option<&str> {
        (self.kind == Kind::Identifier && !self.quoted).then_some(self.text.as_str())
    }
}

/// Split SQL into tokens with byte spans. Comments are dropped; string literals and
/// Jinja blocks (`{{ }}`, `{% %}`, `{# #}`) become single `Other` tokens so their
/// contents never look like identifiers.
fn tokenize(sql: &str) -> Vec<Token> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let other = |start, end| Token {
        kind: Kind::Other,
        start,
        end,
        text: String::new(),
        quoted: false,
    };
    while i < bytes.len() {
        let rest = &sql[i..];
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if rest.starts_with("--") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if let Some(close) = jinja_close(rest) {
            let end = rest[2..].find(close).map_or(rest.len(), |end| end + 4);
            tokens.push(other(i, i + end));
            i += end;
        } else if c == b'\'' {
            let end = quoted_end(bytes, i, b'\'');
            tokens.push(other(i, end));
            i = end;
        } else if c == b'"' || c == b'`' {
            let end = quoted_end(bytes, i, c);
            let inner_end = if end > i + 1 && bytes[end - 1] == c {
                end - 1
            } else {
                end
            };
            tokens.push(Token {
                kind: Kind::Identifier,
                start: i,
                end,
                text: sql[i + 1..inner_end].to_lowercase(),
                quoted: true,
            });
            i = end;
        } else if rest.starts_with(|ch: char| ch.is_alphabetic() || ch == '_') {
            let end = i + rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '$'))
                .unwrap_or(rest.len());
            tokens.push(Token {
                kind: Kind::Identifier,
                start: i,
                end,
                text: sql[i..end].to_lowercase(),
                quoted: false,
            });
            i = end;
        } else {
            let (kind, len) = match c {
                b'(' => (Kind::OpenParen, 1),
                b')' => (Kind::CloseParen, 1),
                b'.' => (Kind::Dot, 1),
                b':' if rest.starts_with("::") => (Kind::DoubleColon, 2),
                // Whole characters, so spans stay on UTF-8 boundaries.
                _ => (Kind::Other, rest.chars().next().map_or(1, char::len_utf8)),
            };
            tokens.push(Token {
                kind,
                ..other(i, i + len)
            });
            i += len;
        }
    }
    tokens
}

fn jinja_close(rest: &str) -> Option<&'static str> {
    if rest.starts_with("{{") {
        Some("}}")
    } else if rest.starts_with("{%") {
        Some("%}")
    } else if rest.starts_with("{#") {
        Some("#}")
    } else {
        None
    }
}

/// End (exclusive) of a quoted run starting at `start`; a doubled quote is an escape.
fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::super::{find_with_tokens as find_column_use, ColumnChange};

    fn change() -> ColumnChange {
        ColumnChange {
            column: "seat_section".into(),
            new_type: "VARCHAR(12)".into(),
        }
    }

    #[test]
    fn finds_plain_and_qualified_casts() {
        let sql = "select CAST(o.Seat_Section AS integer) as section_no, seat_section::numeric(4, 0) as n\n\
                   from {{ ref('stg_orders') }} o";
        let finding = find_column_use(sql, &change());
        assert!(finding.reads);
        assert_eq!(finding.casts.len(), 2);
        assert_eq!(
            finding.casts[0].expression,
            "CAST(o.Seat_Section AS integer)"
        );
        assert_eq!(finding.casts[0].target_type, "integer");
        assert!(finding.casts[0].break_risk);
        assert_eq!(finding.casts[1].expression, "seat_section::numeric(4, 0)");
        assert_eq!(finding.casts[1].target_type, "numeric(4, 0)");
        assert!(finding.casts[1].break_risk);
    }

    #[test]
    fn safe_casts_are_reported_without_risk() {
        let sql =
            "select try_cast(seat_section as int) a, safe_cast(x.seat_section as int64) b from t x";
        let finding = find_column_use(sql, &change());
        assert_eq!(finding.casts.len(), 2);
        assert!(finding.casts.iter().all(|c| !c.break_risk));
    }

    #[test]
    fn casts_to_text_or_from_a_non_text_change_are_no_risk() {
        let sql = "select cast(seat_section as varchar) from t";
        assert!(!find_column_use(sql, &change()).casts[0].break_risk);
        let to_bigint = ColumnChange {
            column: "seat_section".into(),
            new_type: "bigint".into(),
        };
        let sql = "select cast(seat_section as integer) from t";
        assert!(!find_column_use(sql, &to_bigint).casts[0].break_risk);
    }

    #[test]
    fn strings_comments_jinja_and_aliases_are_not_reads() {
        let sql = "-- seat_section is cast below\n/* seat_section */\n\
                   select 'seat_section' as label, cast(x as int) as seat_section,\n\
                   {{ var('seat_section') }} from {% if seat_section %}t{% endif %}";
        let finding = find_column_use(sql, &change());
        assert!(!finding.reads, "{finding:?}");
        assert!(finding.casts.is_empty());
    }

    #[test]
    fn casts_of_other_columns_or_expressions_are_not_findings() {
        let sql = "select cast(seat_section_id as int), cast(trim(seat_section) as int), \
                   seat_sections::int, (seat_section)::int from t";
        let finding = find_column_use(sql, &change());
        assert!(finding.reads);
        assert!(finding.casts.is_empty(), "{:?}", finding.casts);
    }

    #[test]
    fn two_word_types_and_non_ascii_text() {
        let sql = "select seat_section::double precision as d, 'è → ü' as s, größe from t";
        let finding = find_column_use(sql, &change());
        assert_eq!(finding.casts[0].target_type, "double precision");
        assert!(finding.casts[0].break_risk);
    }

    #[test]
    fn quoted_identifiers_count() {
        let finding = find_column_use(r#"select "SEAT_SECTION"::int from t"#, &change());
        assert!(finding.reads);
        assert_eq!(finding.casts[0].expression, r#""SEAT_SECTION"::int"#);
    }
}
