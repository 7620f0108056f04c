//! The team state's schema on PostgreSQL, moved forward one version at a time as
//! SQLite's is (`store::MIGRATIONS`); the version is kept in `dataward_schema`.

use anyhow::{Context, Result};
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
    // 2: the engine's memory, as SQLite's migrations 4, 9 and 11 keep it: open incidents
    // and approval requests (JSON documents, TEXT so they read back as written, cast to
    // jsonb where a query looks inside), intents (pending until closed) with the client
    // request each carries out, what came of each request, and the schedules holds
    // paused. Every row is a team's; `ord` is the order rows were first written (SQLite's
    // rowid). Text that is ordered or compared is `COLLATE "C"`: byte order, as SQLite's.
    "CREATE TABLE incident (
        team   TEXT NOT NULL,
        id     TEXT COLLATE \"C\" NOT NULL,
        ord    BIGINT GENERATED ALWAYS AS IDENTITY,
        status TEXT NOT NULL,
        doc    TEXT NOT NULL,
        PRIMARY KEY (team, id)
     );
     CREATE INDEX incident_order ON incident (team, ord);
     CREATE TABLE request (
        team     TEXT NOT NULL,
        proposal TEXT NOT NULL,
        doc      TEXT NOT NULL,
        PRIMARY KEY (team, proposal)
     );
     CREATE TABLE intent (
        id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        team           TEXT NOT NULL,
        created_at     TEXT NOT NULL,
        subject        TEXT NOT NULL,
        effect         TEXT NOT NULL,
        completion     TEXT NOT NULL,
        by_person      BOOLEAN NOT NULL,
        status         TEXT NOT NULL DEFAULT 'pending',
        outcome        TEXT,
        client_request TEXT,
        asker_uid      BIGINT
     );
     CREATE INDEX intent_pending ON intent (team, status, id);
     CREATE INDEX intent_by_request ON intent (team, client_request) WHERE status = 'pending';
     CREATE TABLE request_outcome (
        team           TEXT NOT NULL,
        client_request TEXT NOT NULL,
        asker_uid      BIGINT NOT NULL,
        at             TEXT NOT NULL,
        outcome        TEXT NOT NULL,
        PRIMARY KEY (team, client_request)
     );
     CREATE TABLE held_schedule (
        team     TEXT NOT NULL,
        proposal TEXT NOT NULL,
        job      TEXT NOT NULL,
        before   TEXT NOT NULL,
        taken_at TEXT NOT NULL,
        PRIMARY KEY (team, proposal)
     );",
    // 3: the outbox (notify::outbox), as SQLite's migration 8: an alert per destination,
    // queued with the chain record it announces, once per (destination, record, key).
    "CREATE TABLE outbox (
        id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        team         TEXT NOT NULL,
        destination  TEXT COLLATE \"C\" NOT NULL,
        kind         TEXT COLLATE \"C\" NOT NULL,
        incident     TEXT NOT NULL,
        chain_seq    BIGINT NOT NULL,
        action       TEXT NOT NULL,
        occasion     TEXT NOT NULL,
        dedup_key    TEXT NOT NULL,
        alert        TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        status       TEXT NOT NULL DEFAULT 'pending',
        attempts     INTEGER NOT NULL DEFAULT 0,
        next_at      BIGINT NOT NULL DEFAULT 0,
        last_error   TEXT,
        request_id   TEXT,
        delivered_at BIGINT,
        UNIQUE (team, destination, chain_seq, dedup_key)
     );
     CREATE INDEX outbox_pending ON outbox (team, destination, status, id);
     CREATE INDEX outbox_by_key ON outbox (team, dedup_key, action);
     CREATE INDEX outbox_by_incident ON outbox (team, incident);",
    // 4: what the poller measured and how it was judged, and what shapes the baselines
    // learned from it: levels people accepted, snoozes, spans that left the baselines
    // (SQLite's migrations 1, 2, 7, 13 and 15).
    "CREATE TABLE observation (
        id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        team       TEXT NOT NULL,
        monitor    TEXT NOT NULL,
        tbl        TEXT NOT NULL,
        check_kind TEXT NOT NULL,
        subject    TEXT NOT NULL DEFAULT '',
        at         TEXT COLLATE \"C\" NOT NULL,
        value      DOUBLE PRECISION,
        detail     TEXT NOT NULL,
        verdict    TEXT NOT NULL,
        health     TEXT NOT NULL
     );
     CREATE INDEX observation_by_subject ON observation (team, monitor, check_kind, subject, id);
     CREATE INDEX observation_by_team ON observation (team, id);
     CREATE TABLE volume_restart (
        team     TEXT NOT NULL,
        monitor  TEXT NOT NULL,
        since    TEXT COLLATE \"C\" NOT NULL,
        ratio    DOUBLE PRECISION NOT NULL,
        incident TEXT NOT NULL,
        seq      BIGINT NOT NULL,
        PRIMARY KEY (team, monitor, since, seq)
     );
     CREATE TABLE baseline_restart (
        team       TEXT NOT NULL,
        monitor    TEXT NOT NULL,
        check_kind TEXT NOT NULL,
        subject    TEXT NOT NULL,
        since_id   BIGINT NOT NULL,
        through_id BIGINT NOT NULL,
        value      DOUBLE PRECISION NOT NULL,
        incident   TEXT NOT NULL,
        seq        BIGINT NOT NULL,
        PRIMARY KEY (team, monitor, check_kind, subject, seq)
     );
     CREATE TABLE snooze (
        team      TEXT NOT NULL,
        seq       BIGINT NOT NULL,
        monitor   TEXT NOT NULL,
        until     TEXT NOT NULL,
        reason    TEXT NOT NULL,
        actor     TEXT NOT NULL,
        ended_seq BIGINT,
        PRIMARY KEY (team, seq)
     );
     CREATE TABLE baseline_leave (
        team    TEXT NOT NULL,
        monitor TEXT NOT NULL,
        from_at TEXT COLLATE \"C\" NOT NULL,
        to_at   TEXT COLLATE \"C\" NOT NULL,
        why     TEXT NOT NULL,
        PRIMARY KEY (team, monitor, from_at, to_at)
     );",
    // 5: each monitor's load times, a row per day (SQLite's migration 6 as 16 left it;
    // its unused `nulls` is not carried).
    "CREATE TABLE minute_source (
        team          TEXT NOT NULL,
        monitor       TEXT COLLATE \"C\" NOT NULL,
        source        TEXT NOT NULL,
        complete_from BIGINT NOT NULL,
        PRIMARY KEY (team, monitor)
     );
     CREATE TABLE minute_day (
        team    TEXT NOT NULL,
        monitor TEXT NOT NULL,
        day     BIGINT NOT NULL,
        rows    BIGINT NOT NULL,
        minutes BYTEA NOT NULL,
        PRIMARY KEY (team, monitor, day)
     );",
    // 6: access requests and migration waves' sign-offs, JSON documents by id, in the
    // order first written.
    "CREATE TABLE access_request (
        team TEXT NOT NULL,
        id   TEXT NOT NULL,
        ord  BIGINT GENERATED ALWAYS AS IDENTITY,
        doc  TEXT NOT NULL,
        PRIMARY KEY (team, id)
     );
     CREATE TABLE migration_sign_off (
        team TEXT NOT NULL,
        wave TEXT NOT NULL,
        ord  BIGINT GENERATED ALWAYS AS IDENTITY,
        doc  TEXT NOT NULL,
        PRIMARY KEY (team, wave)
     );",
    // 7: OpenLineage run events in, each once by its run, job, type and time, with its
    // datasets, and how far each tailed JSONL file was read.
    "CREATE TABLE lineage_event (
        id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        team                 TEXT NOT NULL,
        run_id               TEXT NOT NULL,
        job_namespace        TEXT COLLATE \"C\" NOT NULL,
        job_name             TEXT COLLATE \"C\" NOT NULL,
        event_type           TEXT NOT NULL,
        event_time           TEXT COLLATE \"C\" NOT NULL,
        parent_run_id        TEXT,
        parent_job_namespace TEXT,
        parent_job_name      TEXT,
        error_message        TEXT,
        stack_trace          TEXT,
        dbt_invocation_id    TEXT,
        producer             TEXT NOT NULL,
        received_at          TEXT NOT NULL,
        via                  TEXT NOT NULL,
        UNIQUE (team, run_id, job_namespace, job_name, event_type, event_time)
     );
     CREATE INDEX lineage_event_job ON lineage_event (team, job_namespace, job_name);
     CREATE TABLE lineage_event_dataset (
        event     BIGINT NOT NULL REFERENCES lineage_event (id),
        direction TEXT NOT NULL,
        namespace TEXT COLLATE \"C\" NOT NULL,
        name      TEXT COLLATE \"C\" NOT NULL,
        row_count BIGINT,
        PRIMARY KEY (event, direction, namespace, name)
     );
     CREATE TABLE lineage_file (
        team        TEXT NOT NULL,
        path        TEXT NOT NULL,
        byte_offset BIGINT NOT NULL,
        lines       BIGINT NOT NULL,
        file_id     BIGINT,
        PRIMARY KEY (team, path)
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
    crate::store::run_migrations(version, MIGRATIONS, |sql| Ok(tx.batch_execute(sql)?))?;
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
