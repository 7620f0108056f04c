//! Lookback gap: the model is short for a day its upstream now holds in full, and the
//! model is built in batches whose lookback does not reach back to that day, so no
//! scheduled run will ever rebuild it. The upstream was fixed; the model was not.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let breach = &facts.breach;
    let batches = facts.batches.as_ref()?;
    if breach.check != CheckKind::Volume
        || breach.verdict != VerdictKind::Low
        || breach.partial
        || batches.batch_size != "day"
    {
        return None;
    }
    let day = breach.day.as_deref()?;
    let upstream: Vec<&ParentDay> = batches.parents.iter().filter(|p| p.day == day).collect();
    if upstream.is_empty() || !upstream.iter().all(|p| p.ok) {
        return None;
    }
    let behind = days_between(day, &breach.at)?;
    if behind <= i64::from(batches.lookback) {
        // A scheduled run still reaches it: not a gap (yet).
        return None;
    }
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
    let cause = format!(
        "{model} is still short on {day} ({}) while {parents} for that day: {model} is built in daily batches with lookback = {lookback}, so each run rebuilds only the last {window} days and {day}, {behind} days back, is never rebuilt",
        breach
            .share()
            .map(|s| format!("{s}% of the usual"))
            .unwrap_or_else(|| breach.amount(breach.value)),
        model = batches.model,
        lookback = batches.lookback,
        window = batches.lookback + 1,
    );
    let mut evidence = vec![breach.sentence()];
    evidence.extend(upstream.iter().map(|p| {
        format!(
            "{} on {day}: {} rows, back within its usual band",
            p.table,
            thousands(p.rows)
        )
    }));
    evidence.push(format!(
        "{} is a microbatch model: batch_size = day, lookback = {}",
        batches.model, batches.lookback
    ));
    Some(Diagnosis::of(CauseKind::LookbackGap, cause, evidence))
}

/// Whole days from `day` (YYYY-MM-DD) to the day of `at` (a timestamp).
fn days_between(day: &str, at: &str) -> Option<i64> {
    let day = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    let today = chrono::NaiveDate::parse_from_str(at.get(..10)?, "%Y-%m-%d").ok()?;
    Some((today - day).num_days())
}

/// How many batches back a run must reach to rebuild `day` when run on the day of `at`.
pub fn lookback_needed(day: &str, at: &str) -> Option<u32> {
    days_between(day, at).and_then(|d| u32::try_from(d).ok())
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
        volume.at = "2026-11-30T02:40:00Z".into();
        let mut f = facts(volume);
        f.table = "analytics.fct_daily".into();
        f.batches = Some(BatchFacts {
            model: "fct_daily".into(),
            file: Some("models/fct_daily.sql".into()),
            batch_size: "day".into(),
            lookback: 1,
            parents: vec![ParentDay {
                table: "raw.events".into(),
                day: "2026-11-28".into(),
                rows: 1_010.0,
                ok: true,
                share: Some(101.0),
            }],
        });
        f
    }

    #[test]
    fn a_day_upstream_holds_but_the_lookback_does_not_reach_is_a_gap() {
        let d = diagnose(&gap()).unwrap();
        assert_eq!(d.kind, CauseKind::LookbackGap);
        assert_eq!(
            d.cause,
            "fct_daily is still short on 2026-11-28 (58% of the usual) while raw.events holds 1,010 rows (101% of the usual) for that day: \
             fct_daily is built in daily batches with lookback = 1, so each run rebuilds only the last 2 days and 2026-11-28, 2 days back, is never rebuilt"
        );
        assert_eq!(
            lookback_needed("2026-11-28", "2026-11-30T02:40:00Z"),
            Some(2)
        );
    }

    #[test]
    fn upstream_still_short_is_not_a_gap() {
        let mut f = gap();
        f.batches.as_mut().unwrap().parents[0].ok = false;
        assert!(diagnose(&f).is_none());
    }

    #[test]
    fn a_day_inside_the_lookback_is_not_a_gap_yet() {
        let mut f = gap();
        f.batches.as_mut().unwrap().lookback = 2;
        assert!(diagnose(&f).is_none());
    }
}
