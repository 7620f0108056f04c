//! Putting the terminal into full-screen mode and, on every way out (return, error,
//! panic, suspend), putting it back. A console that dies leaving the shell in raw mode
//! on a shared SSH host is worse than one that never started.

use std::io::{self, stdout, Stdout};

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
        crate::signals::release();
    }
}

/// Full-screen mode, with a panic hook that restores the terminal before the panic
/// message prints (otherwise the message lands on the alternate screen and is lost).
pub fn setup() -> io::Result<(Screen, RestoreOnDrop)> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = restore();
        previous(info);
    }));
    crate::signals::catch()?;
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
