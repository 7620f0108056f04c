//! What `dataward init` watches beyond row counts: the null rates of the columns a dbt
//! project's `not_null` and `relationships` tests name, on the tested table and on the
//! source column models pass on to it unchanged, each with a comment naming the test.
//!
//! The fixture test runs the binary on jaffle_shop's real manifest (../shared); the
//! PostgreSQL one builds a small project with real dbt, has the binary write the
//! config, and has a null spike in a source column open an incident through it. Each
//! skips when what it needs is missing, unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chrono::{NaiveDateTime, TimeDelta, Utc};
use dataward::approve::Actor;
use dataward::config::{Config, MonitorConfig};
use dataward::engine::api::EventKind;
use dataward::engine::Engine;
use support::dbt::{dbt_or_skip, text, write};
use support::pg::start_or_skip;

/// A real dbt manifest in `shared/fixtures/dbt` beside the checkout (or beside the
/// folder of worktrees holding it), or why the test cannot run.
fn fixture_or_skip(test: &str, name: &str) -> Option<PathBuf> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = checkout
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared/fixtures/dbt").join(name))
        .find(|path| path.is_file());
    if found.is_some() {
        return found;
    }
    let message = format!(
        "{test}: skipped: needs shared/fixtures/dbt/{name} above {}",
        checkout.display()
    );
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    None
}

fn init(dir: &Path, project: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("init")
        .arg("--dbt-project")
        .arg(project)
        .arg("--out")
        .arg(out)
        .env_remove("DBT_PROFILES_DIR");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn monitor<'a>(config: &'a Config, name: &str) -> &'a MonitorConfig {
    config
        .monitor
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no monitor {name} in\n{config:#?}"))
}

fn null_columns(config: &Config, name: &str) -> Vec<String> {
    let m = monitor(config, name);
    assert!(
        m.checks.iter().any(|c| c.as_str() == "null_rate"),
        "{name}: {m:?}"
    );
    m.null_columns.clone().unwrap_or_default()
}

/// jaffle_shop (dbt-labs/jaffle-shop) on PostgreSQL: its manifest as `dbt parse` writes
/// it for the postgres adapter (the fixture is dbt-duckdb's; the SQL is the same).
fn jaffle_on_postgres(test: &str) -> Option<tempfile::TempDir> {
    let jaffle = fixture_or_skip(test, "jaffle_shop-manifest.json")?;
    let dir = tempfile::tempdir().unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(jaffle).unwrap()).unwrap();
    manifest["metadata"]["adapter_type"] = "postgres".into();
    write(
        &dir.path().join("project/target/manifest.json"),
        &manifest.to_string(),
    );
    write(
        &dir.path().join("project/dbt_project.yml"),
        "name: jaffle_shop\nprofile: jaffle_shop\n",
    );
    write(
        &dir.path().join("project/profiles.yml"),
        "jaffle_shop:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n      \
         host: db.internal\n      port: 5432\n      user: dbt_writer\n      \
         password: \"{{ env_var('DBT_PG_PASSWORD') }}\"\n      dbname: jaffle_shop\n      schema: marts\n",
    );
    Some(dir)
}

