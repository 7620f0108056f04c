//! The dbt Cloud orchestrator against a local stand-in of the Administrative API v2 on
//! 127.0.0.1 (tests/support/http.rs, `Api::DbtCloud`): it implements the documented
//! endpoints dataward uses (get and update a job, trigger a run, get a run, list runs)
//! and records every request. dbt Cloud itself cannot run here.

#[path = "support/http.rs"]
mod http;

use std::collections::BTreeMap;
use std::time::Duration;

use dataward::config::Config;
use dataward::effects::orchestrator::dbt_cloud::{DbtCloud, Retry, Settings};
use dataward::effects::orchestrator::{self, Orchestrator, PipelineState, RunStatus};
use dataward::notify::relay::Backoff;
use http::{Api, Behaviour, FakeApi, Recorded, DBT_ACCOUNT};
use serde_json::json;

const TOKEN: &str = "dbtc_Zx81kQ3vLmN0pRsT4uVw";
const JOB: &str = "job.hourly_orders";
const DBT_JOB: u64 = 1187;

/// A stand-in with one job, and the orchestrator pointed at it; the token is in the
/// environment variable `var` (one per test: tests run in parallel).
fn setup(var: &str, schedule: bool) -> (FakeApi, DbtCloud, tempfile::TempDir) {
    let api = FakeApi::start(Api::DbtCloud, TOKEN);
    api.dbt_add_job(DBT_JOB, "Hourly orders", schedule);
    std::env::set_var(var, TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let cloud = DbtCloud::new(Settings {
        base_url: api.base_url(),
        account_id: DBT_ACCOUNT,
        token_env: var.to_string(),
        jobs: BTreeMap::from([(JOB.to_string(), DBT_JOB)]),
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
    (api, cloud, dir)
}

fn calls(api: &FakeApi) -> Vec<String> {
    api.requests()
        .iter()
        .map(|r: &Recorded| format!("{} {}", r.method, r.path.split('?').next().unwrap()))
        .collect()
}

#[test]
fn pause_posts_the_whole_job_with_schedule_off_and_the_undo_turns_it_back_on() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_PAUSE", true);
    let before = cloud.schedule(JOB).unwrap();
    assert!(!before.paused);
    assert_eq!(before.saved["schedule"], true);
    assert_eq!(cloud.pause(JOB).unwrap(), None, "nothing for people to do");
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], false);
    let requests = api.requests();
    assert_eq!(
        calls(&api),
        [
            "GET /api/v2/accounts/43/jobs/1187/",
            "GET /api/v2/accounts/43/jobs/1187/",
            "POST /api/v2/accounts/43/jobs/1187/"
        ]
    );
    for r in &requests {
        assert_eq!(r.headers["authorization"], format!("Token {TOKEN}"));
    }
    let posted = requests[2].json();
    assert_eq!(posted["name"], "Hourly orders");
    assert_eq!(
        posted["schedule"]["cron"], "15 * * * *",
        "the cron is left as it was"
    );
    assert_eq!(posted["triggers"]["github_webhook"], false);
    assert!(cloud.schedule(JOB).unwrap().paused);

    // A second pause (a retry) sends no update.
    let asked = api.requests().len();
    cloud.pause(JOB).unwrap();
    assert!(!calls(&api)[asked..].iter().any(|c| c.starts_with("POST")));

    cloud.restore(JOB, &before).unwrap();
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], true);
    // A second undo (a retry) changes nothing.
    let asked = api.requests().len();
    cloud.restore(JOB, &before).unwrap();
    assert!(
        !calls(&api)[asked..].iter().any(|c| c.starts_with("POST")),
        "nothing to put back, nothing sent"
    );
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], true);
}

#[test]
fn a_job_already_paused_stays_paused_after_the_undo() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_ALREADY", false);
    let before = cloud.schedule(JOB).unwrap();
    assert!(before.paused);
    cloud.pause(JOB).unwrap();
    cloud.restore(JOB, &before).unwrap();
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], false);
    assert!(
        !calls(&api).iter().any(|c| c.starts_with("POST")),
        "{:?}",
        calls(&api)
    );
}

#[test]
fn the_undo_puts_back_only_the_schedule_and_keeps_what_others_changed() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_OTHERS", true);
    let before = cloud.schedule(JOB).unwrap();
    cloud.pause(JOB).unwrap();
    // Meanwhile someone turns on the merge trigger in dbt Cloud.
    let mut job = api.dbt_job(DBT_JOB);
    job["triggers"]["on_merge"] = json!(true);
    api.dbt_put_job(job);
    cloud.restore(JOB, &before).unwrap();
    let triggers = &api.dbt_job(DBT_JOB)["triggers"];
    assert_eq!(triggers["schedule"], true);
    assert_eq!(triggers["on_merge"], true);
}

