//! A console attached to an engine. In this process it is one more client of the hub;
//! otherwise it attaches over `DIR/dataward.sock`, starting `dataward serve` in the
//! background when none runs there, so a second console on the same directory attaches
//! too and quitting one never stops the engine. Either way the console holds the same
//! two channels of protocol messages (`console::ConsoleLink`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::api::{ClientMessage, Refusal, RefusalKind, ServerMessage, PROTOCOL_VERSION};
use super::client::Client;
use super::hub::{ClientId, HubMessage, Outbox};
use super::server::{peer_credentials, socket_path};
use super::wire;
use crate::approve::Actor;
use crate::console::{ConsoleLink, ConsoleOptions};

/// The in-process console's id at the hub; the socket's clients count up from 1.
pub const IN_PROCESS: ClientId = u64::MAX;
/// How long a console waits for the engine it started to open its socket.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Reconnecting: the first try soon, then doubling up to this.
const RETRY_MAX: Duration = Duration::from_secs(2);
const RETRY_FIRST: Duration = Duration::from_millis(100);

/// Attaches a console in this process to the hub as `actor`: an outbox reader feeds the
/// console's channel, and its messages go to the hub as this client's.
pub fn in_process(
    hub: &Sender<HubMessage>,
    actor: Actor,
    who: String,
    read_only: bool,
) -> Result<ConsoleLink> {
    let outbox = Outbox::new();
    hub.send(HubMessage::Attach {
        client: IN_PROCESS,
        actor,
        who,
        read_only,
        outbox: outbox.clone(),
    })
    .context("the engine stopped before the console attached")?;
    let (to_console, from_engine) = mpsc::channel();
    let queued = outbox.clone();
    std::thread::Builder::new()
        .name("dataward-console-in".into())
        .spawn(move || {
            // As the engine sent them: the console applies each change in place and
            // asks again itself when it misses a version (`console::incoming::Feed`).
            while let Some(item) = queued.next() {
                if to_console.send(item.message.clone()).is_err() {
                    return;
                }
            }
        })?;
    let (to_engine, from_console) = mpsc::channel::<ClientMessage>();
    let hub = hub.clone();
    std::thread::Builder::new()
        .name("dataward-console-out".into())
        .spawn(move || {
            for message in from_console {
                // Its turn at the hub, as a socket client's (`Outbox::enter_hub`).
                if matches!(
                    message,
                    ClientMessage::Request(_) | ClientMessage::Ask { .. } | ClientMessage::Resync
                ) && !outbox.enter_hub()
                {
                    return;
                }
                let sent = match message {
                    ClientMessage::Request(request) => hub.send(HubMessage::Request {
                        client: IN_PROCESS,
                        request,
                    }),
                    ClientMessage::Presence { viewing, deciding } => {
                        if outbox.tell_presence(viewing, deciding) {
                            hub.send(HubMessage::Presence { client: IN_PROCESS })
                        } else {
                            Ok(())
                        }
                    }
                    ClientMessage::Resync => hub.send(HubMessage::Resync { client: IN_PROCESS }),
                    ClientMessage::Ask {
                        id: question_id,
                        question,
                    } => hub.send(HubMessage::Ask {
                        client: IN_PROCESS,
                        id: question_id,
                        question,
                    }),
                    ClientMessage::Hello { .. } => Ok(()),
                };
                if sent.is_err() {
                    return;
                }
            }
            let _ = hub.send(HubMessage::Detach { client: IN_PROCESS });
        })?;
    Ok(ConsoleLink {
        to_engine,
        from_engine,
    })
}

/// A console's connection to the engine behind a socket, kept up across restarts.
pub struct Attached {
    pub link: ConsoleLink,
    /// The pid of the engine serving the socket now, as the kernel attests it.
    pub engine_pid: Arc<AtomicI32>,
}

fn engine_pid(client: &Client) -> i32 {
    client
        .stream()
        .and_then(|s| peer_credentials(&s))
        .map(|(_, pid)| pid)
        .unwrap_or(0)
}

fn hello_of(client: &Client) -> ServerMessage {
    ServerMessage::Hello {
        protocol: PROTOCOL_VERSION,
        started_at: client.started_at,
        you: client.you.clone(),
        read_only: client.read_only,
    }
}

