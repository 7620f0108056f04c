//! The state database: one SQLite file, WAL, `synchronous=FULL`, migrations by
//! `PRAGMA user_version`. Every connection is opened here so the pragmas are never
//! forgotten.
//!
//! This is the one way to the state database: the rest of dataward asks the store for
//! what it needs in its own terms ([`Store`], one trait per area in the files beside
//! this one) and never writes SQL or names the SQLite library (tests/store_seam.rs
//! holds that). The traits are implemented on SQLite's connection (a transaction is a
//! connection too, so the same calls work inside one) and on team state in PostgreSQL
//! ([`postgres::PgState`]); tests/store_conformance.rs holds that they behave alike.
//! The engine and its tasks hold a [`State`], opened by [`place::StatePlace`], and run
//! write transactions with [`Transact`], the same way on either database.

pub mod access;
pub mod baselines;
pub mod chain;
/// Not the state database: the dbt Core runner's own (`DATA/dbt-core.db`), here so
/// SQLite stays behind this seam.
pub mod dbt_core;
pub mod files;
pub mod incidents;
pub mod intents;
pub mod lineage_events;
pub mod meta;
pub mod minutes;
pub mod observations;
pub mod outbox;
pub mod place;
/// Team state on PostgreSQL (`[state] url_env`): every area, and the leadership.
pub mod postgres;
pub mod quiet;
pub mod requests;
pub mod waves;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rusqlite::TransactionBehavior;

use crate::clock::Timestamp;

/// The SQLite implementation's handles: a connection to the state database, and a
/// write transaction on one (which is a connection to the same calls).
pub use rusqlite::{Connection, Transaction};

/// Every area of the state database, for `use crate::store::prelude::*`.
pub mod prelude {
    pub use super::access::AccessStore;
    pub use super::baselines::BaselineStore;
    pub use super::chain::ChainStore;
    pub use super::incidents::IncidentStore;
    pub use super::intents::IntentStore;
    pub use super::lineage_events::LineageEventStore;
    pub use super::meta::MetaStore;
    pub use super::minutes::MinuteStore;
    pub use super::observations::ObservationStore;
    pub use super::outbox::OutboxStore;
    pub use super::quiet::QuietStore;
    pub use super::requests::RequestStore;
    pub use super::waves::WaveStore;
    pub use super::{Store, Transact, Writes};
}

/// The state database as the rest of dataward sees it: every area, and write
/// transactions. Implemented by SQLite's connection (and so by its transactions) and by
/// [`postgres::PgState`].
pub trait Store:
    crate::chain::ChainHost
    + access::AccessStore
    + incidents::IncidentStore
    + intents::IntentStore
    + observations::ObservationStore
    + minutes::MinuteStore
    + baselines::BaselineStore
    + outbox::OutboxStore
    + quiet::QuietStore
    + requests::RequestStore
    + lineage_events::LineageEventStore
    + waves::WaveStore
{
}

impl Store for Connection {}

/// Write transactions held open across calls (the engine's one per input), and where
/// the database lives (the chain's checkpoint and the engine's inode check sit beside
/// it).
pub trait Writes {
    /// `BEGIN IMMEDIATE`: the write lock is taken now, so whatever is read inside
    /// cannot change before the commit, and writers line up instead of failing late.
    fn begin_write(&self) -> Result<()>;
    fn commit_write(&self) -> Result<()>;
    fn rollback_write(&self) -> Result<()>;
    /// Is a write transaction open?
    fn in_write(&self) -> bool;
    /// The database file, if it is one (not in memory).
    fn database_path(&self) -> Option<PathBuf>;
    /// The chain's checkpoint, kept outside the database on this host: beside a
    /// database file, none for one in memory.
    fn checkpoint_path(&self) -> Option<PathBuf> {
        let mut path = self.database_path()?.into_os_string();
        path.push(".checkpoint");
        Some(PathBuf::from(path))
    }
}

