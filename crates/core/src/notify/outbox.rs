//! The outbox: one row per alert per destination, in the state database. The engine
//! enqueues a row inside the transaction that appends the chain record it announces, so
//! an alert exists exactly when its record does. The relay takes each destination's
//! oldest pending row, and marks it delivered, schedules its retry, or gives it up; a
//! restart finds every row where it was.
//!
//! Times here are milliseconds since the epoch on the engine's clock, which the relay
//! reads too: the wall, or the demo's virtual one, so a story on virtual time retries
//! on virtual time.

use anyhow::Result;
use serde::Serialize;

use super::Alert;
use crate::clock::Timestamp;
use crate::store::prelude::*;

pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

/// The wall clock, in milliseconds since the epoch: for a reader without an engine
/// (`dataward outbox` on the state database).
pub fn now_ms() -> i64 {
    crate::clock::Clock::wall().millis()
}

/// The time of a millisecond count, to the second (the epoch for one out of chrono's
/// range, which no clock gives).
pub fn stamp(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(ms).unwrap_or_default()
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
    conn: &dyn Store,
    destination: &str,
    kind: &str,
    alert: &Alert,
    now: i64,
) -> Result<bool> {
    conn.enqueue_alert(destination, kind, alert, now)
}

/// What came of one attempt at a row, as the relay reports it. Under `dataward serve`
/// the engine writes it ([`crate::engine::Engine::mark_outbox`]), so the engine is the
/// state database's one writer; a relay on its own writes it on its own connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// Delivered (with a note when its outcome could not be read back).
    Delivered {
        id: i64,
        at: i64,
        note: Option<String>,
    },
    /// Sent and taken for processing: the outcome is read back by `request_id` at
    /// `next_at`.
    Accepted {
        id: i64,
        request_id: String,
        next_at: i64,
    },
    /// Not this time: tried again at `next_at`, with what went wrong shown meanwhile.
    Retry {
        id: i64,
        next_at: i64,
        error: String,
    },
    /// Refused for good: kept, shown, never sent again.
    GiveUp { id: i64, at: i64, error: String },
}

impl Mark {
    /// Writes the mark: one statement, durable once it returns.
    pub fn write(&self, conn: &dyn Store) -> Result<()> {
        match self {
            Mark::Delivered { id, at, note } => conn.mark_delivered(*id, *at, note.as_deref()),
            Mark::Accepted {
                id,
                request_id,
                next_at,
            } => conn.mark_accepted(*id, request_id, *next_at),
            Mark::Retry { id, next_at, error } => conn.schedule_retry(*id, *next_at, error),
            Mark::GiveUp { id, at, error } => conn.give_up(*id, *at, error),
        }
    }
}

// ---- what people see ---------------------------------------------------------------

/// One destination as the outbox holds it: its counts, when its next row goes, and the
/// rows worth listing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Destination {
    pub destination: String,
    pub kind: String,
    pub pending: usize,
    pub failed: usize,
    pub delivered: usize,
    /// When its next pending row is tried (UTC), and how far that is from `now`.
    pub next_attempt_at: Option<Timestamp>,
    pub next_attempt_in_secs: Option<i64>,
    /// The latest error of a pending or failed row.
    pub last_error: Option<String>,
    /// The dedup key of the next row to go.
    pub dedup_key: Option<String>,
    /// Its pending and failed rows, oldest first (at most 50), and the latest delivered
    /// few.
    pub rows: Vec<ListedRow>,
}

/// One row as a person reads it (times in UTC).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ListedRow {
    pub id: i64,
    pub incident: String,
    pub action: String,
    pub occasion: String,
    pub dedup_key: String,
    pub status: String,
    pub attempts: u32,
    pub queued_at: Timestamp,
    pub next_attempt_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
    pub last_error: Option<String>,
    /// An accepted request still being read back (Opsgenie, JSM).
    pub request_id: Option<String>,
}

/// Delivered rows listed per destination, the latest.
const RECENT_DELIVERED: i64 = 5;
/// Pending and failed rows listed per destination, the oldest (the counts cover all):
/// a destination down for a day must not make every snapshot carry its whole queue.
const LISTED_WAITING: i64 = 50;

/// Every destination that has rows, by name, as of `now`. `configured` adds the
/// destinations the config names that have none yet (name, kind).
pub fn view(
    conn: &dyn Store,
    now: i64,
    configured: &[(String, String)],
) -> Result<Vec<Destination>> {
    let mut out = conn.outbox_destinations()?;
    for (name, kind) in configured {
        if !out.iter().any(|d| &d.destination == name) {
            out.push(Destination {
                destination: name.clone(),
                kind: kind.clone(),
                ..Default::default()
            });
        }
    }
    out.sort_by(|a, b| a.destination.cmp(&b.destination));
    for d in &mut out {
        d.rows = conn.outbox_rows(&d.destination, RECENT_DELIVERED, LISTED_WAITING)?;
        if let Some(next) = d.rows.iter().find(|r| r.status == PENDING) {
            let next_at = conn.outbox_next_at(next.id)?;
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
    use crate::store::Connection;

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
        let first = conn.outbox_head("pd").unwrap().unwrap();
        assert_eq!(first.alert.chain_seq, 42);
        conn.schedule_retry(first.id, 9_000, "PagerDuty answered 500")
            .unwrap();
        // Still the head while it waits: nothing overtakes it.
        let again = conn.outbox_head("pd").unwrap().unwrap();
        assert_eq!(
            (again.id, again.attempts, again.next_at),
            (first.id, 1, 9_000)
        );
        conn.mark_delivered(first.id, 9_500, None).unwrap();
        assert_eq!(conn.outbox_head("pd").unwrap().unwrap().alert.chain_seq, 43);
        assert_eq!(
            conn.alert_opened_on(&sample().dedup_key).unwrap(),
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
        let id = conn.outbox_head("pd").unwrap().unwrap().id;
        conn.schedule_retry(id, 61_000, "could not connect: Connection refused")
            .unwrap();
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
        conn.give_up(id, 62_000, "PagerDuty answered 400").unwrap();
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
