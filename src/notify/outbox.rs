//! The outbox: one row per alert per destination, in the state database. The engine
//! enqueues a row inside the transaction that appends the chain record it announces, so
//! an alert exists exactly when its record does. The relay takes each destination's
//! oldest pending row, and marks it delivered, schedules its retry, or gives it up; a
//! restart finds every row where it was.
//!
//! Times here are the wall clock in milliseconds since the epoch: retries are about the
//! network, never the demo's virtual clock.

use rusqlite::{params, Connection, OptionalExtension};

use super::Alert;
use crate::engine::api::{DestinationView, RowView};

/// The table, as migration 8 creates it (`store::MIGRATIONS`).
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

pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

/// The wall clock, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// RFC 3339 (UTC, seconds) of a millisecond time.
pub fn stamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// One row as the relay reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: i64,
    pub destination: String,
    pub kind: String,
    pub alert: Alert,
    pub status: String,
    pub attempts: u32,
    pub next_at: i64,
    pub last_error: Option<String>,
    /// An accepted request whose outcome is still to be read back (Opsgenie, JSM).
    pub request_id: Option<String>,
}

/// Puts an alert for `destination` in the outbox, inside the caller's transaction. The
/// same (destination, chain record, dedup key) is never queued twice: false when it
/// already was.
pub fn enqueue(
    conn: &Connection,
    destination: &str,
    kind: &str,
    alert: &Alert,
    now: i64,
) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare_cached(
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
        serde_json::to_string(alert).expect("an alert serializes"),
        now,
    ])?;
    Ok(added == 1)
}

/// The destinations an alert with this dedup key was opened on (a trigger queued for
/// it): updates and the resolve go where the alert is.
pub fn opened_on(conn: &Connection, dedup_key: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT destination, kind FROM outbox WHERE dedup_key = ?1 AND action = 'trigger'
         GROUP BY destination ORDER BY min(id)",
    )?;
    let rows = stmt.query_map([dedup_key], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Every dedup key of the escalation pages opened for an incident, with where.
pub fn pages_of(
    conn: &Connection,
    incident: &str,
) -> rusqlite::Result<Vec<(String, String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT destination, kind, dedup_key FROM outbox
         WHERE incident = ?1 AND occasion = 'paged' AND action = 'trigger'
         GROUP BY destination, dedup_key ORDER BY min(id)",
    )?;
    let rows = stmt.query_map([incident], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
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

/// The destination's oldest pending row: the only one the relay may send, so each
/// destination gets its alerts in the order they were queued.
pub fn head(conn: &Connection, destination: &str) -> rusqlite::Result<Option<Row>> {
    conn.prepare_cached(&format!(
        "{ROW} WHERE destination = ?1 AND status = 'pending' ORDER BY id LIMIT 1"
    ))?
    .query_row([destination], row)
    .optional()
}

/// Delivered (with a note when its outcome could not be read back).
pub fn mark_delivered(
    conn: &Connection,
    id: i64,
    now: i64,
    note: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE outbox SET status = 'delivered', delivered_at = ?2, last_error = ?3,
                attempts = attempts + 1 WHERE id = ?1",
        params![id, now, note],
    )?;
    Ok(())
}

/// Sent and taken for processing: the outcome is read back by `request_id` at `next_at`.
pub fn mark_accepted(
    conn: &Connection,
    id: i64,
    request_id: &str,
    next_at: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE outbox SET request_id = ?2, next_at = ?3, last_error = NULL,
                attempts = attempts + 1 WHERE id = ?1",
        params![id, request_id, next_at],
    )?;
    Ok(())
}

/// Not this time: tried again at `next_at`, with what went wrong shown meanwhile.
pub fn schedule_retry(
    conn: &Connection,
    id: i64,
    next_at: i64,
    error: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE outbox SET next_at = ?2, last_error = ?3, attempts = attempts + 1 WHERE id = ?1",
        params![id, next_at, error],
    )?;
    Ok(())
}

