//! The signals that end a process run by hand or by a supervisor: `kill`, a closed SSH
//! session or tmux pane, `kill -INT`/`-QUIT`. Caught, they only set a flag; the console
//! (and the headless demo) look at it and leave on their normal path, so the terminal
//! is restored and the engine finishes the transaction in flight.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

const QUIT_SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The last quit signal caught, 0 for none. The handler only stores it (an atomic
/// store is async-signal-safe).
static QUIT_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_quit_signal(signal: libc::c_int) {
    QUIT_SIGNAL.store(signal, Ordering::Relaxed);
}

/// The quit signal received since [`catch`], if any.
pub fn quit_signal() -> Option<i32> {
    match QUIT_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

fn set_handler(handler: libc::sighandler_t) -> io::Result<()> {
    for signal in QUIT_SIGNALS {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the handler only
        // stores to an atomic; SA_RESTART keeps other threads' system calls from
        // failing with EINTR. SA_ONSTACK: a Go runtime in the process (an ADBC driver
        // written in Go, such as Snowflake's) requires it of every handler, as a
        // signal may land on a goroutine's small stack; without an alternate stack set
        // on the thread it changes nothing.
        let result = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// From now on the quit signals set the flag instead of killing the process.
pub fn catch() -> io::Result<()> {
    QUIT_SIGNAL.store(0, Ordering::Relaxed);
    set_handler(on_quit_signal as extern "C" fn(libc::c_int) as libc::sighandler_t)
}

/// The quit signals kill again (a second one while the engine finishes still works).
pub fn release() {
    let _ = set_handler(libc::SIG_DFL);
}