impl Writes for Connection {
    fn begin_write(&self) -> Result<()> {
        self.execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn commit_write(&self) -> Result<()> {
        self.execute_batch("COMMIT")?;
        Ok(())
    }

    fn rollback_write(&self) -> Result<()> {
        self.execute_batch("ROLLBACK")?;
        Ok(())
    }

    fn in_write(&self) -> bool {
        !self.is_autocommit()
    }

    fn database_path(&self) -> Option<PathBuf> {
        self.path().filter(|p| !p.is_empty()).map(PathBuf::from)
    }
}

/// The state as the engine and its tasks hold it: SQLite's connection or a session to
/// the team's PostgreSQL, whichever [`place::StatePlace::open`] picked.
pub type State = Box<dyn Store + Send>;

impl From<Connection> for State {
    fn from(conn: Connection) -> State {
        Box::new(conn)
    }
}

/// One way to run a write transaction, on SQLite and on PostgreSQL alike (a trait of
/// its own beside [`Writes`] so [`Store`] stays usable as `dyn Store`).
pub trait Transact {
    /// Runs `work` in one write transaction (`BEGIN IMMEDIATE` on SQLite, fenced by the
    /// lease's term on PostgreSQL) and commits it; on an error nothing of it is kept.
    /// When it appended to the chain, this host's checkpoint moves to the new head.
    fn transact<T>(&self, work: impl FnOnce(&Self) -> Result<T>) -> Result<T>;
}

impl<S: crate::chain::ChainHost + ?Sized> Transact for S {
    fn transact<T>(&self, work: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        self.begin_write()?;
        let result = self.chain_head().and_then(|before| {
            let value = work(self)?;
            let appended = self.chain_head()? != before;
            self.commit_write()?;
            Ok((value, appended))
        });
        match result {
            Ok((value, appended)) => {
                if appended {
                    crate::chain::save_checkpoint_of(self)?;
                }
                Ok(value)
            }
            Err(e) => {
                if self.in_write() {
                    let _ = self.rollback_write();
                }
                Err(e)
            }
        }
    }
}

/// A time as the state database keeps it (text, see [`Timestamp`]); a bad one is an
/// error naming where it was read (`what`, e.g. "observation 12 (at)") and its text.
pub fn read_time(text: &str, what: impl FnOnce() -> String) -> Result<Timestamp> {
    Timestamp::parse(text).map_err(|e| anyhow::anyhow!("the state database's {}: {e}", what()))
}

/// Did this fail because another writer held the database longer than the busy
/// timeout? Worth trying again, unlike any other error.
pub fn is_busy(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<rusqlite::Error>(),
        Some(rusqlite::Error::SqliteFailure(f, _))
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

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
    // 5: an incident's records found without reading the whole chain: receipts are
    // drafted from them whenever an open incident changes.
    "CREATE INDEX chain_incident ON chain (json_extract(payload, '$.incident'));",
    // 6: each monitor's rows per minute of its timestamp column (see
    // monitor::minutes): a poll reads the recent days of a table, not its whole lookback.
    "CREATE TABLE minute_source (
        monitor       TEXT PRIMARY KEY,
        source        TEXT NOT NULL,
        complete_from INTEGER NOT NULL
     );
     CREATE TABLE minute_day (
        monitor TEXT NOT NULL,
        day     INTEGER NOT NULL,
        rows    INTEGER NOT NULL,
        minutes BLOB NOT NULL,
        PRIMARY KEY (monitor, day)
     ) WITHOUT ROWID;",
    // 7: new levels people accepted (`dataward accept`): a monitor's volume baseline
    // restarts from `since`, the days before it seen times `ratio` (see
    // detect::volume::Restart). Written with the chain record of the acceptance.
    "CREATE TABLE volume_restart (
        monitor  TEXT NOT NULL,
        since    TEXT NOT NULL,
        ratio    REAL NOT NULL,
        incident TEXT NOT NULL,
        seq      INTEGER NOT NULL,
        PRIMARY KEY (monitor, since, seq)
     );",
    // 8: the outbox (notify::outbox): an alert per destination, queued in the
    // transaction that appends the chain record it announces, marked by the relay.
    outbox::MIGRATION,
    // 9: how each job's schedule stood before a hold paused it (orchestrator::Schedule,
    // JSON), written before the orchestrator is asked, so that the undo, even after a
    // crash in between, puts back exactly that and never the paused state it left.
    "CREATE TABLE held_schedule (
        proposal TEXT PRIMARY KEY,
        job      TEXT NOT NULL,
        before   TEXT NOT NULL,
        taken_at TEXT NOT NULL
     );",
    // 10: dbt Core (effects::orchestrator::dbt_core) has no scheduler to remember its
    // runs and holds: dataward does. (Since the runner keeps them in a database of its
    // own, dbt_core::open carries these rows over once, reading them read-only; the
    // engine never writes these tables.) A run is queued once per key, carried out by the
    // process that queued it (`owner`: boot id, pid, start time), one at a time per
    // project; its output streams to `log` and its tail is kept in `output` at the end.
    // A hold is a job dataward refuses to run until the hold is lifted.
    "CREATE TABLE dbt_core_run (
        id           INTEGER PRIMARY KEY,
        project      TEXT NOT NULL,
        job          TEXT NOT NULL,
        request_key  TEXT NOT NULL UNIQUE,
        command      TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'success', 'failed')),
        owner        TEXT NOT NULL,
        started_at   TEXT,
        finished_at  TEXT,
        exit_code    INTEGER,
        log          TEXT,
        output       TEXT NOT NULL DEFAULT '',
        detail       TEXT NOT NULL DEFAULT ''
     );
     CREATE INDEX dbt_core_run_by_job ON dbt_core_run (job, id);
     CREATE INDEX dbt_core_run_by_project ON dbt_core_run (project, status, id);
     CREATE TABLE dbt_core_hold (
        job     TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        held_at TEXT NOT NULL
     );",
    // 11: a person's request is answered once, and remembered: each intent names the
    // client request that made it (and whose it is), and each decision's answer is kept
    // by that request's id, written in the transaction that records the decision (or
    // its refusal), so a client whose engine died mid-request can ask what came of it.
    "ALTER TABLE intent ADD COLUMN client_request TEXT;
     ALTER TABLE intent ADD COLUMN asker_uid INTEGER;
     CREATE TABLE request_outcome (
        client_request TEXT PRIMARY KEY,
        asker_uid      INTEGER NOT NULL,
        at             TEXT NOT NULL,
        outcome        TEXT NOT NULL
     );",
    // 12: chain records carry time that never steps back (chain schema version 2):
    // `recorded_at`, the host's clock at append held to at least the record before's,
    // and `clock`, the host's clock as read. Empty on version-1 records.
    "ALTER TABLE chain ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';
     ALTER TABLE chain ADD COLUMN clock TEXT NOT NULL DEFAULT '';",
    // 13: new levels people accepted for checks whose band is learned from dataward's
    // own observations (row_count, null_rate per column): the baseline is learned from
    // observation `since_id` on, the accepted breaches up to `through_id` counted as the
    // new normal (see monitor::baseline::Accepted). Written with the chain record of
    // the acceptance. (Volume's restarts stay in volume_restart: a day, not a row.)
    "CREATE TABLE baseline_restart (
        monitor    TEXT NOT NULL,
        check_kind TEXT NOT NULL,
        subject    TEXT NOT NULL,
        since_id   INTEGER NOT NULL,
        through_id INTEGER NOT NULL,
        value      REAL NOT NULL,
        incident   TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        PRIMARY KEY (monitor, check_kind, subject, seq)
     );",
    // 14: each stored day's nulls per column (comma-separated, in the order of the
    // null columns the monitor's minute source names): a null_rate baseline learns from
    // the table's own days, not only from dataward's polls (see monitor::minutes).
    "ALTER TABLE minute_day ADD COLUMN nulls TEXT NOT NULL DEFAULT '';",
    // 15: what people and the config said to keep quiet (see engine::feedback). A
    // snooze silences a monitor until `until` (engine time); `ended_seq` is the chain
    // record of its end. `baseline_leave` holds spans of time whose points leave a
    // monitor's baselines: an incident marked expected, a maintenance window.
    "CREATE TABLE snooze (
        seq       INTEGER PRIMARY KEY,
        monitor   TEXT NOT NULL,
        until     TEXT NOT NULL,
        reason    TEXT NOT NULL,
        actor     TEXT NOT NULL,
        ended_seq INTEGER
     );
     CREATE TABLE baseline_leave (
        monitor TEXT NOT NULL,
        from_at TEXT NOT NULL,
        to_at   TEXT NOT NULL,
        why     TEXT NOT NULL,
        PRIMARY KEY (monitor, from_at, to_at)
     );",
    // 16: the server counts a table's older days per day at every poll, so the state
    // keeps only the load times freshness learns from (see monitor::minutes), in a new
    // encoding: every minute of 70 days (about 320 KB a table) is let go. The next poll
    // reads each day's counts again, and the load times with one query where the
    // recent days hold too few of them: nothing a check needs is lost.
    "DELETE FROM minute_day;
     DELETE FROM minute_source;",
    // Access requests (engine/access.rs), each its JSON document under its id
    // (ACC-0001), in the order filed.
    "CREATE TABLE access_request (
        id  TEXT PRIMARY KEY,
        doc TEXT NOT NULL
     );",
    // OpenLineage run events in (see store::lineage_events): each event once, by its
    // run, job, type and time (a sender's retry or a file read again is ignored), its
    // datasets with the rows written, and how far each tailed JSONL file was read,
    // written in the transaction that keeps the events read from it.
    "CREATE TABLE lineage_event (
        id                   INTEGER PRIMARY KEY,
        run_id               TEXT NOT NULL,
        job_namespace        TEXT NOT NULL,
        job_name             TEXT NOT NULL,
        event_type           TEXT NOT NULL,
        event_time           TEXT NOT NULL,
        parent_run_id        TEXT,
        parent_job_namespace TEXT,
        parent_job_name      TEXT,
        error_message        TEXT,
        stack_trace          TEXT,
        dbt_invocation_id    TEXT,
        producer             TEXT NOT NULL,
        received_at          TEXT NOT NULL,
        via                  TEXT NOT NULL,
        UNIQUE (run_id, job_namespace, job_name, event_type, event_time)
     );
     CREATE INDEX lineage_event_job ON lineage_event (job_namespace, job_name);
     CREATE TABLE lineage_event_dataset (
        event     INTEGER NOT NULL REFERENCES lineage_event (id),
        direction TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name      TEXT NOT NULL,
        row_count INTEGER,
        PRIMARY KEY (event, direction, namespace, name)
     );
     CREATE TABLE lineage_file (
        path    TEXT PRIMARY KEY,
        offset  INTEGER NOT NULL,
        lines   INTEGER NOT NULL,
        file_id INTEGER
     );",
    // Migration waves' sign-offs (engine/waves.rs), each its JSON document under the
    // wave's id (MIG-name-wave).
    "CREATE TABLE migration_sign_off (
        wave TEXT PRIMARY KEY,
        doc  TEXT NOT NULL
     );",
    // What a monitor's last poll kept of its table's older days (monitor::older_days,
    // JSON): a steady poll reads only the recent days and the rows written since.
    "CREATE TABLE older_days (
        monitor TEXT PRIMARY KEY,
        summary TEXT NOT NULL
     );",
];