/// Refused for good: kept, shown, never sent again.
pub fn give_up(conn: &Connection, id: i64, now: i64, error: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE outbox SET status = 'failed', last_error = ?3, delivered_at = ?2,
                attempts = attempts + 1 WHERE id = ?1",
        params![id, now, error],
    )?;
    Ok(())
}

// ---- what people see ---------------------------------------------------------------

/// Destination names, errors from APIs and incident ids are outside text.
impl crate::sanitize::Sanitize for DestinationView {
    fn sanitize(&mut self) {
        let DestinationView {
            destination,
            kind,
            pending: _,
            failed: _,
            delivered: _,
            next_attempt_at,
            next_attempt_in_secs: _,
            last_error,
            dedup_key,
            rows,
        } = self;
        destination.sanitize();
        kind.sanitize();
        next_attempt_at.sanitize();
        last_error.sanitize();
        dedup_key.sanitize();
        for row in rows {
            let RowView {
                id: _,
                incident,
                action,
                occasion,
                dedup_key,
                status,
                attempts: _,
                queued_at,
                next_attempt_at,
                delivered_at,
                last_error,
                request_id,
            } = row;
            for text in [incident, action, occasion, dedup_key, status, queued_at] {
                text.sanitize();
            }
            for text in [next_attempt_at, delivered_at, last_error, request_id] {
                text.sanitize();
            }
        }
    }
}

/// Delivered rows listed per destination, the latest.
const RECENT_DELIVERED: i64 = 5;
/// Pending and failed rows listed per destination, the oldest (the counts cover all):
/// a destination down for a day must not make every snapshot carry its whole queue.
const LISTED_WAITING: i64 = 50;

