//! The console at scale: 10,000 incidents, drawn at 200x50 into a ratatui TestBackend.
//! Prints, in milliseconds, the median and worst of: a key and the frame it causes on the
//! list with the filter off and on, a frame of the incident detail, a character typed
//! into the filter, and a changed snapshot from the engine (applied on the input path,
//! and prepared before that on the link thread), next to the aims (every frame at most
//! 1 ms, applying a change at most 5 ms) and the figures before the console precomputed
//! its filter and prepared snapshots off the input path.
//!
//!     cargo bench --bench console
//!
//! A frame here is what the console's loop does for one key: `update` with the key's
//! action, then `view::render` into the terminal's buffer and the diff against the last
//! frame. Writing to a real terminal is left out: that is the link's cost, not ours.
//!
//! Each figure is given twice: wall-clock time, what a person waits, and the CPU time of
//! the thread doing it, what the console itself costs. On a machine busy with other work
//! the wall-clock figures also hold time the scheduler gave to others, the worst ones
//! most: the load average is printed first.

use std::thread;
use std::time::{Duration, Instant};

use dataward::console::fixtures::{sample_incident, sample_snapshot};
use dataward::console::incoming::{self, Prepared};
use dataward::console::state::{update, Action, App};
use dataward::console::theme::Theme;
use dataward::console::view;
use dataward::engine::api::{IncidentStatus, IncidentView, ProposalState, Snapshot};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const INCIDENTS: usize = 10_000;
const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;
const FRAMES: usize = 300;
const CHANGES: usize = 40;
/// Matches about one incident in twelve (834 of them), so the filtered list is long.
const FILTER: &str = "customers";

const FRAME_AIM_MS: f64 = 1.0;
const CHANGE_AIM_MS: f64 = 5.0;

/// This bench on main before the change (8879b6e), where a snapshot was applied whole
/// on the input path: wall (median, worst), then CPU (median, worst), in ms. Taken on a
/// 2-core machine with other builds running beside it, as the figures after were.
const BEFORE_LIST: Before = Before::of((6.016, 23.897), (2.152, 3.602));
const BEFORE_FILTERED: Before = Before::of((31.148, 94.655), (14.700, 23.863));
const BEFORE_DETAIL: Before = Before::of((0.928, 21.353), (0.927, 1.353));
const BEFORE_TYPING: Before = Before::of((27.011, 58.143), (12.238, 16.648));
const BEFORE_CHANGE: Before = Before::of((132.784, 201.233), (51.740, 72.011));
/// The machine's load average when those were taken.
const BEFORE_LOAD: &str = "9.2";

const SCHEMAS: [&str; 6] = ["PAYMENTS", "SALES", "MARKETING", "FINANCE", "OPS", "RISK"];
const TABLES: [&str; 12] = [
    "CHARGES",
    "CUSTOMERS",
    "REFUNDS",
    "INVOICES",
    "ORDERS",
    "SESSIONS",
    "PAYOUTS",
    "LEDGER",
    "DISPUTES",
    "PLANS",
    "EVENTS",
    "ACCOUNTS",
];
const TITLES: [&str; 5] = [
    "row count {p}% below baseline",
    "null rate on region_id {p}% above baseline",
    "freshness: no load for {p} min",
    "schema: zip_code changed type",
    "volume {p}% above baseline",
];

/// The sample incidents of the console's screen tests, varied: ids, tables, titles,
/// times and hashes differ; most are resolved and carry a receipt, as on a busy estate.
fn incident(n: usize) -> IncidentView {
    let samples = sample_snapshot().incidents;
    let mut incident = if n.is_multiple_of(4) {
        sample_incident()
    } else {
        samples[1].clone()
    };
    let schema = SCHEMAS[n % SCHEMAS.len()];
    let table = TABLES[(n / SCHEMAS.len()) % TABLES.len()];
    incident.id = format!("INC-{}", n + 1);
    incident.table = format!("{schema}.{table}");
    incident.monitor = format!("{}_{}", table.to_lowercase(), n % 7);
    incident.title = format!(
        "{} {}",
        table,
        TITLES[n % TITLES.len()].replace("{p}", &(n % 97).to_string())
    );
    incident.opened_at = format!(
        "2026-{:02}-{:02}T{:02}:{:02}:00Z",
        1 + n % 12,
        1 + n % 28,
        n % 24,
        n % 60
    )
    .parse()
    .expect("a time");
    incident.status = match n % 20 {
        0 => IncidentStatus::Open,
        1 => IncidentStatus::Verifying,
        _ => IncidentStatus::Resolved,
    };
    for (index, proposal) in incident.proposals.iter_mut().enumerate() {
        proposal.id = format!("P-{}-{index}", n + 1);
        proposal.content_hash = format!("{:064x}", n * 31 + index);
    }
    if let Some(receipt) = &mut incident.receipt {
        *receipt = receipt.replace("INC-6", &incident.id);
    }
    for symptom in &mut incident.symptoms {
        symptom.table = format!("{}_{}", symptom.table, n % 13);
    }
    incident
}

