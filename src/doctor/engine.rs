//! The engine's socket: an engine serving the data directory answers a read-only hello;
//! none running is fine (a console or `dataward serve` starts one); a socket nobody
//! answers on, or one that refuses us, is a ✗.

use std::path::Path;

use super::Line;
use crate::engine::client::Client;

pub fn check(data_dir: &Path) -> Vec<Line> {
    let socket = data_dir.join("dataward.sock");
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
            format!("{} exists but no engine answers on it", socket.display()),
            "start it with `dataward serve` (a stale socket is replaced), or remove the socket",
        ),
        Ok(None) => Line::ok(
            "engine",
            format!(
                "none runs on {} (`dataward serve` or the console starts one)",
                socket.display()
            ),
        ),
        Err(e) => Line::bad(
            "engine",
            format!("{e:#}"),
            "the engine refused this account: see [serve] group and [people] in the config",
        ),
    };
    vec![line]
}
