//! The layers of the code. The workspace's crates hold the coarse rules: the protocol
//! (`crates/api`) depends on nothing of dataward, and the domain (`crates/core`) cannot
//! name the binary's modules (the console, the server, the CLI, init, doctor, the demo),
//! which live in the package above it. This test holds the rules inside the domain crate,
//! read from its source's own paths: the domain below the engine never names the engine,
//! and outside the engine, whose step converts to the protocol at the edge, the domain
//! never names the protocol (`crate::engine::api`, or `dataward_api` itself).
//!
//! Every `crate::`, `super::`, `self::`, `dataward_api::` and child-module path is read,
//! `use` trees and paths in code alike, unit tests included (they go with their crate).
//! `PENDING` lists the edges not yet cut; an entry no longer needed fails too, so the
//! list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The protocol: plain serde types a console and the engine share.
const PROTOCOL: &[&str] = &["engine::api", "engine::wire"];

/// The engine: the step on top of the domain and, for now, the edge where the domain's
/// types become the protocol's. The effects (`effects::`, the orchestrators) are below
/// it, with the rest of the domain.
const ENGINE: &str = "engine";

/// Edges not cut yet: (file, module it names), each with its plan; remove an entry when
/// its edge is cut. All are the domain naming the protocol, which the compiler allows
/// (the protocol crate is a leaf the domain may depend on) and ENGINEERING.md does not.
const PENDING: &[(&str, &str)] = &[];

/// Edges that stay: (file, module it names), each with why.
const ALLOWED: &[(&str, &str)] = &[
    // The time type is the protocol's and the domain's alike (a chain record's time is
    // the time a console is sent); clock.rs gives it to the domain as `clock::Timestamp`.
    ("crates/core/src/clock.rs", "engine::api"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Protocol,
    Domain,
    Root,
}

fn within(module: &str, prefix: &str) -> bool {
    module == prefix
        || module
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::"))
}

fn layer(module: &str) -> Layer {
    if module.is_empty() {
        Layer::Root
    } else if PROTOCOL.iter().any(|p| within(module, p)) {
        Layer::Protocol
    } else {
        Layer::Domain
    }
}

/// The engine, which may name the protocol as the edge.
fn is_engine(module: &str) -> bool {
    within(module, ENGINE)
}

/// Why a file's path to a module runs back up the layers, or None when it does not.
fn breaks_layers(from: &str, to: &str) -> Option<&'static str> {
    match (layer(from), layer(to)) {
        (Layer::Domain, Layer::Protocol) if !is_engine(from) => {
            Some("the domain names the protocol outside the engine (convert at the edge instead)")
        }
        (Layer::Domain, Layer::Domain) if !within(from, ENGINE) && within(to, ENGINE) => {
            Some("the domain below the engine names the engine")
        }
        _ => None,
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs` is the root.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.last().map(String::as_str) {
        Some("main") if parts.len() == 1 => return None,
        Some("lib") if parts.len() == 1 => parts.clear(),
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    Some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers and punctuation, with comments, strings and char literals left out (their
/// text is no path). Lifetimes are kept as identifiers after their quote.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let count_lines =
        |from: usize, to: usize| chars[from..to].iter().filter(|&&c| c == '\n').count();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count_lines(start, i);
        } else if let Some(end) = raw_string_end(&chars, i) {
            line += count_lines(i, end);
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            line += count_lines(start, i.min(chars.len()));
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}'), or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Token { text, line });
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Where a raw string starting at `i` (`r"…"`, `r#"…"#`, `br"…"`) ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let before_is_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if before_is_word {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// Reads a path (or a `use` tree) whose segments start at `at`, appending each full path
/// it names to `out`; returns where it stopped.
fn read_path(
    tokens: &[Token],
    mut at: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        let Some(token) = tokens.get(at) else {
            out.push(path);
            return at;
        };
        match token.text.as_str() {
            "{" => {
                at += 1;
                while tokens.get(at).is_some_and(|t| t.text != "}") {
                    at = read_path(tokens, at, &path, out);
                    if tokens.get(at).is_some_and(|t| t.text == "as") {
                        at += 2;
                    }
                    if tokens.get(at).is_some_and(|t| t.text == ",") {
                        at += 1;
                    } else if tokens.get(at).is_some_and(|t| t.text != "}") {
                        // Nothing a `use` tree holds: stop reading it.
                        return at;
                    }
                }
                return at + 1;
            }
            "super" => {
                path.pop();
            }
            "self" | "*" => {}
            word if word.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
                path.push(word.to_string());
            }
            _ => {
                out.push(path);
                return at;
            }
        }
        at += 1;
        if tokens.get(at).is_some_and(|t| t.text == "::") {
            at += 1;
        } else {
            out.push(path);
            return at;
        }
    }
}