/// Every destination that has rows, by name, as of `now`. `configured` adds the
/// destinations the config names that have none yet (name, kind).
pub fn view(
    conn: &Connection,
    now: i64,
    configured: &[(String, String)],
) -> rusqlite::Result<Vec<DestinationView>> {
    let mut out: Vec<DestinationView> = Vec::new();
    let mut counts = conn.prepare_cached(
        "SELECT destination, max(kind), sum(status = 'pending'), sum(status = 'failed'),
                sum(status = 'delivered') FROM outbox GROUP BY destination ORDER BY destination",
    )?;
    let found = counts.query_map([], |r| {
        Ok(DestinationView {
            destination: r.get(0)?,
            kind: r.get(1)?,
            pending: r.get::<_, i64>(2)? as usize,
            failed: r.get::<_, i64>(3)? as usize,
            delivered: r.get::<_, i64>(4)? as usize,
            ..Default::default()
        })
    })?;
    for d in found {
        out.push(d?);
    }
    for (name, kind) in configured {
        if !out.iter().any(|d| &d.destination == name) {
            out.push(DestinationView {
                destination: name.clone(),
                kind: kind.clone(),
                ..Default::default()
            });
        }
    }
    out.sort_by(|a, b| a.destination.cmp(&b.destination));
    let mut rows = conn.prepare_cached(
        "SELECT id, incident, action, occasion, dedup_key, status, attempts, created_at,
                next_at, delivered_at, last_error, request_id
         FROM outbox WHERE destination = ?1 AND (id IN
           (SELECT id FROM outbox WHERE destination = ?1 AND status != 'delivered'
            ORDER BY id LIMIT ?3) OR id IN
           (SELECT id FROM outbox WHERE destination = ?1 AND status = 'delivered'
            ORDER BY id DESC LIMIT ?2))
         ORDER BY id",
    )?;
    for d in &mut out {
        let listed = rows.query_map(
            params![d.destination, RECENT_DELIVERED, LISTED_WAITING],
            |r| {
                let status: String = r.get(5)?;
                let next_at: i64 = r.get(8)?;
                Ok(RowView {
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
            },
        )?;
        for row in listed {
            d.rows.push(row?);
        }
        if let Some(next) = d.rows.iter().find(|r| r.status == PENDING) {
            let next_at: i64 =
                conn.query_row("SELECT next_at FROM outbox WHERE id = ?1", [next.id], |r| {
                    r.get(0)
                })?;
            d.next_attempt_at = Some(stamp(next_at.max(now)));
            d.next_attempt_in_secs = Some(((next_at - now).max(0) + 999) / 1000);
            d.dedup_key = Some(next.dedup_key.clone());
        }
        d.last_error = d
            .rows
            .iter()
            .filter(|r| r.status != DELIVERED)
            .filter_map(|r| r.last_error.clone())
            .next_back();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::sample;
    use crate::notify::Action;

    fn db() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("state.db")).unwrap();
        (dir, conn)
    }

    #[test]
    fn rows_go_in_order_per_destination_and_are_queued_once() {
        let (_dir, conn) = db();
        let mut alert = sample();
        assert!(enqueue(&conn, "pd", "pagerduty", &alert, 1_000).unwrap());
        assert!(
            !enqueue(&conn, "pd", "pagerduty", &alert, 1_000).unwrap(),
            "the same record is queued once"
        );
        assert!(enqueue(&conn, "slack", "slack", &alert, 1_000).unwrap());
        alert.chain_seq = 43;
        alert.action = Action::Resolve;
        alert.occasion = crate::notify::Occasion::Resolved;
        enqueue(&conn, "pd", "pagerduty", &alert, 2_000).unwrap();
        let first = head(&conn, "pd").unwrap().unwrap();
        assert_eq!(first.alert.chain_seq, 42);
        schedule_retry(&conn, first.id, 9_000, "PagerDuty answered 500").unwrap();
        // Still the head while it waits: nothing overtakes it.
        let again = head(&conn, "pd").unwrap().unwrap();
        assert_eq!(
            (again.id, again.attempts, again.next_at),
            (first.id, 1, 9_000)
        );
        mark_delivered(&conn, first.id, 9_500, None).unwrap();
        assert_eq!(head(&conn, "pd").unwrap().unwrap().alert.chain_seq, 43);
        assert_eq!(
            opened_on(&conn, &sample().dedup_key).unwrap(),
            [
                ("pd".to_string(), "pagerduty".to_string()),
                ("slack".into(), "slack".into())
            ]
        );
    }

    #[test]
    fn the_view_shows_what_waits_its_countdown_error_and_key() {
        let (_dir, conn) = db();
        let alert = sample();
        enqueue(&conn, "pd", "pagerduty", &alert, 1_000).unwrap();
        let id = head(&conn, "pd").unwrap().unwrap().id;
        schedule_retry(&conn, id, 61_000, "could not connect: Connection refused").unwrap();
        let view = view(&conn, 31_000, &[("og".into(), "opsgenie".into())]).unwrap();
        assert_eq!(view.len(), 2);
        let pd = &view[1];
        assert_eq!((pd.destination.as_str(), pd.pending), ("pd", 1));
        assert_eq!(pd.next_attempt_in_secs, Some(30));
        assert_eq!(
            pd.last_error.as_deref(),
            Some("could not connect: Connection refused")
        );
        assert_eq!(pd.dedup_key.as_deref(), Some(alert.dedup_key.as_str()));
        assert_eq!(view[0].destination, "og");
        assert_eq!(view[0].pending, 0);
        for seq in 100..160 {
            let mut more = alert.clone();
            more.chain_seq = seq;
            enqueue(&conn, "pd", "pagerduty", &more, 2_000).unwrap();
        }
        let long = super::view(&conn, 31_000, &[]).unwrap();
        assert_eq!(long[0].pending, 61, "the count covers every row");
        assert_eq!(
            long[0].rows.len(),
            LISTED_WAITING as usize,
            "the list is capped"
        );
        give_up(&conn, id, 62_000, "PagerDuty answered 400").unwrap();
        let after = super::view(&conn, 70_000, &[]).unwrap();
        assert_eq!((after[0].pending, after[0].failed), (60, 1));
        assert_eq!(
            after[0].next_attempt_in_secs,
            Some(0),
            "the next one is due"
        );
        assert_eq!(
            after[0].rows[0].last_error.as_deref(),
            Some("PagerDuty answered 400")
        );
        assert_eq!(
            after[0].last_error.as_deref(),
            Some("PagerDuty answered 400")
        );
    }
}
