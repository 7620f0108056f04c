//! `dataward doctor` on the config `dataward init` wrote for a dbt project of our own,
//! built by real dbt into a throwaway PostgreSQL (tests/support/dbt.rs), logging in as
//! a role that may only read: every line ✓ and exit 0; then, after the test drops a
//! table, revokes a grant and loosens the config's mode, a ✗ on exactly those lines with
//! the server's error and what to do, and exit 1. Needs dbt (the .ci/dbt.sh venv) and
//! PostgreSQL server binaries; skips without them unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::os::unix::fs::PermissionsExt;

use support::dbt::{dbt_or_skip, text, Shop};
use support::pg::start_or_skip;

/// The report's line for `what` (`✓ what  detail`), and the fix line under it, if any.
fn line<'a>(report: &'a str, what: &str) -> (&'a str, Option<&'a str>) {
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.get(4..)
                .is_some_and(|rest| rest.starts_with(&format!("{what} ")))
        })
        .unwrap_or_else(|| panic!("no line for {what} in\n{report}"));
    let fix = lines
        .get(at + 1)
        .filter(|next| next.trim_start().starts_with('→'));
    (lines[at], fix.copied())
}

#[test]
fn doctor_is_all_ticks_then_names_the_dropped_table_and_the_revoked_grant() {
    let test = "doctor_is_all_ticks_then_names_the_dropped_table_and_the_revoked_grant";
    let Some(dbt) = dbt_or_skip(test) else { return };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    let shop = Shop::new(&pg, &dbt);
    shop.build();
    let output = shop.init(&[]);
    assert!(output.status.success(), "{:?}", text(&output));
    // dataward reads as a role that may only read what it watches.
    pg.execute(
        "CREATE ROLE watcher LOGIN;
         GRANT USAGE ON SCHEMA raw, analytics TO watcher;
         GRANT SELECT ON ALL TABLES IN SCHEMA raw, analytics TO watcher;",
    );
    let url = format!("postgresql://watcher@127.0.0.1:{}/postgres", pg.port);
    let config = shop.config();
    let doctor = || {
        shop.dataward(
            &[
                "--data-dir",
                shop.data().to_str().unwrap(),
                "doctor",
                "--config",
                config.to_str().unwrap(),
            ],
            &[("DATAWARD_SHOP_URL", &url)],
        )
    };

    let output = doctor();
    let (report, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{report}\n{stderr}");
    assert!(!report.lines().any(|l| l.starts_with('✗')), "{report}");
    assert!(report.ends_with(": all good\n"), "{report}");
    let (warehouse, _) = line(&report, "warehouse shop");
    assert!(
        warehouse.contains(&format!(
            "reachable as watcher@127.0.0.1:{}/postgres ($DATAWARD_SHOP_URL)",
            pg.port
        )),
        "{warehouse}"
    );
    let (orders, _) = line(&report, "monitor raw.orders");
    assert!(orders.starts_with("✓ "), "{orders}");
    assert!(
        orders.contains("raw.orders: 5 columns, _loaded_at timestamp with time zone"),
        "{orders}"
    );
    assert!(
        orders.contains("row_count, schema, freshness, volume plans ("),
        "{orders}"
    );
    for what in [
        "monitor dim_customers",
        "monitor fct_events",
        "monitor billing.payments",
        "manifest",
        "catalog",
        "notes",
        "engine",
    ] {
        let (found, _) = line(&report, what);
        assert!(found.starts_with("✓ "), "{found}");
    }
    assert!(
        line(&report, "notes").0.contains("every name resolves"),
        "{report}"
    );
    assert!(
        line(&report, "engine").0.contains("none runs on"),
        "{report}"
    );

    // A table is dropped, a grant revoked, and the config made writable by its group.
    pg.execute(
        "DROP TABLE analytics.dim_customers;
         REVOKE SELECT ON raw.orders FROM watcher;",
    );
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o660)).unwrap();
    let output = doctor();
    let (report, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}\n{stderr}");
    let (dropped, fix) = line(&report, "monitor dim_customers");
    assert!(
        dropped.starts_with("✗ ")
            && dropped.contains("analytics.dim_customers: 42P01: relation \"analytics.dim_customers\" does not exist"),
        "{dropped}"
    );
    assert!(
        fix.unwrap()
            .contains("the table is not there: build it (`dbt build`"),
        "{report}"
    );
    let (revoked, fix) = line(&report, "monitor raw.orders");
    assert!(
        revoked.starts_with("✗ ")
            && revoked.contains("raw.orders: 42501: permission denied for table orders"),
        "{revoked}"
    );
    assert!(
        fix.unwrap()
            .contains("GRANT SELECT ON \"raw\".\"orders\" TO watcher;"),
        "{report}"
    );
    let loose = report
        .lines()
        .find(|l| l.starts_with("✗ permissions"))
        .unwrap_or_else(|| panic!("no permissions cross in\n{report}"));
    assert!(
        loose.contains("is writable by its group (mode 660)"),
        "{loose}"
    );
    // Everything else still holds.
    for what in [
        "warehouse shop",
        "monitor raw.events",
        "monitor fct_events",
        "manifest",
        "notes",
    ] {
        assert!(line(&report, what).0.starts_with("✓ "), "{what}: {report}");
    }
    assert!(report.ends_with(" ✓, 3 ✗\n"), "{report}");

    // The variable the config names is not set: the warehouse line says which, and its
    // monitors are not checked.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let output = shop.dataward(
        &[
            "--data-dir",
            shop.data().to_str().unwrap(),
            "doctor",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let (report, _) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    let (warehouse, fix) = line(&report, "warehouse shop");
    assert!(
        warehouse.contains("DATAWARD_SHOP_URL is not set"),
        "{warehouse}"
    );
    assert!(
        fix.unwrap().contains("export DATAWARD_SHOP_URL="),
        "{report}"
    );
    assert!(
        line(&report, "monitor fct_events")
            .0
            .contains("not checked: warehouse shop did not answer"),
        "{report}"
    );

    // Credentials the server refuses, and a database it does not have: its code and
    // message, and what to check.
    for (url, code, message, fix_says) in [
        (
            format!("postgresql://nobody@127.0.0.1:{}/postgres", pg.port),
            "28000",
            "role \"nobody\" does not exist",
            "the login was refused",
        ),
        (
            format!("postgresql://watcher@127.0.0.1:{}/nope", pg.port),
            "3D000",
            "database \"nope\" does not exist",
            "the database does not exist",
        ),
    ] {
        let output = shop.dataward(
            &[
                "--data-dir",
                shop.data().to_str().unwrap(),
                "doctor",
                "--config",
                config.to_str().unwrap(),
            ],
            &[("DATAWARD_SHOP_URL", &url)],
        );
        let (report, _) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{report}");
        let (warehouse, fix) = line(&report, "warehouse shop");
        assert!(
            warehouse.starts_with("✗ ")
                && warehouse.contains(&format!("{code}: "))
                && warehouse.contains(message),
            "{warehouse}"
        );
        assert!(fix.unwrap().contains(fix_says), "{report}");
    }

    // A timestamp column that holds text: named, with its type.
    let mut text_config = std::fs::read_to_string(&config).unwrap();
    text_config.push_str(
        "\n[[monitor]]\nname = \"customers_by_name\"\nwarehouse = \"shop\"\n\
         table = \"raw.customers\"\nchecks = [\"freshness\"]\nevery = \"1h\"\n\
         timestamp_column = \"name\"\n",
    );
    std::fs::write(&config, text_config).unwrap();
    let output = doctor();
    let (report, _) = text(&output);
    let (found, fix) = line(&report, "monitor customers_by_name");
    assert!(
        found.starts_with("✗ ")
            && found.contains("raw.customers.name is text, not a timestamp or date"),
        "{report}"
    );
    assert!(fix.unwrap().contains("name one, or cast"), "{report}");
}