#[test]
fn a_backfill_is_queued_once_with_its_exact_command_as_steps_override() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_QUEUE", true);
    let command = "dbt build --select fct_deliveries+ --event-time-start 2026-11-21 --event-time-end 2026-11-22";
    let (run, again) = cloud
        .queue_command(
            JOB,
            command,
            "2026-11-24T14:52:00Z".parse().unwrap(),
            "alice (uid 1001)",
            "INC-0002-P1",
        )
        .unwrap();
    assert!(!again);
    let runs = api.dbt_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["id"].to_string(), run);
    assert_eq!(runs[0]["trigger"]["steps_override"], json!([command]));
    let cause = runs[0]["trigger"]["cause"].as_str().unwrap();
    assert!(cause.starts_with("dataward [INC-0002-P1]"), "{cause}");
    assert!(cause.contains("alice"), "{cause}");

    // The same key again (an intent re-issued after a restart): the same run.
    assert_eq!(
        cloud
            .queue_command(
                JOB,
                command,
                "2026-11-24T14:53:00Z".parse().unwrap(),
                "alice (uid 1001)",
                "INC-0002-P1"
            )
            .unwrap(),
        (run.clone(), true)
    );
    // A plain run under another key is a second run, without steps_override.
    let (second, _) = cloud
        .queue_run(
            JOB,
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "bob",
            "INC-0003-run-1",
        )
        .unwrap();
    assert_ne!(second, run);
    let runs = api.dbt_runs();
    assert_eq!(runs.len(), 2);
    assert!(runs[1]["trigger"]["steps_override"].is_null());
    assert_eq!(
        calls(&api).iter().filter(|c| c.ends_with("/run/")).count(),
        2
    );

    // A command that is not dbt is never sent.
    let err = cloud
        .queue_command(
            JOB,
            "rm -rf target",
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "INC-0004-P1",
        )
        .unwrap_err();
    assert!(format!("{err:#}").contains("only dbt commands"), "{err:#}");
    // A job the config does not map is named.
    let err = cloud
        .queue_run(
            "job.unknown",
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "k",
        )
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("[orchestrator.jobs]"),
        "{err:#}"
    );
}

#[test]
fn a_run_is_read_back_through_queued_running_success_and_error() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_READ", true);
    let (run, _) = cloud
        .queue_run(
            JOB,
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "INC-0001-run-1",
        )
        .unwrap();
    let record = cloud.run(JOB, &run).unwrap().unwrap();
    assert_eq!(record.status, "queued");
    assert_eq!(record.job, JOB);
    let link = record.link.clone().unwrap();
    assert!(link.contains(&format!("/runs/{run}/")), "{link}");
    assert_eq!(record.started_at, None);

    api.dbt_set_run_status(run.parse().unwrap(), 3, None);
    let record = cloud.run(JOB, &run).unwrap().unwrap();
    assert_eq!(record.status, "queued", "in flight");
    assert!(record.detail.contains("running"), "{}", record.detail);
    assert!(record.started_at.is_some());

    api.dbt_set_run_status(run.parse().unwrap(), 10, None);
    let record = cloud.run(JOB, &run).unwrap().unwrap();
    assert_eq!(record.status, "success");
    assert!(record.finished_at.is_some());

    let (failed, _) = cloud
        .queue_run(
            JOB,
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "INC-0001-run-2",
        )
        .unwrap();
    api.dbt_set_run_status(
        failed.parse().unwrap(),
        20,
        Some("Database Error in model fct_orders"),
    );
    let record = cloud.run(JOB, &failed).unwrap().unwrap();
    assert_eq!(record.status, "failed");
    assert!(
        record.detail.contains("Database Error in model fct_orders"),
        "{}",
        record.detail
    );

    assert_eq!(
        cloud.run(JOB, "123").unwrap(),
        None,
        "a run dbt Cloud does not know"
    );

    // The pipelines bar: the job by its dbt Cloud name, its schedule and last run.
    let bar = cloud.pipelines().unwrap();
    assert_eq!(bar.len(), 1);
    assert_eq!(bar[0].name, "Hourly orders");
    assert_eq!(bar[0].state, PipelineState::Scheduled);
    assert_eq!(bar[0].last_status, RunStatus::Failed);
    // dbt Cloud writes `2026-11-24 14:58:40.000000+00:00`: read as the instant it is.
    assert_eq!(
        bar[0].last_run_at,
        Some("2026-11-24T14:58:40Z".parse().unwrap())
    );
    cloud.pause(JOB).unwrap();
    assert_eq!(cloud.pipelines().unwrap()[0].state, PipelineState::Paused);
}

