//! Driving an engine for a console: the console sends commands, the engine answers
//! with a fresh snapshot after every change. Shared by the demo and the live console;
//! only where time comes from differs.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use anyhow::Result;

use super::api::{Command, Event, Snapshot};
use super::Engine;
use crate::approve::Actor;

/// Handles commands until `deadline`. Returns false when the console has gone (its
/// command channel closed), true when the deadline came.
pub fn serve_until(
    engine: &mut Engine,
    commands: &Receiver<Command>,
    actor: &Actor,
    deadline: Instant,
    emit: &mut dyn FnMut(&Event),
    snapshots: Option<&Sender<Snapshot>>,
    finished: bool,
) -> bool {
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match commands.recv_timeout(wait) {
            Ok(command) => {
                for event in engine.handle(command, actor) {
                    emit(&event);
                }
                publish(engine, snapshots, finished);
            }
            Err(RecvTimeoutError::Timeout) => return true,
            Err(RecvTimeoutError::Disconnected) => {
                if snapshots.is_some() {
                    return false;
                }
                // Headless: nobody sends commands; just let the time pass.
                std::thread::sleep(wait);
                return true;
            }
        }
    }
}

pub fn publish(engine: &Engine, snapshots: Option<&Sender<Snapshot>>, finished: bool) {
    if let Some(tx) = snapshots {
        let _ = tx.send(engine.snapshot(finished));
    }
}

/// Runs `drive` (the engine's clock) on its own thread and the console on this one,
/// and returns when the console quits and the engine has stopped.
pub fn with_console(
    read_only: bool,
    drive: impl FnOnce(Receiver<Command>, Sender<Snapshot>) -> Result<()> + Send + 'static,
) -> Result<()> {
    let (command_tx, command_rx) = mpsc::channel::<Command>();
    let (snapshot_tx, snapshot_rx) = mpsc::channel::<Snapshot>();
    let engine_thread = std::thread::spawn(move || drive(command_rx, snapshot_tx));
    let link = crate::console::ConsoleLink {
        commands: command_tx,
        snapshots: snapshot_rx,
    };
    let console = crate::console::run(
        link,
        crate::console::ConsoleOptions {
            read_only,
            theme: None,
            theme_name: None,
        },
    );
    let engine = match engine_thread.join() {
        Ok(result) => result,
        Err(_) => Err(anyhow::anyhow!("the engine thread panicked")),
    };
    console.and(engine)
}
