//! `dataward serve`: one engine per team. It alone owns the state database, the config
//! (the policy) and the credentials; consoles and commands attach over the Unix socket
//! `DATA/dataward.sock`, and each request is attributed to the connection's peer as the
//! kernel attests it (`SO_PEERCRED`), never to anything the client says.
//!
//! Each client has a reader and a writer thread of its own: a client that sends garbage
//! or an oversized frame, or vanishes mid-request, is dropped without touching anyone
//! else; a client that reads slowly only ever has the newest snapshot waiting.

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::api::{ClientMessage, Refusal, RefusalKind, ServerMessage, PROTOCOL_VERSION};
use super::hub::{ClientId, Hub, HubMessage, Outbox};
use super::wire::{self, FrameError, MAX_CLIENT_FRAME};
use crate::approve::Actor;
use crate::config::Config;

/// The socket's name in the data directory.
pub const SOCKET: &str = "dataward.sock";
/// More attached clients than this are turned away: each costs two threads.
const MAX_CLIENTS: usize = 256;
/// A client must say hello this soon after connecting.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// Binds the socket, replacing a stale one left by an engine that died (nothing
/// answers on it). It is 0600, or 0660 owned by `[serve] group`.
pub fn bind(data_dir: &Path, config: &Config) -> Result<UnixListener> {
    let path = socket_path(data_dir);
    if let Ok(meta) = std::fs::symlink_metadata(&path) {
        use std::os::unix::fs::FileTypeExt;
        anyhow::ensure!(
            meta.file_type().is_socket(),
            "{} exists and is not a socket; remove it if you did not put it there",
            path.display()
        );
        anyhow::ensure!(
            UnixStream::connect(&path).is_err(),
            "an engine is already serving {}",
            path.display()
        );
        std::fs::remove_file(&path)
            .with_context(|| format!("removing the stale socket {}", path.display()))?;
    }
    // Created under a umask that leaves it ours alone, then opened up to the group if
    // asked: there is no moment when anyone else could connect.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(&path);
    unsafe { libc::umask(old) };
    let listener = bound.with_context(|| format!("cannot listen on {}", path.display()))?;
    if let Some(group) = &config.serve.group {
        let gid = share_with_group(data_dir, group, config)?;
        std::os::unix::fs::chown(&path, None, Some(gid))
            .with_context(|| format!("giving {} to group {group}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660))?;
    }
    Ok(listener)
}

/// With `[serve] group`, the team reaches the socket through the data directory: it
/// becomes 0750 and the group's (group members may read, never write, what is in it).
fn share_with_group(data_dir: &Path, group: &str, config: &Config) -> Result<u32> {
    let gid = group_id(group).with_context(|| {
        format!(
            "{}: [serve] group {group:?} is not a group on this host",
            config.origin.display()
        )
    })?;
    std::os::unix::fs::chown(data_dir, None, Some(gid))
        .with_context(|| format!("giving {} to group {group}", data_dir.display()))?;
    std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o750))?;
    Ok(gid)
}

fn group_id(name: &str) -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|line| {
        let mut fields = line.split(':');
        let group = fields.next()?;
        let gid = fields.nth(1)?.parse().ok()?;
        (group == name).then_some(gid)
    })
}

/// The kernel's word on who is at the other end: (uid, pid).
pub fn peer_credentials(stream: &UnixStream) -> std::io::Result<(u32, i32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket fd, and a ucred buffer of the length passed.
    let result = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    if result != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((cred.uid, cred.pid))
}

/// Who a peer is to the policy: a person `[people]` names decides (unless they asked
/// to attach read-only); anyone else is an observer when `[serve] observers` allows it,
/// and turned away otherwise.
pub fn admit(
    config: &Config,
    actor: &Actor,
    asked_read_only: bool,
) -> Result<(String, bool), Refusal> {
    let person = actor
        .user
        .as_ref()
        .and_then(|user| config.people.get(user).map(|p| (user, p)));
    match person {
        Some((user, person)) => {
            let name = if person.name.is_empty() {
                user.clone()
            } else {
                format!("{} ({user})", person.name)
            };
            Ok((name, asked_read_only))
        }
        None if config.serve.observers => Ok((format!("uid {}", actor.uid), true)),
        None => Err(Refusal::new(
            RefusalKind::NotPermitted,
            format!(
                "{} is not in the policy's [people], and [serve] observers is off: not attached",
                actor.display()
            ),
        )),
    }
}

