//! Chain benchmarks: appends per second with synchronous=FULL (one writer, four), and
//! `verify` over a million records against plain SHA-256 of the same bytes.
//! Run with `cargo bench --bench chain`. Prints figures; asserts nothing.

use std::time::Instant;

use dataward::chain::{self, encode, hash_record, Record, GENESIS, SCHEMA_VERSION};
use serde_json::json;
use sha2::{Digest, Sha256};

fn appends(writers: usize, per_writer: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dataward.db");
    dataward::store::open(&db).unwrap();
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let conn = dataward::store::open(&db).unwrap();
                for i in 0..per_writer {
                    chain::append(
                        &conn,
                        "2026-11-24T14:00:00Z".parse().unwrap(),
                        "bench",
                        "{}",
                        &json!({"w": w, "i": i}),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    let conn = dataward::store::open(&db).unwrap();
    assert!(chain::verify(&conn).unwrap().ok);
    (writers * per_writer) as f64 / seconds
}

/// A million realistic records, hashed by the library and inserted in one transaction.
fn build_large(db: &std::path::Path, n: u64) -> Vec<Record> {
    let mut conn = dataward::store::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    let mut prev = GENESIS.to_string();
    let mut sample = Vec::new();
    for seq in 1..=n {
        let mut r = Record {
            seq,
            prev_hash: prev,
            log_id: "0f0e0d0c0b0a09080706050403020100".into(),
            schema_version: SCHEMA_VERSION,
            at: "2026-11-24T14:10:00Z".parse().unwrap(),
            kind: "decision".into(),
            actor: r#"{"claims":{"USER":"alice"},"uid":1000,"user":"alice"}"#.into(),
            payload: format!(
                r#"{{"content_hash":"08a0923be33690a985b2ffcee95a8f6fbdbc9d91fd41f80f25d6733b98c20494","incident":"INC-{seq:04}","proposal":"INC-{seq:04}-P1","reason":"refill in progress","verdict":"approved"}}"#
            ),
            recorded_at: "2026-11-24T14:10:00.000000Z".into(),
            clock: "2026-11-24T14:10:00.000000Z".into(),
            hash: String::new(),
        };
        r.hash = hash_record(&r);
        prev = r.hash.clone();
        chain::insert(&*tx, &r).unwrap();
        if seq <= 1000 {
            sample.push(r);
        }
    }
    tx.commit().unwrap();
    chain::save_checkpoint(&conn).unwrap();
    sample
}

fn main() {
    let one = appends(1, 2000);
    println!("appends/s, synchronous=FULL, 1 writer:  {one:.0}");
    let four = appends(4, 500);
    println!("appends/s, synchronous=FULL, 4 writers: {four:.0} (total)");

    let n: u64 = std::env::var("CHAIN_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    // CHAIN_BENCH_DB keeps the big database between runs (building it takes a while).
    let dir = tempfile::tempdir().unwrap();
    let db = std::env::var("CHAIN_BENCH_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("dataward.db"));
    if !db.exists() {
        let started = Instant::now();
        build_large(&db, n);
        println!(
            "built {n} records in {:.2} s",
            started.elapsed().as_secs_f64()
        );
    }

    let conn = dataward::store::open(&db).unwrap();
    // Best of three, for both sides: this machine's disk and neighbours make single
    // runs of the same work differ by half.
    let mut verify_s = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let report = chain::verify(&conn).unwrap();
        verify_s = verify_s.min(started.elapsed().as_secs_f64());
        assert!(report.ok && report.records == n);
    }
    println!(
        "verify: {n} records in {verify_s:.2} s = {:.0} records/s (best of 3)",
        n as f64 / verify_s
    );

    // The same bytes through plain SHA-256, records already in memory.
    let records = chain::records(&conn).unwrap();
    let encoded: Vec<Vec<u8>> = records.iter().map(encode).collect();
    let mut sink = 0u8;
    let mut raw_s = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        for bytes in &encoded {
            sink ^= Sha256::digest(bytes)[0];
        }
        raw_s = raw_s.min(started.elapsed().as_secs_f64());
    }
    let total: usize = encoded.iter().map(Vec::len).sum();
    println!(
        "raw SHA-256 of the same {} MB: {raw_s:.2} s; verify / raw = {:.2}x (sink {sink})",
        total / 1_000_000,
        verify_s / raw_s
    );
}
