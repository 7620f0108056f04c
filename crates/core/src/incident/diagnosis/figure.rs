//! A figure: one measurement with its subject, its unit and when it was taken, so a
//! cause never shows seconds as rows or a day's volume as the table's size.

use crate::clock::Timestamp;
use crate::config::CheckKind;
use crate::detect::{Range, SchemaChange, VerdictKind};
pub use crate::monitor::amount;
use crate::monitor::{human_seconds, thousands};

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub table: String,
    pub check: CheckKind,
    /// null_rate: the column measured.
    pub column: Option<String>,
    pub value: f64,
    pub verdict: VerdictKind,
    pub expected: Option<Range>,
    /// When it was measured.
    pub at: Timestamp,
    /// volume: the day measured.
    pub day: Option<String>,
    /// volume: the day is today, counted up to `at`.
    pub partial: bool,
    /// null_rate: only rows loaded since then were measured.
    pub since: Option<Timestamp>,
    /// volume: the job whose runs reported these rows (OpenLineage), where dataward
    /// does not count the table itself; freshness: the job whose runs are measured.
    pub writer: Option<String>,
}

impl Default for Figure {
    fn default() -> Figure {
        Figure {
            table: String::new(),
            check: CheckKind::RowCount,
            column: None,
            value: 0.0,
            verdict: VerdictKind::Unknown,
            expected: None,
            at: Timestamp::default(),
            day: None,
            partial: false,
            since: None,
            writer: None,
        }
    }
}

/// 2026-11-24T14:10:00Z as people read it beside a cause: "2026-11-24 14:10".
pub fn when(at: Timestamp) -> String {
    at.naive().format("%Y-%m-%d %H:%M").to_string()
}

/// A breach as one short sentence, for a title; a schema breach says what changed:
/// "raw.orders.zip_code changed type from INTEGER to VARCHAR".
pub fn breach_headline(breach: &Figure, changes: &[SchemaChange]) -> String {
    if breach.check != CheckKind::Schema || changes.is_empty() {
        return breach.headline();
    }
    let table = &breach.table;
    let said: Vec<String> = changes
        .iter()
        .map(|change| match change {
            SchemaChange::Added { column, data_type } => {
                format!("{table}.{column} was added ({data_type})")
            }
            SchemaChange::Removed { column, data_type } => {
                format!("{table}.{column} was removed (it was {data_type})")
            }
            SchemaChange::TypeChanged { column, from, to } => {
                format!("{table}.{column} changed type from {from} to {to}")
            }
        })
        .collect();
    said.join("; ")
}

impl Figure {
    /// What was measured, in words: "rows loaded into raw.payments on 2026-11-23".
    pub fn subject(&self) -> String {
        let table = &self.table;
        match self.check {
            CheckKind::RowCount => format!("rows in {table}"),
            CheckKind::Volume => match (&self.day, self.partial) {
                (Some(day), true) => format!(
                    "rows loaded into {table} on {day} up to {}",
                    self.at.hour_minute()
                ),
                (Some(day), false) => format!("rows loaded into {table} on {day}"),
                (None, _) => match &self.writer {
                    Some(job) => format!("rows {job} wrote to {table} per day"),
                    None => format!("rows loaded into {table} per day"),
                },
            },
            CheckKind::Freshness => match &self.writer {
                Some(job) => format!("time since {job} last ran"),
                None => format!("time since {table} last loaded"),
            },
            CheckKind::NullRate => {
                let column = self.column.as_deref().unwrap_or("a column");
                match &self.since {
                    Some(since) => format!(
                        "null rate of {table}.{column} in rows loaded since {}",
                        when(*since)
                    ),
                    None => format!("null rate of {table}.{column}"),
                }
            }
            CheckKind::Schema => format!("columns of {table}"),
            CheckKind::FailedRun => format!("the run writing {table}"),
        }
    }

