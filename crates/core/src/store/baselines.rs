//! New levels people accepted (`dataward accept`): where a monitor's baselines restart
//! (`volume_restart`, `baseline_restart`; see `monitor::baseline`).

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use super::read_time;
use crate::clock::Timestamp;
use crate::config::CheckKind;

/// A learned baseline's restart as stored: the accepted run of breaches.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedRestart<'a> {
    pub monitor: &'a str,
    pub check: CheckKind,
    pub subject: &'a str,
    pub since_id: i64,
    pub through_id: i64,
    pub value: f64,
    pub incident: &'a str,
    pub seq: u64,
}

/// An incident's dates as its document holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct IncidentSpan {
    pub id: String,
    pub opened_at: Timestamp,
    /// The day its breach was about, if it names one.
    pub day: Option<String>,
    pub resolved_at: Option<Timestamp>,
}

pub trait BaselineStore {
    /// Records that `incident`'s new level on `monitor` is the normal from `since` (a
    /// date) on, seen as `ratio` of the days before; `seq` is the acceptance's record.
    fn add_volume_restart(
        &self,
        monitor: &str,
        since: &str,
        ratio: f64,
        incident: &str,
        seq: u64,
    ) -> Result<()>;
    /// (incident, since, ratio) of every level accepted on `monitor`, by `since`.
    fn volume_restarts(&self, monitor: &str) -> Result<Vec<(String, String, f64)>>;
    fn add_learned_restart(&self, restart: &LearnedRestart) -> Result<()>;
    /// The latest accepted run's (first, last) observation ids, if any was accepted.
    fn learned_restart(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
    ) -> Result<Option<(i64, i64)>>;
    /// Every incident on `monitor`, open or not, as the dates it spans.
    fn incident_spans(&self, monitor: &str) -> Result<Vec<IncidentSpan>>;
}

impl BaselineStore for Connection {
    fn add_volume_restart(
        &self,
        monitor: &str,
        since: &str,
        ratio: f64,
        incident: &str,
        seq: u64,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO volume_restart (monitor, since, ratio, incident, seq)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![monitor, since, ratio, incident, seq as i64],
        )?;
        Ok(())
    }

    fn volume_restarts(&self, monitor: &str) -> Result<Vec<(String, String, f64)>> {
        let mut stmt = self.prepare_cached(
            "SELECT incident, since, ratio FROM volume_restart WHERE monitor = ?1
             ORDER BY since, seq",
        )?;
        let rows = stmt.query_map([monitor], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn add_learned_restart(&self, r: &LearnedRestart) -> Result<()> {
        self.execute(
            "INSERT INTO baseline_restart
               (monitor, check_kind, subject, since_id, through_id, value, incident, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                r.monitor,
                r.check.as_str(),
                r.subject,
                r.since_id,
                r.through_id,
                r.value,
                r.incident,
                r.seq as i64
            ],
        )?;
        Ok(())
    }

    fn learned_restart(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
    ) -> Result<Option<(i64, i64)>> {
        Ok(self
            .prepare_cached(
                "SELECT since_id, through_id FROM baseline_restart
                 WHERE monitor = ?1 AND check_kind = ?2 AND subject = ?3
                 ORDER BY since_id DESC, seq DESC LIMIT 1",
            )?
            .query_row(params![monitor, check.as_str(), subject], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
    }

    fn incident_spans(&self, monitor: &str) -> Result<Vec<IncidentSpan>> {
        let mut stmt = self.prepare_cached(
            "SELECT id, json_extract(doc, '$.opened_at'), json_extract(doc, '$.day'),
                    json_extract(doc, '$.resolved_at')
             FROM incident WHERE json_extract(doc, '$.monitor') = ?1",
        )?;
        let mut rows = stmt.query([monitor])?;
        let mut spans = Vec::new();
        while let Some(r) = rows.next()? {
            let id: String = r.get(0)?;
            let opened_at: String = r.get(1)?;
            // An engine before times had a type wrote "" for not resolved yet.
            let resolved_at: Option<String> = r.get::<_, Option<String>>(3)?;
            let resolved_at = resolved_at.filter(|text| !text.is_empty());
            spans.push(IncidentSpan {
                opened_at: read_time(&opened_at, || format!("incident {id} (opened_at)"))?,
                day: r.get(2)?,
                resolved_at: resolved_at
                    .map(|text| read_time(&text, || format!("incident {id} (resolved_at)")))
                    .transpose()?,
                id,
            });
        }
        Ok(spans)
    }
}
