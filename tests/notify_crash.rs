//! `dataward serve` with PagerDuty and Opsgenie destinations pointed at local
//! stand-ins, killed with SIGKILL after each API took the incident's alert but before
//! the engine heard the answer (the stand-in holds it), so the row was sent and never
//! marked. The restarted engine sends it again: the dedup key (PagerDuty) and the alias
//! (Opsgenie) land the resend on the alert the first send opened, so each API shows one
//! alert; then the incident is closed by hand and both alerts are closed.

#[path = "support/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataward::approve::Actor;
use http::{Api, Behaviour, FakeApi};
use serde_json::Value;

/// Only bounds a wait for something that must happen; nothing is asserted about time.
const PATIENCE: Duration = Duration::from_secs(120);

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < give_up, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Engine(Child);

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(config: &Path, data: &Path, env: &[(&str, String)]) -> Engine {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command
        .args(["serve", "--log-stderr", "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    Engine(command.spawn().unwrap())
}

fn dataward(args: &[&str], data: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap()
}

/// `dataward outbox --json`, by destination.
fn outbox(data: &Path) -> Vec<Value> {
    let out = dataward(&["outbox", "--json"], data);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pending(data: &Path, destination: &str) -> Option<u64> {
    outbox(data)
        .iter()
        .find(|d| d["destination"] == destination)
        .map(|d| d["pending"].as_u64().unwrap())
}

fn setup(dir: &Path, pd: &FakeApi, og: &FakeApi) -> (PathBuf, PathBuf) {
    let warehouse = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    warehouse
        .execute_batch(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT);
             INSERT INTO events (kind) VALUES ('a'), ('b'), ('c'), ('d'), ('e');",
        )
        .unwrap();
    let me = Actor::current().user.expect("this account has a name");
    let config = dir.join("team.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse.wh]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [[monitor]]\nname = \"events\"\nwarehouse = \"wh\"\ntable = \"events\"\n\
             checks = [\"row_count\"]\nevery = \"1m\"\nexpected_rows = 1000\n\n\
             [people.{me:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
             [[domain]]\nname = \"core\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n\n\
             [[alert]]\nname = \"pd\"\nkind = \"pagerduty\"\nrouting_key_env = \"DW_CRASH_PD_KEY\"\nbase_url = \"{}\"\n\n\
             [[alert]]\nname = \"og\"\nkind = \"opsgenie\"\napi_key_env = \"DW_CRASH_OG_KEY\"\nbase_url = \"{}\"\n",
            pd.base_url(),
            og.base_url()
        ),
    )
    .unwrap();
    (config, dir.join("data"))
}

#[test]
fn a_kill_between_send_and_mark_resends_onto_the_same_alert() {
    let dir = tempfile::tempdir().unwrap();
    let pd = FakeApi::start(Api::PagerDuty, "pd-key-0123");
    let og = FakeApi::start(Api::Opsgenie, "og-key-4567");
    let (config, data) = setup(dir.path(), &pd, &og);
    let env = [
        ("DW_CRASH_PD_KEY", pd.secret.clone()),
        ("DW_CRASH_OG_KEY", og.secret.clone()),
    ];
    // Each API takes the first alert and holds its answer.
    pd.plan([Behaviour::Hold]);
    og.plan([Behaviour::Hold]);
    let mut engine = serve(&config, &data, &env);
    until("both APIs took the incident's alert", || {
        pd.held() == 1 && og.held() == 1
    });
    // Sent, never marked: SIGKILL.
    engine.0.kill().unwrap();
    engine.0.wait().unwrap();
    pd.release();
    og.release();
    assert_eq!(pd.alerts().len(), 1);
    assert_eq!(og.alerts().len(), 1);
    assert_eq!(pending(&data, "pd"), Some(1), "{:#?}", outbox(&data));
    assert_eq!(pending(&data, "og"), Some(1));

    // Restarted: the rows go again, and land on the alerts already open.
    let engine = serve(&config, &data, &env);
    until("both rows are delivered", || {
        pending(&data, "pd") == Some(0) && pending(&data, "og") == Some(0)
    });
    let triggers: Vec<Value> = pd.requests().iter().map(|r| r.json()).collect();
    assert_eq!(triggers.len(), 2, "sent twice");
    assert_eq!(triggers[0]["dedup_key"], triggers[1]["dedup_key"]);
    assert_eq!(pd.alerts().len(), 1, "one alert: {:#?}", pd.alerts());
    let creates: Vec<Value> = og
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.json())
        .collect();
    assert_eq!(creates.len(), 2, "sent twice");
    assert_eq!(creates[0]["alias"], creates[1]["alias"]);
    let alerts = og.alerts();
    assert_eq!(alerts.len(), 1, "one alert: {alerts:#?}");
    assert_eq!(alerts[0].events, ["create", "create (deduplicated)"]);

    // The owner closes the incident by hand: both alerts close with the receipt.
    let resolved = dataward(
        &["resolve", "INC-0001", "--reason", "loaded by hand; checked"],
        &data,
    );
    assert!(
        resolved.status.success(),
        "{}",
        String::from_utf8_lossy(&resolved.stderr)
    );
    until("both alerts are closed", || {
        pd.alerts()[0].state == "resolved" && og.alerts()[0].state == "closed"
    });
    until("the closes are marked", || {
        pending(&data, "pd") == Some(0) && pending(&data, "og") == Some(0)
    });
    let resolve = pd.requests().last().unwrap().json();
    assert_eq!(resolve["event_action"], "resolve");
    let how = resolve["payload"]["custom_details"]["receipt"]["how"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        how.contains("closed by hand") && how.contains("loaded by hand; checked"),
        "{how}"
    );
    let listing = dataward(&["outbox"], &data);
    assert!(listing.status.success());
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(
        text.contains("pd (pagerduty): 0 pending, 0 failed, 2 delivered"),
        "{text}"
    );
    assert!(
        text.contains("og (opsgenie): 0 pending, 0 failed, 2 delivered"),
        "{text}"
    );
    println!("{text}");
    drop(engine);
}

#[test]
fn a_secret_file_others_can_read_keeps_the_engine_from_starting() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pd.key");
    std::fs::write(&key, "pd-key\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = dir.path().join("team.toml");
    std::fs::write(
        &config,
        "[[alert]]\nkind = \"pagerduty\"\nrouting_key_file = \"pd.key\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("can be read by others") && err.contains("chmod 600"),
        "{err}"
    );
}
