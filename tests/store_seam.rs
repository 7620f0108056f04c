//! The state database is reached only through the store (`crates/core/src/store/`): no other module
//! issues SQL to it or names the SQLite library, so the store can gain a second
//! implementation (PostgreSQL for team state) without a caller changing. Warehouses
//! (`crates/core/src/warehouse/`) are other databases, and the demo builds its own; both are left
//! out. A module's in-file tests (after `#[cfg(test)]`), and a file of tests (`tests.rs`, or
//! one that says `#![cfg(test)]`), may set up state directly.

use std::path::{Path, PathBuf};

/// Files that still reach the state database themselves, each to be moved behind the
/// store. Shrink this list; never grow it. A file listed here that no longer reaches
/// the database fails the test until it is taken off.
const PENDING: &[&str] = &[];

/// Where the state database may be reached, and what is not the state database.
const OUTSIDE: &[&str] = &[
    "crates/core/src/store",
    "crates/core/src/warehouse",
    "src/demo",
];

/// The state database's tables (see `store::MIGRATIONS`).
const TABLES: &[&str] = &[
    "chain",
    "meta",
    "observation",
    "incident",
    "request",
    "intent",
    "minute_source",
    "minute_day",
    "volume_restart",
    "outbox",
    "held_schedule",
    "dbt_core_run",
    "dbt_core_hold",
    "request_outcome",
    "baseline_restart",
    "snooze",
    "baseline_leave",
    "access_request",
];

/// SQL words that come right before a table's name.
const BEFORE_TABLE: &[&str] = &["FROM", "INTO", "UPDATE", "JOIN", "TABLE"];

/// SQL that is about a connection, whatever the table.
const STATEMENTS: &[&str] = &["\"BEGIN", "\"COMMIT", "\"ROLLBACK", "PRAGMA "];

fn files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Whether the rest of a file, from the line `code`, is tests: a module's in-file tests
/// (`#[cfg(test)]`), or the whole of a file of tests (`#![cfg(test)]`).
fn is_tests_from_here(code: &str) -> bool {
    code.starts_with("#[cfg(test)]") || code.starts_with("#![cfg(test)]")
}

#[test]
fn a_file_of_tests_is_left_out() {
    let text = "//! What something costs.\n\
                #![cfg(test)]\n\
                let conn = rusqlite::Connection::open(&p).unwrap();\n\
                let state = crate::store::open(&db).unwrap();\n";
    assert!(findings("src/x.rs", text).is_empty());
    assert!(read_write_opens("src/x.rs", text).is_empty());
}

/// `file:line: what` for every line of `text` (up to its in-file tests) that names the
/// SQLite library or holds SQL about a state table.
fn findings(name: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if is_tests_from_here(code) {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let mut what = Vec::new();
        if code.contains("rusqlite") {
            what.push("rusqlite".to_string());
        }
        for statement in STATEMENTS {
            if code.contains(statement) {
                what.push(statement.trim_matches(['"', ' ']).to_string());
            }
        }
        for word in BEFORE_TABLE {
            for (at, _) in code.match_indices(&format!("{word} ")) {
                let rest = &code[at + word.len() + 1..];
                let table: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let starts_word = at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric();
                if starts_word && TABLES.contains(&table.as_str()) {
                    what.push(format!("{word} {table}"));
                }
            }
        }
        for what in what {
            out.push(format!("{name}:{}: {what}", number + 1));
        }
    }
    out
}

#[test]
fn the_finder_names_sql_about_state_tables_and_the_library() {
    let text = "use rusqlite::Connection;\n\
                // a comment: SELECT x FROM chain\n\
                let n = conn.query_row(\"SELECT count(*) FROM chain WHERE kind = ?1\", [k]);\n\
                conn.execute(\"INSERT INTO meta (key) VALUES (?1)\", [k]);\n\
                warehouse.query(\"SELECT count(*) FROM payments\");\n\
                state.execute_batch(\"BEGIN IMMEDIATE\")?;\n\
                let from_chain = \"records FROM chains\";\n\
                #[cfg(test)]\n\
                conn.execute(\"DELETE FROM outbox\", []);\n";
    assert_eq!(
        findings("src/x.rs", text),
        [
            "src/x.rs:1: rusqlite",
            "src/x.rs:3: FROM chain",
            "src/x.rs:4: INTO meta",
            "src/x.rs:6: BEGIN",
        ]
    );
}

