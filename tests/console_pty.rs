//! The real console on a terminal that never answers. This test holds the other end of
//! a pseudo-terminal: it records every byte the console writes and answers nothing, as
//! a terminal behind a slow or lossy SSH link may not. Through start-up, Ctrl-L, a
//! resize, `:theme` and Ctrl-Z then `fg`, the console must never ask the terminal
//! anything (a cursor position request, `ESC[6n`, would wait on an answer that never
//! comes and end the console after 2 s), must redraw everything each time, must still
//! be there afterwards, and must write every frame inside a synchronized update
//! (`ESC[?2026h` … `ESC[?2026l`) so a repaint never shows half drawn.

#![cfg(unix)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CURSOR_POSITION_REQUEST: &[u8] = b"\x1b[6n";
const BEGIN_FRAME: &[u8] = b"\x1b[?2026h";
const END_FRAME: &[u8] = b"\x1b[?2026l";
const CLEAR_ALL: &[u8] = b"\x1b[2J";
/// Longer than crossterm waits for a cursor position before it gives up with an error.
const LONGER_THAN_A_QUERY_TIMEOUT: Duration = Duration::from_millis(2_500);

fn winsize(columns: u16, rows: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// The console on the far end of a pseudo-terminal, and everything it wrote so far.
struct FakeTerminal {
    master: File,
    written: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    console: Child,
}

impl FakeTerminal {
    fn start(dir: &std::path::Path, columns: u16, rows: u16) -> FakeTerminal {
        let (mut master, mut slave) = (0, 0);
        let size = winsize(columns, rows);
        // SAFETY: openpty writes two new descriptors into the integers given; the null
        // name and termios are allowed and leave the defaults.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and nothing else owns them.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
        command
            .arg("demo")
            .arg("--data-dir")
            .arg(dir.join("data"))
            .env("TERM", "xterm-256color")
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec. A session of its
        // own with the pseudo-terminal as its controlling terminal: /dev/tty is ours,
        // and a resize reaches the console as SIGWINCH, as it would from a real one.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let console = command.spawn().expect("the console starts");
        let master = File::from(master);
        let written = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = Arc::clone(&written);
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 16 * 1024];
            // Ends with EIO once the console and every copy of the slave are gone.
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        FakeTerminal {
            master,
            written,
            reader: Some(reader),
            console,
        }
    }

    fn written(&self) -> Vec<u8> {
        self.written.lock().unwrap().clone()
    }

    /// Everything the console wrote, once it has ended and its last bytes are read.
    fn all_written(&mut self) -> Vec<u8> {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.written()
    }

    fn mark(&self) -> usize {
        self.written.lock().unwrap().len()
    }

    fn press(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
    }

    fn resize(&self, columns: u16, rows: u16) {
        let size = winsize(columns, rows);
        // SAFETY: TIOCSWINSZ reads one winsize; the kernel then sends SIGWINCH to the
        // terminal's foreground process group, the console's.
        let set = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(set, 0, "TIOCSWINSZ: {}", std::io::Error::last_os_error());
    }

    fn assert_alive(&mut self, when: &str) {
        if let Some(status) = self.console.try_wait().unwrap() {
            panic!(
                "the console ended ({status}) {when}; it wrote, last:\n{}",
                tail(&self.written())
            );
        }
    }

    /// Waits for a whole frame written after `mark` that `wanted` accepts; returns it.
    fn frame_after(&mut self, mark: usize, what: &str, wanted: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let written = self.written();
            if let Some(frame) = frames(&written[mark.min(written.len())..])
                .into_iter()
                .find(|frame| wanted(frame))
            {
                return frame.to_vec();
            }
            self.assert_alive(&format!("while waiting for {what}"));
            assert!(
                Instant::now() < deadline,
                "never saw {what}; the console wrote, last:\n{}",
                tail(&written)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the bytes after `mark` contain `needle`.
    fn wait_for_bytes(&mut self, mark: usize, needle: &[u8], what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while find(&self.written()[mark..], needle).is_none() {
            self.assert_alive(&format!("while waiting for {what}"));
            assert!(Instant::now() < deadline, "never saw {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for FakeTerminal {
    fn drop(&mut self) {
        // Only when a failed assertion left it running.
        if let Ok(None) = self.console.try_wait() {
            let _ = self.console.kill();
            let _ = self.console.wait();
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

/// The whole frames in `bytes`: what lies between each begin and the end after it.
fn frames(bytes: &[u8]) -> Vec<&[u8]> {
    let mut found = Vec::new();
    let mut rest = bytes;
    while let Some(begin) = find(rest, BEGIN_FRAME) {
        let inside = &rest[begin + BEGIN_FRAME.len()..];
        let Some(end) = find(inside, END_FRAME) else {
            break;
        };
        found.push(&inside[..end]);
        rest = &inside[end + END_FRAME.len()..];
    }
    found
}

/// What the console wrote outside its frames. A well-behaved console writes nothing
/// there but the mode switches of entering and leaving full-screen mode (`ESC[?…h`,
/// `ESC[?…l`: alternate screen, bracketed paste, mouse, cursor shown).
fn outside_frames(bytes: &[u8]) -> Vec<u8> {
    let mut outside = Vec::new();
    let mut rest = bytes;
    loop {
        let Some(begin) = find(rest, BEGIN_FRAME) else {
            outside.extend_from_slice(rest);
            break;
        };
        outside.extend_from_slice(&rest[..begin]);
        let inside = &rest[begin + BEGIN_FRAME.len()..];
        match find(inside, END_FRAME) {
            Some(end) => rest = &inside[end + END_FRAME.len()..],
            None => break,
        }
    }
    outside
}

/// True when `bytes` is nothing but DEC private mode sets and resets.
fn only_mode_switches(mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let Some(body) = bytes.strip_prefix(b"\x1b[?") else {
            return false;
        };
        let digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
        match body.get(digits) {
            Some(b'h' | b'l') if digits > 0 => bytes = &body[digits + 1..],
            _ => return false,
        }
    }
    true
}

fn tail(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(1500);
    String::from_utf8_lossy(&bytes[from..])
        .escape_debug()
        .to_string()
}

fn shows_the_list(frame: &[u8]) -> bool {
    contains(frame, b"Incidents (")
}

/// A full repaint: the screen cleared and the list drawn again, in one frame.
fn repaints(frame: &[u8]) -> bool {
    contains(frame, CLEAR_ALL) && shows_the_list(frame)
}

#[test]
fn a_terminal_that_never_answers_neither_stalls_nor_ends_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let mut terminal = FakeTerminal::start(dir.path(), 100, 30);

    terminal.frame_after(0, "the first frame with the incident list", repaints);

    let mark = terminal.mark();
    terminal.press(b"\x0c");
    terminal.frame_after(mark, "the repaint after Ctrl-L", repaints);

    let mark = terminal.mark();
    terminal.resize(120, 40);
    let frame = terminal.frame_after(mark, "the repaint at 120x40", |frame| {
        // The key hints are on the bottom row, the 40th.
        repaints(frame) && contains(frame, b"\x1b[40;")
    });
    assert!(!contains(&frame, b"\x1b[41;"), "nothing below the 40th row");

    let mark = terminal.mark();
    terminal.press(b":theme light\r");
    terminal.frame_after(mark, "the repaint in the light theme", repaints);

    // Ctrl-Z hands the terminal back and stops the console; SIGCONT is `fg`. (Without
    // a shell's job control the stop may be discarded; the console goes on the same.)
    let mark = terminal.mark();
    terminal.press(b"\x1a");
    terminal.wait_for_bytes(
        mark,
        b"\x1b[?1049l",
        "the console leaving the alternate screen",
    );
    let pid = terminal.console.id() as libc::pid_t;
    // SAFETY: a signal to the child this test started, which has not been reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    terminal.frame_after(mark, "the repaint after fg", repaints);

    // Long enough for any question the console asked to have timed out and ended it.
    std::thread::sleep(LONGER_THAN_A_QUERY_TIMEOUT);
    terminal.assert_alive("after the redraws");
    let mark = terminal.mark();
    terminal.press(b"\x0c");
    terminal.frame_after(mark, "a repaint after the wait", repaints);

    let written = terminal.written();
    assert!(
        !contains(&written, CURSOR_POSITION_REQUEST),
        "the console asked the terminal for the cursor position (ESC[6n)"
    );
    let outside = outside_frames(&written);
    assert!(
        only_mode_switches(&outside),
        "the console drew outside a synchronized update: {}",
        tail(&outside)
    );
    let begins = written
        .windows(BEGIN_FRAME.len())
        .filter(|w| *w == BEGIN_FRAME)
        .count();
    assert_eq!(
        begins,
        frames(&written).len(),
        "every frame that begins also ends, and none is nested in another"
    );

    terminal.press(b"q");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = terminal.console.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the console did not quit on q");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "the console quit with {status}");
    assert!(
        !contains(&terminal.all_written(), CURSOR_POSITION_REQUEST),
        "the console asked the terminal for the cursor position on its way out"
    );
}
