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
