//! Run the console against the fixture snapshot, with no engine: for trying keys and
//! themes by hand and for end-to-end tests in tmux. The commands of the requests the
//! console sends are printed after it exits. `--read-only` and `--theme NAME` are passed through.

use std::sync::mpsc;

use dataward::console::{self, fixtures, ConsoleLink, ConsoleOptions};
use dataward::engine::api::{ClientMessage, ServerMessage};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let read_only = args.iter().any(|arg| arg == "--read-only");
    let theme_name = args
        .iter()
        .position(|arg| arg == "--theme")
        .and_then(|at| args.get(at + 1).cloned());
    let (to_engine, sent) = mpsc::channel();
    let (snapshots, received) = mpsc::channel();
    snapshots.send(ServerMessage::Snapshot(Box::new(
        fixtures::sample_snapshot(),
    )))?;
    // Keep the sender alive so the console shows a running engine, unless asked not to.
    let engine = (!args.iter().any(|arg| arg == "--stopped")).then_some(snapshots);
    console::run(
        ConsoleLink {
            to_engine,
            from_engine: received,
        },
        ConsoleOptions {
            read_only,
            theme: None,
            theme_name,
        },
    )?;
    drop(engine);
    for message in sent.try_iter() {
        if let ClientMessage::Request(request) = message {
            println!("{}", serde_json::to_string(&request.command)?);
        }
    }
    Ok(())
}
