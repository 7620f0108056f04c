//! The Airflow orchestrator against a real Apache Airflow 3 (tests/support/airflow.rs:
//! API server, scheduler and DAG processor from the venv `.ci/airflow.sh` builds, on
//! 127.0.0.1), built by `from_config` from a config file as `dataward serve` builds it.
//! The DAGs are the test's own; their task writes a row to the test's warehouse (a
//! SQLite file) saying which run it was and what dataward asked. One Airflow serves the
//! whole file (starting one takes about ten seconds); each test has DAGs of its own, so
//! the tests can run side by side. Without the venv these tests skip, unless
//! DATAWARD_REQUIRE_ALL=1.
//!
//! What a real Airflow cannot be made to do on cue (answer 500, 429, expire a token)
//! is tested against the recording stand-in in tests/support/http.rs, at the end.

#[path = "support/airflow.rs"]
mod airflow_server;
#[path = "support/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airflow_server::{AirflowServer, DagFile, USER};
use dataward::config::Config;
use dataward::effects::orchestrator::airflow::{run_id, Airflow, ApiVersion, Retry, Settings};
use dataward::effects::orchestrator::{self, Orchestrator, PipelineState, RunStatus, Schedule};
use dataward::notify::relay::Backoff;
use http::{Behaviour, FakeApi, Recorded, AIRFLOW_USER};
use serde_json::json;

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
const DAG_TASK_FAILS: &str = "dw_task_fails";
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


for dag_id in ["{DAG_FAILS}", "{DAG_TASK_FAILS}"]:
    with DAG(dag_id, schedule=None, start_date=datetime(2024, 1, 1), catchup=False,
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
                dag_ids: [
                    DAG_WRITES,
                    DAG_FAILS,
                    DAG_TASK_FAILS,
                    DAG_HELD,
                    DAG_ALREADY_PAUSED,
                ]
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
fn from_config_file(
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
             \"job.task_fails\" = \"{DAG_TASK_FAILS}\"\n\
             \"job.held\" = \"{DAG_HELD}\"\n\"job.already_paused\" = \"{DAG_ALREADY_PAUSED}\"\n"
        ),
    )
    .unwrap();
    let config = Config::load(&path).unwrap();
    let built = orchestrator::from_config(&config, dir.path())
        .unwrap()
        .unwrap();
    (built, dir)
}