#[test]
fn a_429_is_waited_out_and_the_call_goes_through() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_429", true);
    api.plan([Behaviour::Status(
        429,
        Some("0".into()),
        json!({"status": {"code": 429, "user_message": "Too many requests"}}).to_string(),
    )]);
    cloud.pause(JOB).unwrap();
    assert_eq!(
        calls(&api),
        [
            "GET /api/v2/accounts/43/jobs/1187/",
            "GET /api/v2/accounts/43/jobs/1187/",
            "POST /api/v2/accounts/43/jobs/1187/"
        ]
    );
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], false);
}

#[test]
fn repeated_500s_give_up_naming_the_endpoint_and_the_answer() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_500", true);
    let (run, _) = cloud
        .queue_run(
            JOB,
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "INC-0001-run-1",
        )
        .unwrap();
    let before = api.requests().len();
    let boom = || Behaviour::Status(500, None, "{\"detail\": \"upstream exploded\"}".into());
    api.plan([boom(), boom(), boom()]);
    let err = format!("{:#}", cloud.run(JOB, &run).unwrap_err());
    assert!(
        err.contains(&format!(
            "dbt Cloud GET /api/v2/accounts/43/runs/{run}/ answered 500"
        )),
        "{err}"
    );
    assert!(err.contains("upstream exploded"), "{err}");
    assert!(err.contains("after 3 tries"), "{err}");
    assert_eq!(api.requests().len() - before, 3);

    // Two 500s then the answer: read.
    api.plan([boom(), boom()]);
    assert_eq!(cloud.run(JOB, &run).unwrap().unwrap().status, "queued");
}

#[test]
fn a_trigger_whose_answer_was_lost_is_found_by_its_cause_not_run_twice() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_LOST", true);
    // The marker search goes through; the POST makes the run, and its answer is held
    // past the client's timeout (2s here).
    api.plan([Behaviour::Slow(Duration::ZERO), Behaviour::Hold]);
    let (run, again) = cloud
        .queue_run(
            JOB,
            "2026-11-24T15:00:00Z".parse().unwrap(),
            "alice",
            "INC-0009-run-1",
        )
        .unwrap();
    assert!(again, "found by its marker after the timeout");
    assert_eq!(api.dbt_runs().len(), 1, "one run, not two");
    assert_eq!(api.dbt_runs()[0]["id"].to_string(), run);
    assert_eq!(
        calls(&api).iter().filter(|c| c.ends_with("/run/")).count(),
        1
    );
    api.release();
}

#[test]
fn a_bad_token_is_named_without_showing_it() {
    let (api, cloud, _dir) = setup("DW_DBT_TOKEN_BAD", true);
    std::env::set_var("DW_DBT_TOKEN_BAD", "dbtc_WrongWrongWrong123456");
    let err = format!("{:#}", cloud.pause(JOB).unwrap_err());
    assert!(
        err.contains("dbt Cloud GET /api/v2/accounts/43/jobs/1187/ answered 401"),
        "{err}"
    );
    assert!(
        err.contains("the token in DW_DBT_TOKEN_BAD was refused"),
        "{err}"
    );
    assert!(err.contains("Invalid token"), "{err}");
    assert!(!err.contains("WrongWrong"), "{err}");
    assert_eq!(api.requests().len(), 1, "a 401 is not retried");

    std::env::remove_var("DW_DBT_TOKEN_BAD");
    let err = format!("{:#}", cloud.run(JOB, "1").unwrap_err());
    assert!(err.contains("DW_DBT_TOKEN_BAD is not set"), "{err}");
}

#[test]
fn the_config_builds_it_and_a_server_that_is_down_is_an_error_naming_the_endpoint() {
    let api = FakeApi::start(Api::DbtCloud, TOKEN);
    api.dbt_add_job(DBT_JOB, "Hourly orders", true);
    std::env::set_var("DW_DBT_TOKEN_CONFIG", TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = {DBT_ACCOUNT}\ntoken_env = \"DW_DBT_TOKEN_CONFIG\"\n\
         base_url = \"{}\"\ntimeout = \"2s\"\n\n[orchestrator.jobs]\n\"{JOB}\" = {DBT_JOB}\n",
        api.base_url()
    );
    let config = Config::parse(&text, &dir.path().join("dataward.toml")).unwrap();
    let cloud = orchestrator::from_config(&config, dir.path())
        .unwrap()
        .unwrap();
    cloud.pause(JOB).unwrap();
    assert_eq!(api.dbt_job(DBT_JOB)["triggers"]["schedule"], false);

    api.down();
    let err = format!("{:#}", cloud.pipelines().unwrap_err());
    assert!(
        err.contains("dbt Cloud GET /api/v2/accounts/43/jobs/1187/"),
        "{err}"
    );
    assert!(err.contains("could not connect"), "{err}");
}
