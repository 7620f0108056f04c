//! Whether a monitor pages nobody now: a person's snooze (kept in the state database)
//! or a `[[maintenance]]` window of the config. The engine asks before it opens an
//! incident or pages; `dataward check` asks before a breach fails its exit code.

use crate::clock::Timestamp;
use crate::config::{Config, OpenWindow};
use crate::store::quiet::Snooze;

/// Why a monitor pages nobody now.
#[derive(Debug, Clone, PartialEq)]
pub enum Quiet {
    /// A person's snooze, set by chain record `seq`.
    Snoozed {
        seq: u64,
        until: Timestamp,
        why: String,
    },
    /// A `[[maintenance]]` window of the config, open now.
    Maintenance(OpenWindow),
}

impl Quiet {
    pub fn until(&self) -> Timestamp {
        match self {
            Quiet::Snoozed { until, .. } => *until,
            Quiet::Maintenance(window) => window.end,
        }
    }

    /// "snoozed by alice: a planned purge", "maintenance: nightly reload".
    pub fn why(&self) -> String {
        match self {
            Quiet::Snoozed { why, .. } => why.clone(),
            Quiet::Maintenance(window) => format!("maintenance: {}", window.reason),
        }
    }
}

/// Why `monitor` (on `table`) pages nobody at `at`, if it does not: among the
/// `snoozes` still running then, the one that runs longest; else the open maintenance
/// window of `config` that ends last.
pub fn quiet_at(
    config: &Config,
    snoozes: &[Snooze],
    monitor: &str,
    table: &str,
    at: Timestamp,
) -> Option<Quiet> {
    let snoozed = snoozes
        .iter()
        .filter(|s| s.monitor == monitor && s.until > at)
        .max_by_key(|s| s.until);
    if let Some(s) = snoozed {
        let by = serde_json::from_str(&s.actor)
            .map(|actor| super::stop::display(&actor))
            .unwrap_or_default();
        return Some(Quiet::Snoozed {
            seq: s.seq,
            until: s.until,
            why: format!("snoozed by {by}: {}", s.reason),
        });
    }
    config
        .maintenance
        .iter()
        .filter(|w| w.covers(config, table))
        .filter_map(|w| w.open_at(at))
        .max_by_key(|w| w.end)
        .map(Quiet::Maintenance)
}
