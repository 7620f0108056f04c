//! Pairing at scale: `dataward serve` with 1,000 open incidents and 20 attached
//! consoles. Prints, beside the figures measured before protocol 2 (whole snapshots
//! after every change; from issue 27): the time from a decision until every console
//! shows it, the bytes each console receives for a change to one incident, and, while
//! one observer sends 100,000 presence messages, how long another client waits for its
//! answers and how much memory the engine holds.
//!
//!     cargo bench --bench pairing

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use dataward::console::incoming::{Fed, Feed};
use dataward::console::state::{update, App};
use dataward::console::theme::Theme;
use dataward::engine::api::{ClientMessage, Command as EngineCommand, Outcome, Question};
use dataward::engine::client::Client;
use dataward::engine::wire;

#[path = "support/stop_while_hanging.rs"]
mod stop_while_hanging;

const INCIDENTS: usize = 1_000;
const CONSOLES: usize = 20;
const ROUNDS: usize = 9;
const FLOOD: usize = 100_000;

/// Measured before protocol 2, on the same machine (issue 27): a decision reached 20
/// consoles in 232 ms median, 338 ms worst; each change sent each console a whole
/// snapshot of 2,174,426 bytes; 1,000 presence messages from one observer left the
/// engine unresponsive for 60 s.
const BEFORE_MEDIAN_MS: f64 = 232.0;
const BEFORE_WORST_MS: f64 = 338.0;
const BEFORE_BYTES: usize = 2_174_426;
/// Measured with protocol 2 while each console's link still copied the whole state
/// for every change (`Replica::whole`) before the console applied it: 42.4 ms median,
/// 71.9 ms worst, on a loaded machine.
const WHOLE_COPY_MEDIAN_MS: f64 = 42.4;
const WHOLE_COPY_WORST_MS: f64 = 71.9;

fn estate(dir: &Path) {
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    let mut config = String::from(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\nmax_concurrent = 4\n\n\
         [serve]\nobservers = true\n\n",
    );
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let me = users_name().unwrap_or(user);
    config.push_str(&format!(
        "[people.{me:?}]\nname = \"bench\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nautonomy = \"L2\"\n\n"
    ));
    wh.execute_batch("BEGIN").unwrap();
    for t in 0..INCIDENTS {
        wh.execute_batch(&format!(
            "CREATE TABLE t{t} (id INTEGER); INSERT INTO t{t} VALUES (1), (2), (3);"
        ))
        .unwrap();
        // A recorded baseline far above what is there: every table opens an incident.
        config.push_str(&format!(
            "[[monitor]]\nwarehouse = \"local\"\ntable = \"t{t}\"\nchecks = [\"row_count\"]\nevery = \"1h\"\nexpected_rows = 100000\n\n"
        ));
    }
    wh.execute_batch("COMMIT").unwrap();
    std::fs::write(dir.join("bench.toml"), config).unwrap();
}

fn users_name() -> Option<String> {
    let uid = unsafe { libc::geteuid() };
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
}

