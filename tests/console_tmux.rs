//! End to end: the real binary in tmux, driven by keystrokes, read back with
//! capture-pane, the way a person at 3 a.m. would use it.

#[path = "support/tmux.rs"]
mod terminal;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use terminal::{screen, tmux, tmux_available, wait_for, Session};

fn wait_until_gone(session: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while screen(session).contains(text) {
        assert!(Instant::now() < deadline, "{text:?} never went away");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Presses q and waits for the console to exit cleanly, which ends the tmux session.
fn quit(session: &str) {
    tmux(&["send-keys", "-t", session, "q"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Command::new("tmux")
        .args(["has-session", "-t", session])
        .output()
        .unwrap()
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "the console did not quit:\n{}",
            screen(session)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn start(data_dir: &Path) -> Session {
    let name = format!("dataward-e2e-{}", std::process::id());
    let command = format!(
        "{} demo --speed 300 --data-dir {}",
        env!("CARGO_BIN_EXE_dataward"),
        data_dir.display()
    );
    Session::open(&name, (120, 40), &command)
}

#[test]
fn approve_the_hold_from_the_keyboard() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = start(dir.path());
    let s = session.0.as_str();
    let shown = wait_for(s, "INC-0001");
    assert!(shown.contains("TICKETING.ORDERS"), "{shown}");
    assert!(
        shown.contains("✓ success"),
        "pipelines should look green:\n{shown}"
    );

    tmux(&["send-keys", "-t", s, "Enter"]);
    let detail = wait_for(s, "Blast radius");
    assert!(detail.contains("seat_section"), "{detail}");
    assert!(detail.contains("int_seat_map"), "{detail}");

    // Focus the proposals, the hold is first; approve it with a typed reason.
    tmux(&["send-keys", "-t", s, "Tab", "Tab"]);
    wait_for(s, "pending");
    tmux(&["send-keys", "-t", s, "a"]);
    wait_for(s, "reason");
    tmux(&["send-keys", "-t", s, "-l", "refill in progress"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    let after = wait_for(s, "✓ approved");
    assert!(
        after.contains("paused"),
        "approving the hold pauses the job:\n{after}"
    );

    // The decision is on the chain, with its reason.
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["verify", "--json", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
    let reason: String = conn
        .query_row(
            "SELECT json_extract(payload, '$.reason') FROM chain WHERE kind = 'decision'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(reason, "refill in progress");

    // Close the incident by hand: C opens the reason box, the reason goes on the chain.
    tmux(&["send-keys", "-t", s, "C"]);
    wait_for(s, "Resolve INC-0001");
    tmux(&[
        "send-keys",
        "-t",
        s,
        "-l",
        "the vendor confirmed the refill",
    ]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "✓ resolved");
    let reason: String = conn
        .query_row(
            "SELECT json_extract(payload, '$.reason') FROM chain WHERE kind = 'incident_resolved'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(reason, "the vendor confirmed the refill");

    // Esc backs out, q quits, and the console goes away cleanly.
    tmux(&["send-keys", "-t", s, "Escape"]);
    wait_for(s, "Incidents");
    quit(s);
}

/// Stops the engine a console started in the background, however the test ends.
struct Engine(Option<i32>);

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: a signal to the engine this test caused to start.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

fn console(name: &str, dir: &Path, config: &Path, extra: &str) -> Session {
    // The pane stays after the console quits, so what it printed can be read.
    let command = format!(
        "sh -c 'env XDG_STATE_HOME={} {} --config {} --data-dir {} {extra}; echo FAREWELL; sleep 600'",
        dir.join("xdg-state").display(),
        env!("CARGO_BIN_EXE_dataward"),
        config.display(),
        dir.join("state").display()
    );
    Session::open(name, (120, 40), &command)
}

#[test]
fn a_console_starts_the_engine_and_a_second_one_attaches() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let me = dataward::approve::Actor::current().user;
    let estate =
        dataward::demo::ticketing::estate::build(&dir.path().join("estate"), me.as_deref())
            .unwrap();
    let first = console(
        &format!("dataward-live-{}", std::process::id()),
        dir.path(),
        &estate.config(),
        "--read-only",
    );
    let s = first.0.as_str();
    let shown = wait_for(s, "orders_rows");
    assert!(shown.contains("read-only"), "{shown}");
    assert!(
        shown.contains("learning"),
        "a first poll only learns:\n{shown}"
    );
    // Dangerous keys are gone from a read-only console's help.
    tmux(&["send-keys", "-t", s, "?"]);
    let help = wait_for(s, "Keys (Esc closes)");
    assert!(help.contains("read-only console"), "{help}");
    assert!(
        !help.contains('⚠'),
        "no key that sends a decision is listed:\n{help}"
    );
    tmux(&["send-keys", "-t", s, "Escape"]);
    // Esc and q read together are Alt-q: wait until the help is really gone.
    wait_until_gone(s, "Keys (Esc closes)");

    // A second console on the same directory attaches to the same engine.
    let second = console(
        &format!("dataward-live2-{}", std::process::id()),
        dir.path(),
        &estate.config(),
        "",
    );
    let s2 = second.0.as_str();
    wait_for(s2, "2 attached");
    wait_for(s, "2 attached");

    // Quitting the first leaves the engine running, and says so.
    tmux(&["send-keys", "-t", s, "q"]);
    let farewell = wait_for(s, "FAREWELL");
    let line = farewell
        .lines()
        .find(|l| l.contains("keeps watching"))
        .unwrap_or_else(|| panic!("no word on the engine:\n{farewell}"));
    let pid: i32 = line
        .split("`kill ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line:?}"));
    let engine = Engine(Some(pid));
    wait_for(s2, "1 attached");
    assert!(!screen(s2).contains("went away"), "{}", screen(s2));

    // Stopping the engine: the remaining console says so and keeps trying.
    drop(engine);
    wait_for(s2, "went away; reconnecting");
    let deadline = Instant::now() + Duration::from_secs(60);
    while dataward::engine::attach::running(pid) {
        assert!(
            Instant::now() < deadline,
            "the engine did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux(&["send-keys", "-t", s2, "q"]);
    let farewell = wait_for(s2, "FAREWELL");
    assert!(farewell.contains("no engine is running"), "{farewell}");
}

/// The courier story in the console: the stalled stream opens an incident while it
/// happens, the lookback gap follows on Monday, and the backfill is approved from the
/// keyboard, run and verified.
#[test]
fn the_payouts_story_in_the_console_ends_with_a_backfill_approved_from_the_keyboard() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = format!("dataward-payouts-{}", std::process::id());
    // The story's clock stops at its end, and a backfill approved after that never
    // runs: slow enough that the keys below land before it on a loaded machine (at
    // 36000 a busy CI host approved too late once).
    let command = format!(
        "{} demo payouts --speed 7200 --data-dir {}",
        env!("CARGO_BIN_EXE_dataward"),
        dir.path().display()
    );
    let session = Session::open(&name, (160, 50), &command);
    let s = session.0.as_str();
    let shown = wait_for(s, "INC-0001");
    assert!(shown.contains("raw.courier_events"), "{shown}");
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "Blast radius");
    // Monday night: the cause is the lookback window, with its backfill.
    let detail = wait_for(s, "lookback = 1");
    assert!(
        detail.contains("fct_deliveries is still short on"),
        "{detail}"
    );
    assert!(detail.contains("fct_courier_payouts"), "{detail}");
    // The proposals have the focus; the blast radius is the pane before them. It opens
    // down to finance's workbook, with what it is short of.
    tmux(&["send-keys", "-t", s, "BTab"]);
    wait_for(s, "▸ Blast radius");
    tmux(&["send-keys", "-t", s, "l"]);
    let tree = wait_for(s, "finance_payout_workbook");
    assert!(tree.contains("which is missing"), "{tree}");
    // Proposals: the expired hold, the note, then the backfill.
    tmux(&["send-keys", "-t", s, "Tab"]);
    wait_for(s, "▸ Proposals");
    tmux(&["send-keys", "-t", s, "Down", "Down"]);
    let selected = wait_for(s, "INC-0001-P3 backfill");
    assert!(selected.contains("pending"), "{selected}");
    tmux(&["send-keys", "-t", s, "a"]);
    wait_for(s, "reason");
    tmux(&[
        "send-keys",
        "-t",
        s,
        "-l",
        "Saturday's payouts go out today",
    ]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "✓ approved");
    let conn = rusqlite::Connection::open(dir.path().join("dataward.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let resolved: i64 = conn
            .query_row(
                "SELECT count(*) FROM chain WHERE kind = 'incident_resolved'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if resolved == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the backfill never resolved the incident:\n{}",
            screen(s)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let queued: String = conn
        .query_row(
            "SELECT json_extract(payload, '$.command') FROM chain WHERE kind = 'backfill_queued'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(queued.starts_with("dbt build --select fct_deliveries+ --event-time-start"));
    tmux(&["send-keys", "-t", s, "Escape"]);
    wait_for(s, "Incidents");
    quit(s);
}
