//! Warehouse evidence is gathered off the engine's thread: through `dataward serve`, a
//! probe blocked on a locked PostgreSQL table delays no console's request, the incident
//! opens at once from the observation, and its cause is re-stated when the probe
//! answers, or says the evidence is unavailable, and why, when the probe times out.
//! Each test starts its own PostgreSQL server and skips (with a message) when the
//! server binaries are missing, unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataward::engine::api::{Command as EngineCommand, IncidentView, ServerMessage};
use dataward::engine::client::Client;
use support::pg::{start_or_skip, PgServer};

/// Only bounds a wait for something that must happen, so a broken build fails instead
/// of hanging; nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(120);

/// A source `raw.payments` and two models reading its `amount`: one divides it (any
/// text breaks that), one casts it to integer (only values that do not convert break
/// that: the warehouse must count them).
const MANIFEST: &str = r#"{
  "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
               "dbt_version": "1.9.0", "adapter_type": "postgres"},
  "nodes": {
    "model.shop.stg_payments": {
      "resource_type": "model", "name": "stg_payments", "package_name": "shop",
      "database": "postgres", "schema": "analytics", "alias": "stg_payments",
      "config": {"materialized": "view"},
      "raw_code": "select id, amount / 100 as amount_major from {{ source('raw', 'payments') }}",
      "depends_on": {"macros": [], "nodes": ["source.shop.raw.payments"]}
    },
    "model.shop.payments_int": {
      "resource_type": "model", "name": "payments_int", "package_name": "shop",
      "database": "postgres", "schema": "analytics", "alias": "payments_int",
      "config": {"materialized": "view"},
      "raw_code": "select id, cast(amount as integer) as amount_int from {{ source('raw', 'payments') }}",
      "depends_on": {"macros": [], "nodes": ["source.shop.raw.payments"]}
    }
  },
  "sources": {
    "source.shop.raw.payments": {
      "resource_type": "source", "name": "payments", "source_name": "raw",
      "package_name": "shop", "database": "postgres", "schema": "raw",
      "identifier": "payments"
    }
  },
  "exposures": {}
}"#;

