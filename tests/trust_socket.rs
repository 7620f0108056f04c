//! The engine's socket against a hostile member of the team: a second account in the
//! `[serve] group`, reached with sudo, on a shared host. Each test starts `dataward
//! serve` as root and talks to it over its socket with connections made by processes
//! of other unix accounts (created as tests/serve.rs does), so the engine sees the uid,
//! pid and login uid the kernel gives it, as in use.

use std::io::Write;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dataward::engine::api::{
    ClientMessage, Command as Ask, Outcome, Request, ServerMessage, PROTOCOL_VERSION,
};
use dataward::engine::wire;

/// How long any one wait may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(60);

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A unix account as the kernel knows it.
#[derive(Clone)]
struct Account {
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
}

fn account(name: &str) -> Account {
    let id = |flag: &str| -> Vec<u32> {
        let out = Command::new("id").args([flag, name]).output().unwrap();
        assert!(out.status.success(), "id {flag} {name}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    Account {
        uid: id("-u")[0],
        gid: id("-g")[0],
        groups: id("-G"),
    }
}

/// The team's two people, `dw-alice` and `dw-bob`, both in group `dw-team` (as root);
/// None with a line when not root, or when this kernel keeps no login uids.
fn team(test: &str) -> Option<(Account, Account)> {
    let skip = |why: &str| {
        let message = format!("{test}: skipped: {why}");
        if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
            panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
        }
        eprintln!("{message}");
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("needs root to create unix users");
        return None;
    }
    if !Path::new("/proc/self/loginuid").exists() {
        skip("this kernel keeps no login uids (no audit support)");
        return None;
    }
    let run = |program: &str, args: &[&str]| {
        // Other test binaries make the same accounts at the same time: the files are
        // locked for a moment. 9: already exists.
        for _ in 0..50 {
            let out = Command::new(program).args(args).output().unwrap();
            if out.status.success() || out.status.code() == Some(9) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{program} {args:?} keeps failing");
    };
    run("groupadd", &["--system", "dw-team"]);
    for user in ["dw-alice", "dw-bob"] {
        run(
            "useradd",
            &[
                "--system",
                "--no-create-home",
                "--shell",
                "/bin/sh",
                "--groups",
                "dw-team",
                user,
            ],
        );
    }
    Some((account("dw-alice"), account("dw-bob")))
}

/// `dataward serve` as root for a policy naming both people, its socket shared with
/// `dw-team`; killed when dropped.
struct Served {
    child: Child,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = dir.path().join("team.toml");
        std::fs::write(
            &config,
            "[people.dw-alice]\nname = \"Alice\"\nroles = [\"owner\"]\n\n\
             [people.dw-bob]\nname = \"Bob\"\nroles = [\"owner\"]\n\n\
             [serve]\ngroup = \"dw-team\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
        let data = dir.path().join("data");
        let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("engine.log")).unwrap())
            .spawn()
            .unwrap();
        let served = Served {
            child,
            data,
            _dir: dir,
        };
        let deadline = Instant::now() + HANG;
        while UnixStream::connect(served.socket()).is_err() {
            assert!(Instant::now() < deadline, "the engine never listened");
            std::thread::sleep(Duration::from_millis(25));
        }
        served
    }

    fn socket(&self) -> PathBuf {
        self.data.join("dataward.sock")
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, signal: i32) {
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Stops the engine (SIGSTOP) and waits until every one of its threads has: a
    /// thread that has not yet would still accept.
    fn hold_still(&self) {
        self.signal(libc::SIGSTOP);
        let deadline = Instant::now() + HANG;
        let stopped = |task: std::fs::DirEntry| {
            std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
            })
        };
        while !std::fs::read_dir(format!("/proc/{}/task", self.pid()))
            .unwrap()
            .flatten()
            .all(stopped)
        {
            assert!(Instant::now() < deadline, "the engine did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The engine's resident memory, in kB, as the kernel counts it.
    fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// `dataward stop` (showing it, read from the state database as root).
    fn stop_status(&self) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("stop")
            .arg("--data-dir")
            .arg(&self.data)
            .output()
            .unwrap()
    }
}