#[test]
fn only_the_store_reaches_the_state_database() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for crate_src in ["src", "crates/core/src", "crates/api/src"] {
        files(&root.join(crate_src), &mut paths);
    }
    assert!(!paths.is_empty());
    let mut found = Vec::new();
    let mut pending_clean = Vec::new();
    for path in &paths {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        if OUTSIDE
            .iter()
            .any(|dir| name.starts_with(&format!("{dir}/")))
        {
            continue;
        }
        // A module's tests in a file of their own are tests.
        if path.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let here = findings(&name, &text);
        if PENDING.contains(&name.as_str()) {
            if here.is_empty() {
                pending_clean.push(name);
            }
        } else {
            found.extend(here);
        }
    }
    for pending in PENDING {
        assert!(root.join(pending).exists(), "{pending} is listed but gone");
    }
    assert!(
        found.is_empty(),
        "the state database reached outside src/store/ ({} lines); ask the store instead:\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        pending_clean.is_empty(),
        "no longer reach the state database; take them off PENDING: {pending_clean:?}"
    );
}

/// One writer to the state database: only the engine opens it for writing (the
/// store's `open`), or a command that holds the engine's lock while no engine runs
/// (`EngineLock::open_state`); everything else reads it (`open_read_only`, or a
/// `scratch_copy` beside a running engine) or keeps a database of its own, as an
/// orchestrator keeps its own (the dbt Core runner's `dbt-core.db`).
/// Each file here holds the data directory's engine lock before it opens the state
/// database for writing: an engine, or a command that is the one writer while no engine
/// runs (it opens it through the lock, `EngineLock::open_state`).
const ENGINES: &[&str] = &[
    "src/engine/server.rs",
    "src/demo/mod.rs",
    // `dataward check` stores a poll under the lock; beside an engine it stores nothing.
    "crates/core/src/monitor/cli.rs",
    // `dataward stop --reason/--lift` with no engine answering.
    "src/cli/chain.rs",
];

/// Files that still open the state database for writing beside the engine, each to be
/// moved onto the engine. Shrink this list; never grow it. A file listed here that no
/// longer opens it fails the test until it is taken off.
const PENDING_WRITERS: &[&str] = &[];

/// `file:line` for every line of `text` (up to its in-file tests) that opens the state
/// database for writing: calls the store's `open` or the engine lock's `open_state`, or
/// brings `open` in by name.
fn read_write_opens(name: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if is_tests_from_here(code) {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let imported = code.starts_with("use ")
            && code.contains("store::")
            && code
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|word| word == "open");
        if code.contains("store::open(")
            || code.contains("store::open;")
            || code.contains(".open_state(")
            || imported
        {
            out.push(format!("{name}:{}", number + 1));
        }
    }
    out
}

#[test]
fn the_finder_names_every_read_write_open_of_the_state_database() {
    let text = "let state = crate::store::open(&db)?;\n\
                // crate::store::open(&db) in a comment\n\
                let reader = crate::store::open_read_only(&db)?;\n\
                use crate::store::{files, open};\n\
                use dataward::store::open_read_only;\n\
                let conn = dataward::store::open(&path).unwrap();\n\
                let runs = crate::store::dbt_core::open(&runner_db)?;\n\
                read.store(&lock.open_state()?)?;\n\
                #[cfg(test)]\n\
                let test_state = crate::store::open(&db)?;\n";
    assert_eq!(
        read_write_opens("src/x.rs", text),
        ["src/x.rs:1", "src/x.rs:4", "src/x.rs:6", "src/x.rs:8"]
    );
}

#[test]
fn only_the_engine_opens_the_state_database_for_writing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for crate_src in ["src", "crates/core/src", "crates/api/src"] {
        files(&root.join(crate_src), &mut paths);
    }
    assert!(!paths.is_empty());
    let mut found = Vec::new();
    let mut pending_clean = Vec::new();
    for path in &paths {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        // The store is where `open` is; a module's tests in a file of their own are tests.
        if name.starts_with("crates/core/src/store/")
            || path.file_name().is_some_and(|f| f == "tests.rs")
            || ENGINES.contains(&name.as_str())
        {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let here = read_write_opens(&name, &text);
        if PENDING_WRITERS.contains(&name.as_str()) {
            if here.is_empty() {
                pending_clean.push(name);
            }
        } else {
            found.extend(here);
        }
    }
    for listed in ENGINES.iter().chain(PENDING_WRITERS) {
        assert!(root.join(listed).exists(), "{listed} is listed but gone");
    }
    assert!(
        found.is_empty(),
        "the state database opened for writing outside the engine ({} places); read it \
         with store::open_read_only, keep a database of your own, or (a command that \
         writes with no engine running) take the engine lock and list the file in ENGINES:\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        pending_clean.is_empty(),
        "no longer open the state database for writing; take them off PENDING_WRITERS: \
         {pending_clean:?}"
    );
}
