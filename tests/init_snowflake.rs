//! `dataward init` on a dbt-snowflake project, as a user runs it: the project in
//! tests/fixtures/dbt_snowflake (a loader's `raw.orders` with five weeks of hourly rows,
//! a seed, two table models) built by real dbt with dbt-snowflake against fakesnow's
//! server (`fakesnow -s`: Snowflake's HTTP protocol on loopback, DuckDB underneath);
//! then the config `init` writes passes `doctor` and `check --once` runs every check
//! it generated, through the ADBC Snowflake driver found by its manifest in
//! `ADBC_DRIVER_PATH`, as `dbc install snowflake` leaves it. And every secret a
//! profile can hold stays out of what `init` writes and says.
//!
//! Needs the venvs .ci/dbt-snowflake.sh (/opt/dataward/dbt-snowflake, or
//! $DATAWARD_DBT_SNOWFLAKE_VENV) and .ci/snowflake.sh (/opt/dataward/snowflake, or
//! $SNOWFLAKE_VENV) make: without them each test says so and passes, unless
//! DATAWARD_REQUIRE_ALL=1, where it fails.

use std::path::{Path, PathBuf};
use std::process::Output;

use dataward::config::Config;
use serde_json::Value;

#[path = "support/adbc.rs"]
mod adbc_support;
use adbc_support::{copy_dir, text, venv_run, Fakesnow};

struct Venvs {
    dbt: PathBuf,
    fakesnow: PathBuf,
    driver: PathBuf,
}

fn venvs_or_skip(test: &str) -> Option<Venvs> {
    let dbt = adbc_support::dbt_venv(test, "snowflake")?;
    let snowflake = adbc_support::snowflake_venv(test)?;
    Some(Venvs {
        dbt,
        fakesnow: snowflake.fakesnow,
        driver: snowflake.library,
    })
}

fn fakesnow(program: &Path) -> Fakesnow {
    Fakesnow::start(program)
}

/// The binary, run from `cwd`, with no ambient dbt or ADBC settings but `env`.
fn dataward(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    adbc_support::dataward(Some(cwd), args, env)
}

/// The fixture project in a folder of its own.
fn project(root: &Path) -> PathBuf {
    let project = root.join("project");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dbt_snowflake"),
        &project,
    );
    project
}

/// An ADBC driver manifest for the driver's library, as `dbc install snowflake`
/// writes one; its folder is what ADBC_DRIVER_PATH names.
fn driver_manifest(root: &Path, library: &Path) -> PathBuf {
    let folder = root.join("drivers");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("snowflake.toml"),
        format!(
            "manifest_version = 1\nname = \"ADBC Snowflake Driver\"\nversion = \"1.11.0\"\n\
             [Driver]\n[Driver.shared]\nlinux_amd64 = \"{}\"\n",
            library.display()
        ),
    )
    .unwrap();
    folder
}

