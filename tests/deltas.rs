//! What a console receives from `dataward serve` over the socket: a whole snapshot on
//! attaching, then only what changed; a client that missed a change asks again and
//! ends where a fresh attach would; an older console is refused saying what to do; one
//! client's flood of presence messages delays nobody else. Read with plain JSON frames,
//! as any client of the protocol would.

#[path = "support/binary.rs"]
mod binary;

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::{dataward, text, Engine};
use dataward::engine::api::PROTOCOL_VERSION;
use dataward::engine::wire;
use serde_json::{json, Value};

/// Long enough for a debug engine on a busy machine; only a bound against hanging.
const HANG: Duration = Duration::from_secs(120);

/// A SQLite warehouse of `tables` tables, each far below the row count its monitor
/// expects: every table opens an incident on the first poll, and the person running
/// the test owns them all.
fn estate(dir: &Path, tables: usize) {
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    let me = users_name();
    let mut config = format!(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\nmax_concurrent = 4\n\n\
         [serve]\nobservers = true\n\n\
         [people.{me:?}]\nname = \"tester\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nautonomy = \"L2\"\n\n"
    );
    wh.execute_batch("BEGIN").unwrap();
    for t in 0..tables {
        wh.execute_batch(&format!(
            "CREATE TABLE t{t} (id INTEGER); INSERT INTO t{t} VALUES (1), (2), (3);"
        ))
        .unwrap();
        config.push_str(&format!(
            "[[monitor]]\nwarehouse = \"local\"\ntable = \"t{t}\"\nchecks = [\"row_count\"]\n\
             every = \"1h\"\nexpected_rows = 100000\n\n"
        ));
    }
    wh.execute_batch("COMMIT").unwrap();
    std::fs::write(dir.join("team.toml"), config).unwrap();
}

fn users_name() -> String {
    let uid = unsafe { libc::geteuid() };
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
        .expect("this uid has a name")
}

