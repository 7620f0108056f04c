//! How dataward writes a time it stores or sends: one format, one function, below every
//! module that needs it (the chain, approvals, incidents, the engine).

use chrono::NaiveDateTime;

/// RFC 3339 in UTC, to the second.
pub const FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

pub fn timestamp(at: NaiveDateTime) -> String {
    at.format(FORMAT).to_string()
}