/// The engine's resident memory in kB (`VmRSS` in /proc/PID/status).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// (median, worst) of `durations`.
fn spread(mut durations: Vec<Duration>) -> (f64, f64) {
    durations.sort();
    (
        ms(durations[durations.len() / 2]),
        ms(*durations.last().unwrap()),
    )
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path());
    let data = dir.path().join("data");
    let mut server = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(dir.path().join("bench.toml"))
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the engine and its first poll: 1,000 incidents open.
    let started = Instant::now();
    let mut watcher = loop {
        if let Ok(Some(client)) = Client::connect(&data, true) {
            break client;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no engine");
        std::thread::sleep(Duration::from_millis(50));
    };
    let targets: Vec<String> = loop {
        let snapshot = watcher.snapshot().unwrap();
        if snapshot.incidents.len() >= INCIDENTS {
            break snapshot.incidents.iter().map(|i| i.id.clone()).collect();
        }
    };
    drop(watcher);
    println!(
        "engine up with {INCIDENTS} open incidents after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Twenty consoles, each taking what it receives as a console's link thread and loop
    // do (`console::incoming::Feed`, then `state::update`: a change applied in place)
    // and telling, after each, the chain record it shows and the bytes read so far.
    let (seen_tx, seen_rx) = mpsc::channel::<(usize, u64, Instant, usize)>();
    for console in 0..CONSOLES {
        let mut client = Client::connect(&data, true).unwrap().unwrap();
        let seen_tx = seen_tx.clone();
        std::thread::spawn(move || {
            let mut feed = Feed::default();
            let mut app = App::new(true, Theme::fallback(), None, false);
            let mut bytes = 0;
            loop {
                let Ok(message) = client.receive() else {
                    return;
                };
                bytes += wire::encode(&message).len();
                // The last snapshot the console replaced, given back to be compared.
                let given_back = app.take_retired().map(|old| *old);
                match feed.take(message, || given_back) {
                    Fed::Action(action) => update(&mut app, action),
                    Fed::Resync => {
                        let _ = client.send(&ClientMessage::Resync);
                        continue;
                    }
                    Fed::Other(_) | Fed::Nothing => continue,
                }
                let head = app.snapshot.chain_head.as_ref().map(|h| h.seq).unwrap_or(0);
                if seen_tx
                    .send((console, head, Instant::now(), bytes))
                    .is_err()
                {
                    return;
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500));
    while seen_rx.try_recv().is_ok() {}

    // Each round is one decision on one incident (closed by hand, with a reason); it
    // counts once every console shows that chain record. The bytes are what each
    // console read from the decision until it showed it.
    let mut decider = Client::connect(&data, false).unwrap().unwrap();
    let mut latencies = Vec::new();
    let mut bytes_per_console = Vec::new();
    let mut read_before = vec![None; CONSOLES];
    for (round, incident) in targets.iter().take(ROUNDS).enumerate() {
        while let Ok((console, _, _, bytes)) = seen_rx.try_recv() {
            read_before[console] = Some(bytes);
        }
        let sent = Instant::now();
        let outcome = decider
            .request(EngineCommand::Resolve {
                incident: incident.clone(),
                reason: format!("bench round {round}"),
            })
            .unwrap();
        let Outcome::Accepted { seq: Some(seq), .. } = outcome else {
            panic!("{outcome:?}");
        };
        let mut shown = vec![None; CONSOLES];
        while shown.iter().any(Option::is_none) {
            let (console, head, at, bytes) = seen_rx.recv_timeout(Duration::from_secs(60)).unwrap();
            if head >= seq && shown[console].is_none() {
                shown[console] = Some(at);
                bytes_per_console.push(bytes - read_before[console].unwrap_or(0));
            }
            read_before[console] = Some(bytes);
        }
        let last = shown.into_iter().flatten().max().unwrap();
        latencies.push(last.saturating_duration_since(sent));
    }
    let (median, worst) = spread(latencies);
    println!(
        "{CONSOLES} consoles, {INCIDENTS} open incidents: a decision shows on every console in \
         {median:.1} ms median, {worst:.1} ms worst ({ROUNDS} rounds); before: \
         {BEFORE_MEDIAN_MS:.0} ms median, {BEFORE_WORST_MS:.0} ms worst; with a whole copy \
         per change at each console: {WHOLE_COPY_MEDIAN_MS:.1} ms median, \
         {WHOLE_COPY_WORST_MS:.1} ms worst"
    );
    bytes_per_console.sort();
    println!(
        "bytes per console for a change to one incident: {} median, {} most; before: {BEFORE_BYTES} \
         (a whole snapshot)",
        bytes_per_console[bytes_per_console.len() / 2],
        bytes_per_console.last().unwrap()
    );

    // One observer sends 100,000 presence messages, each a change, and reads nothing;
    // meanwhile another client asks one question after another.
    let pid = server.id();
    std::thread::sleep(Duration::from_millis(500));
    let idle = rss_kb(pid);
    let mut flooder = UnixStream::connect(data.join("dataward.sock")).unwrap();
    wire::send(
        &mut flooder,
        &ClientMessage::Hello {
            protocol: dataward::engine::api::PROTOCOL_VERSION,
            read_only: true,
        },
    )
    .unwrap();
    let flooding = Arc::new(AtomicBool::new(true));
    let flood = {
        let (flooding, targets) = (Arc::clone(&flooding), targets.clone());
        std::thread::spawn(move || {
            let began = Instant::now();
            for n in 0..FLOOD {
                let presence = ClientMessage::Presence {
                    viewing: Some(targets[n % targets.len()].clone()),
                    deciding: None,
                };
                if wire::send(&mut flooder, &presence).is_err() {
                    break;
                }
            }
            flooding.store(false, Ordering::SeqCst);
            (began.elapsed(), flooder)
        })
    };
    let mut asking = Client::connect(&data, false).unwrap().unwrap();
    let mut answers = Vec::new();
    let mut peak = idle;
    while flooding.load(Ordering::SeqCst) || answers.is_empty() {
        let asked = Instant::now();
        asking.ask(Question::Stop).unwrap().unwrap();
        answers.push(asked.elapsed());
        peak = peak.max(rss_kb(pid));
    }
    let (took, flooder) = flood.join().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kb(pid);
    drop(flooder);
    let asked = answers.len();
    let (median, worst) = spread(answers);
    println!(
        "{FLOOD} presence messages from one observer (sent in {:.1} s): another client's \
         question answered in {median:.1} ms median, {worst:.1} ms worst ({asked} asked); \
         before: the engine did not answer for 60 s after 1,000",
        took.as_secs_f64()
    );
    println!(
        "engine memory (VmRSS): {idle} kB idle, {peak} kB at most during the flood ({:.2}x), \
         {after} kB after",
        peak as f64 / idle as f64
    );

    let _ = server.kill();
    let _ = server.wait();
    stop_while_hanging::run();
}