/// `dataward serve` on `dir`'s estate, once it lists `incidents` open incidents.
fn serve(dir: &Path, incidents: usize) -> Engine {
    let engine = Engine(
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--config"])
            .arg(dir.join("team.toml"))
            .arg("--data-dir")
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    loop {
        let out = dataward(&["incidents"], &dir.join("data"));
        let open = text(&out).lines().filter(|l| l.starts_with("INC-")).count();
        let serving = UnixStream::connect(dir.join("data").join("dataward.sock")).is_ok();
        if serving && out.status.success() && open >= incidents {
            return engine;
        }
        assert!(started.elapsed() < HANG, "no engine: {}", text(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A raw connection: frames in and out, each message as JSON.
struct Raw {
    stream: UnixStream,
    /// The frame bytes read so far.
    read: usize,
}

impl Raw {
    fn connect(dir: &Path) -> Raw {
        let stream = UnixStream::connect(dir.join("data").join("dataward.sock")).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        Raw { stream, read: 0 }
    }

    fn hello(dir: &Path, protocol: u32, read_only: bool) -> Raw {
        let mut raw = Raw::connect(dir);
        raw.send(json!({"type": "hello", "protocol": protocol, "read_only": read_only}));
        raw
    }

    fn send(&mut self, message: Value) {
        wire::send(&mut self.stream, &message).unwrap();
    }

    fn receive(&mut self) -> Value {
        let message: Value =
            wire::receive(&mut self.stream, wire::MAX_SERVER_FRAME).expect("a frame in time");
        self.read += wire::encode(&message).len();
        message
    }

    /// Reads until a message of `kind`, returning it.
    fn until(&mut self, kind: &str) -> Value {
        loop {
            let message = self.receive();
            if message["type"] == kind {
                return message;
            }
            assert_ne!(message["type"], "goodbye", "{message}");
        }
    }
}

/// The incidents of a whole snapshot message, whichever way it carries them.
fn incidents_of(snapshot: &Value) -> &Vec<Value> {
    snapshot
        .get("snapshot")
        .unwrap_or(snapshot)
        .get("incidents")
        .and_then(Value::as_array)
        .expect("a snapshot has incidents")
}

#[test]
fn a_change_to_one_incident_costs_that_incident_not_the_estate() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 200);
    let _engine = serve(dir.path(), 200);
    let mut console = Raw::hello(dir.path(), PROTOCOL_VERSION, false);
    console.until("hello");
    let first = console.until("snapshot");
    let incidents = incidents_of(&first);
    assert!(incidents.len() >= 200, "{}", incidents.len());
    let target = incidents[0]["id"].as_str().unwrap().to_string();
    let before = console.read;
    console.send(json!({
        "type": "request", "id": 1,
        "command": {"command": "resolve", "incident": target, "reason": "checked by hand"}
    }));
    // Everything sent until a message shows the incident resolved.
    let incident = loop {
        let message = console.receive();
        if message["type"] == "reply" {
            assert_eq!(message["outcome"], "accepted", "{message}");
        }
        let shown = message
            .get("snapshot")
            .unwrap_or(&message)
            .get("incidents")
            .and_then(Value::as_array)
            .and_then(|all| all.iter().find(|i| i["id"] == target.as_str()).cloned());
        if let Some(incident) = shown.filter(|i| i["status"] == "resolved") {
            break incident;
        }
    };
    let bytes = console.read - before;
    let own = serde_json::to_vec(&incident).unwrap().len();
    assert!(
        bytes <= own + 8 * 1024,
        "{bytes} bytes for a change to one incident of {own} bytes, at 200 incidents"
    );
}

#[test]
fn a_client_that_asks_again_ends_where_a_fresh_attach_does() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 3);
    let _engine = serve(dir.path(), 3);
    let mut console = Raw::hello(dir.path(), PROTOCOL_VERSION, false);
    console.until("hello");
    console.until("snapshot");
    // A change is made, and this client asks for the whole state again (as one that
    // saw a gap in the versions does).
    let mut decider = Raw::hello(dir.path(), PROTOCOL_VERSION, false);
    decider.until("hello");
    decider.send(json!({
        "type": "request", "id": 1,
        "command": {"command": "org_stop", "reason": "a change to miss"}
    }));
    assert_eq!(decider.until("reply")["outcome"], "accepted");
    console.send(json!({"type": "resync"}));
    let again = console.until("snapshot");
    let mut fresh = Raw::hello(dir.path(), PROTOCOL_VERSION, true);
    fresh.until("hello");
    let fresh = fresh.until("snapshot");
    let strip = |mut snapshot: Value| {
        // Who is attached differs by the fresh client itself.
        let whole = snapshot.get_mut("snapshot").unwrap();
        whole["attached"] = Value::Null;
        whole["now"] = Value::Null;
        snapshot["version"] = Value::Null;
        snapshot
    };
    assert!(
        again["snapshot"]["org_stop"].is_string(),
        "the stop it missed is in what it got: {again}"
    );
    assert_eq!(strip(again), strip(fresh));
}

#[test]
fn an_older_console_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 1);
    let _engine = serve(dir.path(), 1);
    let mut old = Raw::hello(dir.path(), 1, false);
    let goodbye = old.receive();
    assert_eq!(
        goodbye["type"], "goodbye",
        "an old console is attached: {goodbye}"
    );
    let message = goodbye["reason"]["message"].as_str().unwrap();
    assert!(
        message.contains("protocol 1")
            && message.contains(&format!("protocol {PROTOCOL_VERSION}"))
            && message.contains("same dataward version"),
        "{message}"
    );
}

/// A console of protocol 2 sends its times in whatever form an orchestrator wrote them
/// and cannot read them as Timestamps: it is refused, naming both versions, rather
/// than attached to a snapshot it would misread.
#[test]
fn a_console_of_protocol_2_is_refused_now_that_times_are_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 1);
    let _engine = serve(dir.path(), 1);
    let mut old = Raw::hello(dir.path(), 2, false);
    let goodbye = old.receive();
    assert_eq!(
        goodbye["type"], "goodbye",
        "a protocol 2 console is attached: {goodbye}"
    );
    let message = goodbye["reason"]["message"].as_str().unwrap();
    assert!(
        message.contains("the client protocol 2") && message.contains("same dataward version"),
        "{message}"
    );
}

