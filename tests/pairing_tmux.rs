//! Pairing on one host: three unix accounts this test creates (the story's owner, a
//! colleague the policy names without the owner's role, and an observer it does not
//! name), each running the real console in its own tmux session against one engine
//! (the demo, playing the story and leaving decisions to people). Needs root, as CI
//! runs; skipped otherwise unless DATAWARD_REQUIRE_ALL=1.

mod any_user;
#[path = "support/tmux.rs"]
mod terminal;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use terminal::{tmux, wait_for, Session};

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap();
    assert!(status.success(), "{program} {args:?}: {status}");
}

fn usable() -> bool {
    let tmux = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    // SAFETY: geteuid only reads this process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    if !(tmux && root) {
        assert!(
            std::env::var("DATAWARD_REQUIRE_ALL").is_err(),
            "this test needs tmux and root, to create unix users (DATAWARD_REQUIRE_ALL=1)"
        );
        eprintln!("skipping: needs tmux and root (to create unix users)");
        return false;
    }
    true
}

/// The accounts and group the test made, removed however it ends.
struct Accounts {
    users: Vec<String>,
    group: String,
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for user in &self.users {
            let _ = Command::new("pkill").args(["-KILL", "-u", user]).status();
            let _ = Command::new("userdel").arg(user).status();
        }
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn number(program: &str, args: &[&str]) -> u32 {
    let out = Command::new(program).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .split(':')
        .find_map(|field| field.parse().ok())
        .unwrap_or_else(|| panic!("{program} {args:?} said {text:?}"))
}

/// The headless demo as the owner (its primary group the team's, so it can give the
/// socket to it): it plays the story, serves the socket, and decides nothing (no
/// `--approve-as`). Its pid is the engine's, to signal.
fn demo(uid: u32, gid: u32, data: &Path, speed: &str, stdout: Stdio) -> Demo {
    use std::os::unix::process::CommandExt;
    Demo(
        Command::new(any_user::dataward())
            .args([
                "demo",
                "ticketing",
                "--headless",
                "--json",
                "--speed",
                speed,
            ])
            .arg("--data-dir")
            .arg(data)
            .uid(uid)
            .gid(gid)
            .current_dir("/")
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn console(name: &str, user: &str, data: &Path, extra: &str) -> Session {
    let command = format!(
        "runuser -u {user} -- {} --data-dir {} {extra}",
        any_user::dataward().display(),
        data.display()
    );
    // Wide enough for three people's presence on the status bar whatever length the
    // test's account names and uids come out at (at 120 the last "on INC-0001" could
    // end cut with an ellipsis).
    tmux(&[
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        "180",
        "-y",
        "40",
        &command,
    ]);
    Session(name.to_string())
}

fn wait_for_socket(data: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::os::unix::net::UnixStream::connect(data.join("dataward.sock")).is_err() {
        assert!(
            Instant::now() < deadline,
            "the demo never served its socket"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_people_and_an_observer_on_one_engine() {
    if !usable() {
        return;
    }
    let tag = std::process::id() % 100_000;
    let (owner, colleague, observer, group) = (
        format!("dwo{tag}"),
        format!("dwc{tag}"),
        format!("dwv{tag}"),
        format!("dwg{tag}"),
    );
    run("groupadd", &[&group]);
    let accounts = Accounts {
        users: vec![owner.clone(), colleague.clone(), observer.clone()],
        group: group.clone(),
    };
    for user in &accounts.users {
        run("useradd", &["-M", "-N", "-G", &group, user]);
    }
    let uid = number("id", &["-u", &owner]);
    let gid = number("getent", &["group", &group]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let data: PathBuf = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    run("chown", &[&owner, &data.display().to_string()]);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();

    // The story up to its first proposals, then stopped (SIGTERM: it resumes).
    let mut first = demo(uid, gid, &data, "3000", Stdio::piped());
    let mut lines = BufReader::new(first.0.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"event\":\"proposal\"") {
            break;
        }
    }
    // SAFETY: a signal to the demo this test started.
    unsafe { libc::kill(first.0.id() as i32, libc::SIGTERM) };
    lines.for_each(drop);
    assert!(first.0.wait().unwrap().success());

    // The team's policy: the colleague is named without the owner's role; anyone else
    // in the group may watch. The data directory lets the group reach the socket.
    let config = data.join("estate").join("dataward.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[people.{colleague}]\nname = \"Bea\"\nroles = [\"analyst\"]\n\n[serve]\ngroup = \"{group}\"\nobservers = true\n"
    ));
    std::fs::write(&config, text).unwrap();
    run("chgrp", &[&group, &data.display().to_string()]);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o710)).unwrap();

    let engine = demo(uid, gid, &data, "1", Stdio::null());
    wait_for_socket(&data);
    let a = console(&format!("dw-owner-{tag}"), &owner, &data, "");
    let b = console(&format!("dw-colleague-{tag}"), &colleague, &data, "");
    let v = console(&format!("dw-observer-{tag}"), &observer, &data, "");
    let (a, b, v) = (a.0.as_str(), b.0.as_str(), v.0.as_str());
    for s in [a, b, v] {
        wait_for(s, "INC-0001");
    }
    wait_for(a, "3 attached");

    // Both people open the incident on its proposals; the colleague sees the owner there.
    for s in [a, b] {
        tmux(&["send-keys", "-t", s, "Enter"]);
        wait_for(s, "Blast radius");
        // The detail opens on its proposals, the hold first.
        wait_for(s, "▸ Proposals");
    }
    wait_for(b, &format!("({owner}) on INC-0001"));

    // The owner opens the reason box on the hold: the others see who is deciding it.
    tmux(&["send-keys", "-t", a, "a"]);
    wait_for(a, "Reason (optional)");
    wait_for(b, "is deciding P1");
    tmux(&["send-keys", "-t", a, "-l", "refill in progress"]);
    tmux(&["send-keys", "-t", a, "Enter"]);
    let answer = wait_for(a, "(chain #");
    assert!(answer.contains("approved"), "{answer}");
    // The colleague's console shows the decision from the next snapshot.
    wait_for(b, "✓ approved");

    // The colleague approves the diff: refused as the key is pressed, before any
    // reason is typed, and who decides is named (the engine would refuse it too).
    tmux(&["send-keys", "-t", b, "j", "a"]);
    let refused = wait_for(b, "may not decide");
    assert!(refused.contains("analytics-owner"), "{refused}");
    assert!(!refused.contains("Reason (optional)"), "{refused}");

    // The observer has no deciding key.
    let watching = wait_for(v, "read-only");
    assert!(!watching.contains("a approve"), "{watching}");
    tmux(&["send-keys", "-t", v, "Enter"]);
    let detail = wait_for(v, "Blast radius");
    assert!(!detail.contains("a approve"), "{detail}");

    // The engine is killed outright, and started again: both people reconnect, and
    // the approval is still there.
    drop(engine);
    for s in [a, b] {
        wait_for(s, "went away; reconnecting");
    }
    let _engine = demo(uid, gid, &data, "1", Stdio::null());
    for s in [a, b] {
        let back = wait_for(s, "reconnected");
        assert!(back.contains("engine restarted at"), "{back}");
        wait_for(s, "✓ approved");
    }
    let out = Command::new("runuser")
        .args(["-u", &owner, "--"])
        .arg(any_user::dataward())
        .args(["verify", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    drop(accounts);
}
