//! The hash-chained decision log. Each record's hash covers every field in a canonical,
//! length-prefixed encoding behind a domain tag, and names the previous record's hash, so
//! changing, deleting, inserting or reordering any record breaks the chain at that point.
//! A checkpoint file beside the database catches what a chain cannot see by itself: its
//! own tail cut off.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock::Timestamp;
use crate::store::prelude::*;

/// Bumped whenever the encoding changes; old records keep verifying under their own.
/// Version 2 adds `recorded_at` and `clock`: time on the chain that never steps back.
pub const SCHEMA_VERSION: u32 = 2;
const DOMAIN_TAG_V1: &[u8] = b"dataward.chain.record.v1\0";
const DOMAIN_TAG_V2: &[u8] = b"dataward.chain.record.v2\0";
/// How `recorded_at` and `clock` are written: fixed width, so they also sort as text.
const RECORDED_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

fn domain_tag(schema_version: u32) -> &'static [u8] {
    if schema_version >= 2 {
        DOMAIN_TAG_V2
    } else {
        DOMAIN_TAG_V1
    }
}
/// The previous hash of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub seq: u64,
    pub prev_hash: String,
    pub log_id: String,
    pub schema_version: u32,
    /// The event's time by the engine's clock; hashed as its text.
    pub at: Timestamp,
    pub kind: String,
    /// Who did it, as JSON: the attested uid and the claims, or the engine.
    pub actor: String,
    /// Canonical JSON (sorted keys, no spaces).
    pub payload: String,
    /// When it was appended by the host's clock, never before the record ahead of it
    /// (version 2 on; empty before). `at` is the event's time by the engine's clock,
    /// which may be a story's.
    pub recorded_at: String,
    /// The host's clock as read at append: earlier than `recorded_at` only when the
    /// clock had been set back (version 2 on; empty before).
    pub clock: String,
    pub hash: String,
}

/// Appends one record in a transaction of its own: the head is read and the record
/// inserted inside one `BEGIN IMMEDIATE` transaction, so concurrent writers line up
/// instead of forking.
pub fn append<S: ChainHost + ?Sized>(
    conn: &S,
    at: Timestamp,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
) -> Result<Record> {
    append_checked(conn, at, kind, actor, payload, |_| Ok(()))
}

/// Like [`append`], but `precondition` runs inside the same write transaction first and
/// can refuse: whatever it reads cannot change before the record is committed. This is
/// how a dispatch re-checks the org-wide stop.
pub fn append_checked<S: ChainHost + ?Sized>(
    conn: &S,
    at: Timestamp,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
    precondition: impl FnOnce(&S) -> Result<()>,
) -> Result<Record> {
    transact(conn, |tx| {
        precondition(tx)?;
        append_in(tx, at, kind, actor, payload)
    })
}

/// Runs `work` in one write transaction, commits, then moves the checkpoint to the new
/// head (see [`Transact`]). Whatever `work` appends with [`append_in`] commits together
/// with whatever else it wrote, or not at all.
pub fn transact<S: ChainHost + ?Sized, T>(
    conn: &S,
    work: impl FnOnce(&S) -> Result<T>,
) -> Result<T> {
    conn.transact(work)
}

/// Appends one record inside the caller's open write transaction. The chain is held
/// against its checkpoint first: a chain whose tail was cut off, or which diverged from
/// what the checkpoint recorded, is never appended to (the next append would otherwise
/// move the checkpoint and hide the damage).
pub fn append_in<S: ChainHost + ?Sized>(
    conn: &S,
    at: Timestamp,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
) -> Result<Record> {
    append_to(conn, at, kind, actor, payload)
}

/// Where a chain can be kept: its rows, its log id, write transactions, and a
/// checkpoint outside it. SQLite's connection is one, PostgreSQL's team state another
/// (`store::postgres`); both append, check and verify through the functions here.
pub trait ChainHost: ChainStore + MetaStore + Writes {}

impl<T: ChainStore + MetaStore + Writes + ?Sized> ChainHost for T {}

/// [`append_in`] on any [`ChainHost`]: the same record, hashed the same way.
pub fn append_to<S: ChainHost + ?Sized>(
    store: &S,
    at: Timestamp,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
) -> Result<Record> {
    // The host's own clock, whatever clock the engine runs on: `recorded_at` says when
    // a record was written, and a clock set back shows beside it.
    let clock = crate::clock::Clock::wall()
        .naive()
        .format(RECORDED_FORMAT)
        .to_string();
    append_at_clock(store, at, kind, actor, payload, &clock)
}