/// How long a writer waits for another writer before giving up. Long enough that two
/// consoles on one host never see `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the state database and brings its schema up to date.
/// Its directory is created private (0700); a directory or database another user owns,
/// or group or others can write, is refused (see [`files::check_private`]).
///
/// Only the engine calls this: one writer to the state database (tests/store_seam.rs
/// holds that); everyone else reads it with [`open_read_only`].
pub fn open(path: &Path) -> Result<Connection> {
    open_private(path, "state database", MIGRATIONS)
}

/// Opens (creating if needed) a private SQLite database of dataward's, `what` in its
/// messages, with the state database's durability, and brings its schema up to date
/// with `migrations`.
fn open_private(path: &Path, what: &str, migrations: &[&str]) -> Result<Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        files::ensure_private_dir(dir)?;
    }
    if path.exists() {
        files::check_private(path, files::Use::Write)?;
    }
    // Created 0600 before SQLite opens it (SQLite gives the -wal and -shm files the
    // database's mode): nobody but the engine's account opens the state files, even
    // where the group reaches the socket; readers go through it. A read lock another
    // account held on the -shm would stall every write.
    drop(files::open_or_create(path)?);
    let mut conn = Connection::open(path)
        .with_context(|| format!("cannot open the {what} {}", path.display()))?;
    configure(&conn).with_context(|| format!("{what} {}", path.display()))?;
    make_private(path)?;
    migrate(&mut conn, migrations).with_context(|| format!("{what} {}", path.display()))?;
    Ok(conn)
}

