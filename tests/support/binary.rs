//! The dataward binary as the integration tests run it: a command against a data
//! directory, its whole output as text, and a spawned engine that goes with the test.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output};

/// `dataward ARGS --data-dir DIR`, waited for.
pub fn dataward(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("the binary runs")
}

/// Standard output, then standard error, as text.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A spawned engine (`serve` or the headless demo); killed when dropped, so a failed
/// assertion leaves no engine behind.
pub struct Engine(pub Child);

impl Engine {
    /// SIGKILL now, as a crash would, and reap it.
    pub fn kill(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `dataward ARGS` run to its end, or a failed test once it has run longer than
/// `bound` (a hang; never a measure of speed).
pub fn dataward_within(args: &[&str], bound: std::time::Duration) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > bound {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "dataward {args:?} still running after {bound:?}\n{}",
                text(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