#[test]
fn init_on_a_dbt_snowflake_project_writes_monitors_that_doctor_and_check_run() {
    let test = "init_on_a_dbt_snowflake_project_writes_monitors_that_doctor_and_check_run";
    let Some(venvs) = venvs_or_skip(test) else {
        return;
    };
    let server = fakesnow(&venvs.fakesnow);
    let port = server.port.to_string();
    let root = tempfile::tempdir().unwrap();
    let project = project(root.path());
    let env = [
        ("FAKESNOW_PORT", port.as_str()),
        ("SHOP_SNOW_PASSWORD", "any"),
    ];
    // The loader lands RAW.ORDERS; dbt builds the seed and models beside it, and
    // writes the catalog (column types) init reads.
    venv_run(&venvs.dbt, "python", &project, &["load.py"], &env);
    venv_run(&venvs.dbt, "dbt", &project, &["build"], &env);
    venv_run(&venvs.dbt, "dbt", &project, &["docs", "generate"], &env);

    let config_path = root.path().join("out/config.toml");
    let data = root.path().join("data");
    let mut init_env = vec![("DBT_PROFILES_DIR", project.to_str().unwrap())];
    init_env.extend(env);
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
        &init_env,
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let written = std::fs::read_to_string(&config_path).unwrap();
    let config = Config::load(&config_path).unwrap();
    let warehouse = &config.warehouse["shop_snow"];
    assert_eq!(warehouse.kind, "snowflake", "{written}");
    assert_eq!(warehouse.account.as_deref(), Some("fakesnow"));
    assert_eq!(warehouse.host.as_deref(), Some("127.0.0.1"));
    assert_eq!(warehouse.port, Some(server.port));
    assert_eq!(warehouse.protocol.as_deref(), Some("http"));
    assert_eq!(warehouse.database.as_deref(), Some("DW"));
    assert_eq!(warehouse.user.as_deref(), Some("fake"));
    assert_eq!(warehouse.role.as_deref(), Some("transformer"));
    assert_eq!(warehouse.warehouse.as_deref(), Some("transforming"));
    // The password is named by the variable the profile reads, never copied.
    assert_eq!(
        warehouse.password_env.as_deref(),
        Some("SHOP_SNOW_PASSWORD")
    );
    adbc_support::assert_fixture_monitors(&config, &written);

    // doctor finds the driver by its manifest, logs in, and checks every monitor.
    let drivers = driver_manifest(root.path(), &venvs.driver);
    let run_env = [
        ("ADBC_DRIVER_PATH", drivers.to_str().unwrap()),
        ("SHOP_SNOW_PASSWORD", "any"),
    ];
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "doctor",
            "--config",
            config_path.to_str().unwrap(),
        ],
        &run_env,
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("✓ driver shop_snow"), "{stdout}");
    for monitor in ["raw.orders", "fct_orders", "customer_orders"] {
        assert!(
            stdout.contains(&format!("✓ monitor {monitor}")),
            "{monitor}: {stdout}"
        );
    }
    // fakesnow cannot EXPLAIN (DuckDB underneath parses no `USING TEXT`): doctor says
    // so, naming where it asked and what it was told, and compiles each query instead.
    let orders = stdout
        .lines()
        .find(|l| l.starts_with("✓ monitor raw.orders"))
        .unwrap();
    assert!(
        orders.contains(&format!(
            "no plan: http://127.0.0.1:{port} refused EXPLAIN USING TEXT"
        )) && orders.contains("syntax error"),
        "{orders}"
    );
    assert!(
        orders.contains(
            "the poll's scan and each check's own query compile (row_count, schema, freshness, volume, null_rate)"
        ),
        "{orders}"
    );

    // check --once runs every generated check on what dbt built, each healthy.
    let output = dataward(
        root.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "check",
            "--config",
            config_path.to_str().unwrap(),
            "--once",
            "--json",
        ],
        &run_env,
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    // One line per check, then the poll's cost per warehouse (`{"poll": ...}`).
    let (polls, lines): (Vec<Value>, Vec<Value>) = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .partition(|l| l.get("poll").is_some());
    assert_eq!(polls.len(), 1, "{stdout}");
    let generated: usize = config.monitor.iter().map(|m| m.checks.len()).sum();
    assert_eq!(lines.len(), generated, "{stdout}");
    for line in &lines {
        assert_eq!(line["health"], "ok", "{line}\n{stderr}");
    }
    let rows = lines
        .iter()
        .find(|l| l["check"] == "row_count" && l["table"] == "raw.orders")
        .expect("a row count of raw.orders");
    assert_eq!(rows["observed"], 840.0, "{rows}");
}

/// Every secret a dbt-snowflake profile can hold, each a value found nowhere else.
const SECRETS: [(&str, &str); 6] = [
    ("password", "pw-5f1d0c9e-never-copied"),
    ("private_key", "pk-8a2b7e41-never-copied"),
    ("private_key_passphrase", "pp-3c9d4f20-never-copied"),
    ("token", "tk-71e0a5b3-never-copied"),
    ("oauth_client_id", "ci-0b6e2d94-never-copied"),
    ("oauth_client_secret", "cs-e4a81f67-never-copied"),
];

