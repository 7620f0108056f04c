//! The real console in tmux, for the end-to-end tests: sessions opened detached at a
//! size and killed on drop, their screens read back with capture-pane.

#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

pub fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `session` shows now.
pub fn screen(session: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", session])
}

/// False (and the test skips, saying so) without tmux, unless DATAWARD_REQUIRE_ALL=1.
/// Waits until the screen of `session` shows `text`; the deadline only bounds a hung
/// test.
pub fn wait_for(session: &str, text: &str) -> String {
    wait_until(session, text, || screen(session))
}

/// Waits until what `shown` reads holds `text`.
fn wait_until(session: &str, text: &str, shown: impl Fn() -> String) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let shown = shown();
        if shown.contains(text) {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "{session} never showed {text:?}; the screen was:\n{shown}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn tmux_available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("DATAWARD_REQUIRE_ALL").is_err(),
            "tmux is required (DATAWARD_REQUIRE_ALL=1)"
        );
        eprintln!("skipping: tmux is not installed");
    }
    found
}

pub struct Session(pub String);

impl Session {
    /// A detached tmux session of `size` (columns, rows) running `command`; killed on drop.
    pub fn open(name: &str, size: (u16, u16), command: &str) -> Session {
        let (width, height) = (size.0.to_string(), size.1.to_string());
        tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &width,
            "-y",
            &height,
            command,
        ]);
        Session(name.to_string())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}

/// A tmux server of the test's own (its socket named after the test), so a server
/// option set here never touches anyone's sessions; killed on drop.
pub struct PrivateTmux(pub String);

impl PrivateTmux {
    pub fn new(name: &str) -> PrivateTmux {
        PrivateTmux(format!("dataward-{name}-{}", std::process::id()))
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until its session `console` shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        wait_until(&self.0, text, || {
            self.run(&["capture-pane", "-p", "-t", "console"])
        })
    }
}

impl Drop for PrivateTmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}
