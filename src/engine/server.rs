//! `dataward serve`: one engine per team. It alone owns the state database, the config
//! (the policy) and the credentials; consoles and commands attach over the Unix socket
//! `DATA/dataward.sock`, and each request is attributed to the connection's peer as the
//! kernel attests it (`SO_PEERCRED`, and the login uid of the connecting process read
//! at accept while it is provably alive), never to anything the client says.
//!
//! Each client has a reader and a writer thread of its own: a client that sends garbage
//! or an oversized frame, or vanishes mid-request, is dropped without touching anyone
//! else; a client that reads slowly only ever has the newest snapshot waiting, and one
//! that leaves its replies unread is dropped, saying why. No account holds more than
//! its share of the connections, and a hello has a deadline as a whole.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::api::{
    version_mismatch, ClientMessage, Refusal, RefusalKind, ServerMessage, PROTOCOL_VERSION,
};
use super::hub::{ClientId, Hub, HubMessage, Outbox};
use super::leadership;
use super::wire::{self, FrameError, MAX_CLIENT_FRAME};
use crate::approve::{Actor, LoginUid};
use crate::config::Config;
use crate::notify::relay::{self, Relay};
use crate::store::place::StatePlace;

/// The socket's name in the data directory.
pub const SOCKET: &str = "dataward.sock";
/// More connections than this are turned away: each costs two threads.
const MAX_CLIENTS: usize = 256;
/// Connections one account may hold at once: several consoles and a script's worth
/// of commands, and few enough that no one account can take everyone's slots.
const MAX_PER_ACCOUNT: usize = 32;
/// A client's whole hello must have arrived this soon after it connected, however
/// its bytes trickle in.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// A write to a client that makes no progress for this long ends the connection.
const WRITE_STALL: Duration = Duration::from_secs(30);

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
    // asked: there is no moment when anyone else could connect. With a group it is bound
    // under a name of its own and moved into place once the group may use it, so a
    // teammate never finds the socket before it lets them in.
    let bound_at = match config.serve.group {
        Some(_) => data_dir.join(format!("{SOCKET}.{}.new", std::process::id())),
        None => path.clone(),
    };
    if bound_at != path {
        // A leftover of an engine that died here with the same process id.
        let _ = std::fs::remove_file(&bound_at);
    }
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(&bound_at);
    unsafe { libc::umask(old) };
    let listener = bound.with_context(|| format!("cannot listen on {}", path.display()))?;
    if let Some(group) = &config.serve.group {
        let gid = share_with_group(data_dir, group, config)?;
        std::os::unix::fs::chown(&bound_at, None, Some(gid))
            .with_context(|| format!("giving {} to group {group}", path.display()))?;
        std::fs::set_permissions(&bound_at, std::fs::Permissions::from_mode(0o660))?;
        std::fs::rename(&bound_at, &path)
            .with_context(|| format!("moving the socket into place at {}", path.display()))?;
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

/// Who is at the other end, read as the connection is accepted: the uid the kernel
/// recorded at `connect` (`SO_PEERCRED`), and the login uid of the process that
/// connected, read only while that process is provably the one that connected and
/// alive. When it is not (it exited before the engine looked, as a client that forks
/// and exits does), the login uid is unknown, and everything that needs the person
/// refuses (`Actor::person`) rather than take the uid for them.
pub fn peer_actor(stream: &UnixStream) -> std::io::Result<Actor> {
    let (uid, pid) = peer_credentials(stream)?;
    Ok(Actor::peer(uid, peer_login(stream, pid)))
}

fn peer_login(stream: &UnixStream, pid: i32) -> LoginUid {
    let Some(pidfd) = peer_pidfd(stream, pid) else {
        return LoginUid::Unknown;
    };
    let read = std::fs::read_to_string(format!("/proc/{pid}/loginuid"));
    // Checked after the read: had the process gone meanwhile, `pid` could have been
    // another process's when it was read.
    if !still_running(&pidfd) {
        return LoginUid::Unknown;
    }
    LoginUid::from_read(read)
}

/// `SO_PEERPIDFD` (Linux 6.5) in the generic socket option numbering.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const SO_PEERPIDFD: libc::c_int = 77;

/// A pidfd for the process that connected. The socket's own (`SO_PEERPIDFD`) cannot
/// name any other process; older kernels get one opened from the pid (`pidfd_open`),
/// which names another process only if the pid was reused between the connect and now.
fn peer_pidfd(stream: &UnixStream, pid: i32) -> Option<OwnedFd> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let mut fd: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a valid socket fd, and an int buffer of the length passed.
        let result = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_PEERPIDFD,
                &mut fd as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        if result == 0 && fd >= 0 {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        // The process is gone: no pidfd to be had.
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOPROTOOPT) {
            return None;
        }
    }
    let _ = stream;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: as above.
    (pid > 0 && fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Has the process behind `pidfd` not exited? A pidfd polls readable once it has.
fn still_running(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    unsafe { libc::poll(&mut poll, 1, 0) == 0 }
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
    let slots = Arc::new(Slots::default());
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
        let Some((actor, slot)) = take_connection(&stream, &slots) else {
            continue;
        };
        let id = next_id.fetch_add(1, Ordering::SeqCst);
        let (config, hub) = (Arc::clone(&config), hub.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("dataward-client-{id}"))
            .spawn(move || {
                if let Err(e) = serve_client(id, stream, actor, &config, &hub) {
                    tracing::warn!("client {id}: {e:#}");
                }
                let _ = hub.send(HubMessage::Detach { client: id });
                drop(slot);
            });
        if let Err(e) = spawned {
            tracing::warn!("client {id} not served: no thread for it: {e}");
        }
    }
}

