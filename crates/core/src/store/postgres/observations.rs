//! What the poller measured and how each check judged it, on PostgreSQL (see
//! `store::observations`); the team's rows in the order stored (`id`).

use anyhow::Result;
use postgres::types::ToSql;

use super::PgState;
use crate::config::CheckKind;
use crate::detect::VerdictKind;
use crate::monitor::{Detail, Health, Observation};
use crate::store::observations::{Judged, ObservationStore};
use crate::store::read_time;

impl PgState {
    /// The team's observations matching `filter` (parameters from $2 on), with ids;
    /// one of a check this version does not know is passed over, as on SQLite.
    fn stored(
        &self,
        filter: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<(i64, Observation)>> {
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&self.team];
        all.extend_from_slice(params);
        let rows = self.query(
            &format!(
                "SELECT id, monitor, check_kind, tbl, at, value, detail, verdict, health
                 FROM observation WHERE team = $1 AND {filter}"
            ),
            &all,
        )?;
        let mut out = Vec::new();
        for r in &rows {
            let Ok(check) = serde_json::from_value::<CheckKind>(r.get::<_, String>(2).into())
            else {
                continue;
            };
            let id: i64 = r.get(0);
            let detail: Detail = serde_json::from_str(r.get(6))?;
            out.push((
                id,
                Observation {
                    monitor: r.get(1),
                    table: r.get(3),
                    check,
                    at: read_time(r.get(4), || format!("observation {id} (at)"))?,
                    value: r.get(5),
                    verdict: VerdictKind::parse(r.get(7)),
                    expected: detail.expected,
                    health: Health::parse(r.get(8)),
                    detail,
                },
            ));
        }
        Ok(out)
    }
}

fn without_ids(rows: Vec<(i64, Observation)>) -> Vec<Observation> {
    rows.into_iter().map(|(_, o)| o).collect()
}

impl ObservationStore for PgState {
    fn insert_observation(&self, o: &Observation) -> Result<()> {
        self.execute(
            "INSERT INTO observation
               (team, monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &self.team,
                &o.monitor,
                &o.table,
                &o.check.as_str(),
                &o.at.to_string(),
                &o.value,
                &serde_json::to_string(&o.detail)?,
                &o.verdict.as_str(),
                &o.health.as_str(),
                &o.detail.column.as_deref().unwrap_or(""),
            ],
        )?;
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
        Ok(self
            .query(
                "SELECT value FROM observation o
                 WHERE team = $1 AND monitor = $2 AND check_kind = $3 AND subject = $4
                   AND health = 'ok' AND value IS NOT NULL
                   AND (((detail::jsonb) ->> 'since') IS NOT NULL) = $5
                   AND id >= $6
                   AND (verdict IN ('ok', 'learning') OR (id <= $7 AND verdict != 'unknown'))
                   AND NOT EXISTS (SELECT 1 FROM baseline_leave l
                                   WHERE l.team = $1 AND l.monitor = $2
                                     AND o.at BETWEEN l.from_at AND l.to_at)
                 ORDER BY id",
                &[
                    &self.team,
                    &monitor,
                    &check.as_str(),
                    &subject,
                    &windowed,
                    &since_id,
                    &through_id,
                ],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn latest_schema(&self, monitor: &str) -> Result<Option<Detail>> {
        let rows = self.query(
            "SELECT detail FROM observation
             WHERE team = $1 AND monitor = $2 AND check_kind = 'schema' AND health = 'ok'
             ORDER BY id DESC LIMIT 1",
            &[&self.team, &monitor],
        )?;
        Ok(match rows.first() {
            Some(r) => Some(serde_json::from_str(r.get(0))?),
            None => None,
        })
    }

    /// A page at a time, newest first, so `each` stops the reading early as on SQLite.
    fn judged_newest_first(
        &self,
        monitor: &str,
        check: CheckKind,
        subject: &str,
        each: &mut dyn FnMut(Judged) -> bool,
    ) -> Result<()> {
        const PAGE: i64 = 512;
        let mut before = i64::MAX;
        loop {
            let rows = self.query(
                "SELECT id, at, value, verdict,
                        ((detail::jsonb) -> 'expected' ->> 'baseline')::double precision
                 FROM observation
                 WHERE team = $1 AND monitor = $2 AND check_kind = $3 AND subject = $4
                   AND health = 'ok' AND verdict != 'unknown' AND value IS NOT NULL
                   AND id < $5
                 ORDER BY id DESC LIMIT $6",
                &[
                    &self.team,
                    &monitor,
                    &check.as_str(),
                    &subject,
                    &before,
                    &PAGE,
                ],
            )?;
            for r in &rows {
                let id: i64 = r.get(0);
                let judged = Judged {
                    id,
                    at: read_time(r.get(1), || format!("observation {id} (at)"))?,
                    value: r.get(2),
                    verdict: VerdictKind::parse(r.get(3)),
                    baseline: r.get(4),
                };
                if !each(judged) {
                    return Ok(());
                }
                before = id;
            }
            if (rows.len() as i64) < PAGE {
                return Ok(());
            }
        }
    }

    fn observation_history(&self, monitor: &str, check: CheckKind) -> Result<Vec<Observation>> {
        Ok(without_ids(self.stored(
            "monitor = $2 AND check_kind = $3 ORDER BY id",
            &[&monitor, &check.as_str()],
        )?))
    }

    fn latest_observations(&self) -> Result<Vec<Observation>> {
        Ok(without_ids(self.stored(
            "id IN (SELECT max(id) FROM observation WHERE team = $1
                    GROUP BY monitor, check_kind, subject) ORDER BY id",
            &[],
        )?))
    }

    fn observations_after(&self, id: i64) -> Result<Vec<(i64, Observation)>> {
        self.stored("id > $2 ORDER BY id", &[&id])
    }

    fn start_observation_mark(&self, key: &str) -> Result<()> {
        self.execute(
            "INSERT INTO meta (key, value)
             SELECT $2, coalesce(max(id), 0)::text FROM observation WHERE team = $1
             ON CONFLICT (key) DO NOTHING",
            &[&self.team, &key],
        )?;
        Ok(())
    }
}