struct Served {
    _dir: tempfile::TempDir,
    data: PathBuf,
    log: PathBuf,
    server: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Served {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Schema observations the engine stored for the monitor.
    fn schema_observations(&self) -> i64 {
        let Ok(db) = rusqlite::Connection::open_with_flags(
            self.data.join("dataward.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) else {
            return 0;
        };
        db.query_row(
            "SELECT count(*) FROM observation WHERE monitor = 'raw_payments'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0)
    }
}

/// `dataward serve` watching `raw.payments` (schema, every second) with the manifest
/// above and `check_timeout` on the warehouse, once it has stored a first observation.
fn serve(pg: &PgServer, check_timeout: &str) -> Served {
    pg.execute(
        "CREATE SCHEMA raw;
         CREATE TABLE raw.payments (id int PRIMARY KEY, amount int);
         INSERT INTO raw.payments SELECT n, n * 100 FROM generate_series(1, 20) AS n;",
    );
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let me = dataward::approve::Actor::current()
        .user
        .expect("this account has a name");
    let config = dir.path().join("team.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_TEST_EVIDENCE_PG_URL\"\n\
             check_timeout = \"{check_timeout}\"\n\n\
             [[monitor]]\nname = \"raw_payments\"\nwarehouse = \"pg\"\ntable = \"raw.payments\"\n\
             checks = [\"schema\"]\nevery = \"1s\"\n\n\
             [lineage]\nmanifest = \"manifest.json\"\n\n\
             [people.{me:?}]\nname = \"on call\"\nroles = [\"owner\"]\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let server = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data)
        .env("DATAWARD_TEST_EVIDENCE_PG_URL", &pg.url)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let served = Served {
        _dir: dir,
        data,
        log,
        server,
    };
    until("the engine stores a first observation", &served, || {
        served.schema_observations() > 0
    });
    served
}

fn until(what: &str, served: &Served, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + PATIENCE;
    while !done() {
        assert!(
            Instant::now() < give_up,
            "never happened: {what}\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Backends waiting for a lock on `raw.payments`: the engine's probe, blocked.
fn probes_waiting(watcher: &mut postgres::Client) -> i64 {
    watcher
        .query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
             WHERE c.relname = 'payments' AND NOT l.granted",
            &[],
        )
        .unwrap()
        .get(0)
}

/// The column becomes text with two values that do not convert to integer, then a
/// session takes `raw.payments` and holds it: the returned transaction is the lock.
fn change_then_lock(holder: &mut postgres::Client) -> postgres::Transaction<'_> {
    holder
        .batch_execute(
            "ALTER TABLE raw.payments ALTER COLUMN amount TYPE text USING amount::text;
             UPDATE raw.payments SET amount = 'n/a' WHERE id IN (3, 4);",
        )
        .unwrap();
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE raw.payments IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    lock
}

/// The next snapshot's incident on raw.payments, if it has one.
fn incident(client: &mut Client) -> Option<IncidentView> {
    let snapshot = client.snapshot().unwrap();
    snapshot
        .incidents
        .into_iter()
        .find(|i| i.table == "raw.payments")
}

fn connect(served: &Served) -> Client {
    let mut client = None;
    until("the service listens", served, || {
        client = Client::connect(&served.data, false).ok().flatten();
        client.is_some()
    });
    client.unwrap()
}

/// A command over the socket, answered: any reply will do, it only has to come.
fn answered(client: &mut Client) {
    client
        .send(&dataward::engine::api::ClientMessage::Request(
            dataward::engine::api::Request {
                id: 77,
                command: EngineCommand::WhatHappened {
                    client_request: "nothing-sent-before".into(),
                },
                client_request: None,
            },
        ))
        .unwrap();
    loop {
        match client.receive().unwrap() {
            ServerMessage::Reply(reply) if reply.id == 77 => return,
            ServerMessage::Goodbye { reason } => panic!("the engine closed: {reason}"),
            _ => continue,
        }
    }
}

fn cause(incident: &IncidentView) -> String {
    format!(
        "{}\n{}",
        incident.cause.clone().unwrap_or_default(),
        incident.evidence.join("\n")
    )
}

#[test]
fn a_probe_blocked_on_a_locked_table_delays_no_request_and_its_count_arrives_later() {
    let Some(pg) = start_or_skip("a_probe_blocked_on_a_locked_table_delays_no_request") else {
        return;
    };
    // Long enough that the probe is still blocked whenever the test looks: the test
    // lets go of the lock itself.
    let served = serve(&pg, "60s");
    let mut holder = pg.client();
    let lock = change_then_lock(&mut holder);
    let mut watcher = pg.client();
    let mut client = connect(&served);

    // The divide breaks whatever the data: the incident opens from the observation
    // while the count of values that do not convert waits for the lock.
    let mut opened = None;
    until("the incident opens", &served, || {
        opened = incident(&mut client);
        opened.is_some()
    });
    let opened = opened.unwrap();
    assert!(
        cause(&opened).contains("stg_payments"),
        "{}",
        cause(&opened)
    );
    // Opened before the probe is answered: the probe (on its own thread, maybe not at
    // the server yet when the incident showed) waits for the lock after it.
    until("the probe waits for the lock", &served, || {
        probes_waiting(&mut watcher) > 0
    });
    assert!(
        !cause(&opened).contains("payments_int"),
        "{}",
        cause(&opened)
    );

    // A console's request is answered while the probe is still blocked.
    answered(&mut client);
    assert!(
        probes_waiting(&mut watcher) > 0,
        "the request was answered before the probe returned"
    );

    // Let go: the count comes back and the cause is re-stated with it.
    lock.rollback().unwrap();
    let mut restated = None;
    until("the cause is re-stated with the count", &served, || {
        restated = incident(&mut client).filter(|i| cause(i).contains("payments_int"));
        restated.is_some()
    });
    let restated = cause(&restated.unwrap());
    assert!(
        restated.contains("2 values of raw.payments.amount do not convert to integer"),
        "{restated}"
    );
}

#[test]
fn a_probe_that_times_out_restates_the_cause_as_evidence_unavailable() {
    let Some(pg) = start_or_skip("a_probe_that_times_out_restates_the_cause") else {
        return;
    };
    let served = serve(&pg, "2s");
    let mut holder = pg.client();
    let _lock = change_then_lock(&mut holder);
    let mut client = connect(&served);
    let mut opened = None;
    until("the incident opens", &served, || {
        opened = incident(&mut client);
        opened.is_some()
    });
    let mut restated = None;
    until(
        "the cause says the evidence is unavailable",
        &served,
        || {
            restated = incident(&mut client).filter(|i| cause(i).contains("evidence unavailable"));
            restated.is_some()
        },
    );
    let restated = cause(&restated.unwrap());
    // Which warehouse, and why: the lock is still held.
    assert!(
        restated.contains("evidence unavailable: pg: "),
        "{restated}"
    );
    assert!(restated.contains("payments_int"), "{restated}");
}