/// A connection just accepted, readied for serving: who is at the other end and the
/// slot it holds. None when it is not to be served (one turned away is told why).
pub(super) fn take_connection(stream: &UnixStream, slots: &Arc<Slots>) -> Option<(Actor, Slot)> {
    // A client that never reads cannot hold a write (a goodbye here, anything later).
    stream.set_write_timeout(Some(WRITE_STALL)).ok()?;
    // Who it is, now: the process that connected may not outlive the accept.
    let actor = peer_actor(stream).ok()?;
    match Slots::take(slots, &actor) {
        Ok(slot) => Some((actor, slot)),
        Err(reason) => {
            let _ = refuse(stream, reason);
            None
        }
    }
}

/// Who holds the engine's connections: at most `MAX_CLIENTS` in all and
/// `MAX_PER_ACCOUNT` for any one uid, so one account (a script gone wrong, or someone
/// hostile) can lock nobody else out.
#[derive(Default)]
pub(super) struct Slots(Mutex<Held>);

#[derive(Default)]
struct Held {
    total: usize,
    by_uid: HashMap<u32, usize>,
}

/// One connection's slot, given back when it is dropped.
pub(super) struct Slot {
    slots: Arc<Slots>,
    uid: u32,
}

impl Slots {
    fn take(slots: &Arc<Slots>, actor: &Actor) -> Result<Slot, Refusal> {
        let mut held = slots.0.lock().expect("slots lock");
        let mine = held.by_uid.get(&actor.uid).copied().unwrap_or(0);
        if mine >= MAX_PER_ACCOUNT {
            return Err(Refusal::new(
                RefusalKind::NotPermitted,
                format!(
                    "{} already holds {mine} connections to this engine, the most one account \
                     may: close some and try again",
                    actor.display()
                ),
            ));
        }
        if held.total >= MAX_CLIENTS {
            return Err(Refusal::new(
                RefusalKind::NotPermitted,
                format!("the engine already serves {MAX_CLIENTS} connections, its most: try again later"),
            ));
        }
        held.total += 1;
        *held.by_uid.entry(actor.uid).or_default() += 1;
        Ok(Slot {
            slots: Arc::clone(slots),
            uid: actor.uid,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.slots.0.lock().expect("slots lock");
        held.total -= 1;
        if let Some(mine) = held.by_uid.get_mut(&self.uid) {
            *mine -= 1;
            if *mine == 0 {
                held.by_uid.remove(&self.uid);
            }
        }
    }
}

/// The client's side of the socket as its reader sees it. Until `deadline`, each read
/// waits only for what is left of the time: a hello sent a byte at a time ends when
/// the time is up, not when the client stops sending.
pub(super) struct Incoming {
    stream: UnixStream,
    deadline: Option<Instant>,
}

impl Read for Incoming {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            self.stream.set_read_timeout(Some(left))?;
        }
        self.stream.read(buf)
    }
}

