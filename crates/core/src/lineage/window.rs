//! How far back each scheduled run of an incremental model reaches. A day older than
//! that keeps whatever it had when it left the window, so rows an upstream table gets
//! back for it later never reach the model until someone rebuilds it.
//!
//! Two things say how far a run reaches: dbt's microbatch config (`batch_size` and
//! `lookback`), or, for any other incremental model, the filter its SQL applies under
//! `{% if is_incremental() %}`. Both are read into one [`Window`], so the diagnosis and
//! the proposals treat them alike.
//!
//! The filter is read from the raw (unrendered) SQL, token by token, in the forms dbt
//! users write (see [`Window::of_filter`]). Anything else gives no window at all: a
//! guessed window would blame a model for a day its runs do reach, or miss one they
//! do not.

use std::ops::Range;

use serde::Serialize;

use super::columns::tokens::{tokenize, Kind, Token};

/// What a window is counted in. A microbatch model's `batch_size`; a filter's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Hour,
    Day,
    Month,
    Year,
}

impl Period {
    /// dbt's `batch_size`, or an interval's unit (singular or plural, any case).
    pub fn parse(text: &str) -> Option<Period> {
        match text.trim().to_ascii_lowercase().as_str() {
            "hour" | "hours" => Some(Period::Hour),
            "day" | "days" => Some(Period::Day),
            "month" | "months" => Some(Period::Month),
            "year" | "years" => Some(Period::Year),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Month => "month",
            Period::Year => "year",
        }
    }
}

/// What a filter's window is measured back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// The newest value the model already holds: `(select max(col) from {{ this }})`.
    NewestRow,
    /// The time of the run: `current_date`, `now()`, `{{ dbt.current_timestamp() }}`.
    Now,
}

/// Where a window was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum WindowSource {
    /// dbt's microbatch config. `begin` is the first batch, as written.
    Microbatch { begin: Option<String> },
    /// A filter under `{% if is_incremental() %}` in the model's SQL, as written there
    /// but for its line breaks and runs of spaces, each now one space.
    Filter { text: String, anchor: Anchor },
}

/// How far back each run of an incremental model reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The time column: microbatch's `event_time`, or the column the filter compares.
    pub column: Option<String>,
    /// None when a microbatch model's `batch_size` is missing or not one dbt knows.
    pub period: Option<Period>,
    /// How many periods before the current one each run rebuilds (microbatch's
    /// `lookback`; a filter's interval).
    pub lookback: u32,
    pub source: WindowSource,
}

/// dbt's default `lookback` for microbatch models.
pub const DEFAULT_LOOKBACK: u32 = 1;

impl Window {
    /// A microbatch model's window, from its config as dbt wrote it.
    pub fn microbatch(
        event_time: Option<String>,
        batch_size: Option<&str>,
        lookback: Option<u32>,
        begin: Option<String>,
    ) -> Window {
        Window {
            column: event_time,
            period: batch_size.and_then(Period::parse),
            lookback: lookback.unwrap_or(DEFAULT_LOOKBACK),
            source: WindowSource::Microbatch { begin },
        }
    }

    /// The window of an incremental model's SQL (Jinja unrendered), when each block
    /// under a plain `{% if is_incremental() %}` filters on time in a form read here,
    /// and every filter found agrees. A filter is `COL > RHS` or `COL >= RHS`, where
    /// RHS is one of:
    ///
    /// - `(select max(C) from {{ this }})`, also with `coalesce(max(C), <literal>)`:
    ///   the newest row the model holds, 0 days back;
    /// - `current_date`, `current_timestamp`, `now()`, `getdate()`, `sysdate`,
    ///   `{{ dbt.current_timestamp() }}` (and `cast(.. as T)`, `..::T`, `date(..)` of
    ///   any of these): today, 0 days back;
    ///
    /// either of those shifted back N days (or hours) by
    ///
    /// - `X - interval 'N days'`, `X - interval 'N' day`, `X - interval N day`,
    ///   `X - N` (days);
    /// - `dateadd(day, -N, X)`, `dateadd('day', -N, X)`, `timestampadd(day, -N, X)`;
    /// - `date_sub(X, interval N day)` (also `timestamp_sub`, `datetime_sub`) and
    ///   `date_sub(X, N)`; `date_add(X, interval -N day)` and `date_add(X, -N)`;
    ///
    /// with the shift outside the subquery or inside it (`max(C) - interval ..`).
    ///
    /// Filters outside `is_incremental()` are not windows and are ignored. A block
    /// that refers to the model's own table, to the clock, or to any Jinja expression
    /// other than `ref`/`source`, outside a filter read here, leaves the window unknown.
    pub fn of_filter(sql: &str) -> Option<Window> {
        let found = filters(sql)?;
        let first = found.first()?;
        Some(Window {
            column: Some(first.column.clone()),
            period: Some(first.period),
            lookback: first.lookback,
            source: WindowSource::Filter {
                // On one line: it is quoted in causes and titles.
                text: sql[first.text.clone()]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                anchor: first.anchor,
            },
        })
    }

