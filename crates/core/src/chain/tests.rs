use super::*;
use serde_json::json;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

/// A real time for records whose time does not matter.
fn noon() -> Timestamp {
    at("2026-11-24T12:00:00Z")
}

/// A version-1 record, as chains written before version 2 hold them.
fn sample_v1() -> Record {
    let mut r = Record {
        seq: 1,
        prev_hash: GENESIS.to_string(),
        log_id: "0123456789abcdef0123456789abcdef".to_string(),
        schema_version: 1,
        at: at("2026-11-24T14:00:00Z"),
        kind: "decision".to_string(),
        actor: r#"{"uid":1000}"#.to_string(),
        payload: r#"{"proposal":"P-1","verdict":"approved"}"#.to_string(),
        recorded_at: String::new(),
        clock: String::new(),
        hash: String::new(),
    };
    r.hash = hash_record(&r);
    r
}

fn sample() -> Record {
    let mut r = Record {
        schema_version: SCHEMA_VERSION,
        recorded_at: "2026-11-24T14:00:01.000000Z".to_string(),
        clock: "2026-11-24T14:00:01.000000Z".to_string(),
        ..sample_v1()
    };
    r.hash = hash_record(&r);
    r
}

/// Golden vectors: if one changes, every stored chain of its version stops verifying.
#[test]
fn encoding_is_stable() {
    assert_eq!(
        sample_v1().hash,
        "db5ce266500414d38a6e641f661ba190ade6c06cf980f1ca5a60022508df62e9"
    );
    assert_eq!(
        sample().hash,
        "1ba9d17d9f03e551dbc168463e7bf14fc3fe4a449586597b9c1628faa2b0a12e"
    );
}

/// A chain begun before version 2 goes on verifying, and goes on in version 2.
#[test]
fn version_1_records_verify_and_version_2_follows_them() {
    let mut verifier = Verifier::new(None);
    let first = sample_v1();
    assert!(verifier.push(&first));
    let mut next = Record {
        seq: 2,
        prev_hash: first.hash.clone(),
        ..sample()
    };
    next.hash = hash_record(&next);
    assert!(verifier.push(&next));
    let mut older = Record {
        seq: 3,
        prev_hash: next.hash.clone(),
        schema_version: 1,
        ..sample_v1()
    };
    older.hash = hash_record(&older);
    assert!(!verifier.push(&older), "a version 1 after a version 2");
}

/// The clock set back: the engine records the time before it again, and the clock
/// as read beside it; the chain verifies.
#[test]
fn a_clock_set_back_never_makes_time_step_back_on_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = crate::store::open(&dir.path().join("s.db")).unwrap();
    let ahead = "2099-01-01T00:00:00.000000Z";
    let tx = conn.transaction().unwrap();
    append_at_clock(&*tx, noon(), "test", "{}", &json!({}), ahead).unwrap();
    let next = append_in(&*tx, noon(), "test", "{}", &json!({})).unwrap();
    tx.commit().unwrap();
    assert_eq!(next.recorded_at, ahead);
    assert!(next.clock.as_str() < ahead, "{}", next.clock);
    assert!(verify(&conn).unwrap().ok);
}

/// A record whose time is not one decodes to an error naming it, never to some time.
#[test]
fn a_record_whose_time_is_not_a_time_does_not_decode() {
    let mut bytes = encode(&sample());
    let text = b"2026-11-24T14:00:00Z";
    let start = bytes
        .windows(text.len())
        .position(|w| w == text)
        .expect("the time is encoded as its text");
    bytes[start..start + text.len()].copy_from_slice(b"2026-11-24T14:00:00X");
    let error = format!("{:#}", decode(&bytes).unwrap_err());
    assert!(
        error.contains("record #1") && error.contains("2026-11-24T14:00:00X"),
        "{error}"
    );
    assert_eq!(decode(&encode(&sample())).unwrap().at, sample().at);
}

#[test]
fn the_streamed_hash_is_the_hash_of_the_encoding() {
    let r = sample();
    assert_eq!(hash_record(&r), hex(&Sha256::digest(encode(&r))));
    assert!(hash_matches(&r.hash, &digest(&r.fields(&r.at.to_string()))));
    assert!(!hash_matches(
        &r.hash.to_uppercase(),
        &digest(&r.fields(&r.at.to_string()))
    ));
}

