//! The outbox's rows on PostgreSQL (see `store::outbox` and `notify::outbox`). Where
//! SQLite takes a grouped row's bare columns from its first row (`min(id)`), this takes
//! the first row of each group with `DISTINCT ON`.

use anyhow::{Context, Result};

use super::PgState;
use crate::notify::outbox::{stamp, Destination, ListedRow, Row, PENDING};
use crate::notify::Alert;
use crate::store::outbox::OutboxStore;

const ROW: &str = "SELECT id, destination, kind, alert, status, attempts, next_at, last_error, request_id FROM outbox";

fn row(r: &postgres::Row) -> Result<Row> {
    let id: i64 = r.get(0);
    Ok(Row {
        id,
        destination: r.get(1),
        kind: r.get(2),
        alert: serde_json::from_str(r.get(3))
            .with_context(|| format!("the state database's outbox row {id} (alert)"))?,
        status: r.get(4),
        attempts: r.get::<_, i32>(5) as u32,
        next_at: r.get(6),
        last_error: r.get(7),
        request_id: r.get(8),
    })
}

impl PgState {
    /// Sets `columns` (from $3 on) of the team's outbox row `id`, one more attempt made.
    fn update_outbox(
        &self,
        id: i64,
        columns: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<()> {
        let mut all: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&self.team, &id];
        all.extend_from_slice(params);
        self.execute(
            &format!(
                "UPDATE outbox SET {columns}, attempts = attempts + 1 WHERE team = $1 AND id = $2"
            ),
            &all,
        )?;
        Ok(())
    }
}

impl OutboxStore for PgState {
    fn enqueue_alert(
        &self,
        destination: &str,
        kind: &str,
        alert: &Alert,
        now: i64,
    ) -> Result<bool> {
        let added = self.execute(
            "INSERT INTO outbox
               (team, destination, kind, incident, chain_seq, action, occasion, dedup_key, alert,
                created_at, next_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0)
             ON CONFLICT (team, destination, chain_seq, dedup_key) DO NOTHING",
            &[
                &self.team,
                &destination,
                &kind,
                &alert.incident,
                &(alert.chain_seq as i64),
                &alert.action.as_str(),
                &alert.occasion.as_str(),
                &alert.dedup_key,
                &serde_json::to_string(alert)?,
                &now,
            ],
        )?;
        Ok(added == 1)
    }

    fn alert_opened_on(&self, dedup_key: &str) -> Result<Vec<(String, String)>> {
        Ok(self
            .query(
                "SELECT destination, kind FROM (
                   SELECT DISTINCT ON (destination) destination, kind, id FROM outbox
                   WHERE team = $1 AND dedup_key = $2 AND action = 'trigger'
                   ORDER BY destination, id) first ORDER BY id",
                &[&self.team, &dedup_key],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn pages_of(&self, incident: &str) -> Result<Vec<(String, String, String)>> {
        Ok(self
            .query(
                "SELECT destination, kind, dedup_key FROM (
                   SELECT DISTINCT ON (destination, dedup_key) destination, kind, dedup_key, id
                   FROM outbox
                   WHERE team = $1 AND incident = $2 AND occasion = 'paged' AND action = 'trigger'
                   ORDER BY destination, dedup_key, id) first ORDER BY id",
                &[&self.team, &incident],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    fn outbox_head(&self, destination: &str) -> Result<Option<Row>> {
        self.query(
            &format!(
                "{ROW} WHERE team = $1 AND destination = $2 AND status = 'pending' ORDER BY id LIMIT 1"
            ),
            &[&self.team, &destination],
        )?
        .first()
        .map(row)
        .transpose()
    }

    fn mark_delivered(&self, id: i64, now: i64, note: Option<&str>) -> Result<()> {
        self.update_outbox(
            id,
            "status = 'delivered', delivered_at = $3, last_error = $4",
            &[&now, &note],
        )
    }

    fn mark_accepted(&self, id: i64, request_id: &str, next_at: i64) -> Result<()> {
        self.update_outbox(
            id,
            "request_id = $3, next_at = $4, last_error = NULL",
            &[&request_id, &next_at],
        )
    }

    fn schedule_retry(&self, id: i64, next_at: i64, error: &str) -> Result<()> {
        self.update_outbox(id, "next_at = $3, last_error = $4", &[&next_at, &error])
    }

    fn give_up(&self, id: i64, now: i64, error: &str) -> Result<()> {
        self.update_outbox(
            id,
            "status = 'failed', delivered_at = $3, last_error = $4",
            &[&now, &error],
        )
    }

    fn outbox_destinations(&self) -> Result<Vec<Destination>> {
        Ok(self
            .query(
                "SELECT destination, max(kind),
                        count(*) FILTER (WHERE status = 'pending'),
                        count(*) FILTER (WHERE status = 'failed'),
                        count(*) FILTER (WHERE status = 'delivered')
                 FROM outbox WHERE team = $1 GROUP BY destination ORDER BY destination",
                &[&self.team],
            )?
            .iter()
            .map(|r| Destination {
                destination: r.get(0),
                kind: r.get(1),
                pending: r.get::<_, i64>(2) as usize,
                failed: r.get::<_, i64>(3) as usize,
                delivered: r.get::<_, i64>(4) as usize,
                ..Default::default()
            })
            .collect())
    }

    fn outbox_rows(
        &self,
        destination: &str,
        delivered: i64,
        waiting: i64,
    ) -> Result<Vec<ListedRow>> {
        Ok(self
            .query(
                "SELECT id, incident, action, occasion, dedup_key, status, attempts, created_at,
                        next_at, delivered_at, last_error, request_id
                 FROM outbox WHERE team = $1 AND destination = $2 AND (id IN
                   (SELECT id FROM outbox WHERE team = $1 AND destination = $2
                      AND status != 'delivered' ORDER BY id LIMIT $4) OR id IN
                   (SELECT id FROM outbox WHERE team = $1 AND destination = $2
                      AND status = 'delivered' ORDER BY id DESC LIMIT $3))
                 ORDER BY id",
                &[&self.team, &destination, &delivered, &waiting],
            )?
            .iter()
            .map(|r| {
                let status: String = r.get(5);
                let next_at: i64 = r.get(8);
                ListedRow {
                    id: r.get(0),
                    incident: r.get(1),
                    action: r.get(2),
                    occasion: r.get(3),
                    dedup_key: r.get(4),
                    attempts: r.get::<_, i32>(6) as u32,
                    queued_at: stamp(r.get(7)),
                    next_attempt_at: (status == PENDING).then(|| stamp(next_at.max(0))),
                    delivered_at: r.get::<_, Option<i64>>(9).map(stamp),
                    last_error: r.get(10),
                    request_id: r.get(11),
                    status,
                }
            })
            .collect())
    }

    fn outbox_next_at(&self, id: i64) -> Result<i64> {
        let rows = self.query(
            "SELECT next_at FROM outbox WHERE team = $1 AND id = $2",
            &[&self.team, &id],
        )?;
        match rows.first() {
            Some(r) => Ok(r.get(0)),
            None => anyhow::bail!("no outbox row {id} in the state database"),
        }
    }
}
