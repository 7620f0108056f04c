//! Logs go through `tracing` to `dataward.log` in the XDG state directory, or to stderr
//! when asked; never to stdout, where the console draws. `DATAWARD_LOG` filters them
//! (`info` by default; `warn,dataward::engine=debug` and the like).
//!
//! Every engine an account runs shares that file, one per data directory, so every
//! line starts with the data directory of the process that wrote it:
//! `[/srv/dataward/prod] 2026-12-02T10:00:00Z  INFO ...`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, Context, Result};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub const LOG_FILE: &str = "dataward.log";
pub const FILTER_ENV: &str = "DATAWARD_LOG";

/// What the first successful `init` installed: `Some(path)` for a file, `None` for
/// stderr. A process has one global logger.
static INSTALLED: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);

/// Installs the process's logger: to `dataward.log` in the state directory (returned),
/// or to stderr with `to_stderr` (returns `None`), each line naming `data_dir`. The
/// first successful call decides; calling again changes nothing and returns what the
/// first installed, so a library caller and `main` may both call it.
pub fn init(to_stderr: bool, data_dir: &Path) -> Result<Option<PathBuf>> {
    let mut installed = INSTALLED.lock().map_err(|_| anyhow!("logging lock"))?;
    if let Some(first) = installed.as_ref() {
        return Ok(first.clone());
    }
    let filter = filter()?;
    let layer = tracing_subscriber::fmt::layer().with_target(true);
    let tag = format!(
        "[{}] ",
        crate::sanitize::for_terminal(&data_dir.display().to_string())
    );
    let (result, path) = if to_stderr {
        let layer = layer.with_writer(Tagged {
            tag,
            inner: || crate::sanitize::MaskingWriter(std::io::stderr()),
        });
        (
            tracing_subscriber::registry()
                .with(filter)
                .with(layer)
                .try_init(),
            None,
        )
    } else {
        let path = log_path()?;
        let file = open_log(&path)?;
        let file = std::sync::Arc::new(Mutex::new(file));
        let layer = layer.with_writer(Tagged {
            tag,
            inner: move || crate::sanitize::MaskingWriter(SharedFile(file.clone())),
        });
        (
            tracing_subscriber::registry()
                .with(filter)
                .with(layer)
                .try_init(),
            Some(path),
        )
    };
    result.map_err(|e| anyhow!("cannot install the logger: {e}"))?;
    *installed = Some(path.clone());
    Ok(path)
}

/// A writer whose every line starts with `tag`.
struct Tagged<W> {
    tag: String,
    inner: W,
}

impl<'a, W: MakeWriter<'a>> MakeWriter<'a> for Tagged<W> {
    type Writer = TaggedEvent<'a, W::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        TaggedEvent {
            tag: &self.tag,
            inner: self.inner.make_writer(),
            text: Vec::new(),
        }
    }
}

/// One event's text, gathered and written in one piece when the event is done, so a
/// line of one engine is never split by another's.
struct TaggedEvent<'a, W: std::io::Write> {
    tag: &'a str,
    inner: W,
    text: Vec<u8>,
}

impl<W: std::io::Write> std::io::Write for TaggedEvent<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: std::io::Write> Drop for TaggedEvent<'_, W> {
    fn drop(&mut self) {
        let mut out = Vec::with_capacity(self.text.len() + self.tag.len());
        for line in self.text.split_inclusive(|b| *b == b'\n') {
            out.extend_from_slice(self.tag.as_bytes());
            out.extend_from_slice(line);
        }
        // A log line that cannot be written has nowhere else to go.
        let _ = self.inner.write_all(&out);
        let _ = self.inner.flush();
    }
}

fn filter() -> Result<Targets> {
    match std::env::var(FILTER_ENV) {
        Ok(text) if !text.trim().is_empty() => text
            .parse()
            .map_err(|e| anyhow!("{FILTER_ENV}={text:?} is not a log filter: {e}")),
        _ => Ok(Targets::new().with_default(tracing::Level::INFO)),
    }
}

/// `dataward.log` in the XDG state directory (`~/.local/state/dataward`). Where the
/// platform has none (macOS), dataward's data directory instead.
pub fn log_path() -> Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "dataward")
        .context("no home directory to put the log in; use --log-stderr")?;
    let dir = dirs.state_dir().unwrap_or(dirs.data_dir());
    Ok(dir.join(LOG_FILE))
}

/// Opens the log for appending: its directory created 0700 (and refused when others
/// can write it), the file 0600, never through a symlink.
pub fn open_log(path: &Path) -> Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::store::files::ensure_private_dir(dir)?;
    }
    crate::store::files::open_append(path)
}

/// The log file, shared by every writer the logger makes: one line at a time.
struct SharedFile(std::sync::Arc<Mutex<std::fs::File>>);

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn the_log_is_0600_appended_and_never_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join(LOG_FILE);
        writeln!(open_log(&path).unwrap(), "one").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        writeln!(open_log(&path).unwrap(), "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");

        // A log someone left readable is made private.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        open_log(&path).unwrap();
        assert_eq!(mode(&path), 0o600);

        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let planted = dir.path().join("state").join("planted.log");
        symlink(&victim, &planted).unwrap();
        let err = open_log(&planted).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn init_twice_keeps_the_first_logger() {
        // The only test in this crate that installs the global logger: stderr, so it
        // leaves nothing in the user's state directory.
        let data = Path::new("/data");
        assert_eq!(init(true, data).unwrap(), None);
        tracing::info!("logged to stderr");
        assert_eq!(
            init(false, data).unwrap(),
            None,
            "the second call changes nothing"
        );
        assert_eq!(init(true, data).unwrap(), None);
    }
}