// ---------------------------------------------------------------------------------------
// Everything but the warehouse, on a SQLite estate of our own (no PostgreSQL, no dbt):
// the orchestrator and alert destinations against local stand-ins of their APIs on
// 127.0.0.1 (tests/support/http.rs), the engine's socket with a real `dataward serve`,
// permissions, notes that do not resolve, and the exit code.

#[path = "support/http.rs"]
mod http;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use dataward::approve::Actor;
use http::{Api, Behaviour, FakeApi, DBT_ACCOUNT};

const MANIFEST: &str = r#"{
  "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
               "dbt_version": "1.9.1", "adapter_type": "sqlite", "project_name": "tiny"},
  "nodes": {
    "model.tiny.fct_events": {
      "resource_type": "model", "name": "fct_events",
      "relation_name": "\"main\".\"fct_events\"",
      "config": {"materialized": "table"},
      "depends_on": {"nodes": ["source.tiny.app.events"]}
    }
  },
  "sources": {
    "source.tiny.app.events": {"resource_type": "source", "name": "events",
                               "relation_name": "\"main\".\"events\""}
  },
  "exposures": {}, "parent_map": {}, "child_map": {}
}"#;

/// A SQLite warehouse with one table, a manifest, notes, and a config naming them, all
/// private (as `init` writes them); `extra` is appended to the config.
struct Tiny {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: PathBuf,
    data: PathBuf,
}