/// The state database and its -wal and -shm files, 0600: ones left readable by an
/// older dataward are closed to others.
fn make_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = Path::new(&name);
        if let Ok(meta) = std::fs::symlink_metadata(file) {
            if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("cannot make {} private", file.display()))?;
            }
        }
    }
    Ok(())
}

/// Opens an existing state database for reading only: never creates or migrates it,
/// and sets and reads back `query_only`, so nothing on this connection can write. The
/// directory and file may belong to another user (a teammate reading the engine's log)
/// but not be writable by group or others.
///
/// A WAL database needs its `-wal` and `-shm` files to be read. While a writer has it
/// open they exist and SQLite reads them even without write permission (3.22+); when
/// none does they were removed at the last close, and a reader that cannot create them
/// in the directory opens the database file as `immutable` instead. That is sound
/// because without a `-wal` every committed transaction is in the database file; a
/// writer starting meanwhile appends to a new WAL and changes the file only at a
/// checkpoint, which a short read is unlikely to meet and `verify` would report.
pub fn open_read_only(path: &Path) -> Result<Connection> {
    use rusqlite::OpenFlags;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if dir.exists() {
            files::check_private(dir, files::Use::Read)?;
        }
    }
    anyhow::ensure!(path.is_file(), "no state database at {}", path.display());
    files::check_private(path, files::Use::Read)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let wal_files = ["-wal", "-shm"].iter().all(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        Path::new(&name).exists()
    });
    let immutable = !wal_files && !dir_writable(path);
    let uri = format!(
        "file:{}{}",
        uri_path(path),
        if immutable { "?immutable=1" } else { "" }
    );
    let conn = Connection::open_with_flags(&uri, flags)
        .with_context(|| format!("cannot open the state database {}", path.display()))?;
    (|| -> Result<()> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "query_only", true)?;
        let query_only: i64 = conn.query_row("PRAGMA query_only", [], |r| r.get(0))?;
        anyhow::ensure!(query_only == 1, "query_only did not stay on");
        let version: usize = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        anyhow::ensure!(
            version <= MIGRATIONS.len(),
            "schema version {version} is newer than this dataward knows ({}); upgrade dataward",
            MIGRATIONS.len()
        );
        anyhow::ensure!(
            version > 0,
            "not a dataward state database (schema version 0)"
        );
        Ok(())
    })()
    .with_context(|| format!("state database {}", path.display()))?;
    Ok(conn)
}