    /// The window of a model from what dbt says of it: microbatch config first, else a
    /// filter in the SQL of a model materialized as incremental.
    pub(crate) fn of_model(
        materialized: Option<&str>,
        microbatch: Option<Window>,
        raw_sql: Option<&str>,
    ) -> Option<Window> {
        microbatch.or_else(|| {
            (materialized == Some("incremental"))
                .then_some(raw_sql)
                .flatten()
                .and_then(Window::of_filter)
        })
    }
}

/// Where the incremental filters of `sql` write their number of periods, one span per
/// filter (empty for a filter with no number, `> (select max(C) from {{ this }})`).
/// None when [`Window::of_filter`] reads no window from it.
pub fn filter_numbers(sql: &str) -> Option<Vec<Range<usize>>> {
    Some(filters(sql)?.into_iter().filter_map(|f| f.number).collect())
}

/// One filter as read: its span in the SQL and what it reaches.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    column: String,
    text: Range<usize>,
    lookback: u32,
    period: Period,
    anchor: Anchor,
    number: Option<Range<usize>>,
}

/// Every filter under `is_incremental()`, when all agree and nothing there is left
/// unread.
fn filters(sql: &str) -> Option<Vec<Found>> {
    // Most models have no such block: a manifest of many thousands is not tokenized.
    if !sql.contains("is_incremental") {
        return None;
    }
    let tokens = tokenize(sql);
    let mut found: Vec<Found> = Vec::new();
    for block in incremental_blocks(sql, &tokens)? {
        let reader = Reader {
            sql,
            tokens: &tokens[..block.end],
        };
        let mut claimed = vec![false; block.end];
        let mut i = block.start;
        while i < block.end {
            let starts_condition = i == block.start
                || matches!(tokens[i - 1].kind, Kind::OpenParen | Kind::Jinja)
                || tokens[i - 1]
                    .word()
                    .is_some_and(|w| matches!(w, "where" | "and" | "or" | "on" | "having"));
            match starts_condition.then(|| reader.filter(i)).flatten() {
                Some((end, filter)) => {
                    claimed[i..end].iter_mut().for_each(|c| *c = true);
                    found.push(filter);
                    i = end;
                }
                None => i += 1,
            }
        }
        let unread = (block.start..block.end).any(|j| !claimed[j] && reader.refers_to_time(j));
        if unread {
            return None;
        }
    }
    let first = found.first()?;
    let agree = found
        .iter()
        .all(|f| (f.lookback, f.period, f.anchor) == (first.lookback, first.period, first.anchor));
    agree.then_some(found)
}

/// The tokens of each branch taken when `is_incremental()` is true: from after a plain
/// `{% if is_incremental() %}` to its `else`, `elif` or `endif`. None when any other
/// statement uses `is_incremental()` (`if not`, `and ...`, `elif`, `set`): the branches
/// it guards are not read, and a window read without them could be wrong.
fn incremental_blocks(sql: &str, tokens: &[Token]) -> Option<Vec<Range<usize>>> {
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some((word, compact)) = statement(sql, &tokens[i]) else {
            i += 1;
            continue;
        };
        if !compact.contains("is_incremental") {
            i += 1;
            continue;
        }
        let plain = word == "if"
            && matches!(
                compact.as_str(),
                "ifis_incremental()" | "if(is_incremental())"
            );
        if !plain {
            return None;
        }
        let mut depth = 1;
        let mut branch_end = None;
        let mut j = i + 1;
        while depth > 0 {
            let token = tokens.get(j)?;
            match statement(sql, token).map(|(word, _)| word).as_deref() {
                Some("if") => depth += 1,
                Some("endif") => depth -= 1,
                Some("else" | "elif") if depth == 1 => {
                    branch_end.get_or_insert(j);
                }
                _ => {}
            }
            j += 1;
        }
        blocks.push(i + 1..branch_end.unwrap_or(j - 1));
        i = j;
    }
    Some(blocks)
}

