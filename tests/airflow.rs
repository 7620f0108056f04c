//! The Airflow orchestrator against a real Apache Airflow 3 (tests/support/airflow.rs:
//! API server, scheduler and DAG processor from the venv `.ci/airflow.sh` builds, on
//! 127.0.0.1), built by `from_config` from a config file as `dataward serve` builds it.
//! The DAGs are the test's own; their task writes a row to the test's warehouse (a
//! SQLite file) saying which run it was and what dataward asked. One Airflow serves the
//! whole file (starting one takes about ten seconds); each test has DAGs of its own, so
//! the tests can run side by side. Without the venv these tests skip, unless
//! DATAWARD_REQUIRE_ALL=1.

#[path = "support/airflow.rs"]
mod airflow_server;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airflow_server::{AirflowServer, DagFile, USER};
use dataward::config::Config;
use dataward::engine::orchestrator::airflow::run_id;
use dataward::engine::orchestrator::next::{from_config_next, Orchestrator, Schedule};

/// One Airflow for every test in this file, with the warehouse its DAGs write to.
struct Shared {
    server: AirflowServer,
    warehouse: PathBuf,
}

static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();

/// The DAGs, by the test that uses each. Runs of a paused DAG are never started, so
/// the pause test has a DAG of its own.
const DAG_WRITES: &str = "dw_orders";
const DAG_FAILS: &str = "dw_fails";
const DAG_HELD: &str = "dw_held";
const DAG_ALREADY_PAUSED: &str = "dw_already_paused";

fn dag_source(warehouse: &Path) -> String {
    format!(
        r#"import sqlite3
from datetime import datetime

from airflow.sdk import DAG, task

WAREHOUSE = {warehouse:?}


def load(context):
    """What the job does: one row saying which run it was and what dataward asked."""
    asked = (context["dag_run"].conf or {{}}).get("dataward") or {{}}
    con = sqlite3.connect(WAREHOUSE, timeout=30)
    with con:
        con.execute(
            "INSERT INTO loads (dag_id, run_id, run_key, command) VALUES (?, ?, ?, ?)",
            (context["dag"].dag_id, context["run_id"], asked.get("key"), asked.get("command")),
        )
    con.close()


for dag_id, paused in [("{DAG_WRITES}", False), ("{DAG_HELD}", False), ("{DAG_ALREADY_PAUSED}", True)]:
    with DAG(dag_id, schedule=None, start_date=datetime(2024, 1, 1), catchup=False,
             is_paused_upon_creation=paused):

        @task
        def write(**context):
            load(context)

        write()


with DAG("{DAG_FAILS}", schedule=None, start_date=datetime(2024, 1, 1), catchup=False,
         is_paused_upon_creation=False):

    @task(retries=0)
    def broken(**context):
        raise RuntimeError("the load broke, as the test asked")

    broken()
"#
    )
}

/// The shared Airflow, started on first use; `None` when this machine has no venv.
fn shared(test: &str) -> Option<&'static Shared> {
    if !airflow_server::available(test) {
        return None;
    }
    let shared = SHARED.get_or_init(|| {
        let started = Instant::now();
        let mut warehouse = PathBuf::new();
        let server = AirflowServer::start(|home| {
            // The test's warehouse, in Airflow's home (removed with it).
            warehouse = home.join("warehouse.db");
            rusqlite::Connection::open(&warehouse)
                .and_then(|c| {
                    c.execute_batch(
                        "PRAGMA journal_mode=WAL;
                         CREATE TABLE loads (dag_id TEXT, run_id TEXT, run_key TEXT, command TEXT);",
                    )
                })
                .map_err(|e| e.to_string())?;
            Ok(vec![DagFile {
                dag_ids: [DAG_WRITES, DAG_FAILS, DAG_HELD, DAG_ALREADY_PAUSED]
                    .map(String::from)
                    .to_vec(),
                file_name: "dataward_test_dags.py".into(),
                source: dag_source(&warehouse),
            }])
        })?;
        eprintln!(
            "tests/airflow.rs: Airflow ready on {} in {:.1?} ({})",
            server.base_url,
            started.elapsed(),
            server.startup
        );
        Ok(Shared { server, warehouse })
    });
    match shared {
        Ok(shared) => Some(shared),
        Err(e) => panic!("{test}: Airflow did not start: {e}"),
    }
}

/// The orchestrator as `dataward serve` builds it, from a config file naming the
/// password's variable (`var`, one per test: tests run side by side).
fn orchestrator(
    base_url: &str,
    var: &str,
    password: &str,
    timeout: &str,
) -> (Box<dyn Orchestrator>, tempfile::TempDir) {
    std::env::set_var(var, password);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dataward.toml");
    std::fs::write(
        &path,
        format!(
            "[orchestrator]\nkind = \"airflow\"\nbase_url = \"{base_url}\"\nusername = \"{USER}\"\n\
             password_env = \"{var}\"\ntimeout = \"{timeout}\"\n\n[orchestrator.jobs]\n\
             \"job.orders\" = \"{DAG_WRITES}\"\n\"job.fails\" = \"{DAG_FAILS}\"\n\
             \"job.held\" = \"{DAG_HELD}\"\n\"job.already_paused\" = \"{DAG_ALREADY_PAUSED}\"\n"
        ),
    )
    .unwrap();
    let config = Config::load(&path).unwrap();
    let built = from_config_next(&config, dir.path()).unwrap().unwrap();
    (built, dir)
}

