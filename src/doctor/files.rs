//! Permissions: the config (the policy) and the data directory must be writable by
//! their owner alone, as `dataward serve` demands, and readable by nobody else either,
//! as `init` and `serve` make them (the config 0600; the data directory 0700, or 0750
//! for the group `[serve] group` shares it with); a secret file must be readable by its
//! owner alone. The notes must be writable by their owner alone.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::Line;
use crate::config::{Config, SecretRef};
use crate::store::files::{check_policy_file, check_private, Use};

pub fn check(config: &Config, data_dir: &Path) -> Vec<Line> {
    let mut lines = Vec::new();
    let origin = &config.origin;
    lines.push(
        match check_policy_file(origin, "config").and_then(|()| unread(origin, 0o077)) {
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
        },
    );
    if let Some(notes) = config.lineage.as_ref().and_then(|l| l.notes.as_ref()) {
        let notes = config.resolve(notes);
        if notes.exists() {
            lines.push(match check_policy_file(&notes, "notes file") {
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
    lines.extend(data_dir_line(data_dir, config.serve.group.is_some()));
    lines
}

/// The data directory's line when the config could not be read (so whether the team
/// shares it through `[serve] group` is unknown: only others are judged).
pub fn data_dir(dir: &Path) -> Vec<Line> {
    data_dir_line(dir, true).into_iter().collect()
}

/// Refuses a file or directory that group or others may read (the bits of `mask`),
/// naming the path and the chmod that fixes it.
fn unread(path: &Path, mask: u32) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path)?;
    let mode = meta.mode() & 0o7777;
    if mode & mask == 0 {
        return Ok(());
    }
    let who = match (mode & mask & 0o070 != 0, mode & mask & 0o007 != 0) {
        (true, true) => "its group and others",
        (true, false) => "its group",
        _ => "others",
    };
    let (what, why, private) = if meta.is_dir() {
        (
            "data directory",
            "the state database in it holds every incident, decision and receipt",
            if mask & 0o070 == 0 { "750" } else { "700" },
        )
    } else {
        (
            "config",
            "it is the policy: who decides what, and where the credentials are",
            "600",
        )
    };
    anyhow::bail!(
        "the {what} {} can be read by {who} (mode {mode:o}); {why}. Run `chmod {private} {}`",
        path.display(),
        path.display()
    )
}

/// As `dataward serve` leaves it: 0700, or 0750 when `[serve] group` shares it.
fn data_dir_line(dir: &Path, shared: bool) -> Option<Line> {
    if !dir.exists() {
        return Some(Line::ok(
            "permissions",
            format!(
                "data directory {} does not exist yet (dataward serve makes it 0700)",
                dir.display()
            ),
        ));
    }
    let mask = if shared { 0o007 } else { 0o077 };
    Some(
        match check_private(dir, Use::Write).and_then(|()| unread(dir, mask)) {
            Ok(()) => Line::ok(
                "permissions",
                format!("data directory {} {}", dir.display(), mode(dir)),
            ),
            Err(e) => Line::bad(
                "permissions",
                format!("{e:#}"),
                format!(
                    "chmod {} {} (as its owner)",
                    if shared { "750" } else { "700" },
                    dir.display()
                ),
            ),
        },
    )
}

/// `(0600)`, as found.
fn mode(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(meta) => format!("({:04o})", meta.mode() & 0o7777),
        Err(_) => String::new(),
    }
}
