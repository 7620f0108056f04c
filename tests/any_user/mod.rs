//! The dataward binary where any account can run it. Tests that run it as another unix
//! user (`runuser`) cannot use the build's own path: a clone may sit under a folder only
//! root can enter (CI clones anywhere). So they run a hard link (or, across file
//! systems, a copy) in a world-readable temporary folder.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn dataward() -> &'static Path {
    static SHARED: OnceLock<PathBuf> = OnceLock::new();
    SHARED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dataward-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join("dataward");
        let _ = std::fs::remove_file(&path);
        let built = Path::new(env!("CARGO_BIN_EXE_dataward"));
        if std::fs::hard_link(built, &path).is_err() {
            std::fs::copy(built, &path).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    })
}