/// [`append_in`] with the host's clock reading `clock`.
fn append_at_clock<S: ChainHost + ?Sized>(
    conn: &S,
    at: Timestamp,
    kind: &str,
    actor: &str,
    payload: &serde_json::Value,
    clock: &str,
) -> Result<Record> {
    anyhow::ensure!(
        conn.in_write(),
        "a chain record is appended inside a write transaction"
    );
    check_checkpoint_of(conn)?;
    let log_id = log_id(conn)?;
    let (seq, prev_hash, prev_recorded) = match conn.chain_tail()? {
        Some((seq, hash, recorded)) => (seq + 1, hash, recorded),
        None => (1, GENESIS.to_string(), String::new()),
    };
    let recorded_at = monotonic(&prev_recorded, clock);
    let mut record = Record {
        seq,
        prev_hash,
        log_id,
        schema_version: SCHEMA_VERSION,
        at,
        kind: kind.to_string(),
        actor: actor.to_string(),
        // serde_json's default map is sorted, which makes this canonical.
        payload: serde_json::to_string(payload)?,
        recorded_at,
        clock: clock.to_string(),
        hash: String::new(),
    };
    record.hash = hash_record(&record);
    conn.insert_record(&record)?;
    Ok(record)
}

/// The time to record after `previous` when the host's clock reads `clock`: the clock,
/// unless it was set back behind `previous`, which is then kept (the clock as read is
/// recorded beside it). Both in [`RECORDED_FORMAT`], which sorts as text.
pub fn monotonic(previous: &str, clock: &str) -> String {
    if recorded_time(previous).is_some_and(|p| recorded_time(clock).is_none_or(|c| c < p)) {
        previous.to_string()
    } else {
        clock.to_string()
    }
}

fn recorded_time(text: &str) -> Option<chrono::NaiveDateTime> {
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.fZ").ok()
}

/// Moves the checkpoint to the committed head (never backwards). Called after every
/// commit that appended; bulk loaders call it once at the end.
pub fn save_checkpoint(conn: &dyn ChainHost) -> Result<()> {
    save_checkpoint_of(conn)
}

/// [`save_checkpoint`] on any [`ChainHost`].
pub fn save_checkpoint_of<S: ChainHost + ?Sized>(conn: &S) -> Result<()> {
    if let (Some(path), Some(head)) = (conn.checkpoint_path(), conn.chain_head()?) {
        write_checkpoint(&path, head.seq, &head.hash)?;
    }
    Ok(())
}

/// Holds the stored chain against its checkpoint, cheaply: the checkpoint's record must
/// still be there with the same hash. A missing checkpoint beside a non-empty chain is
/// damage too (the first append writes one before it commits).
pub fn check_checkpoint(conn: &dyn ChainHost) -> Result<()> {
    check_checkpoint_of(conn)
}

/// [`check_checkpoint`] on any [`ChainHost`].
pub fn check_checkpoint_of<S: ChainHost + ?Sized>(conn: &S) -> Result<()> {
    let Some(path) = conn.checkpoint_path() else {
        return Ok(());
    };
    let head = conn.chain_head()?;
    let Some(head) = head else {
        if !path.exists() {
            // A new chain: its checkpoint starts at zero, before the first commit, so a
            // crash right after that commit cannot look like a deleted checkpoint.
            write_checkpoint(&path, 0, GENESIS)?;
        }
        // An empty chain whose checkpoint saw records lost all of them.
        if let Some((seq, _)) = read_checkpoint(&path).filter(|(seq, _)| *seq > 0) {
            anyhow::bail!(
                "the chain holds 0 records but its checkpoint recorded {seq}: the tail was cut off"
            );
        }
        return Ok(());
    };
    let (seq, hash) = match read_checkpoint(&path) {
        Some(checkpoint) => checkpoint,
        None if !path.exists() => anyhow::bail!(
            "the chain holds {} records but its checkpoint {} is missing: the chain cannot be trusted",
            head.seq,
            path.display()
        ),
        None => anyhow::bail!("the chain checkpoint {} is malformed", path.display()),
    };
    anyhow::ensure!(
        seq <= head.seq,
        "the chain holds {} records but its checkpoint recorded {seq}: the tail was cut off",
        head.seq
    );
    if seq > 0 {
        let stored = conn.chain_hash_at(seq)?;
        anyhow::ensure!(
            stored.as_deref() == Some(hash.as_str()),
            "record #{seq} differs from the checkpoint: the chain diverged"
        );
    }
    Ok(())
}

