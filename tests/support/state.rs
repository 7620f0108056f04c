//! What the integration tests read back from a data directory's state database, on a
//! read-only connection (the engine may be running): the chain's decisions, pending
//! intents, and a proposal of an incident as `show --json` gives it.

#![allow(dead_code)]

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

/// A read-only look at the state database while the engine runs.
pub fn state(dir: &Path) -> Connection {
    Connection::open_with_flags(dir.join("dataward.db"), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Chain records about `proposal` of `kind` (a decision: with its verdict).
pub fn decisions(dir: &Path, proposal: &str) -> Vec<String> {
    let conn = state(dir);
    let mut stmt = conn
        .prepare(
            "SELECT json_extract(payload, '$.verdict') FROM chain
             WHERE kind = 'decision' AND json_extract(payload, '$.proposal') = ?1",
        )
        .unwrap();
    stmt.query_map([proposal], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

pub fn pending_intents(dir: &Path) -> i64 {
    state(dir)
        .query_row(
            "SELECT count(*) FROM intent WHERE status = 'pending'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// (id, content hash, the body's job if any) of the incident's proposal of `kind`.
pub fn proposal(incident: &Value, kind: &str) -> (String, String, Option<String>) {
    let p = incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind)
        .unwrap();
    (
        p["id"].as_str().unwrap().to_string(),
        p["content_hash"].as_str().unwrap().to_string(),
        p["body"]["job"].as_str().map(str::to_string),
    )
}
