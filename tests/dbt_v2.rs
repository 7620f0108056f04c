//! What dbt v2 (the Fusion engine, dbt Core v2) writes, read through `dataward serve`
//! as a user runs it: the run statuses of its run_results.json in whatever case it
//! writes them, `reused` nodes (not run, so neither a failure nor a rebuild), and
//! results without `message`, `failures` or `compiled`. The manifest and the first
//! run_results are what dbt Core v2 wrote for tests/fixtures/dbt_v2/project; the second
//! run_results is written by hand from dbt's documented run-results schema (see that
//! folder's README). The warehouse is a real SQLite file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dataward::approve::Actor;
use dataward::config::Config;
use dataward::effects::orchestrator::{self, PipelineState};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

mod support;

/// Only bounds a wait for something that must happen; nothing is asserted about time.
const PATIENCE: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dbt_v2")
        .join(name)
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < give_up, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running `dataward serve`, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The dbt v2 fixture project's lineage over a SQLite warehouse holding its seed table
/// `raw_orders`, watched for nulls in `amount`; dbt's run_results.json lands in
/// `run_results` when a test puts it there.
struct Shop {
    dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    run_results: PathBuf,
}

impl Shop {
    fn new() -> Shop {
        let dir = tempfile::tempdir().unwrap();
        Connection::open(dir.path().join("wh.db"))
            .unwrap()
            .execute_batch(
                "CREATE TABLE raw_orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
                 INSERT INTO raw_orders (customer_id, amount) SELECT i % 7, 10.5 FROM n;",
            )
            .unwrap();
        let me = Actor::current().user.expect("this account has a name");
        let run_results = dir.path().join("target/run_results.json");
        let config = dir.path().join("shop.toml");
        std::fs::write(
            &config,
            format!(
                "[warehouse.wh]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
                 [[monitor]]\nname = \"raw_orders\"\nwarehouse = \"wh\"\ntable = \"raw_orders\"\n\
                 checks = [\"null_rate\"]\nnull_columns = [\"amount\"]\nevery = \"1s\"\n\n\
                 [lineage]\nmanifest = {manifest:?}\nrun_results = {run_results:?}\n\n\
                 [people.{me:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
                 [[domain]]\nname = \"core\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n",
                manifest = fixture("manifest.json").display().to_string(),
                run_results = run_results.display().to_string(),
            ),
        )
        .unwrap();
        let data = dir.path().join("data");
        Shop {
            dir,
            config,
            data,
            run_results,
        }
    }

