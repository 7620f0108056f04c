//! dataward: watch what lands, open incidents with their cause, show the blast radius,
//! propose fixes, let a named owner decide, and keep every decision on a hash chain.
//!
//! This crate is the binary's layer: the command line, the engine's socket side (serve,
//! attach, the hub that fans changes out to consoles), the console, the demo, `init` and
//! `doctor`. The domain is `dataward_core`, the protocol `dataward_api`; both are
//! re-exported here so every layer is named from one root.

pub use dataward_core::*;

pub mod cli;
pub mod console;
pub mod demo;
pub mod doctor;
pub mod init;

/// The engine as the domain builds it, with its socket side: the server, the hub, the
/// client a console attaches with.
pub mod engine {
    pub use dataward_core::engine::*;

    pub mod attach;
    pub mod cli;
    pub mod client;
    pub mod hub;
    pub mod leadership;
    pub mod live;
    pub mod openlineage;
    pub mod server;
    pub mod standby;
    pub mod what_happened;
}
