//! Story A of PRODUCT.md: a ticketing app migrates a column on a Tuesday afternoon, the
//! CDC mover re-creates and refills the raw table, and the hourly dbt job would publish
//! pacing from half the orders.

pub mod estate;
pub mod world;

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

use super::Plot;
use crate::engine::api::ProposalKind;

/// The story's day: Tuesday 24 November 2026.
fn at(hour: u32, minute: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 24)
        .and_then(|d| d.and_hms_opt(hour, minute, 0))
        .expect("valid time")
}

/// Tuesday 14:00 to 15:10, a minute a turn, in about 70 seconds.
pub fn plot() -> Plot {
    Plot {
        name: "ticketing",
        warm_up: at(13, 30),
        start: at(14, 0),
        end: at(15, 10),
        turn: TimeDelta::minutes(1),
        speed: 60.0,
        owner_role: "analytics-owner",
        approves: &[ProposalKind::Hold, ProposalKind::Diff],
    }
}

pub fn build(dir: &std::path::Path, console_user: Option<&str>) -> anyhow::Result<()> {
    estate::build(dir, console_user).map(|_| ())
}

pub fn world(dir: &std::path::Path) -> Box<dyn super::scenario::World> {
    Box::new(world::Ticketing::new(estate::Estate {
        dir: dir.to_path_buf(),
    }))
}
