//! The file primitives every file dataward creates goes through. On a shared host the
//! data directory is where another user would plant a symlink (`engine.lock ->
//! ~victim/notes.txt`) or a loose permission would let them swap the state database;
//! so files are opened without following symlinks, temporary files are created
//! exclusively, and a data directory or state file another user can change is refused,
//! as ssh refuses a loose `~/.ssh`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Opens `path` for reading and writing, creating it (mode 0600) if missing, never
/// through a symlink: a planted link fails with a message instead of reaching whatever
/// it points at. Existing content is kept (the caller decides what to truncate).
pub fn open_or_create(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| refused_open(path, e))?;
    ensure_plain_file(&file, path)?;
    Ok(file)
}

/// Opens `path` for appending, creating it (mode 0600) if missing, never through a
/// symlink: for logs, which several processes may write at once (`O_APPEND` keeps
/// their lines whole rather than overwriting each other). An existing file is made
/// 0600 too: a log names tables and people.
pub fn open_append(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| refused_open(path, e))?;
    ensure_plain_file(&file, path)?;
    if file.metadata()?.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", path.display()))?;
    }
    Ok(file)
}

/// Opens an existing file for reading, never through a symlink.
pub fn open_read(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| refused_open(path, e))?;
    ensure_plain_file(&file, path)?;
    Ok(file)
}

/// Creates a new file that must not exist yet. `O_EXCL` with `O_CREAT` fails on any
/// existing name, a symlink (even a dangling one) included.
pub fn create_new(path: &Path, mode: u32) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn refused_open(path: &Path, error: std::io::Error) -> anyhow::Error {
    // O_NOFOLLOW reports a symlink as ELOOP; say what it means.
    if error.raw_os_error() == Some(libc::ELOOP) {
        anyhow::anyhow!(
            "{} is a symlink; dataward never writes through one (remove it if you did not put it there)",
            path.display()
        )
    } else {
        anyhow::Error::new(error).context(format!("cannot open {}", path.display()))
    }
}

/// A FIFO, a device or a hard link to someone else's file is not ours to write.
/// (`O_NONBLOCK` above keeps a planted FIFO from hanging the open itself.)
fn ensure_plain_file(file: &File, path: &Path) -> Result<()> {
    let meta = file
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.nlink() > 1 {
        bail!(
            "{} has {} hard links; dataward only writes files of its own (remove it)",
            path.display(),
            meta.nlink()
        );
    }
    Ok(())
}

/// Replaces `path` with `bytes` so that a crash leaves the old content or the new, never
/// half: a temporary file created exclusively beside the target is written, fsynced and
/// renamed over it, then the directory is fsynced so the rename itself is durable. An
/// existing target keeps its mode and owner; a target that is a symlink is refused.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, None)
}

/// [`write_atomic`] for a file only its owner may read (a config names the people who
/// decide and where the credentials live): created 0600 from the start, and left 0600
/// whatever mode a file it replaces had.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, Some(0o600))
}

/// Writes `bytes` over `path` through a temporary file; `mode` fixes the result's mode,
/// else a new file gets the umask's and an existing one keeps its own (and its owner).
fn replace(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let existing = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => bail!(
            "{} is a symlink; dataward never writes through one (remove it if you did not put it there)",
            path.display()
        ),
        Ok(meta) if !meta.is_file() => bail!("{} is not a regular file", path.display()),
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (tmp, mut file) = create_temp_beside(path, dir, mode.unwrap_or(0o666))?;
    let written = (|| -> Result<()> {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        } else if let Some(meta) = &existing {
            // The owner first: fchown may clear set-id bits that fchmod then restores.
            let fresh = file.metadata()?;
            if (meta.uid(), meta.gid()) != (fresh.uid(), fresh.gid()) {
                std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()))
                    .context("cannot give the new file the old one's owner")?;
            }
            file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.context(format!("cannot write {}", path.display())));
    }
    sync_dir(dir)
}

/// `.NAME.PID.N.tmp` beside the target, created exclusively: a name someone planted
/// (a symlink, a file) is skipped, never opened.
fn create_temp_beside(path: &Path, dir: &Path, mode: u32) -> Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?
        .to_string_lossy();
    let pid = std::process::id();
    for n in 0..100 {
        let tmp = dir.join(format!(".{name}.{pid}.{n}.tmp"));
        // `mode` less the umask (0666 as any new file, or 0600); an existing target's
        // mode is copied later.
        match create_new(&tmp, mode) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", tmp.display())),
        }
    }
    bail!(
        "cannot create a temporary file beside {}: 100 names were taken",
        path.display()
    )
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the directory {}", dir.display()))
}

/// Who may use a file or directory another user could change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Writing (the engine, `stop --reason`): it must be ours and writable by us alone.
    Write,
    /// Reading (`verify`, `receipt`): someone else's data directory may be read, but
    /// not one that group or others can change under its owner.
    Read,
}

/// Creates the data directory 0700 if it is missing and refuses one that is not private
/// (see [`check_private`]).
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    }
    check_private(dir, Use::Write)
}