fn real(shared: &Shared, var: &str) -> (Box<dyn Orchestrator>, tempfile::TempDir) {
    from_config_file(&shared.server.base_url, var, &shared.server.password, "10s")
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

    assert_eq!(
        airflow.pause("job.held").unwrap(),
        None,
        "Airflow pauses it alone: nothing for people to do"
    );
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
    assert_eq!(view.state, PipelineState::Paused);
    assert_eq!(view.last_status, RunStatus::NeverRun);

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
        .queue_run(
            "job.orders",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            by,
            key,
        )
        .unwrap();
    assert!(!already);
    assert_eq!(id, run_id(key));
    // The same key again (a retry after a lost answer, an intent re-issued after a
    // crash): Airflow answers 409, and it is the same run, already made.
    let (again, already) = airflow
        .queue_run(
            "job.orders",
            "2026-12-01T10:00:05Z".parse().unwrap(),
            by,
            key,
        )
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
    assert!(record.requested_at.is_some());
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
    assert_eq!(view.state, PipelineState::Scheduled);
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
    let actor = "bob (uid 1001)";
    let (id, already) = airflow
        .queue_command(
            "job.orders",
            command,
            "2026-12-01T10:00:00Z".parse().unwrap(),
            actor,
            key,
        )
        .unwrap();
    assert!(!already);
    assert_eq!(id, run_id(key));
    let at_airflow = shared.server.dag_run(DAG_WRITES, &id);
    assert_eq!(at_airflow["conf"]["dataward"]["by"], "bob (uid 1001)");
    assert!(at_airflow["note"]
        .as_str()
        .unwrap()
        .starts_with("Queued by dataward for bob (uid 1001)"));
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
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "bob",
            "other",
        )
        .unwrap_err();
    assert!(format!("{refused:#}").contains("an Airflow DAG runs only dbt commands"));
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
            "2026-12-01T10:00:00Z".parse().unwrap(),
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
    assert_eq!(view.last_status, RunStatus::Failed);
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
    let (airflow, _dir) = from_config_file(
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
fn reach_signs_in_and_lists_a_dag_as_doctor_asks() {
    let Some(shared) = shared("reach_signs_in_and_lists_a_dag_as_doctor_asks") else {
        return;
    };
    let (airflow, _dir) = real(shared, "DW_AIRFLOW_PASSWORD_REACH");
    airflow.reach().unwrap();
    let (airflow, _dir) = from_config_file(
        &shared.server.base_url,
        "DW_AIRFLOW_PASSWORD_REACH_WRONG",
        "not-the-password",
        "10s",
    );
    let err = format!("{:#}", airflow.reach().unwrap_err());
    assert!(
        err.contains("Airflow POST /auth/token answered 401"),
        "{err}"
    );
}

#[test]
fn an_airflow_that_is_down_is_an_error_naming_the_endpoint_not_a_hang() {
    // Nothing listens on this port: what a stopped Airflow looks like from here.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (airflow, _dir) = from_config_file(
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
    let (airflow, _dir) = from_config_file(
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

// ---- against the recording stand-in ------------------------------------------------

const STAND_IN_PASSWORD: &str = "stand-in-Pa55word";
const STAND_IN_DAG: &str = "orders_hourly";

/// The stand-in with one DAG, and the orchestrator pointed at it with quick retries;
/// the password is in `var` (one per test).
fn stand_in(var: &str, api: ApiVersion) -> (FakeApi, Airflow) {
    let fake = FakeApi::start(http::Api::Airflow, STAND_IN_PASSWORD);
    fake.airflow_add_dag(STAND_IN_DAG, false);
    std::env::set_var(var, STAND_IN_PASSWORD);
    let airflow = Airflow::new(Settings {
        base_url: fake.base_url(),
        api,
        username: AIRFLOW_USER.to_string(),
        password_env: var.to_string(),
        dags: [("job.orders".to_string(), STAND_IN_DAG.to_string())].into(),
        timeout: Duration::from_secs(2),
    })
    .unwrap()
    .with_retry(Retry {
        attempts: 3,
        backoff: Backoff {
            base: Duration::from_millis(10),
            cap: Duration::from_millis(40),
        },
        max_wait: Duration::from_millis(50),
    });
    (fake, airflow)
}

fn calls(fake: &FakeApi) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r: &Recorded| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn stand_in_500_and_429_are_retried_and_the_run_is_made_once() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_RETRY", ApiVersion::V2);
    airflow.schedule("job.orders").unwrap(); // signed in
    fake.plan([
        Behaviour::Status(500, None, "{\"detail\":\"Internal Server Error\"}".into()),
        Behaviour::Status(429, Some("1".into()), "{\"detail\":\"slow down\"}".into()),
    ]);
    let (id, already) = airflow
        .queue_run(
            "job.orders",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "alice",
            "dataward-INC-1-2",
        )
        .unwrap();
    assert!(!already);
    assert_eq!(fake.airflow_runs().len(), 1);
    let posts = calls(&fake)
        .into_iter()
        .filter(|c| c.starts_with("POST /api/v2"))
        .count();
    assert_eq!(posts, 3, "{:?}", calls(&fake));
    let body = fake.requests().last().unwrap().json();
    assert_eq!(body["dag_run_id"], id);
    assert!(
        body.get("logical_date").is_some_and(|d| d.is_null()),
        "{body}"
    );
    assert_eq!(
        body["conf"],
        json!({"dataward": {"key": "dataward-INC-1-2", "by": "alice"}})
    );
    assert!(body["note"].as_str().unwrap().contains("alice"));

    // Always failing: the error names the endpoint, the answer and the tries.
    fake.plan((0..3).map(|_| Behaviour::Status(503, None, "{\"detail\":\"down\"}".into())));
    let err = format!("{:#}", airflow.schedule("job.orders").unwrap_err());
    assert!(
        err.contains("Airflow GET /api/v2/dags/orders_hourly answered 503"),
        "{err}"
    );
    assert!(err.contains("after 3 tries"), "{err}");
}

#[test]
fn stand_in_a_trigger_whose_answer_was_lost_finds_its_run() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_LOST", ApiVersion::V2);
    airflow.schedule("job.orders").unwrap();
    // Airflow makes the run, and the answer never comes: the client times out, tries
    // again, gets 409, and reads the run back.
    fake.plan([Behaviour::Hold]);
    let (id, already) = airflow
        .queue_run(
            "job.orders",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "alice",
            "dataward-INC-3-9",
        )
        .unwrap();
    fake.release();
    assert_eq!(id, run_id("dataward-INC-3-9"));
    assert!(already, "the first try made it");
    assert_eq!(fake.airflow_runs().len(), 1);
    assert!(
        calls(&fake).contains(&format!("GET /api/v2/dags/{STAND_IN_DAG}/dagRuns/{id}")),
        "{:?}",
        calls(&fake)
    );
}

#[test]
fn stand_in_a_run_id_someone_else_holds_is_not_taken_as_ours() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_TAKEN", ApiVersion::V2);
    fake.airflow_put_run(json!({
        "dag_run_id": run_id("dataward-INC-4-1"), "dag_id": STAND_IN_DAG, "state": "success",
        "conf": {"dataward": {"key": "some other key"}},
    }));
    let err = format!(
        "{:#}",
        airflow
            .queue_run(
                "job.orders",
                "2026-12-01T10:00:00Z".parse().unwrap(),
                "alice",
                "dataward-INC-4-1"
            )
            .unwrap_err()
    );
    assert!(err.contains("dataward did not make"), "{err}");
}