/// Accepts connections until the listener fails; each client gets its own threads.
/// Who may attach is decided by the policy as it is now: the config is read again
/// when its file changed (a config that no longer parses leaves the last good one in
/// force for attaching; the engine denies every decision meanwhile).
pub fn accept(listener: UnixListener, config: Arc<Config>, hub: Sender<HubMessage>) {
    let next_id = Arc::new(AtomicU64::new(1));
    let attached = Arc::new(AtomicUsize::new(0));
    let stamp = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut config = config;
    let mut seen = stamp(&config.origin);
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            continue;
        };
        let now = stamp(&config.origin);
        if now != seen {
            seen = now;
            match Config::load_policy(&config.origin) {
                Ok(reloaded) => config = Arc::new(reloaded),
                Err(e) => {
                    tracing::warn!("the policy is not taken; attaching by the last good one: {e:#}")
                }
            }
        }
        if attached.load(Ordering::SeqCst) >= MAX_CLIENTS {
            let _ = refuse(
                &stream,
                Refusal::new(RefusalKind::NotPermitted, "too many clients attached"),
            );
            continue;
        }
        let id = next_id.fetch_add(1, Ordering::SeqCst);
        let (config, hub, attached) = (Arc::clone(&config), hub.clone(), Arc::clone(&attached));
        attached.fetch_add(1, Ordering::SeqCst);
        std::thread::Builder::new()
            .name(format!("dataward-client-{id}"))
            .spawn(move || {
                if let Err(e) = serve_client(id, stream, &config, &hub) {
                    tracing::warn!("client {id}: {e:#}");
                }
                let _ = hub.send(HubMessage::Detach { client: id });
                attached.fetch_sub(1, Ordering::SeqCst);
            })
            .expect("a thread for a client");
    }
}

fn refuse(stream: &UnixStream, reason: Refusal) -> std::io::Result<()> {
    let mut writer = stream;
    wire::send(&mut writer, &ServerMessage::Goodbye { reason })
}

/// One client, from its hello to its last frame.
fn serve_client(
    id: ClientId,
    stream: UnixStream,
    config: &Config,
    hub: &Sender<HubMessage>,
) -> Result<()> {
    let (uid, pid) = peer_credentials(&stream)?;
    let actor = Actor::peer(uid, pid);
    stream.set_read_timeout(Some(HELLO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let hello: ClientMessage = match wire::receive(&mut reader, MAX_CLIENT_FRAME) {
        Ok(message) => message,
        Err(e) => {
            let _ = refuse(
                &stream,
                Refusal::new(RefusalKind::NotPermitted, format!("expected a hello: {e}")),
            );
            return Err(e.into());
        }
    };
    let asked_read_only = match hello {
        ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            read_only,
        } => read_only,
        ClientMessage::Hello { protocol, .. } => {
            refuse(
                &stream,
                Refusal::new(
                    RefusalKind::NotPermitted,
                    format!(
                        "this engine speaks protocol {PROTOCOL_VERSION}, the client {protocol}: use the same dataward version"
                    ),
                ),
            )?;
            return Ok(());
        }
        _ => {
            refuse(
                &stream,
                Refusal::new(
                    RefusalKind::NotPermitted,
                    "the first message must be a hello",
                ),
            )?;
            return Ok(());
        }
    };
    let (who, read_only) = match admit(config, &actor, asked_read_only) {
        Ok(admitted) => admitted,
        Err(reason) => {
            refuse(&stream, reason)?;
            return Ok(());
        }
    };
    stream.set_read_timeout(None)?;
    let outbox = Outbox::new();
    hub.send(HubMessage::Attach {
        client: id,
        actor,
        who,
        read_only,
        outbox: outbox.clone(),
    })?;
    // The writer: whatever the hub queues for this client, in order.
    let writer_stream = stream.try_clone()?;
    let writer = std::thread::Builder::new()
        .name(format!("dataward-client-{id}-out"))
        .spawn(move || {
            let mut out = BufWriter::new(&writer_stream);
            while let Some(item) = outbox.next() {
                if out
                    .write_all(item.frame())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    break;
                }
            }
            let _ = writer_stream.shutdown(std::net::Shutdown::Both);
        })?;
    // The reader: requests and presence, until the client goes or misbehaves.
    let result = loop {
        match wire::receive::<ClientMessage>(&mut reader, MAX_CLIENT_FRAME) {
            Ok(ClientMessage::Request(request)) => {
                hub.send(HubMessage::Request {
                    client: id,
                    request,
                })?;
            }
            Ok(ClientMessage::Ask {
                id: question_id,
                question,
            }) => {
                hub.send(HubMessage::Ask {
                    client: id,
                    id: question_id,
                    question,
                })?;
            }
            Ok(ClientMessage::Presence { viewing, deciding }) => {
                hub.send(HubMessage::Presence {
                    client: id,
                    viewing: viewing.map(|v| v.chars().take(64).collect()),
                    deciding: deciding.map(|d| d.chars().take(64).collect()),
                })?;
            }
            Ok(ClientMessage::Hello { .. }) => {}
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => break Err(anyhow::Error::from(e)),
        }
    };
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = hub.send(HubMessage::Detach { client: id });
    let _ = writer.join();
    result
}

