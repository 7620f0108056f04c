//! Permissions: the config (the policy) and the data directory must be writable by
//! their owner alone, as `dataward serve` demands; a secret file must be readable by
//! its owner alone.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::Line;
use crate::config::{Config, SecretRef};
use crate::store::files::{check_private, check_private_config, Use};

pub fn check(config: &Config, data_dir: &Path) -> Vec<Line> {
    let mut lines = Vec::new();
    let origin = &config.origin;
    lines.push(match check_private_config(origin) {
        Ok(()) => Line::ok(
            "permissions",
            format!("{} {}", origin.display(), mode(origin)),
        ),
        Err(e) => Line::bad(
            "permissions",
            format!("{e:#}"),
            format!(
                "chmod 600 {} (and own it: it is the policy)",
                origin.display()
            ),
        ),
    });
    if let Some(notes) = config.lineage.as_ref().and_then(|l| l.notes.as_ref()) {
        let notes = config.resolve(notes);
        if notes.exists() {
            lines.push(match check_private_config(&notes) {
                Ok(()) => Line::ok(
                    "permissions",
                    format!("{} {}", notes.display(), mode(&notes)),
                ),
                Err(e) => Line::bad(
                    "permissions",
                    format!("{e:#}"),
                    format!("chmod 600 {}", notes.display()),
                ),
            });
        }
    }
    for (name, alert) in config.alert_destinations() {
        if let Some(SecretRef::File(path)) = alert.secret() {
            let path = config.resolve(&path);
            lines.push(match crate::notify::check_secret_file(&path) {
                Ok(()) => Line::ok(
                    "permissions",
                    format!("{} {} (alert {name})", path.display(), mode(&path)),
                ),
                Err(e) => Line::bad(
                    "permissions",
                    format!("alert {name}: {e:#}"),
                    format!("chmod 600 {}", path.display()),
                ),
            });
        }
    }
    lines.extend(data_dir_line(data_dir));
    lines
}

pub fn data_dir(dir: &Path) -> Vec<Line> {
    data_dir_line(dir).into_iter().collect()
}

fn data_dir_line(dir: &Path) -> Option<Line> {
    if !dir.exists() {
        return Some(Line::ok(
            "permissions",
            format!(
                "data directory {} does not exist yet (dataward serve makes it 0700)",
                dir.display()
            ),
        ));
    }
    Some(match check_private(dir, Use::Write) {
        Ok(()) => Line::ok(
            "permissions",
            format!("data directory {} {}", dir.display(), mode(dir)),
        ),
        Err(e) => Line::bad(
            "permissions",
            format!("{e:#}"),
            format!("chmod 700 {} (as its owner)", dir.display()),
        ),
    })
}

/// `(0600)`, as found.
fn mode(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(meta) => format!("({:04o})", meta.mode() & 0o7777),
        Err(_) => String::new(),
    }
}
