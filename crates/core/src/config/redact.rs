//! Hiding secrets in what an error quotes of a config: URL passwords, values of names
//! like `password` or `*_key`, and token-like words.

/// What the error shows of a value refused where a variable name belongs: a URL's
/// scheme, a short word, and nothing of anything longer (it may be a token).
pub(super) fn redact(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, _)) => format!("\"{scheme}://...\""),
        None if text.chars().count() > 12 => {
            format!("a value of {} characters (not shown)", text.chars().count())
        }
        None => format!("{:?}", redact_secrets(text)),
    }
}

/// Names whose values are secrets: `password=x`, `api_key = "x"`, `?access_token=x`.
const SECRET_NAMES: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "credentials",
    "auth",
];

/// Hides what looks like a secret in text that may quote a config line: a URL's
/// password, the value of a name like `password`, `token` or `*_key`, and long words
/// mixing upper case, lower case and digits (API tokens).
pub fn redact_secrets(text: &str) -> String {
    redact_tokens(&redact_named_values(&redact_url_passwords(text)))
}

/// `scheme://user:PASSWORD@host` -> `scheme://user:***@host`.
pub(super) fn redact_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find("://") {
        let authority_start = found + 3;
        out.push_str(&rest[..authority_start]);
        let after = &rest[authority_start..];
        let end = after
            .find(|c: char| "/?#\"'`".contains(c) || c.is_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(at) if authority[..at].contains(':') => {
                let colon = authority[..at].find(':').expect("checked");
                out.push_str(&authority[..=colon]);
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

pub(super) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `password=x`, `token: x`, `api_key = "x y"` -> the value replaced by `***`.
pub(super) fn redact_named_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let c = text[i..].chars().next().expect("in bounds");
        if !is_name_char(c) {
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let word_end = text[i..]
            .find(|c: char| !is_name_char(c))
            .map_or(text.len(), |n| i + n);
        let word = &text[i..word_end];
        out.push_str(word);
        i = word_end;
        let lower = word.to_ascii_lowercase();
        if !SECRET_NAMES.iter().any(|name| lower.ends_with(name)) {
            continue;
        }
        // The separator: spaces, then `=` or `:`, then spaces.
        let rest = &text[i..];
        let after_spaces = rest.trim_start_matches([' ', '\t']);
        let Some(after_sep) = after_spaces
            .strip_prefix('=')
            .or_else(|| after_spaces.strip_prefix(':'))
        else {
            continue;
        };
        let value = after_sep.trim_start_matches([' ', '\t']);
        let value_start = text.len() - value.len();
        let (inner_start, inner_end) = match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &value[1..];
                let close = body.find(q).unwrap_or(body.len());
                (value_start + 1, value_start + 1 + close)
            }
            _ => {
                let len = value
                    .find(|c: char| c.is_whitespace() || "&;,)\"'`".contains(c))
                    .unwrap_or(value.len());
                (value_start, value_start + len)
            }
        };
        if inner_end == inner_start {
            continue;
        }
        out.push_str(&text[i..inner_start]);
        out.push_str("***");
        i = inner_end;
    }
    out
}

/// Long words mixing upper case, lower case and digits: API tokens, whatever key they
/// were written under.
pub(super) fn redact_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest
            .find(|c: char| c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-+=".contains(c)))
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let looks_like_token = word.len() >= 20
            && word.chars().any(|c| c.is_ascii_digit())
            && word.chars().any(|c| c.is_ascii_uppercase())
            && word.chars().any(|c| c.is_ascii_lowercase());
        out.push_str(if looks_like_token { "***" } else { word });
        rest = &rest[end..];
    }
    out
}