/// A Jinja statement `{% word ... %}`: its first word, and all of it without spaces.
fn statement(sql: &str, token: &Token) -> Option<(String, String)> {
    let inner = jinja_inner(sql, token, "{%", "%}")?;
    let word: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    Some((word, inner.split_whitespace().collect()))
}

/// The inside of a Jinja token opened by `open`, without whitespace control marks.
fn jinja_inner<'a>(sql: &'a str, token: &Token, open: &str, close: &str) -> Option<&'a str> {
    if token.kind != Kind::Jinja {
        return None;
    }
    let text = sql[token.start..token.end].strip_prefix(open)?;
    let text = text.strip_suffix(close).unwrap_or(text);
    Some(
        text.trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+'])
            .trim(),
    )
}

/// `{{ this }}`: the model's own table.
fn is_this(sql: &str, token: &Token) -> bool {
    jinja_inner(sql, token, "{{", "}}") == Some("this")
}

/// Macros that stand for the time of the run.
const NOW_MACROS: &[&str] = &[
    "dbt.current_timestamp()",
    "current_timestamp()",
    "dbt_utils.current_timestamp()",
    "dbt.current_timestamp_backcompat()",
    "dbt.current_timestamp_in_utc_backcompat()",
];

/// Words that stand for the time of the run, with or without `()`.
const NOW_WORDS: &[&str] = &[
    "current_date",
    "current_timestamp",
    "current_datetime",
    "localtimestamp",
    "sysdate",
    "systimestamp",
];

/// Functions that stand for the time of the run, always called with `()`.
const NOW_FUNCTIONS: &[&str] = &["now", "getdate", "sysdatetime"];

/// A shift back in time, and where its number is written.
#[derive(Debug, Clone, PartialEq)]
struct Shift {
    count: u32,
    period: Period,
    number: Range<usize>,
}

/// Reads filters from a block's tokens; every method takes the index to start at and
/// returns the index just past what it read.
struct Reader<'a> {
    sql: &'a str,
    tokens: &'a [Token],
}

