//! What the poller measured and how each check judged it (`observation`).

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::config::CheckKind;
use crate::detect::VerdictKind;
use crate::monitor::{Detail, Health, Observation};

/// One judged observation as a breach run is read from it (`monitor::baseline`).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub id: i64,
    pub at: crate::clock::Timestamp,
    pub value: f64,
    pub verdict: VerdictKind,
    /// The baseline it was judged against, if any.
    pub baseline: Option<f64>,
}

pub trait ObservationStore {
    fn insert_observation(&self, observation: &Observation) -> Result<()>;
    /// Values of healthy observations of `monitor`'s `check` on `subject` (a column, or
    /// ""), oldest first, measured over a window of recent rows or not (`windowed`),
    /// from `since_id` on, that were in range, or breaches up to `through_id`, and
    /// taken outside every span that left the baselines (`QuietStore`): the baseline's
    /// input (see `monitor::clean_history`).
    fn baseline_values(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
        windowed: bool,
        since_id: i64,
        through_id: i64,
    ) -> Result<Vec<f64>>;
    /// The detail of `monitor`'s latest healthy schema observation.
    fn latest_schema(&self, monitor: &str) -> Result<Option<Detail>>;
    /// Healthy judged observations with a value, newest first, handed to `each` until
    /// it returns false.
    fn judged_newest_first(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
        each: &mut dyn FnMut(Judged) -> bool,
    ) -> Result<()>;
    /// Every observation of one monitor and check, oldest first.
    fn observation_history(&self, monitor: &str, check: CheckKind) -> Result<Vec<Observation>>;
    /// The latest observation of every (monitor, check, column), oldest first.
    fn latest_observations(&self) -> Result<Vec<Observation>>;
    /// Observations stored after `id`, with their ids, oldest first.
    fn observations_after(&self, id: i64) -> Result<Vec<(i64, Observation)>>;
    /// Starts the mark `key` (in `meta`) at the newest observation, unless it is set.
    fn start_observation_mark(&self, key: &str) -> Result<()>;
}

fn stored(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(i64, Observation)>> {
    let mut stmt = conn.prepare_cached(&format!(
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
                at: super::read_time(&r.get::<_, String>(4)?, || {
                    format!(
                        "observation {} (at)",
                        r.get::<_, i64>(0).unwrap_or_default()
                    )
                })?,
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

fn without_ids(rows: Vec<(i64, Observation)>) -> Vec<Observation> {
    rows.into_iter().map(|(_, o)| o).collect()
}

impl ObservationStore for Connection {
    fn insert_observation(&self, o: &Observation) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO observation
               (monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            o.monitor,
            o.table,
            o.check.as_str(),
            o.at.to_string(),
            o.value,
            serde_json::to_string(&o.detail)?,
            o.verdict.as_str(),
            o.health.as_str(),
            o.detail.column.as_deref().unwrap_or("")
        ])?;
        Ok(())
    }

    fn baseline_values(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
        windowed: bool,
        since_id: i64,
        through_id: i64,
    ) -> Result<Vec<f64>> {
        let mut stmt = self.prepare_cached(
            "SELECT value FROM observation
             WHERE monitor = ?1 AND check_kind = ?2 AND subject = ?3 AND health = 'ok'
               AND value IS NOT NULL
               AND (json_extract(detail, '$.since') IS NOT NULL) = ?4
               AND id >= ?5
               AND (verdict IN ('ok', 'learning') OR (id <= ?6 AND verdict != 'unknown'))
               AND NOT EXISTS (SELECT 1 FROM baseline_leave l WHERE l.monitor = ?1
                               AND observation.at BETWEEN l.from_at AND l.to_at)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(
            params![
                monitor,
                check.as_str(),
                subject,
                windowed,
                since_id,
                through_id
            ],
            |r| r.get(0),
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn latest_schema(&self, monitor: &str) -> Result<Option<Detail>> {
        let detail: Option<String> = self
            .prepare_cached(
                "SELECT detail FROM observation
                 WHERE monitor = ?1 AND check_kind = 'schema' AND health = 'ok'
                 ORDER BY id DESC LIMIT 1",
            )?
            .query_row([monitor], |r| r.get(0))
            .optional()?;
        Ok(match detail {
            Some(text) => Some(serde_json::from_str(&text)?),
            None => None,
        })
    }

    fn judged_newest_first(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
        each: &mut dyn FnMut(Judged) -> bool,
    ) -> Result<()> {
        let mut stmt = self.prepare_cached(
            "SELECT id, at, value, verdict, json_extract(detail, '$.expected.baseline')
             FROM observation
             WHERE monitor = ?1 AND check_kind = ?2 AND subject = ?3 AND health = 'ok'
               AND verdict != 'unknown' AND value IS NOT NULL
             ORDER BY id DESC",
        )?;
        let mut rows = stmt.query(params![monitor, check.as_str(), subject])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let judged = Judged {
                id,
                at: super::read_time(&row.get::<_, String>(1)?, || {
                    format!("observation {id} (at)")
                })?,
                value: row.get(2)?,
                verdict: VerdictKind::parse(&row.get::<_, String>(3)?),
                baseline: row.get(4)?,
            };
            if !each(judged) {
                break;
            }
        }
        Ok(())
    }

    fn observation_history(&self, monitor: &str, check: CheckKind) -> Result<Vec<Observation>> {
        Ok(without_ids(stored(
            self,
            "WHERE monitor = ?1 AND check_kind = ?2 ORDER BY id",
            params![monitor, check.as_str()],
        )?))
    }

    fn latest_observations(&self) -> Result<Vec<Observation>> {
        Ok(without_ids(stored(
            self,
            "WHERE id IN (SELECT max(id) FROM observation GROUP BY monitor, check_kind, subject) ORDER BY id",
            [],
        )?))
    }

    fn observations_after(&self, id: i64) -> Result<Vec<(i64, Observation)>> {
        stored(self, "WHERE id > ?1 ORDER BY id", [id])
    }

    fn start_observation_mark(&self, key: &str) -> Result<()> {
        self.execute(
            "INSERT OR IGNORE INTO meta (key, value)
             SELECT ?1, coalesce(max(id), 0) FROM observation",
            [key],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A time the state database holds that is not one dataward writes is an error
    /// naming the row and the text, never a time made up or a row skipped unseen.
    #[test]
    fn a_bad_time_in_the_state_database_names_its_row_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        conn.execute_batch(
            "INSERT INTO observation (monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
             VALUES ('orders', 'orders', 'row_count', '2026-03-01T09:00:00Z', 1, '{}', 'ok', 'ok', ''),
                    ('orders', 'orders', 'row_count', 'yesterday 9am', 2, '{}', 'ok', 'ok', '');",
        )
        .unwrap();
        let error = format!(
            "{:#}",
            conn.observation_history("orders", CheckKind::RowCount)
                .unwrap_err()
        );
        assert!(error.contains("observation 2 (at)"), "{error}");
        assert!(error.contains("\"yesterday 9am\""), "{error}");
        conn.execute_batch("UPDATE observation SET at = '2026-03-01T10:00:00Z' WHERE id = 2")
            .unwrap();
        let read = conn
            .observation_history("orders", CheckKind::RowCount)
            .unwrap();
        assert_eq!(read[1].at.to_string(), "2026-03-01T10:00:00Z");
    }
}
