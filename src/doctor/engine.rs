//! The engine's socket: an engine serving the data directory answers a read-only hello;
//! none running is fine (a console or `dataward serve` starts one); a socket nobody
//! answers on (left by an engine that died), a file in its place that is not a socket,
//! or an engine that refuses us, is a ✗; an engine standing by for its team, saying
//! who leads, is fine.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use super::Line;
use crate::engine::client::Client;

pub fn check(data_dir: &Path) -> Vec<Line> {
    let socket = data_dir.join("dataward.sock");
    if let Ok(meta) = std::fs::symlink_metadata(&socket) {
        if !meta.file_type().is_socket() {
            return vec![Line::bad(
                "engine",
                format!(
                    "{} exists and is not a socket: dataward serve will refuse to start",
                    socket.display()
                ),
                format!(
                    "rm {} (if you did not put it there), then start the engine",
                    socket.display()
                ),
            )];
        }
    }
    let standing_by = |e: &anyhow::Error| {
        e.downcast_ref::<crate::engine::api::Refusal>()
            .filter(|refusal| crate::engine::standby::is_standby(refusal))
            .map(|refusal| refusal.message.clone())
    };
    let line = match Client::connect(data_dir, true) {
        Ok(Some(client)) => Line::ok(
            "engine",
            format!(
                "answers on {} (started {}; you are {})",
                socket.display(),
                client.started_at,
                client.you
            ),
        ),
        Ok(None) if socket.exists() => Line::bad(
            "engine",
            format!(
                "{} exists but no engine answers on it: the engine that made it stopped without removing it (killed, or crashed: see its log)",
                socket.display()
            ),
            "start it again with `dataward serve` (it replaces a stale socket)",
        ),
        Ok(None) => Line::ok(
            "engine",
            format!(
                "none runs on {} (`dataward serve` or the console starts one)",
                socket.display()
            ),
        ),
        Err(e) => match standing_by(&e) {
            Some(said) => Line::ok("engine", format!("{}: {said}", socket.display())),
            None => Line::bad(
                "engine",
                format!("{e:#}"),
                "the engine refused this account: name it under [people] in the engine's config (or set [serve] observers = true to attach read-only), and with [serve] group be in that group",
            ),
        },
    };
    vec![line]
}
