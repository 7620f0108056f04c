//! Lookback gap: the model is short for a day its upstream now holds in full, and each
//! run of the model reaches back too little to read that day again (microbatch's
//! `lookback`, or the filter its SQL applies when incremental), so no scheduled run will
//! ever rebuild it. The upstream was fixed; the model was not.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;
use crate::lineage::{Anchor, Period, Window, WindowSource};

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    let model = facts.incremental.as_ref()?;
    let window = &model.window;
    if !beyond_reach(model, breach) {
        return None;
    }
    let day = breach.day.as_deref()?;
    let upstream: Vec<&ParentDay> = model.parents.iter().filter(|p| p.day == day).collect();
    let period = window.period?;
    let behind = periods_back(day, breach.at, period)?;
    let parents = upstream
        .iter()
        .map(|p| match p.share {
            Some(share) => format!(
                "{} holds {} rows ({share}% of the usual)",
                p.table,
                thousands(p.rows)
            ),
            None => format!("{} holds {} rows", p.table, thousands(p.rows)),
        })
        .collect::<Vec<_>>()
        .join(" and ");
    let unit = period.as_str();
    let (how, runs) = reach_text(window, unit);
    let missed = match period {
        Period::Hour => format!(
            "{day}, which began {} back, is never rebuilt in full",
            count(behind, unit)
        ),
        _ => format!("{day}, {} back, is never rebuilt", count(behind, unit)),
    };
    let cause = format!(
        "{model} is still short on {day} ({}, measured {}) while {parents} for that day: {model} {how}, so {runs} and {missed}",
        breach
            .share()
            .map(|s| format!("{s}% of the usual"))
            .unwrap_or_else(|| breach.amount(breach.value)),
        figure::when(breach.at),
        model = model.model,
    );
    let mut evidence = vec![breach.sentence()];
    evidence.extend(upstream.iter().map(|p| {
        format!(
            "{} on {day}: {} rows, back within its usual band",
            p.table,
            thousands(p.rows)
        )
    }));
    let others: Vec<String> = gap_days(facts).into_iter().filter(|d| d != day).collect();
    if !others.is_empty() {
        evidence.push(format!(
            "{} is short beyond the runs' reach on {} too",
            model.model,
            others.join(", ")
        ));
    }
    if let Some(missing) = model.missing.as_ref().filter(|m| m.day == day) {
        evidence.push(format!(
            "{} holds {} on {day} that {} has on no day{}",
            missing.from,
            missing.keys(),
            model.model,
            missing.across()
        ));
    }
    evidence.push(match &window.source {
        WindowSource::Microbatch { .. } => format!(
            "{} is a microbatch model: batch_size = {unit}, lookback = {}",
            model.model, window.lookback
        ),
        WindowSource::Filter { text, .. } => format!(
            "{} is incremental, not microbatch: under `is_incremental()` its SQL filters `{text}`",
            model.model
        ),
    });
    Some(Diagnosis::of(CauseKind::LookbackGap, cause, evidence))
}

/// Is `short` (a short day of the model) one its upstream holds in full while no
/// scheduled run reaches back to it any more?
fn beyond_reach(model: &IncrementalFacts, short: &Figure) -> bool {
    let window = &model.window;
    if short.check != CheckKind::Volume || short.verdict != VerdictKind::Low || short.partial {
        return false;
    }
    let Some(day) = short.day.as_deref() else {
        return false;
    };
    // A day before the first batch is one the model is not meant to hold.
    if before_begin(window, day) {
        return false;
    }
    let mut upstream = model.parents.iter().filter(|p| p.day == day).peekable();
    if upstream.peek().is_none() || !upstream.all(|p| p.ok) {
        return false;
    }
    // A scheduled run that still reaches it makes it no gap (yet).
    window
        .period
        .and_then(|period| periods_back(day, short.at, period))
        .is_some_and(|behind| behind > i64::from(window.lookback))
}

/// Every day a backfill must rebuild, oldest first: the breach's and each other short
/// day of the model that is beyond the runs' reach too.
pub fn gap_days(facts: &Facts) -> Vec<String> {
    let Some(model) = facts.incremental.as_ref() else {
        return Vec::new();
    };
    let mut days: Vec<String> = std::iter::once(&facts.breach)
        .chain(&facts.short_days)
        .filter(|f| beyond_reach(model, f))
        .filter_map(|f| f.day.clone())
        .collect();
    days.sort();
    days.dedup();
    days
}

