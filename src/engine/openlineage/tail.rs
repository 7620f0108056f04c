//! Tailing a file transport's JSONL on a thread of its own: each read (bounded, from
//! where the last one ended) goes to the engine with the position after it, and the
//! engine keeps both in one transaction, so a restart, even after kill -9, goes on from
//! the last committed read: no event lost, none kept twice. A bad line is logged with
//! its file and line and skipped.

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Duration;

use super::super::hub::HubMessage;
use crate::engine::lineage_in::EventBatch;
use crate::lineage::openlineage::{read_from, Limits, Position};

/// How often the file is looked at when the last read found nothing new.
const IDLE: Duration = Duration::from_millis(500);

pub fn start(path: PathBuf, from: Position, hub: Sender<HubMessage>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("dataward-openlineage-file".into())
        .spawn(move || follow(path, from, hub))?;
    Ok(())
}

fn follow(path: PathBuf, mut at: Position, hub: Sender<HubMessage>) {
    let name = path.display().to_string();
    let mut missing_said = false;
    loop {
        let read = match read_from(&path, at, Limits::default()) {
            Ok(read) => {
                missing_said = false;
                read
            }
            Err(e) => {
                // Not written yet, or rotated away for a moment: look again later.
                if !missing_said {
                    tracing::warn!("{e}");
                    missing_said = true;
                }
                std::thread::sleep(IDLE);
                continue;
            }
        };
        if read.restarted {
            tracing::info!("{name} was truncated or replaced: read again from its start");
        }
        for refused in &read.refused {
            tracing::warn!("OpenLineage event skipped: {refused}");
        }
        if read.next != at {
            let batch = EventBatch {
                events: read
                    .events
                    .into_iter()
                    .map(|(line, event)| (format!("{name}:{line}"), event))
                    .collect(),
                file: Some((name.clone(), read.next)),
            };
            let (reply, stored) = std::sync::mpsc::channel();
            if hub.send(HubMessage::Lineage(batch, reply)).is_err() {
                return;
            }
            match stored.recv() {
                Ok(Ok(_)) => at = read.next,
                Ok(Err(e)) => {
                    // Not kept: the same lines are read again.
                    tracing::warn!("OpenLineage events from {name} not stored: {e:#}");
                    std::thread::sleep(IDLE);
                }
                Err(_) => return,
            }
        }
        if !read.limited {
            std::thread::sleep(IDLE);
        }
    }
}