/// Inserts a finished record as it is. Only `append` and bulk loaders that computed the
/// hashes with [`hash_record`] call this.
pub fn insert(conn: &dyn ChainHost, record: &Record) -> Result<()> {
    conn.insert_record(record)
}

/// Where the log id is kept (`meta`).
pub const LOG_ID: &str = "log_id";

/// The log id names this chain; it is created once with the database.
fn log_id<S: ChainHost + ?Sized>(conn: &S) -> Result<String> {
    if let Some(id) = conn.meta(LOG_ID)? {
        return Ok(id);
    }
    let nanos = crate::clock::Clock::wall()
        .now()
        .timestamp_nanos_opt()
        .unwrap_or_default();
    let seed = format!("{nanos}:{}:{:?}", std::process::id(), conn.database_path());
    let id = hex(&Sha256::digest(seed.as_bytes()))[..32].to_string();
    conn.create_meta(LOG_ID, &id)?;
    Ok(id)
}

/// The canonical encoding: the domain tag of the record's schema version, then every
/// field as an 8-byte big-endian length and its bytes (integers as 8-byte big-endian
/// values), in a fixed order; version 2 adds `recorded_at` and `clock` at the end.
pub fn encode(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + record.payload.len());
    out.extend_from_slice(domain_tag(record.schema_version));
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    field(&record.seq.to_be_bytes());
    field(record.prev_hash.as_bytes());
    field(record.log_id.as_bytes());
    field(&u64::from(record.schema_version).to_be_bytes());
    field(record.at.to_string().as_bytes());
    field(record.kind.as_bytes());
    field(record.actor.as_bytes());
    field(record.payload.as_bytes());
    if record.schema_version >= 2 {
        field(record.recorded_at.as_bytes());
        field(record.clock.as_bytes());
    }
    out
}

/// The inverse of [`encode`] (the hash is not part of the encoding and comes back empty).
pub fn decode(bytes: &[u8]) -> Result<Record> {
    let (mut rest, v2) = match (
        bytes.strip_prefix(DOMAIN_TAG_V2),
        bytes.strip_prefix(DOMAIN_TAG_V1),
    ) {
        (Some(rest), _) => (rest, true),
        (None, Some(rest)) => (rest, false),
        (None, None) => anyhow::bail!("not a chain record: the domain tag is missing"),
    };
    let mut field = || -> Result<&[u8]> {
        anyhow::ensure!(rest.len() >= 8, "truncated field length");
        let (len, tail) = rest.split_at(8);
        let len = u64::from_be_bytes(len.try_into().expect("8 bytes")) as usize;
        anyhow::ensure!(tail.len() >= len, "truncated field");
        let (value, tail) = tail.split_at(len);
        rest = tail;
        Ok(value)
    };
    let number = |bytes: &[u8]| -> Result<u64> {
        Ok(u64::from_be_bytes(
            bytes.try_into().context("a number is 8 bytes")?,
        ))
    };
    let text = |bytes: &[u8]| -> Result<String> { Ok(std::str::from_utf8(bytes)?.to_string()) };
    let seq = number(field()?)?;
    let prev_hash = text(field()?)?;
    let log_id = text(field()?)?;
    let schema_version = u32::try_from(number(field()?)?)?;
    let at = text(field()?)?;
    let at = Timestamp::parse(&at).with_context(|| format!("record #{seq}'s at"))?;
    let kind = text(field()?)?;
    let actor = text(field()?)?;
    let payload = text(field()?)?;
    let (recorded_at, clock) = if v2 {
        (text(field()?)?, text(field()?)?)
    } else {
        (String::new(), String::new())
    };
    anyhow::ensure!(
        v2 == (schema_version >= 2),
        "schema version {schema_version} under the other version's domain tag"
    );
    anyhow::ensure!(rest.is_empty(), "trailing bytes after the last field");
    Ok(Record {
        seq,
        prev_hash,
        log_id,
        schema_version,
        at,
        kind,
        actor,
        payload,
        recorded_at,
        clock,
        hash: String::new(),
    })
}

/// A record's fields borrowed from wherever they live (a stored row, a `Record`), so
/// verifying a million rows copies none of them.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub seq: u64,
    pub prev_hash: &'a str,
    pub log_id: &'a str,
    pub schema_version: u32,
    pub at: &'a str,
    pub kind: &'a str,
    pub actor: &'a str,
    pub payload: &'a str,
    pub recorded_at: &'a str,
    pub clock: &'a str,
    pub hash: &'a str,
}

