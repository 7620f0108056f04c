//! OpenLineage in, for `dataward serve`: the HTTP listener (`http.rs`, on loopback TCP
//! and/or a Unix socket) and the file tail (`tail.rs`), each on threads of their own,
//! handing events to the hub for the engine to keep. Started from the `[openlineage]`
//! section as it is at start; a reload that changes it takes effect at the next start.

mod http;
mod tail;

use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc::Sender;

use anyhow::{Context, Result};

pub use http::{MAX_BODY, PATH};

use super::hub::HubMessage;
use super::Engine;
use crate::config::Config;

/// Bind what the config names and start its threads. A listener that cannot bind is an
/// error naming the key: serve does not start half-listening.
pub fn start(config: &Config, engine: &Engine, hub: Sender<HubMessage>) -> Result<()> {
    let Some(ol) = &config.openlineage else {
        return Ok(());
    };
    let origin = config.origin.display();
    if ol.listen.is_some() || ol.socket.is_some() {
        let token = ol.token().with_context(|| {
            format!("{origin}: openlineage.token_env: the token's variable is not set")
        })?;
        let intake = http::Intake::start(ol.queue, token, hub.clone())?;
        if let Some(addr) = ol.listen_addr() {
            let listener = std::net::TcpListener::bind(addr).with_context(|| {
                format!("{origin}: openlineage.listen: cannot listen on {addr}")
            })?;
            let intake = intake.clone();
            std::thread::Builder::new()
                .name("dataward-openlineage-accept".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        match conn {
                            Ok(conn) => intake.take(Box::new(conn)),
                            Err(e) => refused_accept(&e),
                        }
                    }
                })?;
            tracing::info!("OpenLineage events in on http://{addr}{PATH}");
        }
        if let Some(socket) = &ol.socket {
            let path = config.resolve(socket);
            // A socket left by a server that died; anything else there is not ours.
            if std::fs::symlink_metadata(&path)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
            {
                let _ = std::fs::remove_file(&path);
            }
            let listener = std::os::unix::net::UnixListener::bind(&path).with_context(|| {
                format!(
                    "{origin}: openlineage.socket: cannot listen on {}",
                    path.display()
                )
            })?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            std::thread::Builder::new()
                .name("dataward-openlineage-socket".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        match conn {
                            Ok(conn) => intake.take(Box::new(conn)),
                            Err(e) => refused_accept(&e),
                        }
                    }
                })?;
            tracing::info!("OpenLineage events in on {}", path.display());
        }
    }
    if let Some(file) = &ol.file {
        let path = config.resolve(file);
        let from = engine.lineage_file_position(&path.display().to_string())?;
        tail::start(path.clone(), from, hub)?;
        tracing::info!(
            "OpenLineage events in from {} (from line {})",
            path.display(),
            from.lines + 1
        );
    }
    Ok(())
}

/// An accept that failed (out of file descriptors, say): logged, and a pause before the
/// next, so the loop does not spin on it.
fn refused_accept(e: &std::io::Error) {
    tracing::warn!("OpenLineage listener: accept failed: {e}");
    std::thread::sleep(std::time::Duration::from_millis(100));
}