/// Can this process create files beside `path` (the `-wal` and `-shm` SQLite wants)?
fn dir_writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(dir) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `dir` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(dir.as_ptr(), libc::W_OK) == 0 }
}

/// A path as a `file:` URI path: every byte but the unreserved ones percent-encoded, so
/// a `?` or `#` in a directory name is not read as the start of URI parameters.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in absolute.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: usize = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    run_migrations(version, migrations, |sql| Ok(tx.execute_batch(sql)?))?;
    tx.pragma_update(None, "user_version", migrations.len())?;
    tx.commit()?;
    Ok(())
}

/// Moves a schema at `version` forward to the last of `migrations`, running each entry
/// after it with `run` in the caller's transaction: SQLite's state and PostgreSQL's
/// alike. A schema newer than this dataward knows is refused; a failing entry is named.
pub(crate) fn run_migrations(
    version: usize,
    migrations: &[&str],
    mut run: impl FnMut(&str) -> Result<()>,
) -> Result<()> {
    if version > migrations.len() {
        bail!(
            "schema version {version} is newer than this dataward knows ({}); upgrade dataward",
            migrations.len()
        );
    }
    for (index, sql) in migrations.iter().enumerate().skip(version) {
        run(sql).with_context(|| format!("migration {} failed", index + 1))?;
    }
    Ok(())
}

