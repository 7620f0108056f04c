//! What opens over a screen, a file each, each owning its state and taking the keys
//! before the screen does: the reason box a decision is typed in, the alert outbox, and
//! the `:` command line and `/` filter (drawn on the hints bar). The key help is one
//! too; it stays at `console/help.rs`, whose module path names its screen snapshot.

pub mod alerts;
pub mod prompt;
pub mod reason;
