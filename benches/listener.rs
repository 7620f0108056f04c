//! OpenLineage in under load: `dataward serve` (the binary this build made) with its
//! listener and a tailed file, fed the recorded `dbt-ol` COMPLETE (with
//! `outputStatistics`) under fresh run ids. Prints events/s accepted (answered 200,
//! which the listener says only once the engine committed them) for one sender, for 8
//! at once, and for a flood of 64 at once at `queue = 4` (the 503s it was told, each
//! sent again until kept), with the engine's peak resident memory (VmHWM) before and
//! after; and, as the peer, the same events appended to the file transport's JSONL
//! and tailed: events/s until all are kept.
//!
//!     cargo bench --bench listener

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataward::store::prelude::*;

const TOKEN: &str = "bench-listener-token";
const ONE_SENDER: usize = 1_000;
const SENDERS: usize = 8;
const EACH: usize = 125;
const FLOOD_SENDERS: usize = 64;
const FLOOD_EACH: usize = 20;
const FILE_EVENTS: usize = 2_000;

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The recorded COMPLETE of the model, with its row count: one line of JSON.
fn template() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openlineage/dbt_ol_postgres_ok.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"COMPLETE\"") && l.contains("rowCount"))
        .map(|l| serde_json::from_str(l).unwrap())
        .next()
        .expect("a COMPLETE with outputStatistics")
}

/// The event under run id `n` of `series`.
fn event(template: &serde_json::Value, series: &str, n: usize) -> String {
    let mut event = template.clone();
    event["run"]["runId"] = format!("01930000-0000-7000-8000-{series}{n:08}").into();
    event.to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn kept(data: &Path) -> u64 {
    dataward::store::open_read_only(&data.join("dataward.db"))
        .and_then(|db| db.lineage_event_count())
        .unwrap_or(0)
}

/// Peak and current resident memory of a process, in MB (VmHWM, VmRSS).
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Posts `body` until it is kept: a 503 is waited out and sent again. Returns how many
/// 503s it was told.
fn post_until_kept(client: &reqwest::blocking::Client, url: &str, body: &str) -> u64 {
    let mut refused = 0;
    loop {
        let response = client
            .post(url)
            .bearer_auth(TOKEN)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        match response.status().as_u16() {
            200 => return refused,
            503 => {
                refused += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => panic!("{other}: {}", response.text().unwrap_or_default()),
        }
    }
}

/// `senders` threads at once, each posting `each` events of its own until kept:
/// (events/s, 503s told).
fn send(url: &str, series: &str, senders: usize, each: usize) -> (f64, u64) {
    let template = Arc::new(template());
    let refused = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..senders)
        .map(|s| {
            let (template, refused, url) = (template.clone(), refused.clone(), url.to_string());
            let series = format!("{series}{s:02}");
            std::thread::spawn(move || {
                let client = dataward::notify::client(Duration::from_secs(60)).unwrap();
                for n in 0..each {
                    let told = post_until_kept(&client, &url, &event(&template, &series, n));
                    refused.fetch_add(told, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    (
        (senders * each) as f64 / seconds,
        refused.load(Ordering::Relaxed),
    )
}

fn serve(dir: &Path, queue: usize) -> (Serving, u16, PathBuf) {
    let port = free_port();
    let config = dir.join("bench.toml");
    std::fs::write(
        &config,
        format!(
            "[openlineage]\nlisten = \"127.0.0.1:{port}\"\ntoken_env = \"DW_BENCH_OL_TOKEN\"\n\
             file = \"events.jsonl\"\nqueue = {queue}\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(dir.join("events.jsonl"), "").unwrap();
    let data = dir.join("data");
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data)
        .env("DW_BENCH_OL_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let serving = Serving(child);
    let give_up = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < give_up, "the listener never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    (serving, port, data)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (serving, port, data) = serve(dir.path(), 4);
    let pid = serving.0.id();
    let url = format!("http://127.0.0.1:{port}/api/v1/lineage");
    let size = event(&template(), "sz", 0).len();
    println!("OpenLineage listener, `dataward serve` (queue = 4), events of {size} bytes:");
    let (rate, refused) = send(&url, "a", 1, ONE_SENDER);
    println!("  one sender, {ONE_SENDER} events one after another: {rate:.0} events/s accepted ({refused} told 503)");
    let (rate, refused) = send(&url, "b", SENDERS, EACH);
    println!(
        "  {SENDERS} senders at once, {} events: {rate:.0} events/s accepted ({refused} told 503)",
        SENDERS * EACH
    );
    let (peak_before, resident_before) = memory(pid);
    let (rate, refused) = send(&url, "c", FLOOD_SENDERS, FLOOD_EACH);
    let (peak_after, resident_after) = memory(pid);
    println!(
        "  a flood of {FLOOD_SENDERS} senders at once, {} events: {rate:.0} events/s accepted; \
         {refused} told 503 and sent again, every one kept",
        FLOOD_SENDERS * FLOOD_EACH
    );
    println!(
        "  engine memory: peak {peak_before:.1} MB before the flood, {peak_after:.1} MB after \
         (resident {resident_before:.1} MB, then {resident_after:.1} MB)"
    );
    let posted = (ONE_SENDER + SENDERS * EACH + FLOOD_SENDERS * FLOOD_EACH) as u64;
    assert_eq!(kept(&data), posted, "every event answered 200 is kept once");

    // The peer: the same events through the file transport, tailed.
    let template = template();
    let mut lines = String::new();
    for n in 0..FILE_EVENTS {
        lines.push_str(&event(&template, "f", n));
        lines.push('\n');
    }
    let started = Instant::now();
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("events.jsonl"))
            .unwrap();
        file.write_all(lines.as_bytes()).unwrap();
    }
    let want = posted + FILE_EVENTS as u64;
    let give_up = Instant::now() + Duration::from_secs(600);
    while kept(&data) < want {
        assert!(Instant::now() < give_up, "the tail never kept them all");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rate = FILE_EVENTS as f64 / started.elapsed().as_secs_f64();
    let (peak, _) = memory(pid);
    println!(
        "  peer: {FILE_EVENTS} events appended to the file transport's JSONL and tailed: \
         {rate:.0} events/s kept (engine peak {peak:.1} MB)"
    );
}
