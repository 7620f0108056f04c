//! Each monitor's load times on PostgreSQL, a row per day (see `store::minutes`).

use anyhow::Result;

use super::PgState;
use crate::store::minutes::MinuteStore;

impl MinuteStore for PgState {
    fn minute_source(&self, monitor: &str) -> Result<Option<(String, i64)>> {
        Ok(self
            .query(
                "SELECT source, complete_from FROM minute_source WHERE team = $1 AND monitor = $2",
                &[&self.team, &monitor],
            )?
            .first()
            .map(|r| (r.get(0), r.get(1))))
    }

    fn set_minute_source(&self, monitor: &str, source: &str, complete_from: i64) -> Result<()> {
        self.execute(
            "INSERT INTO minute_source (team, monitor, source, complete_from) VALUES ($1, $2, $3, $4)
             ON CONFLICT (team, monitor) DO UPDATE
               SET source = excluded.source, complete_from = excluded.complete_from",
            &[&self.team, &monitor, &source, &complete_from],
        )?;
        Ok(())
    }

    fn insert_day(&self, monitor: &str, day: i64, rows: u64, minutes: &[u8]) -> Result<()> {
        self.execute(
            "INSERT INTO minute_day (team, monitor, day, rows, minutes) VALUES ($1, $2, $3, $4, $5)",
            &[&self.team, &monitor, &day, &(rows as i64), &minutes],
        )?;
        Ok(())
    }

    fn days(&self, monitor: &str) -> Result<Vec<(i64, u64, Vec<u8>)>> {
        Ok(self
            .query(
                "SELECT day, rows, minutes FROM minute_day WHERE team = $1 AND monitor = $2
                 ORDER BY day",
                &[&self.team, &monitor],
            )?
            .iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1) as u64, r.get(2)))
            .collect())
    }

    fn monitors_with_minutes(&self) -> Result<Vec<String>> {
        Ok(self
            .query(
                "SELECT monitor FROM minute_source WHERE team = $1 ORDER BY monitor",
                &[&self.team],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn forget_minutes(&self, monitor: &str) -> Result<()> {
        for table in ["minute_day", "minute_source"] {
            self.execute(
                &format!("DELETE FROM {table} WHERE team = $1 AND monitor = $2"),
                &[&self.team, &monitor],
            )?;
        }
        Ok(())
    }
}