/// How the window was found and what each run reads, in words: ("is built in daily
/// batches with lookback = 1", "each run rebuilds only the last 2 days").
fn reach_text(window: &Window, unit: &str) -> (String, String) {
    let lookback = window.lookback;
    let last = count(i64::from(lookback) + 1, unit);
    match &window.source {
        WindowSource::Microbatch { .. } => (
            format!(
                "is built in {} batches with lookback = {lookback}",
                if unit == "hour" { "hourly" } else { "daily" }
            ),
            format!("each run rebuilds only the last {last}"),
        ),
        WindowSource::Filter { text, anchor } => {
            let reach = match (lookback, anchor) {
                (0, Anchor::NewestRow) => "no further than the newest row it holds".to_string(),
                (0, Anchor::Now) => "no further than the day of each run".to_string(),
                (n, Anchor::NewestRow) => {
                    format!("{} from the newest row it holds", count(n.into(), unit))
                }
                (n, Anchor::Now) => format!("{} from the time of each run", count(n.into(), unit)),
            };
            let runs = match (lookback, anchor) {
                (0, Anchor::NewestRow) => {
                    "each run reads only rows newer than those it holds".to_string()
                }
                (0, Anchor::Now) => "each run reads only the day it runs on".to_string(),
                _ => format!("each run re-reads only the last {last}"),
            };
            (
                format!("is incremental and its filter `{text}` reaches back {reach}"),
                runs,
            )
        }
    }
}