/// One path from a file to another module: the file, its line, the module named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// The protocol crate as the domain names it: `crate::engine::api` is its re-export.
const PROTOCOL_CRATE: &str = "dataward_api";

/// The paths in the domain crate (`crates/core/src` under `root`).
fn edges(root: &Path) -> Vec<Edge> {
    let src = root.join("crates/core/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut modules: BTreeSet<Vec<String>> =
        files.iter().filter_map(|f| module_of(&src, f)).collect();
    let protocol: Vec<String> = vec!["engine".into(), "api".into()];
    modules.insert(protocol.clone());
    let mut found = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let text = fs::read_to_string(file).unwrap();
        let tokens = tokens(&text);
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // Child modules declared here (`mod x;`) are named bare; inline modules
        // (`mod tests { … }`) move `super::` down a level.
        let children: BTreeSet<&str> = tokens
            .windows(3)
            .filter(|w| w[0].text == "mod" && w[2].text == ";")
            .map(|w| w[1].text.as_str())
            .collect();
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0;
        let mut at = 0;
        while at < tokens.len() {
            let token = &tokens[at];
            match token.text.as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                }
                "mod" if tokens.get(at + 2).is_some_and(|t| t.text == "{") => {
                    inline.push((tokens[at + 1].text.clone(), depth));
                    depth += 1;
                    at += 3;
                    continue;
                }
                _ => {}
            }
            let starts_path = tokens.get(at + 1).is_some_and(|t| t.text == "::")
                && (at == 0 || tokens[at - 1].text != "::")
                && (matches!(
                    token.text.as_str(),
                    "crate" | "super" | "self" | PROTOCOL_CRATE
                ) || children.contains(token.text.as_str()));
            // `use dataward_api as x;` and `use dataward_api::{…}`: the protocol by name.
            let names_protocol_crate = token.text == PROTOCOL_CRATE
                && (starts_path || tokens.get(at + 1).is_some_and(|t| t.text == "as"));
            if names_protocol_crate && !starts_path {
                found.push(Edge {
                    file: relative.clone(),
                    line: token.line,
                    from: module.join("::"),
                    to: protocol.join("::"),
                });
            }
            if !starts_path {
                at += 1;
                continue;
            }
            let here: Vec<String> = module
                .iter()
                .cloned()
                .chain(inline.iter().map(|(name, _)| name.clone()))
                .collect();
            let (base, first) = match token.text.as_str() {
                "crate" => (Vec::new(), at + 2),
                PROTOCOL_CRATE => (protocol.clone(), at + 2),
                "self" => (here, at + 2),
                _ => (here, at),
            };
            let mut paths = Vec::new();
            let end = read_path(&tokens, first, &base, &mut paths);
            for path in paths {
                let mut named = path.as_slice();
                while !named.is_empty() && !modules.contains(named) {
                    named = &named[..named.len() - 1];
                }
                found.push(Edge {
                    file: relative.clone(),
                    line: token.line,
                    from: module.join("::"),
                    to: named.join("::"),
                });
            }
            at = end.max(at + 1);
        }
    }
    found
}

#[test]
fn no_import_runs_back_up_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = edges(root);
    assert!(
        edges
            .iter()
            .any(|e| e.from == "engine" && e.to == "engine::api"),
        "the scan finds no path at all from the engine to its protocol: it reads nothing"
    );
    let mut broken: BTreeMap<(&str, &str), (Vec<usize>, &str)> = BTreeMap::new();
    let mut pending_used = BTreeSet::new();
    for edge in &edges {
        let Some(why) = breaks_layers(&edge.from, &edge.to) else {
            continue;
        };
        let key = (edge.file.as_str(), edge.to.as_str());
        if ALLOWED.contains(&key) {
            continue;
        }
        if PENDING.contains(&key) {
            pending_used.insert(key);
            continue;
        }
        let (lines, _) = broken.entry(key).or_insert((Vec::new(), why));
        lines.push(edge.line);
    }
    let broken = broken.into_iter().map(|((file, to), (lines, why))| {
        let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
        format!(
            "{file} (line {}) names crate::{to}: {why}",
            lines.join(", ")
        )
    });
    let stale: Vec<String> = PENDING
        .iter()
        .filter(|entry| !pending_used.contains(*entry))
        .map(|(file, to)| format!("(\"{file}\", \"{to}\") is cut now: take it off PENDING"))
        .collect();
    let problems: Vec<String> = broken.chain(stale).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The scan itself: a path in a string or a comment is no edge, a `use` tree is read
