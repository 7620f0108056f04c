//! The outbox's rows (see `notify::outbox` for what they are and who moves them).

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::notify::outbox::{stamp, Destination, ListedRow, Row, PENDING};
use crate::notify::Alert;

/// The table, as migration 8 creates it (`MIGRATIONS`).
pub const MIGRATION: &str = "CREATE TABLE outbox (
        id           INTEGER PRIMARY KEY,
        destination  TEXT NOT NULL,
        kind         TEXT NOT NULL,
        incident     TEXT NOT NULL,
        chain_seq    INTEGER NOT NULL,
        action       TEXT NOT NULL,
        occasion     TEXT NOT NULL,
        dedup_key    TEXT NOT NULL,
        alert        TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        status       TEXT NOT NULL DEFAULT 'pending',
        attempts     INTEGER NOT NULL DEFAULT 0,
        next_at      INTEGER NOT NULL DEFAULT 0,
        last_error   TEXT,
        request_id   TEXT,
        delivered_at INTEGER,
        UNIQUE (destination, chain_seq, dedup_key)
     );
     CREATE INDEX outbox_pending ON outbox (destination, status, id);
     CREATE INDEX outbox_by_key ON outbox (dedup_key, action);";

/// The outbox as stored. Times are milliseconds since the epoch.
pub trait OutboxStore {
    /// Queues `alert` for `destination`; false when the same (destination, chain
    /// record, dedup key) already was.
    fn enqueue_alert(&self, destination: &str, kind: &str, alert: &Alert, now: i64)
        -> Result<bool>;
    /// (destination, kind) of every trigger queued with this dedup key, first first.
    fn alert_opened_on(&self, dedup_key: &str) -> Result<Vec<(String, String)>>;
    /// (destination, kind, dedup key) of every escalation page opened for `incident`.
    fn pages_of(&self, incident: &str) -> Result<Vec<(String, String, String)>>;
    /// The destination's oldest pending row.
    fn outbox_head(&self, destination: &str) -> Result<Option<Row>>;
    fn mark_delivered(&self, id: i64, now: i64, note: Option<&str>) -> Result<()>;
    fn mark_accepted(&self, id: i64, request_id: &str, next_at: i64) -> Result<()>;
    fn schedule_retry(&self, id: i64, next_at: i64, error: &str) -> Result<()>;
    fn give_up(&self, id: i64, now: i64, error: &str) -> Result<()>;
    /// Every destination with rows, by name, with its counts (no rows listed).
    fn outbox_destinations(&self) -> Result<Vec<Destination>>;
    /// A destination's waiting rows (pending and failed), the oldest `waiting`, and its
    /// latest `delivered` delivered ones, in order.
    fn outbox_rows(
        &self,
        destination: &str,
        delivered: i64,
        waiting: i64,
    ) -> Result<Vec<ListedRow>>;
    /// When row `id` is next tried.
    fn outbox_next_at(&self, id: i64) -> Result<i64>;
}

const ROW: &str = "SELECT id, destination, kind, alert, status, attempts, next_at, last_error, request_id FROM outbox";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Row> {
    let alert: String = r.get(3)?;
    let alert = serde_json::from_str(&alert).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(Row {
        id: r.get(0)?,
        destination: r.get(1)?,
        kind: r.get(2)?,
        alert,
        status: r.get(4)?,
        attempts: r.get(5)?,
        next_at: r.get(6)?,
        last_error: r.get(7)?,
        request_id: r.get(8)?,
    })
}

impl OutboxStore for Connection {
    fn enqueue_alert(
        &self,
        destination: &str,
        kind: &str,
        alert: &Alert,
        now: i64,
    ) -> Result<bool> {
        let mut stmt = self.prepare_cached(
            "INSERT OR IGNORE INTO outbox
               (destination, kind, incident, chain_seq, action, occasion, dedup_key, alert, created_at, next_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0)",
        )?;
        let added = stmt.execute(params![
            destination,
            kind,
            alert.incident,
            alert.chain_seq as i64,
            alert.action.as_str(),
            alert.occasion.as_str(),
            alert.dedup_key,
            serde_json::to_string(alert)?,
            now,
        ])?;
        Ok(added == 1)
    }