impl Tiny {
    fn new(extra: &str) -> Tiny {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let warehouse = rusqlite::Connection::open(root.join("wh.db")).unwrap();
        warehouse
            .execute_batch(
                "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, at TEXT);
                 INSERT INTO events (kind, at) VALUES ('a', '2026-01-01T00:00:00Z');",
            )
            .unwrap();
        drop(warehouse);
        std::fs::write(root.join("manifest.json"), MANIFEST).unwrap();
        let tiny = Tiny {
            config: root.join("config.toml"),
            data: root.join("data"),
            root,
            _dir: dir,
        };
        tiny.write(
            "notes.toml",
            "[[reader]]\nid = \"dashboard.events\"\nkind = \"dashboard\"\nreads = [\"fct_events\"]\n\n\
             [[reader]]\nid = \"job.hourly\"\nkind = \"job\"\nreads = [\"model.tiny.fct_events\"]\n",
        );
        let me = Actor::current().user.expect("this account has a name");
        tiny.write(
            "config.toml",
            &format!(
                "[warehouse.wh]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
                 [[monitor]]\nname = \"events\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
                 checks = [\"row_count\", \"schema\"]\nevery = \"5m\"\n\n\
                 [lineage]\nmanifest = \"manifest.json\"\nnotes = \"notes.toml\"\n\n\
                 [people.{me:?}]\nname = \"On call\"\nroles = [\"owner\"]\n\n\
                 [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n\n{extra}"
            ),
        );
        tiny
    }

    /// Writes a file under the root, 0600.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }

    /// `dataward doctor` with only these variables of ours set.
    fn doctor(&self, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
        command
            .arg("--data-dir")
            .arg(&self.data)
            .args(["doctor", "--config"])
            .arg(&self.config)
            .args(extra);
        for (key, value) in env {
            command.env(key, value);
        }
        let output: Output = command.output().expect("run dataward doctor");
        let (report, stderr) = text(&output);
        assert!(stderr.is_empty(), "doctor wrote to stderr: {stderr}");
        (output.status.code(), report)
    }
}

/// The one line for `what`: a ✓ or ✗ and its fix.
fn mark<'a>(report: &'a str, what: &str) -> (bool, &'a str, Option<&'a str>) {
    let (found, fix) = line(report, what);
    (found.starts_with("✓ "), found, fix)
}

#[test]
fn a_sqlite_estate_with_nothing_wrong_is_all_ticks_and_exit_0() {
    let tiny = Tiny::new("");
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report.ends_with(": all good\n"), "{report}");
    for what in [
        "config",
        "warehouse wh",
        "monitor events",
        "manifest",
        "notes",
        "owners",
        "engine",
    ] {
        assert!(mark(&report, what).0, "{what}: {report}");
    }
    assert!(
        mark(&report, "notes").1.contains("2 readers")
            && mark(&report, "notes").1.contains("every name resolves"),
        "{report}"
    );
}

