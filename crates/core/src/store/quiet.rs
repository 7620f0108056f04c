//! Snoozes people set (`snooze`) and the spans of time whose points leave a monitor's
//! baselines (`baseline_leave`): see `engine::feedback` and `monitor::baseline`.

use anyhow::Result;
use rusqlite::{params, Connection};

use super::read_time;
use crate::clock::Timestamp;

/// A snooze as stored: `seq` is the chain record that set it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snooze {
    pub seq: u64,
    pub monitor: String,
    /// Engine time.
    pub until: Timestamp,
    pub reason: String,
    /// Who set it, as the chain's actor JSON.
    pub actor: String,
}

pub trait QuietStore {
    fn add_snooze(&self, snooze: &Snooze) -> Result<()>;
    /// Snoozes not yet ended, oldest first.
    fn running_snoozes(&self) -> Result<Vec<Snooze>>;
    /// Marks the snooze set by record `seq` ended by record `ended_seq`.
    fn end_snooze(&self, seq: u64, ended_seq: u64) -> Result<()>;
    /// Points of `monitor` taken from `from` to `to` (both included, engine time) leave
    /// its baselines; a span already there is kept as it was.
    fn leave_baselines(
        &self,
        monitor: &str,
        from: Timestamp,
        to: Timestamp,
        why: &str,
    ) -> Result<()>;
    /// (from, to) of every span of `monitor` that left its baselines.
    fn left_baselines(&self, monitor: &str) -> Result<Vec<(Timestamp, Timestamp)>>;
}

impl QuietStore for Connection {
    fn add_snooze(&self, s: &Snooze) -> Result<()> {
        self.execute(
            "INSERT INTO snooze (seq, monitor, until, reason, actor) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                s.seq as i64,
                s.monitor,
                s.until.to_string(),
                s.reason,
                s.actor
            ],
        )?;
        Ok(())
    }

    fn running_snoozes(&self) -> Result<Vec<Snooze>> {
        let mut stmt = self.prepare_cached(
            "SELECT seq, monitor, until, reason, actor FROM snooze
             WHERE ended_seq IS NULL ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        let mut snoozes = Vec::new();
        while let Some(r) = rows.next()? {
            let seq = r.get::<_, i64>(0)? as u64;
            snoozes.push(Snooze {
                seq,
                monitor: r.get(1)?,
                until: read_time(&r.get::<_, String>(2)?, || {
                    format!("snooze of chain #{seq} (until)")
                })?,
                reason: r.get(3)?,
                actor: r.get(4)?,
            });
        }
        Ok(snoozes)
    }

    fn end_snooze(&self, seq: u64, ended_seq: u64) -> Result<()> {
        self.execute(
            "UPDATE snooze SET ended_seq = ?2 WHERE seq = ?1",
            params![seq as i64, ended_seq as i64],
        )?;
        Ok(())
    }

    fn leave_baselines(
        &self,
        monitor: &str,
        from: Timestamp,
        to: Timestamp,
        why: &str,
    ) -> Result<()> {
        self.execute(
            "INSERT OR IGNORE INTO baseline_leave (monitor, from_at, to_at, why)
             VALUES (?1, ?2, ?3, ?4)",
            params![monitor, from.to_string(), to.to_string(), why],
        )?;
        Ok(())
    }

    fn left_baselines(&self, monitor: &str) -> Result<Vec<(Timestamp, Timestamp)>> {
        let mut stmt = self.prepare_cached(
            "SELECT from_at, to_at FROM baseline_leave WHERE monitor = ?1 ORDER BY from_at",
        )?;
        let mut rows = stmt.query([monitor])?;
        let mut spans = Vec::new();
        while let Some(r) = rows.next()? {
            let (from, to): (String, String) = (r.get(0)?, r.get(1)?);
            let what = |end: &str| format!("span of {monitor} that left the baselines ({end})");
            spans.push((
                read_time(&from, || what("from"))?,
                read_time(&to, || what("to"))?,
            ));
        }
        Ok(spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CheckKind;
    use crate::store::prelude::*;

    /// A span that left the baselines is the one hook every baseline reads: the learned
    /// ones (row_count, null_rate) skip the observations taken inside it, and volume
    /// skips its days.
    #[test]
    fn points_inside_a_span_that_left_the_baselines_are_not_learned_from() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        for (at, value) in [
            ("2026-03-01T09:00:00Z", 100.0),
            ("2026-03-02T09:00:00Z", 5.0),
            ("2026-03-03T09:00:00Z", 101.0),
        ] {
            conn.execute(
                "INSERT INTO observation (monitor, tbl, check_kind, at, value, detail, verdict, health, subject)
                 VALUES ('orders', 'orders', 'row_count', ?1, ?2, '{}', 'ok', 'ok', '')",
                params![at, value],
            )
            .unwrap();
        }
        let learned = || {
            conn.baseline_values("orders", CheckKind::RowCount, "", false, 0, 0)
                .unwrap()
        };
        assert_eq!(learned(), vec![100.0, 5.0, 101.0]);
        let at = |text| Timestamp::parse(text).unwrap();
        conn.leave_baselines(
            "orders",
            at("2026-03-02T00:00:00Z"),
            at("2026-03-02T23:59:59Z"),
            "a reload",
        )
        .unwrap();
        assert_eq!(learned(), vec![100.0, 101.0]);
        let today = chrono::NaiveDate::from_ymd_opt(2026, 3, 4).unwrap();
        let stored = crate::monitor::baseline::read(&conn, "orders", today).unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 2).unwrap();
        assert!(
            stored.excluded.iter().any(|days| days.contains(&day)),
            "{stored:?}"
        );
        // Another monitor's span is not this one's.
        assert!(conn.left_baselines("payments").unwrap().is_empty());
    }
}