/// One engine per data directory, and one writer to its state database. Until `dataward
/// serve` lets several consoles share one engine, a second engine on the same state
/// would poll twice and open every incident twice; this lock makes the second one stop
/// with a clear message instead. A command that writes with no engine running
/// (`dataward check`, `dataward stop`) takes it too, so it is that one writer: the state
/// database opens for writing only through [`EngineLock::open_state`] or in an engine.
/// The kernel drops the lock when the process dies, however it dies.
pub struct EngineLock {
    _file: std::fs::File,
    data_dir: std::path::PathBuf,
}

impl EngineLock {
    pub fn acquire(data_dir: &Path) -> Result<EngineLock> {
        match EngineLock::try_acquire(data_dir)? {
            Ok(lock) => Ok(lock),
            Err(holder) => bail!(
                "another dataward engine ({holder}) is running on {}; one engine per data \
                 directory until `dataward serve` lets consoles share one (use another --data-dir)",
                data_dir.display()
            ),
        }
    }

    /// The lock, or who holds it ("pid 123", for messages) when an engine does.
    pub fn try_acquire(data_dir: &Path) -> Result<Result<EngineLock, String>> {
        files::ensure_private_dir(data_dir)?;
        let path = data_dir.join("engine.lock");
        let mut file = files::open_or_create(&path)?;
        if file.try_lock().is_err() {
            let mut holder = String::new();
            let _ = std::io::Read::read_to_string(&mut file, &mut holder);
            return Ok(Err(crate::sanitize::for_terminal(holder.trim()).to_string()));
        }
        use std::io::{Seek, Write};
        file.set_len(0)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        write!(file, "pid {}", std::process::id())?;
        Ok(Ok(EngineLock {
            _file: file,
            data_dir: data_dir.to_path_buf(),
        }))
    }

    /// The data directory's state database, for writing: only while this lock is held.
    pub fn open_state(&self) -> Result<Connection> {
        open(&self.data_dir.join("dataward.db"))
    }
}

