//! Every CLI output a person reads is sanitized like the console: text shows control
//! characters, escape sequences and bidi overrides as visible escapes; JSON escapes them
//! (C0, C1 and bidi alike) as `\uXXXX`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

/// Clears the screen, a C1 CSI, a right-to-left override.
const EVIL: &str = "x\x1b[2J\u{9b}31m\u{202e}y";
const RAW: [char; 3] = ['\x1b', '\u{9b}', '\u{202e}'];

fn dataward(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .output()
        .unwrap()
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {:?}\nstderr: {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// No raw escape reaches the terminal, and the escapes are shown.
fn assert_text_escaped(output: &str, context: &str) {
    assert!(
        !output.contains(RAW),
        "{context}: raw control characters in {output:?}"
    );
    for visible in ["\\x1b[2J", "\\u{9b}31m", "\\u{202e}"] {
        assert!(
            output.contains(visible),
            "{context}: {visible} not shown in {output:?}"
        );
    }
}

fn assert_json_escaped(output: &str, context: &str) {
    assert!(
        !output.contains(RAW),
        "{context}: raw control characters in {output:?}"
    );
    for visible in ["\\u001b[2J", "\\u009b31m", "\\u202e"] {
        assert!(
            output.contains(visible),
            "{context}: {visible} not in {output:?}"
        );
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A chain holding one incident whose outside text (table, cause, titles, reasons, run
/// details) carries the escapes.
fn evil_incident(data: &Path) {
    let conn = dataward::store::open(&data.join("dataward.db")).unwrap();
    let actor = json!({"uid": 1000, "user": EVIL}).to_string();
    let records = [
        (
            "incident_opened",
            json!({"incident": "INC-0001", "table": EVIL, "monitor": EVIL,
                   "observed": EVIL, "expected": EVIL}),
        ),
        (
            "diagnosis",
            json!({"incident": "INC-0001", "cause": EVIL, "evidence": [EVIL]}),
        ),
        (
            "blast_radius",
            json!({"incident": "INC-0001", "nodes": [{"name": EVIL, "kind": EVIL}]}),
        ),
        (
            "proposal",
            json!({"incident": "INC-0001", "proposal": "P-1", "kind": EVIL, "title": EVIL,
                   "owner": EVIL, "content_hash": EVIL, "undo": EVIL}),
        ),
        (
            "decision",
            json!({"incident": "INC-0001", "proposal": "P-1", "verdict": EVIL, "reason": EVIL}),
        ),
        (
            "run",
            json!({"incident": "INC-0001", "run": EVIL, "job": EVIL, "status": EVIL, "detail": EVIL}),
        ),
        (
            "verification",
            json!({"incident": "INC-0001", "passed": true, "checks": [{"passed": true, "name": EVIL, "detail": EVIL}]}),
        ),
        ("undo", json!({"incident": "INC-0001", "action": EVIL})),
    ];
    for (kind, payload) in records {
        // A record's time is a time: no text of anyone's rides in it.
        let at = "2026-11-24T15:00:00Z".parse().unwrap();
        dataward::chain::append(&conn, at, kind, &actor, &payload).unwrap();
    }
}

#[test]
fn receipts_show_outside_text_as_visible_escapes() {
    let dir = tempfile::tempdir().unwrap();
    evil_incident(dir.path());
    let data = dir.path().to_str().unwrap();
    for format in [&[][..], &["--md"]] {
        let mut args = vec!["receipt", "INC-0001", "--data-dir", data];
        args.extend_from_slice(format);
        let out = dataward(&args);
        assert!(out.status.success(), "{}", show(&out));
        assert_text_escaped(&stdout(&out), &format!("receipt {format:?}"));
    }
    let out = dataward(&["receipt", "INC-0001", "--json", "--data-dir", data]);
    assert!(out.status.success(), "{}", show(&out));
    let text = stdout(&out);
    assert_json_escaped(&text, "receipt --json");
    // Escaped, not changed: the JSON still holds the recorded text.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["table"], EVIL);
}

#[test]
fn a_stop_reason_is_shown_escaped_to_everyone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let reason = format!("halt {EVIL}");
    let out = dataward(&["stop", "--reason", &reason, "--data-dir", data]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_text_escaped(&stdout(&out), "stop --reason");
    let out = dataward(&["stop", "--data-dir", data]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_text_escaped(&stdout(&out), "stop");
}

#[test]
fn verify_messages_are_escaped_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let at = "2026-11-24T15:00:00Z".parse().unwrap();
    let first = dataward::chain::append(&conn, at, "test", "{}", &json!({"i": 1})).unwrap();
    // A second record, correctly hashed, that claims another log id.
    let mut forged = dataward::chain::Record {
        seq: 2,
        prev_hash: first.hash.clone(),
        log_id: EVIL.to_string(),
        schema_version: dataward::chain::SCHEMA_VERSION,
        at,
        kind: "test".into(),
        actor: "{}".into(),
        payload: "{}".into(),
        recorded_at: first.recorded_at.clone(),
        clock: first.clock.clone(),
        hash: String::new(),
    };
    forged.hash = dataward::chain::hash_record(&forged);
    dataward::chain::insert(&conn, &forged).unwrap();
    drop(conn);
    let data = dir.path().to_str().unwrap();
    let out = dataward(&["verify", "--data-dir", data]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_text_escaped(&stdout(&out), "verify");
    let out = dataward(&["verify", "--json", "--data-dir", data]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_json_escaped(&stdout(&out), "verify --json");
}

#[test]
fn lineage_node_names_are_escaped_in_the_tree_and_json() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lineage/cast_manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let node = &mut manifest["nodes"]["model.ticketing.int_seat_map"];
    node["name"] = EVIL.into();
    node["config"]["meta"] = json!({"owner": EVIL});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let args = ["lineage", "--manifest", path, "--from", "stg_orders"];
    let out = dataward(&args);
    assert!(out.status.success(), "{}", show(&out));
    assert_text_escaped(&stdout(&out), "lineage");
    let out = dataward(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", show(&out));
    assert_json_escaped(&stdout(&out), "lineage --json");
}

#[test]
fn errors_quoting_outside_text_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    evil_incident(dir.path());
    let incident = format!("INC-{EVIL}");
    let out = dataward(&[
        "receipt",
        &incident,
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_text_escaped(&String::from_utf8_lossy(&out.stderr), "error");
}

#[test]
fn an_injected_backtest_shows_the_monitor_name_escaped() {
    let dir = tempfile::tempdir().unwrap();
    rusqlite::Connection::open(dir.path().join("wh.db"))
        .unwrap()
        .execute_batch(
            "CREATE TABLE t (at TEXT NOT NULL);
             WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM d WHERE n < 40),
               k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 99)
             INSERT INTO t (at) SELECT date('now', '-' || n || ' days') || 'T12:00:00Z'
             FROM d JOIN k;",
        )
        .unwrap();
    let config = dir.path().join("dataward.toml");
    // TOML's \u escapes carry the escapes into the monitor's name.
    let name = "x\\u001b[2J\\u009b31m\\u202ey";
    std::fs::write(
        &config,
        format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [[monitor]]\nname = \"{name}\"\nwarehouse = \"local\"\ntable = \"t\"\n\
             checks = [\"volume\"]\ntimestamp_column = \"at\"\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let args = [
        "backtest",
        "--inject",
        "--monitor",
        EVIL,
        "--config",
        config,
    ];
    let out = dataward(&args);
    assert!(out.status.success(), "{}", show(&out));
    assert_text_escaped(&stdout(&out), "backtest --inject");
    let out = dataward(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", show(&out));
    assert_json_escaped(&stdout(&out), "backtest --inject --json");
    // A name it does not know, quoted in the error.
    let out = dataward(&[
        "backtest",
        "--inject",
        "--monitor",
        &format!("{EVIL}!"),
        "--config",
        config,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_text_escaped(
        &String::from_utf8_lossy(&out.stderr),
        "backtest --inject error",
    );
}
