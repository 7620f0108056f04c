//! What opens over a screen, a file each: the key help, the reason box a decision is
//! typed in, and the alert outbox. The `:` and `/` prompts take the hints bar
//! (`bars.rs`).

pub mod alerts;
pub mod reason;