/// Where the connecting process puts its connections, for this test to take them.
const FIRST_FD: RawFd = 300;

/// Connections made by a process of `account` whose audit login uid is `login` (what
/// `sudo -u account` from `login`'s session gives): the kernel attests that process as
/// the peer of each. This test takes copies of them (pidfd_getfd) and speaks on them;
/// the process stays alive (a `cat` waiting on its stdin) until `vanish` or drop.
struct Connector {
    child: Child,
    streams: Vec<UnixStream>,
}

fn connect_as(account: &Account, login: u32, socket: &Path, count: usize) -> Connector {
    // Everything the child needs is made here: after fork it may not allocate.
    let login_text = login.to_string().into_bytes();
    let groups: Vec<libc::gid_t> = account.groups.clone();
    let (uid, gid) = (account.uid, account.gid);
    // SAFETY: a zeroed sockaddr_un is a valid empty address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let path = socket.as_os_str().as_encoded_bytes();
    assert!(path.len() < addr.sun_path.len(), "socket path too long");
    for (to, from) in addr.sun_path.iter_mut().zip(path) {
        *to = *from as libc::c_char;
    }
    let mut command = Command::new("cat");
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .current_dir("/");
    // SAFETY: only async-signal-safe calls on memory made before the fork.
    unsafe {
        command.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            let file = libc::open(c"/proc/self/loginuid".as_ptr(), libc::O_WRONLY);
            if file < 0
                || libc::write(file, login_text.as_ptr().cast(), login_text.len()) < 0
                || libc::close(file) != 0
            {
                return fail();
            }
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return fail();
            }
            for i in 0..count {
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                if fd < 0
                    || libc::connect(
                        fd,
                        (&addr as *const libc::sockaddr_un).cast(),
                        std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                    ) != 0
                    || libc::dup2(fd, FIRST_FD + i as RawFd) < 0
                    || libc::close(fd) != 0
                {
                    return fail();
                }
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .expect("a process of the other account connects");
    // SAFETY: plain syscalls on our own child's pid and its descriptors.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
    assert!(
        pidfd >= 0,
        "pidfd_open: {}",
        std::io::Error::last_os_error()
    );
    let streams = (0..count)
        .map(|i| {
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_getfd,
                    pidfd as RawFd,
                    FIRST_FD + i as RawFd,
                    0,
                )
            };
            assert!(fd >= 0, "pidfd_getfd: {}", std::io::Error::last_os_error());
            // SAFETY: a descriptor the kernel just gave us, owned by nothing else.
            unsafe { UnixStream::from_raw_fd(fd as RawFd) }
        })
        .collect();
    unsafe { libc::close(pidfd as RawFd) };
    Connector { child, streams }
}

impl Connector {
    /// The connecting process exits and is reaped; its connections live on here.
    fn vanish(mut self) -> Vec<UnixStream> {
        drop(self.child.stdin.take());
        assert!(self.child.wait().unwrap().success());
        std::mem::take(&mut self.streams)
    }
}

impl Drop for Connector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn send(stream: &mut UnixStream, message: &ClientMessage) {
    stream.write_all(&wire::encode(message)).unwrap();
}

fn hello(stream: &mut UnixStream) {
    send(
        stream,
        &ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            read_only: false,
        },
    );
}

fn request(stream: &mut UnixStream, id: u64, command: Ask) {
    send(
        stream,
        &ClientMessage::Request(Request {
            id,
            command,
            client_request: None,
        }),
    );
}

fn receive(stream: &mut UnixStream) -> ServerMessage {
    stream.set_read_timeout(Some(HANG)).unwrap();
    wire::receive(stream, wire::MAX_SERVER_FRAME).expect("a message from the engine in time")
}

/// Reads until the reply to `id`; a goodbye instead is a failure, with its reason.
fn reply(stream: &mut UnixStream, id: u64) -> Outcome {
    loop {
        match receive(stream) {
            ServerMessage::Reply(reply) if reply.id == id => return reply.outcome,
            ServerMessage::Goodbye { reason } => panic!("turned away: {reason}"),
            _ => {}
        }
    }
}