fn real(shared: &Shared, var: &str) -> (Box<dyn Orchestrator>, tempfile::TempDir) {
    orchestrator(&shared.server.base_url, var, &shared.server.password, "10s")
}

/// Follows a run until it is no longer in flight.
fn finished(airflow: &dyn Orchestrator, job: &str, id: &str, shared: &Shared) -> String {
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let record = airflow.run(job, id).unwrap().expect("the run exists");
        if record.status != "queued" {
            return record.status;
        }
        if Instant::now() > deadline {
            panic!(
                "run {id} still {} after 150s\n{}",
                record.detail,
                shared.server.all_logs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn rows(warehouse: &Path, run: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let conn = rusqlite::Connection::open(warehouse).unwrap();
    let mut statement = conn
        .prepare("SELECT dag_id, run_key, command FROM loads WHERE run_id = ?1")
        .unwrap();
    statement
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .map(|(dag, key, command): (String, _, _)| {
            assert!(!dag.is_empty());
            (dag, key, command)
        })
        .collect()
}

#[test]
fn pause_is_seen_at_airflow_and_restore_puts_the_dag_back() {
    let Some(shared) = shared("pause_is_seen_at_airflow_and_restore_puts_the_dag_back") else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_PAUSE");
    let before = airflow.schedule("job.held").unwrap();
    assert_eq!(
        before,
        Schedule {
            paused: false,
            saved: serde_json::Value::Null
        }
    );

    airflow.pause("job.held").unwrap();
    assert_eq!(shared.server.dag(DAG_HELD)["is_paused"], true);
    assert!(airflow.schedule("job.held").unwrap().paused);
    // A retried pause (the engine restarted before it recorded the outcome) is one pause.
    airflow.pause("job.held").unwrap();
    assert_eq!(shared.server.dag(DAG_HELD)["is_paused"], true);
    let view = airflow
        .pipelines()
        .unwrap()
        .into_iter()
        .find(|p| p.name == DAG_HELD)
        .expect("the held DAG on the bar");
    assert_eq!(view.state, "paused");
    assert_eq!(view.last_status, "none");

    airflow.restore("job.held", &before).unwrap();
    assert_eq!(shared.server.dag(DAG_HELD)["is_paused"], false);
    assert!(!airflow.schedule("job.held").unwrap().paused);
}

#[test]
fn a_dag_that_was_already_paused_stays_paused_after_the_restore() {
    let Some(shared) = shared("a_dag_that_was_already_paused_stays_paused_after_the_restore")
    else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_ALREADY");
    let before = airflow.schedule("job.already_paused").unwrap();
    assert!(before.paused, "is_paused_upon_creation=True");
    airflow.pause("job.already_paused").unwrap();
    assert_eq!(shared.server.dag(DAG_ALREADY_PAUSED)["is_paused"], true);
    airflow.restore("job.already_paused", &before).unwrap();
    assert_eq!(shared.server.dag(DAG_ALREADY_PAUSED)["is_paused"], true);
}

#[test]
fn a_run_is_triggered_once_per_key_and_its_row_lands_in_the_warehouse() {
    let Some(shared) = shared("a_run_is_triggered_once_per_key_and_its_row_lands_in_the_warehouse")
    else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_RUN");
    let key = "dataward-INC-7-42";
    let by = "alice (uid 1000)";
    let (id, already) = airflow
        .queue_run("job.orders", "2026-12-01T10:00:00Z", by, key)
        .unwrap();
    assert!(!already);
    assert_eq!(id, run_id(key));
    // The same key again (a retry after a lost answer, an intent re-issued after a
    // crash): Airflow answers 409, and it is the same run, already made.
    let (again, already) = airflow
        .queue_run("job.orders", "2026-12-01T10:00:05Z", by, key)
        .unwrap();
    assert_eq!(again, id);
    assert!(already);

    let at_airflow = shared.server.dag_run(DAG_WRITES, &id);
    assert_eq!(at_airflow["conf"]["dataward"]["key"], key);
    assert_eq!(at_airflow["conf"]["dataward"]["by"], by);
    assert!(at_airflow["conf"]["dataward"].get("command").is_none());
    assert!(at_airflow["logical_date"].is_null());
    let note = at_airflow["note"].as_str().unwrap();
    assert!(note.contains(by) && note.contains(key), "{note}");

    assert_eq!(
        finished(airflow.as_ref(), "job.orders", &id, shared),
        "success"
    );
    let record = airflow.run("job.orders", &id).unwrap().unwrap();
    assert_eq!(record.id, id);
    assert_eq!(record.job, "job.orders");
    assert_eq!(
        record.link.as_deref(),
        Some(format!("{}/dags/{DAG_WRITES}/runs/{id}", shared.server.base_url).as_str())
    );
    assert!(!record.requested_at.is_empty());
    assert!(record.started_at.is_some() && record.finished_at.is_some());
    assert_eq!(
        rows(&shared.warehouse, &id),
        [(DAG_WRITES.to_string(), Some(key.to_string()), None)],
        "one run, one row"
    );
    let view = airflow
        .pipelines()
        .unwrap()
        .into_iter()
        .find(|p| p.name == DAG_WRITES)
        .unwrap();
    assert_eq!(view.state, "scheduled");
    assert!(view.last_run_at.is_some());
}

#[test]
fn a_backfill_hands_the_dag_its_exact_command() {
    let Some(shared) = shared("a_backfill_hands_the_dag_its_exact_command") else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_BACKFILL");
    let command =
        "dbt build --select fct_orders+ --event-time-start 2026-11-30 --event-time-end 2026-12-01";
    let key = "proposal 19/backfill";
    let (id, already) = airflow
        .queue_command(
            "job.orders",
            command,
            "2026-12-01T10:00:00Z",
            "bob (uid 1001)",
            key,
        )
        .unwrap();
    assert!(!already);
    assert_eq!(id, run_id(key));
    assert_eq!(
        finished(airflow.as_ref(), "job.orders", &id, shared),
        "success"
    );
    assert_eq!(
        rows(&shared.warehouse, &id),
        [(
            DAG_WRITES.to_string(),
            Some(key.to_string()),
            Some(command.to_string())
        )]
    );
    let refused = airflow
        .queue_command(
            "job.orders",
            "rm -rf /",
            "2026-12-01T10:00:00Z",
            "bob",
            "other",
        )
        .unwrap_err();
    assert!(format!("{refused:#}").contains("only asked to run dbt commands"));
}

#[test]
fn a_failing_dag_run_reads_back_failed() {
    let Some(shared) = shared("a_failing_dag_run_reads_back_failed") else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_FAILS");
    let (id, _) = airflow
        .queue_run(
            "job.fails",
            "2026-12-01T10:00:00Z",
            "carol",
            "dataward-INC-8-1",
        )
        .unwrap();
    assert_eq!(
        finished(airflow.as_ref(), "job.fails", &id, shared),
        "failed"
    );
    let record = airflow.run("job.fails", &id).unwrap().unwrap();
    assert!(record.detail.contains("failed"), "{}", record.detail);
    let view = airflow
        .pipelines()
        .unwrap()
        .into_iter()
        .find(|p| p.name == DAG_FAILS)
        .unwrap();
    assert_eq!(view.last_status, "failed");
}

#[test]
fn a_run_airflow_does_not_have_is_none_and_an_unmapped_job_is_named() {
    let Some(shared) = shared("a_run_airflow_does_not_have_is_none_and_an_unmapped_job_is_named")
    else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_NONE");
    assert_eq!(
        airflow.run("job.orders", "dataward__never-made").unwrap(),
        None
    );
    let err = format!("{:#}", airflow.pause("job.unknown").unwrap_err());
    assert!(err.contains("job.unknown is not mapped"), "{err}");
}

#[test]
fn a_wrong_password_is_an_error_naming_the_endpoint() {
    let Some(shared) = shared("a_wrong_password_is_an_error_naming_the_endpoint") else {
        return;
    };
    let (airflow, _dir) = orchestrator(
        &shared.server.base_url,
        "DW_AIRFLOW_PASSWORD_WRONG",
        "not-the-password",
        "10s",
    );
    let err = format!("{:#}", airflow.schedule("job.held").unwrap_err());
    assert!(
        err.contains("Airflow POST /auth/token answered 401"),
        "{err}"
    );
    assert!(
        err.contains(USER) && err.contains("DW_AIRFLOW_PASSWORD_WRONG"),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "{err}");
}

#[test]
fn an_airflow_that_is_down_is_an_error_naming_the_endpoint_not_a_hang() {
    // Nothing listens on this port: what a stopped Airflow looks like from here.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (airflow, _dir) = orchestrator(
        &format!("http://127.0.0.1:{port}"),
        "DW_AIRFLOW_PASSWORD_DOWN",
        "whatever",
        "2s",
    );
    let err = format!("{:#}", airflow.pause("job.held").unwrap_err());
    assert!(err.contains("Airflow POST /auth/token"), "{err}");
    assert!(err.contains("could not connect"), "{err}");
    assert!(err.contains("after 3 tries"), "{err}");

    // One that takes the connection and never answers: the timeout ends the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (airflow, _dir) = orchestrator(
        &format!("http://{}", silent.local_addr().unwrap()),
        "DW_AIRFLOW_PASSWORD_SILENT",
        "whatever",
        "1s",
    );
    let err = format!("{:#}", airflow.run("job.orders", "x").unwrap_err());
    assert!(err.contains("Airflow POST /auth/token"), "{err}");
    assert!(err.contains("timed out"), "{err}");
    drop(silent);
}

