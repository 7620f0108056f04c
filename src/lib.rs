//! dataward: watch what lands, open incidents with their cause, show the blast radius,
//! propose fixes, let a named owner decide, and keep every decision on a hash chain.

pub mod console;
pub mod engine;
pub mod sanitize;
