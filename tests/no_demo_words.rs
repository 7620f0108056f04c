//! The engine is general: no word of either demo story appears outside `src/demo/`,
//! and neither story's words appear in the other's folder. Code, comments, test data and
//! snapshots under `src/` use neutral examples instead (a payments table, an `amount` or
//! `zip_code` column). The stories' outputs are checked for each other's words where
//! they are played (tests/demo_story.rs, tests/demo_payouts.rs).

use std::path::{Path, PathBuf};

/// Words only the ticketing story uses, matched without regard to case.
const TICKETING_WORDS: &[&str] = &[
    "ticketing",
    "seat_section",
    "FLOOR-A",
    "int_seat_map",
    "orders are not lost",
    "seat map",
    "on-sale",
];

/// Words only the courier payouts story uses.
const PAYOUTS_WORDS: &[&str] = &[
    "courier",
    "payout",
    "fct_deliveries",
    "signing key",
    "error bucket",
];

/// Every file under `dir`, in a stable order, leaving out `skip`.
fn files(dir: &Path, skip: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path == skip {
            continue;
        }
        if path.is_dir() {
            files(&path, skip, found);
        } else {
            found.push(path);
        }
    }
}

/// `file:line: word` for every line of `text` holding a demo word.
fn findings(name: &str, text: &str) -> Vec<String> {
    let words: Vec<&str> = TICKETING_WORDS
        .iter()
        .chain(PAYOUTS_WORDS)
        .copied()
        .collect();
    findings_of(&words, name, text)
}

/// `file:line: word` for every line of `text` holding one of `words`.
fn findings_of(words: &[&str], name: &str, text: &str) -> Vec<String> {
    let lowered: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.to_lowercase();
        for (word, lowered) in words.iter().zip(&lowered) {
            if line.contains(lowered.as_str()) {
                out.push(format!("{name}:{}: {word}", number + 1));
            }
        }
    }
    out
}

#[test]
fn the_finder_names_file_line_and_word_whatever_the_case() {
    let text = "fine\nselect Seat_Section from t\nON-SALE and floor-a\n";
    assert_eq!(
        findings("src/x.rs", text),
        [
            "src/x.rs:2: seat_section",
            "src/x.rs:3: FLOOR-A",
            "src/x.rs:3: on-sale",
        ]
    );
    assert!(findings("src/y.rs", "payments.charges zip_code A-3").is_empty());
}

#[test]
fn no_demo_story_word_outside_src_demo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut paths = Vec::new();
    for crate_src in ["src", "crates/core/src", "crates/api/src"] {
        files(&root.join(crate_src), &src.join("demo"), &mut paths);
    }
    assert!(!paths.is_empty(), "no files under {}", src.display());
    let mut found = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        found.extend(findings(&name, &String::from_utf8_lossy(&bytes)));
    }
    assert!(
        found.is_empty(),
        "demo story words outside src/demo/ ({} lines):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Every file under `dir` holding one of `words`, as `file:line: word`.
fn words_under(dir: &Path, words: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files(dir, Path::new(""), &mut paths);
    assert!(!paths.is_empty(), "no files under {}", dir.display());
    paths
        .iter()
        .flat_map(|path| {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            findings_of(words, &name, &String::from_utf8_lossy(&bytes))
        })
        .collect()
}

#[test]
fn neither_story_uses_the_others_words() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/demo");
    let found: Vec<String> = words_under(&demo.join("ticketing"), PAYOUTS_WORDS)
        .into_iter()
        .chain(words_under(&demo.join("payouts"), TICKETING_WORDS))
        .collect();
    assert!(
        found.is_empty(),
        "one story's words in the other's folder ({} lines):\n{}",
        found.len(),
        found.join("\n")
    );
}
