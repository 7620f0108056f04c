//! The token method: the SQL is split into tokens (skipping comments, and keeping string
//! literals and Jinja blocks whole) and each reference to the column is looked at in its
//! surroundings: a cast around it, a function it is an argument of, or the operator it
//! is an operand of (with the usual precedence: `* / %` over `+ -` over `||` over
//! comparisons). It knows nothing about scopes, so it can report a column of the same
//! name from another table, and it misses `select *`. It works on unrendered Jinja,
//! which is why it stays as the fallback to the parser.
//!
//! It also gives the exact text of every use it sees, which the parser method borrows
//! (sqlparser's spans do not cover a whole cast, function call or parenthesis).

use super::{FoundUse, Literal, Operand, UseDetail, NUMERIC_FUNCTIONS, STRING_FUNCTIONS};

/// What the token scan saw: whether the column is read, and its uses.
pub(super) struct Scan {
    pub reads: bool,
    pub uses: Vec<FoundUse>,
}

/// `column` must be lowercase.
pub(super) fn scan(sql: &str, column: &str) -> Scan {
    let tokens = tokenize(sql);
    let reads = tokens.iter().enumerate().any(|(i, token)| {
        token.is_identifier(column)
            && !previous_is_word(&tokens, i, "as")
            && !next_is(&tokens, i, Kind::Dot)
    });
    let uses = (0..tokens.len())
        .filter_map(|i| {
            let end = column_reference_at(&tokens, i, column)?;
            use_of(sql, &tokens, i, end)
        })
        .collect();
    Scan { reads, uses }
}

/// If a reference to the column (`col`, `alias.col`, `db.schema.table.col`) starts at
/// token `i`, the index of its last token. An output alias (`as col`) and a function
/// of the same name (`col(...)`) are not references.
fn column_reference_at(tokens: &[Token], i: usize, column: &str) -> Option<usize> {
    if tokens[i].kind != Kind::Identifier || (i > 0 && tokens[i - 1].kind == Kind::Dot) {
        return None;
    }
    let mut end = i;
    while next_is(tokens, end, Kind::Dot) && next_is(tokens, end + 1, Kind::Identifier) {
        end += 2;
    }
    let is_reference = tokens[end].is_identifier(column)
        && !previous_is_word(tokens, i, "as")
        && !next_is(tokens, end, Kind::Dot)
        && !next_is(tokens, end, Kind::OpenParen);
    is_reference.then_some(end)
}

/// The use whose direct operand or argument is the column reference `tokens[start..=end]`.
fn use_of(sql: &str, tokens: &[Token], start: usize, end: usize) -> Option<FoundUse> {
    let found = |from: usize, to: usize, detail: UseDetail| FoundUse {
        detail,
        expression: sql[tokens[from].start..tokens[to].end].to_string(),
        span: tokens[from].start..tokens[to].end,
        column: sql[tokens[start].start..tokens[end].end].to_string(),
        column_span: tokens[start].start..tokens[end].end,
    };
    if let Some((from, to, detail)) = function_cast(sql, tokens, start, end) {
        return Some(found(from, to, detail));
    }
    if next_is(tokens, end, Kind::DoubleColon) {
        let to = type_end(tokens, end + 2)?;
        let detail = UseDetail::Cast {
            target_type: sql[tokens[end + 2].start..tokens[to].end].to_string(),
            fails_loudly: true,
        };
        return Some(found(start, to, detail));
    }
    if let Some((from, to, detail)) = function_argument(tokens, start, end) {
        return Some(found(from, to, detail));
    }
    let (from, to, detail) = operand_of(tokens, start, end)?;
    Some(found(from, to, detail))
}

/// `cast(col as T)`, `try_cast(...)`, `safe_cast(...)` around the column.
fn function_cast(
    sql: &str,
    tokens: &[Token],
    start: usize,
    end: usize,
) -> Option<(usize, usize, UseDetail)> {
    if start < 2 || tokens[start - 1].kind != Kind::OpenParen {
        return None;
    }
    let function = start - 2;
    let fails_loudly = match tokens[function].word()? {
        "cast" => true,
        // These return null on a bad value instead of failing the model.
        "try_cast" | "safe_cast" => false,
        _ => return None,
    };
    let as_at = end + 1;
    if tokens.get(as_at)?.word() != Some("as") {
        return None;
    }
    let close = matching_paren(tokens, start - 1)?;
    if as_at + 1 >= close {
        return None;
    }
    let detail = UseDetail::Cast {
        target_type: sql[tokens[as_at + 1].start..tokens[close - 1].end]
            .trim()
            .to_string(),
        fails_loudly,
    };
    Some((function, close, detail))
}

