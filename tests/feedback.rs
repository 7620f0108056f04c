//! Feedback on breaches through the binary, as the on-call gives it: `dataward expected`
//! closes an incident as expected (its owner, with a reason the receipt carries);
//! `dataward snooze` keeps a monitor from opening incidents and paging anyone until it
//! ends by itself, across a SIGKILL of the engine; `[[maintenance]]` windows in the
//! config record breaches and page nobody, and a malformed one is refused naming the
//! file, line and key, at start and on reload. Every chain still verifies.

#[path = "support/binary.rs"]
mod binary;

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::{dataward, text, Engine};

/// Long enough for a debug engine on a busy machine; only a bound against hanging.
const HANG: Duration = Duration::from_secs(180);

fn users_name() -> String {
    let uid = unsafe { libc::geteuid() };
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
        .expect("this uid has a name")
}

/// A SQLite warehouse with `tables`, three rows each, and a config in which the person
/// running the test owns them all; each table's monitor expects `expected_rows` and
/// polls every `every`. `extra` is appended to the config.
fn estate(dir: &Path, tables: &[&str], expected_rows: u64, every: &str, extra: &str) {
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    let me = users_name();
    let mut config = format!(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [people.{me:?}]\nname = \"tester\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nautonomy = \"L0\"\n\n"
    );
    for table in tables {
        wh.execute_batch(&format!(
            "CREATE TABLE {table} (id INTEGER); INSERT INTO {table} VALUES (1), (2), (3);"
        ))
        .unwrap();
        config.push_str(&format!(
            "[[monitor]]\nwarehouse = \"local\"\ntable = \"{table}\"\nchecks = [\"row_count\"]\n\
             every = \"{every}\"\nexpected_rows = {expected_rows}\n\n"
        ));
    }
    config.push_str(extra);
    std::fs::write(dir.join("team.toml"), config).unwrap();
}

