//! The keys as a person presses them, through tmux to the real binary: what tmux and
//! the terminal do to a key on its way (an Esc glued to the next key) included.

#[path = "support/tmux.rs"]
mod terminal;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use terminal::{screen, tmux, tmux_available, wait_for, PrivateTmux, Session};

fn session_alive(session: &str) -> bool {
    Command::new("tmux")
        .args(["has-session", "-t", session])
        .output()
        .unwrap()
        .status
        .success()
}

/// Waits for the console to exit, which ends the tmux session.
fn wait_for_exit(session: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while session_alive(session) {
        assert!(
            Instant::now() < deadline,
            "the console did not quit:\n{}",
            screen(session)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn demo(name: &str, data_dir: &Path, extra: &str, size: (u16, u16)) -> Session {
    let name = format!("dataward-keys-{name}-{}", std::process::id());
    let command = format!(
        "{} {extra} demo --speed 300 --data-dir {}",
        env!("CARGO_BIN_EXE_dataward"),
        data_dir.display()
    );
    Session::open(&name, size, &command)
}

/// Esc then q sent at once reach the console as one read, `ESC q`, which a terminal
/// parser takes for Alt-q: the help must close and the console quit all the same.
#[test]
fn escape_then_a_key_at_once_is_escape_then_the_key() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = demo("esc", dir.path(), "", (120, 40));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    tmux(&["send-keys", "-t", s, "?"]);
    wait_for(s, "Keys (Esc closes)");
    tmux(&["send-keys", "-t", s, "Escape", "q"]);
    wait_for_exit(s);
}

/// `dataward --read-only demo`: the demo's own console looks but cannot decide.
#[test]
fn the_read_only_demo_cannot_decide() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = demo("ro", dir.path(), "--read-only", (120, 40));
    let s = session.0.as_str();
    let shown = wait_for(s, "INC-0001");
    let status = shown.lines().nth(38).unwrap_or_default().to_string();
    assert!(status.contains("read-only"), "{shown}");
    // No decision key: `a` on the hold opens no reason box.
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "Blast radius");
    tmux(&["send-keys", "-t", s, "a"]);
    tmux(&["send-keys", "-t", s, "?"]);
    let help = wait_for(s, "Keys (Esc closes)");
    assert!(!help.contains("Approve INC"), "{help}");
    assert!(help.contains("read-only console"), "{help}");
    assert!(!help.contains('⚠'), "{help}");
    tmux(&["send-keys", "-t", s, "Escape"]);
    // Nor a dangerous command.
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "stop testing"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "read-only console: :stop is not available");
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["stop", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "no stop is set: {out:?}");
}

fn status_line(session: &str) -> String {
    let shown = screen(session);
    let lines: Vec<&str> = shown.lines().collect();
    lines[lines.len().saturating_sub(2)].to_string()
}

/// Waits until the status line (the one above the hints) shows `text`.
fn wait_for_status(session: &str, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = status_line(session);
        if status.contains(text) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the status line never said {text:?}:\n{}",
            screen(session)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The command line as a shell: Tab completes the command and the theme, Up brings the
/// line back, Ctrl-W cuts its last word.
#[test]
fn the_command_line_completes_remembers_and_edits() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = demo("line", dir.path(), "", (120, 40));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "th"]);
    tmux(&["send-keys", "-t", s, "Tab"]);
    tmux(&["send-keys", "-t", s, "-l", "li"]);
    tmux(&["send-keys", "-t", s, "Tab"]);
    wait_for(s, ":theme light");
    tmux(&["send-keys", "-t", s, "Enter"]);
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "Up"]);
    wait_for(s, ":theme light");
    tmux(&["send-keys", "-t", s, "C-w"]);
    tmux(&["send-keys", "-t", s, "-l", "ansi16"]);
    tmux(&["send-keys", "-t", s, "C-a", "C-k"]);
    tmux(&["send-keys", "-t", s, "-l", "theme colorblind"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "theme"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for_status(s, "theme colorblind (available");
}

/// `:INC-0001` (in any case) opens that incident.
#[test]
fn a_command_jumps_to_an_incident() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = demo("jump", dir.path(), "", (120, 40));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "inc-0001"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    let detail = wait_for(s, "Blast radius");
    assert!(detail.contains("INC-0001"), "{detail}");
}

/// `y` copies over OSC 52: tmux (with set-clipboard on, as it must be for this) takes
/// the escape and keeps the text as a paste buffer.
#[test]
fn y_copies_the_incident_id_over_osc_52() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = PrivateTmux::new("copy");
    let command = format!(
        "{} demo --speed 300 --data-dir {}",
        env!("CARGO_BIN_EXE_dataward"),
        dir.path().display()
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "console",
        "-x",
        "120",
        "-y",
        "40",
        &command,
    ]);
    tmux.run(&["set-option", "-s", "set-clipboard", "on"]);
    tmux.wait_for("INC-0001");
    tmux.run(&["send-keys", "-t", "console", "y"]);
    tmux.wait_for("copied the incident id: INC-0001");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let buffer = tmux.run(&["show-buffer"]);
        if buffer == "INC-0001" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the paste buffer holds {buffer:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The mouse is off until `:mouse on`: a click on the incident's row then selects it,
/// and a second opens it. The click is the SGR report a terminal sends.
#[test]
fn a_click_opens_the_incident_once_the_mouse_is_on() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = demo("mouse", dir.path(), "", (120, 40));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    // Row 4, column 10 (from 1): the first incident's row, below the title, the list's
    // border and its header.
    let click = || {
        for report in ["\u{1b}[<0;10;4M", "\u{1b}[<0;10;4m"] {
            let hex: Vec<String> = report.bytes().map(|b| format!("{b:02x}")).collect();
            let mut args = vec!["send-keys", "-t", s, "-H"];
            args.extend(hex.iter().map(String::as_str));
            tmux(&args);
        }
    };
    click();
    click();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !screen(s).contains("Blast radius"),
        "the mouse is off:\n{}",
        screen(s)
    );
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "mouse on"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "mouse on");
    click();
    click();
    wait_for(s, "Blast radius");
}
