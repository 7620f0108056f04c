//! `dataward init` on a dbt-duckdb project, as a user runs it: the project in
//! tests/fixtures/dbt_duckdb (a loader's `raw.orders` with five weeks of hourly rows, a
//! seed, two table models) built by real dbt with dbt-duckdb into a DuckDB file; then
//! the config `init` writes passes `doctor`, `check --once` runs every check it
//! generated, and with the loader stopped (its last 30 hours of rows deleted through
//! the venv's own `duckdb` package) `serve` opens the incident.
//!
//! Needs the venv .ci/dbt-duckdb.sh makes (/opt/dataward/dbt-duckdb, or
//! $DATAWARD_DBT_DUCKDB_VENV) and DuckDB's library from .ci/duckdb.sh
//! (/opt/dataward/duckdb, or $DATAWARD_DUCKDB_DIR): without them the real test says so
//! and passes, unless DATAWARD_REQUIRE_ALL=1. The refusals need neither.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dataward::config::Config;
use serde_json::Value;

#[path = "support/adbc.rs"]
mod adbc_support;
use adbc_support::{copy_dir, text};

/// The dbt-duckdb venv and DuckDB's library folder, or why the test cannot run.
fn venv_and_driver_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let venv = adbc_support::dbt_venv(test, "duckdb")?;
    Some((venv, adbc_support::duckdb_folder(test)?))
}

/// The binary, run from `cwd`, with no ambient dbt or ADBC settings but `env`.
fn dataward(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    adbc_support::dataward(Some(cwd), args, env)
}

/// Runs a program of the venv in the project folder; panics with its output on failure.
fn venv_run(venv: &Path, program: &str, project: &Path, args: &[&str]) -> String {
    adbc_support::venv_run(venv, program, project, args, &[])
}

/// A spawned `serve`, killed when dropped so a failed assertion leaves none behind.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn init_on_a_dbt_duckdb_project_writes_monitors_that_doctor_check_and_serve_run() {
    let test = "init_on_a_dbt_duckdb_project_writes_monitors_that_doctor_check_and_serve_run";
    let Some((venv, driver)) = venv_and_driver_or_skip(test) else {
        return;
    };
    let driver_path = driver.to_str().unwrap();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dbt_duckdb"),
        &project,
    );
    // The loader lands raw.orders; dbt builds the seed and models beside it, and
    // writes the catalog (column types) init reads.
    venv_run(&venv, "python", &project, &["load.py", "shop.duckdb"]);
    venv_run(&venv, "dbt", &project, &["build"]);
    venv_run(&venv, "dbt", &project, &["docs", "generate"]);
    let database = project.canonicalize().unwrap().join("shop.duckdb");

    // init, from a folder that is not the project's: the relative `path` is the file
    // dbt opened, from the project folder.
    let config_path = root.path().join("out/config.toml");
    let data = root.path().join("data");
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "init",
            "--dbt-project",
            project.to_str().unwrap(),
            "--out",
            config_path.to_str().unwrap(),
        ],
        &[("DBT_PROFILES_DIR", project.to_str().unwrap())],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let written = std::fs::read_to_string(&config_path).unwrap();
    let config = Config::load(&config_path).unwrap();
    let warehouse = &config.warehouse["shop_duck"];
    assert_eq!(warehouse.kind, "duckdb", "{written}");
    assert_eq!(warehouse.path.as_deref(), Some(database.as_path()));
    assert_eq!(warehouse.url_env, None);
    adbc_support::assert_fixture_monitors(&config, &written);

    // A rerun on the unchanged project writes the same bytes: nothing.
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "init",
            "--dbt-project",
            project.to_str().unwrap(),
            "--out",
            config_path.to_str().unwrap(),
        ],
        &[("DBT_PROFILES_DIR", project.to_str().unwrap())],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("already holds this"), "{stdout}");

    // A profile that reads the path from the environment: init reads it as dbt does,
    // writes the file it names, and names the variable beside it.
    let profiles = root.path().join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("profiles.yml"),
        "shop_duck:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      \
         path: \"{{ env_var('SHOP_DUCK_DB') }}\"\n",
    )
    .unwrap();
    let from_env = root.path().join("env/config.toml");
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "init",
            "--dbt-project",
            project.to_str().unwrap(),
            "--out",
            from_env.to_str().unwrap(),
        ],
        &[
            ("DBT_PROFILES_DIR", profiles.to_str().unwrap()),
            ("SHOP_DUCK_DB", database.to_str().unwrap()),
        ],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let env_written = std::fs::read_to_string(&from_env).unwrap();
    assert!(
        env_written.contains("# profiles.yml reads this path from $SHOP_DUCK_DB"),
        "{env_written}"
    );
    let env_config = Config::load(&from_env).unwrap();
    assert_eq!(
        env_config.warehouse["shop_duck"].path.as_deref(),
        Some(database.as_path())
    );

    // doctor finds the driver, opens the file, and plans every check.
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "doctor",
            "--config",
            config_path.to_str().unwrap(),
        ],
        &[("ADBC_DRIVER_PATH", driver_path)],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("✓ driver shop_duck"), "{stdout}");
    assert!(
        stdout.contains(&format!("opens as duckdb {}", database.display())),
        "{stdout}"
    );
    // Every query a poll can send for the monitor is planned, not only the scan.
    let orders = stdout
        .lines()
        .find(|l| l.starts_with("✓ monitor raw.orders"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        orders.contains(
            "the poll's scan and each check's own query plan (row_count, schema, freshness, volume, null_rate)"
        ),
        "{orders}"
    );

    // check --once runs every generated check on what dbt built, each healthy. Its own
    // data directory, so serve below polls at once rather than on check's schedule.
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            root.path().join("check-data").to_str().unwrap(),
            "check",
            "--config",
            config_path.to_str().unwrap(),
            "--once",
            "--json",
        ],
        &[("ADBC_DRIVER_PATH", driver_path)],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l.get("poll").is_none())
        .collect();
    let generated: usize = config.monitor.iter().map(|m| m.checks.len()).sum();
    assert_eq!(lines.len(), generated, "{stdout}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "{line}");
    }
    let volume = lines
        .iter()
        .find(|l| l["check"] == "volume")
        .expect("a volume line");
    assert_eq!(volume["verdict"], "ok", "{volume}");

    // The loader stops: its last 30 hours of rows are gone from the file.
    venv_run(
        &venv,
        "python",
        &project,
        &[
            "-c",
            "import duckdb; c = duckdb.connect('shop.duckdb'); \
             c.execute(\"DELETE FROM raw.orders WHERE loaded_at > CAST(now() AS TIMESTAMP) - INTERVAL 30 HOUR\"); \
             c.close()",
        ],
    );

    // serve polls, and opens the incident on raw.orders.
    let serve = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .current_dir(root.path())
        .args([
            "--data-dir",
            data.to_str().unwrap(),
            "serve",
            "--log-stderr",
        ])
        .arg("--config")
        .arg(&config_path)
        .env("ADBC_DRIVER_PATH", driver_path)
        .env_remove("XDG_CONFIG_HOME")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut serve = Serve(serve);
    let deadline = Instant::now() + Duration::from_secs(120);
    let incident = loop {
        assert!(serve.0.try_wait().unwrap().is_none(), "serve ended early");
        let output = dataward(
            root.path(),
            &["--data-dir", data.to_str().unwrap(), "incidents", "--json"],
            &[],
        );
        let (stdout, _) = text(&output);
        let found = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|i| i["table"] == "raw.orders");
        if let Some(incident) = found {
            break incident;
        }
        assert!(Instant::now() < deadline, "no incident: {stdout}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(incident["status"], "open", "{incident}");
    assert_eq!(incident["monitor"], "raw.orders", "{incident}");
    let evidence = incident["evidence"].to_string();
    assert!(evidence.contains("last loaded"), "{incident}");
    let blast = incident["blast"].to_string();
    assert!(
        blast.contains("model.shop_duck.fct_orders")
            && blast.contains("model.shop_duck.customer_orders"),
        "the models dbt builds from it: {incident}"
    );
}

