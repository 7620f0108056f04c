//! dataward's domain: watch what lands, open incidents with their cause, show the blast radius,
//! propose fixes, let a named owner decide, and keep every decision on a hash chain.

pub mod approve;
pub mod blocking;
pub mod chain;
pub mod clock;
pub mod config;
pub mod detect;
pub mod effects;
pub mod engine;
pub mod incident;
pub mod lineage;
pub mod logging;
pub mod migration;
pub mod monitor;
pub mod notify;
pub mod progress;
pub mod propose;
pub mod sanitize;
pub mod signals;
pub mod store;
pub mod warehouse;