/// "1 day", "2 days".
fn count(n: i64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// Is `day` before a microbatch model's `begin` (`2024-01-01`, `2024-01-01T00:00:00`)?
fn before_begin(window: &Window, day: &str) -> bool {
    let WindowSource::Microbatch { begin: Some(begin) } = &window.source else {
        return false;
    };
    begin.get(..10).is_some_and(|begin| day < begin)
}

/// Whole periods from the start of `day` (YYYY-MM-DD) to the period holding `at`:
/// days, or hours. None for longer periods: a day is judged within them.
fn periods_back(day: &str, at: Timestamp, period: Period) -> Option<i64> {
    use chrono::Timelike;
    let start = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    let today = at.naive().date();
    match period {
        Period::Day => Some((today - start).num_days()),
        Period::Hour => Some((today - start).num_days() * 24 + i64::from(at.naive().hour())),
        Period::Month | Period::Year => None,
    }
}

/// How many periods back a run must reach to rebuild `day` when run at `at`.
pub fn reach_needed(day: &str, at: Timestamp, period: Period) -> Option<u32> {
    periods_back(day, at, period).and_then(|d| u32::try_from(d).ok())
}

use crate::monitor::thousands;

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;

    /// Monday 2026-11-30 02:40: Saturday the 28th is two days back.
    fn gap() -> Facts {
        let mut volume = figure(CheckKind::Volume, 580.0, VerdictKind::Low, 1_000.0);
        volume.table = "analytics.fct_daily".into();
        volume.day = Some("2026-11-28".into());
        volume.at = "2026-11-30T02:40:00Z".parse().unwrap();
        let mut f = facts(volume);
        f.table = "analytics.fct_daily".into();
        f.incremental = Some(IncrementalFacts {
            model: "fct_daily".into(),
            file: Some("models/fct_daily.sql".into()),
            window: Window::microbatch(
                Some("loaded_at".into()),
                Some("day"),
                Some(1),
                Some("2026-01-01".into()),
            ),
            parents: vec![ParentDay {
                table: "raw.events".into(),
                day: "2026-11-28".into(),
                rows: 1_010.0,
                ok: true,
                share: Some(101.0),
            }],
            missing: None,
        });
        f
    }

    /// The same gap in a model that is incremental with `filter` in its SQL.
    fn filtered(filter: &str) -> Facts {
        let mut f = gap();
        let sql = format!("select 1 {{% if is_incremental() %}} where {filter} {{% endif %}}");
        f.incremental.as_mut().unwrap().window = Window::of_filter(&sql).unwrap();
        f
    }

    fn window(f: &mut Facts) -> &mut Window {
        &mut f.incremental.as_mut().unwrap().window
    }

    #[test]
    fn a_day_upstream_holds_but_the_lookback_does_not_reach_is_a_gap() {
        let d = diagnose(&gap()).unwrap();
        assert_eq!(d.kind, CauseKind::LookbackGap);
        assert_eq!(
            d.cause,
            "fct_daily is still short on 2026-11-28 (58% of the usual, measured 2026-11-30 02:40) while raw.events holds 1,010 rows (101% of the usual) for that day: \
             fct_daily is built in daily batches with lookback = 1, so each run rebuilds only the last 2 days and 2026-11-28, 2 days back, is never rebuilt"
        );
        assert_eq!(
            d.evidence.last().unwrap(),
            "fct_daily is a microbatch model: batch_size = day, lookback = 1"
        );
        assert_eq!(
            reach_needed(
                "2026-11-28",
                "2026-11-30T02:40:00Z".parse().unwrap(),
                Period::Day
            ),
            Some(2)
        );
    }

    #[test]
    fn what_upstream_holds_that_the_model_has_not_is_counted_in_its_keys() {
        let mut f = gap();
        f.incremental.as_mut().unwrap().missing = Some(MissingRows {
            from: "raw.events".into(),
            day: "2026-11-28".into(),
            key: ("event_id".into(), 1_204),
            across: vec![("account_id".into(), 57)],
        });
        let d = diagnose(&f).unwrap();
        assert!(
            d.evidence.contains(
                &"raw.events holds 1,204 event_id values on 2026-11-28 that fct_daily has on no day, across 57 account_id values"
                    .to_string()
            ),
            "{:#?}",
            d.evidence
        );
    }

    #[test]
    fn upstream_still_short_is_not_a_gap() {
        let mut f = gap();
        f.incremental.as_mut().unwrap().parents[0].ok = false;
        assert!(diagnose(&f).is_none());
    }

    #[test]
    fn a_day_inside_the_lookback_is_not_a_gap_yet() {
        let mut f = gap();
        window(&mut f).lookback = 2;
        assert!(diagnose(&f).is_none());
    }

    #[test]
    fn a_day_before_the_first_batch_is_not_a_gap() {
        let mut f = gap();
        window(&mut f).source = WindowSource::Microbatch {
            begin: Some("2026-11-29T00:00:00".into()),
        };
        assert!(diagnose(&f).is_none());
    }

    #[test]
    fn hourly_batches_count_the_lookback_in_hours() {
        let mut f = gap();
        window(&mut f).period = Some(Period::Hour);
        // The 28th began 50 hours before 02:40 on the 30th.
        window(&mut f).lookback = 50;
        assert!(
            diagnose(&f).is_none(),
            "the next run reaches its first hour"
        );
        window(&mut f).lookback = 3;
        let d = diagnose(&f).unwrap();
        assert!(
            d.cause.ends_with(
                "fct_daily is built in hourly batches with lookback = 3, so each run rebuilds only the last 4 hours \
                 and 2026-11-28, which began 50 hours back, is never rebuilt in full"
            ),
            "{}",
            d.cause
        );
        assert_eq!(
            reach_needed(
                "2026-11-28",
                "2026-11-30T02:40:00Z".parse().unwrap(),
                Period::Hour
            ),
            Some(50)
        );
        // Monthly batches: a day is not what a run is counted in.
        window(&mut f).period = Some(Period::Month);
        assert!(diagnose(&f).is_none());
    }

    #[test]
    fn an_incremental_filter_that_does_not_reach_the_day_is_a_gap() {
        let d = diagnose(&filtered(
            "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'",
        ))
        .unwrap();
        assert_eq!(d.kind, CauseKind::LookbackGap);
        assert_eq!(
            d.cause,
            "fct_daily is still short on 2026-11-28 (58% of the usual, measured 2026-11-30 02:40) while raw.events holds 1,010 rows (101% of the usual) for that day: \
             fct_daily is incremental and its filter `loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'` \
             reaches back 1 day from the newest row it holds, so each run re-reads only the last 2 days and 2026-11-28, 2 days back, is never rebuilt"
        );
        assert_eq!(
            d.evidence.last().unwrap(),
            "fct_daily is incremental, not microbatch: under `is_incremental()` its SQL filters \
             `loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'`"
        );
    }

    #[test]
    fn a_filter_that_reads_only_new_rows_never_reaches_yesterday() {
        let mut f = filtered("loaded_at > (select max(loaded_at) from {{ this }})");
        f.breach.day = Some("2026-11-29".into());
        f.incremental.as_mut().unwrap().parents[0].day = "2026-11-29".into();
        let d = diagnose(&f).unwrap();
        assert!(
            d.cause.ends_with(
                "fct_daily is incremental and its filter `loaded_at > (select max(loaded_at) from {{ this }})` \
                 reaches back no further than the newest row it holds, so each run reads only rows newer than those it holds \
                 and 2026-11-29, 1 day back, is never rebuilt"
            ),
            "{}",
            d.cause
        );
    }

    #[test]
    fn a_filter_from_today_that_still_reaches_the_day_is_not_a_gap_yet() {
        assert!(diagnose(&filtered("loaded_at >= current_date - 2")).is_none());
        let d = diagnose(&filtered("loaded_at >= current_date - 1")).unwrap();
        assert!(
            d.cause.contains(
                "its filter `loaded_at >= current_date - 1` reaches back 1 day from the time of each run"
            ),
            "{}",
            d.cause
        );
    }
}