#[test]
fn stand_in_an_expired_or_unknown_token_is_renewed_once() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_TOKEN", ApiVersion::V2);
    airflow.schedule("job.orders").unwrap();
    fake.airflow_expire_tokens();
    airflow.pause("job.orders").unwrap();
    assert_eq!(fake.airflow_dag(STAND_IN_DAG)["is_paused"], true);
    // Airflow restarted with a new JWT secret: the token is "invalid" (403), not expired.
    fake.airflow_forget_tokens();
    airflow
        .restore(
            "job.orders",
            &Schedule {
                paused: false,
                saved: serde_json::Value::Null,
            },
        )
        .unwrap();
    assert_eq!(fake.airflow_dag(STAND_IN_DAG)["is_paused"], false);
    assert_eq!(
        calls(&fake),
        [
            "POST /auth/token".to_string(),
            format!("GET /api/v2/dags/{STAND_IN_DAG}"),
            format!("PATCH /api/v2/dags/{STAND_IN_DAG}?update_mask=is_paused"),
            "POST /auth/token".to_string(),
            format!("PATCH /api/v2/dags/{STAND_IN_DAG}?update_mask=is_paused"),
            format!("GET /api/v2/dags/{STAND_IN_DAG}"),
            "POST /auth/token".to_string(),
            format!("GET /api/v2/dags/{STAND_IN_DAG}"),
            format!("PATCH /api/v2/dags/{STAND_IN_DAG}?update_mask=is_paused"),
        ]
    );
    for r in fake
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/api/"))
    {
        assert!(r.headers["authorization"].starts_with("Bearer tok-"));
    }
    let sign_in = fake.requests()[0].json();
    assert_eq!(
        sign_in,
        json!({"username": AIRFLOW_USER, "password": STAND_IN_PASSWORD})
    );
}

