//! Commands that print to a terminal and may ask the engine serving the data directory
//! (over its socket) before reading the state database themselves.

pub mod chain;
pub mod feedback;
pub mod lineage;
pub mod migration;
pub mod outbox;