pub(super) fn refuse(stream: &UnixStream, reason: Refusal) -> std::io::Result<()> {
    let mut writer = stream;
    wire::send(&mut writer, &ServerMessage::Goodbye { reason })
}

/// Reads a client's hello, whole within `HELLO_TIMEOUT` of connecting: the reader to
/// go on with and whether it asked to be read-only. A client that sends none, something
/// else, or another protocol's is told why and gets None (an error when its frame was
/// bad or late).
pub(super) fn hello(stream: &UnixStream) -> Result<Option<(BufReader<Incoming>, bool)>> {
    let mut reader = BufReader::new(Incoming {
        stream: stream.try_clone()?,
        deadline: Some(Instant::now() + HELLO_TIMEOUT),
    });
    let hello: ClientMessage = match wire::receive(&mut reader, MAX_CLIENT_FRAME) {
        Ok(message) => message,
        Err(e) => {
            let why = match &e {
                FrameError::Io(io)
                    if matches!(
                        io.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                    ) =>
                {
                    format!(
                        "no whole hello within {} s of connecting: turned away",
                        HELLO_TIMEOUT.as_secs()
                    )
                }
                e => format!("expected a hello: {e}"),
            };
            let _ = refuse(stream, Refusal::new(RefusalKind::NotPermitted, why));
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
                stream,
                Refusal::new(
                    RefusalKind::NotPermitted,
                    version_mismatch(PROTOCOL_VERSION, protocol),
                ),
            )?;
            return Ok(None);
        }
        _ => {
            refuse(
                stream,
                Refusal::new(
                    RefusalKind::NotPermitted,
                    "the first message must be a hello",
                ),
            )?;
            return Ok(None);
        }
    };
    Ok(Some((reader, asked_read_only)))
}

