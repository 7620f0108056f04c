//! Untrusted text (table names, SQL, alert text, anything from a warehouse or an API)
//! is made safe for a terminal where it enters the console. A control character or an
//! escape sequence could move the cursor, recolour the screen or rewrite what an
//! approver sees; a bidi override could make `approve` read as something else. Each such
//! character is shown as a visible escape (`\x1b`, `\u{202e}`) instead.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Spaces a tab becomes in multi-line text; a raw tab would let the terminal decide.
const TAB_AS_SPACES: &str = "    ";

/// True for every character the terminal must never receive raw.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        // C0 controls (ESC among them) and DEL.
        '\u{0}'..='\u{1f}' | '\u{7f}'
        // C1 controls: some terminals act on them like ESC sequences (U+009B is CSI).
        | '\u{80}'..='\u{9f}'
        // Soft hyphen and other characters that render as nothing.
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        // Zero-width spaces and joiners, left-to-right / right-to-left marks.
        | '\u{200b}'..='\u{200f}'
        // Line and paragraph separators, bidi embeddings and overrides.
        | '\u{2028}'..='\u{202e}'
        // Word joiner, invisible operators, bidi isolates, deprecated format controls.
        | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{feff}' | '\u{ffa0}'
        // Interlinear annotation controls.
        | '\u{fff9}'..='\u{fffb}'
        // Invisible tag characters (used to smuggle hidden text).
        | '\u{e0000}'..='\u{e007f}'
    )
}

/// One line of text, safe to draw. Every unsafe character, including `\n` and `\t`,
/// becomes a visible escape; callers that want lines split them first (see
/// [`for_terminal_multiline`]). Borrows when nothing needed escaping, which is the
/// common case.
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text whose line breaks matter (SQL, notes, receipts): keeps `\n`, turns `\r\n` into
/// `\n` and tabs into spaces, and escapes everything else that [`for_terminal`] does.
pub fn for_terminal_multiline(s: &str) -> Cow<'_, str> {
    let needs_work = s.chars().any(|c| c != '\n' && is_unsafe(c));
    if !needs_work {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (index, line) in s.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        for c in line.chars() {
            if c == '\t' {
                out.push_str(TAB_AS_SPACES);
            } else if is_unsafe(c) {
                push_escape(&mut out, c);
            } else {
                out.push(c);
            }
        }
    }
    Cow::Owned(out)
}

/// Text shown as a block as it was written (run output, a typed reason): keeps `\n` and
/// `\t`, turns `\r\n` into `\n`, and escapes every other character [`for_terminal`]
/// does, a lone `\r` among them (it would let a line overwrite the one before).
pub fn for_terminal_block(s: &str) -> Cow<'_, str> {
    let kept = |c: char| c == '\n' || c == '\t';
    if !s.chars().any(|c| !kept(c) && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (index, line) in s.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        for c in line.strip_suffix('\r').unwrap_or(line).chars() {
            if !kept(c) && is_unsafe(c) {
                push_escape(&mut out, c);
            } else {
                out.push(c);
            }
        }
    }
    Cow::Owned(out)
}

/// A Markdown fenced block holding `s` as [`for_terminal_block`] cleans it, each line
/// after `indent` (to sit inside a list item). The fence is a run of backticks longer
/// than any in the text, so nothing in it can close the block early.
pub fn fenced_block(s: &str, indent: &str) -> String {
    let text = for_terminal_block(s);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{indent}{fence}\n");
    for line in text.trim_end_matches('\n').split('\n') {
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("{indent}{fence}\n"));
    out
}

fn push_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    // Writing to a String cannot fail.
    if code < 0x80 {
        let _ = write!(out, "\\x{code:02x}");
    } else {
        let _ = write!(out, "\\u{{{code:x}}}");
    }
}

/// A word for a POSIX shell, inert whatever it holds: single-quoted, each `'` written
/// `'\''`. For a line a person pastes (`export NAME='...'`). Control characters are
/// escaped first, so the line stays one line and shows what it holds.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", for_terminal(s).replace('\'', r"'\''"))
}

/// A word for a shell as it is when nothing in it is special to one (a plain path), and
/// [`shell_quote`]d when anything is.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c));
    if plain {
        s.to_string()
    } else {
        shell_quote(s)
    }
}

/// Whether `s` can be a shell variable's name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_shell_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replace a string in place when it needed escaping; no allocation otherwise.
pub fn clean_in_place(s: &mut String) {
    if let Cow::Owned(clean) = for_terminal(s) {
        *s = clean;
    }
}

