//! Failed runs as incidents, with real dbt (the venv .ci/dbt.sh makes, dbt-postgres)
//! on a throwaway PostgreSQL: a column dropped upstream makes `dbt run` fail with
//! PostgreSQL's own error; dataward reads run_results.json, opens one incident whose
//! cause names the column and the schema change, proposes the model's diff and its
//! rerun, and verifies once the rerun succeeded. Skips without dbt or the PostgreSQL
//! server binaries unless DATAWARD_REQUIRE_ALL=1. Waits are bounded by deadlines;
//! nothing is asserted about how long anything took.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::config::Config;
use dataward::effects::orchestrator;
use dataward::engine::api::{
    self, Command as Ask, EventKind, IncidentStatus, IncidentView, ProposalKind,
};
use dataward::engine::Engine;
use support::dbt::{self, dbt_or_skip, write};
use support::pg::{start_or_skip, PgServer};

const PATIENCE: Duration = Duration::from_secs(120);
/// `raw.orders` in PostgreSQL, a dbt project whose `order_amounts` reads it (built
/// once, so its manifest and table exist), the notes naming the job that runs it,
/// and a config watching both tables.
struct Shop {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    dbt: PathBuf,
    config: PathBuf,
    data: PathBuf,
}

impl Shop {
    /// `watch_raw`: a schema monitor watches `raw.orders` (else nothing upstream is
    /// watched, and a failure there breaches no check).
    fn new(pg: &PgServer, dbt: &Path, watch_raw: bool) -> Shop {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = dbt::orders_project(
            &root,
            pg,
            "\n[[moved]]\nfrom = \"/mnt/exports\"\nto = \"/data/exports\"\nnote = \"storage migration\"\n",
        );
        let url_env = format!("DATAWARD_FAILED_RUNS_URL_{}", pg.port);
        std::env::set_var(&url_env, &pg.url);
        let config = root.join("dataward.toml");
        write(
            &config,
            &format!(
                r#"[warehouse.pg]
kind = "postgres"
url_env = "{url_env}"

{raw_monitor}[[monitor]]
name = "order_amounts"
warehouse = "pg"
table = "analytics.order_amounts"
checks = ["row_count"]
expected_rows = 120
every = "5m"

[lineage]
manifest = "project/target/manifest.json"
notes = "notes.toml"
project_dir = "project"
run_results = "project/target/run_results.json"

[orchestrator]
kind = "dbt_core"
project_dir = "project"
dbt = "{dbt}"
profiles_dir = "profiles"
target = "dev"

[orchestrator.jobs]
"job.hourly" = "dbt run --select order_amounts"

[verify]
settle = "5m"

[people.shop-analyst]
name = "Shop Analyst"
roles = ["analytics-owner"]

[[domain]]
name = "analytics"
covers = ["analytics.*", "model.shop_pg.*", "job.hourly"]
owners = ["analytics-owner"]
approval_ttl = "30m"
autonomy = "L2"

[[domain]]
name = "ingestion"
covers = ["raw.*", "source.shop_pg.*"]
owners = ["platform-owner"]
approval_ttl = "30m"
autonomy = "L2"
"#,
                dbt = dbt.display(),
                raw_monitor = if watch_raw {
                    "[[monitor]]\nname = \"raw_orders\"\nwarehouse = \"pg\"\ntable = \"raw.orders\"\n\
                     checks = [\"schema\"]\nevery = \"5m\"\n\n"
                } else {
                    ""
                }
            ),
        );
        let shop = Shop {
            _dir: dir,
            root: root.clone(),
            project,
            dbt: dbt.to_path_buf(),
            config,
            data: root.join("data"),
        };
        assert!(shop.dbt_run(), "the first dbt run builds the model");
        shop
    }

    /// `dbt run` as the team's cron would run it: true when it succeeded.
    fn dbt_run(&self) -> bool {
        let output = Command::new(&self.dbt)
            .args(["run", "--profiles-dir"])
            .arg(self.root.join("profiles"))
            .current_dir(&self.project)
            .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
            .output()
            .unwrap();
        output.status.success()
    }

    fn engine(&self) -> Engine {
        let config = Config::load(&self.config).unwrap();
        std::fs::create_dir_all(&self.data).unwrap();
        let orchestrator = orchestrator::from_config(&config, &self.data).unwrap();
        let state = dataward::store::open(&self.data.join("dataward.db")).unwrap();
        Engine::new(config, state, orchestrator, &Actor::current()).unwrap()
    }