/// One client, from its hello to its last frame.
fn serve_client(
    id: ClientId,
    stream: UnixStream,
    actor: Actor,
    config: &Config,
    hub: &Sender<HubMessage>,
) -> Result<()> {
    let Some((mut reader, asked_read_only)) = hello(&stream)? else {
        return Ok(());
    };
    let (who, read_only) = match admit(config, &actor, asked_read_only) {
        Ok(admitted) => admitted,
        Err(reason) => {
            refuse(&stream, reason)?;
            return Ok(());
        }
    };
    reader.get_mut().deadline = None;
    stream.set_read_timeout(None)?;
    let outbox = Outbox::new();
    hub.send(HubMessage::Attach {
        client: id,
        actor,
        who,
        read_only,
        outbox: outbox.clone(),
    })?;
    // The writer: whatever the hub queues for this client, in order. A write that
    // makes no progress for `WRITE_STALL` ends the connection.
    let writer_stream = stream.try_clone()?;
    let queued = outbox.clone();
    let writer = std::thread::Builder::new()
        .name(format!("dataward-client-{id}-out"))
        .spawn(move || {
            let mut out = BufWriter::new(&writer_stream);
            while let Some(item) = queued.next() {
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
    // The reader: requests, questions and presence, until the client goes or
    // misbehaves, or is dropped for leaving its replies unread. Each request, question
    // and ask for a snapshot waits its turn at the hub (`Outbox::enter_hub`): one that
    // cannot be passed on yet stays in the socket. Presence replaces the last one the
    // hub has not taken, so a flood of it is one message at the hub.
    let result = loop {
        let message = wire::receive::<ClientMessage>(&mut reader, MAX_CLIENT_FRAME);
        if matches!(
            message,
            Ok(ClientMessage::Request(_) | ClientMessage::Ask { .. } | ClientMessage::Resync)
        ) && !outbox.enter_hub()
        {
            break Ok(());
        }
        match message {
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
                if outbox.tell_presence(
                    viewing.map(|v| v.chars().take(64).collect()),
                    deciding.map(|d| d.chars().take(64).collect()),
                ) {
                    hub.send(HubMessage::Presence { client: id })?;
                }
            }
            Ok(ClientMessage::Resync) => hub.send(HubMessage::Resync { client: id })?,
            Ok(ClientMessage::Hello { .. }) => {}
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => break Err(anyhow::Error::from(e)),
        }
    };
    // Nothing more is read; what is queued (a goodbye saying why, say) is still sent,
    // and the writer closes the connection when it is done.
    let _ = stream.shutdown(std::net::Shutdown::Read);
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

/// Starts the alert relay beside an engine that serves (`dataward serve`, the demo): a
/// secret file others can read is refused first; the engine wakes the relay after each
/// transaction that queued alerts, and the relay tells the hub when it marked a row, so
/// consoles see the outbox again. None without `[[alert]]`: nothing is ever sent.
pub fn start_relay(
    engine: &mut super::Engine,
    config: &Config,
    state: &StatePlace,
    hub: Sender<HubMessage>,
) -> Result<Option<Relay>> {
    crate::notify::check_secrets(config)?;
    // What came of each row goes to the engine, which writes it (the state database's
    // one writer) and answers before the relay takes the next row.
    let marks = relay::Marks::to(move |mark| {
        let (answer, answered) = std::sync::mpsc::channel();
        hub.send(HubMessage::OutboxMark(mark, answer))
            .map_err(|_| anyhow::anyhow!("the engine stopped before the mark was written"))?;
        answered
            .recv()
            .map_err(|_| anyhow::anyhow!("the engine stopped before the mark was written"))?
    });
    // The engine's clock, on which it queues the rows: a demo on virtual time retries
    // on virtual time.
    let options = relay::Options {
        clock: engine.clock().clone(),
        ..relay::Options::new(marks)
    };
    // The hub shows the outbox again once the engine wrote a mark: nothing more to say.
    let relay = Relay::start(config, state, options, Arc::new(|| {}))?;
    if let Some(relay) = &relay {
        let waker = relay.waker();
        engine.set_alert_waker(move || waker.wake());
    }
    Ok(relay)
}

/// Starts the poll task beside `engine` (on its clock, reading the state database `db`),
/// its news sent to the hub: on a timer (`dataward serve`) or `on_demand`, only when the
/// driver asks (the demo's story, whose clock waits for the answer). Either way the
/// engine asks it, never reads a warehouse or the scheduler itself.
pub fn start_poll_task(
    engine: &mut super::Engine,
    config: &Config,
    state: &StatePlace,
    hub_tx: std::sync::mpsc::Sender<HubMessage>,
    on_demand: bool,
) -> Result<super::poll_task::PollTask> {
    use super::poll_task::{PollNews, PollTask};
    let news = move |item| {
        let _ = hub_tx.send(match item {
            PollNews::Observed(read) => HubMessage::Polled(read),
            PollNews::Scheduler(reading) => HubMessage::Scheduler(reading),
            PollNews::FirstPoll(progress) => HubMessage::FirstPoll(progress),
            PollNews::Answered => HubMessage::PollAnswered,
        });
    };
    let clock = engine.clock().clone();
    let task = if on_demand {
        PollTask::start_on_demand(config.clone(), state, clock, news)?
    } else {
        PollTask::start(config.clone(), state, clock, news)?
    };
    engine.set_poll_worker(task.asker());
    Ok(task)
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
    let orchestrator = crate::effects::orchestrator::from_config(&config, &options.data_dir)?;
    let place = StatePlace::of(&config, &options.data_dir)?;
    crate::signals::catch()?;
    let (hub_tx, hub_rx) = std::sync::mpsc::channel();
    // On team state, this engine runs only once it leads, writing at its term.
    let (leading, deposed, listener) = match place.team() {
        None => (None, None, None),
        Some(team) => {
            // A session first: it brings the schema up to date and holds the chain
            // against this host's checkpoint before this engine contends at all.
            drop(place.open_reader()?);
            // Standing by, the socket says who leads; leading, the engine takes it over.
            let listener = bind(&options.data_dir, &config)?;
            let (_, me) = leadership::names(&options.data_dir);
            let refuser =
                super::standby::Refuser::start(listener, config.clone(), team.clone(), me)?;
            let led = leadership::wait_to_lead(team, &options.data_dir);
            let listener = refuser.stop()?;
            let Some(leading) = led? else {
                // Asked to quit while standing by.
                drop(listener);
                let _ = std::fs::remove_file(socket_path(&options.data_dir));
                return Ok(());
            };
            let said = (leading.term, leading.host.clone(), leading.from.clone());
            let keep = leadership::keep(leading, hub_tx.clone())?;
            (Some(said), Some(keep), Some(listener))
        }
    };
    let state = place.open(leading.as_ref().map(|(term, _, _)| *term))?;
    let mut engine = super::Engine::new_telling(
        config.clone(),
        state,
        orchestrator,
        &Actor::current(),
        &mut crate::progress::bytes_on_stderr("dataward serve: loading manifest"),
    )?;
    // Polling runs on its own thread: a check blocked on a locked table never delays a
    // decision or the stop. The engine stores what it read, and acts on it, when told.
    engine.set_inline_polling(false);
    if let Some((term, host, from)) = &leading {
        engine.took_over(*term, host, from.as_ref())?;
    }
    // Alerts go out on threads of their own, beside the poller: a slow API delays
    // only its own destination.
    let relay = start_relay(&mut engine, &config, &place, hub_tx.clone())?;
    let poll_task = start_poll_task(&mut engine, &config, &place, hub_tx.clone(), false)?;
    let listener = match listener {
        Some(listener) => listener,
        None => bind(&options.data_dir, &config)?,
    };
    super::openlineage::start(&config, &engine, hub_tx.clone())?;
    let config = Arc::new(config);
    {
        let (config, hub_tx) = (Arc::clone(&config), hub_tx.clone());
        std::thread::Builder::new()
            .name("dataward-accept".into())
            .spawn(move || accept(listener, config, hub_tx))?;
    }
    stop_on_signal(hub_tx.clone());
    tracing::info!(
        "serving {} with {} (pid {})",
        socket_path(&options.data_dir).display(),
        options.config.display(),
        std::process::id()
    );
    // Effects and warehouse probes run on workers (`Hub::new`): one that hangs never
    // keeps the hub from answering, the org stop first of all.
    let hub = Hub::new(
        engine,
        hub_rx,
        hub_tx.clone(),
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
    if let Some(why) = deposed.and_then(|d| d.reason()) {
        return Err(leadership::DeposedStop(why).into());
    }
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
        let mut actor = Actor::peer(uid, LoginUid::Unset);
        actor.user = Some(user.to_string());
        actor
    }

    #[test]
    fn one_account_holds_at_most_its_share_of_connections_and_gives_them_back() {
        let slots = Arc::new(Slots::default());
        let (bob, alice) = (actor("bob", 1002), actor("alice", 1001));
        let mut held: Vec<Slot> = (0..MAX_PER_ACCOUNT)
            .map(|_| Slots::take(&slots, &bob).unwrap())
            .collect();
        let refused = Slots::take(&slots, &bob).err().unwrap();
        assert!(refused.message.contains("bob (uid 1002) already holds 32"));
        assert!(
            Slots::take(&slots, &alice).is_ok(),
            "another account is served"
        );
        held.pop();
        assert!(
            Slots::take(&slots, &bob).is_ok(),
            "a slot given back is free"
        );
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
