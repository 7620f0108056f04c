//! The dbt Core runner on a team's state (`[state] url_env`): while a hold on a job
//! stands, the one run it lets through is the hold's own planned run, the engine's
//! pending `queue_run` intent for that job and key. On a team host that intent is in
//! the team's state, not in `DATA/dataward.db` (which such a host does not have), so
//! the runner reads it there; any other run of the held job is still refused.
//!
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1.

mod support;

use std::time::Duration;

use dataward::config::Config;
use dataward::store::intents::NewIntent;
use dataward::store::postgres::{Contender, PgState, Role, Source};
use dataward::store::prelude::*;
use support::pg::start_or_skip;
use support::team::{state_section, TEAM, URL_ENV};

const JOB: &str = "job.nightly";

#[test]
fn a_held_jobs_planned_run_is_read_from_the_teams_state() {
    let Some(pg) = start_or_skip("dbt_core_team") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("project")).unwrap();
    std::fs::write(root.join("project/dbt_project.yml"), "name: shop\n").unwrap();
    let config_path = root.join("config.toml");
    std::fs::write(
        &config_path,
        format!(
            "{}[orchestrator]\nkind = \"dbt_core\"\nproject_dir = \"project\"\n\
             dbt = \"/bin/true\"\n\n[orchestrator.jobs]\n\"{JOB}\" = \"dbt build\"\n",
            state_section()
        ),
    )
    .unwrap();
    // The config names the variable; this process is the host's engine, which has it.
    std::env::set_var(URL_ENV, &pg.url);
    let config = Config::load(&config_path).unwrap();
    let data_dir = root.join("host");

    // The engine leads the team and commits the hold's planned run as an intent.
    let source = Source {
        url: pg.url.clone(),
        named_by: "test".to_string(),
    };
    let lease = Duration::from_secs(60);
    let state = PgState::open(&source, TEAM, &data_dir, lease).unwrap();
    let mut contender = Contender::new(source, TEAM, "engine", "this-host", lease);
    let term = (0..600)
        .find_map(|_| match contender.step().unwrap() {
            Role::Leader { term } => Some(term),
            Role::Standby { .. } => {
                std::thread::sleep(Duration::from_millis(100));
                None
            }
        })
        .expect("the engine leads");
    state.set_term(Some(term));
    let planned = format!(r#"{{"effect": "queue_run", "job": "{JOB}", "key": "planned-1"}}"#);
    state
        .transact(|s| {
            s.add_intent(&NewIntent {
                created_at: "2026-03-01T09:00:00Z".parse().unwrap(),
                subject: "INC-0001-P2",
                effect: &planned,
                completion: "{}",
                by_person: false,
                client_request: None,
                asker_uid: None,
            })
        })
        .unwrap();

    let runner = dataward::effects::orchestrator::from_config(&config, &data_dir)
        .unwrap()
        .expect("a dbt_core orchestrator");
    runner.pause(JOB).unwrap();
    let at = "2026-03-01T10:00:00Z".parse().unwrap();
    let (id, again) = runner
        .queue_run(JOB, at, "dataward", "planned-1")
        .expect("the hold's own planned run goes through");
    assert!(!again, "queued once: {id}");
    let other = runner
        .queue_run(JOB, at, "dataward", "other-1")
        .expect_err("another run of the held job is refused");
    assert!(
        other.to_string().contains("dataward holds job.nightly"),
        "{other:#}"
    );
}