fn estate() -> Snapshot {
    let mut snapshot = sample_snapshot();
    snapshot.incidents = (0..INCIDENTS).map(incident).collect();
    snapshot
}

/// What the engine sends after one change: the clock moved, one incident's proposal was
/// decided and its title changed, and every fifth time a new incident opened.
fn changed(previous: &Snapshot, round: usize) -> Snapshot {
    let mut next = previous.clone();
    next.now = format!("2026-11-24T14:{:02}:00Z", 20 + round % 40)
        .parse()
        .expect("a time");
    let at = (round * 7919) % next.incidents.len();
    let decided = &mut next.incidents[at];
    decided.title.push('!');
    if let Some(proposal) = decided.proposals.first_mut() {
        proposal.state = if proposal.state == ProposalState::Pending {
            ProposalState::Approved
        } else {
            ProposalState::Pending
        };
    }
    if round.is_multiple_of(5) {
        next.incidents.push(incident(INCIDENTS + round));
    }
    next
}

/// Wall-clock and this thread's CPU time of one run of something.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
}

fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which lives for the call.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(read, 0, "the thread's CPU clock");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn timed<T>(work: impl FnOnce() -> T) -> (T, Sample) {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let out = work();
    let sample = Sample {
        wall: wall.elapsed(),
        cpu: thread_cpu().saturating_sub(cpu),
    };
    (out, sample)
}

/// Median and worst, in ms: wall-clock, then CPU.
struct Figures {
    wall: (f64, f64),
    cpu: (f64, f64),
}

fn figures(samples: &[Sample]) -> Figures {
    let median_and_worst = |pick: fn(&Sample) -> Duration| {
        let mut times: Vec<Duration> = samples.iter().map(pick).collect();
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        (
            ms(times[times.len() / 2]),
            ms(*times.last().expect("at least one sample")),
        )
    };
    Figures {
        wall: median_and_worst(|s| s.wall),
        cpu: median_and_worst(|s| s.cpu),
    }
}

struct Before {
    wall: (f64, f64),
    cpu: (f64, f64),
}

impl Before {
    const fn of(wall: (f64, f64), cpu: (f64, f64)) -> Before {
        Before { wall, cpu }
    }
}

fn report(what: &str, figures: &Figures, aim: Option<f64>, before: Option<&Before>) {
    let verdict = match aim {
        None => "no aim".to_string(),
        Some(aim) if figures.wall.1 <= aim => format!("≤ {aim} ms: met"),
        Some(aim) if figures.cpu.1 <= aim && figures.wall.0 <= aim => {
            format!("≤ {aim} ms: met but for the scheduler")
        }
        Some(aim) => format!("≤ {aim} ms: MISSED"),
    };
    let before = match before {
        Some(b) => format!(
            "{:>7.3} {:>7.3} {:>7.3} {:>7.3}",
            b.wall.0, b.wall.1, b.cpu.0, b.cpu.1
        ),
        None => format!("{:>31}", "(new)"),
    };
    println!(
        "{what:<36}{:>8.3} {:>7.3} {:>7.3} {:>7.3}  | {before}  | {verdict}",
        figures.wall.0, figures.wall.1, figures.cpu.0, figures.cpu.1
    );
}

fn app_with(snapshot: Snapshot) -> App {
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    app
}