/// Like [`clean_in_place`] but keeps line breaks.
pub fn clean_multiline_in_place(s: &mut String) {
    if let Cow::Owned(clean) = for_terminal_multiline(s) {
        *s = clean;
    }
}

/// Text from outside (the chain, a warehouse, a manifest, a config) on its way to a
/// person. Every type a command prints as text implements this by destructuring *all*
/// of its fields, with no `..` (`let Receipt { incident, table, .. every field } =
/// self;`), and numbers bound to `_`: a field added to one of those types is a compile
/// error here until someone says how it is cleaned. Text renderers take
/// [`Sanitized<T>`], which only [`Sanitized::new`] makes, so raw values cannot reach them.
pub trait Sanitize {
    fn sanitize(&mut self);
}

impl Sanitize for String {
    fn sanitize(&mut self) {
        clean_in_place(self);
    }
}

impl<T: Sanitize> Sanitize for Option<T> {
    fn sanitize(&mut self) {
        if let Some(value) = self {
            value.sanitize();
        }
    }
}

impl<T: Sanitize> Sanitize for Vec<T> {
    fn sanitize(&mut self) {
        self.iter_mut().for_each(T::sanitize);
    }
}

/// Keys are outside text too (a map of kinds or materializations).
impl<V: Sanitize> Sanitize for std::collections::BTreeMap<String, V> {
    fn sanitize(&mut self) {
        if self.keys().any(|k| k.chars().any(is_unsafe)) {
            *self = std::mem::take(self)
                .into_iter()
                .map(|(k, v)| (for_terminal(&k).into_owned(), v))
                .collect();
        }
        self.values_mut().for_each(V::sanitize);
    }
}

impl Sanitize for usize {
    fn sanitize(&mut self) {}
}

/// Every string in a JSON value, keys included.
impl Sanitize for serde_json::Value {
    fn sanitize(&mut self) {
        use serde_json::Value;
        match self {
            Value::String(s) => s.sanitize(),
            Value::Array(items) => items.iter_mut().for_each(Value::sanitize),
            Value::Object(map) => {
                if map.keys().any(|k| k.chars().any(is_unsafe)) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (for_terminal(&k).into_owned(), v))
                        .collect();
                }
                map.values_mut().for_each(Value::sanitize);
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// A value whose every string was sanitized: what text renderers accept.
#[derive(Debug)]
pub struct Sanitized<T>(T);

impl<T: Sanitize> Sanitized<T> {
    pub fn new(mut value: T) -> Sanitized<T> {
        value.sanitize();
        Sanitized(value)
    }
}

impl<T> std::ops::Deref for Sanitized<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// JSON for a terminal or a pipe a person may read. serde_json escapes C0 controls but
/// leaves DEL, C1 controls (U+009B acts as ESC [ in some terminals), bidi overrides and
/// the other invisibles raw; this escapes every character [`is_unsafe`] names as
/// `\uXXXX` (a surrogate pair above U+FFFF). They can only occur inside JSON strings,
/// so the value read back is unchanged. Every JSON a command prints goes through here.
pub fn json<T: serde::Serialize + ?Sized>(value: &T, pretty: bool) -> serde_json::Result<String> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        serde_json::to_string(value)?
    };
    // Below U+007F serde_json already escaped what is unsafe; what is left is layout.
    let raw = |c: char| u32::from(c) >= 0x7f && is_unsafe(c);
    if !text.chars().any(raw) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if raw(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// The secrets this process knows (the values of every environment variable or file the
/// config names as one), so every recorder masks them: the chain, stored runs, the
/// receipts and `show --json` drawn from those, and the log.
static SECRETS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// What a secret is replaced with wherever it would be recorded.
pub const MASK: &str = "[secret]";

/// Shorter values are not masked: masking a two-letter password would garble every
/// word that holds those letters, and tell the password away besides.
const MIN_SECRET: usize = 4;

/// Adds the secrets `config` names: each warehouse's URL (and the password in it), each
/// alert destination's key, the orchestrator's token or password. Missing ones are
/// skipped.
pub fn remember_config_secrets(config: &crate::config::Config) {
    let mut values = Vec::new();
    for warehouse in config.warehouse.values() {
        if let Some(url) = warehouse.url_env.as_deref().and_then(env_value) {
            values.extend(url_password(&url));
            values.push(url);
        }
    }
    for (_, alert) in config.alert_destinations() {
        if let Ok(secret) = crate::notify::read_secret(config, alert) {
            values.push(secret);
        }
    }
    if let Some(o) = &config.orchestrator {
        for var in [&o.token_env, &o.password_env].into_iter().flatten() {
            values.extend(env_value(var));
        }
    }
    remember_secrets(values);
}

fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The password of `scheme://user:password@host`, as written and percent-decoded.
fn url_password(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let Some((credentials, _)) = authority.rsplit_once('@') else {
        return Vec::new();
    };
    let Some((_, password)) = credentials.split_once(':') else {
        return Vec::new();
    };
    let mut decoded = Vec::new();
    let bytes = password.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], password.get(i + 1..i + 3)) {
            (b'%', Some(hex)) if u8::from_str_radix(hex, 16).is_ok() => {
                decoded.push(u8::from_str_radix(hex, 16).expect("checked"));
                i += 3;
            }
            (b, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    let mut out = vec![password.to_string()];
    out.extend(String::from_utf8(decoded).ok().filter(|d| d != password));
    out
}

/// Adds secret values to mask from now on.
pub fn remember_secrets(values: impl IntoIterator<Item = String>) {
    let mut known = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    known.extend(
        values
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_SECRET),
    );
    // Longest first: a secret that holds another is masked whole.
    known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    known.dedup();
}

/// `text` with every known secret replaced by [`MASK`]. Borrows when none occurs.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let known = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|s| text.contains(s.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for secret in known.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    Cow::Owned(out)
}

