//! The reading commands (`verify`, `receipt`, `stop` without flags) open the state
//! database read-only: they never create one, and they work for a user who can only
//! read the data directory. A loose data directory is refused with what to run.

mod any_user;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const READER: &str = "dwreader";

fn dataward(args: &[&str], data_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn reading_commands_never_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["verify"][..],
        &["verify", "--json"],
        &["receipt", "INC-0001"],
        &["stop"],
    ] {
        let out = dataward(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("no state database"),
            "{args:?}: {}",
            text(&out)
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
        // Nor a data directory.
        let missing = dir.path().join("missing");
        let out = dataward(args, &missing);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
}

#[test]
fn a_loose_data_dir_is_refused_with_what_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dataward(&["stop", "--reason", "maintenance"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        std::fs::metadata(&data).unwrap().permissions().mode() & 0o777,
        0o700
    );
    chmod(&data, 0o777);
    for args in [&["verify"][..], &["stop"], &["stop", "--lift"]] {
        let out = dataward(args, &data);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("chmod 700 {}", data.display())),
            "{args:?}: {}",
            text(&out)
        );
    }
}

/// Makes sure the unprivileged reader exists; false (with a line saying why) when the
/// test cannot run here.
fn reader_user(test: &str) -> bool {
    if !is_root() {
        let message = format!("{test}: skipped: needs root to create the user {READER}");
        if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
            panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
        }
        eprintln!("{message}");
        return false;
    }
    let exists = Command::new("id")
        .arg(READER)
        .output()
        .is_ok_and(|o| o.status.success());
    if !exists {
        let out = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/sh", READER])
            .output()
            .expect("useradd runs");
        // Another test process may have created it meanwhile (exit 9: already exists).
        assert!(
            out.status.success() || out.status.code() == Some(9),
            "useradd {READER}: {}",
            text(&out)
        );
    }
    true
}

fn as_reader(args: &[&str], data_dir: &Path) -> Output {
    Command::new("runuser")
        .args(["-u", READER, "--"])
        .arg(any_user::dataward())
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .current_dir("/")
        .output()
        .unwrap()
}

#[test]
fn a_user_who_can_only_read_the_data_dir_can_verify_and_read() {
    if !reader_user("a_user_who_can_only_read_the_data_dir_can_verify_and_read") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dataward(&["stop", "--reason", "maintenance window"], &data);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Readable by everyone, writable by its owner (root) only.
    chmod(dir.path(), 0o755);
    chmod(&data, 0o755);
    for entry in std::fs::read_dir(&data).unwrap() {
        chmod(&entry.unwrap().path(), 0o644);
    }
    let before = listing(&data);

    let check = |when: &str| {
        let out = as_reader(&["verify"], &data);
        assert_eq!(out.status.code(), Some(0), "{when}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("chain ok: 1 records"),
            "{when}: {}",
            text(&out)
        );
        let out = as_reader(&["verify", "--json"], &data);
        assert_eq!(out.status.code(), Some(0), "{when}: {}", text(&out));
        let out = as_reader(&["stop"], &data);
        assert_eq!(out.status.code(), Some(1), "{when}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("SET")
                && String::from_utf8_lossy(&out.stdout).contains("maintenance window"),
            "{when}: {}",
            text(&out)
        );
        let out = as_reader(&["receipt", "INC-0001"], &data);
        assert_eq!(out.status.code(), Some(2), "{when}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("no incident INC-0001"),
            "{when}: {}",
            text(&out)
        );
    };
    // No engine running: the WAL was checkpointed away when the writer closed.
    check("no writer");
    assert_eq!(listing(&data), before, "the reader changed the data dir");

    // An engine holding the database open: the -wal and -shm files exist (with the
    // database's mode), and the reader uses them.
    let writer = rusqlite::Connection::open(data.join("dataward.db")).unwrap();
    writer
        .query_row("SELECT count(*) FROM chain", [], |r| r.get::<_, i64>(0))
        .unwrap();
    assert!(data.join("dataward.db-shm").exists());
    check("writer open");
    drop(writer);
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
