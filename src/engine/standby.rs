//! A standby's socket. An engine standing by for its team binds its host's socket as
//! a leader would (same path, same permissions) and answers every client with who
//! leads and where, read from the lease as each client arrives, so a person on this
//! host learns where to turn instead of finding no engine. When this engine takes the
//! lead, the refuser stops and hands the listener itself to the engine: a client that
//! connects meanwhile waits in the listener's queue for the engine's answer.

use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Result;

use super::api::{Refusal, RefusalKind};
use super::server::{admit, hello, refuse, take_connection, Slots};
use crate::approve::Actor;
use crate::config::Config;
use crate::store::place::TeamState;
use crate::store::postgres::{connect, lease};

/// How every answer of a standby begins.
const STANDBY: &str = "standby: ";

/// Is this refusal a standby's (this host's engine stands by; another leads)?
pub fn is_standby(refusal: &Refusal) -> bool {
    refusal.message.starts_with(STANDBY)
}

/// How long the refuser waits for a client before it looks whether it is to stop.
const LOOK_EVERY_MS: i32 = 100;

/// The refuser running on its own thread, holding the socket's listener.
pub struct Refuser {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<UnixListener>,
}

impl Refuser {
    /// `me`: how the lease names this engine's holder (`leadership::names`).
    pub fn start(
        listener: UnixListener,
        config: Config,
        team: TeamState,
        me: String,
    ) -> Result<Refuser> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("dataward-standby".into())
            .spawn(move || refuse_all(listener, Arc::new((config, team, me)), &stopped))?;
        Ok(Refuser { stop, thread })
    }

    /// Stops refusing and gives the listener back, bound still: clients that connect
    /// from now on wait for whoever accepts next.
    pub fn stop(self) -> Result<UnixListener> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the standby's socket thread panicked"))
    }
}

/// What a standby answers from: the policy, the team, and how the lease names it.
type Standing = (Config, TeamState, String);

fn refuse_all(listener: UnixListener, standing: Arc<Standing>, stop: &AtomicBool) -> UnixListener {
    let slots = Arc::new(Slots::default());
    while !stop.load(Ordering::SeqCst) {
        if !someone_waits(&listener) {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let Some((actor, slot)) = take_connection(&stream, &slots) else {
            continue;
        };
        let standing = Arc::clone(&standing);
        // A thread each: a client slow to say hello holds up no one else.
        let spawned = std::thread::Builder::new()
            .name("dataward-standby-client".into())
            .spawn(move || {
                if let Err(e) = answer(&stream, &actor, &standing) {
                    tracing::warn!("standby: a client: {e:#}");
                }
                drop(slot);
            });
        if let Err(e) = spawned {
            tracing::warn!("standby: a client not answered: no thread for it: {e}");
        }
    }
    listener
}

/// Does a client wait to be accepted? Waits a moment for one.
fn someone_waits(listener: &UnixListener) -> bool {
    let mut poll = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the listener this function borrows.
    unsafe { libc::poll(&mut poll, 1, LOOK_EVERY_MS) > 0 }
}

/// Takes the client's hello and refuses it: who leads, or why the policy turns it away.
fn answer(stream: &UnixStream, actor: &Actor, standing: &Standing) -> Result<()> {
    let (config, team, me) = standing;
    let Some((_, asked_read_only)) = hello(stream)? else {
        return Ok(());
    };
    let reason = match admit(config, actor, asked_read_only) {
        Ok(_) => Refusal::new(RefusalKind::NotPermitted, who_leads(team, me)),
        Err(reason) => reason,
    };
    refuse(stream, reason)?;
    Ok(())
}

/// Who leads the team, as the lease says now: `standby: host H leads team T at term N
/// (socket S)`. `me` is how the lease names this engine's holder: a client accepted just
/// as this engine took the lead is told to send again.
pub fn who_leads(team: &TeamState, me: &str) -> String {
    let read = connect::connect(&team.source, "dataward standby")
        .and_then(|mut client| lease::read_lease(&mut client, &team.team));
    let name = &team.team;
    match read {
        Ok(Some(lease)) if lease.holder == me => format!(
            "{STANDBY}this engine has just taken the lead of team {name} at term {}: send it again",
            lease.term
        ),
        Ok(Some(lease)) => {
            // The lease names the leader as HOST:SOCKET (`leadership::wait_to_lead`).
            let (host, socket) = lease
                .host
                .split_once(':')
                .unwrap_or((lease.host.as_str(), "unknown"));
            let ran_out = if lease.expired {
                "; its lease has run out, so an engine standing by takes over shortly"
            } else {
                ""
            };
            format!(
                "{STANDBY}host {host} leads team {name} at term {} (socket {socket}){ran_out}; \
                 this engine stands by and decides nothing",
                lease.term
            )
        }
        Ok(None) => {
            format!("{STANDBY}no engine leads team {name} yet; this one stands by to take the lead")
        }
        Err(e) => format!(
            "{STANDBY}this engine stands by for team {name}; who leads cannot be read now: {e:#}"
        ),
    }
}
