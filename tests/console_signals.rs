//! SIGTERM, SIGHUP, SIGINT and SIGQUIT sent to a running console: the real binary in a
//! tmux pane, the signal sent to its pid, then the pane must be back on the normal
//! screen, in cooked mode, with the cursor shown and mouse reporting off, and the
//! console must have left through its quit path (the engine stopped, the chain intact).

#[path = "support/tmux.rs"]
mod terminal;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use terminal::{screen, tmux, tmux_available, Session};

fn flag(session: &str, name: &str) -> String {
    tmux(&[
        "display-message",
        "-p",
        "-t",
        session,
        &format!("#{{{name}}}"),
    ])
    .trim()
    .to_string()
}

fn wait_for(session: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = screen(session);
        if done(&shown) {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "never saw {what}; alternate_on={} the screen was:\n{shown}",
            flag(session, "alternate_on")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn type_line(session: &str, line: &str) {
    tmux(&["send-keys", "-t", session, "-l", line]);
    tmux(&["send-keys", "-t", session, "Enter"]);
}

/// Starts the demo console from the pane's shell and returns its pid.
fn start_console(session: &str, dir: &Path, round: usize) -> i32 {
    let pid_file = dir.join("pid");
    type_line(session, "clear");
    type_line(
        session,
        &format!(
            // EXIT''ED: the typed line must not itself show the marker the test waits
            // for (a long path can wrap it to the start of a screen line).
            "sh -c 'echo $$ > {}; exec {} demo --data-dir {}'; echo EXIT''ED-{round}-$?",
            pid_file.display(),
            env!("CARGO_BIN_EXE_dataward"),
            dir.join("data").display()
        ),
    );
    wait_for(session, "the console", |s| {
        s.contains("Incidents") && !s.contains("EXITED")
    });
    assert_eq!(
        flag(session, "alternate_on"),
        "1",
        "the console is full-screen"
    );
    std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn every_terminating_signal_restores_the_terminal() {
    if !tmux_available() {
        return;
    }
    let name = format!("dataward-signals-{}", std::process::id());
    // dash, not bash: readline would turn bracketed paste and its own modes on at the
    // prompt and hide what the console left behind.
    let session = Session::open(&name, (120, 40), "/bin/sh");
    let s = session.0.as_str();
    for (round, (signal, signal_name)) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGINT, "INT"),
        (libc::SIGQUIT, "QUIT"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let pid = start_console(s, dir.path(), round);
        // SAFETY: kill sends a signal to the console we started; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill -{signal_name}");
        let exited = format!("EXITED-{round}-");
        let shown = wait_for(
            s,
            &format!("the console exit after SIG{signal_name}"),
            // Anywhere on a line: a prompt may come first when the shell redraws.
            |screen| screen.lines().any(|l| l.contains(&exited)),
        );
        let status = shown
            .lines()
            .find_map(|l| l.split_once(&exited).map(|(_, status)| status))
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(
            flag(s, "alternate_on"),
            "0",
            "SIG{signal_name} left the alternate screen on:\n{shown}"
        );
        assert_eq!(
            flag(s, "cursor_flag"),
            "1",
            "SIG{signal_name} hid the cursor"
        );
        assert_eq!(
            flag(s, "mouse_any_flag"),
            "0",
            "SIG{signal_name} left mouse reporting on"
        );
        assert_eq!(status, "0", "SIG{signal_name}: the console quits as on `q`");
        type_line(
            s,
            "echo STTY: $(stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon -e echo -e -echo)",
        );
        let shown = wait_for(s, "the terminal modes", |screen| {
            screen.lines().any(|l| l.starts_with("STTY: "))
        });
        let modes = shown.lines().find(|l| l.starts_with("STTY: ")).unwrap();
        assert_eq!(
            modes, "STTY: icanon echo",
            "SIG{signal_name} left the terminal out of cooked mode"
        );
        // The engine finished through the quit path: the chain it wrote verifies.
        let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("verify")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "SIG{signal_name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A console whose terminal goes away (an SSH connection dropped, a tmux session
/// killed) quits like on `q`, instead of living on with nobody to see it. Tried with
/// the story over and the incident open (the engine then sends nothing), where the
/// terminal's input could keep a console alive, reading a dead terminal forever.
#[test]
fn a_console_whose_terminal_is_gone_exits() {
    if !tmux_available() {
        return;
    }
    for round in 0..3 {
        let name = format!("dataward-hangup-{}-{round}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!(
            "sh -c 'echo $$ > {}; exec {} demo --speed 100000000 --data-dir {}'",
            pid_file.display(),
            env!("CARGO_BIN_EXE_dataward"),
            dir.path().join("data").display()
        );
        let session = Session::open(&name, (160, 50), &command);
        let s = session.0.as_str();
        wait_for(s, "the incident", |screen| screen.contains("INC-0001"));
        tmux(&["send-keys", "-t", s, "Enter"]);
        wait_for(s, "the story's end", |screen| {
            screen.contains("dataward  Tue 15:10")
        });
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        tmux(&["kill-session", "-t", s]);
        // Bounds a hung test only: the process must go away, not merely stop drawing.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SAFETY: signal 0 only asks whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            if std::time::Instant::now() > deadline {
                // SAFETY: the console we started; it must not outlive the test.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("round {round}: the console outlived its terminal (pid {pid})");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