#[test]
fn the_orchestrator_line_is_a_tick_when_dbt_cloud_answers_and_names_the_endpoint_when_not() {
    const TOKEN: &str = "dbtc_doctor_0123456789";
    let api = FakeApi::start(Api::DbtCloud, TOKEN);
    api.dbt_add_job(1187, "Hourly build", true);
    let tiny = Tiny::new(&format!(
        "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = {DBT_ACCOUNT}\n\
         token_env = \"DW_DOCTOR_DBT_TOKEN\"\nbase_url = \"{}\"\ntimeout = \"2s\"\n\n\
         [orchestrator.jobs]\n\"job.hourly\" = 1187\n",
        api.base_url()
    ));
    let env = [("DW_DOCTOR_DBT_TOKEN", TOKEN)];
    let (code, report) = tiny.doctor(&[], &env);
    assert_eq!(code, Some(0), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator dbt_cloud");
    assert!(
        ok && found.contains(&format!(
            "answers at {}: 1 pipeline (Hourly build scheduled)",
            api.base_url()
        )),
        "{report}"
    );
    // It read the account, the job and its last run; it changed nothing.
    assert!(
        api.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        api.requests()
    );

    // The API answers 500 (every try): a cross naming the endpoint and the status.
    api.plan((0..5).map(|_| Behaviour::Status(500, None, "{\"status\": {\"code\": 500}}".into())));
    let (code, report) = tiny.doctor(&[], &env);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "orchestrator dbt_cloud");
    assert!(!ok, "{report}");
    assert!(
        found.contains(&api.base_url())
            && found.contains("dbt Cloud GET /api/v2/accounts/43/ answered 500")
            && found.ends_with("(after 3 tries)"),
        "{found}"
    );
    assert!(fix.unwrap().contains("[orchestrator]"), "{report}");
    assert!(!report.contains(TOKEN), "{report}");

    // The token's variable is not set: the line says which.
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator dbt_cloud");
    assert!(
        !ok && found.contains("DW_DOCTOR_DBT_TOKEN is not set"),
        "{found}"
    );

    // Nothing listens any more: the endpoint is named, with what the network said.
    api.down();
    let (code, report) = tiny.doctor(&[], &env);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator dbt_cloud");
    assert!(!ok, "{report}");
    assert!(
        found.contains(&api.base_url()) && found.contains("dbt Cloud GET /api/v2/accounts/43/: "),
        "{found}"
    );
}