/// whole, and `super::` counts inline modules.
#[test]
fn the_scan_reads_paths_as_the_compiler_does() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("crates/core/src");
    fs::create_dir_all(src.join("engine")).unwrap();
    fs::create_dir_all(src.join("chain")).unwrap();
    fs::write(src.join("lib.rs"), "pub mod chain;\npub mod engine;\n").unwrap();
    fs::write(
        src.join("engine/mod.rs"),
        "pub mod api;\npub mod hub;\nuse api::Event;\nfn f() { let _ = hub::X; }\n",
    )
    .unwrap();
    fs::write(src.join("engine/hub.rs"), "").unwrap();
    fs::write(
        src.join("engine/api.rs"),
        "// crate::chain::x in a comment\nconst S: &str = \"crate::chain::y\";\n\
         const R: &str = r#\"crate::chain::z\"#;\nfn f<'a>(c: &'a char) { let _ = '\"'; }\n\
         mod tests {\n    use super::super::hub::Y;\n}\n",
    )
    .unwrap();
    fs::write(
        src.join("chain/mod.rs"),
        "use crate::{engine::{self, api::Refusal}, chain as me};\n\
         fn f() -> dataward_api::Snapshot { todo!() }\n",
    )
    .unwrap();
    let mut found: Vec<(String, String)> = edges(dir.path())
        .into_iter()
        .map(|e| (e.from, e.to))
        .collect();
    found.sort();
    found.dedup();
    let expected: Vec<(String, String)> = [
        ("chain", "chain"),
        ("chain", "engine"),
        ("chain", "engine::api"),
        ("engine", "engine::api"),
        ("engine", "engine::hub"),
        ("engine::api", "engine::hub"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(found, expected);
    assert_eq!(breaks_layers("engine", "engine::api"), None);
    assert!(breaks_layers("chain", "engine").is_some());
    assert!(breaks_layers("chain", "engine::api").is_some());
    assert!(breaks_layers("effects::orchestrator", "engine::api").is_some());
    assert!(breaks_layers("effects::orchestrator", "engine").is_some());
}

/// Where the time of day may be read: src/clock.rs, the one clock (wall or the demo's
/// virtual one) that schedules, expiry, outbox retries and every stored time read.
/// `Instant::now` is not the time of day (a timeout's stopwatch) and is not counted.
const READS_THE_WALL: &[&str] = &["crates/core/src/clock.rs"];

/// The ways Rust reads the time of day.
const WALL_READS: &[&str] = &["Utc", "Local", "SystemTime"];

/// Every crate's sources under `root`: the binary's, the domain's, the protocol's.
fn wall_reads(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for src in ["src", "crates/core/src", "crates/api/src"] {
        if root.join(src).is_dir() {
            rust_files(&root.join(src), &mut files);
        }
    }
    files.sort();
    let mut found = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let tokens = tokens(&fs::read_to_string(file).unwrap());
        for w in tokens.windows(3) {
            if WALL_READS.contains(&w[0].text.as_str()) && w[1].text == "::" && w[2].text == "now" {
                found.push(format!("{relative}:{} reads {}::now", w[0].line, w[0].text));
            }
        }
    }
    found
}

#[test]
fn the_time_of_day_is_read_only_through_the_clock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (clock, elsewhere): (Vec<String>, Vec<String>) =
        wall_reads(root).into_iter().partition(|read| {
            READS_THE_WALL
                .iter()
                .any(|f| read.starts_with(&format!("{f}:")))
        });
    assert!(
        !clock.is_empty(),
        "crates/core/src/clock.rs reads no time of day: the scan reads nothing"
    );
    assert!(
        elsewhere.is_empty(),
        "read the time from crate::clock::Clock instead:\n{}",
        elsewhere.join("\n")
    );
}

/// The scan finds a read however it is spelled, and none in a comment or a string.
#[test]
fn the_wall_scan_finds_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("lib.rs"),
        "// Utc::now() in a comment\nconst S: &str = \"Local::now()\";\n\
         fn a() { let _ = chrono::Utc::now(); }\nfn b() { let _ = std::time::SystemTime::now(); }\n\
         fn c() { let _ = Local::now; let _ = std::time::Instant::now(); }\n",
    )
    .unwrap();
    assert_eq!(
        wall_reads(dir.path()),
        [
            "src/lib.rs:3 reads Utc::now",
            "src/lib.rs:4 reads SystemTime::now",
            "src/lib.rs:5 reads Local::now",
        ]
    );
}