impl Record {
    /// Its fields as they are hashed, its time as the text `at` (its `at` written out).
    pub fn fields<'a>(&'a self, at: &'a str) -> Fields<'a> {
        Fields {
            seq: self.seq,
            prev_hash: &self.prev_hash,
            log_id: &self.log_id,
            schema_version: self.schema_version,
            at,
            kind: &self.kind,
            actor: &self.actor,
            payload: &self.payload,
            recorded_at: &self.recorded_at,
            clock: &self.clock,
            hash: &self.hash,
        }
    }
}

/// SHA-256 of [`encode`]'s bytes, fed to the hasher field by field instead of building
/// them first.
fn digest(f: &Fields) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(domain_tag(f.schema_version));
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    field(&f.seq.to_be_bytes());
    field(f.prev_hash.as_bytes());
    field(f.log_id.as_bytes());
    field(&u64::from(f.schema_version).to_be_bytes());
    field(f.at.as_bytes());
    field(f.kind.as_bytes());
    field(f.actor.as_bytes());
    field(f.payload.as_bytes());
    if f.schema_version >= 2 {
        field(f.recorded_at.as_bytes());
        field(f.clock.as_bytes());
    }
    hasher.finalize().into()
}

pub fn hash_record(record: &Record) -> String {
    hash_fields(&record.fields(&record.at.to_string()))
}

/// The hash of a record's fields as text, whatever they hold: what a stored row's
/// hash is checked against.
pub fn hash_fields(fields: &Fields) -> String {
    hex(&digest(fields))
}

/// Does the stored hex hash name exactly these bytes? Compared without allocating.
fn hash_matches(stored: &str, digest: &[u8; 32]) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let stored = stored.as_bytes();
    stored.len() == 64
        && digest.iter().enumerate().all(|(i, b)| {
            stored[2 * i] == DIGITS[(b >> 4) as usize]
                && stored[2 * i + 1] == DIGITS[(b & 15) as usize]
        })
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

/// The chain's last record: where the next one links, and what a console shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: u64,
    pub hash: String,
}

pub fn head(conn: &dyn ChainHost) -> Result<Option<Head>> {
    conn.chain_head()
}

/// Every record, in storage order.
pub fn records(conn: &dyn ChainHost) -> Result<Vec<Record>> {
    conn.records()
}