    fn alert_opened_on(&self, dedup_key: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self.prepare_cached(
            "SELECT destination, kind FROM outbox WHERE dedup_key = ?1 AND action = 'trigger'
             GROUP BY destination ORDER BY min(id)",
        )?;
        let rows = stmt.query_map([dedup_key], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn pages_of(&self, incident: &str) -> Result<Vec<(String, String, String)>> {
        let mut stmt = self.prepare_cached(
            "SELECT destination, kind, dedup_key FROM outbox
             WHERE incident = ?1 AND occasion = 'paged' AND action = 'trigger'
             GROUP BY destination, dedup_key ORDER BY min(id)",
        )?;
        let rows = stmt.query_map([incident], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn outbox_head(&self, destination: &str) -> Result<Option<Row>> {
        Ok(self
            .prepare_cached(&format!(
                "{ROW} WHERE destination = ?1 AND status = 'pending' ORDER BY id LIMIT 1"
            ))?
            .query_row([destination], row)
            .optional()?)
    }

    fn mark_delivered(&self, id: i64, now: i64, note: Option<&str>) -> Result<()> {
        self.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = ?2, last_error = ?3,
                    attempts = attempts + 1 WHERE id = ?1",
            params![id, now, note],
        )?;
        Ok(())
    }

    fn mark_accepted(&self, id: i64, request_id: &str, next_at: i64) -> Result<()> {
        self.execute(
            "UPDATE outbox SET request_id = ?2, next_at = ?3, last_error = NULL,
                    attempts = attempts + 1 WHERE id = ?1",
            params![id, request_id, next_at],
        )?;
        Ok(())
    }

    fn schedule_retry(&self, id: i64, next_at: i64, error: &str) -> Result<()> {
        self.execute(
            "UPDATE outbox SET next_at = ?2, last_error = ?3, attempts = attempts + 1 WHERE id = ?1",
            params![id, next_at, error],
        )?;
        Ok(())
    }

    fn give_up(&self, id: i64, now: i64, error: &str) -> Result<()> {
        self.execute(
            "UPDATE outbox SET status = 'failed', last_error = ?3, delivered_at = ?2,
                    attempts = attempts + 1 WHERE id = ?1",
            params![id, now, error],
        )?;
        Ok(())
    }

    fn outbox_destinations(&self) -> Result<Vec<Destination>> {
        let mut counts = self.prepare_cached(
            "SELECT destination, max(kind), sum(status = 'pending'), sum(status = 'failed'),
                    sum(status = 'delivered') FROM outbox GROUP BY destination ORDER BY destination",
        )?;
        let found = counts.query_map([], |r| {
            Ok(Destination {
                destination: r.get(0)?,
                kind: r.get(1)?,
                pending: r.get::<_, i64>(2)? as usize,
                failed: r.get::<_, i64>(3)? as usize,
                delivered: r.get::<_, i64>(4)? as usize,
                ..Default::default()
            })
        })?;
        Ok(found.collect::<rusqlite::Result<_>>()?)
    }

    fn outbox_rows(
        &self,
        destination: &str,
        delivered: i64,
        waiting: i64,
    ) -> Result<Vec<ListedRow>> {
        let mut rows = self.prepare_cached(
            "SELECT id, incident, action, occasion, dedup_key, status, attempts, created_at,
                    next_at, delivered_at, last_error, request_id
             FROM outbox WHERE destination = ?1 AND (id IN
               (SELECT id FROM outbox WHERE destination = ?1 AND status != 'delivered'
                ORDER BY id LIMIT ?3) OR id IN
               (SELECT id FROM outbox WHERE destination = ?1 AND status = 'delivered'
                ORDER BY id DESC LIMIT ?2))
             ORDER BY id",
        )?;
        let listed = rows.query_map(params![destination, delivered, waiting], |r| {
            let status: String = r.get(5)?;
            let next_at: i64 = r.get(8)?;
            Ok(ListedRow {
                id: r.get(0)?,
                incident: r.get(1)?,
                action: r.get(2)?,
                occasion: r.get(3)?,
                dedup_key: r.get(4)?,
                attempts: r.get(6)?,
                queued_at: stamp(r.get(7)?),
                next_attempt_at: (status == PENDING).then(|| stamp(next_at.max(0))),
                delivered_at: r.get::<_, Option<i64>>(9)?.map(stamp),
                last_error: r.get(10)?,
                request_id: r.get(11)?,
                status,
            })
        })?;
        Ok(listed.collect::<rusqlite::Result<_>>()?)
    }

    fn outbox_next_at(&self, id: i64) -> Result<i64> {
        Ok(self
            .prepare_cached("SELECT next_at FROM outbox WHERE id = ?1")?
            .query_row([id], |r| r.get(0))?)
    }
}