#[test]
fn stand_in_a_refused_password_is_not_retried_and_never_shown() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_BAD", ApiVersion::V2);
    std::env::set_var("DW_AIRFLOW_STAND_IN_BAD", "WrongWrong-pass");
    let err = format!("{:#}", airflow.pause("job.orders").unwrap_err());
    assert!(
        err.contains("Airflow POST /auth/token answered 401"),
        "{err}"
    );
    assert!(err.contains("Invalid credentials"), "{err}");
    assert!(!err.contains("WrongWrong"), "{err}");
    assert_eq!(fake.requests().len(), 1, "a 401 is not retried");

    std::env::remove_var("DW_AIRFLOW_STAND_IN_BAD");
    let err = format!("{:#}", airflow.pause("job.orders").unwrap_err());
    assert!(err.contains("DW_AIRFLOW_STAND_IN_BAD is not set"), "{err}");
}

#[test]
fn stand_in_run_states_read_as_the_engine_reads_them() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_STATES", ApiVersion::V2);
    let (id, _) = airflow
        .queue_run(
            "job.orders",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "alice",
            "k-1",
        )
        .unwrap();
    let status = |airflow: &Airflow| airflow.run("job.orders", &id).unwrap().unwrap().status;
    assert_eq!(status(&airflow), "queued");
    assert_eq!(
        airflow.pipelines().unwrap()[0].state,
        PipelineState::Running
    );
    fake.airflow_set_run_state(&id, "running");
    assert_eq!(status(&airflow), "queued", "still in flight");
    fake.airflow_set_run_state(&id, "success");
    assert_eq!(status(&airflow), "success");
    let bar = &airflow.pipelines().unwrap()[0];
    assert_eq!(
        (bar.state.as_str(), bar.last_status.as_str()),
        ("scheduled", "success")
    );
    fake.airflow_set_run_state(&id, "failed");
    assert_eq!(status(&airflow), "failed");
    assert_eq!(airflow.run("job.orders", "dataward__nope").unwrap(), None);
}

#[test]
fn stand_in_v1_speaks_airflow_2_basic_auth_update_mask_and_dated_runs() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_V1", ApiVersion::V1);
    let before = airflow.schedule("job.orders").unwrap();
    airflow.pause("job.orders").unwrap();
    assert_eq!(fake.airflow_dag(STAND_IN_DAG)["is_paused"], true);
    airflow.restore("job.orders", &before).unwrap();
    assert_eq!(fake.airflow_dag(STAND_IN_DAG)["is_paused"], false);
    let (id, already) = airflow
        .queue_command(
            "job.orders",
            "dbt build --select orders+",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "bob",
            "prop-3",
        )
        .unwrap();
    assert!(!already);
    let (again, already) = airflow
        .queue_command(
            "job.orders",
            "dbt build --select orders+",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "bob",
            "prop-3",
        )
        .unwrap();
    assert_eq!((again.as_str(), already), (id.as_str(), true));
    let record = airflow.run("job.orders", &id).unwrap().unwrap();
    assert_eq!(
        record.link.unwrap(),
        format!(
            "{}/dags/{STAND_IN_DAG}/grid?dag_run_id={}",
            fake.base_url(),
            id
        )
    );
    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.path.starts_with("/api/v1/")));
    for r in &requests {
        assert!(r.headers["authorization"].starts_with("Basic "), "{r:?}");
    }
    let patch = requests.iter().find(|r| r.method == "PATCH").unwrap();
    assert_eq!(
        patch.path,
        format!("/api/v1/dags/{STAND_IN_DAG}?update_mask=is_paused")
    );
    let post = requests.iter().find(|r| r.method == "POST").unwrap().json();
    assert!(post.get("logical_date").is_none(), "{post}");
    assert_eq!(
        post["conf"]["dataward"]["command"],
        "dbt build --select orders+"
    );
}