/// The records whose payload names `incident`, in storage order: what its receipt is
/// built from.
pub fn records_about(conn: &dyn ChainHost, incident: &str) -> Result<Vec<Record>> {
    conn.records_about(incident)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BadRecord {
    pub seq: u64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub records: u64,
    pub head: Option<String>,
    pub first_bad: Option<BadRecord>,
}

/// Walks records in storage order and names the first that does not fit. Streaming, so
/// a million records are checked without holding them.
#[derive(Debug)]
pub struct Verifier {
    count: u64,
    prev_hash: String,
    log_id: Option<String>,
    checkpoint: Option<(u64, String)>,
    hash_at_checkpoint: Option<String>,
    first_bad: Option<BadRecord>,
    /// The latest version-2 record's sequence number and `recorded_at`.
    last_recorded: Option<(u64, chrono::NaiveDateTime)>,
}

impl Verifier {
    /// `checkpoint` is (record count, head hash) as kept outside the database.
    pub fn new(checkpoint: Option<(u64, String)>) -> Verifier {
        Verifier {
            count: 0,
            prev_hash: GENESIS.to_string(),
            log_id: None,
            checkpoint,
            hash_at_checkpoint: None,
            first_bad: None,
            last_recorded: None,
        }
    }

    /// Checks the next record; false once a bad record was found (stop feeding then).
    pub fn push(&mut self, record: &Record) -> bool {
        self.push_fields(&record.fields(&record.at.to_string()))
    }

    pub fn push_fields(&mut self, record: &Fields) -> bool {
        if self.first_bad.is_some() {
            return false;
        }
        self.count += 1;
        let bad = check_record(record, self.count, &self.prev_hash, &mut self.log_id)
            .or_else(|| event_time(record))
            .or_else(|| self.check_time(record));
        if let Some(reason) = bad {
            self.first_bad = Some(BadRecord {
                seq: record.seq,
                reason,
            });
            return false;
        }
        if self
            .checkpoint
            .as_ref()
            .is_some_and(|(seq, _)| *seq == record.seq)
        {
            self.hash_at_checkpoint = Some(record.hash.to_string());
        }
        self.prev_hash.clear();
        self.prev_hash.push_str(record.hash);
        true
    }

    /// Time on the chain never steps back: each version-2 record's `recorded_at` is no
    /// earlier than the one before it, and no version-1 record follows a version 2.
    fn check_time(&mut self, record: &Fields) -> Option<String> {
        if record.schema_version < 2 {
            return self.last_recorded.map(|(seq, _)| {
                format!(
                    "a version-{} record after version-2 record #{seq}",
                    record.schema_version
                )
            });
        }
        let Some(at) = recorded_time(record.recorded_at) else {
            return Some(format!(
                "recorded_at {:?} is not a time",
                record.recorded_at
            ));
        };
        if let Some((seq, before)) = self.last_recorded {
            if at < before {
                return Some(format!(
                    "its time steps back: recorded at {}, before record #{seq}'s {}",
                    record.recorded_at,
                    before.format(RECORDED_FORMAT)
                ));
            }
        }
        self.last_recorded = Some((record.seq, at));
        None
    }

    pub fn finish(mut self) -> VerifyReport {
        let count = self.count;
        if self.first_bad.is_none() {
            self.first_bad = match &self.checkpoint {
                Some((seq, _)) if *seq > count => Some(BadRecord {
                    seq: count + 1,
                    reason: format!(
                        "the chain holds {count} records but its checkpoint recorded {seq}: the tail was cut off"
                    ),
                }),
                Some((seq, hash))
                    if *seq > 0 && self.hash_at_checkpoint.as_deref() != Some(hash.as_str()) =>
                {
                    Some(BadRecord {
                        seq: *seq,
                        reason: "record differs from the checkpoint: the chain diverged".to_string(),
                    })
                }
                _ => None,
            };
        }
        VerifyReport {
            ok: self.first_bad.is_none(),
            records: count,
            head: (count > 0).then_some(self.prev_hash),
            first_bad: self.first_bad,
        }
    }
}

/// Recomputes every stored record and holds the chain against its checkpoint.
pub fn verify(conn: &dyn ChainHost) -> Result<VerifyReport> {
    verify_of(conn)
}

/// [`verify`] on any [`ChainHost`].
pub fn verify_of(conn: &dyn ChainHost) -> Result<VerifyReport> {
    // The checkpoint is read before the records: a writer appending meanwhile can only
    // make the records run ahead of it, never behind.
    let checkpoint = match conn.checkpoint_path() {
        Some(path) if path.exists() => match read_checkpoint(&path) {
            Some(checkpoint) => Some(checkpoint),
            None => {
                return Ok(VerifyReport {
                    ok: false,
                    records: 0,
                    head: None,
                    first_bad: Some(BadRecord {
                        seq: 0,
                        reason: format!("checkpoint {} is malformed", path.display()),
                    }),
                })
            }
        },
        Some(path) => {
            let count = conn.chain_len()?;
            if count > 0 {
                return Ok(VerifyReport {
                    ok: false,
                    records: count,
                    head: None,
                    first_bad: Some(BadRecord {
                        seq: 0,
                        reason: format!(
                            "the chain holds {count} records but its checkpoint {} is missing: a cut-off tail could not be seen",
                            path.display()
                        ),
                    }),
                });
            }
            None
        }
        None => None,
    };
    verify_with(conn, checkpoint)
}

/// Recomputes every stored record and holds the chain against `checkpoint` (record
/// count, head hash), if any: what a host that has not seen the chain yet checks it
/// by, with none.
pub fn verify_with(
    conn: &dyn ChainHost,
    checkpoint: Option<(u64, String)>,
) -> Result<VerifyReport> {
    // Two stages on two threads: this one steps the store and copies each row's text into
    // a batch; the other hashes and checks. Reading and hashing cost about the same, so
    // overlapping them roughly halves a long verify.
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Batch>();
    let checker = std::thread::spawn(move || {
        let mut verifier = Verifier::new(checkpoint);
        for batch in full_rx {
            let all_good = batch
                .rows
                .iter()
                .all(|row| verifier.push_fields(&batch.fields(row)));
            if !all_good || empty_tx.send(batch).is_err() {
                break;
            }
        }
        verifier
    });
    let read = (|| -> Result<()> {
        let mut batch = Batch::default();
        conn.scan_records(&mut |fields| {
            batch.push(fields);
            if batch.rows.len() == Batch::SIZE {
                let next = empty_rx.try_recv().unwrap_or_default();
                if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                    return Ok(false); // the checker stopped at a bad record
                }
                batch.clear();
            }
            Ok(true)
        })?;
        let _ = full_tx.send(batch);
        Ok(())
    })();
    drop(full_tx);
    let verifier = checker
        .join()
        .map_err(|_| anyhow::anyhow!("the verifying thread panicked"))?;
    read?;
    Ok(verifier.finish())
}

