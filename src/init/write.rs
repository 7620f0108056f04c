//! Writing what `init` made: a new file 0600; over an existing one never. When the
//! file is there and differs (the project changed, or someone edited it, or both), the
//! new version goes beside it as `FILE.new` and the difference is shown, so hand
//! edits are never lost without a word.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::store::files;

/// What happened to one file.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// There was no file: it was written.
    New(PathBuf),
    /// The file holds exactly this already: nothing written.
    Unchanged(PathBuf),
    /// The file differs: the new version is beside it, with the difference.
    Beside {
        old: PathBuf,
        new: PathBuf,
        diff: String,
    },
}

impl Written {
    /// The file that holds the new text.
    pub fn path(&self) -> &Path {
        match self {
            Written::New(path) | Written::Unchanged(path) => path,
            Written::Beside { new, .. } => new,
        }
    }
}

/// `FILE.new` beside `FILE`.
pub fn beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".new");
    path.with_file_name(name)
}

/// Writes `text` to `path` (0600), or beside it when `path` holds something else.
/// A missing folder is made 0700.
pub fn write(path: &Path, text: &str) -> Result<Written> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
    }
    let old = match std::fs::symlink_metadata(path) {
        Ok(_) => {
            let mut file = files::open_read(path)?;
            let mut old = String::new();
            std::io::Read::read_to_string(&mut file, &mut old)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Some(old)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
    };
    match old {
        None => {
            files::write_private(path, text.as_bytes())?;
            Ok(Written::New(path.to_path_buf()))
        }
        Some(old) if old == text => Ok(Written::Unchanged(path.to_path_buf())),
        Some(old) => {
            let new = beside(path);
            files::write_private(&new, text.as_bytes())?;
            let diff = similar::TextDiff::from_lines(old.as_str(), text)
                .unified_diff()
                .context_radius(2)
                .header(&path.display().to_string(), &new.display().to_string())
                .to_string();
            Ok(Written::Beside {
                old: path.to_path_buf(),
                new,
                diff,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_file_is_private_and_an_edited_one_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf").join("config.toml");
        assert_eq!(write(&path, "a = 1\n").unwrap(), Written::New(path.clone()));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(
            write(&path, "a = 1\n").unwrap(),
            Written::Unchanged(path.clone())
        );
        // A hand edit, then a rerun that would write something else.
        std::fs::write(&path, "a = 1\n# mine\n").unwrap();
        let Written::Beside { old, new, diff } = write(&path, "a = 2\n").unwrap() else {
            panic!("expected the new version beside the old");
        };
        assert_eq!(old, path);
        assert_eq!(new, dir.path().join("conf").join("config.toml.new"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\n# mine\n");
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "a = 2\n");
        assert_eq!(mode(&new), 0o600);
        assert!(diff.contains("-# mine\n"), "{diff}");
        assert!(diff.contains("+a = 2\n"), "{diff}");
    }
}