    fn opened_on_chain(&self) -> usize {
        let reader = dataward::store::open(&self.data.join("dataward.db")).unwrap();
        dataward::chain::records(&reader)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "incident_opened")
            .count()
    }
}

fn setup(test: &str) -> Option<(PgServer, Shop)> {
    setup_watching(test, true)
}

fn setup_watching(test: &str, watch_raw: bool) -> Option<(PgServer, Shop)> {
    let dbt = dbt_or_skip(test)?;
    let pg = start_or_skip(test)?;
    let shop = Shop::new(&pg, &dbt, watch_raw);
    Some((pg, shop))
}

/// dbt stamps its runs with the wall's time: the engine's turns run on it too.
fn wall() -> NaiveDateTime {
    chrono::Utc::now().naive_utc()
}

fn owner() -> Actor {
    let mut actor = Actor::current();
    actor.stand_in = Some("analytics-owner".to_string());
    actor
}

fn refused(events: &[api::Event]) -> Option<String> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Refused { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

fn incidents(engine: &Engine) -> Vec<IncidentView> {
    engine.snapshot(false).incidents
}

fn approve(engine: &mut Engine, incident: &IncidentView, kind: ProposalKind) {
    let proposal = incident
        .proposals
        .iter()
        .find(|p| p.kind == kind)
        .unwrap_or_else(|| panic!("a {kind:?} proposal: {:#?}", incident.proposals));
    let events = engine.handle(
        Ask::Approve {
            proposal: proposal.id.clone(),
            content_hash: proposal.content_hash.clone(),
            reason: "the column is gone upstream".into(),
        },
        &owner(),
    );
    assert_eq!(refused(&events), None, "{events:#?}");
}

#[test]
fn a_dbt_run_failing_on_a_dropped_column_opens_one_incident_naming_it_and_verifies_after_the_rerun()
{
    let test = "a_dbt_run_failing_on_a_dropped_column";
    let Some((pg, shop)) = setup(test) else {
        return;
    };
    let mut now = wall();
    let mut engine = shop.engine();
    engine.tick(now).unwrap();
    assert!(incidents(&engine).is_empty(), "{:#?}", incidents(&engine));

    // Upstream drops the column; the next dbt run fails with PostgreSQL's error.
    pg.execute("ALTER TABLE raw.orders DROP COLUMN amount");
    assert!(!shop.dbt_run(), "dbt run fails on the dropped column");
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    let incident = &all[0];
    let cause = incident.cause.clone().unwrap_or_default();
    assert_eq!(
        cause,
        "raw.orders.amount was removed, and the job still reads it"
    );
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.contains("column \"amount\" does not exist")),
        "{:#?}",
        incident.evidence
    );
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.contains("schema snapshot of raw.orders")
                && e.contains("amount (NUMERIC(10,2)) is gone")),
        "{:#?}",
        incident.evidence
    );
    let diff = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .unwrap_or_else(|| panic!("a diff: {:#?}", incident.proposals));
    match &diff.body {
        api::ProposalBody::Diff { file, new, .. } => {
            assert_eq!(file, "models/order_amounts.sql");
            assert!(
                new.contains("cast(null as NUMERIC(10,2)) as amount"),
                "{new}"
            );
        }
        other => panic!("{other:?}"),
    }
    let rerun = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Backfill)
        .unwrap_or_else(|| panic!("a rerun: {:#?}", incident.proposals));
    assert!(
        rerun.title.contains("`dbt run --select order_amounts`"),
        "{}",
        rerun.title
    );

    // Read again, and again after a restart: still the one incident.
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    drop(engine);
    let mut engine = shop.engine();
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    assert_eq!(shop.opened_on_chain(), 1);

    // The owner approves the diff (the file changes), then the rerun.
    let incident = incidents(&engine)[0].clone();
    approve(&mut engine, &incident, ProposalKind::Diff);
    engine.tick(now).unwrap();
    let model = std::fs::read_to_string(shop.project.join("models/order_amounts.sql")).unwrap();
    assert!(
        model.contains("cast(null as NUMERIC(10,2)) as amount"),
        "{model}"
    );
    approve(&mut engine, &incident, ProposalKind::Backfill);
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        engine.tick(now).unwrap();
        let status = incidents(&engine)[0].run_status;
        if status.is_some_and(|s| s != api::RunStatus::Queued) {
            break status;
        }
        assert!(Instant::now() < deadline, "the rerun did not finish");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status, Some(api::RunStatus::Success));

    // After the settle window, a poll verifies it: the run succeeded, the checks hold.
    for _ in 0..4 {
        now += TimeDelta::minutes(5);
        engine.tick(now).unwrap();
    }
    let incident = incidents(&engine)[0].clone();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
    assert!(
        incident.checks.iter().any(|c| c.passed
            && c.name
                .starts_with("model.shop_pg.order_amounts runs again successfully")),
        "{:#?}",
        incident.checks
    );
    assert_eq!(shop.opened_on_chain(), 1);
}