    /// The breach as one short sentence, for a title: "rows loaded into raw.payments
    /// on 2026-11-23 fell to 1,214 rows", "raw.payments has not loaded for 1d00h".
    pub fn headline(&self) -> String {
        let amount = self.amount(self.value);
        match (self.check, self.verdict) {
            (CheckKind::Freshness, _) => match &self.writer {
                Some(job) => format!("{job} has not run for {amount}"),
                None => format!("{} has not loaded for {amount}", self.table),
            },
            (CheckKind::Schema, _) => format!("the columns of {} changed", self.table),
            (CheckKind::FailedRun, _) => format!("the run writing {} failed", self.table),
            (CheckKind::NullRate, _) => format!("the {} rose to {amount}", self.subject()),
            (_, VerdictKind::Low) => format!("{} fell to {amount}", self.subject()),
            (_, VerdictKind::High) => format!("{} rose to {amount}", self.subject()),
            _ => format!("{} came to {amount}", self.subject()),
        }
    }

    /// That the figure is back, as a whole clause in its own grammar: "rows loaded into
    /// raw.payments on 2026-11-23 are back within their usual range".
    pub fn back_within_range(&self) -> String {
        let table = &self.table;
        match self.check {
            CheckKind::RowCount => format!("rows in {table} are back within their usual range"),
            // The whole day, not the part of it measured when the breach was seen.
            CheckKind::Volume => match &self.day {
                Some(day) => {
                    format!("rows loaded into {table} on {day} are back within their usual range")
                }
                None => {
                    format!("rows loaded into {table} per day are back within their usual range")
                }
            },
            CheckKind::Freshness => match &self.writer {
                Some(job) => format!("{job} runs again within its usual cadence"),
                None => format!("{table} loads again within its usual cadence"),
            },
            CheckKind::NullRate => format!(
                "the null rate of {table}.{} is back within its usual range",
                self.column.as_deref().unwrap_or("a column")
            ),
            CheckKind::Schema => format!("the columns of {table} are back as they were"),
            CheckKind::FailedRun => format!("the run writing {table} succeeds again"),
        }
    }

    /// A value in this figure's unit: "1,214 rows", "1d02h", "50.0%".
    pub fn amount(&self, value: f64) -> String {
        amount(self.check, value)
    }

    /// The share of the baseline, where one means anything: "39%".
    pub fn share(&self) -> Option<f64> {
        let r = self.expected?;
        (r.baseline > 0.0).then(|| (self.value / r.baseline * 100.0).round())
    }