/// `f(col)`, `f(distinct col)`, `f(x, col)` for a function we judge: any argument of
/// a numeric function, the first of a string function.
fn function_argument(
    tokens: &[Token],
    start: usize,
    end: usize,
) -> Option<(usize, usize, UseDetail)> {
    let mut before = start.checked_sub(1)?;
    if tokens[before].word() == Some("distinct") {
        before = before.checked_sub(1)?;
    }
    let after = tokens.get(end + 1)?;
    if !matches!(after.kind, Kind::CloseParen | Kind::Comma)
        || !matches!(tokens[before].kind, Kind::OpenParen | Kind::Comma)
    {
        return None;
    }
    // Back to the call's own parenthesis, counting the arguments before this one.
    let mut open = before;
    let mut first = true;
    let mut depth = 0;
    loop {
        match tokens[open].kind {
            Kind::CloseParen => depth += 1,
            Kind::OpenParen if depth == 0 => break,
            Kind::OpenParen => depth -= 1,
            Kind::Comma if depth == 0 => first = false,
            _ => {}
        }
        open = open.checked_sub(1)?;
    }
    let name_at = open.checked_sub(1)?;
    let name = tokens[name_at].word()?;
    let judged = NUMERIC_FUNCTIONS.contains(&name)
        || (first && STRING_FUNCTIONS.contains(&name) && !is_operator_word(name));
    if !judged {
        return None;
    }
    let close = matching_paren(tokens, open)?;
    Some((
        name_at,
        close,
        UseDetail::Function {
            name: name.to_string(),
        },
    ))
}

fn is_operator_word(name: &str) -> bool {
    matches!(name, "||" | "like" | "ilike")
}

/// The binary or unary operator the column is a direct operand of, if we judge it.
fn operand_of(tokens: &[Token], start: usize, end: usize) -> Option<(usize, usize, UseDetail)> {
    let before = start.checked_sub(1).map(|i| &tokens[i]);
    let unary = before
        .is_some_and(|t| t.kind == Kind::Operator && matches!(t.text.as_str(), "-" | "+"))
        && (start < 2 || !ends_operand(&tokens[start - 2]));
    if unary {
        let detail = UseDetail::Arithmetic {
            op: tokens[start - 1].text.clone(),
            other: None,
            column_first: false,
        };
        return Some((start - 1, end, detail));
    }
    let left_op = before
        .filter(|t| t.kind == Kind::Operator)
        .filter(|_| start >= 2 && ends_operand(&tokens[start - 2]))
        .map(|t| t.text.clone());
    // `col like ...`, `col not like ...` or `col <op> ...`.
    let (right_op, right_len) = match tokens.get(end + 1) {
        Some(t) if t.kind == Kind::Operator => (Some(t.text.clone()), 1),
        Some(t) if matches!(t.word(), Some("like" | "ilike")) => (t.word().map(str::to_string), 1),
        Some(t) if t.word() == Some("not") => match tokens.get(end + 2).and_then(Token::word) {
            Some(word @ ("like" | "ilike")) => (Some(word.to_string()), 2),
            _ => (None, 0),
        },
        _ => (None, 0),
    };
    let column_first = match (&left_op, &right_op) {
        (Some(left), Some(right)) => precedence(left) < precedence(right),
        (Some(_), None) => false,
        (None, Some(_)) => true,
        (None, None) => return None,
    };
    let (from, to, op, other) = if column_first {
        let op = right_op?;
        let other_start = end + 1 + right_len;
        let other_end = expression_end(tokens, other_start, precedence(&op))?;
        (start, other_end, op, other_start..=other_end)
    } else {
        let op = left_op?;
        let other_start = expression_start(tokens, start - 2, precedence(&op))?;
        (other_start, end, op, other_start..=start - 2)
    };
    let other = &tokens[other];
    let detail = match op.as_str() {
        "+" | "-" | "*" | "/" | "%" => UseDetail::Arithmetic {
            op,
            other: Some(literal(other).map_or(Operand::Expression, Operand::Literal)),
            column_first,
        },
        "=" | "<>" | "!=" | "<" | ">" | "<=" | ">=" => UseDetail::Comparison {
            op,
            literal: literal(other)?,
            column_first,
        },
        "||" => UseDetail::Function { name: op },
        "like" | "ilike" if column_first => UseDetail::Function { name: op },
        _ => return None,
    };
    Some((from, to, detail))
}

