//! `dataward init` on a dbt project of our own, built by real dbt into a throwaway
//! PostgreSQL (tests/support/dbt.rs): the config it writes loads, `check --once` runs
//! every check it generated against that database, a rerun never overwrites a hand
//! edit, and bad input (a profile that does not exist, a manifest from another project,
//! an adapter dataward cannot watch, artifacts not made yet) is said with the file.
//!
//! The first needs dbt (the .ci/dbt.sh venv) and PostgreSQL server binaries; the
//! fixture tests read the real manifests in ../shared. Each skips when what it needs
//! is missing, unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dataward::config::Config;
use support::dbt::{dbt_or_skip, text, write, Shop, LITERAL_PASSWORD};
use support::pg::start_or_skip;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The real dbt manifests in ../shared, or why the test cannot run.
fn fixture_or_skip(test: &str, name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/dbt")
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    let message = format!("{test}: skipped: needs {} (../shared)", path.display());
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    None
}

#[test]
fn init_writes_a_config_whose_every_check_runs_and_a_rerun_keeps_hand_edits() {
    let test = "init_writes_a_config_whose_every_check_runs_and_a_rerun_keeps_hand_edits";
    let Some(dbt) = dbt_or_skip(test) else { return };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    let shop = Shop::new(&pg, &dbt);
    shop.build();

    let output = shop.init(&[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let config_path = shop.config();
    assert_eq!(mode(&config_path), 0o600, "the config is the owner's alone");
    assert_eq!(mode(&shop.data()), 0o700, "so is the data directory");
    let notes_path = config_path.with_file_name("notes.toml");
    assert_eq!(mode(&notes_path), 0o600);

    // It loads as the engine loads it, and holds what dbt knew.
    let config = Config::load(&config_path).unwrap();
    let warehouse = &config.warehouse["shop"];
    assert_eq!(warehouse.kind, "postgres");
    assert_eq!(warehouse.url_env.as_deref(), Some("DATAWARD_SHOP_URL"));
    let monitor = |name: &str| {
        config
            .monitor
            .iter()
            .find(|m| m.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no monitor {name} in\n{config:#?}"))
    };
    let checks =
        |name: &str| -> Vec<&str> { monitor(name).checks.iter().map(|c| c.as_str()).collect() };
    let orders = monitor("raw.orders");
    assert_eq!(orders.table, "raw.orders");
    assert_eq!(
        checks("raw.orders"),
        ["row_count", "schema", "freshness", "volume"]
    );
    assert_eq!(orders.timestamp_column.as_deref(), Some("_loaded_at"));
    assert_eq!(orders.warn_after.as_deref(), Some("6h"));
    assert_eq!(orders.error_after.as_deref(), Some("1d"));
    // A table's own loaded_at_field and freshness block override its source's.
    let events = monitor("raw.events");
    assert_eq!(events.timestamp_column.as_deref(), Some("received_at"));
    assert_eq!(events.warn_after.as_deref(), Some("30m"));
    assert_eq!(events.error_after.as_deref(), Some("1d"));
    // freshness: null turns dbt's freshness off, and dataward's with it.
    assert_eq!(checks("raw.customers"), ["row_count", "schema", "volume"]);
    // No loaded_at_field: no freshness, no volume, and said so.
    assert_eq!(checks("billing.payments"), ["row_count", "schema"]);
    assert!(
        stdout.contains(
            "source billing.payments: no loaded_at_field, so no freshness or volume check"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("source raw.customers: `freshness: null`"),
        "{stdout}"
    );
    // Models: tables and incremental ones, volume on a microbatch model's event_time.
    assert_eq!(monitor("fct_orders").table, "analytics.fct_orders");
    assert_eq!(checks("fct_orders"), ["row_count", "schema"]);
    assert_eq!(checks("dim_customers"), ["row_count", "schema"]);
    assert_eq!(checks("fct_events"), ["row_count", "schema", "volume"]);
    assert_eq!(
        monitor("fct_events").timestamp_column.as_deref(),
        Some("received_at")
    );
    assert!(
        config
            .monitor
            .iter()
            .all(|m| m.table != "analytics.stg_orders"),
        "a view is not watched"
    );
    assert!(stdout.contains("1 view: computed when read"), "{stdout}");

    // Lineage points at the artifacts, and the notes load with them.
    let lineage = config.lineage.as_ref().unwrap();
    assert_eq!(
        lineage.manifest,
        shop.project
            .canonicalize()
            .unwrap()
            .join("target/manifest.json")
    );
    assert!(lineage.catalog.is_some());
    let notes = std::fs::read_to_string(&notes_path).unwrap();
    assert!(
        notes.contains("exposure.shop.revenue_dashboard (dashboard) reads fct_orders"),
        "{notes}"
    );
    dataward::lineage::Lineage::load(&lineage.manifest, Some(&notes_path)).unwrap();

    // Owners: the group's domain covers its model and the exposure its owner owns; a
    // meta.owner makes a domain; the rest falls to the project's.
    let domain_of =
        |target: &str| dataward::approve::domain_for(&config, target).map(|d| d.name.clone());
    assert_eq!(
        domain_of("model.shop.fct_orders").as_deref(),
        Some("finance")
    );
    assert_eq!(
        domain_of("analytics.fct_orders").as_deref(),
        Some("finance")
    );
    assert_eq!(
        domain_of("exposure.shop.revenue_dashboard").as_deref(),
        Some("finance")
    );
    assert_eq!(domain_of("analytics.fct_events").as_deref(), Some("growth"));
    assert_eq!(domain_of("raw.orders").as_deref(), Some("platform"));
    assert_eq!(
        domain_of("analytics.dim_customers").as_deref(),
        Some("shop")
    );
    let me = dataward::approve::Actor::current()
        .user
        .expect("an account name");
    let person = &config.people[&me];
    assert!(
        person.roles.contains(&"finance-team".to_string()),
        "{person:?}"
    );

    // init says which variable to export: a URL naming a read-only role, never dbt's
    // user (which writes) nor its password.
    assert!(
        stdout
            .contains("export DATAWARD_SHOP_URL='postgresql://dataward_reader:PASSWORD@127.0.0.1:"),
        "{stdout}"
    );
    assert!(!stdout.contains("SHOP_PG_PASSWORD"), "{stdout}");

    // `check --once` runs every generated check against the database dbt built.
    let output = shop.dataward(
        &[
            "--data-dir",
            shop.data().to_str().unwrap(),
            "check",
            "--config",
            config_path.to_str().unwrap(),
            "--once",
            "--json",
        ],
        &[("DATAWARD_SHOP_URL", &pg.url)],
    );
    let (stdout, stderr) = text(&output);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &serde_json::Value| l.get("poll").is_none())
        .collect();
    let ran: BTreeSet<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["monitor"].as_str().unwrap().to_string(),
                l["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let generated: BTreeSet<(String, String)> = config
        .monitor
        .iter()
        .flat_map(|m| {
            m.checks
                .iter()
                .map(move |c| (Config::monitor_name(m), c.as_str().to_string()))
        })
        .collect();
    assert_eq!(ran, generated, "{stdout}\n{stderr}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "every check ran: {line}");
    }
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");

    // A rerun on the unchanged project writes nothing.
    let output = shop.init(&[]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(stdout.contains("already holds this"), "{stdout}");
    assert!(!config_path.with_file_name("config.toml.new").exists());

    // Someone edits the config; the project gains a model. The rerun leaves the edit
    // and writes the new version beside it, showing the difference.
    let mut edited = std::fs::read_to_string(&config_path).unwrap();
    edited.push_str("\n# alice: raw.orders pages the platform team\n");
    std::fs::write(&config_path, &edited).unwrap();
    write(
        &shop.project.join("models/fct_revenue.sql"),
        "{{ config(materialized='table') }}\nselect sum(amount) as revenue from {{ ref('fct_orders') }}\n",
    );
    shop.dbt(&["parse"]);
    let output = shop.init(&[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(&config_path).unwrap(),
        edited,
        "the hand edit is kept"
    );
    let new = config_path.with_file_name("config.toml.new");
    assert_eq!(mode(&new), 0o600);
    assert!(
        stdout.contains(&format!("wrote {} (0600) beside it", new.display())),
        "{stdout}"
    );
    assert!(stdout.contains("+name = \"fct_revenue\""), "{stdout}");
    assert!(
        stdout.contains("-# alice: raw.orders pages the platform team"),
        "{stdout}"
    );
    let config = Config::load(&new).unwrap();
    assert!(config
        .monitor
        .iter()
        .any(|m| m.table == "analytics.fct_revenue"));

    // A password written in profiles.yml is never copied anywhere.
    let out = shop.root.join("literal").join("config.toml");
    let output = shop.dataward(
        &[
            "--data-dir",
            shop.data().to_str().unwrap(),
            "init",
            "--dbt-project",
            shop.project.to_str().unwrap(),
            "--target",
            "literal",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let written = std::fs::read_to_string(&out).unwrap();
    for seen in [&stdout, &stderr, &written] {
        assert!(!seen.contains(LITERAL_PASSWORD), "{seen}");
    }
    assert!(
        stdout.contains("postgresql://dataward_reader:PASSWORD@127.0.0.1:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("a read-only role, dataward_reader, not dbt's user \"postgres\""),
        "{stdout}"
    );
}

/// A bare project folder: dbt_project.yml and profiles.yml, nothing built.
fn bare_project(name: &str, profiles: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("project/dbt_project.yml"),
        &format!("name: {name}\nprofile: {name}\n"),
    );
    write(&dir.path().join("project/profiles.yml"), profiles);
    dir
}

fn init_in(dir: &Path, extra: &[&str]) -> Output {
    let project = dir.join("project");
    let out = dir.join("out/config.toml");
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args([
            "--data-dir",
            dir.join("data").to_str().unwrap(),
            "init",
            "--dbt-project",
        ])
        .arg(&project)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .env_remove("DBT_PROFILES_DIR")
        .output()
        .unwrap()
}

const PG_PROFILE: &str = "shop:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n      \
host: db.internal\n      port: 5432\n      user: dbt\n      password: \"{{ env_var('DBT_PG_PASSWORD') }}\"\n      \
dbname: postgres\n      schema: analytics\n";

#[test]
fn a_profile_that_does_not_exist_is_named_with_the_ones_that_do() {
    let dir = bare_project("shop", PG_PROFILE);
    let output = init_in(dir.path(), &["--profile", "nope"]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    let profiles = dir
        .path()
        .join("project/profiles.yml")
        .canonicalize()
        .unwrap();
    assert!(
        stderr.contains(&format!(
            "{}: no profile \"nope\" (--profile names it); the file has: shop",
            profiles.display()
        )),
        "{stderr}"
    );
    // A target the profile does not have: the line of its outputs.
    let output = init_in(dir.path(), &["--target", "prod"]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains("profiles.yml: line 4: profile \"shop\" has no target \"prod\" (--target names it); its targets: dev"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("out/config.toml").exists(),
        "nothing written"
    );
}

#[test]
fn missing_artifacts_name_the_dbt_command_that_makes_them() {
    let dir = bare_project("shop", PG_PROFILE);
    let output = init_in(dir.path(), &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("target/manifest.json does not exist"),
        "{stderr}"
    );
    assert!(stderr.contains("Make it with `dbt parse`"), "{stderr}");
    assert!(
        stderr.contains("`dbt docs generate` also writes catalog.json"),
        "{stderr}"
    );
}

#[test]
fn a_manifest_from_another_project_is_refused() {
    let test = "a_manifest_from_another_project_is_refused";
    let Some(hubspot) = fixture_or_skip(test, "hubspot-manifest.json") else {
        return;
    };
    let dir = bare_project("shop", PG_PROFILE);
    let manifest = dir.path().join("project/target/manifest.json");
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::copy(&hubspot, &manifest).unwrap();
    let output = init_in(dir.path(), &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "manifest.json was written for project \"hubspot_integration_tests\", not for \"shop\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("run `dbt parse` in"), "{stderr}");
    assert!(
        !dir.path().join("out/config.toml").exists(),
        "nothing written"
    );
}

#[test]
fn an_unsupported_adapter_is_written_commented_out_and_exits_2() {
    let test = "an_unsupported_adapter_is_written_commented_out_and_exits_2";
    let Some(jaffle) = fixture_or_skip(test, "jaffle_shop-manifest.json") else {
        return;
    };
    // jaffle_shop's own manifest, and a BigQuery profile (an adapter dataward cannot
    // watch yet) with a keyfile and a token that must not be copied.
    let dir = bare_project(
        "jaffle_shop",
        "jaffle_shop:\n  target: dev\n  outputs:\n    dev:\n      type: bigquery\n      \
         project: shop-prod\n      dataset: analytics\n      threads: 4\n      \
         keyfile: /secrets/sa.json\n      token: \"bq-secret-token\"\n",
    );
    let manifest = dir.path().join("project/target/manifest.json");
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::copy(&jaffle, &manifest).unwrap();
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "profiles.yml: line 5: target \"dev\" of profile \"jaffle_shop\" is a bigquery warehouse"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("BigQuery is not supported yet"), "{stderr}");
    let out = dir.path().join("out/config.toml");
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.contains("# [warehouse.jaffle_shop]\n# kind = \"bigquery\"\n"),
        "{written}"
    );
    assert!(written.contains("# dataset = \"analytics\""), "{written}");
    assert!(!written.contains("bq-secret-token"), "{written}");
    assert!(!written.contains("/secrets/sa.json"), "{written}");
    assert!(
        written.contains("# table = \"main.customers\""),
        "{written}"
    );
    // Lineage, people and domains work as they are; no monitor runs against nothing.
    let config = Config::load(&out).unwrap();
    assert!(config.warehouse.is_empty());
    assert!(config.monitor.is_empty());
    assert!(config.lineage.is_some());
}

/// A bare project with a manifest of its own (the microbatch fixture, project "shop").
fn project_with_manifest(profiles: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = bare_project("shop", profiles);
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/lineage/microbatch_manifest.json"),
    )
    .unwrap();
    let manifest = manifest.replacen(
        "\"adapter_type\": \"postgres\"",
        "\"adapter_type\": \"postgres\", \"project_name\": \"shop\"",
        1,
    );
    write(
        &dir.path().join("project/target/manifest.json"),
        &edit(manifest),
    );
    dir
}

#[test]
fn the_export_line_init_prints_runs_nothing_when_pasted_into_a_shell() {
    // A hostile project's host and password variable, each trying to run a command.
    let profiles = PG_PROFILE
        .replace(
            "host: db.internal",
            "host: \"db$(touch HOST_RAN)`touch TICK_RAN`\\\"'\"",
        )
        .replace("DBT_PG_PASSWORD", "X}$(touch VAR_RAN)");
    let dir = project_with_manifest(&profiles, |m| m);
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let export = stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("export DATAWARD_"))
        .unwrap_or_else(|| panic!("no export line: {stdout}"));
    let shell = Command::new("sh")
        .arg("-c")
        .arg(format!("{export}\nprintf %s \"$DATAWARD_SHOP_URL\""))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        shell.status.success(),
        "{export}: {}",
        String::from_utf8_lossy(&shell.stderr)
    );
    for ran in ["HOST_RAN", "TICK_RAN", "VAR_RAN"] {
        assert!(
            !dir.path().join(ran).exists(),
            "pasting {export} ran a command"
        );
    }
    // The URL holds the host as written; the password is left for the person.
    let url = String::from_utf8_lossy(&shell.stdout);
    assert!(
        url.contains("@db$(touch HOST_RAN)`touch TICK_RAN`\"'"),
        "{url}"
    );
    assert!(url.contains(":PASSWORD@"), "{url}");
    // The same line in the config's comment, and the config still loads.
    let config = std::fs::read_to_string(dir.path().join("out/config.toml")).unwrap();
    assert!(config.contains(&format!("#   {export}")), "{config}");
}

#[test]
fn a_profiles_file_that_leads_outside_its_folder_is_not_read_or_echoed() {
    let dir = project_with_manifest(PG_PROFILE, |m| m);
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("shadow");
    std::fs::write(&secret, "root:TOPSECRETHASH:19000:0:99999:7:::\n").unwrap();
    let profiles = dir.path().join("project/profiles.yml");
    std::fs::remove_file(&profiles).unwrap();
    std::os::unix::fs::symlink(&secret, &profiles).unwrap();
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("TOPSECRET") && !stderr.contains("TOPSECRET"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("profiles.yml: leads to"), "{stderr}");
    assert!(stderr.contains("not read"), "{stderr}");
    // The same for the manifest.
    let dir = project_with_manifest(PG_PROFILE, |m| m);
    let manifest = dir.path().join("project/target/manifest.json");
    std::fs::remove_file(&manifest).unwrap();
    std::os::unix::fs::symlink(&secret, &manifest).unwrap();
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(!stderr.contains("TOPSECRET"), "{stderr}");
    assert!(stderr.contains("manifest.json: leads to"), "{stderr}");
}

#[test]
fn a_newline_in_a_model_name_cannot_forge_a_line_of_inits_output() {
    let dir = project_with_manifest(PG_PROFILE, |m| {
        m.replace(
            "\"name\": \"fct_weekly\"",
            "\"name\": \"fct_weekly\\nwrote /etc/cron.d/evil (0600): all good\"",
        )
    });
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("fct_weekly\\x0awrote /etc/cron.d/evil"),
        "{stdout}"
    );
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(
            !line.trim_start().starts_with("wrote /etc/cron.d"),
            "forged: {stdout}"
        );
    }
    let config = std::fs::read_to_string(dir.path().join("out/config.toml")).unwrap();
    assert!(
        !config.lines().any(|l| l.starts_with("wrote /etc/cron.d")),
        "{config}"
    );
    Config::load(&dir.path().join("out/config.toml")).unwrap();
}

/// dbt v2's own project and artifacts (tests/fixtures/dbt_v2: the manifest and
/// run_results.json dbt Core v2 wrote when it built that project into DuckDB): init
/// reads the manifest and names the run results for the engine to read.
#[test]
fn init_on_a_dbt_v2_project_reads_its_manifest_and_names_its_run_results() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dbt_v2");
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    for file in ["dbt_project.yml", "profiles.yml"] {
        std::fs::create_dir_all(&project).unwrap();
        std::fs::copy(fixtures.join("project").join(file), project.join(file)).unwrap();
    }
    std::fs::create_dir_all(project.join("target")).unwrap();
    for file in ["manifest.json", "run_results.json"] {
        std::fs::copy(fixtures.join(file), project.join("target").join(file)).unwrap();
    }
    // The DuckDB file dbt built is not kept in the fixture; init only checks that the
    // file the profile names is there (doctor and check open it).
    std::fs::write(project.join("shop.duckdb"), "").unwrap();
    let output = init_in(dir.path(), &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("target/manifest.json"), "{stdout}");
    let out = dir.path().join("out/config.toml");
    let config = Config::load(&out).unwrap();
    let lineage = config.lineage.as_ref().expect("a [lineage] section");
    assert_eq!(
        lineage.run_results.as_deref(),
        Some(project.join("target/run_results.json").as_path())
    );
    let loaded =
        dataward::lineage::Lineage::load(&config.resolve(&lineage.manifest), None).unwrap();
    assert!(loaded.resolve("model.shop.stg_payments").is_ok());
    let run = dataward::lineage::run_results::load(
        &config.resolve(lineage.run_results.as_ref().unwrap()),
    )
    .unwrap();
    assert_eq!(run.results.len(), 10);
    // The source dbt v2 declared is watched.
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.contains("table = \"raw.payments\""), "{written}");
}
