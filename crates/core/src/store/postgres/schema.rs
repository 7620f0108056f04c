//! The team state's schema on PostgreSQL, moved forward one version at a time as
//! SQLite's is (`store::MIGRATIONS`); the version is kept in `dataward_schema`.

use anyhow::{bail, Context, Result};
use postgres::Client;

/// Each entry moves the schema one version forward; never edit a shipped entry.
const MIGRATIONS: &[&str] = &[
    // 1: the hash chain, append-only for everyone who goes through PostgreSQL (`verify`
    // catches anyone who goes around it, a restored backup included); the chain's log id
    // (`meta`); and the leadership lease: which engine of the team leads, under which
    // term (the fencing token every write checks), until when.
    "CREATE TABLE chain (
        seq            BIGINT PRIMARY KEY,
        prev_hash      TEXT NOT NULL UNIQUE,
        log_id         TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        at             TEXT NOT NULL,
        kind           TEXT NOT NULL,
        actor          TEXT NOT NULL,
        payload        TEXT NOT NULL,
        hash           TEXT NOT NULL UNIQUE,
        recorded_at    TEXT NOT NULL,
        clock          TEXT NOT NULL
     );
     CREATE FUNCTION chain_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'the chain is append-only: % refused', TG_OP; END $$;
     CREATE TRIGGER chain_no_change BEFORE UPDATE OR DELETE ON chain
       FOR EACH ROW EXECUTE FUNCTION chain_append_only();
     CREATE TRIGGER chain_no_truncate BEFORE TRUNCATE ON chain
       FOR EACH STATEMENT EXECUTE FUNCTION chain_append_only();
     CREATE INDEX chain_by_kind ON chain (kind, seq);
     CREATE INDEX chain_incident ON chain (((payload::jsonb) ->> 'incident'));
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE lease (
        team       TEXT PRIMARY KEY,
        term       BIGINT NOT NULL,
        holder     TEXT NOT NULL,
        host       TEXT NOT NULL,
        taken_at   TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
     );",
];

/// The schema version this dataward writes.
pub fn latest() -> usize {
    MIGRATIONS.len()
}

/// Brings the schema to [`latest`], once, however many engines start together: the
/// migrations run under a transaction-scoped advisory lock of their own.
pub fn migrate(client: &mut Client) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS dataward_schema (version INTEGER NOT NULL)")?;
    let version: i64 = tx
        .query_one(
            "SELECT coalesce(max(version), 0)::bigint FROM dataward_schema",
            &[],
        )?
        .get(0);
    let version = usize::try_from(version).context("a negative schema version")?;
    if version > MIGRATIONS.len() {
        bail!(
            "the state database's schema version {version} is newer than this dataward knows ({}); upgrade dataward",
            MIGRATIONS.len()
        );
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.batch_execute(sql)
            .with_context(|| format!("state database migration {} failed", index + 1))?;
    }
    if version < MIGRATIONS.len() {
        tx.execute("DELETE FROM dataward_schema", &[])?;
        tx.execute(
            "INSERT INTO dataward_schema (version) VALUES ($1)",
            &[&(MIGRATIONS.len() as i32)],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// The advisory lock key the migrations run under ("dataward" in ASCII): apart from
/// every team's leadership key, which has its top bit set (see `lease::lock_key`).
const MIGRATION_LOCK: i64 = 0x6461_7461_7761_7264;