/// A literal operand: a number (with a sign) or a string.
fn literal(tokens: &[Token]) -> Option<Literal> {
    match tokens {
        [t] if t.kind == Kind::Number => Some(Literal::Number(t.text.clone())),
        [sign, t]
            if t.kind == Kind::Number
                && sign.kind == Kind::Operator
                && matches!(sign.text.as_str(), "-" | "+") =>
        {
            Some(Literal::Number(format!("{}{}", sign.text, t.text)))
        }
        [t] if t.kind == Kind::String => Some(Literal::Text(t.text.clone())),
        _ => None,
    }
}

/// Binding strength of a binary operator, higher binds tighter (PostgreSQL's order).
fn precedence(op: &str) -> u8 {
    match op {
        "*" | "/" | "%" => 6,
        "+" | "-" => 5,
        "like" | "ilike" => 3,
        "=" | "<>" | "!=" | "<" | ">" | "<=" | ">=" => 2,
        // `||` and every other operator.
        _ => 4,
    }
}

/// The last token of the expression starting at `i` that holds only operators binding
/// tighter than `weaker_than` (left associative: an equal operator ends it).
fn expression_end(tokens: &[Token], i: usize, weaker_than: u8) -> Option<usize> {
    let mut end = operand_end(tokens, i)?;
    while let Some(op) = tokens.get(end + 1).filter(|t| t.kind == Kind::Operator) {
        let strength = precedence(&op.text);
        if strength <= weaker_than {
            break;
        }
        end = expression_end(tokens, end + 2, strength)?;
    }
    Some(end)
}

/// The first token of the expression ending at `i` that holds only operators binding at
/// least as tight as `at_least` (left associative: an equal operator belongs to it).
fn expression_start(tokens: &[Token], i: usize, at_least: u8) -> Option<usize> {
    let mut start = operand_start(tokens, i)?;
    while start >= 2
        && tokens[start - 1].kind == Kind::Operator
        && ends_operand(&tokens[start - 2])
        && precedence(&tokens[start - 1].text) >= at_least
    {
        start = operand_start(tokens, start - 2)?;
    }
    Some(start)
}

/// One operand from token `i`: signs, an atom, then any `::type`.
fn operand_end(tokens: &[Token], i: usize) -> Option<usize> {
    let mut j = i;
    while tokens
        .get(j)
        .is_some_and(|t| t.kind == Kind::Operator && matches!(t.text.as_str(), "-" | "+"))
    {
        j += 1;
    }
    let mut end = atom_end(tokens, j)?;
    while next_is(tokens, end, Kind::DoubleColon) {
        end = type_end(tokens, end + 2)?;
    }
    Some(end)
}

/// One operand ending at token `i`: an atom with any `::type`, then its signs.
fn operand_start(tokens: &[Token], i: usize) -> Option<usize> {
    let mut start = atom_start(tokens, i)?;
    while start >= 1
        && tokens[start - 1].kind == Kind::Operator
        && matches!(tokens[start - 1].text.as_str(), "-" | "+")
        && !(start >= 2 && ends_operand(&tokens[start - 2]))
    {
        start -= 1;
    }
    Some(start)
}

fn atom_end(tokens: &[Token], i: usize) -> Option<usize> {
    let token = tokens.get(i)?;
    match token.kind {
        Kind::Number | Kind::String | Kind::Jinja => Some(i),
        Kind::OpenParen => matching_paren(tokens, i),
        Kind::Identifier => {
            if token.word() == Some("case") {
                return matching_end(tokens, i);
            }
            if TYPED_LITERALS.contains(&token.text.as_str()) && next_is(tokens, i, Kind::String) {
                return Some(i + 1);
            }
            let callable = next_is(tokens, i, Kind::OpenParen) && is_function_name(token);
            if !callable && !is_operand_word(token) {
                return None;
            }
            let mut end = i;
            while next_is(tokens, end, Kind::Dot) && next_is(tokens, end + 1, Kind::Identifier) {
                end += 2;
            }
            if next_is(tokens, end, Kind::OpenParen) {
                end = matching_paren(tokens, end + 1)?;
                end = call_suffix_end(tokens, end)?;
            }
            Some(end)
        }
        _ => None,
    }
}

