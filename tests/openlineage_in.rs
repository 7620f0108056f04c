//! OpenLineage in, as a producer and an on-call engineer meet it: `dataward serve` with
//! an `[openlineage]` listener and a tailed file; the recorded `dbt-ol` and Airflow
//! events (tests/fixtures/openlineage/) POSTed as the HTTP transport sends them, kept,
//! and in the blast radius `dataward lineage` prints; the refusals (token, malformed
//! event, unknown type, path, method, size, a flood); and the file tail surviving kill -9.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/dbt.rs"]
mod dbt;
#[path = "support/pg.rs"]
mod pg;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use binary::{dataward, text, Engine};
use dataward::store::prelude::*;
use serde_json::Value;

const TOKEN: &str = "ol-test-token-4f1c";
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openlineage");

fn fixture_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(Path::new(FIXTURES).join(name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A team's folder: the config (0600, in a private folder) and the data directory.
struct Team {
    dir: tempfile::TempDir,
    port: u16,
}

impl Team {
    fn new(queue: usize) -> Team {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("team.toml");
        std::fs::write(
            &config,
            format!(
                "[people.alice]\nname = \"Alice\"\nroles = [\"owner\"]\n[serve]\nobservers = true\n\n\
                 [openlineage]\nlisten = \"127.0.0.1:{port}\"\ntoken_env = \"DW_OL_TOKEN\"\n\
                 socket = \"ol.sock\"\nfile = \"events.jsonl\"\nqueue = {queue}\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
        Team { dir, port }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn events_file(&self) -> PathBuf {
        self.dir.path().join("events.jsonl")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("serve.log")
    }

    /// `dataward serve`, its log appended to `serve.log`; ready once the listener answers.
    fn serve(&self) -> Engine {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(self.dir.path().join("team.toml"))
            .arg("--data-dir")
            .arg(self.data())
            .env("DW_OL_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let mut engine = Engine(child);
        for _ in 0..600 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return engine;
            }
            if let Some(status) = engine.0.try_wait().unwrap() {
                panic!("serve exited {status}: {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        engine.kill();
        panic!("the listener never answered: {}", self.log_text());
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/lineage", self.port)
    }

    /// The state database as the store reads it (read-only, beside the serving engine).
    fn stored(&self) -> u64 {
        let db = dataward::store::open_read_only(&self.data().join("dataward.db")).unwrap();
        db.lineage_event_count().unwrap()
    }

    fn post(&self, body: &str, token: Option<&str>) -> (u16, String) {
        let client = dataward::notify::client(Duration::from_secs(30)).unwrap();
        let mut request = client
            .post(self.url())
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        (response.status().as_u16(), response.text().unwrap())
    }

    /// POST over the Unix socket, as HTTP/1.1 by hand (the transport a local producer
    /// without a port would use).
    fn post_unix(&self, body: &str, token: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut conn =
            std::os::unix::net::UnixStream::connect(self.dir.path().join("ol.sock")).unwrap();
        write!(
            conn,
            "POST /api/v1/lineage HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        (status, answer)
    }

    /// `dataward lineage --from NODE --json`, asked of the serving engine.
    fn lineage(&self, from: &str) -> Value {
        let out = dataward(&["lineage", "--from", from, "--json"], &self.data());
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn wait_for_stored(&self, count: u64) {
        for _ in 0..600 {
            if self.stored() == count {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "{} events kept, not {count}: {}",
            self.stored(),
            self.log_text()
        );
    }
}

/// The recorded events go in as dbt-ol and Airflow's provider post them, are kept once
/// each, and put the Airflow tasks and the dbt model's job in the blast radius, marked
/// as learned from events; `dataward lineage` without a manifest asks the engine.
#[test]
fn recorded_events_are_kept_and_join_the_blast_radius() {
    let team = Team::new(64);
    let _engine = team.serve();
    let mut sent = 0;
    for name in ["dbt_ol_postgres_ok.jsonl", "airflow_task_fail.jsonl"] {
        for line in fixture_lines(name) {
            let (status, body) = team.post(&line, Some(TOKEN));
            assert_eq!(status, 200, "{name}: {body}");
            assert!(body.contains("\"stored\""), "{body}");
            sent += 1;
        }
    }
    assert_eq!(team.stored(), sent);
    // A sender's retry is answered 200 and kept once.
    let again = fixture_lines("airflow_task_fail.jsonl").remove(1);
    let (status, body) = team.post(&again, Some(TOKEN));
    assert_eq!(
        (status, body.contains("already stored")),
        (200, true),
        "{body}"
    );
    assert_eq!(team.stored(), sent);
    // The same endpoint over the Unix socket: the token still asked.
    let over_socket = fixture_lines("dbt_ol_postgres_column_dropped.jsonl").remove(0);
    assert_eq!(team.post_unix(&over_socket, "wrong").0, 401);
    let (status, answer) = team.post_unix(&over_socket, TOKEN);
    assert_eq!(status, 200, "{answer}");
    sent += 1;
    assert_eq!(team.stored(), sent);

    // The dbt model's job reads raw.orders and writes analytics.order_amounts.
    let blast = team.lineage("shop.raw.orders");
    let nodes: Vec<(&str, &str)> = blast["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert!(n["learned"].is_string(), "marked learned: {n}");
            (
                n["name"].as_str().unwrap(),
                n["resource_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("shop.analytics.shop_pg.order_amounts", "job"),
            ("shop.analytics.order_amounts", "dataset")
        ],
        "{blast:#}"
    );
    // The table the Airflow task loads from: the task, and the table it writes, are
    // downstream, though no notes name them.
    let blast = team.lineage("billing.raw.payments_landing");
    let nodes: Vec<(&str, &str)> = blast["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap(),
                n["resource_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("billing_daily.load_payments", "job"),
            ("billing.public.payments", "dataset")
        ],
        "{blast:#}"
    );
    // And a person sees it in the tree, marked.
    let out = dataward(
        &["lineage", "--from", "billing.raw.payments_landing"],
        &team.data(),
    );
    let tree = text(&out);
    assert!(
        tree.contains("learned from events, last seen 2026-11-02T02:"),
        "{tree}"
    );
}

/// Each refusal says what is wrong and keeps nothing.
/// The incidents the serving engine lists (`dataward incidents --json`: one a line).
fn incidents(team: &Team) -> Vec<Value> {
    let out = dataward(&["incidents", "--json", "--all"], &team.data());
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// An Airflow task's FAIL posted by its OpenLineage provider, with no data monitor
/// breached anywhere, opens one incident naming the task and quoting its error; the
/// DAG run's own FAIL, and the sender's retries, are the same incident.
#[test]
fn a_failed_task_posted_to_the_listener_opens_one_incident() {
    let team = Team::new(64);
    let _engine = team.serve();
    let lines = fixture_lines("airflow_task_fail.jsonl");
    for line in &lines {
        let (status, body) = team.post(line, Some(TOKEN));
        assert_eq!(status, 200, "{body}");
    }
    let mut open = Vec::new();
    for _ in 0..600 {
        open = incidents(&team);
        if !open.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(open.len(), 1, "{open:#?}\n{}", team.log_text());
    let incident = &open[0];
    let said = format!("{} {}", incident["title"], incident["cause"]);
    assert!(
        said.contains("billing_daily.export_invoices") && said.contains("No such file"),
        "{incident:#}"
    );
    // A retry of every event is kept once and opens nothing more.
    for line in &lines {
        assert_eq!(team.post(line, Some(TOKEN)).0, 200);
    }
    assert_eq!(incidents(&team).len(), 1);
}

#[test]
fn bad_requests_are_refused_clearly_and_keep_nothing() {
    let team = Team::new(64);
    let _engine = team.serve();
    let event = fixture_lines("dbt_ol_postgres_ok.jsonl").remove(0);

    let (status, body) = team.post(&event, Some("not-the-token"));
    assert_eq!(status, 401, "{body}");
    let (status, body) = team.post(&event, None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Bearer"), "{body}");
    assert_eq!(team.stored(), 0, "nothing kept without the token");

    // An event without its run id: refused naming the field.
    let mut broken: Value = serde_json::from_str(&event).unwrap();
    broken["run"].as_object_mut().unwrap().remove("runId");
    let (status, body) = team.post(&broken.to_string(), Some(TOKEN));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("$.run.runId"), "{body}");
    let (status, body) = team.post("{\"eventType\": ", Some(TOKEN));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("not JSON"), "{body}");
    // A type outside the spec is refused (whether the run ended is not guessed) ...
    let mut unknown: Value = serde_json::from_str(&event).unwrap();
    unknown["eventType"] = "FINISHED".into();
    let (status, body) = team.post(&unknown.to_string(), Some(TOKEN));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("$.eventType") && body.contains("FINISHED"),
        "{body}"
    );
    assert_eq!(team.stored(), 0);
    // ... while the spec's OTHER, and an event naming no type, are metadata: kept.
    let mut other: Value = serde_json::from_str(&event).unwrap();
    other["eventType"] = "OTHER".into();
    assert_eq!(team.post(&other.to_string(), Some(TOKEN)).0, 200);
    other.as_object_mut().unwrap().remove("eventType");
    other["eventTime"] = "2026-11-02T03:00:00Z".into();
    assert_eq!(team.post(&other.to_string(), Some(TOKEN)).0, 200);
    assert_eq!(team.stored(), 2);

    let client = dataward::notify::client(Duration::from_secs(30)).unwrap();
    let base = format!("http://127.0.0.1:{}", team.port);
    let other_path = client
        .post(format!("{base}/api/v1/other"))
        .bearer_auth(TOKEN)
        .body(event.clone())
        .send()
        .unwrap();
    assert_eq!(other_path.status().as_u16(), 404);
    let get = client.get(team.url()).bearer_auth(TOKEN).send().unwrap();
    assert_eq!(get.status().as_u16(), 405);
    assert_eq!(get.headers()["allow"], "POST");
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let (status, body) = team.post(&huge, Some(TOKEN));
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("1048576"), "{body}");
    // The transport's gzip compression: refused for what it is, not as malformed.
    let gzipped = client
        .post(team.url())
        .bearer_auth(TOKEN)
        .header("Content-Encoding", "gzip")
        .body(event.clone())
        .send()
        .unwrap();
    assert_eq!(gzipped.status().as_u16(), 415);
    assert!(gzipped.text().unwrap().contains("uncompressed"));
    assert_eq!(team.stored(), 2);

    // curl's way: ask first (Expect: 100-continue), send the body when told to.
    use std::io::{Read, Write};
    let mut conn = TcpStream::connect(("127.0.0.1", team.port)).unwrap();
    write!(
        conn,
        "POST /api/v1/lineage HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        event.len()
    )
    .unwrap();
    let mut continued = [0u8; 25];
    conn.read_exact(&mut continued).unwrap();
    assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
    conn.write_all(event.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert_eq!(team.stored(), 3);

    // doctor tells the listener serving there from something else on the port.
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["doctor", "--config"])
        .arg(team.dir.path().join("team.toml"))
        .arg("--data-dir")
        .arg(team.data())
        .env("DW_OL_TOKEN", TOKEN)
        .output()
        .unwrap();
    let report = text(&out);
    assert!(
        report.contains(&format!(
            "a dataward listener answers on http://127.0.0.1:{}/api/v1/lineage",
            team.port
        )),
        "{report}"
    );
    assert!(report.contains("events.jsonl is not there yet"), "{report}");
}

/// More senders at once than the queue holds: the rest are told 503 with Retry-After,
/// never 200 for something not kept; each sends again until kept, and every event is
/// there once.
#[test]
fn a_flood_is_refused_with_503_and_loses_nothing() {
    let team = Team::new(1);
    let engine = team.serve();
    let template: Value =
        serde_json::from_str(&fixture_lines("dbt_ol_postgres_ok.jsonl").remove(1)).unwrap();
    const SENDERS: usize = 64;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(SENDERS));
    let results: Vec<(u16, Option<String>, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SENDERS)
            .map(|n| {
                let mut event = template.clone();
                event["run"]["runId"] = format!("00000000-0000-4000-8000-{n:012}").into();
                let body = event.to_string();
                let (barrier, url) = (barrier.clone(), team.url());
                scope.spawn(move || {
                    let client = dataward::notify::client(Duration::from_secs(30)).unwrap();
                    barrier.wait();
                    let response = client
                        .post(url)
                        .bearer_auth(TOKEN)
                        .body(body.clone())
                        .send();
                    match response {
                        Ok(r) => {
                            let retry = r
                                .headers()
                                .get("retry-after")
                                .map(|v| v.to_str().unwrap().to_string());
                            (r.status().as_u16(), retry, body)
                        }
                        // Closed unanswered past the refusals: not a 200 either.
                        Err(_) => (0, None, body),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let accepted = results.iter().filter(|r| r.0 == 200).count();
    let busy: Vec<&(u16, Option<String>, String)> = results.iter().filter(|r| r.0 != 200).collect();
    for (status, retry, _) in &busy {
        assert!(*status == 503 || *status == 0, "only 200 or 503: {status}");
        if *status == 503 {
            assert_eq!(retry.as_deref(), Some("1"));
        }
    }
    println!(
        "flood of {SENDERS}: {accepted} kept at once, {} told to come back ({} unanswered)",
        busy.len(),
        busy.iter().filter(|r| r.0 == 0).count()
    );
    assert!(
        !busy.is_empty(),
        "a queue of 1 cannot take {SENDERS} at once"
    );
    assert_eq!(team.stored(), accepted as u64, "every 200 is kept");
    // The refused send again, as the transport retries, until kept.
    for (_, _, body) in busy {
        let mut tries = 0;
        loop {
            let (status, answer) = team.post(body, Some(TOKEN));
            if status == 200 {
                break;
            }
            assert_eq!(status, 503, "{answer}");
            tries += 1;
            assert!(tries < 100);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(team.stored(), SENDERS as u64);
    let rss = std::fs::read_to_string(format!("/proc/{}/status", engine.0.id()))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?")
        .to_string();
    println!("serve's peak resident memory after the flood: {rss}");
}

/// The tail keeps its place in the state database with the events it read: killed -9
/// and started again it goes on from there, nothing lost and nothing read twice; a bad
/// line is logged with its file and line and skipped.
#[test]
fn the_file_tail_resumes_after_kill_9_without_loss_or_duplicates() {
    let team = Team::new(64);
    let lines = fixture_lines("airflow_task_fail.jsonl");
    let (first, rest) = lines.split_at(3);
    let mut written = first.join("\n");
    written.push_str("\n{\"eventType\": \"START\", \"run\": {}}\n");
    std::fs::write(team.events_file(), &written).unwrap();
    let mut engine = team.serve();
    team.wait_for_stored(3);
    engine.kill();
    let events = team.events_file().display().to_string();
    let log = team.log_text();
    assert!(
        log.contains(&format!("{events} line 4: $.eventTime")),
        "{log}"
    );

    // Written while nobody was reading, then the rest after the restart.
    let (while_down, after) = rest.split_at(1);
    written.push_str(&format!("{}\n", while_down[0]));
    std::fs::write(team.events_file(), &written).unwrap();
    let _engine = team.serve();
    team.wait_for_stored(4);
    written.push_str(&(after.join("\n") + "\n"));
    std::fs::write(team.events_file(), &written).unwrap();
    team.wait_for_stored(lines.len() as u64);

    let db = dataward::store::open_read_only(&team.data().join("dataward.db")).unwrap();
    let at = db.lineage_file_position(&events).unwrap().unwrap();
    assert_eq!(
        at.lines,
        lines.len() as u64 + 1,
        "every line read, the bad one too"
    );
    assert_eq!(at.offset, written.len() as u64);
    // The bad line was reported once: the restart did not read it again.
    assert_eq!(
        team.log_text()
            .matches(&format!("{events} line 4:"))
            .count(),
        1
    );
}

/// A real `dbt-ol run` on the test PostgreSQL, its HTTP transport pointed at the
/// listener (OPENLINEAGE_URL, OPENLINEAGE_API_KEY): its events are kept and the model's
/// job is in the blast radius of the table it reads, with the rows it wrote.
#[test]
fn dbt_ol_posts_a_real_run_to_the_listener() {
    let test = "dbt_ol_posts_a_real_run_to_the_listener";
    let Some(dbt_ol) = dbt::dbt_ol_or_skip(test) else {
        return;
    };
    let dbt_bin = std::env::var_os("DATAWARD_DBT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/dataward/dbt"))
        .join("bin");
    let Some(pg) = pg::start_or_skip(test) else {
        return;
    };
    pg.execute("CREATE DATABASE shop");
    let mut shop = postgres::Client::connect(
        &format!("postgresql://postgres@127.0.0.1:{}/shop", pg.port),
        postgres::NoTls,
    )
    .unwrap();
    shop.batch_execute(
        "CREATE SCHEMA raw;
         CREATE TABLE raw.orders AS
           SELECT n AS id, n % 4 + 1 AS customer_id, (n % 90 + 10)::numeric(10, 2) AS amount
           FROM generate_series(1, 120) AS n;",
    )
    .unwrap();

    let team = Team::new(64);
    let _engine = team.serve();
    let project = team.dir.path().join("dbt");
    std::fs::create_dir_all(project.join("models")).unwrap();
    let fixture = Path::new(FIXTURES).join("dbt_postgres_project");
    for file in [
        "dbt_project.yml",
        "models/order_amounts.sql",
        "models/sources.yml",
    ] {
        std::fs::copy(fixture.join(file), project.join(file)).unwrap();
    }
    std::fs::write(
        project.join("profiles.yml"),
        std::fs::read_to_string(fixture.join("profiles.yml"))
            .unwrap()
            .replace("55473", &pg.port.to_string()),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dbt_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&dbt_ol)
        .args(["run", "--project-dir", ".", "--profiles-dir", "."])
        .current_dir(&project)
        .env("PATH", path)
        .env("OPENLINEAGE_URL", format!("http://127.0.0.1:{}", team.port))
        .env("OPENLINEAGE_API_KEY", TOKEN)
        .env("OPENLINEAGE_NAMESPACE", "dbt_local")
        .env_remove("OPENLINEAGE_CONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "dbt-ol run: {}", text(&out));
    // The invocation's START and COMPLETE and the model's.
    assert!(team.stored() >= 4, "{} kept: {}", team.stored(), text(&out));
    let blast = team.lineage("shop.raw.orders");
    let job = &blast["nodes"][0];
    assert_eq!(job["resource_type"], "job", "{blast:#}");
    assert_eq!(
        job["name"], "shop.analytics.shop_pg.order_amounts",
        "{blast:#}"
    );
    let db = dataward::store::open_read_only(&team.data().join("dataward.db")).unwrap();
    let rows: Vec<u64> = db
        .output_row_counts()
        .unwrap()
        .into_iter()
        .filter(|run| run.dataset.name == "shop.analytics.order_amounts")
        .map(|run| run.rows)
        .collect();
    assert_eq!(rows, vec![120], "outputStatistics.rowCount kept");
}

/// A job's COMPLETE for one day, counting the rows it wrote to a table no monitor reads.
fn export_run(day: i64, rows: u64) -> String {
    let at = chrono::NaiveDate::from_ymd_opt(2026, 9, 7).unwrap() + chrono::Duration::days(day);
    format!(
        r#"{{"eventType": "COMPLETE", "eventTime": "{at}T02:10:00Z",
            "producer": "https://github.com/apache/airflow/tree/providers-openlineage/2.3.0",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/definitions/RunEvent",
            "run": {{"runId": "0190d9c4-0000-7000-8000-{day:012}"}},
            "job": {{"namespace": "airflow", "name": "crm_exports.push_accounts"}},
            "inputs": [],
            "outputs": [{{"namespace": "postgres://crm:5432", "name": "crm.public.accounts",
              "outputFacets": {{"outputStatistics": {{"rowCount": {rows}}}}}}}]}}"#
    )
    .replace('\n', " ")
}

/// The incidents the engine lists, once `ready` holds of them (or after a minute: the
/// serving engine takes a turn every 15 s).
fn incidents_when(team: &Team, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut listed = Vec::new();
    for _ in 0..1_200 {
        listed = incidents(team);
        if ready(&listed) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    listed
}

/// A job's runs report writing about a thousand rows a day to a table dataward cannot
/// query; five weeks of them, then a run writing a tenth of that, opens one incident
/// naming the job, the table, the rows and the usual range; a further short run is the
/// same incident; usual runs after are its check back, and it resolves.
#[test]
fn a_run_writing_a_tenth_of_its_usual_rows_opens_one_incident() {
    let team = Team::new(64);
    let config = team.dir.path().join("team.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[verify]\nsettle = \"1s\"\n");
    std::fs::write(&config, text).unwrap();
    let _engine = team.serve();
    for day in 0..35 {
        let (status, body) = team.post(
            &export_run(day, 1_000 + (day as u64 * 37) % 60),
            Some(TOKEN),
        );
        assert_eq!(status, 200, "{body}");
    }
    team.wait_for_stored(35);

    let (status, body) = team.post(&export_run(35, 100), Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let open = incidents_when(&team, |listed| !listed.is_empty());
    // The usual runs before it opened nothing.
    assert_eq!(open.len(), 1, "{open:#?}\n{}", team.log_text());
    let incident = &open[0];
    let said = format!("{incident}");
    println!("{incident:#}");
    assert!(
        said.contains("crm_exports.push_accounts") && said.contains("crm.public.accounts"),
        "{incident:#}"
    );
    assert_eq!(incident["observed"], "100", "{incident:#}");
    let expected = incident["expected"].as_str().unwrap();
    assert!(
        expected.contains("..") && expected.ends_with("rows"),
        "the usual range: {incident:#}"
    );
    assert_eq!(
        incident["title"],
        "rows crm_exports.push_accounts wrote to crm.public.accounts per day fell to 100 rows",
        "{incident:#}"
    );
    let evidence = incident["evidence"][0].as_str().unwrap();
    assert!(
        evidence.contains(&format!("(expected {expected})")),
        "the usual range in evidence: {evidence}"
    );

    // Another short run is the same incident, not a second one.
    team.post(&export_run(36, 90), Some(TOKEN));
    let listed = incidents_when(&team, |listed| {
        listed.iter().any(|i| {
            i["latest"]["observed"]
                .as_str()
                .is_some_and(|o| o.contains("wrote 90 rows"))
        })
    });
    assert_eq!(listed.len(), 1, "{listed:#?}");

    // A usual run: the incident's reading is back within the band (recovered, not yet
    // held for the settle window)...
    team.post(&export_run(37, 1_010), Some(TOKEN));
    let listed = incidents_when(&team, |listed| listed[0]["latest"]["verdict"] == "ok");
    assert_eq!(listed[0]["latest"]["verdict"], "ok", "{:#}", listed[0]);
    assert_eq!(listed[0]["status"], "open");
    // ...and the next usual run, a turn later (past the one-second settle window), finds
    // it held: the incident resolves as a table's volume incident does.
    team.post(&export_run(38, 1_030), Some(TOKEN));
    let listed = incidents_when(&team, |listed| {
        listed.iter().all(|i| i["status"] == "resolved")
    });
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(
        listed[0]["status"],
        "resolved",
        "{:#}\n{}",
        listed[0],
        team.log_text()
    );
}

/// A COMPLETE of `job` ending `hours_ago` hours before now (the serving engine's clock
/// is the wall's), as a child of `parent`'s run when given (an Airflow task of its DAG).
fn run_ended(job: &str, run: &str, hours_ago: i64, parent: Option<(&str, &str)>) -> String {
    let at = chrono::Utc::now() - chrono::Duration::hours(hours_ago);
    let at = at.format("%Y-%m-%dT%H:%M:%SZ");
    let facets = match parent {
        Some((job, run)) => format!(
            r#""facets": {{"parent": {{"run": {{"runId": "{run}"}},
                 "job": {{"namespace": "airflow_prod", "name": "{job}"}}}}}}"#
        ),
        None => r#""facets": {}"#.to_string(),
    };
    format!(
        r#"{{"eventType": "COMPLETE", "eventTime": "{at}",
            "producer": "https://github.com/apache/airflow/tree/providers-openlineage/2.7.0",
            "run": {{"runId": "{run}", {facets}}},
            "job": {{"namespace": "airflow_prod", "name": "{job}"}},
            "inputs": [], "outputs": []}}"#
    )
    .replace('\n', " ")
}

/// A DAG that runs twice a day (each run with its task) stops: its next run is overdue
/// by hours, and one incident (not one per task) names the DAG, when it last ran and
/// how often it usually runs. A job with too few runs to know its cadence opens
/// nothing and says it is learning. A run completing resolves the incident.
#[test]
fn a_run_that_never_comes_opens_one_incident_and_a_run_resolves_it() {
    let team = Team::new(64);
    let config = team.dir.path().join("team.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[verify]\nsettle = \"1s\"\n");
    std::fs::write(&config, text).unwrap();
    let _engine = team.serve();
    // Ten runs, twelve hours apart, the last a day and a half ago.
    let mut posted = 0;
    for n in 0..10 {
        let hours_ago = 36 + 12 * (9 - n);
        let dag_run = format!("0193a1c2-0000-7000-8000-{n:012}");
        let task_run = format!("0193a1c2-0000-7000-9000-{n:012}");
        for body in [
            run_ended(
                "billing_daily.export_invoices",
                &task_run,
                hours_ago,
                Some(("billing_daily", &dag_run)),
            ),
            run_ended("billing_daily", &dag_run, hours_ago, None),
        ] {
            let (status, answer) = team.post(&body, Some(TOKEN));
            assert_eq!(status, 200, "{answer}");
            posted += 1;
        }
    }
    // Two runs: no cadence yet, whenever the last was.
    for (n, hours_ago) in [(0, 80), (1, 50)] {
        let body = run_ended("ledger_sync", &format!("ledger-{n}"), hours_ago, None);
        assert_eq!(team.post(&body, Some(TOKEN)).0, 200);
        posted += 1;
    }
    team.wait_for_stored(posted);

    let open = incidents_when(&team, |listed| !listed.is_empty());
    assert_eq!(open.len(), 1, "{open:#?}\n{}", team.log_text());
    let incident = &open[0];
    println!("{incident:#}");
    assert_eq!(incident["monitor"], "runs of billing_daily", "{incident:#}");
    assert!(
        incident["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("billing_daily has not run for 1d12h")),
        "{incident:#}"
    );
    let cause = incident["cause"].as_str().unwrap();
    assert!(
        cause.starts_with("billing_daily has not run since ")
            && cause.contains("it usually runs every 12h"),
        "{incident:#}"
    );
    assert!(
        incident["latest"]["observed"]
            .as_str()
            .is_some_and(|o| o.starts_with("billing_daily last ran at ")),
        "{incident:#}"
    );
    // The job with two runs is learning, and says so where the monitors are read.
    let db = dataward::store::open_read_only(&team.data().join("dataward.db")).unwrap();
    let learning = dataward::monitor::history(
        &db,
        "runs of ledger_sync",
        dataward::config::CheckKind::Freshness,
    )
    .unwrap();
    assert_eq!(
        learning
            .last()
            .and_then(|o| o.detail.message.clone())
            .as_deref(),
        Some(
            "learning: 2 of ledger_sync's runs seen; a run that never comes is noticed once 4 are"
        )
    );

    // The DAG runs again: the incident's check is back, and it resolves.
    let body = run_ended(
        "billing_daily",
        "0193a1c2-0000-7000-8000-000000000010",
        0,
        None,
    );
    assert_eq!(team.post(&body, Some(TOKEN)).0, 200);
    let listed = incidents_when(&team, |listed| {
        listed.iter().all(|i| i["status"] == "resolved")
    });
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(
        listed[0]["status"],
        "resolved",
        "{:#}\n{}",
        listed[0],
        team.log_text()
    );
}
