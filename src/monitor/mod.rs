//! Monitors: run each configured check against its warehouse, judge it with the
//! detectors, and store the observation. A warehouse that cannot be reached becomes the
//! monitor's health, never a data verdict.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::config::{CheckKind, MonitorConfig};
use crate::detect::{self, Range, SchemaChange, VerdictKind};
use crate::warehouse::{Column, Relation, Warehouse, WarehouseError};

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
}

impl Observation {
    /// "20,113" or the expected band, for people.
    pub fn expected_text(&self) -> String {
        match (&self.expected, self.check) {
            (Some(r), _) => format!("{}..{}", thousands(r.low), thousands(r.high)),
            (None, CheckKind::Schema) => "no change".to_string(),
            (None, _) => "learning".to_string(),
        }
    }

    pub fn observed_text(&self) -> String {
        if let Some(message) = &self.detail.message {
            return message.clone();
        }
        match self.check {
            CheckKind::RowCount => self.value.map(thousands).unwrap_or_default(),
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

/// Runs one check now, judges it against stored history, stores and returns it.
pub fn observe(
    state: &Connection,
    warehouse: &dyn Warehouse,
    monitor: &MonitorConfig,
    check: CheckKind,
    at: &str,
) -> Result<Observation> {
    let name = crate::config::Config::monitor_name(monitor);
    let mut observation = Observation {
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
    let measured = Relation::parse(&monitor.table).and_then(|relation| match check {
        CheckKind::RowCount => warehouse.row_count(&relation).map(Measured::Count),
        CheckKind::Schema => warehouse.columns(&relation).map(Measured::Columns),
    });
    match measured {
        Ok(Measured::Count(count)) => {
            let history = clean_history(state, &name, check)?;
            let verdict = detect::row_count(&history, count as f64);
            observation.value = Some(count as f64);
            observation.verdict = verdict.kind;
            observation.expected = verdict.expected;
        }
        Ok(Measured::Columns(columns)) => {
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
        }
        Err(error) => {
            observation.health = match error {
                WarehouseError::Unreachable(_) => Health::Unreachable,
                WarehouseError::Query(_) => Health::Error,
            };
            observation.detail.message = Some(error.to_string());
        }
    }
    observation.detail.expected = observation.expected;
    store(state, &observation)?;
    Ok(observation)
}

enum Measured {
    Count(u64),
    Columns(Vec<Column>),
}

fn store(state: &Connection, o: &Observation) -> Result<()> {
    state.execute(
        "INSERT INTO observation (monitor, tbl, check_kind, at, value, detail, verdict, health)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            o.monitor,
            o.table,
            o.check.as_str(),
            o.at,
            o.value,
            serde_json::to_string(&o.detail)?,
            o.verdict.as_str(),
            o.health.as_str()
        ],
    )?;
    Ok(())
}

/// Values of healthy, non-breaching observations, oldest first: the baseline's input.
fn clean_history(state: &Connection, monitor: &str, check: CheckKind) -> Result<Vec<f64>> {
    let mut stmt = state.prepare(
        "SELECT value FROM observation
         WHERE monitor = ?1 AND check_kind = ?2 AND health = 'ok'
           AND verdict IN ('ok', 'learning') AND value IS NOT NULL
         ORDER BY id",
    )?;
    let rows = stmt.query_map(params![monitor, check.as_str()], |r| r.get(0))?;
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
    let mut stmt = state.prepare(
        "SELECT tbl, at, value, detail, verdict, health FROM observation
         WHERE monitor = ?1 AND check_kind = ?2 ORDER BY id",
    )?;
    let rows = stmt.query_map(params![monitor, check.as_str()], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<f64>>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (table, at, value, detail, verdict, health) = row?;
        let detail: Detail = serde_json::from_str(&detail)?;
        out.push(Observation {
            monitor: monitor.to_string(),
            table,
            check,
            at,
            value,
            verdict: VerdictKind::parse(&verdict),
            expected: detail.expected,
            health: Health::parse(&health),
            detail,
        });
    }
    Ok(out)
}
