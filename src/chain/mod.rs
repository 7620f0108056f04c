//! The hash-chained decision log. Each record's hash covers every field in a canonical,
//! length-prefixed encoding behind a domain tag, and names the previous record's hash, so
//! changing, deleting, inserting or reordering any record breaks the chain at that point.
//! A checkpoint file beside the database catches what a chain cannot see by itself: its
//! own tail cut off.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::engine::api::ChainHead;

/// Bumped whenever the encoding changes; old records keep verifying under their own.
pub const SCHEMA_VERSION: u32 = 1;
const DOMAIN_TAG: &[u8] = b"dataward.chain.record.v1\0";
/// The previous hash of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub seq: u64,
    pub prev_hash: String,
    pub log_id: String,
    pub schema_version: u32,
    pub at: String,
    pub kind: String,
    /// Who did it, as JSON: the attested uid and the claims, or the engine.
    pub actor: String,
    /// Canonical JSON (sorted keys, no spaces).
    pub payload: String,
    pub hash: String,
}

/// Appends one record: the head is read and the record inserted inside one
/// `BEGIN IMMEDIATE` transaction, so concurrent writers line up instead of forking.
pub fn append(
    conn: &mut Connection,
    at: &str,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
) -> Result<Record> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let log_id = log_id(&tx)?;
    let head: Option<(u64, String)> = tx
        .query_row(
            "SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (seq, prev_hash) = match head {
        Some((seq, hash)) => (seq + 1, hash),
        None => (1, GENESIS.to_string()),
    };
    let mut record = Record {
        seq,
        prev_hash,
        log_id,
        schema_version: SCHEMA_VERSION,
        at: at.to_string(),
        kind: kind.to_string(),
        actor: actor.to_string(),
        // serde_json's default map is sorted, which makes this canonical.
        payload: serde_json::to_string(payload)?,
        hash: String::new(),
    };
    record.hash = hash_record(&record);
    tx.execute(
        "INSERT INTO chain (seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            record.seq,
            record.prev_hash,
            record.log_id,
            record.schema_version,
            record.at,
            record.kind,
            record.actor,
            record.payload,
            record.hash
        ],
    )?;
    tx.commit()?;
    if let Some(path) = checkpoint_path(conn) {
        write_checkpoint(&path, record.seq, &record.hash)?;
    }
    Ok(record)
}

/// The log id names this chain; it is created once with the database.
fn log_id(conn: &Connection) -> Result<String> {
    if let Some(id) = conn
        .query_row("SELECT value FROM meta WHERE key = 'log_id'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()?
    {
        return Ok(id);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!("{nanos}:{}:{:?}", std::process::id(), conn.path());
    let id = hex(&Sha256::digest(seed.as_bytes()))[..32].to_string();
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('log_id', ?1)",
        params![id],
    )?;
    Ok(id)
}

/// The canonical encoding: the domain tag, then every field as an 8-byte big-endian
/// length and its bytes (integers as 8-byte big-endian values), in a fixed order.
pub fn encode(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + record.payload.len());
    out.extend_from_slice(DOMAIN_TAG);
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    field(&record.seq.to_be_bytes());
    field(record.prev_hash.as_bytes());
    field(record.log_id.as_bytes());
    field(&u64::from(record.schema_version).to_be_bytes());
    field(record.at.as_bytes());
    field(record.kind.as_bytes());
    field(record.actor.as_bytes());
    field(record.payload.as_bytes());
    out
}