/// One key and the frame it causes, `FRAMES` times, walking down and back up the list.
fn frames(app: &mut App, terminal: &mut Terminal<TestBackend>) -> Figures {
    // The first frame paints everything; the loop measures the frames that follow.
    terminal.draw(|frame| view::render(frame, app)).unwrap();
    let samples: Vec<Sample> = (0..FRAMES)
        .map(|i| {
            let key = if (i / 60) % 2 == 0 {
                Action::Down
            } else {
                Action::Up
            };
            let ((), sample) = timed(|| {
                update(app, key);
                terminal.draw(|frame| view::render(frame, app)).unwrap();
            });
            sample
        })
        .collect();
    figures(&samples)
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "Console at scale: {INCIDENTS} incidents at {WIDTH}x{HEIGHT}; load average {load} \
         (before: {BEFORE_LOAD})"
    );
    println!(
        "{:36}{:>15} {:>15}  | {:>31}  | aim",
        "ms", "wall med worst", "cpu med worst", "before: wall med worst, cpu"
    );
    let snapshot = estate();
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();

    let mut app = app_with(snapshot.clone());
    let list = frames(&mut app, &mut terminal);
    report(
        "key + frame, list, filter off",
        &list,
        Some(FRAME_AIM_MS),
        Some(&BEFORE_LIST),
    );

    // Typing the filter, four times over: each character re-filters the whole list.
    let mut typing = Vec::new();
    for _ in 0..4 {
        update(&mut app, Action::Back);
        update(&mut app, Action::Filter);
        for c in FILTER.chars() {
            let ((), sample) = timed(|| {
                update(&mut app, Action::Paste(c.to_string()));
                terminal.draw(|frame| view::render(frame, &app)).unwrap();
            });
            typing.push(sample);
        }
    }
    update(&mut app, Action::Submit);
    assert_eq!(app.list.filter, FILTER, "the filter was typed whole");
    let shown = app.visible_incidents().len();
    let filtered = frames(&mut app, &mut terminal);
    report(
        &format!("key + frame, filter on ({shown} shown)"),
        &filtered,
        Some(FRAME_AIM_MS),
        Some(&BEFORE_FILTERED),
    );
    report(
        "a character typed into the filter",
        &figures(&typing),
        None,
        Some(&BEFORE_TYPING),
    );

    let mut app = app_with(snapshot.clone());
    for _ in 0..(INCIDENTS / 2) {
        update(&mut app, Action::Down);
    }
    update(&mut app, Action::Open);
    let detail = frames(&mut app, &mut terminal);
    report(
        "key + frame, incident detail",
        &detail,
        Some(FRAME_AIM_MS),
        Some(&BEFORE_DETAIL),
    );

    // Changed snapshots as the console's link thread receives them. The link thread
    // prepares each against the one the loop gave back (keys are read meanwhile); the
    // loop applies it, on the input path, and gives back the one it replaced. As in the
    // console, the snapshot is made, prepared and freed on a thread of its own: what the
    // allocator does for that thread's frees is not the input path's to pay.
    let mut app = app_with(snapshot.clone());
    let (applying, preparing) = changes(&mut app, snapshot.clone());
    report(
        "a changed snapshot, applied (input)",
        &figures(&applying),
        Some(CHANGE_AIM_MS),
        Some(&BEFORE_CHANGE),
    );
    report(
        "  prepared first (link thread)",
        &figures(&preparing),
        None,
        None,
    );
    // Sorted by a column, each change sorts the list again on the input path.
    let mut app = app_with(snapshot.clone());
    while !app.list.view.describe().contains("title") {
        update(&mut app, Action::SortNext);
    }
    let (applying, _) = changes(&mut app, snapshot);
    report(
        "  the same, the list sorted by title",
        &figures(&applying),
        Some(CHANGE_AIM_MS),
        None,
    );
}

/// `CHANGES` changed snapshots applied to `app`: the time each took to apply, on the
/// input path, and to prepare, on the link thread.
fn changes(app: &mut App, mut previous: Snapshot) -> (Vec<Sample>, Vec<Sample>) {
    let mut given_back = app.take_retired();
    let (mut preparing, mut applying) = (Vec::new(), Vec::new());
    let link = |previous: Snapshot, given: Option<Box<Prepared>>, round: usize| {
        thread::spawn(move || {
            let next = changed(&previous, round);
            let raw = next.clone();
            let (prepared, prepared_in) = timed(|| incoming::prepare(raw, given.map(|g| *g)));
            (next, Box::new(prepared), prepared_in)
        })
        .join()
        .expect("the link thread")
    };
    // Round 0 only fills the pipeline: what the loop gave back so far is empty.
    for round in 0..=CHANGES {
        let (next, prepared, prepared_in) = link(previous, given_back.take(), round);
        previous = next;
        let ((), applied_in) = timed(|| update(app, Action::SnapshotReady(prepared)));
        given_back = app.take_retired();
        if round > 0 {
            preparing.push(prepared_in);
            applying.push(applied_in);
        }
    }
    assert_eq!(app.snapshot.incidents.len(), previous.incidents.len());
    (applying, preparing)
}