/// Refuses a data directory or state file that group or others can write, or (for
/// writing) that another user owns, naming the path and the command that fixes it.
/// Symlinks are followed: a data directory may live elsewhere by the owner's choice.
pub fn check_private(path: &Path, usage: Use) -> Result<()> {
    check(path, usage, None, "rewrite the decision log")
}

/// Refuses a file the policy comes from (the config, the notes it names) unless the
/// engine's account owns it, nobody else can write it, and nobody else can write the
/// folder it is in either: whoever can write the folder can put another file in its
/// place. Both the folder named and, for a symlink, the target's folder are held to
/// this. `dataward serve` checks this at start and at every reload alike.
pub fn check_policy_file(path: &Path, what: &str) -> Result<()> {
    check(path, Use::Write, Some(what), "give itself the owner role")?;
    let mut folders = vec![folder_of(path)];
    if let Ok(real) = std::fs::canonicalize(path) {
        folders.push(folder_of(&real));
    }
    for folder in folders {
        check_policy_folder(&folder, path, what)?;
    }
    Ok(())
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The folder holding a policy file: ours or root's, and writable by nobody else (a
/// sticky folder such as /tmp lets nobody else replace a file that is ours).
fn check_policy_folder(dir: &Path, file: &Path, what: &str) -> Result<()> {
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot stat {}", dir.display()))?;
    let me = effective_uid();
    if meta.uid() != me && meta.uid() != 0 {
        bail!(
            "the folder {} holding the {what} {} is owned by uid {}, not by you (uid {me}) \
             or root; its owner can put another {what} in its place",
            dir.display(),
            file.display(),
            meta.uid()
        );
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "group and others",
            (true, false) => "its group",
            _ => "others",
        };
        bail!(
            "the folder {} holding the {what} {} is writable by {who} (mode {:o}); anyone \
             who can write it can put another {what} in its place and give itself the owner \
             role. Run `chmod go-w {}`",
            dir.display(),
            file.display(),
            mode & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

fn check(path: &Path, usage: Use, what: Option<&str>, risk: &str) -> Result<()> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    let (what, private_mode) = if meta.is_dir() {
        (what.unwrap_or("data directory"), "700")
    } else {
        (what.unwrap_or("state file"), "600")
    };
    let me = effective_uid();
    if usage == Use::Write && meta.uid() != me {
        let remedy = if meta.is_dir() || what == "state file" {
            "dataward refuses state another user controls: run it as that user, or use a \
             --data-dir of your own"
        } else {
            "dataward refuses a policy another user controls: own it (chown) or run as its owner"
        };
        bail!(
            "the {what} {} is owned by uid {}, not by you (uid {me}); {remedy}",
            path.display(),
            meta.uid()
        );
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "group and others",
            (true, false) => "its group",
            _ => "others",
        };
        bail!(
            "the {what} {} is writable by {who} (mode {:o}); anyone who can write it can \
             {risk}. Run `chmod {private_mode} {}`",
            path.display(),
            mode & 0o7777,
            path.display()
        );
    }
    Ok(())
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn open_or_create_refuses_a_planted_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let planted = dir.path().join("engine.lock");
        symlink(&victim, &planted).unwrap();
        let err = open_or_create(&planted).unwrap_err().to_string();
        assert!(err.contains("is a symlink"), "{err}");
        assert!(open_read(&planted).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn write_atomic_replaces_content_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.sql");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o640);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn write_atomic_keeps_the_owner_when_root() {
        if effective_uid() != 0 {
            eprintln!("write_atomic_keeps_the_owner_when_root: skipped: needs root to chown");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.sql");
        std::fs::write(&path, "old").unwrap();
        std::os::unix::fs::chown(&path, Some(4242), Some(4243)).unwrap();
        write_atomic(&path, b"new").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4242, 4243));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    #[test]
    fn write_atomic_refuses_a_symlinked_target() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("checkpoint");
        symlink(&victim, &target).unwrap();
        let err = write_atomic(&target, b"x").unwrap_err().to_string();
        assert!(err.contains("is a symlink"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn write_atomic_skips_a_planted_temporary_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("checkpoint");
        let planted = dir
            .path()
            .join(format!(".checkpoint.{}.0.tmp", std::process::id()));
        symlink(&victim, &planted).unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_new_data_dir_is_private_and_a_loose_one_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("a/b/data");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = ensure_private_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("writable by group and others"), "{err}");
        assert!(
            err.contains(&format!("chmod 700 {}", dir.display())),
            "{err}"
        );
        // Reading someone's loose directory is refused too: it may have been rewritten.
        assert!(check_private(&dir, Use::Read).is_err());
    }

    #[test]
    fn a_data_dir_owned_by_another_user_is_refused_for_writing() {
        if effective_uid() != 0 {
            eprintln!("a_data_dir_owned_by_another_user_is_refused: skipped: needs root to chown");
            return;
        }
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("data");
        ensure_private_dir(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(4242), None).unwrap();
        let err = ensure_private_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("owned by uid 4242"), "{err}");
        check_private(&dir, Use::Read).unwrap();
    }
}