#[test]
fn the_orchestrator_line_signs_in_to_airflow_and_reads_each_dag() {
    const PASSWORD: &str = "airflow-doctor-pw";
    let api = FakeApi::start(Api::Airflow, PASSWORD);
    api.airflow_add_dag("hourly_build", false);
    let tiny = Tiny::new(&format!(
        "[orchestrator]\nkind = \"airflow\"\nbase_url = \"{}\"\nusername = \"{}\"\n\
         password_env = \"DW_DOCTOR_AIRFLOW_PW\"\ntimeout = \"2s\"\n\n\
         [orchestrator.jobs]\n\"job.hourly\" = \"hourly_build\"\n",
        api.base_url(),
        http::AIRFLOW_USER
    ));
    let (code, report) = tiny.doctor(&[], &[("DW_DOCTOR_AIRFLOW_PW", PASSWORD)]);
    assert_eq!(code, Some(0), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator airflow");
    assert!(
        ok && found.contains("1 pipeline (hourly_build scheduled)"),
        "{report}"
    );
    assert!(
        !api.requests()
            .iter()
            .any(|r| r.method == "PATCH" || r.path.contains("dagRuns") && r.method == "POST"),
        "nothing paused or triggered: {:?}",
        api.requests()
    );

    // A wrong password: Airflow's own answer, and the sign-in endpoint.
    let (code, report) = tiny.doctor(&[], &[("DW_DOCTOR_AIRFLOW_PW", "wrong")]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator airflow");
    assert!(
        !ok && found.contains("401") && found.contains("/auth/token"),
        "{found}"
    );
    assert!(!report.contains(PASSWORD), "{report}");
}

#[test]
fn an_orchestrator_with_no_jobs_is_still_asked_whether_it_answers() {
    const TOKEN: &str = "dbtc_doctor_nojobs";
    let api = FakeApi::start(Api::DbtCloud, TOKEN);
    let tiny = Tiny::new(&format!(
        "[orchestrator]\nkind = \"dbt_cloud\"\naccount_id = {DBT_ACCOUNT}\n\
         token_env = \"DW_DOCTOR_DBT_TOKEN\"\nbase_url = \"{}\"\ntimeout = \"2s\"\n",
        api.base_url()
    ));
    api.down();
    let (code, report) = tiny.doctor(&[], &[("DW_DOCTOR_DBT_TOKEN", TOKEN)]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "orchestrator dbt_cloud");
    assert!(!ok && found.contains(&api.base_url()), "{found}");
}

#[test]
fn alert_destinations_are_checked_without_sending_anything_unless_send_test() {
    let pd = FakeApi::start(Api::PagerDuty, "pd-doctor-key-0123");
    let og = FakeApi::start(Api::Opsgenie, "og-doctor-key-4567");
    let slack = FakeApi::start(Api::Slack, "T000/B000/doctorhook");
    let tiny = Tiny::new(&format!(
        "[[alert]]\nname = \"pd\"\nkind = \"pagerduty\"\nrouting_key_env = \"DW_DOCTOR_PD\"\nbase_url = \"{}\"\n\n\
         [[alert]]\nname = \"og\"\nkind = \"opsgenie\"\napi_key_env = \"DW_DOCTOR_OG\"\nbase_url = \"{}\"\n\n\
         [[alert]]\nname = \"chat\"\nkind = \"slack\"\nwebhook_url_env = \"DW_DOCTOR_SLACK\"\n",
        pd.base_url(),
        og.base_url()
    ));
    let hook = slack.base_url();
    let env = [
        ("DW_DOCTOR_PD", pd.secret.as_str()),
        ("DW_DOCTOR_OG", og.secret.as_str()),
        ("DW_DOCTOR_SLACK", hook.as_str()),
    ];
    let (code, report) = tiny.doctor(&[], &env);
    assert_eq!(code, Some(0), "{report}");
    for (what, api) in [("alert pd", &pd), ("alert og", &og), ("alert chat", &slack)] {
        let (ok, found, _) = mark(&report, what);
        assert!(ok, "{report}");
        assert!(
            found.contains(&format!("http://{}", api.addr)) && found.contains("no alert sent"),
            "{found}"
        );
        // Only the host was asked whether it answers: no alert, no secret on the wire.
        let requests = api.requests();
        assert!(!requests.is_empty(), "{what}: nothing reached the host");
        for r in &requests {
            assert_eq!(
                (r.method.as_str(), r.path.as_str()),
                ("GET", "/"),
                "{what}: {r:?}"
            );
            assert!(
                r.body.is_empty() && !r.headers.contains_key("authorization"),
                "{r:?}"
            );
        }
    }
    assert!(pd.alerts().is_empty() && og.alerts().is_empty());
    assert!(slack.slack_messages().is_empty());
    assert!(
        !report.contains(&slack.secret),
        "a webhook's path is its secret: {report}"
    );

    // --send-test: exactly one alert opened and resolved at each destination.
    let before = [
        pd.requests().len(),
        og.requests().len(),
        slack.requests().len(),
    ];
    let (code, report) = tiny.doctor(&["--send-test"], &env);
    assert_eq!(code, Some(0), "{report}");
    for what in ["alert pd", "alert og", "alert chat"] {
        let (ok, found, _) = mark(&report, what);
        assert!(ok && found.contains("delivered and resolved"), "{found}");
    }
    let sent = |api: &FakeApi, from: usize| -> Vec<String> {
        api.requests()[from..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    };
    assert_eq!(
        sent(&pd, before[0]),
        ["POST /v2/enqueue", "POST /v2/enqueue"]
    );
    let alerts = pd.alerts();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].state, "resolved");
    assert_eq!(alerts[0].events, ["trigger", "resolve"]);
    let og_sent = sent(&og, before[1]);
    assert_eq!(og_sent.len(), 2, "{og_sent:?}");
    assert_eq!(og_sent[0], "POST /v2/alerts");
    assert!(og_sent[1].contains("/close"), "{og_sent:?}");
    let alerts = og.alerts();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].state, "closed");
    assert_eq!(
        sent(&slack, before[2]).len(),
        2,
        "the test message and its resolution"
    );
    assert_eq!(slack.slack_messages().len(), 2);

    // A destination whose variable is not set: named, with the line to type.
    let (code, report) = tiny.doctor(&[], &env[1..]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "alert pd");
    assert!(!ok && found.contains("DW_DOCTOR_PD is not set"), "{found}");
    assert!(fix.unwrap().contains("export DW_DOCTOR_PD="), "{report}");
    assert!(mark(&report, "alert og").0, "{report}");

    // A host that does not answer: named, and nothing is claimed sent.
    og.down();
    let (code, report) = tiny.doctor(&[], &env);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "alert og");
    assert!(
        !ok && found.contains(&format!("http://{} does not answer", og.addr)),
        "{found}"
    );
    // A key the API refuses is seen only by a test alert.
    let (code, report) = tiny.doctor(
        &["--send-test"],
        &[("DW_DOCTOR_PD", "wrong-key"), env[1], env[2]],
    );
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, _) = mark(&report, "alert pd");
    assert!(
        !ok && found.contains("refused") && found.contains("Invalid routing key"),
        "{found}"
    );
}