#[test]
fn a_failure_an_open_incident_already_explains_opens_nothing_new() {
    let test = "a_failure_an_open_incident_already_explains";
    let Some((pg, shop)) = setup(test) else {
        return;
    };
    let mut now = wall();
    let mut engine = shop.engine();
    engine.tick(now).unwrap();
    // The schema monitor sees the column go first: an incident of its own, since the
    // model reads it.
    pg.execute("ALTER TABLE raw.orders DROP COLUMN amount");
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].table, "raw.orders");
    // Then dbt fails on it: that incident explains it.
    assert!(!shop.dbt_run());
    for _ in 0..2 {
        now += TimeDelta::minutes(5);
        engine.tick(now).unwrap();
    }
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    drop(engine);
    let mut engine = shop.engine();
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    // Closed by its owner: the failure it explained, read again after a restart, is
    // still explained (it failed before the incident closed), and opens nothing.
    let mut platform = Actor::current();
    platform.stand_in = Some("platform-owner".to_string());
    let id = incidents(&engine)[0].id.clone();
    let events = engine.handle(
        Ask::Resolve {
            incident: id,
            reason: "the column is gone for good; the model is being changed".into(),
        },
        &platform,
    );
    assert_eq!(refused(&events), None, "{events:#?}");
    assert_eq!(incidents(&engine)[0].status, IncidentStatus::Resolved);
    drop(engine);
    let mut engine = shop.engine();
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    assert_eq!(shop.opened_on_chain(), 1);
}

/// Nothing watches raw.orders, so no check breaches: the failure alone opens the
/// incident, with dbt's error and what dataward could not join it with.
#[test]
fn a_failure_with_no_breach_opens_an_incident_quoting_its_error() {
    let test = "a_failure_with_no_breach_opens_an_incident";
    let Some((pg, shop)) = setup_watching(test, false) else {
        return;
    };
    let mut now = wall();
    let mut engine = shop.engine();
    engine.tick(now).unwrap();
    pg.execute("ALTER TABLE raw.orders DROP COLUMN amount");
    assert!(!shop.dbt_run());
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    let incident = &all[0];
    assert_eq!(incident.table, "analytics.order_amounts");
    assert!(
        incident.observed.starts_with("failed at "),
        "{}",
        incident.observed
    );
    let cause = incident.cause.clone().unwrap_or_default();
    assert!(
        cause.starts_with("model.shop_pg.order_amounts failed at ")
            && cause.ends_with("(dbt's run_results.json): column \"amount\" does not exist"),
        "{cause}"
    );
    assert!(
        incident.evidence.iter().any(|e| e
            == "the error names column amount; no recent schema snapshot of raw.orders shows it changed"),
        "{:#?}",
        incident.evidence
    );
    // Nothing says what the column became: a rerun, but no diff guessed.
    let kinds: Vec<ProposalKind> = incident.proposals.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProposalKind::Backfill]);
}

