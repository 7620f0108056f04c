//! Monitors: run each configured check against its warehouse, judge it with the
//! detectors, and store the observation. A warehouse that cannot be reached becomes the
//! monitor's health, never a data verdict.

pub mod checks;
pub mod cli;
pub mod poller;

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::config::{CheckKind, MonitorConfig};
use crate::detect::{self, Range, SchemaChange, VerdictKind};
use crate::warehouse::{Column, WarehouseError};

pub use checks::Measurement;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    Ok,
    Unreachable,
    Error,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Unreachable => "unreachable",
            Health::Error => "error",
        }
    }

    fn parse(text: &str) -> Health {
        match text {
            "ok" => Health::Ok,
            "unreachable" => Health::Unreachable,
            _ => Health::Error,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    pub monitor: String,
    pub table: String,
    pub check: CheckKind,
    pub at: String,
    pub value: Option<f64>,
    pub verdict: VerdictKind,
    pub expected: Option<Range>,
    pub health: Health,
    /// Schema snapshots: the columns seen and what changed since the last snapshot.
    pub detail: Detail,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<Column>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<SchemaChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// null_rate: the column this observation is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// volume: the day judged ("2024-05-11").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
    /// Robust standard deviations from the baseline, where the detector has a spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl Observation {
    /// "20,113" or the expected band, for people.
    pub fn expected_text(&self) -> String {
        match (&self.expected, self.check) {
            (Some(r), CheckKind::NullRate) => {
                format!("{:.2}%..{:.2}%", r.low * 100.0, r.high * 100.0)
            }
            (Some(r), CheckKind::Freshness) => format!("within {}", human_seconds(r.high)),
            (Some(r), _) => format!("{}..{}", thousands(r.low), thousands(r.high)),
            (None, CheckKind::Schema) => "no change".to_string(),
            (None, _) if self.verdict == VerdictKind::Unknown => "-".to_string(),
            (None, _) => "learning".to_string(),
        }
    }

    /// The check as people name it: `null_rate(amount)` for a per-column check.
    pub fn check_label(&self) -> String {
        match &self.detail.column {
            Some(column) => format!("{}({column})", self.check.as_str()),
            None => self.check.as_str().to_string(),
        }
    }

    pub fn observed_text(&self) -> String {
        if let Some(message) = &self.detail.message {
            return message.clone();
        }
        match self.check {
            CheckKind::RowCount | CheckKind::Volume => {
                self.value.map(thousands).unwrap_or_default()
            }
            CheckKind::NullRate => self
                .value
                .map(|v| format!("{:.2}% null", v * 100.0))
                .unwrap_or_default(),
            CheckKind::Freshness => self
                .value
                .map(|v| format!("{} since the last load", human_seconds(v)))
                .unwrap_or_else(|| "no loads in the lookback".to_string()),
            CheckKind::Schema if self.detail.changes.is_empty() => {
                format!(
                    "{} columns",
                    self.detail.columns.as_ref().map_or(0, Vec::len)
                )
            }
            CheckKind::Schema => self
                .detail
                .changes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// 5400.0 -> "1h30m".
pub fn human_seconds(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// 20113.0 -> "20,113".
pub fn thousands(value: f64) -> String {
    let n = value.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Judges a measurement against the stored history and stores the result: one
/// observation per check, or per column for null_rate. A warehouse error becomes the
/// monitor's health with the message, and the verdict `unknown`.
pub fn judge(
    state: &Connection,
    monitor: &MonitorConfig,
    check: CheckKind,
    at: &str,
    measured: Result<Measurement, WarehouseError>,
) -> Result<Vec<Observation>> {
    let name = crate::config::Config::monitor_name(monitor);
    let blank = Observation {
        monitor: name.clone(),
        table: monitor.table.clone(),
        check,
        at: at.to_string(),
        value: None,
        verdict: VerdictKind::Unknown,
        expected: None,
        health: Health::Ok,
        detail: Detail::default(),
    };
    let with_verdict = |mut o: Observation, v: detect::Verdict| {
        o.value = v.observed.is_finite().then_some(v.observed);
        o.verdict = v.kind;
        o.expected = v.expected;
        o.detail.score = v.score;
        o
    };
    let mut out = Vec::new();
    match measured {
        Ok(Measurement::Count(count)) => {
            let verdict = match monitor.expected_rows {
                Some(baseline) => detect::row_count_recorded(baseline as f64, count as f64),
                None => detect::row_count(&clean_history(state, &name, check, "")?, count as f64),
            };
            out.push(with_verdict(blank, verdict));
        }
        Ok(Measurement::Columns(columns)) => {
            let mut observation = blank;
            let previous = latest_columns(state, &name)?;
            observation.value = Some(columns.len() as f64);
            observation.verdict = match &previous {
                None => VerdictKind::Learning,
                Some(before) => {
                    observation.detail.changes = detect::schema_changes(before, &columns);
                    if observation.detail.changes.is_empty() {
                        VerdictKind::Ok
                    } else {
                        VerdictKind::Changed
                    }
                }
            };
            observation.detail.columns = Some(columns);
            out.push(observation);
        }
        Ok(Measurement::Nulls { rows, columns }) => {
            for (column, nulls) in columns {
                let mut observation = blank.clone();
                observation.detail.column = Some(column.clone());
                if rows == 0 {
                    observation.verdict = VerdictKind::Learning;
                    observation.detail.message = Some("no rows to measure".to_string());
                    out.push(observation);
                    continue;
                }
                let rate = nulls as f64 / rows as f64;
                let history = clean_history(state, &name, check, &column)?;
                out.push(with_verdict(observation, detect::null_rate(&history, rate)));
            }
        }
        Ok(Measurement::Freshness { verdict }) => out.push(with_verdict(blank, verdict)),
        Ok(Measurement::Volume { day, verdict }) => {
            let mut observation = with_verdict(blank, verdict);
            observation.detail.day = day;
            out.push(observation);
        }
        Err(error) => {
            let mut observation = blank;
            observation.health = match error {
                WarehouseError::Unreachable(_) => Health::Unreachable,
                WarehouseError::Query(_) => Health::Error,
            };
            observation.detail.message = Some(error.to_string());
            out.push(observation);
        }
    }
    for observation in &mut out {
        observation.detail.expected = observation.expected;
        store(state, observation)?;
    }
    Ok(out)
}

fn store(state: &Connection, o: &Observation) -> Result<()> {
    state.execute(
        "INSERT INTO observation
           (monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            o.monitor,
            o.table,
            o.check.as_str(),
            o.at,
            o.value,
            serde_json::to_string(&o.detail)?,
            o.verdict.as_str(),
            o.health.as_str(),
            o.detail.column.as_deref().unwrap_or("")
        ],
    )?;
    Ok(())
}

/// Values of healthy, non-breaching observations, oldest first: the baseline's input.
/// `subject` is the column for per-column checks, empty otherwise.
fn clean_history(
    state: &Connection,
    monitor: &str,
    check: CheckKind,
    subject: &str,
) -> Result<Vec<f64>> {
    let mut stmt = state.prepare(
        "SELECT value FROM observation
         WHERE monitor = ?1 AND check_kind = ?2 AND subject = ?3 AND health = 'ok'
           AND verdict IN ('ok', 'learning') AND value IS NOT NULL
         ORDER BY id",
    )?;
    let rows = stmt.query_map(params![monitor, check.as_str(), subject], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn latest_columns(state: &Connection, monitor: &str) -> Result<Option<Vec<Column>>> {
    let detail: Option<String> = state
        .query_row(
            "SELECT detail FROM observation
             WHERE monitor = ?1 AND check_kind = 'schema' AND health = 'ok'
             ORDER BY id DESC LIMIT 1",
            [monitor],
            |r| r.get(0),
        )
        .optional()?;
    Ok(match detail {
        Some(text) => serde_json::from_str::<Detail>(&text)?.columns,
        None => None,
    })
}

/// Every stored observation of one monitor and check, oldest first.
pub fn history(state: &Connection, monitor: &str, check: CheckKind) -> Result<Vec<Observation>> {
    Ok(stored(
        state,
        "WHERE monitor = ?1 AND check_kind = ?2 ORDER BY id",
        params![monitor, check.as_str()],
    )?
    .into_iter()
    .map(|(_, o)| o)
    .collect())
}

/// The latest observation of every (monitor, check, column): what the engine shows and
/// verifies against, rebuilt from the database at start.
pub fn latest_all(state: &Connection) -> Result<Vec<Observation>> {
    Ok(stored(
        state,
        "WHERE id IN (SELECT max(id) FROM observation GROUP BY monitor, check_kind, subject) ORDER BY id",
        [],
    )?
    .into_iter()
    .map(|(_, o)| o)
    .collect())
}

/// Observations stored after `id`, with their ids, oldest first: the engine's input,
/// consumed exactly once by moving its mark in the transaction that acts on them.
pub fn stored_after(state: &Connection, id: i64) -> Result<Vec<(i64, Observation)>> {
    stored(state, "WHERE id > ?1 ORDER BY id", [id])
}

fn stored(
    state: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(i64, Observation)>> {
    let mut stmt = state.prepare(&format!(
        "SELECT id, monitor, check_kind, tbl, at, value, detail, verdict, health FROM observation {filter}"
    ))?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let check_text: String = r.get(2)?;
        let Ok(check) = serde_json::from_value::<CheckKind>(check_text.into()) else {
            continue; // a check this version does not know
        };
        let detail: Detail = serde_json::from_str(&r.get::<_, String>(6)?)?;
        out.push((
            r.get(0)?,
            Observation {
                monitor: r.get(1)?,
                table: r.get(3)?,
                check,
                at: r.get(4)?,
                value: r.get(5)?,
                verdict: VerdictKind::parse(&r.get::<_, String>(7)?),
                expected: detail.expected,
                health: Health::parse(&r.get::<_, String>(8)?),
                detail,
            },
        ));
    }
    Ok(out)
}
