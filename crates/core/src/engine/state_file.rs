//! The state database file the engine opened, held to the one at its path. Deleted or
//! replaced while the engine runs, the open connection would go on writing to a file
//! nobody will ever read again: every decision accepted then would vanish. So the
//! engine looks before every transaction and after every commit, and once the file is
//! gone it accepts nothing more, and says so on every console's top line and in the log.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::store::Store;
use anyhow::Result;

use super::api::{Refusal, RefusalKind};
use super::Engine;

/// The state database's path and its (device, inode) when the engine opened it.
pub(super) type OpenedFile = Option<(PathBuf, u64, u64)>;

pub(super) fn opened_file(state: &dyn Store) -> OpenedFile {
    let path = state.database_path()?;
    let meta = std::fs::metadata(&path).ok()?;
    Some((path, meta.dev(), meta.ino()))
}

impl Engine {
    /// Refuses, with why, once the state database is no longer the file the engine
    /// opened (see the module's comment).
    pub(super) fn ensure_database(&mut self) -> Result<()> {
        if self.database_alarm.is_none() {
            if let Some((path, dev, ino)) = &self.database_file {
                let gone = match std::fs::metadata(path) {
                    Ok(meta) if (meta.dev(), meta.ino()) == (*dev, *ino) => None,
                    Ok(_) => Some("was replaced by another file"),
                    Err(_) => Some("was deleted"),
                };
                if let Some(what) = gone {
                    let alarm = format!(
                        "STATE DATABASE GONE: {} {what} while the engine ran; nothing is \
                         accepted (it would be lost). Stop the engine, restore the file from a \
                         backup or start afresh, and start it again",
                        path.display()
                    );
                    tracing::error!("{alarm}");
                    self.notices.push(alarm.clone());
                    self.database_alarm = Some(alarm);
                }
            }
        }
        match &self.database_alarm {
            Some(alarm) => Err(Refusal::new(RefusalKind::Failed, alarm.clone()).into()),
            None => Ok(()),
        }
    }
}
