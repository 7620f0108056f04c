//! The quit signals' handlers, as the kernel holds them after `signals::catch()`.
//!
//! A Go runtime loaded into the process (the ADBC Snowflake driver is a Go shared
//! library) runs its goroutines on small stacks and takes any signal on an alternate
//! stack only if the handler was installed with `SA_ONSTACK`; a handler without it can
//! run on a goroutine's stack and crash the process ("signal arrived during external
//! code execution" / "non-Go code set up signal handler without SA_ONSTACK flag").

use dataward::signals;

const QUIT_SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The flags of the handler the kernel holds for `signal`, read back without changing it.
fn installed(signal: libc::c_int) -> (libc::sighandler_t, libc::c_int) {
    // SAFETY: a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(signal, std::ptr::null(), &mut old),
            0,
            "sigaction({signal}) failed: {}",
            std::io::Error::last_os_error()
        );
        (old.sa_sigaction, old.sa_flags)
    }
}

#[test]
fn every_quit_handler_runs_on_the_alternate_stack_and_restarts_calls() {
    signals::catch().expect("catch");
    for signal in QUIT_SIGNALS {
        let (handler, flags) = installed(signal);
        assert_ne!(handler, libc::SIG_DFL, "signal {signal} is not caught");
        assert_ne!(
            flags & libc::SA_ONSTACK,
            0,
            "signal {signal}'s handler lacks SA_ONSTACK (flags {flags:#x}): a Go driver in \
             the process would crash on it"
        );
        assert_ne!(
            flags & libc::SA_RESTART,
            0,
            "signal {signal} lacks SA_RESTART"
        );
    }
    // Released, the default action comes back with the same flags, so a Go runtime
    // that chains to it still finds SA_ONSTACK.
    signals::release();
    for signal in QUIT_SIGNALS {
        let (handler, flags) = installed(signal);
        assert_eq!(handler, libc::SIG_DFL, "signal {signal} still caught");
        assert_ne!(
            flags & libc::SA_ONSTACK,
            0,
            "signal {signal} released without SA_ONSTACK"
        );
    }
}
