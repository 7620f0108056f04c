//! `dataward snooze MONITOR|INCIDENT DURATION --reason TEXT`: the duration read here (a
//! bad one is bad input, exit 2, before anything is sent); whether it is allowed (at most
//! a week, by the owner) the engine decides, as for every decision.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::engine::api::Command;

pub fn snooze(
    data_dir: &Path,
    config: Option<&Path>,
    target: String,
    duration: &str,
    reason: String,
) -> Result<ExitCode> {
    let seconds = crate::config::parse_duration(duration)
        .map_err(|e| anyhow::anyhow!("snooze DURATION: {e}"))?
        .as_secs();
    crate::engine::cli::decide(
        data_dir,
        config,
        Command::Snooze {
            target,
            seconds,
            reason,
        },
    )
}
