//! The scenario player: the outside world of the ticketing story. It only changes data
//! and schema the way the real systems would (the app sells tickets and migrates its
//! table, the CDC mover copies and refills, the scheduler runs the dbt job). It never
//! opens incidents, writes causes or proposes anything: that is the engine's work.

use anyhow::Result;
use chrono::{NaiveDateTime, Timelike};
use rusqlite::{params, Connection};

use super::control::{run_models, ControlPlane};
use super::estate::{Estate, Lcg, HOURLY_JOB};
use crate::engine::orchestrator::Orchestrator;

const MOVER: &str = "mover.ticketing_cdc";
/// The migration lands at 14:05 and the new arena's on-sale opens at 15:00.
const MIGRATION_AT: (u32, u32) = (14, 5);
const ONSALE_AT: (u32, u32) = (15, 0);
/// The refill takes this long, like 240 million rows would at the mover's pace.
const REFILL_MINUTES: i64 = 46;

enum Mover {
    Streaming,
    Refilling {
        cursor: i64,
        last_id: i64,
        chunk: i64,
    },
}

pub struct Scenario {
    estate: Estate,
    control: ControlPlane,
    rng: Lcg,
    mover: Mover,
}

fn ts(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Scenario {
    pub fn new(estate: Estate) -> Scenario {
        let control = ControlPlane::new(estate.control_db());
        Scenario {
            estate,
            control,
            rng: Lcg::new(42),
            mover: Mover::Streaming,
        }
    }

    pub fn estate(&self) -> &Estate {
        &self.estate
    }

    /// One virtual minute of the outside world. Returns what happened, for the timeline.
    pub fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
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
        if now.minute() == 15 && !self.control.is_paused(HOURLY_JOB)? {
            let (status, detail) = match run_models(&self.estate) {
                Ok(built) => ("success", format!("built {}", built.join(", "))),
                Err(e) => ("failed", e),
            };
            self.control.record_pipeline(HOURLY_JOB, status, &ts(now))?;
            happened.push(format!("scheduler: hourly dbt job {status}: {detail}"));
        }
        for (id, job) in self.control.queued()? {
            let (status, detail) = match run_models(&self.estate) {
                Ok(built) => ("success", format!("built {}", built.join(", "))),
                Err(e) => ("failed", e),
            };
            self.control
                .finish_run(id, &ts(now), &ts(now), status, &detail)?;
            self.control.record_pipeline(&job, status, &ts(now))?;
            happened.push(format!("scheduler: run #{id} of {job} {status}: {detail}"));
        }
        Ok(happened)
    }

    fn sell(&mut self, source: &Connection, now: NaiveDateTime) -> Result<()> {
        let onsale = (now.hour(), now.minute()) >= ONSALE_AT;
        let next_id: i64 = source.query_row(
            "SELECT coalesce(max(order_id), 0) + 1 FROM orders",
            [],
            |r| r.get(0),
        )?;
        let mut insert = source.prepare(
            "INSERT INTO orders (order_id, event_id, seat_section, price_cents, sold_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for i in 0..12 {
            let (event, section) = if onsale && i % 3 == 0 {
                let floor = ["FLOOR-A", "FLOOR-B", "12", "14"][self.rng.next(4) as usize];
                (4, floor.to_string())
            } else {
                (
                    1 + self.rng.next(3) as i64,
                    (1 + self.rng.next(40)).to_string(),
                )
            };
            let section: rusqlite::types::Value = match section.parse::<i64>() {
                Ok(n) if !onsale => n.into(),
                _ => section.into(),
            };
            insert.execute(params![
                next_id + i,
                event,
                section,
                4_500 + self.rng.next(9_000) as i64,
                ts(now)
            ])?;
        }
        Ok(())
    }

    /// The CDC mover: copies new orders every minute; on a column change the warehouse
    /// cannot apply in place, its `backfill` setting drops, re-creates and refills the
    /// table in chunks. It reports success throughout, as real movers do.
    fn move_rows(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        let mut happened = Vec::new();
        let wh = self.estate.warehouse()?;
        wh.execute(
            "ATTACH DATABASE ?1 AS src",
            [self.estate.source_db().to_string_lossy()],
        )?;
        let source_types = column_types(&wh, "src", "orders")?;
        let target_types = column_types(&wh, "TICKETING", "ORDERS")?;
        if matches!(self.mover, Mover::Streaming) && source_types != target_types {
            let columns = source_types
                .iter()
                .map(|(name, ty)| format!("\"{name}\" {ty}"))
                .collect::<Vec<_>>()
                .join(", ");
            wh.execute_batch(&format!(
                "DROP TABLE TICKETING.ORDERS; CREATE TABLE TICKETING.ORDERS ({columns});"
            ))?;
            let last_id: i64 =
                wh.query_row("SELECT max(order_id) FROM src.orders", [], |r| r.get(0))?;
            let chunk = (last_id + REFILL_MINUTES - 1) / REFILL_MINUTES;
            self.mover = Mover::Refilling {
                cursor: 0,
                last_id,
                chunk,
            };
            happened.push(
                "CDC mover: incompatible change to orders.seat_section; setting onIncompatibleSchemaChange=backfill: TICKETING.ORDERS dropped, re-created and refilling".to_string(),
            );
        }
        match self.mover {
            Mover::Refilling {
                cursor,
                last_id,
                chunk,
            } => {
                let upto = (cursor + chunk).min(last_id);
                wh.execute(
                    "INSERT INTO TICKETING.ORDERS SELECT order_id, event_id, seat_section, price_cents, sold_at
                     FROM src.orders WHERE order_id > ?1 AND order_id <= ?2",
                    params![cursor, upto],
                )?;
                if upto >= last_id {
                    self.mover = Mover::Streaming;
                    happened.push("CDC mover: refill of TICKETING.ORDERS complete".to_string());
                } else {
                    self.mover = Mover::Refilling {
                        cursor: upto,
                        last_id,
                        chunk,
                    };
                }
            }
            Mover::Streaming => {
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

    /// How a queued run's status is reached by the engine: through the trait.
    pub fn control(&self) -> &dyn Orchestrator {
        &self.control
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
