//! The outside world of the ticketing story. It only changes data
//! and schema the way the real systems would (the app sells tickets and migrates its
//! table, the CDC mover copies and refills, the scheduler runs the dbt job). It never
//! opens incidents, writes causes or proposes anything: that is the engine's work.

use anyhow::Result;
use chrono::{NaiveDateTime, Timelike};
use rusqlite::{params, Connection};

use super::estate::{run_models, Estate, Lcg, HOURLY_JOB, INITIAL_ORDERS, MOVER};
use crate::clock::timestamp as ts;
use crate::demo::control::{status_of, ControlPlane};
use crate::demo::scenario::World;
/// The migration lands at 14:05 and the new arena's on-sale opens at 15:00.
const MIGRATION_AT: (u32, u32) = (14, 5);
const ONSALE_AT: (u32, u32) = (15, 0);
/// The refill takes this long, like 240 million rows would at the mover's pace.
const REFILL_MINUTES: i64 = 46;

/// The demo's clock starts here; each minute after it sells its own numbered orders.
const FIRST_MINUTE: (u32, u32) = (13, 30);
const ORDERS_PER_MINUTE: i64 = 12;

/// The outside world keeps no state of its own in memory: everything it needs is in
/// the estate's databases, so a demo killed at any moment carries on where it was.
/// Each minute's step can be played twice without doing anything twice.
pub struct Ticketing {
    estate: Estate,
    control: ControlPlane,
}

impl Ticketing {
    pub fn new(estate: Estate) -> Ticketing {
        let control = ControlPlane::new(estate.control_db());
        Ticketing { estate, control }
    }
}

impl World for Ticketing {
    /// One virtual minute of the outside world. Returns what happened, for the timeline.
    fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        let mut happened = Vec::new();
        let hm = (now.hour(), now.minute());
        // The mover copies what landed up to the minute before; a change made this
        // minute reaches it next minute, as with a real change stream.
        happened.extend(self.move_rows(now)?);
        let source = Connection::open(self.estate.source_db())?;
        source.busy_timeout(std::time::Duration::from_secs(5))?;
        if hm == MIGRATION_AT {
            migrate_seat_section(&source)?;
            happened.push(
                "ticketing app migration: orders.seat_section SMALLINT -> VARCHAR(12) for the new arena's sections".to_string(),
            );
        }
        if hm == ONSALE_AT {
            happened
                .push("new arena on-sale opens: FLOOR-A and FLOOR-B sections selling".to_string());
        }
        self.sell(&source, now)?;
        drop(source);
        let build = || run_models(&self.estate).map(|built| format!("built {}", built.join(", ")));
        if now.minute() == 15 && !self.control.is_paused(HOURLY_JOB)? {
            let (status, detail) = status_of(build());
            self.control.record_pipeline(HOURLY_JOB, status, &ts(now))?;
            happened.push(format!("scheduler: hourly dbt job {status}: {detail}"));
        }
        happened.extend(
            self.control
                .carry_out_queued(&ts(now), |command| match command {
                    // The hourly job has no command of its own but the whole build.
                    Some(command) => {
                        Err(format!("the hourly job runs no other command: {command}"))
                    }
                    None => build(),
                })?,
        );
        Ok(happened)
    }
}

impl Ticketing {
    /// Sells this minute's orders. Their ids and content follow from the minute alone,
    /// so selling the same minute again changes nothing.
    fn sell(&mut self, source: &Connection, now: NaiveDateTime) -> Result<()> {
        let onsale = (now.hour(), now.minute()) >= ONSALE_AT;
        let first = now
            .date()
            .and_hms_opt(FIRST_MINUTE.0, FIRST_MINUTE.1, 0)
            .expect("valid time");
        let minute = (now - first).num_minutes().max(0);
        let next_id = INITIAL_ORDERS + 1 + minute * ORDERS_PER_MINUTE;
        let mut rng = Lcg::new(42 + minute as u64);
        let mut insert = source.prepare(
            "INSERT OR IGNORE INTO orders (order_id, event_id, seat_section, price_cents, sold_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for i in 0..ORDERS_PER_MINUTE {
            let (event, section) = if onsale && i % 3 == 0 {
                let floor = ["FLOOR-A", "FLOOR-B", "12", "14"][rng.next(4) as usize];
                (4, floor.to_string())
            } else {
                (1 + rng.next(3) as i64, (1 + rng.next(40)).to_string())
            };
            let section: rusqlite::types::Value = match section.parse::<i64>() {
                Ok(n) if !onsale => n.into(),
                _ => section.into(),
            };
            insert.execute(params![
                next_id + i,
                event,
                section,
                4_500 + rng.next(9_000) as i64,
                ts(now)
            ])?;
        }
        Ok(())
    }