/// A project folder with dbt_project.yml and the profile given, nothing built.
fn bare_project(profile_output: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("dbt_project.yml"),
        "name: shop_duck\nprofile: shop_duck\n",
    )
    .unwrap();
    std::fs::write(
        project.join("profiles.yml"),
        format!(
            "shop_duck:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n{profile_output}"
        ),
    )
    .unwrap();
    dir
}

fn init_bare(dir: &Path, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let output = dataward(
        dir,
        &[
            "--data-dir",
            dir.join("data").to_str().unwrap(),
            "init",
            "--dbt-project",
            dir.join("project").to_str().unwrap(),
            "--out",
            dir.join("out/config.toml").to_str().unwrap(),
        ],
        env,
    );
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

#[test]
fn an_in_memory_or_remote_duckdb_target_is_refused_as_nothing_to_watch() {
    for (output, said) in [
        (
            "      path: \":memory:\"\n",
            "line 6: path is \":memory:\": dbt builds in an in-memory database",
        ),
        (
            "      threads: 1\n",
            "line 5: this duckdb target has no `path`, so dbt builds in an in-memory database",
        ),
        (
            "      path: \"md:shop\"\n",
            "line 6: path \"md:shop\" is not a local file",
        ),
        ("      path: shop.duckdb\n", "is not there: run `dbt build`"),
    ] {
        let dir = bare_project(output);
        let (code, stdout, stderr) = init_bare(dir.path(), &[]);
        assert_eq!(code, Some(2), "{output}: {stdout}\n{stderr}");
        assert!(stderr.contains("profiles.yml: "), "{stderr}");
        assert!(stderr.contains(said), "{output}: {stderr}");
        assert!(
            !dir.path().join("out/config.toml").exists(),
            "nothing written"
        );
    }
}

#[test]
fn a_duckdb_path_from_env_var_is_read_as_dbt_reads_it_or_refused_when_unset() {
    let dir = bare_project("      path: \"{{ env_var('SHOP_DUCK_DB') }}\"\n");
    let (code, _, stderr) = init_bare(dir.path(), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 6: path: env_var('SHOP_DUCK_DB') is not set in this environment"),
        "{stderr}"
    );
    // Set, it names the file: without a built file there, that is what is said.
    let elsewhere = dir.path().join("elsewhere.duckdb");
    let (code, _, stderr) = init_bare(dir.path(), &[("SHOP_DUCK_DB", elsewhere.to_str().unwrap())]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the database file {} (path {:?}) is not there",
            elsewhere.display(),
            elsewhere.display().to_string()
        )),
        "{stderr}"
    );
}
