//! Putting the terminal into full-screen mode and, on every way out (return, error,
//! panic, suspend), putting it back. A console that dies leaving the shell in raw mode
//! on a shared SSH host is worse than one that never started.
//!
//! Nothing here asks the terminal anything. A question (ratatui's `Terminal::clear`
//! asks for the cursor position, `ESC[6n`) waits for an answer that the input thread
//! may be reading, that a slow link delays by a round trip, and that a terminal which
//! never answers turns into the console ending after 2 s. Every redraw, full ones
//! included, is written blind.

use std::io::{self, stdout, Write};

use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, BeginSynchronizedUpdate, EndSynchronizedUpdate,
    EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{execute, queue};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Position, Rect};
use ratatui::{Frame, Terminal};

pub type Screen = Terminal<CrosstermBackend<FrameWriter>>;

/// The end of a synchronized update, as crossterm writes `EndSynchronizedUpdate`.
const FRAME_END: &[u8] = b"\x1b[?2026l";

/// Where the console's drawing goes: held in memory and written to stdout only when a
/// flush finds the frame whole (it ends with the end of its synchronized update). A
/// frame so leaves in one write however often ratatui flushes on the way, and a frame
/// cut short by a panic is dropped with the writer instead of landing on the shell's
/// screen after the panic hook restored it.
#[derive(Default)]
pub struct FrameWriter {
    pending: Vec<u8>,
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    /// Writes what is held once it ends a frame, and then empties it, written or not: a
    /// frame is never sent twice.
    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.ends_with(FRAME_END) {
            return Ok(());
        }
        let mut out = stdout().lock();
        let written = out.write_all(&self.pending).and_then(|()| out.flush());
        self.pending.clear();
        written
    }
}

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
    // A full-screen viewport: ratatui reads the size (an ioctl), never the cursor.
    let terminal = Terminal::new(CrosstermBackend::new(FrameWriter::default()))?;
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
        // A frame cut short (a signal between its two halves) must not leave the
        // terminal holding back what the shell prints next.
        EndSynchronizedUpdate,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    )?;
    raw
}

/// Draws one frame as one synchronized update (DEC mode 2026): a terminal that knows
/// the mode shows it whole, so a 10 KB repaint over a slow link never shows torn; one
/// that does not ignores the two sequences. With `full`, every cell is drawn again on a
/// cleared screen (start, Ctrl-L, resize, tmux re-attach, a new theme, `fg`) instead of
/// only what changed since the last frame.
pub fn draw(screen: &mut Screen, full: bool, render: impl FnOnce(&mut Frame)) -> io::Result<()> {
    queue!(screen.backend_mut(), BeginSynchronizedUpdate)?;
    if full {
        forget_the_screen(screen)?;
    }
    screen.draw(render)?;
    // The flush that sends the frame: see `FrameWriter`.
    execute!(screen.backend_mut(), EndSynchronizedUpdate)
}

/// Clears the screen and forgets what ratatui last drew there, so the next frame draws
/// every cell. For a full-screen viewport, `resize` to the current size does just that
/// (a clear, and the previous buffer reset) without the cursor position request that
/// `Terminal::clear` makes.
fn forget_the_screen(screen: &mut Screen) -> io::Result<()> {
    let size = screen.size()?;
    screen.resize(Rect::from((Position::ORIGIN, size)))
}

/// Ctrl-Z: hand the terminal back to the shell, stop, and take it again on `fg`.
/// Raw mode swallows the key instead of the kernel sending SIGTSTP, so we stop
/// ourselves once the terminal is back to normal. The caller repaints in full.
pub fn suspend() -> io::Result<()> {
    restore()?;
    #[cfg(unix)]
    {
        // SAFETY: raise only sends a signal to this process; SIGTSTP's default action
        // stops it until SIGCONT, then raise returns.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
    }
    enter()
}