/// The failure is read before the schema monitor's next snapshot: the error alone is
/// its cause at first, and a rerun its one proposal. The snapshot that then shows the
/// column removed gives the open incident the stronger cause, the failing model's diff
/// beside its rerun, once, on the chain; the snapshot's breach joins it, opening nothing.
#[test]
fn a_failure_seen_before_the_snapshot_is_diagnosed_again_when_it_comes() {
    let test = "a_failure_seen_before_the_snapshot";
    let Some((pg, shop)) = setup(test) else {
        return;
    };
    let mut now = wall();
    let mut engine = shop.engine();
    engine.tick(now).unwrap();
    pg.execute("ALTER TABLE raw.orders DROP COLUMN amount");
    assert!(!shop.dbt_run());
    // A minute on: the failure is read; raw.orders is not due a snapshot yet.
    now += TimeDelta::minutes(1);
    engine.tick(now).unwrap();
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    let weak = &all[0];
    assert!(
        weak.cause
            .as_deref()
            .is_some_and(|c| c.ends_with("column \"amount\" does not exist")),
        "{weak:#?}"
    );
    let kinds: Vec<ProposalKind> = weak.proposals.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProposalKind::Backfill]);

    // The snapshot comes, showing the column gone.
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    let sharp = &all[0];
    assert_eq!(sharp.id, weak.id);
    assert_eq!(
        sharp.cause.as_deref(),
        Some("raw.orders.amount was removed, and the job still reads it")
    );
    assert!(
        sharp
            .evidence
            .iter()
            .any(|e| e.contains("schema snapshot of raw.orders")
                && e.contains("amount (NUMERIC(10,2)) is gone")),
        "{:#?}",
        sharp.evidence
    );
    let kinds: Vec<ProposalKind> = sharp.proposals.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProposalKind::Backfill, ProposalKind::Diff]);
    match &sharp.proposals[1].body {
        api::ProposalBody::Diff { file, new, .. } => {
            assert_eq!(file, "models/order_amounts.sql");
            assert!(
                new.contains("cast(null as NUMERIC(10,2)) as amount"),
                "{new}"
            );
        }
        other => panic!("{other:?}"),
    }

    // Once: later turns, and a restart, diagnose it no further.
    for _ in 0..2 {
        now += TimeDelta::minutes(5);
        engine.tick(now).unwrap();
    }
    drop(engine);
    let mut engine = shop.engine();
    now += TimeDelta::minutes(5);
    engine.tick(now).unwrap();
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    assert_eq!(shop.opened_on_chain(), 1);
    let reader = dataward::store::open(&shop.data.join("dataward.db")).unwrap();
    let diagnoses = dataward::chain::records(&reader)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "diagnosis")
        .count();
    assert_eq!(diagnoses, 2, "the weak cause, then the strong one");
}

fn fixture_events(name: &str) -> Vec<dataward::lineage::openlineage::RunEvent> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openlineage")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| dataward::lineage::openlineage::parse_event(line).unwrap())
        .collect()
}

/// What the listener will hand the engine: the recorded Airflow FAIL events, mapped.
/// The task's failure and its DAG run's are one incident, its cause the path its error
/// names joined with the notes' move; the same events again, or after a restart, open
/// nothing.
#[test]
fn an_openlineage_fail_opens_one_incident_for_a_task_and_its_dag_run() {
    use dataward::incident::failed_run::FailedRun;
    let test = "an_openlineage_fail_opens_one_incident";
    let Some((_pg, shop)) = setup(test) else {
        return;
    };
    let now = wall();
    let mut engine = shop.engine();
    engine.tick(now).unwrap();
    let feed = |engine: &mut Engine| {
        for event in fixture_events("airflow_task_fail.jsonl") {
            if let Some(run) = FailedRun::from_openlineage(&event, &|_| None) {
                engine.failed_run(run).unwrap();
            }
        }
    };
    feed(&mut engine);
    let all = incidents(&engine);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(
        all[0].cause.as_deref(),
        Some("billing_daily.export_invoices still uses /mnt/exports/invoices/2026-11-01.csv, but /mnt/exports moved to /data/exports")
    );
    assert_eq!(
        all[0].evidence,
        vec![
            "billing_daily.export_invoices failed at 2026-11-02 02:01 (an OpenLineage FAIL event): \
             FileNotFoundError: [Errno 2] No such file or directory: '/mnt/exports/invoices/2026-11-01.csv'",
            "the notes say /mnt/exports moved to /data/exports (storage migration)",
        ]
    );
    feed(&mut engine);
    // The task's next run fails too while the incident is open: the same incident.
    let task_fail = fixture_events("airflow_task_fail.jsonl")
        .iter()
        .find_map(|e| FailedRun::from_openlineage(e, &|_| None))
        .unwrap();
    let next = FailedRun {
        run_id: "0193a1c3-0000-7000-8000-000000000001".into(),
        parent_run: Some("0193a1c3-0000-7000-8000-000000000000".into()),
        at: task_fail.at + chrono::TimeDelta::hours(1),
        ..task_fail
    };
    engine.failed_run(next).unwrap();
    drop(engine);
    let mut engine = shop.engine();
    feed(&mut engine);
    assert_eq!(incidents(&engine).len(), 1, "{:#?}", incidents(&engine));
    assert_eq!(shop.opened_on_chain(), 1);
}