/// Starts `dataward serve` on the estate and waits until its socket answers.
struct Serve(std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(tiny: &Tiny) -> Serve {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(&tiny.config)
        .arg("--data-dir")
        .arg(&tiny.data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let serve = Serve(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::os::unix::net::UnixStream::connect(tiny.data.join("dataward.sock")).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "dataward serve did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    serve
}

#[test]
fn the_engine_line_says_whether_an_engine_answers_on_the_socket() {
    let tiny = Tiny::new("");
    let socket = tiny.data.join("dataward.sock");
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(0), "{report}");
    let (ok, found, _) = mark(&report, "engine");
    assert!(ok && found.contains("none runs on"), "{found}");

    // A real engine: it answers, and says who we are to it.
    let engine = serve(&tiny);
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(0), "{report}");
    let (ok, found, _) = mark(&report, "engine");
    assert!(
        ok && found.contains(&format!("answers on {}", socket.display()))
            && found.contains("you are"),
        "{found}"
    );

    // Killed: its socket is left behind with nobody on it.
    drop(engine);
    assert!(socket.exists());
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "engine");
    assert!(!ok && found.contains("no engine answers on it"), "{found}");
    assert!(fix.unwrap().contains("dataward serve"), "{report}");

    // Something that is not a socket in its place: serve would refuse to start.
    std::fs::remove_file(&socket).unwrap();
    std::fs::write(&socket, "").unwrap();
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "engine");
    assert!(!ok && found.contains("is not a socket"), "{found}");
    assert!(
        fix.unwrap().contains(&format!("rm {}", socket.display())),
        "{report}"
    );
}

#[test]
fn loose_permissions_are_crosses_with_the_chmod_to_run() {
    let tiny = Tiny::new(
        "[[alert]]\nname = \"og\"\nkind = \"opsgenie\"\napi_key_file = \"og.key\"\n\
         base_url = \"http://127.0.0.1:9\"\n",
    );
    let key = tiny.write("og.key", "og-key\n");
    std::fs::create_dir(&tiny.data).unwrap();
    std::fs::set_permissions(&tiny.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let permissions = |report: &str| -> Vec<String> {
        report
            .lines()
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[0].starts_with("✗ permissions"))
            .map(|w| format!("{}\n{}", w[0], w[1]))
            .collect()
    };
    let (_, report) = tiny.doctor(&[], &[]);
    assert!(permissions(&report).is_empty(), "{report}");

    // Readable by others: the config, the secret file, the data directory.
    for (path, mode) in [(&tiny.config, 0o644), (&key, 0o644), (&tiny.data, 0o755)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let crosses = permissions(&report);
    assert_eq!(crosses.len(), 3, "{report}");
    for (path, chmod) in [(&tiny.config, "600"), (&key, "600"), (&tiny.data, "700")] {
        let shown = path.display().to_string();
        assert!(
            crosses
                .iter()
                .any(|c| c.contains(&shown) && c.contains(&format!("chmod {chmod} {shown}"))),
            "{shown}: {report}"
        );
    }

    // Writable by the group: the same, and serve would refuse it too.
    std::fs::set_permissions(&tiny.config, std::fs::Permissions::from_mode(0o620)).unwrap();
    let (_, report) = tiny.doctor(&[], &[]);
    assert!(
        permissions(&report)
            .iter()
            .any(|c| c.contains("writable by its group") && c.contains("chmod 600")),
        "{report}"
    );

    // Put right, every permissions line is a tick.
    for (path, mode) in [(&tiny.config, 0o600), (&key, 0o600), (&tiny.data, 0o700)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let (_, report) = tiny.doctor(&[], &[]);
    assert!(permissions(&report).is_empty(), "{report}");
}

/// A job in the notes that no domain covers, and a domain whose owner role nobody in
/// `[people]` holds: every proposal on them would wait for ever, and doctor names each
/// (it said "all good"). A job with no owner of its own under a domain that covers it
/// is decided by the domain's owners, and is no cross.
#[test]
fn models_and_jobs_nobody_may_decide_are_named_with_what_to_add() {
    let tiny = Tiny::new("");
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(0), "{report}");
    let (ok, found, _) = mark(&report, "owners");
    assert!(ok && found.contains("their domain's owners"), "{report}");

    let config = std::fs::read_to_string(&tiny.config).unwrap();
    let narrowed = config.replace("covers = [\"*\"]", "covers = [\"model.*\"]");
    assert_ne!(config, narrowed);
    tiny.write(
        "config.toml",
        &format!(
            "{narrowed}\n[[domain]]\nname = \"jobs\"\ncovers = [\"job.nightly\"]\nowners = [\"nobody-holds-this\"]\n"
        ),
    );
    tiny.write(
        "notes.toml",
        "[[reader]]\nid = \"job.hourly\"\nkind = \"job\"\nreads = [\"model.tiny.fct_events\"]\n\n\
         [[reader]]\nid = \"job.nightly\"\nkind = \"job\"\nreads = [\"model.tiny.fct_events\"]\n",
    );
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "owners");
    assert!(!ok, "{report}");
    assert!(
        found.contains("job.hourly (no [[domain]] covers it)")
            && found.contains("job.nightly (nobody-holds-this: held by nobody in [people])"),
        "{found}"
    );
    assert!(
        !found.contains("model.tiny"),
        "the models are covered: {found}"
    );
    assert!(fix.unwrap().contains("[[domain]]"), "{report}");
}

