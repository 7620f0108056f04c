//! Feedback from the console, end to end: the real binary in tmux attached to a real
//! `dataward serve`. `Z` snoozes the open incident's monitor (the duration, then the
//! reason, in the reason box); the monitors pane shows it quiet with its end, until it
//! ends by itself. `E` closes the incident as expected. A read-only console has
//! neither key. The chain verifies after.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/tmux.rs"]
mod terminal;

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::{dataward, text, Engine};
use terminal::{screen, tmux, tmux_available, wait_for, Session};

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

/// One table far below its expected row count: an incident on the first poll, owned by
/// the person running the test.
fn estate(dir: &Path) {
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    wh.execute_batch("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1), (2);")
        .unwrap();
    let me = users_name();
    let config = format!(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [serve]\nobservers = true\n\n\
         [people.{me:?}]\nname = \"tester\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nautonomy = \"L0\"\n\n\
         [[monitor]]\nname = \"orders_rows\"\nwarehouse = \"local\"\ntable = \"orders\"\n\
         checks = [\"row_count\"]\nevery = \"1h\"\nexpected_rows = 100000\n"
    );
    std::fs::write(dir.join("team.toml"), config).unwrap();
}

fn serve(dir: &Path) -> Engine {
    let engine = Engine(
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--config"])
            .arg(dir.join("team.toml"))
            .arg("--data-dir")
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    loop {
        let out = dataward(&["incidents"], &dir.join("data"));
        let serving = UnixStream::connect(dir.join("data").join("dataward.sock")).is_ok();
        if serving && text(&out).contains("INC-0001") {
            return engine;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "no engine: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn console(name: &str, dir: &Path, extra: &str) -> Session {
    let command = format!(
        "env XDG_STATE_HOME={} {} --data-dir {} {extra}",
        dir.join("xdg-state").display(),
        env!("CARGO_BIN_EXE_dataward"),
        dir.join("data").display()
    );
    Session::open(name, (140, 40), &command)
}

fn keys(session: &str, keys: &[&str]) {
    for key in keys {
        tmux(&["send-keys", "-t", session, key]);
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// Types `text` literally (a reason), not as key names.
fn type_text(session: &str, text: &str) {
    tmux(&["send-keys", "-t", session, "-l", text]);
    std::thread::sleep(Duration::from_millis(150));
}

fn wait_until_gone(session: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while screen(session).contains(text) {
        assert!(
            Instant::now() < deadline,
            "{text:?} never went away:\n{}",
            screen(session)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn snooze_and_expected_from_the_keyboard() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    estate(root);
    let _engine = serve(root);

    // An observer has neither key: they are removed from its help.
    let observer = console(
        &format!("dataward-fb-ro-{}", std::process::id()),
        root,
        "--read-only",
    );
    let o = observer.0.as_str();
    wait_for(o, "INC-0001");
    keys(o, &["?"]);
    wait_for(o, "Keys (Esc closes)");
    keys(o, &["/"]);
    type_text(o, "snooze");
    let help = wait_for(o, "snooze");
    std::thread::sleep(Duration::from_millis(500));
    let help = format!("{help}{}", screen(o));
    assert!(!help.contains("⚠ snooze the"), "{help}");
    assert!(!help.contains("this was fine"), "{help}");
    // The observer stays open to the end: killing the last session stops the tmux
    // server, and a session opened while it stops can fail to start.
    keys(o, &["Escape", "Escape"]);

    let owner = console(&format!("dataward-fb-{}", std::process::id()), root, "");
    let s = owner.0.as_str();
    wait_for(s, "INC-0001");
    keys(s, &["?"]);
    let help = wait_for(s, "Keys (Esc closes)");
    keys(s, &["/"]);
    type_text(s, "snooze");
    let help = format!("{help}{}", wait_for(s, "⚠ snooze the"));
    assert!(help.contains("Z "), "{help}");
    keys(s, &["Escape", "Escape"]);
    wait_until_gone(s, "Keys (Esc closes)");

    // Z on the open incident: the box asks for a duration, then the reason. A snooze
    // over a week is refused in the box.
    keys(s, &["Enter"]);
    wait_for(s, "Esc q");
    keys(s, &["Z"]);
    wait_for(s, "Snooze INC-0001");
    type_text(s, "8d too long");
    keys(s, &["Enter"]);
    wait_for(s, "at most 7 days");
    for _ in 0.."8d too long".len() {
        keys(s, &["BSpace"]);
    }
    type_text(s, "20s reload");
    keys(s, &["Enter"]);
    wait_for(s, "snoozed until");

    // The monitors pane shows it quiet, with its end, until it ends by itself.
    keys(s, &["Escape"]);
    let shown = wait_for(s, "quiet until");
    assert!(shown.contains("): reload)"), "{shown}");
    // So does the incident's row on the list, with the snooze's end.
    let shown = wait_for(s, "⏸ until");
    let row = shown
        .lines()
        .find(|l| l.contains("INC-0001"))
        .unwrap_or_default();
    assert!(row.contains("⏸ until"), "{shown}");
    wait_until_gone(s, "quiet until");
    wait_until_gone(s, "⏸ until");
    let state = root.join("data").join("dataward.db");
    let conn =
        rusqlite::Connection::open_with_flags(&state, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let ended: i64 = conn
        .query_row(
            "SELECT count(*) FROM chain WHERE kind = 'snooze_ended'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ended, 1);
    drop(conn);

    // Z in the monitors pane snoozes the selected monitor.
    keys(s, &["Tab", "Z"]);
    wait_for(s, "Snooze orders_rows");
    type_text(s, "1h again");
    keys(s, &["Enter"]);
    let shown = wait_for(s, "): again");
    assert!(shown.contains("quiet until"), "{shown}");
    keys(s, &["Tab"]);

    // E: this was fine. The incident closes as expected.
    keys(s, &["Enter"]);
    wait_for(s, "Esc q");
    keys(s, &["E"]);
    wait_for(s, "Mark expected INC-0001");
    type_text(s, "a planned purge");
    keys(s, &["Enter"]);
    wait_for(s, "closed as expected");
    let receipt = text(&dataward(&["receipt", "INC-0001"], &root.join("data")));
    assert!(receipt.contains("expected: this was fine"), "{receipt}");
    assert!(receipt.contains("a planned purge"), "{receipt}");
    let out = dataward(&["verify"], &root.join("data"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