/// After a call's `)`: `filter (...)`, `within group (...)`, `over (...)` or `over w`.
fn call_suffix_end(tokens: &[Token], mut end: usize) -> Option<usize> {
    loop {
        let next = tokens.get(end + 1).and_then(Token::word);
        match next {
            Some("filter") if next_is(tokens, end + 1, Kind::OpenParen) => {
                end = matching_paren(tokens, end + 2)?;
            }
            Some("within")
                if tokens.get(end + 2).and_then(Token::word) == Some("group")
                    && next_is(tokens, end + 2, Kind::OpenParen) =>
            {
                end = matching_paren(tokens, end + 3)?;
            }
            Some("over") if next_is(tokens, end + 1, Kind::OpenParen) => {
                end = matching_paren(tokens, end + 2)?;
            }
            Some("over") if next_is(tokens, end + 1, Kind::Identifier) => end += 2,
            _ => return Some(end),
        }
    }
}

fn atom_start(tokens: &[Token], i: usize) -> Option<usize> {
    // A `::type` suffix: skip back to what is cast.
    if let Some(before_type) = cast_type_start(tokens, i) {
        if before_type >= 2 && tokens[before_type - 1].kind == Kind::DoubleColon {
            return atom_start(tokens, before_type - 2);
        }
    }
    let token = &tokens[i];
    match token.kind {
        Kind::Number | Kind::Jinja => Some(i),
        Kind::String => {
            let typed = i >= 1 && TYPED_LITERALS.contains(&tokens[i - 1].text.as_str());
            Some(if typed { i - 1 } else { i })
        }
        Kind::CloseParen => {
            let open = matching_open_paren(tokens, i)?;
            let Some(name) = open.checked_sub(1) else {
                return Some(open);
            };
            match tokens[name].word() {
                Some("over" | "filter") => atom_start(tokens, name.checked_sub(1)?),
                Some("group") if name >= 1 && tokens[name - 1].word() == Some("within") => {
                    atom_start(tokens, name.checked_sub(2)?)
                }
                _ if tokens[name].kind == Kind::Identifier && is_function_name(&tokens[name]) => {
                    Some(chain_start(tokens, name))
                }
                _ => Some(open),
            }
        }
        Kind::Identifier => {
            if token.word() == Some("end") {
                return matching_case(tokens, i);
            }
            if i >= 2 && tokens[i - 1].word() == Some("over") {
                return atom_start(tokens, i - 2);
            }
            is_operand_word(token).then(|| chain_start(tokens, i))
        }
        _ => None,
    }
}

/// The start of `a.b.c` ending at `i`.
fn chain_start(tokens: &[Token], i: usize) -> usize {
    let mut start = i;
    while start >= 2
        && tokens[start - 1].kind == Kind::Dot
        && tokens[start - 2].kind == Kind::Identifier
    {
        start -= 2;
    }
    start
}

/// If token `i` ends a type name (`int`, `double precision`, `numeric(10, 2)`), where
/// the type name starts.
fn cast_type_start(tokens: &[Token], i: usize) -> Option<usize> {
    let mut word = i;
    if tokens[i].kind == Kind::CloseParen {
        word = matching_open_paren(tokens, i)?.checked_sub(1)?;
    }
    tokens[word].word()?;
    let two_words = word >= 1
        && matches!(
            (tokens[word - 1].word(), tokens[word].word()),
            (Some("double"), Some("precision")) | (Some("character"), Some("varying"))
        );
    Some(if two_words { word - 1 } else { word })
}

/// The last token of a type name starting at `i`: a word, `double precision` /
/// `character varying`, then `(...)` if any.
fn type_end(tokens: &[Token], i: usize) -> Option<usize> {
    let mut end = i;
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
    Some(end)
}

/// Words that start a typed literal: `date '2024-01-31'`, `interval '1 day'`.
const TYPED_LITERALS: &[&str] = &["date", "time", "timestamp", "timestamptz", "interval"];

