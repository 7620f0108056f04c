//! Each monitor's rows per minute, a row per day (`minute_source`, `minute_day`; see
//! `monitor::minutes` for the encoding and what they are for). Days are counted from
//! the epoch; a day's minutes are an opaque blob here.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

pub trait MinuteStore {
    /// What `monitor`'s stored minutes were read from, and the first day they are
    /// complete from (seconds).
    fn minute_source(&self, monitor: &str) -> Result<Option<(String, i64)>>;
    fn set_minute_source(&self, monitor: &str, source: &str, complete_from: i64) -> Result<()>;
    /// The rows stored for `monitor` on days `from_day` up to (not with) `to_day`.
    fn stored_rows(&self, monitor: &str, from_day: i64, to_day: i64) -> Result<u64>;
    /// Forgets `monitor`'s days before `keep_from` and from `drop_from` on.
    fn forget_days_outside(&self, monitor: &str, keep_from: i64, drop_from: i64) -> Result<()>;
    /// `nulls`: the day's nulls per column, as `monitor::minutes` writes them.
    fn insert_day(
        &self,
        monitor: &str,
        day: i64,
        rows: u64,
        minutes: &[u8],
        nulls: &str,
    ) -> Result<()>;
    /// (day, minutes, nulls) of every stored day of `monitor`, oldest first.
    fn days(&self, monitor: &str) -> Result<Vec<(i64, Vec<u8>, String)>>;
    /// Every monitor with stored minutes.
    fn monitors_with_minutes(&self) -> Result<Vec<String>>;
    fn forget_minutes(&self, monitor: &str) -> Result<()>;
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

    fn stored_rows(&self, monitor: &str, from_day: i64, to_day: i64) -> Result<u64> {
        let rows: i64 = self
            .prepare_cached(
                "SELECT coalesce(sum(rows), 0) FROM minute_day
                 WHERE monitor = ?1 AND day >= ?2 AND day < ?3",
            )?
            .query_row(params![monitor, from_day, to_day], |r| r.get(0))?;
        Ok(rows as u64)
    }

    fn forget_days_outside(&self, monitor: &str, keep_from: i64, drop_from: i64) -> Result<()> {
        self.prepare_cached(
            "DELETE FROM minute_day WHERE monitor = ?1 AND (day < ?2 OR day >= ?3)",
        )?
        .execute(params![monitor, keep_from, drop_from])?;
        Ok(())
    }

    fn insert_day(
        &self,
        monitor: &str,
        day: i64,
        rows: u64,
        minutes: &[u8],
        nulls: &str,
    ) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO minute_day (monitor, day, rows, minutes, nulls)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![monitor, day, rows as i64, minutes, nulls])?;
        Ok(())
    }

    fn days(&self, monitor: &str) -> Result<Vec<(i64, Vec<u8>, String)>> {
        let mut select = self.prepare_cached(
            "SELECT day, minutes, nulls FROM minute_day WHERE monitor = ?1 ORDER BY day",
        )?;
        let days = select.query_map([monitor], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
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
        Ok(())
    }
}