/// A private copy, in memory, of the state database at `path`, read without writing to
/// it: a command that judges against the engine's history while an engine runs (and
/// owns every write) works on the copy, and nothing it does reaches the engine's file.
pub fn scratch_copy(path: &Path) -> Result<Connection> {
    let source = open_read_only(path)?;
    let mut copy = Connection::open_in_memory()?;
    rusqlite::backup::Backup::new(&source, &mut copy)?
        .run_to_completion(256, std::time::Duration::ZERO, None)
        .with_context(|| format!("copying the state database {}", path.display()))?;
    Ok(copy)
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
    fn every_minute_kept_before_migration_16_is_let_go() {
        // A database as migration 15 left it, holding a day of per-minute rows.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn, &MIGRATIONS[..15]).unwrap();
        conn.execute_batch(
            "INSERT INTO minute_source VALUES ('orders', 'shop.orders\nat', 0);
             INSERT INTO minute_day VALUES ('orders', 19800, 3, x'000102', '1');",
        )
        .unwrap();
        drop(conn);
        let conn = open(&path).unwrap();
        let left: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM minute_day) + (SELECT count(*) FROM minute_source)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "the next poll reads what a check needs again");
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
    fn a_planted_engine_lock_symlink_does_not_touch_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("notes.txt");
        std::fs::write(&victim, "the victim's notes").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("engine.lock")).unwrap();
        let err = EngineLock::acquire(dir.path())
            .err()
            .map(|e| format!("{e:#}"));
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the victim's notes"
        );
        let err = err.expect("a symlinked engine.lock is refused");
        assert!(err.contains("symlink"), "{err}");
        // A dangling link must not create its target either.
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("created-by-us");
        std::os::unix::fs::symlink(&missing, dir.path().join("engine.lock")).unwrap();
        assert!(EngineLock::acquire(dir.path()).is_err());
        assert!(!missing.exists());
    }

    #[test]
    fn a_new_data_dir_is_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let data = parent.path().join("data");
        let _lock = EngineLock::acquire(&data).unwrap();
        let mode = std::fs::metadata(&data).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let other = parent.path().join("other");
        open(&other.join("dataward.db")).unwrap();
        let mode = std::fs::metadata(&other).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_loose_data_dir_or_database_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("dataward.db");
        open(&db).unwrap();
        let loose = std::fs::Permissions::from_mode(0o777);
        std::fs::set_permissions(dir.path(), loose.clone()).unwrap();
        let expected = format!("chmod 700 {}", dir.path().display());
        let err = format!("{:#}", open(&db).unwrap_err());
        assert!(err.contains(&expected), "{err}");
        let err = format!("{:#}", EngineLock::acquire(dir.path()).err().unwrap());
        assert!(err.contains(&expected), "{err}");
        let err = format!("{:#}", open_read_only(&db).unwrap_err());
        assert!(err.contains(&expected), "{err}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = format!("{:#}", open(&db).unwrap_err());
        assert!(
            err.contains(&format!("chmod 600 {}", db.display())),
            "{err}"
        );
    }

    #[test]
    fn a_data_dir_or_database_owned_by_another_user_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root to give the data directory to another uid");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("dataward.db");
        open(&db).unwrap();
        std::os::unix::fs::chown(&db, Some(4242), None).unwrap();
        let err = format!("{:#}", open(&db).unwrap_err());
        assert!(err.contains("owned by uid 4242"), "{err}");
        std::os::unix::fs::chown(&db, Some(0), None).unwrap();
        std::os::unix::fs::chown(dir.path(), Some(4242), None).unwrap();
        let err = format!("{:#}", open(&db).unwrap_err());
        assert!(err.contains("owned by uid 4242"), "{err}");
        let err = format!("{:#}", EngineLock::acquire(dir.path()).err().unwrap());
        assert!(err.contains("owned by uid 4242"), "{err}");
    }

    #[test]
    fn a_read_only_connection_cannot_write_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd ?#% name.db");
        assert!(open_read_only(&path).is_err());
        assert!(!path.exists());
        let conn = open(&path).unwrap();
        crate::chain::append(
            &conn,
            "2026-03-01T09:00:00Z".parse().unwrap(),
            "test",
            "{}",
            &serde_json::json!({}),
        )
        .unwrap();
        drop(conn);
        let reader = open_read_only(&path).unwrap();
        let count: i64 = reader
            .query_row("SELECT count(*) FROM chain", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 1);
        assert!(reader
            .execute("INSERT INTO meta (key, value) VALUES ('x', 'y')", [])
            .is_err());
        assert_eq!(
            reader.path().map(Path::new),
            Some(path.canonicalize().unwrap().as_path())
        );
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