impl Reader<'_> {
    fn word(&self, i: usize, word: &str) -> bool {
        self.tokens.get(i).and_then(Token::word) == Some(word)
    }

    fn is(&self, i: usize, kind: Kind) -> bool {
        self.tokens.get(i).is_some_and(|t| t.kind == kind)
    }

    fn operator(&self, i: usize, text: &str) -> bool {
        self.is(i, Kind::Operator) && self.tokens[i].text == text
    }

    /// Does token `i` refer to the model's own table or to the clock? (A Jinja
    /// expression other than `ref` or `source` may do either.)
    fn refers_to_time(&self, i: usize) -> bool {
        let token = &self.tokens[i];
        if let Some(inner) = jinja_inner(self.sql, token, "{{", "}}") {
            return !(inner.starts_with("ref(") || inner.starts_with("source("));
        }
        token
            .word()
            .is_some_and(|w| NOW_WORDS.contains(&w) || NOW_FUNCTIONS.contains(&w))
    }

    /// `COL > RHS` or `COL >= RHS`, ending where the condition ends.
    fn filter(&self, i: usize) -> Option<(usize, Found)> {
        let (at, column) = self.column(i)?;
        if !(self.operator(at, ">") || self.operator(at, ">=")) {
            return None;
        }
        let (end, anchor, shift) = self.shifted(at + 1, &|i| self.point(i))?;
        let ends_condition = end == self.tokens.len()
            || matches!(
                self.tokens[end].kind,
                Kind::CloseParen | Kind::Jinja | Kind::Other
            )
            || self.tokens[end].word().is_some_and(|w| {
                matches!(
                    w,
                    "and" | "or" | "group" | "order" | "limit" | "qualify" | "having" | "union"
                )
            });
        if !ends_condition {
            return None;
        }
        let (lookback, period, number) = match shift {
            Some(s) => (s.count, s.period, Some(s.number)),
            None => (0, Period::Day, None),
        };
        Some((
            end,
            Found {
                column,
                text: self.tokens[i].start..self.tokens[end - 1].end,
                lookback,
                period,
                anchor,
                number,
            },
        ))
    }

    /// `c`, `t.c`, `s.t.c`: the column's name, unquoted and lowercase.
    fn column(&self, i: usize) -> Option<(usize, String)> {
        let first = self.tokens.get(i)?;
        if first.kind != Kind::Identifier || first.word().is_some_and(is_keyword) {
            return None;
        }
        let mut end = i;
        while self.is(end + 1, Kind::Dot) && self.is(end + 2, Kind::Identifier) {
            end += 2;
        }
        Some((end + 1, self.tokens[end].text.clone()))
    }

    /// `base`, or `base` shifted back: `base - amount`, `dateadd(day, -N, base)`,
    /// `date_sub(base, interval N day)`, `date_add(base, interval -N day)`. A base
    /// that already carries a shift may not be shifted again.
    fn shifted(
        &self,
        i: usize,
        base: &dyn Fn(usize) -> Option<(usize, Anchor, Option<Shift>)>,
    ) -> Option<(usize, Anchor, Option<Shift>)> {
        let once = |inner: Option<Shift>, outer: Shift| match inner {
            Some(_) => None,
            None => Some(Some(outer)),
        };
        let name = self.tokens.get(i)?.word().unwrap_or_default();
        if self.is(i + 1, Kind::OpenParen) {
            if matches!(name, "dateadd" | "timestampadd") {
                let (at, period) = self.unit(i + 2)?;
                if !(self.is(at, Kind::Comma) && self.operator(at + 1, "-")) {
                    return None;
                }
                let (count, number) = self.count(at + 2)?;
                if !self.is(at + 3, Kind::Comma) {
                    return None;
                }
                let (end, anchor, inner) = base(at + 4)?;
                if !self.is(end, Kind::CloseParen) {
                    return None;
                }
                let shift = Shift {
                    count,
                    period,
                    number,
                };
                return Some((end + 1, anchor, once(inner, shift)?));
            }
            let subtracts = matches!(
                name,
                "date_sub" | "timestamp_sub" | "datetime_sub" | "subdate"
            );
            let adds = matches!(name, "date_add" | "timestamp_add" | "datetime_add");
            if subtracts || adds {
                let (at, anchor, inner) = base(i + 2)?;
                if !self.is(at, Kind::Comma) {
                    return None;
                }
                let (end, shift) = self.argument_shift(at + 1, adds)?;
                if !self.is(end, Kind::CloseParen) {
                    return None;
                }
                return Some((end + 1, anchor, once(inner, shift)?));
            }
        }
        let (at, anchor, inner) = base(i)?;
        if !self.operator(at, "-") {
            return Some((at, anchor, inner));
        }
        match self.amount(at + 1) {
            Some((end, shift)) => Some((end, anchor, once(inner, shift)?)),
            // `x - something else` is not a window read here.
            None => None,
        }
    }

    /// The second argument of `date_sub`/`date_add`: `interval N day` or `N` (days);
    /// negated for `date_add`.
    fn argument_shift(&self, i: usize, negated: bool) -> Option<(usize, Shift)> {
        let interval = self.word(i, "interval");
        let mut at = if interval { i + 1 } else { i };
        if negated {
            if !self.operator(at, "-") {
                return None;
            }
            at += 1;
        }
        let (count, number) = self.count(at)?;
        if !interval {
            let period = Period::Day;
            return Some((
                at + 1,
                Shift {
                    count,
                    period,
                    number,
                },
            ));
        }
        let (end, period) = self.unit(at + 1)?;
        Some((
            end,
            Shift {
                count,
                period,
                number,
            },
        ))
    }

    /// What follows a `-`: `interval 'N days'`, `interval 'N' day`, `interval N day`,
    /// or a bare `N` (days, as date arithmetic counts them).
    fn amount(&self, i: usize) -> Option<(usize, Shift)> {
        let shift = |count, period, number| Shift {
            count,
            period,
            number,
        };
        if !self.word(i, "interval") {
            let (count, number) = self.count(i)?;
            return Some((i + 1, shift(count, Period::Day, number)));
        }
        let token = self.tokens.get(i + 1)?;
        if token.kind == Kind::String {
            // 'N days' in one string, or 'N' and the unit after it.
            let (count, number) = self.count(i + 1)?;
            let content = &token.text;
            let unit = content
                .trim()
                .trim_start_matches(|c: char| c.is_ascii_digit());
            if !unit.trim().is_empty() {
                let period = day_or_hour(unit)?;
                return Some((i + 2, shift(count, period, number)));
            }
            let (end, period) = self.unit(i + 2)?;
            return Some((end, shift(count, period, number)));
        }
        let (count, number) = self.count(i + 1)?;
        let (end, period) = self.unit(i + 2)?;
        Some((end, shift(count, period, number)))
    }

    /// A whole number of periods: a number token, or a string holding one first
    /// (`'3 days'`, `'3'`). Its span is the digits alone.
    fn count(&self, i: usize) -> Option<(u32, Range<usize>)> {
        let token = self.tokens.get(i)?;
        let (start, text) = match token.kind {
            Kind::Number => (token.start, &self.sql[token.start..token.end]),
            Kind::String => {
                let inside = &self.sql[token.start + 1..token.end.saturating_sub(1)];
                let digits_at = inside.len() - inside.trim_start().len();
                (token.start + 1 + digits_at, inside.trim_start())
            }
            _ => return None,
        };
        let digits = text.chars().take_while(char::is_ascii_digit).count();
        let rest = &text[digits..];
        // `1.5`, `1e3`: not a whole count of days.
        if digits == 0 || rest.starts_with(['.', 'e', 'E']) {
            return None;
        }
        if token.kind == Kind::Number && !rest.is_empty() {
            return None;
        }
        Some((text[..digits].parse().ok()?, start..start + digits))
    }

    /// A unit written as a word or a string: `day`, `'day'`, `hours`.
    fn unit(&self, i: usize) -> Option<(usize, Period)> {
        let token = self.tokens.get(i)?;
        match token.kind {
            Kind::Identifier if !token.quoted => Some((i + 1, day_or_hour(&token.text)?)),
            Kind::String => Some((i + 1, day_or_hour(&token.text)?)),
            _ => None,
        }
    }

    /// A point in time a window is measured from, possibly already shifted (inside a
    /// subquery on `{{ this }}`).
    fn point(&self, i: usize) -> Option<(usize, Anchor, Option<Shift>)> {
        let token = self.tokens.get(i)?;
        let (mut end, anchor, shift) = if let Some(inner) = jinja_inner(self.sql, token, "{{", "}}")
        {
            let compact: String = inner.split_whitespace().collect();
            if !NOW_MACROS.contains(&compact.as_str()) {
                return None;
            }
            (i + 1, Anchor::Now, None)
        } else if token.kind == Kind::OpenParen && self.word(i + 1, "select") {
            let (at, anchor, shift) = self.shifted(i + 2, &|i| self.newest(i))?;
            let from_this = self.word(at, "from")
                && self
                    .tokens
                    .get(at + 1)
                    .is_some_and(|t| is_this(self.sql, t))
                && self.is(at + 2, Kind::CloseParen);
            if !from_this {
                return None;
            }
            (at + 3, anchor, shift)
        } else {
            let word = token.word()?;
            let called = self.is(i + 1, Kind::OpenParen) && self.is(i + 2, Kind::CloseParen);
            if NOW_FUNCTIONS.contains(&word) && called {
                (i + 3, Anchor::Now, None)
            } else if NOW_WORDS.contains(&word) {
                (if called { i + 3 } else { i + 1 }, Anchor::Now, None)
            } else if matches!(word, "cast" | "date" | "to_date" | "to_timestamp")
                && self.is(i + 1, Kind::OpenParen)
            {
                let (at, anchor, shift) = self.point(i + 2)?;
                let at = if word == "cast" {
                    if !self.word(at, "as") {
                        return None;
                    }
                    self.type_end(at + 1)?
                } else {
                    at
                };
                if !self.is(at, Kind::CloseParen) {
                    return None;
                }
                (at + 1, anchor, shift)
            } else {
                return None;
            }
        };
        // `x::date`, `x::timestamp`.
        while self.is(end, Kind::DoubleColon) {
            end = self.type_end(end + 1)?;
        }
        Some((end, anchor, shift))
    }

    /// `max(C)` or `coalesce(max(C), <literal>)`: the newest value the model holds.
    fn newest(&self, i: usize) -> Option<(usize, Anchor, Option<Shift>)> {
        let coalesced = self.word(i, "coalesce") && self.is(i + 1, Kind::OpenParen);
        let at = if coalesced { i + 2 } else { i };
        if !(self.word(at, "max") && self.is(at + 1, Kind::OpenParen)) {
            return None;
        }
        let (at, _) = self.column(at + 2)?;
        if !self.is(at, Kind::CloseParen) {
            return None;
        }
        let mut end = at + 1;
        if coalesced {
            let literal = self.is(end, Kind::Comma)
                && self
                    .tokens
                    .get(end + 1)
                    .is_some_and(|t| matches!(t.kind, Kind::String | Kind::Number))
                && self.is(end + 2, Kind::CloseParen);
            if !literal {
                return None;
            }
            end += 3;
        }
        Some((end, Anchor::NewestRow, None))
    }

    /// Past a type name: words (`timestamp with time zone`) and an optional `(n)`.
    fn type_end(&self, i: usize) -> Option<usize> {
        let mut end = i;
        while self.tokens.get(end).and_then(Token::word).is_some() {
            end += 1;
        }
        if end == i {
            return None;
        }
        if self.is(end, Kind::OpenParen) && self.is(end + 2, Kind::CloseParen) {
            end += 3;
        }
        Some(end)
    }
}