/// SQL words that are never an operand on their own. `null`, `true` and `false` are
/// operands; `left` and `right` are functions when a parenthesis follows.
const KEYWORDS: &[&str] = &[
    "select",
    "from",
    "where",
    "and",
    "or",
    "not",
    "as",
    "on",
    "using",
    "join",
    "inner",
    "outer",
    "full",
    "cross",
    "left",
    "right",
    "group",
    "by",
    "order",
    "having",
    "limit",
    "offset",
    "union",
    "all",
    "except",
    "intersect",
    "when",
    "then",
    "else",
    "case",
    "end",
    "is",
    "in",
    "between",
    "like",
    "ilike",
    "similar",
    "distinct",
    "over",
    "partition",
    "filter",
    "within",
    "asc",
    "desc",
    "nulls",
    "with",
    "qualify",
    "window",
    "rows",
    "range",
    "preceding",
    "following",
    "unbounded",
    "current",
    "row",
    "into",
    "values",
    "set",
    "returning",
    "lateral",
    "escape",
    "collate",
    "at",
    "exists",
    "any",
    "some",
    "interval",
];

/// Keywords that are never a function name before `(`.
const NOT_FUNCTIONS: &[&str] = &[
    "select",
    "from",
    "where",
    "and",
    "or",
    "not",
    "as",
    "on",
    "using",
    "join",
    "in",
    "over",
    "filter",
    "within",
    "values",
    "when",
    "then",
    "else",
    "by",
    "all",
    "any",
    "some",
    "distinct",
    "lateral",
    "into",
    "with",
    "is",
    "case",
    "end",
    "union",
    "except",
    "intersect",
    "having",
    "limit",
    "offset",
    "returning",
    "set",
    "exists",
    "between",
    "like",
    "ilike",
];

fn is_operand_word(token: &Token) -> bool {
    token.quoted || !KEYWORDS.contains(&token.text.as_str())
}

fn is_function_name(token: &Token) -> bool {
    token.quoted || !NOT_FUNCTIONS.contains(&token.text.as_str())
}

