//! Tampering with the chain behind SQLite's back (the triggers dropped, as anyone with
//! the file could) must be caught by `dataward verify`, naming the first bad record.

use std::path::Path;
use std::process::Command;

use rusqlite::Connection;
use serde_json::{json, Value};

fn build_chain(dir: &Path, n: u64) {
    let conn = dataward::store::open(&dir.join("dataward.db")).unwrap();
    for i in 1..=n {
        dataward::chain::append(
            &conn,
            "2026-11-24T14:00:00Z".parse().unwrap(),
            "decision",
            r#"{"uid":1000}"#,
            &json!({"i": i}),
        )
        .unwrap();
    }
}

fn verify(dir: &Path) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["verify", "--json", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

/// Opens the database the way an attacker would: without the append-only triggers.
fn tamper(dir: &Path, sql: &str) {
    let conn = Connection::open(dir.join("dataward.db")).unwrap();
    conn.execute_batch("DROP TRIGGER chain_no_update; DROP TRIGGER chain_no_delete;")
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn an_untouched_chain_verifies() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    let (code, report) = verify(dir.path());
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["records"], 5);
}

#[test]
fn a_changed_field_is_named() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    tamper(
        dir.path(),
        r#"UPDATE chain SET payload = '{"i":99}' WHERE seq = 3"#,
    );
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1);
    assert_eq!(report["first_bad"]["seq"], 3);
    assert!(
        report["first_bad"]["reason"]
            .as_str()
            .unwrap()
            .contains("changed"),
        "{report}"
    );
}

#[test]
fn a_changed_actor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    tamper(
        dir.path(),
        r#"UPDATE chain SET actor = '{"uid":0}' WHERE seq = 2"#,
    );
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1);
    assert_eq!(report["first_bad"]["seq"], 2);
}

#[test]
fn a_deleted_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    tamper(dir.path(), "DELETE FROM chain WHERE seq = 3");
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1);
    assert_eq!(report["first_bad"]["seq"], 4, "{report}");
}

#[test]
fn reordered_records_are_named() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    // Swap the content of records 2 and 3, keeping their sequence numbers in place.
    tamper(
        dir.path(),
        "CREATE TEMP TABLE a AS SELECT * FROM chain WHERE seq IN (2, 3);
         DELETE FROM chain WHERE seq IN (2, 3);
         INSERT INTO chain SELECT CASE seq WHEN 2 THEN 3 ELSE 2 END, prev_hash, log_id, schema_version, at, kind, actor, payload, hash, recorded_at, clock FROM a;",
    );
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1);
    assert_eq!(report["first_bad"]["seq"], 2, "{report}");
}

#[test]
fn a_cut_tail_is_caught_by_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 5);
    tamper(dir.path(), "DELETE FROM chain WHERE seq >= 4");
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1);
    assert!(
        report["first_bad"]["reason"]
            .as_str()
            .unwrap()
            .contains("tail"),
        "{report}"
    );
}

/// A record correctly hashed and linked whose time is not a time (written behind
/// dataward's back: the engine writes only times) is named, not taken for some time.
#[test]
fn a_record_whose_time_is_not_a_time_is_named() {
    let dir = tempfile::tempdir().unwrap();
    build_chain(dir.path(), 2);
    let conn = Connection::open(dir.path().join("dataward.db")).unwrap();
    let (prev_hash, log_id, recorded_at): (String, String, String) = conn
        .query_row(
            "SELECT hash, log_id, recorded_at FROM chain WHERE seq = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let mut fields = dataward::chain::Fields {
        seq: 3,
        prev_hash: &prev_hash,
        log_id: &log_id,
        schema_version: dataward::chain::SCHEMA_VERSION,
        at: "yesterday noon",
        kind: "decision",
        actor: r#"{"uid":1000}"#,
        payload: r#"{"i":3}"#,
        recorded_at: &recorded_at,
        clock: &recorded_at,
        hash: "",
    };
    let hash = dataward::chain::hash_fields(&fields);
    fields.hash = &hash;
    conn.execute(
        "INSERT INTO chain (seq, prev_hash, log_id, schema_version, at, kind, actor, payload,
                            hash, recorded_at, clock)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        rusqlite::params![
            fields.seq,
            fields.prev_hash,
            fields.log_id,
            fields.schema_version,
            fields.at,
            fields.kind,
            fields.actor,
            fields.payload,
            fields.hash,
            fields.recorded_at,
            fields.clock
        ],
    )
    .unwrap();
    let (code, report) = verify(dir.path());
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["first_bad"]["seq"], 3, "{report}");
    let reason = report["first_bad"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("not a time") && reason.contains("yesterday noon"),
        "{report}"
    );
    // Whatever reads the chain's records names it too, never guessing a time.
    let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let error = format!("{:#}", dataward::chain::records(&conn).unwrap_err());
    assert!(
        error.contains("chain record #3") && error.contains("yesterday noon"),
        "{error}"
    );
}
