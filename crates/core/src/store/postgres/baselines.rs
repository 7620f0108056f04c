//! New levels people accepted, on PostgreSQL (see `store::baselines`).

use anyhow::Result;

use super::PgState;
use crate::config::CheckKind;
use crate::store::baselines::{BaselineStore, IncidentSpan, LearnedRestart};
use crate::store::read_time;

impl BaselineStore for PgState {
    fn add_volume_restart(
        &self,
        monitor: &str,
        since: &str,
        ratio: f64,
        incident: &str,
        seq: u64,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO volume_restart (team, monitor, since, ratio, incident, seq)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &self.team,
                &monitor,
                &since,
                &ratio,
                &incident,
                &(seq as i64),
            ],
        )?;
        Ok(())
    }

    fn volume_restarts(&self, monitor: &str) -> Result<Vec<(String, String, f64)>> {
        Ok(self
            .query(
                "SELECT incident, since, ratio FROM volume_restart WHERE team = $1 AND monitor = $2
                 ORDER BY since, seq",
                &[&self.team, &monitor],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    fn add_learned_restart(&self, r: &LearnedRestart) -> Result<()> {
        self.execute(
            "INSERT INTO baseline_restart
               (team, monitor, check_kind, subject, since_id, through_id, value, incident, seq)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                &self.team,
                &r.monitor,
                &r.check.as_str(),
                &r.subject,
                &r.since_id,
                &r.through_id,
                &r.value,
                &r.incident,
                &(r.seq as i64),
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
            .query(
                "SELECT since_id, through_id FROM baseline_restart
                 WHERE team = $1 AND monitor = $2 AND check_kind = $3 AND subject = $4
                 ORDER BY since_id DESC, seq DESC LIMIT 1",
                &[&self.team, &monitor, &check.as_str(), &subject],
            )?
            .first()
            .map(|r| (r.get(0), r.get(1))))
    }

    fn incident_spans(&self, monitor: &str) -> Result<Vec<IncidentSpan>> {
        self.query(
            "SELECT id, (doc::jsonb) ->> 'opened_at', (doc::jsonb) ->> 'day',
                    (doc::jsonb) ->> 'resolved_at'
             FROM incident WHERE team = $1 AND (doc::jsonb) ->> 'monitor' = $2 ORDER BY ord",
            &[&self.team, &monitor],
        )?
        .iter()
        .map(|r| {
            let id: String = r.get(0);
            let opened_at: Option<String> = r.get(1);
            let opened_at = opened_at.unwrap_or_default();
            // An engine before times had a type wrote "" for not resolved yet.
            let resolved_at = r.get::<_, Option<String>>(3).filter(|t| !t.is_empty());
            Ok(IncidentSpan {
                opened_at: read_time(&opened_at, || format!("incident {id} (opened_at)"))?,
                day: r.get(2),
                resolved_at: resolved_at
                    .map(|text| read_time(&text, || format!("incident {id} (resolved_at)")))
                    .transpose()?,
                id,
            })
        })
        .collect()
    }
}
