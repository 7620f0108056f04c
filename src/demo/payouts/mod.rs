//! Story B of PRODUCT.md: every run is green and the courier payout file is still
//! short. A key rotation stops the event stream on Saturday afternoon; the nightly job
//! builds Saturday's batch short; a reload on Monday fixes raw but the microbatch
//! model's lookback never reaches Saturday again.

pub mod dbt;
pub mod estate;
pub mod world;

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

use super::Plot;
use crate::engine::api::ProposalKind;

fn at(day: u32, hour: u32, minute: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, day)
        .and_then(|d| d.and_hms_opt(hour, minute, 0))
        .expect("valid time")
}

/// Saturday 28 November 13:50: the stream's key is rotated.
pub fn key_rotated() -> NaiveDateTime {
    at(28, 13, 50)
}

/// Monday 30 November 01:15: the key is fixed and the error bucket replayed.
pub fn key_fixed() -> NaiveDateTime {
    at(30, 1, 15)
}

/// Saturday 12:00 to Monday 04:00, five minutes a turn, in about 80 seconds.
pub fn plot() -> Plot {
    Plot {
        name: "payouts",
        warm_up: at(28, 12, 0),
        start: at(28, 13, 30),
        end: at(30, 4, 0),
        turn: TimeDelta::minutes(5),
        speed: 1_800.0,
        owner_role: "payouts-owner",
        // Nobody was at the console over the weekend: on Monday the owner approves the
        // backfill and the lookback diff.
        approves: &[ProposalKind::Backfill, ProposalKind::Diff],
    }
}

pub fn build(dir: &std::path::Path, console_user: Option<&str>) -> anyhow::Result<()> {
    estate::build(dir, console_user, plot().warm_up).map(|_| ())
}

pub fn world(dir: &std::path::Path) -> Box<dyn super::scenario::World> {
    Box::new(world::Couriers::new(estate::Estate {
        dir: dir.to_path_buf(),
    }))
}