/// An engine of protocol 1, as it answered a client of another version.
#[test]
fn a_console_attaching_to_an_older_engine_says_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let listener = UnixListener::bind(data.join("dataward.sock")).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let hello: Value = wire::receive(&mut stream, wire::MAX_CLIENT_FRAME).unwrap();
            let protocol = hello["protocol"].as_u64().unwrap();
            let answer = if protocol == 1 {
                json!({"type": "hello", "protocol": 1, "started_at": "2026-11-24T03:00:00Z",
                       "you": "tester", "read_only": true})
            } else {
                json!({"type": "goodbye", "reason": {"kind": "not_permitted", "message":
                    format!("this engine speaks protocol 1, the client {protocol}: use the same dataward version")}})
            };
            wire::send(&mut stream, &answer).unwrap();
        }
    });
    let out = dataward(&["incidents"], &data);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("protocol 1") && said.contains(&format!("{PROTOCOL_VERSION}")),
        "{said}"
    );
    assert!(said.contains("same dataward version"), "{said}");
}

/// Who is attached goes to the others at most every tenth of a second however fast one
/// client moves (`hub.rs`, `PRESENCE_EVERY`): what waits is never lost. A flooding
/// observer stays attached, the others' questions are answered in the order asked, and
/// the observer's last word reaches them.
#[test]
fn a_flooding_observer_stays_attached_and_its_last_word_reaches_the_others() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 30);
    let _engine = serve(dir.path(), 30);
    let mut other = Raw::hello(dir.path(), PROTOCOL_VERSION, false);
    other.until("snapshot");
    let mut observer = Raw::hello(dir.path(), PROTOCOL_VERSION, true);
    observer.until("hello");
    let mut flooding = observer.stream.try_clone().unwrap();
    let flood = std::thread::spawn(move || {
        for n in 0..20_000 {
            let viewing = format!("INC-{:04}", n % 30 + 1);
            let frame = json!({"type": "presence", "viewing": viewing, "deciding": null});
            wire::send(&mut flooding, &frame).expect("the observer is not dropped");
        }
        // The last word: what it views once it stops.
        let frame = json!({"type": "presence", "viewing": "INC-LAST", "deciding": null});
        wire::send(&mut flooding, &frame).expect("the observer is not dropped");
    });
    let mut answered = Vec::new();
    for id in 1..=20 {
        other.send(json!({"type": "ask", "id": id, "question": {"question": "stop"}}));
        let answer = other.until("answer");
        answered.push(answer["id"].as_u64().unwrap());
    }
    assert_eq!(
        answered,
        (1..=20).collect::<Vec<u64>>(),
        "in the order asked"
    );
    flood.join().unwrap();
    loop {
        let presence = other.until("presence");
        let attached = presence["attached"].as_array().unwrap();
        if attached
            .iter()
            .any(|p| p["read_only"] == true && p["viewing"] == "INC-LAST")
        {
            break;
        }
    }
    drop(observer);
}

#[test]
fn a_flood_of_presence_from_one_observer_delays_nobody_and_carries_no_estate() {
    let dir = tempfile::tempdir().unwrap();
    estate(dir.path(), 300);
    let _engine = serve(dir.path(), 300);
    let mut other = Raw::hello(dir.path(), PROTOCOL_VERSION, false);
    other.until("hello");
    other.until("snapshot");
    let mut observer = Raw::hello(dir.path(), PROTOCOL_VERSION, true);
    observer.until("hello");
    let mut flooding = observer.stream.try_clone().unwrap();
    // The observer reads nothing and says what it views, as fast as it can, each
    // message a change.
    std::thread::spawn(move || {
        for n in 0..1_000_000 {
            let viewing = format!("INC-{:04}", n % 300 + 1);
            let frame = json!({"type": "presence", "viewing": viewing, "deciding": null});
            if wire::send(&mut flooding, &frame).is_err() {
                break;
            }
        }
    });
    // The other client's questions are each answered meanwhile, and what it is sent of
    // the observer's moves is who looks at what, never the estate again.
    let mut largest = 0;
    for id in 1..=5 {
        other.send(json!({"type": "ask", "id": id, "question": {"question": "stop"}}));
        loop {
            let message = other.receive();
            largest = largest.max(wire::encode(&message).len());
            assert_ne!(message["type"], "goodbye", "{message}");
            if message["type"] == "answer" {
                assert_eq!(message["id"], id);
                break;
            }
        }
    }
    assert!(
        largest <= 16 * 1024,
        "a message of {largest} bytes while an observer moved, at 300 incidents"
    );
    drop(observer);
}
