//! What a volume baseline must not learn from, and where it restarts: the days of the
//! incidents on a monitor, and the new levels people accepted. Read from the state
//! database at each poll, so a restart forgets neither. Likewise where the baselines
//! learned from dataward's own observations (row_count, null_rate) restart.

use std::ops::RangeInclusive;

use anyhow::{Context, Result};
use chrono::{Days, NaiveDate};

use crate::clock::Timestamp;
use crate::config::CheckKind;
use crate::detect::volume::Restart;
use crate::store::baselines::{IncidentSpan, LearnedRestart};
use crate::store::prelude::*;

/// What the state database says of a monitor's days.
#[derive(Debug, Default, PartialEq)]
pub struct Stored {
    /// See [`incident_days`].
    pub excluded: Vec<RangeInclusive<NaiveDate>>,
    /// The new levels accepted, oldest first.
    pub restarts: Vec<Restart>,
}

/// The incident days and accepted levels of `monitor`, read once for a poll's volume
/// check.
pub fn read(state: &dyn Store, monitor: &str, today: NaiveDate) -> Result<Stored> {
    let accepted = accepted(state, monitor)?;
    let mut excluded = incident_days(state, monitor, today, &accepted)?;
    excluded.extend(left_days(state, monitor)?);
    Ok(Stored {
        excluded,
        restarts: accepted.into_iter().map(|(_, restart)| restart).collect(),
    })
}

/// The days of every span that left `monitor`'s baselines (an incident marked
/// expected, a maintenance window): a day touched by one is not learned from.
fn left_days(state: &dyn Store, monitor: &str) -> Result<Vec<RangeInclusive<NaiveDate>>> {
    let mut days = Vec::new();
    for (from, to) in state.left_baselines(monitor)? {
        let (first, last) = (from.naive().date(), to.naive().date());
        if first <= last {
            days.push(first..=last);
        }
    }
    Ok(days)
}

/// Every incident on `monitor`, open or resolved, as the days it covers: from the day
/// its breach was about (or the day it opened) to the day it resolved (or `today`).
/// An incident whose new level was `accepted` ends the day before the level began: from
/// then on its days are the new normal.
fn incident_days(
    state: &dyn Store,
    monitor: &str,
    today: NaiveDate,
    accepted: &[(String, Restart)],
) -> Result<Vec<RangeInclusive<NaiveDate>>> {
    let mut spans = Vec::new();
    for span in state.incident_spans(monitor)? {
        let IncidentSpan {
            id,
            opened_at,
            day,
            resolved_at,
        } = span;
        let opened = opened_at.naive().date();
        let first = match day.as_deref().map(date_of).transpose() {
            Ok(Some(day)) => day.min(opened),
            _ => opened,
        };
        let mut last = resolved_at.map_or(today, |resolved| resolved.naive().date());
        for (incident, restart) in accepted {
            if *incident == id {
                last = last.min(restart.since - Days::new(1));
            }
        }
        if first <= last {
            spans.push(first..=last);
        }
    }
    Ok(spans)
}

/// Records that `incident`'s new level on `monitor` is the normal from `restart.since`
/// on. Called inside the transaction that puts the acceptance on the chain.
pub fn accept(
    state: &dyn Store,
    monitor: &str,
    incident: &str,
    restart: Restart,
    seq: u64,
) -> Result<()> {
    state.add_volume_restart(
        monitor,
        &restart.since.to_string(),
        restart.ratio,
        incident,
        seq,
    )?;
    Ok(())
}

fn accepted(state: &dyn Store, monitor: &str) -> Result<Vec<(String, Restart)>> {
    let mut out = Vec::new();
    for (incident, since, ratio) in state.volume_restarts(monitor)? {
        let since = date_of(&since).with_context(|| format!("the level {incident} accepted"))?;
        out.push((incident, Restart { since, ratio }));
    }
    Ok(out)
}

/// A run of breaches of a check whose band is learned from dataward's own observations
/// (row_count, a null_rate column): the latest judged observations, all out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct BreachRun {
    /// The run's first observation: the new baseline is learned from here on.
    pub since_id: i64,
    /// When it was taken.
    pub since_at: Timestamp,
    /// The run's last observation, the latest judged: the run's breaches up to here are
    /// the new normal, not outliers.
    pub through_id: i64,
    /// The latest figure: the level accepted.
    pub value: f64,
    /// The baseline it breached.
    pub baseline: Option<f64>,
}

/// The run of breaches the latest judged observations of `monitor`'s `check` (of the
/// column `subject`, or "") end in; None when the latest judged one is in range.
/// Observations the check could not take (a warehouse error, unknown) are skipped: they
/// neither break a run nor belong to it.
pub fn breach_run(
    state: &dyn Store,
    monitor: &str,
    check: CheckKind,
    subject: &str,
) -> Result<Option<BreachRun>> {
    let mut run: Option<BreachRun> = None;
    state.judged_newest_first(monitor, check, subject, &mut |judged| {
        if !judged.verdict.is_breach() {
            return false;
        }
        match &mut run {
            Some(run) => {
                run.since_id = judged.id;
                run.since_at = judged.at;
            }
            None => {
                run = Some(BreachRun {
                    since_id: judged.id,
                    since_at: judged.at,
                    through_id: judged.id,
                    value: judged.value,
                    baseline: judged.baseline,
                })
            }
        }
        true
    })?;
    Ok(run)
}