/// Masks every string (and key) of a JSON value in place, as [`mask_secrets`].
pub fn mask_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            if let Cow::Owned(masked) = mask_secrets(s) {
                *s = masked;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_json),
        serde_json::Value::Object(map) => {
            let masked: serde_json::Map<String, serde_json::Value> = std::mem::take(map)
                .into_iter()
                .map(|(k, mut v)| {
                    mask_json(&mut v);
                    (mask_secrets(&k).into_owned(), v)
                })
                .collect();
            *map = masked;
        }
        _ => {}
    }
}

/// A log writer that masks known secrets in each line it is given.
pub struct MaskingWriter<W>(pub W);

impl<W: std::io::Write> std::io::Write for MaskingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(mask_secrets(text).as_bytes())?,
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_secret_is_masked_in_text_and_in_every_string_of_a_record() {
        remember_secrets([
            "unit-secret-short".to_string(),
            "unit-secret-short-and-longer".to_string(),
            "abc".to_string(),
        ]);
        assert_eq!(
            mask_secrets("key unit-secret-short-and-longer then unit-secret-short"),
            "key [secret] then [secret]"
        );
        // Three letters are too short to mask: every word holding them would be garbled.
        assert_eq!(mask_secrets("abcdef"), "abcdef");
        let mut record = serde_json::json!({
            "detail": "dbt said unit-secret-short",
            "lines": ["ok", {"unit-secret-short": "x unit-secret-short"}],
            "n": 3
        });
        mask_json(&mut record);
        assert_eq!(
            record,
            serde_json::json!({
                "detail": "dbt said [secret]",
                "lines": ["ok", {"[secret]": "x [secret]"}],
                "n": 3
            })
        );
    }

    #[test]
    fn a_urls_password_is_a_secret_as_written_and_decoded() {
        assert_eq!(
            url_password("postgresql://u:p%40ss-word@h:5432/db"),
            ["p%40ss-word", "p@ss-word"]
        );
        assert!(url_password("postgresql://u@h/db").is_empty());
    }

    #[test]
    fn a_shell_word_is_inert_whatever_it_holds() {
        assert_eq!(shell_word("/tmp/a-b/c.toml"), "/tmp/a-b/c.toml");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_quote("x'$(id)`id`\"\n"), "'x'\\''$(id)`id`\"\\x0a'");
        assert!(is_shell_name("DBT_PASSWORD") && !is_shell_name("X}$(id)"));
    }
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "SALES.PAYMENTS — zip_code VARCHAR(12) ✓";
        assert!(matches!(for_terminal(text), Cow::Borrowed(_)));
        assert_eq!(for_terminal(text), text);
    }

    #[test]
    fn escape_sequences_become_visible() {
        assert_eq!(for_terminal("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(for_terminal("bell\x07"), "bell\\x07");
        assert_eq!(for_terminal("del\x7f"), "del\\x7f");
        assert_eq!(for_terminal("csi\u{9b}31m"), "csi\\u{9b}31m");
    }

    #[test]
    fn bidi_overrides_and_invisibles_become_visible() {
        assert_eq!(for_terminal("ok\u{202e}evorppa"), "ok\\u{202e}evorppa");
        assert_eq!(for_terminal("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(for_terminal("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(for_terminal("\u{feff}bom"), "\\u{feff}bom");
    }

    #[test]
    fn single_line_escapes_newlines_and_tabs() {
        assert_eq!(for_terminal("a\nb\tc"), "a\\x0ab\\x09c");
    }

    #[test]
    fn multiline_keeps_line_breaks_and_expands_tabs() {
        assert_eq!(
            for_terminal_multiline("select\r\n\tamount\x1b[0m\nfrom"),
            "select\n    amount\\x1b[0m\nfrom"
        );
        assert!(matches!(for_terminal_multiline("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_block_keeps_newlines_and_tabs_and_escapes_everything_else() {
        assert_eq!(
            for_terminal_block("a\r\n\tb\x1b[2J\rc\u{202e}\nd"),
            "a\n\tb\\x1b[2J\\x0dc\\u{202e}\nd"
        );
        assert!(matches!(for_terminal_block("a\n\tb"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_fence_is_longer_than_any_run_of_backticks_in_the_text() {
        assert_eq!(fenced_block("ok\n", "  "), "  ```\n  ok\n  ```\n");
        assert_eq!(
            fenced_block("a\n```\nb ````` c", ""),
            "``````\na\n```\nb ````` c\n``````\n"
        );
    }

    #[test]
    fn json_escapes_c1_and_bidi_and_reads_back_the_same() {
        let value = serde_json::json!({"t": "a\x1b[2J\u{9b}31m\u{202e}\u{7f}\u{e0041}b", "n": 1});
        let text = json(&value, true).unwrap();
        assert!(!text.chars().any(|c| c != '\n' && is_unsafe(c)), "{text}");
        for escaped in [
            "\\u001b[2J",
            "\\u009b31m",
            "\\u202e",
            "\\u007f",
            "\\udb40\\udc41",
        ] {
            assert!(text.contains(escaped), "{escaped} in {text}");
        }
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn sanitize_reaches_json_values_and_map_keys() {
        let mut value = serde_json::json!({"k\u{202e}": ["\x1b[2J", {"x": "\u{9b}"}]});
        value.sanitize();
        assert_eq!(
            value,
            serde_json::json!({"k\\u{202e}": ["\\x1b[2J", {"x": "\\u{9b}"}]})
        );
    }

    proptest! {
        #[test]
        fn json_output_never_contains_unsafe_chars(s in any::<String>()) {
            let text = json(&serde_json::json!({ "s": s.clone() }), false).unwrap();
            prop_assert!(!text.chars().any(is_unsafe));
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back["s"].as_str(), Some(s.as_str()));
        }

        #[test]
        fn output_never_contains_unsafe_chars(s in any::<String>()) {
            let out = for_terminal(&s);
            prop_assert!(!out.chars().any(is_unsafe));
        }

        #[test]
        fn multiline_output_only_keeps_newlines(s in any::<String>()) {
            let out = for_terminal_multiline(&s);
            prop_assert!(!out.chars().any(|c| c != '\n' && is_unsafe(c)));
        }

        #[test]
        fn a_block_only_keeps_newlines_and_tabs(s in any::<String>()) {
            let out = for_terminal_block(&s);
            prop_assert!(!out.chars().any(|c| c != '\n' && c != '\t' && is_unsafe(c)));
        }

        #[test]
        fn nothing_in_a_fenced_block_closes_it(s in "[`a\n]{0,40}") {
            let block = fenced_block(&s, "");
            let lines: Vec<&str> = block.lines().collect();
            let fence = lines[0];
            prop_assert_eq!(lines[lines.len() - 1], fence);
            // A line closes a block when it is a run of backticks at least as long.
            prop_assert!(lines[1..lines.len() - 1]
                .iter()
                .all(|l| !(l.trim().starts_with(fence) && l.trim().chars().all(|c| c == '`'))));
        }

        #[test]
        fn dangerous_ranges_are_always_escaped(
            prefix in "[a-z]{0,4}",
            c in prop_oneof![
                0u32..0x20, 0x7fu32..0xa0, 0x202au32..0x202f, 0x2066u32..0x206a,
            ].prop_map(|code| char::from_u32(code).unwrap()),
        ) {
            let s = format!("{prefix}{c}");
            let out = for_terminal(&s);
            prop_assert!(!out.contains(c));
        }
    }
}
