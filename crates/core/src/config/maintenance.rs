//! `[[maintenance]]`: planned work (a backfill, a reload, a migration) during which a
//! table's breaches are recorded and shown but page nobody, and its points leave the
//! baselines. A window is a `start` and an `end`, or a `cron` line and a `duration`
//! (every Sunday 02:00 for 3 hours: `cron = "0 2 * * 0"`, `duration = "3h"`); it covers
//! `tables` (globs, as domains' `covers`) and the tables of `domains`.

use chrono::{Datelike, NaiveDateTime, TimeDelta, Timelike};
use serde::Deserialize;

use super::{duration_key, Bad, Config};
use crate::clock::Timestamp;

/// The longest a window may last: as long as the longest snooze. Anything longer is no
/// maintenance but a monitor to turn off.
pub const MAX_WINDOW: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceConfig {
    /// Globs over table names ('*' matches any run of characters).
    #[serde(default)]
    pub tables: Vec<String>,
    /// Domains by name: every table they cover.
    #[serde(default)]
    pub domains: Vec<String>,
    /// A one-off window: UTC, like 2026-03-01T02:00:00Z.
    pub start: Option<String>,
    pub end: Option<String>,
    /// A recurring window: five fields (minute hour day-of-month month day-of-week,
    /// UTC) for when it starts, and how long it lasts.
    pub cron: Option<String>,
    pub duration: Option<String>,
    /// Why: shown beside the quiet monitor and recorded with each breach it silences.
    pub reason: String,
}

/// A window open at some time: until when, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenWindow {
    pub start: Timestamp,
    pub end: Timestamp,
    pub reason: String,
}

impl MaintenanceConfig {
    /// Whether this window covers `table` (the policy's domains read from `config`).
    pub fn covers(&self, config: &Config, table: &str) -> bool {
        self.tables
            .iter()
            .any(|glob| crate::approve::glob_match(glob, table))
            || crate::approve::domain_for(config, table)
                .is_some_and(|domain| self.domains.contains(&domain.name))
    }

    /// The occurrence of this window open at `at` (start included, end not), if any.
    pub fn open_at(&self, at: Timestamp) -> Option<OpenWindow> {
        let window = |start: NaiveDateTime, end: NaiveDateTime| OpenWindow {
            start: Timestamp::from_naive(start),
            end: Timestamp::from_naive(end),
            reason: self.reason.clone(),
        };
        let at = at.naive();
        if let (Some(start), Some(end)) = (&self.start, &self.end) {
            let (start, end) = (Timestamp::parse(start).ok()?, Timestamp::parse(end).ok()?);
            return (start.naive() <= at && at < end.naive())
                .then(|| window(start.naive(), end.naive()));
        }
        let cron = Cron::parse(self.cron.as_deref()?).ok()?;
        let lasts = super::parse_duration(self.duration.as_deref()?).ok()?;
        let lasts = TimeDelta::from_std(lasts).ok()?;
        // The latest start at or before `at` within one duration back: minute by minute,
        // at most a week's minutes.
        let mut start = at.with_second(0)?;
        while at - start < lasts {
            if cron.matches(start) {
                return Some(window(start, start + lasts));
            }
            start -= TimeDelta::minutes(1);
        }
        None
    }
}

/// Every `[[maintenance]]` of `config` is well formed; the error names the key.
pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    for (index, window) in config.maintenance.iter().enumerate() {
        validate_one(config, index, window).map_err(|bad| {
            bad.at(
                text,
                &[super::Step::Key("maintenance"), super::Step::Index(index)],
            )
        })?;
    }
    Ok(())
}

fn validate_one(config: &Config, index: usize, w: &MaintenanceConfig) -> Result<(), Bad> {
    let at = format!("maintenance[{index}]");
    if w.reason.trim().is_empty() {
        return Err(Bad::key(
            "reason",
            format!("{at}: reason is empty: say why"),
        ));
    }
    if w.tables.is_empty() && w.domains.is_empty() {
        return Err(Bad::section(format!(
            "{at}: covers nothing: give tables = [...] or domains = [...]"
        )));
    }
    for domain in &w.domains {
        if !config.domain.iter().any(|d| &d.name == domain) {
            return Err(Bad::key(
                "domains",
                format!("{at}: no [[domain]] is named {domain:?}"),
            ));
        }
    }
    let one_off = w.start.is_some() || w.end.is_some();
    let recurring = w.cron.is_some() || w.duration.is_some();
    match (one_off, recurring) {
        (true, true) => {
            return Err(Bad::key(
                if w.cron.is_some() { "cron" } else { "duration" },
                format!("{at}: a window is start and end, or cron and duration, not both"),
            ))
        }
        (false, false) => {
            return Err(Bad::section(format!(
                "{at}: needs start and end, or cron and duration"
            )))
        }
        (true, false) => {
            let time = |key: &'static str, text: &Option<String>| -> Result<Timestamp, Bad> {
                let text = text
                    .as_deref()
                    .ok_or_else(|| Bad::section(format!("{at}: needs {key} as well")))?;
                Timestamp::parse(text.trim())
                    .map_err(|e| Bad::key(key, format!("{at}: {key}: {e}")))
            };
            let (start, end) = (time("start", &w.start)?, time("end", &w.end)?);
            if end <= start {
                return Err(Bad::key(
                    "end",
                    format!("{at}: end {end} is not after start {start}"),
                ));
            }
            if (end.naive() - start.naive()).to_std().unwrap_or_default() > MAX_WINDOW {
                return Err(Bad::key(
                    "end",
                    format!(
                        "{at}: the window lasts more than 7 days; split it or turn the monitor off"
                    ),
                ));
            }
        }
        (false, true) => {
            let cron = w
                .cron
                .as_deref()
                .ok_or_else(|| Bad::section(format!("{at}: needs cron as well")))?;
            Cron::parse(cron).map_err(|e| Bad::key("cron", format!("{at}: cron {cron:?}: {e}")))?;
            let duration = w
                .duration
                .as_deref()
                .ok_or_else(|| Bad::section(format!("{at}: needs duration as well")))?;
            duration_key("duration", &format!("{at}: duration"), duration, MAX_WINDOW)?;
        }
    }
    Ok(())
}

