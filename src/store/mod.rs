//! The state database: one SQLite file, WAL, `synchronous=FULL`, migrations by
//! `PRAGMA user_version`. Every connection is opened here so the pragmas are never
//! forgotten.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, TransactionBehavior};

/// Each entry moves the schema one version forward; never edit a shipped entry.
const MIGRATIONS: &[&str] = &[
    // 1: the hash chain. The triggers make the log append-only for everyone who goes
    // through SQLite; `verify` catches anyone who goes around it.
    "CREATE TABLE chain (
        seq            INTEGER PRIMARY KEY,
        prev_hash      TEXT NOT NULL UNIQUE,
        log_id         TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        at             TEXT NOT NULL,
        kind           TEXT NOT NULL,
        actor          TEXT NOT NULL,
        payload        TEXT NOT NULL,
        hash           TEXT NOT NULL UNIQUE
     );
     CREATE TRIGGER chain_no_update BEFORE UPDATE ON chain
       BEGIN SELECT RAISE(ABORT, 'the chain is append-only: UPDATE refused'); END;
     CREATE TRIGGER chain_no_delete BEFORE DELETE ON chain
       BEGIN SELECT RAISE(ABORT, 'the chain is append-only: DELETE refused'); END;
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE observation (
        id        INTEGER PRIMARY KEY,
        monitor   TEXT NOT NULL,
        tbl       TEXT NOT NULL,
        check_kind TEXT NOT NULL,
        at        TEXT NOT NULL,
        value     REAL,
        detail    TEXT NOT NULL,
        verdict   TEXT NOT NULL,
        health    TEXT NOT NULL
     );
     CREATE INDEX observation_by_monitor ON observation (monitor, check_kind, id);",
    // 2: per-column checks (null_rate) keep one history per column.
    "ALTER TABLE observation ADD COLUMN subject TEXT NOT NULL DEFAULT '';
     CREATE INDEX observation_by_subject ON observation (monitor, check_kind, subject, id);",
    // 3: the engine looks records up by kind (the org stop on every snapshot and
    // dispatch, incident numbering, policy hashes): without this, a scan of the chain.
    "CREATE INDEX chain_by_kind ON chain (kind, seq);",
    // 4: the engine's memory. Everything the engine knows lives here, written in the
    // same transaction as the chain record behind it, and read back at start: open
    // incidents (evidence, diagnosis, blast radius, proposals, run), approval requests
    // (escalation step and deadline), and intents: effects outside the database,
    // committed before they are carried out and closed with what came of them.
    "CREATE TABLE incident (
        id     TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        doc    TEXT NOT NULL
     );
     CREATE TABLE request (
        proposal TEXT PRIMARY KEY,
        doc      TEXT NOT NULL
     );
     CREATE TABLE intent (
        id         INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        subject    TEXT NOT NULL,
        effect     TEXT NOT NULL,
        completion TEXT NOT NULL,
        by_person  INTEGER NOT NULL,
        status     TEXT NOT NULL DEFAULT 'pending',
        outcome    TEXT
     );
     CREATE INDEX intent_pending ON intent (status, id);",
];

/// How long a writer waits for another writer before giving up. Long enough that two
/// consoles on one host never see `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the state database and brings its schema up to date.
pub fn open(path: &Path) -> Result<Connection> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    }
    let mut conn = Connection::open(path)
        .with_context(|| format!("cannot open the state database {}", path.display()))?;
    configure(&conn).with_context(|| format!("state database {}", path.display()))?;
    migrate(&mut conn).with_context(|| format!("state database {}", path.display()))?;
    Ok(conn)
}

/// Sets the durability pragmas and reads each back: a pragma SQLite silently ignored
/// (a read-only file, an old library) must not pass unnoticed.
fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        bail!("journal_mode is {mode}, expected wal");
    }
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    let synchronous: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    if synchronous != 2 {
        bail!("synchronous is {synchronous}, expected 2 (FULL)");
    }
    let foreign_keys: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if foreign_keys != 1 {
        bail!("foreign_keys is off");
    }
    Ok(())
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: usize = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > MIGRATIONS.len() {
        bail!(
            "schema version {version} is newer than this dataward knows ({}); upgrade dataward",
            MIGRATIONS.len()
        );
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.execute_batch(sql)
            .with_context(|| format!("migration {} failed", index + 1))?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len())?;
    tx.commit()?;
    Ok(())
}

/// One engine per data directory. Until `dataward serve` lets several consoles share one
/// engine, a second engine on the same state would poll twice and open every incident
/// twice; this lock makes the second one stop with a clear message instead. The kernel
/// drops the lock when the process dies, however it dies.
pub struct EngineLock {
    _file: std::fs::File,
}

impl EngineLock {
    pub fn acquire(data_dir: &Path) -> Result<EngineLock> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;
        let path = data_dir.join("engine.lock");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        if file.try_lock().is_err() {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "another dataward engine ({}) is running on {}; one engine per data directory \
                 until `dataward serve` lets consoles share one (use another --data-dir)",
                holder.trim(),
                data_dir.display()
            );
        }
        use std::io::{Seek, Write};
        file.set_len(0)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        write!(file, "pid {}", std::process::id())?;
        Ok(EngineLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_sets_durability_pragmas_and_migrates_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let conn = open(&path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let version: usize = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len());
        drop(conn);
        // Reopening must not re-run migrations (they would fail on existing tables).
        open(&path).unwrap();
    }

    #[test]
    fn a_second_engine_on_the_same_data_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = EngineLock::acquire(dir.path()).unwrap();
        let err = EngineLock::acquire(dir.path()).err().unwrap().to_string();
        assert!(err.contains("another dataward engine (pid"), "{err}");
        drop(first);
        EngineLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let conn = open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = format!("{:#}", open(&path).unwrap_err());
        assert!(err.contains("newer than this dataward knows"), "{err}");
    }
}
