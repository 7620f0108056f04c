//! Stalled writer: the table has not loaded for longer than its cadence, so what should
//! have landed since is missing. Names the writer and its owner from the notes.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let late = std::iter::once(&facts.breach)
        .chain(&facts.others)
        .find(|f| f.check == CheckKind::Freshness && f.verdict == VerdictKind::Late)?;
    let table = &facts.table;
    let last_load = chrono::NaiveDateTime::parse_from_str(&late.at, "%Y-%m-%dT%H:%M:%SZ")
        .ok()
        .map(|at| {
            crate::engine::timestamp(at - chrono::TimeDelta::seconds(late.value.round() as i64))
        });
    let since = last_load
        .as_deref()
        .map(|at| format!(" since {}", figure::when(at)))
        .unwrap_or_default();
    let mut cause = format!("{table} has not loaded{since}");
    match writers_text(facts) {
        Some(writers) => cause.push_str(&format!(": its writer {writers} has stalled")),
        None => cause.push_str(
            ": its writer has stalled (no writer is named in the notes; add a [[writer]] entry)",
        ),
    }
    // What should have landed since is missing: every short day, not just the one the
    // volume check's headline names.
    let headline = std::iter::once(&facts.breach)
        .chain(&facts.others)
        .find(|f| f.check == CheckKind::Volume && f.verdict == VerdictKind::Low);
    let short: Vec<&Figure> = if facts.short_days.is_empty() {
        headline.into_iter().collect()
    } else {
        facts.short_days.iter().collect()
    };
    let days: Vec<String> = short
        .iter()
        .filter_map(|f| {
            let day = f.day.as_deref()?;
            let until = if f.partial {
                format!(" up to {}", f.at.get(11..16)?)
            } else {
                String::new()
            };
            Some(format!("on {day}{until} at {}% of the usual", f.share()?))
        })
        .collect();
    if !days.is_empty() {
        cause.push_str(&format!("; rows loaded into {table} {}", days.join(", ")));
    }
    let mut evidence = vec![late.sentence()];
    evidence.extend(
        std::iter::once(&facts.breach)
            .chain(&facts.others)
            .filter(|f| f.verdict.is_breach() && *f != late)
            .map(Figure::sentence),
    );
    Some(Diagnosis::of(CauseKind::StalledWriter, cause, evidence))
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;
    use crate::detect::Range;

    #[test]
    fn a_late_table_names_its_writer_and_the_short_day() {
        let mut late = figure(CheckKind::Freshness, 86_400.0, VerdictKind::Late, 3_600.0);
        late.expected = Some(Range {
            low: 0.0,
            high: 5_400.0,
            baseline: 3_600.0,
        });
        let mut volume = figure(CheckKind::Volume, 700.0, VerdictKind::Low, 1_200.0);
        volume.day = Some("2026-11-24".into());
        volume.partial = true;
        let mut f = facts(volume);
        f.others = vec![late];
        f.writers = vec![WriterFact {
            name: "payments loader".into(),
            owner: Some("platform-owner".into()),
            setting: None,
        }];
        let d = diagnose(&f).unwrap();
        assert_eq!(d.kind, CauseKind::StalledWriter);
        assert_eq!(
            d.cause,
            "raw.payments has not loaded since 2026-11-23 14:10: its writer payments loader (owner platform-owner) has stalled; \
             rows loaded into raw.payments on 2026-11-24 up to 14:10 at 58% of the usual"
        );
        assert!(d.evidence[0].starts_with("time since raw.payments last loaded reached 1d00h"));
        assert!(!d.cause.contains("check its writers"));
    }

    #[test]
    fn a_stall_over_midnight_names_every_short_day() {
        let late = figure(CheckKind::Freshness, 45_000.0, VerdictKind::Late, 180.0);
        let mut f = facts(late);
        let day = |day: &str, rows: f64, partial: bool| {
            let mut v = figure(CheckKind::Volume, rows, VerdictKind::Low, 1_000.0);
            v.day = Some(day.into());
            v.partial = partial;
            v
        };
        f.short_days = vec![
            day("2026-11-23", 580.0, false),
            day("2026-11-24", 0.0, true),
        ];
        let d = diagnose(&f).unwrap();
        assert!(
            d.cause.ends_with(
                "; rows loaded into raw.payments on 2026-11-23 at 58% of the usual, on 2026-11-24 up to 14:10 at 0% of the usual"
            ),
            "{}",
            d.cause
        );
        let grounds = f.grounds();
        assert_eq!(
            grounds,
            ["freshness", "volume 2026-11-23", "volume 2026-11-24 so far"]
        );
    }

    #[test]
    fn a_table_on_time_has_no_stalled_writer() {
        let f = facts(figure(CheckKind::Volume, 700.0, VerdictKind::Low, 1_200.0));
        assert!(diagnose(&f).is_none());
    }
}