#[test]
fn every_field_changes_the_hash() {
    let base = sample();
    type Edit = Box<dyn Fn(&mut Record)>;
    let edits: Vec<Edit> = vec![
        Box::new(|r| r.seq = 2),
        Box::new(|r| r.prev_hash = "1".repeat(64)),
        Box::new(|r| r.log_id.push('x')),
        Box::new(|r| r.schema_version = 3),
        Box::new(|r| r.recorded_at.push('0')),
        Box::new(|r| r.clock.push('0')),
        Box::new(|r| r.at = r.at + chrono::TimeDelta::seconds(1)),
        Box::new(|r| r.kind.push('x')),
        Box::new(|r| r.actor.push('x')),
        Box::new(|r| r.payload.push(' ')),
    ];
    for edit in edits {
        let mut r = base.clone();
        edit(&mut r);
        assert_ne!(hash_record(&r), base.hash);
    }
}

#[test]
fn appended_records_verify() {
    let dir = tempfile::tempdir().unwrap();
    let conn = crate::store::open(&dir.path().join("s.db")).unwrap();
    for i in 0..5 {
        append(
            &conn,
            at("2026-11-24T14:00:00Z"),
            "test",
            "{}",
            &json!({ "i": i }),
        )
        .unwrap();
    }
    let report = verify(&conn).unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 5);
    assert_eq!(report.head, head(&conn).unwrap().map(|h| h.hash));
}

#[test]
fn update_and_delete_are_refused_by_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let conn = crate::store::open(&dir.path().join("s.db")).unwrap();
    append(&conn, noon(), "test", "{}", &json!({})).unwrap();
    let err = conn.execute("UPDATE chain SET kind = 'x'", []).unwrap_err();
    assert!(err.to_string().contains("append-only"));
    let err = conn.execute("DELETE FROM chain", []).unwrap_err();
    assert!(err.to_string().contains("append-only"));
}

/// Symlinks planted at every name the checkpoint writer uses (the checkpoint, its
/// lock, its temporary files) must not reach their targets.
#[test]
fn planted_checkpoint_symlinks_do_not_touch_their_targets() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let victims = dir.path().join("victim");
    std::fs::create_dir(&victims).unwrap();
    let db = dir.path().join("s.db");
    let conn = crate::store::open(&db).unwrap();
    let pid = std::process::id();
    let names = [
        "s.db.checkpoint".to_string(),
        "s.db.checkpoint.lock".to_string(),
        format!("s.db.checkpoint.{pid}.tmp"),
        format!(".s.db.checkpoint.{pid}.0.tmp"),
    ];
    for name in &names {
        let existing = victims.join(format!("{name}.notes"));
        std::fs::write(&existing, "precious").unwrap();
        symlink(&existing, dir.path().join(name)).unwrap();
    }
    for i in 0..2 {
        let _ = append(&conn, noon(), "test", "{}", &json!({ "i": i }));
    }
    for name in &names {
        let existing = victims.join(format!("{name}.notes"));
        assert_eq!(
            std::fs::read_to_string(&existing).unwrap(),
            "precious",
            "{name} was written through"
        );
    }
    // Dangling links: nothing may be created where they point.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let conn = crate::store::open(&db).unwrap();
    for name in &names {
        symlink(
            dir.path().join(format!("{name}.created")),
            dir.path().join(name),
        )
        .unwrap();
    }
    let _ = append(&conn, noon(), "test", "{}", &json!({}));
    for name in &names {
        assert!(
            !dir.path().join(format!("{name}.created")).exists(),
            "{name} created its target"
        );
    }
}

#[test]
fn the_checkpoint_is_replaced_atomically_and_stays_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db.checkpoint");
    write_checkpoint(&path, 3, "abc").unwrap();
    write_checkpoint(&path, 2, "old").unwrap();
    assert_eq!(read_checkpoint(&path), Some((3, "abc".to_string())));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A chain emptied entirely (every record gone, the checkpoint kept) is a tail cut off
/// like any other: the next append must not start a new chain over it.
#[test]
fn an_emptied_chain_is_refused_against_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let conn = crate::store::open(&path).unwrap();
    for i in 0..3 {
        append(&conn, noon(), "test", "{}", &json!({ "i": i })).unwrap();
    }
    conn.execute_batch("DROP TRIGGER chain_no_delete; DELETE FROM chain;")
        .unwrap();
    let err = format!(
        "{:#}",
        append(&conn, noon(), "test", "{}", &json!({})).unwrap_err()
    );
    assert!(
        err.contains("checkpoint recorded 3: the tail was cut off"),
        "{err}"
    );
    assert_eq!(conn.chain_len().unwrap(), 0, "nothing was appended");
}
