//! The engine wires the stages of the loop together: commands in, events out.

pub mod api;