/// Sends `Stop` to the hub when a quit signal arrives, so the engine finishes the turn
/// in hand and the service exits 0.
pub fn stop_on_signal(hub: Sender<HubMessage>) {
    std::thread::spawn(move || loop {
        if crate::signals::quit_signal().is_some() {
            let _ = hub.send(HubMessage::Stop);
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    });
}

pub struct ServeOptions {
    pub config: PathBuf,
    pub data_dir: PathBuf,
}

/// Runs the engine as a service in the foreground until SIGTERM (or HUP, INT, QUIT):
/// the turn in hand is finished, every client is closed, the socket removed, exit 0.
pub fn serve(options: &ServeOptions) -> Result<()> {
    // The policy and the state are the team's: nobody else may be able to change them
    // (a reload is held to the same check: `Config::load_policy`).
    let config = Config::load_policy(&options.config)?;
    crate::store::files::ensure_private_dir(&options.data_dir)?;
    let _lock = crate::store::EngineLock::acquire(&options.data_dir)?;
    let orchestrator = super::orchestrator::from_config(&config, &options.data_dir)?;
    let db = options.data_dir.join("dataward.db");
    let state = crate::store::open(&db)?;
    let mut engine = super::Engine::new_telling(
        config.clone(),
        state,
        orchestrator,
        &Actor::current(),
        &mut crate::progress::bytes_on_stderr("dataward serve: loading manifest"),
    )?;
    // Polling runs on its own thread: a check blocked on a locked table never delays a
    // decision or the stop. The engine acts on what it stored when told.
    engine.set_inline_polling(false);
    let (hub_tx, hub_rx) = std::sync::mpsc::channel();
    let news = hub_tx.clone();
    // Alerts go out on threads of their own, beside the poller: a slow API delays
    // only its own destination.
    let relay = crate::notify::relay::start_beside(&mut engine, &config, &db, hub_tx.clone())?;
    let poll_task = super::poll_task::PollTask::start(
        config.clone(),
        db,
        Arc::new(|| chrono::Utc::now().naive_utc()),
        move |item| {
            let _ = news.send(match item {
                super::poll_task::PollNews::Observed => HubMessage::Observed,
                super::poll_task::PollNews::Scheduler(r) => HubMessage::Scheduler(r),
                super::poll_task::PollNews::FirstPoll(p) => HubMessage::FirstPoll(p),
            });
        },
    )?;
    let listener = bind(&options.data_dir, &config)?;
    let config = Arc::new(config);
    {
        let (config, hub_tx) = (Arc::clone(&config), hub_tx.clone());
        std::thread::Builder::new()
            .name("dataward-accept".into())
            .spawn(move || accept(listener, config, hub_tx))?;
    }
    crate::signals::catch()?;
    stop_on_signal(hub_tx.clone());
    tracing::info!(
        "serving {} with {} (pid {})",
        socket_path(&options.data_dir).display(),
        options.config.display(),
        std::process::id()
    );
    let hub = Hub::new(
        engine,
        hub_rx,
        Box::new(|event| {
            tracing::info!(
                "{}",
                crate::sanitize::json(event, false).unwrap_or_default()
            );
        }),
    );
    let result = hub.run(&mut super::live::WallClock::new());
    poll_task.stop();
    if let Some(relay) = relay {
        relay.stop();
    }
    let _ = std::fs::remove_file(socket_path(&options.data_dir));
    drop(hub_tx);
    tracing::info!("stopped");
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(serve: &str) -> Config {
        Config::parse(
            &format!("[people.alice]\nname = \"Alice\"\nroles = [\"owner\"]\n{serve}"),
            Path::new("team.toml"),
        )
        .unwrap()
    }

    fn actor(user: &str, uid: u32) -> Actor {
        let mut actor = Actor::peer(uid, 0);
        actor.user = Some(user.to_string());
        actor
    }

    #[test]
    fn the_policy_decides_who_attaches_and_who_decides() {
        let closed = config("");
        assert_eq!(
            admit(&closed, &actor("alice", 1001), false).unwrap(),
            ("Alice (alice)".to_string(), false)
        );
        assert!(
            admit(&closed, &actor("alice", 1001), true).unwrap().1,
            "asked read-only"
        );
        let refused = admit(&closed, &actor("mallory", 1002), false).unwrap_err();
        assert_eq!(refused.kind, RefusalKind::NotPermitted);
        assert!(refused.message.contains("not in the policy's [people]"));
        let open = config("[serve]\nobservers = true\n");
        assert_eq!(
            admit(&open, &actor("mallory", 1002), false).unwrap(),
            ("uid 1002".to_string(), true),
            "an observer, whatever it asked"
        );
    }
}
