//! Putting the terminal into full-screen mode and, on every way out (return, error,
//! panic, suspend), putting it back. A console that dies leaving the shell in raw mode
//! on a shared SSH host is worse than one that never started.

use std::io::{self, stdout, Stdout};
use std::sync::atomic::{AtomicI32, Ordering};

use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub type Screen = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped, so an early `?` return cannot skip it; then
/// lets the terminating signals kill again (a second one while the engine finishes).
pub struct RestoreOnDrop;

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        let _ = restore();
        release_quit_signals();
    }
}

/// The signals that would kill the console with the terminal still raw and on the
/// alternate screen: `kill`, a closed SSH session or tmux pane, and `kill -INT`/`-QUIT`
/// (raw mode turns Ctrl-C into a key, but not a signal sent from elsewhere).
const QUIT_SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The last quit signal caught, 0 for none. The handler only stores it (an atomic
/// store is async-signal-safe); the input thread polls it and turns it into the same
/// quit as `q`, so the terminal is restored and the engine finishes on the normal path.
static QUIT_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_quit_signal(signal: libc::c_int) {
    QUIT_SIGNAL.store(signal, Ordering::Relaxed);
}

/// The quit signal received since [`setup`], if any.
pub fn quit_signal() -> Option<i32> {
    match QUIT_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

fn set_quit_handler(handler: libc::sighandler_t) -> io::Result<()> {
    for signal in QUIT_SIGNALS {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the handler only
        // stores to an atomic; SA_RESTART keeps other threads' system calls from
        // failing with EINTR.
        let result = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn catch_quit_signals() -> io::Result<()> {
    QUIT_SIGNAL.store(0, Ordering::Relaxed);
    set_quit_handler(on_quit_signal as extern "C" fn(libc::c_int) as libc::sighandler_t)
}

fn release_quit_signals() {
    let _ = set_quit_handler(libc::SIG_DFL);
}

/// Full-screen mode, with a panic hook that restores the terminal before the panic
/// message prints (otherwise the message lands on the alternate screen and is lost).
pub fn setup() -> io::Result<(Screen, RestoreOnDrop)> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = restore();
        previous(info);
    }));
    catch_quit_signals()?;
    enter()?;
    let guard = RestoreOnDrop;
    let terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    Ok((terminal, guard))
}

fn enter() -> io::Result<()> {
    enable_raw_mode()?;
    // Bracketed paste keeps a pasted reason with newlines from submitting itself.
    execute!(stdout(), EnterAlternateScreen, EnableBracketedPaste)
}

/// Safe to call more than once and when setup never finished.
pub fn restore() -> io::Result<()> {
    let raw = disable_raw_mode();
    execute!(
        stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    )?;
    raw
}

/// Ctrl-Z: hand the terminal back to the shell, stop, and take it again on `fg`.
/// Raw mode swallows the key instead of the kernel sending SIGTSTP, so we stop
/// ourselves once the terminal is back to normal.
pub fn suspend(terminal: &mut Screen) -> io::Result<()> {
    restore()?;
    #[cfg(unix)]
    {
        // SAFETY: raise only sends a signal to this process; SIGTSTP's default action
        // stops it until SIGCONT, then raise returns.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
    }
    enter()?;
    terminal.clear()
}
