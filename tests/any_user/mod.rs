//! The dataward binary where any account can run it. Tests that run it as another unix
//! user (`runuser`) cannot use the build's own path: a clone may sit under a folder only
//! root can enter (CI clones anywhere). So they run a hard link (or, across file
//! systems, a copy) in a world-readable temporary folder.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn dataward() -> &'static Path {
    SHARED.get_or_init(|| {
        sweep_dead_runs();
        let dir = folder(std::process::id());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join("dataward");
        let _ = std::fs::remove_file(&path);
        let built = Path::new(env!("CARGO_BIN_EXE_dataward"));
        if std::fs::hard_link(built, &path).is_err() {
            std::fs::copy(built, &path).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The link outlives the build it points at (a copy of some 190 MB once the
        // target folder goes): it goes when this test binary exits.
        // SAFETY: registers a plain function, run once at exit.
        unsafe { libc::atexit(remove_own_folder) };
        path
    })
}

static SHARED: OnceLock<PathBuf> = OnceLock::new();

fn folder(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("dataward-bin-{pid}"))
}

extern "C" fn remove_own_folder() {
    let _ = std::fs::remove_dir_all(folder(std::process::id()));
}

/// Folders left by test runs that were killed before they could remove theirs: those
/// whose process is gone.
fn sweep_dead_runs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("dataward-bin-"))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The team the group-mode tests share: the system group `dw-team` with `dw-alice` and
/// `dw-obs` in it, and `dw-out` outside it. Made once per machine (useradd's 9 is
/// "already exists": another test made it first). Needs root.
pub fn team() {
    let run = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success() || out.status.code() == Some(9),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("groupadd", &["--system", "dw-team"]);
    for (user, groups) in [
        ("dw-alice", "dw-team"),
        ("dw-obs", "dw-team"),
        ("dw-out", ""),
    ] {
        let mut args = vec!["--system", "--no-create-home", "--shell", "/bin/sh"];
        if !groups.is_empty() {
            args.extend(["--groups", groups]);
        }
        args.push(user);
        run("useradd", &args);
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True as root; otherwise a line saying `test` was skipped and why, or a panic when
/// `DATAWARD_REQUIRE_ALL=1` (CI runs everything).
pub fn needs_root(test: &str, why: &str) -> bool {
    if is_root() {
        return true;
    }
    let message = format!("{test}: skipped: needs root ({why})");
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    false
}

/// The team made, or false (with the skip line) when not root.
pub fn with_team(test: &str) -> bool {
    if !needs_root(test, "to create unix users") {
        return false;
    }
    team();
    true
}

/// `dataward ARGS --data-dir DIR` run as `user` (from `/`, which every account may enter).
pub fn as_user(user: &str, args: &[&str], dir: &Path) -> std::process::Output {
    std::process::Command::new("runuser")
        .args(["-u", user, "--"])
        .arg(dataward())
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .current_dir("/")
        .output()
        .unwrap()
}