/// Windows are read in days or hours; a filter in any other unit is not read.
fn day_or_hour(unit: &str) -> Option<Period> {
    Period::parse(unit).filter(|p| matches!(p, Period::Day | Period::Hour))
}

/// Words that cannot start a column reference.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "select" | "from" | "where" | "and" | "or" | "not" | "on" | "having" | "case" | "when"
    ) || NOW_WORDS.contains(&word)
        || NOW_FUNCTIONS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model's SQL with `filter` as its incremental block.
    fn model(filter: &str) -> String {
        format!(
            "{{{{ config(materialized='incremental', unique_key='id') }}}}\n\
             select * from {{{{ ref('stg_events') }}}}\n\
             {{% if is_incremental() %}}\n  {filter}\n{{% endif %}}\n"
        )
    }

    fn window(filter: &str) -> Option<Window> {
        Window::of_filter(&model(filter))
    }

    /// (lookback, period, anchor, column, text) of the window read from `filter`.
    fn reach(filter: &str) -> (u32, Period, Anchor, String, String) {
        let w = window(filter).unwrap_or_else(|| panic!("no window in {filter}"));
        let WindowSource::Filter { text, anchor } = w.source else {
            panic!("{w:?}");
        };
        (
            w.lookback,
            w.period.unwrap(),
            anchor,
            w.column.unwrap(),
            text,
        )
    }

    #[test]
    fn only_rows_newer_than_the_newest_held_reach_back_no_days() {
        for (filter, text) in [
            (
                "where loaded_at > (select max(loaded_at) from {{ this }})",
                "loaded_at > (select max(loaded_at) from {{ this }})",
            ),
            (
                "where e.loaded_at >= (select max(loaded_at) from {{this}} )",
                "e.loaded_at >= (select max(loaded_at) from {{this}} )",
            ),
            (
                "where updated_at > (select coalesce(max(updated_at), '1900-01-01') from {{ this }}) and amount > 0",
                "updated_at > (select coalesce(max(updated_at), '1900-01-01') from {{ this }})",
            ),
        ] {
            let (lookback, period, anchor, column, found) = reach(filter);
            assert_eq!(
                (lookback, period, anchor),
                (0, Period::Day, Anchor::NewestRow),
                "{filter}"
            );
            assert_eq!(found, text);
            assert!(column == "loaded_at" || column == "updated_at");
        }
    }

    #[test]
    fn an_interval_before_the_newest_row_reaches_back_its_days() {
        for (filter, days, period) in [
            ("where loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'", 1, Period::Day),
            ("where loaded_at >= (select max(loaded_at) from {{ this }}) - interval '3 days'", 3, Period::Day),
            ("where loaded_at >= (select max(loaded_at) from {{ this }}) - INTERVAL '2' DAY", 2, Period::Day),
            ("where loaded_at >= (select max(loaded_at) from {{ this }}) - interval 2 day", 2, Period::Day),
            ("where loaded_at >= (select max(loaded_at) - interval '4 days' from {{ this }})", 4, Period::Day),
            ("where loaded_at >= (select max(loaded_at) from {{ this }}) - interval '36 hours'", 36, Period::Hour),
            ("where event_date >= (select max(event_date) from {{ this }}) - 3", 3, Period::Day),
            ("where loaded_at >= dateadd(day, -3, (select max(loaded_at) from {{ this }}))", 3, Period::Day),
            ("where loaded_at >= (select dateadd('day', -5, max(loaded_at)) from {{ this }})", 5, Period::Day),
            ("where loaded_at >= date_sub((select max(loaded_at) from {{ this }}), interval 2 day)", 2, Period::Day),
            ("where loaded_at >= timestamp_sub((select max(loaded_at) from {{ this }}), interval 6 hour)", 6, Period::Hour),
            ("where loaded_at >= date_add((select max(loaded_at) from {{ this }}), interval -2 day)", 2, Period::Day),
            ("where loaded_at >= date_sub((select max(loaded_at) from {{ this }}), 7)", 7, Period::Day),
        ] {
            let (lookback, found_period, anchor, column, _) = reach(filter);
            assert_eq!(
                (lookback, found_period, anchor, column.as_str()),
                (days, period, Anchor::NewestRow, if filter.contains("event_date") { "event_date" } else { "loaded_at" }),
                "{filter}"
            );
        }
    }

    #[test]
    fn a_window_before_today_reaches_back_its_days() {
        for (filter, days) in [
            ("where loaded_at >= current_date - 3", 3),
            ("where loaded_at >= current_date - interval '2 days'", 2),
            ("where loaded_at >= current_date() - interval '2 day'", 2),
            ("where loaded_at >= now() - interval '1 day'", 1),
            ("where loaded_at >= getdate() - 1", 1),
            ("where loaded_at >= dateadd('day', -4, current_date)", 4),
            (
                "where loaded_at >= dateadd(day, -4, current_timestamp())",
                4,
            ),
            (
                "where loaded_at >= date_sub(current_date(), interval 3 day)",
                3,
            ),
            (
                "where loaded_at >= {{ dbt.current_timestamp() }} - interval '2 days'",
                2,
            ),
            (
                "where loaded_at >= cast({{ dbt.current_timestamp() }} as date) - 2",
                2,
            ),
            ("where loaded_at >= current_timestamp::date - 2", 2),
            ("where loaded_at >= current_date", 0),
        ] {
            let (lookback, period, anchor, _, _) = reach(filter);
            assert_eq!(
                (lookback, period, anchor),
                (days, Period::Day, Anchor::Now),
                "{filter}"
            );
        }
    }

    #[test]
    fn filters_not_read_here_give_no_window() {
        for filter in [
            // Measured from the oldest row, or from a different expression.
            "where date_day >= (select min(date_day) from {{ this }})",
            "and change_timestamp >= (select cast(max(date_day) as {{ dbt.type_timestamp() }}) from {{ this }} )",
            // A shift that is not a whole number of days or hours, or in weeks.
            "where loaded_at >= current_date - interval '1.5 days'",
            "where loaded_at >= current_date - interval '2 weeks'",
            // A number from a variable: not known until run time.
            "where loaded_at >= current_date - {{ var('lookback_days') }}",
            // More after the shift than a condition's end.
            "where loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day' + x",
            // Forwards, not back.
            "where loaded_at >= dateadd(day, 3, current_date)",
            // Compared the other way round.
            "where (select max(loaded_at) from {{ this }}) < loaded_at",
            "where loaded_at between current_date - 3 and current_date",
            // A block that filters on nothing in time.
            "and amount > 0",
        ] {
            assert_eq!(window(filter), None, "{filter}");
        }
    }

    #[test]
    fn filters_that_disagree_give_no_window_and_those_that_agree_give_one() {
        let sql = "select * from a\n{% if is_incremental() %} where a.t >= current_date - 2 {% endif %}\n\
                   union all select * from b\n{% if is_incremental() %} where b.t >= current_date - 5 {% endif %}";
        assert_eq!(Window::of_filter(sql), None);
        let sql = sql.replace("- 5", "- 2");
        let w = Window::of_filter(&sql).unwrap();
        assert_eq!(w.lookback, 2);
        assert_eq!(filter_numbers(&sql).unwrap().len(), 2);
    }

    #[test]
    fn a_filter_outside_is_incremental_is_not_a_window() {
        let sql = "select * from {{ ref('stg_events') }} where loaded_at >= current_date - 30";
        assert_eq!(Window::of_filter(sql), None);
        // Beside a filter under is_incremental(), it is not read either.
        let sql = format!(
            "{sql}\n{{% if is_incremental() %}} and loaded_at >= current_date - 2 {{% endif %}}"
        );
        assert_eq!(Window::of_filter(&sql).unwrap().lookback, 2);
        // The branch for a full build is not the incremental one.
        let sql = "select 1 {% if is_incremental() %} where t > (select max(t) from {{ this }}) \
                   {% else %} where t >= current_date - 90 {% endif %}";
        assert_eq!(Window::of_filter(sql).unwrap().lookback, 0);
    }

    #[test]
    fn a_test_of_is_incremental_that_is_not_plain_is_not_read() {
        for tag in [
            "{% if not is_incremental() %}",
            "{% if is_incremental() and var('x') %}",
            "{% set incremental = is_incremental() %}{% if incremental %}",
        ] {
            let sql = format!("select 1 {tag} where t >= current_date - 2 {{% endif %}}");
            assert_eq!(Window::of_filter(&sql), None, "{tag}");
        }
        // Beside a plain block, a branch guarded some other way still leaves it unknown.
        let sql = "select 1 {% if is_incremental() %} where t >= current_date - 2 {% endif %}\n\
                   {% if var('x', false) %} and x {% elif is_incremental() %} and t >= current_date - 9 {% endif %}";
        assert_eq!(Window::of_filter(sql), None);
        // Whitespace control and nesting are read.
        let sql = "select 1 {%- if is_incremental() -%}\n where t >= current_date - 2\n\
                   {% if var('strict', false) %} and id is not null {% endif %}\n{%- endif %}";
        assert_eq!(Window::of_filter(sql).unwrap().lookback, 2);
    }

    #[test]
    fn a_filter_over_several_lines_is_quoted_on_one() {
        let (.., text) = reach(
            "where loaded_at >=\n      (select max(loaded_at)\n       from {{ this }})\n    - interval '2 days'",
        );
        assert_eq!(
            text,
            "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '2 days'"
        );
    }

    #[test]
    fn comments_inside_the_block_are_not_filters() {
        let sql = "select 1 {% if is_incremental() %}\n\
                   -- older rows than current_date - 9 are never read\n\
                   where t >= (select max(t) from {{ this }}) - interval '1 day' /* now() */\n\
                   {% endif %}";
        assert_eq!(Window::of_filter(sql).unwrap().lookback, 1);
    }

    #[test]
    fn the_number_of_each_filter_is_where_it_is_written() {
        let sql = model(
            "where loaded_at >= (select max(loaded_at) from {{ this }}) - interval '12 days'",
        );
        let spans = filter_numbers(&sql).unwrap();
        assert_eq!(spans.len(), 1);
        assert_eq!(&sql[spans[0].clone()], "12");
        let sql = model("where loaded_at > (select max(loaded_at) from {{ this }})");
        assert_eq!(filter_numbers(&sql), Some(Vec::new()));
        assert_eq!(filter_numbers("select 1"), None);
    }

    #[test]
    fn a_real_projects_incremental_blocks() {
        // As in a public package: the same filter in two blocks, and a third block of
        // columns and joins.
        let sql = "with x as (select * from {{ ref('pivot') }}\n\
                   {% if is_incremental() %}\nwhere date_day >= (select max(date_day) from {{ this }})\n\
                   -- If nothing changed since the last run, this returns no rows.\n{% endif %}\n)\n\
                   select * from x {% if is_incremental() %} where date_day >= (select max(date_day) from {{ this }} ) {% endif %}";
        let w = Window::of_filter(sql).unwrap();
        assert_eq!(w.lookback, 0);
        assert_eq!(w.column.as_deref(), Some("date_day"));
    }
}