/// Says hello, asks one thing and returns the answer.
fn ask(stream: &mut UnixStream, command: Ask) -> Outcome {
    hello(stream);
    request(stream, 1, command);
    reply(stream, 1)
}

fn refusal(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Refused { reason } => reason.message.clone(),
        Outcome::Accepted { .. } => panic!("accepted, where a refusal was expected"),
    }
}

fn stop_is_set(served: &Served) -> bool {
    let out = served.stop_status();
    match out.status.code() {
        Some(1) if text(&out).contains("org-wide stop SET") => true,
        Some(0) if text(&out).contains("no org-wide stop") => false,
        _ => panic!("dataward stop: {}", text(&out)),
    }
}

/// alice asked to lift the stop; bob's account, reached with sudo from alice's session,
/// connects and its process is gone (reaped) before the engine reads who it is. The
/// engine must not take it for bob the person: the lift is refused, and the stop stays.
#[test]
fn a_lift_from_a_process_gone_before_the_engine_read_it_is_refused() {
    let Some((alice, bob)) = team("a_lift_from_a_process_gone_before_the_engine_read_it") else {
        return;
    };
    let served = Served::start();
    let socket = served.socket();
    let mut alice_in = connect_as(&alice, alice.uid, &socket, 1);
    let outcome = ask(
        &mut alice_in.streams[0],
        Ask::OrgStop {
            reason: "bad data everywhere".into(),
        },
    );
    assert!(matches!(outcome, Outcome::Accepted { .. }), "{outcome:?}");
    request(&mut alice_in.streams[0], 2, Ask::LiftStop);
    let outcome = reply(&mut alice_in.streams[0], 2);
    assert!(matches!(outcome, Outcome::Accepted { .. }), "{outcome:?}");
    assert!(stop_is_set(&served));

    // Bob's account from alice's session, its process alive: the same person.
    let mut sudo_bob = connect_as(&bob, alice.uid, &socket, 1);
    let refused = refusal(&ask(&mut sudo_bob.streams[0], Ask::LiftStop));
    assert!(refused.contains("second, different person"), "{refused}");
    drop(sudo_bob);

    // The same, from a process that has exited and been reaped before the engine
    // looks at its connection: the engine is held still (SIGSTOP) until then, as a
    // busy engine on a loaded host would be.
    served.hold_still();
    let gone = connect_as(&bob, alice.uid, &socket, 1);
    let mut streams = gone.vanish();
    hello(&mut streams[0]);
    request(&mut streams[0], 1, Ask::LiftStop);
    served.signal(libc::SIGCONT);
    let outcome = reply(&mut streams[0], 1);
    assert!(
        stop_is_set(&served),
        "one person lifted the stop alone: {outcome:?}"
    );
    let refused = refusal(&outcome);
    assert!(refused.contains("login uid"), "{refused}");

    // Bob himself, from his own session: the second person, and the stop is lifted.
    let mut real_bob = connect_as(&bob, bob.uid, &socket, 1);
    let outcome = ask(&mut real_bob.streams[0], Ask::LiftStop);
    assert!(matches!(outcome, Outcome::Accepted { .. }), "{outcome:?}");
    assert!(!stop_is_set(&served));
}

