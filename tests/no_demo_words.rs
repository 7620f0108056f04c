//! The engine is general: no word of the demo story appears outside `src/demo/`. Code,
//! comments, test data and snapshots under `src/` use neutral examples instead (a
//! payments table, an `amount` or `zip_code` column).

use std::path::{Path, PathBuf};

/// Words only the demo story uses, matched without regard to case.
const DEMO_WORDS: &[&str] = &[
    "ticketing",
    "seat_section",
    "FLOOR-A",
    "int_seat_map",
    "orders are not lost",
    "seat map",
    "on-sale",
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
    let words: Vec<String> = DEMO_WORDS.iter().map(|w| w.to_lowercase()).collect();
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.to_lowercase();
        for (word, lowered) in DEMO_WORDS.iter().zip(&words) {
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
    files(&src, &src.join("demo"), &mut paths);
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