#[test]
fn a_note_that_does_not_resolve_is_a_cross_naming_the_entry() {
    let tiny = Tiny::new("");
    tiny.write(
        "notes.toml",
        "[[reader]]\nid = \"dashboard.events\"\nkind = \"dashboard\"\nreads = [\"fct_events\"]\n\n\
         [[reader]]\nid = \"sync.crm\"\nkind = \"sync\"\nreads = [\"model.tiny.fct_evnets\"]\n",
    );
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "notes");
    assert!(!ok, "{report}");
    assert!(
        found.contains("sync.crm") && found.contains("model.tiny.fct_evnets"),
        "{found}"
    );
    assert!(found.contains("notes.toml"), "the file is named: {found}");
    assert!(fix.unwrap().contains("unique_id"), "{report}");
    // The rest is checked all the same.
    assert!(
        mark(&report, "manifest").0 && mark(&report, "monitor events").0,
        "{report}"
    );
    assert!(report.ends_with(" ✓, 1 ✗\n"), "{report}");
}

#[test]
fn a_monitor_naming_a_column_or_table_that_is_not_there_is_a_cross_with_the_columns_it_has() {
    let tiny = Tiny::new(
        "[[monitor]]\nname = \"late\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
         checks = [\"freshness\"]\nevery = \"5m\"\ntimestamp_column = \"loaded_at\"\n\n\
         [[monitor]]\nname = \"nulls\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
         checks = [\"null_rate\"]\nevery = \"5m\"\nnull_columns = [\"knd\"]\n\n\
         [[monitor]]\nname = \"gone\"\nwarehouse = \"wh\"\ntable = \"evnts\"\n\
         checks = [\"row_count\"]\nevery = \"5m\"\n",
    );
    let (code, report) = tiny.doctor(&[], &[]);
    assert_eq!(code, Some(1), "{report}");
    let (ok, found, fix) = mark(&report, "monitor late");
    assert!(
        !ok && found.contains("events has no column \"loaded_at\" (timestamp_column)"),
        "{found}"
    );
    assert!(fix.unwrap().contains("one of: id, kind, at"), "{report}");
    let (ok, found, fix) = mark(&report, "monitor nulls");
    assert!(
        !ok && found.contains("events has no column \"knd\" (null_columns)"),
        "{found}"
    );
    assert!(fix.unwrap().contains("id, kind, at"), "{report}");
    let (ok, found, fix) = mark(&report, "monitor gone");
    assert!(
        !ok && found.contains("evnts") && found.contains("no such table"),
        "{found}"
    );
    assert!(fix.unwrap().contains("build it"), "{report}");
    assert!(mark(&report, "monitor events").0, "{report}");
    assert!(report.ends_with(" ✓, 3 ✗\n"), "{report}");
}