/// Bob's account opens 270 connections and trickles each one's hello a byte at a time,
/// never slower than any one read may wait: alice is still answered at once, bob's
/// connections past his share are turned away saying why, and the slow hellos he was
/// allowed are ended when the hello's time is up, however the bytes keep coming.
#[test]
fn a_slow_hello_flood_from_one_account_leaves_the_others_served() {
    let Some((alice, bob)) = team("a_slow_hello_flood_from_one_account_leaves_the_others_served")
    else {
        return;
    };
    let served = Served::start();
    let socket = served.socket();
    let mut flood = connect_as(&bob, bob.uid, &socket, 270);
    let hello_frame = wire::encode(&ClientMessage::Hello {
        protocol: PROTOCOL_VERSION,
        read_only: false,
    });
    let trickling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let trickle = {
        let mut streams: Vec<UnixStream> = flood
            .streams
            .iter()
            .map(|s| s.try_clone().unwrap())
            .collect();
        let trickling = std::sync::Arc::clone(&trickling);
        std::thread::spawn(move || {
            for byte in hello_frame.iter().cycle() {
                for stream in &mut streams {
                    // A closed one was turned away: its reason is read below.
                    let _ = stream.write_all(std::slice::from_ref(byte));
                }
                for _ in 0..20 {
                    if !trickling.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
    };

    let asked = Instant::now();
    let mut alice_in = connect_as(&alice, alice.uid, &socket, 1);
    let answer = refusal(&ask(&mut alice_in.streams[0], Ask::LiftStop));
    println!(
        "alice answered in {:?} beside 270 slow hellos of bob's",
        asked.elapsed()
    );
    assert!(answer.contains("no org-wide stop"), "{answer}");

    let goodbye = |stream: &mut UnixStream| match receive(stream) {
        ServerMessage::Goodbye { reason } => reason.message,
        other => panic!("expected a goodbye, got {other:?}"),
    };
    let past_share = goodbye(flood.streams.last_mut().unwrap());
    assert!(
        past_share.contains("dw-bob") && past_share.contains("connections"),
        "{past_share}"
    );
    // One of those let in, still trickling: its hello's time runs out.
    let too_slow = goodbye(&mut flood.streams[0]);
    assert!(too_slow.contains("hello"), "{too_slow}");
    trickling.store(false, std::sync::atomic::Ordering::SeqCst);
    trickle.join().unwrap();
}

/// Bob sends 5,000 requests naming an incident near the largest frame a client may
/// send (the refusal says the name back), and never reads a reply. The engine does not keep them for him: he is dropped,
/// told why when he reads at last, its memory stays within a few times what it was,
/// and alice is answered meanwhile.
#[test]
fn a_client_that_never_reads_is_dropped_with_a_reason_and_the_engine_stays_small() {
    let Some((alice, bob)) = team("a_client_that_never_reads_is_dropped_with_a_reason") else {
        return;
    };
    let served = Served::start();
    let socket = served.socket();
    let mut alice_in = connect_as(&alice, alice.uid, &socket, 1);
    hello(&mut alice_in.streams[0]);
    request(&mut alice_in.streams[0], 1, Ask::LiftStop);
    reply(&mut alice_in.streams[0], 1);
    let before = served.rss_kb();

    let mut bob_in = connect_as(&bob, bob.uid, &socket, 1);
    let mut flood = bob_in.streams[0].try_clone().unwrap();
    let flooding = std::thread::spawn(move || {
        hello(&mut flood);
        // Once the engine stops reading him, a write waits: that is his answer.
        flood
            .set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let incident = format!("INC-{}", "9".repeat(60_000));
        let mut sent = 0u64;
        for id in 1..=5_000 {
            let frame = wire::encode(&ClientMessage::Request(Request {
                id,
                command: Ask::Resolve {
                    incident: incident.clone(),
                    reason: "flood".into(),
                },
                client_request: None,
            }));
            if flood.write_all(&frame).is_err() {
                break;
            }
            sent += 1;
        }
        sent
    });
    let asked = Instant::now();
    request(&mut alice_in.streams[0], 2, Ask::LiftStop);
    reply(&mut alice_in.streams[0], 2);
    let alice_waited = asked.elapsed();
    let sent = flooding.join().unwrap();
    let after = served.rss_kb();
    println!(
        "engine RSS {before} kB before, {after} kB after bob sent {sent} requests unread; \
         alice answered in {alice_waited:?} during the flood"
    );
    // Generous: what a flood must never do is grow the engine with what it sends.
    assert!(
        after < before * 4,
        "engine RSS {before} kB before, {after} kB after bob's {sent} requests"
    );
    // At last bob reads: what the engine still sent him, then why it stopped.
    let why = loop {
        match receive(&mut bob_in.streams[0]) {
            ServerMessage::Goodbye { reason } => break reason.message,
            _ => continue,
        }
    };
    assert!(why.contains("unread"), "{why}");
}