/// A five-field cron line (minute hour day-of-month month day-of-week), each field
/// `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a list of those. As in
/// cron, when both day fields are restricted a day matching either matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Cron {
    minutes: Vec<bool>,
    hours: Vec<bool>,
    days: Vec<bool>,
    months: Vec<bool>,
    weekdays: Vec<bool>,
    days_any: bool,
    weekdays_any: bool,
}

impl Cron {
    pub fn parse(text: &str) -> Result<Cron, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(format!(
                "has {} fields; cron has five (minute hour day-of-month month day-of-week)",
                fields.len()
            ));
        };
        let mut weekdays = field(weekday, "day-of-week", 0, 7)?;
        // 7 is Sunday too.
        if weekdays[7] {
            weekdays[0] = true;
        }
        Ok(Cron {
            minutes: field(minute, "minute", 0, 59)?,
            hours: field(hour, "hour", 0, 23)?,
            days: field(day, "day-of-month", 1, 31)?,
            months: field(month, "month", 1, 12)?,
            weekdays,
            days_any: day == "*",
            weekdays_any: weekday == "*",
        })
    }

    pub fn matches(&self, at: NaiveDateTime) -> bool {
        let day = self.days[at.day() as usize];
        let weekday = self.weekdays[at.weekday().num_days_from_sunday() as usize];
        let day_matches = match (self.days_any, self.weekdays_any) {
            (false, false) => day || weekday,
            _ => day && weekday,
        };
        self.minutes[at.minute() as usize]
            && self.hours[at.hour() as usize]
            && self.months[at.month() as usize]
            && day_matches
    }
}

/// One field as a table of the values it takes (indexed by value, 0..=max).
fn field(text: &str, name: &str, min: u32, max: u32) -> Result<Vec<bool>, String> {
    let mut on = vec![false; max as usize + 1];
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("{name}: step {step:?} is not a number above 0"))?;
                (range, step)
            }
            None => (item, 1),
        };
        let number = |t: &str| -> Result<u32, String> {
            t.parse::<u32>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| format!("{name}: {t:?} is not a number from {min} to {max}"))
        };
        let (low, high) = match range {
            "*" => (min, max),
            _ => match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(range)?;
                    (n, if step > 1 { max } else { n })
                }
            },
        };
        if low > high {
            return Err(format!("{name}: range {range:?} runs backwards"));
        }
        for value in (low..=high).step_by(step as usize) {
            on[value as usize] = true;
        }
    }
    Ok(on)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        Timestamp::parse(text).unwrap().naive()
    }

    #[test]
    fn a_cron_line_matches_its_minutes_only() {
        let sunday_two = Cron::parse("0 2 * * 0").unwrap();
        assert!(sunday_two.matches(at("2026-03-01T02:00:00Z")), "a Sunday");
        assert!(!sunday_two.matches(at("2026-03-02T02:00:00Z")), "a Monday");
        assert!(!sunday_two.matches(at("2026-03-01T02:01:00Z")));
        let every_quarter = Cron::parse("*/15 1-3 * * *").unwrap();
        assert!(every_quarter.matches(at("2026-03-04T03:45:00Z")));
        assert!(!every_quarter.matches(at("2026-03-04T04:00:00Z")));
        for bad in [
            "0 2 * *",
            "61 * * * *",
            "* * * * 8",
            "5-1 * * * *",
            "*/0 * * * *",
        ] {
            assert!(Cron::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_recurring_window_is_open_from_its_start_for_its_duration() {
        let window = MaintenanceConfig {
            tables: vec!["orders".into()],
            domains: vec![],
            start: None,
            end: None,
            cron: Some("0 2 * * 0".into()),
            duration: Some("3h".into()),
            reason: "weekly reload".into(),
        };
        let open = window
            .open_at(Timestamp::parse("2026-03-01T04:59:00Z").unwrap())
            .unwrap();
        assert_eq!(open.start.to_string(), "2026-03-01T02:00:00Z");
        assert_eq!(open.end.to_string(), "2026-03-01T05:00:00Z");
        for closed in [
            "2026-03-01T05:00:00Z",
            "2026-03-01T01:59:00Z",
            "2026-03-02T03:00:00Z",
        ] {
            assert_eq!(
                window.open_at(Timestamp::parse(closed).unwrap()),
                None,
                "{closed}"
            );
        }
    }
}
