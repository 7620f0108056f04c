//! The load times kept of each monitor, a row per day with the day's rows
//! (`minute_source`, `minute_day`; see `monitor::minutes` for the encoding and what
//! they are for). Days are counted from the epoch; a day's minutes are an opaque blob
//! here. (`minute_day.nulls` is unused since migration 16, left at its default.)

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

pub trait MinuteStore {
    /// What `monitor`'s stored minutes were read from, and the minute from which every
    /// minute with rows is stored (seconds).
    fn minute_source(&self, monitor: &str) -> Result<Option<(String, i64)>>;
    fn set_minute_source(&self, monitor: &str, source: &str, complete_from: i64) -> Result<()>;
    fn insert_day(&self, monitor: &str, day: i64, rows: u64, minutes: &[u8]) -> Result<()>;
    /// (day, rows, minutes) of every stored day of `monitor`, oldest first.
    fn days(&self, monitor: &str) -> Result<Vec<(i64, u64, Vec<u8>)>>;
    /// Every monitor with stored minutes.
    fn monitors_with_minutes(&self) -> Result<Vec<String>>;
    fn forget_minutes(&self, monitor: &str) -> Result<()>;
    /// What `monitor`'s last poll kept of its table's older days (JSON, see
    /// `monitor::older_days`); forgotten with its minutes.
    fn older_days(&self, monitor: &str) -> Result<Option<String>>;
    fn set_older_days(&self, monitor: &str, summary: &str) -> Result<()>;
}

impl MinuteStore for Connection {
    fn minute_source(&self, monitor: &str) -> Result<Option<(String, i64)>> {
        Ok(self
            .prepare_cached("SELECT source, complete_from FROM minute_source WHERE monitor = ?1")?
            .query_row([monitor], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    fn set_minute_source(&self, monitor: &str, source: &str, complete_from: i64) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO minute_source (monitor, source, complete_from) VALUES (?1, ?2, ?3)
             ON CONFLICT (monitor) DO UPDATE SET source = ?2, complete_from = ?3",
        )?
        .execute(params![monitor, source, complete_from])?;
        Ok(())
    }

    fn insert_day(&self, monitor: &str, day: i64, rows: u64, minutes: &[u8]) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO minute_day (monitor, day, rows, minutes) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![monitor, day, rows as i64, minutes])?;
        Ok(())
    }

    fn days(&self, monitor: &str) -> Result<Vec<(i64, u64, Vec<u8>)>> {
        let mut select = self.prepare_cached(
            "SELECT day, rows, minutes FROM minute_day WHERE monitor = ?1 ORDER BY day",
        )?;
        let days = select.query_map([monitor], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?))
        })?;
        Ok(days.collect::<rusqlite::Result<_>>()?)
    }

    fn monitors_with_minutes(&self) -> Result<Vec<String>> {
        let mut stmt = self.prepare_cached("SELECT monitor FROM minute_source")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn forget_minutes(&self, monitor: &str) -> Result<()> {
        self.execute("DELETE FROM minute_day WHERE monitor = ?1", [monitor])?;
        self.execute("DELETE FROM minute_source WHERE monitor = ?1", [monitor])?;
        self.execute("DELETE FROM older_days WHERE monitor = ?1", [monitor])?;
        Ok(())
    }

    fn older_days(&self, monitor: &str) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT summary FROM older_days WHERE monitor = ?1")?
            .query_row([monitor], |r| r.get(0))
            .optional()?)
    }

    fn set_older_days(&self, monitor: &str, summary: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO older_days (monitor, summary) VALUES (?1, ?2)
             ON CONFLICT (monitor) DO UPDATE SET summary = ?2",
        )?
        .execute(params![monitor, summary])?;
        Ok(())
    }
}