#[test]
fn no_secret_of_a_snowflake_profile_reaches_what_init_writes_or_says() {
    let test = "no_secret_of_a_snowflake_profile_reaches_what_init_writes_or_says";
    let Some(venvs) = venvs_or_skip(test) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let project = project(root.path());
    // dbt parse reads the project without connecting: the manifest names the tables.
    venv_run(
        &venvs.dbt,
        "dbt",
        &project,
        &["parse"],
        &[("FAKESNOW_PORT", "1"), ("SHOP_SNOW_PASSWORD", "any")],
    );
    let key_file = root.path().join("dataward.p8");
    std::fs::write(&key_file, "not a key: never read by init").unwrap();
    let base = "      type: snowflake\n      account: fakesnow\n      user: fake\n      \
                database: DW\n      schema: analytics\n";
    let secrets = |keys: &[&str]| -> String {
        SECRETS
            .iter()
            .filter(|(key, _)| keys.contains(key))
            .map(|(key, value)| format!("      {key}: \"{value}\"\n"))
            .collect()
    };
    let key_path = format!("      private_key_path: {}\n", key_file.display());
    // Each way dbt-snowflake logs in, with the secrets it reads and others beside
    // them, and the exit init makes: 0 when it writes the login (a variable's name or
    // the key's file), 2 when it cannot log in unattended that way and writes the
    // warehouse commented out.
    let logins: Vec<(String, i32)> = vec![
        (secrets(&["password", "token", "oauth_client_secret"]), 0),
        (
            format!("      authenticator: snowflake\n{}", secrets(&["password"])),
            0,
        ),
        (format!("{key_path}{}", secrets(&["password", "token"])), 0),
        // An encrypted key: its passphrase from a variable of dataward's own.
        (
            format!(
                "{key_path}{}",
                secrets(&["private_key_passphrase", "password"])
            ),
            0,
        ),
        // The key itself in the profile, encrypted or not.
        (
            format!(
                "      authenticator: snowflake_jwt\n{}",
                secrets(&["private_key"])
            ),
            0,
        ),
        (
            format!(
                "      authenticator: snowflake_jwt\n{}",
                secrets(&["private_key", "private_key_passphrase"])
            ),
            0,
        ),
        (
            format!(
                "      authenticator: oauth\n{}",
                secrets(&["token", "password"])
            ),
            0,
        ),
        (
            format!(
                "      authenticator: oauth\n{}",
                secrets(&["token", "oauth_client_id", "oauth_client_secret"])
            ),
            2,
        ),
        (
            format!(
                "      authenticator: programmatic_access_token\n{}",
                secrets(&["token"])
            ),
            0,
        ),
        (
            format!(
                "      authenticator: externalbrowser\n{}",
                secrets(&["password"])
            ),
            2,
        ),
    ];
    for (n, (login, exit)) in logins.iter().enumerate() {
        let profiles = root.path().join(format!("profiles{n}"));
        std::fs::create_dir_all(&profiles).unwrap();
        std::fs::write(
            profiles.join("profiles.yml"),
            format!("shop_snow:\n  target: dev\n  outputs:\n    dev:\n{base}{login}"),
        )
        .unwrap();
        let out = root.path().join(format!("out{n}/config.toml"));
        let output = dataward(
            root.path(),
            &[
                "--data-dir",
                root.path().join("data").to_str().unwrap(),
                "init",
                "--dbt-project",
                project.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            &[("DBT_PROFILES_DIR", profiles.to_str().unwrap())],
        );
        let (stdout, stderr) = text(&output);
        assert_eq!(
            output.status.code(),
            Some(*exit),
            "login {login:?}: {stdout}\n{stderr}"
        );
        let mut said = format!("{stdout}\n{stderr}");
        for entry in std::fs::read_dir(out.parent().unwrap()).unwrap() {
            said.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
        assert!(
            said.contains("kind = \"snowflake\""),
            "login {login:?}: {said}"
        );
        if *exit == 0 {
            let config = Config::load(&out).unwrap();
            let warehouse = &config.warehouse["shop_snow"];
            assert_eq!(warehouse.kind, "snowflake");
            // Each secret the login reads is named by a variable, written live.
            let named = [
                (
                    "private_key_passphrase",
                    &warehouse.private_key_passphrase_env,
                    "DATAWARD_SHOP_SNOW_KEY_PASSPHRASE",
                ),
                (
                    "private_key",
                    &warehouse.private_key_env,
                    "DATAWARD_SHOP_SNOW_PRIVATE_KEY",
                ),
            ];
            for (key, setting, var) in named {
                if login.contains(&format!("{key}:")) {
                    assert_eq!(setting.as_deref(), Some(var), "login {login:?}: {said}");
                    assert!(said.contains(&format!("export {var}=")), "{said}");
                }
            }
        }
        for (key, value) in SECRETS {
            assert!(
                !said.contains(value),
                "login {login:?}: the {key} was copied:\n{said}"
            );
        }
    }
}