    /// The figure as one sentence with its direction, baseline and time:
    /// "rows loaded into raw.payments on 2026-11-23 fell to 1,214 rows, 39% of the
    /// usual 3,105 rows (expected 2,484..3,726 rows); measured 2026-11-24 14:10".
    pub fn sentence(&self) -> String {
        if self.check == CheckKind::Schema {
            return format!(
                "the columns of {} changed ({} now); measured {}",
                self.table,
                self.amount(self.value),
                when(self.at)
            );
        }
        let direction = match (self.verdict, self.check) {
            (VerdictKind::Low, _) => "fell to",
            (VerdictKind::High, _) => "rose to",
            (VerdictKind::Late | VerdictKind::Warn, _) => "reached",
            // "rows in t came to 20,113 rows", never "rows … is".
            (_, CheckKind::RowCount | CheckKind::Volume) => "came to",
            _ => "is",
        };
        let against = match (self.expected, self.check) {
            (Some(r), CheckKind::Freshness) => format!(
                ", over the {} allowed (it usually {} every {})",
                human_seconds(r.high),
                if self.writer.is_some() {
                    "runs"
                } else {
                    "loads"
                },
                human_seconds(r.baseline)
            ),
            (Some(r), CheckKind::NullRate) => format!(
                ", against a usual {} (expected {}..{})",
                self.amount(r.baseline),
                self.amount(r.low),
                self.amount(r.high)
            ),
            // A usual of none is no base for a share.
            (Some(r), _) => format!(
                ", {} (expected {}..{})",
                match self.share() {
                    Some(share) => format!("{share}% of the usual {}", self.amount(r.baseline)),
                    None => "none usually".to_string(),
                },
                thousands(r.low),
                self.amount(r.high)
            ),
            (None, _) => String::new(),
        };
        format!(
            "{} {direction} {}{against}; measured {}",
            self.subject(),
            self.amount(self.value),
            when(self.at)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::figure;
    use super::*;

    #[test]
    fn a_days_volume_is_rows_loaded_that_day_not_the_tables_size() {
        let mut f = figure(CheckKind::Volume, 1_214.0, VerdictKind::Low, 3_105.0);
        f.day = Some("2026-11-23".into());
        let s = f.sentence();
        assert!(
            s.starts_with("rows loaded into raw.payments on 2026-11-23 fell to 1,214 rows, 39% of the usual 3,105 rows"),
            "{s}"
        );
        assert!(s.ends_with("measured 2026-11-24 14:10"), "{s}");
    }

    #[test]
    fn a_usual_of_none_is_no_base_for_a_share() {
        let mut f = figure(CheckKind::Volume, 40.0, VerdictKind::High, 0.0);
        f.day = Some("2026-11-23".into());
        let s = f.sentence();
        assert!(
            s.starts_with(
                "rows loaded into raw.payments on 2026-11-23 rose to 40 rows, none usually (expected 0..0 rows)"
            ),
            "{s}"
        );
        assert!(!s.contains('%'), "{s}");
    }

    #[test]
    fn back_within_range_is_a_whole_clause_for_every_check() {
        let mut volume = figure(CheckKind::Volume, 10.0, VerdictKind::Low, 20.0);
        volume.day = Some("2026-11-23".into());
        volume.partial = true;
        let mut nulls = figure(CheckKind::NullRate, 0.5, VerdictKind::High, 0.0);
        nulls.column = Some("amount".into());
        let said: Vec<String> = [
            figure(CheckKind::RowCount, 10.0, VerdictKind::Low, 20.0),
            volume,
            figure(CheckKind::Freshness, 9_000.0, VerdictKind::Late, 300.0),
            nulls,
            figure(CheckKind::Schema, 4.0, VerdictKind::Changed, 4.0),
        ]
        .iter()
        .map(Figure::back_within_range)
        .collect();
        assert_eq!(
            said,
            [
                "rows in raw.payments are back within their usual range",
                "rows loaded into raw.payments on 2026-11-23 are back within their usual range",
                "raw.payments loads again within its usual cadence",
                "the null rate of raw.payments.amount is back within its usual range",
                "the columns of raw.payments are back as they were",
            ]
        );
    }

    #[test]
    fn every_kind_reads_as_a_whole_sentence() {
        let schema = figure(CheckKind::Schema, 4.0, VerdictKind::Changed, 4.0);
        assert_eq!(
            schema.sentence(),
            "the columns of raw.payments changed (4 columns now); measured 2026-11-24 14:10"
        );
        let rows = figure(CheckKind::RowCount, 20_000.0, VerdictKind::Ok, 20_000.0);
        assert!(
            rows.sentence()
                .starts_with("rows in raw.payments came to 20,000 rows, 100% of the usual"),
            "{}",
            rows.sentence()
        );
    }

    #[test]
    fn freshness_is_time_not_rows() {
        let mut f = figure(CheckKind::Freshness, 86_400.0, VerdictKind::Late, 3_600.0);
        f.expected = Some(Range {
            low: 0.0,
            high: 5_400.0,
            baseline: 3_600.0,
        });
        let s = f.sentence();
        assert!(
            s.starts_with("time since raw.payments last loaded reached 1d00h, over the 1h30m allowed (it usually loads every 1h00m)"),
            "{s}"
        );
        assert!(!s.contains("rows"), "{s}");
        assert!(!s.contains('%'), "{s}");
    }

    #[test]
    fn a_null_rate_names_its_column_and_window() {
        let mut f = figure(CheckKind::NullRate, 0.5, VerdictKind::High, 0.0);
        f.column = Some("amount".into());
        f.since = Some("2026-11-23T14:10:00Z".parse().unwrap());
        f.expected = Some(Range {
            low: 0.0,
            high: 0.02,
            baseline: 0.0,
        });
        assert_eq!(
            f.sentence(),
            "null rate of raw.payments.amount in rows loaded since 2026-11-23 14:10 rose to 50.0%, \
             against a usual 0.0% (expected 0.0%..2.0%); measured 2026-11-24 14:10"
        );
    }
}