#[test]
fn init_watches_null_rates_on_the_columns_dbt_tests_name_and_the_source_columns_behind_them() {
    let test = "init_watches_null_rates_on_the_columns_dbt_tests_name";
    let Some(dir) = jaffle_on_postgres(test) else {
        return;
    };
    let out = dir.path().join("out/dataward.toml");
    let output = init(dir.path(), &dir.path().join("project"), &out, &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let config = Config::load(&out).unwrap();
    let written = std::fs::read_to_string(&out).unwrap();

    // Tables dbt builds: the columns their own tests name.
    assert_eq!(null_columns(&config, "orders"), ["customer_id", "order_id"]);
    assert_eq!(null_columns(&config, "customers"), ["customer_id"]);
    // Sources: the tests sit on staging views (not watched), which pass the columns on
    // renamed; orders.customer_id reaches raw_orders.customer through orders.* and
    // stg_orders.
    assert_eq!(null_columns(&config, "ecom.raw_orders"), ["customer", "id"]);
    assert_eq!(null_columns(&config, "ecom.raw_customers"), ["id"]);
    assert_eq!(null_columns(&config, "ecom.raw_items"), ["id", "order_id"]);
    for comment in [
        "# null_rate(customer): dbt's relationships test on orders.customer_id reads it \
         straight through (orders reads customer_id; stg_orders: customer as customer_id)",
        "# null_rate(id): dbt's not_null test on stg_orders.order_id reads it straight \
         through (stg_orders: id as order_id)",
        "# null_rate(customer_id): dbt's relationships test on orders.customer_id\n",
        "# null_rate(customer_id): dbt's not_null test on customers.customer_id\n",
    ] {
        assert!(written.contains(comment), "{comment:?} not in\n{written}");
    }
    // A column a macro computes is not a source column passed on: stg_supplies'
    // supply_uuid is a surrogate key, so raw_supplies gains no null_rate.
    assert!(
        monitor(&config, "ecom.raw_supplies")
            .checks
            .iter()
            .all(|c| c.as_str() != "null_rate"),
        "{written}"
    );
    assert!(
        stdout.contains(
            "null rates watched on 12 columns that dbt's not_null and relationships tests name"
        ),
        "{stdout}"
    );
}

/// A dbt project like the one the issue was found on: a source loaded every few
/// minutes, a staging view renaming its columns, a not_null test on the view.
const NULLS_SCHEMA: &str = "version: 2
sources:
  - name: app
    schema: app
    loaded_at_field: _loaded_at
    tables:
      - name: raw_orders
models:
  - name: stg_orders
    columns:
      - name: customer_id
        data_tests:
          - not_null
";

#[test]
fn a_null_spike_in_a_source_column_a_test_names_opens_an_incident_on_the_config_init_wrote() {
    let test = "a_null_spike_in_a_source_column_a_test_names_opens_an_incident";
    let Some(dbt) = dbt_or_skip(test) else { return };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    pg.execute(
        "CREATE SCHEMA app;
         CREATE TABLE app.raw_orders (id int PRIMARY KEY, user_id int, _loaded_at timestamptz);
         INSERT INTO app.raw_orders
           SELECT n, n % 50, now() - n * interval '5 minutes' FROM generate_series(1, 200) AS n;",
    );
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("nulls");
    write(
        &project.join("dbt_project.yml"),
        "name: nulls\nversion: \"1.0\"\nconfig-version: 2\nprofile: nulls\n\
         model-paths: [\"models\"]\nflags:\n  send_anonymous_usage_stats: false\n",
    );
    write(&project.join("models/schema.yml"), NULLS_SCHEMA);
    write(
        &project.join("models/stg_orders.sql"),
        "with source as (select * from {{ source('app', 'raw_orders') }})\n\
         select id as order_id, user_id as customer_id, _loaded_at from source\n",
    );
    write(
        &project.join("profiles.yml"),
        &format!(
            "nulls:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n      \
             host: 127.0.0.1\n      port: {}\n      user: postgres\n      password: \"\"\n      \
             dbname: postgres\n      schema: analytics\n      threads: 1\n",
            pg.port
        ),
    );
    let parsed = Command::new(&dbt)
        .args(["parse", "--profiles-dir", "."])
        .current_dir(&project)
        .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        .output()
        .unwrap();
    assert!(parsed.status.success(), "{:?}", text(&parsed));

    let out = dir.path().join("dataward/config.toml");
    let output = init(dir.path(), &project, &out, &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let config = Config::load(&out).unwrap();
    assert_eq!(null_columns(&config, "app.raw_orders"), ["user_id"]);

    // The read-only role init asked for, made with exactly the SQL it printed; the
    // engine connects as that role with the URL it printed.
    let grants: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("CREATE ROLE ")
                || l.starts_with("GRANT ")
                || l.starts_with("ALTER DEFAULT ")
        })
        .collect();
    assert_eq!(grants.len(), 5, "{stdout}");
    pg.execute(&grants.join("\n"));
    pg.execute("ALTER ROLE dataward_reader PASSWORD 'reader-secret'");
    let url = stdout
        .split_whitespace()
        .find_map(|word| word.split_once("postgresql://").map(|(_, rest)| rest))
        .map(|rest| format!("postgresql://{}", rest.trim_end_matches(['"', '\''])))
        .unwrap_or_else(|| panic!("no URL in {stdout}"));
    assert!(
        url.starts_with("postgresql://dataward_reader:PASSWORD@127.0.0.1:"),
        "{url}"
    );
    let url = url.replace("PASSWORD", "reader-secret");
    let mut reader = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let refused = format!(
        "{:?}",
        reader
            .batch_execute("DELETE FROM app.raw_orders")
            .unwrap_err()
    );
    assert!(refused.contains("permission denied"), "{refused}");

    // The engine, on exactly that config, polls the table as loads arrive.
    let url_env = config.warehouse["nulls"].url_env.clone().unwrap();
    std::env::set_var(&url_env, &url);
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &Actor::current()).unwrap();
    let start: NaiveDateTime = Utc::now().naive_utc();
    let mut next_id = 1000;
    // Each load's rows carry the time of the poll they arrive before, so the table is
    // as fresh as a five-minute loader keeps it.
    let mut load = |at: NaiveDateTime, nulls: bool| {
        let user = if nulls { "NULL" } else { "n % 50" };
        pg.execute(&format!(
            "INSERT INTO app.raw_orders SELECT n, {user}, '{at}'::timestamp AT TIME ZONE 'UTC' \
             FROM generate_series({next_id}, {}) AS n",
            next_id + 19
        ));
        next_id += 20;
    };
    let mut opened = Vec::new();
    for step in 0..6 {
        // The sixth load arrives with every user_id null.
        let at = start + TimeDelta::minutes(5 * step);
        load(at, step == 5);
        let events = engine.tick(at).unwrap();
        opened.extend(
            events
                .into_iter()
                .filter(|e| matches!(e.kind, EventKind::IncidentOpened { .. })),
        );
        if step < 5 {
            assert!(opened.is_empty(), "step {step}: {opened:#?}");
        }
    }
    let snapshot = engine.snapshot(false);
    assert_eq!(snapshot.incidents.len(), 1, "{:#?}", snapshot.incidents);
    assert!(
        snapshot.incidents[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("null rate of app.raw_orders.user_id in rows loaded since")),
        "{:?}",
        snapshot.incidents[0].evidence
    );
}

