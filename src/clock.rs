//! Time in dataward: the one type a stored or sent time has ([`Timestamp`], the
//! protocol's), and the one clock everything that schedules reads ([`Clock`]).

pub use crate::engine::api::time::{BadTimestamp, Timestamp, FORMAT};

use chrono::NaiveDateTime;

pub fn timestamp(at: NaiveDateTime) -> String {
    Timestamp::from_naive(at).to_string()
}