/// Rows copied out of the store for the checking thread: one text arena and, per row, the
/// byte ranges of its text fields.
#[derive(Default)]
struct Batch {
    arena: String,
    rows: Vec<BatchRow>,
}

struct BatchRow {
    seq: u64,
    schema_version: u32,
    /// prev_hash, log_id, at, kind, actor, payload, hash, recorded_at, clock.
    text: [(usize, usize); 9],
}

impl Batch {
    const SIZE: usize = 4096;

    fn push(&mut self, row: &Fields) {
        let mut text = [(0, 0); 9];
        let fields = [
            row.prev_hash,
            row.log_id,
            row.at,
            row.kind,
            row.actor,
            row.payload,
            row.hash,
            row.recorded_at,
            row.clock,
        ];
        for (slot, field) in text.iter_mut().zip(fields) {
            let start = self.arena.len();
            self.arena.push_str(field);
            *slot = (start, self.arena.len());
        }
        self.rows.push(BatchRow {
            seq: row.seq,
            schema_version: row.schema_version,
            text,
        });
    }

    fn clear(&mut self) {
        self.arena.clear();
        self.rows.clear();
    }

    fn fields(&self, row: &BatchRow) -> Fields<'_> {
        let t = |i: usize| &self.arena[row.text[i].0..row.text[i].1];
        Fields {
            seq: row.seq,
            prev_hash: t(0),
            log_id: t(1),
            schema_version: row.schema_version,
            at: t(2),
            kind: t(3),
            actor: t(4),
            payload: t(5),
            hash: t(6),
            recorded_at: t(7),
            clock: t(8),
        }
    }
}

/// A record's `at` is a time as dataward writes it: one hashed correctly but holding
/// anything else was not written by dataward, and nothing could read its time.
fn event_time(record: &Fields) -> Option<String> {
    Timestamp::parse(record.at)
        .err()
        .map(|bad| format!("its at is not a time: {bad}"))
}

fn check_record(
    record: &Fields,
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
    if !(1..=SCHEMA_VERSION).contains(&record.schema_version) {
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
        None => *first_log_id = Some(record.log_id.to_string()),
        _ => {}
    }
    if !hash_matches(record.hash, &digest(record)) {
        return Some("hash does not match the record's content: a field was changed".to_string());
    }
    None
}

/// Written with [`crate::store::files::write_atomic`], so a crash leaves either the old
/// checkpoint or the new one, never half of one, and a symlink planted at any of its
/// names (the checkpoint, its lock, its temporary file) is refused, not written through.
/// Writers take a lock and never move the checkpoint backwards: with several processes
/// appending, the one that committed first may reach this point last.
fn write_checkpoint(path: &Path, seq: u64, hash: &str) -> Result<()> {
    let lock_path = path.with_extension("checkpoint.lock");
    let lock = crate::store::files::open_or_create(&lock_path)?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let current = read_checkpoint(path).map(|(s, _)| s);
    if current.is_none_or(|current| current < seq) {
        crate::store::files::write_private(path, format!("{seq} {hash}\n").as_bytes())
            .context("cannot write the chain checkpoint")?;
    }
    Ok(())
}

/// (record count, head hash) as last written, if there is a readable checkpoint. A
/// checkpoint that is a symlink is not read (it reads as malformed).
fn read_checkpoint(path: &Path) -> Option<(u64, String)> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut crate::store::files::open_read(path).ok()?, &mut text)
        .ok()?;
    let mut parts = text.split_whitespace();
    Some((parts.next()?.parse().ok()?, parts.next()?.to_string()))
}

/// Every field, destructured without `..`: see [`crate::sanitize::Sanitize`].
impl crate::sanitize::Sanitize for VerifyReport {
    fn sanitize(&mut self) {
        let VerifyReport {
            ok: _,
            records: _,
            head,
            first_bad,
        } = self;
        head.sanitize();
        if let Some(BadRecord { seq: _, reason }) = first_bad {
            reason.sanitize();
        }
    }
}

#[cfg(test)]
mod tests;
