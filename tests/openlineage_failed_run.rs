//! The issue's own story, end to end as a team runs it: `dataward serve` with its
//! OpenLineage listener (token configured) beside a real dbt project on a throwaway
//! PostgreSQL; `dbt-ol run` (openlineage-dbt, the dbt venv .ci/dbt.sh makes) posts its
//! events over the HTTP transport; a column dropped upstream makes the run fail. One
//! incident, its cause naming the column and the schema change, the failing model's
//! diff; the rerun refused while the column is still missing and the diff not applied;
//! the diff approved through the CLI, then the rerun, which succeeds; the incident
//! resolves and its receipt is one `dataward verify` accepts. Skips without dbt-ol or
//! the PostgreSQL server binaries unless DATAWARD_REQUIRE_ALL=1. Waits are bounded;
//! nothing is asserted about how long anything took.

#[path = "support/dbt.rs"]
mod dbt;
#[path = "support/pg.rs"]
mod pg;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dbt::write;
use serde_json::Value;

const TOKEN: &str = "ol-failed-run-token-81d2";

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (bounded) for `done` to give a value; `state` says where things stood if not.
fn wait_for<T>(what: &str, state: impl Fn() -> String, mut done: impl FnMut() -> Option<T>) -> T {
    let give_up = Instant::now() + Duration::from_secs(240);
    loop {
        if let Some(value) = done() {
            return value;
        }
        assert!(
            Instant::now() < give_up,
            "never happened: {what}\n{}",
            state()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Kills the engine with the test, however the test ends.
struct Serving(std::process::Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn dbt_ol_failing_on_a_dropped_column_opens_one_incident_fixed_by_its_diff_and_rerun() {
    let test = "dbt_ol_failing_on_a_dropped_column";
    let Some(dbt_ol) = dbt::dbt_ol_or_skip(test) else {
        return;
    };
    let Some(dbt) = dbt::dbt_or_skip(test) else {
        return;
    };
    let Some(pg) = pg::start_or_skip(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let project = dbt::orders_project(root, &pg, "");
    let data = root.join("data");
    let dbt_bin = dbt.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dbt_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let port = free_port();
    // dbt-ol as the team's scheduler runs it: the HTTP transport at the listener.
    let dbt_ol_run = || {
        Command::new(&dbt_ol)
            .args(["run", "--profiles-dir"])
            .arg(root.join("profiles"))
            .current_dir(&project)
            .env("PATH", &path)
            .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
            .env("OPENLINEAGE_URL", format!("http://127.0.0.1:{port}"))
            .env("OPENLINEAGE_API_KEY", TOKEN)
            .env("OPENLINEAGE_NAMESPACE", "dbt_local")
            .env_remove("OPENLINEAGE_CONFIG")
            .output()
            .unwrap()
    };
    // The first build, before dataward watches (the manifest the config names).
    let built = Command::new(&dbt)
        .args(["run", "--profiles-dir"])
        .arg(root.join("profiles"))
        .current_dir(&project)
        .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", said(&built));

    let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    let config = root.join("dataward.toml");
    write(
        &config,
        &format!(
            r#"[warehouse.pg]
kind = "postgres"
url_env = "DW_OLF_PG_URL"

[[monitor]]
name = "raw_orders"
warehouse = "pg"
table = "raw.orders"
checks = ["schema"]
every = "1s"

[[monitor]]
name = "order_amounts"
warehouse = "pg"
table = "analytics.order_amounts"
checks = ["row_count"]
expected_rows = 120
every = "1s"

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

[openlineage]
listen = "127.0.0.1:{port}"
token_env = "DW_OLF_TOKEN"

[verify]
settle = "1s"

[people.{me}]
name = "On call"
roles = ["analytics-owner", "platform-owner"]

[[domain]]
name = "analytics"
covers = ["analytics.*", "model.shop_pg.*", "job.hourly"]
owners = ["analytics-owner"]
autonomy = "L2"

[[domain]]
name = "ingestion"
covers = ["raw.*", "source.shop_pg.*"]
owners = ["platform-owner"]
autonomy = "L2"
"#,
            dbt = dbt.display(),
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env = [
        ("DW_OLF_PG_URL", pg.url.clone()),
        ("DW_OLF_TOKEN", TOKEN.to_string()),
    ];
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run dataward")
    };
    let log = root.join("serve.log");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let _serve = Serving(
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--data-dir")
            .arg(&data)
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(root)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let schema_snapshots = || {
        let Ok(db) = rusqlite::Connection::open_with_flags(
            data.join("dataward.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) else {
            return 0;
        };
        db.query_row(
            "SELECT count(*) FROM observation WHERE monitor = 'raw_orders' AND check_kind = 'schema'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
    };
    wait_for("the engine snapshots raw.orders", read_log, || {
        (schema_snapshots() > 0 && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
            .then_some(())
    });

    // Upstream drops the column; the engine's next snapshot shows it gone.
    pg.execute("ALTER TABLE raw.orders DROP COLUMN amount");
    let before = schema_snapshots();
    wait_for("a snapshot after the drop", read_log, || {
        (schema_snapshots() >= before + 2).then_some(())
    });
    let failed = dbt_ol_run();
    assert!(
        !failed.status.success(),
        "dbt-ol run fails: {}",
        said(&failed)
    );

    let incidents = || -> Vec<Value> {
        let out = cli(&["incidents", "--json", "--all"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let show = || -> Option<Value> {
        let out = cli(&["show", "INC-0001", "--json"]);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    };
    let incident = wait_for(
        "an incident with its diff and rerun",
        || format!("{:#?}\n{}", show(), read_log()),
        || {
            show().filter(|i| {
                i["proposals"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p["kind"] == "backfill"))
            })
        },
    );
    // The listener kept dbt-ol's events: the invocation's and the model's, the FAIL too.
    let kept = {
        use dataward::store::prelude::*;
        let db = dataward::store::open_read_only(&data.join("dataward.db")).unwrap();
        db.lineage_event_count().unwrap()
    };
    assert!(kept >= 4, "{kept} events kept: {}", said(&failed));
    assert_eq!(incidents().len(), 1, "{:#?}", incidents());
    // The schema monitor saw the column go before the model failed on it: the cause
    // names both, and the failure is this incident's, not another's.
    assert!(
        incident["cause"]
            .as_str()
            .unwrap()
            .starts_with("raw.orders.amount was removed"),
        "{incident:#}"
    );
    let evidence = incident["evidence"].to_string();
    assert!(
        evidence.contains("column \\\"amount\\\" does not exist"),
        "{evidence}"
    );
    assert!(
        evidence.contains("amount (NUMERIC(10,2)) is gone"),
        "{evidence}"
    );
    let proposal = |kind: &str| -> Value {
        incident["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == kind)
            .unwrap_or_else(|| panic!("a {kind}: {incident:#}"))
            .clone()
    };
    let diff = proposal("diff");
    assert!(
        diff.to_string().contains("models/order_amounts.sql")
            && diff
                .to_string()
                .contains("cast(null as NUMERIC(10,2)) as amount"),
        "{diff:#}"
    );
    let rerun = proposal("backfill");
    let approve = |p: &Value| {
        cli(&[
            "approve",
            p["id"].as_str().unwrap(),
            "--hash",
            p["content_hash"].as_str().unwrap(),
            "--reason",
            "the column is gone upstream",
        ])
    };

    // The rerun before the fix: refused, saying the cause still holds.
    let early = approve(&rerun);
    assert_eq!(early.status.code(), Some(1), "{}", said(&early));
    assert!(
        said(&early).contains("raw.orders.amount") && said(&early).contains("diff"),
        "{}",
        said(&early)
    );

    // The diff, then the rerun, as the owner approves them.
    let applied = approve(&diff);
    assert!(applied.status.success(), "{}", said(&applied));
    wait_for("the diff is in the model", read_log, || {
        std::fs::read_to_string(project.join("models/order_amounts.sql"))
            .unwrap()
            .contains("cast(null as NUMERIC(10,2)) as amount")
            .then_some(())
    });
    let queued = approve(&rerun);
    assert!(queued.status.success(), "{}", said(&queued));
    let resolved = wait_for(
        "the rerun succeeds and the incident resolves",
        || format!("{:#?}\n{}", show(), read_log()),
        || show().filter(|i| i["status"] == "resolved"),
    );
    assert_eq!(resolved["run_status"], "success", "{resolved:#}");
    let checks = resolved["checks"].to_string();
    assert!(
        checks.contains("model.shop_pg.order_amounts runs again successfully"),
        "{checks}"
    );
    assert_eq!(incidents().len(), 1, "{:#?}", incidents());

    // The receipt, saved as a person would, is one `verify` accepts.
    let receipt = cli(&["receipt", "INC-0001", "--json"]);
    assert!(receipt.status.success(), "{}", said(&receipt));
    let saved = root.join("INC-0001.json");
    std::fs::write(&saved, &receipt.stdout).unwrap();
    let verified = cli(&["verify", "--receipt", saved.to_str().unwrap()]);
    assert!(verified.status.success(), "{}", said(&verified));
}