/// Records that `incident`'s breach run of `monitor`'s `check` (column `subject`) is
/// the new normal: its baseline is learned from the run on. Called inside the
/// transaction that puts the acceptance on the chain.
pub fn accept_learned(
    state: &dyn Store,
    monitor: &str,
    check: CheckKind,
    subject: &str,
    run: &BreachRun,
    incident: &str,
    seq: u64,
) -> Result<()> {
    state.add_learned_restart(&LearnedRestart {
        monitor,
        check,
        subject,
        since_id: run.since_id,
        through_id: run.through_id,
        value: run.value,
        incident,
        seq,
    })?;
    Ok(())
}

/// Where the learned baseline of `monitor`'s `check` (column `subject`) restarts: the
/// latest accepted run's (first, last) observation ids; (0, 0) when none was accepted.
pub fn learned_restart(
    state: &dyn Store,
    monitor: &str,
    check: CheckKind,
    subject: &str,
) -> Result<(i64, i64)> {
    Ok(state
        .learned_restart(monitor, check, subject)?
        .unwrap_or((0, 0)))
}

/// The date "2024-05-11" (a day a volume breach named, a day a level was accepted from).
fn date_of(text: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").with_context(|| format!("{text:?} is not a date"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Connection;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 10, d).unwrap()
    }

    fn incident(state: &Connection, id: &str, monitor: &str, doc: serde_json::Value) {
        let mut doc = doc;
        doc["monitor"] = monitor.into();
        state
            .execute(
                "INSERT INTO incident (id, status, doc) VALUES (?1, 'open', ?2)",
                rusqlite::params![id, doc.to_string()],
            )
            .unwrap();
    }

    #[test]
    fn an_incident_covers_its_days_until_it_resolved_or_its_new_level_began() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        // About the day before it opened, resolved two days later.
        incident(
            &state,
            "INC-0001",
            "orders",
            serde_json::json!({"opened_at": "2026-10-05T06:00:00Z", "day": "2026-10-04",
                               "resolved_at": "2026-10-07T09:00:00Z"}),
        );
        // Still open.
        incident(
            &state,
            "INC-0002",
            "orders",
            serde_json::json!({"opened_at": "2026-10-20T06:00:00Z"}),
        );
        // Another monitor's.
        incident(
            &state,
            "INC-0003",
            "payments",
            serde_json::json!({"opened_at": "2026-10-10T06:00:00Z"}),
        );
        assert_eq!(
            read(&state, "orders", day(25)).unwrap().excluded,
            vec![day(4)..=day(7), day(20)..=day(25)]
        );
        // Its new level accepted from the 18th: the shift's days are the new normal.
        let restart = Restart {
            since: day(18),
            ratio: 1.6,
        };
        accept(&state, "orders", "INC-0002", restart, 7).unwrap();
        let orders = read(&state, "orders", day(25)).unwrap();
        assert_eq!(orders.excluded, vec![day(4)..=day(7)]);
        assert_eq!(orders.restarts, vec![restart]);
        assert!(read(&state, "payments", day(25))
            .unwrap()
            .restarts
            .is_empty());
    }

    fn observe(state: &Connection, subject: &str, value: Option<f64>, verdict: &str, health: &str) {
        state
            .execute(
                "INSERT INTO observation
                   (monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
                 VALUES ('customers', 'customers', 'null_rate', '2026-10-05T06:00:00Z',
                         ?1, '{\"expected\":{\"low\":0.0,\"high\":0.02,\"baseline\":0.0}}',
                         ?2, ?3, ?4)",
                rusqlite::params![value, verdict, health, subject],
            )
            .unwrap();
    }

    #[test]
    fn a_breach_run_is_the_latest_breaches_and_a_failed_check_does_not_break_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::store::open(&dir.path().join("state.db")).unwrap();
        let run = |subject| breach_run(&state, "customers", CheckKind::NullRate, subject).unwrap();
        observe(&state, "email", Some(0.0), "ok", "ok"); // 1
        observe(&state, "email", Some(0.4), "high", "ok"); // 2
        observe(&state, "email", Some(0.0), "ok", "ok"); // 3: the run before ended
        observe(&state, "email", Some(0.5), "high", "ok"); // 4
        observe(&state, "email", None, "unknown", "unreachable"); // 5
        observe(&state, "phone", Some(0.0), "ok", "ok"); // 6: another column
        observe(&state, "email", Some(0.6), "high", "ok"); // 7
        let email = run("email").expect("a run");
        assert_eq!((email.since_id, email.through_id), (4, 7));
        assert_eq!(email.value, 0.6);
        assert_eq!(email.baseline, Some(0.0));
        assert_eq!(run("phone"), None);

        // Accepted: the baseline restarts at the run; other columns keep theirs.
        assert_eq!(
            learned_restart(&state, "customers", CheckKind::NullRate, "email").unwrap(),
            (0, 0)
        );
        accept_learned(
            &state,
            "customers",
            CheckKind::NullRate,
            "email",
            &email,
            "INC-0001",
            9,
        )
        .unwrap();
        assert_eq!(
            learned_restart(&state, "customers", CheckKind::NullRate, "email").unwrap(),
            (4, 7)
        );
        assert_eq!(
            learned_restart(&state, "customers", CheckKind::NullRate, "phone").unwrap(),
            (0, 0)
        );
    }
}