    fn serve(&self) -> Served {
        Served(
            Command::new(env!("CARGO_BIN_EXE_dataward"))
                .args(["serve", "--log-stderr", "--config"])
                .arg(&self.config)
                .arg("--data-dir")
                .arg(&self.data)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    fn dataward(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(args)
            .arg("--data-dir")
            .arg(&self.data)
            .output()
            .unwrap()
    }

    fn state_query<T: rusqlite::types::FromSql>(&self, sql: &str) -> Option<T> {
        let path = self.data.join("dataward.db");
        let state = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
        state.query_row(sql, [], |r| r.get(0)).ok()
    }

    fn null_rate_polls(&self) -> i64 {
        self.state_query("SELECT count(*) FROM observation WHERE check_kind = 'null_rate'")
            .unwrap_or(0)
    }

    fn open_incident(&self) -> String {
        let mut id = String::new();
        until("an incident opens", || {
            match self.state_query::<String>("SELECT id FROM incident WHERE status = 'open'") {
                Some(open) => {
                    id = open;
                    true
                }
                None => false,
            }
        });
        id
    }

    fn show(&self, incident: &str) -> Value {
        let output = self.dataward(&["show", incident, "--json"]);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// dbt finishes an invocation: its run_results.json lands where the config says.
    fn dbt_writes(&self, run_results: &str) {
        let target = self.dir.path().join("target");
        std::fs::create_dir_all(&target).unwrap();
        let staged = target.join("run_results.json.tmp");
        std::fs::copy(fixture(run_results), &staged).unwrap();
        std::fs::rename(staged, &self.run_results).unwrap();
    }
}

/// The incident's symptoms from dbt runs, as (node, what was observed, recovered).
fn run_symptoms(incident: &Value) -> Vec<(String, String, bool)> {
    incident["symptoms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["check"] == "dbt run")
        .map(|s| {
            (
                s["table"].as_str().unwrap().to_string(),
                s["observed"].as_str().unwrap().to_string(),
                s["recovered"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn dbt_v2_statuses_in_any_case_join_the_incident_and_reused_nodes_are_neither_failed_nor_rebuilt() {
    let shop = Shop::new();
    let _engine = shop.serve();
    until("a null-rate baseline of a few clean polls", || {
        shop.null_rate_polls() >= 5
    });
    Connection::open(shop.dir.path().join("wh.db"))
        .unwrap()
        .execute_batch("UPDATE raw_orders SET amount = NULL WHERE id % 2 = 0")
        .unwrap();
    let incident = shop.open_incident();

    // dbt v2 writes a run whose statuses are capitalised, some results without a
    // message or timing, and two nodes reused from an earlier run.
    shop.dbt_writes("run_results_by_hand.json");
    let mut shown = Value::Null;
    until(
        "the failed and skipped nodes below raw_orders join the incident",
        || {
            shown = shop.show(&incident);
            run_symptoms(&shown).len() >= 3
        },
    );
    let mut symptoms = run_symptoms(&shown);
    symptoms.sort();
    let nodes: Vec<&str> = symptoms.iter().map(|(n, _, _)| n.as_str()).collect();
    // `Fail`, `SKIPPED` and `Runtime Error`; not `reused`/`Reused` (stg_orders, the
    // seed), `Success` (customers), `Pass` or `Warn`, nor stg_payments' `Error`, which is
    // below raw.payments, not raw_orders.
    assert_eq!(
        nodes,
        vec![
            "not_null_stg_orders_amount",
            "orders",
            "unique_customers_customer_id"
        ],
        "{symptoms:#?}"
    );
    let observed = |node: &str| {
        symptoms
            .iter()
            .find(|(n, _, _)| n == node)
            .map(|(_, o, _)| o.as_str())
            .unwrap()
    };
    assert_eq!(
        observed("not_null_stg_orders_amount"),
        "fail",
        "no message, no timing"
    );
    assert!(
        observed("orders").starts_with("skipped"),
        "{}",
        observed("orders")
    );
    assert_eq!(observed("unique_customers_customer_id"), "runtime error");
    assert!(symptoms.iter().all(|(_, _, recovered)| !recovered));

    // The run dbt v2 wrote for real (lowercase, a message on every result): a failed
    // test on stg_orders skipped customers this time, so it joins too.
    shop.dbt_writes("run_results.json");
    until("dbt v2's own run is read", || {
        shown = shop.show(&incident);
        run_symptoms(&shown)
            .iter()
            .any(|(n, _, _)| n == "customers")
    });
    let symptoms = run_symptoms(&shown);
    let customers = symptoms.iter().find(|(n, _, _)| n == "customers").unwrap();
    assert!(customers.1.starts_with("skipped"), "{symptoms:#?}");
    assert!(
        !symptoms.iter().any(|(n, _, _)| n == "stg_payments"),
        "stg_payments is below raw.payments: {symptoms:#?}"
    );
}

/// A cron runs a dbt Core job that dataward holds; the cron's dbt is dbt v2, whose
/// run_results.json records `args` as `{"command": "build", "which": "build"}` only:
/// no command line, no selection, even for `build --select tag:hourly`. Which job ran
/// cannot be told from it, so the hold is neither confirmed (the held job may well
/// have run) nor broken (a plain `dbt build` job is not every build): it is shown as
/// unconfirmed, naming the file and why.
#[test]
fn a_hold_on_a_cron_whose_dbt_v2_did_not_record_its_command_is_unconfirmed() {
    let Some(dbt) = support::dbt::dbt_or_skip("a_hold_whose_dbt_v2_run_is_unconfirmed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("target")).unwrap();
    std::fs::copy(
        fixture("project/dbt_project.yml"),
        project.join("dbt_project.yml"),
    )
    .unwrap();
    // Byte for byte what dbt v2 wrote at the end of its `build`.
    let run_results = project.join("target/run_results.json");
    std::fs::copy(fixture("run_results.json"), &run_results).unwrap();
    let config = dir.path().join("dataward.toml");
    std::fs::write(
        &config,
        format!(
            "[orchestrator]\nkind = \"dbt_core\"\nproject_dir = \"project\"\ndbt = {dbt:?}\n\n\
             [orchestrator.jobs]\n\"job.hourly\" = \"dbt build --select tag:hourly\"\n\
             \"job.everything\" = \"dbt build\"\n",
            dbt = dbt.display().to_string()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let engine = orchestrator::from_config(&Config::load(&config).unwrap(), &data)
        .unwrap()
        .unwrap();
    for job in ["job.hourly", "job.everything"] {
        engine.pause(job).unwrap().expect("an instruction");
    }
    // The holds were asked before dbt v2's run (its generated_at is
    // 2026-12-02T13:48:02.344234116Z): as if the cron ran after them.
    Connection::open(data.join("dbt-core.db"))
        .unwrap()
        .execute("UPDATE hold SET held_at = '2026-12-02T13:00:00Z'", [])
        .unwrap();

    for pipeline in engine.pipelines().unwrap() {
        assert_eq!(pipeline.state, PipelineState::HoldAsked, "{pipeline:?}");
        // Neither "it ran" (a plain `dbt build` job matched every dbt v2 build) nor
        // nothing said (a held `--select` job that kept running went unnoticed).
        assert_eq!(pipeline.ran_after_hold, None, "{pipeline:?}");
        // What travels to the consoles.
        let sent =
            serde_json::to_value(dataward::engine::api::PipelineView::from(pipeline.clone()))
                .unwrap();
        let unconfirmed = sent["hold_unconfirmed"]
            .as_str()
            .unwrap_or_else(|| panic!("the hold is not shown as unconfirmed: {sent}"));
        assert!(
            unconfirmed.contains(&run_results.display().to_string()),
            "{unconfirmed}"
        );
        assert!(
            unconfirmed
                .contains("dbt did not record the command it ran (dbt v2 writes only `build`)"),
            "{unconfirmed}"
        );
    }
}
