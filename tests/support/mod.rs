//! Shared helpers for the integration tests and benchmarks.

pub mod dbt;
pub mod estate;
pub mod pg;
pub mod team;