/// Whether a binary operator may follow this token (it ends an operand).
fn ends_operand(token: &Token) -> bool {
    match token.kind {
        Kind::Number | Kind::String | Kind::Jinja | Kind::CloseParen => true,
        Kind::Identifier => token.word() == Some("end") || is_operand_word(token),
        _ => false,
    }
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

fn matching_open_paren(tokens: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0;
    for j in (0..=close).rev() {
        match tokens[j].kind {
            Kind::CloseParen => depth += 1,
            Kind::OpenParen => {
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

/// The `end` closing the `case` at `i`.
fn matching_end(tokens: &[Token], case: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, token) in tokens.iter().enumerate().skip(case) {
        match token.word() {
            Some("case") => depth += 1,
            Some("end") => {
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

/// The `case` opening the `end` at `i`.
fn matching_case(tokens: &[Token], end: usize) -> Option<usize> {
    let mut depth = 0;
    for j in (0..=end).rev() {
        match tokens[j].word() {
            Some("end") => depth += 1,
            Some("case") => {
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
pub(in crate::lineage) enum Kind {
    /// A bare word or a quoted identifier; keywords are words too.
    Identifier,
    Number,
    String,
    /// `+`, `-`, `*`, `/`, `%`, `||`, comparisons and any other run of operator
    /// characters.
    Operator,
    OpenParen,
    CloseParen,
    Comma,
    Dot,
    DoubleColon,
    /// `{{ ... }}`, `{% ... %}`, `{# ... #}`.
    Jinja,
    /// Anything else: `;`, `[`, ...
    Other,
}

#[derive(Debug, Clone)]
pub(in crate::lineage) struct Token {
    pub(in crate::lineage) kind: Kind,
    pub(in crate::lineage) start: usize,
    pub(in crate::lineage) end: usize,
    /// Identifiers: lowercased, without quotes. Numbers and operators: as written.
    /// Strings: the content, quotes removed and doubled quotes undone. Else empty.
    pub(in crate::lineage) text: String,
    pub(in crate::lineage) quoted: bool,
}

impl Token {
    fn is_identifier(&self, lowercase_name: &str) -> bool {
        self.kind == Kind::Identifier && self.text == lowercase_name
    }

    /// The lowercased word, if this is an unquoted identifier (so `"as"` is not `as`).
    pub(in crate::lineage) fn word(&self) -> Option<&str> {
        (self.kind == Kind::Identifier && !self.quoted).then_some(self.text.as_str())
    }
}

const OPERATOR_CHARS: &[u8] = b"+-*/<>=~!@#%^&|`?";

/// Split SQL into tokens with byte spans. Comments are dropped; string literals and
/// Jinja blocks are single tokens so their contents never look like identifiers.
pub(in crate::lineage) fn tokenize(sql: &str) -> Vec<Token> {
    let bytes = sql.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    let token = |kind, start, end, text: String| Token {
        kind,
        start,
        end,
        text,
        quoted: false,
    };
    while i < bytes.len() {
        let rest = &sql[i..];
        let c = bytes[i];
        let after_word = tokens
            .last()
            .is_some_and(|t| matches!(t.kind, Kind::Identifier | Kind::CloseParen));
        if c.is_ascii_whitespace() {
            i += 1;
        } else if rest.starts_with("--") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if let Some(close) = jinja_close(rest) {
            let end = rest[2..].find(close).map_or(rest.len(), |end| end + 4);
            tokens.push(token(Kind::Jinja, i, i + end, String::new()));
            i += end;
        } else if c == b'\'' {
            let end = quoted_end(bytes, i, b'\'');
            let inner_end = if end > i + 1 && bytes[end - 1] == b'\'' {
                end - 1
            } else {
                end
            };
            let content = sql[i + 1..inner_end].replace("''", "'");
            tokens.push(token(Kind::String, i, end, content));
            i = end;
        } else if c == b'"' || c == b'`' {
            let end = quoted_end(bytes, i, c);
            let inner_end = if end > i + 1 && bytes[end - 1] == c {
                end - 1
            } else {
                end
            };
            tokens.push(Token {
                quoted: true,
                ..token(
                    Kind::Identifier,
                    i,
                    end,
                    sql[i + 1..inner_end].to_lowercase(),
                )
            });
            i = end;
        } else if rest.starts_with(|ch: char| ch.is_alphabetic() || ch == '_') {
            let end = i + rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '$'))
                .unwrap_or(rest.len());
            tokens.push(token(Kind::Identifier, i, end, sql[i..end].to_lowercase()));
            i = end;
        } else if c.is_ascii_digit()
            || (c == b'.' && !after_word && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let end = i + number_len(rest);
            tokens.push(token(Kind::Number, i, end, sql[i..end].to_string()));
            i = end;
        } else if OPERATOR_CHARS.contains(&c) {
            let len = operator_len(rest);
            tokens.push(token(Kind::Operator, i, i + len, rest[..len].to_string()));
            i += len;
        } else {
            let (kind, len) = match c {
                b'(' => (Kind::OpenParen, 1),
                b')' => (Kind::CloseParen, 1),
                b',' => (Kind::Comma, 1),
                b'.' => (Kind::Dot, 1),
                b':' if rest.starts_with("::") => (Kind::DoubleColon, 2),
                // Whole characters, so spans stay on UTF-8 boundaries.
                _ => (Kind::Other, rest.chars().next().map_or(1, char::len_utf8)),
            };
            tokens.push(token(kind, i, i + len, String::new()));
            i += len;
        }
    }
    tokens
}

/// `12`, `1.5`, `.5`, `1e-3`.
fn number_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut len = 0;
    while len < bytes.len() && bytes[len].is_ascii_digit() {
        len += 1;
    }
    if bytes.get(len) == Some(&b'.') {
        len += 1;
        while len < bytes.len() && bytes[len].is_ascii_digit() {
            len += 1;
        }
    }
    if matches!(bytes.get(len), Some(b'e' | b'E')) {
        let mut exponent = len + 1;
        if matches!(bytes.get(exponent), Some(b'+' | b'-')) {
            exponent += 1;
        }
        if bytes.get(exponent).is_some_and(u8::is_ascii_digit) {
            len = exponent;
            while len < bytes.len() && bytes[len].is_ascii_digit() {
                len += 1;
            }
        }
    }
    len
}

/// PostgreSQL's rule: the longest run of operator characters, stopping before a
/// comment, and not ending in `+` or `-` unless the run holds one of `~!@#%^&|`?` (so
/// `*-1` is `*` then `-`).
fn operator_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut len = 0;
    while len < bytes.len()
        && OPERATOR_CHARS.contains(&bytes[len])
        && !(len > 0 && (rest[len..].starts_with("--") || rest[len..].starts_with("/*")))
    {
        len += 1;
    }
    let special = bytes[..len].iter().any(|b| b"~!@#%^&|`?".contains(b));
    while len > 1 && !special && matches!(bytes[len - 1], b'+' | b'-') {
        len -= 1;
    }
    len.max(1)
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
mod tests;