#[test]
fn init_names_a_read_only_role_prints_its_grants_and_every_file_it_wrote() {
    let test = "init_names_a_read_only_role_prints_its_grants_and_every_file_it_wrote";
    let Some(dir) = jaffle_on_postgres(test) else {
        return;
    };
    let out = dir.path().join("out/dataward.toml");
    let output = init(dir.path(), &dir.path().join("project"), &out, &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let written = std::fs::read_to_string(&out).unwrap();
    // Never dbt's user, which writes: a read-only role, its password a placeholder.
    let url = "postgresql://dataward_reader:PASSWORD@db.internal:5432/jaffle_shop";
    assert!(stdout.contains(url), "{stdout}");
    assert!(written.contains(url), "{written}");
    for seen in [&stdout, &written] {
        assert!(!seen.contains("postgresql://dbt_writer"), "{seen}");
    }
    // The SQL that makes it, for the schemas watched (raw and main), quoted.
    let grants = [
        "CREATE ROLE \"dataward_reader\" LOGIN;",
        "\\password \"dataward_reader\"",
        "GRANT CONNECT ON DATABASE \"jaffle_shop\" TO \"dataward_reader\";",
        "GRANT USAGE ON SCHEMA \"main\" TO \"dataward_reader\";",
        "GRANT SELECT ON ALL TABLES IN SCHEMA \"main\" TO \"dataward_reader\";",
        "ALTER DEFAULT PRIVILEGES FOR ROLE \"dbt_writer\" IN SCHEMA \"main\" GRANT SELECT ON TABLES TO \"dataward_reader\";",
        "GRANT USAGE ON SCHEMA \"raw\" TO \"dataward_reader\";",
        "GRANT SELECT ON ALL TABLES IN SCHEMA \"raw\" TO \"dataward_reader\";",
    ];
    for line in grants {
        assert!(
            stdout.contains(&format!("\n  {line}\n")),
            "{line} not in\n{stdout}"
        );
        assert!(
            written.contains(&format!("\n#   {line}\n")),
            "{line} not in\n{written}"
        );
    }
    assert!(
        written.contains("# dataward only reads: the URL names a read-only role, not dbt's user."),
        "{written}"
    );
    // Both files written are named, the notes with why they have that name.
    let notes = dir.path().join("out/dataward.notes.toml");
    assert!(notes.is_file());
    assert!(
        stdout.contains(&format!("wrote {} (0600): 1 warehouse", out.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "wrote {} (0600): the context notes, named after the config and named by its [lineage] notes",
            notes.display()
        )),
        "{stdout}"
    );
}