fn spawn_serve(dir: &Path, envs: &[(&str, &str)]) -> Engine {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    command
        .args(["serve", "--config"])
        .arg(dir.join("team.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    let engine = Engine(command.spawn().unwrap());
    wait_for(|| {
        UnixStream::connect(dir.join("data").join("dataward.sock")).is_ok()
            && dataward(&["incidents"], &dir.join("data")).status.success()
    });
    engine
}

/// Waits until `ready` holds; a test that hangs fails instead.
fn wait_for(mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < HANG, "still waiting after {HANG:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The chain's records of `kind` as (seq, payload), read as any reader would.
fn records(dir: &Path, kind: &str) -> Vec<(i64, String)> {
    let path = dir.join("data").join("dataward.db");
    if !path.exists() {
        return Vec::new();
    }
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return Vec::new();
    };
    let Ok(mut stmt) = conn.prepare("SELECT seq, payload FROM chain WHERE kind = ?1 ORDER BY seq")
    else {
        return Vec::new();
    };
    stmt.query_map([kind], |r| Ok((r.get(0)?, r.get(1)?)))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

fn open_incidents(dir: &Path) -> Vec<String> {
    let out = dataward(&["incidents"], &dir.join("data"));
    assert!(out.status.success(), "{}", text(&out));
    text(&out)
        .lines()
        .filter(|l| l.starts_with("INC-"))
        .map(str::to_string)
        .collect()
}

fn verify(dir: &Path) {
    let out = dataward(&["verify"], &dir.join("data"));
    assert_eq!(out.status.code(), Some(0), "verify: {}", text(&out));
}

#[test]
fn expected_closes_the_incident_as_fine_with_who_and_why_on_the_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    estate(root, &["orders"], 100_000, "1h", "");
    let _engine = spawn_serve(root, &[]);
    wait_for(|| !open_incidents(root).is_empty());
    let data = root.join("data");

    // A reason is required.
    let out = dataward(&["expected", "INC-0001", "--reason", " "], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let out = dataward(
        &[
            "expected",
            "INC-0001",
            "--reason",
            "a planned purge of test orders",
        ],
        &data,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("INC-0001 closed as expected"),
        "{}",
        text(&out)
    );
    assert!(open_incidents(root).is_empty());

    // On the chain with who and why; the span left the baselines.
    let expected = records(root, "incident_expected");
    assert_eq!(expected.len(), 1, "{expected:?}");
    assert!(expected[0].1.contains("a planned purge of test orders"));
    let receipt = text(&dataward(&["receipt", "INC-0001"], &data));
    assert!(receipt.contains("expected: this was fine"), "{receipt}");
    assert!(
        receipt.contains("a planned purge of test orders"),
        "{receipt}"
    );
    assert!(receipt.contains(&users_name()), "who: {receipt}");

    // Once closed, there is nothing left to mark.
    let out = dataward(&["expected", "INC-0001", "--reason", "again"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("already resolved"), "{}", text(&out));
    verify(root);
}

#[test]
fn a_snooze_keeps_a_monitor_quiet_across_a_kill_and_ends_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    estate(root, &["orders"], 3, "1s", "");
    let mut engine = spawn_serve(root, &[]);
    let data = root.join("data");

    // Longer than a week is refused, saying so; a bad duration is bad input.
    let out = dataward(&["snooze", "local.orders", "8d", "--reason", "x"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("at most 7 days"), "{}", text(&out));
    let out = dataward(&["snooze", "local.orders", "soon", "--reason", "x"], &data);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = dataward(&["snooze", "no.such", "1h", "--reason", "x"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let out = dataward(
        &[
            "snooze",
            "local.orders",
            "40s",
            "--reason",
            "reloading orders",
        ],
        &data,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("local.orders snoozed until"),
        "{}",
        text(&out)
    );

    // The table empties: breaches are recorded, no incident opens.
    let wh = rusqlite::Connection::open(root.join("wh.db")).unwrap();
    wh.execute_batch("DELETE FROM orders").unwrap();
    wait_for(|| !records(root, "breach_quiet").is_empty());
    assert!(open_incidents(root).is_empty());

    // A SIGKILL: the snooze is in the state database, so the new engine keeps it.
    engine.kill();
    let before = records(root, "breach_quiet").last().unwrap().0;
    let _engine = spawn_serve(root, &[]);
    wait_for(|| records(root, "breach_quiet").last().unwrap().0 > before);

    // It ends by itself, on the chain; from then on the breach opens an incident, and
    // no incident opened before it ended.
    wait_for(|| !open_incidents(root).is_empty());
    let ended = records(root, "snooze_ended");
    assert_eq!(ended.len(), 1, "{ended:?}");
    let opened = records(root, "incident_opened");
    assert!(
        opened.iter().all(|(seq, _)| *seq > ended[0].0),
        "an incident opened while snoozed: {opened:?}, ended {ended:?}"
    );
    let quiet = records(root, "breach_quiet");
    assert!(quiet.iter().all(|(seq, _)| *seq < ended[0].0), "{quiet:?}");
    verify(root);
}

/// The estate with two tables far short of their expected rows, `quiet_orders` inside
/// a maintenance window open from an hour ago for six hours, `loud_orders` not;
/// `extra` is appended to the config.
fn quiet_and_loud(root: &Path, extra: &str) {
    let now = chrono::Utc::now();
    let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let window = format!(
        "[[maintenance]]\ntables = [\"quiet_orders\"]\nstart = \"{}\"\nend = \"{}\"\n\
         reason = \"the weekly reload\"\n\n{extra}",
        at(now - chrono::TimeDelta::hours(1)),
        at(now + chrono::TimeDelta::hours(6)),
    );
    estate(
        root,
        &["quiet_orders", "loud_orders"],
        100_000,
        "1h",
        &window,
    );
}

#[test]
fn breaches_inside_a_maintenance_window_are_recorded_and_page_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    quiet_and_loud(
        root,
        "[[alert]]\nname = \"chat\"\nkind = \"slack\"\nwebhook_url_env = \"DATAWARD_TEST_FEEDBACK_HOOK\"\n",
    );
    // Nothing listens there: an alert waits in the outbox, where the test reads it.
    let _engine = spawn_serve(
        root,
        &[("DATAWARD_TEST_FEEDBACK_HOOK", "http://127.0.0.1:9/hook")],
    );
    wait_for(|| !open_incidents(root).is_empty() && !records(root, "breach_quiet").is_empty());
    let open = open_incidents(root);
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].contains("loud_orders"), "{open:?}");
    let quiet = records(root, "breach_quiet");
    assert!(quiet[0].1.contains("quiet_orders"), "{quiet:?}");
    assert!(quiet[0].1.contains("the weekly reload"), "{quiet:?}");

    // The outbox pages about the loud table only.
    let state = rusqlite::Connection::open_with_flags(
        root.join("data").join("dataward.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let alerts: Vec<String> = state
        .prepare("SELECT alert FROM outbox")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!alerts.is_empty(), "the loud table pages");
    assert!(
        alerts.iter().all(|a| !a.contains("quiet_orders")),
        "{alerts:#?}"
    );
    verify(root);
}

#[test]
fn a_malformed_window_is_refused_at_start_and_on_reload_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bad = "[[maintenance]]\ntables = [\"orders\"]\ncron = \"0 25 * * *\"\nduration = \"2h\"\nreason = \"nightly\"\n";
    estate(root, &["orders"], 3, "1h", bad);
    let config = root.join("team.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["check", "--once", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    let line = std::fs::read_to_string(&config)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("cron"))
        .unwrap()
        + 1;
    assert!(said.contains(&config.display().to_string()), "{said}");
    assert!(said.contains(&format!("line {line}")), "{said}");
    assert!(said.contains("cron") && said.contains("hour"), "{said}");

    // A good config, then the same mistake made while the engine runs: the reload is
    // checked as the start is, and nothing may be decided until it is fixed.
    let good = std::fs::read_to_string(&config).unwrap().replace(bad, "");
    std::fs::write(&config, &good).unwrap();
    let _engine = spawn_serve(root, &[]);
    std::fs::write(&config, format!("{good}{bad}")).unwrap();
    wait_for(|| {
        records(root, "policy")
            .iter()
            .any(|(_, payload)| payload.contains("line") && payload.contains("cron"))
    });
    let out = dataward(
        &["snooze", "local.orders", "1h", "--reason", "x"],
        &root.join("data"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("policy"), "{}", text(&out));
}

/// `dataward check --once --json` on the estate: its exit code, and each check's line.
fn check(dir: &Path) -> (Option<i32>, Vec<serde_json::Value>) {
    let config = dir.join("team.toml");
    let out = dataward(
        &[
            "check",
            "--once",
            "--json",
            "--config",
            config.to_str().unwrap(),
        ],
        &dir.join("data"),
    );
    let lines = text(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l.get("monitor").is_some())
        .collect();
    (out.status.code(), lines)
}

fn line_of<'a>(lines: &'a [serde_json::Value], table: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["table"] == table)
        .unwrap_or_else(|| panic!("no line for {table}: {lines:#?}"))
}

#[test]
fn check_shows_a_quiet_monitors_breach_and_it_does_not_fail_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    quiet_and_loud(root, "");

    // Both breach. The one inside its maintenance window says so, and only the loud one
    // fails the check.
    let (code, lines) = check(root);
    assert_eq!(code, Some(1), "{lines:#?}");
    let quiet = line_of(&lines, "quiet_orders");
    assert_eq!(quiet["verdict"], "low", "{quiet}");
    assert_eq!(
        quiet["quiet"]["why"], "maintenance: the weekly reload",
        "{quiet}"
    );
    assert!(line_of(&lines, "loud_orders").get("quiet").is_none());

    // The owner snoozes the loud one through the engine: now nothing fails the check,
    // and both lines say why.
    let _engine = spawn_serve(root, &[]);
    let data = root.join("data");
    let out = dataward(
        &[
            "snooze",
            "local.loud_orders",
            "2h",
            "--reason",
            "vendor refill",
        ],
        &data,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (code, lines) = check(root);
    assert_eq!(code, Some(0), "{lines:#?}");
    let loud = line_of(&lines, "loud_orders");
    assert_eq!(loud["verdict"], "low", "{loud}");
    let why = loud["quiet"]["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("snoozed by") && why.ends_with("vendor refill"),
        "{loud}"
    );
}
