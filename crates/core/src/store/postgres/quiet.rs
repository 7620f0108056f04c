//! Snoozes and the spans that left a monitor's baselines, on PostgreSQL (see
//! `store::quiet`).

use anyhow::Result;

use super::PgState;
use crate::clock::Timestamp;
use crate::store::quiet::{QuietStore, Snooze};
use crate::store::read_time;

impl QuietStore for PgState {
    fn add_snooze(&self, s: &Snooze) -> Result<()> {
        self.execute(
            "INSERT INTO snooze (team, seq, monitor, until, reason, actor)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &self.team,
                &(s.seq as i64),
                &s.monitor,
                &s.until.to_string(),
                &s.reason,
                &s.actor,
            ],
        )?;
        Ok(())
    }

    fn running_snoozes(&self) -> Result<Vec<Snooze>> {
        self.query(
            "SELECT seq, monitor, until, reason, actor FROM snooze
             WHERE team = $1 AND ended_seq IS NULL ORDER BY seq",
            &[&self.team],
        )?
        .iter()
        .map(|r| {
            let seq = r.get::<_, i64>(0) as u64;
            Ok(Snooze {
                seq,
                monitor: r.get(1),
                until: read_time(r.get(2), || format!("snooze of chain #{seq} (until)"))?,
                reason: r.get(3),
                actor: r.get(4),
            })
        })
        .collect()
    }

    fn end_snooze(&self, seq: u64, ended_seq: u64) -> Result<()> {
        self.execute(
            "UPDATE snooze SET ended_seq = $3 WHERE team = $1 AND seq = $2",
            &[&self.team, &(seq as i64), &(ended_seq as i64)],
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
            "INSERT INTO baseline_leave (team, monitor, from_at, to_at, why)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[
                &self.team,
                &monitor,
                &from.to_string(),
                &to.to_string(),
                &why,
            ],
        )?;
        Ok(())
    }

    fn left_baselines(&self, monitor: &str) -> Result<Vec<(Timestamp, Timestamp)>> {
        let what = |end: &str| format!("span of {monitor} that left the baselines ({end})");
        self.query(
            "SELECT from_at, to_at FROM baseline_leave WHERE team = $1 AND monitor = $2
             ORDER BY from_at",
            &[&self.team, &monitor],
        )?
        .iter()
        .map(|r| {
            Ok((
                read_time(r.get(0), || what("from"))?,
                read_time(r.get(1), || what("to"))?,
            ))
        })
        .collect()
    }
}