    /// The CDC mover: copies new orders every minute; on a column change the warehouse
    /// cannot apply in place, its `backfill` setting drops, re-creates and refills the
    /// table in chunks. It reports success throughout, as real movers do. Where a refill
    /// stands is read from the tables themselves (and the mover's own note of where the
    /// refill ends), never held in memory.
    fn move_rows(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        let mut happened = Vec::new();
        let wh = self.estate.warehouse()?;
        wh.execute(
            "ATTACH DATABASE ?1 AS src",
            [self.estate.source_db().to_string_lossy()],
        )?;
        let source_types = column_types(&wh, "src", "orders")?;
        let target_types = column_types(&wh, "TICKETING", "ORDERS")?;
        let mut refill_upto = self.control.mover_refill()?;
        if source_types != target_types {
            let columns = source_types
                .iter()
                .map(|(name, ty)| format!("\"{name}\" {ty}"))
                .collect::<Vec<_>>()
                .join(", ");
            let last_id: i64 =
                wh.query_row("SELECT max(order_id) FROM src.orders", [], |r| r.get(0))?;
            // The note first: killed after it, the mover re-creates the table again.
            self.control.set_mover_refill(Some(last_id))?;
            wh.execute_batch(&format!(
                "BEGIN; DROP TABLE IF EXISTS TICKETING.ORDERS; CREATE TABLE TICKETING.ORDERS ({columns}); COMMIT;"
            ))?;
            refill_upto = Some(last_id);
            happened.push(
                "CDC mover: incompatible change to orders.seat_section; setting onIncompatibleSchemaChange=backfill: TICKETING.ORDERS dropped, re-created and refilling".to_string(),
            );
        }
        match refill_upto {
            Some(last_id) => {
                let chunk = (last_id + REFILL_MINUTES - 1) / REFILL_MINUTES;
                let cursor: i64 = wh.query_row(
                    "SELECT coalesce(max(order_id), 0) FROM TICKETING.ORDERS",
                    [],
                    |r| r.get(0),
                )?;
                let upto = (cursor + chunk).min(last_id);
                wh.execute(
                    "INSERT INTO TICKETING.ORDERS SELECT order_id, event_id, seat_section, price_cents, sold_at
                     FROM src.orders WHERE order_id > ?1 AND order_id <= ?2",
                    params![cursor, upto],
                )?;
                if upto >= last_id {
                    self.control.set_mover_refill(None)?;
                    happened.push("CDC mover: refill of TICKETING.ORDERS complete".to_string());
                }
            }
            None => {
                wh.execute_batch(
                    "INSERT INTO TICKETING.ORDERS SELECT order_id, event_id, seat_section, price_cents, sold_at
                     FROM src.orders WHERE order_id > (SELECT coalesce(max(order_id), 0) FROM TICKETING.ORDERS)",
                )?;
            }
        }
        wh.execute_batch("DETACH DATABASE src")?;
        self.control.record_pipeline(MOVER, "success", &ts(now))?;
        Ok(happened)
    }
}

fn column_types(conn: &Connection, schema: &str, table: &str) -> Result<Vec<(String, String)>> {
    // The schema goes in as an argument: as a prefix, SQLite may find a same-named
    // table in another attached database (names are case-insensitive).
    let mut stmt = conn.prepare("SELECT name, type FROM pragma_table_info(?1, ?2) ORDER BY cid")?;
    let rows = stmt.query_map([table, schema], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// SQLite cannot change a column's type in place; the app's migration rebuilds the
/// table, which is what its ORM does on SQLite.
fn migrate_seat_section(source: &Connection) -> Result<()> {
    source.execute_batch(
        "BEGIN;
         CREATE TABLE orders_new (
            order_id     INTEGER PRIMARY KEY,
            event_id     INTEGER NOT NULL,
            seat_section VARCHAR(12) NOT NULL,
            price_cents  INTEGER NOT NULL,
            sold_at      TEXT NOT NULL
         );
         INSERT INTO orders_new SELECT order_id, event_id, CAST(seat_section AS TEXT), price_cents, sold_at FROM orders;
         DROP TABLE orders;
         ALTER TABLE orders_new RENAME TO orders;
         COMMIT;",
    )?;
    Ok(())
}
