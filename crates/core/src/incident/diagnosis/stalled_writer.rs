//! Stalled writer: the table has not loaded for longer than its cadence, so what should
//! have landed since is missing. Names the writer and its owner from the notes.

use super::*;
use crate::config::CheckKind;
use crate::detect::VerdictKind;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let late = std::iter::once(&facts.breach)
        .chain(&facts.others)
        .find(|f| f.check == CheckKind::Freshness && f.verdict == VerdictKind::Late)?;
    if let Some(job) = &late.writer {
        return Some(job_overdue(job, late));
    }
    let table = &facts.table;
    let since = last_load(late)
        .map(|at| format!(" since {}", figure::when(at)))
        .unwrap_or_default();
    let mut cause = format!("{table} has not loaded{since}");
    if facts.writers.is_empty() {
        cause.push_str(
            ": no writer is named for it in the notes (add a [[writer]] entry), so whether its writer stalled or only this table stopped is not known",
        );
    }
    for (n, writer) in facts.writers.iter().enumerate() {
        cause.push_str(if n == 0 { ": " } else { "; " });
        cause.push_str(&what_the_writer_did(table, last_load(late), writer));
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
                format!(" up to {}", f.at.hour_minute())
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

/// A job whose runs stopped coming (its runs' OpenLineage events measured, not a
/// table): it is the writer that stalled, and nothing else is known of why.
fn job_overdue(job: &str, late: &Figure) -> Diagnosis {
    let since = last_load(late)
        .map(|at| format!(" since {}", figure::when(at)))
        .unwrap_or_default();
    let cadence = late
        .expected
        .map(|r| {
            format!(
                ": it usually runs every {}",
                crate::monitor::human_seconds(r.baseline)
            )
        })
        .unwrap_or_default();
    let cause = format!(
        "{job} has not run{since}{cadence}, and no run of it has ended since (by its OpenLineage events)"
    );
    Diagnosis::of(CauseKind::StalledWriter, cause, vec![late.sentence()])
}

/// When a freshness figure says its table last loaded: measured at, less the time since.
fn last_load(freshness: &Figure) -> Option<Timestamp> {
    let ago = chrono::TimeDelta::try_seconds(freshness.value.round() as i64)?;
    freshness
        .at
        .naive()
        .checked_sub_signed(ago)
        .map(Timestamp::from_naive)
}

/// What one of the writer's other tables did since this one last loaded: loaded after
/// it (Some(true)), has not (Some(false): stopped too, late yet or not), or not known.
fn loaded_since(stopped_at: Option<Timestamp>, freshness: Option<&Figure>) -> Option<bool> {
    let freshness = freshness.filter(|f| f.verdict != VerdictKind::Unknown)?;
    Some(last_load(freshness)? > stopped_at?)
}

/// Whether the writer stalled as a whole, which only its other tables can tell: it
/// stalled when every table it writes stopped; when others loaded after this one
/// stopped, only this table stopped.
fn what_the_writer_did(table: &str, stopped_at: Option<Timestamp>, writer: &WriterFact) -> String {
    let who = match &writer.owner {
        Some(owner) => format!("{} (owner {owner})", writer.name),
        None => writer.name.clone(),
    };
    let with = |wanted: Option<bool>| -> Vec<&str> {
        writer
            .also_writes
            .iter()
            .filter(|(_, freshness)| loaded_since(stopped_at, freshness.as_ref()) == wanted)
            .map(|(name, _)| name.as_str())
            .collect()
    };
    let (loading, stopped, unknown) = (with(Some(true)), with(Some(false)), with(None));
    let also_stopped = if stopped.is_empty() {
        String::new()
    } else {
        format!("; {} stopped too", listed(&stopped))
    };
    if !loading.is_empty() {
        return format!(
            "its writer {who} stopped writing {table} while {} kept loading{also_stopped}",
            listed(&loading)
        );
    }
    if !unknown.is_empty() {
        return format!(
            "its writer {who} stopped writing {table}{also_stopped}; whether it stalled as a whole is not known: no freshness check tells whether {} still loads",
            listed(&unknown)
        );
    }
    if stopped.is_empty() {
        format!("its writer {who} has stalled")
    } else {
        format!(
            "its writer {who} has stalled: every table it writes stopped ({table} and {})",
            listed(&stopped)
        )
    }
}

/// "a", "a and b", "a, b and c".
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
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
            also_writes: Vec::new(),
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

    /// The payments loader, with its other tables and how long since each last loaded
    /// (None: no freshness check watches it), measured with raw.payments.
    fn loader(also_writes: Vec<(&str, Option<f64>)>) -> WriterFact {
        WriterFact {
            name: "payments loader".into(),
            owner: None,
            setting: None,
            also_writes: also_writes
                .into_iter()
                .map(|(table, since)| {
                    let freshness = since.map(|seconds| {
                        let verdict = if seconds > 900.0 {
                            VerdictKind::Late
                        } else {
                            VerdictKind::Ok
                        };
                        let mut f = figure(CheckKind::Freshness, seconds, verdict, 300.0);
                        f.table = table.into();
                        f
                    });
                    (table.to_string(), freshness)
                })
                .collect(),
        }
    }

    fn late_payments() -> Facts {
        facts(figure(
            CheckKind::Freshness,
            7_200.0,
            VerdictKind::Late,
            300.0,
        ))
    }

    #[test]
    fn one_table_stopped_while_the_writers_others_kept_loading_is_not_a_stalled_writer() {
        let mut f = late_payments();
        f.writers = vec![loader(vec![
            ("raw.orders", Some(120.0)),
            ("raw.customers", Some(300.0)),
        ])];
        let d = diagnose(&f).unwrap();
        assert!(!d.cause.contains("stalled"), "{}", d.cause);
        assert!(
            d.cause.ends_with(
                ": its writer payments loader stopped writing raw.payments while raw.orders and raw.customers kept loading"
            ),
            "{}",
            d.cause
        );
    }

    #[test]
    fn a_writer_stalled_when_every_table_it_writes_stopped() {
        let mut f = late_payments();
        // raw.orders last loaded when raw.payments did: stopped too, though its own
        // allowance has not run out yet.
        for since in [7_200.0, 9_000.0] {
            f.writers = vec![loader(vec![("raw.orders", Some(since))])];
            let d = diagnose(&f).unwrap();
            assert!(
                d.cause.ends_with(
                    ": its writer payments loader has stalled: every table it writes stopped (raw.payments and raw.orders)"
                ),
                "{}",
                d.cause
            );
        }
        f.writers = vec![loader(vec![])];
        assert!(diagnose(&f)
            .unwrap()
            .cause
            .ends_with(": its writer payments loader has stalled"));
    }

    #[test]
    fn a_writer_whose_other_tables_are_not_watched_is_not_called_stalled() {
        let mut f = late_payments();
        f.writers = vec![loader(vec![
            ("raw.orders", Some(8_000.0)),
            ("raw.refunds", None),
        ])];
        let d = diagnose(&f).unwrap();
        assert!(!d.cause.contains("has stalled"), "{}", d.cause);
        assert!(
            d.cause.contains("stopped writing raw.payments; raw.orders stopped too; whether it stalled as a whole is not known: no freshness check tells whether raw.refunds still loads"),
            "{}",
            d.cause
        );
        f.writers.clear();
        let d = diagnose(&f).unwrap();
        assert!(!d.cause.contains("has stalled"), "{}", d.cause);
        assert!(d.cause.contains("add a [[writer]] entry"), "{}", d.cause);
    }

    #[test]
    fn a_table_on_time_has_no_stalled_writer() {
        let f = facts(figure(CheckKind::Volume, 700.0, VerdictKind::Low, 1_200.0));
        assert!(diagnose(&f).is_none());
    }
}