pub fn hash_record(record: &Record) -> String {
    hex(&Sha256::digest(encode(record)))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub fn head(conn: &Connection) -> Result<Option<ChainHead>> {
    Ok(conn
        .query_row(
            "SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1",
            [],
            |r| {
                Ok(ChainHead {
                    seq: r.get(0)?,
                    hash: r.get(1)?,
                })
            },
        )
        .optional()?)
}

fn row_to_record(r: &rusqlite::Row) -> rusqlite::Result<Record> {
    Ok(Record {
        seq: r.get(0)?,
        prev_hash: r.get(1)?,
        log_id: r.get(2)?,
        schema_version: r.get(3)?,
        at: r.get(4)?,
        kind: r.get(5)?,
        actor: r.get(6)?,
        payload: r.get(7)?,
        hash: r.get(8)?,
    })
}

const SELECT_RECORDS: &str =
    "SELECT seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash FROM chain";

/// Every record, in storage order.
pub fn records(conn: &Connection) -> Result<Vec<Record>> {
    let mut stmt = conn.prepare(&format!("{SELECT_RECORDS} ORDER BY rowid"))?;
    let rows = stmt.query_map([], row_to_record)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadRecord {
    pub seq: u64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub records: u64,
    pub head: Option<String>,
    pub first_bad: Option<BadRecord>,
}

/// Recomputes every record in storage order and names the first one that does not fit.
pub fn verify(conn: &Connection) -> Result<VerifyReport> {
    let mut stmt = conn.prepare(&format!("{SELECT_RECORDS} ORDER BY rowid"))?;
    let mut rows = stmt.query([])?;
    let mut count = 0u64;
    let mut prev_hash = GENESIS.to_string();
    let mut first_log_id: Option<String> = None;
    let mut first_bad = None;
    while let Some(row) = rows.next()? {
        let record = row_to_record(row)?;
        count += 1;
        if let Some(reason) = check_record(&record, count, &prev_hash, &mut first_log_id) {
            first_bad = Some(BadRecord {
                seq: record.seq,
                reason,
            });
            break;
        }
        prev_hash = record.hash;
    }
    let head = (count > 0).then(|| prev_hash.clone());
    if first_bad.is_none() {
        first_bad = check_checkpoint(conn, count, &prev_hash)?;
    }
    Ok(VerifyReport {
        ok: first_bad.is_none(),
        records: count,
        head,
        first_bad,
    })
}

fn check_record(
    record: &Record,
    position: u64,
    prev_hash: &str,
    first_log_id: &mut Option<String>,
) -> Option<String> {
    if record.seq != position {
        return Some(format!(
            "sequence {} found where {} was expected: a record was deleted, inserted or moved",
            record.seq, position
        ));
    }
    if record.schema_version != SCHEMA_VERSION {
        return Some(format!("unknown schema version {}", record.schema_version));
    }
    if record.prev_hash != prev_hash {
        return Some(
            "previous hash does not match the record before it: records were removed or reordered"
                .to_string(),
        );
    }
    match first_log_id {
        Some(id) if *id != record.log_id => {
            return Some(format!(
                "log id {} differs from this chain's {}",
                record.log_id, id
            ))
        }
        None => *first_log_id = Some(record.log_id.clone()),
        _ => {}
    }
    if hash_record(record) != record.hash {
        return Some("hash does not match the record's content: a field was changed".to_string());
    }
    None
}

fn checkpoint_path(conn: &Connection) -> Option<PathBuf> {
    let db = conn.path().filter(|p| !p.is_empty())?;
    Some(PathBuf::from(format!("{db}.checkpoint")))
}

/// Written to a temporary file and renamed over the old one, so a crash leaves either
/// the old checkpoint or the new one, never half of one.
fn write_checkpoint(path: &Path, seq: u64, hash: &str) -> Result<()> {
    let tmp = path.with_extension("checkpoint.tmp");
    std::fs::write(&tmp, format!("{seq} {hash}\n"))
        .with_context(|| format!("cannot write the chain checkpoint {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot replace the chain checkpoint {}", path.display()))?;
    Ok(())
}

fn check_checkpoint(conn: &Connection, count: u64, head: &str) -> Result<Option<BadRecord>> {
    let Some(path) = checkpoint_path(conn) else {
        return Ok(None);
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let mut parts = text.split_whitespace();
    let (Some(seq), Some(hash)) = (parts.next(), parts.next()) else {
        return Ok(Some(BadRecord {
            seq: count,
            reason: format!("checkpoint {} is malformed", path.display()),
        }));
    };
    let seq: u64 = seq.parse().unwrap_or(u64::MAX);
    if seq > count {
        return Ok(Some(BadRecord {
            seq: count + 1,
            reason: format!(
                "the chain holds {count} records but its checkpoint recorded {seq}: the tail was cut off"
            ),
        }));
    }
    let stored: Option<String> = conn
        .query_row("SELECT hash FROM chain WHERE seq = ?1", [seq], |r| r.get(0))
        .optional()?;
    let matches = if seq == count {
        head == hash
    } else {
        stored.as_deref() == Some(hash)
    };
    if !matches {
        return Ok(Some(BadRecord {
            seq,
            reason: "record differs from the checkpoint: the chain diverged".to_string(),
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Record {
        let mut r = Record {
            seq: 1,
            prev_hash: GENESIS.to_string(),
            log_id: "0123456789abcdef0123456789abcdef".to_string(),
            schema_version: SCHEMA_VERSION,
            at: "2026-11-24T14:00:00Z".to_string(),
            kind: "decision".to_string(),
            actor: r#"{"uid":1000}"#.to_string(),
            payload: r#"{"proposal":"P-1","verdict":"approved"}"#.to_string(),
            hash: String::new(),
        };
        r.hash = hash_record(&r);
        r
    }

    /// A golden vector: if this changes, every stored chain stops verifying.
    #[test]
    fn encoding_is_stable() {
        assert_eq!(
            sample().hash,
            "db5ce266500414d38a6e641f661ba190ade6c06cf980f1ca5a60022508df62e9"
        );
    }

    #[test]
    fn every_field_changes_the_hash() {
        let base = sample();
        type Edit = Box<dyn Fn(&mut Record)>;
        let edits: Vec<Edit> = vec![
            Box::new(|r| r.seq = 2),
            Box::new(|r| r.prev_hash = "1".repeat(64)),
            Box::new(|r| r.log_id.push('x')),
            Box::new(|r| r.schema_version = 2),
            Box::new(|r| r.at.push('x')),
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
        let mut conn = crate::store::open(&dir.path().join("s.db")).unwrap();
        for i in 0..5 {
            append(
                &mut conn,
                "2026-11-24T14:00:00Z",
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
        let mut conn = crate::store::open(&dir.path().join("s.db")).unwrap();
        append(&mut conn, "t", "test", "{}", &json!({})).unwrap();
        let err = conn.execute("UPDATE chain SET kind = 'x'", []).unwrap_err();
        assert!(err.to_string().contains("append-only"));
        let err = conn.execute("DELETE FROM chain", []).unwrap_err();
        assert!(err.to_string().contains("append-only"));
    }
}