#[test]
fn stand_in_restore_puts_is_paused_back_exactly_as_it_was_read() {
    let (fake, airflow) = stand_in("DW_AIRFLOW_STAND_IN_EXACT", ApiVersion::V2);
    fake.airflow_add_dag(STAND_IN_DAG, true);
    let before = airflow.schedule("job.orders").unwrap();
    assert!(before.paused);
    airflow.pause("job.orders").unwrap();
    // Someone unpauses it while the hold stands; the undo puts back what was read.
    fake.airflow_add_dag(STAND_IN_DAG, false);
    airflow.restore("job.orders", &before).unwrap();
    assert_eq!(fake.airflow_dag(STAND_IN_DAG)["is_paused"], true);
    // Already as it was: read, and nothing changed.
    let patches = |fake: &FakeApi| {
        calls(fake)
            .iter()
            .filter(|c| c.starts_with("PATCH"))
            .count()
    };
    let before_patches = patches(&fake);
    airflow.restore("job.orders", &before).unwrap();
    assert_eq!(patches(&fake), before_patches);
}

/// A DAG whose task failed, with nothing wrong in any data (a DAG of its own: the
/// others' runs must not be its last): the pipelines bar carries
/// the task's error from its log, and an engine reading that bar opens one incident
/// whose cause is that error, however often it reads it and after a restart.
#[test]
fn a_failed_task_opens_one_incident_with_the_error_its_log_ends_on() {
    let test = "a_failed_task_opens_one_incident_with_the_error_its_log_ends_on";
    let Some(shared) = shared(test) else {
        return;
    };
    let var = "DW_AIRFLOW_PASSWORD_FAILED_TASK";
    let (airflow, dir) = real(shared, var);
    let (id, _) = airflow
        .queue_run(
            "job.task_fails",
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "carol",
            "dataward-failed-task-1",
        )
        .unwrap();
    assert_eq!(
        finished(airflow.as_ref(), "job.task_fails", &id, shared),
        "failed"
    );
    let view = airflow
        .pipelines()
        .unwrap()
        .into_iter()
        .find(|p| p.name == DAG_TASK_FAILS)
        .unwrap();
    assert_eq!(
        view.last_failure.as_deref(),
        Some("task broken failed: RuntimeError: the load broke, as the test asked"),
        "{}",
        shared.server.all_logs()
    );

    let engine = |dir: &Path| {
        use dataward::approve::Actor;
        let config = Config::load(&dir.join("dataward.toml")).unwrap();
        let orchestrator = orchestrator::from_config(&config, dir).unwrap();
        let state = dataward::store::open(&dir.join("dataward.db")).unwrap();
        dataward::engine::Engine::new(config, state, orchestrator, &Actor::current()).unwrap()
    };
    let now = chrono::Utc::now().naive_utc();
    let mut first = engine(dir.path());
    first.tick(now).unwrap();
    first.tick(now + chrono::TimeDelta::minutes(5)).unwrap();
    let failed: Vec<_> = first
        .snapshot(false)
        .incidents
        .into_iter()
        .filter(|i| i.table == DAG_TASK_FAILS)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let cause = failed[0].cause.clone().unwrap_or_default();
    assert!(
        cause.starts_with(&format!("{DAG_TASK_FAILS} failed at "))
            && cause.ends_with(
                "(the orchestrator): task broken failed: RuntimeError: the load broke, as the test asked"
            ),
        "{cause}"
    );
    drop(first);
    let mut again = engine(dir.path());
    again.tick(now + chrono::TimeDelta::minutes(10)).unwrap();
    let opened = again
        .snapshot(false)
        .incidents
        .into_iter()
        .filter(|i| i.table == DAG_TASK_FAILS)
        .count();
    assert_eq!(opened, 1);
}