/// Bridges `client` to a console: one thread writes what the console sends, one reads
/// what the engine sends. When the engine goes away the reader says so (a `Goodbye`, as
/// a server closing would) and tries again with backoff; attached again, it passes on
/// the new engine's hello, so the console can tell a restart.
pub fn over_socket(data_dir: &Path, read_only: bool, client: Client) -> Result<Attached> {
    let writer = Arc::new(Mutex::new(Some(client.stream()?)));
    let pid = Arc::new(AtomicI32::new(engine_pid(&client)));
    let closed = Arc::new(AtomicBool::new(false));
    let (to_engine, from_console) = mpsc::channel::<ClientMessage>();
    {
        let (writer, closed) = (Arc::clone(&writer), Arc::clone(&closed));
        std::thread::Builder::new()
            .name("dataward-console-out".into())
            .spawn(move || {
                for message in from_console {
                    let mut current = writer.lock().expect("writer lock");
                    if let Some(stream) = current.as_mut() {
                        if wire::send(stream, &message).is_err() {
                            *current = None;
                        }
                    }
                }
                // The console quit: close the connection, which ends the reader too.
                closed.store(true, Ordering::SeqCst);
                if let Some(stream) = writer.lock().expect("writer lock").take() {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                }
            })?;
    }
    let (to_console, from_engine) = mpsc::channel();
    // The hello `Client::connect` read: the console learns who it is from it.
    to_console.send(hello_of(&client))?;
    let dir = data_dir.to_path_buf();
    let engine_pid_now = Arc::clone(&pid);
    std::thread::Builder::new()
        .name("dataward-console-in".into())
        .spawn(move || {
            let mut client = Some(client);
            let mut delay = RETRY_FIRST;
            while !closed.load(Ordering::SeqCst) {
                if let Some(attached) = client.as_mut() {
                    match attached.receive() {
                        // As the engine sent it: the console applies each change in
                        // place and asks again itself when it misses a version
                        // (`console::incoming::Feed`).
                        Ok(message) => {
                            if to_console.send(message).is_err() {
                                return;
                            }
                        }
                        Err(_) => {
                            client = None;
                            *writer.lock().expect("writer lock") = None;
                            if closed.load(Ordering::SeqCst) {
                                return;
                            }
                            let reason = Refusal::new(RefusalKind::Failed, "the engine went away");
                            if to_console.send(ServerMessage::Goodbye { reason }).is_err() {
                                return;
                            }
                            delay = RETRY_FIRST;
                        }
                    }
                    continue;
                }
                std::thread::sleep(delay);
                delay = (delay * 2).min(RETRY_MAX);
                // Nothing serving yet, or it turned us away: try again later.
                if let Ok(Some(again)) = Client::connect(&dir, read_only) {
                    let Ok(stream) = again.stream() else {
                        continue;
                    };
                    *writer.lock().expect("writer lock") = Some(stream);
                    engine_pid_now.store(engine_pid(&again), Ordering::SeqCst);
                    if to_console.send(hello_of(&again)).is_err() {
                        return;
                    }
                    client = Some(again);
                }
            }
        })?;
    Ok(Attached {
        link: ConsoleLink {
            to_engine,
            from_engine,
        },
        engine_pid: pid,
    })
}

/// Starts `dataward serve` for `data_dir` in the background: its own session, no
/// terminal, logging to the file in the XDG state directory.
pub fn start_engine(config: &Path, data_dir: &Path) -> Result<Child> {
    let exe = std::env::current_exe().context("finding the dataward binary")?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("serve")
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
        .spawn()
        .context("starting `dataward serve` in the background")
}

/// Waits (bounded) until the engine just started serves `data_dir`, and attaches.
fn wait_for_engine(data_dir: &Path, read_only: bool, child: &mut Child) -> Result<Client> {
    let log = crate::logging::log_path()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "(no log file: no home directory)".into());
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(client) = Client::connect(data_dir, read_only)? {
            return Ok(client);
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!(
                "`dataward serve` for {} stopped ({status}) before serving it; its log: {log}",
                data_dir.display()
            );
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "`dataward serve` (pid {}) did not open {} within {} s; its log: {log}",
            child.id(),
            socket_path(data_dir).display(),
            START_TIMEOUT.as_secs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `dataward [--data-dir DIR] [--config FILE] [--read-only]`: the console attached to
/// the engine serving `data_dir`, started in the background first when none does.
/// Returns what to tell the person once the terminal is theirs again.
pub fn run_console(
    config: Option<PathBuf>,
    data_dir: &Path,
    read_only: bool,
    theme: Option<String>,
) -> Result<String> {
    // The person's theme and keys first: a broken one is said before anything starts.
    crate::console::prefs::load(config.as_deref(), theme.as_deref())
        .and_then(|prefs| crate::console::prefs::theme_parts(prefs.theme.as_ref()))?;
    let (client, mut started) = match Client::connect(data_dir, read_only)? {
        Some(client) => (client, None),
        None => {
            let config = config.clone().ok_or_else(|| {
                anyhow::anyhow!("no home directory for the default config; pass --config FILE")
            })?;
            anyhow::ensure!(
                config.exists(),
                "no engine serves {} and there is no config at {} to start one with; pass \
                 --config FILE (see config.example.toml), or try `dataward demo`",
                data_dir.display(),
                config.display()
            );
            let mut child = start_engine(&config, data_dir)?;
            let client = wait_for_engine(data_dir, read_only, &mut child)?;
            (client, Some(child))
        }
    };
    let attached = over_socket(data_dir, read_only, client)?;
    crate::console::run(
        attached.link,
        ConsoleOptions {
            read_only,
            config,
            theme,
        },
    )?;
    let pid = attached.engine_pid.load(Ordering::SeqCst);
    let running = match started.as_mut() {
        // Ours: reap it if it stopped, so a zombie is not taken for an engine.
        Some(child) if child.id() as i32 == pid => child.try_wait().ok().flatten().is_none(),
        _ => running(pid),
    };
    Ok(if running {
        format!(
            "the engine keeps watching {} (pid {pid}); `kill {pid}` stops it",
            data_dir.display()
        )
    } else {
        format!("no engine is running on {}", data_dir.display())
    })
}

/// Is process `pid` alive? A zombie (exited, not yet reaped) is not.
pub fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        // SAFETY: signal 0 only asks whether the process exists.
        Err(_) => pid > 0 && unsafe { libc::kill(pid, 0) } == 0,
    }
}
